"""Compiled kernels (numba, a core dependency): the per-state loops of the one engine.

Every kernel also runs as plain Python under ``NUMBA_DISABLE_JIT=1`` (for debugging) and where numba cannot be
imported (:data:`mbkron.compiled.common.AVAILABLE`).
"""
