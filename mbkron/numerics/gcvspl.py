"""Woltring's GCVSPL: smoothing splines of odd degree, as OpenSim's ``GCVSpline`` fits them.

OpenSim's ``GCVSpline`` (``OpenSim/Common/GCVSpline.cpp``, ``createSimTKFunction``) hands its knots
``x`` and data ``y`` to Simbody's ``SplineFitter`` — ``fitFromErrorVariance(degree, x, y,
error_variance)`` when ``error_variance ≥ 0``, ``fitFromGCV(degree, x, y)`` when it is negative —
which calls Woltring's GCVSPL (1986; Simbody's ``gcvspl.cpp`` is its f2c translation) with unit
weights, method ``MD = 3`` (known error variance) or ``MD = 2`` (generalized cross-validation), and
evaluates the result with GCVSPL's ``SPLDER``. The weights stored in an ``.osim`` file are not
passed on (OpenSim 4.6).

The spline of half order ``m`` (degree ``2m − 1``; OpenSim's ``half_order``) minimises

    Σ_i (y_i − s(x_i))² + p ∫ (s⁽ᵐ⁾(t))² dt

over the natural splines with knots ``x`` (Woltring 1986, Eq. 1; ``s⁽ᵐ⁾ = 0`` beyond the knots, so
``s`` continues as a polynomial of degree ``m − 1`` there). It is represented by its
B-spline-like coefficients ``c`` (Woltring's "generalized" basis, :func:`_basis`), found from the
banded system ``(B + p·Wᵀ) c = y`` (``SPLC``). The smoothing parameter ``p`` is chosen by
GCVSPL's search (bracketing by factors of 2 from ``p = 1/‖Wᵀ‖``, then a golden-section search to a
relative width of 1e-6), minimising the criterion of the method:

- ``MD = 3`` with error variance ``σ²``: the estimated true mean squared error
  ``R(p) − σ² (2 tr(I − A)/n − 1)``, ``R`` the mean squared residual, ``A`` the influence matrix;
  with ``σ² = 0`` this halves ``p`` down to GCVSPL's floor ``p·‖Wᵀ‖ = 1e-15``: the spline
  interpolates the data to round-off (the *natural spline interpolant* of degree ``2m − 1``);
- ``MD = 2``: the generalized cross-validation function ``R(p) / (tr(I − A)/n)²``.

The port repeats GCVSPL's floating-point operations in their order (so its results are Simbody's
to the bit): near the minimum the search compares criterion values that differ in their last digits,
and another rounding can end it at another ``p``. Fitting runs in Python loops (``O(n m²)`` per trial
``p``, about 50 trials); evaluation is GCVSPL's ``SPLDER`` compiled
(:func:`mbkron.numerics.tabulated.gcv_derivative`, operation by operation).

Example
-------
>>> import numpy as np
>>> from mbkron.numerics.gcvspl import GCVSpline
>>> x = np.linspace(0.0, 1.0, 8)
>>> spline = GCVSpline(x, x**3, half_order=2)          # the natural cubic interpolant
>>> bool(np.allclose(spline(x), x**3, rtol=0.0, atol=1e-14))
True
>>> float(spline(0.5).round(12)), float(spline(2.0, derivative=2))   # straight beyond the knots
(0.124892210405, 0.0)

References
----------
H. J. Woltring (1986), "A Fortran package for generalized, cross-validatory spline smoothing and
differentiation", Advances in Engineering Software 8(2):104–113.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.numerics import function_rows
from mbkron.jit.arrays import writable
from mbkron.core.lazy import LazyModule
from mbkron.core.arguments import real_values
from mbkron.numerics.functions import EmpiricalFunction

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_tabulated = LazyModule("mbkron.numerics.tabulated")

__all__ = ["GCVSpline", "MAX_HALF_ORDER", "MAX_FIT_WORK", "MAX_FILE_FIT_WORK", "gcvspl"]

FloatArray = NDArray[np.float64]

#: Bounds: half order (degree 15; OpenSim sets none, its models use 1-4, degree 15 is beyond double
#: precision), ``knots × half_order`` of one fit (about 50 trials of that much work in Python loops,
#: about a millisecond per unit on a busy machine) and its sum over the GCV splines of one model file.
MAX_HALF_ORDER, MAX_FIT_WORK, MAX_FILE_FIT_WORK = 8, 4_000, 10_000
_EPS = 1e-15  # GCVSPL's bounds on p·‖Wᵀ‖ (c_b6 in Simbody's gcvspl.cpp)
_GOLDEN = 1.618033983  # the golden ratio as GCVSPL writes it
_P_MAX = 999999999999999.88  # the largest smoothing parameter GCVSPL's bracketing tries


def _basis(m: int, n: int, x: list) -> tuple[list, float]:
    """Woltring's basis at the knots and the mean absolute value of its entries (``BASIS``).

    Returns the band ``B(-(m−1):m−1, 1:n)`` flattened (entry ``(j, l)`` at ``j + l (2m − 1)``) and
    ``bl = Σ|B| / n``. ``x`` is 1-based (``x[0]`` unused), as in all helpers of this module.
    """
    bd = 2 * m - 1
    b = [0.0] * (bd * (n + 1) + m)
    if m == 1:
        for i in range(1, n + 1):
            b[i * bd] = 1.0
        return b, 1.0
    mm1, mp1, m2 = m - 1, m + 1, 2 * m
    q = [0.0] * (2 * m)  # q[j + m - 1], j = 1 - m .. m
    for l in range(1, n + 1):
        for j in range(2 * m):
            q[j] = 0.0
        q[mm1 + mm1] = 1.0
        if l != 1 and l != n:
            q[mm1 + mm1] = 1 / (x[l + 1] - x[l - 1])
        arg = x[l]
        for i in range(3, m2 + 1):
            ir = mp1 - i
            v = q[ir + mm1]
            if l < i:
                for j in range(l + 1, i + 1):
                    u = v
                    v = q[ir + 1 + mm1]
                    q[ir + mm1] = u + (x[j] - arg) * v
                    ir += 1
            j1 = max(l - i + 1, 1)
            j2 = min(l - 1, n - i)
            if j1 <= j2:
                if i < m2:
                    for j in range(j1, j2 + 1):
                        y = x[i + j]
                        u = v
                        v = q[ir + 1 + mm1]
                        q[ir + mm1] = u + (v - u) * (y - arg) / (y - x[j])
                        ir += 1
                else:
                    for j in range(j1, j2 + 1):
                        u = v
                        v = q[ir + 1 + mm1]
                        q[ir + mm1] = (arg - x[j]) * u + (x[i + j] - arg) * v
                        ir += 1
            nmip1 = n - i + 1
            if nmip1 < l:
                for j in range(nmip1, l):
                    u = v
                    v = q[ir + 1 + mm1]
                    q[ir + mm1] = (arg - x[j]) * u + v
                    ir += 1
        for j in range(-mm1, mm1 + 1):
            b[j + l * bd] = q[j + mm1]
    for i in range(1, mm1 + 1):
        for k in range(i, mm1 + 1):
            b[-k + i * bd] = 0.0
            b[k + (n + 1 - i) * bd] = 0.0
    bl = 0.0
    for i in range(1, n + 1):
        for k in range(-mm1, mm1 + 1):
            bl += abs(b[k + i * bd])
    return b, bl / n


def _prep(m: int, n: int, x: list) -> tuple[list, float]:
    """The weighted divided-difference band ``Wᵀ`` (``PREP``, unit weights) and ``Σ|Wᵀ| / n``.

    Returns the band ``WE(-m:m, 1:n)`` flattened (entry ``(l, i)`` at ``l + i (2m + 1)``).
    """
    m2, mp1 = 2 * m, m + 1
    m2m1, m2p1, nm = m2 - 1, m2 + 1, n - m
    we = [0.0] * (m2p1 * n + 1)  # 1-based, as GCVSPL's PREP addresses it
    f1 = -1.0
    if m != 1:
        for i in range(2, m + 1):
            f1 = -f1 * i
        for i in range(mp1, m2m1 + 1):
            f1 *= i
    i1, i2, jm = 1, m, mp1
    for j in range(1, n + 1):
        inc = m2p1
        if j > nm:
            f1 = -f1
            f = f1
        elif j < mp1:
            inc = 1
            f = f1
        else:
            f = f1 * (x[j + m] - x[j - m])
        if j > mp1:
            i1 += 1
        if i2 < n:
            i2 += 1
        jj = jm
        ff = f
        y = x[i1]
        for i in range(i1 + 1, i2 + 1):
            ff /= y - x[i]
        we[jj] = ff
        jj += m2
        for l in range(i1 + 1, i2):
            ff = f
            y = x[l]
            for i in range(i1, l):
                ff /= y - x[i]
            for i in range(l + 1, i2 + 1):
                ff /= y - x[i]
            we[jj] = ff
            jj += m2
        ff = f
        y = x[i2]
        for i in range(i1, i2):
            ff /= y - x[i]
        we[jj] = ff
        jm += inc
    kl = 1
    n2m = m2p1 * n + 1
    for i in range(1, m + 1):
        for k in range(kl, kl + m - i + 1):
            we[k] = 0.0
            we[n2m - k] = 0.0
        kl += m2p1
    el = 0.0
    for jj in range(1, m2p1 * n + 1):
        el += abs(we[jj])
    # entry (l, i) of the band at l + i (2m + 1): PREP's we[jj] is entry jj + m
    return [0.0] * m + we, el / n


def _bandet(e: list, m: int, n: int) -> None:
    """LU decomposition without pivoting of the band matrix ``e`` in place (``BANDET``)."""
    d = 2 * m + 1
    for i in range(1, n + 1):
        di = e[i * d]
        mi = min(m, i - 1)
        if mi >= 1:
            for k in range(1, mi + 1):
                di -= e[-k + i * d] * e[k + (i - k) * d]
            e[i * d] = di
        lm = min(m, n - i)
        for l in range(1, lm + 1):
            dl = e[-l + (i + l) * d]
            km = min(m - l, i - 1)
            if km >= 1:
                du = e[l + i * d]
                for k in range(1, km + 1):
                    du -= e[-k + i * d] * e[l + k + (i - k) * d]
                    dl -= e[-l - k + (l + i) * d] * e[k + (i - k) * d]
                e[l + i * d] = du
            e[-l + (i + l) * d] = dl / di


def _bansol(e: list, y: list, m: int, n: int) -> list:
    """Solve ``E c = y`` with the decomposition of :func:`_bandet` (``BANSOL``); 1-based."""
    d = 2 * m + 1
    c = [0.0] * (n + 1)
    c[1] = y[1]
    for i in range(2, n + 1):
        s = y[i]
        for l in range(1, min(m, i - 1) + 1):
            s -= e[-l + i * d] * c[i - l]
        c[i] = s
    c[n] /= e[n * d]
    for i in range(n - 1, 0, -1):
        s = c[i]
        for l in range(1, min(m, n - i) + 1):
            s -= e[l + i * d] * c[i + l]
        c[i] = s / e[i * d]
    return c


def _trinv(b: list, e: list, m: int, n: int) -> float:
    """``tr(B E⁻¹)`` from the central bands of ``E⁻¹`` (``TRINV``; ``E`` overwritten)."""
    d = 2 * m + 1
    e[n * d] = 1 / e[n * d]
    for i in range(n - 1, 0, -1):
        mi = min(m, n - i)
        dd = 1 / e[i * d]
        for k in range(1, mi + 1):
            e[k + n * d] = e[k + i * d] * dd
            e[-k + d] = e[-k + (k + i) * d]
        dd += dd
        for j in range(mi, 0, -1):
            du = 0.0
            dl = 0.0
            for k in range(1, mi + 1):
                du -= e[k + n * d] * e[j - k + (i + k) * d]
                dl -= e[-k + d] * e[k - j + (i + j) * d]
            e[j + i * d] = du
            e[-j + (j + i) * d] = dl
            dd -= e[j + n * d] * dl + e[-j + d] * du
        e[i * d] = dd / 2
    dd = 0.0
    for i in range(1, n + 1):
        for k in range(-min(m, i - 1), min(m, n - i) + 1):
            dd += b[k + i * d] * e[-k + (k + i) * d]
    for k in range(1, m + 1):
        e[k + n * d] = 0.0
        e[-k + d] = 0.0
    return dd


class _Fit:
    """The data of one GCVSPL fit and its criterion ``SPLC`` at a trial smoothing parameter."""

    def __init__(self, x: list, y: list, m: int, mode: int, val: float):
        n = len(x) - 1
        self.x, self.y, self.m, self.n, self.mode, self.val = x, y, m, n, mode, val
        self.b, bl = _basis(m, n, x)
        self.we, el = _prep(m, n, x)
        self.el = el / bl
        self.c: list = []
        self.p = 0.0  # the smoothing parameter used (0 at GCVSPL's lower bound), WK(4)

    def criterion(self, p: float) -> float:
        """Fit with smoothing parameter ``p``; the criterion of the method (``SPLC``)."""
        m, n, b, we, el = self.m, self.n, self.b, self.we, self.el
        dp = p
        self.p = p
        pel = p * el
        if pel < _EPS:
            dp = _EPS / el
            self.p = 0.0
        if pel * _EPS > 1.0:
            dp = 1 / (el * _EPS)
            self.p = dp
        d, bd = 2 * m + 1, 2 * m - 1
        bwe = [0.0] * (d * (n + 1) + m + 1)
        for i in range(1, n + 1):
            for l in range(-min(m, i - 1), min(m, n - i) + 1):
                if abs(l) == m:
                    bwe[l + i * d] = dp * we[l + i * d]
                else:
                    bwe[l + i * d] = b[l + i * bd] + dp * we[l + i * d]
        _bandet(bwe, m, n)
        c = self.c = _bansol(bwe, self.y, m, n)
        trn = _trinv(we, bwe, m, n) * dp / n
        esn = 0.0
        for i in range(1, n + 1):
            dt = -self.y[i]
            for l in range(-min(m - 1, i - 1), min(m - 1, n - i) + 1):
                dt += b[l + i * bd] * c[i + l]
            esn += dt * dt
        esn /= n
        if self.mode == 3:
            return esn - self.val * (trn * 2 - 1)
        return esn / trn / trn


def _search(fit: _Fit) -> float:
    """GCVSPL's choice of the smoothing parameter (``GCVSPL``, labels 20–90). Bounded: a criterion that
    is not finite (extreme knots), or more than 1,000 trials, is an OverflowError."""
    trials = iter(range(1000))

    def crit(p: float) -> float:
        value = fit.criterion(p)
        if not math.isfinite(value) or next(trials, None) is None:
            raise OverflowError(f"the smoothing search fails at p = {p:.3g}: criterion {value:.3g}")
        return value

    r1 = 1 / fit.el
    r2 = r1 * 2
    gf2 = crit(r2)
    while True:  # L40: halve p while the criterion decreases
        gf1 = crit(r1)
        if gf1 > gf2:
            break
        if fit.p <= 0:
            return r1
        r2, gf2 = r1, gf1
        r1 /= 2.0
    r3 = r2 * 2  # L50, L60: double p while the criterion decreases
    while True:
        gf3 = crit(r3)
        if gf3 > gf2:
            break
        if fit.p >= _P_MAX:
            return r1
        r2, gf2 = r3, gf3
        r3 *= 2.0
    r2, gf2 = r3, gf3  # L70, L80: golden section in [r1, r2]
    alpha = (r2 - r1) / _GOLDEN
    r4 = r1 + alpha
    r3 = r2 - alpha
    gf3 = crit(r3)
    gf4 = crit(r4)
    while True:
        if gf3 <= gf4:
            r2, gf2 = r4, gf4
            err = (r2 - r1) / (r1 + r2)
            if err * err + 1 == 1 or err <= 1e-6:
                break
            r4, gf4 = r3, gf3
            alpha /= _GOLDEN
            r3 = r2 - alpha
            gf3 = crit(r3)
        else:
            r1, gf1 = r3, gf3
            err = (r2 - r1) / (r1 + r2)
            if err * err + 1 == 1 or err <= 1e-6:
                break
            r3, gf3 = r4, gf4
            alpha /= _GOLDEN
            r4 = r1 + alpha
            gf4 = crit(r4)
    return (r1 + r2) / 2


def gcvspl(x: ArrayLike, y: ArrayLike, half_order: int, error_variance: float = 0.0
           ) -> tuple[FloatArray, float]:
    """Fit a GCVSPL spline to one column of data as OpenSim's ``GCVSpline`` does.

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing, finite.
    y : array_like, shape (n,)
        Data, finite.
    half_order : int
        ``m ≥ 1``: the spline has degree ``2m − 1``; ``n ≥ 2m`` knots are needed.
    error_variance : float
        ``≥ 0``: the known variance of the data's error (GCVSPL method 3, Simbody's
        ``SplineFitter::fitFromErrorVariance``; 0 interpolates); ``< 0``: the smoothing parameter
        minimises the generalized cross-validation function (method 2, ``fitFromGCV``).

    Returns
    -------
    coefficients : ndarray, shape (n,)
        The spline's coefficients (OpenSim's ``coefficients``), which ``SPLDER`` evaluates
        (:func:`mbkron.numerics.tabulated.gcv_derivative`).
    p : float
        The smoothing parameter used (0 when GCVSPL's lower bound was reached).

    Raises
    ------
    ValueError
        For invalid arguments, and when the fit leaves double precision (extreme knots or data).
    """
    xs, ys, m = _checked(x, y, half_order, error_variance)
    try:
        fit = _Fit([0.0, *map(float, xs)], [0.0, *map(float, ys)], m,
                   3 if error_variance >= 0 else 2, float(max(error_variance, 0.0)))
        fit.criterion(_search(fit))  # L100: the final fit
    except (ZeroDivisionError, OverflowError) as exc:
        raise ValueError(f"`x` and `y` cannot be fitted in double precision ({exc}); rescale the data") from None
    coefficients = np.array(fit.c[1:])
    if not np.all(np.isfinite(coefficients)):
        raise ValueError("`x` and `y` cannot be fitted in double precision (the coefficients overflow); "
                         "rescale the data")
    return coefficients, fit.p


def _checked(x: ArrayLike, y: ArrayLike, half_order: int, error_variance: float) -> tuple[FloatArray, FloatArray, int]:
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if isinstance(half_order, bool) or not isinstance(half_order, (int, np.integer)) or not 1 <= half_order <= MAX_HALF_ORDER:
        raise ValueError(f"`half_order` must be an integer from 1 to {MAX_HALF_ORDER}, got {half_order!r}")
    m = int(half_order)
    if xs.ndim != 1 or xs.size < 2 * m:
        raise ValueError(f"`x` must be a 1-D array of at least 2·half_order = {2 * m} knots, got shape {xs.shape}")
    if not np.all(np.isfinite(xs)) or np.any(np.diff(xs) <= 0):
        raise ValueError("`x` must be finite and strictly increasing")
    if ys.shape[:1] != xs.shape or ys.ndim > 2 or not np.all(np.isfinite(ys)):
        raise ValueError(f"`y` must be finite, of shape ({xs.size},) or ({xs.size}, k), got shape {ys.shape}")
    if ys.size * m > MAX_FIT_WORK:  # knots × columns × half order
        raise ValueError(f"{ys.size:,} data points at half order {m} are too many to fit: at most {MAX_FIT_WORK:,} "
                         f"knots × columns × half_order (e.g. {MAX_FIT_WORK // m:,} knots of one column at this half order)")
    if not math.isfinite(error_variance):
        raise ValueError(f"`error_variance` must be finite, got {error_variance!r}")
    return xs, ys, m


class GCVSpline(EmpiricalFunction):
    """OpenSim's ``GCVSpline``: GCVSPL's spline of half order ``m`` through or near the data.

    An :class:`~mbkron.numerics.functions.EmpiricalFunction` (for one column of data): a
    :class:`~mbkron.multibody.jointvars.CoordinateFunction` of it is a joint variable, evaluated by the compiled
    kernel of explicit joint variables (:mod:`mbkron.numerics.tabulated`).

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing.
    y : array_like, shape (n,) or (n, k)
        Data; ``k`` columns are ``k`` splines on the same knots, each fitted on its own (each equal
        to OpenSim's ``GCVSpline`` of that column).
    half_order : int
        ``1 ≤ m ≤`` :data:`MAX_HALF_ORDER` (degree ``2m − 1``; OpenSim's ``degree`` argument 1, 3, 5, 7
        is half order 1, 2, 3, 4); ``n ≥ 2m``; ``n k m ≤`` :data:`MAX_FIT_WORK`.
    error_variance : float
        As :func:`gcvspl`: 0 interpolates, ``> 0`` smooths for that error variance, ``< 0`` smooths by
        generalized cross-validation.

    Attributes
    ----------
    coefficients : ndarray, shape of ``y``
        GCVSPL's coefficients.
    smoothing : ndarray, shape ``y.shape[1:]``
        The smoothing parameter chosen for each column (0 when GCVSPL's lower bound was reached).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(6.0)
    >>> s = GCVSpline(x, 2.0 * x - 1.0, half_order=3)     # a line is its own quintic interpolant
    >>> s([0.5, 7.0]).round(12), s(2.5, derivative=1).round(12)
    (array([ 0., 13.]), np.float64(2.0))
    """

    def __init__(self, x: ArrayLike, y: ArrayLike, half_order: int = 3, error_variance: float = 0.0):
        xs, ys, m = _checked(x, y, half_order, error_variance)
        self.x, self.y, self.half_order, self.error_variance = xs, ys, m, float(error_variance)
        columns = [gcvspl(xs, column, m, error_variance) for column in ys.reshape(xs.size, -1).T]
        self.coefficients = np.stack([c for c, _ in columns], axis=-1).reshape(ys.shape)
        self.smoothing = np.array([p for _, p in columns]).reshape(ys.shape[1:])
        self._packed_columns = self._pack_columns()
        if self.coefficients.ndim == 1:  # one function, packed as its one column (several are refused as one: pack)
            self._alone = self._packed_columns

    def __call__(self, t: ArrayLike, derivative: int = 0) -> FloatArray:
        """Value (``derivative = 0``) or a derivative of any order at ``t``.

        Returns
        -------
        ndarray, shape ``np.shape(t) + y.shape[1:]``
        """
        if isinstance(derivative, bool) or not isinstance(derivative, (int, np.integer)) or derivative < 0:
            raise ValueError(f"`derivative` must be an integer ≥ 0, got {derivative!r}")
        tt = real_values(t, "t")
        rows, floats = self._packed_columns
        values = _tabulated.gcv_values(rows, floats, int(derivative), writable(tt.reshape(-1)))
        return values.reshape(tt.shape + self.coefficients.shape[1:])

    def _pack_columns(self) -> tuple[NDArray[np.int64], FloatArray]:
        """Each column's spline packed (:meth:`pack`, one knot vector per column), read-only: at construction."""
        floats: list = []
        columns = self.coefficients.reshape(self.x.size, -1).T
        rows = np.array([self._pack_column(floats, column) for column in columns], dtype=np.int64)
        packed = rows.reshape(-1, function_rows.FUNCTION_COLUMNS), np.array(floats, dtype=float)
        for array in packed:
            array.setflags(write=False)
        return packed

    def _pack_column(self, floats: list, coefficients: FloatArray) -> list[int]:
        row = [0] * function_rows.FUNCTION_COLUMNS
        row[function_rows.KIND], row[function_rows.AT] = function_rows.GCV, len(floats)
        row[function_rows.COUNT], row[function_rows.HALF_ORDER] = self.x.size, self.half_order
        floats.extend(self.x.tolist())
        floats.extend(coefficients.tolist())
        return row

    def pack(self, floats: list) -> list[int]:
        """The knots, then the coefficients (:data:`mbkron.numerics.function_rows.GCV`, the half order in its row).

        Raises
        ------
        ValueError
            For a spline of several columns (``y`` of shape (n, k)): a function of one value is one column.
        """
        if self.coefficients.ndim != 1:
            raise ValueError(f"a GCV spline of `y` of shape {self.y.shape} is {self.y.shape[1]} functions; an "
                             "empirical function of one coordinate takes one column")
        return self._pack_column(floats, self.coefficients)

    kind = "gcv"  # the name of this spline in model files

    def describe(self) -> str:
        v = self.error_variance
        fit = "interpolating" if v == 0 else "smoothed by GCV" if v < 0 else f"smoothed for error variance {v:.6g}"
        where = f"{self.x.size} knots on [{self.x[0]:.6g}, {self.x[-1]:.6g}]"
        return f"GCV spline of degree {2 * self.half_order - 1}, {fit}, {where}"
