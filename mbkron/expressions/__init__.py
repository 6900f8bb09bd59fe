"""Expressions in model files: the whitelist parser (never ``eval``) and its printer.
"""

from mbkron.expressions.parser import ExpressionError, format_expression, free_names, parse_expression

__all__ = ["ExpressionError", "format_expression", "free_names", "parse_expression"]
