"""Virtual-work dynamics: M(q) q̈ + N(q, q̇) q̇ = G(q) + Q (Eq. 124–198).

The inertial virtual work of body ``i`` (Eq. 124–148) is ``−δqᵀ(M_i q̈ + N_i q̇)`` with

    M_kl = Σ_i tr(∂T_i/∂q_k · J_i · ∂T_i/∂q_lᵀ)                           (Eq. 145)
    (N q̇)_k = Σ_i tr(∂T_i/∂q_k · J_i · (Σ_lm ∂²T_i/∂q_l∂q_m q̇_l q̇_m)ᵀ)   (second part of Eq. 126)

where ``J_i`` is the pseudo-inertia of Eq. 131 (Eq. 147 prints N_i identical to M_i, a typo: see
docs/theory.md). The engine never forms D'_i. With the world twists of
:mod:`mbkron.kinematics.tree` (``∂T_i/∂q_k = Ω_ik T_i``, ``Ω_ik = Σ_{j⪯i} S_j ∇f_jk``), the world
pseudo-inertias ``J̄_i = T_i J_i T_iᵀ`` and ``⟨X, Y⟩ = tr(X Yᵀ)``:

- ``M = gᵀ K g``, ``K_jj' = ⟨S_j, S_j' C_j'⟩`` for ``j ⪯ j'`` (symmetric), where ``C_j`` sums ``J̄_i``
  over the subtree of ``j`` — Eq. 145 regrouped as composite rigid bodies;
- ``N q̇ = gᵀ τ``, ``τ_j = ⟨S_j, Σ_{i⪰j} A_i J̄_i⟩``, where ``T̈_i = (A_i + V̇ part) T_i`` and
  ``A_i = Σ_{j⪯i} ([V_j, S_j] ḟ_j + S_j q̇ᵀH_j q̇) + V_i²``, ``V_i = Σ_{j⪯i} S_j ḟ_j = Ṫ_i T_i⁻¹``;
- ``G = gᵀ γ``, ``γ_j = ḡᵀ S_j Σ_{i⪰j} m_i p̄_i`` (Eq. 187, 197), ``ḡ = {g; 0}``;

``g`` is the matrix of joint-variable gradients per body. These sums are evaluated state by state by
:func:`mbkron.compiled.dynamics.equations_of_motion` (through :mod:`mbkron.backends.engine`). This module
keeps the record of the terms (:class:`EquationsOfMotion`), the pseudo-inertia of Eq. 131, and the
batched velocity twists and their quadratic accelerations ``A_i`` that the joint reactions
(:mod:`mbkron.dynamics.reactions`) use. The literal Kronecker forms (Eq. 145, the derived N_i, Eq. 187)
are in :mod:`mbkron.reference.virtual_work`; the tests hold the engine to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.kinematics.tree import KinematicTree, KinematicsData

__all__ = [
    "EquationsOfMotion",
    "pseudo_inertia",
    "subtree_sum",
    "velocity_twists",
    "velocity_product_accelerations",
]


@dataclass(frozen=True)
class EquationsOfMotion:
    """The terms of ``M(q) q̈ + N(q, q̇) q̇ = G(q) + Q`` at one state (Eq. 198).

    Attributes
    ----------
    mass_matrix : ndarray, shape (..., nq, nq)
    velocity_forces : ndarray, shape (..., nq)
        ``N(q, q̇) q̇``.
    gravity_forces : ndarray, shape (..., nq)
        ``G(q)``.
    applied_forces : ndarray, shape (..., nq)
        Generalized forces of the applied loads.
    """

    mass_matrix: NDArray[np.float64]
    velocity_forces: NDArray[np.float64]
    gravity_forces: NDArray[np.float64]
    applied_forces: NDArray[np.float64]


def pseudo_inertia(mass: NDArray, com: NDArray, inertia: NDArray) -> NDArray:
    """Pseudo-inertia ``J_i = ∫ {r; 1}{r; 1}ᵀ dm`` about each body's frame origin (Eq. 130–131).

    ``J = [[E, m c], [m cᵀ, m]]`` with the second-moment tensor about the origin
    ``E = ∫ r rᵀ dm = ½ tr(I_C) I₃ − I_C + m c cᵀ``. Eq. 131 calls the block "the moment of inertia
    tensor at point p"; by Eq. 127 and 130 it is the second-moment tensor, not the inertia tensor
    ``∫(|r|² I₃ − r rᵀ) dm`` (see docs/theory.md).

    Parameters
    ----------
    mass : ndarray, shape (nb,)
        kg.
    com : ndarray, shape (nb, 3)
        Centres of mass in body coordinates, m.
    inertia : ndarray, shape (nb, 3, 3)
        Inertia tensors about the centres of mass in body axes, kg·m².

    Returns
    -------
    ndarray, shape (nb, 4, 4)
    """
    mass, com, inertia = np.asarray(mass, float), np.asarray(com, float), np.asarray(inertia, float)
    trace = np.trace(inertia, axis1=-2, axis2=-1)
    second_moment = (
        0.5 * trace[..., None, None] * np.eye(3) - inertia + mass[..., None, None] * com[..., :, None] * com[..., None, :]
    )
    out = np.zeros(mass.shape + (4, 4))
    out[..., :3, :3] = second_moment
    out[..., :3, 3] = out[..., 3, :3] = mass[..., None] * com
    out[..., 3, 3] = mass
    return out


def subtree_sum(tree: KinematicTree, per_body: NDArray, trailing: int) -> NDArray:
    """``Σ_{i ⪰ j} x_i`` for every body ``j``: the sum over the subtree rooted at ``j``.

    Parameters
    ----------
    per_body : ndarray, shape (..., nb, *rest)
    trailing : int
        ``len(rest)``.
    """
    shape = per_body.shape
    split = len(shape) - trailing
    flat = per_body.reshape(shape[:split] + (-1,)) if trailing else per_body[..., None]
    out = tree.ancestor_or_self.T @ flat
    return out.reshape(shape)


def velocity_twists(tree: KinematicTree, kin: KinematicsData, qd: NDArray) -> tuple[NDArray, NDArray]:
    """Body velocity twists ``V_i = Ṫ_i T_i⁻¹ = Σ_{j⪯i} S_j ḟ_j`` and joint rates per body ``ḟ``.

    Returns
    -------
    V : ndarray, shape (..., nb, 4, 4)
    joint_rates : ndarray, shape (..., nb)
        ``ḟ_j = ∇f_j · q̇`` of each body's joint (zero for fixed joints).
    """
    joint_rates = tree.per_body(np.einsum("...jk,...k->...j", kin.grad, qd))
    V = subtree_sum_ancestors(tree, kin.joint_twists * joint_rates[..., None, None])
    return V, joint_rates


def subtree_sum_ancestors(tree: KinematicTree, per_body: NDArray) -> NDArray:
    """``Σ_{j ⪯ i} x_j`` for every body ``i`` (sum over ancestors-or-self) of 4×4 quantities."""
    shape = per_body.shape
    return (tree.ancestor_or_self @ per_body.reshape(shape[:-2] + (16,))).reshape(shape)


def velocity_product_accelerations(
    tree: KinematicTree, kin: KinematicsData, V: NDArray, joint_rates: NDArray, convective: NDArray | None
) -> NDArray:
    """The part of ``T̈_i T_i⁻¹`` that is quadratic in q̇ (the q̈ part is ``Σ_k Ω_ik q̈_k``).

    ``A_i = Σ_{j⪯i} ([V_j, S_j] ḟ_j + S_j q̇ᵀH_j q̇) + V_i V_i``: it equals
    ``(Σ_lm ∂²T_i/∂q_l∂q_m q̇_l q̇_m) T_i⁻¹``, i.e. the D'_i term of Eq. 57 (tested).

    Parameters
    ----------
    V, joint_rates : ndarray
        From :func:`velocity_twists`.
    convective : ndarray, shape (..., nj), or None
        ``q̇ᵀH_j q̇`` per joint variable
        (:meth:`mbkron.jointvars.explicit.JointVariables.evaluate_convective`); None: zero (affine maps).

    Returns
    -------
    ndarray, shape (..., nb, 4, 4)
    """
    S = kin.joint_twists
    rates = (V @ S - S @ V) * joint_rates[..., None, None]
    if convective is not None:
        rates = rates + S * tree.per_body(convective)[..., None, None]
    return subtree_sum_ancestors(tree, rates) + V @ V
