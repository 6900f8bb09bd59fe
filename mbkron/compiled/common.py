"""Support for the compiled kernels: whether numba is installed, the compiling decorator, array layouts.

numba is optional (the ``fast`` extra). :data:`AVAILABLE` says whether it is installed; it does not
select anything: a model's backend decides which route evaluates it (``mbkron.backends``). Without
numba, :func:`jit` returns the function unchanged, so the kernels' modules still import and the
plain Python functions remain callable (slowly) for reading and testing.

The kernels are compiled on their first call and cached on disk (numba's ``cache=True``: in
``__pycache__`` next to the modules, or under ``NUMBA_CACHE_DIR``). The first compilation in a
process is announced by one INFO record of the ``mbkron`` logger (:data:`COMPILING`; the command line
prints it on stderr); a kernel loaded from the disk cache is not compiled and announces nothing.
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import NDArray

try:  # numba is optional: the ``fast`` extra
    import numba
    from numba.core import event as numba_event
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

__all__ = ["AVAILABLE", "COMPILING", "inline_jit", "jit", "python_function", "writable", "batch_rows"]

AVAILABLE: bool = numba is not None
"""Whether numba is installed (the ``compiled`` backend can be used)."""

COMPILING = "compiling numerical kernels for this machine (first run only; cached afterwards)…"
"""The message of the INFO record announcing the first compilation of mbkron's kernels in a process."""

if AVAILABLE:
    class _FirstCompilation(numba_event.Listener):
        """Logs :data:`COMPILING` when numba starts compiling one of mbkron's kernels, once per process.

        numba broadcasts ``"numba:compile"`` only for a real compilation: a kernel found in the disk
        cache is loaded before that event (``Dispatcher.compile``), so a warm run logs nothing.
        """

        announced = False

        def on_start(self, event) -> None:
            if self.announced:
                return
            module = getattr(getattr(event.data["dispatcher"], "py_func", None), "__module__", "") or ""
            if module.startswith("mbkron."):
                self.announced = True
                logging.getLogger("mbkron").info(COMPILING)

        def on_end(self, event) -> None:
            pass

    numba_event.register("numba:compile", _FirstCompilation())


def jit(function):
    """``function`` compiled with numba (on its first call, cached on disk), or unchanged without numba."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(cache=True, nogil=True)(function)


def inline_jit(function):
    """``function`` compiled into each caller (numba's ``inline="always"``), or unchanged without numba.

    For kernels that take compiled functions as arguments (a right-hand side, generated constraint
    functions): inlined into a generated module's function that passes that module's globals, the calls
    are direct and the caller can be cached on disk (numba cannot cache code that holds the address of
    a dispatcher object)."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(nogil=True, inline="always")(function)


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
