"""Kinematics (Eq. 38-99, 177-182) against independent routes.

Independent references used here:
- sympy differentiation of B_i: each body's local transform is differentiated symbolically in q
  (through its nonlinear joint variable), and the product T_i = T_pr(i) A_i is differentiated by
  Leibniz's rule; a small tree is also differentiated whole, literally;
- central finite differences (8th order) of the transforms;
- scipy's rotation for Eq. 39; finite differences in time along smooth trajectories.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from scipy.spatial.transform import Rotation

import mbkron
from mbkron.algorithms.kinematics import tree as kinematics
from mbkron.multibody import tree as tree_description
from mbkron.reference import transforms as kinematics_literal
from mbkron.reference import kron
from tests.random_trees import build_model, chain_spec, random_tree, sympy_transforms

RTOL = 1e-10

# 8th-order central difference weights for the first and second derivative (offsets 1..4).
FIRST = np.array([4 / 5, -1 / 5, 4 / 105, -1 / 280])
SECOND = np.array([8 / 5, -1 / 5, 8 / 315, -1 / 560])
SECOND_CENTRE = -205 / 72


def first_difference(fun, x, h):
    """∂fun/∂x_k for every k (derivative axis first), 8th-order central differences."""
    out = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        out.append(sum(w * (fun(x + m * e) - fun(x - m * e)) for m, w in enumerate(FIRST, 1)) / h)
    return np.stack(out)


def assert_close(actual, desired, rtol=RTOL):
    """Relative to the size of the whole array (entries near zero are compared absolutely)."""
    scale = max(np.abs(desired).max(), 1.0)
    np.testing.assert_allclose(actual, desired, rtol=0, atol=rtol * scale)


def leibniz_reference(spec):
    """A function q ↦ (T, ∂T/∂q, ∂²T/∂q²) of every body: sympy derivatives of each local transform
    (compiled once), chained by Leibniz's rule through T_i = T_pr(i) A_i."""
    q = spec.q
    nq, nb = len(q), len(spec.joints)
    compiled = []
    for i in range(nb):
        one = type(spec)(**{**spec.__dict__, "parents": [-1], "joints": [spec.joints[i]], "offsets": [spec.offsets[i]],
                             "rotation_axes": [spec.rotation_axes[i]], "translation_axes": [spec.translation_axes[i]],
                             "d": [spec.d[i]], "theta": [spec.theta[i]], "variables": [spec.variables[i]]})
        A = sympy_transforms(one)[0]
        dA = [A.diff(s) for s in q]
        compiled.append(sympy.lambdify([q], [A, dA, [[dk.diff(s) for s in q] for dk in dA]]))

    def evaluate(q_value):
        T = np.zeros((nb, 4, 4))
        dT = np.zeros((nb, nq, 4, 4))
        d2T = np.zeros((nb, nq, nq, 4, 4))
        for i, function in enumerate(compiled):
            A, dA, d2A = (np.array(v, dtype=float) for v in function(q_value))
            p = spec.parents[i]
            if p < 0:
                T[i], dT[i], d2T[i] = A, dA, d2A
                continue
            T[i] = T[p] @ A
            dT[i] = dT[p] @ A + T[p] @ dA
            d2T[i] = d2T[p] @ A + dT[p][:, None] @ dA[None, :] + dT[p][None, :] @ dA[:, None] + T[p] @ d2A
        return T, dT, d2T

    return evaluate


@pytest.fixture(scope="module", params=[0, 1, 2])
def tree(request):
    rng = np.random.default_rng(100 + request.param)
    spec = random_tree(rng, nb=9 + request.param, nq=3)
    model = build_model(spec)
    q = rng.uniform(-1.2, 1.2, size=(4, 3))
    return spec, model, q


def test_random_trees_are_branching_and_mixed(tree):
    spec, model, _ = tree
    assert model.nb >= 8
    children = np.bincount(np.array(spec.parents) + 1)
    assert children.max() >= 2, "the tree must branch"
    assert {"revolute", "prismatic"} <= set(spec.joints)
    nonlinear = [v for v in spec.variables if v is not None and any(sympy.diff(v, s).free_symbols for s in spec.q)]
    assert nonlinear, "some joint variables must be nonlinear functions of q"


def test_derivatives_equal_sympy_leibniz(tree):
    spec, model, qs = tree
    reference = leibniz_reference(spec)
    for q in qs:
        T, dT, d2T = reference(q)
        kin = model.kinematics(q)
        assert_close(kin.T, T)
        assert_close(kin.dT, dT)
        assert_close(kin.d2T, d2T)


def test_derivatives_equal_finite_differences(tree):
    _, model, qs = tree
    for q in qs[:2]:
        kin = model.kinematics(q)
        fd1 = np.moveaxis(first_difference(lambda x: model.kinematics(x, 0).T, q, 1e-3), 0, 1)
        fd2 = np.moveaxis(first_difference(lambda x: model.kinematics(x, 1).dT, q, 1e-3), 0, 2)
        assert_close(kin.dT, fd1)
        assert_close(kin.d2T, fd2)


def test_whole_tree_sympy_differentiation():
    """A small tree differentiated literally: B_i(q) as one sympy matrix, then diff."""
    rng = np.random.default_rng(7)
    spec = random_tree(rng, nb=4, nq=2, fixed_fraction=0.0)
    spec.parents = [-1, 0, 1, 1]
    model = build_model(spec)
    B = [T.T for T in sympy_transforms(spec)]
    D = [[Bi.diff(s) for s in spec.q] for Bi in B]
    D2 = [[[d.diff(s) for s in spec.q] for d in Di] for Di in D]
    evaluate = sympy.lambdify([spec.q], [D, D2])
    for q in rng.uniform(-1, 1, size=(3, 2)):
        D_value, D2_value = (np.array(v, dtype=float) for v in evaluate(q))
        kin = model.kinematics(q)
        assert_close(np.swapaxes(kin.dT, -1, -2), D_value)
        assert_close(np.swapaxes(kin.d2T, -1, -2), D2_value)


def test_literal_routes_equal_fast_path(tree):
    """Recursion (Eq. 77, 89) == closed form (Eq. 75, 99) == Kronecker forms == fast path."""
    _, model, qs = tree
    for q in qs:
        kin = model.kinematics(q)
        f, grad, hess = model.joint_variables(q)
        for route in (kinematics_literal.derivatives_recursive, kinematics_literal.derivatives_closed_form):
            dT, d2T = route(model.tree, f, grad, hess)
            assert_close(dT, kin.dT)
            assert_close(d2T, kin.d2T)
        for route in (kinematics_literal.kron_derivatives_recursive, kinematics_literal.kron_derivatives_closed_form):
            D, D2 = route(model.tree, f, grad, hess)
            for i in range(model.nb):
                assert D[i].shape == (4 * model.nq, 4) and D2[i].shape == (4 * model.nq**2, 4)
                assert_close(D[i], kron.to_kron(np.swapaxes(kin.dT[i], -1, -2)))
                assert_close(D2[i], kron.to_kron(np.swapaxes(kin.d2T[i], -1, -2), order=2))


def test_kronecker_point_formulas_equal_fast_path(tree):
    """Eq. 44 and Eq. 57 literally (D_iᵀ({r;1} ⊗ q̇), D'_iᵀ({r;1} ⊗ q̇ ⊗ q̇) + ...) == fast path."""
    _, model, qs = tree
    rng = np.random.default_rng(3)
    q, qd, qdd = qs[0], rng.normal(size=3), rng.normal(size=3)
    f, grad, hess = model.joint_variables(q)
    D, D2 = kinematics_literal.kron_derivatives_recursive(model.tree, f, grad, hess)
    for i, body in enumerate(model.bodies):
        r = rng.normal(size=3)
        v4 = kinematics_literal.kron_point_velocity(D[i], r, qd)
        a4 = kinematics_literal.kron_point_acceleration(D[i], D2[i], r, qd, qdd)
        assert abs(v4[3]) < 1e-14 and abs(a4[3]) < 1e-14
        assert_close(model.point_velocity(body, r, q, qd), v4[:3])
        assert_close(model.point_acceleration(body, r, q, qd, qdd), a4[:3])


def test_point_kinematics_along_trajectories(tree):
    """Velocity and acceleration == first and second time derivatives of the position."""
    _, model, _ = tree
    rng = np.random.default_rng(11)
    a, b, w = rng.uniform(-1, 1, size=(3, model.nq))

    def q_of(t):
        return a + b * np.sin(w * t + 0.3) + 0.2 * w * t**2

    def qd_of(t):
        return b * w * np.cos(w * t + 0.3) + 0.4 * w * t

    def qdd_of(t):
        return -b * w**2 * np.sin(w * t + 0.3) + 0.4 * w

    h = 1e-2
    for t in (0.0, 0.7):
        for body in model.bodies[::3]:
            r = rng.normal(size=3)
            position = lambda s: model.point_position(body, r, q_of(s))  # noqa: E731
            velocity_fd = sum(w_ * (position(t + m * h) - position(t - m * h)) for m, w_ in enumerate(FIRST, 1)) / h
            accel_fd = (SECOND_CENTRE * position(t) + sum(
                w_ * (position(t + m * h) + position(t - m * h)) for m, w_ in enumerate(SECOND, 1))) / h**2
            assert_close(model.point_velocity(body, r, q_of(t), qd_of(t)), velocity_fd, rtol=1e-9)
            assert_close(model.point_acceleration(body, r, q_of(t), qd_of(t), qdd_of(t)), accel_fd, rtol=1e-8)


def test_point_acceleration_exact_along_sympy_trajectory():
    """Eq. 57 against the exact second time derivative of the position (sympy, a 5-body tree)."""
    rng = np.random.default_rng(5)
    spec = random_tree(rng, nb=5, nq=2, fixed_fraction=0.0)
    model = build_model(spec)
    t = sympy.Symbol("t")
    q_t = [sympy.sin(2 * t) + t / 3, sympy.cos(t) * t]
    r = rng.normal(size=3)
    T = sympy_transforms(spec)[-1].subs(dict(zip(spec.q, q_t)))
    p = (T * sympy.Matrix([*map(float, r), 1]))[:3, 0]
    functions = sympy.lambdify(t, [list(q_t), [s.diff(t) for s in q_t], [s.diff(t, 2) for s in q_t],
                                   list(p.diff(t)), list(p.diff(t, 2))])
    for time in (0.0, 0.4, 1.3):
        q, qd, qdd, v, acc = (np.array(x, dtype=float) for x in functions(time))
        body = model.bodies[-1]
        assert_close(model.point_velocity(body, r, q, qd), v)
        assert_close(model.point_acceleration(body, r, q, qd, qdd), acc)


def test_angular_velocity(tree):
    """Eq. 177-182 against ω̃ = Ṙ Rᵀ (rotational block of Σ_k ∂T/∂q_k q̇_k) and frame change."""
    _, model, qs = tree
    rng = np.random.default_rng(2)
    for q in qs:
        qd = rng.normal(size=model.nq)
        kin = model.kinematics(q, 1)
        Rdot = np.einsum("bkxy,k->bxy", kin.dT[:, :, :3, :3], qd)
        omega_tilde = Rdot @ np.swapaxes(kin.T[:, :3, :3], -1, -2)
        expected = np.stack([omega_tilde[:, 2, 1], omega_tilde[:, 0, 2], omega_tilde[:, 1, 0]], axis=-1)
        for i, body in enumerate(model.bodies):
            assert_close(model.angular_velocity(body, q, qd), expected[i])
            assert_close(model.angular_velocity(body, q, qd, frame="body"), kin.T[i, :3, :3].T @ expected[i])


def test_angular_velocity_finite_differences():
    rng = np.random.default_rng(9)
    spec = random_tree(rng, nb=8, nq=3)
    model = build_model(spec)
    q0, qd = rng.normal(size=3), rng.normal(size=3)
    R = lambda s: model.kinematics(q0 + s * qd, 0).T[:, :3, :3]  # noqa: E731
    h = 1e-3
    Rdot = sum(w * (R(m * h) - R(-m * h)) for m, w in enumerate(FIRST, 1)) / h
    W = Rdot @ np.swapaxes(R(0.0), -1, -2)
    omega = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=-1)
    for i, body in enumerate(model.bodies):
        assert_close(model.angular_velocity(body, q0, qd), omega[i])


def test_rotation_formula_matches_scipy():
    """Eq. 39 against scipy's rotation vector."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(-7, 7)
        np.testing.assert_allclose(tree_description.rotation_matrix(axis, angle),
                                   Rotation.from_rotvec(angle * axis).as_matrix(), atol=1e-14)


def test_joint_matrix_and_derivative_of_joint_transform():
    """Eq. 69-71: ∂(ᵖʳ⁽ⁱ⁾_iA_4)/∂f_i = A_4 Â_4 for revolute and prismatic joints, by sympy."""
    rng = np.random.default_rng(4)
    x = sympy.Symbol("x")
    for joint in ("revolute", "prismatic"):
        spec = chain_spec([joint], [x], [x], rng)
        A = sympy_transforms(spec)[0]
        Ahat = tree_description.joint_matrix(joint, spec.rotation_axes[0], spec.translation_axes[0], spec.theta[0])
        for value in (-0.8, 0.1, 2.0):
            A_value = np.array(A.subs(x, value), dtype=float)
            dA_value = np.array(A.diff(x).subs(x, value), dtype=float)
            np.testing.assert_allclose(A_value @ Ahat, dA_value, atol=1e-14)


def test_seed_eq_64_66_factor_of_two():
    """Eq. 64-66 print a factor 2 too many: ∂(Aᵀ)/∂f = Ṽᵀ cos f + (Ṽᵀ)² sin f (not 2(Ṽᵀ)² sin f)."""
    f = sympy.Symbol("f")
    v = np.array([0.3, -0.5, 0.81])
    v /= np.linalg.norm(v)
    K = sympy.Matrix(tree_description.skew(v))
    At = sympy.eye(3) + K.T * sympy.sin(f) + 2 * (K.T) ** 2 * sympy.sin(f / 2) ** 2  # Eq. 60
    derivative = At.diff(f)
    corrected = K.T * sympy.cos(f) + (K.T) ** 2 * sympy.sin(f)
    printed = K.T * sympy.cos(f) + 2 * (K.T) ** 2 * sympy.sin(f)
    for value in (0.3, 1.1):
        exact = np.array(derivative.subs(f, value), dtype=float)
        assert np.abs(exact - np.array(corrected.subs(f, value), dtype=float)).max() < 1e-14
        assert np.abs(exact - np.array(printed.subs(f, value), dtype=float)).max() > 0.1
        # Eq. 67 holds with the corrected form: ∂Aᵀ/∂f = Ṽᵀ Aᵀ.
        np.testing.assert_allclose(exact, np.array((K.T * At).subs(f, value), dtype=float), atol=1e-14)


def test_seed_eq_88_as_printed_is_wrong():
    """Eq. 88 prints W_iiᵀ where Â_iᵀ ᵖʳ⁽ⁱ⁾_iA_4ᵀ belongs; the printed Eq. 89 misses the FD value."""
    rng = np.random.default_rng(21)
    spec = random_tree(rng, nb=3, nq=2, fixed_fraction=0.0)
    spec.parents = [-1, 0, 1]
    spec.joints = ["revolute"] * 3
    model = build_model(spec)
    q = np.array([0.4, -0.9])
    f, grad, hess = model.joint_variables(q)
    D, D2 = kinematics_literal.kron_derivatives_recursive(model.tree, f, grad, hess)
    local = kinematics.local_transforms(model.tree, f)
    T = model.kinematics(q, 0).T
    i, p, nq = 2, 1, 2
    g = grad[i][:, None]
    Ahat_t = model.tree.joint_matrices[i].T
    U = kron.commutation_matrix(nq, nq)
    W_ii_t = Ahat_t @ T[i].T
    printed = (np.kron(Ahat_t, U) @ np.kron(D[i], g) + np.kron(W_ii_t, kron.vec(hess[i])[:, None])
               + np.kron(np.kron(W_ii_t, np.eye(nq)), g) @ D[p] + np.kron(local[i].T, np.eye(nq * nq)) @ D2[p])
    fd = np.moveaxis(first_difference(lambda x: model.kinematics(x, 1).dT[i], q, 1e-3), 0, 1)
    exact = kron.to_kron(np.swapaxes(fd, -1, -2), order=2)
    assert_close(D2[i], exact, rtol=1e-9)
    assert np.abs(printed - exact).max() > 1e-3


def test_batched_equals_per_state():
    rng = np.random.default_rng(8)
    model = build_model(random_tree(rng, nb=8, nq=3))
    q = rng.normal(size=(2, 5, 3))
    batched = model.kinematics(q)
    for index in np.ndindex(2, 5):
        single = model.kinematics(q[index])
        for name in ("T", "dT", "d2T", "f", "grad", "hess"):
            np.testing.assert_allclose(getattr(batched, name)[index], getattr(single, name), rtol=0, atol=1e-14)
    one = model.kinematics(q[:1, 0])
    assert one.d2T.shape == (1, model.nb, 3, 3, 4, 4)
    qd = rng.normal(size=(2, 5, 3))
    points = rng.normal(size=(2, 5, 3))
    v = model.point_velocity("b3", points, q, qd)
    assert v.shape == (2, 5, 3)
    np.testing.assert_allclose(v[1, 2], model.point_velocity("b3", points[1, 2], q[1, 2], qd[1, 2]), atol=1e-14)


@pytest.mark.parametrize(
    "joints",
    [["revolute"], ["prismatic"], ["prismatic", "prismatic", "prismatic"], ["revolute", "fixed", "prismatic"]],
)
def test_corner_cases_nq1_single_body_prismatic_only(joints):
    """nq = 1, a single body, prismatic-only chains, fixed joints: against sympy + Leibniz."""
    rng = np.random.default_rng(len(joints))
    x = sympy.Symbol("x")
    variables = [None if j == "fixed" else (x if k == 0 else sympy.sin(x) + x**2 / 3) for k, j in enumerate(joints)]
    spec = chain_spec(joints, variables, [x], rng)
    model = build_model(spec)
    reference = leibniz_reference(spec)
    for q in ([0.37], [-1.4]):
        T, dT, d2T = reference(np.array(q))
        kin = model.kinematics(q)
        assert_close(kin.T, T)
        assert_close(kin.dT, dT)
        assert_close(kin.d2T, d2T)


def test_planar_two_link_positions_by_hand():
    b = mbkron.ModelBuilder()
    b.add_coordinate("a1").add_coordinate("a2")
    b.add_body("upper", axis=(0, 0, 1), variable="a1")
    b.add_body("fore", parent="upper", axis=(0, 0, 1), variable="a2", offset=(0.3, 0, 0))
    model = b.build()
    a1, a2 = 0.4, 0.9
    expected = np.array([0.3 * np.cos(a1) + 0.25 * np.cos(a1 + a2), 0.3 * np.sin(a1) + 0.25 * np.sin(a1 + a2), 0])
    np.testing.assert_allclose(model.point_position("fore", (0.25, 0, 0), [a1, a2]), expected, atol=1e-15)
    qd = np.array([1.5, -0.7])
    omega = model.angular_velocity("fore", [a1, a2], qd)
    np.testing.assert_allclose(omega, [0, 0, qd.sum()], atol=1e-15)
