"""The data of a batch: :class:`Item` (one job, plain data that travels to a worker), :class:`Field` (a
field an item of a kind may have, checked), :class:`JobKind` and :class:`BatchFileError`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "SUMMARY", "BatchFileError", "Field", "Item", "JobKind"]

MARKER = "item.json"
"""An item's finished marker, written last into its directory ``out_dir/<id>/``."""
SUMMARY = "batch.json"
"""The batch's summary in the output directory (not an item id)."""


class BatchFileError(ValueError):
    """A batch file (or a file it names) that cannot be used: the message names the file, the table or
    line, and the field."""


@dataclass(frozen=True)
class Field:
    """A field of an item in a batch file.

    Attributes
    ----------
    kind : {"file", "number", "integer", "string", "boolean", "table", "strings"}
        ``file``: a path, relative to the batch file, whose text travels with the item; ``number``: a
        finite number; ``table``: names to finite numbers; ``strings``: a list of strings.
    required : bool
    positive : bool
        Numbers: > 0.
    minimum : int
        Integers: the least value.
    choices : tuple of str
        Strings (and the entries of ``strings``): the values allowed.
    """

    kind: str
    required: bool = False
    positive: bool = False
    minimum: int = 0
    choices: tuple[str, ...] = ()

    def check(self, value: Any, context: str) -> Any:
        """``value`` as this field holds it (integers of number fields as floats).

        Raises
        ------
        BatchFileError
            Naming ``context`` (the file, table and field) and what was expected.
        """
        if self.kind in ("file", "string"):
            if not isinstance(value, str) or not value:
                raise BatchFileError(f"{context}: expected a non-empty string, got {value!r}")
            if self.choices and value not in self.choices:
                raise BatchFileError(f"{context}: expected one of {', '.join(self.choices)}, got {value!r}")
            return value
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise BatchFileError(f"{context}: expected true or false, got {value!r}")
            return value
        if self.kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int) or value < self.minimum:
                raise BatchFileError(f"{context}: expected an integer of at least {self.minimum}, got {value!r}")
            return value
        if self.kind == "number":
            return _number(value, context, self.positive)
        if self.kind == "strings":
            if not isinstance(value, list) or not all(isinstance(v, str) and (
                    not self.choices or v in self.choices) for v in value):
                among = f" from {', '.join(self.choices)}" if self.choices else ""
                raise BatchFileError(f"{context}: expected a list of strings{among}, got {value!r}")
            return list(value)
        if not isinstance(value, dict):  # table
            raise BatchFileError(f"{context}: expected a table of NAME = number, got {value!r}")
        return {name: _number(number, f"{context}.{name}", False) for name, number in value.items()}


def _number(value: Any, context: str, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
            positive and value <= 0):
        raise BatchFileError(f"{context}: expected a finite {'positive ' if positive else ''}number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class JobKind:
    """A kind of job: its name, its item fields and the function computing an item."""

    name: str
    run: Callable[[Item, Path], dict]
    fields: dict[str, Field] = field(default_factory=dict)


@dataclass(frozen=True)
class Item:
    """One job of a batch: plain data (strings, numbers, tables), sent to a worker as it is.

    Attributes
    ----------
    id : str
        The item's name: letters, digits, ``.``, ``_``, ``-`` (at most 100, not starting with a dot or
        dash), also the name of its directory in the output.
    kind : str
        The job kind (a key of :data:`mbkron.batch.jobs.JOBS`).
    fields : dict
        The item's fields, checked; a file field is the file's path as given.
    files : dict of str to str
        The text of every file field (the model's with the item's ``parameters`` applied).
    """

    id: str
    kind: str
    fields: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """SHA-256 of the item's definition (kind, fields, file contents): a changed definition is computed
        again, an unchanged finished one is skipped."""
        spec = {"kind": self.kind, "fields": self.fields, "files": self.files}
        return hashlib.sha256(json.dumps(spec, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
