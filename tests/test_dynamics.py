"""Virtual-work dynamics (Eq. 124–198), loads and joint reactions against independent routes.

Independent references here: the literal Kronecker forms (Eq. 145, the derived N_i, Eq. 187); the
Christoffel form of N q̇ built from finite differences of M; energies built from point kinematics;
finite differences of potentials and of point positions for the generalized forces of loads;
Newton's and Euler's laws per body for the reactions.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.algorithms.dynamics import terms as dynamics
from mbkron.reference import virtual_work as dynamics_literal
from mbkron.reference import transforms as kinematics_literal
from mbkron.multibody import loads as load_records
from tests.random_trees import build_model, random_tree
from tests.test_kinematics import FIRST, assert_close, first_difference
from tests.test_muscles import random_paths, with_muscles


@pytest.fixture(scope="module", params=[0, 1])
def tree(request):
    rng = np.random.default_rng(300 + request.param)
    model = build_model(random_tree(rng, nb=8 + request.param, nq=3))
    states = rng.uniform(-1.2, 1.2, size=(3, 3, 3))  # (state, q/qd/qdd, nq)
    return model, states


def _literal_terms(model, q, qd):
    """``M`` (Eq. 145), ``N`` (second part of Eq. 126; ``N q̇`` is the velocity forces) and ``G`` (Eq. 187) of
    ``model`` at ``(q, q̇)`` by the literal Kronecker forms, body by body (:mod:`mbkron.reference`)."""
    J = model.pseudo_inertias
    f, grad, hess = model.joint_variables(q)
    D, D2 = kinematics_literal.kron_derivatives_recursive(model.tree, f, grad, hess)
    M = sum(dynamics_literal.body_mass_matrix(D[i], J[i]) for i in range(model.nb))
    N = sum(dynamics_literal.body_velocity_matrix(D[i], D2[i], J[i], qd) for i in range(model.nb))
    G = sum(dynamics_literal.body_gravity_forces(D[i], J[i, 3, 3], model.body_records[i].com, model.gravity)
            for i in range(model.nb))
    return M, N, G


def test_fast_terms_equal_literal_kronecker_forms(tree):
    """M (Eq. 145), N q̇ (second part of Eq. 126) and G (Eq. 187), literally, per body."""
    model, states = tree
    for q, qd, _ in states:
        M, N, G = _literal_terms(model, q, qd)
        assert_close(model.mass_matrix(q), M)
        assert_close(model.velocity_forces(q, qd), N @ qd)
        assert_close(model.gravity_forces(q), G)


def test_eq_147_as_printed_is_the_mass_matrix():
    """Eq. 147 prints N_i identical to M_i (Eq. 145): that would make N q̇ = M q̇, which is wrong.

    N q̇ comes from the second part of Eq. 126, which is linear in q̇^[2] = q̇ ⊗ q̇: it is even in q̇
    and doubling q̇ multiplies it by 4. Both hold exactly in floating point (scaling by −1 or 2 commutes
    with rounding), so they are asserted bit for bit. M q̇ is odd in q̇: it could be even only if
    M q̇ = 0, which q̇ᵀ M q̇ > 0 (twice the kinetic energy) excludes.
    """
    rng = np.random.default_rng(1)
    model = build_model(random_tree(rng, nb=5, nq=2))
    for q, qd in rng.normal(size=(3, 2, 2)):
        velocity_forces = model.velocity_forces(q, qd)
        np.testing.assert_array_equal(model.velocity_forces(q, -qd), velocity_forces)
        np.testing.assert_array_equal(model.velocity_forces(q, 2 * qd), 4 * velocity_forces)
        assert qd @ model.mass_matrix(q) @ qd > 0


def test_velocity_forces_equal_christoffel_form(tree):
    """(N q̇)_k = Σ_lm (∂M_kl/∂q_m − ½ ∂M_lm/∂q_k) q̇_l q̇_m with ∂M/∂q by 8th-order differences."""
    model, states = tree
    for q, qd, _ in states:
        dM = first_difference(model.mass_matrix, q, 1e-3)  # [m, k, l]
        christoffel = np.einsum("mkl,l,m->k", dM, qd, qd) - 0.5 * np.einsum("klm,l,m->k", dM, qd, qd)
        assert_close(model.velocity_forces(q, qd), christoffel, rtol=1e-9)


def test_mass_matrix_is_symmetric_positive_definite_and_gives_kinetic_energy(tree):
    """½ q̇ᵀMq̇ == Σ ½ m |v_C|² + ½ ωᵀ I_C ω from point kinematics and angular velocities."""
    model, states = tree
    for q, qd, _ in states:
        M = model.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, atol=1e-13)
        assert np.linalg.eigvalsh(M).min() > 0
        energy = 0.0
        for body in model.body_records:
            v = model.point_velocity(body.name, body.com, q, qd)
            w = model.angular_velocity(body.name, q, qd, frame="body")
            energy += 0.5 * body.mass * v @ v + 0.5 * w @ body.inertia @ w
        assert_close(0.5 * qd @ M @ qd, energy)


def test_gravity_forces_are_minus_gradient_of_potential(tree):
    model, states = tree

    def potential(q):
        return -sum(b.mass * model.gravity @ model.point_position(b.name, b.com, q) for b in model.body_records)

    for q, _, _ in states:
        assert_close(model.gravity_forces(q), -first_difference(potential, q, 1e-3))


def test_pseudo_inertia_of_a_point_cloud():
    """Eq. 130–131: J = Σ m_p {r_p;1}{r_p;1}ᵀ for a rigid cloud, from its mass, COM and inertia."""
    rng = np.random.default_rng(2)
    points, masses = rng.normal(size=(50, 3)) + [0.3, -0.2, 0.5], rng.uniform(0.1, 1.0, size=50)
    mass = masses.sum()
    com = masses @ points / mass
    rho = points - com
    inertia = sum(m * (r @ r * np.eye(3) - np.outer(r, r)) for m, r in zip(masses, rho))
    homogeneous = np.hstack([points, np.ones((50, 1))])
    expected = np.einsum("p,pi,pj->ij", masses, homogeneous, homogeneous)
    np.testing.assert_allclose(dynamics.pseudo_inertia(mass, com, inertia), expected, rtol=1e-13, atol=1e-13)


def test_generalized_forces_of_loads_by_virtual_work(tree):
    model, states = tree
    rng = np.random.default_rng(4)
    a, b = model.bodies[2], model.bodies[-1]
    r_a, r_b, r_g = rng.normal(size=(3, 3))
    force, torque = rng.normal(size=(2, 3))
    for q, qd, _ in states:
        position = lambda body, r: lambda x: model.point_position(body, r, x)  # noqa: E731
        # point force: Q = (∂p/∂q)ᵀ F
        expected = first_difference(position(b, r_b), q, 1e-3) @ force
        assert_close(model.applied_forces(q, qd, (load_records.PointForce(b, r_b, force),)), expected)
        # body-frame force: rotate by R_b
        R = model.kinematics(q, 0).T[model.body_index(b), :3, :3]
        assert_close(model.applied_forces(q, qd, (load_records.PointForce(b, r_b, force, frame="body"),)),
                     first_difference(position(b, r_b), q, 1e-3) @ (R @ force))
        # pure torque: Q_k = τ · ω-Jacobian column k (ω from finite differences of R along e_k)
        columns = []
        for k in range(model.nq):
            Rk = lambda s, k=k: model.kinematics(q + s * np.eye(model.nq)[k], 0).T[model.body_index(a), :3, :3]  # noqa: E731
            W = sum(w * (Rk(m * 1e-3) - Rk(-m * 1e-3)) for m, w in enumerate(FIRST, 1)) / 1e-3 @ Rk(0.0).T
            columns.append([W[2, 1], W[0, 2], W[1, 0]])
        assert_close(model.applied_forces(q, qd, (load_records.BodyTorque(a, torque),)), np.array(columns) @ torque)
        # spring-damper between a body and the ground: −∂V/∂q − c L̇ ∂L/∂q
        k_s, c_s, L0 = 120.0, 3.5, 0.4
        length = lambda x: np.linalg.norm(model.point_position(a, r_a, x) - r_g)  # noqa: E731
        dL = first_difference(length, q, 1e-3)
        expected = -k_s * (length(q) - L0) * dL - c_s * (dL @ qd) * dL
        spring = load_records.SpringDamper(a, r_a, "ground", r_g, k_s, c_s, L0)
        assert_close(model.applied_forces(q, qd, (spring,)), expected)
        # line force of constant tension between two bodies: Q = −T ∂L/∂q
        between = lambda x: np.linalg.norm(model.point_position(a, r_a, x) - model.point_position(b, r_b, x))  # noqa: E731
        assert_close(model.applied_forces(q, qd, (load_records.LineForce(a, r_a, b, r_b, 7.0),)),
                     -7.0 * first_difference(between, q, 1e-3))
        # joint torque: ∇f_jᵀ τ; generalized force on a coordinate
        f, grad, _ = model.joint_variables(q)
        joint = model.joints[1]
        assert_close(model.applied_forces(q, qd, (load_records.JointTorque(joint, 2.5),)), 2.5 * grad[1])
        assert_close(model.applied_forces(q, qd, (load_records.GeneralizedForce(model.coordinates[2], -4.0),)),
                     np.array([0.0, 0.0, -4.0]))


def test_one_state_terms_of_an_affine_model_with_its_own_loads():
    """One state of a model whose joint variables are affine and whose own loads are a spring-damper, a joint
    torque, a generalized force and a line force of constant tension (the one-call route,
    :func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms`): ``M``, ``N q̇``, ``G`` by the literal Kronecker forms (Eq. 145,
    126, 187), ``Q`` by virtual work (the spring's potential and damping by finite differences of its length,
    ``∇f_jᵀ τ``, the coordinate's force, ``−T ∂L/∂q`` of the line by finite differences), the
    single-term methods alike, and the inverse dynamics undone by the forward dynamics."""
    rng = np.random.default_rng(7)
    spec = random_tree(rng, nb=8, nq=3)
    spec.variables = [None if v is None else sympy.Float(rng.normal()) + sum(sympy.Float(rng.normal()) * x for x in spec.q)
                      for v in spec.variables]  # affine in q
    a, r_a, r_g, k_s, c_s, L0 = "b2", np.array([0.1, -0.2, 0.05]), np.array([0.3, 0.2, 0.1]), 120.0, 3.5, 0.4
    b, r_b = "b5", np.array([-0.1, 0.3, 0.2])
    own = (load_records.SpringDamper(a, r_a, "ground", r_g, k_s, c_s, L0), load_records.JointTorque("b3", 2.5),
           load_records.GeneralizedForce("q3", -4.0), load_records.LineForce(a, r_a, b, r_b, 7.0))
    model = build_model(spec, loads=own)
    assert not model.joint_variable_map.providers  # affine: no provider
    for q, qd, qdd in rng.uniform(-1.2, 1.2, size=(3, 3, 3)):
        M, N, G = _literal_terms(model, q, qd)
        grad = model.joint_variables(q, 1)[1]
        length = lambda x: np.linalg.norm(model.point_position(a, r_a, x) - r_g)  # noqa: E731
        dL = first_difference(length, q, 1e-3)
        between = lambda x: np.linalg.norm(model.point_position(a, r_a, x) - model.point_position(b, r_b, x))  # noqa: E731
        Q = (-k_s * (length(q) - L0) * dL - c_s * (dL @ qd) * dL + 2.5 * grad[model.joints.index("b3")]
             + np.array([0.0, 0.0, -4.0]) - 7.0 * first_difference(between, q, 1e-3))
        terms = model.equations_of_motion(q, qd)
        assert_close(terms.mass_matrix, M)
        assert_close(terms.velocity_forces, N @ qd)
        assert_close(terms.gravity_forces, G)
        assert_close(terms.applied_forces, Q)
        assert_close(model.mass_matrix(q), M)
        assert_close(model.velocity_forces(q, qd), N @ qd)
        assert_close(model.gravity_forces(q), G)
        tau = model.inverse_dynamics(q, qd, qdd)
        assert_close(tau, M @ qdd + N @ qd - G - Q)
        assert_close(model.forward_dynamics(q, qd, tau), qdd)


def test_callable_load_values_receive_time_and_state():
    model = mbkron.examples.two_link_arm()
    seen = []

    def tension(t, q, qd):
        seen.append((t, q.copy(), qd.copy()))
        return 3.0 * t

    load = load_records.LineForce("ground", (0.0, 0.1, 0.0), "link2", (0.2, 0.0, 0.0), tension)
    q, qd = np.array([0.3, 0.4]), np.array([1.0, -1.0])
    Q = model.applied_forces(q, qd, (load,), t=2.0)
    assert seen and seen[0][0] == 2.0 and np.array_equal(seen[0][1], q)
    np.testing.assert_allclose(Q, 2.0 * model.applied_forces(q, qd, (load,), t=1.0))


@pytest.mark.parametrize("load, message", [
    (load_records.PointForce("forearm", (0.0, 0.0, 0.0), (1.0, 0.0, 0.0)), "unknown body `forearm`; the model has: link1, link2"),
    (load_records.BodyTorque("hand", (0.0, 0.0, 1.0)), "unknown body `hand`"),
    (load_records.LineForce("ground", (0.0, 0.1, 0.0), "hand", (0.2, 0.0, 0.0), 3.0), "unknown body `hand`"),
    (load_records.JointTorque("wrist", 1.0), "unknown joint `wrist`; the model has: link1, link2"),
    (load_records.GeneralizedForce("wrist", 1.0), "unknown coordinate `wrist`; the model has: alpha1, alpha2"),
])
def test_loads_given_by_the_caller_that_name_unknown_parts_are_refused_by_name(load, message):
    """A load passed with ``loads=`` (not checked by the builder) that names a body, joint or coordinate the model
    does not have: a KeyError naming it and listing the model's."""
    model = mbkron.examples.two_link_arm()
    assert model.bodies == ("link1", "link2") and model.coordinates == ("alpha1", "alpha2")
    with pytest.raises(KeyError, match=message):
        model.applied_forces(np.zeros(2), np.zeros(2), (load,))


class _TorsionSpring:
    """A load defined above the library (a user's): the load protocol, ``check`` and ``generalized_forces``."""

    def __init__(self, coordinate: str, stiffness: float):
        self.coordinate, self.stiffness = coordinate, stiffness

    def check(self, bodies, joints, coordinates, where, problems):
        if self.coordinate not in coordinates:
            problems.append(f"{where}: unknown coordinate {self.coordinate!r}")

    def generalized_forces(self, model, kin, t, q, qd):
        Q = np.zeros(q.shape)
        k = model.coordinates.index(self.coordinate)
        Q[..., k] = -self.stiffness * q[..., k]
        return Q


def test_a_load_defined_above_the_library_keeps_the_load_protocol():
    """Loads of the library are evaluated by type; any other object with ``check`` and ``generalized_forces`` is
    checked by the builder and summed by its own method: ``Q_k = −κ q_k`` on its coordinate, zero elsewhere."""
    b = mbkron.ModelBuilder("arm")
    b.add_coordinate("a")
    b.add_body("arm", parent="ground", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0,
               inertia=(0.01, 0.02, 0.03), com=(0.5, 0.0, 0.0))
    model = b.add_load(_TorsionSpring("a", 7.0)).build()
    q, qd = np.array([[0.3], [-1.2]]), np.array([[1.0], [2.0]])
    np.testing.assert_array_equal(model.applied_forces(q, qd), -7.0 * q)
    with pytest.raises(mbkron.ModelError, match="load 0 \\(_TorsionSpring\\): unknown coordinate 'b'"):
        mbkron.ModelBuilder("arm").add_coordinate("a").add_body(
            "arm", parent="ground", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0,
            inertia=(0.01, 0.02, 0.03)).add_load(_TorsionSpring("b", 7.0)).build()
    with pytest.raises(mbkron.ModelError, match="load 0 \\(object\\): not a load"):
        mbkron.ModelBuilder("arm").add_coordinate("a").add_body(
            "arm", parent="ground", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0,
            inertia=(0.01, 0.02, 0.03)).add_load(object()).build()


def test_inverse_and_forward_dynamics_are_consistent(tree):
    model, states = tree
    spring = load_records.SpringDamper(model.bodies[0], (0.1, 0, 0), "ground", (0.3, 0.2, 0.1), 50.0, 1.0, 0.2)
    for q, qd, qdd in states:
        tau = model.inverse_dynamics(q, qd, qdd, loads=(spring,))
        expected = (model.mass_matrix(q) @ qdd + model.velocity_forces(q, qd) - model.gravity_forces(q)
                    - model.applied_forces(q, qd, (spring,)))
        assert_close(tau, expected)
        assert_close(model.forward_dynamics(q, qd, tau, loads=(spring,)), qdd)


def test_batched_dynamics_equal_per_state(tree):
    model, states = tree
    q, qd, qdd = states[:, 0], states[:, 1], states[:, 2]
    M, N, G = model.mass_matrix(q), model.velocity_forces(q, qd), model.gravity_forces(q)
    tau = model.inverse_dynamics(q, qd, qdd)
    acc = model.forward_dynamics(q, qd, tau)
    for s in range(len(states)):
        np.testing.assert_allclose(M[s], model.mass_matrix(q[s]), atol=1e-13)
        np.testing.assert_allclose(N[s], model.velocity_forces(q[s], qd[s]), atol=1e-13)
        np.testing.assert_allclose(G[s], model.gravity_forces(q[s]), atol=1e-12)
        np.testing.assert_allclose(acc[s], qdd[s], atol=1e-9)


def test_forward_dynamics_names_q_when_mass_matrix_is_singular():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("y")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, com=(1, 0, 0))
    b.add_body("b", parent="a", axis=(0, 0, 1), variable="y", offset=(1, 0, 0))  # massless tip
    with pytest.raises(mbkron.ConfigurationError, match=r"not positive definite at q = \[0.1, 0.2\]"):
        b.build().forward_dynamics([0.1, 0.2], [0.0, 0.0])


def test_reactions_satisfy_newton_euler_per_body(tree):
    """Each body: parent's wrench − children's wrenches + gravity + loads = rate of momentum."""
    model, states = tree
    rng = np.random.default_rng(8)
    a = model.bodies[3]
    applied = (
        load_records.PointForce(a, rng.normal(size=3), rng.normal(size=3)),
        load_records.BodyTorque(model.bodies[-1], rng.normal(size=3)),
        load_records.SpringDamper(a, rng.normal(size=3), model.bodies[1], rng.normal(size=3), 40.0, 2.0, 0.1),
    )
    parents = model.tree.parent
    for q, qd, qdd in states:
        r = model.joint_reactions(q, qd, qdd, loads=applied)
        T = model.kinematics(q, 0).T
        f_ext = np.zeros((model.nb, 3))
        m_ext = np.zeros((model.nb, 3))  # about the ground origin
        for load in applied:  # independent evaluation of the body loads
            if isinstance(load, load_records.PointForce):
                i = model.body_index(load.body)
                p = model.point_position(load.body, load.point, q)
                f_ext[i] += load.force
                m_ext[i] += np.cross(p, load.force)
            elif isinstance(load, load_records.BodyTorque):
                m_ext[model.body_index(load.body)] += load.torque
            else:
                pa = model.point_position(load.body_a, load.point_a, q)
                pb = model.point_position(load.body_b, load.point_b, q)
                va = model.point_velocity(load.body_a, load.point_a, q, qd)
                vb = model.point_velocity(load.body_b, load.point_b, q, qd)
                u = (pb - pa) / np.linalg.norm(pb - pa)
                tension = load.stiffness * (np.linalg.norm(pb - pa) - load.free_length) + load.damping * u @ (vb - va)
                for body, p, sign in ((load.body_a, pa, 1.0), (load.body_b, pb, -1.0)):
                    i = model.body_index(body)
                    f_ext[i] += sign * tension * u
                    m_ext[i] += np.cross(p, sign * tension * u)
        for i, body in enumerate(model.body_records):
            children = np.flatnonzero(parents == i)
            a_c = model.point_acceleration(body.name, body.com, q, qd, qdd)
            c = model.point_position(body.name, body.com, q)
            R = T[i, :3, :3]
            w = model.angular_velocity(body.name, q, qd, frame="body")
            # angular acceleration in body axes by differentiating ω along the motion
            h = 1e-4
            w_of = lambda s: model.angular_velocity(body.name, q + s * qd + 0.5 * s**2 * qdd, qd + s * qdd, frame="body")  # noqa: E731
            dw = sum(wt * (w_of(m * h) - w_of(-m * h)) for m, wt in enumerate(FIRST, 1)) / h
            H_dot = R @ (body.inertia @ dw + np.cross(w, body.inertia @ w))
            force = r.force[i] - r.force[children].sum(axis=0) + body.mass * model.gravity + f_ext[i]
            o = T[i, :3, 3]
            moment = (r.moment[i] + np.cross(o, r.force[i])
                      - sum(r.moment[c_] + np.cross(T[c_, :3, 3], r.force[c_]) for c_ in children)
                      + np.cross(c, body.mass * model.gravity) + m_ext[i])
            assert_close(force, body.mass * a_c, rtol=1e-9)
            assert_close(moment, H_dot + np.cross(c, body.mass * a_c), rtol=1e-8)


def test_reaction_moments_about_joint_axes_are_the_joint_forces(tree):
    """Projected on each joint's axis, the net joint wrench is the joint's generalized force."""
    model, states = tree
    for q, qd, qdd in states:
        r = model.joint_reactions(q, qd, qdd, loads=())
        tau = model.inverse_dynamics(q, qd, qdd, loads=())
        kin = model.kinematics(q, 1)
        S = kin.joint_twists
        joint_forces = []
        for i, body in enumerate(model.body_records):
            if body.joint == "revolute":
                joint_forces.append(r.moment[i] @ [S[i, 2, 1], S[i, 0, 2], S[i, 1, 0]])
            elif body.joint == "prismatic":
                joint_forces.append(r.force[i] @ S[i, :3, 3])
        _, grad, _ = model.joint_variables(q)
        assert_close(grad.T @ np.array(joint_forces), tau)


@pytest.mark.parametrize("route", ["loads", "muscle force rows", "muscle forces of (t, q, q̇)"])
def test_large_batches_are_chunked_with_the_same_result(monkeypatch, route):
    """Batches above ``_CHUNK_ELEMENTS`` are evaluated in chunks (the compiled kernels' route without
    loads or muscle forces does not chunk, so every case here has some); the chunks, and the rows of
    per-state muscle forces given to each, must give what each state gives on its own."""
    import mbkron.model.dynamics

    rng = np.random.default_rng(5)
    spec = random_tree(rng, nb=6, nq=3)
    model = with_muscles(spec, random_paths(rng, spec, n_muscles=3, moving=False))
    states, names = 37, ("mass_matrix", "velocity_forces", "gravity_forces", "applied_forces")
    q, qd = rng.uniform(-1.2, 1.2, size=(2, states, model.nq))
    scale = np.arange(1.0, len(model.muscles) + 1)
    applied, muscle_forces = (), None
    if route == "loads":
        applied = (load_records.PointForce("b3", (0.1, -0.2, 0.05),
                                    lambda t, q, qd: np.stack([np.sin(q[..., 0]), qd[..., 1], q[..., 2] ** 2], -1)),
                   load_records.SpringDamper("ground", (0.3, 0.1, 0.0), "b5", (0.0, 0.2, -0.1), 40.0, 1.5, 0.2))
    elif route == "muscle force rows":
        muscle_forces = rng.uniform(10.0, 60.0, size=(states, len(model.muscles)))
    else:
        def muscle_forces(t, q, qd):  # (..., n_mt)
            return (20.0 + 5.0 * np.cos(q[..., :1] + qd[..., 1:2])) * scale
    per_state = [model.equations_of_motion(q[s], qd[s], applied, 0.3,
                                           muscle_forces[s] if isinstance(muscle_forces, np.ndarray) else muscle_forces)
                 for s in range(states)]

    chunks = []
    whole = mbkron.model.dynamics._equations_of_motion

    def counting(model, workspace, q, *args):
        chunks.append(q.shape[0])
        return whole(model, workspace, q, *args)

    monkeypatch.setattr(mbkron.model.dynamics, "_equations_of_motion", counting)
    monkeypatch.setattr(mbkron.model.dynamics, "_CHUNK_ELEMENTS", 16 * model.nb * model.nq * 5)  # 5 states per chunk
    chunked = model.equations_of_motion(q, qd, applied, 0.3, muscle_forces)
    assert chunks == [5] * 7 + [2]
    for name in names:
        assert_close(getattr(chunked, name), np.array([getattr(terms, name) for terms in per_state]), rtol=1e-12)
