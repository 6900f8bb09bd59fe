"""Numeric evaluation of model-file formulas, in double precision.

Formulas in a model file are parsed by :func:`mbkron.expressions.parser.parse_expression` (a whitelist
parser; nothing in a file is ever given to ``eval``, ``exec``, ``compile`` or ``sympy.sympify``).
Numbers computed from them are evaluated here (:func:`evaluate_expression`), never by sympy's
arbitrary-precision arithmetic, so no formula can make loading hang. Reading, writing and comparing
model files: :mod:`mbkron.io.reader`, :mod:`mbkron.io.writer`, :mod:`mbkron.io.compare`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import numpy as np

from mbkron.core.lazy import LazyModule


__all__ = ["evaluate_expression", "is_normal_double"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
_grammar = LazyModule("mbkron.expressions.grammar")
codegen = LazyModule("mbkron.expressions.codegen")


# ====================================================================== numeric evaluation
def evaluate_expression(expr: sympy.Expr, values: Mapping[str, object]) -> np.ndarray:
    """Evaluate an expression of the whitelist grammar in double precision, elementwise.

    The expression is compiled once (cached) into numpy code by :mod:`mbkron.expressions.codegen`,
    which prints every number as a double literal, so no arbitrary-precision arithmetic happens and
    the cost is that of printing the expression once, then of numpy operations. Results may be
    ``inf`` or ``nan`` (e.g. ``exp(1000)``, ``log(-1)``); callers check.

    Parameters
    ----------
    expr : sympy.Expr
        An expression built by :func:`mbkron.expressions.parser.parse_expression` (or derived from one
        by substitution), using only the grammar's operations and functions.
    values : mapping of str to float or ndarray
        A value for every free symbol, by name; arrays broadcast.

    Returns
    -------
    ndarray
        The value (a 0-d array for scalar inputs).

    Raises
    ------
    KeyError
        If a symbol has no value.
    ExpressionError
        If the expression contains an operation outside the grammar.
    """
    symbols = sorted(expr.free_symbols, key=lambda symbol: symbol.name)
    arguments = [np.asarray(values[symbol.name], dtype=float) for symbol in symbols]
    placeholders = {symbol: _placeholder(k, tuple(sorted(symbol.assumptions0.items()))) for k, symbol in enumerate(symbols)}
    with np.errstate(all="ignore"):
        return np.asarray(_grammar_function(expr.xreplace(placeholders), len(symbols))(*arguments)[0], dtype=float)


@functools.lru_cache(maxsize=256)
def _placeholder(position: int, assumptions: tuple) -> sympy.Symbol:
    """The symbol standing for the argument at ``position`` (with the assumptions of the symbol it replaces)."""
    return sympy.Symbol(f"_x{position}", **dict(assumptions))


@functools.lru_cache(maxsize=1024)
def _grammar_function(expr: sympy.Expr, count: int) -> Callable:
    """The numpy function of ``expr``, whose free symbols are the placeholders ``_x0`` ... ``_x{count-1}``.

    Expressions are cached with their symbols replaced by placeholders by position, so formulas of
    the same shape in different names (``p2 = "p1 + 1"``, ``p3 = "p2 + 1"``, ...) are compiled once.
    """
    _grammar.check_grammar(expr)
    symbols = sorted(expr.free_symbols, key=lambda symbol: int(symbol.name[2:]))
    return codegen.numpy_function(symbols, [expr], name="expression")


def is_normal_double(value: float) -> bool:
    """Whether ``value`` is zero or a finite double of normal magnitude (not subnormal)."""
    return value == 0.0 or (math.isfinite(value) and abs(value) >= 2.2250738585072014e-308)
