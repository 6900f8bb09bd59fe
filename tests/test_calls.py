"""Calls between kernels through the callee's address (mbkron.jit.calls.by_address, its return type inferred or
declared), arrays passed down borrowed (borrowed), values passed down by reference (refer, referent), arrays typed
read-only (read_only) and calls from a kernel to Python through a C callback (call_python).

The oracle of each call by address is the direct call of the same kernel (and numpy for the values): same
results bit for bit, the callee's exceptions raised in the caller with their messages, and the plain Python
call where numba does not compile (``NUMBA_DISABLE_JIT=1``, in a child process). A borrowed array is the same
array: what a callee writes through it is in the caller's array, and values computed from it are the owned
array's.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from mbkron.jit.calls import (PYTHON_CALLBACK, address_only, borrowed, by_address, call_python, read_only,
                                  refer, referent)


@numba.njit
def _scaled_sum(x, a, label):
    """``(a * x, Σ a x)``; a ValueError naming ``label`` where ``x`` is empty."""
    if x.size == 0:
        raise ValueError("empty input")
    out = np.empty(x.size)
    total = 0.0
    for i in range(x.size):
        out[i] = a * x[i]
        total += out[i]
    return out, total + label


_scaled_sum_at = by_address(_scaled_sum)


@numba.njit
def _twice_by_address(x, a):
    first, s = _scaled_sum_at((x, a, 0.5))
    second, t = _scaled_sum_at((first, a, 0.25))
    return second, s + t


@numba.njit
def _twice_directly(x, a):
    first, s = _scaled_sum(x, a, 0.5)
    second, t = _scaled_sum(first, a, 0.25)
    return second, s + t


def test_a_call_by_address_returns_what_the_direct_call_returns():
    x = np.random.default_rng(3).normal(size=7)
    by_address_values, by_address_total = _twice_by_address(x, 1.7)
    direct_values, direct_total = _twice_directly(x, 1.7)
    assert np.array_equal(by_address_values, direct_values) and by_address_total == direct_total
    np.testing.assert_allclose(by_address_values, 1.7 * 1.7 * x, rtol=1e-15)


@numba.njit
def _fill(x, pair, value):
    """``x[:] = value`` and the sums of the two arrays of ``pair`` (by address, below)."""
    for i in range(x.size):
        x[i] = value
    return pair[0].sum() + pair[1][0].sum()


_fill_at = by_address(_fill)


@numba.njit
def _fill_borrowed(x, pair, value):
    return _fill_at((borrowed(x), borrowed(pair), value))


@numba.njit
def _fill_owned(x, pair, value):
    return _fill_at((x, pair, value))


def test_a_borrowed_array_is_the_array():
    """Through a borrowed array (and a borrowed tuple of arrays, nested) a callee reads the caller's values and
    writes into the caller's array; the results are those of passing the owned arrays (without compilation,
    borrowed(x) is x: below)."""
    pair = (np.arange(4.0), (np.full((2, 3), 0.5),))
    mine, theirs = np.zeros(5), np.zeros(5)
    assert _fill_borrowed(mine, pair, 2.5) == _fill_owned(theirs, pair, 2.5) == 6.0 + 3.0
    assert np.array_equal(mine, np.full(5, 2.5)) and np.array_equal(mine, theirs)


@address_only
def _inner_product(x, y):
    """``Σ x y``, compiled for calls from kernels only."""
    total = 0.0
    for i in range(x.size):
        total += x[i] * y[i]
    return total


_inner_product_at = by_address(_inner_product, returns="float64")


@numba.njit
def _products(x, y):
    """``(x·y directly, x·y by address)``."""
    return _inner_product(x, y), _inner_product_at((x, y))


def test_a_kernel_for_kernels_only_is_called_directly_and_by_address_but_not_from_python():
    x, y = np.array([1.5, -2.0, 0.25]), np.array([4.0, 0.5, 8.0])
    assert _products(x, y) == (1.5 * 4.0 - 2.0 * 0.5 + 0.25 * 8.0,) * 2
    with pytest.raises(TypeError, match="`tests.test_calls._inner_product` is called by other kernels only"):
        _inner_product(x, y)


def test_the_callee_s_exception_reaches_the_caller():
    with pytest.raises(ValueError, match="empty input"):
        _twice_by_address(np.zeros(0), 2.0)


def test_other_argument_types_compile_another_entry():
    values, total = _twice_by_address(np.arange(3.0)[::-1], 2.0)  # a non-contiguous array: its own entry
    assert np.array_equal(values, 4.0 * np.arange(3.0)[::-1]) and total == 6.0 + 12.0 + 0.75


_scaled_sum_declared = by_address(_scaled_sum, returns="Tuple((float64[::1], float64))")
_scaled_sum_misdeclared = by_address(_scaled_sum, returns="Tuple((float64[::1], int64))")


@numba.njit
def _declared(x, a):
    return _scaled_sum_declared((x, a, 0.5))


@numba.njit
def _misdeclared(x, a):
    return _scaled_sum_misdeclared((x, a, 0.5))


def test_a_declared_return_type_gives_the_same_call():
    x = np.random.default_rng(5).normal(size=6)
    values, total = _declared(x, 2.5)
    direct_values, direct_total = _scaled_sum(x, 2.5, 0.5)
    assert np.array_equal(values, direct_values) and total == direct_total


def test_a_wrong_declared_return_type_is_an_error_naming_the_kernel():
    with pytest.warns(RuntimeWarning, match="it returns .* the caller expects"), \
            pytest.raises(RuntimeError, match="could not compile or load the kernel .*_scaled_sum"):
        _misdeclared(np.ones(3), 2.0)


@numba.njit
def _weighted(reference, k):
    """``Σ w x`` of the pair ``(w, (x,))`` that ``reference`` refers to, and ``x[k]`` set to -1."""
    w, (x,) = referent(reference)
    total = 0.0
    for i in range(w.size):
        total += w[i] * x[i]
    x[k] = -1.0
    return total


@numba.njit
def _twice_weighted(w, x):
    reference = refer((w, (x,)))  # one pointer for both calls
    return _weighted(reference, 0) + _weighted(reference, 1)


def test_a_reference_reaches_the_value():
    """The callee reads the referred arrays' values and writes into the caller's array."""
    w, x = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    expected = (1.0 * 4.0 + 2.0 * 5.0 + 3.0 * 6.0) + (1.0 * -1.0 + 2.0 * 5.0 + 3.0 * 6.0)
    assert _twice_weighted(w, x) == expected
    assert x.tolist() == [-1.0, -1.0, 6.0]


@numba.njit
def _row_sums(links):
    return links.sum(axis=1)


@numba.njit
def _built_then_read(n):
    links = np.empty((n, 2), np.int64)
    for i in range(n):
        links[i, 0], links[i, 1] = i, 2 * i
    return _row_sums(read_only(links))


def test_read_only_types_the_array_read_only():
    frozen = np.arange(6, dtype=np.int64).reshape(3, 2)
    frozen.setflags(write=False)
    assert _row_sums(frozen).tolist() == [1, 5, 9]
    assert _built_then_read(3).tolist() == [0, 3, 6]
    assert len(_row_sums.signatures) == 1  # one specialisation: the built array passed as the read-only type
    assert not _row_sums.signatures[0][0].mutable


@numba.njit
def _called_back(address, t):
    """Two calls of the Python callback at ``address``: ``(t, 3)`` then ``(2 t, 4)``, their values summed."""
    return call_python(address, t, np.int64(3)) + call_python(address, 2.0 * t, np.int64(4))


class _Recorder:
    """A Python callback of ``(t, mode)`` recording its calls and returning ``10 t + mode``; ``callback`` its C
    function and ``address`` that function's address."""

    def __init__(self):
        self.seen = []
        self.callback = PYTHON_CALLBACK(self)
        self.address = ctypes.cast(self.callback, ctypes.c_void_p).value

    def __call__(self, t, mode):
        self.seen.append((t, mode))
        return int(10 * t) + mode


def test_a_kernel_calls_python_through_the_callback_s_address():
    recorder = _Recorder()
    assert _called_back(recorder.address, 1.5) == (15 + 3) + (30 + 4)
    assert recorder.seen == [(1.5, 3), (3.0, 4)]  # in order, with the kernel's arguments


def test_without_compilation_the_call_is_the_python_call():  # and borrowed(x) is x
    program = textwrap.dedent("""
        import numpy as np
        from tests.test_calls import _twice_by_address
        from mbkron.jit.calls import borrowed
        from tests.test_calls import _fill_borrowed
        values, total = _twice_by_address(np.array([1.0, 2.0]), 3.0)
        assert type(_twice_by_address).__name__ == "function"  # not compiled
        x, pair = np.zeros(2), (np.ones(3), (np.ones((1, 2)),))
        assert borrowed(x) is x and borrowed(pair) is pair
        assert _fill_borrowed(x, pair, 4.0) == 5.0 and x.tolist() == [4.0, 4.0]
        from tests.test_calls import _twice_weighted, _built_then_read, _declared
        assert _twice_weighted(np.ones(2), np.array([2.0, 3.0])) == 5.0 + 2.0  # refer(v) is v
        assert _built_then_read(2).tolist() == [0, 3] and _declared(np.ones(2), 2.0)[1] == 4.5
        from tests.test_calls import _inner_product, _products
        assert _inner_product(np.ones(2), np.full(2, 2.0)) == 4.0 and _products(np.ones(1), np.ones(1)) == (1.0, 1.0)
        from tests.test_calls import _called_back, _Recorder
        recorder = _Recorder()
        assert _called_back(recorder.address, 1.5) == 52 and recorder.seen == [(1.5, 3), (3.0, 4)]  # through ctypes
        print(values.tolist(), total)
    """)
    environment = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment,
                            cwd=os.path.dirname(os.path.dirname(__file__)), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[9.0,", "18.0]", str(9.0 + 27.0 + 0.75)]
