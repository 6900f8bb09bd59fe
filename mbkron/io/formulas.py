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
import sympy

from mbkron.expressions import check_grammar, codegen

__all__ = ["evaluate_expression", "is_normal_double"]


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
    names = tuple(sorted(symbol.name for symbol in expr.free_symbols))
    arguments = [np.asarray(values[name], dtype=float) for name in names]
    with np.errstate(all="ignore"):
        return np.asarray(_grammar_function(expr, names)(*arguments)[0], dtype=float)


@functools.lru_cache(maxsize=1024)
def _grammar_function(expr: sympy.Expr, names: tuple[str, ...]) -> Callable:
    """The numpy function of ``expr`` with the arguments ``names`` (its free symbols' names)."""
    check_grammar(expr)
    symbols = sorted(expr.free_symbols, key=lambda symbol: symbol.name)
    return codegen.numpy_function(symbols, [expr], name="expression")


def is_normal_double(value: float) -> bool:
    """Whether ``value`` is zero or a finite double of normal magnitude (not subnormal)."""
    return value == 0.0 or (math.isfinite(value) and abs(value) >= 2.2250738585072014e-308)
