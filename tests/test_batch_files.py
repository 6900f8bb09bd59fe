"""Batch files (mbkron.batch.read_batch): TOML items and defaults, CSV parameter sets, every field checked with the
file, table or line and field named; models travel as their text, parameters written into it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from mbkron.batch import JOBS, BatchFileError, read_batch
from mbkron.batch.jobs import METHODS
from mbkron.integrate.simulate import METHODS as SIMULATE_METHODS

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "two_link_arm.toml"


def _write(directory: Path, text: str, name: str = "batch.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def test_the_method_names_are_those_of_simulate():
    assert set(METHODS) == set(SIMULATE_METHODS)


def test_defaults_items_and_a_csv_of_parameter_sets(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "arm.toml").write_text(MODEL.read_text())
    _write(tmp_path, "id,q0.alpha1,parameters.height,method,samples,allow_outside_range\n"
                     "c1,10,1.8,,,\n"
                     "c2,20,,RK45,11,true\n", "sets.csv")
    path = _write(tmp_path, """
[batch]
kind = "simulate"
items = "sets.csv"

[defaults]
model = "models/arm.toml"
t_end = 2
q0 = { alpha2 = 45 }

[[item]]
id = "own"
q0 = { alpha2 = 30, alpha1 = 5 }
""")
    items = read_batch(path)
    assert [item.id for item in items] == ["own", "c1", "c2"]
    own, c1, c2 = items
    assert own.fields == {"model": "models/arm.toml", "t_end": 2.0, "q0": {"alpha2": 30.0, "alpha1": 5.0}}
    assert own.files["model"] == MODEL.read_text()  # the file's text, unchanged without parameters
    assert c1.fields["q0"] == {"alpha2": 45.0, "alpha1": 10.0} and "method" not in c1.fields
    assert tomllib.loads(c1.files["model"])["parameters"]["height"] == 1.8
    assert tomllib.loads(c1.files["model"])["parameters"]["L1"] == "0.188*height"  # formulas stay formulas
    assert c2.fields["method"] == "RK45" and c2.fields["samples"] == 11 and c2.fields["allow_outside_range"] is True
    assert c2.files["model"] == MODEL.read_text()
    assert len({item.digest for item in items}) == 3
    assert read_batch(path)[1].digest == c1.digest  # the definition's hash is reproducible


@pytest.mark.parametrize("text, message", [
    ("[batch]\nkind = 'fly'\n", "[batch] kind: expected one of 'simulate', 'analyze', got 'fly'"),
    ("[defaults]\nt_end = 1\n", "no [batch] table"),
    ("[batch]\nkind = 'simulate'\ncolour = 1\n", "[batch]: unknown field `colour`; expected one of: kind, items"),
    ("[batch]\nkind = 'simulate'\n", "no items; expected [[item]] tables"),
    ("[batch]\nkind = 'simulate'\n[[item]]\nid = 'a'\n", "[[item]] #1 (id `a`): missing field(s) model"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\nt_end = -1\n",
     "[defaults]: t_end: expected a finite positive number, got -1"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nmethod = 'euler'\n",
     "[[item]] #1: method: expected one of TRBDF2, RKF45"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nsamples = 1.5\n",
     "[[item]] #1: samples: expected an integer of at least 2, got 1.5"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nq0 = { alpha1 = 'x' }\n",
     "[[item]] #1: q0.alpha1: expected a finite number, got 'x'"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nq0 = 3\n",
     "[[item]] #1: q0: expected a table of NAME = number, got 3"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nallow_outside_range = 1\n",
     "allow_outside_range: expected true or false, got 1"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = '../up'\n",
     "[[item]] #1: id: expected 1 to 100 letters, digits"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'batch.json'\n", "id: expected 1 to 100"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\n[[item]]\nid = 'a'\n",
     "[[item]] #2: id: `a` is given twice"),
    ("[batch]\nkind = 'simulate'\n[defaults]\nmodel = 'nowhere.toml'\n[[item]]\nid = 'a'\n",
     "model: cannot read"),
    ("[batch]\nkind = 'simulate'\n[[item]]\nid = 'a'\ntend = 1\n", "[[item]] #1: unknown field `tend`; expected one of:"),
    ("[batch]\nkind = 'simulate'\nitems = 'missing.csv'\n", "[batch] items: cannot read"),
    ("[batch\nkind = 'simulate'\n", "not valid TOML"),
    ("[batch]\nkind = 'analyze'\n[defaults]\nmodel = 'M'\n[[item]]\nid = 'a'\nanalyses = ['ik']\n",
     "analyses: expected a list of strings from id, muscles, so, reactions, got ['ik']"),
])
def test_a_bad_batch_file_names_the_file_table_and_field(tmp_path, text, message):
    path = _write(tmp_path, text.replace("'M'", repr(MODEL.as_posix())))
    with pytest.raises(BatchFileError, match=re.escape(message)) as error:
        read_batch(path)
    assert str(error.value).startswith(str(path)) or "cannot read" in str(error.value)


@pytest.mark.parametrize("rows, message", [
    ("name,t_end\nx,1\n", "sets.csv:1: expected a header whose first column is `id`"),
    ("id,t_stop\nx,1\n", "sets.csv:1: column 2 `t_stop`: expected a field of kind 'simulate'"),
    ("id,q0\nx,1\n", "sets.csv:1: column 2 `q0`: expected a field"),  # a table's entries are q0.NAME
    ("id,t_end\nx,1,2\n", "sets.csv:2: 3 cells, expected 2"),
    ("id,t_end\nx,soon\n", "sets.csv:2: t_end: expected a number, got 'soon'"),
    ("id,t_end\nx,0\n", "sets.csv:2: t_end: expected a finite positive number, got 0.0"),
    ("id,allow_outside_range\nx,yes\n", "sets.csv:2: allow_outside_range: expected true or false, got 'yes'"),
    ("id,t_end\n\nx y,1\n", "sets.csv:3: id: expected 1 to 100 letters"),
])
def test_a_bad_csv_of_parameter_sets_names_the_line_and_column(tmp_path, rows, message):
    _write(tmp_path, rows, "sets.csv")
    path = _write(tmp_path, f"[batch]\nkind = 'simulate'\nitems = 'sets.csv'\n[defaults]\nmodel = "
                            f"{MODEL.as_posix()!r}\n")
    with pytest.raises(BatchFileError, match=re.escape(message)):
        read_batch(path)


def test_parameters_must_be_the_models(tmp_path):
    path = _write(tmp_path, f"[batch]\nkind = 'simulate'\n[defaults]\nmodel = {MODEL.as_posix()!r}\n"
                            "[[item]]\nid = 'a'\nparameters = {{ mass = 3, g = 9.8 }}\n".replace("{{", "{").replace(
                                "}}", "}"))
    with pytest.raises(BatchFileError, match=re.escape("[[item]] #1: parameters: the model has no parameter(s) mass "
                                                       "(its [parameters]: height, body_mass, g, L1")):
        read_batch(path)



def test_the_worked_example_of_the_docs_reads(tmp_path):
    doc = (ROOT / "docs" / "batch.md").read_text()
    blocks = re.findall(r"```(\w*)\n(.*?)```", doc, re.S)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "two_link_arm.toml").write_text(MODEL.read_text())
    (tmp_path / "runs").mkdir()
    _write(tmp_path / "runs", next(text for language, text in blocks if language == "toml"), "arm_batch.toml")
    _write(tmp_path / "runs", next(text for _, text in blocks if text.startswith("id,")), "arm_sets.csv")
    items = read_batch(tmp_path / "runs" / "arm_batch.toml")
    assert len(items) == 13 and items[0].id == "arm-reference" and items[0].fields["q0"] == {"alpha2": 20.0,
                                                                                               "alpha1": 0.0}
    assert items[-1].id == "arm-120-80" and items[-1].fields["q0"] == {"alpha2": 20.0, "alpha1": 120.0}
    assert tomllib.loads(items[-1].files["model"])["parameters"]["body_mass"] == 80.0


def test_an_analysis_batch_carries_its_motion_files_as_text(tmp_path):
    motion = "Coordinates\nversion=1\nnRows=1\nnColumns=3\ninDegrees=yes\nendheader\ntime\talpha1\talpha2\n0\t1\t2\n"
    _write(tmp_path, motion, "walk.mot")
    path = _write(tmp_path, f"[batch]\nkind = 'analyze'\n[defaults]\nmodel = {MODEL.as_posix()!r}\n"
                            "analyses = ['id', 'muscles']\n[[item]]\nid = 'walk'\nmotion = 'walk.mot'\n")
    (item,) = read_batch(path)
    assert item.kind == "analyze" and item.fields["analyses"] == ["id", "muscles"]
    assert item.files == {"model": MODEL.read_text(), "motion": motion}


def test_the_docs_list_every_field_of_every_kind():
    doc = (ROOT / "docs" / "batch.md").read_text()
    simulate = doc[doc.index("Fields of a `simulate` item"):doc.index("Fields of an `analyze` item")]
    analyze = doc[doc.index("Fields of an `analyze` item"):doc.index("Limits:")]
    for kind, text in (("simulate", simulate), ("analyze", analyze)):
        for name in JOBS[kind].fields:
            assert f"`{name}`" in text, (kind, name)


def test_parameters_of_an_osim_model_are_refused(tmp_path):
    _write(tmp_path, "<OpenSimDocument Version=\"40000\"/>", "arm.osim")
    path = _write(tmp_path, "[batch]\nkind = 'analyze'\n[[item]]\nid = 'a'\nmodel = 'arm.osim'\nmotion = 'arm.osim'\n"
                            "parameters = { mass = 2 }\n")
    with pytest.raises(BatchFileError, match=r"\[\[item\]\] #1: parameters: only a TOML model has \[parameters\]"):
        read_batch(path)
