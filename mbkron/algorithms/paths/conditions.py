"""Which conditional path points of a muscle set are active at a batch of states (the conditions:
:mod:`mbkron.multibody.muscles.conditions`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody.muscles.conditions import PathPointCondition

__all__ = ["ActivePoints"]


class ActivePoints:
    """Which path points of a muscle set are active, at a batch of states.

    The path kernels join each active point to the next active one: a muscle's active polyline
    (:mod:`mbkron.algorithms.paths.kernels`, :mod:`mbkron.algorithms.paths.wrapping_kernels`).

    Parameters
    ----------
    conditions : sequence of (int, PathPointCondition)
        The conditional points (their row among all points) and their conditions.
    coordinate_names : sequence of str
    n_points : int
    """

    def __init__(self, conditions: Sequence[tuple[int, PathPointCondition]], coordinate_names: Sequence[str],
                 n_points: int):
        names = list(coordinate_names)
        self.n_points = n_points
        self.rows = np.array([row for row, _ in conditions], dtype=np.intp)
        self.columns = np.array([names.index(c.coordinate) for _, c in conditions], dtype=np.intp)
        self.lo = np.array([float(c.lo) for _, c in conditions])
        self.hi = np.array([float(c.hi) for _, c in conditions])
        for array in (self.rows, self.columns, self.lo, self.hi):
            array.setflags(write=False)

    def active(self, q: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether each point is active at ``q`` (..., nq), shape (..., P)."""
        active = np.ones(q.shape[:-1] + (self.n_points,), dtype=bool)
        x = q[..., self.columns]
        active[..., self.rows] = (self.lo <= x) & (x <= self.hi)
        return active
