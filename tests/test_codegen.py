"""Tests of mbkron.expressions.codegen: generated functions against sympy's own 30-digit evaluation."""

from __future__ import annotations

import math
import random

import mpmath
import numpy as np
import pytest
import sympy

from mbkron.expressions import ExpressionError, parse_expression
from mbkron.expressions.codegen import (
    compile_source,
    exact_to_float,
    numpy_function,
    numpy_source,
    scalar_function,
    scalar_source,
)

NAMES = ("x", "y", "a")
SYMBOLS = [sympy.Symbol(name, real=True) for name in NAMES]
RTOL = 1e-13


def exact(expr: sympy.Expr, point) -> float:
    """``expr`` at ``point`` (values of x, y, a) with 30-digit sympy arithmetic.

    sympy's ``atan2`` may leave an imaginary part at the level of the working precision.
    """
    value = complex(expr.evalf(30, subs=dict(zip(SYMBOLS, map(sympy.Float, point)))))
    assert abs(value.imag) <= 1e-25 * abs(value), (expr, point, value)
    return value.real


# --------------------------------------------------------------------------------------------
# Random well-conditioned expressions of the grammar.
# --------------------------------------------------------------------------------------------
def positive_expression(rng: random.Random, leaves: int) -> str:
    """Text of a random grammar expression that is positive for positive x, y, a.

    Every operation is well conditioned on the values it receives (relative condition number at
    most about 2), so that its double-precision value is within a few rounding errors per
    operation of the exact one: sums of positive terms, products, quotients, small powers, and each
    function of the grammar applied where it is well conditioned (``sin`` and ``tan`` on
    ``(0, pi/2)``, ``cos`` on ``(0, pi/4)``, ``asin``/``acos`` on ``(0, 1/2)``, ``exp`` and
    ``log`` of bounded or shifted arguments).
    """
    if leaves <= 1:
        return rng.choice(["x", "y", "a", "pi", "2", "7", "0.5", "1.25e-1", "3.75", "(2/3)"])
    split = rng.randint(1, leaves - 1)
    left, right = positive_expression(rng, split), positive_expression(rng, leaves - split)  # parenthesized
    angle = f"atan({left})"  # in (0, pi/2)
    small = f"(sin({angle})/2)"  # in (0, 1/2)
    forms = [
        f"{left} + {right}",
        f"{left}*{right}",
        f"{left}/{right}",
        f"{left}**{rng.choice(['2', '3', '-1', '-2', '(1/2)', '(-1/2)', '(1/3)', '1.5'])}",
        f"sqrt({left}*{right})",
        f"abs(-{left}) + {right}",
        f"-(-{left} - {right})",
        f"sin({angle})*{right}",
        f"cos({angle}/2)*{right}",
        f"tan({angle}/2) + {right}",
        f"asin({small}) + {right}",
        f"acos({small})*{right}",
        f"atan2({left}, {right})",
        f"exp({angle})*{right}",
        f"exp(-{angle}) + {right}",
        f"log(2 + {left})*{right}",
        f"{right}*exp(log({left}))",
    ]
    return f"({rng.choice(forms)})"


def random_expressions(seed: int, count: int) -> list[sympy.Expr]:
    rng = random.Random(seed)
    names = dict(zip(NAMES, SYMBOLS))
    return [parse_expression(positive_expression(rng, rng.randint(1, 9)), names) for _ in range(count)]


def random_points(seed: int, count: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=(count, len(NAMES)))


def representable(value: float) -> bool:
    return 1e-300 < abs(value) < 1e300


@pytest.mark.parametrize("seed", range(6))
def test_numpy_function_equals_sympy_on_random_expressions(seed):
    expressions = random_expressions(seed, 40)
    points = random_points(seed, 4)
    function = numpy_function(SYMBOLS, expressions)
    values = function(*points.T)  # arrays of 4 states each
    checked = 0
    for expr, value in zip(expressions, values):
        for point, computed in zip(points, np.broadcast_to(value, (len(points),))):
            expected = exact(expr, point)
            if representable(expected):
                np.testing.assert_allclose(computed, expected, rtol=RTOL, err_msg=str(expr))
                checked += 1
    assert checked > 0.9 * len(expressions) * len(points)


@pytest.mark.parametrize("seed", range(6))
def test_scalar_function_equals_sympy_on_random_expressions(seed):
    expressions = random_expressions(100 + seed, 40)
    function = scalar_function(SYMBOLS, expressions)
    for point in random_points(seed, 3):
        out = np.zeros(len(expressions))
        assert function(list(point), out) == 0
        for expr, computed in zip(expressions, out):
            expected = exact(expr, point)
            if representable(expected):
                np.testing.assert_allclose(computed, expected, rtol=RTOL, err_msg=str(expr))


def test_numba_compiles_the_scalar_function():
    numba = pytest.importorskip("numba")
    expressions = random_expressions(7, 12)
    source = scalar_source("values", SYMBOLS, expressions)
    compiled = numba.njit(compile_source(source, "values"))
    point = random_points(7, 1)[0]
    out = np.zeros(len(expressions))
    compiled(point, out)
    expected = [exact(expr, point) for expr in expressions]
    np.testing.assert_allclose(out, expected, rtol=RTOL)


def test_arrays_broadcast():
    x, y, a = SYMBOLS
    expressions = [x * sympy.sin(y) + a, sympy.atan2(y, x), a**2, sympy.Integer(3)]
    function = numpy_function(SYMBOLS, expressions)
    xs = np.array([0.5, 1.0, 1.5])[:, None]  # (3, 1)
    ys = np.array([0.25, -0.75])  # (2,)
    values = function(xs, ys, 2.0)
    assert np.shape(values[0]) == np.shape(values[1]) == (3, 2)
    assert values[2] == 4.0 and values[3] == 3.0
    for i, xv in enumerate(xs[:, 0]):
        for j, yv in enumerate(ys):
            for expr, value in zip(expressions[:2], values[:2]):
                assert value[i, j] == pytest.approx(exact(expr, (xv, yv, 2.0)), rel=RTOL)


# --------------------------------------------------------------------------------------------
# Numbers: double literals only.
# --------------------------------------------------------------------------------------------
def correctly_rounded(numerator: int, denominator: int) -> float:
    """``numerator/denominator`` rounded once to 53 bits by mpmath (not by Python's int division)."""
    return mpmath.libmp.to_float(mpmath.libmp.from_rational(numerator, denominator, 53, "n"))


@pytest.mark.parametrize(
    ("numerator", "denominator"),
    [(1, 3), (-2, 7), (10**400 + 1, 10**399), (-(10**400), 3), (1, 10**400), (2**1024 - 1, 1),
     (-(2**1024) + 1, 1), (123456789123456789123456789, 1000000007), (3, 2**1080)],
)
def test_exact_to_float(numerator, denominator):
    value = exact_to_float(numerator, denominator)
    if abs(sympy.Rational(numerator, denominator)) >= 2**1024 - 2**970:  # rounds beyond the largest double
        assert value == (math.inf if numerator > 0 else -math.inf)
    else:
        assert value == correctly_rounded(numerator, denominator)


def test_numbers_are_printed_as_doubles():
    x = SYMBOLS[0]
    huge = sympy.Integer(10) ** 400
    expressions = [
        sympy.Rational(10**400 + 1, 10**399) * x,  # sympy's printer would divide inf by inf
        huge * x,
        -huge * x,
        sympy.Rational(1, 10**400) * x,
        sympy.pi * x,
        sympy.E * x,
        sympy.EulerGamma * x,
        x + sympy.Rational(2, 3),
    ]
    source = numpy_source("f", [x], expressions)
    assert "**400" not in source and "10000000000" not in source
    values = numpy_function([x], expressions)(1.0)
    assert values[0] == 10.0
    assert values[1] == math.inf and values[2] == -math.inf and values[3] == 0.0
    assert values[4] == math.pi and values[5] == math.e
    assert values[6] == float(mpmath.euler)
    assert values[7] == 1.0 + 2 / 3


def test_constants_are_evaluated_in_double_precision():
    x = SYMBOLS[0]
    # sympy's arbitrary-precision evaluation of sin(exp(exp(20))) does not finish; the overflow is the point
    with np.errstate(over="ignore", invalid="ignore"):
        values = numpy_function([x], [sympy.sin(sympy.exp(sympy.exp(20))) + x, sympy.exp(sympy.Integer(1000))])(0.5)
    assert math.isnan(values[0]) and values[1] == math.inf


def test_undefined_values_numpy_nan_scalar_raises():
    x = SYMBOLS[0]
    expressions = [sympy.log(x), x ** sympy.Rational(3, 2), sympy.asin(x)]
    with np.errstate(all="ignore"):
        values = numpy_function([x], expressions)(np.array([-2.0, 0.25]))
    for expr, value in zip(expressions, values):
        assert math.isnan(value[0])
        assert value[1] == pytest.approx(exact(expr, (0.25, 0, 0)), rel=RTOL)
    for expr in expressions:
        with pytest.raises(ValueError):
            scalar_function([x], [expr])([-2.0], np.zeros(1))


def test_scalar_function_skips_zero_entries():
    x, y, _ = SYMBOLS
    function = scalar_function([x, y], [x * y, sympy.S.Zero, sympy.Float(0.0), y])
    out = np.full(4, -7.0)
    function([2.0, 3.0], out)
    np.testing.assert_array_equal(out, [6.0, -7.0, -7.0, 3.0])


# --------------------------------------------------------------------------------------------
# Large expressions, common subexpressions, caching, errors.
# --------------------------------------------------------------------------------------------
def test_long_sums_and_deep_nesting_compile():
    x = SYMBOLS[0]
    long_sum = sympy.Add(*(sympy.sin(k * x) for k in range(1, 3001)))  # a flat Python sum this long does not compile
    nested = x
    for _ in range(150):  # nor do 150 nested calls
        nested = sympy.atan(nested + 1)
    values = numpy_function([x], [long_sum, nested])(0.3)
    assert values[0] == pytest.approx(math.fsum(math.sin(k * 0.3) for k in range(1, 3001)), rel=1e-12)
    expected = 0.3
    for _ in range(150):
        expected = math.atan(expected + 1)
    assert values[1] == pytest.approx(expected, rel=RTOL)


def test_common_subexpressions_are_computed_once():
    x, y, _ = SYMBOLS
    shared = sympy.sin(x * y)
    source = numpy_source("f", [x, y], [shared**2, shared + x, sympy.cos(shared)])
    assert source.count("numpy.sin") == 1


def test_functions_are_cached_by_source_text():
    x, y, _ = SYMBOLS
    first = numpy_function([x, y], [x + y])
    assert numpy_function([x, y], [x + y]) is first
    # other symbols in the same places print the same source
    assert numpy_function(sympy.symbols("u v"), [sum(sympy.symbols("u v"))]) is first


def test_generated_code_sees_only_math_and_numpy():
    x = SYMBOLS[0]
    function = scalar_function([x], [sympy.sin(x)], name="only")
    assert set(function.__globals__) == {"__builtins__", "math", "numpy", "only"}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (sympy.DiracDelta(SYMBOLS[0]), "DiracDelta"),
        (sympy.Function("f")(SYMBOLS[0]), "f"),
        (sympy.I * SYMBOLS[0], "`I`"),
    ],
)
def test_expressions_without_numeric_implementation_are_refused(expression, message):
    with pytest.raises(ExpressionError, match=message):
        numpy_source("f", SYMBOLS, [expression])
    with pytest.raises(ExpressionError, match=message):
        scalar_source("f", SYMBOLS, [expression])


def test_arguments_are_checked():
    x, y, _ = SYMBOLS
    with pytest.raises(ValueError, match=r"`expressions` use y, which are not among `symbols`"):
        numpy_source("f", [x], [x + y])
    with pytest.raises(ValueError, match="`symbols` must not repeat"):
        numpy_source("f", [x, x], [x])
    with pytest.raises(TypeError, match="`symbols` must be sympy symbols"):
        numpy_source("f", ["x"], [x])
    with pytest.raises(TypeError, match="`expressions` must be sympy expressions or numbers, got str"):
        numpy_source("f", [x], ["x + 1"])
