"""Expressions in model files: the whitelist parser (never ``eval``), its printer, and the code
generator that turns sympy expressions into numbers.

The public names are imported on first use (PEP 562): :class:`ExpressionError` and :func:`check_name`
need no sympy, so reading a model file whose values are numbers and whose joint variables are
coordinate names (an OpenSim model) does not import sympy; the parser, the printer and the code
generator do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mbkron.core.lazy import lazy_exports

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from mbkron.expressions.format import format_expression, free_names
    from mbkron.expressions.grammar import check_grammar
    from mbkron.expressions.lexer import ExpressionError
    from mbkron.expressions.names import check_name
    from mbkron.expressions.parser import parse_expression

__all__ = ["ExpressionError", "check_grammar", "check_name", "format_expression", "free_names", "parse_expression"]

#: The module of each public name (imported when the name is first read).
_LAZY: dict[str, str] = {
    "ExpressionError": "mbkron.expressions.lexer",
    "check_grammar": "mbkron.expressions.grammar",
    "check_name": "mbkron.expressions.names",
    "format_expression": "mbkron.expressions.format",
    "free_names": "mbkron.expressions.format",
    "parse_expression": "mbkron.expressions.parser",
}


__getattr__, __dir__ = lazy_exports("mbkron.expressions", _LAZY)
