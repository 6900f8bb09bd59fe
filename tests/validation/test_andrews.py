"""Andrews' squeezer against the IVP test set ("andrews", Hairer & Wanner; Mazzia & Magherini):
its mass matrix, its consistent initial accelerations and its reference solution at t = 0.03."""

from __future__ import annotations

import numpy as np
import pytest

from mbkron.models.andrews import INITIAL, PARAMETERS, andrews_squeezer, open_tree
from mbkron.simulation import simulate

ORDER = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")

# The test set's initial accelerations (w = q'' at t = 0) and reference solution at t = 0.03.
INITIAL_ACCELERATION = (14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0)
REFERENCE_Q = (0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
               0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1)
REFERENCE_QD = (0.1139920302151208e4, -0.1424379294994111e4, 0.1103291221937134e2, 0.1929337464421385e2,
                0.5735699284790808, -0.1929337464421385e2, 0.3231791658026955)


def reference_mass_matrix(beta, Theta, gamma, Phi, delta, Omega, epsilon):
    """The test set's 7×7 mass matrix, written out from its definition."""
    p = PARAMETERS
    m1, m2, m3, m4, m5, m6, m7 = (p[f"m{k}"] for k in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (p[f"i{k}"] for k in range(1, 8))
    rr, da, e, ea, zt, zf, fa, u = p["rr"], p["da"], p["e"], p["ea"], p["zt"], p["zf"], p["fa"], p["u"]
    M = np.zeros((7, 7))
    M[0, 0] = m1 * p["ra"] ** 2 + m2 * (rr**2 - 2 * da * rr * np.cos(Theta) + da**2) + i1 + i2
    M[1, 0] = M[0, 1] = m2 * (da**2 - da * rr * np.cos(Theta)) + i2
    M[1, 1] = m2 * da**2 + i2
    M[2, 2] = m3 * (p["sa"] ** 2 + p["sb"] ** 2) + i3
    M[3, 3] = m4 * (e - ea) ** 2 + i4
    M[4, 3] = M[3, 4] = m4 * ((e - ea) ** 2 + zt * (e - ea) * np.sin(Phi)) + i4
    M[4, 4] = m4 * (zt**2 + 2 * zt * (e - ea) * np.sin(Phi) + (e - ea) ** 2) + m5 * (p["ta"] ** 2 + p["tb"] ** 2) + i4 + i5
    M[5, 5] = m6 * (zf - fa) ** 2 + i6
    M[6, 5] = M[5, 6] = m6 * ((zf - fa) ** 2 - u * (zf - fa) * np.sin(Omega)) + i6
    M[6, 6] = m6 * ((zf - fa) ** 2 - 2 * u * (zf - fa) * np.sin(Omega) + u**2) + m7 * (p["ua"] ** 2 + p["ub"] ** 2) + i6 + i7
    return M


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
