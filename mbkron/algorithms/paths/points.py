"""The varying terms of a muscle set's moving path points, evaluated together with their gradients (the points:
:mod:`mbkron.multibody.muscles.points`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.numerics.functions import CubicSpline, PiecewiseLinear, StackedPiecewiseCubic
from mbkron.algorithms.jointvars.explicit import SymbolicJointVariables
from mbkron.algorithms.jointvars.functions import CoordinateFunctionVariables
from mbkron.multibody.jointvars import CoordinateFunction

__all__ = ["MovingPointTerms"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")


class MovingPointTerms:
    """The varying terms of all moving points of a muscle set, evaluated together.

    ``δ(q) = Σ_t A_t F_t(q)`` with ``A_t`` the constant one-hot map from term ``t`` to its
    (point, axis) slot: values (..., n_points, 3) and gradients (..., n_points, 3, nq).

    Parameters
    ----------
    slots : sequence of (int, int, term)
        ``(point, axis, term)`` of every varying term (CoordinateFunction or sympy expression).
    n_points : int
        Number of moving points.
    coordinate_names : sequence of str
    labels : sequence of str
        A name for each moving point (for error messages).
    extrapolate : sequence of bool
        Per moving point: whether tabulated functions may leave their knots.
    """

    def __init__(self, slots: Sequence[tuple[int, int, object]], n_points: int,
                 coordinate_names: Sequence[str], labels: Sequence[str], extrapolate: Sequence[bool]):
        names = list(coordinate_names)
        self.n_points, self.nq, self.labels = n_points, len(names), tuple(labels)
        self.scatter = np.zeros((n_points * 3, len(slots)))
        for t, (point, axis, _) in enumerate(slots):
            self.scatter[3 * point + axis, t] = 1.0
        tabulated = [t for t, (_, _, f) in enumerate(slots)
                     if isinstance(f, CoordinateFunction) and isinstance(f.function, (CubicSpline, PiecewiseLinear))]
        general = [t for t, (_, _, f) in enumerate(slots) if isinstance(f, CoordinateFunction) and t not in tabulated]
        symbolic = [t for t, (_, _, f) in enumerate(slots) if not isinstance(f, CoordinateFunction)]
        self.groups = []
        if tabulated:
            functions = [slots[t][2] for t in tabulated]
            columns = np.array([names.index(f.coordinate) for f in functions])
            self.groups.append((np.array(tabulated), "tabulated", StackedPiecewiseCubic([f.function for f in functions]),
                                columns))
            checked = np.array([not extrapolate[slots[t][0]] for t in tabulated])
            self.domain = (np.array(tabulated)[checked], columns[checked],
                           np.array([f.function.x[0] for f in functions])[checked],
                           np.array([f.function.x[-1] for f in functions])[checked])
        else:
            self.domain = None
        if general:
            provider = CoordinateFunctionVariables.from_descriptions([slots[t][2] for t in general], names)
            self.groups.append((np.array(general), "provider", provider.alone(), None))  # packed once, here
        if symbolic:
            provider = SymbolicJointVariables([slots[t][2] for t in symbolic], [sympy.Symbol(n) for n in names])
            self.groups.append((np.array(symbolic), "provider", provider.alone(), None))
        self.n_terms = len(slots)

    def _check_domain(self, q: NDArray) -> None:
        rows, columns, lo, hi = self.domain
        x = q[..., columns]
        outside = (x < lo - 1e-12 * (1 + abs(lo))) | (x > hi + 1e-12 * (1 + abs(hi)))
        if outside.any():
            where = np.argwhere(outside)[0]
            term = int(where[-1])
            point = int(np.argmax(self.scatter[:, rows[term]])) // 3
            raise ConfigurationError(
                f"moving point {self.labels[point]}: its function of coordinate #{columns[term]} is tabulated on "
                f"[{lo[term]:.6g}, {hi[term]:.6g}] but q = {q[tuple(where[:-1])].tolist()}; give the point "
                "`extrapolate=True` to continue it linearly (as OpenSim does)"
            )

    def evaluate(self, q: NDArray) -> tuple[NDArray, NDArray]:
        """Offsets ``δ`` (..., n_points, 3) and ``∂δ/∂q`` (..., n_points, 3, nq) at ``q`` (..., nq)."""
        if self.domain is not None and self.domain[0].size:
            self._check_domain(q)
        batch = q.shape[:-1]
        values = np.empty(batch + (self.n_terms,))
        grads = np.zeros(batch + (self.n_terms, self.nq))
        for rows, kind, evaluator, columns in self.groups:
            if kind == "tabulated":
                value, slope, _ = evaluator.evaluate(q[..., columns], 1)
                values[..., rows] = value
                grads[..., rows, columns] = slope
            else:
                value, grad, _ = evaluator.evaluate(q, 1)
                values[..., rows] = value
                grads[..., rows, :] = grad
        offsets = (values @ self.scatter.T).reshape(batch + (self.n_points, 3))
        gradients = (self.scatter @ grads).reshape(batch + (self.n_points, 3, self.nq))
        return offsets, gradients
