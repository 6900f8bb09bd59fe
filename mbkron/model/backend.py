"""The check of the ``backend`` keyword: there is one engine.

mbkron has one implementation per equation (issue 26): the numba kernels of :mod:`mbkron.jit`, each called
by the module of its algorithm (until 2026-12-03 through ``mbkron.backends.engine``). The former ``numpy`` route
(the vectorised twist form) was removed; the dissertation as written, :mod:`mbkron.reference`, is the independent
evaluation that the tests hold the engine to (it is an oracle, not a backend). The keyword arguments that chose a
backend (``load_model(path, backend=...)``, ``ModelBuilder.build(backend=...)``, ``model.with_backend(...)``,
``--backend`` on the command line) are kept for compatibility: they accept ``"compiled"`` or None only.
"""

from __future__ import annotations

__all__ = ["BACKEND", "check_backend"]

BACKEND = "compiled"
"""The name of the one engine (``model.backend``)."""

_REMOVED = {
    "numpy": 'the numpy route was removed in favour of the one compiled engine (issue 26); for an independent '
             'evaluation use mbkron.reference (mbkron.reference.mass_matrix(model, q), moment_arms(model, q), …)',
    "kronecker": 'it is no longer a backend: the dissertation as written is the module mbkron.reference '
                 '(mbkron.reference.mass_matrix(model, q), …), an oracle for tests',
}


def check_backend(name: str | None) -> str:
    """``"compiled"`` for ``name`` ``"compiled"`` or None (the only engine).

    Raises
    ------
    ValueError
        Any other name; ``"numpy"`` and ``"kronecker"`` say where their evaluation went.
    """
    if name is None or name == BACKEND:
        return BACKEND
    if isinstance(name, str) and name in _REMOVED:
        raise ValueError(f'`backend` {name!r} is not available: {_REMOVED[name]}')
    raise ValueError(f"`backend` must be {BACKEND!r} (the one engine) or None, got {name!r}")
