"""Conditional path points: points that belong to a muscle path only while a coordinate is in a range.

OpenSim's ``ConditionalPathPoint`` (e.g. the rectus femoris' and vasti's points that take over
from the patella at deep knee flexion in gait2392 and leg6dof9musc) is part of the path only while
one coordinate ``q_c`` lies in ``[lo, hi]``. At every state the path is the polyline through the
*active* points in their order; its length is the sum of the active segments and the moment arms
``R = −∂L/∂q`` are those of that polyline. ``L`` is continuous where the active set changes only if
the point appearing or disappearing lies on the segment between its active neighbours; ``R`` is
piecewise smooth, and at a bound ``q_c = lo`` or ``q_c = hi`` the point is active (the range is
closed), so the value there is that of the set active there.

OpenSim 4.6 (``ConditionalPathPoint::isActive``) widens the range by ``1e-5`` (rad or m) on each
side: ``lo − 1e-5 ≤ q_c ≤ hi + 1e-5``. mbkron uses the range as given; an exact translation of an
OpenSim point uses ``[lo − 1e-5, hi + 1e-5]`` (``tests/test_conditional_points.py`` checks this
against OpenSim).

:class:`PathPointCondition` describes one condition; :class:`~mbkron.algorithms.paths.conditions.ActivePoints`
evaluates all conditions of a :class:`~mbkron.algorithms.paths.paths.MuscleSet` at a batch of states (which points are
active); the path kernels join the active points.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["PathPointCondition", "condition_problems", "OPENSIM_RANGE_TOLERANCE"]

#: OpenSim's widening of a ``ConditionalPathPoint``'s range on each side (rad or m).
OPENSIM_RANGE_TOLERANCE = 1e-5


@dataclass(frozen=True)
class PathPointCondition:
    """The condition under which a path point is part of its path: ``lo ≤ q[coordinate] ≤ hi``.

    Parameters
    ----------
    coordinate : str
        Name of a coordinate of the model.
    lo, hi : float
        Closed range, in the coordinate's SI unit (rad or m); checked (finite, ``lo ≤ hi``) when
        the model is built.

    Examples
    --------
    >>> condition = PathPointCondition("knee_angle_r", -2.61799, -1.45997)
    >>> condition.is_active(np.array([-2.0, -1.45997, -1.0])).tolist()
    [True, True, False]
    """

    coordinate: str
    lo: float
    hi: float

    def __post_init__(self):
        for key in ("lo", "hi"):  # numbers as Python floats; anything else is reported when the model is built
            value = getattr(self, key)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                object.__setattr__(self, key, float(value))

    def __str__(self) -> str:
        return f"{self.coordinate} in [{self.lo!r}, {self.hi!r}]"

    def is_active(self, value: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether the point is active at coordinate values ``value`` (any shape)."""
        value = np.asarray(value)
        return (self.lo <= value) & (value <= self.hi)


def condition_problems(condition: object, coordinates: set[str], label: str) -> list[str]:
    """Everything wrong with a point's ``condition`` (``label`` names the point in the messages)."""
    if not isinstance(condition, PathPointCondition):
        return [f"{label}: its condition must be a PathPointCondition, got {type(condition).__name__}"]
    problems = []
    if condition.coordinate not in coordinates:
        known = ", ".join(sorted(coordinates)) or "(none)"
        problems.append(f"{label} is active depending on unknown coordinate {condition.coordinate!r}; "
                        f"expected one of: {known}")
    bounds = (condition.lo, condition.hi)
    if not all(isinstance(b, numbers.Real) and not isinstance(b, bool) and math.isfinite(b) for b in bounds):
        problems.append(f"{label}: the range of its condition must be 2 finite numbers, got "
                        f"[{condition.lo!r}, {condition.hi!r}]")
    elif condition.lo > condition.hi:
        problems.append(f"{label}: the range of its condition [{condition.lo!r}, {condition.hi!r}] has lo > hi; "
                        "expected lo ≤ hi")
    return problems
