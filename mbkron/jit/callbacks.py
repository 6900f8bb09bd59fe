"""Model-specific compiled functions called by library kernels that are compiled once per machine.

The residuals of an expression constraint group and their derivatives are the only code generated
per model (:mod:`mbkron.algorithms.jointvars.kernels` prints them from sympy trees). They are compiled as C
callbacks (``numba.cfunc``) of one fixed signature, :data:`CONSTRAINT_SIGNATURE`:
``function(x, out, data)`` writes the values at ``x`` into the zero-filled ``out`` and returns 0. Loop
closures need no generated code: the library's own callbacks (:mod:`mbkron.algorithms.jointvars.closure_kernels`) evaluate them
from the group's description in ``data``. A library kernel (compiled and cached once, for every model) receives such a function as its address, a plain integer
(``cfunc.address``), and turns it into a callable first-class function with
:func:`constraint_function`. The kernel's argument types are then the same for every model, so numba
compiles it once and loads it from its disk cache afterwards.

Why an address rather than the ``cfunc`` object: numba types and unboxes a ``cfunc`` argument in
Python on every call of a kernel (tens of microseconds, more than a whole forward-dynamics evaluation
of a small model), an integer in its C dispatcher. The address is valid as long as the ``cfunc`` lives:
whoever passes it keeps the ``cfunc`` (its generated module) referenced. An address that does not come
from a ``cfunc`` of :data:`CONSTRAINT_SIGNATURE` crashes the process, so only
:mod:`mbkron.algorithms.jointvars.kernels` passes them, taken from the modules it generated itself.
"""

from __future__ import annotations

from mbkron.jit.common import AVAILABLE

__all__ = ["CONSTRAINT_SIGNATURE", "CONSTRAINT_FUNCTION", "callback_address", "constraint_cfunc", "constraint_function"]

if AVAILABLE:
    import warnings

    from numba import types
    from numba.core import cgutils, config
    from numba.core.errors import NumbaExperimentalFeatureWarning
    from numba.extending import intrinsic

    CONSTRAINT_SIGNATURE = types.int64(types.float64[::1], types.float64[::1],
                                       types.Array(types.float64, 1, "C", readonly=True))
    """``function(x, out, data) -> 0``: the constraint functions' signature (C-contiguous float arrays; ``data``,
    read-only, describes the group to a library callback, :mod:`mbkron.algorithms.jointvars.closure_kernels`, and is unread by
    generated ones)."""

    CONSTRAINT_FUNCTION = types.FunctionType(CONSTRAINT_SIGNATURE)
    """numba's first-class function type of :data:`CONSTRAINT_SIGNATURE`."""

    # numba calls first-class function types experimental (and warns when a kernel using them compiles);
    # they have been stable since numba 0.49 and are what keeps the kernels model-independent
    warnings.filterwarnings("ignore", message=".*First-class function type feature is experimental",
                            category=NumbaExperimentalFeatureWarning)
else:  # pragma: no cover - exercised where numba is absent
    CONSTRAINT_SIGNATURE = CONSTRAINT_FUNCTION = None

if AVAILABLE and not config.DISABLE_JIT:

    @intrinsic
    def constraint_function(typingctx, address):
        """The ``cfunc`` of :data:`CONSTRAINT_SIGNATURE` at ``address`` (an integer) as a callable value
        of type :data:`CONSTRAINT_FUNCTION`, inside a compiled kernel (numba's function value with only
        its C address set: the call goes straight to the compiled callback)."""
        if not isinstance(address, types.Integer):
            return None

        def codegen(context, builder, signature, arguments):
            value = cgutils.create_struct_proxy(CONSTRAINT_FUNCTION)(context, builder)
            value.c_addr = builder.inttoptr(arguments[0], cgutils.voidptr_t)
            value.py_addr = cgutils.get_null_value(cgutils.voidptr_t)
            value.jit_addr = cgutils.get_null_value(cgutils.voidptr_t)
            return value._getvalue()

        return CONSTRAINT_FUNCTION(address), codegen

    def callback_address(function) -> int:
        """The address a kernel takes for the callback ``function`` (a ``cfunc`` of :data:`CONSTRAINT_SIGNATURE`):
        its C address."""
        return function.address

    def constraint_cfunc(function, **options):
        """``function`` as a C callback of :data:`CONSTRAINT_SIGNATURE` (``numba.cfunc``, cached on disk, with numba's
        ``options``): the library's callbacks (:mod:`mbkron.algorithms.jointvars.closure_callbacks`,
        :mod:`mbkron.jit.python_callbacks`)."""
        import numba

        return numba.cfunc(CONSTRAINT_SIGNATURE, cache=True, **options)(function)
else:  # pragma: no cover - exercised where numba does not compile (NUMBA_DISABLE_JIT=1) or is absent
    _PYTHON_CALLBACKS: dict[int, object] = {}
    """The Python functions behind the callbacks' addresses where nothing is compiled (kept alive here)."""

    def callback_address(function) -> int:
        """Where nothing is compiled: a key for the Python function of the callback ``function`` (a ``cfunc``'s
        own, or a plain function), which :func:`constraint_function` turns back into it."""
        python = getattr(function, "_pyfunc", function)
        _PYTHON_CALLBACKS[id(python)] = python
        return id(python)

    def constraint_function(address):
        """The Python function registered by :func:`callback_address` under ``address``: the kernels run as plain
        Python and call it."""
        return _PYTHON_CALLBACKS[address]

    def constraint_cfunc(function, **options):
        """Where nothing is compiled: ``function`` unchanged (the kernels run as Python and call it)."""
        return function
