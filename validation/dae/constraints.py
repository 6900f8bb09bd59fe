"""Kinematic joint and driving constraints ``C(q, t) = 0`` in absolute coordinates.

Each constraint supplies, at one configuration, its residual ``C``, Jacobian ``C_q``, partial
time derivative ``C_t`` and the acceleration right-hand side

    Q_d = −(C_q q̇)_q q̇ − 2 C_qt q̇ − C_tt,        so that   C_q q̈ = Q_d

(Shabana, *Computational Dynamics*, 3rd ed., Ch. 3 "Kinematics": kinematic constraints, joint
constraints and driving constraints). All time dependence here is an additive prescribed
function ``f(t)``, so ``C_qt = 0`` and ``Q_d = −(C_q q̇)_q q̇ + f̈`` for the driving constraints.

Bodies are referred to by number (0 = ground) or, before the constraint is added to a
:class:`~validation.dae.model.PlanarSystem`, by name. Points are body coordinates, or world
coordinates when the body is the ground.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.planar import (
    GROUND,
    ROT90,
    as_vector2,
    coordinates,
    point_convective_acceleration,
    point_jacobian,
    point_position,
    point_velocity,
    pose,
    rotation,
)

__all__ = [
    "Motion",
    "Constraint",
    "Revolute",
    "Prismatic",
    "DrivenAngle",
    "FixedAngle",
    "DrivenCoordinate",
]

BodyRef = int | str


@dataclass(frozen=True)
class Motion:
    """A prescribed function of time with its first and second derivatives.

    Parameters
    ----------
    position, velocity, acceleration : callable
        ``f(t)``, ``ḟ(t)`` and ``f̈(t)``, each mapping a float time to a float.

    Examples
    --------
    >>> import numpy as np
    >>> crank = Motion(lambda t: 2 * t + 0.3 * np.sin(t), lambda t: 2 + 0.3 * np.cos(t),
    ...                lambda t: -0.3 * np.sin(t))
    """

    position: Callable[[float], float]
    velocity: Callable[[float], float]
    acceleration: Callable[[float], float]

    @classmethod
    def constant(cls, value: float) -> Motion:
        """The constant function ``f(t) = value``."""
        return cls(lambda t: value, lambda t: 0.0, lambda t: 0.0)

    @classmethod
    def linear(cls, initial: float, rate: float) -> Motion:
        """The linear function ``f(t) = initial + rate · t``."""
        return cls(lambda t: initial + rate * t, lambda t: rate, lambda t: 0.0)


class Constraint(ABC):
    """A set of ``n_eq`` holonomic constraint equations ``C(q, t) = 0``.

    Subclasses are frozen dataclasses; ``body_fields`` names the fields holding body
    references (resolved to numbers when the constraint is added to a system).
    """

    n_eq: ClassVar[int]
    body_fields: ClassVar[tuple[str, ...]]
    name: str | None

    @abstractmethod
    def residual(self, q: NDArray[np.float64], t: float) -> NDArray[np.float64]:
        """Constraint residual ``C(q, t)``, shape (n_eq,)."""

    @abstractmethod
    def jacobian(self, q: NDArray[np.float64], t: float) -> NDArray[np.float64]:
        """Constraint Jacobian ``C_q``, shape (n_eq, n)."""

    def partial_t(self, t: float) -> NDArray[np.float64]:
        """Partial time derivative ``C_t``, shape (n_eq,); zero for scleronomic constraints."""
        return np.zeros(self.n_eq)

    @abstractmethod
    def gamma(self, q: NDArray[np.float64], qd: NDArray[np.float64], t: float) -> NDArray[np.float64]:
        """Acceleration right-hand side ``Q_d = −(C_q q̇)_q q̇ − 2 C_qt q̇ − C_tt``, shape (n_eq,)."""


def _angle(q: ArrayLike, body: int) -> NDArray[np.float64]:
    return pose(q, body)[1]


def _angle_row(n: int, body_i: int, body_j: int) -> NDArray[np.float64]:
    """Jacobian row of the relative angle ``φ_j − φ_i``."""
    row = np.zeros(n)
    if body_j != GROUND:
        row[coordinates(body_j).stop - 1] += 1.0
    if body_i != GROUND:
        row[coordinates(body_i).stop - 1] -= 1.0
    return row


def _relative_angle(q: ArrayLike, qd: ArrayLike, body_i: int, body_j: int):
    """Relative angle ``φ_j − φ_i`` and its rate (batched)."""
    return _angle(q, body_j) - _angle(q, body_i), _angle(qd, body_j) - _angle(qd, body_i)


@dataclass(frozen=True, eq=False)
class Revolute(Constraint):
    """Revolute (pin) joint: point ``P_i`` of body i coincides with point ``P_j`` of body j.

    ``C = r_i^P − r_j^P`` (two equations). A loop-closure "point coincides with point"
    condition is a revolute joint. The multipliers ``λ`` (2,) equal the world-frame reaction
    force exerted *on body j by body i* at the joint (body i receives ``−λ``).

    Parameters
    ----------
    body_i : int or str
        First body (the ground allowed: then ``point_i`` is in world coordinates).
    point_i : array_like, shape (2,)
        Joint point in body i coordinates.
    body_j : int or str
        Second body.
    point_j : array_like, shape (2,)
        Joint point in body j coordinates.
    name : str, optional
        Label (a default is assigned by the system).
    """

    body_i: BodyRef
    point_i: ArrayLike
    body_j: BodyRef
    point_j: ArrayLike
    name: str | None = None

    n_eq: ClassVar[int] = 2
    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def __post_init__(self) -> None:
        object.__setattr__(self, "point_i", as_vector2(self.point_i, "point_i"))
        object.__setattr__(self, "point_j", as_vector2(self.point_j, "point_j"))

    def residual(self, q, t):
        return point_position(q, self.body_i, self.point_i) - point_position(q, self.body_j, self.point_j)

    def jacobian(self, q, t):
        return point_jacobian(q, self.body_i, self.point_i) - point_jacobian(q, self.body_j, self.point_j)

    def gamma(self, q, qd, t):
        return -(
            point_convective_acceleration(q, qd, self.body_i, self.point_i)
            - point_convective_acceleration(q, qd, self.body_j, self.point_j)
        )

    def joint_coordinate(
        self, q: ArrayLike, qd: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Relative angle ``φ_j − φ_i`` and its rate (batched over leading axes of ``q``).

        The angle is measured between the body x axes: a minimal-coordinate joint angle with a
        different zero differs from it by a constant.
        """
        return _relative_angle(q, qd, self.body_i, self.body_j)


@dataclass(frozen=True, eq=False)
class Prismatic(Constraint):
    """Prismatic (translational) joint: body j slides along an axis fixed in body i.

    Two equations (Shabana's translational joint):

        C₁ = n_i · (r_j^P − r_i^P) = 0,    n_i = A_i S â     (P_j stays on the line through P_i along â)
        C₂ = φ_j − φ_i − angle = 0                           (no relative rotation)

    with ``â`` the unit axis in body i coordinates and ``S`` the +90° rotation.

    Parameters
    ----------
    body_i : int or str
        Body carrying the guide (the ground allowed: then the point and axis are in world
        coordinates).
    point_i : array_like, shape (2,)
        A point on the guide line, body i coordinates.
    body_j : int or str
        Sliding body.
    point_j : array_like, shape (2,)
        The sliding point, body j coordinates.
    axis : array_like, shape (2,)
        Guide direction in body i coordinates (normalised here), default ``(1, 0)``.
    angle : float
        Constant relative angle ``φ_j − φ_i``, default 0.
    name : str, optional
    """

    body_i: BodyRef
    point_i: ArrayLike
    body_j: BodyRef
    point_j: ArrayLike
    axis: ArrayLike = (1.0, 0.0)
    angle: float = 0.0
    name: str | None = None

    n_eq: ClassVar[int] = 2
    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def __post_init__(self) -> None:
        object.__setattr__(self, "point_i", as_vector2(self.point_i, "point_i"))
        object.__setattr__(self, "point_j", as_vector2(self.point_j, "point_j"))
        axis = as_vector2(self.axis, "axis")
        norm = np.linalg.norm(axis)
        if norm == 0.0:
            raise ValueError("`axis` of a Prismatic joint must be a nonzero vector")
        object.__setattr__(self, "axis", axis / norm)

    def _frame(self, q):
        """World axis ``A_i â``, normal ``n_i`` and separation ``d = r_j − r_i``."""
        a = rotation(_angle(q, self.body_i)) @ self.axis
        d = point_position(q, self.body_j, self.point_j) - point_position(q, self.body_i, self.point_i)
        return a, a @ ROT90.T, d

    def residual(self, q, t):
        _, n, d = self._frame(q)
        return np.array([n @ d, _angle(q, self.body_j) - _angle(q, self.body_i) - self.angle])

    def jacobian(self, q, t):
        a, n, d = self._frame(q)
        row = n @ (
            point_jacobian(q, self.body_j, self.point_j) - point_jacobian(q, self.body_i, self.point_i)
        )
        if self.body_i != GROUND:
            row[coordinates(self.body_i).stop - 1] -= a @ d  # ∂n/∂φ_i = −A_i â
        return np.vstack([row, _angle_row(len(q), self.body_i, self.body_j)])

    def gamma(self, q, qd, t):
        a, n, d = self._frame(q)
        d_dot = point_velocity(q, qd, self.body_j, self.point_j) - point_velocity(
            q, qd, self.body_i, self.point_i
        )
        d_conv = point_convective_acceleration(
            q, qd, self.body_j, self.point_j
        ) - point_convective_acceleration(q, qd, self.body_i, self.point_i)
        w = _angle(qd, self.body_i)
        # C̈₁ = n̈·d + 2 ṅ·ḋ + n·d̈ with ṅ = −A_i â φ̇_i and n̈ = −A_i â φ̈_i − n φ̇_i²;
        # d̈ = (terms in q̈) + d_conv.
        return np.array([(n @ d) * w**2 + 2.0 * w * (a @ d_dot) - n @ d_conv, 0.0])

    def joint_coordinate(
        self, q: ArrayLike, qd: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Slider displacement ``s = (A_i â)·(r_j^P − r_i^P)`` and its rate (batched)."""
        a = rotation(_angle(q, self.body_i)) @ self.axis
        d = point_position(q, self.body_j, self.point_j) - point_position(q, self.body_i, self.point_i)
        d_dot = point_velocity(q, qd, self.body_j, self.point_j) - point_velocity(
            q, qd, self.body_i, self.point_i
        )
        a_dot = (a @ ROT90.T) * _angle(qd, self.body_i)[..., None]
        return np.sum(a * d, axis=-1), np.sum(a_dot * d + a * d_dot, axis=-1)


@dataclass(frozen=True, eq=False)
class DrivenAngle(Constraint):
    """Driving constraint on a relative or absolute angle: ``φ_j − φ_i − f(t) = 0``.

    With ``body_i`` the ground it prescribes the absolute angle of ``body_j``. The multiplier
    ``λ`` gives the driving torque ``τ = −λ`` acting on body j (and ``−τ`` on body i).

    Parameters
    ----------
    body_i : int or str
        Reference body (the ground for an absolute angle).
    body_j : int or str
        Driven body.
    motion : Motion
        ``f(t)`` with its derivatives.
    name : str, optional
    """

    body_i: BodyRef
    body_j: BodyRef
    motion: Motion
    name: str | None = None

    n_eq: ClassVar[int] = 1
    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def residual(self, q, t):
        return np.array([_angle(q, self.body_j) - _angle(q, self.body_i) - self.motion.position(t)])

    def jacobian(self, q, t):
        return _angle_row(len(q), self.body_i, self.body_j)[None, :]

    def partial_t(self, t):
        return np.array([-self.motion.velocity(t)])

    def gamma(self, q, qd, t):
        return np.array([self.motion.acceleration(t)])


@dataclass(frozen=True, eq=False)
class FixedAngle(Constraint):
    """Constant relative (or, with the ground as ``body_i``, absolute) angle: ``φ_j − φ_i = angle``.

    Parameters
    ----------
    body_i, body_j : int or str
    angle : float
        The fixed value of ``φ_j − φ_i`` in radians.
    name : str, optional
    """

    body_i: BodyRef
    body_j: BodyRef
    angle: float
    name: str | None = None

    n_eq: ClassVar[int] = 1
    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def residual(self, q, t):
        return np.array([_angle(q, self.body_j) - _angle(q, self.body_i) - self.angle])

    def jacobian(self, q, t):
        return _angle_row(len(q), self.body_i, self.body_j)[None, :]

    def gamma(self, q, qd, t):
        return np.zeros(1)


@dataclass(frozen=True, eq=False)
class DrivenCoordinate(Constraint):
    """Driving constraint on a point coordinate: ``e · r^P − f(t) = 0``.

    For example the height of a body's centre of mass: ``point = body.com``,
    ``direction = (0, 1)``. The multiplier gives the driving force ``−λ e`` applied at the point.

    Parameters
    ----------
    body : int or str
        Body carrying the point.
    point : array_like, shape (2,)
        Body coordinates of the point.
    direction : array_like, shape (2,)
        World direction ``e`` of the prescribed coordinate (normalised here).
    motion : Motion
        ``f(t)`` with its derivatives.
    name : str, optional
    """

    body: BodyRef
    point: ArrayLike
    direction: ArrayLike
    motion: Motion
    name: str | None = None

    n_eq: ClassVar[int] = 1
    body_fields: ClassVar[tuple[str, ...]] = ("body",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "point", as_vector2(self.point, "point"))
        e = as_vector2(self.direction, "direction")
        norm = np.linalg.norm(e)
        if norm == 0.0:
            raise ValueError("`direction` of a DrivenCoordinate must be a nonzero vector")
        object.__setattr__(self, "direction", e / norm)

    def residual(self, q, t):
        return np.array([self.direction @ point_position(q, self.body, self.point) - self.motion.position(t)])

    def jacobian(self, q, t):
        return (self.direction @ point_jacobian(q, self.body, self.point))[None, :]

    def partial_t(self, t):
        return np.array([-self.motion.velocity(t)])

    def gamma(self, q, qd, t):
        conv = point_convective_acceleration(q, qd, self.body, self.point)
        return np.array([self.motion.acceleration(t) - self.direction @ conv])
