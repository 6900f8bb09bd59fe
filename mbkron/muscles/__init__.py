"""Musculotendon units: paths and moment arms (Eq. 149-195), moving via points, the Hill model.

- :mod:`mbkron.muscles.paths` — path descriptions, lengths and the moment-arm matrix (fast path);
- :mod:`mbkron.muscles.points` — moving via points (and the seed's zero-inertia-body form);
- :mod:`mbkron.muscles.conditions` — conditional path points (active while a coordinate is in a range);
- :mod:`mbkron.muscles.hill` — the Hill-type musculotendon model (Thelen 2003 curves).
"""

from mbkron.muscles.conditions import PathPointCondition
from mbkron.muscles.paths import MusclePath, MuscleSet
from mbkron.muscles.points import MovingPoint, add_moving_point_bodies

__all__ = ["MovingPoint", "MusclePath", "MuscleSet", "PathPointCondition", "add_moving_point_bodies"]
