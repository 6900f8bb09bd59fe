"""Backends: how a model is evaluated, chosen per model (``load_model(path, backend=...)``,
``ModelBuilder.build(backend=...)``, ``model.with_backend(...)``).

- ``"numpy"`` — the vectorised twist form, batched over any leading axes of q.
- ``"compiled"`` — the same equations in numba kernels (the optional ``fast`` extra); the default
  when numba is installed.

Both give the same results to rounding, and equal the dissertation as written
(:mod:`mbkron.reference`, tests/test_reference.py). A backend is a choice
made when the model is built, never a process-wide switch.
"""

from __future__ import annotations

from mbkron.backends.base import Backend, InertialTerms
from mbkron.backends.compiled import CompiledBackend
from mbkron.backends.vectorised import NumpyBackend
from mbkron.compiled.common import AVAILABLE as NUMBA_AVAILABLE

__all__ = ["BACKENDS", "Backend", "InertialTerms", "available_backends", "default_backend", "get_backend"]

BACKENDS = ("numpy", "compiled")
"""The backends' names."""

_INSTANCES = {"numpy": NumpyBackend(), "compiled": CompiledBackend()}


def available_backends() -> tuple[str, ...]:
    """The backends that can run here (``"compiled"`` needs numba)."""
    return BACKENDS if NUMBA_AVAILABLE else BACKENDS[:1]


def default_backend() -> str:
    """``"compiled"`` when numba is installed, else ``"numpy"``."""
    return "compiled" if NUMBA_AVAILABLE else "numpy"


def get_backend(name: str | None) -> Backend:
    """The backend called ``name`` (None: :func:`default_backend`).

    Raises
    ------
    ValueError
        An unknown name, or ``"compiled"`` without numba.
    """
    name = default_backend() if name is None else name
    if name == "kronecker":
        raise ValueError('`backend` "kronecker" is no longer a backend: the dissertation as written is the module '
                         'mbkron.reference (mbkron.reference.mass_matrix(model, q), …), an oracle for tests')
    if name not in _INSTANCES:
        raise ValueError(f"`backend` must be one of {', '.join(map(repr, BACKENDS))}, got {name!r}")
    if name == "compiled" and not NUMBA_AVAILABLE:
        raise ValueError('`backend` "compiled" needs numba: pip install "mbkron[fast]" (or use backend="numpy")')
    return _INSTANCES[name]
