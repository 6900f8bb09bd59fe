"""Numeric evaluation of model-file formulas, in double precision.

Formulas in a model file are parsed by :func:`mbkron.expressions.parser.parse_expression` (a whitelist
parser; nothing in a file is ever given to ``eval``, ``exec``, ``compile`` or ``sympy.sympify``).
Numbers computed from them are evaluated here (:func:`evaluate_expression`), never by sympy's
arbitrary-precision arithmetic, so no formula can make loading hang. Reading, writing and comparing
model files: :mod:`mbkron.io.reader`, :mod:`mbkron.io.writer`, :mod:`mbkron.io.compare`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import sympy

from mbkron.expressions.parser import ExpressionError

__all__ = ["evaluate_expression"]



# ====================================================================== numeric evaluation
_NUMPY_FUNCTIONS: dict[type, Callable] = {
    sympy.sin: np.sin,
    sympy.cos: np.cos,
    sympy.tan: np.tan,
    sympy.asin: np.arcsin,
    sympy.acos: np.arccos,
    sympy.atan: np.arctan,
    sympy.atan2: np.arctan2,
    sympy.exp: np.exp,
    sympy.log: np.log,
    sympy.Abs: np.abs,
}


def evaluate_expression(expr: sympy.Expr, values: Mapping[str, object]) -> np.ndarray:
    """Evaluate an expression of the whitelist grammar in double precision, elementwise.

    Walks the expression tree with numpy ufuncs (no code generation, no arbitrary-precision
    arithmetic), so its cost is linear in the size of the expression whatever the numbers are.
    Results may be ``inf`` or ``nan`` (e.g. ``exp(1000)``, ``log(-1)``); callers check.

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
    with np.errstate(all="ignore"):
        return np.asarray(_evaluate_node(expr, values), dtype=float)


def _evaluate_node(node: sympy.Basic, values: Mapping[str, object]):
    if node.is_Symbol:
        return np.asarray(values[node.name], dtype=float)
    if node.is_Integer:
        return _exact_to_float(node.p, 1)
    if node.is_Rational:
        return _exact_to_float(node.p, node.q)
    if node.is_Float:
        return np.float64(float(node))
    if node is sympy.S.Pi:
        return np.float64(math.pi)
    if node is sympy.S.Exp1:
        return np.float64(math.e)
    arguments = [_evaluate_node(argument, values) for argument in node.args]
    if node.is_Add:
        return sum(arguments[1:], arguments[0])
    if node.is_Mul:
        product = arguments[0]
        for factor in arguments[1:]:
            product = product * factor
        return product
    if node.is_Pow:
        return np.power(np.asarray(arguments[0], dtype=float), arguments[1])
    function = _NUMPY_FUNCTIONS.get(type(node))
    if function is None:
        raise ExpressionError(f"cannot evaluate {type(node).__name__}: it is not part of the expression grammar")
    return function(*arguments)


def _exact_to_float(numerator: int, denominator: int) -> np.float64:
    try:
        return np.float64(numerator / denominator)
    except OverflowError:
        return np.float64(math.copysign(math.inf, numerator))


def _is_normal_double(value: float) -> bool:
    return value == 0.0 or (math.isfinite(value) and abs(value) >= 2.2250738585072014e-308)
