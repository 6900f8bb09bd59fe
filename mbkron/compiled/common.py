"""Support for the compiled kernels: whether numba is installed, the compiling decorator, array layouts.

numba is optional (the ``fast`` extra). :data:`AVAILABLE` says whether it is installed; it does not
select anything: a model's backend decides which route evaluates it (``mbkron.backends``). Without
numba, :func:`jit` returns the function unchanged, so the kernels' modules still import and the
plain Python functions remain callable (slowly) for reading and testing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

try:  # numba is optional: the ``fast`` extra
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

__all__ = ["AVAILABLE", "jit", "python_function", "writable", "batch_rows"]

AVAILABLE: bool = numba is not None
"""Whether numba is installed (the ``compiled`` backend can be used)."""


def jit(function):
    """``function`` compiled with numba (on its first call, cached on disk), or unchanged without numba."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(cache=True, nogil=True)(function)


def python_function(function):
    """The plain Python function behind a :func:`jit` kernel (the kernel itself without numba)."""
    return getattr(function, "py_func", function)


def writable(values: NDArray) -> NDArray[np.float64]:
    """``values`` as a C-contiguous, writeable float array. numba compiles a kernel separately for
    read-only arrays; passing per-state arrays always writeable (and the model's constant arrays
    always read-only) keeps each kernel to one compilation."""
    values = np.ascontiguousarray(values, dtype=float)
    return values if values.flags.writeable else values.copy()


def batch_rows(values: NDArray, batch: tuple[int, ...], trailing: int) -> NDArray[np.float64]:
    """``values`` of shape ``batch + rest`` as a C-contiguous (states or 1, *rest) float array; a
    batch-broadcast array (all batch strides 0, e.g. constant gradients) becomes one row."""
    nbatch = values.ndim - trailing
    if nbatch == 0:
        return writable(values)[None]
    if all(stride == 0 for stride in values.strides[:nbatch]):
        return writable(values[(0,) * nbatch])[None]
    return writable(values).reshape((-1,) + values.shape[nbatch:])
