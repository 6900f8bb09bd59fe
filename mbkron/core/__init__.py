"""The foundation: errors and the description records (the Kronecker calculus is in :mod:`mbkron.reference.kron`).

- :mod:`mbkron.core.errors` -- ``ModelError`` and ``ConfigurationError``;
- :mod:`mbkron.core.description` -- ``GROUND``, ``Coordinate`` and ``Body`` records.
"""

from mbkron.core.description import GROUND, Body, Coordinate
from mbkron.core.errors import ConfigurationError, ModelError

__all__ = ["GROUND", "Body", "Coordinate", "ConfigurationError", "ModelError"]
