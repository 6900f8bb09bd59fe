"""Joint reactions along the walking trial: checked against the inverse dynamics by virtual work."""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron import analysis
from mbkron.analysis import reactions
from mbkron.io.storage import read_storage
from tests import test_analysis_id as shared
from tests.test_analysis_id import TIME_RANGE

model, trial = shared.model, shared.trial  # the stored trial's fixtures

HIP = ("hip_flexion_r", "hip_adduction_r", "hip_rotation_r")


@pytest.fixture(scope="module")
def walk(trial, model):
    kinematics = analysis.trial_kinematics(model, trial / "subject01_walk1_ik.mot", 6.0, TIME_RANGE)
    loads = analysis.external_loads(trial / "subject01_walk1_grf.xml")
    return kinematics, loads, analysis.inverse_dynamics(model, kinematics, loads)


def _axes(model, kin, joint):
    """The ground-frame rotation axes of a joint's axis bodies ``<joint>.rotation<k>``."""
    names = [b for b in model.bodies if b.startswith(f"{joint}.rotation")]
    return np.stack([kin.T[:, model.body_index(b), :3, :3] @ model.body(b).rotation_axis for b in names], axis=1)


def test_the_joints_and_labels_are_opensims(walk, model):
    kinematics, loads, _ = walk
    result = analysis.joint_reactions(model, kinematics, loads)
    assert result.joints[:3] == ("ground_pelvis", "hip_r", "knee_r") and result.children[:3] == (
        "pelvis", "femur_r", "tibia_r")
    assert result.parents[:3] == ("ground", "pelvis", "femur_r")
    assert result.labels[:4] == ("ground_pelvis_on_pelvis_in_ground_fx", "ground_pelvis_on_pelvis_in_ground_fy",
                                 "ground_pelvis_on_pelvis_in_ground_fz", "ground_pelvis_on_pelvis_in_ground_mx")
    assert result.table.shape == (73, 9 * len(result.joints))


def test_reactions_carry_the_generalized_forces_along_the_joint_axes(walk, model):
    """The pelvis translations are along ground axes, so the reaction force on the pelvis is their
    generalized forces; the hip's three rotations meet at its centre, so the moment about it projected on
    each axis is that coordinate's moment (virtual work of the joint wrench)."""
    kinematics, loads, id_result = walk
    result = analysis.joint_reactions(model, kinematics, loads)
    tau = dict(zip(model.coordinates, id_result.tau.T))
    pelvis, hip = result.joints.index("ground_pelvis"), result.joints.index("hip_r")
    np.testing.assert_allclose(result.force[:, pelvis], np.column_stack([tau["pelvis_tx"], tau["pelvis_ty"],
                                                                         tau["pelvis_tz"]]), rtol=0, atol=1e-9)
    kin = model.kinematics(kinematics.q, 1)
    projected = np.einsum("nkx,nx->nk", _axes(model, kin, "hip_r"), result.moment[:, hip])
    np.testing.assert_allclose(projected, np.column_stack([tau[c] for c in HIP]), rtol=0, atol=1e-9)
    # the point of application is the hip centre: the origin of femur_r's frame in this model
    np.testing.assert_allclose(result.point[:, hip], kin.T[:, model.body_index("femur_r"), :3, 3], atol=1e-12)


def test_muscle_tensions_take_their_moments_off_the_joint(walk, model):
    """With muscle tensions F the hip's net moment about each axis is τ − (R F) for that coordinate."""
    kinematics, loads, id_result = walk
    tension = np.random.default_rng(5).uniform(0, 500, size=(kinematics.time.size, len(model.muscles)))
    result = analysis.joint_reactions(model, kinematics, loads, muscle_forces=tension)
    R = model.moment_arms(kinematics.q)  # (n, nq, n_muscles)
    muscular = np.einsum("nkm,nm->nk", R, tension)
    hip = result.joints.index("hip_r")
    columns = [model.coordinates.index(c) for c in HIP]
    projected = np.einsum("nkx,nx->nk", _axes(model, model.kinematics(kinematics.q, 1), "hip_r"), result.moment[:, hip])
    np.testing.assert_allclose(projected, id_result.tau[:, columns] - muscular[:, columns], rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="`muscle_forces` must have shape \\(73, 54\\)"):
        analysis.joint_reactions(model, kinematics, loads, muscle_forces=tension[:, :3])


def test_reactions_in_the_child_and_parent_frames_are_rotated(walk, model):
    kinematics, loads, _ = walk
    ground = analysis.joint_reactions(model, kinematics, loads)
    kin = model.kinematics(kinematics.q, 0)
    knee = ground.joints.index("knee_r")
    for frame, body in (("child", "tibia_r"), ("parent", "femur_r")):
        local = analysis.joint_reactions(model, kinematics, loads, frame=frame)
        T = kin.T[:, model.body_index(body)]
        np.testing.assert_allclose(local.force[:, knee], np.einsum("nxy,nx->ny", T[:, :3, :3], ground.force[:, knee]),
                                   atol=1e-9)
        np.testing.assert_allclose(local.moment[:, knee], np.einsum("nxy,nx->ny", T[:, :3, :3],
                                                                    ground.moment[:, knee]), atol=1e-9)
        np.testing.assert_allclose(local.point[:, knee], np.einsum("nxy,nx->ny", T[:, :3, :3],
                                                                   ground.point[:, knee] - T[:, :3, 3]), atol=1e-12)
        assert local.labels[9 * knee] == f"knee_r_on_tibia_r_in_{body}_fx"
    with pytest.raises(ValueError, match="`frame` must be one of ground, child, parent"):
        analysis.joint_reactions(model, kinematics, loads, frame="body")
    assert reactions.FRAMES == ("ground", "child", "parent")


def test_reactions_equal_opensims_joint_reactions(walk, model, trial):
    """OpenSim's Joint.calcReactionOnChildExpressedInGround at 9 frames, its model driven by actuators whose
    forces are its inverse dynamics (stored by validation/opensim/compare_analysis.py)."""
    kinematics, loads, _ = walk
    opensim = read_storage(trial / "opensim_joint_reactions_lowpass6.sto")
    result = analysis.joint_reactions(model, kinematics, loads)
    frames = np.searchsorted(result.time, opensim.time)
    np.testing.assert_allclose(result.time[frames], opensim.time, rtol=0, atol=1e-15)
    assert set(opensim.labels) == set(result.labels)
    columns = [result.labels.index(label) for label in opensim.labels]
    np.testing.assert_allclose(result.table[frames][:, columns], opensim.values, rtol=0, atol=1e-6)


def test_joints_whose_coordinates_are_all_locked_keep_opensims_names(trial, walk, tmp_path):
    """Issue 28: a joint whose coordinates are all locked is imported as a fixed body; its reactions are
    still labelled by the OpenSim joint's name (``subtalar_r_on_calcn_r_…``), not by its child body, so every
    column of OpenSim's JointReaction table is there by name."""
    text = (trial / "subject01_simbody.osim").read_text()
    for coordinate in ("subtalar_angle_r", "mtp_angle_r", "subtalar_angle_l", "mtp_angle_l"):
        start = text.index(f'<Coordinate name="{coordinate}">')
        at = text.index("<locked>false</locked>", start)
        text = text[:at] + "<locked>true</locked>" + text[at + len("<locked>false</locked>"):]
    path = tmp_path / "locked.osim"
    path.write_text(text)
    locked = mbkron.load_model(path)
    assert "subtalar_angle_r" not in locked.coordinates and locked.body("calcn_r").joint == "fixed"
    assert locked.body("calcn_r").joint_name == "subtalar_r" and locked.body("toes_l").joint_name == "mtp_l"
    _, loads, _ = walk
    motion = analysis.trial_kinematics(locked, trial / "subject01_walk1_ik.mot", 6.0, TIME_RANGE)
    result = analysis.joint_reactions(locked, motion, loads)
    opensim = read_storage(trial / "opensim_joint_reactions_lowpass6.sto")
    assert set(result.labels) == set(opensim.labels)
    assert "subtalar_r_on_calcn_r_in_ground_fx" in result.labels and "mtp_l_on_toes_l_in_ground_mz" in result.labels
