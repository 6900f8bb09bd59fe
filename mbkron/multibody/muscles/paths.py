"""Musculotendon path descriptions and their checks (their lengths and moment arms: :mod:`mbkron.algorithms.paths.paths`).

A path is a sequence of points, each fixed in a body (or the ground) or moving in it
(:class:`~mbkron.multibody.muscles.points.MovingPoint`), and possibly part of the path only while a coordinate
is in a range (a conditional point, :mod:`mbkron.multibody.muscles.conditions`), and its wraps
(:class:`~mbkron.multibody.muscles.wrapping.PathWrap`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbkron.multibody.records import GROUND
from mbkron.multibody.muscles.conditions import condition_problems
from mbkron.multibody.muscles.points import MovingPoint, point_condition
from mbkron.multibody.muscles.surfaces import SURFACES
from mbkron.multibody.muscles.wrapping import PathWrap, surface_problems, wrap_method_problems

__all__ = ["MusclePath", "check_path", "ZERO_LENGTH"]

#: Segments shorter than this (m) have no direction: evaluation raises.
ZERO_LENGTH = 1e-12


@dataclass(frozen=True)
class MusclePath:
    """The description of one musculotendon unit.

    Attributes
    ----------
    name : str
    points : tuple
        Each ``(body, (x, y, z))`` (body coordinates, m; ``body`` may be ``"ground"``),
        ``(body, (x, y, z), condition)`` (a conditional point,
        :class:`~mbkron.multibody.muscles.conditions.PathPointCondition`) or a
        :class:`~mbkron.multibody.muscles.points.MovingPoint` (conditional if its ``active`` is set), from origin
        to insertion; the origin and the insertion are unconditional.
    hill : HillParameters or None
        Musculotendon parameters (:mod:`mbkron.multibody.muscles.hill`); None for a path without a force model.
    wraps : tuple of PathWrap
        The path's wraps in order (OpenSim's ``PathWrapSet``), each naming its surface and the range of
        points it may wrap (:mod:`mbkron.algorithms.paths.wrap_paths`).
    """

    name: str
    points: tuple
    hill: object = None
    wraps: tuple = ()


def check_path(path: MusclePath, bodies: set[str], coordinates: set[str], problems: list[str]) -> None:
    """Append to ``problems`` everything wrong with a muscle description."""
    where = f"muscle `{path.name}`"
    if not isinstance(path.name, str) or not path.name or not path.name.isprintable():
        # any printable name: OpenSim's (``ECU_pre-surgery``) are kept; no formula names a muscle
        problems.append(f"muscle name {path.name!r:.80} must be a non-empty string of printable characters")
    allowed = bodies | {GROUND}
    if len(path.points) < 2:
        problems.append(f"{where}: a path needs at least 2 points, got {len(path.points)}")
    for n, point in enumerate(path.points):
        label = f"{where}: point {n}"
        if isinstance(point, MovingPoint):
            body = point.body
            unknown = point.coordinate_names() - coordinates
            if unknown:
                problems.append(f"{label} (moving) depends on unknown coordinate(s) {', '.join(sorted(unknown))}")
        else:
            try:
                body, location = point[:2] if len(point) == 3 else point
                location = np.asarray(location, dtype=float)
            except (TypeError, ValueError):
                problems.append(f"{label} must be (body, (x, y, z)), (body, (x, y, z), PathPointCondition) "
                                f"or a MovingPoint, got {point!r}")
                continue
            if location.shape != (3,) or not np.all(np.isfinite(location)):
                problems.append(f"{label}: the location must be 3 finite numbers, got {point[1]!r}")
        if body not in allowed:
            problems.append(f"{label} names unknown body {body!r}; expected one of: {', '.join(sorted(allowed))}")
        condition = point_condition(point)
        if condition is not None:
            if n in (0, len(path.points) - 1):
                problems.append(f"{label} is the {'origin' if n == 0 else 'insertion'} and must be unconditional "
                                "(a path always has its two ends); make it a fixed or moving point without a condition")
            problems.extend(condition_problems(condition, coordinates, label))
    _check_wraps(path, allowed, problems)
    hill = path.hill
    if hill is not None and not hasattr(hill, "max_isometric_force"):
        problems.append(f"{where}: `hill` must be HillParameters or None, got {type(hill).__name__}")


def _check_wraps(path: MusclePath, bodies: set[str], problems: list[str]) -> None:
    """Append the problems of a path's wraps: surfaces, bodies, ranges, methods, repeats."""
    where = f"muscle `{path.name}`"
    if not isinstance(path.wraps, tuple):
        problems.append(f"{where}: `wraps` must be a tuple of PathWrap, got {type(path.wraps).__name__}")
        return
    seen = set()
    for n, wrap in enumerate(path.wraps):
        label = f"{where}: wrap {n}"
        if not isinstance(wrap, PathWrap) or type(wrap.surface).__name__ not in SURFACES:
            surface = getattr(wrap, "surface", wrap)
            problems.append(f"{label} must be a PathWrap of a wrap object ({', '.join(SURFACES)}), got "
                            f"{type(wrap).__name__} of {type(surface).__name__}")
            continue
        surface = wrap.surface
        problems.extend(f"{label}: {p}" for p in surface_problems(surface))
        if isinstance(surface.body, str) and surface.body not in bodies:
            problems.append(f"{label}: wrap object `{surface.name}` is on unknown body {surface.body!r}; expected one "
                            f"of: {', '.join(sorted(bodies))}")
        if surface.name in seen:
            problems.append(f"{label}: wrap object `{surface.name}` is listed twice")
        seen.add(surface.name)
        problems.extend(wrap_method_problems(wrap.method, label))
        bounds = wrap.range
        count = len(path.points)
        if (not isinstance(bounds, tuple) or len(bounds) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
            problems.append(f"{label}: `range` must be 2 integers (1-based first and last points, < 1 for the ends), "
                            f"got {bounds!r}")
            continue
        first = 1 if bounds[0] < 1 else bounds[0]
        last = count if bounds[1] < 1 else bounds[1]
        if not 1 <= first < last <= count:
            problems.append(f"{label}: `range` {list(bounds)} must name points 1 ≤ first < last ≤ {count} of the path "
                            "(< 1 for the ends)")
