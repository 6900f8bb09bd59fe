"""mbkron: empirically-based multibody and musculoskeletal dynamics.

Kronecker-product calculus of matrix-valued functions (Ehsani, Definition 1 and Theorems 1-4)
that embeds joint constraints and empirical joint rhythms directly into ODEs.
"""

from mbkron.builder import ModelBuilder, rigid_transform
from mbkron.errors import ConfigurationError, ModelError
from mbkron.io import load_model
from mbkron.jointvars import Linear
from mbkron.model import Model
from mbkron.simulation import SimulationResult, simulate
from mbkron import loads, models  # noqa: E402  (subpackages users reach as mbkron.loads, mbkron.models)

__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "Linear",
    "Model",
    "ModelBuilder",
    "ModelError",
    "SimulationResult",
    "load_model",
    "loads",
    "models",
    "rigid_transform",
    "simulate",
    "__version__",
]
