"""Marker trajectories: OpenSim's (Motion Analysis) ``.trc`` files, :func:`read_trc`.

The layout, as OpenSim reads it (``TRCFileAdapter``, ``TimeSeriesTableVec3``)::

    PathFileType  4  (X/Y/Z)  walk.trc               <- line 1: the file type (free text after it)
    DataRate  CameraRate  NumFrames  NumMarkers  Units  OrigDataRate  OrigDataStartFrame  OrigNumFrames
    60.00     60.00       151        41          mm     60.00         1                   151
    Frame#  Time  R.ASIS        L.ASIS        ...   <- line 4: the marker names, each over 3 columns
                  X1  Y1  Z1    X2  Y2  Z2    ...   <- line 5: the coordinates' labels
                                                    <- (a blank line, in most files)
    1       0.000  617.2 1055.3 170.8  639.6 ...    <- one row per frame: frame, time, x y z per marker

Lines 2 and 3 (keys and values) are split at whitespace, the names at tabs; a row's fields are separated by
tabs (or by whitespace when it has no tab). A marker missing in a frame has empty fields there: NaN.
Trailing empty fields are ignored; a row with fewer fields than ``2 + 3 NumMarkers`` is an error, as for
OpenSim; ``NumFrames`` is not checked (as OpenSim). Positions are converted to metres by ``Units`` (``mm``,
``cm`` or ``m``); every other problem (a value that is not a number, a time that does not increase, a
``NumMarkers`` that is not the number of names) is an error naming the file and line. Files are untrusted
input: their size is bounded (:data:`mbkron.io.storage.MAX_BYTES`) and nothing in them is evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.io.storage import read_bounded_text

__all__ = ["LENGTH_UNITS", "MarkerError", "Markers", "read_trc"]

LENGTH_UNITS = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}
"""Metres per unit of a ``.trc`` file's ``Units``."""


class MarkerError(ValueError):
    """A marker file that cannot be read: the message names the file, the line and what was expected."""


@dataclass(frozen=True, eq=False)
class Markers:
    """Marker trajectories of a ``.trc`` file, in metres.

    Attributes
    ----------
    names : tuple of str
        The markers, in the file's order.
    time : ndarray, shape (m,)
        Strictly increasing, s.
    positions : ndarray, shape (m, len(names), 3)
        In metres, in the file's (laboratory) frame; NaN where a marker is missing.
    frames : ndarray of int, shape (m,)
        The frame numbers (``Frame#``).
    data_rate : float
        ``DataRate``, Hz.
    units : str
        The file's ``Units`` (positions are converted from them).
    header : dict of str to str
        The header's keys and values (line 2 and 3) as written.
    """

    names: tuple[str, ...]
    time: NDArray[np.float64]
    positions: NDArray[np.float64]
    frames: NDArray[np.int64]
    data_rate: float
    units: str
    header: dict = field(default_factory=dict)

    def marker(self, name: str) -> NDArray[np.float64]:
        """The positions of marker ``name``, shape (m, 3), m."""
        if name not in self.names:
            raise KeyError(f"no marker `{name}`; the markers are {', '.join(self.names)}")
        return self.positions[:, self.names.index(name)]


def read_trc(path: str | Path) -> Markers:
    """Read an OpenSim / Motion Analysis ``.trc`` marker file (see the module docstring).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Markers
        Positions in metres.

    Raises
    ------
    MarkerError
        The file cannot be read, is larger than :data:`mbkron.io.storage.MAX_BYTES`, or is not a complete
        ``.trc`` table; the message names the file and line.
    """
    path = Path(path)
    text = read_bounded_text(path, "marker", MarkerError)
    lines = text.splitlines()
    if len(lines) < 5 or not lines[0].startswith("PathFileType"):
        raise MarkerError(f"{path}:1: expected `PathFileType` and at least 5 header lines (a .trc marker file)")
    keys, values = lines[1].split(), lines[2].split()
    if len(keys) != len(values):
        raise MarkerError(f"{path}:3: {len(values)} header values for the {len(keys)} keys of line 2")
    header = dict(zip(keys, values))
    data_rate = _header_number(path, header, "DataRate")
    declared = _header_number(path, header, "NumMarkers")
    units = header.get("Units", "")
    if units not in LENGTH_UNITS:
        raise MarkerError(f"{path}:3: Units `{units}`: expected one of {', '.join(LENGTH_UNITS)}")
    labels = [label.strip() for label in lines[3].split("\t")] if "\t" in lines[3] else lines[3].split()
    if labels[:2] != ["Frame#", "Time"]:
        raise MarkerError(f"{path}:4: expected the labels `Frame#`, `Time` and the marker names, got "
                          f"{' '.join(labels[:2])!r}")
    names = tuple(label for label in labels[2:] if label)
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise MarkerError(f"{path}:4: marker names must be distinct; given twice: {', '.join(twice)}")
    if declared != len(names):
        raise MarkerError(f"{path}:4: {len(names)} marker names, but NumMarkers = {declared:g}")
    width = 2 + 3 * len(names)
    rows = []
    for number, line in enumerate(lines[5:], start=6):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("\t")] if "\t" in line else line.split()
        if len(fields) < width or any(fields[width:]):
            raise MarkerError(f"{path}:{number}: {len(fields)} fields, expected {width} (frame, time and x, y, z of "
                              f"{len(names)} markers; empty for a missing marker)")
        rows.append([_value(path, number, cell, k < 2) for k, cell in enumerate(fields[:width])])
    table = np.array(rows, dtype=float).reshape(-1, width)
    time = table[:, 1]
    if np.any(np.diff(time) <= 0):
        row = int(np.argmax(np.diff(time) <= 0)) + 1
        raise MarkerError(f"{path}: Time must increase from frame to frame; frame {table[row, 0]:g} has "
                          f"t = {time[row]:.17g} after t = {time[row - 1]:.17g}")
    return Markers(names, time.copy(), table[:, 2:].reshape(len(table), len(names), 3) * LENGTH_UNITS[units],
                   table[:, 0].astype(np.int64), data_rate, units, header)


def _header_number(path: Path, header: dict, key: str) -> float:
    try:
        value = float(header[key])
    except KeyError:
        raise MarkerError(f"{path}:2: no `{key}` in the header (keys: {', '.join(header)})") from None
    except ValueError:
        raise MarkerError(f"{path}:3: {key} `{header[key]}` is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise MarkerError(f"{path}:3: {key} must be positive, got {header[key]}")
    return value


def _value(path: Path, number: int, text: str, required: bool) -> float:
    """A field of a row: a finite number; empty (a missing marker's coordinate) is NaN unless ``required``."""
    if not text and not required:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise MarkerError(f"{path}:{number}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise MarkerError(f"{path}:{number}: values must be finite (leave a missing marker's fields empty), got "
                          f"{text!r}")
    return value
