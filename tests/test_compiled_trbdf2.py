"""The compiled TR-BDF2 step (mbkron.compiled.trbdf2) against the Python solver it mirrors.

:class:`mbkron.integrate.trbdf2.CompiledTRBDF2` takes each step as one compiled call; it must make the
same decisions as :meth:`TRBDF2._step_impl` (step sizes, rejections, Newton failures, Jacobian and LU
re-evaluations) with the same arithmetic. The reference is the Python solver, driven in lockstep on the
same right-hand side and Jacobian: both runs must take the same steps with the same counters and states
equal to round-off. Also checked: steps the kernel declines are redone by the Python solver without a
trace in the results, and ``simulate`` uses the compiled steps for the README's main job.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.compiled.common import AVAILABLE
from mbkron.compiled import trbdf2 as kernel
from mbkron.integrate.trbdf2 import TRBDF2, CompiledTRBDF2
from mbkron.model.model import Model

MAIN_JOB = Path(__file__).resolve().parents[1] / "models" / "andrews_squeezer.toml"

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

ROUND_OFF = 1e-10
"""Relative agreement of one step taken by the two from the same state: the same arithmetic up to the
summation order and reciprocals of the small LU and BLAS calls (a few ulp), amplified by the condition
of ``I - d h J`` (up to ~1e5 for the stiff runs here)."""

STATE = ("t", "h_abs", "lu_h", "newton_rate", "current_jac", "jac_age", "jac_step", "nfev", "njev", "nlu")


def _lockstep(python: TRBDF2, compiled: CompiledTRBDF2, synchronise=lambda: None) -> int:
    """Step both solvers to the end, each step from the Python solver's state (copied into the compiled
    one, with ``synchronise()`` for a state held elsewhere), checking that they make the same decisions
    (counters, step size) and reach the same ``y`` to :data:`ROUND_OFF`; the number of steps."""
    steps = 0
    while python.status == "running":
        for name in STATE:
            setattr(compiled, name, getattr(python, name))
        compiled.y, compiled.yp, compiled.J = python.y.copy(), python.yp.copy(), np.array(python.J)
        compiled.lu_data = None if python.lu_data is None else tuple(np.array(a) for a in python.lu_data)
        compiled._to_memory()
        synchronise()
        python.step()
        compiled.step()
        steps += 1
        assert compiled.status == python.status
        assert (compiled.nfev, compiled.njev, compiled.nlu) == (python.nfev, python.njev, python.nlu)
        np.testing.assert_allclose(compiled.t, python.t, rtol=ROUND_OFF, atol=0)
        np.testing.assert_allclose(compiled.y, python.y, rtol=ROUND_OFF, atol=ROUND_OFF)
    return steps


class VanDerPolKernel:
    """A stand-alone compiled right-hand side for :class:`CompiledTRBDF2`: Van der Pol's
    ``q̈ = μ (1 - q²) q̇ - q`` in the state ``y = (q, q̇)``, the test set's stiff classic."""

    def __init__(self, mu: float):
        import numba

        @numba.njit
        def rhs(t, y, context, advance):
            out = np.empty(2)
            out[0] = y[1]
            out[1] = context[0] * (1.0 - y[0] ** 2) * y[1] - y[0]
            return out, True

        @numba.njit
        def steps(t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu, piv, memory, counts,
                  context, times, limits, lower, upper, max_steps):
            return kernel.trbdf2_steps(rhs, context, t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol,
                                       nq, J, lu, piv, memory, counts, times, limits, lower, upper, max_steps)

        @numba.njit
        def jacobian(t, y, context):
            J = np.empty((2, 2))
            return J, kernel.state_jacobian(rhs, context, t, y, 1, J)

        self.context = (float(mu),)
        self._steps, self._jacobian = steps, jacobian

    def steps(self, *arguments, times, limits, lower, upper, max_steps):
        """StateKernel.steps: the steps and their output rows."""
        return self._steps(*arguments, self.context, times, limits, lower, upper, max_steps)

    def jacobian(self, t, y):
        return self._jacobian(t, y, self.context)[0]

    def store(self):
        pass

    def load(self):
        pass


@pytest.mark.parametrize("mu, rtol", [(1000.0, 1e-4), (1000.0, 1e-7)])
def test_compiled_steps_equal_the_python_solver_on_van_der_pol(mu, rtol):
    """Van der Pol over 0 ≤ t ≤ 3000 (μ = 1000: almost two periods of slow phases and fast jumps, with
    rejected steps, Newton failures and Jacobian refreshes)."""
    state_kernel = VanDerPolKernel(mu)

    def fun(t, y):
        return np.array([y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]])

    options = dict(rtol=rtol, atol=1e-8, jac=state_kernel.jacobian)
    python = TRBDF2(fun, 0.0, [2.0, 0.0], 3000.0, **options)
    compiled = CompiledTRBDF2(fun, 0.0, [2.0, 0.0], 3000.0, state_kernel, steps_per_call=1, **options)
    steps = _lockstep(python, compiled)
    assert python.status == "finished" and steps > 100
    assert python.njev > 1 and python.nlu > python.njev  # the control paths were exercised


def _squeezer():
    """The README's main job (Andrews' squeezer as an ODE in β) on its own workspace: the model, the workspace,
    the Python route of its right-hand side, the initial state (evaluated once) and the state kernel."""
    model = mbkron.load_model(MAIN_JOB)
    workspace = model.workspace()

    def fun(t, y):
        return np.concatenate([y[1:], model.forward_dynamics(y[:1], y[1:], workspace=workspace)])

    y0 = np.array([model.default_q[0], 0.0])
    fun(0.0, y0)
    state_kernel = model.state_kernel(workspace)
    assert state_kernel is not None
    return model, workspace, fun, y0, state_kernel


def _andrews_solver(cls, declined_every: int = 0):
    """A TR-BDF2 solver of the README's main job (:func:`_squeezer`), and its workspace's continuation and the
    state kernel; with ``declined_every = k`` the kernel declines every k-th step, which the Python solver then
    takes."""
    model, workspace, fun, y0, state_kernel = _squeezer()
    continuation = workspace.states_for(model.joint_variable_map)[0]
    options = dict(rtol=1e-6, atol=1e-8, jac=state_kernel.jacobian)
    if cls is TRBDF2:
        return TRBDF2(fun, 0.0, y0, 0.03, **options), continuation, state_kernel
    if declined_every:
        compiled_steps, calls = state_kernel.steps, [0]

        def steps(*arguments, **keywords):
            calls[0] += 1
            if calls[0] % declined_every == 0:
                return (kernel.STEP_DECLINED, 0, np.empty((1, 9)), np.zeros(1, dtype=np.int64), np.empty((0, 2)),
                        np.empty((0, 2)))
            return compiled_steps(*arguments, **keywords)

        state_kernel = _Declining(state_kernel, steps)
    return CompiledTRBDF2(fun, 0.0, y0, 0.03, state_kernel, steps_per_call=1, **options), continuation, state_kernel


class _Declining:
    """A state kernel whose ``steps`` is replaced (to decline steps on purpose)."""

    def __init__(self, inner, steps):
        self.inner, self.steps = inner, steps

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("declined_every", [0, 3])
def test_compiled_steps_equal_the_python_solver_on_the_main_job(declined_every):
    """Andrews' squeezer: the kernel's right-hand side is the generated one-call forward dynamics with the
    loop closures' continuation in its own arrays; declined steps go through the workspace and back."""
    python, python_continuation, _ = _andrews_solver(TRBDF2)
    compiled, continuation, state_kernel = _andrews_solver(CompiledTRBDF2, declined_every)

    def synchronise():  # the constraint group's continuation, from the Python run's workspace
        continuation.advance(python_continuation.start, python_continuation.curvature)
        state_kernel.load()

    steps = _lockstep(python, compiled, synchronise)
    assert python.status == "finished" and steps > 100


def test_simulate_takes_compiled_steps_for_the_main_job(monkeypatch):
    """``simulate`` with TRBDF2 on a compiled model takes the compiled steps; its rows (states and
    accelerations at the output times, with the kernel's right-hand side) agree with the all-Python run
    (whose finite-difference Jacobian comes by another route, so the two differ by Newton's stopping
    test, not bitwise) far inside the requested tolerance."""
    model = mbkron.load_model(MAIN_JOB)
    t_eval = np.linspace(0.0, 0.03, 31)
    options = dict(method="TRBDF2", rtol=1e-6, atol=1e-8, t_eval=t_eval)
    built = []
    original = CompiledTRBDF2.__init__
    monkeypatch.setattr(CompiledTRBDF2, "__init__", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    compiled = mbkron.simulate(model, (0.0, 0.03), model.default_q, [0.0], **options)
    assert built == [1] and compiled.success
    monkeypatch.setattr(Model, "state_kernel", lambda self, workspace, tau=None: None)
    python = mbkron.simulate(model, (0.0, 0.03), model.default_q, [0.0], **options)
    assert built == [1]
    assert (compiled.n_steps, compiled.nfev, compiled.njev, compiled.nlu) == (
        python.n_steps, python.nfev, python.njev, python.nlu)
    y_compiled, y_python = (np.hstack([run.q, run.qd]) for run in (compiled, python))
    assert np.all(np.abs(y_compiled - y_python) <= 0.1 * (1e-8 + 1e-6 * np.abs(y_python)))
    np.testing.assert_allclose(compiled.joint_variables, python.joint_variables, rtol=1e-6, atol=1e-8)


def test_output_rows_are_the_dense_output_and_its_accelerations():
    """``CompiledTRBDF2.output_rows`` of the output times a step reached: the states equal the solver's dense
    output (the same Hermite arithmetic) and the accelerations equal ``Model.forward_dynamics`` at those states
    (evaluated anew from the assembly configuration, so equal to the constraint solver's tolerance)."""
    model, _, fun, y0, state_kernel = _squeezer()
    times = np.linspace(0.0, 0.03, 3001)[1:]  # several in most steps
    compiled = CompiledTRBDF2(fun, 0.0, y0, 0.03, state_kernel, times, rtol=1e-6, atol=1e-8, jac=state_kernel.jacobian)
    checked = 0
    while compiled.status == "running" and checked < 40:
        compiled.step()
        reached = times[(times > compiled.t_old) & (times <= compiled.t)]
        if reached.size < 2:
            continue
        states, accelerations = compiled.output_rows(reached)
        np.testing.assert_allclose(states, compiled.dense_output()(reached).T, rtol=1e-15, atol=0)
        expected = model.forward_dynamics(states[:, :1], states[:, 1:])
        np.testing.assert_allclose(accelerations, expected, rtol=1e-9)
        checked += 1
    assert checked == 40


def test_output_rows_inside_the_kernel_equal_the_trajectory_s_own():
    """The rows the kernel gives after each step for the output times it reaches (CompiledTRBDF2 given the run's
    output times, several steps per call) are, bit for bit, those the trajectory computes itself after each step
    taken alone (the dense output, then the compiled right-hand side at each time, advancing), and so is every
    step after (the continuation moves through the same states)."""
    times = np.linspace(0.0, 0.03, 201)[1:]
    runs = []
    for output_times in (times, None):
        _, _, fun, y0, state_kernel = _squeezer()
        solver = CompiledTRBDF2(fun, 0.0, y0, 0.03, state_kernel, output_times, rtol=1e-6, atol=1e-8,
                                jac=state_kernel.jacobian, steps_per_call=1 if output_times is None else None)
        rows, steps, done = [], [], 0
        while solver.status == "running":
            solver.step()
            steps.append((solver.t, solver.y.copy()))
            end = done
            while end < times.size and times[end] <= solver.t:
                end += 1
            if end > done:
                reached = times[done:end]
                computed = solver.output_rows(reached)
                if output_times is None:
                    assert computed is None
                    states = solver.dense_output()(reached).T
                    computed = states, np.array([state_kernel.accelerations(state) for state in states])
                rows.append(computed)
                done = end
        runs.append((steps, rows))
    (steps_a, rows_a), (steps_b, rows_b) = runs
    assert len(steps_a) == len(steps_b) > 100 and len(rows_a) == len(rows_b) > 100
    assert all(ta == tb and np.array_equal(ya, yb) for (ta, ya), (tb, yb) in zip(steps_a, steps_b))
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(rows_a, rows_b))


@pytest.mark.parametrize("name, t_end, rows", [("andrews_squeezer", 0.03, 101), ("andrews_squeezer", 0.03, None),
                                               ("four_bar", 2.0, None), ("five_bar", 0.5, 41)])
def test_several_steps_per_call_give_the_run_of_single_steps(monkeypatch, name, t_end, rows):
    """``simulate`` with TRBDF2 takes up to ``STEPS_PER_CALL`` steps in one compiled call, each followed by its
    rows (output times, or without them the right-hand side at its end), and hands them out one by one: the run
    is, bit for bit, the run of one step per call — also where it stops inside the interval (the four-bar's
    coordinate leaves its range, the last row at the crossing) — and the calls are fewer."""
    from mbkron.integrate import trbdf2 as solvers
    from mbkron.model.forward import StateKernel

    model = mbkron.load_model(Path(MAIN_JOB).parent / f"{name}.toml")
    t_eval = None if rows is None else np.linspace(0.0, t_end, rows)
    calls, original = [], StateKernel.steps
    monkeypatch.setattr(StateKernel, "steps", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    runs = []
    for per_call in (solvers.STEPS_PER_CALL, 1):
        monkeypatch.setattr(solvers, "STEPS_PER_CALL", per_call)
        calls.clear()
        runs.append((mbkron.simulate(model, (0.0, t_end), model.default_q, np.zeros(model.nq), method="TRBDF2",
                                     rtol=1e-6, atol=1e-8, t_eval=t_eval), len(calls)))
    (chunked, chunked_calls), (single, single_calls) = runs
    assert single_calls >= single.n_steps > 50 and chunked_calls < single_calls / 4
    assert (chunked.status, chunked.message) == (single.status, single.message)
    assert (chunked.n_steps, chunked.nfev, chunked.njev, chunked.nlu) == (single.n_steps, single.nfev, single.njev,
                                                                          single.nlu)
    for field in ("t", "q", "qd", "qdd", "joint_variables"):
        assert np.array_equal(getattr(chunked, field), getattr(single, field)), field
    assert name != "four_bar" or chunked.status == 1  # the range stop was exercised
