"""Batch files: the items of a batch from a TOML file (and, optionally, a CSV of parameter sets).

A batch file is TOML (``docs/batch.md``)::

    [batch]
    kind = "simulate"                 # a job kind of mbkron.batch.jobs.JOBS
    items = "sets.csv"                # optional: one more item per CSV row (header: id, field names)

    [defaults]                        # fields of every item (an item's own fields override them)
    model = "../models/two_link_arm.toml"
    t_end = 0.5

    [[item]]
    id = "elbow-30"
    q0 = { alpha2 = 30 }
    parameters = { body_mass = 80 }

It is data, read with :mod:`tomllib`; nothing in it is evaluated. Every field is checked against its
kind's fields (:class:`mbkron.batch.item.Field`) and a problem raises :class:`BatchFileError` naming the
file, the table or CSV line, and the field. Files named by an item (the model, a motion) are read here,
on the driver, and travel to the workers as their text (:class:`Item`); model parameters given by an
item are written into the model's TOML text, so a worker sees a plain model file.
"""

from __future__ import annotations

import csv
import io
import re
import tomllib
from pathlib import Path

from mbkron.batch.item import SUMMARY, BatchFileError, Field, Item, JobKind
from mbkron.batch.jobs import JOBS

__all__ = ["MAX_BATCH_BYTES", "MAX_ITEMS", "MAX_INPUT_BYTES", "read_batch"]

MAX_BATCH_BYTES = 64 * 2**20
"""Largest batch file or CSV of parameter sets read (64 MiB)."""
MAX_ITEMS = 100_000
"""Most items in one batch."""
MAX_INPUT_BYTES = 256 * 2**20
"""Largest input file (model, motion) an item may name (256 MiB)."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_BATCH_KEYS = ("kind", "items")


def read_batch(path: str | Path) -> list[Item]:
    """The items of a batch file (see the module docstring and ``docs/batch.md``).

    Parameters
    ----------
    path : str or path-like
        A TOML batch file; relative paths in it are relative to its directory.

    Returns
    -------
    list of Item
        In the file's order: the ``[[item]]`` tables, then the CSV's rows.

    Raises
    ------
    BatchFileError
        The file (or a file it names) cannot be read, or a table or field is not as expected; the message
        names the file, the table or line, and the field.
    """
    path = Path(path)
    document = _toml(path)
    where = str(path)
    _keys(document, ("batch", "defaults", "item"), f"{where}: top level")
    batch = _table(document.get("batch"), where, "[batch]")
    _keys(batch, _BATCH_KEYS, f"{where}: [batch]")
    kind_name = batch.get("kind")
    if kind_name not in JOBS:
        raise BatchFileError(f"{where}: [batch] kind: expected one of {', '.join(map(repr, JOBS))}, got {kind_name!r}")
    kind = JOBS[kind_name]
    defaults = _fields(kind, _table(document.get("defaults", {}), where, "[defaults]"), f"{where}: [defaults]")
    tables = document.get("item", [])
    if not isinstance(tables, list):
        raise BatchFileError(f"{where}: item: expected [[item]] tables, got a {type(tables).__name__}")
    raw = []
    for index, table in enumerate(tables):
        context = f"{where}: [[item]] #{index + 1}"
        table = _table(table, where, f"[[item]] #{index + 1}")
        raw.append((context, _identifier(table.get("id"), context), _fields(kind, {
            k: v for k, v in table.items() if k != "id"}, context)))
    if "items" in batch:
        if not isinstance(batch["items"], str):
            raise BatchFileError(f"{where}: [batch] items: expected the path of a CSV file, got {batch['items']!r}")
        raw.extend(_csv_items(kind, path.parent / batch["items"]))
    if not raw:
        raise BatchFileError(f"{where}: no items; expected [[item]] tables or [batch] items = \"FILE.csv\"")
    if len(raw) > MAX_ITEMS:
        raise BatchFileError(f"{where}: {len(raw)} items, more than the {MAX_ITEMS} a batch may have")
    items, seen, texts = [], set(), {}
    for context, identifier, fields in raw:
        if identifier in seen:
            raise BatchFileError(f"{context}: id: `{identifier}` is given twice; ids name the items' directories")
        seen.add(identifier)
        merged = _merge(defaults, fields)
        items.append(_item(kind, identifier, merged, path.parent, context, texts))
    return items


# ====================================================================== fields
def _fields(kind: JobKind, table: dict, context: str) -> dict:
    """The checked fields of one table (``[defaults]`` or ``[[item]]``)."""
    _keys(table, tuple(kind.fields), context)
    return {name: kind.fields[name].check(value, f"{context}: {name}") for name, value in table.items()}


def _merge(defaults: dict, fields: dict) -> dict:
    """``defaults`` with ``fields`` over them; tables (``q0``, ``parameters``) are merged key by key."""
    merged = dict(defaults)
    for name, value in fields.items():
        merged[name] = {**merged[name], **value} if isinstance(value, dict) and isinstance(
            merged.get(name), dict) else value
    return merged


def _item(kind: JobKind, identifier: str, fields: dict, base: Path, context: str, texts: dict) -> Item:
    """An :class:`Item` with its files read (each distinct file once) and its parameters applied."""
    missing = [name for name, spec in kind.fields.items() if spec.required and name not in fields]
    if missing:
        raise BatchFileError(f"{context} (id `{identifier}`): missing field(s) {', '.join(missing)} "
                             "(give them in the item or in [defaults])")
    files = {}
    for name, spec in kind.fields.items():
        if spec.kind == "file" and name in fields:
            location = (base / fields[name]).resolve()
            if location not in texts:
                texts[location] = _text(location, f"{context}: {name}")
            files[name] = texts[location]
    if fields.get("parameters"):
        if Path(fields["model"]).suffix.lower() == ".osim":
            raise BatchFileError(f"{context}: parameters: only a TOML model has [parameters]; `model` is an .osim "
                                 "file (convert it with `mbkron convert` to give it parameters)")
        files["model"] = _with_parameters(files["model"], fields["parameters"], f"{context}: parameters")
    return Item(identifier, kind.name, fields, files)


def _with_parameters(text: str, values: dict, context: str) -> str:
    """Model-file text with the ``[parameters]`` named in ``values`` set to them (TOML reformatted)."""
    from mbkron.io import format_toml

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BatchFileError(f"{context}: the model file is not valid TOML: {error}") from None
    parameters = document.get("parameters")
    unknown = [name for name in values if not isinstance(parameters, dict) or name not in parameters]
    if unknown:
        known = ", ".join(parameters) if isinstance(parameters, dict) and parameters else "none"
        raise BatchFileError(f"{context}: the model has no parameter(s) {', '.join(unknown)} (its [parameters]: "
                             f"{known})")
    parameters.update(values)
    return format_toml(document)


# ====================================================================== reading
def _toml(path: Path) -> dict:
    text = _text(path, "batch file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise BatchFileError(f"{path}: not valid TOML: {error}") from None
    except (RecursionError, ValueError):
        raise BatchFileError(f"{path}: not valid TOML here: nested too deeply or a number too long") from None


def _text(path: Path, what: str) -> str:
    """The UTF-8 text of ``path``, bounded (:data:`MAX_INPUT_BYTES`)."""
    limit = MAX_BATCH_BYTES if what in ("batch file", "[batch] items") else MAX_INPUT_BYTES
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise BatchFileError(f"{what}: cannot read {path}: {error.strerror or error}") from None
    if len(data) > limit:
        raise BatchFileError(f"{what}: {path} has more than {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BatchFileError(f"{what}: {path} is not UTF-8 text (byte {error.start})") from None


def _csv_items(kind: JobKind, path: Path) -> list[tuple[str, str, dict]]:
    """The items of a CSV of parameter sets: a header ``id,FIELD,...`` (a table field's entries as
    ``q0.alpha1``, ``parameters.body_mass``), one item per row; an empty cell leaves the field unset, a list
    field's cell is its words separated by spaces."""
    text = _text(path, "[batch] items")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or not rows[0] or rows[0][0].strip() != "id":
        raise BatchFileError(f"{path}:1: expected a header whose first column is `id`")
    header = [name.strip() for name in rows[0]]
    targets = []
    for column, name in enumerate(header[1:], start=2):
        base, dot, entry = name.partition(".")
        spec = kind.fields.get(base)
        if spec is None or (spec.kind == "table") != bool(dot) or (dot and not entry):
            raise BatchFileError(f"{path}:1: column {column} `{name}`: expected a field of kind {kind.name!r} "
                                 f"({', '.join(kind.fields)}; a table field's entries as FIELD.NAME)")
        targets.append((name, base, entry))
    if len(set(header)) != len(header):
        raise BatchFileError(f"{path}:1: a column name is given twice")
    items = []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise BatchFileError(f"{path}:{line}: {len(row)} cells, expected {len(header)} (one per column)")
        context = f"{path}:{line}"
        table: dict = {}
        for (name, base, entry), cell in zip(targets, row[1:]):
            cell = cell.strip()
            if not cell:
                continue
            value = _cell(cell, kind.fields[base], f"{context}: {name}")
            if entry:
                table.setdefault(base, {})[entry] = value
            else:
                table[base] = value
        items.append((context, _identifier(row[0].strip(), context), _fields(kind, table, context)))
    return items


def _cell(text: str, spec: Field, context: str):
    """A CSV cell as the value its field expects (numbers for numbers and table entries, words for lists)."""
    if spec.kind in ("number", "table", "integer"):
        try:
            number = float(text)
        except ValueError:
            raise BatchFileError(f"{context}: expected a number, got {text!r}") from None
        return int(number) if spec.kind == "integer" and number.is_integer() else number
    if spec.kind == "strings":
        return text.split()
    if spec.kind == "boolean":
        if text.lower() not in ("true", "false"):
            raise BatchFileError(f"{context}: expected true or false, got {text!r}")
        return text.lower() == "true"
    return text


# ====================================================================== checks
def _table(value, where: str, name: str) -> dict:
    if value is None:
        raise BatchFileError(f"{where}: no {name} table; expected {name} with kind = \"simulate\" or \"analyze\"")
    if not isinstance(value, dict):
        raise BatchFileError(f"{where}: {name}: expected a table, got {value!r}")
    return value


def _keys(table: dict, allowed: tuple[str, ...], context: str) -> None:
    unknown = [key for key in table if key not in allowed]
    if unknown:
        raise BatchFileError(f"{context}: unknown field `{unknown[0]}`; expected one of: {', '.join(allowed)}")


def _identifier(value, context: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value) or value == SUMMARY:
        raise BatchFileError(f"{context}: id: expected 1 to 100 letters, digits, `.`, `_` or `-` (not starting with "
                             f"`.` or `-`; it names the item's directory, beside {SUMMARY}), got {value!r}")
    return value
