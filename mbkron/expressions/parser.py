"""Safe parsing of the scalar expressions found in model files.

Model files are untrusted input, yet they contain formulas: joint variables, moving via points,
driving functions. This module turns such a string into a :mod:`sympy` expression with a small
hand-written tokenizer (:mod:`mbkron.expressions.lexer`) and recursive-descent parser, whose syntax
tree is then turned into sympy objects by calling their constructors directly (``sympy.Add``,
``sympy.sin``, ...). Nothing is ever passed to ``eval``, ``exec``, ``compile``, ``ast``,
``sympy.sympify`` or ``sympy.parse_expr``, so no code in the string can run.
:func:`mbkron.expressions.format.format_expression` prints expressions back in the same grammar;
:mod:`mbkron.expressions.codegen` turns them into numbers.

Grammar
-------
::

    expression := sum
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/") unary)*
    unary      := ("+" | "-")* power
    power      := primary ("**" unary)?
    primary    := NUMBER | NAME | "pi" | FUNCTION "(" arguments? ")" | "(" sum ")"
    arguments  := sum ("," sum)*
    FUNCTION   := "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "atan2"
                | "exp" | "log" | "sqrt" | "abs"
    NUMBER     := INTEGER | FLOAT
    INTEGER    := "0" | [1-9][0-9]*
    FLOAT      := ([0-9]+ "." [0-9]* | "." [0-9]+ | [0-9]+) ([eE] [+-]? [0-9]+)?
                  (a FLOAT has a "." or an exponent)

Precedence and associativity follow Python: ``**`` binds tightest and is right-associative, so
``2**3**2 == 512``; a unary sign binds less tightly than ``**`` on its left and more tightly on
its right, so ``-2**2 == -4`` and ``2**-1 == 1/2``; ``*``, ``/``, ``+`` and ``-`` are
left-associative, so ``a/b/c == (a/b)/c``. Spaces, tabs and line breaks may separate tokens.
``atan2`` takes two arguments ``(y, x)``, every other function one. ``NAME`` must be one of the
names passed to :func:`parse_expression` (coordinates and parameters).

Deliberately rejected, each with a message naming the column: ``^`` (write ``**``), implicit
multiplication (``2x``), ``//`` and ``%``, attribute access, subscripts, strings, comparisons,
keyword or starred arguments, complex literals (``1j``), hexadecimal/octal/binary literals,
underscores in numbers, integers with leading zeros (``007``), and any non-ASCII character outside
an identifier. Identifiers may contain non-ASCII letters but must already be in Unicode NFKC normal
form, so ``ｓｉｎ`` or ``ｅｖａｌ`` (fullwidth letters) are rejected instead of being silently read as
``sin`` or ``eval``.

Numbers
-------
Integer literals become exact :class:`sympy.Integer`, everything with a ``.`` or an exponent a
53-bit :class:`sympy.Float`. Sympy folds constant subexpressions while the expression is built
(``2**10`` becomes ``1024``, ``1/3`` the exact ``Rational(1, 3)``), so to keep parsing fast and the
result usable in double precision, every node built is checked against these rules:

* every exact integer, and the numerator and denominator of every exact fraction, must be smaller
  than ``2**1024`` in magnitude (the double-precision range);
* every floating-point constant must be zero or a normal finite double, i.e. of magnitude
  between ``2.2250738585072014e-308`` and ``1.7976931348623157e308`` (``1e999``, ``1e-400``,
  the subnormal ``5e-324`` and ``1e300*1e300`` are rejected), so that it is printed exactly;
* every exact exponent ``p/q`` (of any base, also after sympy combines powers as in ``(x**a)**b``
  or ``x*x*...*x``) must have ``|p| <= 1024`` and ``q <= 1024``; this is checked *before* sympy
  evaluates a power, so exponent towers such as ``9**9**9**9`` or ``10**10**10`` fail at once;
* no infinite, undefined or complex value may appear: ``1/0``, ``log(0)``, ``tan(pi/2)``,
  ``atan2(0, 0)``, ``sqrt(-1)``, ``log(-1)`` and ``(-8)**(1/3)`` are rejected.

Constant subexpressions that sympy leaves unevaluated, such as ``exp(1000)`` or ``asin(2)``, are not
evaluated and therefore not checked. Float exponents are not limited (``x**1e300`` stays symbolic; a
numeric base gives a float that the float rule checks).

Parsing runs in two steps: a syntax tree is built first, checking syntax, names, arities, literals
and nesting depth without any sympy work; then the sympy expression is built bottom-up and every
new node is checked. The rules above bound the cost of each sympy operation; a time budget
(``max_seconds`` of :func:`parse_expression`) bounds their total for long inputs made of many
costly exact constants.
"""

from __future__ import annotations

import difflib
import keyword
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import sympy

from mbkron.expressions.grammar import CONSTANT_PI as _CONSTANT_PI, FUNCTIONS as _FUNCTIONS, check_grammar, check_name
from mbkron.expressions.lexer import (
    ExpressionError,
    _describe_character,
    _describe_integer,
    _Lexer,
    _printable,
    _Token,
)

__all__ = [
    "ExpressionError",
    "check_grammar",
    "check_name",
    "parse_expression",
]

#: Exact integers (and numerators/denominators of fractions) must be below 2**MAX_INTEGER_BITS.
MAX_INTEGER_BITS = 1024
#: Exact exponents p/q must satisfy |p| <= MAX_EXPONENT and q <= MAX_EXPONENT.
MAX_EXPONENT = 1024
_MAX_INTEGER_DIGITS = 309  # 2**1024 has 309 decimal digits
_NON_FINITE = (sympy.S.ComplexInfinity, sympy.S.NaN, sympy.S.Infinity, sympy.S.NegativeInfinity)

_EXPECTED_OPERAND = "expected a number, a name, a function call or `(`"
_EXPECTED_OPERATOR = "expected an operator (+ - * / **) or the end of the expression"
_MAX_LISTED_NAMES = 20


def _list_names(names: Iterable[str]) -> str:
    """Join names for a message, abbreviating long lists."""
    names = list(names)
    listed = ", ".join(names[:_MAX_LISTED_NAMES])
    if len(names) > _MAX_LISTED_NAMES:
        listed += f", … ({len(names) - _MAX_LISTED_NAMES} more)"
    return listed


def _symbol_table(names: Mapping[str, sympy.Symbol] | Iterable[str]) -> dict[str, sympy.Symbol]:
    """Validate ``names`` and return a name -> symbol dictionary (see :func:`parse_expression`)."""
    if isinstance(names, str):
        raise TypeError("names must be a collection of names, not a single string")
    if isinstance(names, Mapping):
        table = dict(names)
        for name, symbol in table.items():
            check_name(name)
            if not isinstance(symbol, sympy.Symbol):
                raise TypeError(f"names[{name!r}] must be a sympy.Symbol, got {type(symbol).__name__}")
            if symbol.name != name:
                raise ValueError(
                    f"names[{name!r}] is a symbol named {symbol.name!r}; the key must equal the "
                    "symbol name so that format_expression prints what parse_expression reads"
                )
        return table
    table = {}
    for name in names:
        check_name(name)
        table[name] = sympy.Symbol(name, real=True)
    return table



def _constant_problem(node: sympy.Basic) -> str | None:
    """Return why a single node breaks the rules on numbers (module docstring), or ``None``."""
    if node in _NON_FINITE:
        return "the value is infinite or undefined (e.g. a division by zero, log(0), tan(pi/2))"
    if node is sympy.S.ImaginaryUnit:
        return "the value is complex (e.g. sqrt or log of a negative number)"
    if node.is_Float:
        if not _is_normal_double(float(node), node.is_zero):
            return "a floating-point value is outside the double-precision range"
    elif node.is_Rational:
        for part in (node.p, node.q):
            if abs(part).bit_length() > MAX_INTEGER_BITS:
                return (
                    f"the exact value contains the integer {_describe_integer(part)}; integers must be "
                    f"smaller than 2**{MAX_INTEGER_BITS} in magnitude"
                )
    elif node.is_Pow:
        exponent_problem = _exponent_problem(node.exp)
        if exponent_problem:
            return exponent_problem
        base, exponent = node.base, node.exp
        if base.is_Number and base.is_negative and exponent.is_Number and not _is_integral(exponent):
            return "the value is complex (a negative number raised to a non-integer power)"
    return None


def _is_normal_double(value: float, is_zero: bool) -> bool:
    """Whether ``value`` (the nearest double to a number that is zero iff ``is_zero``) is zero or a
    finite normal double, so that it stands for the number exactly (for 53-bit sympy Floats)."""
    if is_zero:
        return value == 0
    return sys.float_info.min <= abs(value) <= sys.float_info.max


def _exponent_problem(exponent: sympy.Expr) -> str | None:
    """Return why an exact exponent is too large (module docstring), or ``None``."""
    if exponent.is_Rational and (abs(exponent.p) > MAX_EXPONENT or exponent.q > MAX_EXPONENT):
        if exponent.is_Integer:
            shown = _describe_integer(exponent.p)
        else:
            shown = f"{_describe_integer(exponent.p)}/{_describe_integer(exponent.q)}"
        return (
            f"the exponent {shown} is too large: exact exponents p/q must have |p| <= "
            f"{MAX_EXPONENT} and q <= {MAX_EXPONENT}"
        )
    return None


def _is_integral(number: sympy.Number) -> bool:
    """Whether a sympy number has an integer value (``2`` and ``2.0`` do)."""
    return bool(number.is_Integer or (number.is_Float and float(number).is_integer()))


class _Node(NamedTuple):
    """A syntax-tree node; ``token`` locates errors found while building it.

    ``kind`` is ``"constant"`` (``value`` holds the number, symbol or pi), ``"add"``, ``"mul"``,
    ``"negate"``, ``"invert"`` (the divisor of a ``/``), ``"power"`` or ``"call"`` (the function
    named by ``token``).
    """

    kind: str
    token: _Token
    children: tuple[_Node, ...] = ()
    value: sympy.Expr | None = None


class _Parser:
    """Recursive-descent parser producing a syntax tree (grammar in the module docstring).

    Parsing checks syntax, names, arities, literals and nesting depth without any sympy work, so
    malformed input is rejected cheaply.
    """

    def __init__(self, text: str, symbols: dict[str, sympy.Symbol], max_depth: int):
        self.text = text
        self.symbols = symbols
        self.max_depth = max_depth
        self.depth = 0
        self.lexer = _Lexer(text)

    def error(self, reason: str, token: _Token) -> ExpressionError:
        return ExpressionError(reason, self.text, token.column)

    def parse(self) -> _Node:
        if self.lexer.peek().kind == "end":
            raise ExpressionError("empty expression", self.text)
        tree = self.parse_sum()
        token = self.lexer.peek()
        if token.kind != "end":
            reason = f"unexpected `{token.text}`; {_EXPECTED_OPERATOR}"
            if keyword.iskeyword(token.text):
                reason += " (Python keywords are not allowed)"
            elif token.kind != "operator" or token.text == "(":
                reason += " (implicit multiplication is not allowed; write `*`)"
            raise self.error(reason, token)
        return tree

    def enter(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.error(
                f"the expression is nested too deeply (more than {self.max_depth} levels of "
                "parentheses, function calls and powers)",
                token,
            )

    def leave(self) -> None:
        self.depth -= 1

    def at_operator(self, *operators: str) -> bool:
        token = self.lexer.peek()
        return token.kind == "operator" and token.text in operators

    def parse_sum(self) -> _Node:
        first = self.lexer.peek()
        terms = [self.parse_product()]
        while self.at_operator("+", "-"):
            operator = self.lexer.next()
            term = self.parse_product()
            terms.append(term if operator.text == "+" else _Node("negate", operator, (term,)))
        return terms[0] if len(terms) == 1 else _Node("add", first, tuple(terms))

    def parse_product(self) -> _Node:
        first = self.lexer.peek()
        factors = [self.parse_unary()]
        while self.at_operator("*", "/"):
            operator = self.lexer.next()
            factor = self.parse_unary()
            factors.append(factor if operator.text == "*" else _Node("invert", operator, (factor,)))
        return factors[0] if len(factors) == 1 else _Node("mul", first, tuple(factors))

    def parse_unary(self) -> _Node:
        first = self.lexer.peek()
        negative = False
        while self.at_operator("+", "-"):
            negative ^= self.lexer.next().text == "-"
        operand = self.parse_power()
        return _Node("negate", first, (operand,)) if negative else operand

    def parse_power(self) -> _Node:
        base = self.parse_primary()
        if not self.at_operator("**"):
            return base
        operator = self.lexer.next()
        self.enter(operator)
        exponent = self.parse_unary()
        self.leave()
        return _Node("power", operator, (base, exponent))

    def parse_primary(self) -> _Node:
        token = self.lexer.next()
        if token.kind == "number":
            return _Node("constant", token, value=self.parse_number(token))
        if token.kind == "name":
            return self.parse_name(token)
        if token.kind == "operator" and token.text == "(":
            self.enter(token)
            inner = self.parse_sum()
            self.expect_closing(token)
            self.leave()
            return inner
        if token.kind == "end":
            raise self.error(f"unexpected end of the expression; {_EXPECTED_OPERAND}", token)
        raise self.error(f"unexpected `{token.text}`; {_EXPECTED_OPERAND}", token)

    def expect_closing(self, opening: _Token, allow_comma: bool = False) -> None:
        token = self.lexer.next()
        if token.kind == "operator" and token.text == ")":
            return
        if token.kind == "end":
            raise self.error(f"missing `)` to close the `(` at column {opening.column}", token)
        expected = "`,` or `)`" if allow_comma else "an operator or `)`"
        raise self.error(f"unexpected `{token.text}`; expected {expected}", token)

    def parse_number(self, token: _Token) -> sympy.Number:
        text = token.text
        if not any(c in text for c in ".eE"):
            if len(text) > 1 and text[0] == "0":
                raise self.error(f"leading zeros are not allowed in the integer `{text}`", token)
            if len(text) > _MAX_INTEGER_DIGITS or int(text).bit_length() > MAX_INTEGER_BITS:
                shown = text if len(text) <= 20 else f"{text[:10]}…({len(text)} digits)"
                raise self.error(
                    f"the integer `{shown}` is too large; integers must be smaller than "
                    f"2**{MAX_INTEGER_BITS} in magnitude",
                    token,
                )
            return sympy.Integer(int(text))
        value = float(text)
        mantissa = re.split("[eE]", text)[0]
        if not _is_normal_double(value, is_zero=mantissa.strip("0.") == ""):
            raise self.error(f"the number `{text}` is outside the double-precision range", token)
        return sympy.Float(value)

    def parse_name(self, token: _Token) -> _Node:
        name = token.text
        called = self.lexer.at_parenthesis()
        if name in _FUNCTIONS:
            if not called:
                self.lexer.peek()  # report an invalid character after the name first, e.g. `sin（x）`
                raise self.error(f"the function `{name}` must be called, e.g. `{name}(x)`", token)
            return self.parse_call(token)
        if name == _CONSTANT_PI:
            if called:
                raise self.error("`pi` is a constant, not a function", token)
            return _Node("constant", token, value=sympy.S.Pi)
        if name in self.symbols:
            if called:
                raise self.error(
                    f"`{name}` is not a function (implicit multiplication is not allowed; write `*`)", token
                )
            return _Node("constant", token, value=self.symbols[name])
        if called:
            raise self.error(
                f"unknown function `{_printable(name)}`; allowed functions: {_list_names(_FUNCTIONS)}", token
            )
        raise self.error(self.unknown_name(name), token)

    def unknown_name(self, name: str) -> str:
        if self.symbols:
            expected = f"expected one of: {_list_names(self.symbols)} (coordinates and parameters) or pi"
        else:
            expected = "no coordinates or parameters are defined here; the only constant is pi"
        reason = f"unknown name `{name}`; {expected}"
        if not name.isascii():
            characters = ", ".join(_describe_character(c) for c in dict.fromkeys(name) if not c.isascii())
            reason += f"; note that it contains {characters}"
        suggestion = difflib.get_close_matches(name, [*self.symbols, _CONSTANT_PI], n=1)
        if suggestion:
            reason += f"; did you mean `{suggestion[0]}`?"
        if name in ("e", "E"):
            reason += "; write exp(1) for Euler's number"
        return reason

    def parse_call(self, name_token: _Token) -> _Node:
        arity = _FUNCTIONS[name_token.text][1]
        opening = self.lexer.next()
        self.enter(opening)
        arguments = []
        if not self.at_operator(")"):
            arguments.append(self.parse_sum())
            while self.at_operator(","):
                self.lexer.next()
                arguments.append(self.parse_sum())
        self.expect_closing(opening, allow_comma=True)
        self.leave()
        if len(arguments) != arity:
            usage = "atan2(y, x)" if name_token.text == "atan2" else f"{name_token.text}(x)"
            plural = "argument" if arity == 1 else "arguments"
            raise self.error(
                f"the function `{name_token.text}` takes {arity} {plural} ({usage}), got {len(arguments)}",
                name_token,
            )
        return _Node("call", name_token, tuple(arguments))


class _Builder:
    """Build the sympy expression of a syntax tree, checking the rules on numbers at every node."""

    def __init__(self, text: str, max_seconds: float | None):
        self.text = text
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.max_seconds = max_seconds
        self.validated: set[sympy.Basic] = set()

    def error(self, reason: str, token: _Token) -> ExpressionError:
        return ExpressionError(reason, self.text, token.column)

    def build(self, node: _Node) -> sympy.Expr:
        if node.kind == "constant":
            return node.value
        operands = [self.build(child) for child in node.children]
        if node.kind == "add":
            return self.evaluate(node.token, sympy.Add, *operands)
        if node.kind == "mul":
            return self.evaluate(node.token, sympy.Mul, *operands)
        if node.kind == "negate":
            return self.evaluate(node.token, sympy.Mul, sympy.S.NegativeOne, *operands)
        if node.kind == "invert":
            return self.evaluate(node.token, sympy.Pow, *operands, sympy.S.NegativeOne)
        if node.kind == "power":
            problem = _exponent_problem(operands[1])
            if problem:
                raise self.error(problem, node.token)
            return self.evaluate(node.token, sympy.Pow, *operands)
        return self.evaluate(node.token, _FUNCTIONS[node.token.text][0], *operands)

    def evaluate(
        self, token: _Token, constructor: Callable[..., sympy.Expr], *args: sympy.Expr
    ) -> sympy.Expr:
        """Call a sympy constructor and check the result against the rules on numbers.

        Sympy errors raised while evaluating become ExpressionError, located at ``token``.
        """
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise self.error(f"evaluating the expression takes longer than {self.max_seconds} s", token)
        try:
            result = constructor(*args)
        except (ArithmeticError, ValueError, RecursionError, MemoryError) as exc:
            raise self.error(f"sympy cannot evaluate this ({type(exc).__name__})", token) from None
        stack = [result]
        while stack:
            node = stack.pop()
            if node in self.validated:
                continue
            problem = _constant_problem(node)
            if problem:
                raise self.error(problem, token)
            self.validated.add(node)
            stack.extend(node.args)
        return result


def parse_expression(
    text: str,
    names: Mapping[str, sympy.Symbol] | Iterable[str],
    *,
    max_length: int = 10_000,
    max_depth: int = 100,
    max_seconds: float | None = 2.0,
) -> sympy.Expr:
    """Parse an untrusted expression string into a sympy expression, without running any code.

    The accepted grammar and the rules on numbers are given in the module docstring. The text is
    first parsed into a syntax tree (syntax, names, arities, literals and nesting are checked
    without any sympy work), then the sympy expression is built bottom-up, checking every node.

    Parameters
    ----------
    text : str
        Expression such as ``"0.2*sin(q1) - atan2(y, x)**2 + pi/2"``.
    names : Mapping[str, sympy.Symbol] or Iterable[str]
        Names that may appear (coordinates and parameters). A mapping gives the symbol for each
        name, and each symbol's name must equal its key; an iterable of strings creates
        ``sympy.Symbol(name, real=True)`` for each. Every name must pass :func:`check_name`.
    max_length : int, optional
        Longest accepted ``text``, in characters.
    max_depth : int, optional
        Deepest accepted nesting of parentheses, function calls and ``**`` exponents.
    max_seconds : float or None, optional
        Time budget for building the sympy expression, checked before each sympy operation; a
        safety net against long but valid inputs full of costly exact constants (e.g. hundreds of
        distinct ``sqrt(2**1000 + k)`` or ``tan(pi/240)``), since each such sympy evaluation can
        take milliseconds. Ordinary expressions take well under a millisecond per operation.
        ``None`` disables the budget.

    Returns
    -------
    sympy.Expr
        The expression, with sympy's automatic simplifications applied (``2*(x + 1)`` becomes
        ``2*x + 2``, ``sqrt(4)`` becomes ``2``).

    Raises
    ------
    ExpressionError
        If ``text`` is not accepted; the message names the column and offending token.
    TypeError
        If ``text`` is not a string or ``names`` has the wrong type.
    """
    if not isinstance(text, str):
        raise TypeError(f"an expression must be a string, got {type(text).__name__}")
    symbols = _symbol_table(names)
    if len(text) > max_length:
        raise ExpressionError(
            f"the expression is too long ({len(text)} characters; the limit is {max_length})", text
        )
    try:
        tree = _Parser(text, symbols, max_depth).parse()
        return _Builder(text, max_seconds).build(tree)
    except RecursionError:
        raise ExpressionError(
            "the expression is nested too deeply for Python's recursion limit; lower max_depth", text
        ) from None

