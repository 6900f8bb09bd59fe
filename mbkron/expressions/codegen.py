"""The one way from sympy expressions to numbers: printed Python source, compiled once.

Every numeric evaluation of a symbolic expression in mbkron goes through this module: joint
variables and their derivatives (:mod:`mbkron.algorithms.jointvars.explicit`), constraint functions and their
compiled fast path (:mod:`mbkron.algorithms.jointvars.constraints`, :mod:`mbkron.algorithms.jointvars.kernels`), and the
formulas of model files (:func:`mbkron.io.formulas.evaluate_expression`). Two forms are printed
from the same expressions with the same rules:

- :func:`numpy_source` -- a vectorised function ``name(x_0, x_1, ...)`` of numpy arrays (they
  broadcast) returning a tuple with one value per expression, printed with numpy's functions, so
  that invalid operations give ``inf``/``nan`` (with numpy's floating-point warnings) rather than
  exceptions;
- :func:`scalar_source` -- a function ``name(x, out)`` of one state that writes
  ``out[k] = expressions[k](x)`` (zero expressions are skipped: ``out`` must be zero-filled),
  printed with the :mod:`math` module: fast on Python floats, raising ``ValueError``,
  ``OverflowError`` or ``ZeroDivisionError`` where an operation is undefined, and compilable by
  numba's ``njit`` as it is.

Printing rules (:class:`NumPyExpressionPrinter` and :class:`MathExpressionPrinter`, subclasses of
sympy's public :class:`~sympy.printing.numpy.NumPyPrinter` and
:class:`~sympy.printing.pycode.PythonCodePrinter` sharing the rules of :class:`DoublePrinting`):

- every number is printed as one double literal: integers and fractions are divided exactly
  and rounded once (:func:`exact_to_float`; a huge value becomes ``±inf``, a tiny one ``0.0``),
  ``pi``, ``E`` and the other named constants are printed as their nearest doubles, ``oo`` as
  ``math.inf``; the generated code never does arbitrary-precision arithmetic, and printing never
  evaluates a constant subexpression (``sin(exp(exp(20)))`` is printed as calls, evaluated in
  double precision when the function runs);
- integer powers stay integer powers (``x**3``), square roots call ``sqrt``, other powers call
  ``numpy.power`` or ``math.pow`` (so a negative base gives ``nan`` or ``ValueError``, never a
  complex number);
- common subexpressions are computed once (:func:`sympy.cse`), and long or deeply nested
  expressions are split into statements of bounded size, so that Python's compiler accepts any
  expression sympy can hold.

Safety
------
The generated source is compiled with :func:`compile` and run with :func:`exec` in a namespace
that holds only the modules ``math`` and ``numpy``. This runs no user text: the source is printed
by this module from sympy expression trees (from the whitelist parser
:func:`mbkron.expressions.parser.parse_expression`, which never evaluates its input, or built by
Python code using sympy), in which every name is one this module chose (``x_0``, ``c_0``, ``out``,
the ``math``/``numpy`` functions of the printers' tables) and every number a float literal. An
expression that cannot be printed this way is refused with :class:`ExpressionError`. Compiled
functions are cached by their source text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence

import numpy
import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from mbkron.expressions.lexer import ExpressionError

__all__ = [
    "DoublePrinting",
    "MathExpressionPrinter",
    "NumPyExpressionPrinter",
    "compile_source",
    "exact_to_float",
    "numpy_function",
    "numpy_source",
    "scalar_function",
    "scalar_source",
]

#: Modules the generated code may use; the namespace it runs in holds exactly these.
_MODULES = {"math": math, "numpy": numpy}
#: Integer exponents printed as integers (exact as doubles; larger ones are printed as doubles).
_MAX_INTEGER_EXPONENT = 2**53
#: Most operands of one printed sum or product; more are summed in groups first.
_MAX_WIDTH = 16
#: Deepest nesting of operations in one printed statement; deeper parts get their own statement.
_MAX_HEIGHT = 24


def exact_to_float(numerator: int, denominator: int) -> float:
    """The double nearest to ``numerator / denominator``, ``±inf`` when that overflows.

    Python divides integers exactly and rounds once, so this is correctly rounded; a quotient below
    the double range gives ``0.0``.

    Parameters
    ----------
    numerator, denominator : int
        The fraction; ``denominator > 0``.

    Returns
    -------
    float
    """
    try:
        return numerator / denominator
    except OverflowError:
        return math.inf if numerator > 0 else -math.inf


def _double(number: sympy.Expr) -> float:
    """The double value of a numeric atom (a number or a named constant such as pi)."""
    if number.is_Rational:
        return exact_to_float(number.p, number.q)
    if number is sympy.S.NaN or number is sympy.S.ComplexInfinity:
        return math.nan
    if number is sympy.S.Infinity or number is sympy.S.NegativeInfinity or number.is_Float:
        return float(number)
    if isinstance(number, sympy.NumberSymbol):
        return float(number.evalf(53 * math.log10(2) + 1))  # 53 bits, rounded once
    raise ExpressionError(f"cannot evaluate `{number}`: it has no double-precision (real) value")


def _double_text(value: float) -> str:
    """A Python literal (or ``math`` constant) for ``value``."""
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    return repr(value)


class DoublePrinting:
    """The printing rules shared by both code printers (module docstring): doubles only.

    Mixed into a subclass of :class:`~sympy.printing.pycode.PythonCodePrinter`; the subclass sets
    :attr:`power_function`, the function for non-integer powers.
    """

    power_function: str

    def __init__(self):
        # order "none": terms in sympy's canonical order, since sorting them for printing evaluates
        # constant terms in arbitrary precision (which for sin(exp(exp(20))) never finishes)
        super().__init__({"fully_qualified_modules": True, "strict": True, "allow_unknown_functions": False,
                          "order": "none"})

    def _print(self, expr, **kwargs):
        if isinstance(expr, sympy.Expr) and expr.is_Atom and expr.is_number:
            return _double_text(_double(expr))
        return super()._print(expr, **kwargs)

    def _print_Mul(self, expr):
        coefficient, rest = expr.as_coeff_Mul()
        if coefficient.is_Rational and not coefficient.is_Integer:
            # one double for p/q: sympy's printer would divide by q (and overflow for huge p and q)
            factor = self.parenthesize(rest, PRECEDENCE["Mul"], strict=True)
            return f"{_double_text(_double(coefficient))}*{factor}"
        return super()._print_Mul(expr)

    def _print_Pow(self, expr, rational=False):
        base, exponent = expr.base, expr.exp
        if exponent.is_Rational and exponent.q == 2 and abs(exponent.p) == 1:
            root = f"{self._module_format(self._module + '.sqrt')}({self._print(base)})"
            return root if exponent.p == 1 else f"1.0/{root}"
        if exponent is sympy.S.NegativeOne:
            return f"1.0/{self.parenthesize(base, PRECEDENCE['Mul'], strict=False)}"
        if exponent.is_Integer and abs(exponent.p) <= _MAX_INTEGER_EXPONENT:
            base_text = self.parenthesize(base, PRECEDENCE["Pow"], strict=False)
            return f"{base_text}**{exponent.p}" if exponent.p >= 0 else f"{base_text}**({exponent.p})"
        function = self._module_format(self.power_function)
        return f"{function}({self._print(base)}, {self._print(exponent)})"


class NumPyExpressionPrinter(DoublePrinting, NumPyPrinter):
    """Prints expressions as numpy code of doubles (arrays broadcast); see the module docstring."""

    power_function = "numpy.power"


class MathExpressionPrinter(DoublePrinting, PythonCodePrinter):
    """Prints expressions as :mod:`math` code of doubles (one state; numba compiles it)."""

    _module = "math"
    power_function = "math.pow"


def _arguments(
    symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr]
) -> tuple[list[sympy.Symbol], list[sympy.Expr]]:
    """Check the inputs; return the argument symbols ``x_i`` and the expressions in them."""
    symbols = list(symbols)
    if not all(isinstance(symbol, sympy.Symbol) for symbol in symbols):
        raise TypeError("`symbols` must be sympy symbols")
    if len(set(symbols)) != len(symbols):
        raise ValueError("`symbols` must not repeat a symbol")
    converted = []
    for expression in expressions:
        if isinstance(expression, (int, float, numpy.integer, numpy.floating)) and not isinstance(expression, bool):
            expression = sympy.Float(float(expression))
        if not isinstance(expression, sympy.Expr):
            raise TypeError(f"`expressions` must be sympy expressions or numbers, got {type(expression).__name__}")
        converted.append(expression)
    unknown = set().union(*(e.free_symbols for e in converted)) - set(symbols)
    if unknown:
        raise ValueError(
            f"`expressions` use {', '.join(sorted(map(str, unknown)))}, which are not among `symbols` "
            f"({', '.join(map(str, symbols))})"
        )
    arguments = [sympy.Symbol(f"x_{i}", **symbol.assumptions0) for i, symbol in enumerate(symbols)]
    mapping = dict(zip(symbols, arguments))
    return arguments, [e.xreplace(mapping) for e in converted]


def _split(expr: sympy.Expr, emit: Callable[[sympy.Expr], sympy.Symbol]) -> tuple[sympy.Expr, int]:
    """Cut ``expr`` into statements of bounded width and nesting; return the rest and its height.

    Sums and products of more than :data:`_MAX_WIDTH` operands are summed in groups (a Python sum
    of ``n`` operands nests ``n`` deep when compiled), and a subexpression nesting deeper than
    :data:`_MAX_HEIGHT` becomes a statement of its own (``emit`` assigns it to a new symbol).
    """
    if not expr.args:
        return expr, 0
    parts = [_split(argument, emit) for argument in expr.args]
    arguments = [argument for argument, _ in parts]
    height = max(h for _, h in parts)
    if expr.is_Add or expr.is_Mul:
        while len(arguments) > _MAX_WIDTH:
            arguments = [emit(expr.func(*arguments[i : i + _MAX_WIDTH])) for i in range(0, len(arguments), _MAX_WIDTH)]
            height = 0
        height += len(arguments)
    else:
        height += 1
    node = expr if arguments == list(expr.args) else expr.func(*arguments)
    if height > _MAX_HEIGHT:
        return emit(node), 0
    return node, height


def _statements(
    printer: DoublePrinting, expressions: Sequence[sympy.Expr]
) -> tuple[list[str], list[str]]:
    """Print ``expressions``: assignments of common subexpressions, then one text per expression."""
    names: Iterator[sympy.Symbol] = sympy.numbered_symbols("c_")
    replacements, reduced = sympy.cse(list(expressions), symbols=names)
    assignments: list[tuple[sympy.Symbol, sympy.Expr]] = []

    def emit(value: sympy.Expr) -> sympy.Symbol:
        symbol = next(names)
        assignments.append((symbol, value))
        return symbol

    for symbol, value in replacements:
        assignments.append((symbol, _split(value, emit)[0]))
    reduced = [_split(e, emit)[0] for e in reduced]
    try:
        lines = [f"{printer.doprint(symbol)} = {printer.doprint(value)}" for symbol, value in assignments]
        texts = [printer.doprint(e) for e in reduced]
    except NotImplementedError as error:  # sympy's "Unsupported by <printer>: <what>"
        what = str(error).splitlines()[0].rpartition(": ")[2]
        unsupported = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", what)
        raise ExpressionError(f"cannot evaluate an expression: it contains {unsupported}, which has no "
                              "numeric implementation") from None
    modules = set(printer.module_imports) - set(_MODULES)
    if modules:
        raise ExpressionError(f"cannot evaluate an expression: it needs the module(s) {', '.join(sorted(modules))}")
    return lines, texts


def numpy_source(name: str, symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr]) -> str:
    """Print ``expressions`` of ``symbols`` as a vectorised numpy function.

    Parameters
    ----------
    name : str
        Name of the function (a Python identifier).
    symbols : sequence of sympy.Symbol
        The arguments, in order; the expressions may use no other symbol.
    expressions : sequence of sympy.Expr or float
        The values to compute.

    Returns
    -------
    str
        Source of ``def name(x_0, x_1, ...): ... return (value_0, value_1, ...)``: values of
        constant expressions are floats, the others arrays broadcast from the arguments.

    Raises
    ------
    ExpressionError
        If an expression contains something without a numeric implementation (e.g. ``I`` or an
        undefined function ``f(x)``).
    TypeError, ValueError
        If ``symbols`` or ``expressions`` are not as described.
    """
    arguments, expressions = _arguments(symbols, expressions)
    lines, texts = _statements(NumPyExpressionPrinter(), expressions)
    body = [f"    {line}" for line in lines] + [f"    return ({''.join(f'{text},' for text in texts)})"]
    return "\n".join([f"def {name}({', '.join(map(str, arguments))}):", *body])


def scalar_source(name: str, symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr],
                  unread: Sequence[str] = ()) -> str:
    """Print ``expressions`` of ``symbols`` as ``name(x, out)`` for one state, numba-compilable.

    The function sets ``out[k]`` to the value of ``expressions[k]`` at ``x`` (a sequence of floats
    in the order of ``symbols``) for every expression that is not zero, and returns ``0``.
    ``unread`` names further parameters after ``out`` that the function accepts and ignores (to fit a
    fixed callback signature).

    Parameters and exceptions are those of :func:`numpy_source`.

    Returns
    -------
    str
        The source text.
    """
    arguments, expressions = _arguments(symbols, expressions)
    entries = [(k, e) for k, e in enumerate(expressions) if not (e.is_Number and e.is_zero)]
    lines, texts = _statements(MathExpressionPrinter(), [e for _, e in entries])
    body = [f"    {argument} = x[{i}]" for i, argument in enumerate(arguments)]
    body += [f"    {line}" for line in lines]
    body += [f"    out[{k}] = {text}" for (k, _), text in zip(entries, texts)]
    return "\n".join([f"def {name}({', '.join(('x', 'out', *unread))}):", *body, "    return 0"])


_COMPILED: dict[str, Callable] = {}
"""Compiled functions by source text: equal expressions share one function object (and so, e.g.,
one numba compilation of a kernel specialised on it)."""


def compile_source(source: str, name: str) -> Callable:
    """Compile source printed by :func:`numpy_source` or :func:`scalar_source`; return ``name``.

    The source is run in a namespace holding only ``math`` and ``numpy`` (see "Safety" in the
    module docstring); the result is cached by the source text.

    Parameters
    ----------
    source : str
        Source text from this module (never user text).
    name : str
        The name of the function it defines.

    Returns
    -------
    callable
    """
    if source not in _COMPILED:
        namespace = dict(_MODULES)
        exec(compile(source, f"<mbkron generated {name}>", "exec"), namespace)  # noqa: S102 - printed here
        _COMPILED[source] = namespace[name]
    return _COMPILED[source]


def numpy_function(symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr], name: str = "values") -> Callable:
    """:func:`numpy_source` compiled: ``f(x_0, x_1, ...)`` returns a tuple of values."""
    return compile_source(numpy_source(name, symbols, expressions), name)


def scalar_function(symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr], name: str = "values") -> Callable:
    """:func:`scalar_source` compiled (by Python, not numba): ``f(x, out)``."""
    return compile_source(scalar_source(name, symbols, expressions), name)
