"""Descriptions of applied loads (forces that are not inertial, gravitational or muscular).

Loads are immutable descriptions. A model carries the loads that belong to the system (a spring, a
drive torque) as ``model.loads``; the dynamics functions take ``loads=`` to use others. Their
generalized forces (:func:`mbkron.algorithms.dynamics.loads.generalized_forces`) follow from virtual work, Eq. 46.

Values are constants or callables ``value(t, q, qd)`` (SI units), evaluated by the dynamics.

The library's other loads are described in their own modules (:class:`~mbkron.multibody.bushings.BushingForce`,
:class:`~mbkron.multibody.contact.SmoothSphereHalfSpace`,
:class:`~mbkron.multibody.hunt_crossley.HuntCrossley`, :class:`mbkron.multibody.muscles.springs.PathForce`);
:func:`check_load` calls their ``check``. Loads defined above the library's layers implement the load protocol:
``check(bodies, joints, coordinates, where, problems)`` and ``generalized_forces(model, kin, t, q, qd)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import ArrayLike

from mbkron.multibody.bushings import BushingForce
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.multibody.hunt_crossley import HuntCrossley
from mbkron.multibody.muscles.springs import PathForce

__all__ = [
    "Load",
    "PointForce",
    "BodyTorque",
    "JointTorque",
    "GeneralizedForce",
    "SpringDamper",
    "LineForce",
    "CoordinateLimitForce",
    "in_kernel",
]

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


Load = Union[PointForce, BodyTorque, JointTorque, GeneralizedForce, SpringDamper, LineForce, CoordinateLimitForce]
#: The library's loads described outside this module, each with its own ``check`` (evaluated by type in
#: :func:`mbkron.algorithms.dynamics.loads.generalized_forces`).
LIBRARY_LOADS = (BushingForce, SmoothSphereHalfSpace, HuntCrossley, PathForce)


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
    elif isinstance(load, LIBRARY_LOADS) or (callable(getattr(load, "check", None))
                                             and callable(getattr(load, "generalized_forces", None))):
        load.check(bodies, joints, coordinates, where, problems)
    else:
        problems.append(f"{where}: not a load; expected one of PointForce, BodyTorque, JointTorque, "
                        "GeneralizedForce, SpringDamper, LineForce, CoordinateLimitForce, BushingForce, "
                        "SmoothSphereHalfSpace, HuntCrossley, PathSpring, Ligament, or an object with "
                        "`check` and `generalized_forces`")


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


def in_kernel(load) -> bool:
    """Whether the dynamics kernels apply ``load`` themselves (a row of
    :func:`mbkron.multibody.layout.spring_rows`): a spring-damper, or a line force of constant tension."""
    return isinstance(load, SpringDamper) or (isinstance(load, LineForce) and not callable(load.tension))

