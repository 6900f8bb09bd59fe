"""Seed 000 closed forms against independent derivations.

The references written here do not use the code under test:

* a sympy derivation of Lagrange's equations in relative angles α (kinetic and potential energy of
  the rigid links, virtual work ``Q = Σ (∂p/∂α)ᵀ F`` of the contact and muscle forces) for
  n = 1..4 with every parameter symbolic;
* a numpy recursive Newton–Euler solver (moments about the centres of mass) for n = 1..8.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
import pytest
import sympy as sp

from validation.closed_form.planar_chain import (
    ContactForce,
    Muscle,
    PlanarChain,
    absolute_from_relative,
    absolute_generalized_forces,
    appendix_a_three_link_torques,
    appendix_a_two_link_torques,
    base_external_force,
    com_accelerations,
    com_moment_term,
    com_positions,
    distal_inertial_force,
    distal_joint_torque,
    distal_moment_term,
    joint_positions,
    joint_reaction_breakdown,
    joint_reaction_forces,
    joint_reaction_forces_proximal,
    joint_torque_breakdown,
    joint_torques,
    joint_torques_proximal,
    muscle_joint_torques,
    muscle_reaction_forces,
    muscle_torque_contributions,
    polar_point,
    proximal_inertial_force,
    proximal_moment_term,
    relative_from_absolute,
    torque_differences,
    torque_differences_proximal,
)

RTOL = 1e-10
G = 9.81


def assert_close(actual, expected, rtol=RTOL, scale=None):
    """``max |actual - expected| <= rtol * scale``, by default ``scale = max |expected|``.

    Parts of a sum (unique contributions) pass the scale of the whole sum, as a part may vanish.
    """
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if scale is None:
        scale = np.max(np.abs(expected), initial=0.0)
    error = np.max(np.abs(actual - expected), initial=0.0)
    assert scale > 0.0 or error == 0.0
    assert error <= rtol * scale, f"max error {error:.3e} vs scale {scale:.3e}"


def muscle_pairs(n):
    """Every (j1, j2) with 0 <= j1 < j2 <= n: all single- and multi-joint muscles incl. the base."""
    return [(j1, j2) for j2 in range(1, n + 1) for j1 in range(j2)]


# ----------------------------------------------------------------------------------------------
# Random models
# ----------------------------------------------------------------------------------------------


def random_values(rng, n, pairs, extra_contacts=0):
    """Random parameters: per link (l, l_C, eps_C, m, I_C), contacts, muscles."""
    links = np.column_stack([rng.uniform(0.2, 1.2, n), rng.uniform(0.05, 0.8, n),
                             rng.uniform(-np.pi, np.pi, n), rng.uniform(0.5, 5.0, n),
                             rng.uniform(0.01, 0.5, n)])
    contact_links = list(range(1, n + 1)) + list(rng.integers(1, n + 1, extra_contacts))
    contacts = [(i, rng.uniform(-50, 50), rng.uniform(0, 1), rng.uniform(-np.pi, np.pi),
                 rng.uniform(-np.pi, np.pi)) for i in contact_links]
    muscles = [(j1, rng.uniform(-0.3, 0.5, 2), j2, rng.uniform(-0.3, 0.5, 2),
                rng.uniform(10, 200)) for j1, j2 in pairs]
    return links, contacts, muscles


def make_chain(links, contacts, muscles, g=G):
    return PlanarChain(l=links[:, 0], l_C=links[:, 1], eps_C=links[:, 2], m=links[:, 3],
                       I_C=links[:, 4], g=g,
                       contacts=tuple(ContactForce(*c) for c in contacts),
                       muscles=tuple(Muscle(*u) for u in muscles))


def random_state(rng, n, batch=()):
    return (rng.uniform(-np.pi, np.pi, batch + (n,)), rng.normal(0, 3, batch + (n,)),
            rng.normal(0, 10, batch + (n,)))


# ----------------------------------------------------------------------------------------------
# Independent reference 1: Lagrange's equations with sympy
# ----------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def lagrange_model(n):
    """Lagrange's equations of the n-link chain in relative angles, lambdified.

    Returns a dict of numeric functions of ``(values, alpha, alpha_dot, alpha_ddot)``.
    """
    al = sp.symbols(f"a1:{n + 1}")
    ad = sp.symbols(f"ad1:{n + 1}")
    add = sp.symbols(f"add1:{n + 1}")
    g = sp.Symbol("g")
    link = [sp.symbols(f"l{i} lc{i} e{i} m{i} I{i}") for i in range(1, n + 1)]
    contact = [sp.symbols(f"R{i} lR{i} eR{i} gR{i}") for i in range(1, n + 1)]
    pairs = muscle_pairs(n)
    muscle = [sp.symbols(f"pa{k} pb{k} qa{k} qb{k} f{k}") for k in range(len(pairs))]
    q, qd, qdd = sp.Matrix(al), sp.Matrix(ad), sp.Matrix(add)
    theta = [sum(al[: i + 1]) for i in range(n)]
    theta_dot = [sum(ad[: i + 1]) for i in range(n)]

    def e(angle):
        return sp.Matrix([sp.cos(angle), sp.sin(angle)])

    joints = [sp.zeros(2, 1)]
    for i in range(n):
        joints.append(joints[-1] + link[i][0] * e(theta[i]))

    def point(j, a, b):
        if j == 0:
            return sp.Matrix([a, b])
        return joints[j - 1] + a * e(theta[j - 1]) + b * e(theta[j - 1] + sp.pi / 2)

    coms = [joints[i] + link[i][1] * e(theta[i] + link[i][2]) for i in range(n)]
    velocities = [c.jacobian(q) * qd for c in coms]
    kinetic = sum(link[i][3] * (velocities[i].T * velocities[i])[0] / 2
                  + link[i][4] * theta_dot[i] ** 2 / 2 for i in range(n))
    potential = sum(link[i][3] * g * coms[i][1] for i in range(n))
    inertial = []
    for k in range(n):
        p_k = sp.diff(kinetic, ad[k])
        ddt = sum(sp.diff(p_k, ad[j]) * add[j] + sp.diff(p_k, al[j]) * ad[j] for j in range(n))
        inertial.append(ddt - sp.diff(kinetic, al[k]))
    q_gravity = [-sp.diff(potential, al[k]) for k in range(n)]
    q_contact = []
    for i, (r, l_r, e_r, g_r) in enumerate(contact):
        p = joints[i] + l_r * e(theta[i] + e_r)
        q_contact.append(list(p.jacobian(q).T * (r * e(theta[i] + g_r))))
    q_muscle = []
    for (j1, j2), (pa, pb, qa, qb, f) in zip(pairs, muscle):
        p1, p2 = point(j1, pa, pb), point(j2, qa, qb)
        force = f * (p1 - p2) / sp.sqrt(((p1 - p2).T * (p1 - p2))[0])  # on the distal point
        q_muscle.append(list(p2.jacobian(q).T * force - p1.jacobian(q).T * force))
    accelerations = [list(c.jacobian(q) * qdd + (c.jacobian(q) * qd).jacobian(q) * qd)
                     for c in coms]
    params = [g, *[s for group in link + contact + muscle for s in group]]
    args = (params, al, ad, add)
    return {name: sp.lambdify(args, expr, modules="numpy", cse=True)
            for name, expr in [("inertial", inertial), ("q_gravity", q_gravity),
                               ("q_contact", q_contact), ("q_muscle", q_muscle),
                               ("com_acc", accelerations), ("com_pos", [list(c) for c in coms])]}


def flat_values(links, contacts, muscles, g=G):
    values = [g, *links.ravel()]
    for c in contacts:
        values += list(c[1:])
    for j1, p1, j2, p2, f in muscles:
        values += [*p1, *p2, f]
    return values


class LagrangeReference:
    """Numeric evaluation of :func:`lagrange_model` for one parameter set."""

    def __init__(self, rng, n):
        self.n = n
        self.links, self.contacts, self.muscles = random_values(rng, n, muscle_pairs(n))
        self.chain = make_chain(self.links, self.contacts, self.muscles)
        self.values = flat_values(self.links, self.contacts, self.muscles)
        self.model = lagrange_model(n)

    def call(self, name, theta, theta_dot=None, theta_ddot=None):
        """Evaluate with absolute link angles converted to relative ones here (D = difference)."""
        d = np.eye(self.n) - np.eye(self.n, k=-1)
        zero = np.zeros(self.n)
        args = [d @ x if x is not None else zero for x in (theta, theta_dot, theta_ddot)]
        return np.array(self.model[name](self.values, *args), dtype=float)

    def required_torques(self, theta, theta_dot, theta_ddot):
        """``M α̈ + h - Q_gravity - Q_contact``: actuator torques conjugate to α."""
        return (self.call("inertial", theta, theta_dot, theta_ddot)
                - self.call("q_gravity", theta) - self.call("q_contact", theta).sum(axis=0))


# ----------------------------------------------------------------------------------------------
# Independent reference 2: recursive Newton-Euler in numpy
# ----------------------------------------------------------------------------------------------


def rot90(v):
    return np.array([-v[1], v[0]])


def cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def newton_euler(links, contacts, muscles, theta, theta_dot, theta_ddot, g=G,
                 include_muscles=True):
    """Joint torques (pure couples) and forces ``f_i`` on link i from link i - 1.

    Moments are taken about each centre of mass, links are swept from the tip to the base.
    """
    n = len(theta)
    l, lc, eps, m, ic = links.T
    u = [np.array([np.cos(t), np.sin(t)]) for t in theta]
    joints, a_joint = [np.zeros(2)], [np.zeros(2)]
    coms, a_com = [], []
    for i in range(n):
        r = l[i] * u[i]
        c = lc[i] * np.array([np.cos(theta[i] + eps[i]), np.sin(theta[i] + eps[i])])
        coms.append(joints[i] + c)
        a_com.append(a_joint[i] + theta_ddot[i] * rot90(c) - theta_dot[i] ** 2 * c)
        joints.append(joints[i] + r)
        a_joint.append(a_joint[i] + theta_ddot[i] * rot90(r) - theta_dot[i] ** 2 * r)

    def local_point(j, p):
        if j == 0:
            return np.asarray(p, dtype=float)
        return joints[j - 1] + p[0] * u[j - 1] + p[1] * rot90(u[j - 1])

    applied = [[(coms[i], np.array([0.0, -m[i] * g]))] for i in range(n)]
    for link, mag, l_r, e_r, g_r in contacts:
        t = theta[link - 1]
        applied[link - 1].append((joints[link - 1] + l_r * np.array([np.cos(t + e_r),
                                                                      np.sin(t + e_r)]),
                                  mag * np.array([np.cos(t + g_r), np.sin(t + g_r)])))
    if include_muscles:
        for j1, p1, j2, p2, f in muscles:
            a, b = local_point(j1, p1), local_point(j2, p2)
            force = f * (a - b) / np.linalg.norm(a - b)
            applied[j2 - 1].append((b, force))
            if j1 > 0:
                applied[j1 - 1].append((a, -force))
    f_next, tau_next = np.zeros(2), 0.0
    forces, torques = np.zeros((n, 2)), np.zeros(n)
    for i in reversed(range(n)):
        f_i = m[i] * a_com[i] - sum(F for _, F in applied[i]) + f_next
        tau_i = (ic[i] * theta_ddot[i] + tau_next - cross(joints[i] - coms[i], f_i)
                 + cross(joints[i + 1] - coms[i], f_next)
                 - sum(cross(p - coms[i], F) for p, F in applied[i]))
        forces[i], torques[i] = f_i, tau_i
        f_next, tau_next = f_i, tau_i
    return torques, forces, np.array(a_com)


# ----------------------------------------------------------------------------------------------
# Tests against the sympy Lagrangian (n = 1..4)
# ----------------------------------------------------------------------------------------------

LAGRANGE_CASES = [(n, seed) for n in (1, 2, 3, 4) for seed in (11, 12)]


@pytest.fixture(params=LAGRANGE_CASES, ids=lambda c: f"n{c[0]}-seed{c[1]}")
def lagrange_case(request):
    n, seed = request.param
    rng = np.random.default_rng(seed)
    reference = LagrangeReference(rng, n)
    return reference, random_state(rng, n)


def test_eq23_equals_lagrange(lagrange_case):
    ref, state = lagrange_case
    assert_close(joint_torques(ref.chain, *state), ref.required_torques(*state))


def test_eq24_equals_lagrange(lagrange_case):
    ref, state = lagrange_case
    assert_close(joint_torques_proximal(ref.chain, *state), ref.required_torques(*state))


def test_eq13_equals_lagrange_distal_joint(lagrange_case):
    ref, state = lagrange_case
    assert_close(distal_joint_torque(ref.chain, *state), ref.required_torques(*state)[-1])


def test_eq20_eq21_equal_forces_conjugate_to_absolute_angles(lagrange_case):
    ref, state = lagrange_case
    n = ref.n
    d = np.eye(n) - np.eye(n, k=-1)
    q_theta = d.T @ ref.required_torques(*state)  # Q_θ = Dᵀ Q_α since α = D θ
    assert_close(torque_differences(ref.chain, *state), q_theta[:-1])
    assert_close(torque_differences_proximal(ref.chain, *state), q_theta[:-1])
    assert_close(absolute_generalized_forces(joint_torques(ref.chain, *state)), q_theta)


def test_eq22_muscle_torques_equal_virtual_work(lagrange_case):
    ref, state = lagrange_case
    per_muscle = ref.call("q_muscle", state[0])
    assert_close(muscle_torque_contributions(ref.chain, state[0]), per_muscle)
    assert_close(muscle_joint_torques(ref.chain, state[0]), per_muscle.sum(axis=0))


def test_eq5_com_accelerations_equal_second_derivative(lagrange_case):
    ref, state = lagrange_case
    assert_close(com_positions(ref.chain, state[0]), ref.call("com_pos", state[0]))
    assert_close(com_accelerations(ref.chain, *state), ref.call("com_acc", *state))


def test_eq6_eq7_inertial_sums(lagrange_case):
    ref, state = lagrange_case
    ma = ref.chain.m[:, None] * ref.call("com_acc", *state)
    n = ref.n
    assert_close(distal_inertial_force(ref.chain, *state),
                 np.array([ma[k:].sum(axis=0) for k in range(n)]))
    assert_close(proximal_inertial_force(ref.chain, *state),
                 np.array([ma[:k].sum(axis=0) for k in range(n)]))


def test_eq17_eq18_eq19_moment_terms(lagrange_case):
    ref, state = lagrange_case
    theta = state[0]
    n, m, l, l_c, eps = ref.n, ref.chain.m, ref.links[:, 0], ref.links[:, 1], ref.links[:, 2]
    ma = m[:, None] * ref.call("com_acc", *state)
    jc = l_c[:, None] * np.column_stack([np.cos(theta + eps), np.sin(theta + eps)])
    jj = l[:, None] * np.column_stack([np.cos(theta), np.sin(theta)])
    assert_close(com_moment_term(ref.chain, *state), [cross(jc[k], ma[k]) for k in range(n)])
    assert_close(distal_moment_term(ref.chain, *state),
                 [cross(jj[k], ma[k + 1:].sum(axis=0)) for k in range(n)])
    assert_close(proximal_moment_term(ref.chain, *state),
                 [cross(jj[k], ma[: k + 1].sum(axis=0)) for k in range(n)])


def test_reaction_forces_satisfy_newton_on_every_link(lagrange_case):
    """Σ forces on link i = m_i a_Ci, with a_Ci from the sympy derivation."""
    ref, state = lagrange_case
    theta = state[0]
    n = ref.n
    a_com = ref.call("com_acc", *state)
    _, _, a_ne = newton_euler(ref.links, ref.contacts, ref.muscles, *state)
    external = np.zeros((n, 2))
    external[:, 1] -= ref.chain.m * G
    for link, mag, _, _, g_r in ref.contacts:
        t = theta[link - 1] + g_r
        external[link - 1] += mag * np.array([np.cos(t), np.sin(t)])
    joints = joint_positions(ref.chain, theta)
    for j1, p1, j2, p2, f in ref.muscles:
        def where(j, p):
            if j == 0:
                return np.asarray(p)
            t = theta[j - 1]
            return joints[j - 1] + p[0] * np.array([np.cos(t), np.sin(t)]) \
                + p[1] * np.array([-np.sin(t), np.cos(t)])
        a, b = where(j1, p1), where(j2, p2)
        force = f * (a - b) / np.linalg.norm(a - b)
        external[j2 - 1] += force
        if j1 > 0:
            external[j1 - 1] -= force
    for phi in (joint_reaction_forces(ref.chain, *state),
                joint_reaction_forces_proximal(ref.chain, *state)):
        from_distal = np.vstack([phi[1:], np.zeros((1, 2))])  # φ_{i,i+1}
        from_proximal = -phi  # φ_{i,i-1} = -φ_{i-1,i}
        total = external + from_distal + from_proximal
        assert_close(total, ref.chain.m[:, None] * a_com)
        assert_close(a_ne, a_com)


def test_eq4_base_force_balances_whole_chain(lagrange_case):
    ref, state = lagrange_case
    ma = ref.chain.m[:, None] * ref.call("com_acc", *state)
    theta = state[0]
    external = np.zeros(2)
    external[1] -= ref.chain.m.sum() * G
    for link, mag, _, _, g_r in ref.contacts:
        external += mag * np.array([np.cos(theta[link - 1] + g_r), np.sin(theta[link - 1] + g_r)])
    # m_0 g + R_0 + Σ_{i>=1}(m_i g + R_i) = Σ m_i a_Ci
    assert_close(base_external_force(ref.chain, *state), ma.sum(axis=0) - external)


# ----------------------------------------------------------------------------------------------
# Unique contributions, checked against the sympy Lagrangian one input at a time
# ----------------------------------------------------------------------------------------------


def test_torque_breakdown_terms_equal_lagrange_one_input_at_a_time(lagrange_case):
    ref, (theta, theta_dot, theta_ddot) = lagrange_case
    n = ref.n
    b = joint_torque_breakdown(ref.chain, theta, theta_dot, theta_ddot)
    scale = np.max(np.abs(b.required)) + np.max(np.abs(b.muscles))
    # weights: -J_Ci^T m_i g (gravity is linear in the masses)
    zero = np.zeros(n)
    for i in range(n):
        links = ref.links.copy()
        links[np.arange(n) != i, 3] = 0.0
        values = flat_values(links, ref.contacts, ref.muscles)
        expected = -np.array(ref.model["q_gravity"](values, np.diff(theta, prepend=0.0), zero,
                                                    zero))
        assert_close(b.weights[i], expected, scale=scale)
    assert_close(b.contacts, -ref.call("q_contact", theta), scale=scale)
    assert_close(b.muscles, ref.call("q_muscle", theta), scale=scale)
    eye = np.eye(n)
    for i in range(n):
        assert_close(b.accelerations[i], ref.call("inertial", theta, None, theta_ddot * eye[i]),
                     scale=scale)
        assert_close(b.velocities[i], ref.call("inertial", theta, theta_dot * eye[i], None),
                     scale=scale)
    # absolute angles: no products θ̇_i θ̇_j, so the per-link velocity terms add up
    assert_close(b.velocities.sum(axis=0), ref.call("inertial", theta, theta_dot, None),
                 scale=scale)
    assert_close(b.required, ref.required_torques(theta, theta_dot, theta_ddot))


def test_relative_angles_are_not_free_of_velocity_products():
    """Control for the claim above: in relative angles the velocity terms do not split by joint."""
    rng = np.random.default_rng(5)
    ref = LagrangeReference(rng, 2)
    theta, theta_dot, _ = random_state(rng, 2)
    alpha_dot = np.diff(theta_dot, prepend=0.0)
    d_inv = np.tril(np.ones((2, 2)))  # θ̇ = D⁻¹ α̇
    split = sum(ref.call("inertial", theta, d_inv @ (alpha_dot * e), None) for e in np.eye(2))
    full = ref.call("inertial", theta, theta_dot, None)
    assert np.max(np.abs(split - full)) > 1e-3 * np.max(np.abs(full))


# ----------------------------------------------------------------------------------------------
# Appendix A
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_appendix_a_two_link_equals_lagrange(seed):
    rng = np.random.default_rng(seed)
    ref = LagrangeReference(rng, 2)
    state = random_state(rng, 2)
    expected = ref.required_torques(*state)
    assert_close(appendix_a_two_link_torques(ref.chain, *state), expected)
    assert_close(appendix_a_two_link_torques(ref.chain, *state), joint_torques(ref.chain, *state))


@pytest.mark.parametrize("seed", [31, 32, 33])
def test_appendix_a_three_link_equals_lagrange(seed):
    rng = np.random.default_rng(seed)
    ref = LagrangeReference(rng, 3)
    state = random_state(rng, 3)
    expected = ref.required_torques(*state)
    assert_close(appendix_a_three_link_torques(ref.chain, *state), expected)
    assert_close(appendix_a_three_link_torques(ref.chain, *state),
                 joint_torques(ref.chain, *state))


def test_appendix_a_two_link_torque_actuator_reduction_equals_zatsiorsky_form():
    """ε = R = 0, θ_k = Σ α_i: the joint-space two-link equations (Zatsiorsky p. 380).

    The joint-space form is written out here: M(α) α̈ + C(α, α̇) + G(α).
    """
    rng = np.random.default_rng(41)
    l1, d1, d2, m1, m2, i1, i2 = rng.uniform(0.2, 2.0, 7)
    chain = PlanarChain(l=[l1, 0.4], l_C=[d1, d2], eps_C=[0, 0], m=[m1, m2], I_C=[i1, i2])
    alpha, alpha_dot, alpha_ddot = random_state(rng, 2)
    c2, s2 = np.cos(alpha[1]), np.sin(alpha[1])
    mass = np.array([[i1 + i2 + m1 * d1**2 + m2 * (l1**2 + d2**2 + 2 * l1 * d2 * c2),
                      i2 + m2 * (d2**2 + l1 * d2 * c2)],
                     [i2 + m2 * (d2**2 + l1 * d2 * c2), i2 + m2 * d2**2]])
    h = m2 * l1 * d2 * s2 * np.array([-(2 * alpha_dot[0] * alpha_dot[1] + alpha_dot[1] ** 2),
                                       alpha_dot[0] ** 2])
    c1, c12 = np.cos(alpha[0]), np.cos(alpha[0] + alpha[1])
    grav = G * np.array([(m1 * d1 + m2 * l1) * c1 + m2 * d2 * c12, m2 * d2 * c12])
    state = (absolute_from_relative(alpha), absolute_from_relative(alpha_dot),
             absolute_from_relative(alpha_ddot))
    assert_close(appendix_a_two_link_torques(chain, *state), mass @ alpha_ddot + h + grav)


# ----------------------------------------------------------------------------------------------
# Tests against the numpy Newton-Euler reference (n = 1..8)
# ----------------------------------------------------------------------------------------------

NE_CASES = [(n, seed) for n in range(1, 9) for seed in (101, 102)]


@pytest.fixture(params=NE_CASES, ids=lambda c: f"n{c[0]}-seed{c[1]}")
def ne_case(request):
    n, seed = request.param
    rng = np.random.default_rng(seed + n)
    pairs = [p for p in muscle_pairs(n) if rng.random() < 0.6] or [(0, n)]
    links, contacts, muscles = random_values(rng, n, pairs, extra_contacts=2)
    return n, links, contacts, muscles, random_state(rng, n)


def test_torques_equal_newton_euler(ne_case):
    n, links, contacts, muscles, state = ne_case
    chain = make_chain(links, contacts, muscles)
    expected, _, _ = newton_euler(links, contacts, muscles, *state, include_muscles=False)
    assert_close(joint_torques(chain, *state), expected)
    assert_close(joint_torques_proximal(chain, *state), expected)
    assert_close(distal_joint_torque(chain, *state), expected[-1])
    assert_close(torque_differences(chain, *state), (expected - np.append(expected[1:], 0))[:-1])
    assert_close(torque_differences_proximal(chain, *state),
                 (expected - np.append(expected[1:], 0))[:-1])


def test_muscles_close_the_torque_balance(ne_case):
    """Eq. 23 - Eq. 22 = torque still needed from pure couples when the muscles act."""
    n, links, contacts, muscles, state = ne_case
    chain = make_chain(links, contacts, muscles)
    expected, _, _ = newton_euler(links, contacts, muscles, *state)
    assert_close(joint_torques(chain, *state) - muscle_joint_torques(chain, state[0]), expected)


def test_reaction_forces_equal_newton_euler(ne_case):
    n, links, contacts, muscles, state = ne_case
    chain = make_chain(links, contacts, muscles)
    _, forces, _ = newton_euler(links, contacts, muscles, *state)
    assert_close(joint_reaction_forces(chain, *state), -forces)  # φ_{k,k+1} = -f_{k+1}
    assert_close(joint_reaction_forces_proximal(chain, *state), -forces)


def test_eq23_equals_eq24_with_given_base_force(ne_case):
    n, links, contacts, muscles, state = ne_case
    chain = make_chain(links, contacts, muscles)
    _, forces, a_com = newton_euler(links, contacts, muscles, *state)
    # whole chain balance, written independently: m_0 g + R_0 = Σ m_i a_Ci - Σ (m_i g + R_i)
    base = (links[:, 3, None] * a_com).sum(axis=0) + np.array([0.0, links[:, 3].sum() * G])
    for link, mag, _, _, g_r in contacts:
        t = state[0][link - 1] + g_r
        base -= mag * np.array([np.cos(t), np.sin(t)])
    assert_close(base_external_force(chain, *state), base)
    assert_close(joint_torques_proximal(chain, *state, base_force=base),
                 joint_torques(chain, *state))
    assert_close(joint_reaction_forces_proximal(chain, *state, base_force=base), -forces)


def test_wrong_base_force_breaks_the_proximal_forms(ne_case):
    n, links, contacts, muscles, state = ne_case
    chain = make_chain(links, contacts, muscles)
    base = base_external_force(chain, *state) + np.array([3.0, -2.0])
    phi = joint_reaction_forces_proximal(chain, *state, base_force=base)
    assert_close(phi - joint_reaction_forces(chain, *state), np.tile([-3.0, 2.0], (n, 1)))
    if n > 1:
        diff = joint_torques_proximal(chain, *state, base_force=base) - joint_torques(chain, *state)
        assert np.max(np.abs(diff)) > 1e-3


def test_reaction_breakdown_terms_equal_newton_euler_one_input_at_a_time(ne_case):
    n, links, contacts, muscles, (theta, theta_dot, theta_ddot) = ne_case
    chain = make_chain(links, contacts, muscles)
    b = joint_reaction_breakdown(chain, theta, theta_dot, theta_ddot)
    zero = np.zeros(n)

    def reaction(lk=links, ct=(), mu=(), td=zero, tdd=zero, g=0.0):
        return -newton_euler(lk, list(ct), list(mu), theta, td, tdd, g=g)[1]

    scale = sum(np.max(np.abs(x)) for x in (b.weights, b.contacts, b.muscles, b.accelerations,
                                             b.velocities) if x.size)
    for i in range(n):
        masked = links.copy()
        masked[np.arange(n) != i, 3] = 0.0
        assert_close(b.weights[i], reaction(lk=masked, g=G), scale=scale)
        assert_close(b.accelerations[i], reaction(tdd=theta_ddot * np.eye(n)[i]), scale=scale)
        assert_close(b.velocities[i], reaction(td=theta_dot * np.eye(n)[i]), scale=scale)
    for c, contact in enumerate(contacts):
        assert_close(b.contacts[c], reaction(ct=[contact]), scale=scale)
    for k, muscle in enumerate(muscles):
        assert_close(b.muscles[k], reaction(mu=[muscle]), scale=scale)
        spanned = np.zeros(n, dtype=bool)
        spanned[muscle[0]:muscle[2]] = True
        assert np.all(b.muscles[k][~spanned] == 0.0)
    assert_close(b.total, joint_reaction_forces(chain, theta, theta_dot, theta_ddot))


def test_torque_breakdown_terms_equal_newton_euler_one_input_at_a_time(ne_case):
    n, links, contacts, muscles, (theta, theta_dot, theta_ddot) = ne_case
    chain = make_chain(links, contacts, muscles)
    b = joint_torque_breakdown(chain, theta, theta_dot, theta_ddot)
    zero = np.zeros(n)

    def torque(lk=links, ct=(), mu=(), td=zero, tdd=zero, g=0.0):
        return newton_euler(lk, list(ct), list(mu), theta, td, tdd, g=g)[0]

    scale = np.max(np.abs(b.required)) + np.max(np.abs(b.muscles))
    for i in range(n):
        masked = links.copy()
        masked[np.arange(n) != i, 3] = 0.0
        assert_close(b.weights[i], torque(lk=masked, g=G), scale=scale)
        assert_close(b.accelerations[i], torque(tdd=theta_ddot * np.eye(n)[i]), scale=scale)
        assert_close(b.velocities[i], torque(td=theta_dot * np.eye(n)[i]), scale=scale)
    for c, contact in enumerate(contacts):
        assert_close(b.contacts[c], torque(ct=[contact]), scale=scale)
    for k, muscle in enumerate(muscles):
        # the muscle's moment is minus the pure couple that cancels it
        assert_close(b.muscles[k], -torque(mu=[muscle]), scale=scale)
    assert_close(b.required, joint_torques(chain, theta, theta_dot, theta_ddot))
    assert_close(b.muscle_total, muscle_joint_torques(chain, theta))


def test_batched_state_matches_loop():
    rng = np.random.default_rng(7)
    n = 4
    links, contacts, muscles = random_values(rng, n, muscle_pairs(n))
    chain = make_chain(links, contacts, muscles)
    theta, theta_dot, theta_ddot = random_state(rng, n, batch=(3, 2))
    for function in (joint_torques, joint_torques_proximal, joint_reaction_forces,
                     joint_reaction_forces_proximal, torque_differences, com_accelerations):
        batched = function(chain, theta, theta_dot, theta_ddot)
        for idx in np.ndindex(3, 2):
            expected = function(chain, theta[idx], theta_dot[idx], theta_ddot[idx])
            assert_close(batched[idx], expected, rtol=1e-14)
    batched = muscle_reaction_forces(chain, theta)
    assert_close(batched[1, 0], muscle_reaction_forces(chain, theta[1, 0]), rtol=1e-14)
    batched = joint_torque_breakdown(chain, theta, theta_dot, theta_ddot).required
    assert_close(batched, joint_torques(chain, theta, theta_dot, theta_ddot))


# ----------------------------------------------------------------------------------------------
# Hand-computed cases and coordinate helpers
# ----------------------------------------------------------------------------------------------


def test_single_horizontal_link_at_rest():
    chain = PlanarChain(l=[1.0], l_C=[0.5], eps_C=[0.0], m=[2.0], I_C=[0.1])
    state = ([0.0], [0.0], [0.0])
    assert joint_torques(chain, *state) == pytest.approx([2.0 * 9.81 * 0.5])
    assert joint_reaction_forces(chain, *state) == pytest.approx(np.array([[0.0, -2.0 * 9.81]]))


def test_single_link_spinning_in_horizontal_plane():
    """θ̇ = 3 rad/s, θ̈ = 2 rad/s², g = 0: centripetal pull m ω² l_C towards the joint."""
    chain = PlanarChain(l=[1.0], l_C=[0.5], eps_C=[0.0], m=[2.0], I_C=[0.1], g=0.0)
    tau = joint_torques(chain, [0.0], [3.0], [2.0])
    phi = joint_reaction_forces(chain, [0.0], [3.0], [2.0])
    assert tau == pytest.approx([(0.1 + 2.0 * 0.25) * 2.0])
    # φ_{0,1} = -m a_C, a_C = (-ω² l_C, α l_C) = (-4.5, 1.0)
    assert phi == pytest.approx(np.array([[9.0, -2.0]]))


def test_muscle_on_single_link_hand_computed():
    """Muscle from base point (0, 1) to (1, 0) on a horizontal link: moment f * 1/√2."""
    chain = PlanarChain(l=[2.0], l_C=[1.0], eps_C=[0.0], m=[1.0], I_C=[0.1],
                        muscles=(Muscle(0, [0.0, 1.0], 1, polar_point(1.0, 0.0), 10.0),))
    assert muscle_joint_torques(chain, [0.0]) == pytest.approx([10.0 / np.sqrt(2.0)])
    assert muscle_reaction_forces(chain, [0.0]) == pytest.approx(
        np.array([[-10.0 / np.sqrt(2.0), 10.0 / np.sqrt(2.0)]]))


def test_coordinate_helpers():
    theta = np.array([0.3, 1.0, 0.5])
    assert relative_from_absolute(theta) == pytest.approx([0.3, 0.7, -0.5])
    assert absolute_from_relative([0.3, 0.7, -0.5]) == pytest.approx(theta)
    assert absolute_generalized_forces([5.0, 3.0, 1.0]) == pytest.approx([2.0, 2.0, 1.0])
    assert polar_point(2.0, np.pi / 2) == pytest.approx([0.0, 2.0])


def test_invalid_chains_are_rejected():
    with pytest.raises(ValueError, match="muscle links"):
        PlanarChain(l=[1.0], l_C=[0.5], eps_C=[0.0], m=[1.0], I_C=[0.1],
                    muscles=(Muscle(1, [0, 0], 1, [0.5, 0], 1.0),))
    with pytest.raises(ValueError, match="contact on link 2"):
        PlanarChain(l=[1.0], l_C=[0.5], eps_C=[0.0], m=[1.0], I_C=[0.1],
                    contacts=(ContactForce(2, 1.0, 0.5, 0.0, 0.0),))
    with pytest.raises(ValueError, match="`m` has shape"):
        PlanarChain(l=[1.0, 1.0], l_C=[0.5, 0.5], eps_C=[0.0, 0.0], m=[1.0], I_C=[0.1, 0.1])
    chain = PlanarChain(l=[1.0], l_C=[0.5], eps_C=[0.0], m=[1.0], I_C=[0.1])
    with pytest.raises(ValueError, match="n = 2"):
        appendix_a_two_link_torques(chain, [0.0], [0.0], [0.0])
    with pytest.raises(ValueError, match="last axis"):
        joint_torques(chain, [0.0, 1.0], [0.0, 1.0], [0.0, 1.0])
    assert replace(chain, g=0.0).I_J == pytest.approx([0.35])
