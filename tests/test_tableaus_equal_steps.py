"""``core.tableaus.equal_steps`` on complex states (complex-step derivatives of the wrapped paths' geodesics):
its stage sums run on the real view of the complex stages (issue 27 item 16: numpy's real × complex
``matmul`` is a slow mixed-type loop); checked against closed forms and the real computation."""

from __future__ import annotations

import numpy as np

from mbkron.core.tableaus import DOP853, equal_steps


def test_a_linear_system_is_integrated_to_its_exponential():
    """y' = λ y over [0, 1]: DOP853 (order 8) in 16 steps is within 1e-12 of exp(λ) y₀, complex λ too."""
    lam = np.array([[-1.3 + 2.0j], [0.7 - 0.4j]])
    y0 = np.array([[1.0 + 0.5j], [-2.0 + 1.0j]])
    end = equal_steps(DOP853, lambda y: lam * y, y0, 16)
    np.testing.assert_allclose(end, np.exp(lam) * y0, rtol=1e-12, atol=0)


def test_complex_states_are_the_real_and_imaginary_parts_integrated_alone():
    """A real linear rate acts on real and imaginary parts separately: the complex run equals the two real
    runs (to round-off), samples included."""
    rng = np.random.default_rng(7)
    M = rng.normal(size=(6, 6))
    re, im = rng.normal(size=(5, 6)), rng.normal(size=(5, 6))

    def rate(y):
        return y @ M.T

    together = equal_steps(DOP853, rate, re + 1j * im, 8, samples=True)
    apart = equal_steps(DOP853, rate, re, 8, samples=True) + 1j * equal_steps(DOP853, rate, im, 8, samples=True)
    assert together.shape == (5, 9, 6) and together.dtype == complex
    np.testing.assert_allclose(together, apart, rtol=1e-13, atol=1e-13)
