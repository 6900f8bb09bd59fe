"""Inverse dynamics of the gait2354 walking trial against OpenSim 4.6's InverseDynamicsTool (issue #17).

The inputs and OpenSim's results are stored in tests/data/analysis/ by
``python -m validation.opensim.compare_analysis --write-data`` (opensim-org/opensim-models,
Pipelines/Gait2354_Simbody; OpenSim's results with 17 significant digits). The acceptance: every
generalized force within 1e-6 N·m (N) of OpenSim's, at OpenSim's frames.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import analysis
from mbkron.io.storage import read_storage

DATA = Path(__file__).parent / "data" / "analysis"
TIME_RANGE = (0.4, 1.6)  # subject01_Setup_InverseDynamics.xml
ACCEPTANCE = 1e-6  # N·m or N (issue #17)


def unpack(directory: Path) -> Path:
    """The stored trial, decompressed into ``directory``."""
    for packed in DATA.glob("*.gz"):
        (directory / packed.name[:-3]).write_bytes(gzip.decompress(packed.read_bytes()))
    return directory


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    return unpack(tmp_path_factory.mktemp("trial"))


@pytest.fixture(scope="module")
def model(trial):
    return mbkron.load_model(trial / "subject01_simbody.osim")


@pytest.mark.parametrize("cutoff, reference", [(6.0, "lowpass6"), (None, "unfiltered")])
def test_inverse_dynamics_of_the_walking_trial_equals_opensims(trial, model, cutoff, reference):
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot", cutoff, TIME_RANGE)
    result = analysis.inverse_dynamics(model, kinematics, analysis.external_loads(trial / "subject01_walk1_grf.xml"))
    opensim = read_storage(trial / f"opensim_inverse_dynamics_{reference}.sto")
    assert set(result.labels) == set(opensim.labels)  # OpenSim's names, <coordinate>_moment / _force
    assert result.labels[3] == "pelvis_tx_force" and result.labels[6] == "hip_flexion_r_moment"
    # with the low-pass filter OpenSim resamples the padded coordinates (their times are printed with 8
    # decimals, so the steps differ): the frames are 2.4e-7 s before the file's
    np.testing.assert_allclose(result.time, opensim.time, rtol=0, atol=1e-12)
    if cutoff is not None:
        assert result.time[0] == pytest.approx(0.4 - 2.4e-7, abs=1e-9)
    for k, label in enumerate(result.labels):
        np.testing.assert_allclose(result.tau[:, k], opensim.column(label), rtol=0, atol=ACCEPTANCE, err_msg=label)


def test_the_result_is_written_as_opensims_table(trial, model, tmp_path):
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot", 6.0, TIME_RANGE)
    result = analysis.inverse_dynamics(model, kinematics)  # no external loads: another τ, same layout
    result.write(tmp_path / "id.sto")
    table = read_storage(tmp_path / "id.sto")
    assert table.name == "Inverse Dynamics Generalized Forces" and table.labels == result.labels
    np.testing.assert_array_equal(table.values, result.tau)
    np.testing.assert_array_equal(table.time, result.time)


def test_without_external_loads_the_ground_reactions_appear_in_the_pelvis_forces(trial, model):
    """The six pelvis coordinates of a free pelvis carry what the feet's loads no longer provide: their
    translational forces differ by the total ground reaction force (the translations are along ground axes)."""
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot", 6.0, TIME_RANGE)
    loads = analysis.external_loads(trial / "subject01_walk1_grf.xml")
    with_loads = analysis.inverse_dynamics(model, kinematics, loads)
    without = analysis.inverse_dynamics(model, kinematics)
    translations = [model.coordinates.index(name) for name in ("pelvis_tx", "pelvis_ty", "pelvis_tz")]
    total = with_loads.loads.force.sum(axis=1)  # (n, 3), ground
    np.testing.assert_allclose(without.tau[:, translations] - with_loads.tau[:, translations], total, rtol=1e-12,
                               atol=1e-9)
    assert np.max(total[:, 1]) > 700  # body weight on the force plates, N


def test_kinematics_of_another_model_are_refused(trial, model):
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot")
    other = mbkron.load_model(Path(__file__).parents[1] / "models" / "two_link_arm.toml")
    with pytest.raises(ValueError, match="`kinematics` has the coordinates"):
        analysis.inverse_dynamics(other, kinematics)


def test_trial_analysis_writes_into_a_directory_it_creates(trial, model, tmp_path):
    """``TrialAnalysis.write`` creates its directory as ``--out`` does (issue 27 item 15); a path it cannot
    create is an OSError naming it, not a hidden temporary file."""
    result = analysis.analyze_trial(model, trial / "subject01_walk1_ik.mot", time_range=(0.4, 0.5), analyses=("id",))
    written = result.write(tmp_path / "results" / "walk", "trial")
    table = read_storage(written["inverse_dynamics_sto"])
    np.testing.assert_array_equal(table.values, result["inverse_dynamics"].tau)
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match=f"cannot create the directory `{tmp_path / 'file' / 'results'}`") as error:
        result.write(tmp_path / "file" / "results", "trial")
    assert ".tmp" not in str(error.value)


def test_contact_forces_are_left_out_of_trial_analyses_with_a_warning():
    """Issue 28: a model's contact forces stand for what the trial's measured external loads measure, so the
    inverse dynamics and the joint reactions of a trial leave them out, and say so; the model's other loads
    stay. A ball on a vertical slider 1 cm into the floor, a spring-damper on it as well: the generalized
    force is m (ḧ + g) minus the spring's, whatever the contact would push."""
    from mbkron.analysis.motion import TrialKinematics
    from mbkron.multibody.contact import SmoothSphereHalfSpace
    from mbkron.multibody.loads import SpringDamper
    b = mbkron.ModelBuilder(name="ball", gravity=(0.0, -9.81, 0.0)).add_coordinate("h", unit="m", default=0.1)
    b.add_body("ball", joint="prismatic", axis=(0, 1, 0), variable="h", mass=2.0, inertia=[0.01, 0.01, 0.01])
    b.add_load(SmoothSphereHalfSpace("floor_contact", "ball", (0.0, 0.0, 0.0), 0.05, "ground", (0.0, 0.0, 0.0),
                                     (0.0, 1.0, 0.0), stiffness=1e6, dissipation=1.0))
    b.add_load(SpringDamper("ground", (0.0, 1.0, 0.0), "ball", (0.0, 0.0, 0.0), 100.0, 0.0, 0.5))
    model = b.build()
    h, hd, hdd = np.array([[0.04], [0.045]]), np.array([[0.1], [-0.2]]), np.array([[0.5], [-1.0]])
    assert np.abs(model.applied_forces(h, hd, loads=model.loads[:1])).min() > 1.0  # the contact does push there
    kinematics = TrialKinematics(np.array([0.0, 0.01]), h, hd, hdd, ("h",), (), None, "synthetic")
    with pytest.warns(UserWarning, match=r"model `ball`: its 1 contact force\(s\) \(`floor_contact`\) are left out of "
                                         r"the inverse dynamics"):
        result = analysis.inverse_dynamics(model, kinematics)
    spring = model.applied_forces(h, hd, loads=model.loads[1:])
    np.testing.assert_allclose(result.tau, 2.0 * (hdd + 9.81) - spring, rtol=1e-13)
    with pytest.warns(UserWarning, match="are left out of the joint reactions"):
        analysis.joint_reactions(model, kinematics)
