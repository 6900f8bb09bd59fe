"""mbkron: empirically-based multibody and musculoskeletal dynamics.

Kronecker-product calculus of matrix-valued functions (Ehsani, Definition 1 and Theorems 1-4)
that embeds joint constraints and empirical joint rhythms directly into ODEs.

The package is layered; each subpackage imports only from the ones below it
(docs/architecture.md): ``core`` and ``expressions`` → ``compiled`` → ``kinematics`` →
``jointvars`` → ``dynamics`` → ``muscles`` → ``backends`` → ``model`` → ``integrate``, ``io``,
``examples`` → ``cli``.
"""

from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.dynamics import loads
from mbkron.integrate.simulate import SimulationInterrupted, SimulationResult, simulate
from mbkron.io import dump_model, load_model
from mbkron.jointvars.explicit import Linear
from mbkron.model.builder import ModelBuilder
from mbkron.model.checks import rigid_transform
from mbkron.model.model import Model
from mbkron import examples

__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "Linear",
    "Model",
    "ModelBuilder",
    "ModelError",
    "SimulationInterrupted",
    "SimulationResult",
    "dump_model",
    "examples",
    "load_model",
    "loads",
    "rigid_transform",
    "simulate",
    "__version__",
]
