"""Rank-checked linear solves with the constraint Jacobian."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.errors import SingularJacobianError

__all__ = ["MAX_CONDITION", "check_rank", "min_norm_solve"]

MAX_CONDITION = 1e10
"""Default largest admissible condition number of ``C_q`` (ratio of extreme singular values)."""


def _svd_checked(A: NDArray[np.float64], q: ArrayLike, t: float, max_condition: float):
    m, n = A.shape
    if m > n:
        raise SingularJacobianError(
            q,
            t,
            np.inf,
            max_condition,
            f"{m} constraint equations for {n} coordinates: the constraints are redundant",
        )
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    condition = s[0] / s[-1] if s[-1] > 0.0 else np.inf
    if condition > max_condition:
        raise SingularJacobianError(q, t, condition, max_condition)
    return U, s, Vt


def check_rank(A: ArrayLike, q: ArrayLike, t: float, max_condition: float = MAX_CONDITION) -> None:
    """Raise unless ``A`` (``C_q``, shape (m, n)) has full row rank with a bounded condition number.

    Parameters
    ----------
    A : array_like, shape (m, n)
        Constraint Jacobian; ``m = 0`` always passes.
    q : array_like
        Configuration, quoted in the error message.
    t : float
        Time, quoted in the error message.
    max_condition : float
        Largest admissible ratio of the extreme singular values.

    Raises
    ------
    SingularJacobianError
    """
    A = np.asarray(A, dtype=float)
    if A.shape[0]:
        _svd_checked(A, q, t, max_condition)


def min_norm_solve(
    A: ArrayLike, b: ArrayLike, q: ArrayLike, t: float, max_condition: float = MAX_CONDITION
) -> NDArray[np.float64]:
    """Minimum-norm solution of ``A x = b`` for a full-row-rank ``A`` (``m ≤ n``).

    For a square ``A`` this is the unique solution; for ``m < n`` it is
    ``x = Aᵀ (A Aᵀ)⁻¹ b``, the correction orthogonal to the null space of ``A`` (used for
    coordinate projection). Computed from the singular value decomposition.

    Parameters
    ----------
    A : array_like, shape (m, n)
    b : array_like, shape (m,)
    q : array_like
        Configuration, quoted in the error message.
    t : float
        Time, quoted in the error message.
    max_condition : float
        Largest admissible condition number of ``A``.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    SingularJacobianError
        If ``m > n`` or the condition number of ``A`` exceeds ``max_condition``.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.shape[0] == 0:
        return np.zeros(A.shape[1])
    U, s, Vt = _svd_checked(A, q, t, max_condition)
    return Vt.T @ ((U.T @ b) / s)
