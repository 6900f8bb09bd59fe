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

:class:`PathPointCondition` describes one condition; :class:`ActivePoints` evaluates all
conditions of a :class:`~mbkron.muscles.paths.MuscleSet` at a batch of states and gives the active
segments and the point forces of the active polylines.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["PathPointCondition", "ActivePoints", "condition_problems", "OPENSIM_RANGE_TOLERANCE"]

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
        """Whether the point is active at coordinate values ``value`` (any shape; of the real part)."""
        value = np.real(value)
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


class ActivePoints:
    """The active path points and segments of a muscle set at a batch of states.

    The segments of a set are fixed: segment ``s`` starts at point ``segment_start[s]`` (every
    point but the insertions) and ends at the first *active* point after it, so that a muscle's
    active polyline is made of the segments whose start is active; the others have zero length
    and direction.

    Parameters
    ----------
    conditions : sequence of (int, PathPointCondition)
        The conditional points (their row among all points) and their conditions.
    coordinate_names : sequence of str
    segment_start : ndarray of int, shape (S,)
        First point of each segment (all muscles concatenated).
    n_points : int
    """

    def __init__(self, conditions: Sequence[tuple[int, PathPointCondition]], coordinate_names: Sequence[str],
                 segment_start: NDArray[np.int64], n_points: int):
        names = list(coordinate_names)
        self.n_points = n_points
        self.rows = np.array([row for row, _ in conditions], dtype=np.intp)
        self.columns = np.array([names.index(c.coordinate) for _, c in conditions], dtype=np.intp)
        self.lo = np.array([float(c.lo) for _, c in conditions])
        self.hi = np.array([float(c.hi) for _, c in conditions])
        self.after_start = segment_start + 1  # a segment's end is the first active point from here
        # the segment starting at each point; S (a zero row appended to the units) for the insertions
        self.segment_of_point = np.full(n_points, segment_start.size, dtype=np.intp)
        self.segment_of_point[segment_start] = np.arange(segment_start.size)
        self.positions = np.arange(n_points)
        for array in (self.rows, self.columns, self.lo, self.hi, self.after_start, self.segment_of_point, self.positions):
            array.setflags(write=False)

    def active(self, q: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether each point is active at ``q`` (..., nq; of the real part), shape (..., P)."""
        active = np.ones(q.shape[:-1] + (self.n_points,), dtype=bool)
        x = q[..., self.columns].real
        active[..., self.rows] = (self.lo <= x) & (x <= self.hi)
        return active

    def segment_ends(self, active: NDArray[np.bool_]) -> NDArray[np.intp]:
        """The end of every segment: the first active point after its start, shape (..., S).

        A muscle's insertion is unconditional, so the search never leaves the muscle.
        """
        candidates = np.where(active, self.positions, self.n_points)
        first_at_or_after = np.flip(np.minimum.accumulate(np.flip(candidates, -1), axis=-1), -1)
        return first_at_or_after[..., self.after_start]

    def point_forces(self, active: NDArray[np.bool_], units: NDArray[np.float64]) -> NDArray[np.float64]:
        """``f_j = u_out(j) − u_in(j)`` at the active points, zero at the others, shape (..., P, 3).

        ``units`` (..., S, 3) are zero for the segments whose start is inactive; ``u_in(j)`` is the
        unit vector of the segment from the last active point before ``j`` (none for an origin: the
        point before it is the previous muscle's insertion, which starts no segment).
        """
        padded = np.concatenate([units, np.zeros(units.shape[:-2] + (1, 3))], axis=-2)
        last_active = np.maximum.accumulate(np.where(active, self.positions, -1), axis=-1)
        previous = np.concatenate([np.full(active.shape[:-1] + (1,), -1), last_active[..., :-1]], axis=-1)
        incoming = np.where(previous >= 0, self.segment_of_point[previous], units.shape[-2])
        outgoing = padded[..., self.segment_of_point, :]
        forces = outgoing - np.take_along_axis(padded, incoming[..., None], axis=-2)
        return np.where(active[..., None], forces, 0.0)
