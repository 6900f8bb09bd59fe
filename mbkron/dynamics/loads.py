"""Descriptions of applied loads (forces that are not inertial, gravitational or muscular).

Loads are immutable descriptions. A model carries the loads that belong to the system (a spring, a
drive torque) as ``model.loads``; the dynamics functions take ``loads=`` to use others. Their
generalized forces follow from virtual work, Eq. 46: a force ``F`` at a body point ``p`` contributes
``Q = (∂p/∂q)ᵀ F``; a torque ``τ`` on a body contributes ``Q = (∂θ/∂q)ᵀ τ`` with the angular-velocity
Jacobian of Eq. 180.

Values are constants or callables ``value(t, q, qd)`` (SI units), evaluated by the dynamics.

The Jacobians of point forces and body torques are :func:`mbkron.dynamics.points.jacobians` (one compiled
implementation, :mod:`mbkron.compiled.points`).

Loads defined in higher layers (:class:`mbkron.muscles.springs.PathSpring`) implement the load protocol
instead: ``check(bodies, joints, coordinates, where, problems)`` and ``generalized_forces(model, kin, t,
q, qd)``; :func:`check_load` and :func:`generalized_forces` call them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import ArrayLike

from mbkron.compiled.arrays import batch_rows, writable
from mbkron.compiled.layout import line_rows
from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.dynamics.points import jacobians

__all__ = [
    "Load",
    "PointForce",
    "BodyTorque",
    "JointTorque",
    "GeneralizedForce",
    "SpringDamper",
    "LineForce",
    "CoordinateLimitForce",
    "coordinate_limit_force",
    "evaluate_value",
    "in_kernel",
]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_compiled_dynamics = LazyModule("mbkron.compiled.dynamics")

Value = Union[float, ArrayLike, Callable[[float, np.ndarray, np.ndarray], object]]


@dataclass(frozen=True)
class PointForce:
    """A force applied at a body-fixed point.

    Attributes
    ----------
    body : str
    point : array_like, shape (3,)
        Point of application in body coordinates, m.
    force : array_like, shape (3,), or callable (t, q, qd) -> (3,)
        N.
    frame : {"ground", "body"}
        Frame in which ``force`` is expressed.
    """

    body: str
    point: ArrayLike
    force: Value
    frame: str = "ground"


@dataclass(frozen=True)
class BodyTorque:
    """A pure torque (couple) applied to a body.

    Attributes
    ----------
    body : str
    torque : array_like, shape (3,), or callable (t, q, qd) -> (3,)
        N·m.
    frame : {"ground", "body"}
    """

    body: str
    torque: Value
    frame: str = "ground"


@dataclass(frozen=True)
class JointTorque:
    """A torque (revolute) or force (prismatic) acting along a joint, between a body and its parent.

    Its generalized force is ``∇f_jᵀ τ``: it does virtual work ``τ δf_j`` on the joint variable.

    Attributes
    ----------
    joint : str
        The body whose joint it acts on.
    torque : float or callable (t, q, qd) -> float
        N·m or N.
    """

    joint: str
    torque: Value


@dataclass(frozen=True)
class GeneralizedForce:
    """A generalized force acting directly on a coordinate (a joint-space actuator).

    Attributes
    ----------
    coordinate : str
    value : float or callable (t, q, qd) -> float
        N·m for an angle, N for a length.
    """

    coordinate: str
    value: Value


@dataclass(frozen=True)
class SpringDamper:
    """A linear spring-damper between two points; the tension is ``k (L − L₀) + c L̇``.

    A positive tension pulls the points together. ``body_a`` or ``body_b`` may be ``"ground"``
    (the point is then in ground coordinates).

    Attributes
    ----------
    body_a, body_b : str
    point_a, point_b : array_like, shape (3,)
        m, in the bodies' coordinates.
    stiffness : float
        N/m.
    damping : float
        N·s/m.
    free_length : float
        m.
    """

    body_a: str
    point_a: ArrayLike
    body_b: str
    point_b: ArrayLike
    stiffness: float
    damping: float = 0.0
    free_length: float = 0.0


@dataclass(frozen=True)
class LineForce:
    """A force of given tension along the straight line between two points (a linear actuator).

    Seed 000's muscles are such actuators between a point on link ``j1`` and a point on link ``j2``.
    A positive tension pulls the points together.

    Attributes
    ----------
    body_a, body_b : str
    point_a, point_b : array_like, shape (3,)
    tension : float or callable (t, q, qd) -> float
        N.
    """

    body_a: str
    point_a: ArrayLike
    body_b: str
    point_b: ArrayLike
    tension: Value


@dataclass(frozen=True)
class CoordinateLimitForce:
    """OpenSim's ``CoordinateLimitForce``: a smooth one-sided spring-damper beyond a coordinate's limits.

    Its generalized force on ``coordinate`` (:func:`coordinate_limit_force`) is

        Q = −K_up(q) (q − q_up) + K_low(q) (q_low − q) − c (K_up(q)/k_up + K_low(q)/k_low) q̇,

    ``K_up(q) = k_up · s((q − q_up)/w)`` and ``K_low(q) = k_low · (1 − s((q − q_low + w)/w))`` with
    Simbody's ``stepUp`` ``s(u) = u³(10 + u(6u − 15))`` clamped to ``[0, 1]`` (``Function::Step``):
    zero inside ``[q_low, q_up]``, the full stiffness beyond a transition of width ``w`` past a limit,
    and damping only where a stiffness acts (OpenSim's ``CoordinateLimitForce::calcLimitForce``). All
    values are in SI units: OpenSim's per-degree stiffness ``K`` of a rotational coordinate is
    ``K·180/π`` here, its limits and transition in degrees ``·π/180``.

    Attributes
    ----------
    coordinate : str
    upper_stiffness, lower_stiffness : float
        ``k_up``, ``k_low`` > 0: N·m/rad (angle) or N/m (length).
    upper_limit, lower_limit : float
        ``q_up``, ``q_low``: rad or m.
    transition : float
        ``w`` > 0: rad or m.
    damping : float
        ``c`` ≥ 0: N·m·s/rad or N·s/m.
    """

    coordinate: str
    upper_stiffness: float
    upper_limit: float
    lower_stiffness: float
    lower_limit: float
    transition: float
    damping: float = 0.0


def _smooth_step(u: np.ndarray) -> np.ndarray:
    """Simbody's ``stepUp(u) = u³(10 + u(6u − 15))`` of ``u`` clamped to [0, 1] (``Function::Step``)."""
    u = np.clip(u, 0.0, 1.0)
    return u * u * u * (10 + u * (6 * u - 15))


def coordinate_limit_force(load: CoordinateLimitForce, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The generalized force of a :class:`CoordinateLimitForce` at its coordinate's values ``q`` and rates
    ``qd`` (arrays of any shape, SI units), in the order of operations of OpenSim 4.6's ``calcLimitForce``."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    k_up, k_low, width = load.upper_stiffness, load.lower_stiffness, load.transition
    up_end, low_start = load.upper_limit + width, load.lower_limit - width  # Step(0, k_up, q_up, q_up + w)
    stiffness_up = 0.0 + _smooth_step((q - load.upper_limit) * (1 / (up_end - load.upper_limit))) * k_up
    stiffness_low = k_low + _smooth_step((q - low_start) * (1 / (load.lower_limit - low_start))) * (0.0 - k_low)
    elastic = -stiffness_up * (q - load.upper_limit) + stiffness_low * (load.lower_limit - q)
    return elastic + -load.damping * (stiffness_up / k_up + stiffness_low / k_low) * qd


Load = Union[PointForce, BodyTorque, JointTorque, GeneralizedForce, SpringDamper, LineForce, CoordinateLimitForce]


def evaluate_value(value: Value, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """A load's value at ``(t, q, q̇)``: the constant, or the callable evaluated."""
    if callable(value):
        return np.asarray(value(t, q, qd), dtype=float)
    return np.asarray(value, dtype=float)


def _check_point(point: object, label: str, problems: list[str]) -> None:
    try:
        array = np.asarray(point, dtype=float)
    except (TypeError, ValueError):
        problems.append(f"{label} must be 3 numbers, got {point!r}")
        return
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        problems.append(f"{label} must be 3 finite numbers, got {point!r}")


def _check_value(value: object, shape: tuple[int, ...], label: str, problems: list[str]) -> None:
    if callable(value):
        return
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        problems.append(f"{label} must be a number array of shape {shape} or a callable (t, q, qd), got {value!r}")
        return
    if array.shape != shape or not np.all(np.isfinite(array)):
        problems.append(f"{label} must be finite with shape {shape} or a callable (t, q, qd), got {value!r}")


def check_load(
    load: object, bodies: set[str], joints: set[str], coordinates: set[str], index: int, problems: list[str]
) -> None:
    """Append to ``problems`` everything wrong with ``load`` (the ``index``-th load of a model)."""
    where = f"load {index} ({type(load).__name__})"

    def body(name: object, field: str, ground_allowed: bool) -> None:
        allowed = bodies | ({"ground"} if ground_allowed else set())
        if name not in allowed:
            problems.append(f"{where}: `{field}` names unknown body {name!r}; expected one of: "
                            f"{', '.join(sorted(allowed)) or '(none)'}")

    if isinstance(load, (PointForce, BodyTorque)):
        body(load.body, "body", ground_allowed=False)
        if load.frame not in ("ground", "body"):
            problems.append(f"{where}: `frame` must be 'ground' or 'body', got {load.frame!r}")
        if isinstance(load, PointForce):
            _check_point(load.point, f"{where}: `point`", problems)
            _check_value(load.force, (3,), f"{where}: `force`", problems)
        else:
            _check_value(load.torque, (3,), f"{where}: `torque`", problems)
    elif isinstance(load, JointTorque):
        if load.joint not in joints:
            problems.append(f"{where}: `joint` names {load.joint!r}, which is not a moving joint; expected one of: "
                            f"{', '.join(sorted(joints)) or '(none)'}")
        _check_value(load.torque, (), f"{where}: `torque`", problems)
    elif isinstance(load, (GeneralizedForce, CoordinateLimitForce)):
        if load.coordinate not in coordinates:
            problems.append(f"{where}: `coordinate` names unknown coordinate {load.coordinate!r}")
        if isinstance(load, GeneralizedForce):
            _check_value(load.value, (), f"{where}: `value`", problems)
        else:
            _check_limit_force(load, where, problems)
    elif isinstance(load, (SpringDamper, LineForce)):
        body(load.body_a, "body_a", ground_allowed=True)
        body(load.body_b, "body_b", ground_allowed=True)
        _check_point(load.point_a, f"{where}: `point_a`", problems)
        _check_point(load.point_b, f"{where}: `point_b`", problems)
        if load.body_a == load.body_b:  # both points fixed in one frame: a constant line, no force
            problems.append(f"{where}: `body_a` and `body_b` are both {load.body_a!r}: the distance of its points "
                            "never changes, so the load acts on nothing; connect two different bodies")
        if isinstance(load, SpringDamper):
            for field in ("stiffness", "damping", "free_length"):
                value = getattr(load, field)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                    problems.append(f"{where}: `{field}` must be a finite non-negative number, got {value!r}")
        else:
            _check_value(load.tension, (), f"{where}: `tension`", problems)
    elif callable(getattr(load, "check", None)) and callable(getattr(load, "generalized_forces", None)):
        load.check(bodies, joints, coordinates, where, problems)
    else:
        problems.append(f"{where}: not a load; expected one of PointForce, BodyTorque, JointTorque, "
                        "GeneralizedForce, SpringDamper, LineForce, CoordinateLimitForce, or an object with "
                        "`check` and `generalized_forces` (PathSpring)")


def _check_limit_force(load: CoordinateLimitForce, where: str, problems: list[str]) -> None:
    for field, positive in (("upper_stiffness", True), ("upper_limit", None), ("lower_stiffness", True),
                            ("lower_limit", None), ("transition", True), ("damping", False)):
        value = getattr(load, field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            problems.append(f"{where}: `{field}` must be a finite number, got {value!r}")
        elif positive and value <= 0:  # OpenSim divides by the stiffnesses; a zero transition is a jump
            problems.append(f"{where}: `{field}` must be positive, got {value!r}")
        elif positive is False and value < 0:
            problems.append(f"{where}: `{field}` must be non-negative, got {value!r}")


# ---------------------------------------------------------------------- generalized forces
def _direction(value: np.ndarray, kin, body: int, frame: str) -> np.ndarray:
    """A vector given in ``frame`` expressed in the ground frame."""
    if frame == "body":
        return (kin.T[..., body, :3, :3] @ value[..., None])[..., 0]
    return value


def _body_load_jacobians(model, kin, loads) -> np.ndarray | None:
    """:func:`mbkron.dynamics.points.jacobians` (..., n, 6, nq) of the point forces (at their points) and body
    torques among ``loads``, in their order; None without such loads."""
    bodies, points = [], []
    for load in loads:
        if isinstance(load, (PointForce, BodyTorque)):
            b = model.body_index(load.body)
            bodies.append(b)
            if isinstance(load, PointForce):
                T = kin.T[..., b, :, :]
                points.append((T[..., :3, :3] @ np.asarray(load.point, float)[..., None])[..., 0] + T[..., :3, 3])
            else:  # a torque's row 3–5 does not depend on the point
                points.append(np.zeros(3))
    if not bodies:
        return None
    batch = kin.q.shape[:-1]
    return jacobians(model, kin, bodies, np.stack([np.broadcast_to(p, batch + (3,)) for p in points], axis=-2))


def generalized_forces(model, kin, loads, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Generalized forces of applied loads by virtual work (Eq. 46, 161), shape (..., nq).

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        At ``q`` with ``order >= 1``.
    loads : iterable of Load
    t : float
        Time, passed to callable load values.
    q, qd : ndarray, shape (..., nq)
    """
    Q = np.zeros(q.shape)
    loads = tuple(loads)
    J = _body_load_jacobians(model, kin, loads)  # ∂p/∂q and ∂ω/∂q̇ of every point force and body torque, one call
    row = 0
    for load in loads:
        if isinstance(load, PointForce):
            force = _direction(evaluate_value(load.force, t, q, qd), kin, model.body_index(load.body), load.frame)
            Q += np.einsum("...xk,...x->...k", J[..., row, :3, :], force)
            row += 1
        elif isinstance(load, BodyTorque):
            torque = _direction(evaluate_value(load.torque, t, q, qd), kin, model.body_index(load.body), load.frame)
            Q += np.einsum("...xk,...x->...k", J[..., row, 3:, :], torque)
            row += 1
        elif isinstance(load, (JointTorque, GeneralizedForce, CoordinateLimitForce)):
            Q += joint_space_force(model, kin.grad, load, t, q, qd)
        elif isinstance(load, (SpringDamper, LineForce)):
            tension, length_gradient = line_tension(model, kin, load, t, q, qd)
            Q -= tension[..., None] * length_gradient
        elif callable(getattr(load, "generalized_forces", None)):
            Q += load.generalized_forces(model, kin, t, q, qd)
        else:
            raise TypeError(f"not a load: {load!r}")
    return Q


def joint_space_force(model, grad: np.ndarray, load, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Generalized force of a :class:`JointTorque` (``∇f_jᵀ τ``), :class:`GeneralizedForce` or
    :class:`CoordinateLimitForce`, shape (..., nq).

    Needs only the joint-variable gradients ``grad`` (..., nj, nq), no kinematics.
    """
    if isinstance(load, JointTorque):
        return grad[..., model.joints.index(load.joint), :] * evaluate_value(load.torque, t, q, qd)[..., None]
    Q = np.zeros(q.shape)
    k = model.coordinates.index(load.coordinate)
    if isinstance(load, CoordinateLimitForce):
        Q[..., k] = coordinate_limit_force(load, q[..., k], np.broadcast_to(qd, q.shape)[..., k])
    else:
        Q[..., k] = evaluate_value(load.value, t, q, qd)
    return Q


def line_geometry(model, kin, load) -> tuple[np.ndarray, np.ndarray]:
    """Length ``L`` of the line between a load's two points and its gradient ``∂L/∂q`` at the states of ``kin``
    (order ≥ 1), by the kernel that gives the dynamics its spring-dampers
    (:func:`mbkron.compiled.dynamics.line_geometry`, :func:`~mbkron.compiled.dynamics.line_length`).

    Raises
    ------
    ConfigurationError
        Where the two points coincide (the direction is undefined).
    """
    bodies = [model.nb if body == "ground" else model.body_index(body) for body in (load.body_a, load.body_b)]
    row = line_rows([bodies], [load])
    row.setflags(write=False)
    batch, nj, nq = kin.f.shape[:-1], kin.f.shape[-1], kin.q.shape[-1]
    length, gradient, regular = _compiled_dynamics.line_geometry(
        *model.tree.kernel_arrays, writable(kin.f).reshape(-1, nj), batch_rows(kin.grad, batch, 2), row)
    if not regular:
        raise ConfigurationError(f"the two points of {type(load).__name__} between `{load.body_a}` and `{load.body_b}` "
                                 f"coincide at q = {kin.q.tolist()}: its direction is undefined")
    return length.reshape(batch), gradient.reshape(batch + (nq,))


def in_kernel(load) -> bool:
    """Whether the dynamics kernels apply ``load`` themselves (a row of
    :func:`mbkron.compiled.layout.spring_rows`): a spring-damper, or a line force of constant tension."""
    return isinstance(load, SpringDamper) or (isinstance(load, LineForce) and not callable(load.tension))


def line_tension(model, kin, load, t: float, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tension of a spring-damper or line force and ``∂L/∂q`` (tension > 0 pulls the ends together)."""
    length, gradient = line_geometry(model, kin, load)
    if isinstance(load, SpringDamper):
        rate = np.einsum("...k,...k->...", gradient, qd)
        tension = load.stiffness * (length - load.free_length) + load.damping * rate
    else:
        tension = np.broadcast_to(evaluate_value(load.tension, t, q, qd), length.shape)
    return tension, gradient
