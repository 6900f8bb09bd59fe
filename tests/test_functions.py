"""Empirical 1-D functions (mbkron.numerics.functions) against independent computations.

References: scipy's CubicSpline (natural end conditions), the defining equations of the
Forsythe–Malcolm–Moler spline solved exactly with sympy, exact reproduction of cubics, OpenSim's
SimmSpline and PiecewiseLinearFunction (when the optional `opensim` package is installed),
numpy.interp, a literal Fourier sum with sympy derivatives, and finite differences.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.interpolate
import sympy

import mbkron
from mbkron.core.errors import ModelError
from mbkron.algorithms.jointvars.explicit import JointVariables
from mbkron.numerics.functions import CubicSpline, FourierSeries, PiecewiseLinear, tabulated_function
from mbkron.algorithms.jointvars.functions import CoordinateFunctionVariables
from mbkron.multibody.jointvars import CoordinateFunction


def random_knots(rng, n):
    x = np.cumsum(rng.uniform(0.1, 1.0, n)) - 1.0
    return x, rng.normal(0.0, 2.0, n)


def assert_close(actual, expected, rtol=1e-10):
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max())) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def away_from_knots(x, samples):
    """Points inside [x0, x_{n-1}] at least 1e-3 of a step from every knot (for finite differences)."""
    t = np.linspace(x[0], x[-1], samples)
    step = np.diff(x).min()
    return t[np.min(np.abs(t[:, None] - x[None, :]), axis=1) > 1e-3 * step]


# ---------------------------------------------------------------------- natural cubic spline
@pytest.mark.parametrize("n", [3, 4, 5, 8, 13])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_natural_spline_equals_scipy(n, seed):
    x, y = random_knots(np.random.default_rng(seed), n)
    reference = scipy.interpolate.CubicSpline(x, y, bc_type="natural")
    spline = CubicSpline(x, y, kind="natural")
    t = np.linspace(x[0], x[-1], 301)
    value, first, second = spline.evaluate(t)
    assert_close(value, reference(t))
    assert_close(first, reference(t, 1))
    assert_close(second, reference(t, 2))
    assert_close(spline(x), y, rtol=1e-13)


@pytest.mark.parametrize("kind", ["natural", "fmm"])
def test_cubic_splines_continue_as_the_end_tangents(kind):
    x, y = random_knots(np.random.default_rng(7), 6)
    spline = CubicSpline(x, y, kind=kind)
    h = 1e-7
    start_slope = (spline(x[0] + h) - spline(x[0])) / h  # one-sided, inside
    end_slope = (spline(x[-1]) - spline(x[-1] - h)) / h
    below, above = x[0] - np.array([0.5, 3.0]), x[-1] + np.array([0.5, 3.0])
    value, first, second = spline.evaluate(below)
    slope = spline.evaluate(x[0])[1]
    assert_close(value, y[0] + slope * (below - x[0]))
    assert_close(first, [slope, slope])
    assert np.all(second == 0.0)
    np.testing.assert_allclose(slope, start_slope, rtol=1e-5)
    value, first, second = spline.evaluate(above)
    slope = spline.evaluate(x[-1])[1]
    assert_close(value, y[-1] + slope * (above - x[-1]))
    assert_close(first, [slope, slope])
    assert np.all(second == 0.0)
    np.testing.assert_allclose(slope, end_slope, rtol=1e-5)


def test_natural_spline_extrapolation_uses_scipys_end_slopes():
    x, y = random_knots(np.random.default_rng(3), 7)
    reference = scipy.interpolate.CubicSpline(x, y, bc_type="natural")
    spline = CubicSpline(x, y, kind="natural")
    outside = np.array([x[0] - 2.0, x[-1] + 1.5])
    expected = [y[0] + reference(x[0], 1) * -2.0, y[-1] + reference(x[-1], 1) * 1.5]
    assert_close(spline(outside), expected)


# ---------------------------------------------------------------------- FMM (SimmSpline)
def fmm_reference(x, y):
    """Solve the defining equations of the FMM spline exactly (sympy rationals).

    Unknowns: the 4(n−1) polynomial coefficients of p_k(s) = a_k + b_k s + c_k s² + d_k s³,
    s = x − x_k. Equations: interpolation at both ends of every interval, C¹ and C² at interior
    knots, and p_0''' = 6 Δ³(x_0..x_3), p_{n−2}''' = 6 Δ³(x_{n−4}..x_{n−1}) with Δ³ the third
    divided difference (Forsythe, Malcolm & Moler 1977).
    """
    x = [sympy.Rational(v) for v in x]
    y = [sympy.Rational(v) for v in y]
    n = len(x)
    coefficients = sympy.symbols(f"c0:{4 * (n - 1)}")
    s = sympy.Symbol("s")
    pieces = [sum(coefficients[4 * k + j] * s**j for j in range(4)) for k in range(n - 1)]
    equations = []
    for k, p in enumerate(pieces):
        h = x[k + 1] - x[k]
        equations += [p.subs(s, 0) - y[k], p.subs(s, h) - y[k + 1]]
        if k < n - 2:
            for order in (1, 2):
                equations.append(sympy.diff(p, s, order).subs(s, h) - sympy.diff(pieces[k + 1], s, order).subs(s, 0))

    def divided(xs, ys):
        if len(xs) == 1:
            return ys[0]
        return (divided(xs[1:], ys[1:]) - divided(xs[:-1], ys[:-1])) / (xs[-1] - xs[0])

    equations.append(6 * coefficients[3] - 6 * divided(x[:4], y[:4]))
    equations.append(6 * coefficients[4 * (n - 2) + 3] - 6 * divided(x[-4:], y[-4:]))
    solution = sympy.solve(equations, coefficients, dict=True)[0]
    return [[float(solution[coefficients[4 * k + j]]) for j in range(4)] for k in range(n - 1)]


def test_fmm_spline_solves_its_defining_equations():
    x = [0.0, 0.5, 1.75, 2.0, 3.5, 4.0]
    y = [1.0, -0.5, 2.25, 0.0, 1.5, -1.0]
    pieces = fmm_reference(x, y)
    spline = CubicSpline(x, y, kind="fmm")
    for k, (a, b, c, d) in enumerate(pieces):
        s = np.linspace(0.0, x[k + 1] - x[k], 7)
        value, first, second = spline.evaluate(x[k] + s)
        assert_close(value, a + b * s + c * s**2 + d * s**3, rtol=1e-13)
        assert_close(first, b + 2 * c * s + 3 * d * s**2, rtol=1e-13)
        assert_close(second, 2 * c + 6 * d * s, rtol=1e-12)


@pytest.mark.parametrize("n", [4, 5, 9])
def test_fmm_spline_reproduces_cubics_and_natural_does_not(n):
    rng = np.random.default_rng(n)
    x = np.cumsum(rng.uniform(0.2, 1.0, n))
    poly = np.polynomial.Polynomial(rng.normal(size=4))
    spline = CubicSpline(x, poly(x), kind="fmm")
    t = np.linspace(x[0], x[-1], 101)
    value, first, second = spline.evaluate(t)
    assert_close(value, poly(t), rtol=1e-11)
    assert_close(first, poly.deriv(1)(t), rtol=1e-10)
    assert_close(second, poly.deriv(2)(t), rtol=1e-10)
    natural = CubicSpline(x, poly(x), kind="natural")
    assert np.abs(natural(t) - poly(t)).max() > 1e-6


def test_fmm_spline_with_three_knots_is_the_parabola_and_two_knots_the_line():
    x = np.array([-1.0, 0.3, 2.0])
    parabola = np.polynomial.Polynomial([0.5, -1.0, 2.0])
    value, first, second = CubicSpline(x, parabola(x), kind="fmm").evaluate(np.linspace(-1, 2, 31))
    assert_close(value, parabola(np.linspace(-1, 2, 31)), rtol=1e-13)
    assert_close(second, np.full(31, 4.0), rtol=1e-12)
    for kind in ("fmm", "natural", "linear"):
        f = tabulated_function([1.0, 3.0], [2.0, -2.0], kind)
        value, first, second = f.evaluate(np.array([0.0, 1.0, 2.5, 4.0]))
        assert_close(value, [4.0, 2.0, -1.0, -4.0], rtol=1e-15)
        assert_close(first, [-2.0] * 4, rtol=1e-15)
        assert np.all(second == 0.0)


def _opensim():
    return pytest.importorskip("opensim", reason="the optional `validation` extra (opensim) is not installed")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 11])
def test_fmm_spline_equals_opensim_simmspline(n):
    osim = _opensim()
    rng = np.random.default_rng(100 + n)
    x, y = random_knots(rng, n)
    reference = osim.SimmSpline()
    for a, b in zip(x, y):
        reference.addPoint(float(a), float(b))
    # away from the knots: SimmSpline snaps arguments within its roundoff tolerance to the end knots
    t = np.concatenate([away_from_knots(x, 97), [x[0] - 1.3, x[-1] + 0.7]])
    first_order, second_order = osim.StdVectorInt([0]), osim.StdVectorInt([0, 0])
    expected = np.array([[reference.calcValue(osim.Vector(1, float(v))),
                          reference.calcDerivative(first_order, osim.Vector(1, float(v))),
                          reference.calcDerivative(second_order, osim.Vector(1, float(v)))] for v in t])
    value, first, second = CubicSpline(x, y, kind="fmm").evaluate(t)
    assert_close(value, expected[:, 0], rtol=1e-12)
    assert_close(first, expected[:, 1], rtol=1e-12)
    assert_close(second, expected[:, 2], rtol=1e-12)


def test_linear_interpolation_equals_opensim_piecewise_linear_function():
    osim = _opensim()
    x, y = random_knots(np.random.default_rng(5), 6)
    reference = osim.PiecewiseLinearFunction()
    for a, b in zip(x, y):
        reference.addPoint(float(a), float(b))
    t = np.concatenate([away_from_knots(x, 41), [x[0] - 0.9, x[-1] + 1.1]])
    expected = [reference.calcValue(osim.Vector(1, float(v))) for v in t]
    slopes = [reference.calcDerivative(osim.StdVectorInt([0]), osim.Vector(1, float(v))) for v in t]
    value, first, _ = PiecewiseLinear(x, y).evaluate(t)
    assert_close(value, expected, rtol=1e-12)
    assert_close(first, slopes, rtol=1e-12)


# ---------------------------------------------------------------------- linear and Fourier
def test_linear_interpolation_equals_numpy_interp_with_linear_ends():
    x, y = random_knots(np.random.default_rng(11), 7)
    f = PiecewiseLinear(x, y)
    t = np.linspace(x[0], x[-1], 203)
    value, first, second = f.evaluate(t)
    assert_close(value, np.interp(t, x, y), rtol=1e-13)
    segment = np.clip(np.searchsorted(x, t, side="right") - 1, 0, len(x) - 2)
    assert_close(first, (np.diff(y) / np.diff(x))[segment], rtol=1e-13)
    assert np.all(second == 0.0)
    assert_close(f([x[0] - 1.0, x[-1] + 2.0]),
                 [y[0] - (y[1] - y[0]) / (x[1] - x[0]), y[-1] + 2.0 * (y[-1] - y[-2]) / (x[-1] - x[-2])], rtol=1e-13)


def test_fourier_series_equals_literal_sum_and_sympy_derivatives():
    period, a0, a, b = 2.5, 0.3, [1.0, -0.5, 0.25], [0.2, 0.7, -0.1]
    xs = sympy.Symbol("x")
    w = 2 * sympy.pi / sympy.Rational(5, 2)
    series = sympy.Float(a0) + sum(sympy.Float(a[k]) * sympy.cos((k + 1) * w * xs)
                                   + sympy.Float(b[k]) * sympy.sin((k + 1) * w * xs) for k in range(3))
    t = np.linspace(-3.0, 4.0, 57)
    expected = [sympy.lambdify(xs, sympy.diff(series, xs, order), "numpy")(t) for order in range(3)]
    literal = a0 + sum(a[k] * np.cos(2 * np.pi * (k + 1) * t / period) + b[k] * np.sin(2 * np.pi * (k + 1) * t / period)
                       for k in range(3))
    value, first, second = FourierSeries(period, a0, a, b).evaluate(t)
    assert_close(value, literal, rtol=1e-13)
    assert_close(value, expected[0], rtol=1e-12)
    assert_close(first, expected[1], rtol=1e-12)
    assert_close(second, expected[2], rtol=1e-12)
    assert_close(FourierSeries(1.0, 2.0, [], []).evaluate(t)[0], np.full_like(t, 2.0), rtol=0)


@pytest.mark.parametrize(
    "function",
    [CubicSpline([0.0, 0.4, 1.1, 1.5, 2.6], [0.0, 0.3, -0.2, 0.8, 0.1], "natural"),
     CubicSpline([0.0, 0.4, 1.1, 1.5, 2.6], [0.0, 0.3, -0.2, 0.8, 0.1], "fmm"),
     PiecewiseLinear([0.0, 0.4, 1.1, 1.5, 2.6], [0.0, 0.3, -0.2, 0.8, 0.1]),
     FourierSeries(1.7, -0.2, [0.4, 0.1], [0.3, -0.6])],
    ids=["natural", "fmm", "linear", "fourier"],
)
def test_derivatives_equal_finite_differences(function):
    t = away_from_knots(np.array([0.0, 0.4, 1.1, 1.5, 2.6]), 60)
    h = 1e-4
    shifted = [function.evaluate(t + k * h) for k in (-2, -1, 1, 2)]
    value, first, second = function.evaluate(t)
    for derivative, (lower2, lower1, upper1, upper2) in ((first, [s[0] for s in shifted]), (second, [s[1] for s in shifted])):
        estimate = (lower2 - 8 * lower1 + 8 * upper1 - upper2) / (12 * h)  # 4th order
        np.testing.assert_allclose(derivative, estimate, rtol=1e-7, atol=1e-7)


def test_order_controls_what_is_computed_and_shapes_follow_x():
    spline = CubicSpline([0.0, 1.0, 2.0], [0.0, 1.0, 0.0])
    value, first, second = spline.evaluate(np.zeros((2, 3)), order=0)
    assert value.shape == (2, 3) and first is None and second is None
    value, first, second = spline.evaluate(0.5, order=1)
    assert value.shape == () and first.shape == () and second is None


@pytest.mark.parametrize(
    "make, message",
    [(lambda: CubicSpline([0.0, 1.0, 1.0], [0, 1, 2]), "strictly increasing"),
     (lambda: CubicSpline([0.0, 2.0, 1.0], [0, 1, 2], "fmm"), "x[1] = 2.0 is followed by x[2] = 1.0"),
     (lambda: CubicSpline([0.0, 1.0], [0.0, 1.0, 2.0]), "same length"),
     (lambda: CubicSpline([0.0], [1.0]), "at least 2 knots"),
     (lambda: PiecewiseLinear([0.0, np.nan], [0.0, 1.0]), "finite"),
     (lambda: CubicSpline([0.0, 1.0], [0.0, 1.0], "cubic"), "'natural' or 'fmm'"),
     (lambda: tabulated_function([0.0, 1.0], [0.0, 1.0], "akima"), "one of natural, fmm, linear"),
     (lambda: FourierSeries(0.0, 1.0, [1.0], [1.0]), "positive finite"),
     (lambda: FourierSeries(1.0, 1.0, [1.0, 2.0], [1.0]), "equal length"),
     (lambda: CubicSpline([0.0, 1e-300], [0.0, 1e300]), "overflow")],
)
def test_invalid_data_is_rejected_clearly(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


# ---------------------------------------------------------------------- joint variables
def test_coordinate_function_variables_batched_value_gradient_hessian():
    spline = CubicSpline([0.0, 0.5, 1.2, 2.0], [0.0, 0.2, 0.1, 0.6], "fmm")
    fourier = FourierSeries(2 * np.pi, 0.1, [0.3], [-0.2])
    provider = CoordinateFunctionVariables([spline, fourier, spline], [2, 0, 2], nq=3)
    q = np.random.default_rng(0).uniform(-0.5, 2.5, (4, 5, 3))
    f, grad, hess = provider.evaluate(q, 2)
    assert f.shape == (4, 5, 3) and grad.shape == (4, 5, 3, 3) and hess.shape == (4, 5, 3, 3, 3)
    expected = np.zeros((4, 5, 3, 3))
    expected_h = np.zeros((4, 5, 3, 3, 3))
    for row, (function, column) in enumerate([(spline, 2), (fourier, 0), (spline, 2)]):
        value, first, second = function.evaluate(q[..., column])
        np.testing.assert_array_equal(f[..., row], value)
        expected[..., row, column] = first
        expected_h[..., row, column, column] = second
    np.testing.assert_array_equal(grad, expected)
    np.testing.assert_array_equal(hess, expected_h)
    assert provider.evaluate(q, 0)[1] is None


@pytest.mark.parametrize("others", [False, True], ids=["splines", "splines and a Fourier series"])
def test_joint_variables_filled_by_coordinate_functions_are_their_values_in_place(others):
    """A joint-variable map whose rows 1, 4, 2 are functions of coordinates (affine rows 0 and 3 around them):
    its ``f``, ``∇f`` and ``H`` — by ``evaluate`` and ``evaluate_silenced``, one state and a batch, every order —
    are the functions' own values at their coordinates placed in their rows (zero elsewhere in those rows) and
    the affine rows' ``c + Σ_k A[:, k] q_k`` (summed in the order of the coordinates), bit for bit."""
    spline = CubicSpline([0.0, 0.5, 1.2, 2.0], [0.0, 0.2, 0.1, 0.6], "fmm")
    line = PiecewiseLinear([-1.0, 0.0, 3.0], [0.5, -0.5, 1.0])
    third = FourierSeries(2 * np.pi, 0.1, [0.3], [-0.2]) if others else CubicSpline([0.0, 1.0, 2.5], [1.0, 0.0, 2.0])
    functions, columns, rows = [spline, third, line], [2, 0, 2], np.array([1, 4, 2])
    matrix = np.zeros((5, 3))
    matrix[0] = [1.0, -1.0, 0.0]
    matrix[3] = [0.0, 0.5, 2.0]
    constant = np.array([0.1, 0.0, 0.0, -0.3, 0.0])
    joint_variables = JointVariables(matrix, constant, ((rows, CoordinateFunctionVariables(functions, columns, 3)),))
    rng = np.random.default_rng(4)
    for q in (rng.uniform(-0.5, 2.5, 3), rng.uniform(-0.5, 2.5, (4, 2, 3))):
        batch = q.shape[:-1]
        expected_f = np.broadcast_to(constant, batch + (5,))
        for k in range(3):
            expected_f = expected_f + matrix[:, k] * q[..., k, None]
        expected_grad = np.broadcast_to(matrix, batch + (5, 3)).copy()
        expected_hess = np.zeros(batch + (5, 3, 3))
        for row, function, column in zip(rows, functions, columns):
            value, first, second = function.evaluate(q[..., column])
            expected_f[..., row] = value
            expected_grad[..., row, column] = first
            expected_hess[..., row, column, column] = second
        for order in (0, 1, 2):
            for f, grad, hess in (joint_variables.evaluate(q, order), joint_variables.evaluate_silenced(q, order)):
                assert f.tobytes() == expected_f.tobytes()
                assert grad is None if order < 1 else grad.tobytes() == expected_grad.tobytes()
                assert hess is None if order < 2 else hess.tobytes() == expected_hess.tobytes()


def test_coordinate_function_as_a_joint_variable_in_a_model():
    rhythm = CubicSpline(np.deg2rad([0, 30, 60, 90, 120]), np.deg2rad([0, 4, 15, 22, 25]), "fmm")
    b = mbkron.ModelBuilder()
    b.add_coordinate("shoulder").add_coordinate("elbow")
    b.add_body("upper", axis=(0, 0, 1), variable="shoulder")
    b.add_body("fore", parent="upper", axis=(0, 0, 1), variable="elbow", offset=(0.3, 0, 0))
    b.add_body("hand", parent="fore", axis=(0, 0, 1), variable=CoordinateFunction(rhythm, "elbow"), offset=(0.25, 0, 0))
    model = b.build()
    rng = np.random.default_rng(2)
    q = rng.uniform(0.0, 2.0, (6, 2))
    qd = rng.normal(size=(6, 2))
    wrist, dwrist, _ = rhythm.evaluate(q[:, 1])
    angle = q[:, 0] + q[:, 1] + wrist
    tip = (0.3 * np.cos(q[:, 0]) + 0.25 * np.cos(q[:, 0] + q[:, 1]) + 0.1 * np.cos(angle),
           0.3 * np.sin(q[:, 0]) + 0.25 * np.sin(q[:, 0] + q[:, 1]) + 0.1 * np.sin(angle))
    assert_close(model.point_position("hand", (0.1, 0, 0), q)[:, :2], np.stack(tip, -1), rtol=1e-13)
    rate = qd[:, 0] + qd[:, 1] * (1 + dwrist)
    expected_vx = (-0.3 * np.sin(q[:, 0]) * qd[:, 0] - 0.25 * np.sin(q[:, 0] + q[:, 1]) * (qd[:, 0] + qd[:, 1])
                   - 0.1 * np.sin(angle) * rate)
    assert_close(model.point_velocity("hand", (0.1, 0, 0), q, qd)[:, 0], expected_vx, rtol=1e-12)


def test_builder_reports_a_coordinate_function_of_an_unknown_coordinate():
    b = mbkron.ModelBuilder()
    b.add_coordinate("q1")
    b.add_body("a", axis=(0, 0, 1), variable=CoordinateFunction(PiecewiseLinear([0, 1], [0, 1]), "q9"))
    with pytest.raises(ModelError, match="unknown coordinate `q9`"):
        b.build()
    with pytest.raises(TypeError, match="EmpiricalFunction"):
        CoordinateFunction(np.sin, "q1")


def test_stacked_piecewise_cubics_equal_each_function():
    """``StackedPiecewiseCubic`` evaluates every function of a stack (knots padded to the longest) exactly as
    the function alone: inside, at every knot (the last one belongs to the last cubic), and on the straight
    lines below and above, for all kinds and different numbers of knots."""
    from mbkron.numerics.functions import StackedPiecewiseCubic

    rng = np.random.default_rng(5)
    functions = []
    for kind, count in [("fmm", 7), ("natural", 4), ("linear", 5), ("fmm", 3), ("natural", 2)]:
        x = np.sort(rng.uniform(-2, 2, count))
        functions.append(tabulated_function(x, rng.normal(size=count), kind))
    points = [np.concatenate([f.x, rng.uniform(-3, 3, 20), [f.x[0] - 1, f.x[-1] + 1]]) for f in functions]
    x = np.stack([p[:22] for p in points], axis=-1)  # (22, 5): knots of each function among random points
    stacked = StackedPiecewiseCubic(functions)
    for order in (0, 1, 2):
        got = stacked.evaluate(x, order)
        for t, f in enumerate(functions):
            expected = f.evaluate(x[:, t], order)
            for k in range(order + 1):
                np.testing.assert_array_equal(got[k][:, t], expected[k])


@pytest.mark.parametrize("kind", ["natural", "fmm", "linear"])
def test_end_lines_hold_far_out_and_at_infinity_and_nan_stays_nan(kind):
    """Outside the knots ``F = y_0 + F'(x_0)(x − x_0)`` (``y_{n−1} + F'(x_{n−1})(x − x_{n−1})``) as a line,
    also where a cubic form's ``dx²`` would overflow and at ``x = ±inf`` (the lines' limits); a NaN gives NaN
    value and derivatives. The pieces are the cubics through the knots and those lines."""
    x, y = random_knots(np.random.default_rng(13), 5)
    f = tabulated_function(x, y, kind)
    start, end = f.evaluate(x[[0, -1]], 1)[1]  # the end slopes (inside the knots)
    t = np.array([-np.inf, -1e300, x[0] - 2.0, x[-1] + 2.0, 1e300, np.inf])
    expected = np.concatenate([y[0] + start * (t[:3] - x[0]), y[-1] + end * (t[3:] - x[-1])])
    value, first, second = f.evaluate(t)
    np.testing.assert_array_equal(value, expected)
    np.testing.assert_array_equal(first, [start] * 3 + [end] * 3)
    np.testing.assert_array_equal(second, np.zeros(6))
    assert all(np.isnan(part) for part in f.evaluate(np.nan))
    pieces = f.pieces()  # the line below, the cubics on [x_{k−1}, x_k], the line above
    assert pieces.shape == (x.size + 1, 5) and not pieces.flags.writeable
    inside = np.concatenate([[x[0] - 1.0], (x[:-1] + x[1:]) / 2, [x[-1] + 1.0]])  # a point of each piece
    anchors = x[np.maximum(np.arange(x.size + 1) - 1, 0)]
    np.testing.assert_array_equal(pieces[:, 0], anchors)
    np.testing.assert_array_equal(pieces[:, 1], y[np.maximum(np.arange(x.size + 1) - 1, 0)])
    polynomials = [np.polyval(piece[:0:-1], t - piece[0]) for piece, t in zip(pieces, inside)]
    np.testing.assert_allclose(polynomials, f(inside), rtol=1e-13)
    np.testing.assert_array_equal(pieces[[0, -1], 3:], np.zeros((2, 2)))  # the end lines


def test_the_splines_tridiagonal_solve_is_lapacks():
    """The splines' tridiagonal solve (written out so that building a spline imports no scipy.linalg) gives
    scipy.linalg.solve_banded's (LAPACK's dgtsv) results bit for bit on random systems, diagonally dominant
    (no row interchange) and not (interchanges), and refuses a singular system as it does."""
    from scipy.linalg import solve_banded

    from mbkron.numerics.functions import _solve_tridiagonal

    rng = np.random.default_rng(41)
    for n in (2, 3, 5, 12, 40):
        for scale in (0.1, 3.0):  # off-diagonals small (no interchange) or large (interchanges)
            for _ in range(50):
                lower, upper = scale * rng.normal(size=n - 1), scale * rng.normal(size=n - 1)
                diagonal, rhs = rng.normal(size=n) + np.sign(rng.normal(size=n)), rng.normal(size=n)
                banded = np.zeros((3, n))
                banded[0, 1:], banded[1], banded[2, :-1] = upper, diagonal, lower
                assert np.array_equal(_solve_tridiagonal(lower, diagonal, upper, rhs), solve_banded((1, 1), banded, rhs))
    singular = np.zeros(3)
    for solve in (lambda: _solve_tridiagonal(np.zeros(2), singular, np.zeros(2), np.ones(3)),
                  lambda: solve_banded((1, 1), np.zeros((3, 3)), np.ones(3))):
        with pytest.raises(np.linalg.LinAlgError):
            solve()
