"""Forward and inverse dynamics of the augmented (index-1) formulation.

The equations of motion with Lagrange multipliers (Shabana, *Computational Dynamics*, 3rd ed.,
Ch. 6 "Constrained dynamics", augmented formulation) are

    [M    C_qᵀ] [q̈]   [Q_e + Q_v]
    [C_q   0  ] [λ ] = [   γ     ],      γ = Q_d − 2α Ċ − β² C,

with ``Ċ = C_q q̇ + C_t``. ``α = β = 0`` is the plain index-1 form (acceleration-level
constraints only, so position and velocity constraints drift); ``α, β > 0`` is Baumgarte's
stabilisation (J. Baumgarte, Comput. Methods Appl. Mech. Eng. 1 (1972) 1–16), which makes the
constraint violation obey ``C̈ + 2α Ċ + β² C = 0``. Alternatively (or in addition)
:func:`simulate` projects the state onto ``C = 0`` and ``Ċ = 0`` after every output step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import solve_ivp

from validation.dae.assembly import solve_position, solve_velocity
from validation.dae.linalg import MAX_CONDITION, check_rank, min_norm_solve
from validation.dae.model import PlanarSystem
from validation.dae.trajectory import Trajectory

__all__ = ["Baumgarte", "accelerations", "inverse_dynamics", "project", "simulate"]


@dataclass(frozen=True)
class Baumgarte:
    """Baumgarte stabilisation parameters: ``γ = Q_d − 2α Ċ − β² C``.

    The violation then obeys ``C̈ + 2α Ċ + β² C = 0``: ``β`` (1/s) is the natural frequency
    and ``α / β`` the damping ratio of the constraint error (``α = β``: critically damped).
    Useful values are a few times the mechanism's highest natural frequency, small enough not
    to make the ODE stiff for an explicit integrator.

    Parameters
    ----------
    alpha : float
        Velocity feedback gain in 1/s (≥ 0), default 10.
    beta : float
        Position feedback gain in 1/s (≥ 0), default 10.
    """

    alpha: float = 10.0
    beta: float = 10.0

    def __post_init__(self) -> None:
        for field in ("alpha", "beta"):
            value = getattr(self, field)
            if not (np.isfinite(value) and value >= 0.0):
                raise ValueError(f"Baumgarte `{field}` must be finite and ≥ 0, got {value!r}")


def accelerations(
    system: PlanarSystem,
    q: ArrayLike,
    qd: ArrayLike,
    t: float = 0.0,
    *,
    baumgarte: Baumgarte | None = None,
    max_condition: float = MAX_CONDITION,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Solve the augmented equations for accelerations and multipliers at one state.

    Parameters
    ----------
    system : PlanarSystem
    q, qd : array_like, shape (n,)
    t : float
    baumgarte : Baumgarte, optional
        Stabilisation gains; none by default.
    max_condition : float
        Largest admissible condition number of ``C_q``.

    Returns
    -------
    qdd : ndarray, shape (n,)
    lam : ndarray, shape (m,)
        Multipliers; ``−C_qᵀ λ`` are the generalized constraint forces.

    Raises
    ------
    SingularJacobianError
        If ``C_q`` is rank deficient (the augmented matrix is then singular).
    """
    q, qd = system.as_coordinates(q), system.as_coordinates(qd, "qd")
    n, m = system.n_coordinates, system.n_constraints
    Cq = system.jacobian(q, t)
    check_rank(Cq, q, t, max_condition)
    gamma = system.gamma(q, qd, t)
    if baumgarte is not None:
        C_dot = Cq @ qd + system.partial_t(t)
        gamma = gamma - 2.0 * baumgarte.alpha * C_dot - baumgarte.beta**2 * system.residual(q, t)
    A = np.zeros((n + m, n + m))
    A[:n, :n] = system.mass_matrix(q)
    A[:n, n:] = Cq.T
    A[n:, :n] = Cq
    rhs = np.concatenate([system.applied_forces(q, qd, t) + system.quadratic_velocity_forces(q, qd), gamma])
    x = np.linalg.solve(A, rhs)
    return x[:n], x[n:]


def inverse_dynamics(
    system: PlanarSystem,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    t: float = 0.0,
    *,
    max_condition: float = MAX_CONDITION,
) -> NDArray[np.float64]:
    """Multipliers of a kinematically driven system from ``C_qᵀ λ = Q_e + Q_v − M q̈``.

    For a kinematically determined system (``m = n``) the motion is fixed by the constraints
    and the multipliers of the driving constraints are the actuator efforts needed to produce
    it (inverse dynamics).

    Parameters
    ----------
    system : PlanarSystem
        With as many constraint equations as coordinates.
    q, qd, qdd : array_like, shape (n,)
        A kinematically consistent state.
    t : float
    max_condition : float

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    ValueError
        If ``m ≠ n``.
    SingularJacobianError
    """
    q, qd, qdd = system.as_coordinates(q), system.as_coordinates(qd, "qd"), system.as_coordinates(qdd, "qdd")
    if system.n_constraints != system.n_coordinates:
        raise ValueError(
            f"inverse dynamics needs a kinematically determined system: {system.n_constraints} constraint "
            f"equations for {system.n_coordinates} coordinates"
        )
    rhs = (
        system.applied_forces(q, qd, t)
        + system.quadratic_velocity_forces(q, qd)
        - system.mass_matrix(q) @ qdd
    )
    return min_norm_solve(system.jacobian(q, t).T, rhs, q, t, max_condition)


def project(
    system: PlanarSystem,
    q: ArrayLike,
    qd: ArrayLike,
    t: float = 0.0,
    *,
    tol: float = 1e-12,
    max_iter: int = 20,
    max_condition: float = MAX_CONDITION,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Coordinate projection: nearest state on ``C(q, t) = 0`` and ``C_q q̇ + C_t = 0``.

    Positions by Gauss–Newton with minimum-norm steps (:func:`solve_position`), then
    velocities by the minimum-norm correction (:func:`solve_velocity`) at the projected
    positions.

    Returns
    -------
    q, qd : ndarray, shape (n,)
    """
    q = solve_position(system, q, t, tol=tol, max_iter=max_iter, max_condition=max_condition)
    return q, solve_velocity(system, q, t, qd, max_condition=max_condition)


def simulate(
    system: PlanarSystem,
    q0: ArrayLike,
    qd0: ArrayLike,
    times: ArrayLike,
    *,
    method: str = "DOP853",
    rtol: float = 1e-9,
    atol: float = 1e-12,
    baumgarte: Baumgarte | None = None,
    projection: bool = False,
    projection_tol: float = 1e-12,
    consistency_tol: float = 1e-8,
    max_condition: float = MAX_CONDITION,
    **solver_options,
) -> Trajectory:
    """Integrate the augmented equations of motion with :func:`scipy.integrate.solve_ivp`.

    Parameters
    ----------
    system : PlanarSystem
    q0, qd0 : array_like, shape (n,)
        Consistent initial state (see :func:`solve_position`, :func:`solve_velocity`).
    times : array_like, shape (n_t,)
        Increasing output times; the first is the initial time.
    method, rtol, atol, **solver_options
        Passed to ``solve_ivp``.
    baumgarte : Baumgarte, optional
        Baumgarte stabilisation gains; none by default.
    projection : bool
        If true, integrate from one output time to the next and project the state there
        (:func:`project`) before continuing; ``info["projection_corrections"]`` (n_t, 2)
        holds the norms of the position and velocity corrections applied.
    projection_tol : float
        Position tolerance of the projection.
    consistency_tol : float
        Largest admissible ``‖C‖∞`` and ``‖C_q q̇ + C_t‖∞`` of the initial state.
    max_condition : float
        Largest admissible condition number of ``C_q``.

    Returns
    -------
    Trajectory
        States, accelerations and multipliers (with the same stabilisation) at ``times``;
        ``info`` holds ``nfev`` and ``method``.

    Raises
    ------
    ValueError
        For an inconsistent initial state or bad ``times``.
    RuntimeError
        If the integrator fails.
    SingularJacobianError
        If the mechanism reaches a singular configuration.
    """
    q0, qd0 = system.as_coordinates(q0, "q0"), system.as_coordinates(qd0, "qd0")
    times = np.asarray(times, dtype=float)
    if times.ndim != 1 or times.size < 2 or np.any(np.diff(times) <= 0.0):
        raise ValueError("`times` must be a 1-D array of at least two strictly increasing values")
    t0 = times[0]
    C0 = np.max(np.abs(system.residual(q0, t0)), initial=0.0)
    Cd0 = np.max(np.abs(system.jacobian(q0, t0) @ qd0 + system.partial_t(t0)), initial=0.0)
    if C0 > consistency_tol or Cd0 > consistency_tol:
        raise ValueError(
            f"inconsistent initial state at t = {t0}: ‖C‖∞ = {C0:.3e}, ‖C_q q̇ + C_t‖∞ = {Cd0:.3e} "
            f"(tolerance {consistency_tol:.1e}); assemble it with solve_position and solve_velocity"
        )
    n = system.n_coordinates

    def rhs(t: float, y: NDArray[np.float64]) -> NDArray[np.float64]:
        qdd, _ = accelerations(system, y[:n], y[n:], t, baumgarte=baumgarte, max_condition=max_condition)
        return np.concatenate([y[n:], qdd])

    def integrate(t_eval: NDArray[np.float64], y0: NDArray[np.float64]):
        sol = solve_ivp(
            rhs,
            (t_eval[0], t_eval[-1]),
            y0,
            method=method,
            t_eval=t_eval,
            rtol=rtol,
            atol=atol,
            **solver_options,
        )
        if not sol.success:
            raise RuntimeError(
                f"solve_ivp ({method}) failed at t = {sol.t[-1] if sol.t.size else t_eval[0]}: {sol.message}"
            )
        return sol

    info: dict = {"method": method}
    if not projection:
        sol = integrate(times, np.concatenate([q0, qd0]))
        Y = sol.y.T
        info["nfev"] = sol.nfev
    else:
        Y = np.empty((times.size, 2 * n))
        Y[0] = np.concatenate([q0, qd0])
        corrections = np.zeros((times.size, 2))
        nfev = 0
        for k in range(1, times.size):
            sol = integrate(times[k - 1 : k + 1], Y[k - 1])
            nfev += sol.nfev
            y = sol.y[:, -1]
            q, qd = project(system, y[:n], y[n:], times[k], tol=projection_tol, max_condition=max_condition)
            corrections[k] = np.linalg.norm(q - y[:n]), np.linalg.norm(qd - y[n:])
            Y[k] = np.concatenate([q, qd])
        info["nfev"] = nfev
        info["projection_corrections"] = corrections

    q, qd = Y[:, :n], Y[:, n:]
    solved = [
        accelerations(system, *state, baumgarte=baumgarte, max_condition=max_condition)
        for state in zip(q, qd, times)
    ]
    qdd = np.array([s[0] for s in solved])
    lam = np.array([s[1] for s in solved]).reshape(times.size, system.n_constraints)
    return Trajectory(system, times, q, qd, qdd, lam, info)
