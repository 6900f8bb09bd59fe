"""Runge-Kutta-Fehlberg 4(5) as a :class:`scipy.integrate.OdeSolver`.

:class:`RKF45` is Fehlberg's explicit six-stage pair [1]_, advancing the fourth-order
solution as the classical RKF45 code does [2]_, with a C1 cubic Hermite interpolant. It is
passed to :func:`scipy.integrate.solve_ivp` as ``method=RKF45``.

References
----------
.. [1] E. Fehlberg, "Low-order classical Runge-Kutta formulas with stepsize
       control and their application to some heat transfer problems",
       NASA Technical Report R-315, 1969.
.. [2] G. E. Forsythe, M. A. Malcolm and C. B. Moler, "Computer Methods for
       Mathematical Computations", Prentice-Hall, 1977, Chapter 6 (RKF45).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import OdeSolver

from mbkron.integrate.common import (
    HermiteDenseOutput,
    min_step,
    rms_norm,
    select_initial_step,
    validate_first_step,
    validate_max_step,
    validate_tolerances,
    warn_extraneous,
)

__all__ = ["RKF45"]

SAFETY = 0.9
"""Safety factor of the step-size prediction (as scipy's explicit Runge-Kutta solvers)."""
MIN_FACTOR = 0.2
"""Smallest change factor of ``h`` after a rejected step."""
MAX_FACTOR = 10.0
"""Largest change factor of ``h`` after an accepted step."""


class RKF45(OdeSolver):
    """Explicit Runge-Kutta-Fehlberg 4(5) method advancing the fourth-order solution.

    Uses Fehlberg's six-stage pair [1]_. As in the classical RKF45 code [2]_ the
    fourth-order result is propagated and the difference between the fourth- and
    fifth-order results is its local error estimate (no local extrapolation),
    measured in the RMS norm relative to ``atol + rtol*max(|y_old|, |y_new|)``.
    A step is accepted when that norm ``err`` is below 1; the next step size is
    ``h * min(10, 0.9 * err**(-1/5))`` (not increased after a rejection within the
    step), a rejected step is retried with ``h * max(0.2, 0.9 * err**(-1/5))``. The
    slope at the end of an accepted step is the first stage of the next, so a step
    costs six evaluations (a rejected attempt five). Dense output is the cubic
    Hermite interpolant through the step's end values and slopes (C1 globally,
    local error ``O(h**4)``). Complex states are supported.

    Parameters
    ----------
    fun : callable
        Right-hand side ``fun(t, y)``.
    t0 : float
        Initial time.
    y0 : array_like, shape (n,)
        Initial state (real or complex).
    t_bound : float
        Boundary time; the integration direction is ``sign(t_bound - t0)``.
    max_step : float, optional
        Largest step size allowed. Default ``np.inf``.
    rtol, atol : float or array_like, optional
        Relative and absolute tolerances (scalars or shape ``(n,)``); non-positive
        ``rtol`` or negative ``atol`` raise `ValueError`. Defaults 1e-3 and 1e-6.
    vectorized : bool, optional
        Whether ``fun`` is vectorized (unused by explicit methods).
    first_step : float or None, optional
        Initial step size; ``None`` (default) lets the solver choose.
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
    f : ndarray
        ``fun(t, y)``, the first stage of the next step.
    step_size : float or None
        Size of the last successful step.
    nfev, njev, nlu : int
        Right-hand-side evaluations; no Jacobians or LU factorisations (always 0).

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
    >>> from mbkron.integrate import RKF45
    >>> sol = solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0], method=RKF45, rtol=1e-8,
    ...                 atol=1e-10)
    >>> round(float(sol.y[0, -1]), 6)
    0.367879
    """

    C = np.array([0, 1 / 4, 3 / 8, 12 / 13, 1, 1 / 2])
    """Stage times as fractions of the step."""
    A = np.array([
        [0, 0, 0, 0, 0],
        [1 / 4, 0, 0, 0, 0],
        [3 / 32, 9 / 32, 0, 0, 0],
        [1932 / 2197, -7200 / 2197, 7296 / 2197, 0, 0],
        [439 / 216, -8, 3680 / 513, -845 / 4104, 0],
        [-8 / 27, 2, -3544 / 2565, 1859 / 4104, -11 / 40],
    ])
    """Stage coefficients: row ``s`` weights stages ``0 .. s-1``."""
    B = np.array([25 / 216, 0, 1408 / 2565, 2197 / 4104, -1 / 5, 0])
    """Fourth-order weights (the propagated solution)."""
    B5 = np.array([16 / 135, 0, 6656 / 12825, 28561 / 56430, -9 / 50, 2 / 55])
    """Fifth-order weights (used only for the error estimate)."""
    E = B - B5
    """Error weights: the local error estimate is ``h * E @ K``."""
    ERROR_EXPONENT = -1 / 5
    """The controlled local error behaves like ``h**5``."""

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
        warn_extraneous(extraneous)
        super().__init__(fun, t0, y0, t_bound, vectorized, support_complex=True)
        self.max_step = validate_max_step(max_step)
        self.rtol, self.atol = validate_tolerances(rtol, atol, self.n)
        self.f = self.fun(self.t, self.y)
        if first_step is None:
            self.h_abs = select_initial_step(
                self.fun, self.t, self.y, self.f, self.direction, 4,
                self.rtol, self.atol, t_bound, self.max_step,
            )
        else:
            self.h_abs = validate_first_step(first_step, t0, t_bound)
        self.y_old: NDArray | None = None
        self.f_old: NDArray | None = None

    def _attempt(self, h: float) -> tuple[NDArray, NDArray]:
        """One step of signed size ``h``: the fourth-order result and its error estimate."""
        K = np.empty((self.C.size, self.n), dtype=self.y.dtype)
        K[0] = self.f
        for s in range(1, self.C.size):
            K[s] = self.fun(self.t + self.C[s] * h, self.y + h * (self.A[s, :s] @ K[:s]))
        return self.y + h * (self.B @ K), h * (self.E @ K)

    def _step_impl(self) -> tuple[bool, str | None]:
        t, y = self.t, self.y
        smallest = min_step(t, self.direction)
        h_abs = max(min(self.h_abs, self.max_step), smallest)
        rejected = False
        while True:
            if h_abs < smallest:
                return False, self.TOO_SMALL_STEP
            t_new = t + self.direction * h_abs
            if self.direction * (t_new - self.t_bound) > 0:
                t_new = self.t_bound
            h = t_new - t
            h_abs = abs(h)
            y_new, error = self._attempt(h)
            scale = self.atol + self.rtol * np.maximum(np.abs(y), np.abs(y_new))
            error_norm = rms_norm(error / scale)
            if error_norm < 1:
                break
            h_abs *= max(MIN_FACTOR, SAFETY * error_norm**self.ERROR_EXPONENT)
            rejected = True

        factor = MAX_FACTOR if error_norm == 0 else min(
            MAX_FACTOR, SAFETY * error_norm**self.ERROR_EXPONENT
        )
        self.h_abs = h_abs * (min(1.0, factor) if rejected else factor)
        self.y_old, self.f_old = y, self.f
        self.t, self.y = t_new, y_new
        self.f = self.fun(t_new, y_new)
        return True, None

    def _dense_output_impl(self) -> HermiteDenseOutput:
        return HermiteDenseOutput(
            [self.t_old, self.t], [self.y_old, self.y], [self.f_old, self.f]
        )
