"""Forward-dynamics simulation: the ODE ``M(q) q̈ + N(q, q̇) q̇ = G(q) + Q + τ`` integrated in time.

Joint constraints and rhythms live in the joint-variable map, so the state is just ``(q, q̇)``:
no multipliers, no constraint drift, no stabilisation parameters. The solver is driven step by step
(as :func:`scipy.integrate.solve_ivp` does internally) so that a failure — a singular configuration,
a branch jump, a non-finite right-hand side, a step-size underflow — stops the run with a clear
message while everything computed up to then is kept in the result.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, OdeSolver, Radau

from mbkron.core.errors import ConfigurationError
from mbkron.integrate.rkf45 import RKF45
from mbkron.integrate.trbdf2 import TRBDF2
from mbkron.model.model import Model

__all__ = ["SimulationResult", "simulate", "METHODS"]

METHODS: dict[str, type[OdeSolver]] = {
    "TRBDF2": TRBDF2, "RKF45": RKF45,
    "RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF, "LSODA": LSODA,
}
"""Solver names accepted by :func:`simulate`: mbkron's and every ``solve_ivp`` method."""

_IMPLICIT = {"TRBDF2", "Radau", "BDF", "LSODA"}


@dataclass
class SimulationResult:
    """A trajectory and how it was computed.

    Attributes
    ----------
    t : ndarray, shape (n,)
    q, qd, qdd : ndarray, shape (n, nq)
    joint_variables : ndarray, shape (n, nj)
        ``f(q)`` along the run.
    success : bool
    status : int
        0: reached the end; -1: stopped by a failure (see ``message``).
    message : str
    nfev, njev, nlu, n_steps : int
        Right-hand-side evaluations, Jacobian evaluations, LU factorisations, accepted steps.
    wall_time : float
        Seconds of integration (the initial checks and a first run's kernel compilation excluded).
    settings : dict
        Method, tolerances and options, for the record.
    """

    t: NDArray[np.float64]
    q: NDArray[np.float64]
    qd: NDArray[np.float64]
    qdd: NDArray[np.float64]
    joint_variables: NDArray[np.float64]
    success: bool
    status: int
    message: str
    nfev: int
    njev: int
    nlu: int
    n_steps: int
    wall_time: float
    settings: dict = field(default_factory=dict)


def _as_generalized_force(value, nq: int, name: str) -> Callable[[float, NDArray, NDArray], NDArray] | None:
    if value is None:
        return None
    if callable(value):
        return value
    constant = np.asarray(value, dtype=float)
    if constant.shape not in ((), (nq,)) or not np.all(np.isfinite(constant)):
        raise ValueError(f"`{name}` must be a finite number, an array of shape ({nq},) or a callable (t, q, qd)")
    return lambda t, q, qd: np.broadcast_to(constant, q.shape)


def _state_jacobian(rhs_batched: Callable, t: float, y: NDArray, nq: int) -> NDArray:
    """Jacobian of ``y' = (q̇, q̈(q, q̇))``: ``[[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]``.

    The lower block by central differences with all ``4 nq`` perturbed states in one batched
    dynamics call; the upper block is exact.
    """
    n = y.size
    h = np.cbrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(y))
    perturbed = np.concatenate([y + np.diag(h), y - np.diag(h)])  # (2n, n)
    accelerations = rhs_batched(t, perturbed)  # (2n, nq)
    lower = ((accelerations[:n] - accelerations[n:]) / (2.0 * h[:, None])).T  # (nq, n)
    J = np.zeros((n, n))
    J[:nq, nq:] = np.eye(nq)
    J[nq:] = lower
    return J


def simulate(
    model: Model,
    t_span: tuple[float, float],
    q0: ArrayLike,
    qd0: ArrayLike | None = None,
    method: str | type[OdeSolver] = "TRBDF2",
    rtol: float = 1e-6,
    atol: float | ArrayLike = 1e-8,
    t_eval: ArrayLike | None = None,
    tau: ArrayLike | Callable | None = None,
    loads: Sequence | None = None,
    max_step: float = np.inf,
    first_step: float | None = None,
    progress: Callable[[float], None] | None = None,
    muscle_forces: ArrayLike | Callable | None = None,
) -> SimulationResult:
    """Integrate the equations of motion (Eq. 198) from ``(q0, q̇0)`` over ``t_span``.

    Parameters
    ----------
    model : Model
    t_span : (float, float)
        Start and end time, s.
    q0 : array_like, shape (nq,)
    qd0 : array_like, shape (nq,), optional
        Zero by default.
    method : str or OdeSolver subclass
        ``"TRBDF2"`` (default), ``"RKF45"``, or any :func:`scipy.integrate.solve_ivp` method name.
        Implicit solvers get the state Jacobian from batched central differences of the dynamics
        (one vectorised call per Jacobian, not ``2n`` separate ones).
    rtol, atol : float
        Tolerances on the state ``(q, q̇)``.
    t_eval : array_like, optional
        Output times (interpolated with the solver's dense output); default: every step.
    tau : array_like or callable (t, q, qd) -> (nq,), optional
        Generalized actuation forces.
    loads : sequence of Load, optional
        ``model.loads`` by default.
    max_step, first_step : float
        Passed to the solver.
    progress : callable (t) -> None, optional
        Called after every accepted step (for progress bars).
    muscle_forces : array_like (n_mt,) or callable (t, q, qd) -> (n_mt,), optional
        Musculotendon tensions, N; they act through the moment arms, ``R(q) F_mt`` (Eq. 198).

    Returns
    -------
    SimulationResult
        Never raises for failures during the run: ``status = -1`` and ``message`` say when, where
        and why, and the trajectory up to there is kept.
    """
    nq = model.nq
    q0 = np.asarray(q0, dtype=float)
    qd0 = np.zeros(nq) if qd0 is None else np.asarray(qd0, dtype=float)
    for label, value in (("q0", q0), ("qd0", qd0)):
        if value.shape != (nq,) or not np.all(np.isfinite(value)):
            raise ValueError(f"`{label}` must be {nq} finite numbers (one per coordinate), got {value.tolist()}")
    solver_class = METHODS.get(method) if isinstance(method, str) else method
    if solver_class is None or not (isinstance(solver_class, type) and issubclass(solver_class, OdeSolver)):
        raise ValueError(f"unknown `method` {method!r}; expected one of {', '.join(METHODS)} or an OdeSolver subclass")
    actuation = _as_generalized_force(tau, nq, "tau")
    t0, t_end = map(float, t_span)
    workspace = model.workspace()  # constraint solvers continue along the run

    def accelerations(t: float, q: NDArray, qd: NDArray, workspace=workspace) -> NDArray:
        force = None if actuation is None else actuation(t, q, qd)
        return model.forward_dynamics(q, qd, force, loads=loads, t=t, muscle_forces=muscle_forces, workspace=workspace)

    def rhs(t: float, y: NDArray) -> NDArray:
        q, qd = y[:nq], y[nq:]
        qdd = accelerations(t, q, qd)
        if not np.all(np.isfinite(qdd)):
            raise ConfigurationError(f"non-finite accelerations at t = {t:.9g}, q = {q.tolist()}")
        return np.concatenate([qd, qdd])

    def rhs_batched(t: float, ys: NDArray) -> NDArray:
        per_state = actuation is not None or callable(muscle_forces)
        return np.stack([accelerations(t, y[:nq], y[nq:]) for y in ys]) if per_state else (
            model.forward_dynamics(ys[:, :nq], ys[:, nq:], loads=loads, t=t, muscle_forces=muscle_forces,
                                   workspace=workspace))

    options: dict = dict(rtol=rtol, atol=atol, max_step=max_step)
    if first_step is not None:
        options["first_step"] = first_step
    name = method if isinstance(method, str) else solver_class.__name__
    if name in _IMPLICIT:
        options["jac"] = lambda t, y: _state_jacobian(rhs_batched, t, y, nq)
    settings = dict(method=name, rtol=rtol, atol=atol, max_step=max_step if np.isfinite(max_step) else None,
                    t_span=(t0, t_end))

    y0 = np.concatenate([q0, qd0])
    times, states = [t0], [y0]
    dense: list = []
    status, message = 0, "reached the end of the interval"
    solver = None
    start = clock.perf_counter()
    try:
        # fail early and clearly on an invalid initial state; this first evaluation (and, for implicit
        # methods, a batched one) also compiles the kernels on a first run, outside the timed integration
        rhs(t0, y0)
        if name in _IMPLICIT:
            rhs_batched(t0, y0[None])
        start = clock.perf_counter()
        solver = solver_class(rhs, t0, y0, t_end, **options)
        while solver.status == "running":
            error = solver.step()
            if solver.status == "failed":
                status, message = -1, (f"the solver stopped at t = {solver.t:.9g}, q = {solver.y[:nq].tolist()}: "
                                       f"{error}")
                break
            times.append(solver.t)
            states.append(solver.y.copy())
            if t_eval is not None:
                dense.append(solver.dense_output())
            if progress is not None:
                progress(solver.t)
    except (ConfigurationError, np.linalg.LinAlgError, FloatingPointError) as failure:
        t_fail = times[-1]
        status, message = -1, f"stopped after t = {t_fail:.9g} (q = {states[-1][:nq].tolist()}): {failure}"
    wall = clock.perf_counter() - start

    t_out, y_out = np.array(times), np.array(states)
    if t_eval is not None:
        t_out, y_out = _interpolate(np.asarray(t_eval, float), times, states, dense, t0)
    qdd = np.zeros((len(t_out), nq))
    output = model.workspace()  # along the output times
    for row, (t, y) in enumerate(zip(t_out, y_out)):
        try:  # the dense output may reach a configuration the steps themselves never evaluated
            qdd[row] = accelerations(t, y[:nq], y[nq:], output)
        except (ConfigurationError, np.linalg.LinAlgError) as failure:
            t_out, y_out, qdd = t_out[:row], y_out[:row], qdd[:row]
            status, message = -1, f"stopped at t = {t:.9g} (q = {y[:nq].tolist()}): {failure}"
            break
    q, qd = y_out[:, :nq], y_out[:, nq:]
    f = model.joint_variables(q, 0)[0] if len(t_out) else np.zeros((0, model.nj))
    return SimulationResult(
        t=t_out, q=q, qd=qd, qdd=qdd, joint_variables=f, success=status == 0, status=status,
        message=message, nfev=getattr(solver, "nfev", 0), njev=getattr(solver, "njev", 0),
        nlu=getattr(solver, "nlu", 0), n_steps=len(times) - 1, wall_time=wall,
        settings=settings,
    )


def _interpolate(t_eval: NDArray, times: list, states: list, dense: list, t0: float) -> tuple[NDArray, NDArray]:
    """States at ``t_eval`` from the steps' dense outputs (only times the run reached)."""
    reached = np.array(times)
    forward = reached[-1] >= t0
    inside = (t_eval >= t0) & (t_eval <= reached[-1]) if forward else (t_eval <= t0) & (t_eval >= reached[-1])
    t_kept = t_eval[inside]
    out = np.empty((t_kept.size, len(states[0])))
    for k, t in enumerate(t_kept):
        if t == t0:
            out[k] = states[0]
            continue
        step = int(np.searchsorted(reached, t, side="left") if forward else np.searchsorted(-reached, -t, side="left"))
        out[k] = dense[max(step - 1, 0)](t)
    return t_kept, out
