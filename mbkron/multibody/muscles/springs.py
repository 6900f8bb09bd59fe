"""A spring along a musculotendon-like path: OpenSim's ``PathSpring``.

The path is a :class:`~mbkron.multibody.muscles.paths.MusclePath` of the same points and wraps as a muscle's
(body-fixed, moving, conditional points; wrap surfaces); its length ``L(q)`` and moment arms ``R = −∂L/∂q`` (Eq. 192-195) come from a
one-path :class:`~mbkron.algorithms.paths.paths.MuscleSet` of the model's bodies and coordinates, built with the model
(:func:`mbkron.algorithms.paths.forces.path_set`).
The tension is OpenSim 4.6's ``PathSpring::getTension``,

    T = k · max(L − L₀, 0) · (1 + d · L̇),   L̇ = −Rᵀ q̇,

(no tension while the path is shorter than its resting length; the dissipation factor ``d`` scales
the elastic tension, so a fast enough shortening makes ``T`` negative, as in OpenSim), and the
generalized force is ``R T`` (Eq. 192: a positive tension pulls the ends together).

:class:`PathSpring` has the ``check`` of a load (:func:`mbkron.multibody.loads.check_load`), so a model
carries it in ``model.loads`` like any other load; :func:`mbkron.algorithms.paths.forces.path_forces` evaluates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody.muscles.paths import MusclePath, check_path

__all__ = ["PathForce", "PathSpring", "path_spring_tension"]


@dataclass(frozen=True)
class PathForce:
    """A tension along a musculotendon-like path, a function of its length and lengthening speed: the
    common part of :class:`PathSpring` and :class:`~mbkron.multibody.muscles.ligaments.Ligament`.

    Attributes
    ----------
    name : str
        Any non-empty printable text (messages name the path by it).
    path : tuple
        The path points, origin to insertion, as :attr:`MusclePath.points <mbkron.multibody.muscles.paths.MusclePath>`.
    wraps : tuple of PathWrap
        The path's wraps in order, as :attr:`MusclePath.wraps <mbkron.multibody.muscles.paths.MusclePath>` (keyword only;
        default none).
    """

    name: str
    path: tuple
    wraps: tuple = field(default=(), kw_only=True)

    def check(self, bodies: set[str], joints: set[str], coordinates: set[str], where: str, problems: list[str]) -> None:
        """Append to ``problems`` everything wrong with this load (``where`` names it)."""
        found: list[str] = []
        check_path(self.muscle_path(), bodies, coordinates, found)
        problems.extend(f"{where}: {problem.replace('muscle ', 'path ', 1)}" for problem in found)
        self.check_parameters(where, problems)

    def check_parameters(self, where: str, problems: list[str]) -> None:
        """Append the problems of the tension's parameters (none here)."""

    def tension(self, length: NDArray, speed: NDArray) -> NDArray[np.float64]:
        """The tension (N) at path lengths ``length`` (m) and lengthening speeds ``speed`` (m/s)."""
        raise NotImplementedError

    def muscle_path(self) -> MusclePath:
        """The path as a :class:`MusclePath` without a force model."""
        return MusclePath(self.name, tuple(self.path), wraps=tuple(self.wraps))


@dataclass(frozen=True)
class PathSpring(PathForce):
    """A linear spring with dissipation along a path (OpenSim's ``PathSpring``).

    Attributes
    ----------
    name : str
    path : tuple
        As :class:`PathForce`'s.
    stiffness : float
        ``k`` ≥ 0, N/m.
    resting_length : float
        ``L₀`` ≥ 0, m.
    dissipation : float
        ``d`` ≥ 0, s/m.
    """

    stiffness: float
    resting_length: float
    dissipation: float = 0.0

    def check_parameters(self, where: str, problems: list[str]) -> None:
        for key in ("stiffness", "resting_length", "dissipation"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                problems.append(f"{where}: `{key}` must be a finite non-negative number, got {value!r}")

    def tension(self, length: NDArray, speed: NDArray) -> NDArray[np.float64]:
        return path_spring_tension(self, length, speed)


def path_spring_tension(spring: PathSpring, length: NDArray, speed: NDArray) -> NDArray[np.float64]:
    """OpenSim 4.6's ``PathSpring::getTension``: ``k · max(L − L₀, 0) · (1 + d L̇)`` at path lengths
    ``length`` and lengthening speeds ``speed`` (N)."""
    length = np.asarray(length, dtype=float)
    stretch = np.where(length > spring.resting_length, length - spring.resting_length, 0.0)
    return spring.stiffness * stretch * (1 + spring.dissipation * np.asarray(speed, dtype=float))
