"""A contact set's description: OpenSim's ``HuntCrossleyForce`` between spheres and half-spaces (the law, the
pairs' order and the generalized force: :mod:`mbkron.algorithms.dynamics.hunt_crossley`).

:class:`HuntCrossley` has the ``check`` of a load (:func:`mbkron.multibody.loads.check_load`), so a model
carries it in ``model.loads``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from mbkron.multibody.records import GROUND

__all__ = ["ContactSurface", "HuntCrossley", "SURFACE_SHAPES"]

SURFACE_SHAPES = ("sphere", "half_space")
#: A surface's material parameters (OpenSim's ``HuntCrossleyForce::ContactParameters``, defaults 0).
MATERIAL = ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")


@dataclass(frozen=True)
class ContactSurface:
    """A sphere or half-space of a :class:`HuntCrossley` set, fixed on ``body`` (or ``"ground"``).

    Attributes
    ----------
    shape : {"sphere", "half_space"}
    body : str
    location : array_like, shape (3,)
        A sphere's centre, a point of a half-space's plane (body coordinates, m).
    radius : float
        A sphere's radius > 0, m (0 for a half-space).
    normal : array_like, shape (3,)
        A half-space's outward unit normal (out of the solid; unused for a sphere).
    stiffness : float
        ``E`` > 0, N/m² (OpenSim's; the law uses ``E^{2/3}``).
    dissipation, static_friction, dynamic_friction, viscous_friction : float
        ≥ 0: s/m, –, –, s/m.
    """

    shape: str
    body: str
    location: ArrayLike
    radius: float = 0.0
    normal: ArrayLike = (0.0, 0.0, 0.0)
    stiffness: float = 0.0
    dissipation: float = 0.0
    static_friction: float = 0.0
    dynamic_friction: float = 0.0
    viscous_friction: float = 0.0


def _check_surface(surface: object, label: str, bodies: set[str], problems: list[str]) -> None:
    if not isinstance(surface, ContactSurface):
        problems.append(f"{label} must be a ContactSurface, got {type(surface).__name__}")
        return
    if surface.shape not in SURFACE_SHAPES:
        problems.append(f"{label} `shape` must be one of {', '.join(SURFACE_SHAPES)}, got {surface.shape!r}")
    if surface.body not in bodies | {GROUND}:
        problems.append(f"{label} `body` names unknown body {surface.body!r}; expected one of: "
                        f"{', '.join(sorted(bodies | {GROUND}))}")
    for key in ("location", "normal"):
        value = np.asarray(getattr(surface, key), dtype=object)
        if value.shape != (3,) or not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                                          and np.isfinite(v) for v in value):
            problems.append(f"{label} `{key}` must be 3 finite numbers, got {getattr(surface, key)!r}")
        elif key == "normal" and surface.shape == "half_space" and abs(np.linalg.norm(value.astype(float)) - 1) > 1e-9:
            problems.append(f"{label} `normal` must be a unit vector (length 1 to 1e-9), got {surface.normal!r}")
    for key in ("radius", *MATERIAL):
        value = getattr(surface, key)
        positive = key == "stiffness" or (key == "radius" and surface.shape == "sphere")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0 \
                or (positive and value == 0):
            problems.append(f"{label} `{key}` must be a finite {'positive' if positive else 'non-negative'} number, "
                            f"got {value!r}")


@dataclass(frozen=True)
class HuntCrossley:
    """OpenSim's ``HuntCrossleyForce`` between the spheres and half-spaces of ``surfaces``; see
    :mod:`mbkron.algorithms.dynamics.hunt_crossley`.

    Attributes
    ----------
    name : str
    surfaces : tuple of ContactSurface
        In OpenSim's order (the ``ContactParametersSet``'s entries, each's ``geometry`` in order).
    transition_velocity : float
        ``v_tr`` > 0, m/s (OpenSim's default 0.01).
    """

    name: str
    surfaces: tuple
    transition_velocity: float = 0.01

    def check(self, bodies: set[str], joints: set[str], coordinates: set[str], where: str, problems: list[str]) -> None:
        """Append to ``problems`` everything wrong with this load (``where`` names it)."""
        if not isinstance(self.name, str) or not self.name.strip() or not self.name.isprintable():
            problems.append(f"{where}: `name` must be a non-empty printable text, got {self.name!r}")
        if not isinstance(self.surfaces, tuple) or len(self.surfaces) < 2:
            problems.append(f"{where}: `surfaces` must be a tuple of at least 2 ContactSurfaces, got {self.surfaces!r}")
        else:
            for k, surface in enumerate(self.surfaces):
                _check_surface(surface, f"{where}: `surfaces[{k}]`", bodies, problems)
        value = self.transition_velocity
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
            problems.append(f"{where}: `transition_velocity` must be a finite positive number, got {value!r}")

    def pairs(self) -> list[tuple[int, int]]:
        """The pairs ``(i, j)`` of surface indices that can touch: surface ``i`` is Simbody's surface 1 (the
        half-space of a half-space–sphere pair, the lower index of two spheres)."""
        out = []
        for i, a in enumerate(self.surfaces):
            for j in range(i + 1, len(self.surfaces)):
                b = self.surfaces[j]
                if a.shape == b.shape == "half_space":
                    continue
                out.append((j, i) if b.shape == "half_space" else (i, j))
        return out
