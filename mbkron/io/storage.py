"""OpenSim storage files (``.mot``, ``.sto``): motion and result tables with a header.

The layout, as OpenSim writes and reads it (``Storage``, ``STOFileAdapter``)::

    Coordinates                 <- the table's name (first line; older files may omit the key=value lines)
    version=1
    nRows=151
    nColumns=11
    inDegrees=yes
    <free text lines>
    endheader
    time  pelvis_tilt  ...      <- column labels, tab or space separated; the first is time
    0.000  10.3  ...            <- one row per line

:func:`read_storage` reads both the version-1 form and the older form (a name line, then ``nRows``,
``nColumns`` and other ``key=value`` lines, or none), checks what it reads (every row complete and
numeric, the time column increasing, ``nRows``/``nColumns`` when given) and names the file and line of
the first problem; :func:`write_storage` writes the version-1 form atomically. Values are kept as
read; :meth:`Storage.coordinates` gives a model's coordinates in SI units, converting the angles of a
file with ``inDegrees=yes`` by the model's coordinate units. Files are untrusted input: sizes are bounded (:data:`MAX_BYTES`) and
nothing is evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.io.results import write_atomically

__all__ = ["MAX_BYTES", "Storage", "StorageError", "parse_storage", "read_storage", "write_storage"]

MAX_BYTES = 256 * 2**20
"""Largest storage file read (256 MiB): a larger one is refused before it is read."""


class StorageError(ValueError):
    """A storage file that cannot be read: the message names the file, the line and what was expected."""


@dataclass(frozen=True, eq=False)
class Storage:
    """A table of an OpenSim storage file.

    Attributes
    ----------
    name : str
        The first header line (e.g. ``"Coordinates"``).
    labels : tuple of str
        The column labels after ``time``.
    time : ndarray, shape (m,)
        Strictly increasing, s.
    values : ndarray, shape (m, len(labels))
    in_degrees : bool
        ``inDegrees=yes``: rotational columns are in degrees.
    header : dict
        The header's ``key=value`` lines (``version``, ``nRows``, ``nColumns``, ``inDegrees`` included).
    comments : tuple of str
        The header's other lines, in order.
    source : str
        The file the table was read from (messages name it), ``""`` if none.
    """

    name: str
    labels: tuple[str, ...]
    time: NDArray[np.float64]
    values: NDArray[np.float64]
    in_degrees: bool = False
    header: dict = field(default_factory=dict)
    comments: tuple[str, ...] = ()
    source: str = ""

    def column(self, label: str) -> NDArray[np.float64]:
        """The values of column ``label``."""
        if label not in self.labels:
            raise KeyError(f"no column `{label}`; the columns are {', '.join(self.labels)}")
        return self.values[:, self.labels.index(label)]

    def coordinates(self, model) -> NDArray[np.float64]:
        """The model's coordinates at every row, shape (m, nq), in SI units: the columns named after the
        model's coordinates (a coordinate imported under an OpenSim name that is not an identifier,
        :attr:`~mbkron.multibody.records.Coordinate.original_name`, by that name, as OpenSim writes it, or
        by its identifier), angles (coordinate unit ``rad``) converted from degrees when the file is
        ``inDegrees=yes``; other columns are ignored.

        Raises
        ------
        StorageError
            If a coordinate of the model has no column (all such are named, with the file).
        """
        columns = [c.label if c.label in self.labels else c.name for c in model.coordinate_records]
        missing = [c.label for c, column in zip(model.coordinate_records, columns) if column not in self.labels]
        if missing:
            where = self.source or f"the storage table `{self.name}`"
            raise StorageError(f"{where}: no column for the coordinate(s) {', '.join(missing)} of "
                               f"model `{model.name}` (its columns: {_listed(self.labels)})")
        q = np.column_stack([self.column(c) for c in columns]) if model.nq else np.zeros((self.time.size, 0))
        if self.in_degrees:
            angles = [c.unit == "rad" for c in model.coordinate_records]
            q[:, angles] = np.deg2rad(q[:, angles])
        return q


def read_storage(path: str | Path) -> Storage:
    """Read an OpenSim ``.mot``/``.sto`` file (see the module docstring).

    Raises
    ------
    StorageError
        The file cannot be read, is larger than :data:`MAX_BYTES`, or is not a complete storage table; the
        message names the file and line.
    """
    path = Path(path)
    return parse_storage(read_bounded_text(path, "storage", StorageError), path)


def read_bounded_text(path: Path, kind: str, error: type[Exception]) -> str:
    """The UTF-8 text of a ``kind`` file (e.g. ``"storage"``, ``"marker"``) of at most :data:`MAX_BYTES`;
    ``error`` (naming the file) if it is larger or cannot be read."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise error(f"{path}: {size} bytes, more than the {MAX_BYTES} a {kind} file may have")
        return path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read the {kind} file {path}: {exc}") from None


def parse_storage(text: str, source: str | Path = "<string>") -> Storage:
    """:func:`read_storage` of the file's ``text`` (``source`` names it in messages; a batch's worker gets
    its files as text).

    Raises
    ------
    StorageError
        ``text`` is not a complete storage table; the message names ``source`` and the line.
    """
    lines = text.splitlines()
    try:
        end = next(i for i, line in enumerate(lines) if line.strip().lower() == "endheader")
    except StopIteration:
        raise StorageError(f"{source}: no `endheader` line (an OpenSim storage file has a header ending in "
                           "`endheader`, then the column labels and the rows)") from None
    named = end > 0 and "=" not in lines[0]  # the table's name, unless the file starts with key=value lines
    name = lines[0].strip() if named else ""
    header, comments = {}, []
    for line in lines[1 if named else 0:end]:
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            header[key.strip()] = value.strip()
        elif line.strip():
            comments.append(line.strip())
    if end + 1 >= len(lines) or not lines[end + 1].split():
        raise StorageError(f"{source}:{end + 2}: expected the column labels after `endheader`")
    labels = lines[end + 1].split("\t") if "\t" in lines[end + 1] else lines[end + 1].split()
    labels = [label.strip() for label in labels]
    if labels[0].lower() != "time":
        raise StorageError(f"{source}:{end + 2}: the first column must be `time`, got `{labels[0]}`")
    data = [(number, line) for number, line in enumerate(lines[end + 2:], start=end + 3) if line.strip()]
    table = _rows(source, data, len(labels))
    _check_counts(source, header, table.shape)
    if np.any(np.diff(table[:, 0]) <= 0):
        row = int(np.argmax(np.diff(table[:, 0]) <= 0)) + 1
        raise StorageError(f"{source}: time must increase from row to row; row {row + 1} has t = {table[row, 0]:.17g} "
                           f"after t = {table[row - 1, 0]:.17g}")
    in_degrees = header.get("inDegrees", "no").strip().lower() == "yes"
    return Storage(name, tuple(labels[1:]), table[:, 0].copy(), table[:, 1:].copy(), in_degrees, header,
                   tuple(comments), str(source))


def _listed(labels: tuple[str, ...], most: int = 40) -> str:
    """The labels, comma separated; after ``most`` of them, how many more."""
    shown = ", ".join(labels[:most])
    return shown + (f", … ({len(labels) - most} more)" if len(labels) > most else "")


def _rows(source, data: list[tuple[int, str]], columns: int) -> NDArray[np.float64]:
    """The rows ``(line number, line)`` as a table of ``columns`` columns: parsed at once
    (:func:`numpy.loadtxt`), and only when that fails or gives a wrong shape or a non-finite value, line by
    line to name the first bad line."""
    if not data:
        return np.zeros((0, columns))
    try:
        table = np.loadtxt([line for _, line in data], dtype=float, comments=None, ndmin=2)
    except ValueError:
        table = None
    if table is not None and table.shape[1] == columns and np.isfinite(table).all():
        return table
    for number, line in data:
        fields = line.split()
        if len(fields) != columns:
            raise StorageError(f"{source}:{number}: {len(fields)} values, expected {columns} (one per column)")
        try:
            row = [float(value) for value in fields]
        except ValueError:
            raise StorageError(f"{source}:{number}: a value is not a number: {line.strip()[:80]!r}") from None
        if not all(math.isfinite(value) for value in row):
            raise StorageError(f"{source}:{number}: values must be finite")
    return np.array([[float(value) for value in line.split()] for _, line in data])  # what loadtxt refused, float reads


def _check_counts(source, header: dict, shape: tuple[int, int]) -> None:
    for key, actual in (("nRows", shape[0]), ("nColumns", shape[1])):
        if key not in header:
            continue
        try:
            declared = int(header[key])
        except ValueError:
            raise StorageError(f"{source}: header `{key}={header[key]}` is not an integer") from None
        if declared != actual:
            raise StorageError(f"{source}: the header says {key}={declared}, the table has {actual}")


def write_storage(path: str | Path, name: str, labels: tuple[str, ...] | list[str], time: ArrayLike,
                  values: ArrayLike, in_degrees: bool = False, comments: tuple[str, ...] = ()) -> None:
    """Write an OpenSim storage file (version 1, tab separated, 17 significant digits) atomically.

    Parameters
    ----------
    path : str or path-like
    name : str
        The table's name (first line).
    labels : sequence of str
        The column labels after ``time`` (no tabs or line breaks).
    time : array_like, shape (m,)
        Strictly increasing.
    values : array_like, shape (m, len(labels))
    in_degrees : bool
        Written as ``inDegrees=yes/no``.
    comments : sequence of str
        Free header lines.

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite values, a time that does not increase or a label with a tab or
        line break (named in backticks).
    """
    time = np.asarray(time, dtype=float).reshape(-1)
    values = np.asarray(values, dtype=float)
    labels = tuple(labels)
    if values.shape != (time.size, len(labels)):
        raise ValueError(f"`values` must have shape ({time.size}, {len(labels)}), got {values.shape}")
    if any(not label or any(c in label for c in "\t\r\n") for label in labels) or any(
            c in name for c in "\r\n"):
        raise ValueError("`labels` must be non-empty without tabs or line breaks, and `name` one line")
    if not (np.all(np.isfinite(time)) and np.all(np.isfinite(values))):
        raise ValueError("`time` and `values` must be finite")
    if np.any(np.diff(time) <= 0):
        raise ValueError("`time` must increase strictly")
    head = [name, "version=1", f"nRows={time.size}", f"nColumns={len(labels) + 1}",
            f"inDegrees={'yes' if in_degrees else 'no'}", *comments, "endheader", "\t".join(("time",) + labels)]
    body = ["\t".join(f"{x:.17g}" for x in row) for row in np.column_stack([time, values])]
    write_atomically(path, ("\n".join(head + body) + "\n").encode("utf-8"))
