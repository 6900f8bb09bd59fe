"""``mbkron analyze``: the walking trial's inverse dynamics and joint reactions written as OpenSim tables."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mbkron import analysis
from mbkron.analysis import reactions
from mbkron.analysis import trial as trial_module
from mbkron.cli import analyze
from mbkron.cli.main import main
from mbkron.io.storage import read_storage
from tests import test_analysis_id as shared
from tests.test_analysis_id import ACCEPTANCE

trial = shared.trial  # the stored trial's fixtures


def test_analyze_writes_opensims_tables_csv_and_metadata(trial, tmp_path, capsys):
    status = main(["analyze", str(trial / "subject01_simbody.osim"), str(trial / "subject01_walk1_ik.mot"),
                   "--external-loads", str(trial / "subject01_walk1_grf.xml"), "--lowpass", "6", "--time-range", "0.4",
                   "1.6", "--id", "--reactions", "--out", str(tmp_path)])
    assert status == 0
    assert "73 frames" in capsys.readouterr().out
    result = read_storage(tmp_path / "subject01_walk1_ik_inverse_dynamics.sto")
    opensim = read_storage(trial / "opensim_inverse_dynamics_lowpass6.sto")
    for label in opensim.labels:
        np.testing.assert_allclose(result.column(label), opensim.column(label), rtol=0, atol=ACCEPTANCE)
    csv = np.loadtxt(tmp_path / "subject01_walk1_ik_inverse_dynamics.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(csv, np.column_stack([result.time, result.values]), rtol=1e-15)
    joints = read_storage(tmp_path / "subject01_walk1_ik_joint_reactions.sto")
    assert joints.labels[0] == "ground_pelvis_on_pelvis_in_ground_fx" and joints.values.shape == (73, 108)
    metadata = json.loads((tmp_path / "subject01_walk1_ik_analysis.json").read_text())
    assert metadata["command"] == "analyze" and metadata["settings"]["lowpass_hz"] == 6.0
    assert metadata["settings"]["frames"] == 73 and not metadata["settings"]["interrupted"]
    assert set(metadata["outputs"]) == {"inverse_dynamics_sto", "inverse_dynamics_csv", "joint_reactions_sto",
                                        "joint_reactions_csv"}


def _analyze(trial, tmp_path, *arguments):
    return main(["analyze", str(trial / "subject01_simbody.osim"), str(trial / "subject01_walk1_ik.mot"),
                 "--out", str(tmp_path / "out"), *arguments])


@pytest.mark.parametrize("arguments, message", [
    ([], "choose at least one analysis: --id, --muscles, --so, --reactions"),
    (["--id", "--reserves", "r.xml"], "--reserves is for static optimisation: add --so"),
    (["--id", "--time-range", "1", "0"], "--time-range: START must not exceed END"),
])
def test_options_that_cannot_go_together_are_one_line_with_status_2(trial, tmp_path, capsys, arguments, message):
    assert _analyze(trial, tmp_path, *arguments) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()  # checked before anything is created


@pytest.mark.parametrize("arguments, message", [
    (["--id", "--lowpass", "-3"], "argument --lowpass: must be a positive number (Hz)"),
    (["--reactions", "--reactions-frame", "body"], "argument --reactions-frame: invalid choice"),
])
def test_bad_values_are_usage_errors(trial, tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_:
        _analyze(trial, tmp_path, *arguments)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_input_errors_are_one_line_with_status_1(trial, tmp_path, capsys):
    assert main(["analyze", str(trial / "subject01_simbody.osim"), str(tmp_path / "missing.mot"), "--id",
                 "--out", str(tmp_path)]) == 1
    assert "cannot read the storage file" in capsys.readouterr().err
    (tmp_path / "loads.xml").write_text("<OpenSimDocument><Model/></OpenSimDocument>")
    assert main(["analyze", str(trial / "subject01_simbody.osim"), str(trial / "subject01_walk1_ik.mot"), "--id",
                 "--external-loads", str(tmp_path / "loads.xml"), "--out", str(tmp_path)]) == 1
    assert "expected an <ExternalLoads> element" in capsys.readouterr().err


def test_the_frames_choices_are_the_analysis_frames():
    assert analyze.FRAMES == reactions.FRAMES


def test_an_interruption_keeps_the_results_written_so_far(trial, tmp_path, capsys, monkeypatch):
    """Ctrl-C during the inverse dynamics (here: requested as it ends) stops before the reactions: the
    inverse dynamics are written, the metadata says so, exit status 130."""
    from mbkron.cli.common import interruption

    write = analyze._write

    def then_interrupt(name, *args):
        write(name, *args)
        interruption.request(2, None)  # SIGINT while deferred: takes effect at the next check

    monkeypatch.setattr(analyze, "_write", then_interrupt)
    status = _analyze(trial, tmp_path, "--id", "--reactions")
    assert status == 130
    assert "interrupted; the results written up to then are kept" in capsys.readouterr().err
    out = tmp_path / "out"
    assert (out / "subject01_walk1_ik_inverse_dynamics.sto").exists()
    assert not (out / "subject01_walk1_ik_joint_reactions.sto").exists()
    metadata = json.loads((out / "subject01_walk1_ik_analysis.json").read_text())
    assert metadata["settings"]["interrupted"] and set(metadata["outputs"]) == {"inverse_dynamics_sto",
                                                                               "inverse_dynamics_csv"}


RESERVES = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <ForceSet name="reserves">
    <objects>
{actuators}
    </objects>
  </ForceSet>
</OpenSimDocument>
"""


def test_muscle_analysis_static_optimisation_and_reactions_with_its_muscle_forces(trial, tmp_path, capsys):
    import mbkron

    model = mbkron.load_model(trial / "subject01_simbody.osim")
    actuators = "\n".join(f'<CoordinateActuator name="{c}_reserve"><coordinate>{c}</coordinate>'
                          f"<optimal_force>{1000 if c.startswith('pelvis') else 1}</optimal_force></CoordinateActuator>"
                          for c in model.coordinates)
    (tmp_path / "reserves.xml").write_text(RESERVES.format(actuators=actuators))
    assert _analyze(trial, tmp_path, "--external-loads", str(trial / "subject01_walk1_grf.xml"), "--lowpass", "6",
                    "--time-range", "0.4", "1.6", "--muscles", "--so", "--reserves", str(tmp_path / "reserves.xml"),
                    "--reactions") == 0
    assert "warning" not in capsys.readouterr().err
    out = tmp_path / "out"
    length = read_storage(out / "subject01_walk1_ik_MuscleAnalysis_Length.sto")
    assert length.labels == model.muscles and length.values.shape == (73, 54)
    forces = read_storage(out / "subject01_walk1_ik_StaticOptimization_force.sto")
    assert forces.labels[:54] == model.muscles and forces.labels[54] == "pelvis_tilt_reserve"
    assert not (out / "subject01_walk1_ik_inverse_dynamics.sto").exists()  # computed for --so, not asked for
    metadata = json.loads((out / "subject01_walk1_ik_analysis.json").read_text())
    assert metadata["settings"]["static_optimization_unbalanced_frames"] == 0
    assert metadata["settings"]["analyses"] == ["muscle_analysis", "static_optimization", "joint_reactions"]
    # the reactions carry the muscle forces: the hip's flexion moment is what the muscles leave to the joint
    reactions = read_storage(out / "subject01_walk1_ik_joint_reactions.sto")
    without = _reactions_without_muscles(trial, model)
    assert not np.allclose(reactions.column("hip_r_on_femur_r_in_ground_mz"), without.table[:, without.labels.index(
        "hip_r_on_femur_r_in_ground_mz")])
    # the package API writes the very same files
    result = analysis.analyze_trial(model, trial / "subject01_walk1_ik.mot",
                                    external_loads=trial / "subject01_walk1_grf.xml", lowpass=6, time_range=(0.4, 1.6),
                                    analyses=("muscles", "so", "reactions"), reserves=tmp_path / "reserves.xml")
    (tmp_path / "api").mkdir()
    written = result.write(tmp_path / "api", "subject01_walk1_ik")
    cli = sorted(p.name for p in out.iterdir() if p.name != "subject01_walk1_ik_analysis.json")
    assert sorted(Path(p).name for p in written.values()) == cli and len(cli) > 10
    for name in cli:
        assert (tmp_path / "api" / name).read_bytes() == (out / name).read_bytes(), name


def test_the_analyses_are_the_packages():
    assert analyze.ANALYSES == trial_module.ANALYSES


def _reactions_without_muscles(trial, model):
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot", 6.0, (0.4, 1.6))
    return analysis.joint_reactions(model, kinematics, analysis.external_loads(trial / "subject01_walk1_grf.xml"))


def test_analyze_trial_checks_its_arguments_and_takes_kinematics_computed(trial):
    import mbkron
    from mbkron.analysis.static_optimization import Reserve

    model = mbkron.load_model(trial / "subject01_simbody.osim")
    motion = trial / "subject01_walk1_ik.mot"
    with pytest.raises(ValueError, match="`analyses`: unknown analysis 'ik'"):
        analysis.analyze_trial(model, motion, analyses=("ik",))
    with pytest.raises(ValueError, match="`analyses` must name at least one of id, muscles, so, reactions"):
        analysis.analyze_trial(model, motion, analyses=())
    with pytest.raises(ValueError, match="`reserves` are for static optimisation"):
        analysis.analyze_trial(model, motion, reserves=(Reserve("pelvis_tilt", 1.0),))
    kinematics = analysis.trial_kinematics(model, motion, 6.0, (0.4, 1.6))
    with pytest.raises(ValueError, match="`lowpass` and `time_range` are for a motion file"):
        analysis.analyze_trial(model, kinematics, lowpass=6.0)
    result = analysis.analyze_trial(model, kinematics, analyses="id")
    assert result.analyses == ("inverse_dynamics",) and result.kinematics is kinematics
    np.testing.assert_array_equal(result["inverse_dynamics"].tau, analysis.inverse_dynamics(model, kinematics).tau)


@pytest.mark.parametrize("with_reserves", [False, True])
def test_the_unbalanced_warning_advises_reserves_only_when_none_were_given(trial, tmp_path, capsys, with_reserves):
    """Issue 27 item 12: the warning told users to pass --reserves when they had. Here reserves on the joints
    only (none on the pelvis): every frame is unbalanced either way; the advice names the file given."""
    import mbkron

    model = mbkron.load_model(trial / "subject01_simbody.osim", wrapping="ignore")
    joints = [c for c in model.coordinates if not c.startswith("pelvis")]
    actuators = "\n".join(f'<CoordinateActuator name="{c}_reserve"><coordinate>{c}</coordinate></CoordinateActuator>'
                          for c in joints)
    reserves = tmp_path / "joints.xml"
    reserves.write_text(RESERVES.format(actuators=actuators))
    extra = ["--reserves", str(reserves)] if with_reserves else []
    assert _analyze(trial, tmp_path, "--external-loads", str(trial / "subject01_walk1_grf.xml"), "--lowpass", "6",
                    "--time-range", "0.5", "0.6", "--so", "--ignore-wrapping", *extra) == 0
    err = capsys.readouterr().err
    frames = json.loads((tmp_path / "out" / "subject01_walk1_ik_analysis.json").read_text())["settings"]["frames"]
    assert f"could not balance the generalized forces at {frames} of {frames} frames" in err
    assert ("--reserves" in err) != with_reserves
    assert (f"the reserves `{reserves}` are too weak" in err) == with_reserves
