"""The loop-closure callbacks (:mod:`mbkron.algorithms.jointvars.closure_kernels`) as C callbacks of
:data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`, whose addresses the constraint step's kernels take.

A module of its own because a ``numba.cfunc`` is compiled (or loaded from numba's disk cache) when it is
defined: :class:`mbkron.algorithms.jointvars.kernels.FastStep` imports this module when a closure group first needs it,
so importing mbkron compiles nothing.
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.callbacks import constraint_cfunc
from mbkron.jit.calls import by_address
from mbkron.algorithms.jointvars.closure_kernels import evaluate

__all__ = ["first", "second"]


def _callback(function):
    """:func:`~mbkron.jit.callbacks.constraint_cfunc` with numpy's error model (a division by zero gives inf)."""
    return constraint_cfunc(function, error_model="numpy")


_evaluate_at = by_address(evaluate, returns="none")
""":func:`~mbkron.algorithms.jointvars.closure_kernels.evaluate` called through its address (:mod:`mbkron.jit.calls`): compiled
once, on the first call, not again inside each callback (nor to define them: its return type is declared)."""


@_callback
def first(x, out, data):  # pragma: no cover - compiled
    """``(g, ∂g/∂u, ∂g/∂p)`` at ``x = (u, p)`` of the closures packed in ``data``."""
    _evaluate_at((x, out, data, np.int64(1)))  # not the literal 1: one compilation of ``evaluate`` for both
    return 0


@_callback
def second(x, out, data):  # pragma: no cover - compiled
    """``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p, ∂²g/∂p²)`` at ``x = (u, p)`` of the closures packed in
    ``data``."""
    _evaluate_at((x, out, data, np.int64(2)))
    return 0
