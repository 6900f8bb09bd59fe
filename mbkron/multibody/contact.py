"""A contact's description: OpenSim's ``SmoothSphereHalfSpaceForce`` (Simbody's smooth Hunt–Crossley contact; the
law and its generalized force: :mod:`mbkron.algorithms.dynamics.contact`).

:class:`SmoothSphereHalfSpace` has the ``check`` of a load (:func:`mbkron.multibody.loads.check_load`), so a
model carries it in ``model.loads``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from mbkron.multibody.records import GROUND

__all__ = ["SmoothSphereHalfSpace"]

#: OpenSim 4.6's defaults (``SmoothSphereHalfSpaceForce::constructProperties``).
SMOOTH_DEFAULTS = {"stiffness": 1.0, "dissipation": 0.0, "static_friction": 0.0, "dynamic_friction": 0.0,
                   "viscous_friction": 0.0, "transition_velocity": 0.01, "constant_contact_force": 1e-5,
                   "hertz_smoothing": 300.0, "hunt_crossley_smoothing": 50.0}
# parameters that must be positive (the law divides by them or needs a switch of finite width)
_POSITIVE = ("radius", "transition_velocity", "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing")


@dataclass(frozen=True)
class SmoothSphereHalfSpace:
    """OpenSim's ``SmoothSphereHalfSpaceForce``: a sphere against a half-space; see :mod:`mbkron.algorithms.dynamics.contact`.

    Attributes
    ----------
    name : str
        Any non-empty printable text (messages name the contact by it).
    sphere_body : str
        The body the sphere is fixed on (or ``"ground"``).
    sphere_center : array_like, shape (3,)
        ``c`` in ``sphere_body``'s coordinates, m.
    radius : float
        ``r`` > 0, m.
    half_space_body : str
        The body the half-space is fixed on (or ``"ground"``); not ``sphere_body``.
    half_space_point : array_like, shape (3,)
        ``o``, a point of its plane, in ``half_space_body``'s coordinates, m.
    half_space_normal : array_like, shape (3,)
        ``n̂``, the plane's outward unit normal (out of the solid), in ``half_space_body``'s coordinates.
    stiffness : float
        ``E`` ≥ 0, N/m² (OpenSim's plain-strain modulus).
    dissipation : float
        ``c`` ≥ 0, s/m.
    static_friction, dynamic_friction, viscous_friction : float
        ``μ_s``, ``μ_d`` ≥ 0 and ``μ_v`` ≥ 0 (s/m).
    transition_velocity : float
        ``v_tr`` > 0, m/s.
    constant_contact_force : float
        ``c_f`` > 0 (OpenSim's smoothing constant of ``δ²`` and ``|v_t|²``).
    hertz_smoothing, hunt_crossley_smoothing : float
        ``b_d`` > 0 (1/m) and ``b_v`` > 0 (s/m): the steepness of the two tanh switches.
    """

    name: str
    sphere_body: str
    sphere_center: ArrayLike
    radius: float
    half_space_body: str
    half_space_point: ArrayLike
    half_space_normal: ArrayLike
    stiffness: float = SMOOTH_DEFAULTS["stiffness"]
    dissipation: float = SMOOTH_DEFAULTS["dissipation"]
    static_friction: float = SMOOTH_DEFAULTS["static_friction"]
    dynamic_friction: float = SMOOTH_DEFAULTS["dynamic_friction"]
    viscous_friction: float = SMOOTH_DEFAULTS["viscous_friction"]
    transition_velocity: float = SMOOTH_DEFAULTS["transition_velocity"]
    constant_contact_force: float = SMOOTH_DEFAULTS["constant_contact_force"]
    hertz_smoothing: float = SMOOTH_DEFAULTS["hertz_smoothing"]
    hunt_crossley_smoothing: float = SMOOTH_DEFAULTS["hunt_crossley_smoothing"]

    def check(self, bodies: set[str], joints: set[str], coordinates: set[str], where: str, problems: list[str]) -> None:
        """Append to ``problems`` everything wrong with this load (``where`` names it)."""
        if not isinstance(self.name, str) or not self.name.strip() or not self.name.isprintable():
            problems.append(f"{where}: `name` must be a non-empty printable text, got {self.name!r}")
        allowed = bodies | {GROUND}
        for key in ("sphere_body", "half_space_body"):
            if getattr(self, key) not in allowed:
                problems.append(f"{where}: `{key}` names unknown body {getattr(self, key)!r}; expected one of: "
                                f"{', '.join(sorted(allowed))}")
        if self.sphere_body == self.half_space_body:
            problems.append(f"{where}: `sphere_body` and `half_space_body` are both {self.sphere_body!r}: the "
                            "contact never changes; put them on two different bodies")
        for key in ("sphere_center", "half_space_point", "half_space_normal"):
            value = np.asarray(getattr(self, key), dtype=object)
            if value.shape != (3,) or not all(isinstance(v, (int, float, np.floating, np.integer))
                                              and not isinstance(v, bool) and np.isfinite(v) for v in value):
                problems.append(f"{where}: `{key}` must be 3 finite numbers, got {getattr(self, key)!r}")
            elif key == "half_space_normal" and abs(np.linalg.norm(value.astype(float)) - 1.0) > 1e-9:
                problems.append(f"{where}: `half_space_normal` must be a unit vector (length 1 to 1e-9), got "
                                f"{getattr(self, key)!r}")
        for key in ("radius", *SMOOTH_DEFAULTS):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0 \
                    or (key in _POSITIVE and value == 0):
                problems.append(f"{where}: `{key}` must be a finite {'positive' if key in _POSITIVE else 'non-negative'} "
                                f"number, got {value!r}")
