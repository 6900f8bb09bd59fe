"""scipy's explicit Runge–Kutta solvers with compiled steps (mbkron.integrate.runge_kutta).

Oracles: scipy's own RK23, RK45 and DOP853 driving the same right-hand side (the compiled steps are their
``_step_impl`` and DOP853's dense output, decision for decision), and the IVP test set's reference solution of
Andrews' squeezer at t = 0.03. A run of the shipped model file (one constraint group: its right-hand side is
one compiled call) is made twice, once with the compiled steps and once with scipy's steps
(:data:`mbkron.integrate.runge_kutta.COMPILED` emptied), from the same initial state.

The right-hand side solves six loop equations by Newton at every evaluation, so it is exact only to the
solver's tolerance and depends on where the continuation starts: at tolerances tight enough that the stages
are close together (no continuation walks) the two runs take the same steps and agree to round-off, which is
what is compared. Looser runs may take other steps (an accept-or-reject decision near 1 that the Newton
solution's last digits tip).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.integrate.simulate import simulate
from validation.andrews_reference import ORDER, REFERENCE_Q, T_REFERENCE

MODEL = Path(__file__).resolve().parents[1] / "models" / "andrews_squeezer.toml"
_SIMULATE = sys.modules["mbkron.integrate.simulate"]


@pytest.fixture(scope="module")
def squeezer():
    return mbkron.load_model(MODEL)


def _run(model, method, tolerance, compiled, monkeypatch, t_eval=None):
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(_SIMULATE, "COMPILED_RUNGE_KUTTA", {})
        return simulate(model, (0.0, T_REFERENCE), model.default_q, method=method, rtol=tolerance, atol=tolerance,
                        t_eval=t_eval)


@pytest.mark.parametrize("method, tolerance", [("DOP853", 1e-9), ("RK45", 1e-9), ("RK45", 1e-6), ("RK23", 1e-6)])
def test_compiled_steps_are_scipy_s_steps(squeezer, monkeypatch, method, tolerance):
    t_eval = np.linspace(0.0, T_REFERENCE, 13)
    compiled = _run(squeezer, method, tolerance, True, monkeypatch, t_eval)
    scipy_run = _run(squeezer, method, tolerance, False, monkeypatch, t_eval)
    assert compiled.success and scipy_run.success
    assert (compiled.n_steps, compiled.nfev) == (scipy_run.n_steps, scipy_run.nfev)
    np.testing.assert_allclose(compiled.q, scipy_run.q, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(compiled.qd, scipy_run.qd, rtol=1e-11, atol=1e-9)
    np.testing.assert_allclose(compiled.qdd, scipy_run.qdd, rtol=1e-10, atol=1e-6)


def test_dop853_reaches_the_test_set_s_reference(squeezer, monkeypatch):
    """DOP853 at 1e-11 is within 5e-9 of the published reference (which is itself 1.4e-9 from the converged
    solution: docs/integrators.md), and ten times closer than at 1e-7."""
    errors = []
    for tolerance in (1e-7, 1e-11):
        run = _run(squeezer, "DOP853", tolerance, True, monkeypatch)
        angles = squeezer.joint_variables(run.q[-1], 0)[0]  # the crank angle β is the joint `crank`
        final = np.array([angles[squeezer.joints.index("crank" if name == "beta" else name)] for name in ORDER])
        errors.append(np.abs(final - REFERENCE_Q).max())
    assert errors[1] < 5e-9 and errors[1] < errors[0] / 10


def test_a_declined_step_is_redone_by_scipy(squeezer, monkeypatch):
    """Where the kernel declines a step (here, injected, the step after the first two of every second call: accepted
    steps handed out before it), scipy's step with the Python route takes it from the continuation reached: the run
    is scipy's alone, within its accuracy (the steps' sizes differ in their last digits, which the error estimate
    amplifies by 1/tolerance: see the module's text)."""
    from mbkron.numerics import runge_kutta as kernel
    from mbkron.algorithms.dynamics.group import RUNGE_KUTTA_STEP
    from mbkron.algorithms.dynamics.forward import StateKernel

    original = StateKernel.runge_kutta
    calls, declined = [0], [0]

    def declining(self, mode, *arguments):
        if mode != RUNGE_KUTTA_STEP:
            return original(self, mode, *arguments)
        calls[0] += 1
        if calls[0] % 2:
            return original(self, mode, *arguments)
        most = min(arguments[-1], 2)  # the last argument: the most steps
        outcome, accepted, record, stages = original(self, mode, *arguments[:-1], most)
        if outcome != kernel.STEP_OK or accepted < most:
            return outcome, accepted, record, stages
        declined[0] += 1
        return kernel.STEP_DECLINED, accepted, record, stages  # the next step declined

    monkeypatch.setattr(StateKernel, "runge_kutta", declining)
    t_eval = np.linspace(0.0, T_REFERENCE, 13)
    compiled = _run(squeezer, "DOP853", 1e-9, True, monkeypatch, t_eval)
    monkeypatch.setattr(StateKernel, "runge_kutta", original)
    scipy_run = _run(squeezer, "DOP853", 1e-9, False, monkeypatch, t_eval)
    assert declined[0] >= 8 and compiled.n_steps == scipy_run.n_steps
    np.testing.assert_allclose(compiled.q, scipy_run.q, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(compiled.qd, scipy_run.qd, rtol=1e-8, atol=1e-6)


@pytest.mark.parametrize("method, name, t_end, rows", [
    ("DOP853", "andrews_squeezer", 0.03, None), ("DOP853", "andrews_squeezer", 0.03, 7),
    ("RK45", "andrews_squeezer", 0.03, None), ("RK45", "andrews_squeezer", 0.03, 7),
    ("DOP853", "four_bar", 2.0, None), ("RK45", "four_bar", 2.0, 9)])
def test_several_steps_per_call_give_the_run_of_single_steps(monkeypatch, method, name, t_end, rows):
    """``simulate`` with a compiled explicit solver takes up to ``STEPS_PER_CALL`` steps in one compiled call and
    hands them out one by one, a call ending after a step that reaches an output time (the output rows follow in
    Python) or that a check may stop at: the run is, bit for bit, the run of one step per call — also where it stops
    inside the interval (the four-bar's coordinate leaves its range: DOP853's extra stages and the last row evaluated
    from the crossing step's continuation) — with the same evaluations, and the calls are fewer."""
    from mbkron.integrate import runge_kutta as solvers
    from mbkron.algorithms.dynamics.forward import StateKernel

    model = mbkron.load_model(MODEL.parent / f"{name}.toml")
    t_eval = None if rows is None else np.linspace(0.0, t_end, rows)
    calls, original = [], StateKernel.runge_kutta
    monkeypatch.setattr(StateKernel, "runge_kutta", lambda self, *a: calls.append(1) or original(self, *a))
    runs = []
    for per_call in (solvers.STEPS_PER_CALL, 1):
        monkeypatch.setattr(solvers, "STEPS_PER_CALL", per_call)
        calls.clear()
        runs.append((simulate(model, (0.0, t_end), model.default_q, np.zeros(model.nq), method=method, rtol=1e-8,
                              atol=1e-8, t_eval=t_eval), len(calls)))
    (chunked, chunked_calls), (single, single_calls) = runs
    assert single_calls >= single.n_steps >= 9 and chunked_calls < single_calls - single.n_steps / 2
    assert (chunked.status, chunked.message) == (single.status, single.message)
    assert (chunked.n_steps, chunked.nfev) == (single.n_steps, single.nfev)
    for field in ("t", "q", "qd", "qdd", "joint_variables"):
        assert np.array_equal(getattr(chunked, field), getattr(single, field)), field
    assert name != "four_bar" or chunked.status == 1  # the range stop was exercised
