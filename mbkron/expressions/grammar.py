"""The expression grammar's vocabulary: its functions and constant, and checks of names and trees.

The grammar itself (numbers, names, ``+ - * / **``, calls) is described in
:mod:`mbkron.expressions.parser`; this module lists what a call may name and checks that a name
may be declared (:func:`check_name`) and that a sympy tree uses only the grammar's operations
(:func:`check_grammar`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

import sympy

from mbkron.expressions.lexer import ExpressionError, _printable

__all__ = ["CONSTANT_PI", "FUNCTIONS", "FUNCTION_NAMES", "check_grammar", "check_name"]


def _absolute(argument: sympy.Expr) -> sympy.Expr:
    """``abs``: ``sympy.Abs`` made idempotent (sympy turns ``Abs(−Abs(x))`` into ``Abs(Abs(x))``,
    which then prints and parses back as ``Abs(x)``: one canonical form per value)."""
    value = sympy.Abs(argument)
    while isinstance(value, sympy.Abs) and isinstance(value.args[0], sympy.Abs):
        value = value.args[0]
    return value


#: Functions callable in expressions: name -> (sympy constructor, number of arguments).
FUNCTIONS: dict[str, tuple[Callable[..., sympy.Expr], int]] = {
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
FUNCTION_NAMES: dict[type, str] = {
    constructor: name for name, (constructor, _) in FUNCTIONS.items() if isinstance(constructor, type)
} | {sympy.Abs: "abs"}
CONSTANT_PI = "pi"


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
    if name in FUNCTIONS:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the function {name}")
    if name == CONSTANT_PI:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the constant pi")


def check_grammar(expr: sympy.Expr) -> None:
    """Check that ``expr`` uses only the operations of the grammar (module docstring).

    Expressions from :func:`parse_expression` pass, and so do results of substituting numbers or
    grammar expressions into them; sympy may rewrite an expression into other functions, which fail.

    Parameters
    ----------
    expr : sympy.Expr
        Expression to check.

    Raises
    ------
    ExpressionError
        Naming the first operation outside the grammar, e.g. ``sign`` or ``Infinity``.
    """
    for node in sympy.preorder_traversal(expr):
        allowed = (
            node.is_Symbol or node.is_Rational or node.is_Float or node.is_Add or node.is_Mul or node.is_Pow
            or node is sympy.S.Pi or node is sympy.S.Exp1 or type(node) in FUNCTION_NAMES
        )
        if not allowed:
            raise ExpressionError(f"cannot evaluate {type(node).__name__}: it is not part of the expression grammar")
