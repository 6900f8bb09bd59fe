"""mbkron.numerics.gcvspl: Woltring's GCVSPL as OpenSim's GCVSpline uses it.

Checked against OpenSim 4.6 (stored data from validation/opensim/gcvspl_reference.py, recomputed live
when OpenSim is installed) and against facts independent of GCVSPL: interpolation, reproduction of
polynomials, natural end conditions, scipy's natural cubic spline and cubic smoothing spline, and the
minimality of the generalized cross-validation and mean-squared-error criteria.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.interpolate import CubicSpline, make_smoothing_spline

from mbkron.numerics.gcvspl import GCVSpline, gcvspl

REFERENCE = Path(__file__).parent / "data" / "gcvspl_opensim.json"


def _cases() -> list[dict]:
    return json.loads(REFERENCE.read_text())["cases"]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"m{c['half_order']}-var{c['error_variance']}")
def test_equals_opensim(case):
    """Values, derivatives 1–3 and coefficients equal OpenSim 4.6's to 1e-10 of their magnitude."""
    spline = GCVSpline(case["x"], case["y"], case["half_order"], case["error_variance"])
    for derivative, reference in enumerate(case["values"]):
        reference = np.array(reference)
        scale = max(np.abs(reference).max(), 1e-300)
        np.testing.assert_allclose(spline(case["t"], derivative), reference, rtol=0, atol=1e-10 * scale)
    coefficients = np.array(case["coefficients"])
    np.testing.assert_allclose(spline.coefficients, coefficients, rtol=0,
                               atol=1e-10 * np.abs(coefficients).max())


def test_reference_data_cover_every_order_and_mode():
    cases = _cases()
    assert {c["half_order"] for c in cases} == {1, 2, 3, 4}
    assert {c["error_variance"] for c in cases} == {0.0, 1e-4, 1e-2, 1.0, -1.0}
    # smoothing really happened where asked: the smoothed splines miss their data
    for case in cases:
        at_knots = np.array(case["values"][0])[1:1 + len(case["x"][::3])]
        missed = np.abs(at_knots - np.array(case["y"][::3])).max()
        if case["error_variance"] == 0.0:
            assert missed < 1e-12
        elif case["error_variance"] == 1.0:
            assert missed > 1e-3


def test_opensim_live():
    """With OpenSim installed the stored reference is OpenSim's, and fresh random data agree too."""
    pytest.importorskip("opensim")
    from validation.opensim.gcvspl_reference import cases, evaluate, opensim_gcvspline, reference

    assert [reference(case) for case in cases()] == _cases()
    rng = np.random.default_rng(7)
    for half_order in (1, 2, 3, 4):
        for variance in (0.0, 3e-3, -1.0):
            x = np.cumsum(rng.uniform(0.05, 1.0, 14))
            y = rng.standard_normal((14, 2))
            spline = GCVSpline(x, y, half_order, variance)   # two columns at once
            t = np.linspace(x[0] - 1.0, x[-1] + 1.0, 23)
            for column in range(2):
                function = opensim_gcvspline(half_order, x, y[:, column], variance)
                for derivative in range(3):
                    expected = np.array(evaluate(function, t, derivative))
                    np.testing.assert_allclose(spline(t, derivative)[:, column], expected, rtol=0,
                                               atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("half_order", [1, 2, 3, 4, 5])
def test_interpolates_the_data(half_order):
    rng = np.random.default_rng(half_order)
    x = np.cumsum(rng.uniform(0.2, 1.0, 3 * half_order + 2))
    y = rng.standard_normal(x.size)
    spline = GCVSpline(x, y, half_order)
    # GCVSPL stops at its floor p·‖Wᵀ‖ = 1e-15 (reported as smoothing 0), not at p = 0: the residual
    # is round-off amplified by the conditioning of B + pWᵀ, which grows with the order
    np.testing.assert_allclose(spline(x), y, rtol=0, atol=1e-11 * np.abs(y).max())
    assert spline.smoothing == 0.0


@pytest.mark.parametrize("half_order", [1, 2, 3, 4])
@pytest.mark.parametrize("error_variance", [0.0, -1.0])
def test_reproduces_polynomials_below_half_order(half_order, error_variance):
    """A polynomial of degree < m has no roughness penalty: the fit is that polynomial, everywhere.

    (With a known error variance > 0 GCVSPL's criterion then grows without bound as p decreases, so
    it takes its largest p, 1e15/‖Wᵀ‖, where B + pWᵀ is too ill-conditioned for more than ~5 digits.)
    """
    rng = np.random.default_rng(10 + half_order)
    x = np.cumsum(rng.uniform(0.2, 1.0, 2 * half_order + 4)) - 2.0
    coefficients = rng.standard_normal(half_order)           # degree m − 1
    polynomial = np.polynomial.Polynomial(coefficients)
    spline = GCVSpline(x, polynomial(x), half_order, error_variance)
    t = np.linspace(x[0] - 2.0, x[-1] + 2.0, 57)
    for derivative in range(2 * half_order + 1):
        np.testing.assert_allclose(spline(t, derivative), polynomial.deriv(derivative)(t), rtol=0,
                                   atol=1e-10 * (1 + np.abs(polynomial(t)).max()))


@pytest.mark.parametrize("half_order", [2, 3, 4])
def test_natural_end_conditions_and_smoothness(half_order):
    """Derivatives m … 2m−2 vanish at the end knots; derivatives up to 2m−2 are continuous."""
    m = half_order
    rng = np.random.default_rng(20 + m)
    x = np.cumsum(rng.uniform(0.3, 1.0, 2 * m + 5))
    y = rng.standard_normal(x.size)
    for variance in (0.0, 0.1):
        spline = GCVSpline(x, y, m, variance)
        scale = [np.abs(spline(np.linspace(x[0], x[-1], 400), d)).max() for d in range(2 * m)]
        for derivative in range(m, 2 * m - 1):
            np.testing.assert_allclose(spline(x[[0, -1]], derivative), 0.0, atol=1e-10 * scale[derivative])
        for derivative in range(2 * m - 1):
            below, above = spline(x * (1 - 1e-13), derivative), spline(x * (1 + 1e-13), derivative)
            np.testing.assert_allclose(below, above, rtol=0, atol=1e-9 * scale[derivative])
        # beyond the knots, a polynomial of degree m − 1
        assert np.abs(spline(np.array([x[0] - 1.5, x[-1] + 2.5]), m)).max() < 1e-10 * scale[m - 1]


def test_natural_cubic_equals_scipy():
    """Half order 2 without error: scipy's natural cubic spline inside, its tangent lines beyond."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(-2.0, 2.0, 12))
    y = rng.standard_normal(12)
    spline = GCVSpline(x, y, half_order=2)
    scipy_spline = CubicSpline(x, y, bc_type="natural")
    inside = np.concatenate([x, x[:-1] + 0.37 * np.diff(x)])
    for derivative in range(3):
        expected = scipy_spline(inside, derivative)
        np.testing.assert_allclose(spline(inside, derivative), expected, rtol=0,
                                   atol=1e-12 * np.abs(expected).max())
    mid = x[:-1] + 0.37 * np.diff(x)   # the third derivative jumps at the knots
    np.testing.assert_allclose(spline(mid, 3), scipy_spline(mid, 3), rtol=1e-11, atol=0)
    for end, beyond in ((x[0], x[0] - 1.3), (x[-1], x[-1] + 0.9)):
        tangent = scipy_spline(end) + scipy_spline(end, 1) * (beyond - end)
        assert spline(beyond) == pytest.approx(tangent, rel=1e-12, abs=1e-12)


def _influence(x, lam):
    """The influence matrix of scipy's cubic smoothing spline with penalty ``lam``."""
    return np.column_stack([make_smoothing_spline(x, e, lam=lam)(x) for e in np.eye(x.size)])


@pytest.mark.parametrize("error_variance", [1e-3, 1e-2, -1.0])
def test_cubic_smoothing_equals_scipy_and_minimises_the_criterion(error_variance):
    """Half order 2 with smoothing p is scipy's smoothing spline with λ = p, and p minimises
    GCVSPL's criterion (GCV: R/(tr(I−A)/n)²; known variance σ²: R − σ²(2 tr(I−A)/n − 1))."""
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0.0, 3.0, 15))
    y = np.sin(2.0 * x) + 0.1 * rng.standard_normal(15)
    spline = GCVSpline(x, y, half_order=2, error_variance=error_variance)
    p = float(spline.smoothing)
    assert p > 0
    reference = make_smoothing_spline(x, y, lam=p)
    t = np.linspace(x[0], x[-1], 301)
    for derivative in range(3):
        expected = reference(t, derivative)
        np.testing.assert_allclose(spline(t, derivative), expected, rtol=0, atol=1e-10 * np.abs(expected).max())

    def criterion(lam):
        influence = _influence(x, lam)
        residual = np.mean((y - influence @ y) ** 2)
        trace = np.trace(np.eye(x.size) - influence) / x.size
        if error_variance < 0:
            return residual / trace**2
        return residual - error_variance * (2 * trace - 1)

    at_p = criterion(p)
    assert at_p <= criterion(p * 1.05) and at_p <= criterion(p / 1.05)


def test_columns_are_fitted_one_by_one():
    rng = np.random.default_rng(8)
    x = np.cumsum(rng.uniform(0.1, 1.0, 9))
    y = rng.standard_normal((9, 3))
    together = GCVSpline(x, y, half_order=3, error_variance=0.01)
    t = np.linspace(0.0, x[-1] + 1.0, 13).reshape(13, 1)
    assert together(t, 1).shape == (13, 1, 3)
    for column in range(3):
        alone = GCVSpline(x, y[:, column], half_order=3, error_variance=0.01)
        assert together.smoothing[column] == alone.smoothing
        np.testing.assert_array_equal(together(t, 1)[..., column], alone(t, 1))


def test_scalar_and_high_derivatives():
    x = np.arange(6.0)
    spline = GCVSpline(x, x**2 - x, half_order=3)
    value = spline(2.5)
    assert np.shape(value) == () and math.isclose(float(value), 3.75, abs_tol=1e-12)
    # degree 5: the fifth derivative is piecewise constant, the sixth and beyond vanish
    np.testing.assert_array_equal(spline(np.linspace(-1.0, 7.0, 9), 6), 0.0)
    np.testing.assert_array_equal(spline(np.linspace(-1.0, 7.0, 9), 11), 0.0)


@pytest.mark.parametrize("half_order", [1, 2, 3, 4])
def test_derivatives_are_finite_differences_and_evaluate_is_the_first_two(half_order):
    """Each derivative ``d ≥ 1`` (``SPLDER``, compiled) is the central difference of derivative ``d − 1`` between
    the knots and beyond them, for interpolating and smoothing fits; ``evaluate`` gives the value and the first two
    derivatives of ``__call__``, bit for bit."""
    m = half_order
    rng = np.random.default_rng(40 + m)
    x = np.cumsum(rng.uniform(0.3, 1.0, 2 * m + 6))
    y = rng.standard_normal(x.size)
    inner = (x[:-1] + x[1:]) / 2 + rng.uniform(-0.1, 0.1, x.size - 1)
    t = np.concatenate([inner, [x[0] - 1.3, x[-1] + 0.7]])
    h = 1e-6
    for variance in (0.0, 0.05, -1.0):
        spline = GCVSpline(x, y, m, variance)
        for derivative in range(1, 2 * m):
            scale = 1 + np.abs(spline(t, derivative - 1)).max()
            np.testing.assert_allclose(spline(t, derivative), (spline(t + h, derivative - 1)
                                                               - spline(t - h, derivative - 1)) / (2 * h),
                                       rtol=1e-6, atol=1e-6 * scale)
        for got, expected in zip(spline.evaluate(t), (spline(t), spline(t, 1), spline(t, 2))):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("arguments", "message"), [
    (([0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0], 2), "`x` must be finite and strictly increasing"),
    (([0.0, 1.0, np.nan, 2.0], [0.0, 1.0, 2.0, 3.0], 2), "`x` must be finite and strictly increasing"),
    (([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], 2), "at least 2·half_order = 4 knots, got shape (3,)"),
    (([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0], 2), "`y` must be finite, of shape (4,) or (4, k), got shape (3,)"),
    (([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, np.inf, 2.0], 2), "`y` must be finite"),
    (([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], 0), "`half_order` must be an integer from 1 to 8, got 0"),
    (([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], 2.0), "`half_order` must be an integer from 1 to 8, got 2.0"),
    (([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], 2, math.nan), "`error_variance` must be finite, got nan"),
])
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        GCVSpline(*arguments)
    with pytest.raises(ValueError, match=re.escape(message)):
        gcvspl(*arguments)


def test_bad_derivative():
    spline = GCVSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.0, 1.0], half_order=2)
    for derivative in (-1, 1.5, True):
        with pytest.raises(ValueError, match=re.escape(f"`derivative` must be an integer ≥ 0, got {derivative!r}")):
            spline(0.5, derivative)
