"""How mbkron's compiled kernels are compiled, cached, announced and called (numba, a core dependency).

- :mod:`mbkron.jit.common` -- the ``jit`` decorators and cache stamping, the compile notice (``CompileNotice``);
- :mod:`mbkron.jit.calls` -- calls by address with declared return types, kernels without Python wrappers, Python
  called back from kernels;
- :mod:`mbkron.jit.callbacks`, :mod:`mbkron.jit.python_callbacks` -- the C-callback signature of constraint
  functions, and the library's callbacks that call Python functions;
- :mod:`mbkron.jit.handoff` -- a kernel compiled by another process (the command line's helper) and loaded from
  the disk cache;
- :mod:`mbkron.jit.arrays` -- how arrays are handed to kernels (``writable``, ``batch_rows``).

Every kernel also runs as plain Python under ``NUMBA_DISABLE_JIT=1`` (for debugging) and where numba cannot be
imported (:data:`mbkron.jit.common.AVAILABLE`).
"""
