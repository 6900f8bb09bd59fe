"""ODE solvers for :func:`scipy.integrate.solve_ivp`: TR-BDF2 and Fehlberg 4(5).

Both classes subclass :class:`scipy.integrate.OdeSolver` and are passed to
``solve_ivp`` as ``method=TRBDF2`` or ``method=RKF45``; events, dense output,
``t_eval`` and backward integration are then handled by ``solve_ivp`` itself.

* :class:`TRBDF2` -- the one-step, L-stable, second-order TR-BDF2 formula of
  Bank et al. [1]_ implemented as in Hosea and Shampine [2]_ and MATLAB's
  ``ode23tb`` [3]_: a trapezoidal stage to ``t + gamma*h`` and a BDF2 stage to
  ``t + h`` sharing one LU factorisation of ``I - d*h*J``, simplified Newton
  iterations with Jacobian reuse, a filtered embedded third-order error
  estimate and a C1 piecewise cubic Hermite interpolant.
* :class:`RKF45` -- the explicit Runge-Kutta-Fehlberg 4(5) pair [4]_,
  advancing the fourth-order solution as the classical RKF45 code does [5]_,
  with a C1 cubic Hermite interpolant.

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
.. [4] E. Fehlberg, "Low-order classical Runge-Kutta formulas with stepsize
       control and their application to some heat transfer problems",
       NASA Technical Report R-315, 1969.
.. [5] G. E. Forsythe, M. A. Malcolm and C. B. Moler, "Computer Methods for
       Mathematical Computations", Prentice-Hall, 1977, Chapter 6 (RKF45).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import DenseOutput, OdeSolver
from scipy.integrate._ivp.common import num_jac  # private; used as scipy's Radau/BDF do
from scipy.integrate._ivp.rk import RungeKutta  # private; behaviour pinned by tests
from scipy.linalg import lu_factor, lu_solve
from scipy.optimize._numdiff import group_columns  # private; as scipy's Radau/BDF
from scipy.sparse import csc_matrix, eye, issparse
from scipy.sparse.linalg import splu

__all__ = ["RKF45", "TRBDF2", "TRBDF2DenseOutput"]

EPS = np.finfo(float).eps

# --- TR-BDF2 coefficients (Hosea & Shampine 1996) ---------------------------
GAMMA = 2.0 - np.sqrt(2.0)
"""Fraction of the step covered by the trapezoidal stage; makes TR-BDF2 L-stable."""
D = GAMMA / 2.0
"""Diagonal coefficient of both implicit stages: the matrix is ``I - D*h*J``."""
W = np.sqrt(2.0) / 4.0
"""Weight of the first two stage derivatives in the BDF2 stage, ``(1 - D)/2``."""
ERROR_WEIGHTS = np.array([(GAMMA - 1.0) / 3.0, 1.0 / 3.0, -GAMMA / 3.0])
"""Third-order embedded minus second-order weights, applied to ``h*f`` of the stages."""
STAGE3_PREDICTOR = np.array([1.0 - 1.0 / GAMMA, 1.0 / GAMMA])
"""Linear extrapolation of the slope through ``t`` and ``t + GAMMA*h`` to ``t + h``."""

# --- TR-BDF2 control parameters (after ode23tb and scipy's Radau/BDF) -------
NEWTON_MAXITER = 5
"""Simplified Newton iterations allowed per stage (ode23tb)."""
SAFETY = 0.7
"""Safety factor of the step-size prediction (ode23tb's 1/1.43)."""
MIN_REJECT_FACTOR = 0.1
"""Largest reduction of ``h`` after an error-test failure (ode23tb)."""
NEWTON_FAIL_FACTOR = 0.3
"""Reduction of ``h`` after a Newton failure with a current Jacobian (ode23tb)."""
MIN_FACTOR = 0.2
"""Smallest change factor of ``h`` after an accepted step (ode23tb)."""
MAX_FACTOR = 5.0
"""Largest change factor of ``h`` after an accepted step (ode23tb)."""
HOLD_BAND = 0.2
"""``h`` is kept when the predicted factor is within ``1 +- HOLD_BAND`` (saves an LU)."""
STRETCH = 1.1
"""The step is stretched to ``t_bound`` when ``STRETCH*|h|`` reaches it (ode23tb)."""
UNFILTERED_WEIGHT = 1.0 / 16.0
"""Weight of the unfiltered estimate in ``max(|filtered|, |unfiltered|/16)`` (ode23tb)."""
MAX_JAC_AGE = 50
"""Accepted steps after which an out-of-date Jacobian is re-evaluated (CVODE's MSBJ)."""
JAC_STEP_RATIO = 10.0
"""An out-of-date Jacobian is re-evaluated when ``|h|`` differs from the step size it
was evaluated for by more than this factor."""


def _rms_norm(x: NDArray[np.float64]) -> float:
    """Root-mean-square norm, the norm scipy's solvers apply to scaled errors."""
    return float(np.linalg.norm(x) / np.sqrt(x.size))


def _warn_extraneous(extraneous: dict[str, Any]) -> None:
    """Warn about keyword arguments the solver does not use, as scipy does."""
    if extraneous:
        names = ", ".join(f"`{name}`" for name in extraneous)
        warnings.warn(
            f"The following arguments have no effect for a chosen solver: {names}.",
            stacklevel=4,
        )


def _check_tolerances(rtol: ArrayLike, atol: ArrayLike, n: int) -> None:
    """Raise `ValueError` for unusable tolerances.

    ``rtol`` and ``atol`` must be scalars or of shape ``(n,)`` and finite, ``rtol``
    positive and ``atol`` non-negative (scipy only warns about, and clips, a
    negative ``rtol``).
    """
    for name, value in (("rtol", np.asarray(rtol, dtype=float)),
                        ("atol", np.asarray(atol, dtype=float))):
        if value.ndim > 0 and value.shape != (n,):
            raise ValueError(
                f"`{name}` has wrong shape: expected a scalar or shape {(n,)}, "
                f"got shape {value.shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"`{name}` must be finite.")
    if np.any(np.asarray(rtol, dtype=float) <= 0):
        raise ValueError(f"`rtol` must be positive, got {rtol!r}.")
    if np.any(np.asarray(atol, dtype=float) < 0):
        raise ValueError(f"`atol` must be non-negative, got {atol!r}.")


def _validate_tolerances(
    rtol: ArrayLike, atol: ArrayLike, n: int
) -> tuple[float | NDArray[np.float64], float | NDArray[np.float64]]:
    """Check ``rtol`` and ``atol`` and return them as floats or ``(n,)`` arrays.

    See `_check_tolerances` for the errors raised; an ``rtol`` below ``100*eps``
    is raised to it with a warning, as scipy's solvers do.
    """
    _check_tolerances(rtol, atol, n)
    rtol_arr = np.asarray(rtol, dtype=float)
    atol_arr = np.asarray(atol, dtype=float)
    if np.any(rtol_arr < 100 * EPS):
        warnings.warn(
            "At least one element of `rtol` is too small. "
            f"Setting `rtol = np.maximum(rtol, {100 * EPS})`.",
            stacklevel=4,
        )
        rtol_arr = np.maximum(rtol_arr, 100 * EPS)
    rtol_out = float(rtol_arr) if rtol_arr.ndim == 0 else rtol_arr
    atol_out = float(atol_arr) if atol_arr.ndim == 0 else atol_arr
    return rtol_out, atol_out


def _validate_max_step(max_step: float) -> float:
    """Return ``max_step`` after checking it is positive."""
    if not max_step > 0:
        raise ValueError(f"`max_step` must be positive, got {max_step!r}.")
    return float(max_step)


def _validate_first_step(first_step: float, t0: float, t_bound: float) -> float:
    """Return ``first_step`` after checking it is positive and within the interval."""
    if not first_step > 0:
        raise ValueError(f"`first_step` must be positive, got {first_step!r}.")
    if first_step > abs(t_bound - t0):
        raise ValueError("`first_step` exceeds bounds.")
    return float(first_step)


def _select_initial_step(
    fun: Callable[[float, NDArray[np.float64]], NDArray[np.float64]],
    t0: float,
    y0: NDArray[np.float64],
    f0: NDArray[np.float64],
    direction: float,
    error_order: int,
    rtol: float | NDArray[np.float64],
    atol: float | NDArray[np.float64],
    t_bound: float,
    max_step: float,
) -> float:
    """Choose a first step from one explicit Euler probe.

    Algorithm of Hairer, Norsett & Wanner, *Solving ODEs I*, Sec. II.4, as in
    scipy's solvers: ``error_order`` is the power ``p`` for which the controlled
    local error behaves like ``h**(p+1)``.
    """
    interval = abs(t_bound - t0)
    if y0.size == 0 or interval == 0:
        return interval
    scale = atol + np.abs(y0) * rtol
    d0 = _rms_norm(y0 / scale)
    d1 = _rms_norm(f0 / scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, interval)
    f1 = fun(t0 + direction * h0, y0 + direction * h0 * f0)
    d2 = _rms_norm((f1 - f0) / scale) / h0
    if max(d1, d2) <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / (error_order + 1))
    return min(100 * h0, h1, interval, max_step)


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
    ``(t + h, y_new, z_3/h)`` [2]_ (:class:`TRBDF2DenseOutput`). Because the end
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
        matrix; ``None`` (default) uses finite differences (scipy's ``num_jac``).
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
    >>> from mbkron.integrate.solvers import TRBDF2
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
        _warn_extraneous(extraneous)
        super().__init__(fun, t0, y0, t_bound, vectorized)
        self.max_step = _validate_max_step(max_step)
        self.rtol, self.atol = _validate_tolerances(rtol, atol, self.n)
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
            self.h_abs = _select_initial_step(
                self.fun, self.t, self.y, self.yp, self.direction, 2,
                self.rtol, self.atol, t_bound, self.max_step,
            )
        else:
            self.h_abs = _validate_first_step(first_step, t0, t_bound)
        self.jac_step = self.h_abs  # step size J was evaluated for

        self.y_old: NDArray[np.float64] | None = None
        self.yp_old: NDArray[np.float64] | None = None
        self.y_mid: NDArray[np.float64] | None = None
        self.yp_mid: NDArray[np.float64] | None = None

    def _validate_jac(self, jac: Any, sparsity: Any) -> tuple[Callable | None, Any]:
        """Return ``(jac_wrapped, J0)``; ``jac_wrapped`` is None for a constant Jacobian.

        ``jac_wrapped(t, y)`` evaluates the Jacobian at ``(t, y)`` and counts it in
        ``njev``; for finite differences it also evaluates ``fun(t, y)`` (counted
        in ``nfev``), because the carried-over slope is only a Newton iterate.
        """
        if jac is None:
            if sparsity is not None:
                if issparse(sparsity):
                    sparsity = csc_matrix(sparsity)
                sparsity = (sparsity, group_columns(sparsity))

            def jac_wrapped(t: float, y: NDArray[np.float64]) -> Any:
                self.njev += 1
                J, self.jac_factor = num_jac(
                    self.fun_vectorized, t, y, self.fun(t, y), self.atol, self.jac_factor,
                    sparsity,
                )
                return J

            self.njev += 1
            J, self.jac_factor = num_jac(
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

                def jac_wrapped(t: float, y: NDArray[np.float64]) -> Any:
                    self.njev += 1
                    return np.asarray(jac(t, y), dtype=float)

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
        return lu_solve(self.lu_data, rhs)

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
            dy_norm = _rms_norm(D * dz / scale)
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
        min_step = 10 * np.abs(np.nextafter(t, self.direction * np.inf) - t)
        h_abs = max(min(self.h_abs, self.max_step), min_step)
        no_failures = True
        while True:
            if h_abs < min_step:
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
                _rms_norm(self._solve_lu(estimate) / scale),
                UNFILTERED_WEIGHT * _rms_norm(estimate / scale),
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

    def _dense_output_impl(self) -> TRBDF2DenseOutput:
        return TRBDF2DenseOutput(
            self.t_old, self.t, self.y_old, self.yp_old, self.y_mid, self.yp_mid,
            self.y, self.yp,
        )


class TRBDF2DenseOutput(DenseOutput):
    """C1 piecewise cubic Hermite interpolant over one TR-BDF2 step.

    The step ``[t_old, t]`` is split at ``t_mid = t_old + gamma*(t - t_old)``;
    on each piece the cubic matches the values and slopes at its ends
    (Hosea & Shampine 1996). Evaluation outside the step extrapolates
    the nearer piece.

    Parameters
    ----------
    t_old, t : float
        Start and end of the step.
    y_old, yp_old, y_mid, yp_mid, y, yp : ndarray, shape (n,)
        Values and slopes at ``t_old``, ``t_mid`` and ``t``.
    """

    def __init__(
        self,
        t_old: float,
        t: float,
        y_old: NDArray[np.float64],
        yp_old: NDArray[np.float64],
        y_mid: NDArray[np.float64],
        yp_mid: NDArray[np.float64],
        y: NDArray[np.float64],
        yp: NDArray[np.float64],
    ) -> None:
        super().__init__(t_old, t)
        self.t_mid = t_old + GAMMA * (t - t_old)
        self.first_length = self.t_mid - t_old  # signed, like the step
        self.second_length = t - self.t_mid
        self.first = self._hermite_coefficients(y_old, yp_old, y_mid, yp_mid, self.first_length)
        self.second = self._hermite_coefficients(y_mid, yp_mid, y, yp, self.second_length)

    @staticmethod
    def _hermite_coefficients(
        ya: NDArray[np.float64],
        fa: NDArray[np.float64],
        yb: NDArray[np.float64],
        fb: NDArray[np.float64],
        length: float,
    ) -> NDArray[np.float64]:
        """Rows ``c_k`` with ``y(s) = sum_k c_k s**k`` on ``s in [0, 1]``."""
        delta = yb - ya
        return np.array([
            ya,
            length * fa,
            3 * delta - length * (2 * fa + fb),
            length * (fa + fb) - 2 * delta,
        ])

    def _call_impl(self, t: NDArray[np.float64]) -> NDArray[np.float64]:
        in_first = (t - self.t_mid) * (self.t - self.t_old) < 0
        s_first = (t - self.t_old) / self.first_length
        s_second = (t - self.t_mid) / self.second_length
        s = np.where(in_first, s_first, s_second)
        powers = np.stack([np.ones_like(s), s, s * s, s * s * s])  # (4,) or (4, m)
        if t.ndim == 0:
            coefficients = self.first if in_first else self.second
            return powers @ coefficients
        first = self.first.T @ powers
        second = self.second.T @ powers
        return np.where(in_first, first, second)


class RKF45(RungeKutta):
    """Explicit Runge-Kutta-Fehlberg 4(5) method advancing the fourth-order solution.

    Uses Fehlberg's six-stage pair [1]_. As in the classical RKF45 code [2]_ the
    fourth-order result is propagated and the difference between the fifth- and
    fourth-order results is its local error estimate (no local extrapolation),
    so the step-size exponent is ``-1/5``. Dense output is the cubic Hermite
    interpolant through the step's end values and slopes (C1 globally, local
    error ``O(h**4)``).

    The stepping loop, step-size control (safety 0.9, factors in [0.2, 10]),
    initial-step selection and complex-domain support are those of scipy's
    private ``scipy.integrate._ivp.rk.RungeKutta`` base class, which this class
    parametrises with the Fehlberg tableau (``tests/test_integrate.py`` pins the
    resulting behaviour). The slope at the end of a step is evaluated once and
    reused as the first stage of the next, so a step costs six evaluations.

    Parameters
    ----------
    fun : callable
        Right-hand side ``fun(t, y)``.
    t0 : float
        Initial time.
    y0 : array_like, shape (n,)
        Initial state (real or complex).
    t_bound : float
        Boundary time.
    first_step : float or None, optional
        Initial step size; ``None`` (default) lets the solver choose.
    max_step : float, optional
        Largest step size allowed. Default ``np.inf``.
    rtol, atol : float or array_like, optional
        Relative and absolute tolerances; non-positive ``rtol`` or negative
        ``atol`` raise `ValueError`. Defaults 1e-3 and 1e-6.
    vectorized : bool, optional
        Whether ``fun`` is vectorized (unused by explicit methods).
    **extraneous
        Other keyword arguments are ignored with a warning.

    References
    ----------
    .. [1] E. Fehlberg, "Low-order classical Runge-Kutta formulas with stepsize
           control and their application to some heat transfer problems",
           NASA Technical Report R-315, 1969.
    .. [2] G. E. Forsythe, M. A. Malcolm and C. B. Moler, "Computer Methods for
           Mathematical Computations", Prentice-Hall, 1977, Chapter 6.

    Examples
    --------
    >>> from scipy.integrate import solve_ivp
    >>> from mbkron.integrate.solvers import RKF45
    >>> sol = solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0], method=RKF45, rtol=1e-8,
    ...                 atol=1e-10)
    >>> round(float(sol.y[0, -1]), 6)
    0.367879
    """

    order = 4
    error_estimator_order = 4
    n_stages = 6
    C = np.array([0, 1 / 4, 3 / 8, 12 / 13, 1, 1 / 2])
    A = np.array([
        [0, 0, 0, 0, 0],
        [1 / 4, 0, 0, 0, 0],
        [3 / 32, 9 / 32, 0, 0, 0],
        [1932 / 2197, -7200 / 2197, 7296 / 2197, 0, 0],
        [439 / 216, -8, 3680 / 513, -845 / 4104, 0],
        [-8 / 27, 2, -3544 / 2565, 1859 / 4104, -11 / 40],
    ])
    B = np.array([25 / 216, 0, 1408 / 2565, 2197 / 4104, -1 / 5, 0])
    """Fourth-order weights (the propagated solution)."""
    B5 = np.array([16 / 135, 0, 6656 / 12825, 28561 / 56430, -9 / 50, 2 / 55])
    """Fifth-order weights (used only for the error estimate)."""
    E = np.append(B - B5, 0.0)
    """Error weights on the stages and the end slope (scipy's ``RungeKutta`` layout)."""
    P = np.zeros((n_stages + 1, 3))
    """Cubic Hermite interpolant: ``y(x) = y_old + h * (K.T @ P) @ [x, x**2, x**3]``."""
    P[0] = [1.0, -2.0, 1.0]
    P[-1] = [0.0, -1.0, 1.0]
    P[:-1, 1] += 3 * B
    P[:-1, 2] -= 2 * B

    def __init__(
        self,
        fun: Callable[[float, NDArray], ArrayLike],
        t0: float,
        y0: ArrayLike,
        t_bound: float,
        max_step: float = np.inf,
        rtol: ArrayLike = 1e-3,
        atol: ArrayLike = 1e-6,
        vectorized: bool = False,
        first_step: float | None = None,
        **extraneous: Any,
    ) -> None:
        # Stricter than scipy, which clips a negative rtol with a warning.
        _check_tolerances(rtol, atol, np.size(y0))
        super().__init__(
            fun, t0, y0, t_bound, max_step=max_step, rtol=rtol, atol=atol,
            vectorized=vectorized, first_step=first_step, **extraneous,
        )
