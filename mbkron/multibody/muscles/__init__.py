"""Musculotendon units as described: paths, moving via points, conditional points, wrap surfaces, path springs,
ligaments, Hill parameters (their evaluation, Eq. 149-195, is :mod:`mbkron.algorithms.paths`').

- :mod:`mbkron.multibody.muscles.paths` — path descriptions (``MusclePath``) and their checks;
- :mod:`mbkron.multibody.muscles.points` — moving via points (and the seed's zero-inertia-body form);
- :mod:`mbkron.multibody.muscles.conditions` — conditional path points (active while a coordinate is in a range);
- :mod:`mbkron.multibody.muscles.hill` — the Hill model's parameters (its curves: :mod:`mbkron.algorithms.muscles.hill`).

The public names are imported on first use (PEP 562), so that importing a submodule such as
:mod:`mbkron.multibody.muscles.ligaments` (the model-file schema does) imports only what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mbkron.core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from mbkron.multibody.muscles.conditions import PathPointCondition
    from mbkron.multibody.muscles.paths import MusclePath
    from mbkron.multibody.muscles.points import MovingPoint, add_moving_point_bodies

__all__ = ["MovingPoint", "MusclePath", "PathPointCondition", "add_moving_point_bodies"]

#: The module of each public name (imported when the name is first read).
_LAZY: dict[str, str] = {
    "MovingPoint": "mbkron.multibody.muscles.points",
    "MusclePath": "mbkron.multibody.muscles.paths",
    "PathPointCondition": "mbkron.multibody.muscles.conditions",
    "add_moving_point_bodies": "mbkron.multibody.muscles.points",
}


__getattr__, __dir__ = lazy_exports("mbkron.multibody.muscles", _LAZY)
