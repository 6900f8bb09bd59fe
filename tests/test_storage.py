"""OpenSim storage files (.mot/.sto): reading OpenSim's own files, writing files OpenSim reads, errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mbkron.io import storage
from mbkron.io.storage import StorageError, read_storage, write_storage

# The first rows of opensim-models' Pipelines/Gait10dof18musc/OutputReference/IK/subject01_walk_IK.mot
# (CC BY 3.0, the OpenSim team), as OpenSim wrote them, columns cut to four.
IK = """Coordinates
version=1
nRows=3
nColumns=4
inDegrees=yes

Units are S.I. units (second, meters, Newtons, ...)
Angles are in degrees.

endheader
time\tpelvis_tilt\tpelvis_tx\tknee_angle_r
      0.00000000\t     10.32995988\t      0.61213494\t     -5.12860733
      0.01000000\t     10.32085124\t      0.62425453\t     -5.29404357
      0.02000000\t     10.31033385\t      0.63637389\t     -5.50566002
"""


def test_reads_opensims_inverse_kinematics_file(tmp_path):
    path = tmp_path / "ik.mot"
    path.write_text(IK)
    table = read_storage(path)
    assert table.name == "Coordinates" and table.in_degrees
    assert table.labels == ("pelvis_tilt", "pelvis_tx", "knee_angle_r")
    np.testing.assert_array_equal(table.time, [0.0, 0.01, 0.02])
    np.testing.assert_array_equal(table.column("knee_angle_r"), [-5.12860733, -5.29404357, -5.50566002])
    assert table.header["nRows"] == "3" and table.comments == ("Units are S.I. units (second, meters, Newtons, ...)",
                                                               "Angles are in degrees.")
    with pytest.raises(KeyError, match="no column `hip`"):
        table.column("hip")


def test_older_header_without_version_and_a_file_without_a_name(tmp_path):
    older = tmp_path / "old.sto"
    older.write_text("walk\nnRows=2\nnColumns=2\nendheader\ntime q\n0 1.5\n0.5 2.5\n")
    table = read_storage(older)
    assert table.name == "walk" and not table.in_degrees and table.labels == ("q",)
    np.testing.assert_array_equal(table.values, [[1.5], [2.5]])
    bare = tmp_path / "bare.sto"
    bare.write_text("version=1\ninDegrees=no\nendheader\ntime\tq\n0\t1\n")
    assert read_storage(bare).name == ""


def test_round_trip_keeps_every_digit(tmp_path):
    rng = np.random.default_rng(3)
    time = np.cumsum(rng.uniform(0.001, 0.01, 20))
    values = rng.normal(size=(20, 3)) * 10.0 ** rng.integers(-8, 8, size=(20, 3))
    path = tmp_path / "out.sto"
    write_storage(path, "results", ["a", "b", "c"], time, values, in_degrees=True, comments=("made by a test",))
    table = read_storage(path)
    assert (table.name, table.labels, table.in_degrees, table.comments) == ("results", ("a", "b", "c"), True,
                                                                           ("made by a test",))
    np.testing.assert_array_equal(table.time, time)
    np.testing.assert_array_equal(table.values, values)


@pytest.mark.parametrize("text, message", [
    ("Coordinates\nversion=1\ntime\tq\n0\t1\n", "no `endheader`"),
    ("n\nendheader\n", "expected the column labels"),
    ("n\nendheader\nt\tq\n0\t1\n", "the first column must be `time`, got `t`"),
    ("n\nendheader\ntime\tq\n0\t1\n1\n", ":5: 1 values, expected 2"),
    ("n\nendheader\ntime\tq\n0\tx\n", ":4: a value is not a number"),
    ("n\nendheader\ntime\tq\n0\tnan\n", ":4: values must be finite"),
    ("n\nendheader\ntime\tq\n0\t1\n\n1\t2\n2\t2\t3\n", ":7: 3 values, expected 2"),  # blank lines counted
    ("n\nendheader\ntime\tq\n0\t1 2\n1\t3 4\n", ":4: 3 values, expected 2"),  # every row too long
    ("n\nendheader\ntime\tq\n0\t1\n1\t-inf\n", ":5: values must be finite"),
    ("n\nendheader\ntime\tq\n0\t1\n1\t#2\n", ":5: a value is not a number"),  # no comments in tables
    ("n\nendheader\ntime\tq\n0\t1\n0\t2\n", "time must increase from row to row; row 2 has t = 0 after t = 0"),
    ("n\nnRows=3\nendheader\ntime\tq\n0\t1\n", "the header says nRows=3, the table has 1"),
    ("n\nnColumns=x\nendheader\ntime\tq\n0\t1\n", "header `nColumns=x` is not an integer"),
])
def test_bad_files_name_file_line_and_expectation(tmp_path, text, message):
    path = tmp_path / "bad.sto"
    path.write_text(text)
    with pytest.raises(StorageError, match=re.escape(message)) as caught:
        read_storage(path)
    assert str(path) in str(caught.value)


def test_text_reads_as_its_file_and_python_numbers_are_read(tmp_path):
    path = tmp_path / "ik.mot"
    path.write_text(IK)
    from_file, from_text = read_storage(path), storage.parse_storage(IK, "ik.mot")
    assert (from_text.name, from_text.labels, from_text.header) == (from_file.name, from_file.labels, from_file.header)
    np.testing.assert_array_equal(from_text.values, from_file.values)
    np.testing.assert_array_equal(from_text.time, from_file.time)
    # a value numpy's parser refuses but Python's float reads (as before the rows were parsed at once)
    table = storage.parse_storage("n\nendheader\ntime\tq\n0\t1_000.5\n1\t2\n")
    np.testing.assert_array_equal(table.values, [[1000.5], [2.0]])


def test_missing_and_oversized_files(tmp_path, monkeypatch):
    with pytest.raises(StorageError, match="cannot read the storage file"):
        read_storage(tmp_path / "missing.mot")
    path = tmp_path / "big.sto"
    path.write_text(IK)
    monkeypatch.setattr(storage, "MAX_BYTES", 100)
    with pytest.raises(StorageError, match="more than the 100 a storage file may have"):
        read_storage(path)


def test_write_refuses_bad_tables(tmp_path):
    path = tmp_path / "x.sto"
    with pytest.raises(ValueError, match="`values` must have shape"):
        write_storage(path, "n", ["a"], [0.0, 1.0], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="`time` must increase"):
        write_storage(path, "n", ["a"], [1.0, 0.0], [[1.0], [2.0]])
    with pytest.raises(ValueError, match="without tabs"):
        write_storage(path, "n", ["a\tb"], [0.0], [[1.0]])
    assert not path.exists()


def test_opensim_reads_what_mbkron_writes_and_the_other_way_round(tmp_path):
    opensim = pytest.importorskip("opensim")
    time = np.array([0.0, 0.1, 0.25])
    values = np.array([[1.0, -2.5], [1.25, 3.0e-9], [2.0, 7.0]])
    ours = tmp_path / "ours.sto"
    write_storage(ours, "mbkron", ["hip", "knee"], time, values, in_degrees=True)
    table = opensim.TimeSeriesTable(str(ours))
    assert list(table.getColumnLabels()) == ["hip", "knee"]
    assert table.getTableMetaDataAsString("inDegrees") == "yes"
    np.testing.assert_array_equal(np.array(table.getIndependentColumn()), time)
    np.testing.assert_array_equal(table.getMatrix().to_numpy(), values)
    theirs = tmp_path / "theirs.sto"
    table.addTableMetaDataString("note", "written by OpenSim")
    opensim.STOFileAdapter.write(table, str(theirs))
    back = read_storage(theirs)
    assert back.labels == ("hip", "knee") and back.in_degrees
    np.testing.assert_array_equal(back.time, time)
    np.testing.assert_array_equal(back.values, values)


def test_coordinates_of_a_model_in_si_units(tmp_path):
    """leg6dof9musc's six coordinates from a file in degrees: angles converted, the pelvis translations
    (metres) kept; extra columns ignored, missing ones named."""
    import warnings
    from pathlib import Path

    import mbkron

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbkron.ModelWarning)  # toes_r: OpenSim's own unphysical inertia
        model = mbkron.load_model(Path(__file__).resolve().parents[1] / "models" / "leg6dof9musc.toml")
    names = ["extra", *model.coordinates]
    values = np.arange(2 * len(names), dtype=float).reshape(2, len(names)) + 0.5
    path = tmp_path / "ik.mot"
    write_storage(path, "Coordinates", names, [0.0, 0.01], values, in_degrees=True)
    q = read_storage(path).coordinates(model)
    for k, coordinate in enumerate(model.coordinate_records):
        expected = values[:, k + 1] * (np.pi / 180 if coordinate.unit == "rad" else 1.0)
        np.testing.assert_allclose(q[:, k], expected, rtol=1e-15)
    assert [c.unit for c in model.coordinate_records].count("m") == 2  # pelvis_tx, pelvis_ty stay metres
    write_storage(path, "Coordinates", names[:3], [0.0], values[:1, :3])
    with pytest.raises(StorageError, match="no column for the coordinate.s. pelvis_ty, hip_flexion_r"):
        read_storage(path).coordinates(model)
