"""Virtual-work dynamics: M(q) q̈ + N(q, q̇) q̇ = G(q) + Q (Eq. 124–198).

The inertial virtual work of body ``i`` (Eq. 124–148) is ``−δqᵀ(M_i q̈ + N_i q̇)`` with

    M_kl = Σ_i tr(∂T_i/∂q_k · J_i · ∂T_i/∂q_lᵀ)                           (Eq. 145)
    (N q̇)_k = Σ_i tr(∂T_i/∂q_k · J_i · (Σ_lm ∂²T_i/∂q_l∂q_m q̇_l q̇_m)ᵀ)   (second part of Eq. 126)

where ``J_i`` is the pseudo-inertia of Eq. 131 (Eq. 147 prints N_i identical to M_i, a typo: see
docs/theory.md). The engine never forms D'_i. With the world twists of
:mod:`mbkron.algorithms.kinematics.tree` (``∂T_i/∂q_k = Ω_ik T_i``, ``Ω_ik = Σ_{j⪯i} S_j ∇f_jk``), the world
pseudo-inertias ``J̄_i = T_i J_i T_iᵀ`` and ``⟨X, Y⟩ = tr(X Yᵀ)``:

- ``M = gᵀ K g``, ``K_jj' = ⟨S_j, S_j' C_j'⟩`` for ``j ⪯ j'`` (symmetric), where ``C_j`` sums ``J̄_i``
  over the subtree of ``j`` — Eq. 145 regrouped as composite rigid bodies;
- ``N q̇ = gᵀ τ``, ``τ_j = ⟨S_j, Σ_{i⪰j} A_i J̄_i⟩``, where ``T̈_i = (A_i + V̇ part) T_i`` and
  ``A_i = Σ_{j⪯i} ([V_j, S_j] ḟ_j + S_j q̇ᵀH_j q̇) + V_i²``, ``V_i = Σ_{j⪯i} S_j ḟ_j = Ṫ_i T_i⁻¹``;
- ``G = gᵀ γ``, ``γ_j = ḡᵀ S_j Σ_{i⪰j} m_i p̄_i`` (Eq. 187, 197), ``ḡ = {g; 0}``;

``g`` is the matrix of joint-variable gradients per body. These sums are evaluated state by state by
:func:`mbkron.algorithms.dynamics.kernels.equations_of_motion` (:func:`inertial_terms`). This module
keeps the record of the terms (:class:`EquationsOfMotion`), the pseudo-inertia of Eq. 131 and the subtree sums
of the joint reactions (:mod:`mbkron.algorithms.dynamics.reactions`, whose velocity and acceleration twists ``V_i``, ``α_i``
are the kernel :func:`mbkron.algorithms.dynamics.kernels.body_motions`, the recursion of the dynamics kernels). The
literal Kronecker forms (Eq. 145, the derived N_i, Eq. 187) are in :mod:`mbkron.reference.virtual_work`; the tests hold the engine to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule

__all__ = [
    "EquationsOfMotion",
    "InertialTerms",
    "inertial_terms",
    "pseudo_inertia",
    "subtree_sum",
]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_compiled_dynamics = LazyModule("mbkron.algorithms.dynamics.kernels")


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


def subtree_sum(ancestors: NDArray, per_body: NDArray, trailing: int) -> NDArray:
    """``Σ_{i ⪰ j} x_i`` for every body ``j``: the sum over the subtree rooted at ``j``.

    Parameters
    ----------
    ancestors : ndarray, shape (nb, nb)
        The tree's :meth:`~mbkron.multibody.tree.KinematicTree.ancestor_or_self` (built once by the caller for
        all its sums).
    per_body : ndarray, shape (..., nb, *rest)
    trailing : int
        ``len(rest)``.
    """
    shape = per_body.shape
    split = len(shape) - trailing
    flat = per_body.reshape(shape[:split] + (-1,)) if trailing else per_body[..., None]
    out = ancestors.T @ flat
    return out.reshape(shape)


class InertialTerms(NamedTuple):
    """``(M, N q̇, G, spring_forces)`` at a batch of states.

    ``spring_forces`` are the generalized forces of the spring-dampers asked for, or None where the kernel
    did not compute them (a singular state of a spring's direction: the caller applies them as loads).
    """

    mass_matrix: NDArray[np.float64]
    velocity_forces: NDArray[np.float64]
    gravity_forces: NDArray[np.float64]
    spring_forces: NDArray[np.float64] | None = None


def inertial_terms(model, qd: NDArray[np.float64], joint_values, spring_rows: NDArray[np.float64]) -> InertialTerms:
    """``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) and the generalized forces of the spring-dampers and constant line
    forces in ``spring_rows`` (:func:`mbkron.multibody.layout.spring_rows`, Eq. 46, 161) at a batch of states, by
    the kernel :func:`mbkron.algorithms.dynamics.kernels.equations_of_motion`.

    Parameters
    ----------
    model : Model
        Its tree's packed arrays, pseudo-inertia rows and gravity are read.
    qd : ndarray, shape (..., nq)
    joint_values : tuple
        ``(f, ∇f, c)``: the convective terms ``c`` (..., nj) in place of the Hessians
        (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`).
    spring_rows : ndarray
    """
    M, velocity, gravity, spring_forces, regular = _compiled_dynamics.equations_of_motion(
        *model.tree.kernel_arrays, model.kernel_inertia, model.gravity, spring_rows, *joint_values, qd)
    return InertialTerms(M, velocity, gravity, spring_forces if regular else None)
