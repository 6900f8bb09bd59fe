"""Point Jacobians for the loads evaluated in Python (``∂p/∂q``, ``∂ω/∂q̇``: Eq. 44–46, 75, 180), and the motions of
bodies and of their points (Eq. 44, 57, 177–182).

One compiled implementation, :mod:`mbkron.algorithms.kinematics.points_kernels` (by the joints' ground twists), batched over states
and points: the point forces and body torques of :mod:`mbkron.algorithms.dynamics.loads`, the contact forces
(:mod:`mbkron.algorithms.dynamics.contact`, :mod:`mbkron.algorithms.dynamics.hunt_crossley`), the bushings
(:mod:`mbkron.algorithms.dynamics.bushings`) and the measured external loads (:mod:`mbkron.analysis.external_loads`) call
:func:`jacobians`; their force values (callables of ``(t, q, q̇)``, contact laws) stay in Python.

The bodies' velocity and acceleration twists are the dynamics kernels' recursion
(:func:`mbkron.algorithms.dynamics.kernels.body_motions`, :func:`body_motions`); the velocities and accelerations of body
points and the bodies' angular velocities (:meth:`mbkron.Model.point_velocity`, ``point_acceleration``,
``angular_velocity``, the ``kinematics`` command) are read from them (:func:`point_velocities`,
:func:`point_accelerations`, :func:`angular_velocities`), so Eq. 44, 57 and 177–182 have one implementation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.jit.arrays import batch_rows, writable
from mbkron.core.lazy import LazyModule
from mbkron.algorithms.kinematics.tree import point_positions

__all__ = ["angular_velocities", "body_motions", "jacobians", "point_accelerations", "point_velocities",
           "twist_acceleration"]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_compiled_points = LazyModule("mbkron.algorithms.kinematics.points_kernels")
_compiled_dynamics = LazyModule("mbkron.algorithms.dynamics.kernels")


def jacobians(model, kin, bodies: Sequence[int], points: ArrayLike) -> NDArray[np.float64]:
    """``∂p/∂q`` of material points and ``∂ω/∂q̇`` of their bodies at the states of ``kin``, shape
    (..., n, 6, nq): rows 0–2 the point's (Eq. 44–46, 75), rows 3–5 the body's angular velocity per ``q̇``
    (Eq. 180), by :func:`mbkron.algorithms.kinematics.points_kernels.point_jacobians`.

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        Of ``model``, order ≥ 1.
    bodies : sequence of int
        The points' bodies (``model.body_index``), n of them; −1: the ground (zero rows).
    points : array_like, shape (..., n, 3)
        The points' positions in the ground frame (broadcast over the states of ``kin``), m.
    """
    batch, nj, nq = kin.q.shape[:-1], kin.f.shape[-1], kin.q.shape[-1]
    bodies = np.array(bodies, dtype=np.int64).reshape(-1)
    n = bodies.shape[0]
    points = np.asarray(points, dtype=float)
    if points.shape[-2:] != (n, 3):
        raise ValueError(f"`points` must have shape (..., {n}, 3) for {n} bodies, got {points.shape}")
    J = _compiled_points.point_jacobians(*model.tree.kernel_arrays, writable(kin.f).reshape(-1, nj),
                                         batch_rows(kin.grad, batch, 2),
                                         bodies, batch_rows(np.broadcast_to(points, batch + (n, 3)), batch, 2))
    return J.reshape(batch + (n, 6, nq))


def body_motions(model, kin, qd: NDArray, qdd: NDArray,
                 convective: NDArray | None = None) -> tuple[NDArray, NDArray]:
    """The bodies' velocity twists ``V_i = Ṫ_i T_i⁻¹`` and acceleration twists ``α_i`` with ``T̈_i T_i⁻¹ = α_i +
    V_i²`` (Eq. 57, 75), each (..., nb, 6) as ``(ω, v)``: ``V_i {r; 1} = ω × r + v`` is the velocity of the
    body's material point at the ground position ``r``, ``ω`` its angular velocity and ``α``'s ``ω`` part its
    angular acceleration. By the kernel :func:`mbkron.algorithms.dynamics.kernels.body_motions`. The arguments are those of
    :func:`mbkron.algorithms.dynamics.reactions.joint_reactions` (``convective`` None: zero).
    """
    batch, nj, nq = kin.q.shape[:-1], kin.f.shape[-1], kin.q.shape[-1]
    rows = [batch_rows(np.broadcast_to(np.asarray(x, dtype=float), batch + (n,)), batch, 1)
            for x, n in ((np.zeros(nj) if convective is None else convective, nj), (qd, nq), (qdd, nq))]
    V, alpha = _compiled_dynamics.body_motions(*model.tree.kernel_arrays, writable(kin.f).reshape(-1, nj),
                                               batch_rows(kin.grad, batch, 2), *rows)
    nb = model.nb
    return V.reshape(batch + (nb, 6)), alpha.reshape(batch + (nb, 6))


def point_velocities(model, kin, body: int, points: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
    """Ground-frame velocities of body-fixed points (Eq. 44), shape (..., 3): ``ω × r + v`` with the body's velocity
    twist ``V_i = (ω, v)`` (:func:`body_motions`) and the point's ground position ``r``.

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        Of ``model``, order ≥ 1.
    body : int
    points : array_like, shape (..., 3)
        Body coordinates, broadcast against the states of ``kin``.
    qd : array_like, shape (..., nq)
    """
    V, _ = body_motions(model, kin, qd, np.zeros(kin.q.shape[-1]))
    omega, v = V[..., body, :3], V[..., body, 3:]
    return np.cross(omega, point_positions(kin, body, points)) + v


def point_accelerations(model, kin, body: int, points: ArrayLike, qd: ArrayLike, qdd: ArrayLike,
                        convective: NDArray | None) -> NDArray[np.float64]:
    """Ground-frame accelerations of body-fixed points (Eq. 57), shape (..., 3): ``{a; 0} = (α_i + V_i²) {r; 1}``,
    i.e. ``a = α_ω × r + α_v + ω × (ω × r + v)``, with the body's twists ``V_i = (ω, v)`` and ``α_i = (α_ω, α_v)``
    (:func:`body_motions`).

    Parameters
    ----------
    model, kin, body, points, qd
        As :func:`point_velocities`.
    qdd : array_like, shape (..., nq)
    convective : ndarray, shape (..., nj), or None
        ``q̇ᵀ H_j q̇`` per joint variable; None: zero (affine joint variables).
    """
    V, alpha = body_motions(model, kin, qd, qdd, convective)
    return twist_acceleration(V[..., body, :], alpha[..., body, :], point_positions(kin, body, points), 1.0)


def twist_acceleration(V: NDArray, alpha: NDArray, r: NDArray, w) -> NDArray[np.float64]:
    """``(α + V²) {r; w}`` (Eq. 57) for twists ``V = (ω, v)``, ``α = (α_ω, α_v)`` (..., 6) and a ground vector
    ``{r; w}``: ``α_ω × r + w α_v + ω × (ω × r + w v)`` — a point's acceleration (``w = 1``), or a body's rate of
    momentum ``m a_c`` (``{m c; m}``, :func:`mbkron.algorithms.dynamics.reactions.joint_reactions`)."""
    omega = V[..., :3]
    return np.cross(alpha[..., :3], r) + w * alpha[..., 3:] + np.cross(omega, np.cross(omega, r) + w * V[..., 3:])


def angular_velocities(model, kin, qd: ArrayLike, frame: str = "world") -> NDArray[np.float64]:
    """Angular velocities of all bodies (Eq. 177–182), shape (..., nb, 3): the ``ω`` part of their velocity twists
    (:func:`body_motions`; ``ω_i = Σ_{j⪯i} ω_j ḟ_j``, the seed's Eq. 180 in the ground frame), in the ground frame
    (``frame="world"``) or each in its own body's frame (``"body"``: ``R_iᵀ ω_i``)."""
    if frame not in ("world", "body"):
        raise ValueError(f"`frame` must be 'world' or 'body', got {frame!r}")
    V, _ = body_motions(model, kin, qd, np.zeros(kin.q.shape[-1]))
    omega = V[..., :3]
    if frame == "world":
        return omega
    return (np.swapaxes(kin.T[..., :3, :3], -1, -2) @ omega[..., None])[..., 0]
