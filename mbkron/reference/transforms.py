"""The seed's kinematic formulas written literally, for reading and for cross-checking.

:mod:`mbkron.algorithms.kinematics.tree` evaluates D_i and D'_i through world twists, vectorised over bodies.
This module writes the dissertation's own routes one equation at a time, for a single state,
with loops over bodies, so that the tests can prove every route equal:

- :func:`derivatives_recursive` -- the recursions Eq. 77 and Eq. 89 (natural layout);
- :func:`derivatives_closed_form` -- the closed forms Eq. 75-76 and Eq. 97-99 with ``W_ji`` and
  ``W̄_sji`` (natural layout);
- :func:`kron_derivatives_recursive` -- Eq. 74/77 and Eq. 89 in the Kronecker layout of
  Definition 1, with the commutation matrices ``U_{nq,nq}``;
- :func:`kron_derivatives_closed_form` -- Eq. 75 and Eq. 90 with Eq. 93-94, Kronecker layout;
- :func:`kron_point_velocity`, :func:`kron_point_acceleration` -- Eq. 44 and Eq. 57.

Several printed equations carry typos (Eq. 88-90, 94, 97-99); the forms here are the corrected
ones, derived in docs/theory.md.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.reference import kron
from mbkron.algorithms.kinematics.tree import KinematicsData, local_transforms, rigid_inverse
from mbkron.multibody.tree import KinematicTree

__all__ = [
    "transforms",
    "relative_transform",
    "derivatives_recursive",
    "derivatives_closed_form",
    "kron_derivatives_recursive",
    "kron_derivatives_closed_form",
    "kron_point_velocity",
    "kron_point_acceleration",
    "model_kinematics",
]


def _chain(tree: KinematicTree, i: int) -> list[int]:
    """Ancestors of ``i`` and ``i`` itself, root first (``Anc(i) ∪ {i}``)."""
    out = []
    while i >= 0:
        out.append(i)
        i = int(tree.parent[i])
    return out[::-1]


def transforms(tree: KinematicTree, f: NDArray) -> tuple[NDArray, NDArray]:
    """Local and world transforms by a plain loop over bodies (Eq. 38-40)."""
    local = local_transforms(tree, f)
    T = np.empty_like(local)
    for i in range(tree.nb):
        p = tree.parent[i]
        T[i] = local[i] if p < 0 else T[p] @ local[i]
    return local, T


def relative_transform(T: NDArray, j: int, i: int) -> NDArray:
    """``ʲ_iA_4 = (⁰_jA_4)⁻¹ ⁰_iA_4``, the pose of frame ``i`` in frame ``j`` (``j = -1``: ground)."""
    return T[i] if j < 0 else np.linalg.solve(T[j], T[i])


def _body_gradients(tree: KinematicTree, grad: NDArray, hess: NDArray) -> tuple[NDArray, NDArray]:
    return tree.per_body(grad, 1), tree.per_body(hess, 2)


def derivatives_recursive(tree: KinematicTree, f: NDArray, grad: NDArray, hess: NDArray) -> tuple[NDArray, NDArray]:
    """``∂T_i/∂q`` and ``∂²T_i/∂q²`` by the recursions Eq. 77 and Eq. 89 (natural layout).

    With ``T_i = T_{pr(i)} A_i`` and ``∂A_i/∂f_i = A_i Â_i`` (Eq. 69):

    - Eq. 77: ``∂T_i/∂q_k = (∂T_{pr}/∂q_k) A_i + T_i Â_i ∇f_ik``;
    - Eq. 89: ``∂²T_i/∂q_k∂q_l = (∂²T_{pr}/∂q_k∂q_l) A_i + (∂T_{pr}/∂q_k) A_i Â_i ∇f_il
      + (∂T_i/∂q_l) Â_i ∇f_ik + T_i Â_i H_ikl``.

    Parameters
    ----------
    tree : KinematicTree
    f : ndarray, shape (nj,)
    grad : ndarray, shape (nj, nq)
    hess : ndarray, shape (nj, nq, nq)

    Returns
    -------
    dT : ndarray, shape (nb, nq, 4, 4)
    d2T : ndarray, shape (nb, nq, nq, 4, 4)
    """
    local, T = transforms(tree, f)
    g, H = _body_gradients(tree, grad, hess)
    nb, nq = tree.nb, grad.shape[-1]
    dT = np.zeros((nb, nq, 4, 4))
    d2T = np.zeros((nb, nq, nq, 4, 4))
    for i in range(nb):
        A, Ahat, p = local[i], tree.joint_matrices[i], tree.parent[i]
        dT[i] = T[i] @ Ahat * g[i][:, None, None]
        if p >= 0:
            dT[i] += dT[p] @ A
        d2T[i] = (dT[i] @ Ahat)[None, :, :, :] * g[i][:, None, None, None] + T[i] @ Ahat * H[i][..., None, None]
        if p >= 0:
            d2T[i] += d2T[p] @ A + (dT[p] @ A @ Ahat)[:, None, :, :] * g[i][None, :, None, None]
    return dT, d2T


def derivatives_closed_form(tree: KinematicTree, f: NDArray, grad: NDArray, hess: NDArray) -> tuple[NDArray, NDArray]:
    """``∂T_i/∂q`` and ``∂²T_i/∂q²`` by the closed forms Eq. 75-76 and Eq. 97-99 (natural layout).

    - Eq. 76: ``W_ji = ⁰_jA_4 · _jÂ_4 · ʲ_iA_4 = ∂T_i/∂f_j`` for ``j ∈ Anc(i) ∪ {i}``;
    - Eq. 75: ``∂T_i/∂q = Σ_j W_ji ∇f_j``;
    - Eq. 98 (corrected): ``W̄_sji = ∂²T_i/∂f_j∂f_s = W_sj Â_j ʲT_i`` when ``s ∈ Anc(j) ∪ {j}`` and
      ``W_js Â_s ˢT_i`` when ``s ∈ Ω_ij = Anc(i) ∪ {i} − Anc(j) − {j}``;
    - Eq. 99 (corrected): ``∂²T_i/∂q_k∂q_l = Σ_j Σ_s W̄_sji ∇f_jk ∇f_sl + Σ_j W_ji H_jkl``.

    Parameters and returns as :func:`derivatives_recursive`.
    """
    _, T = transforms(tree, f)
    g, H = _body_gradients(tree, grad, hess)
    Ahat = tree.joint_matrices
    nb, nq = tree.nb, grad.shape[-1]
    dT = np.zeros((nb, nq, 4, 4))
    d2T = np.zeros((nb, nq, nq, 4, 4))

    def W(j: int, i: int) -> NDArray:  # Eq. 76
        return T[j] @ Ahat[j] @ relative_transform(T, j, i)

    for i in range(nb):
        chain = _chain(tree, i)
        for j in chain:
            dT[i] += W(j, i) * g[j][:, None, None]
            d2T[i] += W(j, i) * H[j][..., None, None]
            ancestors_of_j = _chain(tree, j)
            for s in chain:
                if s in ancestors_of_j:
                    Wbar = W(s, j) @ Ahat[j] @ relative_transform(T, j, i)
                else:
                    Wbar = W(j, s) @ Ahat[s] @ relative_transform(T, s, i)
                d2T[i] += Wbar * np.multiply.outer(g[j], g[s])[..., None, None]
    return dT, d2T


def kron_derivatives_recursive(tree: KinematicTree, f: NDArray, grad: NDArray, hess: NDArray) -> tuple[list, list]:
    """``D_i = ∂B_i/∂q`` and ``D'_i = ∂²B_i/∂q²`` by Eq. 77 and Eq. 89 in the Kronecker layout.

    ``B_i = ⁰_iA_4ᵀ``; ``D_i ∈ R^{4nq×4}``, ``D'_i ∈ R^{4nq²×4}``:

    - Eq. 77: ``D_i = W_iiᵀ ⊗ ∇f_i + (ᵖʳ⁽ⁱ⁾_iA_4ᵀ ⊗ I_nq) D_pr(i)``;
    - Eq. 89 (corrected): ``D'_i = (Â_iᵀ ⊗ U_{nq,nq})(D_i ⊗ ∇f_i) + W_iiᵀ ⊗ vec(H_i)
      + [(Â_iᵀ ᵖʳ⁽ⁱ⁾_iA_4ᵀ) ⊗ I_nq ⊗ ∇f_i] D_pr(i) + (ᵖʳ⁽ⁱ⁾_iA_4ᵀ ⊗ I_{nq²}) D'_pr(i)``.
      The dissertation's Eq. 88 prints ``W_iiᵀ`` in place of ``Â_iᵀ ᵖʳ⁽ⁱ⁾_iA_4ᵀ`` in the third
      term.

    Returns
    -------
    D, D2 : list of ndarray
        Per body, shapes (4nq, 4) and (4nq², 4).
    """
    local, T = transforms(tree, f)
    g, H = _body_gradients(tree, grad, hess)
    nq = grad.shape[-1]
    U = kron.commutation_matrix(nq, nq)
    D, D2 = [], []
    for i in range(tree.nb):
        At, Ahat_t = local[i].T, tree.joint_matrices[i].T
        W_ii_t = Ahat_t @ T[i].T
        grad_i = g[i][:, None]
        p = tree.parent[i]
        D_i = np.kron(W_ii_t, grad_i)
        if p >= 0:
            D_i = D_i + np.kron(At, np.eye(nq)) @ D[p]
        D2_i = np.kron(Ahat_t, U) @ np.kron(D_i, grad_i) + np.kron(W_ii_t, kron.vec(H[i])[:, None])
        if p >= 0:
            D2_i = D2_i + np.kron(np.kron(Ahat_t @ At, np.eye(nq)), grad_i) @ D[p] + np.kron(At, np.eye(nq * nq)) @ D2[p]
        D.append(D_i)
        D2.append(D2_i)
    return D, D2


def kron_derivatives_closed_form(tree: KinematicTree, f: NDArray, grad: NDArray, hess: NDArray) -> tuple[list, list]:
    """``D_i`` and ``D'_i`` by the closed forms Eq. 75 and Eq. 90 (with Eq. 93-94), Kronecker layout.

    - Eq. 75: ``D_i = Σ_{j ∈ Anc(i)∪{i}} W_jiᵀ ⊗ ∇f_j``;
    - Eq. 94 (corrected): ``∂(ʲ_iA_4ᵀ)/∂q = Σ_{s ∈ Ω_ij} (ˢ_iA_4ᵀ Â_sᵀ ʲ_sA_4ᵀ) ⊗ ∇f_s``;
    - Eq. 93: ``∂W_jiᵀ/∂q = ∂(ʲ_iA_4ᵀ)/∂q · Â_jᵀ ⁰_jA_4ᵀ + Σ_{k ∈ Anc(j)∪{j}} (ʲ_iA_4ᵀ Â_jᵀ W_kjᵀ) ⊗ ∇f_k``;
    - Eq. 90 (corrected, ``H_j`` for ``H_i``):
      ``D'_i = Σ_j (I_4 ⊗ U_{nq,nq})(∂W_jiᵀ/∂q ⊗ ∇f_j) + W_jiᵀ ⊗ vec(H_j)``.

    Returns
    -------
    D, D2 : list of ndarray
        Per body, shapes (4nq, 4) and (4nq², 4).
    """
    _, T = transforms(tree, f)
    g, H = _body_gradients(tree, grad, hess)
    Ahat = tree.joint_matrices
    nq = grad.shape[-1]
    I4U = np.kron(np.eye(4), kron.commutation_matrix(nq, nq))

    def W(j: int, i: int) -> NDArray:  # Eq. 76
        return T[j] @ Ahat[j] @ relative_transform(T, j, i)

    D, D2 = [], []
    for i in range(tree.nb):
        chain = _chain(tree, i)
        D_i = sum(np.kron(W(j, i).T, g[j][:, None]) for j in chain)
        D2_i = np.zeros((4 * nq * nq, 4))
        for j in chain:
            omega_ij = chain[chain.index(j) + 1 :]  # Eq. 95
            dRel_t = sum(
                (np.kron(relative_transform(T, s, i).T @ Ahat[s].T @ relative_transform(T, j, s).T, g[s][:, None])
                 for s in omega_ij),
                start=np.zeros((4 * nq, 4)),
            )  # Eq. 94
            dW_t = dRel_t @ Ahat[j].T @ T[j].T + sum(
                np.kron(relative_transform(T, j, i).T @ Ahat[j].T @ W(k, j).T, g[k][:, None])
                for k in _chain(tree, j)
            )  # Eq. 93
            D2_i += I4U @ np.kron(dW_t, g[j][:, None]) + np.kron(W(j, i).T, kron.vec(H[j])[:, None])  # Eq. 90
        D.append(D_i)
        D2.append(D2_i)
    return D, D2


def kron_point_velocity(D_i: NDArray, point: NDArray, qd: NDArray) -> NDArray:
    """Eq. 44: ``{v; 0} = D_iᵀ({r; 1} ⊗ q̇)``; returns the 4-vector."""
    r = np.append(np.asarray(point, dtype=float), 1.0)
    return D_i.T @ np.kron(r, qd)


def kron_point_acceleration(D_i: NDArray, D2_i: NDArray, point: NDArray, qd: NDArray, qdd: NDArray) -> NDArray:
    """Eq. 57: ``{a; 0} = D'_iᵀ({r; 1} ⊗ q̇ ⊗ q̇) + D_iᵀ({r; 1} ⊗ q̈)``; returns the 4-vector."""
    r = np.append(np.asarray(point, dtype=float), 1.0)
    return D2_i.T @ np.kron(r, np.kron(qd, qd)) + D_i.T @ np.kron(r, qdd)


def _state_values(joint_values, index, nj: int, nq: int):
    """``(f, ∇f, H)`` of one state; zeros for derivatives not computed."""
    f, grad, hess = joint_values
    g = np.zeros((nj, nq)) if grad is None else np.broadcast_to(grad, f.shape + (nq,))[index]
    h = np.zeros((nj, nq, nq)) if hess is None else np.broadcast_to(hess, f.shape + (nq, nq))[index]
    return f[index], g, h


def joint_values_of_model(model, q: ArrayLike, order: int):
    """``q`` as floats and the model's own joint variables ``(f, ∇f, H)`` there (Eq. 100-120 are not the reference's)."""
    q = np.asarray(q, dtype=float)
    return q, model.joint_variables(q, order)


def derivatives_of_model(model, joint_values, q):
    """``T`` (Eq. 40) and the Kronecker-layout ``D_i`` (Eq. 77), ``D'_i`` (Eq. 89) of every body at every state."""
    tree, batch = model.tree, q.shape[:-1]
    nj, nq = joint_values[0].shape[-1], q.shape[-1]
    T = np.empty(batch + (tree.nb, 4, 4))
    D = np.empty(batch + (tree.nb, 4 * nq, 4))
    D2 = np.empty(batch + (tree.nb, 4 * nq * nq, 4))
    for index in np.ndindex(batch):
        f, g, h = _state_values(joint_values, index, nj, nq)
        T[index] = transforms(tree, f)[1]
        Di, D2i = kron_derivatives_recursive(tree, f, g, h)
        D[index], D2[index] = np.stack(Di), np.stack(D2i)
    return T, D, D2


def _natural(model, joint_values, q, T, D, D2, order) -> KinematicsData:
    """Natural-layout kinematics from the Kronecker layout (``∂T_i/∂q_k = (∂B_i/∂q_k)ᵀ``, Definition 1)."""
    nq = q.shape[-1]
    inverse = rigid_inverse(T)
    dT = np.swapaxes(kron.from_kron(D, nq, 1), -1, -2)  # (..., nb, nq, 4, 4)
    d2T = np.swapaxes(kron.from_kron(D2, nq, 2), -1, -2) if order >= 2 else None
    twists = dT @ inverse[..., None, :, :]  # Ω_ik = (∂T_i/∂q_k) T_i⁻¹
    joint_twists = T @ model.tree.joint_matrices @ inverse  # S_j = T_j Â_j T_j⁻¹
    f, grad, hess = joint_values
    return KinematicsData(q=q, f=f, grad=grad, hess=hess, T=T, joint_twists=joint_twists, twists=twists,
                          d2T=d2T, derivative_transforms=dT)


def model_kinematics(model, q: ArrayLike, order: int = 2) -> KinematicsData:
    """Transforms ``⁰_iA_4`` (Eq. 38-40) and, for ``order`` ≥ 1, D_i (Eq. 74/77) and D'_i (Eq. 89).

    Parameters
    ----------
    model : Model
    q : array_like, shape (..., nq)
    order : {0, 1, 2}

    Returns
    -------
    KinematicsData
        As :meth:`mbkron.Model.kinematics` returns it (natural layout, ``dT``/``d2T`` from the
        Kronecker-layout ``D_i``, ``D'_i``).
    """
    q, joint_values = joint_values_of_model(model, q, 2 if order else 0)
    if order == 0:
        f = joint_values[0]
        T = np.empty(q.shape[:-1] + (model.tree.nb, 4, 4))
        for index in np.ndindex(q.shape[:-1]):
            T[index] = transforms(model.tree, f[index])[1]
        return KinematicsData(q=q, f=f, grad=None, hess=None, T=T, joint_twists=None, twists=None, d2T=None)
    T, D, D2 = derivatives_of_model(model, joint_values, q)
    return _natural(model, joint_values, q, T, D, D2, order)
