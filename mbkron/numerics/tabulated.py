"""Explicit joint variables in one compiled pass: ``f = A q + c`` with every provider row, ``∇f``, and ``H`` or
``q̇ᵀ H q̇`` (Section 3-1 of the dissertation: the ``f_i(q)``, ``∇f_i``, ``H_i`` of Eq. 57, 126), and the empirical
functions of one variable they are made of — the one implementation of
:class:`~mbkron.numerics.functions.CubicSpline`, :class:`~mbkron.numerics.functions.PiecewiseLinear`,
:class:`~mbkron.numerics.functions.PiecewiseConstant`, :class:`~mbkron.numerics.functions.FourierSeries`,
:class:`~mbkron.numerics.gcvspl.GCVSpline` and :class:`~mbkron.numerics.functions.AffineMapped` of them, each alone,
stacked (moving path points), or as a model's joint variables.

The description is packed with numpy when a model is built (:mod:`mbkron.numerics.function_rows`:
:meth:`mbkron.numerics.functions.EmpiricalFunction.pack`, :meth:`mbkron.algorithms.jointvars.explicit.JointVariables.explicit`):
a row per function of an integer table and its numbers in one float array —

- a piecewise cubic (:data:`~mbkron.numerics.function_rows.CUBIC`): its ``n`` knots, then ``n + 1`` pieces
  ``(anchor, value, b, c, d)``: piece 0 the straight line below the first knot, then the cubics, then the straight
  line above the last knot; at ``x`` the piece is the number of knots ``≤ x`` (the last knot itself belongs to the
  last cubic);
- a step function (:data:`~mbkron.numerics.function_rows.STEP`): its ``n`` knots, then its ``n`` values;
- a Fourier series (:data:`~mbkron.numerics.function_rows.FOURIER`): ``ω = 2π/period``, ``a0``, then the ``n`` cosine and
  the ``n`` sine coefficients;
- a GCVSPL spline (:data:`~mbkron.numerics.function_rows.GCV`) of half order ``m``: its ``n`` knots, then its ``n``
  coefficients (Woltring's ``SPLDER``, :func:`gcv_derivative`);

each possibly inside affine maps ``a·G(c·x + d) + b``. Joint variables given as expressions are one C callback per
provider (:mod:`mbkron.algorithms.jointvars.generated`, the signature of :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`)
writing the nonzero values, first and second derivatives, which ``entries`` places.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.callbacks import callback_address  # (a formula's callback's address, for explicit.py)
from mbkron.jit.callbacks import constraint_function as _callback  # compiled, or (without numba) the Python function
from mbkron.jit.calls import by_address
from mbkron.jit.common import jit, jitable
from mbkron.jit.arrays import writable
from mbkron.numerics.function_rows import (AT, COORDINATE, COUNT, CUBIC, FOURIER, GCV, HALF_ORDER, KIND, ROW, STEP,
                                           WRAP_AT, WRAPS)

__all__ = ["VALUES", "HESSIANS", "CONVECTIVE", "affine_values", "convective_gradients", "cubic_piece", "explicit_batch",
           "explicit_state", "explicit_state_at", "function_third", "functions_at", "gcv_derivative", "gcv_values",
           "callback_address", "scratch_size"]

VALUES, HESSIANS, CONVECTIVE = 0, 1, 2
"""What :func:`explicit_state` computes besides ``f`` and ``∇f``: nothing, the dense Hessians ``H_j``, or the
convective terms ``q̇ᵀ H_j q̇``."""

_ROUNDOFF = 0.0000000000002
"""OpenSim's ``EQUAL_WITHIN_ERROR`` tolerance at a step function's end knots (``ROUNDOFF_ERROR``, SimmMacros.h)."""



@jitable
def affine_values(A, c, q, f):  # pragma: no cover - compiled
    """``f = A q + c`` (affine joint variables) into ``f``."""
    for j in range(A.shape[0]):
        value = c[j]
        for k in range(q.shape[0]):
            value += A[j, k] * q[k]
        f[j] = value


@jitable
def cubic_piece(knots, knots_at, count, table, table_at, x):  # pragma: no cover - compiled
    """Value, first and second derivative at ``x`` of the piecewise cubic whose ``count`` knots start at
    ``knots[knots_at]`` and whose pieces ``(anchor, value, b, c, d)`` start at ``table[table_at]``; the end lines
    are evaluated as lines (exact far out and at ``x = ±inf``). NaN in, NaN out."""
    if math.isnan(x):
        return x, x, x
    piece = _cubic_at(knots, knots_at, count, x)
    row = table_at + 5 * piece
    dx = x - table[row]
    b, c, d = table[row + 2], table[row + 3], table[row + 4]
    if piece == 0 or piece == count:
        return table[row + 1] + b * dx, b, 0.0
    return (table[row + 1] + dx * (b + dx * (c + dx * d)), b + dx * (2.0 * c + 3.0 * dx * d),
            2.0 * c + 6.0 * dx * d)


@jitable
def _cubic_at(knots, knots_at, count, x):  # pragma: no cover - compiled
    """The piece of :func:`cubic_piece` at ``x`` (not NaN): the number of knots ``≤ x``, the last knot itself in the
    last cubic."""
    piece = 0
    while piece < count and x >= knots[knots_at + piece]:
        piece += 1
    if piece == count and x == knots[knots_at + piece - 1]:
        piece -= 1  # the last knot: the end of the last cubic
    return piece


@jitable
def _step_value(floats, at, n, t):  # pragma: no cover - compiled
    """OpenSim's ``PiecewiseConstantFunction::calcValue`` at ``t`` (its bisection; knots at ``floats[at]``, values
    after them)."""
    first = t < floats[at] or abs(t - floats[at]) <= _ROUNDOFF
    last = t > floats[at + n - 1] or abs(t - floats[at + n - 1]) <= _ROUNDOFF
    piece = 0
    if last and not first:
        piece = n - 1
    elif not first:
        low, high = 0, n
        while True:  # k = (i + j)/2 until x_k ≤ t ≤ x_{k+1}
            k = (low + high) // 2
            if t < floats[at + min(k, n - 1)]:
                high = k
            elif t > floats[at + min(k + 1, n - 1)]:
                low = k
            else:
                piece = k
                break
    return floats[at + n + piece]


@jitable
def _fourier(floats, at, n, x):  # pragma: no cover - compiled
    """``F = a0 + Σ a_k cos(kωx) + b_k sin(kωx)`` and its first two derivatives (``ω`` at ``floats[at]``)."""
    omega = floats[at]
    cos_a = sin_b = cos_fb = sin_fa = cos_ffa = sin_ffb = 0.0
    for k in range(n):
        frequency = omega * (k + 1.0)
        a, b = floats[at + 2 + k], floats[at + 2 + n + k]
        phase = x * frequency
        cos, sin = math.cos(phase), math.sin(phase)
        cos_a += cos * a
        sin_b += sin * b
        cos_fb += cos * (frequency * b)
        sin_fa += sin * (frequency * a)
        squared = frequency * frequency
        cos_ffa += cos * (squared * a)
        sin_ffb += sin * (squared * b)
    return floats[at + 1] + cos_a + sin_b, cos_fb - sin_fa, -(cos_ffa + sin_ffb)


@jitable
def gcv_derivative(floats, at, n, m, ider, t, q):  # pragma: no cover - compiled
    """Derivative of order ``ider`` (0: the value) at ``t`` of the GCVSPL spline of half order ``m`` whose ``n``
    knots start at ``floats[at]``, its coefficients after them: Woltring's ``SPLDER`` (1986) operation by operation,
    as Simbody's ``gcvspl.cpp`` evaluates OpenSim's ``GCVSpline``. ``q`` is scratch of at least ``2m + 1`` numbers.
    Beyond the knots the spline is the polynomial of degree ``m − 1`` GCVSPL's natural splines are there; a
    derivative of order ``≥ 2m`` is 0."""
    m2 = 2 * m
    k = m2 - ider
    if k < 1:
        return 0.0
    # SEARCH: l = the number of knots ≤ t (0 before the first, n from the last on and for NaN)
    l = 0
    if math.isnan(t):
        l = n
    else:
        while l < n and floats[at + l] <= t:
            l += 1
    c_at = at + n - 1  # c[j] (1-based) at floats[c_at + j]; x[j] at floats[at - 1 + j]
    x_at = at - 1
    nk, lk1 = n - m2 + ider, l - m2 + ider + 1
    ml, jl, ii = -l, l + 1, n - m2
    q[0] = math.nan  # never read
    for j in range(jl, l + m2 + 1):
        q[j + ml] = floats[c_at + j - m] if m + 1 <= j <= n + m else 0.0
    if ider > 0:
        jl -= m2
        ml += m2
        for i in range(1, ider + 1):
            jl += 1
            ii += 1
            j1, j2 = max(1, jl), min(l, ii)
            mi = m2 - i
            for j in range(j2, j1 - 1, -1):
                jm = ml + j
                q[jm] = (q[jm] - q[jm - 1]) / (floats[x_at + j + mi] - floats[x_at + j])
            if jl < 1:
                for j in range(ml, i, -1):
                    q[j] = -q[j - 1]
        for j in range(1, k + 1):
            q[j] = q[j + ider]
    for i in range(1, k):
        nki = nk + i
        ir, jj, ki = k, l, k - i
        for _ in range(nki + 1, l + 1):
            q[ir] = q[ir - 1] + (t - floats[x_at + jj]) * q[ir]
            jj -= 1
            ir -= 1
        lk1i = lk1 + i
        for _ in range(max(1, lk1i), min(l, nki) + 1):
            xjki = floats[x_at + jj + ki]
            z = q[ir]
            q[ir] = z + (xjki - t) * (q[ir - 1] - z) / (xjki - floats[x_at + jj])
            ir -= 1
            jj -= 1
        if lk1i <= 0:
            jj = ki
            for _ in range(1 - lk1i):
                q[ir] = q[ir] + (floats[x_at + jj] - t) * q[ir - 1]
                jj -= 1
                ir -= 1
    z = q[k]
    if ider > 0:
        for j in range(k, m2):
            z = z * j
    return z


@jitable
def function_value(rows, floats, r, x, scratch):  # pragma: no cover - compiled
    """Value, first and second derivative at ``x`` of the function of row ``r`` (the module's layout), inside its
    affine maps ``a·G(c·x + d) + b`` (``F' = a c G'``, ``F'' = a c² G''``)."""
    wrap_at, wraps = rows[r, WRAP_AT], rows[r, WRAPS]
    for i in range(wraps):  # the outermost first
        x = floats[wrap_at + 4 * i] * x + floats[wrap_at + 4 * i + 1]
    kind, at, n = rows[r, KIND], rows[r, AT], rows[r, COUNT]
    if kind == CUBIC:
        value, first, second = cubic_piece(floats, at, n, floats, at + n, x)
    elif kind == STEP:
        value, first, second = _step_value(floats, at, n, x), 0.0, 0.0
    elif kind == FOURIER:
        value, first, second = _fourier(floats, at, n, x)
    else:  # GCV
        m = rows[r, HALF_ORDER]
        value = gcv_derivative(floats, at, n, m, 0, x, scratch)
        first = gcv_derivative(floats, at, n, m, 1, x, scratch)
        second = gcv_derivative(floats, at, n, m, 2, x, scratch)
    for i in range(wraps - 1, -1, -1):  # the innermost first
        c, a, b = floats[wrap_at + 4 * i], floats[wrap_at + 4 * i + 2], floats[wrap_at + 4 * i + 3]
        value = a * value + b
        first = a * c * first
        second = a * c * c * second
    return value, first, second


@jitable
def function_third(rows, floats, r, x, scratch):  # pragma: no cover - compiled
    """Third derivative at ``x`` of the function of row ``r`` (as :func:`function_value`): ``F‴ = a c³ G‴`` inside
    each affine map ``a·G(c·x + d) + b``; a cubic's ``6 d`` (0 on the end lines), 0 for a step function, the Fourier
    series' ``Σ (kω)³ (a_k sin(kωx) − b_k cos(kωx))``, GCVSPL's ``SPLDER`` of order 3 (0 for half order 1)."""
    wrap_at, wraps, scale = rows[r, WRAP_AT], rows[r, WRAPS], 1.0
    for i in range(wraps):
        inner = floats[wrap_at + 4 * i]
        x = inner * x + floats[wrap_at + 4 * i + 1]
        scale *= floats[wrap_at + 4 * i + 2] * inner * inner * inner
    kind, at, n = rows[r, KIND], rows[r, AT], rows[r, COUNT]
    if math.isnan(x):
        return x
    if kind == CUBIC:
        piece = _cubic_at(floats, at, n, x)
        third = 0.0 if piece == 0 or piece == n else 6.0 * floats[at + n + 5 * piece + 4]
    elif kind == STEP:
        third = 0.0
    elif kind == FOURIER:
        omega, third = floats[at], 0.0
        for k in range(n):
            frequency = omega * (k + 1.0)
            phase = x * frequency
            third += frequency * frequency * frequency * (floats[at + 2 + k] * math.sin(phase)
                                                          - floats[at + 2 + n + k] * math.cos(phase))
    else:  # GCV
        third = gcv_derivative(floats, at, n, rows[r, HALF_ORDER], 3, x, scratch)
    return scale * third


@jit
def convective_gradients(rows, floats, q, qd, out):  # pragma: no cover - compiled
    """``∂(q̇ᵀ H_j q̇)/∂q`` of the joint variables of function ``rows`` at states ``q``, speeds ``qd`` (states, nq)
    into ``out`` (states, nj, nq), zero elsewhere: ``F‴(q_k) q̇_k²`` at ``(j, k)`` for ``f_j = F(q_k)`` (what the
    derivatives of the dynamics need of the third derivatives: Eq. 57 and 126 differentiated once more)."""
    scratch = np.empty(scratch_size(rows, np.zeros((0, 3), dtype=np.int64)))
    for s in range(q.shape[0]):
        for j in range(out.shape[1]):
            for k in range(out.shape[2]):
                out[s, j, k] = 0.0
        for r in range(rows.shape[0]):
            j, k = rows[r, ROW], rows[r, COORDINATE]
            out[s, j, k] = function_third(rows, floats, r, q[s, k], scratch) * qd[s, k] * qd[s, k]


@jitable
def scratch_size(rows, calls):  # pragma: no cover - compiled
    """The scratch :func:`explicit_state` needs: the largest callback output and GCVSPL's ``2m + 1``."""
    size = 1
    for r in range(rows.shape[0]):
        if rows[r, KIND] == GCV:
            size = max(size, 2 * rows[r, HALF_ORDER] + 1)
    for p in range(calls.shape[0]):
        size = max(size, calls[p, 2])
    return size


@jit
def functions_at(rows, floats, x):  # pragma: no cover - compiled
    """Values, first and second derivatives of the functions of ``rows`` (the module's layout), column ``r`` of
    ``x`` (states, r) at function ``r``: three arrays of the shape of ``x``."""
    states, count = x.shape
    values, firsts, seconds = np.empty((states, count)), np.empty((states, count)), np.empty((states, count))
    scratch = np.empty(scratch_size(rows, np.zeros((0, 3), dtype=np.int64)))
    for s in range(states):
        for r in range(count):
            values[s, r], firsts[s, r], seconds[s, r] = function_value(rows, floats, r, x[s, r], scratch)
    return values, firsts, seconds


@jit
def explicit_state(A, base, c, rows, floats, calls, entries, q, qd, mode, f, grad, hess, convective,
                   scratch):  # pragma: no cover - compiled
    """``f``, ``∇f`` and, by ``mode``, ``H`` (:data:`HESSIANS`) or ``q̇ᵀ H q̇`` (:data:`CONVECTIVE`) of one state
    ``q`` (speeds ``qd``) of a map of explicit joint variables, into the arrays given (Section 3-1, Eq. 57).

    The affine part is ``f = A q + c`` with gradients ``base`` (``A`` with the provider rows zero) and zero
    Hessians; each row of ``rows`` then sets ``f_j = F(q_k)``, ``∂f_j/∂q_k = F'(q_k)`` and ``H_j[k, k] = F''(q_k)``
    (``q̇ᵀ H_j q̇ = F'' q̇_k²``); each call ``(address, first entry, entries)`` of ``calls`` runs a generated callback
    at ``q`` into ``scratch`` (zero-filled first), whose entry ``e`` of ``entries`` ``(what, j, k, m)`` is ``f_j``
    (``what`` 0), ``∂f_j/∂q_k`` (1) or ``∂²f_j/∂q_k∂q_m`` (2; summed into ``q̇ᵀ H_j q̇`` in order).
    """
    nj, nq = A.shape
    affine_values(A, c, q, f)
    for j in range(nj):
        for k in range(nq):
            grad[j, k] = base[j, k]
    if mode == HESSIANS:
        for j in range(nj):
            for k in range(nq):
                for m in range(nq):
                    hess[j, k, m] = 0.0
    elif mode == CONVECTIVE:
        for j in range(nj):
            convective[j] = 0.0
    for r in range(rows.shape[0]):
        j, k = rows[r, ROW], rows[r, COORDINATE]
        value, first, second = function_value(rows, floats, r, q[k], scratch)
        f[j] = value
        grad[j, k] = first
        if mode == HESSIANS:
            hess[j, k, k] = second
        elif mode == CONVECTIVE:
            convective[j] = second * qd[k] * qd[k]
    for p in range(calls.shape[0]):
        start, count = calls[p, 1], calls[p, 2]
        for i in range(count):
            scratch[i] = 0.0
        _callback(calls[p, 0])(q, scratch, floats)
        for i in range(count):
            what, j, k, m = entries[start + i, 0], entries[start + i, 1], entries[start + i, 2], entries[start + i, 3]
            if what == 0:
                f[j] = scratch[i]
            elif what == 1:
                grad[j, k] = scratch[i]
            elif mode == HESSIANS:
                hess[j, k, m] = scratch[i]
            elif mode == CONVECTIVE:
                convective[j] += scratch[i] * qd[k] * qd[m]


explicit_state_at = by_address(explicit_state, returns="none")
""":func:`explicit_state` called through its address (:mod:`mbkron.jit.calls`): compiled once for the batch and
the forward-dynamics kernels that call it."""


@jit
def explicit_batch(A, base, c, rows, floats, calls, entries, q, qd, mode, f, grad, hess,
                   convective):  # pragma: no cover - compiled
    """:func:`explicit_state` for every state ``q[s]`` (speeds ``qd[s]``, or ``qd[0]`` for all); ``hess`` and
    ``convective`` have one row when the ``mode`` does not write them."""
    scratch = np.empty(scratch_size(rows, calls))
    for s in range(q.shape[0]):
        explicit_state_at((A, base, c, rows, floats, calls, entries, q[s], qd[s if qd.shape[0] > 1 else 0], mode,
                           f[s], grad[s], hess[s if hess.shape[0] > 1 else 0],
                           convective[s if convective.shape[0] > 1 else 0], scratch))


def evaluate_functions(rows: NDArray, floats: NDArray, x: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Values, first and second derivatives of the functions of ``rows`` at ``x`` (..., r) (real): function ``r``
    at ``x[..., r]``, each of the shape of ``x``."""
    points = writable(x).reshape(-1, x.shape[-1])  # (read-only rows would be a second compilation)
    values, firsts, seconds = functions_at(rows, floats, points)
    return values.reshape(x.shape), firsts.reshape(x.shape), seconds.reshape(x.shape)


@jit
def gcv_values(rows, floats, ider, t):  # pragma: no cover - compiled
    """The derivative of order ``ider`` (0: the value) of the GCVSPL splines of ``rows`` (:func:`gcv_derivative`) at
    every point of ``t`` (points,): shape (points, splines)."""
    out = np.empty((t.shape[0], rows.shape[0]))
    scratch = np.empty(scratch_size(rows, np.zeros((0, 3), dtype=np.int64)))
    for s in range(t.shape[0]):
        for r in range(rows.shape[0]):
            out[s, r] = gcv_derivative(floats, rows[r, AT], rows[r, COUNT], rows[r, HALF_ORDER], ider, t[s], scratch)
    return out
