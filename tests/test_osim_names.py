"""OpenSim names are kept (issue 27, item 22): muscles by their OpenSim names (``ECU_pre-surgery`` of
wrist.osim) in the model, the moment-arm table and a converted model file; a coordinate whose OpenSim name
is not an identifier keeps it as ``original_name`` (the model file's ``name``), through the model file and
for storage columns. OpenSim's own names come from OpenSim 4.6's data stored with the models
(``tests/data/osim/<model>.json``), never from mbkron."""

from __future__ import annotations

import csv
import gzip
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.cli import main
from mbkron.core.errors import ModelError
from mbkron.io import dump_model, model_differences, parse_model_file, read_model_file
from mbkron.io.storage import Storage, StorageError, parse_storage, write_storage
from mbkron.model.builder import ModelBuilder

DATA = Path(__file__).parent / "data" / "osim"
WRIST = json.loads((DATA / "wrist.json").read_text())
LENGTH_TOLERANCE = 1e-9  # m, as tests/test_osim_agreement.py compares lengths with OpenSim's


@pytest.fixture(scope="module")
def wrist_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wrist") / "wrist.osim"
    path.write_bytes(gzip.decompress((DATA / "wrist.osim.gz").read_bytes()))
    return path


@pytest.fixture(scope="module")
def wrist(wrist_path):
    return read_model_file(wrist_path)


def test_the_stored_data_has_a_name_that_is_not_an_identifier():
    assert "ECU_pre-surgery" in WRIST["muscles"] and not "ECU_pre-surgery".isidentifier()


def test_wrist_muscles_keep_their_opensim_names(wrist):
    model = wrist.model
    assert list(model.muscles) == WRIST["muscles"]
    # looked up by its OpenSim name, the muscle's length is OpenSim's length of `ECU_pre-surgery`
    q = np.reshape(WRIST["q"], (-1, model.nq))
    theirs = np.reshape(WRIST["lengths"], (len(q), -1))[:, WRIST["muscles"].index("ECU_pre-surgery")]
    ours = model.muscle_lengths(q)[:, model.muscles.index("ECU_pre-surgery")]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=LENGTH_TOLERANCE)


def test_moment_arm_table_columns_use_opensim_names(wrist, wrist_path, tmp_path, capsys):
    model = wrist.model
    q = np.reshape(WRIST["q"], (-1, model.nq))[1]
    output = tmp_path / "arms.csv"
    assignments = ",".join(f"{name}={float(value)!r}" for name, value in zip(WRIST["coordinates"], q))
    assert main(["moment-arms", str(wrist_path), "--q", assignments, "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    with output.open() as handle:
        header, row = list(csv.reader(handle))
    assert "L.ECU_pre-surgery" in header and "flexion.ECU_pre-surgery" in header
    assert not any("ECU_pre_surgery" in column for column in header)
    theirs = np.reshape(WRIST["lengths"], (-1, len(WRIST["muscles"])))[1, WRIST["muscles"].index("ECU_pre-surgery")]
    assert abs(float(row[header.index("L.ECU_pre-surgery")]) - theirs) <= LENGTH_TOLERANCE
    assert any(line.split()[0] == "ECU_pre-surgery" for line in printed.splitlines() if line.strip())


def test_convert_and_load_keeps_the_names(wrist, wrist_path, tmp_path):
    output = tmp_path / "wrist.toml"
    assert main(["convert", str(wrist_path), "-o", str(output)]) == 0
    text = output.read_text()
    assert "[muscles.ECU_pre-surgery]" in text and "ECU_pre_surgery" not in text
    converted = read_model_file(output).model
    assert list(converted.muscles) == WRIST["muscles"]
    assert model_differences(wrist.model, converted) == []
    again = parse_model_file(dump_model(converted)).model  # the model's own writer, too
    assert list(again.muscles) == WRIST["muscles"]


def test_a_muscle_name_that_needs_quotes_round_trips(tmp_path):
    name = "ECU pre.surgery \"2\""  # a space, a dot and quotes: a quoted TOML key
    builder = ModelBuilder().add_coordinate("q1")
    builder.add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    builder.add_muscle(name, [("ground", (0.0, 0.1, 0.0)), ("link", (0.5, 0.0, 0.0))])
    model = builder.build()
    read = parse_model_file(dump_model(model)).model
    assert read.muscles == (name,)
    # independently: the length is the distance between the points at q1 = 0
    np.testing.assert_allclose(read.muscle_lengths([0.0]), [np.hypot(0.5, 0.1)], rtol=1e-15)


def test_a_muscle_name_must_be_printable():
    builder = ModelBuilder().add_coordinate("q1")
    builder.add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    builder.add_muscle("bad\nname", [("ground", (0.0, 0.1, 0.0)), ("link", (0.5, 0.0, 0.0))])
    with pytest.raises(ModelError, match="must be a non-empty string of printable characters"):
        builder.build()


# ---------------------------------------------------------------------- coordinates
OPENSIM_NAME = "b-1"  # multi.osim's coordinate `b` renamed: a name OpenSim allows, not an identifier
_NAMES = re.compile(r"<(coordinates|independent_coordinate_names|dependent_coordinate_name|coordinate)>([^<]*)</\1>")


def rename_coordinate(text: str, old: str, new: str) -> str:
    """``text`` (an .osim file) with coordinate ``old`` named ``new`` where it is declared and everywhere it is named."""
    def names(match: re.Match) -> str:
        tokens = [new if token == old else token for token in match.group(2).split()]
        return f"<{match.group(1)}>{' '.join(tokens)}</{match.group(1)}>"

    renamed = _NAMES.sub(names, text.replace(f'<Coordinate name="{old}">', f'<Coordinate name="{new}">'))
    assert renamed.count(new) >= 4  # declared, two TransformAxes and two couplers
    return renamed


@pytest.fixture(scope="module")
def renamed(tmp_path_factory):
    text = gzip.decompress((DATA / "multi.osim.gz").read_bytes()).decode("utf-8")
    folder = tmp_path_factory.mktemp("renamed")
    (folder / "multi.osim").write_text(text)
    (folder / "renamed.osim").write_text(rename_coordinate(text, "b", OPENSIM_NAME))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (mbkron.load_model(folder / "multi.osim"),
                read_model_file(folder / "renamed.osim"), folder)


def test_a_coordinate_keeps_its_opensim_name(renamed):
    original, model_file, _ = renamed
    model = model_file.model
    k = original.coordinates.index("b")
    record = model.coordinate_records[k]
    assert record.name == "b_1" and record.name.isidentifier()  # formulas use the identifier
    assert model.coordinates[:k] + model.coordinates[k + 1:] == original.coordinates[:k] + original.coordinates[k + 1:]
    assert record.original_name == OPENSIM_NAME and record.label == OPENSIM_NAME
    assert [c.original_name for i, c in enumerate(model.coordinate_records) if i != k] == [""] * (model.nq - 1)
    q = np.linspace(-0.3, 0.4, original.nq)
    np.testing.assert_array_equal(model.mass_matrix(q), original.mass_matrix(q))  # the same mechanics
    assert model.coordinate(OPENSIM_NAME) is record and model.coordinate("b_1") is record  # looked up by either name


def test_the_model_file_keeps_a_coordinates_opensim_name(renamed, tmp_path):
    _, model_file, folder = renamed
    output = tmp_path / "renamed.toml"
    assert main(["convert", str(folder / "renamed.osim"), "-o", str(output)]) == 0
    text = output.read_text()
    assert f'name = "{OPENSIM_NAME}"' in text
    for read in (read_model_file(output).model,
                 parse_model_file(dump_model(model_file.model)).model):
        assert [c.label for c in read.coordinate_records] == [c.label for c in model_file.model.coordinate_records]
        assert OPENSIM_NAME in [c.label for c in read.coordinate_records]
        assert model_differences(model_file.model, read) == []
    unnamed = parse_model_file(dump_model(model_file.model).replace(f'name = "{OPENSIM_NAME}"\n', ""))
    assert model_differences(model_file.model, unnamed.model) == [
        f"coordinate `b_1`: `original_name` {OPENSIM_NAME!r} vs ''"]


@pytest.mark.parametrize("value, message", [
    (3, "coordinates.q1.name: expected a string, got 3"),
    ('""', "coordinates.q1.name: expected a non-empty name"),
    ('"a\\nb"', "coordinates.q1.name: expected a non-empty name"),
])
def test_a_bad_coordinate_name_field_is_reported(value, message):
    text = f"[coordinates.q1]\nname = {value}\n[bodies.link]\naxis = [0, 0, 1]\nvariable = \"q1\"\nmass = 1.0\n"
    with pytest.raises(ModelError) as error:
        parse_model_file(text, "x.toml")
    assert message in str(error.value)


def test_an_original_name_may_not_be_another_coordinates_name():
    builder = ModelBuilder().add_coordinate("a").add_coordinate("b", original_name="a")
    builder.add_body("l1", axis=(0, 0, 1), variable="a", mass=1.0)
    builder.add_body("l2", parent="l1", axis=(0, 0, 1), variable="b", mass=1.0)
    with pytest.raises(ModelError, match="`original_name` `a` is already another coordinate's name"):
        builder.build()


def test_storage_columns_by_the_opensim_name(renamed, tmp_path):
    _, model_file, _ = renamed
    model = model_file.model
    labels = [c.label for c in model.coordinate_records]
    time = np.array([0.0, 0.1])
    values = np.array([np.linspace(-0.2, 0.2, model.nq), np.linspace(0.3, -0.1, model.nq)])
    path = tmp_path / "motion.mot"
    write_storage(path, "Coordinates", labels, time, values)
    np.testing.assert_array_equal(mbkron.io.read_storage(path).coordinates(model), values)


def test_a_missing_coordinate_is_named_with_the_file(tmp_path):
    model = mbkron.load_model(Path(__file__).resolve().parents[1] / "models" / "two_link_arm.toml")
    path = tmp_path / "walk_IK.mot"
    path.write_text("Coordinates\nversion=1\nnRows=1\nnColumns=2\ninDegrees=no\nendheader\ntime\talpha1\n0\t0.5\n")
    with pytest.raises(StorageError) as error:
        parse_storage(path.read_text(), path).coordinates(model)
    message = str(error.value)
    assert message.startswith(f"{path}: no column for the coordinate(s) alpha2") and "`Coordinates`" not in message
    unnamed = Storage("Coordinates", ("alpha1",), np.zeros(1), np.zeros((1, 1)))  # built, not read: no file
    with pytest.raises(StorageError, match="the storage table `Coordinates`: no column"):
        unnamed.coordinates(model)
