"""Exceptions raised by mbkron."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ModelError", "ModelWarning", "ConfigurationError", "elide", "elide_long_names"]

NAME_WIDTH = 60
"""Characters of a name shown in a message before it is elided (:func:`elide`)."""
_LONG_WORD = re.compile(r"[^\s`'\"]{%d,}" % (2 * NAME_WIDTH + 1))


def elide(text: str, width: int = NAME_WIDTH) -> str:
    """``text`` if it has at most ``width`` characters, else its start, ``…`` and its length.

    >>> elide("x" * 100, 10)
    'xxxxxxxxx…(100 characters)'
    """
    return text if len(text) <= width else f"{text[:width - 1]}…({len(text):,} characters)"


def elide_long_names(message: str) -> str:
    """``message`` with every run of more than ``2·NAME_WIDTH`` characters without a space or a quote
    (a name from a file: a body, a parent, a key) elided by :func:`elide`, so that a message stays
    short whatever the file holds."""
    return _LONG_WORD.sub(lambda match: elide(match.group()), message)


class ModelError(ValueError):
    """An invalid model description.

    Collects every problem found, not just the first: ``problems`` is the list of
    messages, each naming the body, field (in backticks) and what was expected. ``unreadable``:
    the file could not be read at all (its message then says so, not "invalid model").
    """

    def __init__(self, problems: str | Iterable[str], source: str | None = None, unreadable: bool = False):
        if isinstance(problems, str):
            problems = [problems]
        self.problems: list[str] = [elide_long_names(p) for p in problems]
        self.source = source
        where = f" in {source}" if source else ""
        if unreadable:  # the file itself (missing, a directory, not permitted): nothing was read
            message = f"cannot read the model file {source}: {self.problems[0]}"
        elif len(self.problems) == 1:
            message = f"invalid model{where}: {self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            message = f"invalid model{where}: {len(self.problems)} problems\n{lines}"
        super().__init__(message)


class ModelWarning(UserWarning):
    """A valid model description with a value no physical body has (e.g. principal moments of inertia
    violating the triangle inequality): the model is built and its dynamics is well defined, but the
    body it describes is not physical. The message names the file or model, the body and the values."""


class ConfigurationError(ValueError):
    """A configuration (a value of q) at which a quantity cannot be evaluated.

    Raised, for example, for a singular constraint Jacobian, a branch jump or a Newton
    failure; the message names q and the reason.
    """
