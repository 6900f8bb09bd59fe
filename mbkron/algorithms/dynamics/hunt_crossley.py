"""Contact loads: OpenSim's ``HuntCrossleyForce`` between spheres and half-spaces (Simbody's Hunt–Crossley).

One load holds a set of contact surfaces — spheres (centre ``c``, radius ``r``) and half-spaces (a point
``o`` of the plane, outward unit normal ``n̂``), each fixed on a body or the ground and with its own
stiffness ``k``, dissipation ``c``, static, dynamic and viscous friction ``μ_s, μ_d, μ_v`` — and a transition
velocity ``v_tr``. Every pair of surfaces of the set touches (Simbody 3.8's ``GeneralContactSubsystem``
and ``HuntCrossleyForceImpl::calcForce``, OpenSim 4.6):

- a half-space (surface 1) and a sphere (surface 2) when the depth ``δ = r − (c − o)·n̂`` is positive; then
  the normal is ``n = n̂`` (from surface 1 to 2), the effective radius ``R = r`` and the midpoint
  ``m = o + (c − o)_∥ − (δ/2) n`` (``(c − o)_∥`` the in-plane part: Simbody's ``(δ/2, y, z)`` in the
  half-space's frame);
- two spheres when ``δ = r₁ + r₂ − |c₂ − c₁| > 0`` (and ``c₁ ≠ c₂``): ``n = (c₂ − c₁)/|c₂ − c₁|``,
  ``R = r₁ r₂/(r₁ + r₂)``, ``m = c₁ + (r₁ − δ/2) n``; two half-spaces never.

With each surface's ``kᵢ = Eᵢ^{2/3}`` (``Eᵢ`` its ``stiffness``, as Simbody stores it), ``s₁ = k₂/(k₁ + k₂)``,
``s₂ = 1 − s₁``, the force acts at ``p = m + δ (½ − s₁) n``: Hertz
``f_H = (4/3) k δ √(R k δ)`` with ``k = k₁ s₁``, Hunt–Crossley ``f = f_H (1 + (3/2) c v_n)`` with
``c = c₁ s₁ + c₂ s₂``, ``v = v₁(p) − v₂(p)`` the velocity of body 1's material point at ``p`` relative to
body 2's, ``v_n = v·n``, ``v_t = v − v_n n``; friction (when ``|v_t| ≠ 0``) ``f_f = f (min(v_r, 1)(μ_d +
2 (μ_s − μ_d)/(1 + v_r²)) + μ_v |v_t|)``, ``v_r = |v_t|/v_tr``, each ``μ`` the harmonic mean
``2 μ₁ μ₂/(μ₁ + μ₂)`` of the two surfaces' (0 when both are 0). ``F = f n + f_f v_t/|v_t|`` acts on body 2
at ``p`` and ``−F`` on body 1; the generalized force follows by virtual work (Eq. 46).

Simbody visits the touching pairs in the order of a sweep along the axis in which the surfaces'
centres (a half-space's: its point ``o``) vary most (the largest ``Σ|cᵢ − c̄|``, ties to the lower axis):
surfaces sorted by the start of their extent ``cᵢ − rᵢ`` along it (a half-space's: −∞; ties in surface
order), pairs ``(i, j)`` with ``i`` before ``j``. A pair whose ``f ≤ 0`` (a fast separation) **ends**
Simbody's loop: it and every later pair apply nothing. :func:`hunt_crossley_forces` does the same. (Which of
two spheres Simbody calls surface 1 — the one first in the sweep — changes the force by round-off only:
swapping them flips ``n``, ``v`` and ``F`` together and leaves ``p``, ``k`` and ``c`` as they are; here the
lower index is surface 1.)

The description is :class:`~mbkron.multibody.hunt_crossley.HuntCrossley`; a model carries it in
``model.loads``, and :func:`mbkron.algorithms.dynamics.loads.generalized_forces` evaluates it by :func:`hunt_crossley_forces`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.core.arguments import named_index
from mbkron.multibody.records import GROUND
from mbkron.algorithms.dynamics.contact import relative_point_jacobian, to_ground
from mbkron.multibody.hunt_crossley import HuntCrossley

__all__ = ["hunt_crossley_forces", "hunt_crossley_depths"]


def hunt_crossley_forces(model, load: HuntCrossley, kin, qd: NDArray) -> NDArray[np.float64]:
    """``Σ (J₂(p) − J₁(p))ᵀ F`` over the pairs of ``load`` that apply a force (Eq. 46) at the states of ``kin``
    (order ≥ 1) with coordinate rates ``qd``, shape (..., nq)."""
    qd = np.broadcast_to(qd, kin.q.shape)
    index = [-1 if s.body == GROUND else named_index(model.body_indices, s.body, "body") for s in load.surfaces]
    centers = np.stack([to_ground(kin, b, s.location, 1.0) for b, s in zip(index, load.surfaces)], axis=-2)
    rank = _sweep_ranks(load.surfaces, centers)
    count = len(load.surfaces)
    results = []
    for i, j in load.pairs():
        J, force, keep = _pair_force(model, load, kin, qd, index, centers, i, j)
        order = np.minimum(rank[..., i], rank[..., j]) * count + np.maximum(rank[..., i], rank[..., j])
        results.append((J, force, keep, order))
    Q = np.zeros(kin.q.shape)
    if not results:
        return Q
    # Simbody stops at the first touching pair (in sweep order) whose f ≤ 0
    stop = np.full(kin.q.shape[:-1], np.inf)
    for _, _, keep, order in results:
        stop = np.where(keep == 0, np.minimum(stop, order), stop)
    for J, force, keep, order in results:
        applies = (keep > 0) & (order < stop)
        Q += np.where(applies[..., None], -np.einsum("...xk,...x->...k", J, force), 0.0)
    return Q


def hunt_crossley_depths(model, load: HuntCrossley, kin) -> NDArray[np.float64]:
    """The depth ``δ`` of each of ``load``'s :meth:`~mbkron.multibody.hunt_crossley.HuntCrossley.pairs` at the
    states of ``kin`` (> 0: touching), (..., pairs)."""
    index = [-1 if s.body == GROUND else named_index(model.body_indices, s.body, "body") for s in load.surfaces]
    centers = np.stack([to_ground(kin, b, s.location, 1.0) for b, s in zip(index, load.surfaces)], axis=-2)
    return np.stack([_pair_geometry(load, kin, index, centers, i, j)[1] for i, j in load.pairs()], axis=-1)


def _pair_geometry(load: HuntCrossley, kin, index, centers, i, j):
    """The pair's normal ``n``, depth ``δ``, midpoint ``m``, effective radius ``R`` and whether it touches."""
    a, b = load.surfaces[i], load.surfaces[j]
    c2 = centers[..., j, :]
    if a.shape == "half_space":
        normal = to_ground(kin, index[i], a.normal, 0.0)
        offset = c2 - centers[..., i, :]
        along = np.einsum("...x,...x->...", offset, normal)
        depth = b.radius - along
        # Simbody's X·(δ/2, y, z): the centre's in-plane part, moved to δ/2 beyond the plane's point along n̂
        midpoint = centers[..., i, :] + (offset - along[..., None] * normal) - (0.5 * depth)[..., None] * normal
        return normal, depth, midpoint, b.radius, depth > 0
    delta = c2 - centers[..., i, :]
    distance = np.sqrt(np.einsum("...x,...x->...", delta, delta))
    depth = a.radius + b.radius - distance
    normal = delta / np.where(distance != 0, distance, 1.0)[..., None]
    midpoint = centers[..., i, :] + (a.radius - 0.5 * depth)[..., None] * normal
    return normal, depth, midpoint, a.radius * b.radius / (a.radius + b.radius), (depth > 0) & (distance != 0)


def _pair_force(model, load: HuntCrossley, kin, qd, index, centers, i, j):
    """``J₁(p) − J₂(p)``, ``F`` and whether the pair touches with ``f > 0`` (1), touches with ``f ≤ 0`` (0) or
    does not touch (−1)."""
    a, b = load.surfaces[i], load.surfaces[j]
    normal, depth, midpoint, radius, touching = _pair_geometry(load, kin, index, centers, i, j)
    k1, k2 = a.stiffness ** (2.0 / 3.0), b.stiffness ** (2.0 / 3.0)  # Simbody's Parameters store E^{2/3}
    s1 = k2 / (k1 + k2)
    point = midpoint + (depth * (0.5 - s1))[..., None] * normal
    J = relative_point_jacobian(model, kin, index[i], index[j], point)
    velocity = np.einsum("...xk,...k->...x", J, qd)
    k = k1 * s1
    c = a.dissipation * s1 + b.dissipation * (1 - s1)
    depth_on = np.where(touching, depth, 0.0)
    f = 4.0 / 3.0 * k * depth_on * np.sqrt(radius * k * depth_on)
    vn = np.einsum("...x,...x->...", velocity, normal)
    f = f * (1 + 1.5 * c * vn)
    vt = velocity - vn[..., None] * normal
    slip = np.sqrt(np.einsum("...x,...x->...", vt, vt))
    mu_s, mu_d, mu_v = (_harmonic(getattr(a, key), getattr(b, key))
                        for key in ("static_friction", "dynamic_friction", "viscous_friction"))
    ratio = slip / load.transition_velocity
    friction = f * (np.minimum(ratio, 1.0) * (mu_d + 2 * (mu_s - mu_d) / (1 + ratio * ratio)) + mu_v * slip)
    direction = vt / np.where(slip != 0, slip, 1.0)[..., None]
    force = f[..., None] * normal + np.where(slip != 0, friction, 0.0)[..., None] * direction
    keep = np.where(touching, np.where(f > 0, 1, 0), -1)
    return J, force, keep


def _harmonic(a: float, b: float) -> float:
    """Simbody's combined friction coefficient ``2ab/(a + b)``, 0 when both are 0."""
    return 2 * a * b / (a + b) if (a != 0 or b != 0) else 0.0


def _sweep_ranks(surfaces: tuple, centers: NDArray) -> NDArray[np.intp]:
    """Each surface's position in Simbody's sweep order at each state (see the module docstring), (..., n)."""
    spread = np.abs(centers - centers.mean(axis=-2, keepdims=True)).sum(axis=-2)  # (..., 3)
    axis = np.where(spread[..., 0] > spread[..., 1], 0, 1)
    axis = np.where(spread[..., 2] > np.take_along_axis(spread, axis[..., None], -1)[..., 0], 2, axis)
    along = np.take_along_axis(centers, axis[..., None, None], -1)[..., 0]  # (..., n)
    radii = np.array([s.radius if s.shape == "sphere" else np.inf for s in surfaces])
    start = along - radii
    order = np.argsort(start, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(len(surfaces)) + np.zeros_like(order), axis=-1)
    return rank
