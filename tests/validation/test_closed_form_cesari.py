"""Seed 001 (Cesari et al. three-link arm) against an independent Lagrangian derivation.

The reference is written here with sympy: Lagrange's equations in the joint-space angles α from
the kinetic and potential energy of the three segments, plus the virtual work of the spring force
``(-F_S, 0)`` applied at distance ``d_3 + d_S`` from the wrist.  The printed forms of the equations
found to be wrong are also written here, to show that they disagree with the derivation.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import sympy as sp

from validation.closed_form.cesari_three_link import (
    CesariArm,
    com_accelerations,
    com_positions,
    external_torques,
    gravity_torques,
    inertia_matrix,
    internal_angles,
    joint_moments,
    joint_space_angles,
    newton_euler,
    velocity_torques,
)
from validation.closed_form.planar_chain import (
    ContactForce,
    PlanarChain,
    absolute_from_relative,
    appendix_a_three_link_torques,
)

RTOL = 1e-10
NAMES = ("l1", "l2", "d1", "d2", "d3", "m1", "m2", "m3", "I1", "I2", "I3", "d_s", "g")


def assert_close(actual, expected, rtol=RTOL):
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = np.max(np.abs(expected))
    assert scale > 0.0
    error = np.max(np.abs(actual - expected))
    assert error <= rtol * scale, f"max error {error:.3e} vs scale {scale:.3e}"


@lru_cache(maxsize=None)
def lagrange_arm():
    """Lambdified ``M``, ``h`` (velocity terms), ``G``, spring ``Q``, CoM positions/accelerations."""
    p = sp.symbols(" ".join(NAMES))
    l1, l2, d1, d2, d3, m1, m2, m3, i1, i2, i3, d_s, g = p
    f_s = sp.Symbol("F_S")
    a = sp.symbols("a1:4")
    ad = sp.symbols("ad1:4")
    add = sp.symbols("add1:4")
    q, qd, qdd = sp.Matrix(a), sp.Matrix(ad), sp.Matrix(add)
    th = [a[0], a[0] + a[1], a[0] + a[1] + a[2]]

    def e(t):
        return sp.Matrix([sp.cos(t), sp.sin(t)])

    elbow, wrist = l1 * e(th[0]), l1 * e(th[0]) + l2 * e(th[1])
    coms = [d1 * e(th[0]), elbow + d2 * e(th[1]), wrist + d3 * e(th[2])]
    spring_point = wrist + (d3 + d_s) * e(th[2])
    vel = [c.jacobian(q) * qd for c in coms]
    omega = [ad[0], ad[0] + ad[1], ad[0] + ad[1] + ad[2]]
    kinetic = sum(m * (v.T * v)[0] / 2 + inertia * w**2 / 2
                  for m, v, inertia, w in zip((m1, m2, m3), vel, (i1, i2, i3), omega))
    potential = g * (m1 * coms[0][1] + m2 * coms[1][1] + m3 * coms[2][1])
    eom = []
    for k in range(3):
        p_k = sp.diff(kinetic, ad[k])
        eom.append(sum(sp.diff(p_k, ad[j]) * add[j] + sp.diff(p_k, a[j]) * ad[j] for j in range(3))
                   - sp.diff(kinetic, a[k]))
    eom = sp.Matrix(eom)
    mass = eom.jacobian(qdd)
    velocity_terms = eom.subs({x: 0 for x in add})
    gravity = sp.Matrix([sp.diff(potential, x) for x in a])
    q_spring = spring_point.jacobian(q).T * sp.Matrix([-f_s, 0])
    acc = [list(c.jacobian(q) * qdd + (c.jacobian(q) * qd).jacobian(q) * qd) for c in coms]
    args = (p, a, ad, add, f_s)
    exprs = {"M": mass, "h": velocity_terms, "G": gravity, "Q_spring": q_spring,
             "com_pos": [list(c) for c in coms], "com_acc": acc}
    return {k: sp.lambdify(args, v, modules="numpy", cse=True) for k, v in exprs.items()}


def random_arm(rng):
    values = dict(zip(NAMES[:-1], rng.uniform(0.1, 2.0, len(NAMES) - 1)))
    return CesariArm(**values, g=9.81)


def reference(name, arm, alpha, alpha_dot=None, alpha_ddot=None, spring_force=0.0):
    zero = np.zeros(3)
    p = [getattr(arm, k) for k in NAMES]
    out = lagrange_arm()[name](p, alpha, zero if alpha_dot is None else alpha_dot,
                               zero if alpha_ddot is None else alpha_ddot, spring_force)
    return np.squeeze(np.array(out, dtype=float))


@pytest.fixture(params=[1, 2, 3, 4, 5])
def case(request):
    rng = np.random.default_rng(request.param)
    arm = random_arm(rng)
    state = (rng.uniform(-np.pi, np.pi, 3), rng.normal(0, 3, 3), rng.normal(0, 10, 3))
    return arm, state, rng.uniform(-50, 50)


def lagrange_moments(arm, state, f_s):
    alpha, alpha_dot, alpha_ddot = state
    return (reference("M", arm, alpha) @ alpha_ddot + reference("h", arm, alpha, alpha_dot)
            + reference("G", arm, alpha) - reference("Q_spring", arm, alpha, spring_force=f_s))


def test_eq24_joint_moments_equal_lagrange(case):
    arm, state, f_s = case
    assert_close(joint_moments(arm, *state, spring_force=f_s), lagrange_moments(arm, state, f_s))


def test_eq15_23_newton_euler_moments_equal_lagrange(case):
    arm, state, f_s = case
    assert_close(newton_euler(arm, *state, spring_force=f_s).moments,
                 lagrange_moments(arm, state, f_s))


def test_eq15_23_reaction_forces_satisfy_newton_per_segment(case):
    arm, state, f_s = case
    forces = newton_euler(arm, *state, spring_force=f_s).reaction_forces
    a_com = reference("com_acc", arm, *state)
    weight = np.array([[0.0, -arm.m1 * arm.g], [0.0, -arm.m2 * arm.g], [0.0, -arm.m3 * arm.g]])
    spring = np.array([[0.0, 0.0], [0.0, 0.0], [-f_s, 0.0]])
    from_distal = -np.vstack([forces[1:], np.zeros((1, 2))])
    total = forces + from_distal + weight + spring
    assert_close(total, np.array([arm.m1, arm.m2, arm.m3])[:, None] * a_com)


def test_eq27_35_inertia_matrix(case):
    arm, (alpha, _, _), _ = case
    assert_close(inertia_matrix(arm, alpha), reference("M", arm, alpha))


def test_eq36_38_velocity_torques(case):
    arm, (alpha, alpha_dot, _), _ = case
    assert_close(velocity_torques(arm, alpha, alpha_dot), reference("h", arm, alpha, alpha_dot))


def test_eq39_41_gravity_torques(case):
    arm, (alpha, _, _), _ = case
    assert_close(gravity_torques(arm, alpha), reference("G", arm, alpha))


def test_eq42_44_spring_torques(case):
    arm, (alpha, _, _), f_s = case
    assert_close(external_torques(arm, alpha, f_s),
                 -reference("Q_spring", arm, alpha, spring_force=f_s))


def test_eq3_14_com_kinematics(case):
    arm, state, _ = case
    assert_close(com_positions(arm, state[0]), reference("com_pos", arm, state[0]))
    assert_close(com_accelerations(arm, *state), reference("com_acc", arm, *state))


def test_batched_inputs(case):
    arm, state, f_s = case
    rng = np.random.default_rng(0)
    batch = [np.stack([x, rng.normal(size=3)]) for x in state]
    forces = np.array([f_s, -f_s])
    moments = joint_moments(arm, *batch, spring_force=forces)
    ne = newton_euler(arm, *batch, spring_force=forces)
    for b in range(2):
        single = joint_moments(arm, *(x[b] for x in batch), spring_force=forces[b])
        assert_close(moments[b], single)
        assert_close(ne.moments[b], single)
    assert ne.reaction_forces.shape == (2, 3, 2)


# ----------------------------------------------------------------------------------------------
# The printed equations that are wrong (written out here as printed)
# ----------------------------------------------------------------------------------------------


def printed_eq10(arm, alpha, alpha_dot, alpha_ddot):
    a1, a2, _ = alpha
    w1, w2, _ = alpha_dot
    b1, b2, _ = alpha_ddot
    return ((arm.l1 * np.cos(a1) + arm.d2 * np.cos(a1 + a2)) * b1
            + arm.d2 * np.cos(a1 + a2) * b2
            - (arm.l1 * np.sin(a1) - arm.d2 * np.sin(a1 + a2)) * w1**2
            + arm.d2 * np.sin(a1 + a2) * (2 * w1 * w2 + w2**2))


def printed_eq14(arm, alpha, alpha_dot, alpha_ddot):
    s = np.cumsum(alpha)
    w1, w2, w3 = alpha_dot
    b1, b2, b3 = alpha_ddot
    l1, l2, d3 = arm.l1, arm.l2, arm.d3
    return ((l1 * np.cos(s[0]) + l2 * np.cos(s[1]) + d3 * np.cos(s[2])) * b1
            + (l2 * np.cos(s[1]) + d3 * np.cos(s[2])) * b2 + d3 * np.cos(s[2]) * b3
            - (l1 * np.sin(s[0]) + l2 * np.sin(s[1]) + d3 * np.sin(s[2])) * w1**2
            - (l2 * np.sin(s[1]) + d3 * np.sin(s[2])) * w2**2 - d3 * np.sin(s[2]) * w3**2
            - (l2 * np.sin(s[1]) + d3 * np.cos(s[2])) * 2 * w1 * w2
            - d3 * np.sin(s[2]) * (2 * w1 * w3 + 2 * w2 * w3))


def test_printed_eq10_and_eq14_disagree_with_the_derivation(case):
    arm, state, _ = case
    a_com = reference("com_acc", arm, *state)
    assert abs(printed_eq10(arm, *state) - a_com[1, 1]) > 1e-6
    assert abs(printed_eq14(arm, *state) - a_com[2, 1]) > 1e-6
    # the corrections touch only the terms named in the seed notes
    corrected = com_accelerations(arm, *state)
    a1, a2, _ = state[0]
    w1, w2, _ = state[1]
    slip10 = 2 * arm.d2 * np.sin(a1 + a2) * (w1**2 + 2 * w1 * w2 + w2**2)
    assert printed_eq10(arm, *state) - corrected[1, 1] == pytest.approx(slip10, rel=1e-9)
    s123 = np.sum(state[0])
    slip14 = -arm.d3 * (np.cos(s123) - np.sin(s123)) * 2 * w1 * w2
    assert printed_eq14(arm, *state) - corrected[2, 1] == pytest.approx(slip14, rel=1e-9)


def test_printed_eq31_disagrees_with_the_derivation(case):
    arm, (alpha, _, _), _ = case
    printed = (arm.m2 * arm.d2**2 + arm.I2
               + arm.m3 * (arm.l2**2 + arm.d3**2 + arm.l2 * arm.d3 * np.cos(alpha[2])) + arm.I3)
    exact = reference("M", arm, alpha)[1, 1]
    assert printed - exact == pytest.approx(-arm.m3 * arm.l2 * arm.d3 * np.cos(alpha[2]),
                                            rel=1e-9)


def test_printed_eq23_disagrees_with_the_derivation(case):
    """Eq. 23 as printed (``F_y1 d_1 sin α_1``) gives a wrong shoulder moment."""
    arm, state, f_s = case
    ne = newton_euler(arm, *state, spring_force=f_s)
    (fx1, fy1), (fx2, fy2), _ = ne.reaction_forces
    a1 = state[0][0]
    t2 = ne.moments[1]
    printed_t1 = (arm.I1 * state[2][0] + t2 - fx2 * (arm.l1 - arm.d1) * np.sin(a1)
                  + fy2 * (arm.l1 - arm.d1) * np.cos(a1)
                  - fy1 * arm.d1 * np.sin(a1) + fy1 * arm.d1 * np.cos(a1))
    exact = lagrange_moments(arm, state, f_s)[0]
    assert abs(printed_t1 - exact) > 1e-6
    assert printed_t1 - exact == pytest.approx((fx1 - fy1) * arm.d1 * np.sin(a1), rel=1e-8)


# ----------------------------------------------------------------------------------------------
# Eq. 1 and the cross-check with seed 000 (Appendix A)
# ----------------------------------------------------------------------------------------------


def test_eq1_angles():
    theta = np.array([0.5, 1.25, 0.75])
    assert joint_space_angles(theta) == pytest.approx([0.5, 0.75, -0.5])
    assert internal_angles([0.5, 0.75, -0.5]) == pytest.approx([0.5, np.pi - 0.75, np.pi + 0.5])


def test_seed000_appendix_a_three_link_equals_cesari(case):
    """Seed 000 Appendix A with ε = 0, θ_k = Σ α_i and the spring as contact force R_3."""
    arm, (alpha, alpha_dot, alpha_ddot), f_s = case
    theta = absolute_from_relative(alpha)
    # R_3 = F_S along -x: angle π from the X axis, i.e. γ_R3 = π - θ_3 from û_3
    spring = ContactForce(3, f_s, arm.d3 + arm.d_s, 0.0, np.pi - theta[2])
    chain = PlanarChain(l=[arm.l1, arm.l2, 0.3], l_C=[arm.d1, arm.d2, arm.d3], eps_C=[0, 0, 0],
                        m=[arm.m1, arm.m2, arm.m3], I_C=[arm.I1, arm.I2, arm.I3], g=arm.g,
                        contacts=(spring,))
    tau = appendix_a_three_link_torques(chain, theta, absolute_from_relative(alpha_dot),
                                        absolute_from_relative(alpha_ddot))
    assert_close(tau, joint_moments(arm, alpha, alpha_dot, alpha_ddot, spring_force=f_s))
