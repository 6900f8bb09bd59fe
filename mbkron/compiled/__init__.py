"""Compiled kernels (numba, the optional ``fast`` extra): the per-state loops of the one engine.
"""
