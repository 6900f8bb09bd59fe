"""Musculotendon path points whose body-frame position is a function of the coordinates.

Holzbaur et al. (2005) guide some muscles (the deltoid, pectoralis major, latissimus dorsi) through
*moving via points*: points whose position in their body's frame follows the arm's posture. The seed
(Section 4-4 A) models each as a zero-inertia body articulated to its segment; mbkron supports both
representations:

- :class:`MovingPoint` — the point itself, ``ᵇr(q) = Σ_terms``, evaluated with its exact gradient
  ``∂ᵇr/∂q`` (the fast path, :mod:`mbkron.algorithms.paths.paths`, by
  :class:`~mbkron.algorithms.paths.points.MovingPointTerms`);
- :func:`add_moving_point_bodies` — the seed's representation: a chain of massless prismatic bodies
  on the host body, one per varying term, whose last body carries the point at its origin (the
  literal seed forms of :mod:`mbkron.reference.muscle_paths` need it, because Definitions 2–5 only know
  body-fixed points).

``tests/test_muscles.py`` shows that the two give the same lengths and moment arms.

Each coordinate of a moving point is a number, a :class:`~mbkron.multibody.jointvars.CoordinateFunction`
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
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.multibody.muscles.conditions import PathPointCondition

__all__ = ["MovingPoint", "add_moving_point_bodies", "point_condition"]

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
        :class:`~mbkron.multibody.jointvars.CoordinateFunction`, a sympy expression in the coordinate names, or
        a sequence of these (summed).
    extrapolate : bool
        Whether tabulated functions may be evaluated outside their knots (as straight lines with the
        end slope, OpenSim's behaviour). If False (default), evaluation outside the knots raises
        :class:`~mbkron.core.errors.ConfigurationError` naming the point and q.
    active : PathPointCondition, optional
        The point is part of its path only while this condition holds (a conditional path point,
        :mod:`mbkron.multibody.muscles.conditions`); None (default): always.

    Examples
    --------
    >>> from mbkron.numerics.functions import CubicSpline
    >>> from mbkron.multibody.jointvars import CoordinateFunction
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
