"""The registry of wrapping surfaces: OpenSim's element name → surface class.

The class name is OpenSim's element name (``WrapCylinder``) and, lower case without ``Wrap``, the
``kind`` of a ``[wraps.NAME]`` table in a model file (``"cylinder"``). A surface class is a frozen
dataclass with the properties :data:`~mbkron.multibody.muscles.wrapping.COMMON_FIELDS` and its shape parameters
(numbers or 3-vectors, m), a method ``solve(p, q)`` (the contract of :mod:`mbkron.multibody.muscles.wrapping`)
and ``shape_problems(where)`` (the problems of its shape parameters). Adding a surface is one entry
in :data:`SURFACES`.
"""

from __future__ import annotations

from mbkron.multibody.muscles.wrap_ellipsoid import WrapEllipsoid
from mbkron.multibody.muscles.wrap_torus import WrapTorus
from mbkron.multibody.muscles.wrapping import WrapCylinder, WrapSphere

__all__ = ["SURFACES", "KINDS", "kind_of"]

#: OpenSim element name → surface class.
SURFACES = {cls.__name__: cls for cls in (WrapSphere, WrapCylinder, WrapEllipsoid, WrapTorus)}
#: Model-file ``kind`` → surface class.
KINDS = {name.removeprefix("Wrap").lower(): cls for name, cls in SURFACES.items()}


def kind_of(surface: object) -> str | None:
    """The model-file ``kind`` of a surface (None for an unregistered class)."""
    return next((kind for kind, cls in KINDS.items() if type(surface) is cls), None)
