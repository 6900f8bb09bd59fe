"""The output rows of a run, gathered while it runs: state and accelerations at every accepted step or ``t_eval`` time.

Rows are added during the run, one complete row ``(t, y, q̈)`` at a time, so whatever stops the run
(a failure, an interruption) leaves a consistent trajectory up to the last accepted step. Where the
solver has already evaluated the right-hand side at an accepted step's ``(t, y)`` — the
first-same-as-last (FSAL) slope of the explicit Runge-Kutta methods — its accelerations are reused
(:class:`LastEvaluation`); the other rows, and every interpolated ``t_eval`` state, get their own
evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.integrate import OdeSolver

__all__ = ["LastEvaluation", "Trajectory"]


class LastEvaluation:
    """The last right-hand side the solver evaluated: ``(t, y)`` and the accelerations there."""

    def __init__(self) -> None:
        self.t: float | None = None
        self.y: NDArray | None = None
        self.qdd: NDArray | None = None

    def record(self, t: float, y: NDArray, qdd: NDArray) -> None:
        """Remember an evaluation (``y`` is copied: implicit solvers update their iterates in place)."""
        self.t, self.y, self.qdd = t, y.copy(), qdd

    def at(self, t: float, y: NDArray) -> NDArray | None:
        """The accelerations if the last evaluation was at exactly ``y`` and at ``t``, else None.

        ``t`` may differ by a few units in the last place: scipy's Runge-Kutta solvers evaluate their
        FSAL slope at ``t_old + h`` with ``h = t_new - t_old``, which need not round to ``t_new``.
        """
        if self.t is None or abs(self.t - t) > 4 * np.spacing(abs(t)) or not np.array_equal(self.y, y):
            return None
        return self.qdd


class Trajectory:
    """Output rows ``(t, y, q̈)`` of a run, added as the solver accepts steps.

    Parameters
    ----------
    t_eval : ndarray or None
        Output times (checked: within the span, strictly monotonic); None for every step.
    t0 : float
    y0 : ndarray
        Initial state.
    evaluate : callable (t, y) -> q̈
        Accelerations at an output state the solver did not evaluate.
    """

    def __init__(self, t_eval: NDArray | None, t0: float, y0: NDArray,
                 evaluate: Callable[[float, NDArray], NDArray]) -> None:
        self.t_eval = t_eval
        self.evaluate = evaluate
        self.times: list[float] = []
        self.states: list[NDArray] = []
        self.accelerations: list[NDArray] = []
        self.reached_t, self.reached_y = t0, y0
        self.n_steps = 0
        self.next = 0  # index of the next t_eval time

    def start(self, qdd0: NDArray) -> None:
        """Add the initial state, with its accelerations ``qdd0``, if it is an output row."""
        if self.t_eval is None or self.t_eval[0] == self.reached_t:
            self._add(self.reached_t, self.reached_y, qdd0)
            self.next = 1

    def _add(self, t: float, y: NDArray, qdd: NDArray) -> None:
        self.times.append(t)
        self.states.append(y)
        self.accelerations.append(qdd)

    def accept(self, solver: OdeSolver, last: LastEvaluation) -> None:
        """Record the step ``solver`` has just accepted: its end, or the ``t_eval`` times it passed."""
        t, y = solver.t, solver.y.copy()
        self.reached_t, self.reached_y = t, y
        self.n_steps += 1
        if self.t_eval is None:
            qdd = last.at(t, y)
            self._add(t, y, self.evaluate(t, y) if qdd is None else qdd)
            return
        end = self.next
        while end < self.t_eval.size and solver.direction * (t - self.t_eval[end]) >= 0:
            end += 1
        if end == self.next:
            return
        times = self.t_eval[self.next:end]
        rows = getattr(solver, "output_rows", None)  # a compiled solver's: interpolation and q̈ in one call
        computed = None if rows is None else rows(times)
        if computed is not None and np.isfinite(computed[1]).all():
            for t_out, y_out, qdd in zip(times.tolist(), *computed):
                self._add(t_out, y_out, qdd)
        else:
            states = np.array(solver.dense_output()(times).T)  # one interpolation for the step's output times
            for t_out, y_out in zip(times.tolist(), states):
                self._add(t_out, y_out, self.evaluate(t_out, y_out))
        self.next = end

    def stop(self, solver: OdeSolver, t_stop: float) -> NDArray:
        """Record the step ``solver`` has just taken only up to ``t_stop`` inside it (a terminal event):
        the ``t_eval`` times up to there or, without ``t_eval``, a last row at ``t_stop``. Returns the
        state at ``t_stop``."""
        dense = solver.dense_output()
        y = dense(t_stop)
        self.reached_t, self.reached_y = t_stop, y
        self.n_steps += 1
        if self.t_eval is None:
            self._add(t_stop, y, self.evaluate(t_stop, y))
            return y
        while self.next < self.t_eval.size and solver.direction * (t_stop - self.t_eval[self.next]) >= 0:
            t_out = float(self.t_eval[self.next])
            y_out = dense(t_out)
            self._add(t_out, y_out, self.evaluate(t_out, y_out))
            self.next += 1
        return y

    def arrays(self, n: int, nq: int) -> tuple[NDArray, NDArray, NDArray]:
        """``t (m,)``, ``y (m, n)``, ``q̈ (m, nq)`` of the rows gathered."""
        if not self.times:
            return np.zeros(0), np.zeros((0, n)), np.zeros((0, nq))
        return np.array(self.times), np.array(self.states), np.array(self.accelerations)
