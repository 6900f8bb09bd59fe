"""``numerics.runge_kutta.dop853_equal_steps`` (the surfaces' geodesics' integrator) against closed forms:
a linear system's exponential, and DOP853's order 8 in the step count."""

from __future__ import annotations

import numba
import numpy as np
from scipy.linalg import expm

from mbkron.numerics.runge_kutta import STAGES, dop853_equal_steps

A = np.array([[-1.3, 2.0, 0.1], [-2.0, -1.3, 0.4], [0.3, -0.5, -0.2]])  # a damped rotation, coupled
Y0 = np.array([1.0, -2.0, 0.5])


@numba.njit
def _linear(y, matrix, out):
    for i in range(y.size):
        total = 0.0
        for j in range(y.size):
            total += matrix[i, j] * y[j]
        out[i] = total


@numba.njit
def _integrate(matrix, y, steps):
    k, stage_y = np.empty((STAGES, y.size)), np.empty(y.size)
    dop853_equal_steps(_linear, matrix, y, steps, k, stage_y)
    return y


def test_a_linear_system_is_integrated_to_its_exponential():
    """y' = A y over [0, 1] in 16 equal steps: within 1e-13 of exp(A) y₀ (scipy's matrix exponential)."""
    exact = expm(A) @ Y0
    assert np.abs(_integrate(A, Y0.copy(), 16) - exact).max() < 1e-13


def test_the_error_falls_as_the_eighth_power_of_the_step():
    """Halving the step of a fast system divides the error by 2⁸ = 256 (DOP853 is of order 8)."""
    fast = 6.0 * A
    exact = expm(fast) @ Y0
    errors = [np.abs(_integrate(fast, Y0.copy(), steps) - exact).max() for steps in (8, 16)]
    assert 150 < errors[0] / errors[1] < 450 and errors[1] > 1e-13
