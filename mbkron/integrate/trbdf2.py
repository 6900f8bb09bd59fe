"""TR-BDF2 as a :class:`scipy.integrate.OdeSolver`: the one-step, L-stable, second-order formula.

:class:`TRBDF2` is the formula of Bank et al. [1]_ implemented as in Hosea and Shampine [2]_
and MATLAB's ``ode23tb`` [3]_: a trapezoidal stage to ``t + gamma*h`` and a BDF2 stage to
``t + h`` sharing one LU factorisation of ``I - d*h*J``, simplified Newton iterations with
Jacobian reuse, a filtered embedded third-order error estimate and a C1 piecewise cubic
Hermite interpolant. It is passed to :func:`scipy.integrate.solve_ivp` as ``method=TRBDF2``;
events, dense output, ``t_eval`` and backward integration are then handled by ``solve_ivp``.
See ``docs/integrators.md`` for the derivations and measured costs.

The steps are compiled: :func:`mbkron.numerics.trbdf2.trbdf2_kernel` is the one implementation. A right-hand
side that is any Python callable reaches it through a C callback (:func:`mbkron.numerics.trbdf2.callback_trbdf2`,
:class:`TRBDF2`); a model's compiled right-hand side is called in machine code, several steps per call
(:class:`CompiledTRBDF2`).

References
----------
.. [1] R. E. Bank, W. M. Coughran, W. Fichtner, E. H. Grosse, D. J. Rose and
       R. K. Smith, "Transient simulation of silicon devices and circuits",
       IEEE Trans. Computer-Aided Design 4(4), pp. 436-451, 1985.
.. [2] M. E. Hosea and L. F. Shampine, "Analysis and implementation of
       TR-BDF2", Applied Numerical Mathematics 20, pp. 21-37, 1996.
.. [3] L. F. Shampine and M. W. Reichelt, "The MATLAB ODE suite", SIAM J.
       Sci. Comput. 18(1), pp. 1-22, 1997.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import OdeSolver
from scipy.sparse import csc_matrix, issparse

from mbkron.numerics import trbdf2 as kernel
from mbkron.jit.calls import PYTHON_CALLBACK
from mbkron.numerics.trbdf2 import GAMMA, MAX_JAC_AGE
from mbkron.integrate.common import (
    EPS,
    HermiteDenseOutput,
    StepRuns,
    select_initial_step,
    validate_first_step,
    validate_max_step,
    validate_tolerances,
    warn_extraneous,
)
from mbkron.integrate.jacobian import finite_difference_jacobian, group_columns

__all__ = ["STEPS_PER_CALL", "CompiledTRBDF2", "TRBDF2"]


class TRBDF2(OdeSolver):
    r"""Implicit one-step TR-BDF2 method of order 2 with an order-3 error estimate.

    Each step of size ``h`` from ``(t, y)`` is a trapezoidal-rule stage to
    ``t + gamma*h`` followed by a BDF2 stage to ``t + h``, ``gamma = 2 - sqrt(2)``
    [1]_. Written with the scaled stage derivatives ``z_i = h*f(t_i, y_i)``,

    .. math::

        y_\gamma = y + d (z_1 + z_2), \qquad
        y_{new}   = y + w (z_1 + z_2) + d z_3,

    with ``d = gamma/2`` and ``w = sqrt(2)/4``. Both stages therefore need the
    same matrix ``I - d*h*J``, which is factorised once per step size and
    Jacobian. ``z_1`` is the derivative carried over from the previous step
    (first-same-as-last), so a step costs only the Newton iterations.

    The nonlinear stage equations are solved by simplified Newton iterations
    with a convergence-rate test as in scipy's Radau/BDF and ``ode23tb`` [3]_.
    The Jacobian is re-evaluated when an iteration with an out-of-date
    Jacobian fails, or when an accepted step converged slowly (more than two
    iterations with a rate above 1e-3, scipy's Radau rule); as a safeguard
    against false convergence an out-of-date Jacobian is also re-evaluated
    after 50 steps or when ``|h|`` has changed tenfold since its evaluation
    (like CVODE; see docs/integrators.md). The LU factorisation is recomputed
    when ``h`` or ``J`` changes.

    The local error is estimated with the embedded third-order formula of
    Hosea and Shampine [2]_, ``e = ((gamma-1) z_1 + z_2 - gamma z_3)/3``,
    filtered as ``(I - d*h*J)^{-1} e`` so the estimate stays bounded for stiff
    components; as in ``ode23tb`` the error is ``max(||filtered||,
    ||e||/16)``, measured in scipy's RMS norm relative to ``atol + rtol*|y|``
    (``|y|`` the largest of the step's start, middle and end values). Step
    sizes follow ``ode23tb``: a factor ``0.7*err**(-1/3)`` limited to
    ``[0.2, 5]`` after a successful step (none after a failure in the same
    step, and ``h`` is held if the factor is within 20 % of 1), at least
    ``0.1`` after an error-test failure and ``0.3`` after a Newton failure.

    Dense output is the piecewise cubic Hermite interpolant through
    ``(t, y, z_1/h)``, ``(t + gamma*h, y_gamma, z_2/h)`` and
    ``(t + h, y_new, z_3/h)`` [2]_ (:class:`~mbkron.integrate.common.HermiteDenseOutput`).
    Because the end
    slope of one step is the start slope of the next, the global interpolant
    is C1.

    Each step is one call of the compiled step
    (:func:`mbkron.numerics.trbdf2.callback_trbdf2`), which calls ``fun`` and
    ``jac`` back through a C callback; what they raise is raised again by
    :meth:`step`. The Jacobian and its LU factors are dense (a sparse ``jac``
    or ``jac_sparsity`` is converted).

    Parameters
    ----------
    fun : callable
        Right-hand side ``fun(t, y)`` returning an array shaped like ``y``; see
        `vectorized`.
    t0 : float
        Initial time.
    y0 : array_like, shape (n,)
        Initial state (real).
    t_bound : float
        Boundary time; the integration direction is ``sign(t_bound - t0)``.
    first_step : float or None, optional
        Initial step size; ``None`` (default) lets the solver choose.
    max_step : float, optional
        Largest step size allowed. Default ``np.inf``.
    rtol, atol : float or array_like, optional
        Relative and absolute tolerances (scalars or shape ``(n,)``): the local
        error estimate is kept below ``atol + rtol*|y|`` in the RMS norm.
        Defaults 1e-3 and 1e-6, as in scipy.
    jac : {None, array_like, sparse matrix, callable}, optional
        Jacobian ``df/dy`` of shape ``(n, n)``: an array or sparse matrix is a
        constant Jacobian; a callable ``jac(t, y)`` may return a dense or sparse
        matrix; ``None`` (default) uses forward differences
        (:func:`~mbkron.integrate.jacobian.finite_difference_jacobian`). It is
        used as a dense matrix.
    jac_sparsity : {None, array_like, sparse matrix}, optional
        Sparsity structure for the finite-difference Jacobian; ignored when
        `jac` is given.
    vectorized : bool, optional
        Whether ``fun(t, y)`` accepts ``y`` of shape ``(n, k)`` (used only for
        finite-difference Jacobians). Default False.
    **extraneous
        Other keyword arguments are ignored with a warning, as in scipy.

    Attributes
    ----------
    n : int
        Number of equations.
    status : str
        ``'running'``, ``'finished'`` or ``'failed'``.
    t, y : float, ndarray
        Current time and state.
    t_old : float or None
        Previous time, None before the first step.
    step_size : float or None
        Size of the last successful step.
    nfev, njev, nlu : int
        Numbers of right-hand-side evaluations (finite-difference Jacobian
        evaluations excluded, as in scipy), Jacobian evaluations and LU
        factorisations.

    References
    ----------
    .. [1] R. E. Bank, W. M. Coughran, W. Fichtner, E. H. Grosse, D. J. Rose
           and R. K. Smith, "Transient simulation of silicon devices and
           circuits", IEEE Trans. CAD 4(4), pp. 436-451, 1985.
    .. [2] M. E. Hosea and L. F. Shampine, "Analysis and implementation of
           TR-BDF2", Applied Numerical Mathematics 20, pp. 21-37, 1996.
    .. [3] L. F. Shampine and M. W. Reichelt, "The MATLAB ODE suite", SIAM J.
           Sci. Comput. 18(1), pp. 1-22, 1997.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_ivp
    >>> from mbkron.integrate import TRBDF2
    >>> sol = solve_ivp(lambda t, y: -50.0 * (y - np.cos(t)), (0.0, 1.0), [0.0],
    ...                 method=TRBDF2, rtol=1e-6, atol=1e-9)
    >>> bool(sol.success)
    True
    """

    def __init__(
        self,
        fun: Callable[[float, NDArray[np.float64]], ArrayLike],
        t0: float,
        y0: ArrayLike,
        t_bound: float,
        max_step: float = np.inf,
        rtol: ArrayLike = 1e-3,
        atol: ArrayLike = 1e-6,
        jac: Any = None,
        jac_sparsity: Any = None,
        vectorized: bool = False,
        first_step: float | None = None,
        **extraneous: Any,
    ) -> None:
        warn_extraneous(extraneous)
        super().__init__(fun, t0, y0, t_bound, vectorized)
        # own, writable, C-contiguous float arrays and floats: the kernel's one specialisation
        self.t, self.y = float(self.t), np.array(self.y, dtype=float)
        self.max_step = validate_max_step(max_step)
        self.rtol, self.atol = validate_tolerances(rtol, atol, self.n)
        # Newton tolerance on the scaled correction, as in scipy's Radau/BDF.
        rtol_min = float(np.min(self.rtol))
        self.newton_tol = float(max(10 * EPS / rtol_min, min(0.03, rtol_min**0.5)))

        self.yp = np.array(self.fun(self.t, self.y), dtype=float).reshape(self.n)  # slope at t; z_1 = h * yp
        self.jac_factor: NDArray[np.float64] | None = None
        self.jac, self.J = self._validate_jac(jac, jac_sparsity)

        if first_step is None:
            h_abs = select_initial_step(
                self.fun, self.t, self.y, self.yp, self.direction, 2,
                self.rtol, self.atol, t_bound, self.max_step,
            )
        else:
            h_abs = validate_first_step(first_step, t0, t_bound)

        n = self.n
        # the solver's state, in the arrays the kernel updates in place
        self._memory = memory = np.zeros(kernel.MEMORY_SIZE)
        memory[kernel.H_ABS] = h_abs
        memory[kernel.LU_H] = memory[kernel.NEWTON_RATE] = np.nan  # no LU factors yet, no Newton rate with them
        memory[kernel.CURRENT_JAC] = 1.0  # J was evaluated at the current (t, y)
        memory[kernel.JAC_AGE] = 0.0  # accepted steps since J was evaluated
        memory[kernel.JAC_STEP] = h_abs  # step size J was evaluated for
        memory[kernel.CONSTANT_JAC] = self.jac is None
        self._lu, self._piv = np.zeros((n, n)), np.zeros(n, dtype=np.int64)
        self._counts = np.zeros(3, dtype=np.int64)
        self._tolerances = tuple(np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
                                 for v in (self.rtol, self.atol))
        self._runs = StepRuns(0, None, None, (0.0, 0.0), 1)  # one step per call, no output rows
        self._nq = 0  # (no coordinates' ranges to check)
        self._steps = self._callback_steps
        self._rows = None  # the rows of the run's output times the last step reached (CompiledTRBDF2.output_rows)
        self._taken = None  # the last kernel call's steps (_call) and how many have been handed out
        # the kernel calls fun and jac through this C callback, with the state and the results in these buffers
        self._raised: BaseException | None = None  # what the callback caught, raised again after the call
        self._callback = PYTHON_CALLBACK(self._call_back)
        self._context = (int(ctypes.cast(self._callback, ctypes.c_void_p).value), np.zeros(n), np.zeros(n),
                         np.zeros((n, n)))

        self.y_old: NDArray[np.float64] | None = None
        self.yp_old: NDArray[np.float64] | None = None
        self.y_mid: NDArray[np.float64] | None = None
        self.yp_mid: NDArray[np.float64] | None = None

    def _dense(self, J: Any) -> NDArray[np.float64]:
        """The Jacobian ``J`` (array_like or sparse) as a dense float array of shape ``(n, n)``, checked."""
        J = J.toarray() if issparse(J) else np.asarray(J, dtype=float)
        if J.shape != (self.n, self.n):
            raise ValueError(
                f"`jac` is expected to have shape {(self.n, self.n)}, but actually has "
                f"{J.shape}."
            )
        return J

    def _validate_jac(self, jac: Any, sparsity: Any) -> tuple[Callable | None, NDArray[np.float64]]:
        """Return ``(evaluate, J0)``, ``J0`` the dense Jacobian at ``(t0, y0)`` (counted in ``njev``) and
        ``evaluate(t, y)`` its re-evaluation for the kernel, None for a constant Jacobian.

        ``evaluate`` is not counted in ``njev`` (the kernel counts its requests); for finite differences it
        also evaluates ``fun(t, y)`` (counted in ``nfev``), because the carried-over slope is only a Newton
        iterate.
        """
        if jac is None:
            if sparsity is not None:
                structure = csc_matrix(sparsity)
                if structure.shape != (self.n, self.n):
                    raise ValueError(
                        f"`jac_sparsity` is expected to have shape {(self.n, self.n)}, but "
                        f"actually has {structure.shape}."
                    )
                sparsity = (structure, group_columns(structure))

            def evaluate(t: float, y: NDArray[np.float64]) -> Any:
                J, self.jac_factor = finite_difference_jacobian(
                    self.fun_vectorized, t, y, self.fun(t, y), self.atol, self.jac_factor, sparsity,
                )
                return J

            self.njev += 1
            J, self.jac_factor = finite_difference_jacobian(
                self.fun_vectorized, self.t, self.y, self.yp, self.atol, None, sparsity
            )
            return evaluate, np.array(self._dense(J), order="C")

        if callable(jac):
            J = jac(self.t, self.y)
            self.njev = 1
            return jac, np.array(self._dense(J), order="C")
        return None, np.array(self._dense(csc_matrix(jac, dtype=float) if issparse(jac) else jac), order="C")

    def _call_back(self, t: float, mode: int) -> int:
        """The kernel's callback (:data:`mbkron.jit.calls.PYTHON_CALLBACK`): ``fun`` (modes
        :data:`~mbkron.numerics.trbdf2.EVALUATE`, :data:`~mbkron.numerics.trbdf2.ADVANCE`; not counted: the kernel
        counts it) or the Jacobian (:data:`~mbkron.numerics.trbdf2.JACOBIAN`) at ``t`` and the state in the
        context's buffer, into the context's buffer for it; 1. Whatever it raises (Ctrl-C included) is kept for
        :meth:`_call` to raise, and it returns 0 (the kernel then declines the state and returns)."""
        try:
            _, state, derivative, jacobian = self._context
            y = state.copy()  # fun may keep or change its argument
            if mode == kernel.JACOBIAN:
                jacobian[...] = self._dense(self.jac(t, y))
            else:
                derivative[...] = self.fun_single(t, y)
            return 1
        except BaseException as error:  # noqa: BLE001 - raised again by _call, once the kernel has returned
            self._raised = error
            return 0

    def _callback_steps(self, *arguments: Any, times: NDArray, limits: NDArray, lower: NDArray, upper: NDArray,
                        max_steps: int) -> tuple:
        """:func:`mbkron.numerics.trbdf2.callback_trbdf2` with ``fun`` and ``jac`` through :meth:`_call_back`."""
        return kernel.callback_trbdf2(*arguments, self._context, times, limits, lower, upper, max_steps)

    def _call(self, runs: StepRuns, steps: Callable, nq: int) -> None:
        """Up to ``runs.steps_per_call`` steps from the current state in one call of ``steps`` (the kernel of
        :meth:`_callback_steps` or a compiled right-hand side's), to be handed out by :meth:`_hand_out`; what the
        callback caught is raised here."""
        rtol, atol = self._tolerances
        pending = runs.pending(self.t, self.direction)
        self._raised = None
        outcome, accepted, record, row_end, states, derivatives = steps(
            self.t, self.y, self.yp, float(self.t_bound), float(self.direction), self.max_step, rtol, atol,
            self.newton_tol, nq, self.J, self._lu, self._piv, self._memory, self._counts, times=pending,
            limits=runs.limits, lower=runs.lower, upper=runs.upper, max_steps=runs.steps_per_call)
        self.nfev, self.njev, self.nlu = (total + int(c) for total, c in zip((self.nfev, self.njev, self.nlu),
                                                                           self._counts))
        self._counts[:] = 0
        raised, self._raised = self._raised, None
        if raised is not None:
            raise raised
        self._taken = [0, int(accepted), outcome, record, row_end.tolist(), states, derivatives, pending]

    def _hand_out(self) -> bool:
        """Make the next step of the last call the solver's (``t``, ``y``, the dense output's nodes, the step's
        rows); False where none is left."""
        taken = self._taken
        k, accepted, outcome, record, row_end, states, derivatives, pending = taken
        if k >= accepted:
            return False
        taken[0] = k + 1
        if k + 1 == accepted and outcome == kernel.STEP_OK:
            self._taken = None
        n = self.n
        entry = record[k]
        self.y_old, self.yp_old = self.y, self.yp
        self.t = float(entry[0])
        self.y_mid, self.y = entry[1:1 + n], entry[1 + n:1 + 2 * n]
        self.yp_mid, self.yp = entry[1 + 2 * n:1 + 3 * n], entry[1 + 3 * n:]
        first, end = row_end[k - 1] if k else 0, row_end[k]
        if end > first and self._runs.limits[kernel.EVERY_STEP]:
            self.last.record(self.t, self.y, derivatives[first, n // 2:])
        elif end > first:
            self._rows = (pending[first:end], states[first:end], derivatives[first:end])
        return True

    def _failed(self) -> tuple[bool, str]:
        """The failure of the step the last call could not take."""
        outcome, self._taken = self._taken[2], None
        if outcome == kernel.STEP_TOO_SMALL:
            return False, self.TOO_SMALL_STEP
        return False, DECLINED

    def _step_impl(self) -> tuple[bool, str | None]:
        self._rows = None
        if self._taken is None:
            self._call(self._runs, self._steps, self._nq)
        if self._hand_out():
            return True, None
        return self._declined()

    def _declined(self) -> tuple[bool, str]:
        """The step the kernel could not take: too small (the callback declines a state only where ``fun`` or
        ``jac`` raised, which :meth:`_call` has raised)."""
        return self._failed()

    def _dense_output_impl(self) -> HermiteDenseOutput:
        # Hermite pieces through (t_old, y_old, z_1/h), (t_mid, y_mid, z_2/h), (t, y, z_3/h).
        t_mid = self.t_old + GAMMA * (self.t - self.t_old)
        return HermiteDenseOutput(
            [self.t_old, t_mid, self.t],
            [self.y_old, self.y_mid, self.y],
            [self.yp_old, self.yp_mid, self.yp],
        )


DECLINED = "The right-hand side declined a state."
"""The message of a step the kernel declined without an exception to raise (not expected: the Python callback
declines only where ``fun`` or ``jac`` raised)."""


STEPS_PER_CALL = 32
"""The most steps :class:`CompiledTRBDF2` takes in one compiled call (each call converts the kernel's ~80
arrays, about 8 µs; the steps wait in the solver until it is asked for them, and an interruption loses at
most these)."""


class CompiledTRBDF2(TRBDF2):
    """:class:`TRBDF2` whose steps run with a compiled right-hand side, several in one call.

    ``state_kernel`` (:meth:`mbkron.Model.state_kernel`) evaluates ``y' = (q̇, q̈)`` and takes runs of whole
    TR-BDF2 steps (:func:`mbkron.numerics.trbdf2.trbdf2_steps`: each :func:`~mbkron.numerics.trbdf2.trbdf2_kernel`,
    with the Jacobian by :func:`~mbkron.numerics.trbdf2.state_jacobian`'s central differences of the compiled
    right-hand side), up to ``steps_per_call`` in one call, each followed by the rows a run records at
    it: those of ``output_times`` it reaches (:meth:`output_rows`) or, without output times, the right-hand side
    at its end, recorded in ``last`` (a :class:`mbkron.integrate.trajectory.LastEvaluation`). :meth:`step`
    hands out one step at a time (scipy's contract: ``t``, ``y``, :meth:`dense_output` of that step), and a call
    ends after any step a caller's check may stop at — a coordinate leaving ``[lower, upper]`` (``bounds``), a
    step shorter than ``stops[0]`` times the longest so far or ``stops[1]`` times the interval still to go — so
    that the right-hand side has been evaluated at the same states as when stepping one by one
    (``steps_per_call`` None: :data:`STEPS_PER_CALL`; 1 for a caller that changes the solver's state between
    steps). A step the kernel declines (its right-hand side declines a state: a damped or subdivided constraint
    solve, a singular matrix) is redone by the same kernel code with ``fun`` and ``jac`` through the Python
    callback (:class:`TRBDF2`'s steps), which raises or reports the reason if it fails too. ``fun`` and ``jac``
    are the Python route of the same right-hand side.
    """

    def __init__(self, fun: Callable, t0: float, y0: ArrayLike, t_bound: float, state_kernel: Any,
                 output_times: ArrayLike | None = None, *, last: Any = None,
                 bounds: tuple[ArrayLike, ArrayLike] | None = None, stops: tuple[float, float] = (0.0, 0.0),
                 steps_per_call: int | None = None, **options: Any) -> None:
        # The first Jacobian is the kernel's own: instead of TRBDF2.__init__ evaluating ``jac`` at (t0, y0), J is
        # marked due, so that the first step evaluates it there by the same central differences (the implicit
        # solvers' Jacobian kernel is then not compiled for a TR-BDF2 run). A step the kernel declines is redone
        # with ``jac`` itself.
        jac = options.get("jac")
        if callable(jac):
            options = dict(options, jac=np.zeros((np.size(y0), np.size(y0))))
        super().__init__(fun, t0, y0, t_bound, **options)
        n = self.n
        if callable(jac):
            self.jac = jac
            memory = self._memory
            memory[kernel.CONSTANT_JAC], memory[kernel.CURRENT_JAC], memory[kernel.JAC_AGE] = 0.0, 0.0, MAX_JAC_AGE
        self.state_kernel, self.last = state_kernel, last
        self._redo = self._runs  # TRBDF2's: one step per call, no rows
        self._runs = StepRuns(n // 2, output_times, bounds, stops,
                              STEPS_PER_CALL if steps_per_call is None else steps_per_call)
        self._runs.limits[kernel.EVERY_STEP] = output_times is None and last is not None
        self._nq, self._steps = n // 2, state_kernel.steps
        state_kernel.load()  # continue from where the Python route's first evaluations left the workspace

    def output_rows(self, times: NDArray[np.float64]) -> tuple[NDArray, NDArray] | None:
        """States (k, n) and accelerations (k, n/2) at ``times`` inside the last step (its Hermite interpolant and
        the right-hand side there): those the kernel gave after the step, when ``times`` are the run's output
        times it reached; else None (the kernel declined one, or other times: the caller evaluates them)."""
        rows, self._rows = self._rows, None
        if rows is not None and rows[0].shape == times.shape and rows[0].tobytes() == times.tobytes():
            return rows[1], rows[2][:, self.n // 2:]
        return None

    def _declined(self) -> tuple[bool, str]:
        """The step the compiled right-hand side's kernel could not take: too small, else (declined) redone from
        the continuation reached by the same kernel code with ``fun`` and ``jac``, which raise the reason or report
        it if the step fails again."""
        outcome = self._taken[2]
        if outcome == kernel.STEP_TOO_SMALL:
            return self._failed()
        self._taken = None
        self.state_kernel.store()  # the Python route continues from the continuation the kernel reached
        t = self.t
        try:
            self._call(self._redo, self._callback_steps, 0)
        finally:
            self.state_kernel.load()
        if self._hand_out():
            self._runs.stepped(abs(self.t - t))
            return True, None
        return self._failed()
