"""mbkron: empirically-based multibody and musculoskeletal dynamics.

Kronecker-product calculus of matrix-valued functions (Ehsani, Definition 1 and Theorems 1-4)
that embeds joint constraints and empirical joint rhythms directly into ODEs.

The package is layered by role; each subpackage imports only from the ones below it
(docs/architecture.md): ``core`` → ``expressions``, ``jit`` → ``numerics`` → ``multibody`` (the
descriptions) → ``algorithms`` (evaluation at states: kinematics → jointvars → paths → dynamics,
muscles) → ``model`` → ``io``, ``integrate``, ``examples``, ``reference`` → ``analysis`` → ``batch``
→ ``cli``.

The public names below are imported on first use (PEP 562), so that ``import mbkron`` and the
command line's ``--help`` do not load numpy, scipy, sympy or numba.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from mbkron import examples
    from mbkron.jit.common import CompileNotice
    from mbkron.core.errors import ConfigurationError, ModelError, ModelWarning
    from mbkron.multibody import loads
    from mbkron.integrate.ensemble import EnsembleResult, simulate_ensemble
    from mbkron.integrate.simulate import SimulationInterrupted, SimulationResult, simulate
    from mbkron.io import dump_model, load_model
    from mbkron.multibody.jointvars import Linear
    from mbkron.model.builder import ModelBuilder
    from mbkron.model.checks import rigid_transform
    from mbkron.model.model import Model

__version__ = "0.1.0"

__all__ = [
    "CompileNotice",
    "ConfigurationError",
    "EnsembleResult",
    "Linear",
    "Model",
    "ModelBuilder",
    "ModelError",
    "ModelWarning",
    "SimulationInterrupted",
    "SimulationResult",
    "dump_model",
    "examples",
    "load_model",
    "loads",
    "rigid_transform",
    "simulate",
    "simulate_ensemble",
    "__version__",
]

#: Where each lazily imported public name lives: (module, attribute), or (module, None) for a module.
_LAZY: dict[str, tuple[str, str | None]] = {
    "CompileNotice": ("mbkron.jit.common", "CompileNotice"),
    "ConfigurationError": ("mbkron.core.errors", "ConfigurationError"),
    "EnsembleResult": ("mbkron.integrate.ensemble", "EnsembleResult"),
    "Linear": ("mbkron.multibody.jointvars", "Linear"),
    "Model": ("mbkron.model.model", "Model"),
    "ModelBuilder": ("mbkron.model.builder", "ModelBuilder"),
    "ModelError": ("mbkron.core.errors", "ModelError"),
    "ModelWarning": ("mbkron.core.errors", "ModelWarning"),
    "SimulationInterrupted": ("mbkron.integrate.simulate", "SimulationInterrupted"),
    "SimulationResult": ("mbkron.integrate.simulate", "SimulationResult"),
    "dump_model": ("mbkron.io", "dump_model"),
    "examples": ("mbkron.examples", None),
    "load_model": ("mbkron.io", "load_model"),
    "loads": ("mbkron.multibody.loads", None),
    "rigid_transform": ("mbkron.model.checks", "rigid_transform"),
    "simulate": ("mbkron.integrate.simulate", "simulate"),
    "simulate_ensemble": ("mbkron.integrate.ensemble", "simulate_ensemble"),
}


from mbkron.core import moved as _moved  # noqa: E402 - the paths of 0.1.0 that moved (issue 26), with a warning

_moved.install()


def __getattr__(name: str):
    """Import the public attribute ``name`` on first use and keep it (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mbkron' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the public ones not imported yet included."""
    return sorted(set(globals()) | set(__all__))
