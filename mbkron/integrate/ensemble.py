"""Ensembles: many trajectories of one model integrated together, each with its own error control.

Monte-Carlo, sensitivity and identification studies integrate the same equations of motion
(Eq. 198) from many initial states. :func:`simulate_ensemble` advances K trajectories at once with an
explicit embedded Runge–Kutta pair (Dormand–Prince 5(4) or DOP853, :mod:`mbkron.numerics.tableaus`):
every stage is **one** batched right-hand-side call for all trajectories still running
(:meth:`mbkron.Model.forward_dynamics` on a (K, nq) batch — one compiled call with the ``compiled``
backend), while each trajectory keeps its own time, step size, error estimate and accept/reject
decision, with the rules of scipy's ``RK45``/``DOP853`` (initial step by Hairer's algorithm, safety
0.9, factors in [0.2, 10], error norm of the method). So each trajectory takes the steps its own
single run takes, up to round-off in the right-hand side, and has the accuracy of that run; nothing
is shared but the batched arithmetic. Output at ``t_eval`` by each method's dense output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.arguments import state_array
from mbkron.core.errors import ConfigurationError
from mbkron.integrate.arguments import check_span, check_t_eval, check_tolerances
from mbkron.integrate.common import rms_norm, select_initial_step
from mbkron.numerics.tableaus import DOP853, DORMAND_PRINCE, Tableau
from mbkron.model import Model

__all__ = ["EnsembleResult", "simulate_ensemble"]

_TABLEAUS = {"RK45": DORMAND_PRINCE, "DOP853": DOP853}
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0
_FAILURES = (ConfigurationError, ArithmeticError, np.linalg.LinAlgError)
"""What a configuration a trajectory reached may raise in the model's evaluation."""


@dataclass(frozen=True)
class EnsembleResult:
    """Trajectories of an ensemble at common output times.

    Attributes
    ----------
    t : ndarray, shape (m,)
        Output times, s.
    q, qd : ndarray, shape (K, m, nq)
        Coordinates and rates of each trajectory; NaN after the time a failed trajectory stopped.
    status : ndarray of int, shape (K,)
        0: reached the end; −1: failed (see ``message``).
    message : tuple of str
        Per trajectory.
    n_steps, nfev : ndarray of int, shape (K,)
        Accepted steps and right-hand-side evaluations of each trajectory.
    """

    t: NDArray[np.float64]
    q: NDArray[np.float64]
    qd: NDArray[np.float64]
    status: NDArray[np.int64]
    message: tuple[str, ...]
    n_steps: NDArray[np.int64]
    nfev: NDArray[np.int64]

    @property
    def success(self) -> bool:
        """Whether every trajectory reached the end."""
        return bool(np.all(self.status == 0))


def simulate_ensemble(
    model: Model,
    t_span: tuple[float, float],
    q0: ArrayLike,
    qd0: ArrayLike | None = None,
    t_eval: ArrayLike | None = None,
    method: str = "DOP853",
    rtol: float = 1e-6,
    atol: float = 1e-8,
    tau: ArrayLike | None = None,
) -> EnsembleResult:
    """Integrate K trajectories of ``model`` from the initial states ``(q0[k], qd0[k])`` together.

    Parameters
    ----------
    model : Model
        Its loads must not depend on time through callables (all trajectories are evaluated in one
        call, each at its own time). A model that solves joint variables from constraints is
        evaluated trajectory by trajectory, each with its own workspace (its Newton continuation
        follows that trajectory; one compiled call per evaluation where the model has a compiled
        right-hand side, :meth:`mbkron.Model.state_kernel`): correct, but without the batched speed.
    t_span : (float, float)
        Start and end time, s; finite, ``t_end > t0``.
    q0 : array_like, shape (K, nq)
    qd0 : array_like, shape (K, nq), optional
        Zero by default.
    t_eval : array_like, shape (m,), optional
        Increasing output times within ``t_span``; default ``(t0, t_end)``.
    method : {"DOP853", "RK45"}
        The Runge–Kutta pair (as scipy's methods of these names).
    rtol, atol : float
        Tolerances on each trajectory's state ``(q, q̇)`` (as for :func:`mbkron.simulate`).
    tau : array_like, shape (nq,) or (K, nq), optional
        Constant generalized actuation, shared or per trajectory.

    Returns
    -------
    EnsembleResult
        Failures of single trajectories (step size underflow, a configuration the model cannot
        evaluate) end those trajectories with ``status = −1``; the others go on.
    """
    tableau = _TABLEAUS.get(method.upper() if isinstance(method, str) else None)
    if tableau is None:
        raise ValueError(f"`method` must be one of {', '.join(_TABLEAUS)}, got {method!r}")
    y0, t0, t_end, output, force = _checked(model, t_span, q0, qd0, t_eval, rtol, atol, tau)
    return _Integrator(model, tableau, force, rtol, atol).run(y0, t0, t_end, output)


def _checked(model, t_span, q0, qd0, t_eval, rtol, atol, tau):
    nq = model.nq
    if np.iscomplexobj(q0) or np.iscomplexobj(qd0) or np.size(q0) == 0:  # the shared check's message
        state_array(q0, "q0", nq, "one row of coordinates per trajectory")
        state_array(qd0, "qd0", nq, "one row of speeds per trajectory")
    q0 = np.atleast_2d(np.asarray(q0, dtype=float))
    if q0.ndim != 2 or q0.shape[1] != nq or not np.isfinite(q0).all():
        raise ValueError(f"`q0` must be finite with shape (K, {nq}) (one row per trajectory), got shape {q0.shape}")
    qd0 = np.zeros_like(q0) if qd0 is None else np.broadcast_to(np.asarray(qd0, dtype=float), q0.shape).copy()
    if not np.isfinite(qd0).all():
        raise ValueError("`qd0` must be finite")
    t0, t_end = check_span(t_span)
    if t_end < t0:
        raise ValueError(f"`t_span` must have t_end > t0 (ensembles integrate forward), got {t_span!r}")
    check_tolerances(rtol, atol, 1)
    output = np.array([t0, t_end]) if t_eval is None else check_t_eval(t_eval, t0, t_end)
    force = None
    if tau is not None:
        try:
            force = np.broadcast_to(np.asarray(tau, dtype=float), q0.shape)
        except ValueError:
            force = None
        if force is None or np.ndim(tau) not in (1, 2) or not np.isfinite(force).all():
            raise ValueError(f"`tau` must be finite with shape ({nq},) or ({q0.shape[0]}, {nq})")
    if any(callable(value) for load in model.loads for value in vars(load).values()):
        raise ValueError("`model` has loads given as functions of time: integrate its trajectories with "
                         "mbkron.simulate")
    return np.concatenate([q0, qd0], axis=1), t0, t_end, output, force


class _Integrator:
    """The per-trajectory step control of scipy's explicit Runge–Kutta methods, for a batch."""

    def __init__(self, model: Model, tableau: Tableau, force, rtol: float, atol: float):
        self.model, self.tableau, self.force, self.rtol, self.atol = model, tableau, force, rtol, atol
        self.nq = model.nq
        self.nfev = None
        self.workspaces = None  # one per trajectory when constraint groups continue along it
        self.kernels = None  # and their compiled right-hand sides, where the model has them

    def rhs(self, rows: NDArray[np.intp], y: NDArray) -> NDArray:
        """``ẏ = (q̇, q̈)`` of the trajectories ``rows`` at states ``y`` (len(rows), 2 nq)."""
        self.nfev[rows] += 1
        nq = self.nq
        tau = None if self.force is None else self.force[rows]
        with np.errstate(all="ignore"):
            if self.workspaces is not None:
                qdd = np.array([self._continued(row, y[k], None if tau is None else tau[k]) for k, row in enumerate(rows)])
            else:
                try:
                    qdd = self.model.forward_dynamics(y[:, :nq], y[:, nq:], tau)
                except _FAILURES:  # one bad trajectory must not stop the others: state by state
                    qdd = np.array([self._one(y[k], None if tau is None else tau[k]) for k in range(len(rows))])
        return np.concatenate([y[:, nq:], qdd], axis=1)

    def _continued(self, row: int, y: NDArray, tau) -> NDArray:
        """``q̈`` of trajectory ``row`` at ``y``, continuing its constraint solution: by its compiled right-hand
        side (:meth:`mbkron.Model.state_kernel`) where it has one, else (or where that declines the state) by
        ``forward_dynamics`` with its workspace."""
        kernel = self.kernels[row]
        if kernel is not None:
            qdd = kernel.accelerations(y)
            if qdd is not None:
                return qdd
            kernel.store()
        qdd = self._one(y, tau, self.workspaces[row])
        if kernel is not None:
            kernel.load()
        return qdd

    def _one(self, y, tau, workspace=None):
        try:
            return self.model.forward_dynamics(y[:self.nq], y[self.nq:], tau, workspace=workspace)
        except _FAILURES:  # reported as the trajectory's failure (a rejected step, then step-size underflow)
            return np.full(self.nq, np.nan)

    def run(self, y0: NDArray, t0: float, t_end: float, output: NDArray) -> EnsembleResult:
        K, n = y0.shape
        tab = self.tableau
        self.nfev = np.zeros(K, dtype=np.int64)
        if any(state is not None for state in self.model.joint_variable_map.new_states()):
            self.workspaces = [self.model.workspace() for _ in range(K)]
            self.kernels = [self.model.state_kernel(workspace, None if self.force is None else self.force[k])
                            for k, workspace in enumerate(self.workspaces)]
        every = np.arange(K)
        y, t = y0.copy(), np.full(K, t0)
        f = self.rhs(every, y)
        h = select_initial_step(lambda t, ys: self.rhs(every, ys), t0, y, f, 1.0, tab.error_order, self.rtol, self.atol,
                                t_end, np.inf)
        out = np.full((K, output.size, n), np.nan)
        out[:, output == t0] = y0[:, None, :]
        next_output = np.searchsorted(output, t0, side="right") * np.ones(K, dtype=np.int64)
        status, messages = np.zeros(K, dtype=np.int64), [""] * K
        n_steps = np.zeros(K, dtype=np.int64)
        rejected = np.zeros(K, dtype=bool)
        running = np.isfinite(f).all(axis=1)
        for k in np.flatnonzero(~running):
            status[k], messages[k] = -1, f"non-finite accelerations at t = {t0:.9g}"
        exponent = -1.0 / (tab.error_order + 1)
        while running.any():
            rows = np.flatnonzero(running)
            min_step = 10 * np.abs(np.nextafter(t[rows], np.inf) - t[rows])
            too_small = rejected[rows] & (h[rows] < min_step)  # as scipy: a fresh step is raised to min_step
            for k in rows[too_small]:
                status[k], messages[k] = -1, f"step size underflow at t = {t[k]:.9g}"
            running[rows[too_small]] = False
            rows, min_step = rows[~too_small], min_step[~too_small]
            if rows.size == 0:
                break
            t_new = np.minimum(t[rows] + np.maximum(h[rows], min_step), t_end)  # the last step ends at t_end exactly
            hr = t_new - t[rows]
            stages, y_new, f_new = self._step(rows, y[rows], f[rows], hr)
            scale = self.atol + np.maximum(np.abs(y[rows]), np.abs(y_new)) * self.rtol
            error = self._error_norm(stages, hr, scale)
            finite = np.isfinite(error) & np.isfinite(f_new).all(axis=1)
            accept = finite & (error < 1)
            with np.errstate(divide="ignore"):
                grow = np.where(error == 0, _MAX_FACTOR, np.minimum(_MAX_FACTOR, _SAFETY * error ** exponent))
                shrink = np.where(finite, np.maximum(_MIN_FACTOR, _SAFETY * error ** exponent), _MIN_FACTOR)
            grow = np.where(rejected[rows], np.minimum(1.0, grow), grow)
            h[rows] = hr * np.where(accept, grow, shrink)
            rejected[rows] = ~accept
            done = rows[accept]
            if done.size:
                self._dense(done, accept, stages, y[done], y_new[accept], f[done], f_new[accept], t[done],
                            hr[accept], output, next_output, out)
                t[done] = t_new[accept]
                y[done], f[done] = y_new[accept], f_new[accept]
                n_steps[done] += 1
                running[done[t[done] >= t_end]] = False
        for k in np.flatnonzero((status == 0) & ~np.isfinite(out[:, -1]).all(axis=1)):
            status[k], messages[k] = -1, messages[k] or f"stopped at t = {t[k]:.9g}"
        messages = [m or "reached the end of the interval" for m in messages]
        return EnsembleResult(output, out[..., :self.nq], out[..., self.nq:], status, tuple(messages), n_steps,
                              self.nfev)

    def _step(self, rows, y, f, h):
        tab = self.tableau
        stages = np.empty((tab.stages + 1,) + y.shape)
        stages[0] = f
        for s in range(1, tab.stages):
            dy = np.tensordot(tab.A[s, :s], stages[:s], axes=1) * h[:, None]
            stages[s] = self.rhs(rows, y + dy)
        y_new = y + h[:, None] * np.tensordot(tab.B, stages[:tab.stages], axes=1)
        stages[-1] = f_new = self.rhs(rows, y_new)
        return stages, y_new, f_new

    def _error_norm(self, stages, h, scale):
        tab = self.tableau
        n = scale.shape[1]
        if tab.E is not None:  # Dormand–Prince: RMS norm of h Σ E_s k_s
            return rms_norm(h[:, None] * np.tensordot(tab.E, stages, axes=1) / scale)
        err5 = np.tensordot(tab.E5, stages, axes=1) / scale
        err3 = np.tensordot(tab.E3, stages, axes=1) / scale
        e5, e3 = (err5 ** 2).sum(axis=1), (err3 ** 2).sum(axis=1)
        denominator = e5 + 0.01 * e3
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where((e5 == 0) & (e3 == 0), 0.0, np.abs(h) * e5 / np.sqrt(denominator * n))

    def _dense(self, done, accept, stages, y_old, y_new, f_old, f_new, t_old, h, output, next_output, out):
        """Write the output times inside each accepted step from the method's dense output."""
        t_new = t_old + h
        last = np.searchsorted(output, t_new, side="right")
        want = last > next_output[done]
        if not want.any():
            return
        tab = self.tableau
        rows, k = done[want], stages[:, accept][:, want]
        y_old, y_new, f_old, f_new, t_old, h = (a[want] for a in (y_old, y_new, f_old, f_new, t_old, h))
        # every (accepted trajectory, output time) pair inside its step, evaluated together
        counts = last[want] - next_output[rows]
        pairs = np.repeat(np.arange(len(rows)), counts)
        times = output[np.concatenate([np.arange(a, b) for a, b in zip(next_output[rows], last[want])])]
        x = ((times - t_old[pairs]) / h[pairs])[:, None]
        if tab.P is not None:  # quartic continuous extension: y_old + h Σ_j (K P)_j x^(j+1)
            Q = np.tensordot(k, tab.P, axes=(0, 0))  # (rows, n, 4)
            powers = x ** np.arange(1, Q.shape[-1] + 1)  # (pairs, 4)
            values = y_old[pairs] + h[pairs, None] * np.einsum("pnj,pj->pn", Q[pairs], powers)
        else:  # DOP853: three more stages, the interpolant of order 7 (Hairer's dop853.f)
            extended = np.concatenate([k, np.empty((3,) + k.shape[1:])])
            for s in range(tab.stages + 1, tab.stages + 4):
                dy = np.tensordot(tab.A[s, :s], extended[:s], axes=1) * h[:, None]
                extended[s] = self.rhs(rows, y_old + dy)
            delta = y_new - y_old
            F = np.empty((7,) + y_old.shape)
            F[0], F[1], F[2] = delta, h[:, None] * f_old - delta, 2 * delta - h[:, None] * (f_new + f_old)
            F[3:] = h[None, :, None] * np.tensordot(tab.D, extended, axes=1)
            values = np.zeros((len(pairs), y_old.shape[1]))
            for j, Fj in enumerate(F[::-1]):
                values += Fj[pairs]
                values *= x if j % 2 == 0 else 1 - x
            values += y_old[pairs]
        at_end = times == (t_old + h)[pairs]
        values[at_end] = y_new[pairs[at_end]]
        out[rows[pairs], np.concatenate([np.arange(a, b) for a, b in zip(next_output[rows], last[want])])] = values
        next_output[rows] = last[want]


