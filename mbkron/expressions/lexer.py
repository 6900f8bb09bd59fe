"""Tokens of the expression grammar, and the error type of the expressions package.

:class:`_Lexer` splits an expression string into numbers, names and operators on demand, so that
errors are reported left to right with their column (:class:`ExpressionError`). The grammar and
its rules are described in :mod:`mbkron.expressions.parser`, which drives this lexer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import NamedTuple

__all__ = ["ExpressionError"]

_WHITESPACE = " \t\r\n"
_DIGITS = "0123456789"
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_OPERATORS = ("**", "+", "-", "*", "/", "(", ")", ",")
_CHARACTER_HINTS = {
    "^": "use ** for powers",
    ".": "`.` is only allowed inside numbers; attribute access is not allowed",
    "[": "subscripts are not allowed",
    "]": "subscripts are not allowed",
    "{": "braces are not allowed",
    "}": "braces are not allowed",
    "=": "assignments, keyword arguments and comparisons are not allowed",
    "<": "comparisons are not allowed",
    ">": "comparisons are not allowed",
    "!": "comparisons and negation are not allowed",
    "'": "strings are not allowed",
    '"': "strings are not allowed",
    "%": "the % operator is not allowed",
    "&": "bitwise and boolean operators are not allowed",
    "|": "bitwise and boolean operators are not allowed",
    "~": "bitwise and boolean operators are not allowed",
    "@": "matrix multiplication and decorators are not allowed",
    ":": "slices, lambdas and assignment expressions are not allowed",
    ";": "only a single expression is allowed",
    "#": "comments are not allowed",
    "\\": "backslashes are not allowed",
}
_EXCERPT_WIDTH = 60


class ExpressionError(ValueError):
    """An expression string that is not accepted, or an expression that cannot be printed.

    Parameters
    ----------
    reason : str
        What is wrong, e.g. ``"unknown name `foo`; expected one of: q1, q2"``.
    text : str, optional
        The expression text; an excerpt of it starts the message.
    column : int, optional
        1-based column (character position in ``text``) of the offending token.

    Attributes
    ----------
    reason, text, column
        As given, so callers can re-word the message (e.g. prefix the model field).
    """

    def __init__(self, reason: str, text: str | None = None, column: int | None = None):
        self.reason = reason
        self.text = text
        self.column = column
        if text is None:
            message = reason
        elif column is None:
            message = f"`{_excerpt(text, 1)}`: {reason}"
        else:
            message = f"`{_excerpt(text, column)}` at column {column}: {reason}"
        super().__init__(message)

    def __reduce__(self) -> tuple[type, tuple[str, str | None, int | None]]:
        return type(self), (self.reason, self.text, self.column)


def _printable(text: str) -> str:
    """Escape characters that would garble a message (control characters, lone surrogates)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _excerpt(text: str, column: int) -> str:
    """Return ``text``, or a window of it around ``column`` if it is long, for a message."""
    if len(text) <= _EXCERPT_WIDTH:
        return _printable(text)
    start = max(0, min(column - 1 - _EXCERPT_WIDTH // 2, len(text) - _EXCERPT_WIDTH))
    stop = start + _EXCERPT_WIDTH
    prefix = "…" if start > 0 else ""
    suffix = "…" if stop < len(text) else ""
    return f"{prefix}{_printable(text[start:stop])}{suffix}"


def _describe_character(character: str) -> str:
    """Name a character for a message, e.g. ``"`−` (U+2212 MINUS SIGN)"``."""
    name = unicodedata.name(character, "unnamed character")
    return f"`{_printable(character)}` (U+{ord(character):04X} {name})"


def _describe_integer(value: int) -> str:
    """Show an integer in a message; huge ones as ``~10**k`` (never calling ``str`` on them)."""
    if abs(value).bit_length() > 64:
        sign = "-" if value < 0 else ""
        return f"{sign}~10**{math.floor(math.log10(abs(value)))}"
    return str(value)



class _Token(NamedTuple):
    """A token: ``kind`` is ``"number"``, ``"name"``, ``"operator"`` or ``"end"``."""

    kind: str
    text: str
    column: int


class _Lexer:
    """Split an expression into tokens on demand, so errors are reported left to right."""

    def __init__(self, text: str):
        self.text = text
        self.position = 0
        self.lookahead: _Token | None = None

    def error(self, reason: str, position: int) -> ExpressionError:
        return ExpressionError(reason, self.text, position + 1)

    def peek(self) -> _Token:
        if self.lookahead is None:
            self.lookahead = self._scan()
        return self.lookahead

    def next(self) -> _Token:
        token = self.peek()
        self.lookahead = None
        return token

    def at_parenthesis(self) -> bool:
        """Whether the next token is ``(``, without scanning (and so reporting) anything else.

        Only called right after :meth:`next`, when no token is looked ahead.
        """
        position = self.position
        while position < len(self.text) and self.text[position] in _WHITESPACE:
            position += 1
        return self.text.startswith("(", position)

    def _scan(self) -> _Token:
        text = self.text
        while self.position < len(text) and text[self.position] in _WHITESPACE:
            self.position += 1
        start = self.position
        if start == len(text):
            return _Token("end", "", start + 1)
        character = text[start]
        next_character = text[start + 1] if start + 1 < len(text) else ""
        if character in _DIGITS or (character == "." and next_character and next_character in _DIGITS):
            return self._scan_number(start)
        if character.isidentifier():
            return self._scan_name(start)
        if text.startswith("//", start):
            raise self.error("floor division `//` is not allowed", start)
        for operator in _OPERATORS:
            if text.startswith(operator, start):
                self.position = start + len(operator)
                return _Token("operator", operator, start + 1)
        raise self.error(self._unexpected_character(character), start)

    def _scan_number(self, start: int) -> _Token:
        match = _NUMBER.match(self.text, start)
        end = match.end()
        if end < len(self.text) and (self.text[end] == "." or _is_name_character(self.text[end])):
            while end < len(self.text) and (self.text[end] == "." or _is_name_character(self.text[end])):
                end += 1
            raise self.error(_malformed_number(self.text[start:end]), start)
        self.position = end
        return _Token("number", match.group(), start + 1)

    def _scan_name(self, start: int) -> _Token:
        end = start + 1
        while end < len(self.text) and _is_name_character(self.text[end]):
            end += 1
        word = self.text[start:end]
        normalized = unicodedata.normalize("NFKC", word)
        if normalized != word:
            raise self.error(
                f"identifier `{word}` is not in Unicode NFKC normal form (it would read as "
                f"`{_printable(normalized)}`); write identifiers in normal form, e.g. with ASCII "
                "letters",
                start,
            )
        self.position = end
        return _Token("name", word, start + 1)

    @staticmethod
    def _unexpected_character(character: str) -> str:
        reason = f"unexpected character {_describe_character(character)}"
        if character in _CHARACTER_HINTS:
            return f"{reason}; {_CHARACTER_HINTS[character]}"
        normalized = unicodedata.normalize("NFKC", character)
        if character.isspace():
            return f"{reason}; only ASCII spaces, tabs and line breaks may separate tokens"
        if normalized != character and normalized.isascii():
            return f"{reason}; write `{_printable(normalized)}` instead"
        if unicodedata.category(character) == "Nd":
            return f"{reason}; only the ASCII digits 0-9 are allowed in numbers"
        if not character.isascii():
            return f"{reason}; only ASCII characters are allowed outside names"
        return reason


def _is_name_character(character: str) -> bool:
    """Whether ``character`` may continue an identifier."""
    return ("_" + character).isidentifier()


def _malformed_number(token: str) -> str:
    """Explain why ``token`` (a number followed by letters, digits or dots) is not a number."""
    reason = f"malformed number `{_printable(token)}`"
    lowered = token.lower()
    if "_" in token:
        return f"{reason}; underscores in numbers are not allowed"
    if lowered.endswith("j"):
        return f"{reason}; complex numbers are not allowed"
    if lowered[:2] in ("0x", "0o", "0b"):
        return f"{reason}; only decimal numbers are allowed"
    return f"{reason}; write numbers like 3, 0.25 or 1.5e-3, and * for multiplication"

