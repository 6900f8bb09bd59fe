"""Small dense linear algebra for the compiled kernels: LU with partial pivoting, products by loops.

numba turns ``@`` into a BLAS call, whose overhead dominates for the few-by-few matrices of a
constraint group; :func:`matmul`, :func:`matvec` and :func:`dot` are plain loops.

The factors use LAPACK ``getrf``'s layout (unit lower and upper triangle in one array, 0-based row
interchanges as :func:`scipy.linalg.lu_factor` returns them), so a factorisation made here can be
used by :func:`scipy.linalg.lapack.dgetrs` and the other way round.
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.common import jit

__all__ = ["copy_into", "dot", "lu_factor", "lu_solve", "matmul", "matmul_into", "matvec", "max_abs", "quadratic_forms",
           "sum_scaled"]


@jit
def lu_factor(A, LU, piv):  # pragma: no cover - compiled
    """Partial-pivoting LU of the square ``A`` into ``LU``/``piv``; returns the determinant's sign (0: singular)."""
    n = A.shape[0]
    for r in range(n):
        for c in range(n):
            LU[r, c] = A[r, c]
    sign = 1
    for k in range(n):
        pivot = k
        for r in range(k + 1, n):
            if abs(LU[r, k]) > abs(LU[pivot, k]):
                pivot = r
        piv[k] = pivot
        if LU[pivot, k] == 0.0:
            return 0
        if pivot != k:
            sign = -sign
            for c in range(n):
                LU[k, c], LU[pivot, c] = LU[pivot, c], LU[k, c]
        if LU[k, k] < 0.0:
            sign = -sign
        for r in range(k + 1, n):
            LU[r, k] /= LU[k, k]
            for c in range(k + 1, n):
                LU[r, c] -= LU[r, k] * LU[k, c]
    return sign


@jit
def lu_solve(LU, piv, b):  # pragma: no cover - compiled
    """``A⁻¹ b`` in place for ``b`` of shape (n, k), from :func:`lu_factor`."""
    n = LU.shape[0]
    for k in range(n):
        if piv[k] != k:
            for c in range(b.shape[1]):
                b[k, c], b[piv[k], c] = b[piv[k], c], b[k, c]
    for c in range(b.shape[1]):
        for r in range(n):
            for j in range(r):
                b[r, c] -= LU[r, j] * b[j, c]
        for r in range(n - 1, -1, -1):
            for j in range(r + 1, n):
                b[r, c] -= LU[r, j] * b[j, c]
            b[r, c] /= LU[r, r]


@jit
def matmul_into(A, B, out):  # pragma: no cover - compiled
    """``out = A @ B`` of two matrices, by loops (each entry summed from zero over ``k`` in order)."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            out[i, j] = 0.0
        for k in range(A.shape[1]):
            a = A[i, k]
            for j in range(B.shape[1]):
                out[i, j] += a * B[k, j]


@jit
def matmul(A, B):  # pragma: no cover - compiled
    """``A @ B`` of two matrices, by loops (a new array; :func:`matmul_into`)."""
    result = np.empty((A.shape[0], B.shape[1]))
    matmul_into(A, B, result)
    return result


@jit
def matvec(A, x):  # pragma: no cover - compiled
    """``A @ x`` of a matrix and a vector, by loops (a new array)."""
    result = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            result[i] += A[i, k] * x[k]
    return result


@jit
def dot(a, b):  # pragma: no cover - compiled
    """``a @ b`` of two vectors, by a loop."""
    total = 0.0
    for i in range(a.size):
        total += a[i] * b[i]
    return total


@jit
def quadratic_forms(H, x):  # pragma: no cover - compiled
    """``xᵀ H_i x`` for every matrix ``H_i`` of the stack ``H`` (k, n, n), summed over rows then columns in
    order: the convective terms ``q̇ᵀ H_i q̇`` of joint variables (Eq. 57)."""
    out = np.zeros(H.shape[0])
    for i in range(H.shape[0]):
        value = 0.0
        for k in range(x.shape[0]):
            for m in range(x.shape[0]):
                value += H[i, k, m] * x[k] * x[m]
        out[i] = value
    return out


@jit
def copy_into(destination, source):  # pragma: no cover - compiled
    """``destination[...] = source`` for two C-contiguous arrays of equal size (any shapes), element by
    element: a slice assignment in a kernel makes numba compile its broadcasting and error-message code
    for every caller."""
    flat, values = destination.reshape(destination.size), source.reshape(source.size)
    for i in range(values.size):
        flat[i] = values[i]


# Vector arithmetic by loops with the arithmetic of the numpy expressions they replace (numba compiles each
# array expression in a kernel as a broadcasting loop of its own: seconds of compilation for a few of them).
@jit
def max_abs(x):  # pragma: no cover - compiled
    """``np.abs(x).max()`` of a non-empty 1-D array (NaN where an entry is NaN, as numpy's)."""
    best = abs(x[0])
    for i in range(x.size):
        value = abs(x[i])
        if np.isnan(value):
            return value
        best = max(best, value)
    return best


@jit
def sum_scaled(x, a, y):  # pragma: no cover - compiled
    """``x + a * y`` of two 1-D arrays (a new array); with ``a = ±1`` exactly ``x ± y``."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = x[i] + a * y[i]
    return out
