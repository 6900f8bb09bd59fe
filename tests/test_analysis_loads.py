"""OpenSim ExternalLoads files and their loads at a trial's frames (issue #17)."""

from __future__ import annotations

import numpy as np
import pytest

from mbkron.analysis.external_loads import external_loads, frame_loads, generalized_forces
from mbkron.multibody.loads import BodyTorque, PointForce
from mbkron.io.osim.external_loads import ExternalLoadsError, read_external_loads
from mbkron.io.storage import Storage, StorageError
from tests import test_analysis_id as shared

model, trial = shared.model, shared.trial  # the stored trial's fixtures

FORCE = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <ExternalLoads name="loads">
    <objects>
      {forces}
    </objects>
    <groups/>
    {datafile}
  </ExternalLoads>
</OpenSimDocument>
"""
ONE = """<ExternalForce name="push">
        <applied_to_body>{body}</applied_to_body>
        <force_expressed_in_body>{force_in}</force_expressed_in_body>
        <point_expressed_in_body>{point_in}</point_expressed_in_body>
        <force_identifier>F</force_identifier>
        <point_identifier>P</point_identifier>
        <torque_identifier>T</torque_identifier>
      </ExternalForce>"""


def _write(path, forces, datafile="<datafile>data.mot</datafile>"):
    path.write_text(FORCE.format(forces=forces, datafile=datafile))
    return path


def test_the_trials_loads_file_is_read(trial):
    spec = read_external_loads(trial / "subject01_walk1_grf.xml")
    assert spec.name == "Ex2" and [f.name for f in spec.forces] == ["right", "left"]
    right, left = spec.forces
    assert (right.applied_to_body, right.force_expressed_in_body, right.point_expressed_in_body) == (
        "calcn_r", "ground", "ground")
    assert (left.force_identifier, left.point_identifier, left.torque_identifier) == (
        "1_ground_force_v", "1_ground_force_p", "1_ground_torque_")
    assert right.data_source_name is None  # "Unassigned"
    assert spec.datafile == trial / "subject01_walk1_grf.mot" and spec.model_kinematics_file is None
    loads = external_loads(spec)
    assert [sorted(c) for c in loads.columns] == [["force", "point", "torque"]] * 2
    assert [loads.data.labels[i] for i in loads.columns[1]["point"]] == ["1_ground_force_px", "1_ground_force_py",
                                                                        "1_ground_force_pz"]


def test_problems_are_reported_together_with_their_xml_paths(tmp_path):
    bad = """<ExternalForce name="a">
        <applied_to_body></applied_to_body>
        <point_identifier>P</point_identifier>
        <color>red</color>
      </ExternalForce>
      <PrescribedForce name="b"/>"""
    with pytest.raises(ExternalLoadsError) as error:
        read_external_loads(_write(tmp_path / "bad.xml", bad, datafile=""))
    message = str(error.value)
    assert message.startswith(f"invalid external loads in {tmp_path / 'bad.xml'}: 6 problems")
    for expected in ("ExternalForce[@name='a']/color: <color> is not supported",
                     "<PrescribedForce> is not supported; supported: <ExternalForce> inside <objects>",
                     "ExternalForce[@name='a']/applied_to_body: expected the name of the body",
                     "applies neither a force nor a torque",
                     "point_identifier: a point is specified for no applied force",
                     "ExternalLoads[@name='loads']/datafile: missing the data file"):
        assert expected in message


def test_unsafe_unreadable_and_other_documents_are_refused(tmp_path):
    (tmp_path / "dtd.xml").write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><OpenSimDocument/>')
    with pytest.raises(ExternalLoadsError, match="refused: the XML declares a DTD"):
        read_external_loads(tmp_path / "dtd.xml")
    with pytest.raises(ExternalLoadsError, match="cannot read the external loads file"):
        read_external_loads(tmp_path / "missing.xml")
    (tmp_path / "model.xml").write_text("<OpenSimDocument><Model/></OpenSimDocument>")
    with pytest.raises(ExternalLoadsError, match="expected an <ExternalLoads> element"):
        read_external_loads(tmp_path / "model.xml")


def test_disabled_forces_are_skipped_and_a_kinematics_file_warns(tmp_path):
    forces = ONE.format(body="pelvis", force_in="ground", point_in="ground").replace(
        "<applied_to_body>", "<isDisabled>true</isDisabled><applied_to_body>") + ONE.replace('"push"', '"pull"').format(
        body="torso", force_in="ground", point_in="ground")
    path = _write(tmp_path / "l.xml", forces, "<datafile>d.mot</datafile><external_loads_model_kinematics_file>ik.mot"
                  "</external_loads_model_kinematics_file>")
    with pytest.warns(UserWarning, match="external_loads_model_kinematics_file `ik.mot` is ignored"):
        spec = read_external_loads(path)
    assert [f.name for f in spec.forces] == ["pull"]


def _data(time, values, labels=("Fx", "Fy", "Fz", "Px", "Py", "Pz", "Tx", "Ty", "Tz")):
    return Storage("forces", labels, np.asarray(time, float), np.asarray(values, float))


def test_identifiers_must_select_three_columns(tmp_path):
    path = _write(tmp_path / "l.xml", ONE.format(body="pelvis", force_in="ground", point_in="ground"))
    data = _data([0.0, 1.0], np.zeros((2, 4)), labels=("Fx", "Fy", "Px", "Tx"))
    with pytest.raises(StorageError, match="ExternalForce `push`: force_identifier `F` selects 2 column\\(s\\) "
                                           "\\(Fx, Fy\\); expected exactly 3"):
        external_loads(path, data)


@pytest.mark.parametrize("force_in, point_in", [("femur_r", "femur_r"), ("ground", "tibia_r"), ("pelvis", "ground")])
def test_generalized_forces_equal_the_virtual_work_of_the_same_wrench(tmp_path, model, force_in, point_in):
    """A constant force, point and torque (in any frames) give the generalized forces of the equivalent
    PointForce and BodyTorque of mbkron.algorithms.dynamics.loads (Model.applied_forces), frame by frame."""
    rng = np.random.default_rng(4)
    F, P, T = rng.normal(size=3) * 100, rng.normal(size=3) * 0.1, rng.normal(size=3) * 10
    time = np.linspace(0.0, 1.0, 6)  # six rows: cubic splines of constants are the constants
    data = _data(time, np.tile(np.concatenate([F, P, T]), (6, 1)))
    loads = external_loads(_write(tmp_path / "l.xml", ONE.format(body="tibia_r", force_in=force_in, point_in=point_in)),
                           data)
    q = model.default_q + rng.uniform(-0.3, 0.3, size=(4, model.nq))
    kin = model.kinematics(q, 1)
    at = frame_loads(model, kin, loads, np.array([0.1, 0.3, 0.6, 0.9]))
    Q = generalized_forces(model, kin, at)
    for i in range(4):
        pose = {name: model.kinematics(q[i], 0).T[model.body_index(name)] for name in ("femur_r", "tibia_r", "pelvis")}
        rotate = np.eye(3) if force_in == "ground" else pose[force_in][:3, :3]
        point_ground = P if point_in == "ground" else pose[point_in][:3, :3] @ P + pose[point_in][:3, 3]
        point_tibia = pose["tibia_r"][:3, :3].T @ (point_ground - pose["tibia_r"][:3, 3])
        expected = model.applied_forces(q[i], np.zeros(model.nq), loads=(
            PointForce("tibia_r", point_tibia, rotate @ F), BodyTorque("tibia_r", rotate @ T)))
        np.testing.assert_allclose(Q[i], expected, rtol=1e-12, atol=1e-10)


def test_bodies_and_time_spans_are_checked(tmp_path, model):
    data = _data(np.linspace(0.0, 1.0, 6), np.zeros((6, 9)))
    loads = external_loads(_write(tmp_path / "l.xml", ONE.format(body="hand_r", force_in="ground", point_in="ground")),
                           data)
    kin = model.kinematics(model.default_q[None], 0)
    with pytest.raises(ValueError, match="ExternalForce `push`: `applied_to_body` names `hand_r`, which is not a body"):
        frame_loads(model, kin, loads, np.array([0.5]))
    loads = external_loads(_write(tmp_path / "m.xml", ONE.format(body="pelvis", force_in="ground", point_in="ground")),
                           data)
    with pytest.raises(ValueError, match="are not all within the external loads' data"):
        frame_loads(model, kin, loads, np.array([1.5]))
