"""The expression grammar's vocabulary: its functions and constant, and checks of names and trees.

The grammar itself (numbers, names, ``+ - * / **``, calls) is described in
:mod:`mbkron.expressions.parser`; this module gives each function's sympy constructor and checks that a sympy tree uses only the
grammar's operations (:func:`check_grammar`). The names themselves, and the check that a name may be
declared (:func:`check_name`), are in :mod:`mbkron.expressions.names`, which needs no sympy.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy

from mbkron.expressions.lexer import ExpressionError
from mbkron.expressions.names import ARITIES, CONSTANT_PI, check_name

__all__ = ["CONSTANT_PI", "FUNCTIONS", "FUNCTION_NAMES", "check_grammar", "check_name"]


def _absolute(argument: sympy.Expr) -> sympy.Expr:
    """``abs``: ``sympy.Abs`` made idempotent (sympy turns ``Abs(−Abs(x))`` into ``Abs(Abs(x))``,
    which then prints and parses back as ``Abs(x)``: one canonical form per value)."""
    value = sympy.Abs(argument)
    while isinstance(value, sympy.Abs) and isinstance(value.args[0], sympy.Abs):
        value = value.args[0]
    return value


#: Functions callable in expressions: name -> (sympy constructor, number of arguments); the names and
#: arities are :data:`~mbkron.expressions.names.ARITIES`, each sympy's function of that name but ``abs``.
FUNCTIONS: dict[str, tuple[Callable[..., sympy.Expr], int]] = {
    name: (_absolute if name == "abs" else getattr(sympy, name), arity) for name, arity in ARITIES.items()
}
#: Sympy function classes printed as calls (``sqrt`` is a power in sympy and printed as such).
FUNCTION_NAMES: dict[type, str] = {
    constructor: name for name, (constructor, _) in FUNCTIONS.items() if isinstance(constructor, type)
} | {sympy.Abs: "abs"}


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
