"""The sympy.physics.mechanics reference (validation/sympy_mechanics.py) against independent
derivations written here:

* textbook closed forms for the simple pendulum, the planar double pendulum, the cart–pendulum
  and a point mass in spherical coordinates (φ, θ, r) built from two revolute joints and a
  prismatic one;
* for a random branching 3-D tree with nonlinear joint variables, Lagrange's equations from the
  4x4 transform product of docs/conventions.md (kinetic energy ``Σ ½ m v·v + ½ ωᵀ I ω`` with
  ``ω̃ = Ṙ Rᵀ``, ``M = ∂²T/∂q̇²``, ``N q̇ = Ṁ q̇ − ∂T/∂q``, ``G = −∂V/∂q``), see
  ``lagrange_reference``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
import sympy as sp

from validation.sympy_mechanics import (
    BodySpec,
    EquationsOfMotion,
    TreeSpec,
    equations_of_motion,
    point_force,
)

G0 = 9.81
RTOL = 1e-10


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float = RTOL) -> None:
    """Every entry within ``rtol`` times the largest expected magnitude (at least 1)."""
    expected = np.asarray(expected, dtype=float)
    scale = max(np.max(np.abs(expected)), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def random_states(nq: int, count: int = 5, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-2, 2, nq), rng.uniform(-3, 3, nq)) for _ in range(count)]


def translation(x: float, y: float, z: float) -> np.ndarray:
    offset = np.eye(4)
    offset[:3, 3] = (x, y, z)
    return offset


# ---------------------------------------------------------------------------- closed forms


def test_simple_pendulum():
    m, a, izz = 1.7, 0.6, 0.05
    (q,) = coordinates = sp.symbols("q1:2")
    spec = TreeSpec(
        [BodySpec(-1, "revolute", m, com=(0, -a, 0), inertia=np.diag([0.3, 0.2, izz]), variable=q)],
        coordinates,
    )
    mass_matrix, velocity_forces, gravity_forces = equations_of_motion(spec)
    for (angle,), (rate,) in random_states(1):
        assert_close(mass_matrix([angle]), [[m * a**2 + izz]])
        assert_close(velocity_forces([angle], [rate]), [0.0])
        assert_close(gravity_forces([angle]), [-m * G0 * a * np.sin(angle)])


def test_planar_double_pendulum():
    """Relative angles θ1 (link 1 from −y) and θ2 (link 2 from link 1), links hanging along −y."""
    m1, m2, l1, a1, a2, i1, i2 = 1.3, 0.9, 0.8, 0.35, 0.4, 0.07, 0.04
    q1, q2 = coordinates = sp.symbols("q1:3")
    spec = TreeSpec(
        [
            BodySpec(
                -1, "revolute", m1, com=(0, -a1, 0), inertia=np.diag([0.5, 0.6, i1]), variable=q1
            ),
            BodySpec(
                0,
                "revolute",
                m2,
                com=(0, -a2, 0),
                inertia=np.diag([0.2, 0.3, i2]),
                offset=translation(0, -l1, 0),
                variable=q2,
            ),
        ],
        coordinates,
    )
    mass_matrix, velocity_forces, gravity_forces = equations_of_motion(spec)
    for (t1, t2), (w1, w2) in random_states(2):
        c2, s2 = np.cos(t2), np.sin(t2)
        m22 = m2 * a2**2 + i2
        m12 = m22 + m2 * l1 * a2 * c2
        m11 = m1 * a1**2 + i1 + m2 * (l1**2 + 2 * l1 * a2 * c2) + m22
        h = m2 * l1 * a2 * s2
        assert_close(mass_matrix([t1, t2]), [[m11, m12], [m12, m22]])
        assert_close(velocity_forces([t1, t2], [w1, w2]), [-h * (2 * w1 * w2 + w2**2), h * w1**2])
        expected_g = [
            -G0 * ((m1 * a1 + m2 * l1) * np.sin(t1) + m2 * a2 * np.sin(t1 + t2)),
            -G0 * m2 * a2 * np.sin(t1 + t2),
        ]
        assert_close(gravity_forces([t1, t2]), expected_g)


def test_cart_pendulum():
    """Cart sliding along x (prismatic), pendulum hanging along −y from the cart."""
    mc, m, a, izz = 2.5, 0.7, 0.45, 0.03
    x, phi = coordinates = sp.symbols("x phi")
    spec = TreeSpec(
        [
            BodySpec(
                -1, "prismatic", mc, inertia=np.diag([0.1, 0.1, 0.1]), d_axis=(1, 0, 0), variable=x
            ),
            BodySpec(
                0, "revolute", m, com=(0, -a, 0), inertia=np.diag([0.01, 0.02, izz]), variable=phi
            ),
        ],
        coordinates,
    )
    mass_matrix, velocity_forces, gravity_forces = equations_of_motion(spec)
    for (xv, pv), (xd, pd) in random_states(2):
        coupling = m * a * np.cos(pv)
        assert_close(mass_matrix([xv, pv]), [[mc + m, coupling], [coupling, m * a**2 + izz]])
        assert_close(velocity_forces([xv, pv], [xd, pd]), [-m * a * np.sin(pv) * pd**2, 0.0])
        assert_close(gravity_forces([xv, pv]), [0.0, -m * G0 * a * np.sin(pv)])


def test_spherical_coordinates_point_mass():
    """Azimuth φ about z, polar angle θ about the rotated y, radius r along the rotated z."""
    m = 1.9
    phi, theta, r = coordinates = sp.symbols("phi theta r")
    spec = TreeSpec(
        [
            BodySpec(-1, "revolute", 0.0, theta_axis=(0, 0, 1), variable=phi),
            BodySpec(0, "revolute", 0.0, theta_axis=(0, 1, 0), variable=theta),
            BodySpec(1, "prismatic", m, d_axis=(0, 0, 1), variable=r),
        ],
        coordinates,
        gravity=(0, 0, -G0),
    )
    mass_matrix, velocity_forces, gravity_forces = equations_of_motion(spec)
    for (pv, tv, rv), (pd, td, rd) in random_states(3):
        s, c = np.sin(tv), np.cos(tv)
        assert_close(mass_matrix([pv, tv, rv]), np.diag([m * rv**2 * s**2, m * rv**2, m]))
        expected_n = [
            2 * m * rv * rd * pd * s**2 + 2 * m * rv**2 * s * c * td * pd,
            2 * m * rv * rd * td - m * rv**2 * s * c * pd**2,
            -m * rv * (td**2 + s**2 * pd**2),
        ]
        assert_close(velocity_forces([pv, tv, rv], [pd, td, rd]), expected_n)
        assert_close(gravity_forces([pv, tv, rv]), [0.0, m * G0 * rv * s, -m * G0 * c])


def test_point_force_on_pendulum_tip():
    """A horizontal force F at the tip of a pendulum of length l: Q = F l cos q."""
    length, force = 0.9, 3.0
    (q,) = coordinates = sp.symbols("q1:2")
    spec = TreeSpec([BodySpec(-1, "revolute", 1.0, com=(0, -0.5, 0), variable=q)], coordinates)
    generalized = point_force(spec, 0, (0, -length, 0))
    for (angle,), _ in random_states(1):
        assert_close(generalized([angle], [force, 0, 0]), [force * length * np.cos(angle)])


# ---------------------------------------------------------------------------- random 3-D tree


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] *= -1
    return q


def random_unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_tree() -> TreeSpec:
    """6 bodies, branching, revolute/prismatic/fixed, one massless body, nq = 3."""
    rng = np.random.default_rng(2024)
    q1, q2, q3 = coordinates = sp.symbols("q1:4")
    parents = [-1, 0, 1, 0, 3, 1]
    joints = ["revolute", "prismatic", "revolute", "revolute", "prismatic", "fixed"]
    variables = [
        sp.sin(q1) + q2 * q3,
        sp.Rational(1, 2) * q2 + sp.Rational(3, 10) * q1**2,
        sp.cos(q3) * q1 - q2,
        q3 + sp.Rational(1, 5) * sp.sin(q2) * q1,
        sp.Rational(2, 5) * q1 * q3,
        None,
    ]
    masses = [1.2, 0.0, 0.8, 1.5, 0.6, 0.9]
    bodies = []
    for parent, joint, variable, mass in zip(parents, joints, variables, masses):
        offset = np.eye(4)
        offset[:3, :3] = random_rotation(rng)
        offset[:3, 3] = rng.normal(scale=0.5, size=3)
        a = rng.normal(size=(3, 3))
        bodies.append(
            BodySpec(
                parent,
                joint,
                mass,
                com=rng.normal(scale=0.3, size=3),
                inertia=0.1 * (a @ a.T) if mass else np.zeros((3, 3)),
                offset=offset,
                d_axis=random_unit(rng),
                d=float(rng.normal()),
                theta_axis=random_unit(rng),
                theta=float(rng.normal()),
                variable=variable,
            )
        )
    return TreeSpec(bodies, coordinates, gravity=tuple(rng.normal(scale=5.0, size=3)))


def rotation_formula(axis: np.ndarray, angle: sp.Expr) -> sp.Matrix:
    """Rot(V, θ) = I + Ṽ sin θ + Ṽ² (1 − cos θ) (docs/conventions.md)."""
    v = sp.Matrix(axis)
    skew = sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return sp.eye(3) + skew * sp.sin(angle) + skew**2 * (1 - sp.cos(angle))


def world_transforms(spec: TreeSpec) -> list[sp.Matrix]:
    """T_i = T_parent · P_i · Trans(d_i V_d) · Rot(V_θ, θ_i) as symbolic 4x4 matrices."""
    transforms: list[sp.Matrix] = []
    for body in spec.bodies:
        theta = body.variable if body.joint == "revolute" else body.theta
        d = body.variable if body.joint == "prismatic" else body.d
        joint = sp.eye(4)
        joint[:3, :3] = rotation_formula(np.asarray(body.theta_axis), theta)
        joint[:3, 3] = d * sp.Matrix(body.d_axis)
        local = sp.Matrix(body.offset) * joint
        transforms.append(local if body.parent < 0 else transforms[body.parent] * local)
    return transforms


def point_position(transform: sp.Matrix, point: np.ndarray) -> sp.Matrix:
    return transform[:3, :3] * sp.Matrix(point) + transform[:3, 3]


def vee(skew: np.ndarray) -> np.ndarray:
    """ω from ω̃ (the skew part of Ṙ Rᵀ)."""
    return np.array([skew[2, 1], skew[0, 2], skew[1, 0]])


@lru_cache(maxsize=1)
def lagrange_reference() -> tuple[TreeSpec, EquationsOfMotion, sp.Matrix]:
    """Lagrange's equations of ``random_tree()``, built from the 4x4 transform product.

    With ``v_C = J_v q̇`` (``J_v = ∂p_C/∂q``) and ``ω = J_ω q̇`` (column ``k`` of ``J_ω`` is the
    vector of ``∂R/∂q_k Rᵀ``), ``T = ½ Σ m v_C·v_C + ½ ωᵀ (R I Rᵀ) ω = ½ q̇ᵀ M q̇`` with
    ``M = ∂²T/∂q̇² = Σ m J_vᵀ J_v + J_ωᵀ R I Rᵀ J_ω``, and Lagrange's equations give
    ``N q̇ = Ṁ q̇ − ∂T/∂q = Σ_l (∂M/∂q_l q̇_l) q̇ − ½ [q̇ᵀ ∂M/∂q_k q̇]_k``. ``∂M/∂q_l`` is taken by
    complex-step differentiation of the (analytic) numeric ``M``, exact to rounding; sympy
    supplies ``R``, ``p_C`` and their ``q``-derivatives, and ``G = −∂V/∂q`` with
    ``V = −Σ m g·p_C``.
    """
    spec = random_tree()
    q = sp.Matrix(spec.coordinates)
    nq = q.rows
    massive = [
        (body, transform)
        for body, transform in zip(spec.bodies, world_transforms(spec))
        if body.mass
    ]
    kinematics = []
    potential = sp.Integer(0)
    for body, transform in massive:
        rotation = transform[:3, :3]
        centre = point_position(transform, body.com)
        kinematics += [rotation, *(rotation.diff(qk) for qk in q), centre.jacobian(q)]
        potential -= body.mass * (sp.Matrix(spec.gravity).T * centre)[0]
    kinematics_fn = sp.lambdify([list(q)], kinematics, cse=True)
    gravity_fn = sp.lambdify([list(q)], -sp.Matrix([potential]).jacobian(q).T, cse=True)

    def mass_matrix(x: np.ndarray) -> np.ndarray:  # also for complex x (complex step)
        values = iter(np.array(m, dtype=complex) for m in kinematics_fn(x))
        total = np.zeros((nq, nq), dtype=complex)
        for body, _ in massive:
            rotation = next(values)
            omega_jacobian = np.stack([vee(next(values) @ rotation.T) for _ in range(nq)], axis=1)
            velocity_jacobian = next(values)
            world_inertia = rotation @ np.asarray(body.inertia) @ rotation.T
            total += body.mass * velocity_jacobian.T @ velocity_jacobian
            total += omega_jacobian.T @ world_inertia @ omega_jacobian
        return total

    def mass_matrix_derivatives(x: np.ndarray) -> list[np.ndarray]:
        step = 1e-30
        return [mass_matrix(x + 1j * step * unit).imag / step for unit in np.eye(nq)]

    def velocity_forces(x: np.ndarray, xd: np.ndarray) -> np.ndarray:
        derivatives = mass_matrix_derivatives(x)
        rate = sum(dm * xdl for dm, xdl in zip(derivatives, xd))  # Ṁ
        return rate @ xd - 0.5 * np.array([xd @ dm @ xd for dm in derivatives])

    reference = EquationsOfMotion(
        lambda x: mass_matrix(np.asarray(x, dtype=float)).real,
        velocity_forces,
        lambda x: np.array(gravity_fn(x), dtype=float).ravel(),
    )
    tip = point_position(world_transforms(spec)[4], np.array([0.1, -0.2, 0.3]))
    return spec, reference, tip.jacobian(q)


@lru_cache(maxsize=1)
def kane_random_tree() -> EquationsOfMotion:
    return equations_of_motion(random_tree())


def test_random_tree_agrees_with_lagrange():
    spec, reference, _ = lagrange_reference()
    kane = kane_random_tree()
    for q, qd in random_states(len(spec.coordinates), count=6, seed=1):
        mass_matrix = kane.mass_matrix(q)
        assert_close(mass_matrix, reference.mass_matrix(q))
        assert_close(kane.velocity_forces(q, qd), reference.velocity_forces(q, qd))
        assert_close(kane.gravity_forces(q), reference.gravity_forces(q))
        assert_close(mass_matrix, mass_matrix.T)
        assert np.all(np.linalg.eigvalsh(mass_matrix) > 0)


def test_random_tree_velocity_forces_are_quadratic():
    spec, _, _ = lagrange_reference()
    kane = kane_random_tree()
    for q, qd in random_states(len(spec.coordinates), count=3, seed=2):
        assert_close(kane.velocity_forces(q, 2.5 * qd), 6.25 * kane.velocity_forces(q, qd))
        assert_close(kane.velocity_forces(q, np.zeros_like(qd)), np.zeros_like(qd))


def test_random_tree_point_force_and_gravity_consistency():
    spec, _, tip_jacobian = lagrange_reference()
    kane = kane_random_tree()
    jacobian_fn = sp.lambdify([list(spec.coordinates)], tip_jacobian)
    tip = point_force(spec, 4, (0.1, -0.2, 0.3))
    gravity_as_loads = [
        point_force(spec, i, body.com) for i, body in enumerate(spec.bodies) if body.mass
    ]
    masses = [body.mass for body in spec.bodies if body.mass]
    force = np.array([1.5, -2.0, 0.7])
    for q, _ in random_states(len(spec.coordinates), count=4, seed=3):
        assert_close(tip(q, force), np.array(jacobian_fn(q), dtype=float).T @ force)
        summed = sum(
            load(q, m * np.asarray(spec.gravity)) for load, m in zip(gravity_as_loads, masses)
        )
        assert_close(kane.gravity_forces(q), summed)


# ---------------------------------------------------------------------------- input checks


def test_invalid_spec_lists_every_problem():
    (q,) = sp.symbols("q1:2")
    spec = TreeSpec(
        [
            BodySpec(0, "revolute", 1.0, variable=q),
            BodySpec(-1, "fixed", 1.0, theta_axis=(0, 0, 2), variable=q),
            BodySpec(-1, "hinge", 1.0, variable=sp.Symbol("z")),
        ],
        [q],
    )
    with pytest.raises(ValueError) as error:
        equations_of_motion(spec)
    message = str(error.value)
    for fragment in (
        "body 0: `parent`",
        "body 1: `variable`",
        "body 1: `theta_axis`",
        "body 2: `joint`",
        "body 2: `variable` depends",
    ):
        assert fragment in message


def test_state_shape_is_checked():
    (q,) = coordinates = sp.symbols("q1:2")
    spec = TreeSpec([BodySpec(-1, "revolute", 1.0, com=(0, -1, 0), variable=q)], coordinates)
    with pytest.raises(ValueError, match="`q` must have shape"):
        equations_of_motion(spec).mass_matrix([0.1, 0.2])
