"""Applied loads and their generalized forces in absolute coordinates.

A force ``F`` (world frame) applied at a body point with Jacobian ``J = ∂r/∂q`` contributes
``Q = Jᵀ F``; a torque ``τ`` on body b contributes ``τ`` to the ``φ_b`` entry (virtual work
``δW = δqᵀ Q``; Shabana, *Computational Dynamics*, 3rd ed., Ch. 5 "Virtual work and
Lagrangian dynamics"). Gravity is handled by :class:`~validation.dae.model.PlanarSystem`.

Loads given as callables are evaluated as ``value(t, q, qd)`` with the full coordinate and
velocity vectors, except :class:`JointTorque`, which receives the relative angle and rate.
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
    as_vector2,
    coordinates,
    point_jacobian,
    point_position,
    point_velocity,
    pose,
)

__all__ = ["Load", "PointForce", "BodyTorque", "SpringDamper", "JointTorque"]

BodyRef = int | str
StateFunction = Callable[[float, NDArray[np.float64], NDArray[np.float64]], ArrayLike]


class Load(ABC):
    """An applied load; subclasses are frozen dataclasses with body references in ``body_fields``."""

    body_fields: ClassVar[tuple[str, ...]]

    @abstractmethod
    def generalized_force(
        self, q: NDArray[np.float64], qd: NDArray[np.float64], t: float
    ) -> NDArray[np.float64]:
        """Generalized force ``Q`` (n,) conjugate to ``q`` at one state."""

    def potential_energy(self, q: ArrayLike) -> NDArray[np.float64]:
        """Potential energy (batched over leading axes of ``q``); zero for non-conservative loads."""
        return np.zeros(np.shape(q)[:-1])


def _torque_entry(Q: NDArray[np.float64], body: int, torque: float) -> None:
    if body != GROUND:
        Q[coordinates(body).stop - 1] += torque


@dataclass(frozen=True, eq=False)
class PointForce(Load):
    """A force at a body point, given in the world frame.

    Parameters
    ----------
    body : int or str
    point : array_like, shape (2,)
        Body coordinates of the point of application.
    force : array_like, shape (2,), or callable
        Constant world force, or ``force(t, q, qd) -> (2,)``.
    """

    body: BodyRef
    point: ArrayLike
    force: ArrayLike | StateFunction

    body_fields: ClassVar[tuple[str, ...]] = ("body",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "point", as_vector2(self.point, "point"))
        if not callable(self.force):
            object.__setattr__(self, "force", as_vector2(self.force, "force"))

    def generalized_force(self, q, qd, t):
        F = as_vector2(self.force(t, q, qd), "force(t, q, qd)") if callable(self.force) else self.force
        return point_jacobian(q, self.body, self.point).T @ F


@dataclass(frozen=True, eq=False)
class BodyTorque(Load):
    """A pure torque on one body (counter-clockwise positive).

    Parameters
    ----------
    body : int or str
    torque : float or callable
        Constant torque, or ``torque(t, q, qd) -> float``.
    """

    body: BodyRef
    torque: float | StateFunction

    body_fields: ClassVar[tuple[str, ...]] = ("body",)

    def generalized_force(self, q, qd, t):
        Q = np.zeros(len(q))
        _torque_entry(
            Q, self.body, float(self.torque(t, q, qd)) if callable(self.torque) else float(self.torque)
        )
        return Q


@dataclass(frozen=True, eq=False)
class JointTorque(Load):
    """A torque between two bodies (joint actuator or torsional spring-damper).

    Applies ``τ`` to body j and ``−τ`` to body i.

    Parameters
    ----------
    body_i, body_j : int or str
        The bodies (either may be the ground).
    torque : float or callable
        Constant torque, or ``torque(t, angle, rate) -> float`` with ``angle = φ_j − φ_i``
        and ``rate`` its time derivative.
    """

    body_i: BodyRef
    body_j: BodyRef
    torque: float | Callable[[float, float, float], float]

    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def generalized_force(self, q, qd, t):
        if callable(self.torque):
            angle = pose(q, self.body_j)[1] - pose(q, self.body_i)[1]
            rate = pose(qd, self.body_j)[1] - pose(qd, self.body_i)[1]
            tau = float(self.torque(t, float(angle), float(rate)))
        else:
            tau = float(self.torque)
        Q = np.zeros(len(q))
        _torque_entry(Q, self.body_j, tau)
        _torque_entry(Q, self.body_i, -tau)
        return Q


@dataclass(frozen=True, eq=False)
class SpringDamper(Load):
    """Linear translational spring-damper between two points.

    With ``d = r_j − r_i``, ``l = ‖d‖`` and ``e = d / l`` the tension is
    ``f = k (l − l₀) + c l̇``; body j receives ``−f e`` and body i ``+f e``.

    Parameters
    ----------
    body_i : int or str
    point_i : array_like, shape (2,)
        Body coordinates (world coordinates for the ground).
    body_j : int or str
    point_j : array_like, shape (2,)
    stiffness : float
        ``k`` in N/m (≥ 0).
    damping : float
        ``c`` in N s/m (≥ 0).
    free_length : float
        ``l₀`` in m (≥ 0).
    """

    body_i: BodyRef
    point_i: ArrayLike
    body_j: BodyRef
    point_j: ArrayLike
    stiffness: float
    damping: float = 0.0
    free_length: float = 0.0

    body_fields: ClassVar[tuple[str, ...]] = ("body_i", "body_j")

    def __post_init__(self) -> None:
        object.__setattr__(self, "point_i", as_vector2(self.point_i, "point_i"))
        object.__setattr__(self, "point_j", as_vector2(self.point_j, "point_j"))
        for field in ("stiffness", "damping", "free_length"):
            value = getattr(self, field)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"SpringDamper `{field}` must be finite and ≥ 0, got {value!r}")

    def _length(self, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        d = point_position(q, self.body_j, self.point_j) - point_position(q, self.body_i, self.point_i)
        return d, np.linalg.norm(d, axis=-1)

    def generalized_force(self, q, qd, t):
        d, length = self._length(q)
        if length == 0.0:
            raise ValueError(f"SpringDamper has zero length (direction undefined) at q = {q}")
        e = d / length
        rate = e @ (
            point_velocity(q, qd, self.body_j, self.point_j)
            - point_velocity(q, qd, self.body_i, self.point_i)
        )
        f = self.stiffness * (length - self.free_length) + self.damping * rate
        Ji = point_jacobian(q, self.body_i, self.point_i)
        Jj = point_jacobian(q, self.body_j, self.point_j)
        return (Ji - Jj).T @ (f * e)

    def potential_energy(self, q):
        _, length = self._length(q)
        return 0.5 * self.stiffness * (length - self.free_length) ** 2
