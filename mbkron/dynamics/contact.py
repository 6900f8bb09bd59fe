"""Contact loads: OpenSim's ``SmoothSphereHalfSpaceForce`` (Simbody's smooth Hunt–Crossley contact).

A sphere of radius ``r`` whose centre ``c`` is fixed on one body touches a half-space fixed on another
(or on the ground): the plane through ``o`` with outward unit normal ``n̂`` (OpenSim's ``ContactHalfSpace``
is the solid ``x > 0`` of its frame, so ``n̂`` is the frame's −x axis). With ``n = −n̂`` (the direction
of contact, into the half-space), all in the ground frame, Simbody 3.8's
``SmoothSphereHalfSpaceForceImpl::calcForce`` (OpenSim 4.6) computes

- the indentation ``δ = (c − o)·n + r`` (positive when penetrating);
- the contact point ``p = c + r n − δ/2 n`` (midway between the surfaces), and the velocity
  ``v = v_s(p) − v_h(p)`` of the sphere body's material point at ``p`` relative to the half-space body's,
  ``v_n = v·n``, ``v_t = v − v_n n``;
- the Hertz force, smoothed: ``k = ½ E^{2/3}`` (``E`` the stiffness),
  ``f_h = (4/3) k √(r k) (δ² + c_f)^{3/4} · (½ + ½ tanh(b_d δ))``;
- the Hunt–Crossley force ``f = f_h (1 + (3/2) c v_n) · (½ + ½ tanh(b_v (v_n + 2/(3c))))`` (``c`` the
  dissipation; for ``c = 0`` the switch is 1);
- the friction: ``v_s = √(|v_t|² + c_f)``, ``v_r = v_s / v_tr``,
  ``f_f = f (min(v_r, 1) (μ_d + 2 (μ_s − μ_d)/(1 + v_r²)) + μ_v v_s)``;

and applies ``F = f n + f_f v_t / v_s`` to the half-space body at ``p`` and ``−F`` to the sphere body at
``p`` (the contact pushes the sphere out of the half-space and its friction opposes the sliding). The
generalized force follows by virtual work (Eq. 46): ``Q = (J_h(p) − J_s(p))ᵀ F`` with ``J_b(p) = ∂p/∂q``
of the material point of body ``b`` at ``p`` (Eq. 44–46), by the one point-Jacobian kernel
(:func:`mbkron.dynamics.points.jacobians`).

:class:`SmoothSphereHalfSpace` implements the load protocol of :mod:`mbkron.dynamics.loads` (``check``,
``generalized_forces``), so a model carries it in ``model.loads``: forward simulation, inverse dynamics
and every other use of applied loads see it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.dynamics.points import jacobians

__all__ = ["SmoothSphereHalfSpace", "ContactState", "smooth_contact_force", "to_ground", "relative_point_jacobian"]

GROUND = "ground"
#: OpenSim 4.6's defaults (``SmoothSphereHalfSpaceForce::constructProperties``).
SMOOTH_DEFAULTS = {"stiffness": 1.0, "dissipation": 0.0, "static_friction": 0.0, "dynamic_friction": 0.0,
                   "viscous_friction": 0.0, "transition_velocity": 0.01, "constant_contact_force": 1e-5,
                   "hertz_smoothing": 300.0, "hunt_crossley_smoothing": 50.0}
# parameters that must be positive (the law divides by them or needs a switch of finite width)
_POSITIVE = ("radius", "transition_velocity", "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing")


@dataclass(frozen=True)
class ContactState:
    """One contact at a batch of states (all in the ground frame).

    Attributes
    ----------
    point : ndarray, shape (..., 3)
        The contact point ``p``, m.
    normal : ndarray, shape (..., 3)
        ``n``, the unit direction of contact (into the half-space).
    velocity : ndarray, shape (..., 3)
        ``v = v_s(p) − v_h(p)``, m/s.
    force : ndarray, shape (..., 3)
        ``F``, the force on the half-space body at ``p`` (the sphere body gets ``−F``), N.
    indentation : ndarray, shape (...)
        ``δ`` (> 0: penetrating), m.
    """

    point: NDArray[np.float64]
    normal: NDArray[np.float64]
    velocity: NDArray[np.float64]
    force: NDArray[np.float64]
    indentation: NDArray[np.float64]


@dataclass(frozen=True)
class SmoothSphereHalfSpace:
    """OpenSim's ``SmoothSphereHalfSpaceForce``: a sphere against a half-space; see the module docstring.

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

    def contact(self, model, kin, qd: NDArray) -> ContactState:
        """The contact point and force at the states of ``kin`` (order ≥ 1) with coordinate rates ``qd``."""
        return self._evaluate(model, kin, qd)[0]

    def generalized_forces(self, model, kin, t: float, q: NDArray, qd: NDArray) -> NDArray[np.float64]:
        """``Q = (J_h(p) − J_s(p))ᵀ F`` (Eq. 46), shape (..., nq)."""
        state, J = self._evaluate(model, kin, qd)
        return -np.einsum("...xk,...x->...k", J, state.force)

    def _evaluate(self, model, kin, qd: NDArray) -> tuple[ContactState, NDArray[np.float64]]:
        """The contact and ``J_s(p) − J_h(p)`` (..., 3, nq)."""
        sphere, half_space = (-1 if body == GROUND else model.body_index(body)
                              for body in (self.sphere_body, self.half_space_body))
        center = to_ground(kin, sphere, self.sphere_center, 1.0)
        origin = to_ground(kin, half_space, self.half_space_point, 1.0)
        normal = -to_ground(kin, half_space, self.half_space_normal, 0.0)  # into the half-space
        indentation = np.einsum("...x,...x->...", center - origin, normal) + self.radius
        point = center + self.radius * normal - 0.5 * indentation[..., None] * normal
        J = relative_point_jacobian(model, kin, sphere, half_space, point)
        velocity = np.einsum("...xk,...k->...x", J, np.broadcast_to(qd, kin.q.shape))
        force = smooth_contact_force(self, indentation, velocity, normal)
        return ContactState(point, normal, velocity, force, indentation), J


def smooth_contact_force(load: SmoothSphereHalfSpace, indentation: NDArray, velocity: NDArray,
                         normal: NDArray) -> NDArray[np.float64]:
    """``F`` of the module docstring (N, shape (..., 3)) at indentations ``δ`` (...), relative contact-point
    velocities ``v`` (..., 3) and contact directions ``n`` (..., 3, unit, into the half-space): OpenSim 4.6's
    law, operation for operation as Simbody's ``SmoothSphereHalfSpaceForceImpl::calcForce``."""
    vn = np.einsum("...x,...x->...", velocity, normal)
    vt = velocity - vn[..., None] * normal
    k = 0.5 * load.stiffness ** (2.0 / 3.0)
    cf = load.constant_contact_force
    fh = (4.0 / 3.0) * k * np.sqrt(load.radius * k) * np.sqrt(indentation * indentation + cf) ** 1.5
    fh = fh * (0.5 + 0.5 * np.tanh(load.hertz_smoothing * indentation))
    f = fh * (1.0 + 1.5 * load.dissipation * vn)
    if load.dissipation > 0:  # with c = 0 the switch's argument is +∞: tanh = 1
        f = f * (0.5 + 0.5 * np.tanh(load.hunt_crossley_smoothing * (vn + 2.0 / (3.0 * load.dissipation))))
    slip = np.sqrt(np.einsum("...x,...x->...", vt, vt) + cf)
    ratio = slip / load.transition_velocity
    mu_s, mu_d = load.static_friction, load.dynamic_friction
    friction = f * (np.minimum(ratio, 1.0) * (mu_d + 2 * (mu_s - mu_d) / (1 + ratio * ratio)) + load.viscous_friction * slip)
    return f[..., None] * normal + friction[..., None] * vt / slip[..., None]


def to_ground(kin, body: int, vector: ArrayLike, w: float) -> NDArray[np.float64]:
    """A body-fixed point (``w = 1``) or direction (``w = 0``) in the ground frame (Eq. 41); ``body = -1``:
    the ground."""
    vector = np.asarray(vector, dtype=float)
    if body < 0:
        return np.broadcast_to(vector, kin.q.shape[:-1] + (3,))
    T = kin.T[..., body, :, :]
    return (T[..., :3, :3] @ vector[..., None])[..., 0] + w * T[..., :3, 3]


def relative_point_jacobian(model, kin, first: int, second: int, point: NDArray) -> NDArray[np.float64]:
    """``J_first(p) − J_second(p)`` (..., 3, nq): ``∂p/∂q`` of the material point of body ``first`` at the ground
    position ``point`` (..., 3) minus that of body ``second`` there (Eq. 44–46; ``-1``, the ground: zero), by the
    one point-Jacobian kernel (:func:`mbkron.dynamics.points.jacobians`)."""
    J = jacobians(model, kin, (first, second), np.stack([point, point], axis=-2))
    return J[..., 0, :3, :] - J[..., 1, :3, :]
