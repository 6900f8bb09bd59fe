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
    """Where the kernel declines a step (here every third one, injected), scipy's step with the Python route
    takes it from the continuation reached: the run is scipy's alone, within its accuracy (the steps' sizes
    differ in their last digits, which the error estimate amplifies by 1/tolerance: see the module's text)."""
    from mbkron.compiled import runge_kutta as kernel
    from mbkron.integrate.runge_kutta import _CompiledSteps

    original = _CompiledSteps._step_impl
    calls = {"n": 0}

    def declining(self):
        calls["n"] += 1
        if calls["n"] % 3:
            return original(self)
        state_kernel = self.state_kernel

        class Declines:
            def runge_kutta(self, mode, t, y, f, h_abs, *rest):
                return kernel.STEP_DECLINED, t, y, f, h_abs, 0.0

            def __getattr__(self, name):
                return getattr(state_kernel, name)

        self.state_kernel = Declines()
        try:
            return original(self)
        finally:
            self.state_kernel = state_kernel

    monkeypatch.setattr(_CompiledSteps, "_step_impl", declining)
    t_eval = np.linspace(0.0, T_REFERENCE, 13)
    compiled = _run(squeezer, "DOP853", 1e-9, True, monkeypatch, t_eval)
    monkeypatch.setattr(_CompiledSteps, "_step_impl", original)
    scipy_run = _run(squeezer, "DOP853", 1e-9, False, monkeypatch, t_eval)
    assert calls["n"] >= 30 and compiled.n_steps == scipy_run.n_steps
    np.testing.assert_allclose(compiled.q, scipy_run.q, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(compiled.qd, scipy_run.qd, rtol=1e-8, atol=1e-6)
