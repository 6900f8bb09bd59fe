"""simulate(): failures during a run never raise and lose nothing; interruption keeps the result;
accelerations the solver computed are reused (issues #18.7-8, #13, #14.2)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import sympy

import mbkron
from mbkron import load_model
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.integrate.common import min_step, select_initial_step
from mbkron.integrate.simulate import SimulationInterrupted, simulate

MODELS = "models/"
simulate_module = importlib.import_module("mbkron.integrate.simulate")  # (the package's `simulate` is the function)


@pytest.fixture(scope="module")
def arm():
    return load_model(MODELS + "two_link_arm.toml")


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the solvers' error norms, expected
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "RK45"])
@pytest.mark.parametrize("start", [dict(qd0=[1e150, -1e150]), dict(tau=[1e300, 0.0])], ids=["speed", "torque"])
def test_huge_speed_or_torque_ends_with_a_message(arm, method, start):
    """#18.7: ZeroDivisionError escaped (TRBDF2, RKF45); a scipy method ran practically forever."""
    run = simulate(arm, (0.0, 1.0), [0.1, 0.2], method=method, **start)
    assert run.status == -1 and not run.success
    assert "t = " in run.message and "q = [" in run.message
    assert len(run.t) >= 1 and run.t[0] == 0.0 and run.t[-1] < 1.0
    assert run.q.shape == run.qdd.shape == (len(run.t), 2) and np.all(np.isfinite(run.qdd))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_first_step_of_a_huge_slope_is_positive_and_finite():
    """The probe step 0.01*d0/d1 underflows to 0 for a huge slope; it was then divided by."""
    y0, f0 = np.array([1.0, 0.0]), np.array([0.0, 1e300])
    fun = lambda t, y: np.array([y[1], 1e300])  # noqa: E731
    h = select_initial_step(fun, 0.0, y0, f0, 1.0, 2, 1e-6, 1e-8, 1.0, np.inf)
    assert min_step(0.0, 1.0) <= h < 1e-100  # (0.01 / d1)**(1/3) at most, d1 = 1e300 / 1e-8 / sqrt(2)
    assert min_step(0.0, 1.0) == 10 * 5e-324 and min_step(1.0, -1.0) == 10 * 2.0**-53


def test_dead_point_keeps_every_step_computed():
    """#18.8: the four-bar reaches its dead point; the trajectory up to there used to be lost (len(t) == 0).

    Cause: after the run, the accelerations at the output times were recomputed from t = 0 by a constraint
    solver that had been left at the dead point; the first failure truncated every row. Rows are now recorded
    complete as the steps are accepted.
    """
    model = load_model(MODELS + "four_bar.toml")
    within = simulate(model, (0, 2), [0.0], [-50.0], method="RKF45")  # the file's range ends at q = -2
    assert within.status == 1 and within.q[-1, 0] == pytest.approx(-2.0, abs=1e-12) and "`q` reached" in within.message
    run = simulate(model, (0, 2), [0.0], [-50.0], method="RKF45", ranges="ignore")
    assert run.status == -1
    assert "singular configuration of the constraints" in run.message and "(crank, coupler, rocker)" in run.message and "stopped after t = " in run.message
    assert run.n_steps > 20 and len(run.t) == run.n_steps + 1  # every accepted step kept, with t = 0
    assert run.t[0] == 0.0 and 0.05 < run.t[-1] < 2.0 and np.all(np.diff(run.t) > 0)
    assert f"{run.t[-1]:.9g}" in run.message
    # the speed stays near -50 rad/s until the dead point (q = -2.598 rad)
    assert np.all(run.q[1:, 0] < 0) and run.q[-1, 0] < -2.0


def test_failure_keeps_the_output_times_up_to_the_last_accepted_step():
    """A joint variable log(x) leaves its domain (x reaches 0): the t_eval rows up to there are kept."""
    b = mbkron.ModelBuilder(gravity=(-9.81, 0.0, 0.0))
    b.add_coordinate("x", unit="m")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable=sympy.log(sympy.Symbol("x")), mass=1.0)
    t_eval = np.linspace(0.0, 5.0, 51)
    run = simulate(b.build(), (0.0, 5.0), [1.0], [-2.0], method="RKF45", t_eval=t_eval)
    assert run.status == -1 and "stopped after t = " in run.message
    reached = float(run.message.split("t = ")[1].split(" ")[0])
    kept = int(np.sum(t_eval <= reached))
    assert 3 <= kept < 51
    np.testing.assert_array_equal(run.t, t_eval[:kept])
    assert np.all(np.isfinite(run.qdd)) and np.all(run.q > 0)


@pytest.mark.parametrize("method", ["RKF45", "DOP853", "TRBDF2"])
def test_accelerations_equal_a_fresh_recomputation(method):
    """#13: accelerations reused from the solver (FSAL methods) or computed for the output rows equal
    forward_dynamics at the output states with a fresh workspace (Andrews' squeezer: loop closures solved
    by Newton continuation along the run)."""
    model = andrews_squeezer()
    run = simulate(model, (0.0, 0.001), [INITIAL["beta"]], [0.0], method=method, rtol=1e-6, atol=1e-8)
    assert run.success and run.n_steps > 3
    fresh = model.workspace()
    recomputed = np.array([model.forward_dynamics(q, qd, t=t, workspace=fresh) for t, q, qd in
                           zip(run.t, run.q, run.qd)])
    np.testing.assert_allclose(run.qdd, recomputed, rtol=1e-12, atol=1e-12 * np.abs(recomputed).max())


@pytest.mark.parametrize("method, reused", [("RKF45", True), ("RK45", True), ("DOP853", True), ("TRBDF2", False)])
def test_fsal_accelerations_are_not_recomputed(arm, method, reused):
    """Counting the actuation calls: one to check `tau`, one for the initial state, the solver's own
    evaluations (nfev) and, only where the solver did not evaluate a step's end, one per step."""
    calls = []

    def tau(t, q, qd):
        calls.append(t)
        return -5.0 * qd

    run = simulate(arm, (0.0, 0.5), [0.1, 0.2], [1.0, -1.0], method=method, tau=tau, rtol=1e-8, atol=1e-10)
    assert run.success and run.n_steps > 5
    # implicit methods: a batched call at the initial state, then 2n = 8 states per central-difference Jacobian
    jacobian_calls = 0 if reused else 1 + 8 * run.njev
    assert len(calls) == 2 + run.nfev + jacobian_calls + (0 if reused else run.n_steps)
    recomputed = np.array([arm.forward_dynamics(q, qd, tau(t, q, qd), t=t) for t, q, qd in zip(run.t, run.q, run.qd)])
    np.testing.assert_allclose(run.qdd, recomputed, rtol=1e-13, atol=1e-12)


class Interrupt:
    """A `tau` that raises KeyboardInterrupt at its n-th call (as Ctrl-C would inside the model evaluation)."""

    def __init__(self, after: int):
        self.after, self.calls, self.times = after, 0, []

    def __call__(self, t, q, qd):
        self.calls += 1
        if self.calls == self.after:
            raise KeyboardInterrupt
        self.times.append(t)
        return np.zeros_like(q)


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "RK45"])
@pytest.mark.parametrize("t_eval", [None, np.linspace(0.0, 1.0, 201)], ids=["steps", "t_eval"])
def test_interruption_keeps_the_steps_before_it(arm, method, t_eval):
    """#14.2: a KeyboardInterrupt inside the run raises SimulationInterrupted carrying the partial result."""
    complete = simulate(arm, (0.0, 1.0), [0.3, 0.5], method=method, t_eval=t_eval, tau=np.zeros(2))
    tau = Interrupt(after=60)
    with pytest.raises(SimulationInterrupted) as caught:
        simulate(arm, (0.0, 1.0), [0.3, 0.5], method=method, t_eval=t_eval, tau=tau)
    assert isinstance(caught.value, KeyboardInterrupt)
    partial = caught.value.result
    assert partial.status == -2 and not partial.success
    assert str(caught.value) == partial.message and partial.message.startswith("interrupted after t = ")
    reached = float(partial.message.split("t = ")[1].split(" ")[0])  # the last accepted step
    assert np.abs(complete.t - reached).min() < 1e-8 or t_eval is not None
    assert partial.t[-1] <= reached <= max(tau.times)
    rows = len(partial.t)
    assert 2 <= rows < len(complete.t) and partial.n_steps >= 1
    # the steps before the interruption are those of the uninterrupted run, with their accelerations
    np.testing.assert_array_equal(partial.t, complete.t[:rows])
    np.testing.assert_allclose(partial.q, complete.q[:rows], rtol=0, atol=1e-14)
    np.testing.assert_allclose(partial.qdd, complete.qdd[:rows], rtol=1e-13, atol=1e-13)


def test_interruption_before_the_first_step(arm):
    tau = Interrupt(after=2)  # the first call checks `tau`; the second evaluates the initial state
    with pytest.raises(SimulationInterrupted) as caught:
        simulate(arm, (0.0, 1.0), [0.3, 0.5], tau=tau)
    partial = caught.value.result
    assert partial.status == -2 and partial.t.size == 0 and partial.q.shape == (0, 2) and partial.n_steps == 0
    assert partial.message == "interrupted after t = 0 (q = [0.3, 0.5])"


def test_simulation_interrupted_is_public():
    assert mbkron.SimulationInterrupted is SimulationInterrupted
    assert issubclass(SimulationInterrupted, KeyboardInterrupt)


class FailAt:
    """A `tau` that raises ``error`` from its n-th call on."""

    def __init__(self, after: int, error: Exception):
        self.after, self.error, self.calls = after, error, 0

    def __call__(self, t, q, qd):
        self.calls += 1
        if self.calls >= self.after:
            raise self.error
        return np.zeros_like(q)


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "RK45"])
@pytest.mark.parametrize("error", [ZeroDivisionError("float division by zero"), OverflowError("math range error"),
                                   ValueError("array must not contain infs or NaNs")])
def test_numerical_errors_during_the_run_end_it_with_a_message(arm, method, error):
    run = simulate(arm, (0.0, 1.0), [0.3, 0.5], method=method, tau=FailAt(40, error))
    assert run.status == -1 and run.message.startswith("stopped after t = ")
    assert run.message.endswith(f"{type(error).__name__}: {error}")
    assert len(run.t) >= 2 and run.t[-1] < 1.0


def test_programming_errors_are_not_hidden(arm):
    with pytest.raises(TypeError, match="not a number"):
        simulate(arm, (0.0, 1.0), [0.3, 0.5], method="RKF45", tau=FailAt(40, TypeError("not a number")))


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "RK45"])
def test_steps_growing_from_a_tiny_first_step_are_not_a_stall(arm, method):
    """Short steps that grow (here from first_step = 1e-300, ten or five times a step) end normally."""
    run = simulate(arm, (0.0, 1.0), [0.3, 0.5], method=method, first_step=1e-300)
    assert run.success, run.message
    assert run.t[1] == 1e-300 and run.n_steps > 100


def test_first_step_from_rest():
    """A state at rest with zero slope (d1 = 0): the starting step of Hairer's algorithm, no division by zero."""
    y0, f0 = np.zeros(2), np.zeros(2)
    h = select_initial_step(lambda t, y: np.zeros(2), 0.0, y0, f0, 1.0, 2, 1e-6, 1e-8, 1.0, np.inf)
    assert h == pytest.approx(1e-6)  # h0 = 1e-6 (d0, d1 < 1e-5), h1 = max(1e-6, h0·1e-3), min(100 h0, h1)
    batch = select_initial_step(lambda t, y: np.zeros_like(y), 0.0, np.zeros((3, 2)), np.zeros((3, 2)), 1.0, 2, 1e-6,
                                1e-8, 1.0, np.inf)
    assert batch.shape == (3,) and np.allclose(batch, 1e-6)


def _four_bar_constraint_jacobian(f: np.ndarray) -> np.ndarray:
    """∂g/∂f of models/four_bar.toml's loop equations (Eq. 121) at the joint angles f = (crank, coupler,
    rocker) in radians, differentiated by hand (l1 = 3, l2 = 2, l3 = 3, lcm2 = 1; q enters g linearly)."""
    a, b, c = np.cumsum(f)  # absolute angles of crank, coupler, rocker
    l1, l2, l3, lcm2 = 3.0, 2.0, 3.0, 1.0
    return np.array([
        [l1 * np.cos(a) + lcm2 * np.cos(b), lcm2 * np.cos(b), 0.0],
        [(l2 - lcm2) * np.cos(b) + l3 * np.cos(c), (l2 - lcm2) * np.cos(b) + l3 * np.cos(c), l3 * np.cos(c)],
        [-l1 * np.sin(a) - l2 * np.sin(b) - l3 * np.sin(c), -l2 * np.sin(b) - l3 * np.sin(c), -l3 * np.sin(c)],
    ])


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "DOP853"])
def test_a_fold_of_the_constraints_ends_the_run_early_by_name(method):
    """#14: the four-bar falling from rest reaches the fold of its assembly branch (q ≈ −2.598 m, where
    ∂g/∂f is singular); with ranges ignored, TR-BDF2 used to grind through 22 976 steps of ~1e-8 s
    (114 668 evaluations) to a step-size underflow. It now stops as the steps shrink near the fold,
    naming the coordinate, t, q and the smallest singular value."""
    model = load_model(MODELS + "four_bar.toml")
    run = simulate(model, (0.0, 1.0), [0.0], method=method, ranges="ignore")
    assert run.status == -1 and not run.success
    assert run.nfev < 5000 and run.n_steps < 1000
    message = run.message
    assert message.startswith(f"stopped after t = {run.t[-1]:.9g} (q = {run.q[-1].tolist()})")
    assert "singular configuration of the constraints, driven by coordinate `q`" in message
    assert "(crank, coupler, rocker)" in message and "Required step size" not in message
    # the reported smallest singular value is that of ∂g/∂f at the reported configuration
    near = float(message.split("near q = [")[1].split("]")[0])
    sigma_min = float(message.split("σ_min = ")[1].split(" ")[0])
    sigma_max = float(message.split("(largest ")[1].split(";")[0])
    f, _, _ = model.joint_variables(np.array([near]))
    rows = [model.joints.index(name) for name in ("crank", "coupler", "rocker")]
    singular_values = np.linalg.svd(_four_bar_constraint_jacobian(f[rows]), compute_uv=False)
    assert [sigma_min, sigma_max] == pytest.approx([singular_values.min(), singular_values.max()], rel=2e-3)
    assert sigma_min < 1e-2 * sigma_max
    # it stopped just before the fold, still moving towards it
    assert -2.5981 < run.q[-1, 0] < -2.59 and run.qd[-1, 0] < 0 and 0.9 < run.t[-1] < 1.0


def test_another_failure_near_a_fold_is_diagnosed_as_such(monkeypatch):
    """Without the step screen (set to 0: no step is short enough), the fast four-bar meets its dead point in
    the constraint solver, whose failure gets the same diagnosis appended, once."""
    monkeypatch.setattr(simulate_module, "SINGULARITY_SCREEN", 0.0)
    model = load_model(MODELS + "four_bar.toml")
    run = simulate(model, (0, 2), [0.0], [-50.0], method="RKF45", ranges="ignore")
    assert run.status == -1 and "cannot continue the solution of (crank, coupler, rocker)" in run.message
    assert run.message.count("; it ran into a singular configuration of the constraints, driven by coordinate `q`") == 1


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "DOP853"])
def test_a_regular_run_with_shrinking_steps_is_checked_and_goes_on(method, monkeypatch):
    """A torque switched on at t = 0.1 s makes the solvers shrink their steps to locate the jump: the
    singular values are checked there (steps under 1/100 of the longest) and the run, far from the fold,
    goes on to the end."""
    checks = []
    check = simulate_module._Singularity.check
    monkeypatch.setattr(simulate_module._Singularity, "check", lambda self: checks.append(1) or check(self))
    model = load_model(MODELS + "four_bar.toml")
    run = simulate(model, (0.0, 0.3), [0.0], method=method, tau=lambda t, q, qd: [40.0 if t > 0.1 else 0.0])
    assert run.status == 0 and run.t[-1] == 0.3 and len(checks) >= 3
