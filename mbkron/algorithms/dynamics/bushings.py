"""A bushing: OpenSim's ``BushingForce``, a linear six-axis spring–damper between two body-fixed frames.

Frame ``F`` is fixed in ``body_1`` (the transform ``frame_1`` from the body's frame), frame ``M`` in
``body_2`` (``frame_2``). The deflection of ``M`` from ``F`` is six numbers,

    φ = (θ₁, θ₂, θ₃, p₁, p₂, p₃),

the body-fixed X-Y-Z angles of ``R_FM = Rx(θ₁) Ry(θ₂) Rz(θ₃)`` and the position ``p`` of ``M``'s origin in
``F`` (OpenSim 4.6's ``TwoFrameLinker::computeDeflection``; Simbody's ``Force::LinearBushing``). The bushing
pulls the frames back with the force, in the basis of the deflection,

    f = −K φ − D φ̇,   K = diag(k_rot, k_trans),  D = diag(d_rot, d_trans),

and applies it as a moment and a force on ``M`` and their opposites on ``F`` such that the power of the
pair is ``fᵀ φ̇`` (``TwoFrameLinker::convertInternalForceToForcesOnFrames``: the moment ``Nᵀ f_rot`` with
``θ̇ = N ω_FM`` in ``M``, the force ``R_GF f_trans`` at ``M``'s origin). Its generalized force is therefore,
by virtual work (Eq. 46),

    Q = Jᵀ f,   J = ∂φ/∂q,   φ̇ = J q̇,

with ``∂θ/∂q_k = N(θ) R_GMᵀ (ω₂ₖ − ω₁ₖ)`` and ``∂p/∂q_k = R_GFᵀ (∂o_M/∂q_k − ∂o_F/∂q_k − ω₁ₖ × (o_M − o_F))``
from the point Jacobians (``ωᵢₖ``: body i's angular velocity per unit ``q̇_k``, Eq. 180; ``∂o/∂q``, Eq. 46: both
:func:`~mbkron.algorithms.dynamics.points.jacobians`). ``N`` is singular where ``cos θ₂ = 0``; OpenSim's is too.

The description is :class:`~mbkron.multibody.bushings.BushingForce`; a model carries it in ``model.loads``
like any other load, and :func:`mbkron.algorithms.dynamics.loads.generalized_forces` evaluates it by :func:`bushing_forces`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.core.arguments import named_index
from mbkron.multibody.records import GROUND
from mbkron.multibody.bushings import BushingForce
from mbkron.algorithms.dynamics.points import jacobians

__all__ = ["body_fixed_xyz", "bushing_deflection", "bushing_forces"]


def body_fixed_xyz(R: NDArray) -> NDArray[np.float64]:
    """The body-fixed X-Y-Z angles ``(θ₁, θ₂, θ₃)`` of rotations ``R = Rx(θ₁) Ry(θ₂) Rz(θ₃)`` (..., 3, 3),
    ``θ₂`` in [−π/2, π/2]: ``sin θ₂ = R₀₂``, ``tan θ₁ = −R₁₂/R₂₂``, ``tan θ₃ = −R₀₁/R₀₀``."""
    return np.stack([np.arctan2(-R[..., 1, 2], R[..., 2, 2]), np.arcsin(np.clip(R[..., 0, 2], -1.0, 1.0)),
                     np.arctan2(-R[..., 0, 1], R[..., 0, 0])], axis=-1)


def _angle_rates(theta: NDArray, omega: NDArray) -> NDArray[np.float64]:
    """``θ̇ = N(θ) ω`` for body-fixed X-Y-Z angles, ``ω`` (..., 3, nq) in the rotated (``M``) frame: from
    ``ω = (θ̇₁ c₂c₃ + θ̇₂ s₃, −θ̇₁ c₂s₃ + θ̇₂ c₃, θ̇₁ s₂ + θ̇₃)``."""
    s2, c2 = np.sin(theta[..., 1])[..., None], np.cos(theta[..., 1])[..., None]
    s3, c3 = np.sin(theta[..., 2])[..., None], np.cos(theta[..., 2])[..., None]
    w0, w1, w2 = omega[..., 0, :], omega[..., 1, :], omega[..., 2, :]
    first = (w0 * c3 - w1 * s3) / c2
    return np.stack([first, w0 * s3 + w1 * c3, w2 - first * s2], axis=-2)


def bushing_frame(model, load: BushingForce, kin, which: int) -> tuple[int, NDArray, NDArray, NDArray, NDArray]:
    """(body index or −1, R_G·, origin, ∂origin/∂q, ω per q̇) of ``load``'s frame ``F`` (1) or ``M`` (2)."""
    body, frame = (load.body_1, load.frame_1) if which == 1 else (load.body_2, load.frame_2)
    batch = kin.q.shape[:-1]
    if body == GROUND:
        zero = np.zeros(batch + (3, kin.q.shape[-1]))
        return (-1, np.broadcast_to(frame[:3, :3], batch + (3, 3)), np.broadcast_to(frame[:3, 3], batch + (3,)),
                zero, zero)
    b = named_index(model.body_indices, body, "body")
    T = kin.T[..., b, :, :]
    origin = (T[..., :3, :3] @ frame[:3, 3]) + T[..., :3, 3]
    J = jacobians(model, kin, (b,), origin[..., None, :])[..., 0, :, :]
    return b, T[..., :3, :3] @ frame[:3, :3], origin, J[..., :3, :], J[..., 3:, :]


def bushing_deflection(model, load: BushingForce, kin) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``φ`` (..., 6) and ``J = ∂φ/∂q`` (..., 6, nq) of ``load`` at the states of ``kin`` (order ≥ 1)."""
    _, R_GF, o_F, do_F, w_F = bushing_frame(model, load, kin, 1)
    _, R_GM, o_M, do_M, w_M = bushing_frame(model, load, kin, 2)
    R_FM = np.swapaxes(R_GF, -1, -2) @ R_GM
    theta = body_fixed_xyz(R_FM)
    d = o_M - o_F
    p = (np.swapaxes(R_GF, -1, -2) @ d[..., None])[..., 0]
    angle_rates = _angle_rates(theta, np.swapaxes(R_GM, -1, -2) @ (w_M - w_F))
    moved = do_M - do_F - np.cross(w_F, d[..., :, None], axisa=-2, axisb=-2, axisc=-2)
    translation_rates = np.swapaxes(R_GF, -1, -2) @ moved
    return np.concatenate([theta, p], axis=-1), np.concatenate([angle_rates, translation_rates], axis=-2)


def bushing_forces(model, load: BushingForce, kin, qd: NDArray) -> NDArray[np.float64]:
    """``Q = Jᵀ (−K φ − D J q̇)`` of ``load`` at the states of ``kin`` (order ≥ 1) with coordinate rates ``qd``,
    shape (..., nq) (module docstring)."""
    phi, J = bushing_deflection(model, load, kin)
    rate = np.einsum("...ik,...k->...i", J, np.broadcast_to(qd, kin.q.shape))
    stiffness = np.concatenate([load.rotational_stiffness, load.translational_stiffness])
    damping = np.concatenate([load.rotational_damping, load.translational_damping])
    f = -stiffness * phi - damping * rate
    return np.einsum("...ik,...i->...k", J, f)
