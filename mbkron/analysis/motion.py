"""A trial's kinematics from an OpenSim motion file: ``q``, ``q̇``, ``q̈`` at the frames, as OpenSim's tools
compute them.

OpenSim's ``InverseDynamicsTool`` (and ``AnalyzeTool``) turn a coordinates file into smooth functions of
time in this order (``InverseDynamicsTool::run``, ``Storage::pad``, ``Storage::lowpassIIR``,
``Signal::LowpassIIR``, ``GCVSplineSet``); :func:`trial_kinematics` does the same with numpy:

1. **Low-pass** (only when a cut-off frequency is given):

   a. *pad* every column (time included) with ``n // 2`` rows before and after, reflected about the
      end rows and negated (``2 y₀ − y_k``): value and slope are continued;
   b. *resample* when the padded time steps are not all equal (``mean step − smallest step > ε``, e.g.
      times printed with 8 decimals): a quintic GCV spline (error variance 0: the natural interpolating
      spline) of every column is evaluated from the first time in steps of the smallest step
      (accumulated, ``t += Δt``, as OpenSim does), while ``t ≤`` the last time;
   c. *filter* every column with OpenSim's 3rd-order Butterworth IIR filter run forward, then
      backward (zero phase, 6th order in effect): bilinear transform with pre-warping
      ``ω_a = tan(π f_c Δt)``, the first three samples of each pass copied as the filter's start; a
      cut-off at or above half the sampling frequency is lowered to ``0.49 / Δt`` (with a warning).

2. **Splines**: a quintic GCV spline of every (padded, filtered) column, error variance 0
   (``GCVSplineSet(5, …)``), gives ``q``, ``q̇`` and ``q̈`` at the frames: the natural quintic
   interpolant, computed directly or by GCVSPL's search (:func:`splines`).

3. **Frames**: the rows of the (padded, resampled) table from the last row at or before the start of
   ``time_range`` to the last row at or before its end (``Storage::findIndex``); the file's own time
   span by default (OpenSim's default, ``(-inf, inf)``, reports the padded rows as well). With a low-pass filter and unevenly printed times these are the resampled times,
   which differ from the file's by up to a few 1e-7 s — the times OpenSim reports.

Angles are converted from degrees (``inDegrees=yes``, by the model's coordinate units) after the filter,
before the splines, as OpenSim does.
The file's columns that are not coordinates of the model — coupled (eliminated) and locked
coordinates, which the ``.osim`` importer turns into functions and constants, markers, or anything
else — are ignored and listed in :attr:`TrialKinematics.ignored`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import make_interp_spline

from mbkron.io.storage import Storage, StorageError, read_storage
from mbkron.numerics.gcvspl import GCVSpline

__all__ = ["SPLINES", "TrialKinematics", "trial_kinematics", "pad", "lowpass_iir", "splines", "find_index"]

_EPS = np.finfo(float).eps
MAX_RESAMPLE_SIZE = 100_000
"""Most rows a resampling creates (OpenSim's ``Storage::MAX_RESAMPLE_SIZE``); beyond it the step grows."""
MIN_FRAMES = 6
"""Fewest rows of a motion file: a quintic spline needs six points."""


@dataclass(frozen=True, eq=False)
class TrialKinematics:
    """Coordinates, rates and accelerations of a model along a trial.

    Attributes
    ----------
    time : ndarray, shape (n,)
        The frames, s (see the module docstring, step 3).
    q, qd, qdd : ndarray, shape (n, nq)
        In SI units (rad, m), the model's coordinate order.
    coordinates : tuple of str
        ``model.coordinates``.
    ignored : tuple of str
        The file's columns that are not coordinates of the model.
    lowpass : float or None
        The cut-off frequency applied, Hz (None: unfiltered).
    source : str
        The motion file, or the storage's name.
    spline : {"natural", "gcvspl"}
        How the splines were fitted (:func:`splines`); external loads are fitted the same way.
    """

    time: NDArray[np.float64]
    q: NDArray[np.float64]
    qd: NDArray[np.float64]
    qdd: NDArray[np.float64]
    coordinates: tuple[str, ...]
    ignored: tuple[str, ...]
    lowpass: float | None
    source: str
    spline: str = "natural"


def pad(values: NDArray[np.float64], size: int) -> NDArray[np.float64]:
    """OpenSim's ``Signal::Pad`` along axis 0: ``size`` rows before and after, reflected and negated
    about the end rows (``2 y₀ − y_k``, ``2 y_{n−1} − y_{n−1−k}``).

    Parameters
    ----------
    values : ndarray, shape (n, ...)
    size : int
        ``0 ≤ size < n``.

    Returns
    -------
    ndarray, shape (n + 2 size, ...)
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    if not 0 <= size < n:
        raise ValueError(f"`size` must be between 0 and {n - 1} (the rows of `values` less one), got {size}")
    if size == 0:
        return values.copy()
    before = 2.0 * values[0] - values[size:0:-1]
    after = 2.0 * values[-1] - values[-2:-2 - size:-1]
    return np.concatenate([before, values, after])


def lowpass_iir(values: NDArray[np.float64], step: float, cutoff: float) -> NDArray[np.float64]:
    """OpenSim's ``Signal::LowpassIIR`` along axis 0: a 3rd-order Butterworth filter, forward then backward.

    Parameters
    ----------
    values : ndarray, shape (n, ...), n ≥ 4
        Evenly sampled.
    step : float
        The sampling interval, s.
    cutoff : float
        Hz; at or above half the sampling frequency it is lowered to ``0.49 / step`` (a warning says so).

    Returns
    -------
    ndarray, shape (n, ...)
    """
    values = np.asarray(values, dtype=float)
    if values.shape[0] < 4:
        raise ValueError(f"`values` must have at least 4 rows to filter, got {values.shape[0]}")
    if not (step > 0 and cutoff > 0):
        raise ValueError(f"`step` and `cutoff` must be positive, got {step} and {cutoff}")
    if cutoff >= 0.5 / step:
        warnings.warn(f"the cut-off frequency {cutoff} Hz is not below half the sampling frequency {1 / step:.6g} Hz; "
                      f"filtering at {0.49 / step:.6g} Hz (as OpenSim does)", stacklevel=2)
        cutoff = 0.49 / step
    wa = np.tan(2.0 * np.pi * cutoff * step / 2.0)
    wa2, wa3 = wa * wa, wa * wa * wa
    denom = (wa + 1.0) * (wa * wa + wa + 1.0)
    a = np.array([wa3, 3 * wa3, 3 * wa3, wa3]) / denom
    b = np.array([1.0, (3 * wa3 + 2 * wa2 - 2 * wa - 3) / denom, (3 * wa3 - 2 * wa2 - 2 * wa + 3) / denom,
                  (wa - 1) * (wa2 - wa + 1) / denom])
    return _recursion(_recursion(values, a, b)[::-1], a, b)[::-1].copy()


def _recursion(x: NDArray[np.float64], a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """One pass of the filter: ``y[:3] = x[:3]``, then ``y_i = Σ a_k x_{i−k} − Σ_{k≥1} b_k y_{i−k}``, in OpenSim's
    order of operations (left to right; the input terms for all rows at once, then row by row)."""
    y = x.copy()
    inputs = a[0] * x[3:] + a[1] * x[2:-1] + a[2] * x[1:-2] + a[3] * x[:-3]
    for i in range(3, x.shape[0]):
        y[i] = inputs[i - 3] - b[1] * y[i - 1] - b[2] * y[i - 2] - b[3] * y[i - 3]
    return y


SPLINES = ("natural", "gcvspl")
"""How the GCV splines of error variance 0 are fitted (:func:`splines`)."""


class _Interpolant:
    """The natural interpolating spline of degree ``2m − 1`` of every column (``s⁽ᵏ⁾ = 0`` at both ends for
    ``k = m … 2m − 2``), one banded solve for all columns; called as ``(t, derivative)``."""

    def __init__(self, x: NDArray[np.float64], y: NDArray[np.float64], half_order: int):
        ends = [(k, np.zeros(y.shape[1:])) for k in range(half_order, 2 * half_order - 1)]
        self.spline = make_interp_spline(x, y, k=2 * half_order - 1, bc_type=(ends, ends), axis=0)

    def __call__(self, t, derivative: int = 0) -> NDArray[np.float64]:
        return self.spline(t, nu=derivative)


def splines(time: NDArray[np.float64], values: NDArray[np.float64], half_order: int, method: str = "natural"):
    """OpenSim's ``GCVSpline`` of error variance 0 (degree ``2 half_order − 1``) of every column of ``values``.

    With error variance 0, GCVSPL lowers its smoothing parameter to its floor (``p‖Wᵀ‖ = 1e-15``), so
    the fit is the natural interpolating spline up to round-off. ``method="natural"`` computes that
    spline directly (a banded solve for all columns at once: milliseconds); ``method="gcvspl"`` runs
    GCVSPL's search as OpenSim does (:class:`mbkron.numerics.gcvspl.GCVSpline`, the same arithmetic as
    OpenSim's; about 0.05 s per column of a 150-row table, 0.5 s per column of 1500 rows). On the gait2354
    trial the two give inverse-dynamics moments within 3e-10 N·m of each other and of OpenSim
    (``docs/analysis.md``).

    Parameters
    ----------
    time : ndarray, shape (m,)
    values : ndarray, shape (m, k)
    half_order : int
        3 for the quintic splines of the coordinates, 2 for the cubic splines of the loads.
    method : {"natural", "gcvspl"}

    Returns
    -------
    callable ``(t, derivative=0) -> ndarray, shape (len(t), k)``
        Defined on ``[time[0], time[-1]]``.
    """
    if method not in SPLINES:
        raise ValueError(f"`method` must be one of {', '.join(SPLINES)}, got {method!r}")
    if method == "natural":
        return _Interpolant(time, values, half_order)
    return GCVSpline(time, values, half_order=half_order, error_variance=0.0)


def find_index(time: NDArray[np.float64], t: float) -> int:
    """OpenSim's ``Storage::findIndex``: the last row at or before ``t`` (0 if none)."""
    return max(int(np.searchsorted(time, t, side="right")) - 1, 0)


def _resample(time: NDArray[np.float64], values: NDArray[np.float64], method: str) -> tuple[NDArray, NDArray, float]:
    """OpenSim's ``Storage::resample(dtmin, 5)`` when the steps differ: the quintic splines from the
    first time in accumulated steps of the smallest step."""
    step = float(np.min(np.diff(time)))
    if (time[-1] - time[0]) / (time.size - 1) - step <= _EPS:
        return time, values, step
    if (time[-1] - time[0]) / step > MAX_RESAMPLE_SIZE:
        step = (time[-1] - time[0]) / MAX_RESAMPLE_SIZE
    count = 10 + int((time[-1] - time[0]) / step)
    grid = np.cumsum(np.concatenate([[time[0]], np.full(count, step)]))  # x += dx, sequentially
    grid = grid[grid <= time[-1]]
    return grid, splines(time, values, 3, method)(grid), step


def trial_kinematics(model, motion: str | Path | Storage, lowpass: float | None = None,
                     time_range: tuple[float, float] | None = None, spline: str = "natural") -> TrialKinematics:
    """``q``, ``q̇``, ``q̈`` of ``model`` along a motion, as OpenSim's tools compute them (module docstring).

    Parameters
    ----------
    model : Model
    motion : path-like or Storage
        A ``.mot``/``.sto`` file (or its table) with a column per coordinate of the model (by name).
    lowpass : float, optional
        Cut-off frequency of OpenSim's low-pass filter, Hz (``lowpass_cutoff_frequency_for_coordinates``);
        None (default) or a negative value: no filter.
    time_range : (float, float), optional
        The frames to report, s (OpenSim's ``time_range``); the file's first to last time by default.
        OpenSim's default is ``(-inf, inf)``, which with the low-pass filter reports the padded rows too.
    spline : {"natural", "gcvspl"}
        How the splines are fitted (:func:`splines`).

    Returns
    -------
    TrialKinematics

    Raises
    ------
    StorageError
        If the file cannot be read, lacks a coordinate of the model (all such are named), or has fewer
        than :data:`MIN_FRAMES` rows.
    ValueError
        For a bad ``lowpass`` or ``time_range`` (named), or a time range that holds no frame.
    """
    storage = motion if isinstance(motion, Storage) else read_storage(motion)
    source = str(motion) if not isinstance(motion, Storage) else storage.name
    if lowpass is not None and not np.isfinite(lowpass):
        raise ValueError(f"`lowpass` must be a finite cut-off frequency in Hz (or None), got {lowpass}")
    lowpass = None if lowpass is None or lowpass < 0 else float(lowpass)
    if spline not in SPLINES:
        raise ValueError(f"`spline` must be one of {', '.join(SPLINES)}, got {spline!r}")
    if storage.time.size < MIN_FRAMES:
        raise StorageError(f"{source}: {storage.time.size} rows; the splines of the coordinates need at least "
                           f"{MIN_FRAMES}")
    q = replace(storage, in_degrees=False).coordinates(model)  # the file's units: OpenSim filters those
    scale = np.array([np.pi / 180 if storage.in_degrees and c.unit == "rad" else 1.0 for c in model.coordinate_records])
    ignored = tuple(label for label in storage.labels if label not in model.coordinates)
    first, last = (storage.time[0], storage.time[-1]) if time_range is None else _checked_range(time_range)
    time = storage.time
    if lowpass is not None:
        padding = time.size // 2
        time, q = pad(time, padding), pad(q, padding)
        time, q, step = _resample(time, q, spline)
        q = lowpass_iir(q, step, lowpass)
    q = q * scale  # SimTK_DEGREE_TO_RADIAN, after the filter as in OpenSim
    start = find_index(time, max(time[0], first))
    stop = find_index(time, min(time[-1], last))
    if min(time[-1], last) < max(time[0], first):
        raise ValueError(f"`time_range` ({first}, {last}) holds no frame of {source} "
                         f"({storage.time[0]:.6g} to {storage.time[-1]:.6g} s)")
    frames = time[start:stop + 1].copy()
    fitted = splines(time, q, 3, spline) if model.nq else None
    values = [fitted(frames, derivative=k) if model.nq else np.zeros((frames.size, 0)) for k in range(3)]
    return TrialKinematics(frames, *values, tuple(model.coordinates), ignored, lowpass, source, spline)


def _checked_range(time_range) -> tuple[float, float]:
    try:
        first, last = (float(t) for t in time_range)
    except (TypeError, ValueError):
        raise ValueError(f"`time_range` must be two times (start, end) in s, got {time_range!r}") from None
    if not first <= last:  # NaN fails too
        raise ValueError(f"`time_range` must have start ≤ end, got {time_range!r}")
    return first, last
