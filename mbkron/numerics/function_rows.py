"""The rows of empirical functions of one variable, as the compiled evaluation of explicit joint variables and
stacked functions reads them (:mod:`mbkron.numerics.tabulated`): a row of integers per function, its numbers in one
float array. Constants only (importing them imports neither numpy nor numba), so that packing a description with
numpy (:meth:`mbkron.numerics.functions.EmpiricalFunction.pack`) imports no numba.
"""

from __future__ import annotations

__all__ = ["AT", "COORDINATE", "COUNT", "CUBIC", "FOURIER", "FUNCTION_COLUMNS", "GCV", "HALF_ORDER", "KIND", "ROW",
           "STEP", "WRAPS", "WRAP_AT"]

CUBIC, STEP, FOURIER, GCV = 0, 1, 2, 3
"""The kinds of empirical functions of one variable in the rows of an explicit joint-variable description
(:mod:`mbkron.numerics.tabulated`): a piecewise cubic (cubic splines, linear interpolation), OpenSim's step function,
a Fourier series, a GCVSPL spline."""

KIND, AT, COUNT, HALF_ORDER, WRAP_AT, WRAPS, ROW, COORDINATE = range(8)
"""The columns of a function row: its kind, where its numbers start in the float array, how many knots (harmonics)
it has, a GCV spline's half order, where its affine wrappers ``a·G(c·x + d) + b`` start (four numbers ``c, d, a, b``
each, the outermost first) and how many there are; for a joint variable, its row ``j`` in the joint-variable map and
the coordinate ``k`` of its argument."""

FUNCTION_COLUMNS = 8
"""Columns of a function row (:data:`KIND` … :data:`COORDINATE`)."""
