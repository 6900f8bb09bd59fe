"""Exact derivatives of solved joint variables: ``∇f`` (Eq. 101-102) and ``H`` (Eq. 120).

Differentiating ``g_i(f(q), q) = 0`` gives linear systems with the matrix ``J = ∂g/∂f`` (columns
``ḡ_j``, Eq. 104), solved by one LU factorisation reused for both orders or by the seed's
analytical projection (Eq. 105-119); the derivation of Eq. 120's right-hand side is in
docs/seed-notes/constraints.md. These are the kernels the compiled step
(:func:`mbkron.algorithms.jointvars.kernels.step_kernel`) computes ``∇f`` and ``H`` with at every solution; see
:mod:`mbkron.algorithms.jointvars.solvers` for the positions.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.calls import address_only, call_python
from mbkron.jit.common import jit
from mbkron.numerics.linalg import copy_into

__all__ = ["callback_inputs", "hessian_right_hand_side", "input_curvature", "projected", "projection_rows",
           "projection_solve"]


@jit
def hessian_right_hand_side(P, grad, g_uu, g_up, g_pp, gamma):  # pragma: no cover - compiled
    """``Γ_i`` of ``Σ_j ∂g_i/∂f_j H_j = −Γ_i`` (Eq. 120, derived in docs/seed-notes/constraints.md) for inputs
    ``p`` with ``∂p/∂q = P``, into ``gamma`` (m, nq, nq), by loops (a few dozen tiny matrix products would each
    cost a BLAS call):

        Γ_i = Pᵀ ∂²g_i/∂p² P + X_i + X_iᵀ + ∇fᵀ ∂²g_i/∂f² ∇f,   X_i[k, l] = Σ_j (∂²g_i/∂f_j∂p P)_k ∇f_j,l,

    i.e. ``∂²g_i/∂q² + Σ_j (∂²g_i/∂q∂f_j ∇f_jᵀ + ∇f_j ∂²g_i/∂f_j∂qᵀ) + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ`` with the
    partial ``q``-derivatives at fixed ``f`` taken through ``p`` (the seed's ``Γ`` of Eq. 120 is ``−vec`` of
    ours). Where ``p`` is not affine in ``q`` the caller adds ``Σ_a ∂g_i/∂p_a ∂²p_a/∂q²``.

    Parameters
    ----------
    P : ndarray, shape (n, nq)
    grad : ndarray, shape (m, nq)
        ``∇f`` (row ``j`` is ``∇f_jᵀ``).
    g_uu, g_up, g_pp : ndarray, shapes (m, m, m), (m, m, n), (m, n, n)
        ``∂²g/∂f²``, ``∂²g/∂f∂p``, ``∂²g/∂p²``.
    gamma : ndarray, shape (m, nq, nq)
        Overwritten with ``Γ``; returned.
    """
    m, n = g_up.shape[0], g_up.shape[2]
    nq = P.shape[1]
    up_P = np.empty((m, nq))  # (g_up,i P)[j, k]
    pp_P = np.empty((n, nq))  # (g_pp,i P)[a, l]
    uu_grad = np.empty((m, nq))  # (g_uu,i ∇f)[j, l]
    for i in range(m):
        for j in range(m):
            for k in range(nq):
                up, uu = 0.0, 0.0
                for a in range(n):
                    up += g_up[i, j, a] * P[a, k]
                for r in range(m):
                    uu += g_uu[i, j, r] * grad[r, k]
                up_P[j, k], uu_grad[j, k] = up, uu
        for a in range(n):
            for l in range(nq):
                value = 0.0
                for b in range(n):
                    value += g_pp[i, a, b] * P[b, l]
                pp_P[a, l] = value
        for k in range(nq):
            for l in range(nq):
                value = 0.0
                for a in range(n):
                    value += P[a, k] * pp_P[a, l]
                for j in range(m):
                    value += up_P[j, k] * grad[j, l] + up_P[j, l] * grad[j, k] + grad[j, k] * uu_grad[j, l]
                gamma[i, k, l] = value
    return gamma


@jit
def projection_rows(J: NDArray) -> NDArray:
    """The projection rows ``ḡ_iᵀ γ_{i+1} / ‖γ_{i+1} ḡ_i‖²`` of Eq. 118 (Eq. 110, 114-117).

    Backward recursion from ``γ_{m+1} = I_m``:

        σ_i = I_m − ḡ_i ḡ_iᵀ γ_{i+1} / ‖γ_{i+1} ḡ_i‖²        (Eq. 115-116)
        γ_i = γ_{i+1} σ_i                                    (Eq. 114, 117)

    ``γ_{i+1}`` is the orthogonal projector onto the complement of ``span(ḡ_{i+1}, …, ḡ_m)``
    (symmetric and idempotent; see docs/seed-notes/constraints.md), so
    ``‖γ_{i+1}ḡ_i‖² = ḡ_iᵀ γ_{i+1} ḡ_i``.

    Parameters
    ----------
    J : ndarray, shape (m, m)
        ``∂g/∂f``; column ``j`` is ``ḡ_j`` (Eq. 104).

    Returns
    -------
    ndarray, shape (m, m)
        Row ``i`` (0-based) is ``ḡ_{i+1}ᵀ γ_{i+2} / ‖γ_{i+2} ḡ_{i+1}‖²`` in the seed's 1-based
        numbering.
    """
    m = J.shape[0]
    gamma = np.eye(m)  # γ_{m+1}
    rows = np.empty((m, m))
    g, projected = np.empty(m), np.empty(m)
    for i in range(m - 1, -1, -1):  # by loops: compiled as a kernel, where matrix products would be BLAS calls
        for r in range(m):
            g[r] = J[r, i]
        norm = 0.0
        for r in range(m):
            value = 0.0
            for c in range(m):
                value += gamma[r, c] * g[c]
            projected[r] = value  # γ_{i+1} ḡ_i
            norm += value * value
        for c in range(m):
            value = 0.0
            for r in range(m):
                value += g[r] * gamma[r, c]
            rows[i, c] = value / norm  # Eq. 118's ḡ_iᵀ γ_{i+1} / ‖γ_{i+1} ḡ_i‖²
        if i:
            # γ_i = γ_{i+1} σ_i = γ_{i+1} (I − ḡ_i rowᵢ) = γ_{i+1} − (γ_{i+1} ḡ_i) rowᵢ  (Eq. 116-117)
            for r in range(m):
                for c in range(m):
                    gamma[r, c] -= projected[r] * rows[i, c]
    return rows


@jit
def projection_solve(rows: NDArray, J: NDArray, c: NDArray) -> NDArray:
    """Solve ``Σ_j ḡ_j ⊗ x_j = −c`` by the forward recursion of Eq. 118-119.

    ``x_i = −(ḡ_iᵀγ_{i+1} ⊗ I_k)(η^(i−1) + c) / ‖γ_{i+1}ḡ_i‖²``, ``η^(i) = η^(i−1) + ḡ_i ⊗ x_i``,
    ``η^(0) = 0``. A Kronecker-stacked vector ``v ∈ R^(m·k)`` (block ``r`` = entries of
    equation ``r``) is held as the matrix ``V ∈ R^(m×k)`` whose row ``r`` is block ``r``; then
    ``(aᵀ ⊗ I_k) v = aᵀ V`` and ``ḡ ⊗ x = ḡ xᵀ``.

    Parameters
    ----------
    rows : ndarray, shape (m, m)
        From :func:`projection_rows`.
    J : ndarray, shape (m, m)
        ``∂g/∂f`` (columns ``ḡ_j``).
    c : ndarray, shape (m, k)
        ``∂G/∂q`` (Eq. 102; ``k = nq``) or ``Γ`` flattened (Eq. 120; ``k = nq²``).

    Returns
    -------
    ndarray, shape (m, k)
        Row ``j`` is ``x_j`` (``∇f_j`` or ``vec H_j``).
    """
    m, k = J.shape[0], c.shape[1]
    x = np.empty((m, k))
    eta_plus_c = c.copy()  # η^(0) + ∂G/∂q
    for i in range(m):
        for column in range(k):
            value = 0.0
            for r in range(m):
                value += rows[i, r] * eta_plus_c[r, column]
            x[i, column] = -value  # Eq. 118
        for r in range(m):  # Eq. 119: η^(i) = η^(i−1) + ḡ_i ⊗ x_i
            for column in range(k):
                eta_plus_c[r, column] += J[r, i] * x[i, column]
    return x


@address_only
def projected(g_u, right, out):  # pragma: no cover - compiled
    """``out`` = the projection method's solution of ``∂g/∂u X = −right`` (:func:`projection_solve` with the rows
    of :func:`projection_rows`, Eq. 118-120): ∇f or H of the compiled step
    (:func:`mbkron.algorithms.jointvars.kernels.step_kernel`) by ``method="projection"``, a kernel of its own (called by
    address) so that a step by LU compiles none of it."""
    copy_into(out, np.ascontiguousarray(projection_solve(projection_rows(g_u), g_u, right)))


@address_only
def callback_inputs(inputs, m, q, buffer, x):  # pragma: no cover - compiled
    """Inputs not affine in ``q`` for the compiled step (:func:`mbkron.algorithms.jointvars.kernels.step_kernel`): ``q`` into
    ``buffer`` (:func:`mbkron.algorithms.jointvars.kernels.step_work`'s last), the Python callback at the address ``inputs``
    (:data:`~mbkron.jit.calls.PYTHON_CALLBACK`, with the buffer's address) writing ``p(q)``, ``∂p/∂q`` and
    ``∂²p/∂q²`` after it, and ``p`` into ``x[m:]``; False where the callback failed (it raised). A kernel of its own
    (called by address), so that a step of affine inputs compiles none of it."""
    nq, n = q.size, x.size - m
    for k in range(nq):
        buffer[k] = q[k]
    if call_python(inputs, 0.0, buffer.ctypes.data) == 0:
        return False
    for k in range(n):
        x[m + k] = buffer[nq + k]
    return True


@address_only
def input_curvature(g_p, buffer, hess):  # pragma: no cover - compiled
    """``hess[i] += Σ_a ∂g_i/∂p_a ∂²p_a/∂q²`` (Eq. 120's ``Γ`` through inputs ``p(q)`` that are not affine, the
    chain rule's second term), ``∂²p/∂q²`` from the end of :func:`callback_inputs`' ``buffer``: a kernel of its own, as
    that one."""
    m, n = g_p.shape
    nq = hess.shape[1]
    d2p = buffer[nq + n + n * nq:].reshape(n, nq, nq)
    for i in range(m):
        for k in range(nq):
            for l in range(nq):
                value = 0.0
                for a in range(n):
                    value += g_p[i, a] * d2p[a, k, l]
                hess[i, k, l] += value
