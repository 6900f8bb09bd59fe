"""Tests of mbkron.integrate.jacobian: forward-difference Jacobians and column grouping.

Expected Jacobians are analytic; the tolerances are the forward-difference error bounds
``|h_j|/2 max|d2f_i/dy_j2|`` (truncation, the second derivative bounded on the step's
segment) plus ``8 eps max|f_i| / |h_j|`` (round-off of the two evaluations of ``f_i``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.sparse import csc_matrix, diags, issparse

from mbkron.integrate import TRBDF2
from mbkron.integrate.jacobian import finite_difference_jacobian, group_columns

EPS = np.finfo(float).eps


class Counted:
    """A vectorized right-hand side ``f(y)`` that counts its calls and evaluated columns."""

    def __init__(self, f):
        self.f = f
        self.calls = 0
        self.columns = 0

    def __call__(self, t, ys):
        self.calls += 1
        self.columns += ys.shape[1]
        return np.stack([self.f(y) for y in ys.T], axis=1)


def assert_groups_are_valid(pattern, groups):
    """No two columns of a group have a nonzero in the same row."""
    pattern = np.asarray(pattern) != 0
    for g in np.unique(groups):
        assert np.all(pattern[:, groups == g].sum(axis=1) <= 1)


def forward_difference_bound(f, second_derivatives, y, h):
    """Entry-wise error bound of the forward difference with steps ``h``.

    ``second_derivatives(y)[i, j] = d2f_i/dy_j2`` must be monotone along each step
    (true for the polynomials and exponentials used here), so its largest magnitude on
    ``[y_j, y_j + h_j]`` is at an end.
    """
    bound = np.empty((y.size, y.size))
    for j in range(y.size):
        y_end = y.copy()
        y_end[j] += h[j]
        curvature = np.maximum(np.abs(second_derivatives(y)[:, j]),
                               np.abs(second_derivatives(y_end)[:, j]))
        f_size = np.maximum(np.abs(f(y)), np.abs(f(y_end)))
        bound[:, j] = 0.5 * abs(h[j]) * curvature + 8 * EPS * f_size / abs(h[j])
    return bound


def expected_steps(y, f, threshold, factor):
    """``h_j = factor_j * max(|y_j|, threshold)``, in the direction of ``f_j``."""
    return np.where(f >= 0, 1.0, -1.0) * factor * np.maximum(np.abs(y), threshold)


# --------------------------------------------------------------- a dense test problem


def dense_f(y):
    return np.array([y[0] ** 2 * y[1], y[1] ** 3 + 3 * y[2] ** 3 - 4.0, np.exp(y[0]) - y[2]])


def dense_jacobian(y):
    return np.array([
        [2 * y[0] * y[1], y[0] ** 2, 0.0],
        [0.0, 3 * y[1] ** 2, 9 * y[2] ** 2],
        [np.exp(y[0]), 0.0, -1.0],
    ])


def dense_second_derivatives(y):
    """d2f_i/dy_j2."""
    return np.array([
        [2 * y[1], 0.0, 0.0],
        [0.0, 6 * y[1], 18 * y[2]],
        [np.exp(y[0]), 0.0, 0.0],
    ])


@pytest.mark.parametrize("factor", [None, 1e-6, 1e-3])
def test_dense_jacobian_within_the_forward_difference_error(factor):
    y = np.array([0.7, -1.3, 0.4])
    f = dense_f(y)
    fun = Counted(dense_f)
    threshold = 1e-8
    J, _ = finite_difference_jacobian(fun, 0.0, y, f, threshold, factor=factor)
    h = expected_steps(y, f, threshold, np.sqrt(EPS) if factor is None else factor)
    bound = forward_difference_bound(dense_f, dense_second_derivatives, y, h)
    assert not issparse(J) and J.shape == (3, 3)
    assert np.all(np.abs(J - dense_jacobian(y)) <= bound)
    assert fun.calls == 1 and fun.columns == 3  # one column per state


def test_forward_difference_error_is_first_order_in_the_step_direction():
    # With a large step the truncation error dominates: J_fd - J = h_j/2 d2f_i/dy_j2 + O(h^2).
    y = np.array([0.7, -1.3, 0.4])
    f = dense_f(y)  # f_1 < 0 and f_2 > 0: steps of both signs
    factor = 1e-4
    J, _ = finite_difference_jacobian(Counted(dense_f), 0.0, y, f, 1e-8, factor=factor)
    h = expected_steps(y, f, 1e-8, factor)
    assert np.any(h < 0) and np.any(h > 0)
    curvature = dense_second_derivatives(y)
    curved = curvature != 0
    predicted = 0.5 * h[None, :] * curvature
    np.testing.assert_allclose((J - dense_jacobian(y))[curved], predicted[curved], rtol=1e-3)


# ------------------------------------------------------ a sparse (tridiagonal) problem


def tridiagonal_f(y):
    """f_i = y_{i-1}^2 - 2 y_i^3 + y_i y_{i+1} (missing neighbours are zero)."""
    left = np.concatenate([[0.0], y[:-1]])
    right = np.concatenate([y[1:], [0.0]])
    return left**2 - 2 * y**3 + y * right


def tridiagonal_jacobian(y):
    right = np.concatenate([y[1:], [0.0]])
    return diags([2 * y[:-1], -6 * y**2 + right, y[:-1]], [-1, 0, 1]).toarray()


def tridiagonal_second_derivatives(y):
    """d2f_i/dy_j2: 2 below the diagonal, -12 y_i on it, 0 above."""
    n = y.size
    return diags([np.full(n - 1, 2.0), -12 * y], [-1, 0]).toarray()


TRIDIAGONAL = diags([np.ones(11), np.ones(12), np.ones(11)], [-1, 0, 1]).toarray()


@pytest.mark.parametrize("as_sparse", [False, True], ids=["array", "csc"])
def test_sparse_jacobian_groups_columns(as_sparse):
    rng = np.random.default_rng(7)
    y = rng.uniform(0.5, 1.5, 12)
    f = tridiagonal_f(y)
    structure = csc_matrix(TRIDIAGONAL) if as_sparse else TRIDIAGONAL
    groups = group_columns(structure)
    fun = Counted(tridiagonal_f)
    J, _ = finite_difference_jacobian(fun, 0.0, y, f, 1e-8, sparsity=(structure, groups))
    # Three groups (columns j, j+3, j+6, ... share no row): three evaluations instead of 12.
    assert fun.calls == 1 and fun.columns == 3
    assert issparse(J) and J.shape == (12, 12)
    assert set(zip(*J.nonzero())) <= set(zip(*TRIDIAGONAL.nonzero()))
    h = expected_steps(y, f, 1e-8, np.sqrt(EPS))
    bound = forward_difference_bound(tridiagonal_f, tridiagonal_second_derivatives, y, h)
    assert np.all(np.abs(J.toarray() - tridiagonal_jacobian(y)) <= bound)
    # The same entries as the dense approximation, which needs 12 evaluations.
    dense_fun = Counted(tridiagonal_f)
    J_dense, _ = finite_difference_jacobian(dense_fun, 0.0, y, f, 1e-8)
    assert dense_fun.columns == 12
    np.testing.assert_allclose(J.toarray(), J_dense * TRIDIAGONAL, rtol=0, atol=0)


def test_trbdf2_with_jac_sparsity_evaluates_one_column_per_group():
    calls = {"fun": 0}

    def fun(t, y):
        calls["fun"] += 1
        return tridiagonal_f(y) - y  # decays to zero

    y0 = np.linspace(0.1, 0.5, 12)
    sol = solve_ivp(fun, (0.0, 5.0), y0, method=TRBDF2, rtol=1e-6, atol=1e-9,
                    jac_sparsity=TRIDIAGONAL)
    assert sol.success and sol.njev >= 1
    assert calls["fun"] == sol.nfev + 3 * sol.njev


# ----------------------------------------------------------------- step adaptation


def test_factor_adapts_to_the_size_of_the_differences():
    # Column 0: f_0 = 1e8 + y_0, the difference (~1e-8) is lost against |f_0| = 1e8 -> larger.
    # Column 1: f_1 = 1e6 (y_1 - 1) vanishes at y_1 = 1, the difference is all of f -> smaller.
    # Column 2: f_2 = y_2, a relative difference of sqrt(eps) -> unchanged.
    # Column 3: f does not depend on y_3 at all, and its factor is at the upper bound.
    def f(y):
        return np.array([1e8 + y[0], 1e6 * (y[1] - 1.0), y[2], 1.0])

    y = np.ones(4)
    factor_in = np.array([1e-8, 1e-8, 1e-8, 1e-2])
    _, factor = finite_difference_jacobian(Counted(f), 0.0, y, f(y), 1e-10, factor=factor_in)
    np.testing.assert_allclose(factor, [1e-7, 1e-9, 1e-8, 1e-2], rtol=1e-15)
    # Factors are kept within [1e3 eps, 1e-2].
    _, factor = finite_difference_jacobian(Counted(f), 0.0, y, f(y), 1e-10,
                                           factor=[1e-15, 1e-15, 1.0, 1.0])
    np.testing.assert_allclose(factor, [1e4 * EPS, 1e3 * EPS, 1e-3, 1e-2], rtol=1e-15)


def test_zero_state_with_zero_threshold_uses_an_absolute_step():
    def f(y):
        return np.array([y[0] ** 2 + 1.0])

    J, _ = finite_difference_jacobian(Counted(f), 0.0, np.zeros(1), f(np.zeros(1)), 0.0)
    h = np.sqrt(EPS)  # the default factor, as an absolute step
    assert J[0, 0] == pytest.approx(h, rel=1e-6)  # (h^2 + 1 - 1)/h, analytic value 0


# ------------------------------------------------------------------ column grouping


def test_group_columns_of_simple_patterns():
    n = 7
    assert np.all(group_columns(np.eye(n)) == 0)  # diagonal: one group
    np.testing.assert_array_equal(group_columns(np.ones((n, n))), np.arange(n))  # dense: n
    arrow = np.eye(n)
    arrow[0, :] = arrow[:, 0] = 1  # the first row couples all columns
    np.testing.assert_array_equal(group_columns(arrow), np.arange(n))
    # The TRBDF2 test pattern of tests/test_integrate.py: columns 0 and 2 share no row.
    np.testing.assert_array_equal(group_columns([[1, 1, 0], [0, 1, 1], [0, 0, 1]]), [0, 1, 0])
    with pytest.raises(ValueError, match="`structure` must be 2-dimensional"):
        group_columns(np.ones(3))


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(1, 12),
    density=st.floats(0.0, 0.6),
    seed=st.integers(0, 2**32 - 1),
)
def test_group_columns_property(n, density, seed):
    rng = np.random.default_rng(seed)
    pattern = rng.random((n, n)) < density
    groups = group_columns(pattern)
    assert groups.shape == (n,) and groups.min(initial=0) == 0
    np.testing.assert_array_equal(np.unique(groups), np.arange(groups.max(initial=-1) + 1))
    assert_groups_are_valid(pattern, groups)
    # Greedy: a column is in a later group only because it clashes with every earlier one.
    for j in range(n):
        for g in range(groups[j]):
            earlier = pattern[:, :j][:, groups[:j] == g]
            assert np.any(earlier[pattern[:, j]])
    np.testing.assert_array_equal(group_columns(csc_matrix(pattern)), groups)
