"""OpenSim 2.x/3.x files (issue #15, "3.x format files where feasible"): :mod:`mbkron.io.osim.legacy`.

The four old files of opensim-models (a double pendulum of Version 30501, gait2392 and
gait10dof18musc of 30000, gait2354 of 20303; ``tests/data/osim/legacy_*.osim.gz``) against OpenSim
4.6, which upgrades them when it loads them (its side stored by ``python -m
validation.opensim.compare_osim``), and against the same models' OpenSim 4 files; the upgrade's
rules on a small hand-written 3.x file, checked by direct computation.
"""

from __future__ import annotations

import gzip
import re
import warnings

import numpy as np
import pytest

import mbkron
from mbkron.core.errors import ModelError
from mbkron.io import format_toml, model_differences, parse_model_file
from mbkron.io.osim import read_osim
from tests.test_osim_agreement import DATA, DYNAMICS, FROM_MASS_MATRIX_TOLERANCE, TOLERANCE, stored, worst_deviations

#: The old files and the same model's OpenSim 4 file in opensim-models (None: there is none).
LEGACY = {"legacy_double_pendulum": None, "legacy_gait2392": "gait2392_subject01",
          "legacy_gait2354": "gait2354_simbody", "legacy_gait10dof18musc": "gait10dof18musc_subject01"}
VERSIONS = {"legacy_double_pendulum": "30501", "legacy_gait2392": "30000", "legacy_gait2354": "20303",
            "legacy_gait10dof18musc": "30000"}


def _file(tmp_path, name: str):
    path = tmp_path / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return path


def _load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbkron.load_model(path, **kwargs)


@pytest.mark.parametrize("name", LEGACY)
def test_old_files_agree_with_opensim(name, tmp_path):
    data = stored(name)
    path = _file(tmp_path, name)
    assert f'Version="{VERSIONS[name]}"' in path.read_text()[:200]
    model = _load(path)
    assert list(model.coordinates) == data["coordinates"]
    assert list(model.muscles) == data["muscles"]
    found = worst_deviations(model, data)
    assert found.pop("bias_from_mass_matrix") <= FROM_MASS_MATRIX_TOLERANCE
    assert set(DYNAMICS) <= set(found)
    assert all(value <= TOLERANCE for value in found.values()), found


def test_stored_data_covers_the_old_files():
    assert [len(stored(n)["coordinates"]) for n in LEGACY] == [2, 23, 23, 10]
    assert [len(stored(n)["muscles"]) for n in LEGACY] == [0, 92, 54, 18]
    for name in ("legacy_gait2392", "legacy_gait2354", "legacy_gait10dof18musc"):
        assert "gradient" in stored(name)["moment_arm_reference"]  # moving points
        assert stored(name)["edge_q"]  # conditional points
        assert stored(name)["differences_to_4x_file"] == [] and stored(name)["equal_to"] == LEGACY[name]


@pytest.mark.parametrize("name", [n for n, four in LEGACY.items() if four])
def test_old_files_equal_the_same_models_opensim4_files(name, tmp_path):
    assert model_differences(_load(_file(tmp_path, name)), _load(_file(tmp_path, LEGACY[name]))) == []


@pytest.mark.parametrize("name", ["legacy_double_pendulum", "legacy_gait10dof18musc"])
def test_convert_round_trips(name, tmp_path):
    path = _file(tmp_path, name)
    converted = read_osim(path)
    assert converted.header.startswith(f"# OpenSim {VERSIONS[name][0]}.x file (Version {VERSIONS[name]}), upgraded")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reloaded = parse_model_file(converted.header + format_toml(converted.document), "converted.toml").model
    assert model_differences(_load(path), reloaded) == []


# ---------------------------------------------------------------------- the rules, on a small file
SMALL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="30000"><Model name="m">
<gravity>0 -9.81 0</gravity>
<BodySet><objects>
 <Body name="ground"><mass>0</mass><Joint/><VisibleObject><show_axes>false</show_axes></VisibleObject></Body>
 <Body name="b"><mass>2</mass><mass_center>0 -0.5 0</mass_center>
  <inertia_xx>0.123456789</inertia_xx><inertia_xy>0.0101010101</inertia_xy>
  <Joint><PinJoint name="j"><parent_body>ground</parent_body>
   <location_in_parent>0.123456789 0 0</location_in_parent><orientation_in_parent>0 0 0.5</orientation_in_parent>
   <location>0 0.25 0</location><orientation>0 0 0</orientation>
   <CoordinateSet><objects><Coordinate name="q"><motion_type>rotational</motion_type>
    <default_value>0.1</default_value><range>-1 1</range></Coordinate></objects><groups/></CoordinateSet>
   <reverse>false</reverse></PinJoint></Joint>
  <VisibleObject><show_axes>false</show_axes></VisibleObject><WrapObjectSet><objects/></WrapObjectSet>
 </Body></objects></BodySet>
<ConstraintSet><objects/></ConstraintSet>
<ForceSet><objects><Thelen2003Muscle name="mus"><isDisabled>false</isDisabled>
 <max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
 <tendon_slack_length>0.2</tendon_slack_length><pennation_angle_at_optimal>0</pennation_angle_at_optimal>
 <GeometryPath><PathPointSet><objects>
  <PathPoint name="p1"><location>0 0 0</location><body>ground</body></PathPoint>
  <PathPoint name="p2"><location>0 -0.5 0</location><body>b</body></PathPoint>
 </objects></PathPointSet><VisibleObject/></GeometryPath></Thelen2003Muscle></objects></ForceSet>
</Model></OpenSimDocument>
"""
BODY = "/OpenSimDocument/Model[@name='m']/BodySet/objects/Body[@name='b']"


def _write(tmp_path, text: str = SMALL):
    path = tmp_path / "small.osim"
    path.write_text(text)
    return path


def _rz(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def test_joint_frames_and_inertia_are_rounded_to_six_digits_as_opensim_writes_them(tmp_path):
    """OpenSim's upgrade writes the offset frames and the inertia with C++'s default precision (6
    significant digits); absent inertia moments are 1, absent products 0 (``Body::updateFromXMLNode``)."""
    model = _load(_write(tmp_path))
    assert list(model.coordinates) == ["q"] and model.coordinate("q").default == 0.1
    document = read_osim(_write(tmp_path)).document
    assert document["model"]["gravity"] == [0.0, -9.81, 0.0]
    assert document["bodies"]["b"]["inertia"] == [[0.123457, 0.010101, 0.0], [0.010101, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert document["bodies"]["b"]["mass"] == 2.0 and document["bodies"]["b"]["com"] == [0.0, -0.5, 0.0]
    # the path: ground origin to (0, -0.5, 0) of b, which sits at Trans(0.123457, 0, 0) Rz(0.5) Rz(q) Trans(0, -0.25, 0)
    for q in (-0.7, 0.0, 0.3):
        point = np.array([0.123457, 0.0, 0.0]) + _rz(0.5 + q) @ np.array([0.0, -0.75, 0.0])
        assert model.muscle_lengths(np.array([q]))[0] == pytest.approx(np.linalg.norm(point), rel=0, abs=1e-15)


def test_reverse_swaps_parent_and_child(tmp_path):
    with pytest.raises(ModelError, match=re.escape("the child body `ground` is ground")):
        _load(_write(tmp_path, SMALL.replace("<reverse>false</reverse>", "<reverse>true</reverse>")))


@pytest.mark.parametrize("old, new, message", [
    ("<location_in_parent>0.123456789 0 0</location_in_parent>", "<location_in_parent>1 2</location_in_parent>",
     f"{BODY}/Joint/PinJoint[@name='j']/location_in_parent: expected 3 numbers"),
    ("<inertia_xx>0.123456789</inertia_xx>", "<inertia_xx>heavy</inertia_xx>", f"{BODY}/inertia_xx: expected 1 numbers"),
    ("<body>b</body>", "", "PathPoint[@name='p2']: missing <body>"),
    ("<body>b</body>", "<body>nowhere</body>", "PathPoint[@name='p2']: <PathPoint> is not supported"),
    ("<objects/></ConstraintSet>", "<objects><WeldConstraint name='w'><isDisabled>false</isDisabled><body_1>b</body_1>"
     "</WeldConstraint></objects></ConstraintSet>", "ConstraintSet/objects/WeldConstraint[@name='w']/body_1: <body_1> is "
     "not supported"),
    ("<ConstraintSet>", "<FrameSet><objects><PhysicalOffsetFrame name='f'/></objects></FrameSet><ConstraintSet>",
     "/OpenSimDocument/Model[@name='m']/FrameSet: <FrameSet> is not supported"),
    ("<reverse>false</reverse>", "<reverse>maybe</reverse>", f"{BODY}/Joint/PinJoint[@name='j']/reverse: expected true or false"),
])
def test_problems_name_the_elements_where_they_are_in_the_original_file(tmp_path, old, new, message):
    assert old in SMALL
    with pytest.raises(ModelError) as raised:
        _load(_write(tmp_path, SMALL.replace(old, new)))
    assert any(problem.startswith(message) or message in problem for problem in raised.value.problems), \
        raised.value.problems


def test_connectors_of_version_30501_and_disabled_forces(tmp_path):
    """30501: joints in the model's JointSet with parent_body/child_body connectors (the double pendulum's form)."""
    path = _file(tmp_path, "legacy_double_pendulum")
    broken = path.read_text().replace('name="child_body"', 'name="other_body"', 1)
    with pytest.raises(ModelError, match=re.escape("PinJoint[@name='pin1']/connectors: expected the connectors "
                                                   "parent_body and child_body")):
        _load(_write(tmp_path, broken))


def test_files_older_than_2_3_2_and_bad_versions_are_refused(tmp_path):
    with pytest.raises(ModelError, match=re.escape("Version 20301: OpenSim files of Version ≥ 20302 are read")):
        _load(_write(tmp_path, SMALL.replace('Version="30000"', 'Version="20301"')))
    with pytest.raises(ModelError, match=re.escape("Version 'x': expected the file format's version number")):
        _load(_write(tmp_path, SMALL.replace('Version="30000"', 'Version="x"')))


@pytest.mark.parametrize("name", ["legacy_double_pendulum", "legacy_gait10dof18musc"])
def test_live_opensim_reproduces_the_stored_data(name, tmp_path):
    """With OpenSim installed, its upgrade of the old file gives the stored reference again."""
    pytest.importorskip("opensim")
    from validation.opensim import compare_osim

    data = stored(name)
    live = compare_osim.reference(name, _file(tmp_path, name), False)
    assert live["coordinates"] == data["coordinates"] and live["q"] == data["q"] and live["edge_q"] == data["edge_q"]
    for key in (*DYNAMICS, "lengths", "moment_arms", "edge_lengths"):
        ours, theirs = np.array(live[key]), np.array(data[key])
        scale = max(float(np.abs(theirs).max()), 1.0) if theirs.size else 1.0
        assert np.abs(ours - theirs).max(initial=0.0) <= TOLERANCE * scale, key
