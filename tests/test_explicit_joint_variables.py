"""Explicit joint variables in one compiled kernel (mbkron.numerics.tabulated, Section 3-1): a map of affine rows,
empirical functions of one coordinate of every kind and expressions, against closed forms (functions chosen so that
their values are known exactly: a cubic spline through a cubic, a GCV spline through a polynomial of degree below
its half order, a literal Fourier sum, a step function between its knots), sympy's own derivatives evaluated by
``sympy.lambdify``, and finite differences; and the one-call forward dynamics of such a model against the literal
Kronecker forms of M, N, G (mbkron.reference, Eq. 145, 126, 187).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.algorithms.jointvars.explicit import JointVariables, SymbolicJointVariables
from mbkron.numerics.functions import AffineMapped, CubicSpline, FourierSeries, PiecewiseConstant
from mbkron.algorithms.jointvars.functions import CoordinateFunctionVariables
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.numerics.gcvspl import GCVSpline
from mbkron.model.builder import ModelBuilder
from tests.test_dynamics import _literal_terms

KNOTS = np.linspace(-1.5, 1.5, 9)
STEP_KNOTS = np.array([-1.0, -0.2, 0.3, 1.1])
STEP_VALUES = np.array([0.4, -0.3, 0.9, 0.1])
FOURIER = (2.5, 0.3, [0.7, -0.2], [0.1, 0.5])  # period, a0, a, b
GCV_POLYNOMIAL = np.polynomial.Polynomial([2.0, -1.0, 0.5])  # degree 2 < half order 3: reproduced everywhere
MAPS = ((0.7, 0.1, 1.3, -0.2), (1.1, 0.05, 0.9, 0.3))  # inner, outer: (c, d, a, b) of a·G(c·x + d) + b


def _functions():
    """``(function, closed form)`` pairs: the closed form returns ``(F, F', F'')`` at a float."""
    cubic = CubicSpline(KNOTS, KNOTS**3 - KNOTS, "fmm")  # reproduces a cubic inside its knots
    gcv = GCVSpline(KNOTS, GCV_POLYNOMIAL(KNOTS), half_order=3)
    period, a0, a, b = FOURIER

    def polynomial(x):
        return GCV_POLYNOMIAL(x), GCV_POLYNOMIAL.deriv(1)(x), GCV_POLYNOMIAL.deriv(2)(x)

    def fourier(x):
        w = 2 * math.pi / period
        terms = [(a_k * math.cos(k * w * x) + b_k * math.sin(k * w * x), k * w * (b_k * math.cos(k * w * x)
                  - a_k * math.sin(k * w * x)), -(k * w) ** 2 * (a_k * math.cos(k * w * x) + b_k * math.sin(k * w * x)))
                 for k, a_k, b_k in zip((1, 2), a, b)]
        return a0 + sum(t[0] for t in terms), sum(t[1] for t in terms), sum(t[2] for t in terms)

    def mapped(x):
        (c1, d1, a1, b1), (c2, d2, a2, b2) = MAPS
        g, g1, g2 = polynomial(c1 * (c2 * x + d2) + d1)
        return a2 * (a1 * g + b1) + b2, a2 * c2 * a1 * c1 * g1, a2 * c2**2 * a1 * c1**2 * g2

    def step(x):
        return STEP_VALUES[np.searchsorted(STEP_KNOTS, x) - 1] if x > STEP_KNOTS[0] else STEP_VALUES[0], 0.0, 0.0

    inner = AffineMapped(gcv, MAPS[0][:2], MAPS[0][2:])
    return [(cubic, lambda x: (x**3 - x, 3 * x**2 - 1, 6 * x)), (gcv, polynomial),
            (FourierSeries(*FOURIER), fourier), (AffineMapped(inner, MAPS[1][:2], MAPS[1][2:]), mapped),
            (PiecewiseConstant(STEP_KNOTS, STEP_VALUES), step)]


SYMBOLS = sympy.symbols("q0 q1 q2")
EXPRESSIONS = (sympy.sin(SYMBOLS[0]) * SYMBOLS[1] + SYMBOLS[2] ** 2,
               sympy.exp(0.3 * SYMBOLS[1]) - sympy.cos(SYMBOLS[0] * SYMBOLS[2]))


def _map():
    """Rows 0 and 5 affine, 1 2 3 4 6 functions of coordinates 2 0 1 2 0, 7 and 8 the expressions."""
    functions = [f for f, _ in _functions()]
    columns, rows = [2, 0, 1, 2, 0], np.array([1, 2, 3, 4, 6])
    matrix = np.zeros((9, 3))
    matrix[0], matrix[5] = [1.0, -1.0, 0.5], [0.0, 0.5, 2.0]
    constant = np.array([0.1, 0, 0, 0, 0, -0.3, 0, 0, 0])
    providers = ((rows, CoordinateFunctionVariables(functions, columns, 3)),
                 (np.array([7, 8]), SymbolicJointVariables(EXPRESSIONS, SYMBOLS)))
    return JointVariables(matrix, constant, providers), matrix, constant, columns, rows


def _expected(q):
    """``f``, ``∇f``, ``H`` of :func:`_map` at one state by the closed forms and sympy's derivatives."""
    _, matrix, constant, columns, rows = _map()
    f, grad, hess = matrix @ q + constant, matrix.copy(), np.zeros((9, 3, 3))
    for row, column, (_, closed) in zip(rows, columns, _functions()):
        f[row], grad[row, column], hess[row, column, column] = closed(q[column])
    for row, e in zip((7, 8), EXPRESSIONS):
        f[row] = sympy.lambdify(SYMBOLS, e)(*q)
        grad[row] = [sympy.lambdify(SYMBOLS, sympy.diff(e, s))(*q) for s in SYMBOLS]
        hess[row] = [[sympy.lambdify(SYMBOLS, sympy.diff(e, s, t))(*q) for t in SYMBOLS] for s in SYMBOLS]
    return f, grad, hess


def _states(rng, shape):
    """States away from the step function's knots (where its value is a choice of OpenSim's bisection)."""
    q = rng.uniform(-1.4, 1.4, shape)
    return np.where(np.min(np.abs(q[..., None] - STEP_KNOTS), axis=-1) < 1e-3, 0.05, q)


def test_values_gradients_hessians_and_convective_terms_are_the_closed_forms():
    """One state and a batch: ``f``, ``∇f``, ``H`` of every row against closed forms and sympy, and the convective
    terms ``q̇ᵀ H_j q̇`` against the contraction of the expected ``H``; the batch equals the states one by one, bit
    for bit."""
    joint_variables = _map()[0]
    rng = np.random.default_rng(11)
    batch = _states(rng, (4, 2, 3))
    qd = rng.normal(size=(4, 2, 3))
    together = joint_variables.evaluate(batch, 2)
    convective_together = joint_variables.evaluate_convective(batch, qd)
    for index in np.ndindex(4, 2):
        q = batch[index]
        f, grad, hess = joint_variables.evaluate(q, 2)
        expected_f, expected_grad, expected_hess = _expected(q)
        np.testing.assert_allclose(f, expected_f, rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(hess, expected_hess, rtol=1e-12, atol=1e-12)
        cf, cgrad, convective = joint_variables.evaluate_convective(q, qd[index])
        np.testing.assert_allclose(convective, np.einsum("jkl,k,l->j", expected_hess, qd[index], qd[index]),
                                   rtol=1e-12, atol=1e-12)
        for got, alone in zip((*together, *convective_together), (f, grad, hess, cf, cgrad, convective)):
            np.testing.assert_array_equal(got[index], alone)
        np.testing.assert_array_equal(cf, f)
        np.testing.assert_array_equal(cgrad, grad)


def test_derivatives_are_the_finite_differences_of_the_values():
    """Central differences of the kernel's own ``f`` (step 1e-6) give its ``∇f``, and of its ``∇f`` its ``H``."""
    joint_variables = _map()[0]
    q = _states(np.random.default_rng(12), 3)
    f, grad, hess = joint_variables.evaluate(q, 2)
    h = 1e-6
    for k in range(3):
        step = np.zeros(3)
        step[k] = h
        plus, minus = joint_variables.evaluate(q + step, 1), joint_variables.evaluate(q - step, 1)
        np.testing.assert_allclose((plus[0] - minus[0]) / (2 * h), grad[:, k], rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose((plus[1] - minus[1]) / (2 * h), hess[:, :, k], rtol=1e-6, atol=1e-7)


def test_each_provider_alone_is_its_rows_of_the_map():
    """A provider's own ``evaluate`` (the map of it alone) gives its rows of the whole map, bit for bit; order 0 and
    1 leave out what they do not ask for."""
    joint_variables, *_ = _map()
    q = _states(np.random.default_rng(13), (5, 3))
    f, grad, hess = joint_variables.evaluate(q, 2)
    for rows, provider in joint_variables.providers:
        pf, pgrad, phess = provider.evaluate(q, 2)
        np.testing.assert_array_equal(pf, f[:, rows])
        np.testing.assert_array_equal(pgrad, grad[:, rows])
        np.testing.assert_array_equal(phess, hess[:, rows])
        assert provider.evaluate(q, 0)[1] is None and provider.evaluate(q, 1)[2] is None


def test_expression_callbacks_are_cached_on_disk(tmp_path, monkeypatch):
    """The callback of joint variables given as expressions is a module written under ``MBKRON_CACHE_DIR`` by the
    first evaluation (not by building the provider), holding the printed values."""
    monkeypatch.setenv("MBKRON_CACHE_DIR", str(tmp_path))
    q0, q1 = sympy.symbols("q0 q1")
    provider = SymbolicJointVariables([sympy.atan(q0 - 0.123456789 * q1)], (q0, q1))
    assert list(tmp_path.glob("mbkron_kernels_*.py")) == []
    f, grad, _ = provider.evaluate(np.array([0.3, 0.2]), 1)
    np.testing.assert_allclose(f, [math.atan(0.3 - 0.123456789 * 0.2)], rtol=1e-15)
    np.testing.assert_allclose(grad[0], np.array([1.0, -0.123456789]) / (1 + (0.3 - 0.123456789 * 0.2) ** 2),
                               rtol=1e-14)
    (module,) = tmp_path.glob("mbkron_kernels_*.py")
    assert "def values(x, out, data):" in module.read_text()


def test_a_spline_of_several_columns_is_not_one_function():
    """A GCV spline fitted to ``k`` columns is ``k`` functions: refused as the function of a joint variable, naming
    ``y`` and its shape."""
    x = np.linspace(0.0, 1.0, 6)
    spline = GCVSpline(x, np.stack([x, x**2], axis=-1), half_order=2)
    with pytest.raises(ValueError, match=r"`y` of shape \(6, 2\)"):
        CoordinateFunctionVariables([spline], [0], 1).evaluate(np.zeros(1), 0)


def _model():
    """Three bodies whose joint variables are a GCV spline, a Fourier series of a coordinate and an expression."""
    q0, q1 = sympy.symbols("q0 q1")
    b = ModelBuilder(name="explicit")
    b.add_coordinate("q0", range=(-2.0, 2.0)).add_coordinate("q1", range=(-2.0, 2.0))
    b.add_body("a", axis=(0, 0, 1), variable="q0", mass=2.0, com=(0.15, 0.02, 0), inertia=np.diag([0.01, 0.02, 0.03]))
    b.add_body("b", parent="a", axis=(0, 1, 0), variable=CoordinateFunction(GCVSpline(KNOTS, np.sin(KNOTS), 2), "q1"),
               offset=(0.3, 0, 0), mass=1.2, com=(0.1, 0.01, 0.02), inertia=np.diag([0.004, 0.007, 0.005]))
    b.add_body("c", parent="b", joint="prismatic", axis=(1, 0, 0),
               variable=CoordinateFunction(FourierSeries(*FOURIER), "q0"), offset=(0.2, 0, 0), mass=0.7,
               com=(0.05, 0.0, 0.01), inertia=np.diag([0.002, 0.003, 0.002]))
    b.add_body("d", parent="c", axis=(0, 0, 1), variable=sympy.sin(q0) * q1 + 0.2 * q1**2, offset=(0.1, 0, 0),
               mass=0.4, com=(0.04, 0.01, 0.0), inertia=np.diag([0.001, 0.001, 0.002]))
    return b.build()


def test_one_call_dynamics_of_explicit_joint_variables_are_the_literal_terms():
    """``M``, ``N q̇``, ``G`` (one kernel call with the joint variables), ``q̈ = M⁻¹(G − N q̇)`` and the inverse
    dynamics of a model whose joint variables are a GCV spline, a Fourier series and an expression, against the
    literal Kronecker forms (Eq. 145, 126, 187); a batch of states equals them one by one."""
    model = _model()
    rng = np.random.default_rng(14)
    states = rng.uniform(-1.2, 1.2, size=(3, 3, 2))
    for q, qd, qdd in states:
        M, N, G = _literal_terms(model, q, qd)
        np.testing.assert_allclose(model.mass_matrix(q), M, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(model.velocity_forces(q, qd), N @ qd, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(model.gravity_forces(q), G, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(model.forward_dynamics(q, qd), np.linalg.solve(M, G - N @ qd), rtol=1e-10,
                                   atol=1e-11)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), M @ qdd + N @ qd - G, rtol=1e-11, atol=1e-12)
    batch = model.forward_dynamics(states[:, 0], states[:, 1])
    for (q, qd, _), row in zip(states, batch):
        np.testing.assert_allclose(row, model.forward_dynamics(q, qd), rtol=1e-13, atol=1e-14)


def test_a_simulation_of_explicit_joint_variables_keeps_its_energy():
    """Without loads other than gravity the total energy of the model is conserved along an accurate run (an
    independent check of the forward dynamics' convective terms)."""
    model = _model()
    run = mbkron.simulate(model, (0.0, 0.4), np.array([0.3, -0.2]), np.array([0.5, 1.0]), method="DOP853",
                          rtol=1e-10, atol=1e-10)
    def energy(q, qd):  # ½ q̇ᵀ M q̇ by the literal M (Eq. 145), and the bodies' heights in gravity
        return 0.5 * qd @ _literal_terms(model, q, qd)[0] @ qd - sum(
            b.mass * model.gravity @ model.point_position(b.name, b.com, q) for b in model.body_records)

    energy = [energy(q, qd) for q, qd in zip(run.q, run.qd)]
    assert run.success and len(energy) > 5
    np.testing.assert_allclose(energy, energy[0], rtol=0, atol=1e-7 * (1 + abs(energy[0])))


def test_a_step_function_at_its_interior_knots_takes_opensims_bisection_values():
    """At interior knots OpenSim's ``PiecewiseConstantFunction`` returns the value its bisection ends on: worked by
    hand for knots 0 … 4 (k = (i + j)/2 from i = 0, j = 5 until x_k ≤ t ≤ x_{k+1}): t = 1 ends on k = 1, t = 2 on
    k = 2, t = 3 on k = 2; within 2e-13 of the end knots the end values."""
    step = PiecewiseConstant(np.arange(5.0), [10.0, 11.0, 12.0, 13.0, 14.0])
    values, first, second = step.evaluate(np.array([1.0, 2.0, 3.0, 1e-13, 4.0 - 1e-13, 0.5, 3.5]))
    np.testing.assert_array_equal(values, [11.0, 12.0, 12.0, 10.0, 14.0, 10.0, 13.0])
    np.testing.assert_array_equal(first, 0.0)
    np.testing.assert_array_equal(second, 0.0)
