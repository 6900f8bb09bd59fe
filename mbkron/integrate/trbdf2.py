"""TR-BDF2 as a :class:`scipy.integrate.OdeSolver`: the one-step, L-stable, second-order formula.

:class:`TRBDF2` is the formula of Bank et al. [1]_ implemented as in Hosea and Shampine [2]_
and MATLAB's ``ode23tb`` [3]_: a trapezoidal stage to ``t + gamma*h`` and a BDF2 stage to
``t + h`` sharing one LU factorisation of ``I - d*h*J``, simplified Newton iterations with
Jacobian reuse, a filtered embedded third-order error estimate and a C1 piecewise cubic
Hermite interpolant. It is passed to :func:`scipy.integrate.solve_ivp` as ``method=TRBDF2``;
events, dense output, ``t_eval`` and backward integration are then handled by ``solve_ivp``.
See ``docs/integrators.md`` for the derivations and measured costs.

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

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import OdeSolver
from scipy.linalg import lu_factor
from scipy.linalg.lapack import dgetrs
from scipy.sparse import csc_matrix, eye, issparse
from scipy.sparse.linalg import splu

from mbkron.compiled import trbdf2 as kernel
from mbkron.compiled.trbdf2 import (  # the coefficients and control parameters, shared with the kernel
    D,
    ERROR_WEIGHTS,
    GAMMA,
    HOLD_BAND,
    JAC_STEP_RATIO,
    MAX_FACTOR,
    MAX_JAC_AGE,
    MIN_FACTOR,
    MIN_REJECT_FACTOR,
    NEWTON_FAIL_FACTOR,
    NEWTON_MAXITER,
    SAFETY,
    STAGE3_PREDICTOR,
    STRETCH,
    UNFILTERED_WEIGHT,
    W,
)
from mbkron.integrate.common import (
    EPS,
    HermiteDenseOutput,
    StepRuns,
    min_step,
    rms_norm,
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
    (see `_jacobian_is_old`). The LU factorisation is recomputed when ``h``
    or ``J`` changes.

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
        (:func:`~mbkron.integrate.jacobian.finite_difference_jacobian`).
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
        self.max_step = validate_max_step(max_step)
        self.rtol, self.atol = validate_tolerances(rtol, atol, self.n)
        # Newton tolerance on the scaled correction, as in scipy's Radau/BDF.
        rtol_min = float(np.min(self.rtol))
        self.newton_tol = max(10 * EPS / rtol_min, min(0.03, rtol_min**0.5))

        self.yp = self.fun(self.t, self.y)  # slope at t; z_1 = h * yp
        self.jac_factor: NDArray[np.float64] | None = None
        self.jac, self.J = self._validate_jac(jac, jac_sparsity)
        self.current_jac = True  # J was evaluated at the current (t, y)
        self.jac_age = 0  # accepted steps since J was evaluated

        if issparse(self.J):
            self.identity = eye(self.n, format="csc")
        else:
            self.identity = np.identity(self.n)
        self.lu_data: Any = None
        self.lu_h: float | None = None  # signed step size of lu_data
        self.newton_rate: float | None = None  # last rate with the current LU

        if first_step is None:
            self.h_abs = select_initial_step(
                self.fun, self.t, self.y, self.yp, self.direction, 2,
                self.rtol, self.atol, t_bound, self.max_step,
            )
        else:
            self.h_abs = validate_first_step(first_step, t0, t_bound)
        self.jac_step = self.h_abs  # step size J was evaluated for

        self.y_old: NDArray[np.float64] | None = None
        self.yp_old: NDArray[np.float64] | None = None
        self.y_mid: NDArray[np.float64] | None = None
        self.yp_mid: NDArray[np.float64] | None = None

    def _counting(self, jac: Callable) -> Callable:
        """``jac`` as a dense Jacobian (a float array) counted in ``njev``."""

        def jac_wrapped(t: float, y: NDArray[np.float64]) -> NDArray[np.float64]:
            self.njev += 1
            return np.asarray(jac(t, y), dtype=float)

        return jac_wrapped

    def _validate_jac(self, jac: Any, sparsity: Any) -> tuple[Callable | None, Any]:
        """Return ``(jac_wrapped, J0)``; ``jac_wrapped`` is None for a constant Jacobian.

        ``jac_wrapped(t, y)`` evaluates the Jacobian at ``(t, y)`` and counts it in
        ``njev``; for finite differences it also evaluates ``fun(t, y)`` (counted
        in ``nfev``), because the carried-over slope is only a Newton iterate.
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

            def jac_wrapped(t: float, y: NDArray[np.float64]) -> Any:
                self.njev += 1
                J, self.jac_factor = finite_difference_jacobian(
                    self.fun_vectorized, t, y, self.fun(t, y), self.atol, self.jac_factor,
                    sparsity,
                )
                return J

            self.njev += 1
            J, self.jac_factor = finite_difference_jacobian(
                self.fun_vectorized, self.t, self.y, self.yp, self.atol, None, sparsity
            )
            return jac_wrapped, J

        if callable(jac):
            J = jac(self.t, self.y)
            self.njev = 1
            if issparse(J):

                def jac_wrapped(t: float, y: NDArray[np.float64]) -> Any:
                    self.njev += 1
                    return csc_matrix(jac(t, y), dtype=float)

                J = csc_matrix(J, dtype=float)
            else:
                jac_wrapped = self._counting(jac)
                J = np.asarray(J, dtype=float)
        else:
            jac_wrapped = None
            J = csc_matrix(jac, dtype=float) if issparse(jac) else np.asarray(jac, dtype=float)
        if J.shape != (self.n, self.n):
            raise ValueError(
                f"`jac` is expected to have shape {(self.n, self.n)}, but actually has "
                f"{J.shape}."
            )
        return jac_wrapped, J

    def _factorize(self, h: float) -> None:
        """LU-factorise ``I - D*h*J`` for the signed step ``h``."""
        self.nlu += 1
        matrix = self.identity - (D * h) * self.J
        if issparse(matrix):
            self.lu_data = splu(csc_matrix(matrix))
        else:
            self.lu_data = lu_factor(matrix, overwrite_a=True)
        self.lu_h = h
        self.newton_rate = None

    def _solve_lu(self, rhs: NDArray[np.float64]) -> NDArray[np.float64]:
        """Solve ``(I - D*h*J) x = rhs`` with the current factorisation."""
        if issparse(self.J):
            return self.lu_data.solve(rhs)
        solution, info = dgetrs(*self.lu_data, rhs)  # LAPACK directly: scipy's lu_solve costs ~10× more per call
        if info != 0:
            raise np.linalg.LinAlgError(f"dgetrs failed (info = {info})")
        return solution

    def _refresh_jacobian(self, t: float, y: NDArray[np.float64], h_abs: float) -> None:
        """Re-evaluate the Jacobian at ``(t, y)`` for steps of about ``h_abs``."""
        self.J = self.jac(t, y)
        self.current_jac = True
        self.jac_age = 0
        self.jac_step = h_abs
        self.lu_data = None
        self.lu_h = None

    def _solve_stage(
        self,
        t_stage: float,
        y_pred: NDArray[np.float64],
        z_pred: NDArray[np.float64],
        h: float,
        scale: NDArray[np.float64],
    ) -> tuple[bool, NDArray[np.float64], NDArray[np.float64], int]:
        """Solve ``z = h*f(t_stage, v + D*z)`` by simplified Newton iterations.

        ``y_pred = v + D*z_pred`` is the predicted stage value; ``v`` stays
        implicit because ``y`` is corrected by ``D`` times the correction of ``z``.
        Convergence is judged on the scaled correction of ``y`` with the
        contraction-rate test of scipy's BDF/Radau; the rate carries over while
        the factorisation is unchanged (as in ode23tb), so a stage can converge
        after one iteration.

        Returns
        -------
        converged : bool
        y, z : ndarray
            Stage value and scaled stage derivative (last iterates).
        n_iter : int
            Number of iterations (function evaluations) made.
        """
        y = y_pred.copy()
        z = z_pred.copy()
        rate = self.newton_rate
        norm_old = None
        for k in range(NEWTON_MAXITER):
            f = self.fun(t_stage, y)
            if not np.all(np.isfinite(f)):
                return False, y, z, k + 1
            dz = self._solve_lu(h * f - z)
            dy_norm = rms_norm(D * dz / scale)
            if norm_old is not None:
                rate = dy_norm / norm_old
            if rate is not None and (
                rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * dy_norm > self.newton_tol
            ):
                return False, y, z, k + 1
            z += dz
            y += D * dz
            if dy_norm == 0 or (rate is not None and rate / (1 - rate) * dy_norm < self.newton_tol):
                if norm_old is not None:
                    self.newton_rate = rate
                return True, y, z, k + 1
            norm_old = dy_norm
        return False, y, z, NEWTON_MAXITER

    def _step_impl(self) -> tuple[bool, str | None]:
        t, y, yp = self.t, self.y, self.yp
        smallest = min_step(t, self.direction)
        h_abs = max(min(self.h_abs, self.max_step), smallest)
        no_failures = True
        while True:
            if h_abs < smallest:
                return False, self.TOO_SMALL_STEP
            remaining = abs(self.t_bound - t)
            if STRETCH * h_abs >= remaining and remaining <= self.max_step:
                t_new = self.t_bound
            else:
                t_new = t + self.direction * h_abs
            h = t_new - t
            h_abs = abs(h)
            if not self.current_jac and self._jacobian_is_old(h_abs):
                self._refresh_jacobian(t, y, h_abs)
            if self.lu_data is None or abs(h - self.lu_h) > 1e-12 * h_abs:
                self._factorize(h)

            # Trapezoidal stage to t + GAMMA*h, predicted with a constant slope.
            z1 = h * yp
            scale = self.atol + self.rtol * np.abs(y)
            converged, y_mid, z2, n_iter_1 = self._solve_stage(
                t + GAMMA * h, y + GAMMA * z1, z1, h, scale
            )
            if converged:
                # BDF2 stage to t + h, predicted by extrapolating the slope linearly.
                z3 = STAGE3_PREDICTOR[0] * z1 + STAGE3_PREDICTOR[1] * z2
                scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_mid))
                converged, y_new, z3, n_iter_2 = self._solve_stage(
                    t_new, y + W * (z1 + z2) + D * z3, z3, h, scale
                )
            if not converged:
                if not self.current_jac:
                    self._refresh_jacobian(t, y, h_abs)
                    continue
                no_failures = False
                h_abs *= NEWTON_FAIL_FACTOR
                continue

            scale = self.atol + self.rtol * np.maximum(
                np.maximum(np.abs(y), np.abs(y_mid)), np.abs(y_new)
            )
            estimate = ERROR_WEIGHTS[0] * z1 + ERROR_WEIGHTS[1] * z2 + ERROR_WEIGHTS[2] * z3
            error_norm = max(
                rms_norm(self._solve_lu(estimate) / scale),
                UNFILTERED_WEIGHT * rms_norm(estimate / scale),
            )
            if error_norm > 1:
                no_failures = False
                h_abs *= max(MIN_REJECT_FACTOR, SAFETY * error_norm ** (-1 / 3))
                continue
            break

        self.y_old, self.yp_old = y, yp
        self.y_mid, self.yp_mid = y_mid, z2 / h
        self.t, self.y, self.yp = t_new, y_new, z3 / h

        if no_failures:
            predicted = SAFETY * error_norm ** (-1 / 3) if error_norm > 0 else np.inf
            factor = min(MAX_FACTOR, max(MIN_FACTOR, min(self.max_step / h_abs, predicted)))
            if abs(factor - 1) > HOLD_BAND:
                h_abs *= factor
        self.h_abs = h_abs

        if self.jac is not None:
            self.jac_age += 1
            slow = max(n_iter_1, n_iter_2) > 2 and (self.newton_rate or 0.0) > 1e-3
            if slow:
                self._refresh_jacobian(t_new, y_new, h_abs)
            else:
                self.current_jac = False
        return True, None

    def _jacobian_is_old(self, h_abs: float) -> bool:
        """Whether an out-of-date Jacobian should be re-evaluated before a step of ``h_abs``.

        Safeguard against false convergence: with a Jacobian from a very different
        state, simplified Newton can contract very slowly in one direction while
        its first two corrections shrink fast, so the rate test accepts a wrong
        stage value (seen on Van der Pol, mu = 1000, rtol >= 1e-4, where a
        Jacobian from a fast transition was kept through the next slow phase).
        Like CVODE, re-evaluate after ``MAX_JAC_AGE`` steps, and when the step
        size is ``JAC_STEP_RATIO`` times larger or smaller than the Jacobian's.
        (A constant Jacobian is never out of date, so this is not asked for it.)
        """
        ratio = max(h_abs / self.jac_step, self.jac_step / h_abs)
        return self.jac_age >= MAX_JAC_AGE or ratio > JAC_STEP_RATIO

    def _dense_output_impl(self) -> HermiteDenseOutput:
        # Hermite pieces through (t_old, y_old, z_1/h), (t_mid, y_mid, z_2/h), (t, y, z_3/h).
        t_mid = self.t_old + GAMMA * (self.t - self.t_old)
        return HermiteDenseOutput(
            [self.t_old, t_mid, self.t],
            [self.y_old, self.y_mid, self.y],
            [self.yp_old, self.yp_mid, self.yp],
        )


STEPS_PER_CALL = 32
"""The most steps :class:`CompiledTRBDF2` takes in one compiled call (each call converts the kernel's ~80
arrays, about 8 µs; the steps wait in the solver until it is asked for them, and an interruption loses at
most these)."""


class CompiledTRBDF2(TRBDF2):
    """:class:`TRBDF2` whose steps run compiled, several in one call, for a compiled right-hand side.

    ``state_kernel`` (:meth:`mbkron.Model.state_kernel`) evaluates ``y' = (q̇, q̈)`` and takes runs of whole
    TR-BDF2 steps (:func:`mbkron.compiled.trbdf2.trbdf2_steps`: each :func:`~mbkron.compiled.trbdf2.trbdf2_kernel`,
    the same decisions as :meth:`TRBDF2._step_impl`, with the Jacobian by the same central differences of the
    compiled right-hand side), up to ``steps_per_call`` in one call, each followed by the rows a run records at
    it: those of ``output_times`` it reaches (:meth:`output_rows`) or, without output times, the right-hand side
    at its end, recorded in ``last`` (a :class:`mbkron.integrate.trajectory.LastEvaluation`). :meth:`step`
    hands out one step at a time (scipy's contract: ``t``, ``y``, :meth:`dense_output` of that step), and a call
    ends after any step a caller's check may stop at — a coordinate leaving ``[lower, upper]`` (``bounds``), a
    step shorter than ``stops[0]`` times the longest so far or ``stops[1]`` times the interval still to go — so
    that the right-hand side has been evaluated at the same states as when stepping one by one
    (``steps_per_call`` None: :data:`STEPS_PER_CALL`; 1 for a caller that changes the solver's state between
    steps). The solver's state lives in arrays the kernel updates in place. A step the kernel declines (its
    right-hand side declines a state: a damped or subdivided constraint solve, a singular matrix) is redone by
    :meth:`TRBDF2._step_impl` with ``fun`` and ``jac``, which reports the reason if it fails too. Only dense
    Jacobians; ``fun`` and ``jac`` are the Python route of the same right-hand side.
    """

    def __init__(self, fun: Callable, t0: float, y0: ArrayLike, t_bound: float, state_kernel: Any,
                 output_times: ArrayLike | None = None, *, last: Any = None,
                 bounds: tuple[ArrayLike, ArrayLike] | None = None, stops: tuple[float, float] = (0.0, 0.0),
                 steps_per_call: int | None = None, **options: Any) -> None:
        # The first Jacobian is the kernel's own: instead of TRBDF2.__init__ evaluating ``jac`` at (t0, y0), J is
        # marked due, so that the first step evaluates it there by the same central differences (the implicit
        # solvers' Jacobian kernel is then not compiled for a TR-BDF2 run). A step the kernel declines is redone
        # in Python with ``jac`` itself.
        jac = options.get("jac")
        if callable(jac):
            options = dict(options, jac=np.zeros((np.size(y0), np.size(y0))))
        super().__init__(fun, t0, y0, t_bound, **options)
        n = self.n
        if callable(jac):
            self.jac, self.current_jac, self.jac_age = self._counting(jac), False, MAX_JAC_AGE
        self.state_kernel, self.last = state_kernel, last
        self._runs = StepRuns(n // 2, output_times, bounds, stops,
                              STEPS_PER_CALL if steps_per_call is None else steps_per_call)
        self._runs.limits[kernel.EVERY_STEP] = output_times is None and last is not None
        self._J = np.array(self.J, dtype=float)
        self._lu, self._piv = np.zeros((n, n)), np.zeros(n, dtype=np.int64)
        self._tolerances = tuple(np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
                                 for v in (self.rtol, self.atol))
        self._memory = np.zeros(kernel.MEMORY_SIZE)
        self._counts = np.zeros(3, dtype=np.int64)
        self._rows = None  # the rows of the run's output times the last step reached (output_rows)
        self._taken = None  # the last kernel call's steps (_call) and how many have been handed out
        self._to_memory()
        state_kernel.load()  # continue from where the Python route's first evaluations left the workspace

    def _to_memory(self) -> None:
        """The Python attributes into the arrays the kernel reads."""
        memory = self._memory
        memory[kernel.H_ABS] = self.h_abs
        memory[kernel.LU_H] = np.nan if self.lu_h is None else self.lu_h
        memory[kernel.NEWTON_RATE] = np.nan if self.newton_rate is None else self.newton_rate
        memory[kernel.CURRENT_JAC] = self.current_jac
        memory[kernel.JAC_AGE] = self.jac_age
        memory[kernel.JAC_STEP] = self.jac_step
        memory[kernel.LU_VALID] = self.lu_data is not None
        if self.lu_data is not None and self.lu_data[0] is not self._lu:
            self._lu[:], self._piv[:] = self.lu_data
        if self.J is not self._J:
            self._J[:] = self.J
        self.J = self._J

    def _from_memory(self) -> None:
        """The arrays the kernel wrote back into the Python attributes."""
        memory = self._memory
        self.h_abs = float(memory[kernel.H_ABS])
        self.lu_h = None if np.isnan(memory[kernel.LU_H]) else float(memory[kernel.LU_H])
        self.newton_rate = None if np.isnan(memory[kernel.NEWTON_RATE]) else float(memory[kernel.NEWTON_RATE])
        self.current_jac = bool(memory[kernel.CURRENT_JAC])
        self.jac_age = int(memory[kernel.JAC_AGE])
        self.jac_step = float(memory[kernel.JAC_STEP])
        self.lu_data = (self._lu, self._piv) if memory[kernel.LU_VALID] else None

    def output_rows(self, times: NDArray[np.float64]) -> tuple[NDArray, NDArray] | None:
        """States (k, n) and accelerations (k, n/2) at ``times`` inside the last step (its Hermite interpolant and
        the right-hand side there): those the kernel gave after the step, when ``times`` are the run's output
        times it reached; else None (the kernel declined one, or other times: the caller evaluates them)."""
        rows, self._rows = self._rows, None
        if rows is not None and rows[0].shape == times.shape and rows[0].tobytes() == times.tobytes():
            return rows[1], rows[2][:, self.n // 2:]
        return None

    def _call(self) -> None:
        """Up to ``steps_per_call`` steps from the current state in one kernel call, to be handed out by
        :meth:`_step_impl`."""
        rtol, atol = self._tolerances
        runs = self._runs
        pending = runs.pending(self.t, self.direction)
        outcome, accepted, record, row_end, states, derivatives = self.state_kernel.steps(
            self.t, self.y, self.yp, self.t_bound, float(self.direction), self.max_step, rtol, atol, self.newton_tol,
            self.n // 2, self.J, self._lu, self._piv, self._memory, self._counts, times=pending, limits=runs.limits,
            lower=runs.lower, upper=runs.upper, max_steps=runs.steps_per_call)
        self.nfev, self.njev, self.nlu = (total + int(c) for total, c in zip((self.nfev, self.njev, self.nlu),
                                                                           self._counts))
        self._counts[:] = 0
        self._taken = [0, int(accepted), outcome, record, row_end.tolist(), states, derivatives, pending]

    def _step_impl(self) -> tuple[bool, str | None]:
        self._rows = None
        if self._taken is None:
            self._call()
        taken = self._taken
        k, accepted, outcome, record, row_end, states, derivatives, pending = taken
        if k < accepted:  # hand out the next step the kernel took
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
            return True, None
        self._taken = None  # the step the kernel could not take
        self._from_memory()
        if outcome == kernel.STEP_TOO_SMALL:
            return False, self.TOO_SMALL_STEP
        self.state_kernel.store()  # declined: the Python route redoes the step from the continuation reached
        t = self.t
        try:
            success, message = super()._step_impl()
        finally:
            self.state_kernel.load()
            self._to_memory()
        if success:
            self._runs.stepped(abs(self.t - t))
        return success, message
