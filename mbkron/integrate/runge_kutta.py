"""scipy's explicit Runge–Kutta solvers with compiled steps, several per call, for a compiled right-hand side.

A model whose right-hand side ``y' = (q̇, q̈)`` is one compiled call (:meth:`mbkron.Model.state_kernel`: a
model with one constraint group, the continuation of its Newton solve held by the kernel) run by scipy's
``RK23``, ``RK45`` or ``DOP853`` pays Python for every stage: scipy's step (a dozen small numpy operations per
stage) and the call into the kernel, more than the compiled evaluation itself (issue 29: 29–36 µs per
evaluation inside ``simulate`` against 14 µs for the kernel on Andrews' squeezer). Here the steps are
:func:`mbkron.numerics.runge_kutta.adaptive_step` (scipy's ``_step_impl``, decision for decision, with the same
tableau and constants), up to :data:`STEPS_PER_CALL` of them in one call
(:func:`~mbkron.numerics.runge_kutta.adaptive_steps`: each call converts the kernel's ~80 arrays, about 8 µs),
handed out one at a time; DOP853's dense-output stages are one call of
:func:`~mbkron.numerics.runge_kutta.extra_stages`, and the accelerations at a step's output times one call.
The solvers are scipy's classes: their state, dense output and step-size control are scipy's, so a run can
alternate between the compiled steps and scipy's own. A step the kernel declines (its right-hand side
declines a state: a constraint solve it leaves to Python) is redone by scipy's ``_step_impl`` with the
Python route of the same right-hand side, which reports the reason if it fails too.

scipy's solvers driving the same right-hand side are the oracle (``tests/test_compiled_runge_kutta.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import DOP853, RK23, RK45, DenseOutput

from mbkron.numerics import runge_kutta as kernel
from mbkron.integrate.common import StepRuns
from mbkron.algorithms.dynamics.group import EXTRA_STAGES, RUNGE_KUTTA_STEP

__all__ = ["COMPILED", "STEPS_PER_CALL", "CompiledDOP853", "CompiledRK23", "CompiledRK45", "compile_steps"]

_EMPTY = np.zeros(0)


def _contiguous(values) -> NDArray[np.float64]:
    return np.ascontiguousarray(values, dtype=float)


def _tableau(solver_class: type) -> tuple:
    """``(A, B, C, E, E3, E5, error_exponent, n_stages)`` of a scipy ``RungeKutta`` class as
    :func:`mbkron.numerics.runge_kutta.adaptive_step` takes them (``E`` empty for DOP853, ``E3``, ``E5`` for the
    others)."""
    stages = solver_class.n_stages
    dop853 = issubclass(solver_class, DOP853)
    return (_contiguous(solver_class.A[:stages, :stages]), _contiguous(solver_class.B), _contiguous(solver_class.C),
            _EMPTY if dop853 else _contiguous(solver_class.E), _contiguous(solver_class.E3) if dop853 else _EMPTY,
            _contiguous(solver_class.E5) if dop853 else _EMPTY, -1.0 / (solver_class.error_estimator_order + 1),
            stages)


def _derivatives(state_kernel: Any, tableau: tuple, times: NDArray, states: NDArray) -> NDArray | None:
    """The right-hand side at the rows of ``states`` (k, n) at ``times`` in one compiled call
    (:meth:`mbkron.algorithms.dynamics.forward.StateKernel.derivative_rows`, with ``tableau`` the solver's: one
    compilation for the steps and these); None where the kernel declines a row."""
    return state_kernel.derivative_rows(tableau[1:], times, states)


def compile_steps(solver_class: type, state_kernel: Any, n: int) -> None:
    """Compile (or load) the kernel that :class:`CompiledRK23` … take their steps with, before a run (its first
    step is then not a compilation): one call with no rows."""
    _derivatives(state_kernel, _tableau(solver_class), np.empty(0), np.empty((0, n)))


STEPS_PER_CALL = 32
"""The most steps :class:`CompiledRK23` … take in one compiled call (each call converts the kernel's ~80 arrays,
about 8 µs; the steps wait in the solver until it is asked for them, and an interruption loses at most these)."""


class _CompiledSteps:
    """The compiled steps of an explicit scipy ``RungeKutta`` solver (the class it is mixed into).

    ``state_kernel`` (:class:`mbkron.algorithms.dynamics.forward.StateKernel`) evaluates ``y' = (q̇, q̈)`` and takes runs of
    steps (:func:`mbkron.numerics.runge_kutta.adaptive_steps`), up to ``steps_per_call`` in one call (None:
    :data:`STEPS_PER_CALL`); :meth:`step` hands them out one at a time with scipy's state after each (``t``, ``y``,
    ``f``, ``h_abs``, ``y_old``, the stages ``K``, hence :meth:`dense_output` of that step). ``fun`` is the Python
    route of the same right-hand side, for the initial slope and step and the steps the kernel declines. ``last``
    (a :class:`mbkron.integrate.trajectory.LastEvaluation`, optional) records each step's last evaluation, the
    slope at its end, as ``fun`` records the Python route's: a run without output times then takes the
    accelerations of its rows from there instead of evaluating again.

    A call ends after any step where a caller may evaluate the right-hand side or stop — one that reaches the next
    of ``output_times`` (the caller's output rows, :meth:`output_rows`, follow it in Python), a coordinate leaving
    ``[lower, upper]`` (``bounds``), a step shorter than ``stops[0]`` times the longest so far or ``stops[1]`` times
    the interval still to go — so that the right-hand side, whose constraint solve continues from its last state,
    is evaluated at the same states in the same order as when stepping one by one, and a run is the same bit for
    bit. (The output rows stay in Python rather than in the kernel after each step: scipy's dense output is a
    matrix product by BLAS, whose rounding a compiled loop need not reproduce.) ``steps_per_call=1`` for a caller
    that evaluates the right-hand side between steps elsewhere.
    """

    def __init__(self, fun: Callable, t0: float, y0: ArrayLike, t_bound: float, state_kernel: Any,
                 last: Any = None, *, output_times: ArrayLike | None = None,
                 bounds: tuple[ArrayLike, ArrayLike] | None = None, stops: tuple[float, float] = (0.0, 0.0),
                 steps_per_call: int | None = None, **options: Any) -> None:
        super().__init__(fun, t0, y0, t_bound, **options)
        self.state_kernel, self.last = state_kernel, last
        self._runs = StepRuns(self.n // 2, output_times, bounds, stops,
                              STEPS_PER_CALL if steps_per_call is None else steps_per_call)
        dop853 = isinstance(self, DOP853)
        self._tableau = _tableau(type(self))
        # scipy's stage arrays, filled in place (DOP853's K is the first rows of its K_extended)
        self._stages = self.K_extended if dop853 else self.K
        if dop853:
            self._extra = (_contiguous(self.A_EXTRA), _contiguous(self.C_EXTRA))
        self._tolerances = tuple(np.broadcast_to(np.asarray(v, dtype=float), (self.n,)).copy()
                                 for v in (self.rtol, self.atol))
        self._counts = np.zeros(1, dtype=np.int64)
        self.y, self.f = np.array(self.y, dtype=float), np.array(self.f, dtype=float)
        self._taken = None  # the last kernel call's steps (_call) and how many have been handed out
        state_kernel.load()  # continue from where the Python route's first evaluations left the workspace

    def _evaluations(self) -> None:
        """Add the kernel's evaluations to ``nfev``."""
        self.nfev += int(self._counts[0])
        self._counts[0] = 0

    def _call(self) -> None:
        """Up to ``steps_per_call`` steps from the current state in one kernel call, to be handed out by
        :meth:`_step_impl`."""
        rtol, atol = self._tolerances
        runs = self._runs
        pending = runs.pending(self.t, self.direction)  # the call returns after the step reaching the first
        runs.limits[kernel.UNTIL] = float(pending[0]) if pending.size else self.direction * np.inf
        outcome, accepted, record, stages = self.state_kernel.runge_kutta(
            RUNGE_KUTTA_STEP, self.t, self.y, self.f, self.h_abs, self.t_bound, float(self.direction),
            float(self.max_step), rtol, atol, *self._tableau, self._stages, self._counts, runs.limits, runs.lower,
            runs.upper, runs.steps_per_call)
        self._evaluations()
        self._taken = [0, int(accepted), outcome, record, stages]

    def _step_impl(self) -> tuple[bool, str | None]:
        if self._taken is None:
            self._call()
        taken = self._taken
        k, accepted, outcome, record, stages = taken
        if k < accepted:  # hand out the next step the kernel took: scipy's state after it
            taken[0] = k + 1
            if k + 1 == accepted and outcome == kernel.STEP_OK:
                self._taken = None
            n, entry = self.n, record[k]
            self._stages[:stages.shape[1]] = stages[k]
            self.h_previous, self.y_old = float(entry[2]), self.y
            self.t, self.h_abs = float(entry[0]), float(entry[1])
            self.y, self.f = entry[3:3 + n], entry[3 + n:]
            if self.last is not None:  # the step's last evaluation: its slope at (t_new, y_new)
                self.last.record(self.t, self.y, self.f[n // 2:])
            return True, None
        self._taken = None  # the step the kernel could not take
        if outcome == kernel.STEP_TOO_SMALL:
            return False, self.TOO_SMALL_STEP
        self.state_kernel.store()  # declined: scipy's step with the Python route, from the continuation reached
        t = self.t
        try:
            success, message = super()._step_impl()
        finally:
            self.state_kernel.load()
        if success:
            self._runs.stepped(abs(self.t - t))
        return success, message

    def _dense_output_impl(self):
        if not isinstance(self, DOP853):
            return super()._dense_output_impl()  # RK23, RK45: from the step's stages, no evaluations
        if self._extra_stages():
            return self._dop853_output()
        self.state_kernel.store()  # declined: scipy's extra stages with the Python route
        try:
            return super()._dense_output_impl()
        finally:
            self.state_kernel.load()

    def _extra_stages(self) -> bool:
        """DOP853's three dense-output stages of the last step into ``K_extended``, in one compiled call."""
        A_extra, C_extra = self._extra
        outcome = self.state_kernel.runge_kutta(
            EXTRA_STAGES, self.t_old, self.y_old, self.f, self.h_previous, self.t_bound, float(self.direction),
            float(self.max_step), *self._tolerances, A_extra, self._tableau[1], C_extra, *self._tableau[3:],
            self._stages, self._counts, self._runs.limits, self._runs.lower, self._runs.upper, 0)[0]
        self._evaluations()
        return outcome == kernel.STEP_OK

    def _dop853_output(self):
        """scipy's DOP853 dense output from the stages :meth:`_extra_stages` wrote (its ``_dense_output_impl``
        after the stage evaluations)."""
        K, h = self.K_extended, self.h_previous
        F = np.empty((3 + self.D.shape[0], self.n))
        f_old = K[0]
        delta_y = self.y - self.y_old
        F[0] = delta_y
        F[1] = h * f_old - delta_y
        F[2] = 2 * delta_y - h * (self.f + f_old)
        F[3:] = h * np.dot(self.D, K)
        return _Dop853Interpolant(self.t_old, self.t, self.y_old, F)

    def output_rows(self, times: NDArray[np.float64]) -> tuple[NDArray, NDArray] | None:
        """States (k, n) and accelerations (k, n/2) at ``times`` inside the last step: scipy's dense output, then
        the right-hand side at every row in one compiled call; None where the kernel declines a state."""
        states = np.ascontiguousarray(self.dense_output()(times).T, dtype=float)
        derivatives = _derivatives(self.state_kernel, self._tableau, np.ascontiguousarray(times, dtype=float), states)
        return None if derivatives is None else (states, derivatives[:, self.n // 2:])


class _Dop853Interpolant(DenseOutput):
    """DOP853's continuous extension of order 7 over one step (Hairer, Nørsett & Wanner, *Solving Ordinary
    Differential Equations I*, Sec. II.6): with ``x = (t − t_old)/h`` and the rows ``F_0 … F_6`` of ``F``,
    ``y(t) = y_old + x(F_0 + (1−x)(F_1 + x(F_2 + (1−x)(F_3 + …))))``, evaluated from the innermost row out —
    scipy's own interpolant (its class is private), so that a run's output rows are scipy's."""

    def __init__(self, t_old: float, t: float, y_old: NDArray, F: NDArray) -> None:
        super().__init__(t_old, t)
        self.h, self.F, self.y_old = t - t_old, F, y_old

    def _call_impl(self, t: NDArray) -> NDArray:
        x = (t - self.t_old) / self.h
        if t.ndim == 0:
            y = np.zeros_like(self.y_old)
        else:
            x = x[:, None]
            y = np.zeros((len(x), len(self.y_old)), dtype=self.y_old.dtype)
        for i, row in enumerate(reversed(self.F)):
            y += row
            if i % 2 == 0:
                y *= x
            else:
                y *= 1 - x
        y += self.y_old
        return y.T


class CompiledRK23(_CompiledSteps, RK23):
    """scipy's ``RK23`` with compiled steps (module documentation)."""


class CompiledRK45(_CompiledSteps, RK45):
    """scipy's ``RK45`` with compiled steps (module documentation)."""


class CompiledDOP853(_CompiledSteps, DOP853):
    """scipy's ``DOP853`` with compiled steps (module documentation)."""


COMPILED: dict[type, type] = {RK23: CompiledRK23, RK45: CompiledRK45, DOP853: CompiledDOP853}
"""scipy's explicit solver classes and their compiled-step counterparts."""
