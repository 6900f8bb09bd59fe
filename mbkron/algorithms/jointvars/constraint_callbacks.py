"""Where the compiled constraint step (:mod:`mbkron.algorithms.jointvars.kernels`) gets a group's constraint functions.

Three kinds of C callbacks of :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`, chosen by
:func:`constraint_callbacks`: the library's loop closures (:mod:`mbkron.algorithms.jointvars.closure_callbacks`), the functions
generated for a group given by expressions (:mod:`mbkron.algorithms.jointvars.generated`), and, for any other system (or where
compiling generated functions is not wanted, :data:`GENERATED_CALLBACKS`), the library's callbacks that call the
system's Python functions back (:mod:`mbkron.jit.python_callbacks`, :class:`PythonConstraints`). So every
constraint system is solved by the one compiled continuation.
"""

from __future__ import annotations

import ctypes

import numpy as np

from mbkron.algorithms.jointvars import generated

__all__ = ["GENERATED_CALLBACKS", "NO_DATA", "PythonConstraints", "constraint_callbacks"]

NO_DATA = np.zeros(0)
NO_DATA.setflags(write=False)
"""The ``data`` argument of callbacks that read none (generated ones, a placeholder step's): read-only, as every
group's description."""


GENERATED_CALLBACKS = True
"""Whether a group given by expressions compiles its generated callbacks (:func:`constraint_callbacks`); False: its
Python functions are called back instead (no compilation per group: for tests that build thousands of throw-away
groups, whose compilation would cost seconds each)."""


class PythonConstraints:
    """A constraint system's Python functions as the callbacks of :mod:`mbkron.jit.python_callbacks`.

    Parameters
    ----------
    system : BoundConstraints
    n : int
        The number of its inputs ``p``.

    Attributes
    ----------
    first, second : module-level C callbacks
        :mod:`mbkron.jit.python_callbacks`' (library code, compiled once).
    data : ndarray
        The addresses of this system's two Python callbacks (read-only): the callbacks' ``data``.
    """

    def __init__(self, system, n: int):
        from mbkron.jit import python_callbacks
        from mbkron.jit.calls import PYTHON_CALLBACK

        self.system, self.m, self.n = system, system.size, n
        self.first, self.second = python_callbacks.first, python_callbacks.second
        m = self.m
        self._sizes = (m + m * m + m * n, m * m + m * n + m * m * m + m * m * n + m * n * n)
        self._callbacks = (PYTHON_CALLBACK(lambda out, x: self._write(1, out, x)),
                           PYTHON_CALLBACK(lambda out, x: self._write(2, out, x)))
        self.data = np.array([ctypes.cast(callback, ctypes.c_void_p).value for callback in self._callbacks],
                             dtype=float)
        self.data.setflags(write=False)

    def _write(self, order: int, out_address: float, x_address: int) -> int:
        """``system.first`` (``order`` 1) or ``system.second`` (2) at ``x`` into ``out`` (NaN where it raises: the
        kernel then says the constraints are not finite there); never raises (a ctypes callback must not)."""
        try:
            m, n = self.m, self.n
            x = np.ctypeslib.as_array((ctypes.c_double * (m + n)).from_address(x_address)).copy()
            out = np.ctypeslib.as_array((ctypes.c_double * self._sizes[order - 1]).from_address(int(out_address)))
        except BaseException:  # noqa: BLE001 - nothing to write into
            return 0
        try:
            with np.errstate(all="ignore"):
                values = (self.system.first if order == 1 else self.system.second)(x[:m], x[m:])
                out[:] = np.concatenate([np.ravel(value) for value in values])
        except BaseException:  # noqa: BLE001 - the constraints cannot be evaluated at x: not finite
            out[:] = np.nan
        return 0


def constraint_callbacks(system, n: int):
    """``(callbacks, data)``: the C callbacks (``first``, ``second`` attributes) of ``system`` with ``n`` inputs and
    their ``data`` — the library's loop closures (:mod:`mbkron.algorithms.jointvars.closure_callbacks`, ``data`` the group's
    :meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.kernel_data`), the functions generated from its
    :meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.expressions` (:mod:`mbkron.algorithms.jointvars.generated`), or
    else (a system of neither kind, or :data:`GENERATED_CALLBACKS` False) its Python functions called back
    (:class:`PythonConstraints`)."""
    data = system.kernel_data()
    if data is not None:
        from mbkron.algorithms.jointvars import closure_callbacks  # compiles (or loads) the callbacks on first use

        return closure_callbacks, data
    expressions = system.expressions() if GENERATED_CALLBACKS else None
    if expressions is not None:
        return generated.kernel_module(expressions), NO_DATA
    callbacks = PythonConstraints(system, n)
    return callbacks, callbacks.data
