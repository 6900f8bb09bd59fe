"""The OpenSim importer on contact-model files (element names with ``::``) and loop-closing
constraints (``PointConstraint``, ``WeldConstraint`` → ``[[constraints]]`` loop closures)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import cli
from mbkron.core.errors import ModelError
from mbkron.io import model_differences
from mbkron.io.osim import read_osim
from tests import fuzz_osim
from validation.opensim import compare_osim_loops

_CONTACT_MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="block">
    <!-- a comment mentioning SimTK::Transform -->
    <Ground name="ground"><FrameGeometry name="frame_geometry"/></Ground>
    <gravity>0 -9.80665 0</gravity>
    <BodySet><objects>
      <Body name="block"><mass>2</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
    </objects></BodySet>
    <JointSet><objects>
      <SliderJoint name="slide">
        <socket_parent_frame>ground_offset</socket_parent_frame>
        <socket_child_frame>block_offset</socket_child_frame>
        <coordinates><Coordinate name="y"><default_value>0.5</default_value><range>-1 1</range></Coordinate></coordinates>
        <frames>
          <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><orientation>0 0 1.5707963267948966</orientation></PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="block_offset"><socket_parent>/bodyset/block</socket_parent><orientation>0 0 1.5707963267948966</orientation></PhysicalOffsetFrame>
        </frames>
      </SliderJoint>
    </objects></JointSet>
    <ForceSet><objects>
      <HuntCrossleyForce name="contact">
        <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
          <HuntCrossleyForce::ContactParameters><geometry>floor corner</geometry><stiffness>1e7</stiffness>
          </HuntCrossleyForce::ContactParameters>
        </objects></HuntCrossleyForce::ContactParametersSet>
      </HuntCrossleyForce>
      <CoordinateActuator name="push"><coordinate>y</coordinate></CoordinateActuator>
    </objects></ForceSet>
  </Model>
</OpenSimDocument>
"""


# ---------------------------------------------------------------------- element names with `::`
def test_element_names_with_double_colons_are_read_and_contact_forces_reported(tmp_path):
    """OpenSim's contact forces have children named ``HuntCrossleyForce::ContactParametersSet``: not
    namespace-well-formed, but well-formed XML 1.0. The file is read, and the contact force's geometries
    (missing here: the model has no ContactGeometrySet) are named in the one ModelError with those paths,
    not dropped."""
    path = tmp_path / "block.osim"
    path.write_text(_CONTACT_MODEL)
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(path)
    message = str(raised.value)
    assert "not well-formed" not in message
    assert ("/OpenSimDocument/Model[@name='block']/ForceSet/objects/HuntCrossleyForce[@name='contact']/"
            "HuntCrossleyForce::ContactParametersSet[@name='contact_parameters']/objects/"
            "HuntCrossleyForce::ContactParameters/geometry: expected the name of an element of the "
            "ContactGeometrySet, got 'floor'") in message
    assert message.count("expected the name of an element") == 2  # floor, corner
    assert "CoordinateActuator" not in message  # the actuator driven by controls is not reported (test_osim_import)


def test_double_colon_elements_keep_their_names_in_paths(tmp_path):
    """An unknown ``::`` element where the importer checks children is named as written."""
    text = _CONTACT_MODEL.replace("<mass>2</mass>", "<mass>2</mass><A::B>1</A::B>")
    path = tmp_path / "block.osim"
    path.write_text(text)
    with pytest.raises(ModelError, match=re.escape("Body[@name='block']/A::B: <A::B> is not supported")):
        mbkron.load_model(path)


def test_the_contact_model_without_its_contact_force_imports(tmp_path):
    start, end = _CONTACT_MODEL.index("<HuntCrossleyForce "), _CONTACT_MODEL.index("<CoordinateActuator")
    path = tmp_path / "block.osim"
    path.write_text(_CONTACT_MODEL[:start] + _CONTACT_MODEL[end:])
    model = mbkron.load_model(path)
    assert [c.name for c in model.coordinate_records] == ["y"]


# ---------------------------------------------------------------------- loop-closing constraints
DATA = Path(__file__).parent / "data" / "osim"
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def loop_files(tmp_path_factory) -> Path:
    """The models of ``validation/opensim/compare_osim_loops.py`` (written by OpenSim 4.6), decompressed."""
    directory = tmp_path_factory.mktemp("loops")
    for name in compare_osim_loops.MODELS:
        data = gzip.decompress((DATA / f"{name}.osim.gz").read_bytes())
        assert hashlib.sha256(data).hexdigest() == json.loads((DATA / f"{name}.json").read_text())["sha256"]
        (directory / f"{name}.osim").write_bytes(data)
    return directory


@pytest.fixture(scope="module")
def four_bar(loop_files) -> Path:
    return loop_files / "four_bar.osim"


def test_a_point_constraint_becomes_a_planar_loop_closure_solving_the_joints_next_to_its_bodies(four_bar):
    imported = read_osim(four_bar)
    document = imported.document
    assert list(document["coordinates"]) == ["crank_angle"]
    (group,) = document["constraints"]
    assert group["joints"] == ["j_coupler.rotationz", "j_rocker.rotationz"]
    assert dict(group["loops"][0]) == {"body_a": "coupler", "point_a": [0.45, 0.0, 0.0], "body_b": "rocker",
                                       "point_b": [0.4, 0.0, 0.0], "plane": "xy"}
    text = gzip.decompress((DATA / "four_bar.osim.gz").read_bytes()).decode()
    defaults = {name: float(re.search(rf'<Coordinate name="{name}">.*?<default_value>(\S+)<', text, re.S).group(1))
                for name in ("coupler_angle", "rocker_angle")}
    assert dict(group["guess"]) == {"j_coupler.rotationz": defaults["coupler_angle"],
                                    "j_rocker.rotationz": defaults["rocker_angle"]}
    assert "variable" not in document["bodies"]["j_rocker.rotationz"]
    assert "PointConstraint closure (coupler ↔ rocker, plane xy): solves j_coupler.rotationz, j_rocker.rotationz" \
        in imported.header


@pytest.mark.parametrize("name", list(compare_osim_loops.MODELS))
def test_agrees_with_stored_opensim_data(loop_files, name):
    """Solved joint variables, reduced mass matrix, forward dynamics, gravity, bias and inverse
    dynamics along the constraint manifold (OpenSim's side: compare_osim_loops's docstring)."""
    data = json.loads((DATA / f"{name}.json").read_text())
    assert len(data["states"]) == compare_osim_loops.STATES
    assert data["dependent_bodies"] == list(compare_osim_loops.MODELS[name][1].values())
    found = compare_osim_loops.deviations(data, loop_files / f"{name}.osim")
    assert set(found) == set(compare_osim_loops.KEYS)
    assert all(value <= TOLERANCE for value in found.values()), found


@pytest.mark.parametrize("name", list(compare_osim_loops.MODELS))
def test_live_opensim_reproduces_the_stored_data(loop_files, name):
    pytest.importorskip("opensim")
    data = json.loads((DATA / f"{name}.json").read_text())
    live = compare_osim_loops.reference(name, loop_files / f"{name}.osim")
    assert live["states"] == data["states"]
    for key in compare_osim_loops.KEYS:
        ours, theirs = np.array(live[key]), np.array(data[key])
        assert np.abs(ours - theirs).max() <= TOLERANCE * max(float(np.abs(theirs).max()), 1.0), key


def test_a_weld_constraint_becomes_a_fixed_spatial_closure_solving_six_joints(loop_files):
    """The weld chain: the origins of the constraint's two offset frames become the points, their
    orientations the relative rotation; the six joints nearest the tool are solved (a slider, a planar
    joint's three axes, a universal joint's two), the swing stays the coordinate."""
    document = read_osim(loop_files / "weld_chain.osim").document
    assert list(document["coordinates"]) == ["swing"]
    (group,) = document["constraints"]
    assert group["joints"] == list(compare_osim_loops.MODELS["weld_chain"][1].values())
    (loop,) = group["loops"]
    assert (loop["body_a"], loop["body_b"], loop["plane"], loop["orientation"]) == ("ground", "tool", "space", "fixed")
    assert loop["point_b"] == pytest.approx([0.1, 0.05, -0.02], abs=1e-15)


def test_a_point_constraint_on_a_spatial_loop_has_three_equations(loop_files):
    """The point chain's universal joint has two non-parallel axes: the closure is spatial and solves
    the slider and the universal joint's two axes (nearest the tool first)."""
    (group,) = read_osim(loop_files / "point_chain.osim").document["constraints"]
    assert group["joints"] == ["j_lift.translationx", "j_wrist.rotationy", "j_wrist.rotationx"]
    assert group["loops"][0]["plane"] == "space" and "orientation" not in group["loops"][0]


@pytest.mark.parametrize("name", list(compare_osim_loops.MODELS))
def test_converts_and_loads_back_equal(loop_files, tmp_path, name):
    source, output = loop_files / f"{name}.osim", tmp_path / f"{name}.toml"
    assert cli.main(["convert", str(source), "-o", str(output)]) == 0
    assert model_differences(mbkron.load_model(output), mbkron.load_model(source)) == []


def _four_bar_text(four_bar: Path) -> str:
    return four_bar.read_text()


def test_a_loop_with_too_few_joints_of_their_own_coordinate_is_unsupported(four_bar, tmp_path):
    """When the rocker's coordinate also drives the coupler (a coupler makes them equal), only one
    joint on the loop is free to be solved, for two equations."""
    text = _four_bar_text(four_bar).replace("<objects>\n\t\t\t\t<PointConstraint", """<objects>
				<CoordinateCouplerConstraint name="tie"><coupled_coordinates_function><LinearFunction>
				<coefficients>1 0</coefficients></LinearFunction></coupled_coordinates_function>
				<independent_coordinate_names>rocker_angle</independent_coordinate_names>
				<dependent_coordinate_name>coupler_angle</dependent_coordinate_name></CoordinateCouplerConstraint>
				<PointConstraint""", 1)
    assert "CoordinateCouplerConstraint" in text
    path = tmp_path / "tied.osim"
    path.write_text(text)
    with pytest.raises(ModelError, match=re.escape("PointConstraint[@name='closure']: <PointConstraint> is not supported; "
                                                   "supported: loop constraints with as many joints driven by a coordinate "
                                                   "of their own on the loop, moving its points independently, as "
                                                   "equations (2; this loop has 1)")):
        mbkron.load_model(path)


def test_points_apart_normal_to_a_planar_loop_cannot_be_satisfied(four_bar, tmp_path):
    path = tmp_path / "apart.osim"
    path.write_text(_four_bar_text(four_bar).replace("<location_body_2>0.40000000000000002 0 0<",
                                                     "<location_body_2>0.40000000000000002 0 0.001<"))
    with pytest.raises(ModelError, match=r"PointConstraint\[@name='closure'\]: the points are -0\.001 m apart normal "
                                         "to the plane of the loop's joints"):
        mbkron.load_model(path)


def test_other_constraints_are_unsupported_with_their_paths(four_bar, tmp_path):
    text = _four_bar_text(four_bar).replace("<PointConstraint", "<ConstantDistanceConstraint", 1) \
        .replace("</PointConstraint>", "</ConstantDistanceConstraint>", 1)
    path = tmp_path / "distance.osim"
    path.write_text(text)
    with pytest.raises(ModelError, match=re.escape(
            "ConstantDistanceConstraint[@name='closure']: <ConstantDistanceConstraint> is not supported; supported: "
            "CoordinateCouplerConstraint, PointConstraint, PointOnLineConstraint, WeldConstraint")):
        mbkron.load_model(path)


def test_a_constraint_on_a_body_whose_joint_is_not_imported_is_one_model_error(four_bar, tmp_path):
    text = _four_bar_text(four_bar).replace('<PinJoint name="j_rocker">', '<EllipsoidJoint name="j_rocker">', 1)
    end = text.index("</PinJoint>", text.index('<EllipsoidJoint name="j_rocker">'))
    path = tmp_path / "ellipsoid.osim"
    path.write_text(text[:end] + "</EllipsoidJoint>" + text[end + len("</PinJoint>"):])
    with pytest.raises(ModelError, match=re.escape("EllipsoidJoint[@name='j_rocker']: <EllipsoidJoint> is not "
                                                   "supported")):
        mbkron.load_model(path)


def test_mutated_loop_models_load_or_raise_model_error_without_warnings_or_hangs():
    """``tests/fuzz_osim.py`` on the two loop models (``python -m tests.fuzz_osim`` runs more; 300
    mutations with seed 5 gave loaded 91, ModelError 209, nothing else)."""
    counts, bugs, _ = fuzz_osim.run(40, 7, files=tuple(compare_osim_loops.MODELS))
    assert [(name, description, result.outcome, result.detail) for name, description, result in bugs] == []
    assert counts["loaded"] > 0 and counts["model_error"] > 0, counts


def test_point_on_line_constraints_solve_joints_that_move_the_point(tmp_path):
    """opensim-models' BouncingBlock (CC BY 3.0; its contact force removed here): a block on a FreeJoint and a
    two-link leg, block and foot held on the ground's y axis by two PointOnLineConstraints. The rule's first
    candidates next to the block are its FreeJoint rotations, which do not move its origin; the joints solved
    are those that do (rank of the equations' differences), and at the default pose both points are on the
    line; a line that is not a ground axis is refused by name."""
    text = gzip.decompress((DATA / "bouncing_block.osim.gz").read_bytes()).decode()
    text = re.sub(r"<HuntCrossleyForce .*?</HuntCrossleyForce>", "", text, flags=re.S)
    path = tmp_path / "bouncing_block.osim"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        document = read_osim(path).document
        model = mbkron.load_model(path)
    (group,) = document["constraints"]
    assert group["joints"][:2] == ["ground_block.translationz", "ground_block.translationx"]
    assert not any(".rotation" in joint for joint in group["joints"][:2])
    q = np.array(model.default_q, dtype=float)
    T = model.kinematics(q, 0).T
    for body in ("block", "link2"):
        np.testing.assert_allclose(T[model.body_index(body), [0, 2], 3], 0.0, atol=1e-12)
    assert np.isfinite(model.forward_dynamics(q, np.zeros_like(q))).all()
    oblique = path.with_name("oblique.osim")
    oblique.write_text(text.replace("<line_direction_vec>0 1 0</line_direction_vec>",
                                    "<line_direction_vec>0 1 1</line_direction_vec>", 1))
    with pytest.raises(ModelError, match=re.escape("PointOnLineConstraint[@name='lock_block_to_y_axis']: "
                                                   "<PointOnLineConstraint> is not supported; supported: point-on-line "
                                                   "constraints whose line is fixed in ground along one of its axes")):
        mbkron.load_model(oblique)
