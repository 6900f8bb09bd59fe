"""The loop-closure callbacks (:mod:`mbkron.compiled.closures`) as C callbacks of
:data:`mbkron.compiled.callbacks.CONSTRAINT_SIGNATURE`, whose addresses the constraint step's kernels take.

A module of its own because a ``numba.cfunc`` is compiled (or loaded from numba's disk cache) when it is
defined: :class:`mbkron.jointvars.compiled.FastStep` imports this module when a closure group first needs it,
so importing mbkron compiles nothing.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import config

from mbkron.compiled.callbacks import CONSTRAINT_SIGNATURE
from mbkron.compiled.calls import by_address
from mbkron.compiled.closures import evaluate

__all__ = ["first", "second"]

_evaluate_at = by_address(evaluate, returns="none")
""":func:`~mbkron.compiled.closures.evaluate` called through its address (:mod:`mbkron.compiled.calls`): compiled
once, on the first call, not again inside each callback (nor to define them: its return type is declared)."""


def _callback(function):
    """``function`` as a C callback of :data:`CONSTRAINT_SIGNATURE`; unchanged where numba does not compile
    (``NUMBA_DISABLE_JIT=1``: the kernels run as Python and call it, :func:`~mbkron.compiled.callbacks.callback_address`)."""
    if config.DISABLE_JIT:
        return function
    return numba.cfunc(CONSTRAINT_SIGNATURE, cache=True, error_model="numpy")(function)


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
