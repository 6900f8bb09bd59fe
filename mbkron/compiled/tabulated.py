"""Piecewise cubics (cubic splines, linear interpolation) evaluated, many in one compiled pass: the one
implementation of :class:`~mbkron.jointvars.functions.CubicSpline` and
:class:`~mbkron.jointvars.functions.PiecewiseLinear` (each alone, or stacked as tabulated joint variables
and moving path points).

The layout is :class:`mbkron.jointvars.functions.StackedPiecewiseCubic`'s: per function ``t`` its knots
padded with ``+inf`` (``knots[t]``) and a table of pieces ``(anchor, value, b, c, d)`` starting at row
``first_piece[t]`` — piece 0 the straight line below the first knot, then the cubics, then the straight
line above the last knot; ``count[t]`` is the number of real knots. At a state ``x`` the piece is the
number of knots ``≤ x`` (the last knot itself belongs to the last cubic).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from mbkron.compiled.common import jit
from mbkron.compiled.layout import writable

__all__ = ["stacked_cubics"]


@jit
def _stacked_cubics(knots, count, table, first_piece, x):  # pragma: no cover - compiled
    """Values, first and second derivatives of the stacked piecewise cubics at ``x`` (states, m)."""
    states, m = x.shape
    values, slopes, curvatures = np.empty((states, m)), np.empty((states, m)), np.empty((states, m))
    n = knots.shape[1]
    for s in range(states):
        for t in range(m):
            xt = x[s, t]
            if math.isnan(xt):  # NaN in, NaN out (the search below would place it below the knots)
                values[s, t] = slopes[s, t] = curvatures[s, t] = xt
                continue
            piece = 0
            while piece < n and xt >= knots[t, piece]:
                piece += 1
            if piece == count[t] and xt == knots[t, piece - 1]:
                piece -= 1  # the last knot: the end of the last cubic
            row = first_piece[t] + piece
            dx = xt - table[row, 0]
            b, c, d = table[row, 2], table[row, 3], table[row, 4]
            if piece == 0 or piece == count[t]:  # an end line, as a line: exact far out and at x = ±inf too
                values[s, t], slopes[s, t], curvatures[s, t] = table[row, 1] + b * dx, b, 0.0
                continue
            values[s, t] = table[row, 1] + dx * (b + dx * (c + dx * d))
            slopes[s, t] = b + dx * (2.0 * c + 3.0 * dx * d)
            curvatures[s, t] = 2.0 * c + 6.0 * dx * d
    return values, slopes, curvatures


def stacked_cubics(knots: NDArray, count: NDArray, table: NDArray, first_piece: NDArray,
                   x: NDArray) -> tuple[NDArray, NDArray, NDArray]:
    """Values, first and second derivatives of many piecewise cubics at once (the module's layout), each of
    the shape of ``x`` (..., m)."""
    rows = writable(x).reshape(-1, x.shape[-1])  # (read-only rows would be a second compilation)
    values, slopes, curvatures = _stacked_cubics(knots, count, table, first_piece, rows)
    return values.reshape(x.shape), slopes.reshape(x.shape), curvatures.reshape(x.shape)
