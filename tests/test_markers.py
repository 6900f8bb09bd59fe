""".trc marker files (mbkron.io.read_trc): OpenSim's own files read as OpenSim 4.6 reads them (its values stored
in tests/data/markers/opensim_reference.json), missing markers as NaN, metres, errors with file and line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mbkron.io import MarkerError, read_trc
from mbkron.io import storage as storage_module

DATA = Path(__file__).resolve().parent / "data" / "markers"
REFERENCE = json.loads((DATA / "opensim_reference.json").read_text())["files"]


def _load_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name.removesuffix(".gz")
    if name == "arm26_gaps.trc":
        path.write_text(_load_module("opensim_reference").gaps_text())
    else:
        path.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return path


def _nan(values) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_reads_opensims_files_as_opensim_does(tmp_path, name):
    reference = REFERENCE[name]
    markers = read_trc(_file(tmp_path, name))
    assert list(markers.names) == reference["names"] and markers.units == reference["units"] == "mm"
    assert markers.data_rate == reference["data_rate"]
    np.testing.assert_array_equal(markers.time, reference["time"])
    for frame, positions in zip(reference["frames"], reference["positions"]):
        np.testing.assert_array_equal(markers.positions[frame], _nan(positions) * 1e-3)  # mm → m, the same doubles
    np.testing.assert_allclose(markers.positions.sum(axis=0), _nan(reference["sums"]) * 1e-3, rtol=1e-13, atol=0)
    assert np.array_equal(np.isnan(markers.positions.sum(axis=0)), np.isnan(_nan(reference["sums"])))


def test_missing_markers_are_nan_and_the_rest_as_written(tmp_path):
    markers = read_trc(_file(tmp_path, "arm26_gaps.trc"))
    assert markers.names == ("r_acromion", "r_humerus_epicondyle", "r_radius_styloid")
    missing = np.isnan(markers.positions).any(axis=2)
    assert sorted(zip(*np.nonzero(missing))) == [(0, 1), (1, 2), (2, 0)]
    assert np.isnan(markers.positions[missing]).all()
    np.testing.assert_array_equal(markers.marker("r_acromion")[0], np.array([-13.05452443, 839.50547557, 169.5054756])
                                  * 1e-3)  # the file's first row, mm → m
    np.testing.assert_array_equal(markers.frames[:3], [1, 2, 3])
    assert markers.header["NumFrames"] == "121" and markers.header["OrigDataStartFrame"] == "1"


def test_a_header_aligned_with_spaces_and_units_in_metres(tmp_path):
    # the header of opensim-models' Pipelines/Rajagopal/ExpData/motion_capture_walk.trc: values padded with
    # spaces, empty fields between them; here in metres, two markers
    path = tmp_path / "m.trc"
    path.write_text("PathFileType  4\t(X/Y/Z) C:\\walk.trc\n"
                    "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
                    "  100.0\t\t  100.0\t\t      2\t\t      2\t\t m\t  100.0\t      1\t      2\n"
                    "Frame#\tTime\tR.Shoulder\t\t\tL.Shoulder\t\t\t\n"
                    "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\n"
                    "\n"
                    "1\t0.00000\t-0.652630\t1.529542\t-0.094520\t-0.629159\t1.534957\t-0.437336\n"
                    "2\t0.01000\t-0.652000\t1.529000\t-0.094000\t-0.629000\t1.534000\t-0.437000\n")
    markers = read_trc(path)
    assert markers.data_rate == 100.0 and markers.units == "m" and markers.names == ("R.Shoulder", "L.Shoulder")
    np.testing.assert_array_equal(markers.marker("L.Shoulder"), [[-0.629159, 1.534957, -0.437336],
                                                                 [-0.629, 1.534, -0.437]])
    with pytest.raises(KeyError, match="no marker `Head`; the markers are R.Shoulder, L.Shoulder"):
        markers.marker("Head")


HEADER = ("PathFileType\t4\t(X/Y/Z)\tx.trc\n"
          "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\n"
          "60\t60\t2\t1\tmm\n"
          "Frame#\tTime\tA\t\t\n"
          "\t\tX1\tY1\tZ1\n"
          "\n")


@pytest.mark.parametrize("text, message", [
    ("hello\n", "x.trc:1: expected `PathFileType` and at least 5 header lines"),
    (HEADER.replace("60\t60\t2\t1\tmm", "60\t60\t2\t1"), "x.trc:3: 4 header values for the 5 keys of line 2"),
    (HEADER.replace("\tmm\n", "\tinch\n"), "x.trc:3: Units `inch`: expected one of mm, cm, m"),
    (HEADER.replace("60\t60\t2\t1", "fast\t60\t2\t1"), "x.trc:3: DataRate `fast` is not a number"),
    (HEADER.replace("DataRate\t", "Rate\t"), "x.trc:2: no `DataRate` in the header"),
    (HEADER.replace("2\t1\tmm", "2\t2\tmm"), "x.trc:4: 1 marker names, but NumMarkers = 2"),
    (HEADER.replace("2\t1\tmm", "2\t2\tmm").replace("A\t\t\n", "A\t\t\tA\t\t\n"),
     "x.trc:4: marker names must be distinct; given twice: A"),
    (HEADER.replace("Frame#\tTime", "Frame\tTime"), "x.trc:4: expected the labels `Frame#`, `Time`"),
    (HEADER + "1\t0\t1\t2\n", "x.trc:7: 4 fields, expected 5 (frame, time and x, y, z of 1 markers"),
    (HEADER + "1\t0\t1\t2\t3\t4\n", "x.trc:7: 6 fields, expected 5"),
    (HEADER + "1\t0\t1\tabc\t3\n", "x.trc:7: 'abc' is not a number"),
    (HEADER + "1\t\t1\t2\t3\n", "x.trc:7: '' is not a number"),  # the time must be given
    (HEADER + "1\t0\t1\tnan\t3\n", "x.trc:7: values must be finite (leave a missing marker's fields empty)"),
    (HEADER + "1\t0\t1\t2\t3\n2\t0\t1\t2\t3\n", "x.trc: Time must increase from frame to frame; frame 2 has t = 0"),
])
def test_a_bad_file_names_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "x.trc"
    path.write_text(text)
    with pytest.raises(MarkerError, match=re.escape(message)):
        read_trc(path)


def test_size_is_bounded_and_missing_files_are_named(tmp_path, monkeypatch):
    path = tmp_path / "x.trc"
    path.write_text(HEADER + "1\t0\t1\t2\t3\n")
    assert read_trc(path).positions.shape == (1, 1, 3)
    monkeypatch.setattr(storage_module, "MAX_BYTES", 50)  # the bound of every text file read by mbkron.io.storage
    with pytest.raises(MarkerError, match=re.escape(f"{path}: {path.stat().st_size} bytes, more than the 50")):
        read_trc(path)
    with pytest.raises(MarkerError, match="cannot read the marker file .*nowhere.trc"):
        read_trc(tmp_path / "nowhere.trc")
