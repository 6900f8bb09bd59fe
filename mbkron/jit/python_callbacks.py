"""Constraint callbacks that call Python: a constraint system evaluated by Python functions, in the compiled step.

Two C callbacks of :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`, compiled once (library code, like the
loop closures' :mod:`mbkron.algorithms.jointvars.closure_callbacks`), which pass ``x`` and ``out`` on to a Python function through
its :data:`~mbkron.jit.calls.PYTHON_CALLBACK` (:func:`~mbkron.jit.calls.call_python`): ``data`` holds the
two Python callbacks' addresses (``first``'s, ``second``'s), the callback gets the address of ``out`` as its float
argument (a user-space address is below 2⁵³, so a double holds it exactly) and that of ``x`` as its integer, and
writes the values at ``x`` into ``out`` (:class:`mbkron.algorithms.jointvars.constraint_callbacks.PythonConstraints`). So a constraint system
with no compiled form, or one whose generated functions are not worth compiling (thousands of throw-away groups),
runs in the same compiled continuation as every other. The callback takes the GIL itself.

A module of its own because a ``numba.cfunc`` is compiled (or loaded from numba's disk cache) when it is defined:
imported when such a group first needs it.
"""

from __future__ import annotations


from mbkron.jit.callbacks import constraint_cfunc
from mbkron.jit.calls import call_python
from mbkron.jit.common import jitable

__all__ = ["first", "second"]


@jitable
def _call(x, out, address):  # pragma: no cover - compiled
    """The Python callback at ``address`` with the addresses of ``out`` (as a double) and ``x``."""
    return call_python(int(address), float(out.ctypes.data), int(x.ctypes.data))


@constraint_cfunc
def first(x, out, data):  # pragma: no cover - compiled
    """``(g, ∂g/∂u, ∂g/∂p)`` at ``x = (u, p)`` by the Python callback at ``data[0]``."""
    return _call(x, out, data[0])


@constraint_cfunc
def second(x, out, data):  # pragma: no cover - compiled
    """``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p, ∂²g/∂p²)`` at ``x = (u, p)`` by the Python callback at ``data[1]``."""
    return _call(x, out, data[1])
