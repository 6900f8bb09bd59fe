"""Andrews' squeezer against the IVP test set ("andrews", Hairer & Wanner; Mazzia & Magherini):
its mass matrix, its consistent initial accelerations and its reference solution at t = 0.03."""

from __future__ import annotations

import numpy as np
import pytest

from mbkron.examples.andrews import INITIAL, andrews_squeezer, open_tree
from mbkron.integrate.simulate import simulate
from validation.andrews_reference import (
    INITIAL_ACCELERATION,
    ORDER,
    REFERENCE_Q,
    REFERENCE_QD,
    reference_mass_matrix,
)


def test_mass_matrix_is_the_test_sets():
    tree = open_tree()
    assert tree.coordinates == ORDER
    rng = np.random.default_rng(0)
    for q in [np.array([INITIAL[n] for n in ORDER]), *rng.uniform(-3, 3, size=(5, 7))]:
        expected = reference_mass_matrix(*q)
        np.testing.assert_allclose(tree.mass_matrix(q), expected, rtol=0, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("constraints", ["loop_closures", "expressions"])
@pytest.mark.parametrize("solver", ["lu", "projection"])
def test_initial_state_and_accelerations(constraints, solver):
    model = andrews_squeezer(solver=solver, constraints=constraints)
    q0 = np.array([INITIAL["beta"]])
    f, grad, _ = model.joint_variables(q0)
    by_name = dict(zip(model.joints, f))
    for name in ORDER[1:]:
        assert abs(by_name[name] - INITIAL[name]) < 1e-14
    beta_ddot = model.forward_dynamics(q0, [0.0])[0]
    assert beta_ddot == pytest.approx(INITIAL_ACCELERATION[0], rel=1e-10)
    theta_ddot = grad[model.joints.index("Theta"), 0] * beta_ddot  # at rest: f̈ = ∇f q̈
    assert theta_ddot == pytest.approx(INITIAL_ACCELERATION[1], rel=1e-10)


def _final_state(model, rtol: float) -> tuple[np.ndarray, float]:
    """``q(0.03)`` in the test set's order and ``β̇(0.03)``, integrated by RKF45 at ``rtol = atol``."""
    run = simulate(model, (0.0, 0.03), [INITIAL["beta"]], [0.0], method="RKF45", rtol=rtol, atol=rtol)
    assert run.success, run.message
    f = dict(zip(model.joints, run.joint_variables[-1]))
    return np.array([f["crank"]] + [f[name] for name in ORDER[1:]]), run.qd[-1, 0]


def test_reference_solution_at_3e_2():
    """The whole run to t = 0.03 converges to the test set's reference as the tolerance tightens.

    No tolerance is fitted: the global error of the run at ``rtol`` is estimated the standard way,
    by integrating again at ``rtol / 10`` (Shampine's reintegration estimate: with an error that
    scales with the tolerance, ``|x(rtol) − x(rtol/10)|`` is about 9/10 of the coarse run's error and
    9 times the fine run's). The reference must lie within that estimate of the fine run (this holds
    as long as tightening the tolerance tenfold at least halves the error), and the fine run must be
    closer to it than the coarse one. Anything that made mbkron converge to another solution — a
    wrong term, a pre-model too coarse for the motion — gives an error that does not shrink with the
    tolerance and fails both. The reference is published to 16 digits, far beyond either run.
    """
    model = andrews_squeezer(solver="premodel", constraints="expressions", step=2 * np.pi / 512)
    q_coarse, beta_dot_coarse = _final_state(model, 1e-8)
    q_fine, beta_dot_fine = _final_state(model, 1e-9)
    estimate = np.abs(q_coarse - q_fine).max()
    assert np.abs(q_fine - REFERENCE_Q).max() <= estimate
    assert np.abs(q_fine - REFERENCE_Q).max() < np.abs(q_coarse - REFERENCE_Q).max()
    assert abs(beta_dot_fine - REFERENCE_QD[0]) <= abs(beta_dot_coarse - beta_dot_fine)
    assert abs(beta_dot_fine - REFERENCE_QD[0]) < abs(beta_dot_coarse - REFERENCE_QD[0])
