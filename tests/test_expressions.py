"""Tests of mbkron.expressions: the whitelist parser and printer for model-file expressions."""

from __future__ import annotations

import builtins
import math
import pickle
import re
import sys
import types

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mbkron.expressions import ExpressionError, check_name, format_expression, free_names, parse_expression
from mbkron.expressions.parser import MAX_EXPONENT

NAMES = ("q1", "q2", "a", "b", "x", "y")
POINT = {"q1": 0.3, "q2": -1.2, "a": 2.5, "b": 0.7, "x": 1.5, "y": -0.4}
SYMBOLS = {name: sympy.Symbol(name, real=True) for name in NAMES}
#: Settings of the property tests: no example database, no deadline and no `too_slow` health check
#: (wall-clock limits, which would make the outcome depend on the machine).
PROPERTIES = settings(database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def evaluate(expr: sympy.Expr, point: dict[str, float] = POINT) -> complex:
    """Evaluate ``expr`` at ``point`` with 30-digit sympy arithmetic."""
    value = expr.evalf(30, subs={SYMBOLS[name]: value for name, value in point.items()})
    return complex(value)


def short_id(value: object) -> str | None:
    """Readable test ids for long string parameters."""
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:30]}...({len(value)} chars)"
    return None


def parse(text: str, **kwargs) -> sympy.Expr:
    return parse_expression(text, NAMES, **kwargs)


def assert_rejected(text: str, fragment: str = "", column: int | None = None, **kwargs) -> ExpressionError:
    with pytest.raises(ExpressionError) as info:
        parse(text, **kwargs)
    error = info.value
    assert fragment in str(error), str(error)
    if column is not None:
        assert error.column == column, str(error)
        assert f"at column {column}:" in str(error)
    return error


# --------------------------------------------------------------------------------------------
# Valid expressions, checked against values computed independently with the math module.
# --------------------------------------------------------------------------------------------
q1, q2, a, b, x, y = (POINT[name] for name in NAMES)
VALUES = [
    ("0.2*sin(q1) - atan2(y, x)**2 + pi/2", 0.2 * math.sin(q1) - math.atan2(y, x) ** 2 + math.pi / 2),
    ("2**3**2", 512.0),
    ("-2**2", -4.0),
    ("(-2)**2", 4.0),
    ("2**-1", 0.5),
    ("2**-3**2", 2.0 ** -(3.0**2)),
    ("-x**2", -(x**2)),
    ("a/b/x", (a / b) / x),
    ("a/(b/x)", a / (b / x)),
    ("a - b - x", (a - b) - x),
    ("a - (b - x)", a - (b - x)),
    ("a*b/x*y", ((a * b) / x) * y),
    ("a + b*x**2", a + b * x**2),
    ("(a + b)*x", (a + b) * x),
    ("--x", x),
    ("+x", x),
    ("-+-x", x),
    ("- - -x", -x),
    ("1.5e-3*a", 1.5e-3 * a),
    ("1E3 + 2.5e+2", 1250.0),
    (".5*x", 0.5 * x),
    ("3.*x", 3.0 * x),
    ("x**0.5", x**0.5),
    ("x**y", x**y),
    ("7/2*a", 3.5 * a),
    ("  a\t*\n b ", a * b),
    ("(((a)))", a),
    ("pi", math.pi),
    ("exp(1)", math.e),
    ("sin(q1)", math.sin(q1)),
    ("cos(q1)", math.cos(q1)),
    ("tan(q1)", math.tan(q1)),
    ("asin(b)", math.asin(b)),
    ("acos(b)", math.acos(b)),
    ("atan(q2)", math.atan(q2)),
    ("atan2(q2, -x)", math.atan2(q2, -x)),
    ("exp(-q1)", math.exp(-q1)),
    ("log(a)", math.log(a)),
    ("sqrt(a)", math.sqrt(a)),
    ("abs(q2)", abs(q2)),
    ("cos(q1)**2 + sin(q1)**2", 1.0),
    ("a*cos(q1) + b*cos(q1 + q2)", a * math.cos(q1) + b * math.cos(q1 + q2)),
    ("sqrt(x**2 + y**2) - abs(atan2(y, x))/pi", math.hypot(x, y) - abs(math.atan2(y, x)) / math.pi),
    ("exp(log(a)*b)", a**b),
    ("1/3 + 2/3", 1.0),
    ("2*(x + 1) - 2*x", 2.0),
]


@pytest.mark.parametrize(("text", "expected"), VALUES)
def test_values_match_math_module(text, expected):
    assert evaluate(parse(text)) == pytest.approx(expected, rel=1e-14, abs=1e-14)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2**3**2", sympy.Integer(512)),
        ("2**10", sympy.Integer(1024)),
        ("1/3", sympy.Rational(1, 3)),
        ("-1/3", sympy.Rational(-1, 3)),
        ("2**-1", sympy.Rational(1, 2)),
        ("x**2", SYMBOLS["x"] ** 2),
        ("sqrt(4)", sympy.Integer(2)),
        ("0.1", sympy.Float(0.1)),
        ("1e3", sympy.Float(1000.0)),
        ("pi/2", sympy.pi / 2),
        ("exp(1)", sympy.E),
        ("a/b/x", SYMBOLS["a"] / SYMBOLS["b"] / SYMBOLS["x"]),
        ("atan2(y, x)", sympy.atan2(SYMBOLS["y"], SYMBOLS["x"])),
        ("abs(x)", sympy.Abs(SYMBOLS["x"])),
    ],
)
def test_exact_results(text, expected):
    result = parse(text)
    assert result == expected
    assert type(result) is type(expected)


def test_integer_exponents_stay_exact_and_floats_are_doubles():
    exponent = parse("x**2").exp
    assert isinstance(exponent, sympy.Integer) and exponent == 2  # not a Float
    assert parse("x**2.0").exp == sympy.Float(2.0)
    assert float(parse("0.1")) == 0.1
    assert float(parse("1.7976931348623157e308")) == sys.float_info.max
    assert float(parse("2.2250738585072014e-308")) == sys.float_info.min
    assert_rejected("5e-324", "outside the double-precision range")  # subnormal


def test_symbols_are_real_by_default_and_mapping_symbols_are_used():
    assert parse("x").is_real
    custom = sympy.Symbol("x")
    assert parse_expression("2*x", {"x": custom}) == 2 * custom
    assert parse_expression("θ1 + 1", ["θ1"]).free_symbols == {sympy.Symbol("θ1", real=True)}


# --------------------------------------------------------------------------------------------
# Functions and arity.
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("sin", math.sin),
        ("cos", math.cos),
        ("tan", math.tan),
        ("asin", math.asin),
        ("acos", math.acos),
        ("atan", math.atan),
        ("exp", math.exp),
        ("log", math.log),
        ("sqrt", math.sqrt),
        ("abs", abs),
    ],
)
def test_every_unary_function(name, function):
    assert evaluate(parse(f"{name}(b)")) == pytest.approx(function(b), rel=1e-15)
    assert evaluate(parse(f"{name}(0.25)")) == pytest.approx(function(0.25), rel=1e-15)


def test_atan2_in_all_quadrants():
    for yv, xv in [(1.0, 2.0), (1.0, -2.0), (-1.0, -2.0), (-1.0, 2.0), (0.0, -1.0)]:
        result = evaluate(parse("atan2(y, x)"), {**POINT, "x": xv, "y": yv})
        assert result == pytest.approx(math.atan2(yv, xv), rel=1e-15)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("sin()", "`sin` takes 1 argument (sin(x)), got 0"),
        ("sin(x, y)", "`sin` takes 1 argument (sin(x)), got 2"),
        ("sqrt(x, 2)", "`sqrt` takes 1 argument"),
        ("atan2(x)", "`atan2` takes 2 arguments (atan2(y, x)), got 1"),
        ("atan2(x, y, a)", "`atan2` takes 2 arguments (atan2(y, x)), got 3"),
        ("atan2()", "got 0"),
    ],
)
def test_arity_errors(text, fragment):
    assert_rejected(text, fragment, column=1)


# --------------------------------------------------------------------------------------------
# Rejected input: message, column and offending token.
# --------------------------------------------------------------------------------------------
REJECTED = [
    # unknown names and functions
    ("foo", 1, "unknown name `foo`; expected one of: q1, q2, a, b, x, y (coordinates and parameters)"),
    ("q1 + foo*2", 6, "unknown name `foo`"),
    ("xa", 1, "did you mean `x`?"),
    ("e", 1, "write exp(1) for Euler's number"),
    ("nan", 1, "unknown name `nan`"),
    ("inf", 1, "unknown name `inf`"),
    ("NaN + 1", 1, "unknown name `NaN`"),
    ("Infinity", 1, "unknown name `Infinity`"),
    ("I", 1, "unknown name `I`"),
    ("True", 1, "unknown name `True`"),
    ("None", 1, "unknown name `None`"),
    ("__builtins__", 1, "unknown name `__builtins__`"),
    ("sin", 1, "the function `sin` must be called"),
    ("pi(2)", 1, "`pi` is a constant, not a function"),
    ("q1(2)", 1, "`q1` is not a function"),
    ("__import__('os').system('echo pwned')", 1, "unknown function `__import__`"),
    ('eval("1")', 1, "unknown function `eval`"),
    ("exec('import os')", 1, "unknown function `exec`"),
    ("open('/etc/passwd')", 1, "unknown function `open`"),
    ("getattr(x, '__class__')", 1, "unknown function `getattr`"),
    ("compile('1', 'f', 'eval')", 1, "unknown function `compile`"),
    ("globals()", 1, "unknown function `globals`"),
    ("sympify('x')", 1, "unknown function `sympify`"),
    ("Symbol('x')", 1, "unknown function `Symbol`"),
    ("sign(x)", 1, "unknown function `sign`"),
    ("sin (x) + cosh(x)", 11, "unknown function `cosh`"),
    # disallowed syntax
    ("q1.__class__", 3, "attribute access is not allowed"),
    ("x.real", 2, "attribute access"),
    ("().__class__.__bases__[0]", 2, "unexpected `)`"),
    ("x[0]", 2, "subscripts are not allowed"),
    ("[x]", 1, "subscripts are not allowed"),
    ("{x}", 1, "braces are not allowed"),
    ("lambda: 1", 1, "unknown name `lambda`"),
    ("(lambda: 1)()", 2, "unknown name `lambda`"),
    ("[x for x in y]", 1, "subscripts"),
    ("sin(x for x in y)", 7, "unexpected `for`"),
    ("f'{x}'", 1, "unknown name `f`"),
    ("b'x'", 2, "strings are not allowed"),
    ("'x'", 1, "strings are not allowed"),
    ('"x"', 1, "strings are not allowed"),
    ("x < y", 3, "comparisons are not allowed"),
    ("x == y", 3, "comparisons"),
    ("x != y", 3, "comparisons"),
    ("x and y", 3, "unexpected `and`"),
    ("x or y", 3, "Python keywords are not allowed"),
    ("not x", 1, "unknown name `not`"),
    ("x if y else a", 3, "unexpected `if`"),
    ("(x := 1)", 4, "assignment expressions are not allowed"),
    ("x = 1", 3, "assignments"),
    ("sin(*x)", 5, "unexpected `*`"),
    ("atan2(*[x, y])", 7, "unexpected `*`"),
    ("atan2(**x)", 7, "unexpected `**`"),
    ("atan2(y=1, x=2)", 8, "keyword arguments"),
    ("x^2", 2, "use ** for powers"),
    ("x // 2", 3, "floor division `//` is not allowed"),
    ("x % 2", 3, "the % operator is not allowed"),
    ("x @ y", 3, "matrix multiplication"),
    ("x & y", 3, "bitwise"),
    ("~x", 1, "bitwise"),
    ("x; y", 2, "only a single expression"),
    ("x # comment", 3, "comments are not allowed"),
    ("x \\\n + 1", 3, "backslashes"),
    ("x, y", 2, "unexpected `,`"),
    ("sin(x,)", 7, "unexpected `)`"),
    ("(x, y)", 3, "expected an operator or `)`"),
    ("x y", 3, "implicit multiplication is not allowed"),
    ("2 x", 3, "implicit multiplication"),
    ("x (y)", 1, "`x` is not a function"),
    ("2 (y)", 3, "implicit multiplication"),
    ("(x", 3, "missing `)` to close the `(` at column 1"),
    ("sin(x", 6, "missing `)` to close the `(` at column 4"),
    ("x)", 2, "unexpected `)`"),
    ("()", 2, "unexpected `)`"),
    ("x +", 4, "unexpected end of the expression"),
    ("x ** ", 6, "unexpected end"),
    ("* x", 1, "unexpected `*`"),
    ("$x", 1, "unexpected character `$`"),
    ("x?", 2, "unexpected character `?`"),
    ("`x`", 1, "unexpected character"),
    # numbers
    ("2x", 1, "malformed number `2x`"),
    ("1_000", 1, "underscores in numbers are not allowed"),
    ("1j", 1, "complex numbers are not allowed"),
    ("2.5J", 1, "complex numbers"),
    ("0x1F", 1, "only decimal numbers"),
    ("0b101", 1, "only decimal numbers"),
    ("0o17", 1, "only decimal numbers"),
    ("007", 1, "leading zeros are not allowed"),
    ("1.2.3", 1, "malformed number `1.2.3`"),
    ("1e", 1, "malformed number `1e`"),
    ("1e+", 1, "malformed number `1e`"),
    ("1ee5", 1, "malformed number"),
    ("1e999", 1, "outside the double-precision range"),
    ("-1e999", 2, "outside the double-precision range"),
    ("1e-400", 1, "outside the double-precision range"),
    ("9" * 400, 1, "is too large; integers must be smaller than 2**1024"),
    ("10**400", 3, "integers must be smaller than 2**1024"),
    ("2**1024", 2, "integers must be smaller than 2**1024"),
    ("1e300*1e300", 1, "outside the double-precision range"),
    ("2**1024.0", 2, "outside the double-precision range"),
    ("exp(1000.0)", 1, "outside the double-precision range"),
    # non-finite and complex values
    ("1/0", 2, "infinite or undefined"),
    ("0/0", 2, "infinite or undefined"),
    ("x/(a - a)", 2, "infinite or undefined"),
    ("1/(1/0)", 5, "infinite or undefined"),
    ("0**-1", 2, "infinite or undefined"),
    ("log(0)", 1, "infinite or undefined"),
    ("log(0.0)", 1, "infinite or undefined"),
    ("atan2(0, 0)", 1, "infinite or undefined"),
    ("tan(pi/2)", 1, "infinite or undefined"),
    ("sqrt(-1)", 1, "complex"),
    ("sqrt(-2.0)", 1, "complex"),
    ("log(-1)", 1, "complex"),
    ("acos(2.0)", 1, "complex"),
    ("(-8)**(1/3)", 5, "complex"),
    ("(-2)**0.5", 5, "complex"),
    # empty input
    ("", None, "empty expression"),
    ("  \t\n ", None, "empty expression"),
]


@pytest.mark.parametrize(("text", "column", "fragment"), REJECTED, ids=short_id)
def test_rejected_input(text, column, fragment):
    error = assert_rejected(text, fragment, column)
    assert error.text == text


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("ｓｉｎ(x)", 1, "not in Unicode NFKC normal form (it would read as `sin`)"),
        ("ｅｖａｌ('1')", 1, "it would read as `eval`"),
        ("ｅｖａｌ", 1, "it would read as `eval`"),
        ("ｐｉ", 1, "it would read as `pi`"),
        ("𝐬𝐢𝐧(x)", 1, "it would read as `sin`"),
        ("𝐱 + 1", 1, "it would read as `x`"),
        ("x１", 1, "it would read as `x1`"),
        ("q１", 1, "it would read as `q1`"),
        ("ﬁ", 1, "it would read as `fi`"),
        ("ℯ", 1, "it would read as `e`"),
        ("e\u0301", 1, "NFKC"),
        ("１２", 1, "U+FF11 FULLWIDTH DIGIT ONE"),
        ("1２", 1, "malformed number"),
        ("x + ٣", 5, "only the ASCII digits 0-9"),
        ("x − y", 3, "U+2212 MINUS SIGN"),
        ("x ＋ y", 3, "write `+` instead"),
        ("x\u00a0+ y", 2, "only ASCII spaces, tabs and line breaks"),
        ("x\u3000+ y", 2, "only ASCII spaces"),
        ("sin（x）", 4, "write `(` instead"),
        ("\u0435val", 1, "U+0435 CYRILLIC SMALL LETTER IE"),
        ("х", 1, "U+0445 CYRILLIC SMALL LETTER HA"),
        ("x\x00", 2, "U+0000"),
        ("x\ud800", 2, "U+D800"),
        ("\u202ex", 1, "U+202E"),
        ("x\u200b", 2, "U+200B"),
    ],
)
def test_unicode_tricks_are_rejected(text, column, fragment):
    error = assert_rejected(text, fragment, column)
    str(error).encode("utf-8")  # the message is printable: no lone surrogates or control characters


def test_error_message_format_and_attributes():
    error = assert_rejected("q1 + 2*foo", column=8)
    assert str(error) == (
        "`q1 + 2*foo` at column 8: unknown name `foo`; expected one of: q1, q2, a, b, x, y "
        "(coordinates and parameters) or pi"
    )
    assert error.reason.startswith("unknown name `foo`")
    assert isinstance(error, ValueError)


def test_error_survives_pickling():
    error = assert_rejected("q1 + 2*foo", column=8)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.reason, copy.text, copy.column) == (str(error), error.reason, error.text, 8)


def test_long_text_is_excerpted_around_the_column():
    text = "x + " * 1000 + "foo" + " + x" * 1000
    error = assert_rejected(text, "unknown name `foo`", column=4001)
    excerpt = str(error).split("`")[1]
    assert "foo" in excerpt and excerpt.startswith("…") and excerpt.endswith("…")
    assert len(excerpt) < 80


def test_many_names_are_abbreviated():
    names = [f"q{i}" for i in range(100)]
    with pytest.raises(ExpressionError, match=r"q19, … \(80 more\)"):
        parse_expression("foo", names)


def test_no_names():
    with pytest.raises(ExpressionError, match="no coordinates or parameters are defined"):
        parse_expression("x", [])
    assert parse_expression("2*pi", []) == 2 * sympy.pi


# --------------------------------------------------------------------------------------------
# Limits: length, nesting, huge numbers, time.
# --------------------------------------------------------------------------------------------
def test_length_limit():
    assert_rejected("x+" * 5000 + "x", "too long (10001 characters; the limit is 10000)")
    assert parse("+".join(["x"] * 50), max_length=100) == 50 * SYMBOLS["x"]
    assert_rejected("x" + " " * 100, "too long", max_length=100)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 10_000 + "x" + ")" * 10_000,
        "(" * 20_000,
        "sin(" * 10_000 + "x" + ")" * 10_000,
        "x" + "**x" * 10_000,
        "-(" * 10_000 + "x" + ")" * 10_000,
        "2**-" * 10_000 + "2",
    ],
    ids=short_id,
)
def test_deep_nesting_is_rejected(text):
    """Rejected by the length limit, then (with a longer limit) by the depth limit before any sympy work."""
    assert_rejected(text, "too long")
    assert_rejected(text, "nested too deeply (more than 100 levels", max_length=100_000)


def test_nesting_up_to_max_depth_is_accepted():
    assert parse("(" * 100 + "x" + ")" * 100) == SYMBOLS["x"]
    assert_rejected("(" * 101 + "x" + ")" * 101, "nested too deeply", column=101)
    assert_rejected("(" * 11 + "x" + ")" * 11, "more than 10 levels", max_depth=10)
    assert parse("sin(" * 50 + "x" + ")" * 50).count(sympy.sin) == 50


def test_recursion_limit_becomes_expression_error():
    text = "(" * 20_000 + "x" + ")" * 20_000
    assert_rejected(text, "recursion limit", max_length=50_000, max_depth=50_000)


def test_long_sign_chains_are_not_recursive():
    assert parse("-" * 4001 + "x") == -SYMBOLS["x"]


EXPONENT_LIMIT = "is too large: exact exponents p/q must have |p| <= 1024 and q <= 1024"
FLOAT_RANGE = "a floating-point value is outside the double-precision range"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("9**9**9**9", f"the exponent 387420489 {EXPONENT_LIMIT}"),
        ("10**10**10", f"the exponent 10000000000 {EXPONENT_LIMIT}"),
        ("2**2**2**2**2**2", f"the exponent 65536 {EXPONENT_LIMIT}"),
        ("10**-10**10", f"the exponent -10000000000 {EXPONENT_LIMIT}"),
        ("(2*x)**(10**300)", f"the exponent ~10**300 {EXPONENT_LIMIT}"),
        ("x**(10**300)", f"the exponent ~10**300 {EXPONENT_LIMIT}"),
        ("x**10**300", f"the exponent ~10**300 {EXPONENT_LIMIT}"),
        ("((x**1024)**1024)**1024", f"the exponent 1048576 {EXPONENT_LIMIT}"),
        ("2**(1/10**300)", f"the exponent 1/~10**300 {EXPONENT_LIMIT}"),
        ("x**(1/10**300)", f"the exponent 1/~10**300 {EXPONENT_LIMIT}"),
        ("(10**308)**(10**308)", f"the exponent ~10**308 {EXPONENT_LIMIT}"),
        ("x*" * 3000 + "x", f"the exponent 3001 {EXPONENT_LIMIT}"),
        ("x" + "/x" * 3000, f"the exponent -2999 {EXPONENT_LIMIT}"),
        ("sqrt(" * 20 + "2" + ")" * 20, f"the exponent 1/2048 {EXPONENT_LIMIT}"),
        ("sqrt(" * 20 + "x" + ")" * 20, f"the exponent 1/2048 {EXPONENT_LIMIT}"),
        ("(x + 1)**1024 * (x + 1)**1024", f"the exponent 2048 {EXPONENT_LIMIT}"),
        ("exp(x)**1024**2", f"the exponent 1048576 {EXPONENT_LIMIT}"),
        ("x**1025", "exact exponents p/q must have |p| <= 1024 and q <= 1024"),
        ("x**(1/1025)", "exact exponents"),
        ("(2**1023)**1024", "the exact value contains the integer ~10**315344"),
        ("((2**1023)**1024)**1024", "the exact value contains the integer ~10**315344"),
        ("2*" * 3000 + "2", "the exact value contains the integer ~10**903"),
        ("2**1e300", FLOAT_RANGE),
        ("1e300**1e300", FLOAT_RANGE),
        ("0.5**1e300", FLOAT_RANGE),
        ("exp(1e300)", FLOAT_RANGE),
        ("exp(exp(exp(1000.0)))", FLOAT_RANGE),
    ],
    ids=short_id,
)
def test_huge_numbers_and_exponent_towers_are_rejected_by_the_number_rules(text, fragment):
    """Exponent towers and huge constants would take forever or exhaust memory if sympy evaluated them;
    the rules on exponents, integers and floats reject them before it does. The time budget is off
    (``max_seconds=None``), so it is those rules, not the machine's speed, that stop the work."""
    assert_rejected(text, fragment, max_seconds=None)


def test_huge_constants_within_the_rules_are_accepted():
    """Huge but bounded: a float exponent stays symbolic, and exact constants keep sympy's exact forms."""
    x_ = SYMBOLS["x"]
    assert parse("x**(10**300 + 0.5)", max_seconds=None) == x_ ** sympy.Float(1e300)
    assert float(parse("sin(1e300)", max_seconds=None)) == pytest.approx(math.sin(1e300), rel=1e-15)
    assert parse("sin(10**300*pi)", max_seconds=None) == 0
    assert float(parse("(10**300 + 1)**(1/3)", max_seconds=None)) == pytest.approx(1e100, rel=1e-15)
    assert float(parse("sqrt(2**1023 - 1)", max_seconds=None)) == pytest.approx(math.sqrt(2.0**1023), rel=1e-15)


def test_exponents_within_limits_are_accepted():
    x_ = SYMBOLS["x"]
    assert parse(f"x**{MAX_EXPONENT}") == x_**MAX_EXPONENT
    assert parse(f"x**(-{MAX_EXPONENT})") == x_**-MAX_EXPONENT
    assert parse(f"x**(1/{MAX_EXPONENT})") == x_ ** sympy.Rational(1, MAX_EXPONENT)
    assert parse("2**1023") == sympy.Integer(2) ** 1023
    assert parse("(x + 1)**1024") == (x_ + 1) ** 1024
    assert parse("x**1e300") == x_ ** sympy.Float(1e300)  # symbolic, never evaluated
    assert parse("exp(1000)") == sympy.exp(1000)  # left unevaluated by sympy
    assert parse("(-8)**(2/1)") == 64


class _Clock:
    """A stand-in for ``time.monotonic`` that advances by ``step`` seconds at every reading."""

    def __init__(self, step: float):
        self.step, self.readings = step, 0

    def monotonic(self) -> float:
        self.readings += 1
        return self.readings * self.step


def test_time_budget(monkeypatch):
    """The budget is checked against the clock before every sympy operation. A fake clock that reads
    1, 2, 3, ... s makes the outcome independent of the machine: the deadline is 1 + 2.5 = 3.5 s, so
    the third operation (reading 4 s) is refused."""
    import mbkron.expressions.parser as parser_module

    text = "+".join(f"sqrt(2**1000 + {k})" for k in range(10))
    clock = _Clock(1.0)
    monkeypatch.setattr(parser_module, "time", clock)
    assert_rejected(text, "evaluating the expression takes longer than 2.5 s", max_seconds=2.5)
    assert clock.readings == 4  # the deadline, then three operations
    clock.readings = 0
    expected = sympy.Add(*(sympy.sqrt(sympy.Integer(2) ** 1000 + k) for k in range(10)))
    assert parse(text, max_seconds=None) == expected
    assert clock.readings == 0  # no budget: the clock is never read


# --------------------------------------------------------------------------------------------
# Names.
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("sin", "reserved for the function sin"),
        ("atan2", "reserved for the function atan2"),
        ("pi", "reserved for the constant pi"),
        ("1x", "a name is a letter or `_`"),
        ("q.1", "a name is a letter"),
        ("", "a name is a letter"),
        ("ｑ1", "not in Unicode NFKC normal form (it normalises to `q1`)"),
    ],
)
def test_invalid_names(name, fragment):
    with pytest.raises(ExpressionError, match=re.escape(fragment)):
        check_name(name)
    with pytest.raises(ExpressionError):
        parse_expression("1", [name])


def test_valid_names():
    for name in ["q1", "_x", "theta_2", "θ", "e", "lambda", "Δx"]:
        check_name(name)
        assert parse_expression(f"2*{name}", [name]) == 2 * sympy.Symbol(name, real=True)


def test_names_argument_types():
    with pytest.raises(TypeError, match="not a single string"):
        parse_expression("q", "q1")
    with pytest.raises(TypeError, match="must be a sympy.Symbol"):
        parse_expression("x", {"x": 1})
    with pytest.raises(ValueError, match="key must equal the symbol name"):
        parse_expression("x", {"x": sympy.Symbol("y")})
    with pytest.raises(TypeError, match="must be a string"):
        check_name(1)
    with pytest.raises(TypeError, match="expression must be a string"):
        parse_expression(1.5, NAMES)
    with pytest.raises(TypeError, match="expression must be a string"):
        parse_expression(b"x", NAMES)


def test_free_names():
    assert free_names(parse("a*sin(q1) + pi + 2")) == {"a", "q1"}
    assert free_names(parse("exp(1)")) == set()


# --------------------------------------------------------------------------------------------
# Printing.
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("0.2*sin(q1) - atan2(y, x)**2 + pi/2", "0.2*sin(q1) - atan2(y, x)**2 + pi/2"),
        ("a/b/x", "a/b/x"),
        ("a/(b*x)", "a/b/x"),
        ("-x", "-x"),
        ("-(x + y)", "-x - y"),
        ("x - 1/3", "x - 1/3"),
        ("-x/3", "-x/3"),
        ("2*x/3", "2*x/3"),
        ("1/x", "1/x"),
        ("1/x**2", "1/x**2"),
        ("x**(-1.5)", "1/x**1.5"),
        ("1/sqrt(x)", "1/sqrt(x)"),
        ("x/(y + 1)", "x/(y + 1)"),
        ("(x + 1)**2", "(x + 1)**2"),
        ("x**(y + 1)", "x**(y + 1)"),
        ("x**y**a", "x**(y**a)"),
        ("(x**y)**2.5", "(x**y)**2.5"),
        ("(-2)**x", "(-2)**x"),
        ("(1/3)**x", "(1/3)**x"),
        ("2**(1/3)", "2**(1/3)"),
        ("x**-y", "x**(-y)"),
        ("sqrt(8)", "2*sqrt(2)"),
        ("exp(1)", "exp(1)"),
        ("exp(1)**x", "exp(x)"),
        ("abs(x - 1)", "abs(x - 1)"),
        ("-0.5*x", "-0.5*x"),
        ("1e-5 + x", "x + 1e-05"),
        ("1e300*x", "1e+300*x"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("-2**2", "-4"),
        ("-sin(x)**2", "-sin(x)**2"),
        ("atan2(-y, x)", "atan2(-y, x)"),
    ],
)
def test_format_expression(text, printed):
    expr = parse(text)
    assert format_expression(expr) == printed
    assert parse(printed) == expr


def test_format_prints_floats_with_full_precision():
    for value in [1 / 3, 0.1, math.pi, sys.float_info.min, sys.float_info.max, 123456789.123456789, 1e22]:
        text = format_expression(sympy.Float(value))
        assert float(text) == value
        assert parse(text) == sympy.Float(value)
    assert format_expression(sympy.Float(1 / 3)) == "0.3333333333333333"


ROUND_TRIP = [text for text, _ in VALUES] + [
    "a*x**-2 - b/(x + 1)**3",
    "sqrt(x**2 + y**2)",
    "1/sqrt(1 - b**2)",
    "-3*sqrt(2)/7 + x**(2/3)",
    "exp(-x**2/2)/sqrt(2*pi)",
    "x**x**x",
    "(x*y)**0.5",
    "-(a + b)**-2.5",
    "log(abs(x)) - atan(y/x)",
    "2**x*3**(-x)",
    "1.0*x",
    "x**1.0",
    "sin(pi/7)*x + cos(pi/5)",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text):
    expr = parse(text)
    assert parse(format_expression(expr)) == expr


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip_of_derivatives(text):
    expr = parse(text)
    for symbol in expr.free_symbols:
        derivative = sympy.diff(expr, symbol)
        try:
            printed = format_expression(derivative)
        except ExpressionError as error:
            assert "is not part of the expression grammar" in str(error)  # e.g. sign(x)
            continue
        assert parse(printed, max_length=100_000) == derivative


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        (sympy.sign(SYMBOLS["x"]), "cannot format `sign(x)`: sign is not part of the expression grammar"),
        (sympy.diff(sympy.Abs(SYMBOLS["x"]), SYMBOLS["x"]), "sign"),
        (sympy.I * SYMBOLS["x"], "ImaginaryUnit"),
        (sympy.oo, "Infinity"),
        (sympy.zoo, "ComplexInfinity"),
        (sympy.nan, "cannot format"),
        (sympy.gamma(SYMBOLS["x"]), "gamma"),
        (sympy.EulerGamma, "EulerGamma"),
        (sympy.Derivative(sympy.Function("f")(SYMBOLS["x"]), SYMBOLS["x"]), "cannot format"),
        (sympy.Symbol("q[1]"), "invalid name `q[1]`"),
        (sympy.Symbol("sin"), "reserved for the function sin"),
    ],
)
def test_format_rejects_what_the_grammar_cannot_express(expr, fragment):
    with pytest.raises(ExpressionError, match=re.escape(fragment)):
        format_expression(expr)


def test_format_of_negated_products_keeps_the_structure():
    x_, y_ = SYMBOLS["x"], SYMBOLS["y"]
    for expr, printed in [
        (sympy.Mul(-1, x_ + 1, sympy.exp(x_)), "-exp(x)*(x + 1)"),
        (sympy.Mul(-1, x_ + 1, y_ + 1), "-((x + 1)*(y + 1))"),
        (sympy.Mul(-2, x_ + 1, y_ + 1), "-2*(x + 1)*(y + 1)"),
        (sympy.Mul(-1, x_ + 1, 1 / y_), "-((x + 1)/y)"),
    ]:
        assert format_expression(expr) == printed
        assert parse(printed) == expr


def test_format_rejects_floats_that_are_not_normal_doubles():
    for value in ["1e-320", "1e400", "1e-400"]:
        with pytest.raises(ExpressionError, match="not a normal double"):
            format_expression(sympy.Float(value) * SYMBOLS["x"])


def test_format_rejects_non_expressions():
    with pytest.raises(TypeError):
        format_expression("x")
    with pytest.raises(TypeError):
        format_expression(sympy.Eq(SYMBOLS["x"], 1))


# --------------------------------------------------------------------------------------------
# No code runs.
# --------------------------------------------------------------------------------------------
VALID_FOR_SAFETY = ROUND_TRIP
MALICIOUS = [
    "__import__('os').system('echo pwned')",
    "__import__(\"os\").system(\"touch /tmp/mbkron_pwned\")",
    'eval("1")',
    "exec('import os')",
    "open('/etc/passwd').read()",
    "getattr(x, '__class__')",
    "x.__class__.__mro__[-1].__subclasses__()",
    "().__class__.__bases__[0].__subclasses__()",
    "(lambda: __import__('os'))()",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "ｅｖａｌ('1')",
    "ｅｘｅｃ('1')",
    "𝐞𝐯𝐚𝐥('1')",
    "sympify('x')",
    "Symbol('x')",
    "x if __import__('os') else y",
    "f'{__import__(\"os\")}'",
    "x; import os",
]


class _Forbidden(Exception):
    pass


def _forbidden(*args, **kwargs):
    raise _Forbidden("forbidden call")


def test_no_code_runs_with_eval_and_sympify_disabled(monkeypatch):
    import sympy.parsing.sympy_parser  # noqa: F401 - make sure the module is loaded, to patch it

    original_sympify = sys.modules["sympy.core.sympify"].sympify

    def sympify_without_strings(a, *args, **kwargs):
        if isinstance(a, str):
            raise _Forbidden("sympify of a string")
        return original_sympify(a, *args, **kwargs)

    for name in ("eval", "exec", "compile", "breakpoint", "input"):
        monkeypatch.setattr(builtins, name, _forbidden)
    monkeypatch.setattr(sympy, "parse_expr", _forbidden)
    parser_module = sys.modules["sympy.parsing.sympy_parser"]
    monkeypatch.setattr(parser_module, "parse_expr", _forbidden)
    monkeypatch.setattr(parser_module, "eval_expr", _forbidden)
    patched = 0
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType) and getattr(module, "sympify", None) is original_sympify:
            monkeypatch.setattr(module, "sympify", sympify_without_strings)
            patched += 1
    assert sympy.sympify is sympify_without_strings and patched > 10
    with pytest.raises(_Forbidden):
        sympy.sympify("1")
    assert builtins.eval is _forbidden and builtins.compile is _forbidden

    for text in VALID_FOR_SAFETY:
        expr = parse(text)
        assert parse(format_expression(expr)) == expr
    for text in MALICIOUS:
        with pytest.raises(ExpressionError):
            parse(text)


_audit = {"armed": False, "events": []}
_WATCHED_EVENTS = {
    "exec",
    "compile",
    "open",
    "import",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "subprocess.Popen",
    "ctypes.dlopen",
    "socket.connect",
}


def _audit_hook(event, args):
    if _audit["armed"] and event in _WATCHED_EVENTS:
        _audit["events"].append((event, repr(args)[:200]))


def test_no_code_runs_according_to_audit_events():
    """Python raises audit events for compile/exec/eval, imports, open and process creation."""
    sys.addaudithook(_audit_hook)  # stays installed but inert unless armed
    texts = VALID_FOR_SAFETY + MALICIOUS

    def run_all():
        for text in texts:
            try:
                format_expression(parse(text))
            except ExpressionError:
                pass

    run_all()  # warm up: sympy's lazy imports happen here
    sympy.core.cache.clear_cache()  # so that the armed run really executes sympy's code paths
    _audit["armed"] = True
    try:
        run_all()
        observed = list(_audit["events"])
        compile("1", "<control>", "eval")  # control: the hook does see code compilation
        control = _audit["events"][len(observed) :]
    finally:
        _audit["armed"] = False
        _audit["events"].clear()
    assert observed == []
    assert [event for event, _ in control] == ["compile"]


# --------------------------------------------------------------------------------------------
# Property tests.
# --------------------------------------------------------------------------------------------
def _expression_trees():
    """Strategy for expression text in the grammar (fully parenthesised where needed)."""
    leaves = st.one_of(
        st.sampled_from(["x", "y", "a", "pi"]),
        st.integers(0, 20).map(str),
        st.floats(0, 100, allow_nan=False, allow_infinity=False).map(repr),
        st.sampled_from(["0.5", "1e-3", "2.5e2", ".25", "3."]),
    )

    def extend(children):
        binary = st.tuples(children, st.sampled_from([" + ", " - ", "*", "/"]), children).map(
            lambda parts: f"({parts[0]}{parts[1]}{parts[2]})"
        )
        power = st.tuples(children, st.sampled_from(["2", "3", "-1", "(1/2)", "0.5", "(-2)", "y"])).map(
            lambda parts: f"({parts[0]})**{parts[1]}"
        )
        negate = children.map(lambda child: f"-({child})")
        call = st.tuples(
            st.sampled_from(["sin", "cos", "tan", "asin", "acos", "atan", "exp", "log", "sqrt", "abs"]),
            children,
        ).map(lambda parts: f"{parts[0]}({parts[1]})")
        atan2 = st.tuples(children, children).map(lambda parts: f"atan2({parts[0]}, {parts[1]})")
        return st.one_of(binary, power, negate, call, atan2)

    return st.recursive(leaves, extend, max_leaves=12)


def _numeric_values(expr: sympy.Expr, points: np.ndarray) -> np.ndarray:
    """Evaluate ``expr`` in double precision at rows (x, y, a) of ``points``; nan where undefined (a constant
    sympy folds to a complex number, such as ``(-pi - 1)**0.5``, included)."""
    function = sympy.lambdify([SYMBOLS["x"], SYMBOLS["y"], SYMBOLS["a"]], expr, modules="numpy")
    with np.errstate(all="ignore"):
        values = np.asarray(function(points[:, 0], points[:, 1], points[:, 2]))
    if np.iscomplexobj(values):
        values = np.where(values.imag == 0, values.real, np.nan)
    return np.broadcast_to(np.asarray(values, dtype=float), points.shape[:1])


@settings(PROPERTIES, max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_expression_trees(), st.integers(0, 2**32 - 1))
def test_property_format_parse_round_trip(text, seed):
    try:
        expr = parse(text)
    except ExpressionError:
        assume(False)
    printed = format_expression(expr)
    reparsed = parse(printed, max_length=100_000)
    assert reparsed == expr, (text, printed)
    points = np.random.default_rng(seed).uniform(-2, 2, size=(5, 3))
    np.testing.assert_allclose(
        _numeric_values(reparsed, points), _numeric_values(expr, points), rtol=1e-12, equal_nan=True
    )


def _integer_trees():
    """Strategy for (text, value) of exact integer arithmetic, evaluated independently."""
    leaves = st.integers(0, 50).map(lambda n: (str(n), n))

    def extend(children):
        def combine(parts):
            (left, lv), op, (right, rv) = parts
            value = {" + ": lv + rv, " - ": lv - rv, "*": lv * rv}[op]
            return f"({left}{op}{right})", value

        binary = st.tuples(children, st.sampled_from([" + ", " - ", "*"]), children).map(combine)
        power = st.tuples(children, st.integers(0, 3)).map(
            lambda parts: (f"({parts[0][0]})**{parts[1]}", parts[0][1] ** parts[1])
        )
        negate = children.map(lambda child: (f"-{child[0]}", -child[1]))
        return st.one_of(binary, power, negate)

    return st.recursive(leaves, extend, max_leaves=10)


@settings(PROPERTIES, max_examples=150)
@given(_integer_trees())
def test_property_exact_integer_arithmetic(tree):
    text, value = tree
    assume(abs(value) < 2**1000)
    result = parse(text)
    assert result.is_Integer and int(result) == value, text


@settings(PROPERTIES, max_examples=100)
@given(st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False))
def test_property_float_round_trip(value):
    expr = sympy.Float(value)
    assert float(parse(format_expression(expr))) == value


GRAMMAR_CHARACTERS = "0123456789.eE+-*/()^, xyab_qpisncotrlgbdm\t"


@settings(PROPERTIES, max_examples=300)
@given(st.one_of(st.text(max_size=60), st.text(alphabet=GRAMMAR_CHARACTERS, max_size=60)))
def test_property_garbage_raises_only_expression_error(text):
    try:
        result = parse(text)
    except ExpressionError as error:
        str(error).encode("utf-8")
    else:
        assert isinstance(result, sympy.Expr)


@settings(PROPERTIES, max_examples=200)
@given(st.binary(max_size=60))
def test_property_binary_garbage_raises_only_expression_error(data):
    for text in (data.decode("latin-1"), data.decode("utf-8", errors="surrogateescape")):
        try:
            parse(text)
        except ExpressionError as error:
            str(error).encode("utf-8")


def test_nested_abs_has_one_canonical_form():
    """sympy gives Abs(−Abs(x)) = Abs(Abs(x)); the parser collapses it so that printing and parsing
    again returns the same expression (found by the round-trip property test)."""
    expr = parse("-(abs(-(abs(x))))")
    assert expr == -sympy.Abs(SYMBOLS["x"])
    assert parse(format_expression(expr)) == expr
