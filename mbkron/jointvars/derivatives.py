"""Exact derivatives of solved joint variables: ``∇f`` (Eq. 101-102) and ``H`` (Eq. 120).

Differentiating ``g_i(f(q), q) = 0`` gives linear systems with the matrix ``J = ∂g/∂f`` (columns
``ḡ_j``, Eq. 104), solved by one LU factorisation reused for both orders or by the seed's
analytical projection (Eq. 105-119); the derivation of Eq. 120's right-hand side is in
docs/seed-notes/constraints.md. See :mod:`mbkron.jointvars.solvers` for the positions.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.compiled.common import jit
from mbkron.core.errors import ConfigurationError
from mbkron.jointvars.constraints import BoundConstraints
from mbkron.jointvars.solvers import LUFactors, Solution, format_values

__all__ = ["chain_rule", "hessian_right_hand_side", "projection_rows", "projection_solve", "implicit_derivatives"]


def chain_rule(
    g_p: NDArray, g_up: NDArray, g_pp: NDArray, P: NDArray, d2p: NDArray | None
) -> tuple[NDArray, NDArray, NDArray]:
    """Partial ``q``-derivatives at fixed ``u`` through ``p(q)``.

    Returns
    -------
    g_q : ndarray, shape (m, nq)
        ``∂g/∂q = g_p P``.
    g_uq : ndarray, shape (m, m, nq)
        ``∂²g/∂u∂q = g_up P``.
    g_qq : ndarray, shape (m, nq, nq)
        ``∂²g/∂q² = Pᵀ g_pp P + Σ_a g_p,a ∂²p_a/∂q²``.
    """
    g_q = g_p @ P
    g_uq = g_up @ P
    g_qq = P.T @ g_pp @ P
    if d2p is not None:
        g_qq = g_qq + np.einsum("ia,akl->ikl", g_p, d2p)
    return g_q, g_uq, g_qq


def hessian_right_hand_side(g_uu: NDArray, g_uq: NDArray, g_qq: NDArray, grad: NDArray) -> NDArray:
    """``Γ_i`` of ``Σ_j ∂g_i/∂f_j H_j = −Γ_i`` (Eq. 120, derived in docs/seed-notes/constraints.md).

    ``Γ_i = ∂²g_i/∂q² + Σ_j (∂²g_i/∂q∂f_j ∇f_jᵀ + ∇f_j ∂²g_i/∂f_j∂qᵀ) + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ``.

    Parameters
    ----------
    g_uu : ndarray, shape (m, m, m)
    g_uq : ndarray, shape (m, m, nq)
    g_qq : ndarray, shape (m, nq, nq)
    grad : ndarray, shape (m, nq)
        ``∇f`` (row ``j`` is ``∇f_jᵀ``).

    Returns
    -------
    ndarray, shape (m, nq, nq)
    """
    mixed = np.swapaxes(g_uq, -1, -2) @ grad  # [i, k, l] = Σ_j ∂²g_i/∂q_k∂f_j ∂f_j/∂q_l
    return g_qq + mixed + np.swapaxes(mixed, -1, -2) + grad.T @ g_uu @ grad


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


def implicit_derivatives(
    system: BoundConstraints, solution: Solution, order: int, method: str, max_condition: float | None,
) -> tuple[NDArray, NDArray | None]:
    """Exact ``∇f`` (Eq. 101-102) and ``H`` (Eq. 120) at a solved configuration.

    Parameters
    ----------
    system : BoundConstraints
    solution : Solution
    order : {1, 2}
    method : {"lu", "projection"}
        One LU of ``∂g/∂f`` reused for both stages, or the analytical projection (Eq. 105-119)
        with the ``γ_i`` computed once and reused for the Hessian stage.
    max_condition : float or None
        None skips the check (the position solver has checked this configuration).

    Returns
    -------
    grad : ndarray, shape (m, nq)
    hess : ndarray, shape (m, nq, nq), or None when ``order < 2``

    Raises
    ------
    ConfigurationError
        If ``∂g/∂f`` is singular (condition number above ``max_condition``).
    """
    g_u, g_p, g_uu, g_up, g_pp = system.second(solution.f, solution.p)
    g_q, g_uq, g_qq = chain_rule(g_p, g_up, g_pp, solution.P, solution.d2p)
    m, nq = g_q.shape
    lu = LUFactors(g_u, g_q) if method == "lu" or max_condition is not None else None
    if max_condition is not None and lu.condition > max_condition:
        raise ConfigurationError(
            f"singular configuration at q = {format_values(solution.q)}: ∂g/∂f has condition number "
            f"{lu.condition:.3g} > {max_condition:.3g} (f = {format_values(solution.f)})"
        )
    if method == "lu":
        grad = -lu.solve(g_q)
        hess = None
        if order >= 2:
            gamma = hessian_right_hand_side(g_uu, g_uq, g_qq, grad)
            hess = -lu.solve(gamma.reshape(m, nq * nq)).reshape(m, nq, nq)
        return grad, hess
    rows = projection_rows(g_u)
    grad = projection_solve(rows, g_u, g_q)
    hess = None
    if order >= 2:
        gamma = hessian_right_hand_side(g_uu, g_uq, g_qq, grad)
        hess = projection_solve(rows, g_u, gamma.reshape(m, nq * nq)).reshape(m, nq, nq)
    return grad, hess
