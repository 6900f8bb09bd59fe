"""The foundation: errors, argument checks, modules imported on first use (the Kronecker calculus is in
:mod:`mbkron.reference.kron`).

- :mod:`mbkron.core.errors` -- ``ModelError`` and ``ConfigurationError``;
- :mod:`mbkron.core.arguments` -- checks of array arguments and results;
- :mod:`mbkron.core.lazy` -- ``LazyModule``;
- :mod:`mbkron.core.description` -- ``GROUND``, ``Coordinate`` and ``Body`` records (a model's description: imported
  from there, not from :mod:`mbkron.core`).
"""

from mbkron.core.errors import ConfigurationError, ModelError

__all__ = ["ConfigurationError", "ModelError"]
