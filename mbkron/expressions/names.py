"""The names of the expression grammar, without sympy: its functions and constant, and which names may be declared.

Reading a model file checks every coordinate and parameter name (:func:`check_name`) but needs sympy
only for formulas; this module lets it check names without importing sympy (~0.2 s of CPU). The
functions' sympy constructors are in :mod:`mbkron.expressions.grammar`.
"""

from __future__ import annotations

import unicodedata

from mbkron.expressions.lexer import ExpressionError, _printable

__all__ = ["ARITIES", "CONSTANT_PI", "check_name"]

#: Functions callable in expressions: name -> number of arguments.
ARITIES: dict[str, int] = {"sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2, "exp": 1, "log": 1,
                           "sqrt": 1, "abs": 1}
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
    if name in ARITIES:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the function {name}")
    if name == CONSTANT_PI:
        raise ExpressionError(f"invalid name `{name}`: it is reserved for the constant pi")
