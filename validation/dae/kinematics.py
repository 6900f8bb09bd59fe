"""Kinematic analysis of kinematically driven systems (as many constraints as coordinates).

At each time the position equations ``C(q, t) = 0`` are solved by Newton–Raphson from a
Taylor predictor built on the previous solution, then the velocity equations
``C_q q̇ = −C_t`` and the acceleration equations ``C_q q̈ = Q_d`` (Shabana, *Computational
Dynamics*, 3rd ed., Ch. 3 "Kinematics"). The multipliers follow by inverse dynamics.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.assembly import solve_position, solve_velocity
from validation.dae.dynamics import inverse_dynamics
from validation.dae.linalg import MAX_CONDITION, min_norm_solve
from validation.dae.model import PlanarSystem
from validation.dae.trajectory import Trajectory

__all__ = ["solve_acceleration", "kinematic_analysis"]


def solve_acceleration(
    system: PlanarSystem, q: ArrayLike, qd: ArrayLike, t: float = 0.0, *, max_condition: float = MAX_CONDITION
) -> NDArray[np.float64]:
    """Accelerations from ``C_q q̈ = Q_d`` (minimum-norm if the system is not fully driven).

    Parameters
    ----------
    system : PlanarSystem
    q, qd : array_like, shape (n,)
        A consistent configuration and velocity.
    t : float
    max_condition : float

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    SingularJacobianError
    """
    q, qd = system.as_coordinates(q), system.as_coordinates(qd, "qd")
    return min_norm_solve(system.jacobian(q, t), system.gamma(q, qd, t), q, t, max_condition)


def kinematic_analysis(
    system: PlanarSystem,
    q_guess: ArrayLike,
    times: ArrayLike,
    *,
    tol: float = 1e-12,
    max_iter: int = 50,
    max_condition: float = MAX_CONDITION,
) -> Trajectory:
    """Positions, velocities, accelerations and multipliers of a driven mechanism at given times.

    Parameters
    ----------
    system : PlanarSystem
        Kinematically determined: ``m = n`` (driving constraints included).
    q_guess : array_like, shape (n,)
        Approximate configuration at ``times[0]``; it selects the assembly branch.
    times : array_like, shape (n_t,)
        Increasing times; small steps keep Newton on the same branch.
    tol : float
        Newton tolerance on ``‖C‖∞``.
    max_iter : int
        Newton iterations per time.
    max_condition : float
        Largest admissible condition number of ``C_q``.

    Returns
    -------
    Trajectory
        ``lam`` holds the inverse-dynamics multipliers (driving efforts, joint reactions).

    Raises
    ------
    ValueError
        If ``m ≠ n``.
    ConvergenceError, SingularJacobianError
        From the position solution (e.g. at a dead-centre configuration).
    """
    times = np.atleast_1d(np.asarray(times, dtype=float))
    if times.ndim != 1 or np.any(np.diff(times) <= 0.0):
        raise ValueError("`times` must be a 1-D array of strictly increasing values")
    n, m = system.n_coordinates, system.n_constraints
    if m != n:
        raise ValueError(
            f"kinematic analysis needs a kinematically determined system, but there are {m} constraint "
            f"equations for {n} coordinates ({n - m} undriven degrees of freedom); add driving constraints"
            if m < n
            else f"kinematic analysis: {m} constraint equations for {n} coordinates (redundant constraints)"
        )
    Q = np.empty((times.size, n))
    Qd = np.empty_like(Q)
    Qdd = np.empty_like(Q)
    lam = np.empty((times.size, m))
    q = np.asarray(q_guess, dtype=float)
    for k, t in enumerate(times):
        if k:
            dt = t - times[k - 1]
            q = Q[k - 1] + Qd[k - 1] * dt + 0.5 * Qdd[k - 1] * dt**2
        Q[k] = solve_position(system, q, t, tol=tol, max_iter=max_iter, max_condition=max_condition)
        Qd[k] = solve_velocity(system, Q[k], t, max_condition=max_condition)
        Qdd[k] = solve_acceleration(system, Q[k], Qd[k], t, max_condition=max_condition)
        lam[k] = inverse_dynamics(system, Q[k], Qd[k], Qdd[k], t, max_condition=max_condition)
    return Trajectory(system, times, Q, Qd, Qdd, lam, {})
