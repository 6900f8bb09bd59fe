"""Musculotendon path points whose body-frame position is a function of the coordinates.

Holzbaur et al. (2005) guide some muscles (the deltoid, pectoralis major, latissimus dorsi) through
*moving via points*: points whose position in their body's frame follows the arm's posture. The seed
(Section 4-4 A) models each as a zero-inertia body articulated to its segment; mbkron supports both
representations:

- :class:`MovingPoint` — the point itself, ``ᵇr(q) = Σ_terms``, evaluated with its exact gradient
  ``∂ᵇr/∂q`` (the fast path, :mod:`mbkron.muscles.paths`);
- :func:`add_moving_point_bodies` — the seed's representation: a chain of massless prismatic bodies
  on the host body, one per varying term, whose last body carries the point at its origin (the
  literal seed forms of :mod:`mbkron.reference.muscle_paths` need it, because Definitions 2–5 only know
  body-fixed points).

``tests/test_muscles.py`` shows that the two give the same lengths and moment arms.

Each coordinate of a moving point is a number, a :class:`~mbkron.jointvars.records.CoordinateFunction`
(an empirical function of one coordinate, e.g. OpenSim's ``SimmSpline``), a sympy expression in the
coordinate names, or a sequence of these, summed (Holzbaur's DELT2 via point moves with both
elevation and axial rotation).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule, is_sympy_expression
from mbkron.core.errors import ConfigurationError
from mbkron.jointvars.empirical import CubicSpline, PiecewiseLinear, StackedPiecewiseCubic
from mbkron.jointvars.functions import CoordinateFunctionVariables
from mbkron.jointvars.records import CoordinateFunction
from mbkron.jointvars.explicit import SymbolicJointVariables
from mbkron.muscles.conditions import PathPointCondition

__all__ = ["MovingPoint", "MovingPointTerms", "add_moving_point_bodies", "point_condition"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")

def _terms(component: object) -> tuple:
    """The terms of one coordinate of a moving point (a scalar term or a sequence of them)."""
    if isinstance(component, (str, bytes)):
        raise TypeError(f"a moving-point coordinate must be a number, CoordinateFunction or sympy expression, "
                        f"not the string {component!r} (parse strings with mbkron.expressions.parser)")
    if isinstance(component, Sequence):
        return tuple(t for c in component for t in _terms(c))
    if is_sympy_expression(component):
        # coordinates are matched by name: Symbol("q", real=True) (the parser's) is Symbol("q")
        return (component.xreplace({s: sympy.Symbol(s.name) for s in component.free_symbols}),)
    if isinstance(component, CoordinateFunction) or (
        isinstance(component, numbers.Real) and not isinstance(component, bool)
    ):
        return (component,)
    raise TypeError(f"a moving-point coordinate must be a number, CoordinateFunction or sympy expression "
                    f"(or a sequence of them, summed), got {type(component).__name__}")


@dataclass(frozen=True, init=False)
class MovingPoint:
    """A path point whose position in its body's frame depends on the generalized coordinates.

    Parameters
    ----------
    body : str
        The body whose frame the position is given in (``"ground"`` allowed).
    location : sequence of 3 components
        ``x, y, z`` in body coordinates, m. Each is a number, a
        :class:`~mbkron.jointvars.records.CoordinateFunction`, a sympy expression in the coordinate names, or
        a sequence of these (summed).
    extrapolate : bool
        Whether tabulated functions may be evaluated outside their knots (as straight lines with the
        end slope, OpenSim's behaviour). If False (default), evaluation outside the knots raises
        :class:`~mbkron.core.errors.ConfigurationError` naming the point and q.
    active : PathPointCondition, optional
        The point is part of its path only while this condition holds (a conditional path point,
        :mod:`mbkron.muscles.conditions`); None (default): always.

    Examples
    --------
    >>> from mbkron.jointvars.empirical import CubicSpline
    >>> from mbkron.jointvars.records import CoordinateFunction
    >>> lift = CoordinateFunction(CubicSpline([0.0, 3.14159], [0.0, 0.0059], kind="fmm"), "shoulder_elv")
    >>> point = MovingPoint("humerus", (0.0272, (0.00535, lift), 0.04807))   # y = 0.00535 + lift(q)
    >>> point.constant_part.tolist(), len(point.varying_terms())
    ([0.0272, 0.00535, 0.04807], 1)
    """

    body: str
    location: tuple[tuple, tuple, tuple]
    extrapolate: bool
    active: PathPointCondition | None

    def __init__(self, body: str, location: Sequence, extrapolate: bool = False,
                 active: PathPointCondition | None = None):
        if len(location) != 3:
            raise ValueError(f"a moving point needs 3 coordinates (x, y, z), got {len(location)}")
        object.__setattr__(self, "body", body)
        object.__setattr__(self, "location", tuple(_terms(c) for c in location))
        object.__setattr__(self, "extrapolate", bool(extrapolate))
        object.__setattr__(self, "active", active)

    @property
    def constant_part(self) -> NDArray[np.float64]:
        """Sum of the numeric terms of each coordinate, shape (3,)."""
        return np.array([sum(float(t) for t in c if isinstance(t, numbers.Real)) for c in self.location])

    def varying_terms(self) -> list[tuple[int, object]]:
        """``(axis, term)`` for every non-numeric term, in order (x terms first)."""
        return [(axis, t) for axis, c in enumerate(self.location) for t in c if not isinstance(t, numbers.Real)]

    def coordinate_names(self) -> set[str]:
        """Names of the coordinates the point depends on."""
        names: set[str] = set()
        for _, term in self.varying_terms():
            names |= {term.coordinate} if isinstance(term, CoordinateFunction) else {s.name for s in term.free_symbols}
        return names


def point_condition(point: object) -> PathPointCondition | None:
    """The activity condition of a path point: ``(body, (x, y, z), condition)`` or a
    :class:`MovingPoint` with ``active``; None for an unconditional point."""
    if isinstance(point, MovingPoint):
        return point.active
    return point[2] if len(point) == 3 else None


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


def add_moving_point_bodies(builder, prefix: str, point: MovingPoint) -> tuple[str, tuple[float, float, float]]:
    """Add the seed's zero-inertia-body representation of a moving point to a model builder.

    One massless prismatic body per varying term (along the host body's x, y or z axis, with the
    term as its joint variable), chained on ``point.body``; the first carries the constant part
    as its offset. The point is the origin of the last body.

    Parameters
    ----------
    builder : ModelBuilder
    prefix : str
        Bodies are named ``{prefix}_{axis}{n}``.
    point : MovingPoint

    Returns
    -------
    (str, (0, 0, 0)) or (str, (0, 0, 0), PathPointCondition)
        The path point ``(body, location)`` to use in place of ``point`` (with the point's
        condition if it has one).
    """
    parent, offset = point.body, point.constant_part
    for n, (axis, term) in enumerate(point.varying_terms()):
        name = f"{prefix}_{'xyz'[axis]}{n}"
        builder.add_body(name, parent=parent, joint="prismatic", axis=np.eye(3)[axis], variable=term, offset=offset)
        parent, offset = name, np.zeros(3)
    if parent == point.body:
        raise ValueError(f"moving point on `{point.body}` has no varying term; use a fixed point")
    return (parent, (0.0, 0.0, 0.0)) if point.active is None else (parent, (0.0, 0.0, 0.0), point.active)
