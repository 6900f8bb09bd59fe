"""The foundation: errors, argument checks, modules imported on first use (the Kronecker calculus is in
:mod:`mbkron.reference.kron`).

- :mod:`mbkron.core.errors` -- ``ModelError`` and ``ConfigurationError``;
- :mod:`mbkron.core.arguments` -- checks of array arguments and results;
- :mod:`mbkron.core.lazy` -- ``LazyModule``;
- :mod:`mbkron.core.moved` -- the module paths of mbkron 0.1.0 that moved when the tree was ordered by roles
  (deprecated, with a warning).

The description records (``GROUND``, ``Coordinate``, ``Body``) are :mod:`mbkron.multibody.records`'.
"""

from mbkron.core.errors import ConfigurationError, ModelError

__all__ = ["ConfigurationError", "ModelError"]
