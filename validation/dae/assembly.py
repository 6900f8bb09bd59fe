"""Position- and velocity-level constraint solutions: assembly and coordinate projection.

Both use the minimum-norm correction ``Δ = C_q⁺ r`` (the unique solution when ``C_q`` is
square, the correction orthogonal to the constraint manifold's tangent space otherwise), so
the same routines serve kinematic analysis (Newton–Raphson, Shabana, *Computational
Dynamics*, 3rd ed., Ch. 3) and the projection of integrated states onto ``C = 0`` and
``Ċ = 0``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.errors import ConvergenceError
from validation.dae.linalg import MAX_CONDITION, min_norm_solve
from validation.dae.model import PlanarSystem

__all__ = ["solve_position", "solve_velocity"]


def solve_position(
    system: PlanarSystem,
    q_guess: ArrayLike,
    t: float = 0.0,
    *,
    tol: float = 1e-12,
    max_iter: int = 50,
    max_condition: float = MAX_CONDITION,
) -> NDArray[np.float64]:
    """Solve ``C(q, t) = 0`` by Newton–Raphson (Gauss–Newton, minimum-norm steps if ``m < n``).

    ``q ← q − C_q⁺ C`` until ``‖C‖∞ ≤ tol``. With ``m < n`` (a system with free degrees of
    freedom) this assembles a configuration near ``q_guess``, i.e. projects it onto ``C = 0``.

    Parameters
    ----------
    system : PlanarSystem
    q_guess : array_like, shape (n,)
        Starting configuration (e.g. the solution at the previous time).
    t : float
        Time.
    tol : float
        Convergence tolerance on ``‖C‖∞`` (m and rad).
    max_iter : int
        Maximum number of Newton steps.
    max_condition : float
        Largest admissible condition number of ``C_q``.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    ConvergenceError
        If ``‖C‖∞ > tol`` after ``max_iter`` steps.
    SingularJacobianError
        If ``C_q`` is rank deficient at an iterate.
    """
    q = system.as_coordinates(q_guess, "q_guess").copy()
    for iteration in range(max_iter + 1):
        C = system.residual(q, t)
        error = np.max(np.abs(C), initial=0.0)
        if error <= tol:
            return q
        if iteration < max_iter:
            q -= min_norm_solve(system.jacobian(q, t), C, q, t, max_condition)
    raise ConvergenceError(q, t, error, max_iter, tol)


def solve_velocity(
    system: PlanarSystem,
    q: ArrayLike,
    t: float = 0.0,
    qd_guess: ArrayLike | None = None,
    *,
    max_condition: float = MAX_CONDITION,
) -> NDArray[np.float64]:
    """Velocities satisfying ``C_q q̇ = −C_t``.

    Without ``qd_guess`` this is the minimum-norm solution (the unique one for a kinematically
    determined system); with it, the guess plus the minimum-norm correction, i.e. the
    orthogonal projection of ``qd_guess`` onto the constraint-consistent velocities.

    Parameters
    ----------
    system : PlanarSystem
    q : array_like, shape (n,)
        A configuration satisfying ``C(q, t) = 0``.
    t : float
    qd_guess : array_like, shape (n,), optional
    max_condition : float

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    SingularJacobianError
    """
    q = system.as_coordinates(q)
    Cq = system.jacobian(q, t)
    rhs = -system.partial_t(t)
    if qd_guess is None:
        return min_norm_solve(Cq, rhs, q, t, max_condition)
    qd = system.as_coordinates(qd_guess, "qd_guess")
    return qd + min_norm_solve(Cq, rhs - Cq @ qd, q, t, max_condition)
