"""Calls between kernels through the callee's address (mbkron.compiled.calls.by_address).

The oracle of each call by address is the direct call of the same kernel (and numpy for the values): same
results bit for bit, the callee's exceptions raised in the caller with their messages, and the plain Python
call where numba does not compile (``NUMBA_DISABLE_JIT=1``, in a child process).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from mbkron.compiled.calls import by_address


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


def test_the_callee_s_exception_reaches_the_caller():
    with pytest.raises(ValueError, match="empty input"):
        _twice_by_address(np.zeros(0), 2.0)


def test_other_argument_types_compile_another_entry():
    values, total = _twice_by_address(np.arange(3.0)[::-1], 2.0)  # a non-contiguous array: its own entry
    assert np.array_equal(values, 4.0 * np.arange(3.0)[::-1]) and total == 6.0 + 12.0 + 0.75


def test_without_compilation_the_call_is_the_python_call():
    program = textwrap.dedent("""
        import numpy as np
        from tests.test_calls import _twice_by_address
        values, total = _twice_by_address(np.array([1.0, 2.0]), 3.0)
        assert type(_twice_by_address).__name__ == "function"  # not compiled
        print(values.tolist(), total)
    """)
    environment = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment,
                            cwd=os.path.dirname(os.path.dirname(__file__)), timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[9.0,", "18.0]", str(9.0 + 27.0 + 0.75)]
