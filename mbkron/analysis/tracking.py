"""Computed-torque tracking of a desired motion and muscle force sharing (seed 002, Section 4-4 C, Eq. 200–201).

**Tracking.** A desired trajectory ``q_des(t)`` (with ``q̇_des``, ``q̈_des``) is followed by
computed-torque control with critically damped PD terms (Eq. 201),

    Q_d = q̈_des − 2K (q̇ − q̇_des) − K² (q − q_des),   K = diag(gains),

and Eq. 200, ``M q̈ − τ = G − N q̇`` with ``q̈ = Q_d``: ``τ = M Q_d + N q̇ − G − Q`` (``Q``: the model's
loads). The closed loop is integrated with :func:`mbkron.simulate` (``tau`` a callable); the error
obeys ``ë + 2K ė + K² e = 0`` up to the integration error.

**Force sharing.** The muscle forces that produce a generalized force ``τ`` at a state: minimise
``Σ a²`` subject to ``R(q) F(a, L(q), L̇(q, q̇)) = τ`` and ``0 ≤ a ≤ 1``, with the full rigid-tendon
Hill force ``F = F_max (a f_L f_V(a) + f_PE) cos φ`` (:func:`mbkron.algorithms.muscles.hill.rigid_tendon_force`,
nonlinear in ``a``: Thelen's ``f_V`` depends on ``a``), by SLSQP started from the bounded least-squares
activations. When even those leave a residual (``τ`` beyond what the muscles can produce there) the
state is reported infeasible with that residual and the least-squares forces. (OpenSim's static
optimisation, :mod:`mbkron.analysis.static_optimization`, drops the passive force and evaluates
``f_V`` at full activation, which makes the forces linear in the controls.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import least_squares, minimize

from mbkron.integrate import simulate
from mbkron.algorithms.muscles.hill import rigid_tendon_force

__all__ = ["FEASIBILITY_TOLERANCE", "ForceSharing", "Tracking", "commanded_acceleration", "computed_torque",
           "share_forces", "track"]

#: Equality residual (N·m) below which a force-sharing state counts as feasible.
FEASIBILITY_TOLERANCE = 1e-6

Desired = Callable[[float | NDArray], tuple[NDArray, NDArray, NDArray]]
"""``t ↦ (q_des, q̇_des, q̈_des)``, each of shape (..., nq)."""


def commanded_acceleration(desired: Desired, gains: ArrayLike, t: float, q: NDArray, qd: NDArray) -> NDArray:
    """``Q_d = q̈_des − 2K (q̇ − q̇_des) − K² (q − q_des)`` (Eq. 201).

    Parameters
    ----------
    desired : callable
        ``t ↦ (q_des, q̇_des, q̈_des)``.
    gains : array_like, shape (nq,) or scalar
        ``K``, 1/s.
    t : float
    q, qd : ndarray, shape (nq,)
    """
    gains = np.asarray(gains, dtype=float)
    q_des, qd_des, qdd_des = desired(t)
    return qdd_des - 2 * gains * (qd - qd_des) - gains**2 * (q - q_des)


def computed_torque(model, desired: Desired, gains: ArrayLike, t: float, q: NDArray, qd: NDArray) -> NDArray:
    """``τ = M Q_d + N q̇ − G − Q`` (Eq. 200 with Eq. 201), shape (nq,)."""
    terms = model.equations_of_motion(q, qd)
    acceleration = commanded_acceleration(desired, gains, t, q, qd)
    return (terms.mass_matrix @ acceleration + terms.velocity_forces - terms.gravity_forces
            - terms.applied_forces)


@dataclass
class Tracking:
    """A tracking run: times, states, desired states and the actuation (seed Fig. 20).

    Attributes
    ----------
    t : ndarray, shape (n,)
    q, qd, qdd, q_desired, qd_desired, tau : ndarray, shape (n, nq)
    message : str
        The integrator's.
    n_steps : int
    """

    t: NDArray
    q: NDArray
    qd: NDArray
    qdd: NDArray
    q_desired: NDArray
    qd_desired: NDArray
    tau: NDArray
    message: str
    n_steps: int

    @property
    def max_error(self) -> NDArray:
        """``max |q − q_des|`` per coordinate."""
        return np.abs(self.q - self.q_desired).max(axis=0)

    @property
    def max_rate_error(self) -> NDArray:
        """``max |q̇ − q̇_des|`` per coordinate."""
        return np.abs(self.qd - self.qd_desired).max(axis=0)


def track(model, desired: Desired, gains: ArrayLike, t_span: tuple[float, float], *, samples: int = 101,
          method: str = "RKF45", rtol: float = 1e-8, atol: float = 1e-10) -> Tracking:
    """Integrate the computed-torque closed loop (Eq. 200–201) from the desired initial state.

    Parameters
    ----------
    model : Model
    desired : callable
        ``t ↦ (q_des, q̇_des, q̈_des)``, vectorised over an array of times (..., nq).
    gains : array_like, shape (nq,) or scalar
        ``K`` of Eq. 201, 1/s (PD gains ``2K`` and ``K²``: critically damped error dynamics).
    t_span : (float, float)
    samples : int
        Output times, evenly spaced over ``t_span``.
    method, rtol, atol
        Passed to :func:`mbkron.simulate`.

    Returns
    -------
    Tracking

    Raises
    ------
    ValueError
        If ``samples < 2``.
    RuntimeError
        If the integration stops early (with the solver's message).
    """
    if samples < 2:
        raise ValueError(f"`samples` must be at least 2, got {samples}")
    t_eval = np.linspace(t_span[0], t_span[1], samples)
    q0, qd0, _ = desired(t_span[0])

    def actuation(t: float, q: NDArray, qd: NDArray) -> NDArray:
        return computed_torque(model, desired, gains, t, q, qd)

    run = simulate(model, tuple(t_span), q0, qd0, method=method, rtol=rtol, atol=atol, t_eval=t_eval, tau=actuation)
    if not run.success:
        raise RuntimeError(f"the tracking run stopped early: {run.message}")
    q_des, qd_des, _ = desired(run.t)
    tau = np.array([actuation(t, q, qd) for t, q, qd in zip(run.t, run.q, run.qd)])
    return Tracking(run.t, run.q, run.qd, run.qdd, q_des, qd_des, tau, run.message, run.n_steps)


@dataclass
class ForceSharing:
    """Force sharing at one state (:func:`share_forces`).

    Attributes
    ----------
    activations, forces : ndarray, shape (n_mt,)
    residual : float
        ``‖R F − τ‖``, N·m.
    feasible : bool
    message : str
    """

    activations: NDArray
    forces: NDArray
    residual: float
    feasible: bool
    message: str


def share_forces(model, q: NDArray, qd: NDArray, tau: NDArray, *,
                 feasibility_tolerance: float = FEASIBILITY_TOLERANCE) -> ForceSharing:
    """Muscle forces that produce ``tau``: minimise ``Σ a²`` s.t. ``R F(a, L, L̇) = τ``, ``0 ≤ a ≤ 1``.

    Parameters
    ----------
    model : Model
        With Hill parameters for every muscle.
    q, qd : ndarray, shape (nq,)
    tau : ndarray, shape (nq,)
        Required generalized forces, N·m.
    feasibility_tolerance : float
        Residual ``‖R F − τ‖`` (N·m) up to which the state counts as feasible.

    Returns
    -------
    ForceSharing
        Infeasible (``feasible`` False, the bounded least-squares forces and their residual) when
        ``tau`` exceeds what the muscles can produce at this state.
    """
    params = [path.hill for path in model.muscle_set.paths]
    arms = model.moment_arms(q)
    lengths = model.muscle_lengths(q)
    velocities = model.muscle_velocities(q, qd)

    def forces(a: NDArray) -> NDArray:
        return rigid_tendon_force(a, lengths, velocities, params)

    def imbalance(a: NDArray) -> NDArray:
        return arms @ forces(a) - tau

    count = len(params)
    fit = least_squares(imbalance, np.full(count, 0.1), bounds=(0.0, 1.0), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    best = float(np.linalg.norm(imbalance(fit.x)))
    if best > feasibility_tolerance:
        return ForceSharing(fit.x, forces(fit.x), best, False,
                            f"infeasible: the muscles cannot produce τ here (least residual {best:.3g} N·m)")
    result = minimize(lambda a: a @ a, fit.x, jac=lambda a: 2 * a, method="SLSQP", bounds=[(0.0, 1.0)] * count,
                      constraints=[{"type": "eq", "fun": imbalance}], options={"ftol": 1e-12, "maxiter": 500})
    residual = float(np.linalg.norm(imbalance(result.x)))
    activations = result.x if result.success and residual <= feasibility_tolerance else fit.x
    residual = float(np.linalg.norm(imbalance(activations)))
    return ForceSharing(activations, forces(activations), residual, True, result.message)
