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


def test_reference_solution_at_3e_2():
    """The whole run to t = 0.03 (RKF45 at rtol 1e-7; the tight ladder is in the benchmark)."""
    model = andrews_squeezer(solver="premodel", constraints="expressions", step=2 * np.pi / 512)
    run = simulate(model, (0.0, 0.03), [INITIAL["beta"]], [0.0], method="RKF45", rtol=1e-7, atol=1e-7)
    assert run.success, run.message
    f = dict(zip(model.joints, run.joint_variables[-1]))
    q_final = [f["crank"]] + [f[name] for name in ORDER[1:]]
    np.testing.assert_allclose(q_final, REFERENCE_Q, rtol=0, atol=1e-4)
    assert run.qd[-1, 0] == pytest.approx(REFERENCE_QD[0], rel=1e-4)
