"""Exceptions raised by the planar DAE reference."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["SingularJacobianError", "ConvergenceError"]


def _format_q(q: ArrayLike) -> str:
    return np.array2string(np.asarray(q, dtype=float), precision=6, separator=", ", max_line_width=1000)


class SingularJacobianError(ValueError):
    """The constraint Jacobian ``C_q`` is rank deficient at a configuration.

    Attributes
    ----------
    q : ndarray
        The configuration.
    t : float
        The time.
    condition : float
        Condition number of ``C_q`` (``inf`` if exactly singular or over-determined).
    """

    def __init__(self, q: ArrayLike, t: float, condition: float, limit: float, detail: str = ""):
        self.q = np.array(q, dtype=float)
        self.t = float(t)
        self.condition = float(condition)
        reason = detail or (
            "the mechanism is at a singular (dead-centre, toggle or bifurcation) configuration "
            "or has redundant constraints"
        )
        super().__init__(
            f"singular constraint Jacobian C_q at t = {self.t:.6g}, q = {_format_q(self.q)}: "
            f"condition number {self.condition:.3e} exceeds {limit:.1e}; {reason}"
        )


class ConvergenceError(RuntimeError):
    """Newton–Raphson iteration for the position constraints ``C(q, t) = 0`` failed.

    Attributes
    ----------
    q : ndarray
        The last iterate.
    t : float
        The time.
    residual : float
        ``‖C(q, t)‖∞`` at the last iterate.
    """

    def __init__(self, q: ArrayLike, t: float, residual: float, iterations: int, tol: float):
        self.q = np.array(q, dtype=float)
        self.t = float(t)
        self.residual = float(residual)
        super().__init__(
            f"Newton iteration for C(q, t) = 0 did not converge at t = {self.t:.6g} after {iterations} "
            f"step(s): ‖C‖∞ = {self.residual:.3e} > tol = {tol:.1e}, last q = {_format_q(self.q)}; "
            "start from a closer guess (e.g. a smaller time step) or check the constraint data"
        )
