"""A solved configuration of one constraint group (:class:`Solution`), numba-free: what the position solver
(:mod:`mbkron.algorithms.jointvars.solvers`) and the compiled step (:mod:`mbkron.algorithms.jointvars.kernels`) exchange."""

from __future__ import annotations

from dataclasses import dataclass

from numpy.typing import NDArray

__all__ = ["Solution"]


@dataclass(frozen=True, eq=False)
class Solution:
    """A solved configuration of one constraint group.

    Attributes
    ----------
    q : ndarray, shape (nq,)
    p, P, d2p : ndarray
        Inputs, ``∂p/∂q`` and ``∂²p/∂q²`` (None when affine) at ``q``.
    f : ndarray, shape (m,)
        The solved joint variables.
    tangent : ndarray, shape (m, nq)
        ``∇f`` from the last Newton Jacobian (a predictor for continuation, accurate to the
        Newton tolerance; the exact gradient is the compiled step's at ``order`` ≥ 1, Eq. 101-102).
    det_sign : int
        Sign of ``det ∂g/∂f``: constant along a regular branch.
    condition : float
        Condition number of ``∂g/∂f`` relative to the whole constraint Jacobian,
        ``‖[∂g/∂f, ∂g/∂q]‖₁ ‖(∂g/∂f)⁻¹‖₁`` (:class:`mbkron.algorithms.jointvars.solvers.PositionSolver`).
    """

    q: NDArray
    p: NDArray
    P: NDArray
    d2p: NDArray | None
    f: NDArray
    tangent: NDArray
    det_sign: int
    condition: float
