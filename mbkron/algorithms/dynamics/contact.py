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
(:func:`mbkron.algorithms.dynamics.points.jacobians`).

The description is :class:`~mbkron.multibody.contact.SmoothSphereHalfSpace`; a model carries it in
``model.loads``, and :func:`mbkron.algorithms.dynamics.loads.generalized_forces` evaluates it by :func:`contact_forces`:
forward simulation, inverse dynamics and every other use of applied loads see it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.arguments import named_index
from mbkron.multibody.records import GROUND
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.algorithms.dynamics.points import jacobians

__all__ = ["ContactState", "contact_state", "contact_forces", "smooth_contact_force", "to_ground",
           "relative_point_jacobian"]


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


def contact_state(model, load: SmoothSphereHalfSpace, kin, qd: NDArray) -> ContactState:
    """The contact point and force of ``load`` at the states of ``kin`` (order ≥ 1) with coordinate rates ``qd``."""
    return _contact(model, load, kin, qd)[0]


def contact_forces(model, load: SmoothSphereHalfSpace, kin, qd: NDArray) -> NDArray[np.float64]:
    """``Q = (J_h(p) − J_s(p))ᵀ F`` (Eq. 46) of ``load`` at the states of ``kin`` (order ≥ 1) with coordinate
    rates ``qd``, shape (..., nq)."""
    state, J = _contact(model, load, kin, qd)
    return -np.einsum("...xk,...x->...k", J, state.force)


def _contact(model, load: SmoothSphereHalfSpace, kin, qd: NDArray) -> tuple[ContactState, NDArray[np.float64]]:
    """The contact and ``J_s(p) − J_h(p)`` (..., 3, nq)."""
    sphere, half_space = (-1 if body == GROUND else named_index(model.body_indices, body, "body")
                          for body in (load.sphere_body, load.half_space_body))
    center = to_ground(kin, sphere, load.sphere_center, 1.0)
    origin = to_ground(kin, half_space, load.half_space_point, 1.0)
    normal = -to_ground(kin, half_space, load.half_space_normal, 0.0)  # into the half-space
    indentation = np.einsum("...x,...x->...", center - origin, normal) + load.radius
    point = center + load.radius * normal - 0.5 * indentation[..., None] * normal
    J = relative_point_jacobian(model, kin, sphere, half_space, point)
    velocity = np.einsum("...xk,...k->...x", J, np.broadcast_to(qd, kin.q.shape))
    force = smooth_contact_force(load, indentation, velocity, normal)
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
    one point-Jacobian kernel (:func:`mbkron.algorithms.dynamics.points.jacobians`)."""
    J = jacobians(model, kin, (first, second), np.stack([point, point], axis=-2))
    return J[..., 0, :3, :] - J[..., 1, :3, :]
