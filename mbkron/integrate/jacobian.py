"""Forward-difference Jacobians for implicit ODE solvers, with column grouping for sparse patterns.

:func:`finite_difference_jacobian` approximates ``J = df/dy`` of a vectorized right-hand side
by forward differences, perturbing every column of a group in one evaluation;
:func:`group_columns` forms the groups for a sparsity structure (Curtis, Powell and Reid [1]_).
The step of column ``j`` is ``h_j = factor_j * max(|y_j|, threshold_j)``, directed as
``f_j`` (along the flow); ``factor`` is adapted from call to call so that the differences stay
well above the round-off in ``f`` (about ``eps*|f|``) and well below ``|f|`` — the rule of
Shampine and Reichelt's ``numjac`` [2]_, without its re-evaluation of lost columns.

References
----------
.. [1] A. R. Curtis, M. J. D. Powell and J. K. Reid, "On the estimation of sparse Jacobian
       matrices", J. Inst. Math. Appl. 13, pp. 117-120, 1974.
.. [2] L. F. Shampine and M. W. Reichelt, "The MATLAB ODE suite", SIAM J. Sci. Comput.
       18(1), pp. 1-22, 1997.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import csc_matrix, issparse

__all__ = ["finite_difference_jacobian", "group_columns"]

EPS = np.finfo(float).eps
DIFF_SMALL = EPS**0.75
"""A column whose largest difference is below ``DIFF_SMALL*|f|`` gets a 10 times larger factor."""
DIFF_BIG = EPS**0.25
"""A column whose largest difference is above ``DIFF_BIG*|f|`` gets a 10 times smaller factor."""
MIN_FACTOR = 1e3 * EPS
"""Smallest relative step."""
MAX_FACTOR = 1e-2
"""Largest relative step (a column that is zero would otherwise grow its step without bound)."""


def group_columns(structure: ArrayLike | Any) -> NDArray[np.intp]:
    """Group the columns of a sparsity structure so that no two columns of a group share a row.

    Greedy sequential algorithm of Curtis, Powell and Reid: each column, in order, joins the
    first group none of whose columns has a nonzero in the rows of this column.

    Parameters
    ----------
    structure : array_like or sparse matrix, shape (m, n)
        Nonzero entries mark the entries of the Jacobian that may be nonzero.

    Returns
    -------
    ndarray of int, shape (n,)
        Group index of every column, from 0 to ``n_groups - 1``.

    Raises
    ------
    ValueError
        If `structure` is not two-dimensional.
    """
    if not issparse(structure) and np.ndim(structure) != 2:
        raise ValueError(f"`structure` must be 2-dimensional, got shape {np.shape(structure)}.")
    pattern = csc_matrix(structure if issparse(structure) else np.asarray(structure) != 0)
    pattern.eliminate_zeros()
    m, n = pattern.shape
    groups = np.empty(n, dtype=np.intp)
    occupied = np.zeros((0, m), dtype=bool)  # occupied[g, i]: a column of group g has row i
    for j in range(n):
        rows = pattern.indices[pattern.indptr[j]:pattern.indptr[j + 1]]
        free = np.flatnonzero(~occupied[:, rows].any(axis=1))
        if free.size:
            groups[j] = free[0]
        else:
            groups[j] = occupied.shape[0]
            occupied = np.vstack([occupied, np.zeros((1, m), dtype=bool)])
        occupied[groups[j], rows] = True
    return groups


def _at_largest_per_column(
    cols: NDArray[np.intp], magnitudes: NDArray[np.float64], other: NDArray[np.float64], n: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Largest of ``magnitudes`` in each of ``n`` columns and ``other`` at the same entry.

    Entries are given as parallel arrays with column indices ``cols``; a column without
    entries gets zeros.
    """
    order = np.lexsort((magnitudes, cols))  # by column, the largest magnitude last
    last = order[np.diff(cols[order], append=-1) != 0]
    largest, at_largest = np.zeros(n), np.zeros(n)
    largest[cols[last]] = magnitudes[last]
    at_largest[cols[last]] = other[last]
    return largest, at_largest


def finite_difference_jacobian(
    fun: Callable[[float, NDArray[np.float64]], NDArray[np.float64]],
    t: float,
    y: NDArray[np.float64],
    f: NDArray[np.float64],
    threshold: float | NDArray[np.float64],
    factor: NDArray[np.float64] | None = None,
    sparsity: tuple[Any, NDArray[np.intp]] | None = None,
) -> tuple[NDArray[np.float64] | csc_matrix, NDArray[np.float64]]:
    """Forward-difference Jacobian ``df/dy`` at ``(t, y)``, one evaluation per column group.

    Column ``j`` is ``(f(t, y + h_j e_j) - f(t, y)) / h_j``; columns of one group are
    perturbed together, which is exact when no two of them share a row of the structure.
    The error of an entry is ``h_j/2 |d2f_i/dy_j2|`` (truncation) plus about
    ``2 eps |f_i| / h_j`` (round-off).

    Parameters
    ----------
    fun : callable
        Vectorized right-hand side: ``fun(t, Y)`` with ``Y`` of shape ``(n, k)`` returns the
        ``k`` derivatives as columns of an ``(n, k)`` array.
    t : float
        Time.
    y, f : ndarray, shape (n,)
        State and ``f(t, y)``.
    threshold : float or ndarray, shape (n,)
        Smallest scale of ``y`` for the step (typically the solver's ``atol``); where both
        ``y_j`` and the threshold are zero the step is ``factor_j`` itself.
    factor : ndarray, shape (n,), optional
        Relative steps, clipped to ``[1e3 eps, 1e-2]``; default ``sqrt(eps)``. Pass the
        returned factor to the next call.
    sparsity : (structure, groups), optional
        Sparsity structure of the Jacobian (array or sparse matrix, shape (n, n)) and its
        column groups from :func:`group_columns`; the Jacobian is then returned as a CSC
        matrix with the entries of the structure.

    Returns
    -------
    J : ndarray or csc_matrix, shape (n, n)
        Jacobian approximation.
    factor : ndarray, shape (n,)
        Relative steps for the next call: ten times larger for columns whose largest
        difference was below ``eps**0.75 |f|``, ten times smaller above ``eps**0.25 |f|``,
        within ``[1e3 eps, 1e-2]``.
    """
    n = y.size
    factor = np.clip(np.sqrt(EPS) if factor is None else factor, MIN_FACTOR, MAX_FACTOR)
    factor = np.broadcast_to(factor, (n,)).copy()
    magnitude = np.maximum(threshold, np.abs(y))
    magnitude[magnitude == 0] = 1.0  # y_j = 0 with a zero threshold: an absolute step
    direction = np.where(np.real(f) >= 0, 1.0, -1.0)  # step along the flow
    h = (y + direction * factor * magnitude) - y  # exactly representable, nonzero
    # (factor >= 1e3 eps, so the step is never lost in y's round-off)

    if sparsity is None:
        rows, cols = np.indices((n, n)).reshape(2, -1)
        groups = np.arange(n)
    else:
        structure, groups = sparsity
        rows, cols = csc_matrix(structure).nonzero()
    perturbations = np.zeros((n, int(groups.max(initial=-1)) + 1))
    perturbations[np.arange(n), groups] = h
    diff = fun(t, y[:, None] + perturbations) - f[:, None]  # (n, n_groups)
    entries = diff[rows, groups[cols]]  # f_i(y + h_j e_j) - f_i(y) for the (i, j) wanted

    # The largest difference of each column, and the size of f in its row, steer the factor.
    f_scale = np.maximum(np.abs(f[rows]), np.abs(f[rows] + entries))
    largest, scale = _at_largest_per_column(cols, np.abs(entries), f_scale, n)
    factor[largest < DIFF_SMALL * scale] *= 10
    factor[largest > DIFF_BIG * scale] /= 10
    factor = np.clip(factor, MIN_FACTOR, MAX_FACTOR)

    values = entries / h[cols]
    if sparsity is None:
        return values.reshape(n, n), factor
    return csc_matrix((values, (rows, cols)), shape=(n, n)), factor
