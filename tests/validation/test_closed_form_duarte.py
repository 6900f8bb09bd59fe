"""Seed 003 (Duarte's one- and two-link models) against an independent Lagrangian derivation.

The reference is derived here with sympy: Lagrange's equations in the relative angles
``q = (α_1, α_2)`` from kinetic and potential energy, and the external force at the tip of the
distal segment through its virtual work ``Jᵀ F_e``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import sympy as sp

from validation.closed_form.duarte_two_link import (
    TwoLinkParameters,
    coriolis_centripetal,
    dempster_parameters,
    external_torques,
    gravity_torques,
    inertia_matrix,
    joint_torques,
    newton_euler,
    one_link_torque,
)
from validation.closed_form.planar_chain import (
    ContactForce,
    PlanarChain,
    absolute_from_relative,
    appendix_a_two_link_torques,
)

RTOL = 1e-10
NAMES = ("L1", "L2", "d1", "d2", "m1", "m2", "I1", "I2", "g")


def assert_close(actual, expected, rtol=RTOL):
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = np.max(np.abs(expected))
    assert scale > 0.0
    error = np.max(np.abs(actual - expected))
    assert error <= rtol * scale, f"max error {error:.3e} vs scale {scale:.3e}"


@lru_cache(maxsize=None)
def lagrange_two_link():
    p = sp.symbols(" ".join(NAMES))
    l1, l2, d1, d2, m1, m2, i1, i2, g = p
    fx, fy = sp.symbols("F_ex F_ey")
    q = sp.Matrix(sp.symbols("q1 q2"))
    qd = sp.Matrix(sp.symbols("qd1 qd2"))
    qdd = sp.Matrix(sp.symbols("qdd1 qdd2"))
    t1, t2 = q[0], q[0] + q[1]

    def e(t):
        return sp.Matrix([sp.cos(t), sp.sin(t)])

    coms = [d1 * e(t1), l1 * e(t1) + d2 * e(t2)]
    tip = l1 * e(t1) + l2 * e(t2)
    vel = [c.jacobian(q) * qd for c in coms]
    kinetic = (m1 * (vel[0].T * vel[0])[0] + m2 * (vel[1].T * vel[1])[0]
               + i1 * qd[0] ** 2 + i2 * (qd[0] + qd[1]) ** 2) / 2
    potential = g * (m1 * coms[0][1] + m2 * coms[1][1])
    eom = []
    for k in range(2):
        p_k = sp.diff(kinetic, qd[k])
        eom.append(sum(sp.diff(p_k, qd[j]) * qdd[j] + sp.diff(p_k, q[j]) * qd[j]
                       for j in range(2)) - sp.diff(kinetic, q[k]))
    eom = sp.Matrix(eom)
    exprs = {
        "M": eom.jacobian(qdd),
        "C": eom.subs({qdd[0]: 0, qdd[1]: 0}),
        "G": sp.Matrix([sp.diff(potential, x) for x in q]),
        "Q_e": tip.jacobian(q).T * sp.Matrix([fx, fy]),
        "com_acc": [list(c.jacobian(q) * qdd + (c.jacobian(q) * qd).jacobian(q) * qd)
                    for c in coms],
    }
    args = (p, list(q), list(qd), list(qdd), (fx, fy))
    return {k: sp.lambdify(args, v, modules="numpy", cse=True) for k, v in exprs.items()}


def reference(name, p, q, q_dot=(0.0, 0.0), q_ddot=(0.0, 0.0), force=(0.0, 0.0)):
    values = [getattr(p, k) for k in NAMES]
    out = lagrange_two_link()[name](values, list(q), list(q_dot), list(q_ddot), tuple(force))
    return np.squeeze(np.array(out, dtype=float))


@pytest.fixture(params=[1, 2, 3, 4, 5, "dempster"])
def case(request):
    rng = np.random.default_rng(0 if request.param == "dempster" else request.param)
    if request.param == "dempster":
        p = dempster_parameters()
    else:
        p = TwoLinkParameters(*rng.uniform(0.1, 2.0, 8), g=9.81)
    state = (rng.uniform(-np.pi, np.pi, 2), rng.normal(0, 3, 2), rng.normal(0, 10, 2))
    return p, state, rng.uniform(-30, 30, 2)


def lagrange_torques(p, state, force):
    q, q_dot, q_ddot = state
    return (reference("M", p, q) @ q_ddot + reference("C", p, q, q_dot) + reference("G", p, q)
            - reference("Q_e", p, q, force=force))


def test_mass_matrix(case):
    p, (q, _, _), _ = case
    assert_close(inertia_matrix(p, q), reference("M", p, q))


def test_coriolis_centripetal(case):
    p, (q, q_dot, _), _ = case
    assert_close(coriolis_centripetal(p, q, q_dot), reference("C", p, q, q_dot))


def test_gravity(case):
    p, (q, _, _), _ = case
    assert_close(gravity_torques(p, q), reference("G", p, q))


def test_external_force_term_is_minus_virtual_work(case):
    p, (q, _, _), force = case
    assert_close(external_torques(p, q, force), -reference("Q_e", p, q, force=force))


def test_joint_torques_equal_lagrange(case):
    p, state, force = case
    assert_close(joint_torques(p, *state, external_force=force), lagrange_torques(p, state, force))


def test_newton_euler_torques_equal_lagrange(case):
    p, state, force = case
    assert_close(newton_euler(p, *state, external_force=force).torques,
                 lagrange_torques(p, state, force))


def test_newton_euler_reaction_forces_satisfy_newton_per_link(case):
    p, state, force = case
    fr = newton_euler(p, *state, external_force=force).reaction_forces
    a_com = reference("com_acc", p, *state)
    link2 = fr[1] + np.asarray(force) + np.array([0.0, -p.m2 * p.g])
    link1 = fr[0] - fr[1] + np.array([0.0, -p.m1 * p.g])
    assert_close(np.array([link1, link2]), np.array([p.m1, p.m2])[:, None] * a_com)


def test_seed000_appendix_a_two_link_equals_duarte(case):
    """Seed 000 Appendix A with ε = 0, θ_k = Σ α_i and F_e as a contact force on link 2."""
    p, (q, q_dot, q_ddot), force = case
    theta = absolute_from_relative(q)
    magnitude = float(np.hypot(*force))
    gamma = float(np.arctan2(force[1], force[0]) - theta[1])  # direction relative to û_2
    chain = PlanarChain(l=[p.L1, p.L2], l_C=[p.d1, p.d2], eps_C=[0.0, 0.0], m=[p.m1, p.m2],
                        I_C=[p.I1, p.I2], g=p.g,
                        contacts=(ContactForce(2, magnitude, p.L2, 0.0, gamma),))
    tau = appendix_a_two_link_torques(chain, theta, absolute_from_relative(q_dot),
                                      absolute_from_relative(q_ddot))
    assert_close(tau, joint_torques(p, q, q_dot, q_ddot, external_force=force))


def test_batched_inputs(case):
    p, state, force = case
    rng = np.random.default_rng(9)
    batch = [np.stack([x, rng.normal(size=2)]) for x in state]
    forces = np.stack([force, -force])
    tau = joint_torques(p, *batch, external_force=forces)
    ne = newton_euler(p, *batch, external_force=forces)
    for b in range(2):
        single = joint_torques(p, *(x[b] for x in batch), external_force=forces[b])
        assert_close(tau[b], single)
        assert_close(ne.torques[b], single)
    assert ne.reaction_forces.shape == (2, 2, 2)


def test_printed_link2_moment_equation_has_a_sign_slip(case):
    """The typeset Newton-Euler moment equation of link 2 has ``-(L2 - d2) F_ey cos``.

    With the forces on link 2 known, the printed equation gives a T_2 that differs from the
    derivation by ``2 (L2 - d2) F_ey cos(α1 + α2)``; the notebook's code (``+``) is right.
    """
    p, state, force = case
    (q1, q2), _, (b1, b2) = state
    fr2x, fr2y = newton_euler(p, *state, external_force=force).reaction_forces[1]
    s, c = np.sin(q1 + q2), np.cos(q1 + q2)
    # printed: T2 + d2 Fr2x s - d2 Fr2y c - (L2-d2) Fex s - (L2-d2) Fey c = I2 (α̈1 + α̈2)
    printed_t2 = (p.I2 * (b1 + b2) - p.d2 * fr2x * s + p.d2 * fr2y * c
                  + (p.L2 - p.d2) * force[0] * s + (p.L2 - p.d2) * force[1] * c)
    exact = lagrange_torques(p, state, force)[1]
    assert printed_t2 - exact == pytest.approx(2 * (p.L2 - p.d2) * force[1] * c, rel=1e-8)


# ----------------------------------------------------------------------------------------------
# One-link model and Dempster's parameters
# ----------------------------------------------------------------------------------------------


def test_one_link_torque_equals_lagrange():
    L, d, m, inertia, g, alpha, alpha_dot, alpha_ddot, fx, fy = sp.symbols(
        "L d m I g alpha alpha_dot alpha_ddot F_ex F_ey")
    com = sp.Matrix([d * sp.cos(alpha), d * sp.sin(alpha)])
    tip = sp.Matrix([L * sp.cos(alpha), L * sp.sin(alpha)])
    v = com.diff(alpha) * alpha_dot
    kinetic = m * (v.T * v)[0] / 2 + inertia * alpha_dot**2 / 2
    p_a = sp.diff(kinetic, alpha_dot)
    eom = (sp.diff(p_a, alpha_dot) * alpha_ddot + sp.diff(p_a, alpha) * alpha_dot
           - sp.diff(kinetic, alpha) + sp.diff(m * g * com[1], alpha)
           - (tip.diff(alpha).T * sp.Matrix([fx, fy]))[0])
    rng = np.random.default_rng(3)
    for _ in range(5):
        values = dict(zip((L, d, m, inertia, alpha, alpha_dot, alpha_ddot, fx, fy),
                          rng.uniform(-2, 2, 9)))
        values[g] = 9.81
        expected = float(eom.subs(values))
        actual = one_link_torque(values[L], values[d], values[m], values[inertia], values[alpha],
                                 values[alpha_ddot], (values[fx], values[fy]))
        assert actual == pytest.approx(expected, rel=RTOL)


def test_dempster_parameters_for_170_cm_70_kg():
    """Hand-computed from the notebook's table: h = 1.70 m, M = 70 kg."""
    p = dempster_parameters()
    expected = dict(L1=0.3196, L2=0.4301, d1=0.1393456, d2=0.2933282, m1=1.96, m2=1.54,
                    I1=1.96 * 0.01059071508544, I2=1.54 * 0.04051637585424, g=9.81)
    for name, value in expected.items():
        assert getattr(p, name) == pytest.approx(value, rel=1e-12), name
    assert p.I1 == pytest.approx(0.0207578015674624, rel=1e-12)
    assert p.I2 == pytest.approx(0.0623952188155296, rel=1e-12)


def test_dempster_parameters_scale_with_height_and_mass():
    p = dempster_parameters(height=2.0, mass=100.0)
    assert (p.L1, p.L2, p.m1, p.m2) == pytest.approx((0.376, 0.506, 2.8, 2.2), rel=1e-12)
    assert p.I2 == pytest.approx(2.2 * (0.468 * 0.506) ** 2, rel=1e-12)


def test_dempster_arm_holding_horizontal_at_rest():
    """Static check with hand-computed numbers: both segments horizontal, no motion."""
    p = dempster_parameters()
    tau = joint_torques(p, [0.0, 0.0], [0.0, 0.0], [0.0, 0.0])
    shoulder = 9.81 * (1.96 * 0.1393456 + 1.54 * (0.3196 + 0.2933282))
    elbow = 9.81 * 1.54 * 0.2933282
    assert tau == pytest.approx([shoulder, elbow], rel=1e-12)
