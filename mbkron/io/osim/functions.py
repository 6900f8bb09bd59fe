"""OpenSim functions as model-file joint variables and path-point components.

An OpenSim ``Function`` element becomes one of three exact forms of a function ``F`` of one variable,
or a :class:`Multi` of several:

- :class:`Affine` ``a x + b``: ``Constant`` (``a = 0``), ``LinearFunction`` (``coefficients = a b``),
  and a ``MultiplierFunction`` (``scale · inner``) of an affine function;
- :class:`Table`: ``SimmSpline`` (kind ``"fmm"``) and ``PiecewiseLinearFunction`` (``"linear"``),
  knots ``x``, values ``y`` (two knots: the straight line, an :class:`Affine`); both continue as
  straight lines with the end slope outside the knots, as in OpenSim (agreement with OpenSim's ``calcValue`` measured in ``tests/test_osim_import.py``).
  OpenSim 4.6 reads a ``NaturalCubicSpline`` as a ``SimmSpline`` (``Object::renameType`` in
  ``RegisterTypes_osimCommon.cpp``: it was never a natural spline), so it is kind ``"fmm"`` too.
  A ``GCVSpline`` is kind ``"gcv"`` with its ``half_order`` and ``error_variance``: OpenSim fits it
  from ``x`` and ``y`` alone (Simbody's ``SplineFitter``, unit weights: its ``weights`` and stored
  ``coefficients`` are not read), and so does mbkron (:class:`mbkron.numerics.gcvspl.GCVSpline`, a
  port of that fit). ``PiecewiseConstantFunction`` is kind ``"constant"``
  (:class:`mbkron.numerics.functions.PiecewiseConstant`, OpenSim's ``calcValue``; one knot: a
  constant). Composed with affine functions these two keep their data and map their argument and
  value (``argument``, ``value``: ``a·G(c·q + d) + b``), the other kinds transform ``x`` and ``y``;
- :class:`Formula`: ``PolynomialFunction`` (coefficients from the highest power down, SimTK's order)
  and ``Sine`` (``amplitude·sin(omega·x + phase) + offset``), as formula text with exact derivatives;
- :class:`Multi`, a formula of several arguments: ``LinearFunction`` with ``n + 1 > 2`` coefficients
  (SimTK's ``Function::Linear``, ``a_0 x_0 + … + a_{n−1} x_{n−1} + a_n``) and
  ``MultivariatePolynomialFunction`` (``dimension``, ``order``; the coefficients of the monomials
  ``x_0^e_0 ⋯ x_{d−1}^e_{d−1}``, ``Σ e ≤ order``, in lexicographic order of the exponents
  ``(e_0, …, e_{d−1})``, OpenSim's ``generateCombinations``); of one argument, a :class:`Formula`.

A :class:`Term` is such a function of one coordinate (or a constant, or an :class:`Expression` of several). Coordinates eliminated by a
``CoordinateCouplerConstraint`` are replaced by their coupler term, so functions are composed
(:func:`compose`): an affine function of anything, and anything of an affine function, is exact
(a table's ``y`` or ``x`` is transformed, formulas are substituted), as is a formula of a formula;
a table of a nonlinear function, or a formula of a table, has no exact form in a model file and is
reported as unsupported (None). A :class:`Multi` of several coordinates' terms (:func:`apply`) is a
formula in the coordinates (an :class:`Expression`, or a :class:`Formula` when one coordinate remains);
the terms must not be tables.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from mbkron.io.osim.xml import XmlReader
from mbkron.io.writer import InlineTable
from mbkron.numerics.functions import AffineMapped, EmpiricalFunction, tabulated_function
from mbkron.numerics.gcvspl import MAX_FILE_FIT_WORK, MAX_HALF_ORDER, GCVSpline

__all__ = ["Affine", "Expression", "Formula", "Multi", "Table", "Term", "apply", "compose", "compose_term",
           "constant_term", "emit", "preimage", "read_function", "OSIM_FUNCTIONS"]

#: OpenSim function elements read, with the form each becomes.
OSIM_FUNCTIONS = {
    "Constant": "a number",
    "LinearFunction": "a x + b (a_0 x_0 + … + a_n of several arguments)",
    "MultiplierFunction": "scale times its function",
    "SimmSpline": "tabulated, kind fmm",
    "NaturalCubicSpline": "tabulated, kind fmm (OpenSim reads it as a SimmSpline)",
    "GCVSpline": f"tabulated, kind gcv (half_order 1-{MAX_HALF_ORDER}, any error_variance: Woltring's GCVSPL as OpenSim fits it)",
    "PiecewiseLinearFunction": "tabulated, kind linear",
    "PiecewiseConstantFunction": "tabulated, kind constant (OpenSim's step function)",
    "PolynomialFunction": "a formula",
    "Sine": "a formula",
    "MultivariatePolynomialFunction": "a formula of its arguments",
}
_TABLE_KINDS = {"SimmSpline": "fmm", "NaturalCubicSpline": "fmm", "PiecewiseLinearFunction": "linear",
                "GCVSpline": "gcv", "PiecewiseConstantFunction": "constant"}
_X = "§"  # the argument's placeholder in formula templates
_CHILDREN = {"Constant": ("value",), "LinearFunction": ("coefficients",), "MultiplierFunction": ("function", "scale"),
             "SimmSpline": ("x", "y"), "NaturalCubicSpline": ("x", "y"), "PiecewiseLinearFunction": ("x", "y"),
             "PiecewiseConstantFunction": ("x", "y"),
             "GCVSpline": ("half_order", "error_variance", "x", "y", "weights", "coefficients"), "PolynomialFunction": ("coefficients",),
             "Sine": ("amplitude", "omega", "phase", "offset"),
             "MultivariatePolynomialFunction": ("coefficients", "dimension", "order")}


@dataclass(frozen=True)
class Affine:
    """``slope · x + intercept``."""

    slope: float
    intercept: float


@dataclass(frozen=True)
class Table:
    """Tabulated data ``(x, y)`` interpolated by ``kind`` (``"fmm"``, ``"natural"``, ``"linear"``,
    ``"constant"``, or ``"gcv"`` with its ``half_order`` and ``error_variance``), as the function
    ``a·G(c·q + d) + b`` of ``q`` with ``argument = (c, d)`` and ``value = (a, b)``."""

    kind: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    half_order: int = 0
    error_variance: float = 0.0
    argument: tuple[float, float] = (1.0, 0.0)
    value: tuple[float, float] = (1.0, 0.0)

    def function(self) -> EmpiricalFunction:
        """The interpolant as a function of ``q``."""
        if self.kind == "gcv":
            function = GCVSpline(self.x, self.y, self.half_order, self.error_variance)
        else:
            function = tabulated_function(self.x, self.y, self.kind)
        if self.argument == (1.0, 0.0) and self.value == (1.0, 0.0):
            return function
        return AffineMapped(function, self.argument, self.value)

    @property
    def mapped(self) -> bool:
        """Whether compositions with affine functions map the argument and value (a GCV spline: its
        fit on mapped data need not be the same function to the last digits; a step function: its
        steps' sides would swap under a reversal) rather than the knots and values."""
        return self.kind in ("gcv", "constant")

    def knots(self) -> np.ndarray:
        """The knots as values of ``q``, increasing."""
        c, d = self.argument
        return np.sort((np.array(self.x) - d) / c)


@dataclass(frozen=True, eq=False)
class Formula:
    """A formula: ``template`` with ``§`` for the argument, and its value as a Python function."""

    template: str
    value: Callable[[float], float]

    def text(self, argument: str) -> str:
        return self.template.replace(_X, argument)


@dataclass(frozen=True, eq=False)
class Multi:
    """A formula of ``arity`` arguments: ``template`` with ``§0§``, ``§1§``, … for them, and its value
    as a Python function of the argument list."""

    template: str
    arity: int
    value: Callable[[list[float]], float]

    def text(self, arguments: list[str]) -> str:
        out = self.template
        for k, argument in enumerate(arguments):
            out = out.replace(f"{_X}{k}{_X}", argument)
        return out


@dataclass(frozen=True)
class Expression:
    """A formula in several of the model's coordinates (the result of :func:`apply`)."""

    text: str


Function = Affine | Table | Formula


@dataclass(frozen=True)
class Term:
    """``function(coordinate)``; a constant has ``coordinate`` None and an :class:`Affine` of slope 0;
    an :class:`Expression` has the tuple of the coordinates it names."""

    function: Function | Expression
    coordinate: str | tuple[str, ...] | None

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The model coordinates the term depends on."""
        return () if self.coordinate is None else (self.coordinate,) if isinstance(self.coordinate, str) else self.coordinate


def constant_term(value: float) -> Term:
    """The constant ``value`` as a term."""
    return Term(Affine(0.0, float(value)), None)


def evaluate(function: Function, x: float) -> float:
    """``function(x)`` in double precision."""
    if isinstance(function, Affine):
        return function.slope * x + function.intercept
    if isinstance(function, Table):
        return float(function.function().evaluate(np.array([x]), 0)[0][0])
    return function.value(x)


def compose(outer: Function, inner: Function) -> Function | None:
    """``outer ∘ inner`` exactly, or None when no exact model-file form exists."""
    if isinstance(inner, Multi):
        if not isinstance(outer, Affine):
            return None
        a, b = outer.slope, outer.intercept
        return Multi(f"{a!r}*({inner.template}) + {b!r}", inner.arity, lambda v, g=inner.value: a * g(v) + b)
    if isinstance(inner, Affine):
        c, d = inner.slope, inner.intercept
        if isinstance(outer, Affine):
            return Affine(outer.slope * c, outer.slope * d + outer.intercept)
        if c == 0.0:
            return Affine(0.0, evaluate(outer, d))
        if isinstance(outer, Table):
            if outer.mapped:
                e, f = outer.argument
                return replace(outer, argument=(e * c, e * d + f))
            x = [(v - d) / c for v in outer.x]
            return replace(outer, x=tuple(x)) if c > 0 else replace(outer, x=tuple(x[::-1]), y=outer.y[::-1])
        return Formula(outer.text(f"({c!r}*{_X} + {d!r})"), lambda v, f=outer.value: f(c * v + d))
    if isinstance(outer, Affine):
        a, b = outer.slope, outer.intercept
        if a == 0.0:
            return Affine(0.0, b)
        if isinstance(inner, Table):
            if inner.mapped:
                e, f = inner.value
                return replace(inner, value=(a * e, a * f + b))
            return replace(inner, y=tuple(a * v + b for v in inner.y))
        return Formula(f"{a!r}*({inner.template}) + {b!r}", lambda v, g=inner.value: a * g(v) + b)
    if isinstance(outer, Formula) and isinstance(inner, Formula):
        return Formula(outer.text(f"({inner.template})"), lambda v, f=outer.value, g=inner.value: f(g(v)))
    return None


def preimage(function: Table, low: float, high: float) -> tuple[float, float] | None:
    """``{x : low ≤ F(x) ≤ high}`` as ``(a, b)`` for a table ``F`` strictly monotone on the whole line
    (linear extrapolation included); None when ``F`` is not (then the set need not be an interval) or
    is not a piecewise cubic with straight continuations (a step function; a GCV spline of half order
    other than 2, whose continuation is constant or a polynomial of degree ≥ 2).

    Monotonicity is decided exactly per cubic piece: ``F'`` is a quadratic whose extremum lies where the
    linear ``F''`` vanishes. The bounds are roots of ``F(x) = low`` and ``F(x) = high`` to round-off
    (scipy's ``brentq``, ``xtol`` 1e-15, ``rtol`` 8.9e-16)."""
    from scipy.optimize import brentq

    if function.kind == "constant" or (function.kind == "gcv" and function.half_order != 2):
        return None
    spline = function.function()
    x = function.knots()
    with np.errstate(all="ignore"):  # huge tabulated values (an untrusted file): overflow means "not proven"
        _, slope, curvature = spline.evaluate(x, 2)
        candidates = [slope]
        if function.kind != "linear":  # interior extrema of F' on each piece
            a, b = curvature[:-1], curvature[1:]
            inside = np.sign(a) * np.sign(b) < 0
            points = x[:-1][inside] + (x[1:] - x[:-1])[inside] * a[inside] / (a[inside] - b[inside])
            candidates.append(spline.evaluate(points, 1)[1])
        else:
            candidates.append(np.diff(spline(x)))
    values = np.concatenate(candidates)
    if not np.isfinite(values).all():
        return None  # monotonicity not proven in floating point
    sign = 1.0 if values.min() > 0 else -1.0 if values.max() < 0 else 0.0
    if sign == 0.0:
        return None

    def root(level: float) -> float:
        first, last = spline(x[[0, -1]])
        if sign * (level - first) <= 0:  # on the extrapolated line before the first knot
            return x[0] + (level - first) / slope[0]
        if sign * (level - last) >= 0:
            return x[-1] + (level - last) / slope[-1]
        return brentq(lambda v: spline.evaluate(np.array([v]), 0)[0][0] - level, x[0], x[-1], xtol=1e-15, rtol=8.9e-16)
    ends = sorted([root(low), root(high)])
    return ends[0], ends[1]


def compose_term(outer: Function, inner: Term) -> Term | None:
    """``outer(inner)`` as a term, or None (see :func:`compose`)."""
    if inner.coordinate is None:
        return constant_term(evaluate(outer, inner.function.intercept))
    if isinstance(inner.function, Expression):  # a formula of several coordinates: substituted
        if isinstance(outer, Table):
            return None
        if isinstance(outer, Affine):
            if outer.slope == 0.0:
                return constant_term(outer.intercept)
            return Term(Expression(f"{outer.slope!r}*({inner.function.text}) + {outer.intercept!r}"), inner.coordinate)
        return Term(Expression(outer.text(f"({inner.function.text})")), inner.coordinate)
    function = compose(outer, inner.function)
    if function is None:
        return None
    if isinstance(function, Affine) and function.slope == 0.0:
        return constant_term(function.intercept)
    return Term(function, inner.coordinate)


def _formula_text(term: Term) -> str | None:
    """A term as a parenthesised formula in the model's coordinates; None for a table."""
    function = term.function
    if isinstance(function, Table):
        return None
    if isinstance(function, Expression):
        return f"({function.text})"
    if term.coordinate is None:
        return f"({function.intercept!r})"
    return f"({emit(term)})"


def apply(function: Multi, arguments: list[Term]) -> Term | None:
    """``function`` of the terms ``arguments`` exactly: a constant, a :class:`Formula` of the one
    coordinate left, or an :class:`Expression`; None when an argument is a table (no exact formula)."""
    variable = [t for t in arguments if t.coordinate is not None]
    if not variable:
        return constant_term(function.value([t.function.intercept for t in arguments]))
    if len(variable) == 1 and isinstance(variable[0].coordinate, str):  # a function of one argument, composed
        index = next(k for k, t in enumerate(arguments) if t.coordinate is not None)
        constants = [t.function.intercept if k != index else 0.0 for k, t in enumerate(arguments)]
        texts = [_X if k == index else f"({c!r})" for k, c in enumerate(constants)]

        def value(x: float, f=function.value) -> float:
            return f(constants[:index] + [x] + constants[index + 1:])
        return compose_term(Formula(function.text(texts), value), variable[0])
    texts = [_formula_text(t) for t in arguments]
    if None in texts:
        return None
    names = tuple(dict.fromkeys(name for t in variable for name in t.coordinates))
    return Term(Expression(function.text(texts)), names)


def emit(term: Term) -> object:
    """The model-file value of a term: a number, a formula string or a ``tabulated`` table."""
    function, coordinate = term.function, term.coordinate
    if isinstance(function, Affine):
        if coordinate is None or function.slope == 0.0:
            return function.intercept
        if function.slope == 1.0 and function.intercept == 0.0:
            return coordinate
        return f"{function.slope!r}*{coordinate} + {function.intercept!r}"
    if isinstance(function, Table):
        options = {"half_order": function.half_order, "error_variance": function.error_variance} \
            if function.kind == "gcv" else {}
        options.update({key: list(value) for key, value in (("argument", function.argument), ("value", function.value))
                        if value != (1.0, 0.0)})
        return InlineTable(type="tabulated", coordinate=coordinate, kind=function.kind, **options,
                           x=list(function.x), y=list(function.y))
    if isinstance(function, Expression):
        return function.text
    return function.text(coordinate)


def _polynomial(coefficients: list[float]) -> Formula:
    """SimTK's polynomial: ``c[0] x^n + … + c[n]`` (Horner form)."""
    text = repr(coefficients[0])
    for c in coefficients[1:]:
        text = f"({text})*{_X} + {c!r}"

    def value(x: float) -> float:
        total = 0.0
        for c in coefficients:
            total = total * x + c
        return total
    return Formula(text, value)


def _multi(terms: list[tuple[float, tuple[int, ...]]], arity: int) -> Multi | Formula:
    """The polynomial ``Σ c · x_0^e_0 ⋯`` of the ``(c, exponents)`` ``terms`` (zero terms left out;
    powers as repeated products), a :class:`Formula` when ``arity`` is 1."""
    def monomial(exponents: tuple[int, ...]) -> str:
        return "*".join(f"({_X}{k}{_X})" for k, e in enumerate(exponents) for _ in range(e))
    parts = [f"{c!r}*{monomial(e)}" if any(e) else repr(c) for c, e in terms if c != 0.0]
    template = " + ".join(parts) or "0.0"
    kept = [(c, e) for c, e in terms if c != 0.0]

    def value(x: list[float]) -> float:
        return sum(c * math.prod(v for v, k in zip(x, e) for _ in range(k)) for c, e in kept)  # products: no OverflowError
    multi = Multi(template, arity, value)
    if arity == 1:
        return Formula(multi.text([_X]), lambda x: value([x]))
    return multi


def _exponents(dimension: int, order: int) -> list[tuple[int, ...]]:
    """OpenSim's monomials: exponent tuples with sum ≤ ``order`` in lexicographic order."""
    if dimension == 0:
        return [()]
    return [(e, *rest) for e in range(order + 1) for rest in _exponents(dimension - 1, order - e)]


def _multivariate_polynomial(reader: XmlReader, element: ET.Element) -> Multi | Formula | None:
    dimension, order = reader.number(element, "dimension"), reader.number(element, "order")
    coefficients = reader.numbers(element, "coefficients", minimum=1)
    if dimension is None or order is None or coefficients is None:
        return None
    if not (dimension == int(dimension) and 1 <= dimension <= 6 and order == int(order) and 0 <= order <= 10):
        reader.problem(element, f"expected an integer dimension 1-6 and order 0-10, got {dimension!r} and {order!r}")
        return None
    exponents = _exponents(int(dimension), int(order))
    if len(coefficients) != len(exponents):
        reader.problem(element, f"expected {len(exponents)} coefficients (dimension {int(dimension)}, order "
                       f"{int(order)}), got {len(coefficients)}", "coefficients")
        return None
    return _multi(list(zip(coefficients, exponents)), int(dimension))


def _gcv_options(reader: XmlReader, element: ET.Element) -> dict | None:
    """``half_order`` (an integer 1-:data:`MAX_HALF_ORDER`; OpenSim's default 0 is no spline) and
    ``error_variance`` (default 0: interpolation; negative: generalized cross-validation) of a
    ``GCVSpline``; None after recording a problem."""
    half_order, variance = reader.number(element, "half_order", 0.0), reader.number(element, "error_variance", 0.0)
    if half_order is None or variance is None:
        return None
    if not (half_order == int(half_order) and 1 <= half_order <= MAX_HALF_ORDER):
        reader.problem(element, f"expected an integer half order 1-{MAX_HALF_ORDER} (degree 2·half_order − 1), "
                       f"got {half_order!r}", "half_order")
        return None
    return {"half_order": int(half_order), "error_variance": variance}


def read_function(reader: XmlReader, element: ET.Element) -> Function | Multi | None:
    """The function of an OpenSim function element; None after recording a problem or unsupported element."""
    tag = element.tag
    if tag in _CHILDREN:
        reader.known_children(element, _CHILDREN[tag])
    if tag == "Constant":
        value = reader.number(element, "value")
        return None if value is None else Affine(0.0, value)
    if tag == "LinearFunction":
        values = reader.numbers(element, "coefficients", minimum=2)
        if values is None:
            return None
        if len(values) == 2:
            return Affine(values[0], values[1])
        return _multi([(c, tuple(int(k == j) for k in range(len(values) - 1))) for j, c in enumerate(values[:-1])]
                      + [(values[-1], (0,) * (len(values) - 1))], len(values) - 1)
    if tag == "MultivariatePolynomialFunction":
        return _multivariate_polynomial(reader, element)
    if tag == "MultiplierFunction":
        scale = reader.number(element, "scale", 1.0)
        holder = reader.child(element, "function")
        inner_element = reader.only_child(holder, "function") if holder is not None else None
        inner = read_function(reader, inner_element) if inner_element is not None else None
        return None if scale is None or inner is None else compose(Affine(scale, 0.0), inner)
    if tag in _TABLE_KINDS:
        options = _gcv_options(reader, element) if tag == "GCVSpline" else {}
        if options is None:
            return None
        minimum = 2 * options["half_order"] if options else 1 if tag == "PiecewiseConstantFunction" else 2
        x = reader.numbers(element, "x", minimum=minimum)
        y = reader.numbers(element, "y", minimum=minimum)
        if x is None or y is None:
            return None
        if len(x) != len(y):
            reader.problem(element, f"expected as many values <y> as knots <x>, got {len(y)} and {len(x)}")
            return None
        if any(b <= a for a, b in zip(x, x[1:])):
            reader.problem(element, "expected strictly increasing knots", "x")
            return None
        kind = _TABLE_KINDS[tag]
        if len(x) == 1:  # a step function of one knot
            return Affine(0.0, y[0])
        if len(x) == 2 and kind not in ("gcv", "constant"):  # the straight line, extrapolated linearly
            slope = (y[1] - y[0]) / (x[1] - x[0])
            return Affine(slope, y[0] - slope * x[0])
        if kind == "gcv":  # the fits of one file are bounded in total (docs/model-format.md, Limits)
            reader.fit_work = getattr(reader, "fit_work", 0) + len(x) * options["half_order"]
            if reader.fit_work > MAX_FILE_FIT_WORK:
                reader.problem(element, f"the GCV splines of the file are too many to fit: with these {len(x):,} knots "
                               f"at half order {options['half_order']} they have {reader.fit_work:,} knots × half_order, "
                               f"more than {MAX_FILE_FIT_WORK:,}")
                return None
        table = Table(kind, tuple(x), tuple(y), **options)
        try:
            table.function()
        except ValueError as exc:  # knots or values too extreme for double precision
            reader.problem(element, str(exc))
            return None
        return table
    if tag == "PolynomialFunction":
        coefficients = reader.numbers(element, "coefficients", minimum=1)
        return None if coefficients is None else _polynomial(coefficients)
    if tag == "Sine":
        amplitude, omega, phase, offset = (reader.number(element, key, default) for key, default in (
            ("amplitude", 1.0), ("omega", 1.0), ("phase", 0.0), ("offset", 0.0)))
        if None in (amplitude, omega, phase, offset):
            return None
        return Formula(f"{amplitude!r}*sin({omega!r}*{_X} + {phase!r}) + {offset!r}",
                       lambda x: amplitude * math.sin(omega * x + phase) + offset)
    reader.unsupported_element(element, "the functions " + ", ".join(OSIM_FUNCTIONS))
    return None
