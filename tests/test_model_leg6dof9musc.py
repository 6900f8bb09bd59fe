"""The shipped ``models/leg6dof9musc.toml``: ``mbkron convert``'s output for OpenSim's
``leg6dof9musc.osim`` (issue #15), and OpenSim's numbers on it.

The ``.osim`` file is the stored copy ``tests/data/osim/leg6dof9musc.osim.gz`` (byte-identical to
opensim-org/opensim-models' Models/Leg6Dof9Musc/leg6dof9musc.osim, its SHA-256 recorded in the
JSON); the OpenSim side is ``tests/data/osim/leg6dof9musc.json`` (OpenSim 4.6's own values, written by
``python -m validation.opensim.compare_osim``). No OpenSim needed.
"""

from __future__ import annotations

import gzip
import hashlib
import tomllib
import warnings
from pathlib import Path

import numpy as np

import mbkron
from mbkron import cli
from tests.test_osim_agreement import DATA, TOLERANCE, stored, worst_deviations

MODEL = Path(__file__).resolve().parents[1] / "models" / "leg6dof9musc.toml"
#: Where the file was converted from, relative to the working directory of `mbkron convert` (the header names it).
SOURCE = Path("opensim-models") / "leg6dof9musc.osim"


def load_model():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # toes_r's inertia (tests/test_model_warnings.py)
        return mbkron.load_model(MODEL)


def test_the_model_file_is_mbkron_converts_output(capsys, tmp_path, monkeypatch):
    """Regenerate: `cd <directory holding opensim-models/> && mbkron convert opensim-models/leg6dof9musc.osim
    -o models/leg6dof9musc.toml`."""
    data = gzip.decompress((DATA / "leg6dof9musc.osim.gz").read_bytes())
    assert hashlib.sha256(data).hexdigest() == stored("leg6dof9musc")["sha256"]
    (tmp_path / SOURCE).parent.mkdir()
    (tmp_path / SOURCE).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(["convert", str(SOURCE), "-o", "leg.toml"]) == 0
    capsys.readouterr()
    assert (tmp_path / "leg.toml").read_text() == MODEL.read_text()


def test_header_names_the_source_licence_and_credits():
    header = [line for line in MODEL.read_text().splitlines() if line.startswith("#")]
    assert header[0] == f"# OpenSim model `leg6dof9musc`, converted from {SOURCE.as_posix()} by `mbkron convert` (see docs/opensim.md)."
    text = "\n".join(header)
    assert "License: Creative Commons (CCBY 3.0)" in text and "http://creativecommons.org/licenses/by/3.0/" in text
    assert "Delp S.L., Loan J.P., Hoy M.G., Zajac F.E." in text and "Reinbolt J.A." in text
    assert "Eliminated by CoordinateCouplerConstraints: knee_angle_pat_r = 1.0·f(knee_angle_r)." in text


def test_coordinates_and_conditional_points_are_opensims():
    """Values read off leg6dof9musc.osim: its six independent coordinates and the four
    ConditionalPathPoints (ranges widened by OpenSim 4.6's 1e-5)."""
    model = load_model()
    assert model.coordinates == tuple(stored("leg6dof9musc")["coordinates"]) == (
        "pelvis_tilt", "pelvis_tx", "pelvis_ty", "hip_flexion_r", "knee_angle_r", "ankle_angle_r")
    assert model.coordinate("pelvis_ty").range == (-1.0, 3.0) and model.coordinate("pelvis_ty").unit == "m"
    assert model.coordinate("knee_angle_r").range == (-2.0943951, 0.17453293)
    document = tomllib.loads(MODEL.read_text())
    active = {(name, k): point["active"] for name, muscle in document["muscles"].items()
              for k, point in enumerate(muscle["path"]) if "active" in point}
    expected = {("psoas_r", 2): ("hip_flexion_r", -1.5708, 0.785398),
                ("rect_fem_r", 1): ("knee_angle_r", -2.61799, -1.45997),
                ("vas_int_r", 2): ("knee_angle_r", -2.61799, -1.42),
                ("med_gas_r", 1): ("knee_angle_r", -0.785398, 0.174533)}
    assert set(active) == set(expected)
    for key, (coordinate, low, high) in expected.items():
        assert active[key]["coordinate"] == coordinate
        np.testing.assert_allclose(active[key]["range"], [low - 1e-5, high + 1e-5], rtol=0, atol=1e-15)


def test_opensims_numbers_on_the_model_file():
    """OpenSim 4.6's reduced mass matrix, gravity and bias forces, inverse dynamics, lengths, moment
    arms (5 states) and the lengths with conditional points' coordinates just beyond their range ends
    (stored) hold for the model file, to the importer's tolerance."""
    found = worst_deviations(load_model(), stored("leg6dof9musc"))
    assert set(found) >= {"mass_matrix", "gravity", "bias", "inverse_dynamics", "lengths", "moment_arms", "edge_lengths"}
    assert max(found.values()) < TOLERANCE, found
