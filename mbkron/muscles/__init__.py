"""Musculotendon units: paths and moment arms (Eq. 149-195), moving via points, the Hill model.

- :mod:`mbkron.muscles.paths` — path descriptions, lengths and the moment-arm matrix (fast path);
- :mod:`mbkron.muscles.points` — moving via points (and the seed's zero-inertia-body form);
- :mod:`mbkron.muscles.conditions` — conditional path points (active while a coordinate is in a range);
- :mod:`mbkron.muscles.hill` — the Hill-type musculotendon model (Thelen 2003 curves).

The public names are imported on first use (PEP 562), so that importing a submodule such as
:mod:`mbkron.muscles.ligaments` (the model-file schema does) does not import the path code and its
kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mbkron.core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from mbkron.muscles.conditions import PathPointCondition
    from mbkron.muscles.path_records import MusclePath
    from mbkron.muscles.points import MovingPoint, add_moving_point_bodies

__all__ = ["MovingPoint", "MusclePath", "PathPointCondition", "add_moving_point_bodies"]

#: The module of each public name (imported when the name is first read).
_LAZY: dict[str, str] = {
    "MovingPoint": "mbkron.muscles.points",
    "MusclePath": "mbkron.muscles.path_records",
    "PathPointCondition": "mbkron.muscles.conditions",
    "add_moving_point_bodies": "mbkron.muscles.points",
}


__getattr__, __dir__ = lazy_exports("mbkron.muscles", _LAZY)
