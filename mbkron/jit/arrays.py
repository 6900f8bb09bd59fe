"""How arrays are handed to the compiled kernels: C-contiguous, float, writeable, with the batch in one leading axis.

numba compiles a kernel once per combination of argument types, and an array's type includes its layout and whether it
is read-only. Per-state arrays are passed through :func:`writable` (or :func:`batch_rows`, which also folds the batch
axes into one), and a model's constant arrays are packed read-only (:mod:`mbkron.multibody.layout`), so that each
kernel compiles once. numpy alone: importing this module imports no numba.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["batch_rows", "frozen", "writable"]


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


def frozen(values: NDArray) -> NDArray:
    """``values`` itself, made read-only: a constant a model packs for its kernels (one specialisation for every
    model's such arrays; :func:`mbkron.jit.calls.read_only` types an array read-only inside a kernel)."""
    values.setflags(write=False)
    return values
