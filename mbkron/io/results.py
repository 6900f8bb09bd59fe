"""Result files, written atomically: :func:`write_atomically`, :func:`write_csv`, :func:`write_json`.

Readers of a result file see either the old file or the complete new one, never a partial write
(a temporary file in the same directory, fsync, rename), so an interrupted run never leaves a
truncated table behind.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["simulation_table", "write_atomically", "write_csv", "write_json"]


def write_atomically(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same directory, fsync, rename.

    Readers see either the old file or the complete new one, never a partial write.

    Parameters
    ----------
    path : str or path-like
        The file to (over)write; its directory must exist.
    data : bytes

    Raises
    ------
    OSError
        If the file cannot be written (the old file, if any, is left as it was).
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_csv(path: str | Path, columns: Sequence[str], table: np.ndarray) -> None:
    """A header and rows of numbers (17 significant digits, so values round-trip), atomically.

    Parameters
    ----------
    path : str or path-like
    columns : sequence of str
        The header.
    table : array_like, shape (rows, len(columns))

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[format(v, ".17g") for v in row] for row in np.asarray(table, dtype=float)])
    write_atomically(path, buffer.getvalue().encode("utf-8"))


def write_json(path: str | Path, data: object) -> None:
    """``data`` as indented UTF-8 JSON with a final newline, atomically (numpy scalars as floats).

    Parameters
    ----------
    path : str or path-like
    data : JSON-serialisable object
        numpy numbers are written as floats.

    Raises
    ------
    OSError
        If the file cannot be written.
    """
    write_atomically(path, (json.dumps(data, indent=2, ensure_ascii=False, default=float) + "\n").encode("utf-8"))


def simulation_table(model_file, result) -> tuple[list[str], list[str], np.ndarray]:
    """The columns, their units and the rows of a simulation's CSV file, as ``mbkron simulate`` writes it.

    ``t`` (s), each coordinate ``q``, ``<c>_dot``, ``<c>_ddot`` in the model file's units (angles in its
    angle unit) and the joint variables ``f.<joint>`` in SI units (rad or m). ``model_file`` is a
    :class:`~mbkron.io.reader.ModelFile`, ``result`` a simulation result with ``t``, ``q``, ``qd``, ``qdd``
    and ``joint_variables``.
    """
    model = model_file.model
    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    units = [model_file.angle_unit if model.coordinate(n).unit == "rad" else model.coordinate(n).unit
             for n in model.coordinates]
    columns = ["t"] + [f"{n}{s}" for s in ("", "_dot", "_ddot") for n in model.coordinates] + [
        f"f.{j}" for j in model.joints]
    column_units = ["s"] + [u + per for per in ("", "/s", "/s²") for u in units] + [
        "rad" if model.body(j).joint == "revolute" else "m" for j in model.joints]
    table = np.column_stack([result.t, result.q / scales, result.qd / scales, result.qdd / scales,
                             result.joint_variables])
    return columns, column_units, table
