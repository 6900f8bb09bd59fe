"""Safe parsing and printing of the scalar expressions found in model files.

Model files are untrusted input, yet they contain formulas: joint variables, moving via points,
driving functions. This module turns such a string into a :mod:`sympy` expression with a small
hand-written tokenizer and recursive-descent parser, whose syntax tree is then turned into sympy
objects by calling their constructors directly (``sympy.Add``, ``sympy.sin``, ...). Nothing is ever
passed to ``eval``, ``exec``, ``compile``, ``ast``, ``sympy.sympify`` or ``sympy.parse_expr``, so no
code in the string can run. :func:`format_expression` prints expressions back in the same grammar.

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
import math
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

import sympy

__all__ = [
    "ExpressionError",
    "check_name",
    "format_expression",
    "free_names",
    "parse_expression",
]

#: Functions callable in expressions: name -> (sympy constructor, number of arguments).
def _absolute(argument: sympy.Expr) -> sympy.Expr:
    """``abs``: ``sympy.Abs`` made idempotent (sympy turns ``Abs(−Abs(x))`` into ``Abs(Abs(x))``,
    which then prints and parses back as ``Abs(x)``: one canonical form per value)."""
    value = sympy.Abs(argument)
    while isinstance(value, sympy.Abs) and isinstance(value.args[0], sympy.Abs):
        value = value.args[0]
    return value


_FUNCTIONS: dict[str, tuple[Callable[..., sympy.Expr], int]] = {
    "sin": (sympy.sin, 1),
    "cos": (sympy.cos, 1),
    "tan": (sympy.tan, 1),
    "asin": (sympy.asin, 1),
    "acos": (sympy.acos, 1),
    "atan": (sympy.atan, 1),
    "atan2": (sympy.atan2, 2),
    "exp": (sympy.exp, 1),
    "log": (sympy.log, 1),
    "sqrt": (sympy.sqrt, 1),
    "abs": (_absolute, 1),
}
#: Sympy function classes printed as calls (``sqrt`` is a power in sympy and printed as such).
_FUNCTION_NAMES: dict[type, str] = {
    constructor: name for name, (constructor, _) in _FUNCTIONS.items() if isinstance(constructor, type)
} | {sympy.Abs: "abs"}
_CONSTANT_PI = "pi"

#: Exact integers (and numerators/denominators of fractions) must be below 2**MAX_INTEGER_BITS.
MAX_INTEGER_BITS = 1024
#: Exact exponents p/q must satisfy |p| <= MAX_EXPONENT and q <= MAX_EXPONENT.
MAX_EXPONENT = 1024
_MAX_INTEGER_DIGITS = 309  # 2**1024 has 309 decimal digits
_NON_FINITE = (sympy.S.ComplexInfinity, sympy.S.NaN, sympy.S.Infinity, sympy.S.NegativeInfinity)

_WHITESPACE = " \t\r\n"
_DIGITS = "0123456789"
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_OPERATORS = ("**", "+", "-", "*", "/", "(", ")", ",")
_CHARACTER_HINTS = {
    "^": "use ** for powers",
    ".": "`.` is only allowed inside numbers; attribute access is not allowed",
    "[": "subscripts are not allowed",
    "]": "subscripts are not allowed",
    "{": "braces are not allowed",
    "}": "braces are not allowed",
    "=": "assignments, keyword arguments and comparisons are not allowed",
    "<": "comparisons are not allowed",
    ">": "comparisons are not allowed",
    "!": "comparisons and negation are not allowed",
    "'": "strings are not allowed",
    '"': "strings are not allowed",
    "%": "the % operator is not allowed",
    "&": "bitwise and boolean operators are not allowed",
    "|": "bitwise and boolean operators are not allowed",
    "~": "bitwise and boolean operators are not allowed",
    "@": "matrix multiplication and decorators are not allowed",
    ":": "slices, lambdas and assignment expressions are not allowed",
    ";": "only a single expression is allowed",
    "#": "comments are not allowed",
    "\\": "backslashes are not allowed",
}
_EXPECTED_OPERAND = "expected a number, a name, a function call or `(`"
_EXPECTED_OPERATOR = "expected an operator (+ - * / **) or the end of the expression"
_MAX_LISTED_NAMES = 20
_EXCERPT_WIDTH = 60

_PREC_ADD, _PREC_MUL, _PREC_UNARY, _PREC_POW, _PREC_ATOM = range(5)


class ExpressionError(ValueError):
    """An expression string that is not accepted, or an expression that cannot be printed.

    Parameters
    ----------
    reason : str
        What is wrong, e.g. ``"unknown name `foo`; expected one of: q1, q2"``.
    text : str, optional
        The expression text; an excerpt of it starts the message.
    column : int, optional
        1-based column (character position in ``text``) of the offending token.

    Attributes
    ----------
    reason, text, column
        As given, so callers can re-word the message (e.g. prefix the model field).
    """

    def __init__(self, reason: str, text: str | None = None, column: int | None = None):
        self.reason = reason
        self.text = text
        self.column = column
        if text is None:
            message = reason
        elif column is None:
            message = f"`{_excerpt(text, 1)}`: {reason}"
        else:
            message = f"`{_excerpt(text, column)}` at column {column}: {reason}"
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str, str | None, int | None]]:
        return type(self), (self.reason, self.text, self.column)


def _printable(text: str) -> str:
    """Escape characters that would garble a message (control characters, lone surrogates)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _excerpt(text: str, column: int) -> str:
    """Return ``text``, or a window of it around ``column`` if it is long, for a message."""
    if len(text) <= _EXCERPT_WIDTH:
        return _printable(text)
    start = max(0, min(column - 1 - _EXCERPT_WIDTH // 2, len(text) - _EXCERPT_WIDTH))
    stop = start + _EXCERPT_WIDTH
    prefix = "…" if start > 0 else ""
    suffix = "…" if stop < len(text) else ""
    return f"{prefix}{_printable(text[start:stop])}{suffix}"


def _describe_character(character: str) -> str:
    """Name a character for a message, e.g. ``"`−` (U+2212 MINUS SIGN)"``."""
    name = unicodedata.name(character, "unnamed character")
    return f"`{_printable(character)}` (U+{ord(character):04X} {name})"


def _describe_integer(value: int) -> str:
    """Show an integer in a message; huge ones as ``~10**k`` (never calling ``str`` on them)."""
    if abs(value).bit_length() > 64:
        sign = "-" if value < 0 else ""
        return f"{sign}~10**{math.floor(math.log10(abs(value)))}"
    return str(value)


def _list_names(names: Iterable[str]) -> str:
    """Join names for a message, abbreviating long lists."""
    names = list(names)
    listed = ", ".join(names[:_MAX_LISTED_NAMES])
    if len(names) > _MAX_LISTED_NAMES:
        listed += f", … ({len(names) - _MAX_LISTED_NAMES} more)"
    return listed


def check_name(name: str) -> None:
    """Check that ``name`` can be used as a coordinate or parameter name in expressions.

    Parameters
    ----------
    name : str
        Candidate name.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ExpressionError
        If ``name`` is not an identifier (a letter or ``_`` followed by letters, digits or ``_``),
        is not in Unicode NFKC normal form, or is reserved (a function name or ``pi``).
    """
    if not isinstance(name, str):
        raise TypeError(f"a name must be a string, got {type(name).__name__}")
    if not name.isidentifier():
        raise ExpressionError(
            f"invalid name `{_printable(name)}`: a name is a letter or `_` followed by letters, "
            "digits or `_`"
        )
    normalized = unicodedata.normalize("NFKC", name)
    if normalized != name:
        raise ExpressionError(
            f"invalid name `{name}`: it is not in Unicode NFKC normal form (it normalises to "
            f"`{normalized}`)"
        )
    if name in _FUNCTIONS:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the function {name}")
    if name == _CONSTANT_PI:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the constant pi")


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


class _Token(NamedTuple):
    """A token: ``kind`` is ``"number"``, ``"name"``, ``"operator"`` or ``"end"``."""

    kind: str
    text: str
    column: int


class _Lexer:
    """Split an expression into tokens on demand, so errors are reported left to right."""

    def __init__(self, text: str):
        self.text = text
        self.position = 0
        self.lookahead: _Token | None = None

    def error(self, reason: str, position: int) -> ExpressionError:
        return ExpressionError(reason, self.text, position + 1)

    def peek(self) -> _Token:
        if self.lookahead is None:
            self.lookahead = self._scan()
        return self.lookahead

    def next(self) -> _Token:
        token = self.peek()
        self.lookahead = None
        return token

    def at_parenthesis(self) -> bool:
        """Whether the next token is ``(``, without scanning (and so reporting) anything else.

        Only called right after :meth:`next`, when no token is looked ahead.
        """
        position = self.position
        while position < len(self.text) and self.text[position] in _WHITESPACE:
            position += 1
        return self.text.startswith("(", position)

    def _scan(self) -> _Token:
        text = self.text
        while self.position < len(text) and text[self.position] in _WHITESPACE:
            self.position += 1
        start = self.position
        if start == len(text):
            return _Token("end", "", start + 1)
        character = text[start]
        next_character = text[start + 1] if start + 1 < len(text) else ""
        if character in _DIGITS or (character == "." and next_character and next_character in _DIGITS):
            return self._scan_number(start)
        if character.isidentifier():
            return self._scan_name(start)
        if text.startswith("//", start):
            raise self.error("floor division `//` is not allowed", start)
        for operator in _OPERATORS:
            if text.startswith(operator, start):
                self.position = start + len(operator)
                return _Token("operator", operator, start + 1)
        raise self.error(self._unexpected_character(character), start)

    def _scan_number(self, start: int) -> _Token:
        match = _NUMBER.match(self.text, start)
        end = match.end()
        if end < len(self.text) and (self.text[end] == "." or _is_name_character(self.text[end])):
            while end < len(self.text) and (self.text[end] == "." or _is_name_character(self.text[end])):
                end += 1
            raise self.error(_malformed_number(self.text[start:end]), start)
        self.position = end
        return _Token("number", match.group(), start + 1)

    def _scan_name(self, start: int) -> _Token:
        end = start + 1
        while end < len(self.text) and _is_name_character(self.text[end]):
            end += 1
        word = self.text[start:end]
        normalized = unicodedata.normalize("NFKC", word)
        if normalized != word:
            raise self.error(
                f"identifier `{word}` is not in Unicode NFKC normal form (it would read as "
                f"`{_printable(normalized)}`); write identifiers in normal form, e.g. with ASCII "
                "letters",
                start,
            )
        self.position = end
        return _Token("name", word, start + 1)

    @staticmethod
    def _unexpected_character(character: str) -> str:
        reason = f"unexpected character {_describe_character(character)}"
        if character in _CHARACTER_HINTS:
            return f"{reason}; {_CHARACTER_HINTS[character]}"
        normalized = unicodedata.normalize("NFKC", character)
        if character.isspace():
            return f"{reason}; only ASCII spaces, tabs and line breaks may separate tokens"
        if normalized != character and normalized.isascii():
            return f"{reason}; write `{_printable(normalized)}` instead"
        if unicodedata.category(character) == "Nd":
            return f"{reason}; only the ASCII digits 0-9 are allowed in numbers"
        if not character.isascii():
            return f"{reason}; only ASCII characters are allowed outside names"
        return reason


def _is_name_character(character: str) -> bool:
    """Whether ``character`` may continue an identifier."""
    return ("_" + character).isidentifier()


def _malformed_number(token: str) -> str:
    """Explain why ``token`` (a number followed by letters, digits or dots) is not a number."""
    reason = f"malformed number `{_printable(token)}`"
    lowered = token.lower()
    if "_" in token:
        return f"{reason}; underscores in numbers are not allowed"
    if lowered.endswith("j"):
        return f"{reason}; complex numbers are not allowed"
    if lowered[:2] in ("0x", "0o", "0b"):
        return f"{reason}; only decimal numbers are allowed"
    return f"{reason}; write numbers like 3, 0.25 or 1.5e-3, and * for multiplication"


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


def format_expression(expr: sympy.Expr) -> str:
    """Print a sympy expression in the grammar read by :func:`parse_expression`.

    ``parse_expression(format_expression(expr), names)`` gives back ``expr`` (the same sympy
    expression, in particular the same value) for any expression built by
    :func:`parse_expression` and for results of substituting or differentiating it, as long as they
    use only the grammar's functions. Floats are printed with ``repr`` (at most 17 significant
    digits), which is exact for the 53-bit normal doubles the parser produces; a sympy Float of
    higher precision is rounded to the nearest double. ``E`` is printed as ``exp(1)``, square roots
    as ``sqrt(...)``. Derivatives can be long: pass a larger ``max_length`` to read them back.

    Parameters
    ----------
    expr : sympy.Expr
        Expression to print.

    Returns
    -------
    str
        The expression text, e.g. ``"0.2*sin(q1) - atan2(y, x)**2 + pi/2"``.

    Raises
    ------
    ExpressionError
        If ``expr`` contains something the grammar cannot express, e.g. ``sign(q1)`` (the
        derivative of ``abs(q1)``), ``I``, ``oo``, an unprintable symbol name or a non-finite float.
    TypeError
        If ``expr`` is not a sympy expression.
    """
    if not isinstance(expr, sympy.Expr):
        raise TypeError(f"expected a sympy expression, got {type(expr).__name__}")
    return _format(expr)[0]


def free_names(expr: sympy.Expr) -> set[str]:
    """Return the names of the free symbols of ``expr`` (the coordinates and parameters it uses).

    Parameters
    ----------
    expr : sympy.Expr
        Expression, e.g. from :func:`parse_expression`.

    Returns
    -------
    set of str
        Symbol names, e.g. ``{"q1", "a"}`` for ``a*sin(q1) + pi``.
    """
    return {symbol.name for symbol in expr.free_symbols}


def _wrap(printed: tuple[str, int], min_precedence: int) -> str:
    """Parenthesize ``printed`` (text, precedence) unless its precedence is at least the minimum."""
    text, precedence = printed
    return text if precedence >= min_precedence else f"({text})"


def _format(expr: sympy.Expr) -> tuple[str, int]:
    """Print ``expr``; return the text and the precedence of its outermost operation."""
    if expr.is_Symbol:
        check_name(expr.name)
        return expr.name, _PREC_ATOM
    if expr.is_Integer:
        return (str(expr.p), _PREC_ATOM) if expr.p >= 0 else (f"-{-expr.p}", _PREC_UNARY)
    if expr.is_Rational:
        text = f"{abs(expr.p)}/{expr.q}"
        return (text, _PREC_MUL) if expr.p > 0 else (f"-{text}", _PREC_UNARY)
    if expr.is_Float:
        if _constant_problem(expr):
            raise ExpressionError(f"cannot format the number {expr}: it is not a normal double")
        value = float(expr)
        return (repr(value), _PREC_ATOM) if value >= 0 else (f"-{-value!r}", _PREC_UNARY)
    if expr is sympy.S.Pi:
        return _CONSTANT_PI, _PREC_ATOM
    if expr is sympy.S.Exp1:
        return "exp(1)", _PREC_ATOM
    if expr.is_Add:
        return _format_sum(expr), _PREC_ADD
    if expr.is_Mul:
        return _format_product(expr)
    if expr.is_Pow:
        return _format_power(expr.base, expr.exp)
    if type(expr) in _FUNCTION_NAMES:
        arguments = ", ".join(_format(argument)[0] for argument in expr.args)
        return f"{_FUNCTION_NAMES[type(expr)]}({arguments})", _PREC_ATOM
    shown = str(expr)
    if len(shown) > _EXCERPT_WIDTH:
        shown = shown[: _EXCERPT_WIDTH - 1] + "…"
    raise ExpressionError(
        f"cannot format `{shown}`: {type(expr).__name__} is not part of the expression grammar"
    )


def _is_negative_term(term: sympy.Expr) -> bool:
    """Whether a term has a negative numeric coefficient (and is printed after a minus sign)."""
    return bool(term.as_coeff_Mul()[0].is_negative)


def _format_sum(expr: sympy.Add) -> str:
    terms = expr.as_ordered_terms()
    pieces = [_wrap(_format(terms[0]), _PREC_ADD + 1)]
    for term in terms[1:]:
        if _is_negative_term(term):
            pieces.append(f" - {_wrap(_format(-term), _PREC_ADD + 1)}")
        else:
            pieces.append(f" + {_wrap(_format(term), _PREC_ADD + 1)}")
    return "".join(pieces)


def _format_product(expr: sympy.Mul) -> tuple[str, int]:
    negative = _is_negative_term(expr)
    if negative:
        expr = -expr
        if not expr.is_Mul:
            return _negate(_format(expr))
    numerator: list[tuple[str, int]] = []
    denominator: list[tuple[str, int]] = []
    for factor in expr.as_ordered_factors():
        if factor.is_Rational and not factor.is_Integer:
            if factor.p != 1:
                numerator.append((str(factor.p), _PREC_ATOM))
            denominator.append((str(factor.q), _PREC_ATOM))
        elif factor.is_Pow and factor.exp.is_Number and factor.exp.is_negative:
            denominator.append(_format_power(factor.base, -factor.exp))
        else:
            numerator.append(_format(factor))
    if negative:
        # `-(x + 1)*y` would read as `(-x - 1)*y`: put a factor that needs no parentheses first.
        numerator.sort(key=lambda item: item[1] <= _PREC_MUL)
    if len(numerator) + len(denominator) == 1 and numerator:
        printed = numerator[0]
    else:
        text = "*".join(_wrap(item, _PREC_MUL + 1) for item in numerator) or "1"
        text += "".join(f"/{_wrap(item, _PREC_MUL + 1)}" for item in denominator)
        printed = (text, _PREC_MUL)
    if not negative:
        return printed
    if numerator and numerator[0][1] <= _PREC_MUL:
        printed = (f"({printed[0]})", _PREC_ATOM)
    return _negate(printed)


def _negate(printed: tuple[str, int]) -> tuple[str, int]:
    """Print the negation of ``printed`` (text, precedence) with a unary minus.

    ``-a*b`` reads as ``(-a)*b``, which is the same product, so a product needs no parentheses.
    """
    text, precedence = printed
    if precedence == _PREC_MUL:
        return f"-{text}", _PREC_MUL
    return f"-{_wrap(printed, _PREC_UNARY)}", _PREC_UNARY


def _format_power(base: sympy.Expr, exponent: sympy.Expr) -> tuple[str, int]:
    if exponent is sympy.S.One:
        return _format(base)
    if exponent is sympy.S.Half:
        return f"sqrt({_format(base)[0]})", _PREC_ATOM
    if exponent.is_Number and exponent.is_negative:
        return f"1/{_wrap(_format_power(base, -exponent), _PREC_MUL + 1)}", _PREC_MUL
    return f"{_wrap(_format(base), _PREC_ATOM)}**{_wrap(_format(exponent), _PREC_ATOM)}", _PREC_POW
