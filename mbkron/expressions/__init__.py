"""Expressions in model files: the whitelist parser (never ``eval``), its printer, and the code
generator that turns sympy expressions into numbers.
"""

from mbkron.expressions.format import format_expression, free_names
from mbkron.expressions.lexer import ExpressionError
from mbkron.expressions.parser import check_grammar, check_name, parse_expression

__all__ = ["ExpressionError", "check_grammar", "check_name", "format_expression", "free_names", "parse_expression"]
