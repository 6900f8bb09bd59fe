"""Module paths of mbkron 0.1.0 that moved when the tree was ordered by roles (issue 26): they keep working for a
while, with a :class:`DeprecationWarning` naming where their names live now.

The public names (``mbkron.Model``, ``mbkron.loads``, …) did not move; this is for code that imported from a
module, as ``from mbkron.dynamics.contact import SmoothSphereHalfSpace`` or ``from mbkron.jointvars.functions
import CubicSpline``. An old module that was split in two (a description and its evaluation) answers for the names
of both. :func:`install` appends a finder to the end of :data:`sys.meta_path`, so it is asked only for a module that
no file provides: it never hides a module that exists. It imports nothing until such a module is imported. Methods
that became free functions (``contact.contact(model, kin, qd)`` →
``mbkron.algorithms.dynamics.contact.contact_state(model, contact, kin, qd)``) have no shim; docs/architecture.md
("Layers", "Module paths of 0.1.0") names them. To be removed in mbkron 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

__all__ = ["MOVED", "install"]

MOVED: dict[str, tuple[str, ...]] = {
    # every module of mbkron 0.1.0 that moved, below ``mbkron.`` -> the modules (below ``mbkron.``) that hold its
    # names now, searched in order (an old module split into a description and its evaluation has two)
    "compiled": ("jit",),
    "compiled.articulated": ("algorithms.dynamics.articulated",),
    "compiled.callbacks": ("jit.callbacks",),
    "compiled.calls": ("jit.calls",),
    "compiled.closure_callbacks": ("algorithms.jointvars.closure_callbacks",),
    "compiled.closures": ("algorithms.jointvars.closure_kernels",),
    "compiled.common": ("jit.common",),
    "compiled.dynamics": ("algorithms.dynamics.kernels",),
    "compiled.forward": ("algorithms.dynamics.forward_kernels",),
    "compiled.handoff": ("jit.handoff",),
    "compiled.kinematics": ("algorithms.kinematics.kernels",),
    "compiled.layout": ("multibody.layout", "jit.arrays", "numerics.function_rows"),
    "compiled.linalg": ("numerics.linalg",),
    "compiled.paths": ("algorithms.paths.kernels",),
    "compiled.points": ("algorithms.kinematics.points_kernels",),
    "compiled.python_callbacks": ("jit.python_callbacks",),
    "compiled.runge_kutta": ("numerics.runge_kutta",),
    "compiled.runs": ("numerics.runs",),
    "compiled.tabulated": ("numerics.tabulated",),
    "compiled.trbdf2": ("numerics.trbdf2",),
    "compiled.wrap_circular": ("numerics.geodesics.circular",),
    "compiled.wrap_constants": ("numerics.geodesics.constants",),
    "compiled.wrap_ellipsoid": ("numerics.geodesics.ellipsoid",),
    "compiled.wrap_segments": ("numerics.geodesics.segments",),
    "compiled.wrap_torus": ("numerics.geodesics.torus",),
    "compiled.wrapping": ("algorithms.paths.wrapping_kernels",),
    "core.description": ("multibody.records",),
    "core.tableaus": ("numerics.tableaus",),
    "dynamics": ("algorithms.dynamics",),
    "dynamics.bushings": ("multibody.bushings", "algorithms.dynamics.bushings"),
    "dynamics.contact": ("multibody.contact", "algorithms.dynamics.contact"),
    "dynamics.hunt_crossley": ("multibody.hunt_crossley", "algorithms.dynamics.hunt_crossley"),
    "dynamics.loads": ("multibody.loads", "algorithms.dynamics.loads"),
    "dynamics.points": ("algorithms.dynamics.points",),
    "dynamics.reactions": ("algorithms.dynamics.reactions",),
    "dynamics.terms": ("algorithms.dynamics.terms",),
    "jointvars": ("algorithms.jointvars",),
    "jointvars.compiled": ("algorithms.jointvars.kernels", "algorithms.dynamics.group"),
    "jointvars.constrained": ("algorithms.jointvars.constrained",),
    "jointvars.constraint_callbacks": ("algorithms.jointvars.constraint_callbacks",),
    "jointvars.constraints": ("algorithms.jointvars.constraints",),
    "jointvars.derivatives": ("algorithms.jointvars.derivatives",),
    "jointvars.explicit": ("algorithms.jointvars.explicit", "multibody.jointvars", "core.arguments"),
    "jointvars.finite_difference": ("algorithms.jointvars.finite_difference",),
    "jointvars.functions": ("numerics.functions", "multibody.jointvars", "algorithms.jointvars.functions"),
    "jointvars.gcvspl": ("numerics.gcvspl",),
    "jointvars.generated": ("algorithms.jointvars.generated",),
    "jointvars.loop_closures": ("algorithms.jointvars.loop_closures",),
    "jointvars.periods": ("algorithms.jointvars.periods",),
    "jointvars.premodel": ("algorithms.jointvars.premodel",),
    "jointvars.solution": ("algorithms.jointvars.solution",),
    "jointvars.solvers": ("algorithms.jointvars.solvers",),
    "kinematics": ("algorithms.kinematics",),
    "kinematics.tree": ("algorithms.kinematics.tree", "multibody.tree"),
    "model.forward": ("algorithms.dynamics.forward",),
    "muscles": ("multibody.muscles", "algorithms.paths.paths"),
    "muscles.conditions": ("multibody.muscles.conditions", "algorithms.paths.conditions"),
    "muscles.hill": ("algorithms.muscles.hill", "multibody.muscles.hill"),
    "muscles.ligaments": ("multibody.muscles.ligaments",),
    "muscles.paths": ("multibody.muscles.paths", "algorithms.paths.paths"),
    "muscles.points": ("multibody.muscles.points", "algorithms.paths.points"),
    "muscles.springs": ("multibody.muscles.springs", "algorithms.paths.forces"),
    "muscles.surfaces": ("multibody.muscles.surfaces",),
    "muscles.wrap_ellipsoid": ("multibody.muscles.wrap_ellipsoid",),
    "muscles.wrap_paths": ("algorithms.paths.wrap_paths",),
    "muscles.wrap_torus": ("multibody.muscles.wrap_torus",),
    "muscles.wrapping": ("multibody.muscles.wrapping",),
}
"""Every module path of mbkron 0.1.0 that no longer exists (every module of the dissolved packages ``compiled``,
``kinematics``, ``jointvars``, ``dynamics``, ``muscles``, and ``core.description``, ``core.tableaus``,
``model.forward``), and where its names live now."""

_PACKAGES = {"compiled", "kinematics", "jointvars", "dynamics", "muscles"}


class _Moved(types.ModuleType):
    """An old module path: its attributes are read from the modules that hold them now."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        old = self.__name__.removeprefix("mbkron.")
        if f"{old}.{name}" in MOVED:  # an old submodule (``from mbkron.jointvars import functions``): its own shim,
            return importlib.import_module(f"{self.__name__}.{name}")  # not a new package's module of that name
        for target in MOVED[old]:
            module = importlib.import_module(f"mbkron.{target}")
            if hasattr(module, name):
                value = getattr(module, name)
                setattr(self, name, value)
                return value
        raise AttributeError(f"module {self.__name__!r} (moved to {_where(self.__name__)}) has no attribute {name!r}")


def _where(fullname: str) -> str:
    return " and ".join(f"`mbkron.{target}`" for target in MOVED[fullname.removeprefix("mbkron.")])


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("mbkron.") or fullname.removeprefix("mbkron.") not in MOVED:
            return None
        old = fullname.removeprefix("mbkron.")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=old in _PACKAGES)

    def create_module(self, spec):
        module = _Moved(spec.name, f"moved to {_where(spec.name)} (a deprecated path)")
        if spec.submodule_search_locations is not None:
            module.__path__ = []  # a package: its old submodules are found by this finder too
        return module

    def exec_module(self, module):
        warnings.warn(f"`{module.__name__}` moved to {_where(module.__name__)}; the old path is deprecated and will "
                      "be removed in mbkron 0.3", DeprecationWarning, stacklevel=2)


def install() -> None:
    """Append the finder of the old paths to :data:`sys.meta_path` (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
