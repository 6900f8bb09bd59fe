"""The foundation: Kronecker calculus (Definition 1, Theorems 1-4), errors and the description records.

- :mod:`mbkron.reference.kron` -- the Kronecker product calculus of matrix-valued functions (Eq. 1-37);
- :mod:`mbkron.core.errors` -- ``ModelError`` and ``ConfigurationError``;
- :mod:`mbkron.core.description` -- ``GROUND``, ``Coordinate`` and ``Body`` records.
"""

from mbkron.core.description import GROUND, Body, Coordinate
from mbkron.core.errors import ConfigurationError, ModelError

__all__ = ["GROUND", "Body", "Coordinate", "ConfigurationError", "ModelError"]
