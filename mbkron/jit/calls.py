"""Calls between library kernels through the callee's address, so that each kernel is compiled once.

numba compiles a call from one kernel to another by linking the callee's code into the caller and
optimising the whole again: every kernel that Python calls carries its own copy of everything below it,
and compiling it costs the optimisation of all of that. The constraint group's TR-BDF2 step, its
right-hand side, the step with the dynamics and the Newton step (:mod:`mbkron.algorithms.jointvars.kernels`) are
each called from Python and from the kernel above them, so the Newton step was optimised four times and
the whole right-hand side once more inside TR-BDF2 (issue 26: 11 of the README's main job's 38 seconds
of compilation).

:func:`by_address` makes a kernel's callers call its compiled entry through a function pointer instead:
the caller's code holds an indirect call and a slot for the address, filled on the first call in a
process by asking the callee's dispatcher for its compiled entry of exactly the argument types the caller
was compiled with (:func:`_fetch_address`, under the GIL; the callee is compiled or loaded from its disk
cache then, like any kernel called from Python). The call follows
numba's own calling convention, so the callee's arrays, tuples and exceptions pass as in a direct call,
and the types cannot disagree: the caller names the argument types itself. Nothing but the address is
resolved at run time, so the caller is cached on disk like any kernel. The cost is one indirect call
(no inlining across it): use it where the callee is large and called once per evaluation, not for small
helpers in loops.

Without numba, or with ``NUMBA_DISABLE_JIT=1``, the call is the plain Python call.

:func:`call_python` is the other direction: a kernel calls Python through a C callback
(:data:`PYTHON_CALLBACK`, a ``ctypes`` function of ``(double, int64) -> int64``) whose address it was given as an
integer — how the compiled TR-BDF2 steps a right-hand side that is any Python callable.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import warnings

from mbkron.jit.common import AVAILABLE

__all__ = ["PYTHON_CALLBACK", "address_only", "borrowed", "by_address", "call_python", "read_only", "refer", "referent"]

if AVAILABLE:
    from llvmlite import ir
    from numba.core import cgutils, config
    from numba.core.registry import CPUDispatcher
    from numba.extending import intrinsic

    class _AddressOnlyDispatcher(CPUDispatcher):
        """A numba dispatcher whose kernel is compiled without the wrappers that Python calls (:func:`address_only`):
        a call from Python raises instead of entering code that is not there."""

        def __call__(self, *args, **kwargs):
            name = f"{self.py_func.__module__}.{self.py_func.__name__}"
            raise TypeError(f"the kernel `{name}` is called by other kernels only (directly or by address: "
                            "mbkron.jit.calls.by_address), not from Python")


def address_only(function):
    """``function`` compiled as :func:`~mbkron.jit.common.jit` does (on first use, cached on disk) but for calls
    from other kernels only — directly or through its address (:func:`by_address`) —, without the two wrappers numba
    compiles beside every kernel for calls from Python (its arguments unboxed from Python objects, its result boxed)
    and from C; a call from Python raises a TypeError. Without numba, or with ``NUMBA_DISABLE_JIT=1``, ``function``
    itself (a plain call).

    The Python wrapper of a kernel that takes the arrays a state works in (a constraint step's ``work``, the
    dynamics' ``scratch``: tens of arrays in nested tuples) is code to generate and optimise for every one of them:
    a second of the README's main job's compilation for the kernels called by address (issue 26's cold start).
    """
    if not AVAILABLE or config.DISABLE_JIT:
        return function
    dispatcher = _AddressOnlyDispatcher(py_func=function, locals={}, targetoptions={
        "nopython": True, "nogil": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True})
    dispatcher.enable_caching()
    return dispatcher


def _fetch_address(key) -> int:
    """The address of the compiled entry of ``module.function`` for ``signature`` (``key``), compiling or
    loading it; 0 where that fails (the caller raises, naming the kernel; the cause is warned). Called from
    compiled code, under the GIL, once per call site and process.

    The entry is compiled (or loaded) by its argument types alone, as a call from Python does, so that both
    find the same entry in numba's disk cache (numba keys a signature with a return type apart)."""
    module, function, signature = key
    try:
        kernel = getattr(importlib.import_module(module), function)
        arguments = tuple(signature.args)
        if arguments not in kernel.overloads:
            kernel.compile(arguments)
        result = kernel.overloads[arguments]
        if result.signature.return_type != signature.return_type:
            raise TypeError(f"it returns {result.signature.return_type}, the caller expects {signature.return_type}")
        return int(result.library.get_pointer_to_function(result.fndesc.llvm_func_name))
    except Exception as error:  # noqa: BLE001 - reported by the caller's RuntimeError, with this cause warned
        warnings.warn(f"mbkron could not compile or load the kernel {module}.{function} for {signature}: "
                      f"{type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)
        return 0


def by_address(kernel, returns: str | None = None):
    """``call(arguments)`` = ``kernel(*arguments)`` (``arguments`` a tuple), compiled as an indirect call.

    Inside a kernel, ``call`` does not link ``kernel``'s code into the caller: see the module's text. In
    Python (and without numba, or with ``NUMBA_DISABLE_JIT=1``) it is the plain call.

    Parameters
    ----------
    kernel : numba dispatcher
        A module-level :func:`~mbkron.jit.common.jit` kernel (found again by its module and name).
    returns : str, optional
        The numba type ``kernel`` returns, as numba writes it (e.g. ``"Tuple((int64, float64[::1]))"``), for
        every argument types its callers pass. Declared, typing a caller does not compile ``kernel`` (numba
        infers a return type by compiling the callee): the caller and the callee can be compiled apart, in
        parallel processes (:mod:`mbkron.cli.prefetch`). The first call checks it against the compiled
        entry's (a RuntimeError naming the kernel, the cause warned, where they differ).
    """
    py_func = getattr(kernel, "py_func", None)
    if not AVAILABLE or config.DISABLE_JIT or py_func is None:
        def call(arguments):
            return kernel(*arguments)

        return call
    module, name = py_func.__module__, py_func.__name__

    declared = None if returns is None else _numba_type(returns)

    @intrinsic
    def call(typingctx, arguments):
        argument_types = tuple(arguments.types)
        if declared is None:
            resolved = typingctx.resolve_function_type(typingctx.resolve_value_type(kernel), argument_types, {})
            if resolved is None:
                return None
            target = resolved.return_type(*argument_types)
        else:
            target = declared(*argument_types)
        slot_name = "mbkron_address_" + hashlib.sha256(f"{module}.{name}{target}".encode()).hexdigest()[:16]

        def codegen(context, builder, signature, values):
            (packed,) = values
            unpacked = [builder.extract_value(packed, k) for k in range(len(argument_types))]
            voidptr = cgutils.voidptr_t
            slot = cgutils.add_global_variable(builder.module, voidptr, slot_name)
            slot.linkage = "internal"
            slot.initializer = ir.Constant(voidptr, None)
            with builder.if_then(cgutils.is_null(builder, builder.load(slot)), likely=False):
                pyapi = context.get_python_api(builder)
                gil = pyapi.gil_ensure()
                here = pyapi.import_module(context.insert_const_string(builder.module, __name__))
                fetch = pyapi.object_getattr_string(here, "_fetch_address")
                key = pyapi.unserialize(pyapi.serialize_object((module, name, target)))
                found = pyapi.call_function_objargs(fetch, [key])
                address = cgutils.alloca_once_value(builder, cgutils.get_null_value(voidptr))
                with builder.if_then(cgutils.is_not_null(builder, found), likely=True):
                    builder.store(pyapi.long_as_voidptr(found), address)
                    pyapi.decref(found)
                for held in (key, fetch, here):
                    pyapi.decref(held)
                pyapi.gil_release(gil)
                with builder.if_then(cgutils.is_null(builder, builder.load(address)), likely=False):
                    context.call_conv.return_user_exc(
                        builder, RuntimeError, (f"mbkron could not compile or load the kernel {module}.{name}",))
                builder.store(builder.load(address), slot)
            pointer_type = context.call_conv.get_function_type(target.return_type, target.args).as_pointer()
            status, result = context.call_conv.call_function(
                builder, builder.bitcast(builder.load(slot), pointer_type), target.return_type, target.args, unpacked)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return result

        return target.return_type(arguments), codegen

    return call


def _numba_type(text: str):
    """The numba type written ``text`` (numba's own notation: ``float64[::1]`` a C-contiguous vector, ``Tuple((…))``),
    read by numba's signature parser from the library's own declarations (never from input)."""
    from numba.core import sigutils

    return sigutils.normalize_signature(f"{text}()")[1]


def borrowed(array):
    """``array`` itself (or a tuple of arrays and numbers, nested), seen through references the runtime does not
    count: for passing the arrays a kernel was given down a chain of kernels. An intrinsic inside kernels (compiled
    into the caller: nothing of its own to compile); without numba, or with ``NUMBA_DISABLE_JIT=1``, the plain
    function returning ``array``.

    numba counts the references of every array (an atomic increment and decrement each time one is passed to a
    kernel that is not inlined, or taken out of a tuple): for the constraint group's right-hand side, a chain of
    kernels taking a model's dozens of arrays, that was 40 % of a state's time. The borrowed array has the same
    type, data, shape and strides, and no owner (numba's ``meminfo`` is null, so counting its references costs a
    comparison). It is valid while ``array`` is: use it only below the call that holds ``array`` (its
    arguments), never return it or store it where it could outlive that call.
    """
    return array


if AVAILABLE and not config.DISABLE_JIT:
    from numba import types

    def _borrow(context, builder, kind, value):
        """``value`` of numba type ``kind`` (an array, a number or a tuple of such, nested) with no owner on its
        arrays."""
        if isinstance(kind, types.Array):
            array = context.make_array(kind)(context, builder, value=value)
            array.meminfo = cgutils.get_null_value(array.meminfo.type)
            array.parent = cgutils.get_null_value(array.parent.type)
            return array._getvalue()
        if isinstance(kind, types.BaseTuple):
            for k, item in enumerate(kind):
                value = builder.insert_value(value, _borrow(context, builder, item, builder.extract_value(value, k)), k)
        return value  # a number: as it is

    def _borrowable(kind) -> bool:
        """Arrays, numbers and tuples of them (nested): nothing else the runtime counts references of."""
        if isinstance(kind, (types.Array, types.Number, types.Boolean)):
            return True
        return isinstance(kind, types.BaseTuple) and all(_borrowable(item) for item in kind)

    _plain_borrowed = borrowed

    @intrinsic
    def borrowed(typingctx, array):  # noqa: F811 - the kernels' intrinsic of the function above
        if not _borrowable(array):
            return None

        def codegen(context, builder, signature, values):
            return _borrow(context, builder, array, values[0])

        return array(array), codegen

    borrowed.__doc__ = _plain_borrowed.__doc__


def read_only(array):
    """``array`` itself, typed read-only inside kernels (an intrinsic: nothing to compile, nothing copied; without
    numba, or with ``NUMBA_DISABLE_JIT=1``, the plain function returning ``array``): for passing an array a kernel
    built to a kernel that otherwise takes a model's read-only arrays, so that one specialisation serves both
    (numba types a read-only array apart, and compiles its callee again for it)."""
    return array


def refer(value):
    """A reference to ``value`` (an array, a number or a tuple of such, nested) for the kernels below the caller:
    one pointer instead of the value itself. Inside a kernel an intrinsic; without numba, or with
    ``NUMBA_DISABLE_JIT=1``, ``value`` itself. :func:`referent` reads it back.

    A run's state context is a tuple of about 80 arrays of a dozen types, passed down TR-BDF2's step, its Newton
    iterations and its Jacobian to the right-hand side. numba passes a tuple as its members, and copies,
    counts and releases each one in every function it passes through: compiling that was a second or more for
    each function taking the context (issue 26's cold start). The reference is the address of one copy of the
    borrowed value (:func:`borrowed`: no reference counting) in the caller's stack frame, so it is valid while the
    caller runs: pass it down, never return it or store it.
    """
    return value


def referent(reference):
    """The value a :func:`refer` reference points to (its arrays borrowed: :func:`borrowed`); without numba, or
    with ``NUMBA_DISABLE_JIT=1``, ``reference`` itself."""
    return reference


if AVAILABLE and not config.DISABLE_JIT:
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import models, register_model

    class Reference(types.Type):
        """numba's type of a :func:`refer` reference to a value of type ``target``: a pointer (``i8*``) to a copy
        of the value in the referring kernel's stack frame."""

        def __init__(self, target):
            self.target = target
            super().__init__(name=f"Reference({target})")

    @register_model(Reference)
    class _ReferenceModel(models.PrimitiveModel):
        def __init__(self, dmm, fe_type):
            super().__init__(dmm, fe_type, ir.IntType(8).as_pointer())

    _plain_refer, _plain_referent = refer, referent

    @intrinsic
    def refer(typingctx, value):  # noqa: F811 - the kernels' intrinsic of the function above
        if not _borrowable(value):
            return None

        def codegen(context, builder, signature, values):
            slot = cgutils.alloca_once(builder, context.get_value_type(value))  # in the entry block
            builder.store(_borrow(context, builder, value, values[0]), slot)
            return builder.bitcast(slot, cgutils.voidptr_t)

        return Reference(value)(value), codegen

    @intrinsic
    def referent(typingctx, reference):  # noqa: F811 - the kernels' intrinsic of the function above
        if not isinstance(reference, Reference):
            return None

        def codegen(context, builder, signature, values):
            pointer = builder.bitcast(values[0], context.get_value_type(reference.target).as_pointer())
            return builder.load(pointer)  # stored borrowed: nothing to count

        return reference.target(reference), codegen

    refer.__doc__, referent.__doc__ = _plain_refer.__doc__, _plain_referent.__doc__

    _plain_read_only = read_only

    @intrinsic
    def read_only(typingctx, array):  # noqa: F811 - the kernels' intrinsic of the function above
        if not isinstance(array, types.Array):
            return None

        def codegen(context, builder, signature, values):
            return impl_ret_borrowed(context, builder, signature.return_type, values[0])

        return array.copy(readonly=True)(array), codegen

    read_only.__doc__ = _plain_read_only.__doc__


PYTHON_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_double, ctypes.c_int64)
"""The C type of the Python functions :func:`call_python` calls: ``callback(t, mode) -> int64`` (a ``ctypes``
callback; its address is ``ctypes.cast(callback, ctypes.c_void_p).value``). It takes the GIL itself."""


def call_python(address, t, mode):
    """``callback(t, mode)`` of the :data:`PYTHON_CALLBACK` at ``address`` (an integer; the ``ctypes`` object must
    be alive): an int64. Inside a kernel an intrinsic — an indirect call through the pointer with the C calling
    convention, nothing to compile — where the callback takes the GIL itself; the kernel must then be compiled
    without releasing it (:func:`~mbkron.jit.common.jit_holding_gil`), or every call waits for it. The
    callback must not raise (``ctypes`` would print the exception and return 0): it catches what it raises and
    says so by its value. Without numba, or with ``NUMBA_DISABLE_JIT=1``, the plain call through ``ctypes``."""
    return PYTHON_CALLBACK(address)(t, mode)


if AVAILABLE and not config.DISABLE_JIT:
    _plain_call_python = call_python

    @intrinsic
    def call_python(typingctx, address, t, mode):  # noqa: F811 - the kernels' intrinsic of the function above
        if not (isinstance(address, types.Integer) and isinstance(t, types.Float) and isinstance(mode, types.Integer)):
            return None
        signature = types.int64(address, t, mode)

        def codegen(context, builder, signature, values):
            int64 = ir.IntType(64)
            function_type = ir.FunctionType(int64, [ir.DoubleType(), int64])
            pointer = builder.inttoptr(context.cast(builder, values[0], signature.args[0], types.int64),
                                       function_type.as_pointer())
            return builder.call(pointer, [context.cast(builder, values[1], signature.args[1], types.float64),
                                          context.cast(builder, values[2], signature.args[2], types.int64)])

        return signature, codegen

    call_python.__doc__ = _plain_call_python.__doc__
