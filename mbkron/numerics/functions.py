"""Empirical functions of one variable with exact first and second derivatives.

Joint rhythms measured in the laboratory (a knee translation that follows flexion, the scapula
following the humerus) arrive as tables or fitted series. This module turns them into functions
``F(x)`` with exact ``F'(x)`` and ``F''(x)``, vectorised over any array ``x``:

- :class:`CubicSpline` -- interpolating cubic splines with ``"natural"`` end conditions (zero second
  derivative at both ends, scipy's ``bc_type="natural"``) or ``"fmm"`` end conditions (Forsythe,
  Malcolm & Moler: the third derivative at each end equals that of the cubic through the four
  nearest knots; this is OpenSim's ``SimmSpline``, the spline SIMM calls "natural cubic");
- :class:`PiecewiseLinear` -- linear interpolation (second derivative zero);
- :class:`PiecewiseConstant` -- OpenSim's ``PiecewiseConstantFunction`` (a step function);
- :class:`AffineMapped` -- ``a·G(c·x + d) + b`` of any of them;
- :class:`FourierSeries` -- ``a0 + Σ_k a_k cos(kωx) + b_k sin(kωx)``, ``ω = 2π/period``.

Outside the knots the splines and linear interpolation continue as straight lines with the end slope
(as OpenSim's ``SimmSpline`` and ``PiecewiseLinearFunction`` do), so their second derivative is zero
there; the step function keeps its end values. (OpenSim's ``GCVSpline`` of any order and smoothing is
:class:`mbkron.numerics.gcvspl.GCVSpline`, an :class:`EmpiricalFunction` too.)

A joint variable that is such a function of one generalized coordinate is described by
:class:`mbkron.multibody.jointvars.CoordinateFunction` and evaluated by
:class:`mbkron.algorithms.jointvars.functions.CoordinateFunctionVariables`.

Example
-------
>>> import numpy as np
>>> from mbkron.numerics.functions import CubicSpline
>>> spline = CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 8.0, 27.0], kind="fmm")
>>> value, slope, curvature = spline.evaluate(np.array([1.5, 4.0]))
>>> value.round(12), slope.round(12), curvature.round(12)   # x³ inside, its tangent line outside
(array([ 3.375, 54.   ]), array([ 6.75, 27.  ]), array([9., 0.]))
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.jit.arrays import frozen
from mbkron.numerics import function_rows
from mbkron.core.arguments import real_values
from mbkron.core.lazy import LazyModule

__all__ = [
    "SPLINE_KINDS",
    "EmpiricalFunction",
    "CubicSpline",
    "PiecewiseLinear",
    "PiecewiseConstant",
    "AffineMapped",
    "FourierSeries",
    "tabulated_function",
    "pack_functions",
    "StackedPiecewiseCubic",
]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_tabulated = LazyModule("mbkron.numerics.tabulated")

#: Interpolation kinds of tabulated data, as named in model files.
SPLINE_KINDS = ("natural", "fmm", "linear", "constant")

FloatArray = NDArray[np.float64]
Evaluation = tuple[FloatArray, "FloatArray | None", "FloatArray | None"]


class EmpiricalFunction(ABC):
    """A real function of one real variable with exact first and second derivatives.

    Subclasses describe themselves to the compiled kernel (:meth:`pack`, the function rows of
    :mod:`mbkron.numerics.tabulated`), which evaluates them: the one implementation of every kind.
    """

    @abstractmethod
    def pack(self, floats: list) -> list[int]:
        """Append this function's numbers to ``floats``; its row of :mod:`mbkron.numerics.tabulated`'s layout.

        Parameters
        ----------
        floats : list of float
            The description's numbers so far (appended to).

        Returns
        -------
        list of int
            :data:`mbkron.numerics.function_rows.FUNCTION_COLUMNS` entries (``ROW`` and ``COORDINATE`` zero).
        """

    def _pack_alone(self) -> None:
        """Pack this function alone for :meth:`evaluate` (:func:`pack_functions`): called once, at the end of its
        construction, by the library's functions (no cache is filled while evaluating)."""
        object.__setattr__(self, "_alone", pack_functions([self]))

    def _packed(self) -> tuple[NDArray[np.int64], FloatArray]:
        """This function alone, packed: at construction (:meth:`_pack_alone`), or on each call for a function that
        was not."""
        packed = self.__dict__.get("_alone")
        return pack_functions([self]) if packed is None else packed

    def evaluate(self, x: ArrayLike, order: int = 2) -> Evaluation:
        """Value and derivatives at ``x``, by the kernel :func:`mbkron.numerics.tabulated.functions_at`.

        Parameters
        ----------
        x : array_like
            Any shape (real).
        order : {0, 1, 2}
            Highest derivative computed; the others are returned as None.

        Returns
        -------
        value, first, second : ndarray, shape of ``x``
            ``F(x)``, ``F'(x)`` (None if ``order < 1``), ``F''(x)`` (None if ``order < 2``).
        """
        x = real_values(x)
        value, first, second = _tabulated.evaluate_functions(*self._packed(), x[..., None])
        return value[..., 0], None if order < 1 else first[..., 0], None if order < 2 else second[..., 0]

    @abstractmethod
    def describe(self) -> str:
        """A one-line description for people, e.g. ``"fmm cubic spline, 7 knots on [0, 2.6]"``."""

    def __call__(self, x: ArrayLike) -> FloatArray:
        """``F(x)``."""
        return self.evaluate(x, 0)[0]


def pack_functions(functions: Sequence[EmpiricalFunction]) -> tuple[NDArray[np.int64], FloatArray]:
    """The function rows and numbers of ``functions`` (:mod:`mbkron.numerics.tabulated`'s layout), read-only, for
    :func:`mbkron.numerics.tabulated.functions_at` (function ``r`` at column ``r`` of its argument)."""
    floats: list = []
    rows = np.array([f.pack(floats) for f in functions], dtype=np.int64).reshape(-1, function_rows.FUNCTION_COLUMNS)
    return frozen(rows), frozen(np.array(floats, dtype=float))



def _row(kind: int, at: int, count: int, half_order: int = 0) -> list[int]:
    """A function row of :mod:`mbkron.numerics.tabulated`'s layout without affine maps."""
    row = [0] * function_rows.FUNCTION_COLUMNS
    row[function_rows.KIND], row[function_rows.AT] = kind, at
    row[function_rows.COUNT], row[function_rows.HALF_ORDER] = count, half_order
    return row


def _knots(x: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Validated, read-only copies of tabulated data (strictly increasing finite x, finite y)."""
    x = np.array(x, dtype=float)
    y = np.array(y, dtype=float)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"x and y must be 1-D sequences of numbers, got shapes {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if x.size < 2:
        raise ValueError(f"at least 2 knots are needed, got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be finite numbers")
    with np.errstate(over="ignore"):
        steps = np.diff(x)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise ValueError(f"x must be strictly increasing; x[{k}] = {float(x[k])!r} is followed by x[{k + 1}] = {float(x[k + 1])!r}")
    if not np.all(np.isfinite(steps)):
        raise ValueError("the knot spacing x[k+1] - x[k] overflows; rescale the data")
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


class _PiecewiseCubic(EmpiricalFunction):
    """``F(x) = y_k + b_k dx + c_k dx² + d_k dx³`` on ``[x_k, x_{k+1}]`` (``dx = x − x_k``), with
    straight-line continuation of slope ``b_0`` below ``x_0`` and ``b_{n−1}`` above ``x_{n−1}``.

    Evaluated by the compiled kernel (:func:`mbkron.numerics.tabulated.cubic_piece`, from :meth:`pieces`): the one
    implementation of these functions. Subclasses build themselves by :meth:`_set_pieces`.
    """

    x: FloatArray
    y: FloatArray
    _pieces: FloatArray

    def _set_pieces(self, x: FloatArray, y: FloatArray, b: FloatArray, c: FloatArray, d: FloatArray) -> None:
        """Set the knots ``x``, values ``y`` and the pieces' coefficients, and build the evaluation table.

        Parameters
        ----------
        x, y : ndarray, shape (n,)
            Validated knots and values (:func:`_knots`).
        b : ndarray, shape (n,)
            Slopes ``b_k``; the last entry is the slope at ``x_{n−1}``.
        c, d : ndarray, shape (n - 1,)
        """
        pieces = np.zeros((x.size + 1, 5))
        pieces[:, 0] = np.concatenate([x[:1], x])
        pieces[:, 1] = np.concatenate([y[:1], y])
        pieces[:, 2] = np.concatenate([b[:1], b])
        pieces[1:-1, 3], pieces[1:-1, 4] = c, d
        pieces.setflags(write=False)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "_pieces", pieces)
        self._pack_alone()

    def pieces(self) -> FloatArray:
        """The pieces as polynomials in ``dx = x − anchor``, in order along ``x``.

        Returns
        -------
        ndarray, shape (n + 1, 5), read-only
            One row ``(anchor, y, b, c, d)`` per piece, ``F = y + b dx + c dx² + d dx³``: row 0 the
            straight line below ``x_0`` (anchored at ``x_0``, ``c = d = 0``), row ``k = 1 … n − 1`` the
            cubic on ``[x_{k−1}, x_k]`` (anchored at ``x_{k−1}``), row ``n`` the straight line above
            ``x_{n−1}`` (anchored there, ``c = d = 0``). Row ``k`` holds the ``x`` with ``k`` knots
            ``≤ x``, except ``x_{n−1}`` itself, which belongs to the last cubic.
        """
        return self._pieces

    def pack(self, floats: list) -> list[int]:
        """The knots, then the :meth:`pieces` row by row (:data:`mbkron.numerics.function_rows.CUBIC`)."""
        at = len(floats)
        floats.extend(self.x.tolist())
        floats.extend(self._pieces.ravel().tolist())
        return _row(function_rows.CUBIC, at, self.x.size)


def _solve_tridiagonal(lower: FloatArray, diagonal: FloatArray, upper: FloatArray, rhs: FloatArray) -> FloatArray:
    """The solution of a tridiagonal system by LAPACK's ``dgtsv`` algorithm, operation by operation.

    Gaussian elimination with partial pivoting, as ``scipy.linalg.solve_banded((1, 1), ...)`` does by
    calling LAPACK's ``dgtsv`` (reference LAPACK 3.x, its one-right-hand-side branch): the same
    operations in the same order, hence bit-identical results. It is written out here so that
    building a spline (loading a model) does not import ``scipy.linalg`` (~0.2 s of CPU); the systems
    are a spline's knots long, so a Python loop costs microseconds.

    Parameters
    ----------
    lower, upper : ndarray, shape (n - 1,)
        The sub- and superdiagonal (``lower[i]`` in row ``i + 1``, ``upper[i]`` in row ``i``).
    diagonal, rhs : ndarray, shape (n,)
        Finite; ``n ≥ 2``.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    numpy.linalg.LinAlgError
        If the matrix is singular (a zero pivot), as ``solve_banded`` does.
    """
    dl, d, du, b = lower.tolist(), diagonal.tolist(), upper.tolist(), rhs.tolist()
    n = len(d)
    for i in range(n - 1):
        if abs(d[i]) >= abs(dl[i]):  # no row interchange
            if d[i] == 0.0:
                raise np.linalg.LinAlgError("singular matrix")
            fact = dl[i] / d[i]
            d[i + 1] = d[i + 1] - fact * du[i]
            b[i + 1] = b[i + 1] - fact * b[i]
            dl[i] = 0.0
        else:  # interchange rows i and i + 1
            fact = d[i] / dl[i]
            d[i] = dl[i]
            temp = d[i + 1]
            d[i + 1] = du[i] - fact * temp
            if i < n - 2:
                dl[i] = du[i + 1]
                du[i + 1] = -fact * dl[i]
            du[i] = temp
            b[i], b[i + 1] = b[i + 1], b[i] - fact * b[i + 1]
    if d[n - 1] == 0.0:
        raise np.linalg.LinAlgError("singular matrix")
    b[n - 1] = b[n - 1] / d[n - 1]
    if n > 1:
        b[n - 2] = (b[n - 2] - du[n - 2] * b[n - 1]) / d[n - 2]
    for i in range(n - 3, -1, -1):
        b[i] = (b[i] - du[i] * b[i + 1] - dl[i] * b[i + 2]) / d[i]
    return np.array(b)


@dataclass(frozen=True, eq=False, init=False)
class CubicSpline(_PiecewiseCubic):
    """Interpolating cubic spline through ``(x_i, y_i)``, linear outside the knots.

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing, ``n >= 2``.
    y : array_like, shape (n,)
        Values at the knots.
    kind : {"natural", "fmm"}
        End conditions. ``"natural"``: ``F'' = 0`` at both ends (scipy's
        ``CubicSpline(x, y, bc_type="natural")``). ``"fmm"``: Forsythe, Malcolm & Moler, *Computer
        Methods for Mathematical Computations* (1977): ``F'''`` at ``x_0`` (``x_{n−1}``) equals the
        third derivative of the cubic interpolating the first (last) four knots, so data sampled
        from a cubic are reproduced exactly; three knots give the parabola through them. This is
        OpenSim's ``SimmSpline``. Two knots give the straight line for both kinds.

    Notes
    -----
    With ``σ_i = F''(x_i)/6``, ``h_i = x_{i+1} − x_i`` and ``δ_i = (y_{i+1} − y_i)/h_i`` the
    interior conditions are ``h_{i−1}σ_{i−1} + 2(h_{i−1} + h_i)σ_i + h_iσ_{i+1} = δ_i − δ_{i−1}``;
    the "fmm" end rows are ``−h_0σ_0 + h_0σ_1 = h_0² Δ³_0`` and
    ``h_{n−2}σ_{n−2} − h_{n−2}σ_{n−1} = −h_{n−2}² Δ³_{n−4}`` with ``Δ³`` the third divided
    differences of the first and last four knots (zero when ``n = 3``), exactly as
    ``SimmSpline::calcCoefficients``. Then ``b_i = δ_i − h_i(σ_{i+1} + 2σ_i)``, ``c_i = 3σ_i``,
    ``d_i = (σ_{i+1} − σ_i)/h_i``.
    """

    x: FloatArray
    y: FloatArray
    kind: str

    def __init__(self, x: ArrayLike, y: ArrayLike, kind: str = "natural"):
        if kind not in ("natural", "fmm"):
            raise ValueError(f"cubic spline kind must be 'natural' or 'fmm', got {kind!r}")
        x, y = _knots(x, y)
        object.__setattr__(self, "kind", kind)
        h = np.diff(x)
        with np.errstate(over="ignore", invalid="ignore"):
            delta = np.diff(y) / h
            sigma = self._second_derivatives_over_six(x, h, delta)
            b = np.empty(x.size)
            b[:-1] = delta - h * (sigma[1:] + 2.0 * sigma[:-1])
            b[-1] = delta[-1] + h[-1] * (sigma[-2] + 2.0 * sigma[-1])
            d = np.diff(sigma) / h
        if not (np.all(np.isfinite(b)) and np.all(np.isfinite(sigma)) and np.all(np.isfinite(d))):
            raise ValueError("the spline coefficients overflow (knots too close for the size of y); rescale the data")
        self._set_pieces(x, y, b, 3.0 * sigma[:-1], d)

    def _second_derivatives_over_six(self, x: FloatArray, h: FloatArray, delta: FloatArray) -> FloatArray:
        """``σ_i = F''(x_i)/6`` at the knots ``x`` from the tridiagonal system of the Notes (``h``, ``δ`` as
        there)."""
        n = x.size
        if n == 2:
            return np.zeros(2)
        if not np.all(np.isfinite(delta)):
            return np.full(n, np.nan)
        diagonal = np.empty(n)
        upper = np.zeros(n)  # upper[i] multiplies σ_{i+1} in row i
        lower = np.zeros(n)  # lower[i] multiplies σ_{i−1} in row i
        rhs = np.zeros(n)
        diagonal[1:-1] = 2.0 * (h[:-1] + h[1:])
        upper[1:-1] = h[1:]
        lower[1:-1] = h[:-1]
        rhs[1:-1] = np.diff(delta)
        if self.kind == "natural":
            diagonal[0] = diagonal[-1] = 1.0
        else:
            diagonal[0], upper[0] = -h[0], h[0]
            diagonal[-1], lower[-1] = -h[-1], h[-1]
            if n > 3:
                second = np.diff(delta)  # δ_{i+1} − δ_i
                third_first = (second[1] / (x[3] - x[1]) - second[0] / (x[2] - x[0])) / (x[3] - x[0])
                third_last = (second[-1] / (x[-1] - x[-3]) - second[-2] / (x[-2] - x[-4])) / (x[-1] - x[-4])
                rhs[0] = h[0] ** 2 * third_first
                rhs[-1] = -(h[-1] ** 2) * third_last
        banded = np.zeros((3, n))
        banded[0, 1:] = upper[:-1]
        banded[1] = diagonal
        banded[2, :-1] = lower[1:]
        if not (np.all(np.isfinite(banded)) and np.all(np.isfinite(rhs))):
            return np.full(n, np.nan)
        return _solve_tridiagonal(lower[1:], diagonal, upper[:-1], rhs)

    def describe(self) -> str:
        return f"{self.kind} cubic spline, {self.x.size} knots on [{self.x[0]:.6g}, {self.x[-1]:.6g}]"


@dataclass(frozen=True, eq=False, init=False)
class PiecewiseLinear(_PiecewiseCubic):
    """Linear interpolation through ``(x_i, y_i)``; the end segments continue outside the knots.

    At a knot the derivative is that of the segment to its right (of the last segment at
    ``x_{n−1}``); the second derivative is zero everywhere.

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing, ``n >= 2``.
    y : array_like, shape (n,)
    """

    x: FloatArray
    y: FloatArray

    def __init__(self, x: ArrayLike, y: ArrayLike):
        x, y = _knots(x, y)
        with np.errstate(over="ignore"):
            slopes = np.diff(y) / np.diff(x)
        if not np.all(np.isfinite(slopes)):
            raise ValueError("the slopes overflow (knots too close for the size of y); rescale the data")
        zeros = np.zeros(x.size - 1)
        self._set_pieces(x, y, np.append(slopes, slopes[-1]), zeros, zeros)

    @property
    def kind(self) -> str:
        """``"linear"``, the name of this interpolation in model files."""
        return "linear"

    def describe(self) -> str:
        return f"linear interpolation, {self.x.size} knots on [{self.x[0]:.6g}, {self.x[-1]:.6g}]"


@dataclass(frozen=True, eq=False, init=False)
class PiecewiseConstant(EmpiricalFunction):
    """OpenSim's ``PiecewiseConstantFunction``: a step function, derivatives zero.

    As ``PiecewiseConstantFunction::calcValue`` (OpenSim 4.6): ``y_0`` up to ``x_0`` (and within
    2e-13 of it), ``y_{n−1}`` from ``x_{n−1}`` on (and within 2e-13 below it), ``y_i`` on the open
    interval ``(x_i, x_{i+1})`` — so ``y_0`` on all of ``(−∞, x_1)`` — and at an interior knot ``x_i``
    the value OpenSim's bisection ends on there (``y_{i−1}`` or ``y_i``, by the bisection's path).

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing, ``n >= 2``.
    y : array_like, shape (n,)
    """

    x: FloatArray
    y: FloatArray

    def __init__(self, x: ArrayLike, y: ArrayLike):
        x, y = _knots(x, y)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        self._pack_alone()

    @property
    def kind(self) -> str:
        """``"constant"``, the name of this interpolation in model files."""
        return "constant"

    def pack(self, floats: list) -> list[int]:
        """The knots, then the values (:data:`mbkron.numerics.function_rows.STEP`)."""
        at = len(floats)
        floats.extend(self.x.tolist())
        floats.extend(self.y.tolist())
        return _row(function_rows.STEP, at, self.x.size)

    def describe(self) -> str:
        return f"piecewise constant, {self.x.size} knots on [{self.x[0]:.6g}, {self.x[-1]:.6g}]"


@dataclass(frozen=True, eq=False)
class AffineMapped(EmpiricalFunction):
    """``F(x) = a·G(c·x + d) + b`` (``F' = a c G'``, ``F'' = a c² G''``): a function fitted on its own
    data (OpenSim's ``GCVSpline`` of a coupled coordinate) keeps them (a refit on mapped data need
    not be the same function to the last digits).

    Parameters
    ----------
    function : EmpiricalFunction
        ``G``.
    argument : (float, float)
        ``(c, d)``.
    value : (float, float)
        ``(a, b)``.
    """

    function: EmpiricalFunction
    argument: tuple[float, float] = (1.0, 0.0)
    value: tuple[float, float] = (1.0, 0.0)

    def __post_init__(self) -> None:
        if self.function.__dict__.get("_alone") is not None:  # a function the kernel evaluates (not one that
            self._pack_alone()  # cannot be packed, such as a GCV spline of several columns: refused when evaluated)

    def pack(self, floats: list) -> list[int]:
        """The innermost function's row, its maps ``(c, d, a, b)`` after its numbers, the outermost first."""
        maps, function = [], self
        while isinstance(function, AffineMapped):
            (c, d), (a, b) = function.argument, function.value
            maps.extend((float(c), float(d), float(a), float(b)))
            function = function.function
        row = function.pack(floats)
        row[function_rows.WRAP_AT], row[function_rows.WRAPS] = len(floats), len(maps) // 4
        floats.extend(maps)
        return row

    def describe(self) -> str:
        (c, d), (a, b) = self.argument, self.value
        return f"{a:.6g}·F({c:.6g}·x + {d:.6g}) + {b:.6g}, F a {self.function.describe()}"


def tabulated_function(x: ArrayLike, y: ArrayLike, kind: str) -> CubicSpline | PiecewiseLinear | PiecewiseConstant:
    """The interpolant of tabulated data named by ``kind`` (one of :data:`SPLINE_KINDS`)."""
    if kind == "linear":
        return PiecewiseLinear(x, y)
    if kind == "constant":
        return PiecewiseConstant(x, y)
    if kind in ("natural", "fmm"):
        return CubicSpline(x, y, kind)
    raise ValueError(f"interpolation kind must be one of {', '.join(SPLINE_KINDS)}, got {kind!r}")


@dataclass(frozen=True, eq=False, init=False)
class FourierSeries(EmpiricalFunction):
    """``F(x) = a0 + Σ_{k=1}^{n} (a_k cos(kωx) + b_k sin(kωx))`` with ``ω = 2π/period``.

    (The convention of MATLAB's ``fourier<n>`` fit: ``a0`` is the mean, not half of it.)

    Parameters
    ----------
    period : float
        Positive period, in the unit of ``x``.
    a0 : float
        Constant term.
    a, b : array_like, shape (n,)
        Cosine and sine coefficients of the harmonics ``k = 1..n`` (same length, possibly 0).
    """

    period: float
    a0: float
    a: FloatArray
    b: FloatArray

    def __init__(self, period: float, a0: float, a: ArrayLike, b: ArrayLike):
        a = np.array(a, dtype=float)
        b = np.array(b, dtype=float)
        if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
            raise ValueError(f"cosine and sine coefficients must be 1-D of equal length, got shapes {a.shape} and {b.shape}")
        if not (math.isfinite(period) and period > 0):
            raise ValueError(f"the period must be a positive finite number, got {period!r}")
        if not (math.isfinite(a0) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("Fourier coefficients must be finite numbers")
        a.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "period", float(period))
        object.__setattr__(self, "a0", float(a0))
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        self._pack_alone()

    def pack(self, floats: list) -> list[int]:
        """``ω = 2π/period``, ``a0``, the cosine then the sine coefficients (:data:`mbkron.numerics.function_rows.FOURIER`)."""
        at = len(floats)
        floats.extend((2.0 * np.pi / self.period, self.a0))
        floats.extend(self.a.tolist())
        floats.extend(self.b.tolist())
        return _row(function_rows.FOURIER, at, self.a.size)

    def describe(self) -> str:
        return f"Fourier series, {self.a.size} harmonics, period {self.period:.6g}"


class StackedPiecewiseCubic:
    """Many empirical functions (piecewise cubics of moving path points, any :class:`EmpiricalFunction`) evaluated
    in one compiled pass.

    ``F_t(x_t)``, ``F_t'(x_t)`` and ``F_t''(x_t)`` for all ``t`` at once by the kernel
    :func:`mbkron.numerics.tabulated.functions_at`, from the functions' rows (:func:`pack_functions`), each exactly
    as the function's own :meth:`~EmpiricalFunction.evaluate`.

    Parameters
    ----------
    functions : sequence of EmpiricalFunction
    """

    def __init__(self, functions: Sequence[EmpiricalFunction]):
        self.rows, self.floats = pack_functions(functions)

    def evaluate(self, x: NDArray, order: int = 2) -> Evaluation:
        """Values and, up to ``order``, first and second derivatives, each of the shape of ``x`` (..., m)
        (real), by the kernel :func:`mbkron.numerics.tabulated.functions_at`."""
        values, firsts, seconds = _tabulated.evaluate_functions(self.rows, self.floats, real_values(x))
        return values, (firsts if order >= 1 else None), (seconds if order >= 2 else None)
