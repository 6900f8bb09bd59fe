"""Shared parts of mbkron's ``OdeSolver`` classes: option checks, first step, Hermite output.

:class:`~mbkron.integrate.trbdf2.TRBDF2` and :class:`~mbkron.integrate.rkf45.RKF45` check
their options here (more strictly than scipy, which clips a non-positive ``rtol`` with a
warning), choose the first step with the same algorithm and interpolate with
:class:`HermiteDenseOutput`. Only public scipy API is used.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import DenseOutput

__all__ = [
    "EPS",
    "HermiteDenseOutput",
    "StepRuns",
    "min_step",
    "rms_norm",
    "select_initial_step",
    "validate_first_step",
    "validate_max_step",
    "validate_tolerances",
    "warn_extraneous",
]

EPS = np.finfo(float).eps


class StepRuns:
    """What a solver with compiled runs of steps (:class:`~mbkron.integrate.trbdf2.CompiledTRBDF2`, the compiled
    Runge–Kutta solvers of :mod:`mbkron.integrate.runge_kutta`) hands its stepping kernel besides its state: the
    run's output times still to come, the ``limits`` array of :mod:`mbkron.numerics.runs` and the coordinates'
    range ends, and how many steps a call may take.

    Parameters
    ----------
    nq : int
        Coordinates (the first ``nq`` entries of the state).
    output_times : array_like or None
        The run's output times, in order.
    bounds : (lower, upper) or None
        The coordinates' range ends (None: none).
    stops : (float, float)
        ``limits[SCREEN]``, ``limits[STALL]`` (:mod:`mbkron.numerics.runs`).
    steps_per_call : int
        At least 1.
    """

    def __init__(self, nq: int, output_times: ArrayLike | None, bounds: tuple[ArrayLike, ArrayLike] | None,
                 stops: tuple[float, float], steps_per_call: int) -> None:
        from mbkron.numerics import runs  # here: numba is imported with the kernels, not with this module

        if not isinstance(steps_per_call, (int, np.integer)) or steps_per_call < 1:
            raise ValueError(f"`steps_per_call` must be a positive integer, got {steps_per_call!r}")
        self.steps_per_call = int(steps_per_call)
        # own, writable arrays: the kernel's one specialisation
        self.times = np.zeros(0) if output_times is None else np.array(output_times, dtype=float)
        self._next = 0
        self.limits = np.zeros(runs.LIMITS_SIZE)
        self.limits[runs.SCREEN], self.limits[runs.STALL] = stops
        lower, upper = (-np.inf, np.inf) if bounds is None else bounds
        self.lower, self.upper = (np.array(np.broadcast_to(np.asarray(b, dtype=float), (nq,))) for b in (lower, upper))
        self._longest = runs.LONGEST

    def pending(self, t: float, direction: float) -> NDArray[np.float64]:
        """The output times after ``t`` (in the direction of the run), in order."""
        times, k = self.times, self._next
        while k < times.size and direction * (times[k] - t) <= 0:
            k += 1
        self._next = k
        return times[k:]

    def stepped(self, size: float) -> None:
        """Count a step the solver took in Python (of ``|h| = size``) in the longest step so far."""
        self.limits[self._longest] = max(self.limits[self._longest], size)


def rms_norm(x: NDArray) -> float | NDArray:
    """Root-mean-square norm, the norm scipy's solvers apply to scaled errors; of each row for a batch
    ``x`` of shape (K, n)."""
    if x.ndim == 1:
        return float(np.linalg.norm(x) / np.sqrt(x.size))
    return np.linalg.norm(x, axis=-1) / np.sqrt(x.shape[-1])


def min_step(t: float, direction: float) -> float:
    """Smallest step the solvers take from ``t``: ten spacings of floating-point numbers at ``t``.

    A step that would have to be smaller fails with ``OdeSolver.TOO_SMALL_STEP``, as in scipy.
    """
    return 10 * abs(float(np.nextafter(t, direction * np.inf)) - t)


def warn_extraneous(extraneous: dict[str, Any]) -> None:
    """Warn about keyword arguments a solver does not use, as scipy does.

    Called from a solver's ``__init__``; the warning points at the caller of
    ``solve_ivp`` (or of the solver class when that is called directly).
    """
    if extraneous:
        names = ", ".join(f"`{name}`" for name in extraneous)
        warnings.warn(
            f"The following arguments have no effect for a chosen solver: {names}.",
            stacklevel=4,
        )


def validate_tolerances(
    rtol: ArrayLike, atol: ArrayLike, n: int
) -> tuple[float | NDArray[np.float64], float | NDArray[np.float64]]:
    """Check ``rtol`` and ``atol`` and return them as floats or ``(n,)`` arrays.

    Parameters
    ----------
    rtol, atol : float or array_like
        Relative and absolute tolerances, scalars or of shape ``(n,)``.
    n : int
        Number of equations.

    Returns
    -------
    rtol, atol : float or ndarray, shape (n,)
        ``rtol`` raised to at least ``100*eps`` (with a warning, as scipy does).

    Raises
    ------
    ValueError
        If a tolerance has another shape or is not finite, ``rtol`` is not
        positive or ``atol`` is negative.
    """
    values = {"rtol": np.asarray(rtol, dtype=float), "atol": np.asarray(atol, dtype=float)}
    for name, value in values.items():
        if value.ndim > 0 and value.shape != (n,):
            raise ValueError(
                f"`{name}` has wrong shape: expected a scalar or shape {(n,)}, "
                f"got shape {value.shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"`{name}` must be finite.")
    rtol_arr, atol_arr = values["rtol"], values["atol"]
    if np.any(rtol_arr <= 0):
        raise ValueError(f"`rtol` must be positive, got {rtol!r}.")
    if np.any(atol_arr < 0):
        raise ValueError(f"`atol` must be non-negative, got {atol!r}.")
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


def validate_max_step(max_step: float) -> float:
    """Return ``max_step`` after checking it is positive."""
    if not max_step > 0:
        raise ValueError(f"`max_step` must be positive, got {max_step!r}.")
    return float(max_step)


def validate_first_step(first_step: float, t0: float, t_bound: float) -> float:
    """Return ``first_step`` after checking it is positive and within the interval."""
    if not first_step > 0:
        raise ValueError(f"`first_step` must be positive, got {first_step!r}.")
    if first_step > abs(t_bound - t0):
        raise ValueError(
            f"`first_step` exceeds bounds: expected at most |t_bound - t0| = "
            f"{abs(t_bound - t0)!r}, got {first_step!r}."
        )
    return float(first_step)


def select_initial_step(
    fun: Callable[[float, NDArray], NDArray],
    t0: float,
    y0: NDArray,
    f0: NDArray,
    direction: float,
    error_order: int,
    rtol: float | NDArray[np.float64],
    atol: float | NDArray[np.float64],
    t_bound: float,
    max_step: float,
) -> float:
    """Choose a first step from one explicit Euler probe.

    Algorithm of Hairer, Norsett & Wanner, *Solving ODEs I*, Sec. II.4, as in
    scipy's solvers.

    Parameters
    ----------
    fun : callable
        Right-hand side ``fun(t, y)``.
    t0 : float
        Initial time.
    y0, f0 : ndarray, shape (n,) or (K, n)
        Initial state and ``fun(t0, y0)``; a batch of K states (an ensemble: ``fun`` then takes
        ``(t, y)`` with ``y`` of shape (K, n), and a step is chosen for each).
    direction : float
        Integration direction, +1 or -1.
    error_order : int
        The power ``p`` for which the controlled local error behaves like ``h**(p+1)``.
    rtol, atol : float or ndarray, shape (n,)
        Tolerances.
    t_bound : float
        Boundary time.
    max_step : float
        Largest step allowed.

    Returns
    -------
    float, or ndarray of shape (K,) for a batch
        Absolute value of the first step, never shorter than :func:`min_step` at ``t0``
        (nor than the interval): a huge slope does not make it underflow to 0.
    """
    interval = abs(t_bound - t0)
    if y0.size == 0 or interval == 0:
        return interval
    scale = atol + np.abs(y0) * rtol
    d0 = rms_norm(y0 / scale)
    d1 = rms_norm(f0 / scale)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # a zero slope: the branch below
        h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, np.divide(0.01 * d0, d1))
    # 0.01*d0/d1 underflows to 0 for a huge slope (and d2 would divide by it), and so would h1 below:
    # no step is shorter than the smallest the solver can take, from which it then fails or grows.
    smallest = min(min_step(t0, direction), interval)
    h0 = np.minimum(np.maximum(h0, smallest), interval)
    if y0.ndim == 1:
        h0 = float(h0)
        f1 = fun(t0 + direction * h0, y0 + direction * h0 * f0)
    else:
        f1 = fun(t0 + direction * h0, y0 + (direction * h0)[:, None] * f0)
    d2 = np.divide(rms_norm((f1 - f0) / scale), h0)
    with np.errstate(divide="ignore", over="ignore"):
        h1 = np.where(np.maximum(d1, d2) <= 1e-15, np.maximum(1e-6, h0 * 1e-3),
                      np.power(np.divide(0.01, np.maximum(d1, d2)), 1.0 / (error_order + 1)))
    h = np.maximum(np.minimum(np.minimum(np.minimum(100 * h0, h1), interval), max_step), smallest)
    return float(h) if y0.ndim == 1 else h


class HermiteDenseOutput(DenseOutput):
    """C1 piecewise cubic Hermite interpolant over one step.

    The step ``[t_old, t]`` is split at the given nodes; on each piece the cubic
    matches the values and slopes at its ends. Evaluation outside the step
    extrapolates the nearer end piece.

    Parameters
    ----------
    t_nodes : array_like, shape (m + 1,)
        Node times from ``t_old`` to ``t``, monotonic in the integration direction.
    y_nodes, yp_nodes : array_like, shape (m + 1, n)
        Values and slopes at the nodes.
    """

    def __init__(self, t_nodes: ArrayLike, y_nodes: ArrayLike, yp_nodes: ArrayLike) -> None:
        t_nodes = np.asarray(t_nodes, dtype=float)
        y_nodes, yp_nodes = np.asarray(y_nodes), np.asarray(yp_nodes)
        super().__init__(t_nodes[0], t_nodes[-1])
        self.t_nodes = t_nodes
        self.lengths = t_nodes[1:] - t_nodes[:-1]  # signed, like the step
        delta = y_nodes[1:] - y_nodes[:-1]
        fa = self.lengths[:, None] * yp_nodes[:-1]
        fb = self.lengths[:, None] * yp_nodes[1:]
        # coefficients[k, j] multiplies s**j on piece k, s in [0, 1]
        self.coefficients = np.empty((len(self.lengths), 4) + y_nodes.shape[1:], dtype=np.result_type(y_nodes, fa))
        self.coefficients[:, 0], self.coefficients[:, 1] = y_nodes[:-1], fa
        self.coefficients[:, 2], self.coefficients[:, 3] = 3 * delta - 2 * fa - fb, fa + fb - 2 * delta

    def _call_impl(self, t: NDArray[np.float64]) -> NDArray:
        # Piece index: the number of interior nodes passed in the integration direction.
        passed = (t[..., None] - self.t_nodes[1:-1]) * (self.t - self.t_old) >= 0
        piece = np.sum(passed, axis=-1)
        s = ((t - self.t_nodes[piece]) / self.lengths[piece])[..., None]
        c = self.coefficients[piece]  # (..., 4, n)
        values = ((c[..., 3, :] * s + c[..., 2, :]) * s + c[..., 1, :]) * s + c[..., 0, :]  # Horner
        return values if t.ndim == 0 else values.T
