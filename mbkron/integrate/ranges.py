"""Coordinate ranges in a simulation: the initial state inside them, and a stop where the motion leaves one.

A coordinate's ``range`` is the domain on which the model's data are valid — where a rhythm was
measured, a spline tabulated, a linkage assembles (docs/model-format.md). It is not a joint limit (a
limit is a force: model it as a load). :func:`mbkron.simulate` therefore refuses an initial state
outside the ranges and, by default, ends the run where a coordinate reaches the end of its range: a
terminal event located on the solver's dense output (Brent's method to round-off), with the last
row at the crossing itself and status 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

__all__ = ["RANGE_POLICIES", "Ranges"]

RANGE_POLICIES = ("stop", "ignore")


class Ranges:
    """The coordinate ranges of a model, for one run.

    Parameters
    ----------
    model : Model
    policy : {"stop", "ignore"}
        ``"stop"``: refuse an initial state outside a range and stop where one is left;
        ``"ignore"``: neither.
    """

    def __init__(self, model, policy: str):
        if policy not in RANGE_POLICIES:
            raise ValueError(f"`ranges` must be one of {', '.join(map(repr, RANGE_POLICIES))}, got {policy!r}")
        records = model.coordinate_records
        self.names = tuple(c.name for c in records)
        self.lower = np.array([c.range[0] for c in records], dtype=float)
        self.upper = np.array([c.range[1] for c in records], dtype=float)
        self.active = policy == "stop" and bool(np.isfinite(self.lower).any() or np.isfinite(self.upper).any())

    def check_initial(self, q0: NDArray) -> None:
        """ValueError naming the first coordinate of ``q0`` outside its range."""
        if not self.active:
            return
        for name, value, low, high in zip(self.names, q0, self.lower, self.upper):
            if not low <= value <= high:
                raise ValueError(f"`q0`: coordinate `{name}` = {value:.9g} is outside its range [{low:.9g}, {high:.9g}] "
                                 "(the domain of the model's data); pass ranges='ignore' to start there anyway")

    def crossing(self, t_old: float, y_old: NDArray, t: float, y: NDArray, dense) -> tuple[float, str] | None:
        """The first time in the step ``t_old → t`` at which a coordinate reaches the end of its range
        (from inside), and a message naming it; None when the step stays inside."""
        if not self.active:
            return None
        nq = len(self.names)
        q_old, q = y_old[:nq], y[:nq]
        inside_before = (q_old >= self.lower) & (q_old <= self.upper)
        below, above = inside_before & (q < self.lower), inside_before & (q > self.upper)
        if not (below.any() or above.any()):
            return None
        first = None
        for k in np.flatnonzero(below | above):
            bound = self.lower[k] if below[k] else self.upper[k]
            t_cross = brentq(lambda s: dense(s)[k] - bound, t_old, t, xtol=1e-14 * max(1.0, abs(t)), rtol=4 * np.finfo(float).eps)
            if first is None or (t_cross - first[0]) * (t - t_old) < 0:
                first = (t_cross, k, bound)
        t_cross, k, bound = first
        end = "lower" if bound == self.lower[k] else "upper"
        return t_cross, (f"coordinate `{self.names[k]}` reached the {end} end of its range, {bound:.9g}, at "
                         f"t = {t_cross:.9g}, where the model's data end (ranges='ignore', on the command line "
                         "--allow-outside-range, integrates on)")
