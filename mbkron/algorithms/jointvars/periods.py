"""Periods of a constraint group's equations in the coordinates: where continuation may start a whole period away.

A revolute angle enters loop equations only through ``sin`` and ``cos`` of arguments linear in it
(Eq. 121, 123, 199 and every loop closure), so ``g(f, p)`` is ``2π``-periodic in it at fixed ``f``: a
solution ``f`` at ``q`` is also one at ``q + T e_i`` when ``T`` is a period of ``g(f, p(q))`` in
``q_i``. :class:`~mbkron.algorithms.jointvars.solvers.PositionSolver` uses this to start its continuation from
its start shifted by whole periods, so that a coordinate of ``10⁶`` rad does not need a walk of
``10⁶`` rad.

The periods in the joint variables and inputs are the system's own
(:meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.variable_periods`: ``2π`` for each revolute joint of a
loop closure); for equations given as expressions they are found from the sympy form
(:meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.expressions`) by a structural test that never
gives a false positive: an input ``p_k`` is periodic when every occurrence of it is inside ``sin``,
``cos`` or ``tan`` of an argument ``a p_k + b`` with a constant ``a ≠ 0`` (``b`` free of ``p_k``), and
all its frequencies ``|a|`` are integer multiples of the smallest, ``a₀``; its period is ``2π/a₀``. A
coordinate ``q_i`` is periodic with period ``T`` when the inputs are affine in ``q``, ``p = A q + c``,
and every input it moves is periodic and moved by a whole number of its periods,
``A_ki T / P_k ∈ ℤ`` (``T`` the largest ``P_k / |A_ki|``); an input it moves that is not periodic makes it non-periodic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule

__all__ = ["input_period", "coordinate_periods"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")

_MAX_NODES = 200_000  # expressions larger than this are not analysed (no periodicity assumed)
_INTEGER_TOLERANCE = 1e-9


def _near_integer(value: float) -> bool:
    return abs(value - round(value)) <= _INTEGER_TOLERANCE * max(1.0, abs(value))


def input_period(expressions: Sequence[sympy.Expr], symbol: sympy.Symbol) -> float | None:
    """The period of ``expressions`` in ``symbol`` by the structural test of the module docstring.

    Parameters
    ----------
    expressions : sequence of sympy.Expr
    symbol : sympy.Symbol

    Returns
    -------
    float or None
        ``inf`` if no expression uses ``symbol``; ``None`` if the test does not prove periodicity.
    """
    frequencies: list[float] = []
    pending = [sympy.sympify(e) for e in expressions]
    visited = 0
    while pending:
        node = pending.pop()
        visited += 1
        if visited > _MAX_NODES:
            return None
        if node == symbol:
            return None  # the symbol outside a trigonometric function
        if not node.has(symbol):
            continue
        if isinstance(node, (sympy.sin, sympy.cos, sympy.tan)):
            argument = node.args[0]
            slope = sympy.diff(argument, symbol)
            if slope.free_symbols:
                return None  # not linear in the symbol
            try:
                frequency = abs(float(slope))
            except (TypeError, ValueError):
                return None
            if not math.isfinite(frequency) or frequency == 0.0:
                return None
            frequencies.append(frequency)
            continue
        pending.extend(node.args)
    if not frequencies:
        return math.inf
    lowest = min(frequencies)
    if not all(_near_integer(f / lowest) for f in frequencies):
        return None
    return 2.0 * math.pi / lowest


def coordinate_periods(input_periods: Sequence[float | None], matrix: NDArray) -> NDArray[np.float64]:
    """Periods ``T_i`` of the equations in each coordinate (``nan``: not periodic).

    Parameters
    ----------
    input_periods : sequence of float or None
        The period of the equations in each input ``p_k`` (:func:`input_period`'s values: ``inf`` where
        unused, None where not proved periodic).
    matrix : ndarray, shape (np, nq)
        ``A`` of ``p = A q + c``.

    Returns
    -------
    ndarray, shape (nq,)
    """
    matrix = np.asarray(matrix, dtype=float)
    periods = np.full(matrix.shape[1], np.nan)
    for i in range(matrix.shape[1]):
        moved = [(abs(matrix[k, i]), input_periods[k]) for k in range(matrix.shape[0])
                 if matrix[k, i] != 0.0 and input_periods[k] != math.inf]
        if not moved or any(period is None for _, period in moved):
            continue  # no equation depends on q_i (nothing to walk), or not periodic
        candidate = max(period / slope for slope, period in moved)
        if all(_near_integer(slope * candidate / period) for slope, period in moved):
            periods[i] = candidate
    return periods
