"""Kronecker-product calculus of matrix-valued functions (Eq. 1-37 of the dissertation).

Definition 1 (Eq. 3) lays out the partial derivative of ``A ∈ R^{m×n}`` with respect to
``q ∈ R^r`` as the block matrix

    ∂A/∂q = Σ_i Σ_k E_ik^{m×n} ⊗ ∂A_ik/∂q  ∈  R^{(m·r)×n},

so that row ``i*r + j`` and column ``k`` hold ``∂A_ik/∂q_j`` (the seed prints ``R^{m×n}``: a typo,
see docs/theory.md). mbkron computes with the *natural tensor layout*
``dA[..., j, i, k] = ∂A_ik/∂q_j`` (derivative axes first, then the matrix axes) and converts with
:func:`to_kron` / :func:`from_kron`. Higher derivatives nest the same way: the second derivative
``∂²A/∂q² = ∂(∂A/∂q)/∂q ∈ R^{(m·r·r)×n}`` holds ``∂²A_ik/∂q_j∂q_l`` in row ``(i*r + j)*r + l``.

All indices here are zero-based.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "elementary",
    "commutation_matrix",
    "vec",
    "unvec",
    "to_kron",
    "from_kron",
    "product_derivative",
    "scalar_product_derivative",
    "kronecker_product_derivative",
    "differential",
    "differential_from_transpose",
]


def elementary(i: int, k: int, m: int, n: int) -> NDArray[np.float64]:
    """Elementary matrix ``E_ik^{m×n}``: zero except a one at row ``i``, column ``k`` (Eq. 1).

    Parameters
    ----------
    i, k : int
        Zero-based row and column of the single non-zero element.
    m, n : int
        Shape of the matrix.
    """
    if not (0 <= i < m and 0 <= k < n):
        raise ValueError(f"`(i, k)` = ({i}, {k}) is outside a {m}×{n} matrix")
    out = np.zeros((m, n))
    out[i, k] = 1.0
    return out


def commutation_matrix(m: int, n: int) -> NDArray[np.float64]:
    """The permutation matrix ``U_{m,n} = Σ_i Σ_k E_ik^{m×n} ⊗ E_ki^{n×m}`` (Eq. 2).

    ``U_{m,n} ∈ R^{mn×nm}`` is the commutation matrix: ``U_{m,n} vec(A) = vec(Aᵀ)`` for
    ``A ∈ R^{m×n}`` (column-stacking ``vec``), and for vectors ``a ∈ R^n``, ``b ∈ R^m`` it swaps
    the factors of a Kronecker product, ``U_{m,n} (a ⊗ b) = b ⊗ a``.

    Parameters
    ----------
    m, n : int
        The dimensions (positive).

    Returns
    -------
    ndarray, shape (m*n, n*m)
    """
    if m < 1 or n < 1:
        raise ValueError(f"`m` and `n` must be positive, got m={m}, n={n}")
    i, k = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    # E_ik^{m×n} ⊗ E_ki^{n×m} has its single one at row i*n + k, column k*m + i.
    out = np.zeros((m * n, n * m))
    out[(i * n + k).ravel(), (k * m + i).ravel()] = 1.0
    return out


def vec(A: ArrayLike) -> NDArray:
    """Stack the columns of ``A`` into one column vector (Neudecker's vec).

    Parameters
    ----------
    A : array_like, shape (..., m, n)

    Returns
    -------
    ndarray, shape (..., m*n)
        ``vec(A)[..., k*m + i] = A[..., i, k]``.
    """
    A = np.asarray(A)
    return np.swapaxes(A, -1, -2).reshape(*A.shape[:-2], -1)


def unvec(v: ArrayLike, m: int, n: int) -> NDArray:
    """Inverse of :func:`vec`: the ``m×n`` matrix whose stacked columns are ``v``."""
    v = np.asarray(v)
    if v.shape[-1] != m * n:
        raise ValueError(f"`v` has {v.shape[-1]} entries; expected m*n = {m * n}")
    return np.swapaxes(v.reshape(*v.shape[:-1], n, m), -1, -2)


def to_kron(dA: ArrayLike, order: int = 1) -> NDArray:
    """Convert a natural-layout derivative to the Kronecker layout of Definition 1 (Eq. 3).

    Parameters
    ----------
    dA : array_like, shape (..., r, [r, ...], m, n)
        ``order`` derivative axes followed by the matrix axes:
        ``dA[..., j1, ..., jo, i, k] = ∂^o A_ik / ∂q_j1 ... ∂q_jo``.
    order : int
        Number of derivative axes (1 for ∂A/∂q, 2 for ∂²A/∂q²).

    Returns
    -------
    ndarray, shape (..., m * r**order, n)
        Row ``((i*r + j1)*r + j2)...``, column ``k``.
    """
    dA = np.asarray(dA)
    if order < 1 or dA.ndim < order + 2:
        raise ValueError(f"`dA` of shape {dA.shape} has no {order} derivative axes before (m, n)")
    m, n = dA.shape[-2:]
    rows = m * int(np.prod(dA.shape[-2 - order : -2]))
    return np.moveaxis(dA, -2, -2 - order).reshape(*dA.shape[: -2 - order], rows, n)


def from_kron(K: ArrayLike, r: int, order: int = 1) -> NDArray:
    """Inverse of :func:`to_kron`: Kronecker layout ``(..., m*r**order, n)`` to natural layout.

    Parameters
    ----------
    K : array_like, shape (..., m * r**order, n)
    r : int
        Length of the differentiation vector ``q``.
    order : int
        Derivative order.

    Returns
    -------
    ndarray, shape (..., r, ..., r, m, n)
    """
    K = np.asarray(K)
    block = r**order
    if K.shape[-2] % block:
        raise ValueError(f"`K` has {K.shape[-2]} rows, not a multiple of r**order = {block}")
    m, n = K.shape[-2] // block, K.shape[-1]
    split = K.reshape(*K.shape[:-2], m, *([r] * order), n)
    return np.moveaxis(split, -2 - order, -2)


def product_derivative(A: ArrayLike, dA: ArrayLike, B: ArrayLike, dB: ArrayLike) -> NDArray:
    """Theorem 1 (Eq. 4): ``∂(AB)/∂q = (∂A/∂q) B + (A ⊗ I_r) ∂B/∂q``.

    Parameters
    ----------
    A : array_like, shape (m, n)
    dA : array_like, shape (m*r, n)
        ``∂A/∂q`` in the Kronecker layout.
    B : array_like, shape (n, t)
    dB : array_like, shape (n*r, t)

    Returns
    -------
    ndarray, shape (m*r, t)
    """
    A, dA, B, dB = map(np.asarray, (A, dA, B, dB))
    r = dA.shape[0] // A.shape[0]
    return dA @ B + np.kron(A, np.eye(r)) @ dB


def scalar_product_derivative(a: float, da: ArrayLike, A: ArrayLike, dA: ArrayLike) -> NDArray:
    """Theorem 2 (Eq. 11): ``∂(aA)/∂q = A ⊗ ∂a/∂q + a ∂A/∂q``.

    Parameters
    ----------
    a : float
        The scalar function's value.
    da : array_like, shape (r,) or (r, 1)
        Its gradient.
    A : array_like, shape (m, n)
    dA : array_like, shape (m*r, n)
    """
    da = np.asarray(da, dtype=float).reshape(-1, 1)
    return np.kron(np.asarray(A), da) + a * np.asarray(dA)


def kronecker_product_derivative(
    A: ArrayLike, dA: ArrayLike, C: ArrayLike, dC: ArrayLike
) -> NDArray:
    """Theorem 3 (Eq. 14): ``∂(A⊗C)/∂q = (I_m ⊗ U_{s,r})(∂A/∂q ⊗ C) + A ⊗ ∂C/∂q``.

    Parameters
    ----------
    A : array_like, shape (m, n)
    dA : array_like, shape (m*r, n)
    C : array_like, shape (s, p)
    dC : array_like, shape (s*r, p)

    Returns
    -------
    ndarray, shape (m*s*r, n*p)
    """
    A, dA, C, dC = map(np.asarray, (A, dA, C, dC))
    m, s = A.shape[0], C.shape[0]
    r = dA.shape[0] // m
    return np.kron(np.eye(m), commutation_matrix(s, r)) @ np.kron(dA, C) + np.kron(A, dC)


def differential(dA: ArrayLike, dq: ArrayLike) -> NDArray:
    """Theorem 4a (Eq. 27): ``dA = (I_m ⊗ dqᵀ) ∂A/∂q``.

    Parameters
    ----------
    dA : array_like, shape (m*r, n)
        ``∂A/∂q`` in the Kronecker layout.
    dq : array_like, shape (r,)
        The differential (or a rate, giving ``dA/dt``).
    """
    dA, dq = np.asarray(dA), np.asarray(dq, dtype=float).ravel()
    m = dA.shape[0] // dq.size
    return np.kron(np.eye(m), dq[None, :]) @ dA


def differential_from_transpose(dAT: ArrayLike, dq: ArrayLike) -> NDArray:
    """Theorem 4b (Eq. 28): ``dA = (∂Aᵀ/∂q)ᵀ (I_n ⊗ dq)``.

    Parameters
    ----------
    dAT : array_like, shape (n*r, m)
        ``∂Aᵀ/∂q`` in the Kronecker layout (``A ∈ R^{m×n}``).
    dq : array_like, shape (r,)
    """
    dAT, dq = np.asarray(dAT), np.asarray(dq, dtype=float).ravel()
    n = dAT.shape[0] // dq.size
    return dAT.T @ np.kron(np.eye(n), dq[:, None])
