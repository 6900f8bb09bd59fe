"""Independent reference equations of motion for 3-D trees via ``sympy.physics.mechanics``.

This module derives the equations of motion

    M(q) q̈ + N(q, q̇) q̇ = G(q) + Q

of a tree of rigid bodies connected by 1-DOF revolute, prismatic or fixed joints whose joint
variables are smooth functions ``j = f(q)`` of the generalized coordinates. It deliberately does
not import :mod:`mbkron`: the tree is given in a plain description (:class:`TreeSpec`,
:class:`BodySpec`) so that a bug in mbkron cannot hide in its own check.

Joint convention (``docs/conventions.md``): the transform of body ``i`` relative to its parent is

    P_i · Trans(d_i V_d) · Rot(V_θ, θ_i),   Rot(V, θ) = I + Ṽ sin θ + Ṽ² (1 − cos θ),

with ``θ_i = f_i(q)`` for a revolute joint (``d_i`` constant), ``d_i = f_i(q)`` for a prismatic
joint (``θ_i`` constant) and both constant for a fixed joint. ``V_d`` and ``V_θ`` are unit vectors
in the offset frame (the frame of ``P_i``). The world transform is ``T_i = T_parent · (that)``
and a point with body coordinates ``r`` is at ``T_i[:3, :3] r + T_i[:3, 3]``.

Sign conventions of the result (all generalized forces are conjugate to ``q``: δW = δqᵀ Q):

* ``M(q)`` is the symmetric positive (semi-)definite mass matrix, ``T = ½ q̇ᵀ M q̇``.
* ``N(q, q̇) q̇`` is the Coriolis/centrifugal vector, the part of ``d/dt ∂T/∂q̇ − ∂T/∂q`` that is
  quadratic in ``q̇``; it stays on the left-hand side.
* ``G(q)`` is the generalized gravity force on the right-hand side, ``G = −∂V/∂q`` with
  ``V = −Σ m_i g · p_Ci``; likewise a point force ``F`` (world frame) acting at a body point
  ``p`` contributes ``Q = (∂p/∂q)ᵀ F`` to the right-hand side.

Method. Kane's method (``KanesMethod``) is applied to the tree with the joint variables ``j`` as
generalized coordinates and the joint rates ``w = j̇`` as generalized speeds (kinematic
differential equations ``j̇ − w = 0``), giving ``M_j(j) ẇ = F_j(j, w, g)`` with
``F_j = G_j − N_j w`` (``G_j`` linear in the gravity vector ``g``, ``N_j w`` quadratic in ``w``).
The map ``j = f(q)`` is then embedded exactly, numerically at each state: with ``J = ∂f/∂q`` and
``h = J̇ q̇`` (``h_k = q̇ᵀ ∂²f_k/∂q² q̇``), ``w = J q̇`` and ``ẇ = J q̈ + h``, and projecting with
``Jᵀ`` (virtual displacements ``δj = J δq``)

    M = Jᵀ M_j J,   N q̇ = Jᵀ (M_j h + N_j w),   G = Jᵀ G_j.

Deriving in joint space keeps Kane's expressions free of the derivatives of ``f``, which would
otherwise multiply their size; body velocities are expressed in their own body bases for the same
reason (dot products never multiply out chains of direction cosine matrices).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from sympy.physics import mechanics as me

__all__ = ["BodySpec", "EquationsOfMotion", "TreeSpec", "equations_of_motion", "point_force"]

JointType = Literal["revolute", "prismatic", "fixed"]

_UNIT_TOL = 1e-9


@dataclass(frozen=True)
class BodySpec:
    """One rigid body of a tree and the joint that connects it to its parent.

    Parameters
    ----------
    parent : int
        ``-1`` for the ground, otherwise the index (into ``TreeSpec.bodies``) of an earlier body.
    joint : {"revolute", "prismatic", "fixed"}
        Joint type.
    mass : float
        Mass (may be zero for a massless intermediate body).
    com : array_like, shape (3,)
        Centre of mass in body coordinates.
    inertia : array_like, shape (3, 3)
        Symmetric inertia tensor about the centre of mass, in body coordinates.
    offset : array_like, shape (4, 4)
        Constant rigid transform ``P_i`` of the offset frame in the parent frame.
    d_axis : array_like, shape (3,)
        Unit translation axis ``V_d`` in the offset frame.
    d : float
        Constant translation along ``d_axis`` (ignored for a prismatic joint).
    theta_axis : array_like, shape (3,)
        Unit rotation axis ``V_θ`` in the offset frame.
    theta : float
        Constant rotation angle about ``theta_axis`` (ignored for a revolute joint).
    variable : sympy.Expr or None
        Joint variable ``f_i(q)`` as an expression of ``TreeSpec.coordinates``; ``None`` exactly
        for a fixed joint.
    """

    parent: int
    joint: JointType
    mass: float
    com: ArrayLike = (0.0, 0.0, 0.0)
    inertia: ArrayLike = field(default_factory=lambda: np.zeros((3, 3)))
    offset: ArrayLike = field(default_factory=lambda: np.eye(4))
    d_axis: ArrayLike = (1.0, 0.0, 0.0)
    d: float = 0.0
    theta_axis: ArrayLike = (0.0, 0.0, 1.0)
    theta: float = 0.0
    variable: sp.Expr | None = None


@dataclass(frozen=True)
class TreeSpec:
    """A tree of rigid bodies, its generalized coordinates and gravity.

    Parameters
    ----------
    bodies : sequence of BodySpec
        Bodies in an order in which every parent precedes its children; at least one joint
        must be revolute or prismatic.
    coordinates : sequence of sympy.Symbol
        Generalized coordinates ``q_1 .. q_nq``; the joint variables are expressions of these.
    gravity : array_like, shape (3,)
        Gravitational acceleration in ground coordinates.
    """

    bodies: Sequence[BodySpec]
    coordinates: Sequence[sp.Symbol]
    gravity: ArrayLike = (0.0, -9.81, 0.0)


class EquationsOfMotion(NamedTuple):
    """Numeric callables for ``M(q) q̈ + N(q, q̇) q̇ = G(q)``; unpacks as ``(M, N_qd, G)``.

    Each callable takes 1-D arrays of length ``nq`` (a single state, no batch axes) and returns
    a new float array.

    Attributes
    ----------
    mass_matrix : callable
        ``mass_matrix(q) -> (nq, nq)`` array ``M(q)``.
    velocity_forces : callable
        ``velocity_forces(q, qd) -> (nq,)`` array ``N(q, q̇) q̇`` (left-hand side).
    gravity_forces : callable
        ``gravity_forces(q) -> (nq,)`` array ``G(q)`` (right-hand side, conjugate to q).
    """

    mass_matrix: Callable[[ArrayLike], NDArray[np.float64]]
    velocity_forces: Callable[[ArrayLike, ArrayLike], NDArray[np.float64]]
    gravity_forces: Callable[[ArrayLike], NDArray[np.float64]]


def _validate(spec: TreeSpec) -> None:
    """Raise ``ValueError`` listing every problem of ``spec``."""
    problems: list[str] = []
    coordinates = set(spec.coordinates)
    if len(coordinates) != len(spec.coordinates):
        problems.append("`coordinates` contains duplicate symbols")
    if np.shape(spec.gravity) != (3,):
        problems.append("`gravity` must have shape (3,)")
    if all(body.joint == "fixed" for body in spec.bodies):
        problems.append("`bodies` must contain at least one revolute or prismatic joint")
    for i, body in enumerate(spec.bodies):
        where = f"body {i}"
        if not -1 <= body.parent < i:
            problems.append(
                f"{where}: `parent` must be -1 or an earlier body index, got {body.parent}"
            )
        if body.joint not in ("revolute", "prismatic", "fixed"):
            problems.append(
                f"{where}: `joint` must be revolute, prismatic or fixed, got {body.joint!r}"
            )
        if (body.variable is None) != (body.joint == "fixed"):
            problems.append(f"{where}: `variable` must be None exactly for a fixed joint")
        if body.variable is not None and not sp.sympify(body.variable).free_symbols <= coordinates:
            problems.append(f"{where}: `variable` depends on symbols other than `coordinates`")
        for name in ("d_axis", "theta_axis"):
            axis = np.asarray(getattr(body, name), dtype=float)
            if axis.shape != (3,) or abs(np.linalg.norm(axis) - 1.0) > _UNIT_TOL:
                problems.append(f"{where}: `{name}` must be a unit 3-vector")
        if np.shape(body.com) != (3,):
            problems.append(f"{where}: `com` must have shape (3,)")
        inertia = np.asarray(body.inertia, dtype=float)
        if inertia.shape != (3, 3) or not np.allclose(inertia, inertia.T, rtol=0, atol=1e-12):
            problems.append(f"{where}: `inertia` must be a symmetric 3x3 matrix")
        if body.mass < 0:
            problems.append(f"{where}: `mass` must be non-negative")
        offset = np.asarray(body.offset, dtype=float)
        if offset.shape != (4, 4):
            problems.append(f"{where}: `offset` must have shape (4, 4)")
        elif not (
            np.allclose(offset[:3, :3] @ offset[:3, :3].T, np.eye(3), rtol=0, atol=1e-9)
            and np.linalg.det(offset[:3, :3]) > 0
            and np.array_equal(offset[3], (0, 0, 0, 1))
        ):
            problems.append(f"{where}: `offset` must be a rigid transform")
    if problems:
        raise ValueError("invalid tree spec:\n" + "\n".join(f"  - {p}" for p in problems))


def _number(value: float) -> sp.Expr:
    """Exact sympy integer for integral values (so zeros vanish), a Float otherwise."""
    value = float(value)
    return sp.Integer(int(value)) if value.is_integer() else sp.Float(value)


def _column(values: ArrayLike) -> sp.Matrix:
    """A constant 3x1 column."""
    return sp.Matrix([_number(c) for c in np.asarray(values, dtype=float)])


def _in_basis(frame: me.ReferenceFrame, column: sp.Matrix) -> me.Vector:
    """The vector whose components in ``frame``'s basis are ``column`` (3x1)."""
    return column[0] * frame.x + column[1] * frame.y + column[2] * frame.z


def _cross(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    """Cross product of two 3x1 columns."""
    return sp.Matrix(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def _axis_rotation(axis: ArrayLike, angle: sp.Expr) -> sp.Matrix:
    """``Rot(axis, angle)`` as produced by ``ReferenceFrame.orient_axis``."""
    fixed = me.ReferenceFrame("fixed")
    rotated = me.ReferenceFrame("rotated")
    rotated.orient_axis(fixed, _in_basis(fixed, _column(axis)), angle)
    return fixed.dcm(rotated)  # maps rotated-frame components to fixed-frame components


@dataclass(frozen=True)
class _JointSpaceKinematics:
    """Frames and body origins of a tree in joint coordinates ``j(t)`` and speeds ``w(t)``.

    Angular velocities and origin velocities are set in the basis of each body's own frame;
    ``rotations[i]`` maps body-``i`` components to ground components.
    """

    ground: me.ReferenceFrame
    frames: list[me.ReferenceFrame]
    origins: list[me.Point]
    rotations: list[sp.Matrix]
    joints: list[sp.Expr]
    speeds: list[sp.Expr]


def _kinematics(spec: TreeSpec) -> _JointSpaceKinematics:
    """Velocities of all bodies as linear combinations of the joint speeds.

    Joint ``k`` is the ``k``-th non-fixed body. For body ``i`` with parent ``p`` let
    ``C_i = R_P Rot(V_θ, θ_i)`` (body → parent components) and ``r_i = t_P + d_i R_P V_d`` (joint
    origin relative to the parent origin, parent basis). In body bases
    ``ω_i = C_iᵀ ω_p + θ̇_i V_θ`` (``Rot`` leaves ``V_θ`` fixed) and
    ``v_i = C_iᵀ (v_p + ω_p × r_i) + ḋ_i Rot(V_θ, θ_i)ᵀ V_d``; the world rotation is
    ``R_i = R_p C_i``. Each velocity is built as ``Σ_k c_k w_k`` with expanded coefficient
    columns ``c_k``, which keeps the expressions that Kane's method differentiates small.
    """
    _validate(spec)
    moving = [i for i, body in enumerate(spec.bodies) if body.joint != "fixed"]
    joints = [me.dynamicsymbols(f"j_{k}", real=True) for k in range(len(moving))]
    speeds = [me.dynamicsymbols(f"w_{k}", real=True) for k in range(len(moving))]
    joint_of_body = {body: k for k, body in enumerate(moving)}
    ground = me.ReferenceFrame("N")
    zero = sp.zeros(3, 1)

    frames: list[me.ReferenceFrame] = []
    origins: list[me.Point] = []
    rotations: list[sp.Matrix] = []
    # Per body: {joint k: coefficient column of w_k in the body basis}.
    omega_terms: list[dict[int, sp.Matrix]] = []
    velocity_terms: list[dict[int, sp.Matrix]] = []
    for i, body in enumerate(spec.bodies):
        if body.parent < 0:
            parent_rotation, parent_omega, parent_velocity = sp.eye(3), {}, {}
        else:
            parent_rotation = rotations[body.parent]
            parent_omega, parent_velocity = omega_terms[body.parent], velocity_terms[body.parent]
        offset = np.asarray(body.offset, dtype=float)
        offset_rotation = sp.Matrix(3, 3, [_number(c) for c in offset[:3, :3].ravel()])
        k = joint_of_body.get(i)
        theta = joints[k] if body.joint == "revolute" else _number(body.theta)
        d = joints[k] if body.joint == "prismatic" else _number(body.d)
        joint_rotation = _axis_rotation(body.theta_axis, theta)
        to_body = (offset_rotation * joint_rotation).T.expand()
        joint_vector = _column(offset[:3, 3]) + d * offset_rotation * _column(body.d_axis)

        omega = {m: (to_body * c).expand() for m, c in parent_omega.items()}
        velocity = {
            m: (
                to_body
                * (parent_velocity.get(m, zero) + _cross(parent_omega.get(m, zero), joint_vector))
            ).expand()
            for m in parent_velocity.keys() | parent_omega.keys()
        }
        if body.joint == "revolute":
            omega[k] = _column(body.theta_axis)
        elif body.joint == "prismatic":
            velocity[k] = (joint_rotation.T * _column(body.d_axis)).expand()

        frame = me.ReferenceFrame(f"B{i}")
        frame.set_ang_vel(
            ground, _in_basis(frame, sum((c * speeds[m] for m, c in omega.items()), zero))
        )
        origin = me.Point(f"O{i}")
        origin.set_vel(
            ground, _in_basis(frame, sum((c * speeds[m] for m, c in velocity.items()), zero))
        )
        frames.append(frame)
        origins.append(origin)
        rotations.append((parent_rotation * to_body.T).expand())
        omega_terms.append(omega)
        velocity_terms.append(velocity)
    return _JointSpaceKinematics(ground, frames, origins, rotations, joints, speeds)


def _inertia_dyadic(frame: me.ReferenceFrame, inertia: ArrayLike) -> me.Dyadic:
    """The inertia dyadic with matrix ``inertia`` in ``frame``'s basis."""
    matrix = np.asarray(inertia, dtype=float)
    basis = (frame.x, frame.y, frame.z)
    dyadic = me.Dyadic(0)
    for r in range(3):
        for c in range(3):
            if matrix[r, c] != 0.0:
                dyadic += _number(matrix[r, c]) * (basis[r] | basis[c])
    return dyadic


@dataclass(frozen=True)
class _JointMap:
    """Numeric ``f(q)``, ``J(q) = ∂f/∂q`` and ``h(q, q̇) = J̇ q̇`` of the non-fixed joints."""

    values: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    jacobian: Callable[[NDArray[np.float64]], NDArray[np.float64]]
    curvature: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


def _joint_map(spec: TreeSpec) -> _JointMap:
    """Lambdify the joint variables of ``spec`` and their first and second derivatives."""
    q = sp.Matrix(spec.coordinates)
    qd = sp.Matrix([sp.Dummy(f"{c.name}_dot") for c in spec.coordinates])
    f = sp.Matrix([sp.sympify(b.variable) for b in spec.bodies if b.joint != "fixed"])
    jacobian = f.jacobian(q)
    curvature = (jacobian * qd).jacobian(q) * qd  # h_k = q̇ᵀ ∂²f_k/∂q² q̇
    n, nq = f.rows, q.rows
    values_fn = sp.lambdify([list(q)], f, modules="numpy")
    jacobian_fn = sp.lambdify([list(q)], jacobian, modules="numpy")
    curvature_fn = sp.lambdify([list(q), list(qd)], curvature, modules="numpy")
    return _JointMap(
        values=lambda x: np.array(values_fn(x), dtype=float).reshape(n),
        jacobian=lambda x: np.array(jacobian_fn(x), dtype=float).reshape(n, nq),
        curvature=lambda x, xd: np.array(curvature_fn(x, xd), dtype=float).reshape(n),
    )


def _as_vector(values: ArrayLike, size: int, name: str) -> NDArray[np.float64]:
    """``values`` as a float array of shape ``(size,)``."""
    array = np.asarray(values, dtype=float)
    if array.shape != (size,):
        raise ValueError(f"`{name}` must have shape ({size},), got {array.shape}")
    return array


def equations_of_motion(spec: TreeSpec) -> EquationsOfMotion:
    """Numeric ``M(q)``, ``N(q, q̇) q̇`` and ``G(q)`` of a tree, derived once with Kane's method.

    The equations are ``M(q) q̈ + N(q, q̇) q̇ = G(q) + Q``: ``N q̇`` (Coriolis/centrifugal terms,
    quadratic in ``q̇``) is on the left-hand side, the generalized gravity force
    ``G = −∂V/∂q`` on the right-hand side, and both are conjugate to ``q`` (δW = δqᵀ G). See the
    module docstring for the joint convention and the method.

    Parameters
    ----------
    spec : TreeSpec
        The tree.

    Returns
    -------
    EquationsOfMotion
        ``(mass_matrix(q), velocity_forces(q, qd), gravity_forces(q))``.

    Raises
    ------
    ValueError
        If ``spec`` is inconsistent (all problems are listed).
    """
    kin = _kinematics(spec)
    gravity_symbols = list(sp.symbols("g_x g_y g_z"))
    bodies = []
    loads = []
    for i, (body, frame, origin) in enumerate(zip(spec.bodies, kin.frames, kin.origins)):
        centre = origin.locatenew(f"C{i}", _in_basis(frame, _column(body.com)))
        centre.v2pt_theory(origin, kin.ground, frame)
        mass = _number(body.mass)
        bodies.append(
            me.RigidBody(
                f"body{i}", centre, frame, mass, (_inertia_dyadic(frame, body.inertia), centre)
            )
        )
        if mass != 0:
            gravity = (kin.rotations[i].T * sp.Matrix(gravity_symbols)).expand()  # body basis
            loads.append((centre, _in_basis(frame, mass * gravity)))

    t = me.dynamicsymbols._t
    kane = me.KanesMethod(
        kin.ground,
        q_ind=kin.joints,
        u_ind=kin.speeds,
        kd_eqs=[j.diff(t) - w for j, w in zip(kin.joints, kin.speeds)],
    )
    kane.kanes_equations(bodies, loads)
    # Joint space: M_j(j) ẇ = F_j(j, w, g) = G_j(j, g) − N_j(j, w) w.
    joint_mass_fn = sp.lambdify([kin.joints], kane.mass_matrix, modules="numpy", cse=True)
    joint_forcing_fn = sp.lambdify(
        [kin.joints, kin.speeds, gravity_symbols], kane.forcing, modules="numpy", cse=True
    )

    joint_map = _joint_map(spec)
    n, nq = len(kin.joints), len(spec.coordinates)
    gravity_vector = np.asarray(spec.gravity, dtype=float)
    no_speed, no_gravity = np.zeros(n), np.zeros(3)

    def joint_mass(joints: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.array(joint_mass_fn(joints), dtype=float).reshape(n, n)

    def joint_forcing(
        joints: NDArray[np.float64], speeds: NDArray[np.float64], gravity: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        return np.array(joint_forcing_fn(joints, speeds, gravity), dtype=float).reshape(n)

    def mass_matrix(q: ArrayLike) -> NDArray[np.float64]:
        q = _as_vector(q, nq, "q")
        jacobian = joint_map.jacobian(q)
        return jacobian.T @ joint_mass(joint_map.values(q)) @ jacobian

    def velocity_forces(q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        q, qd = _as_vector(q, nq, "q"), _as_vector(qd, nq, "qd")
        joints, jacobian = joint_map.values(q), joint_map.jacobian(q)
        joint_velocity_forces = -joint_forcing(joints, jacobian @ qd, no_gravity)  # N_j w
        return jacobian.T @ (
            joint_mass(joints) @ joint_map.curvature(q, qd) + joint_velocity_forces
        )

    def gravity_forces(q: ArrayLike) -> NDArray[np.float64]:
        q = _as_vector(q, nq, "q")
        joints = joint_map.values(q)
        return joint_map.jacobian(q).T @ joint_forcing(joints, no_speed, gravity_vector)

    return EquationsOfMotion(mass_matrix, velocity_forces, gravity_forces)


def point_force(
    spec: TreeSpec, body: int, point: ArrayLike
) -> Callable[[ArrayLike, ArrayLike], NDArray[np.float64]]:
    """Generalized force of a world-frame point force applied at a body-fixed point.

    Parameters
    ----------
    spec : TreeSpec
        The tree.
    body : int
        Index of the body (into ``spec.bodies``) carrying the point.
    point : array_like, shape (3,)
        The point of application in body coordinates.

    Returns
    -------
    callable
        ``force(q, f) -> (nq,)`` array ``Q = (∂p/∂q)ᵀ f``, where ``p(q)`` is the world position
        of the point and ``f`` the force in ground coordinates; ``Q`` is conjugate to ``q``
        (δW = δqᵀ Q) and belongs on the right-hand side, like ``G``. It is computed from the
        point's partial velocities with respect to the joint speeds, ``Q = Jᵀ (∂p/∂j)ᵀ f``.

    Raises
    ------
    ValueError
        If ``spec`` is inconsistent or ``body``/``point`` are invalid.
    """
    if not 0 <= body < len(spec.bodies):
        raise ValueError(f"`body` must be in [0, {len(spec.bodies)}), got {body}")
    if np.shape(point) != (3,):
        raise ValueError("`point` must have shape (3,)")
    kin = _kinematics(spec)
    frame, origin = kin.frames[body], kin.origins[body]
    application = origin.locatenew("P", _in_basis(frame, _column(point)))
    velocity = application.v2pt_theory(origin, kin.ground, frame).to_matrix(frame)
    partials = kin.rotations[body] * velocity.jacobian(kin.speeds)  # ∂p/∂j, ground basis
    partials_fn = sp.lambdify([kin.joints], partials, modules="numpy", cse=True)
    joint_map = _joint_map(spec)
    n, nq = len(kin.joints), len(spec.coordinates)

    def force(q: ArrayLike, f: ArrayLike) -> NDArray[np.float64]:
        q = _as_vector(q, nq, "q")
        joint_partials = np.array(partials_fn(joint_map.values(q)), dtype=float).reshape(3, n)
        return joint_map.jacobian(q).T @ (joint_partials.T @ _as_vector(f, 3, "f"))

    return force
