"""Printing sympy expressions in the grammar read by :func:`mbkron.expressions.parser.parse_expression`.

:func:`format_expression` is the inverse of the parser (a model written back to a file reads
as the same model); :func:`free_names` lists the names an expression uses.
"""

from __future__ import annotations

import sympy

from mbkron.expressions.lexer import _EXCERPT_WIDTH, ExpressionError
from mbkron.expressions.grammar import CONSTANT_PI as _CONSTANT_PI, FUNCTION_NAMES as _FUNCTION_NAMES, check_name
from mbkron.expressions.parser import _constant_problem

__all__ = ["format_expression", "free_names"]

_PREC_ADD, _PREC_MUL, _PREC_UNARY, _PREC_POW, _PREC_ATOM = range(5)


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
