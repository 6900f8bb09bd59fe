"""Force elements of OpenSim models: ``coordinate_limit`` (CoordinateLimitForce), ``path_spring``
(PathSpring), PointToPointSpring (a ``spring_damper``), ``ligament`` (Ligament) and ``bushing`` (BushingForce)
— their laws in closed form, their model-file form, their import from ``.osim`` files and their agreement
with OpenSim 4.6 (stored data of ``validation/opensim/compare_forces.py``)."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import warnings

import numpy as np
import pytest

import mbkron
from mbkron import cli
from mbkron.core.errors import ModelError
from mbkron.multibody.loads import CoordinateLimitForce, SpringDamper
from mbkron.algorithms.dynamics.loads import coordinate_limit_force
from mbkron.io import dump_model, model_differences, parse_model_file
from mbkron.io.osim import read_osim
from mbkron.algorithms.paths.forces import path_length_and_moment_arms, path_set
from mbkron.multibody.muscles.springs import PathSpring
from validation.opensim import compare_forces

DATA = compare_forces.DATA


def _stored(name: str, tmp_path):
    path = tmp_path / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return path


# ---------------------------------------------------------------------- the laws in closed form
def test_coordinate_limit_force_in_each_region():
    """OpenSim's law at chosen points: zero inside, a quintic-step stiffness in each transition (at
    its middle stepUp(1/2) = 1/2), the full stiffness beyond; damping scaled alike."""
    load = CoordinateLimitForce("q", upper_stiffness=100.0, upper_limit=0.5, lower_stiffness=40.0, lower_limit=-0.2,
                                transition=0.1, damping=3.0)
    q = np.array([0.0, 0.55, 0.8, -0.25, -0.5, 0.5, -0.2, 0.6, -0.3, 0.52])
    qd = np.array([2.0, -1.0, 0.5, 1.5, -2.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    u = 0.2  # (0.52 − 0.5)/0.1: stepUp = 10u³ − 15u⁴ + 6u⁵
    step = 10 * u**3 - 15 * u**4 + 6 * u**5
    expected = [0.0,
                -50.0 * 0.05 - 3.0 * 0.5 * -1.0,     # middle of the upper transition: K = 100/2
                -100.0 * 0.3 - 3.0 * 0.5,            # beyond the upper limit
                20.0 * 0.05 - 3.0 * 0.5 * 1.5,       # middle of the lower transition: K = 40/2
                40.0 * 0.3 - 3.0 * -2.0,             # beyond the lower limit
                0.0, 0.0,                            # at the limits: no stiffness, no damping
                -100.0 * 0.1 - 3.0,                  # at the end of the upper transition: full
                40.0 * 0.1 - 3.0,                    # at the end of the lower transition
                -100.0 * step * 0.02]
    np.testing.assert_allclose(coordinate_limit_force(load, q, qd), expected, rtol=1e-14, atol=1e-14)


def _slider_model(loads):
    """A body sliding along x (coordinate s) with a point at the origin; or rotating about z (angle a)."""
    b = mbkron.ModelBuilder("slider", gravity=(0, -9.81, 0))
    b.add_coordinate("s", range=(-1, 1)).add_coordinate("a", range=(-3, 3))
    b.add_body("cart", parent="ground", joint="prismatic", axis=(1, 0, 0), variable="s", mass=2.0,
               inertia=(0.1, 0.1, 0.1))
    b.add_body("arm", parent="cart", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0, com=(0.2, 0, 0),
               inertia=(0.01, 0.02, 0.03))
    for load in loads:
        b.add_load(load)
    return b.build()


def test_path_spring_on_a_rotating_arm_in_closed_form():
    """Ground point (D, 0, 0) to the arm's point (r, 0, 0) on a cart at s: with x = s + r cos a,
    y = r sin a, L = √((x − D)² + y²); the generalized force is −∂L/∂q · T with
    T = k max(L − L₀, 0)(1 + d L̇), zero when slack."""
    D, r, k, rest, d = 1.5, 0.4, 300.0, 1.0, 0.2
    spring = PathSpring("band", (("ground", (D, 0.0, 0.0)), ("arm", (r, 0.0, 0.0))), k, rest, d)
    model = _slider_model([spring])
    q = np.array([[0.1, 0.7], [-0.3, 2.0], [0.4, 0.2], [0.0, 3.0]])
    qd = np.array([[0.5, -1.0], [1.0, 2.0], [-0.3, 0.4], [2.0, -3.0]])
    s, a = q.T
    x, y = s + r * np.cos(a), r * np.sin(a)
    L = np.hypot(x - D, y)
    dL = np.stack([(x - D) / L, ((x - D) * -r * np.sin(a) + y * r * np.cos(a)) / L], axis=-1)
    rate = (dL * qd).sum(-1)
    tension = k * np.maximum(L - rest, 0.0) * (1 + d * rate)
    assert (L < rest).any() and (L > rest).any()  # slack and taut states
    np.testing.assert_allclose(model.applied_forces(q, qd), -dL * tension[:, None], rtol=1e-12, atol=1e-12)


def test_the_model_loads_enter_every_dynamics_function():
    """``inverse_dynamics`` subtracts the loads' generalized forces, ``forward_dynamics`` adds them
    (``M q̈ = G + Q − N q̇``)."""
    loads = [CoordinateLimitForce("a", 50.0, 0.3, 20.0, -0.3, 0.1, 2.0),
             PathSpring("band", (("ground", (1.5, 0.2, 0.0)), ("cart", (0.0, 0.1, 0.0)), ("arm", (0.4, 0.0, 0.0))),
                        300.0, 1.0, 0.2)]
    model = _slider_model(loads)
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-1, 1, (6, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    Q = model.applied_forces(q, qd)
    assert np.abs(Q).max() > 1.0
    free = model.inverse_dynamics(q, qd, qdd, loads=())
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), free - Q, rtol=1e-12, atol=1e-10)
    M, G, N = model.mass_matrix(q), model.gravity_forces(q), model.velocity_forces(q, qd)
    np.testing.assert_allclose(model.forward_dynamics(q[0], qd[0]), np.linalg.solve(M[0], G[0] + Q[0] - N[0]),
                               rtol=1e-10, atol=1e-10)
    terms = model.equations_of_motion(q, qd)
    np.testing.assert_allclose(terms.applied_forces, Q, rtol=1e-13, atol=1e-13)
    alone = sum(model.applied_forces(q, qd, loads=(load,)) for load in loads)
    np.testing.assert_allclose(alone, Q, rtol=1e-13, atol=1e-13)


def test_a_path_spring_is_laid_out_with_each_model():
    """``Model.path_set``: a path force of ``model.loads`` has its one-path set built with the model (the same
    one at every call, the one ``path_forces.path_set`` gives); the same spring in a model of another layout is laid
    out on that model's coordinates; a spring that is not one of the model's loads gets a new set with the
    same values, bit for bit."""
    spring = PathSpring("band", (("ground", (1.5, 0.2, 0.0)), ("arm", (0.4, 0.0, 0.0))), 300.0, 1.0, 0.2)
    model = _slider_model([spring])
    assert model.path_set(spring) is model.path_set(spring) is path_set(model, spring)
    b = mbkron.ModelBuilder("arm alone")
    b.add_coordinate("a", range=(-3, 3))
    b.add_body("arm", parent="ground", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0,
               inertia=(0.01, 0.02, 0.03))
    alone = b.add_load(spring).build()
    assert (model.path_set(spring).nq, alone.path_set(spring).nq) == (2, 1)
    rng = np.random.default_rng(5)
    q, qd = rng.uniform(-1, 1, (5, 2)), rng.normal(size=(5, 2))
    np.testing.assert_allclose(alone.applied_forces(q[:, 1:], qd[:, 1:])[:, 0], model.applied_forces(
        np.stack([np.zeros(5), q[:, 1]], axis=-1), np.stack([np.zeros(5), qd[:, 1]], axis=-1))[:, 1], rtol=1e-13)
    copy = PathSpring(spring.name, spring.path, spring.stiffness, spring.resting_length, spring.dissipation)
    assert copy == spring and model.path_set(copy) is not model.path_set(spring)
    np.testing.assert_array_equal(model.applied_forces(q, qd, loads=(copy,)), model.applied_forces(q, qd))


# ---------------------------------------------------------------------- model files
LOADS_MODEL = """
[model]
name = "limits"
[units]
angle = "deg"
[coordinates.s]
unit = "m"
range = [-1, 1]
[coordinates.a]
range = [-170, 170]
[bodies.cart]
parent = "ground"
joint = "prismatic"
axis = [1, 0, 0]
variable = "s"
mass = 2
[bodies.arm]
parent = "cart"
axis = [0, 0, 1]
variable = "a"
mass = 1
com = [0.2, 0, 0]
[[loads]]
type = "coordinate_limit"
coordinate = "a"
upper_stiffness = 10         # N·m/deg
upper_limit = 5              # deg
lower_stiffness = 1
lower_limit = -90
transition = 2
damping = 0.01
[[loads]]
type = "coordinate_limit"
coordinate = "s"
upper_stiffness = 400
upper_limit = 0.1
lower_stiffness = 300
lower_limit = -0.05
transition = 0.02
[[loads]]
type = "path_spring"
name = "band"
stiffness = 300
resting_length = 1.0
dissipation = 0.2
[[loads.path]]
body = "ground"
point = [1.5, 0.2, 0]
[[loads.path]]
body = "cart"
point = [0, 0.1, 0]
active = { coordinate = "a", range = [-30, 60] }
[[loads.path]]
body = "arm"
point = [0.4, 0, 0]
"""


def test_model_file_loads_in_the_coordinates_units_and_round_trip():
    """Angles and per-angle values of an angular coordinate are in the file's angle unit (degrees here,
    as OpenSim's CoordinateLimitForce properties), lengths in m; dump_model writes SI and reads back equal."""
    model = parse_model_file(LOADS_MODEL).model
    ankle, slide, band = model.loads
    w = math.pi / 180
    assert ankle == CoordinateLimitForce("a", 10 / w, 5 * w, 1 / w, -90 * w, 2 * w, 0.01 / w)
    assert slide == CoordinateLimitForce("s", 400.0, 0.1, 300.0, -0.05, 0.02, 0.0)
    assert isinstance(band, PathSpring) and (band.stiffness, band.resting_length, band.dissipation) == (300, 1.0, 0.2)
    assert band.path[1][2].lo == pytest.approx(-30 * w, abs=1e-15)
    again = parse_model_file(dump_model(model)).model
    assert model_differences(model, again) == []
    changed = parse_model_file(LOADS_MODEL.replace("point = [0.4, 0, 0]", "point = [0.41, 0, 0]")).model
    assert any("band" in m or "PathSpring" in m for m in model_differences(model, changed))


@pytest.mark.parametrize("old, new, fragment", [
    ("upper_stiffness = 10 ", "upper_stiffness = 0 ", "`upper_stiffness` must be positive, got 0.0"),
    ("transition = 2\n", "transition = -2\n", "`transition` must be positive"),
    ("damping = 0.01", "damping = -1", "`damping` must be non-negative"),
    ('coordinate = "a"', 'coordinate = "ankle"', "`coordinate` names unknown coordinate 'ankle'"),
    ("resting_length = 1.0", "resting_length = -1.0", "`resting_length` must be a finite non-negative number"),
    ('body = "arm"', 'body = "leg"', "path `band`: point 2 names unknown body 'leg'"),
    ("dissipation = 0.2", "dissipation = 'x'", "loads[2].dissipation: invalid expression"),
    ('name = "band"', "", "loads[2]: `name` is required"),
])
def test_model_file_load_errors_name_the_field(old, new, fragment):
    assert old in LOADS_MODEL
    with pytest.raises(ModelError) as error:
        parse_model_file(LOADS_MODEL.replace(old, new, 1))
    assert fragment in str(error.value)


# ---------------------------------------------------------------------- import
@pytest.mark.parametrize("name, kind", [("gait10dof18musc_spring", CoordinateLimitForce),
                                        ("gait10dof18musc_path_spring", PathSpring)])
def test_public_spring_models_import_and_convert(name, kind, tmp_path):
    path = _stored(name, tmp_path)
    model = mbkron.load_model(path)
    assert [type(load) for load in model.loads] == [kind]
    if kind is CoordinateLimitForce:  # OpenSim's per-degree values, in SI
        w = math.pi / 180
        assert model.loads[0] == CoordinateLimitForce("ankle_angle_r", 10 / w, 5 * w, 1 / w, -90 * w, 2 * w, 0.01 / w)
    else:
        spring = model.loads[0]
        assert (spring.name, spring.stiffness, spring.resting_length, spring.dissipation) == \
            ("BiarticularSpringDamper", 10000.0, 0.4, 0.01)
        assert [p[0] for p in spring.path] == ["femur_r", "femur_r", "calcn_r"]
    out = tmp_path / "model.toml"
    assert cli.main(["convert", str(path), "-o", str(out)]) == 0
    assert model_differences(model, mbkron.load_model(out)) == []


_PIECES = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m">
  <Ground name="ground"/>
  <BodySet><objects>
    <Body name="a"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
    <Body name="b"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet><objects>
    <PinJoint name="pin"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/a</socket_child_frame>
      <coordinates><Coordinate name="q"><range>-1 1</range></Coordinate></coordinates>
    </PinJoint>
    <PinJoint name="pin2"><socket_parent_frame>/bodyset/a</socket_parent_frame><socket_child_frame>/bodyset/b</socket_child_frame>
      <coordinates><Coordinate name="x"><range>-1 1</range><locked>true</locked></Coordinate></coordinates>
    </PinJoint>
  </objects></JointSet>
  <ForceSet><objects>FORCES</objects></ForceSet>
</Model></OpenSimDocument>
"""


def _import(forces: str, tmp_path):
    path = tmp_path / "m.osim"
    path.write_text(_PIECES.replace("FORCES", forces))
    return mbkron.load_model(path)


def test_import_reads_defaults_and_skips_disabled_forces(tmp_path):
    """Missing CoordinateLimitForce properties take OpenSim's defaults; appliesForce = false and a limit on a
    locked coordinate import nothing (listed in the convert header); a PointToPointSpring is a spring_damper
    without damping."""
    model = _import("<CoordinateLimitForce name='l'><coordinate>q</coordinate></CoordinateLimitForce>"
                    "<CoordinateLimitForce name='off'><appliesForce>false</appliesForce><coordinate>q</coordinate>"
                    "</CoordinateLimitForce>"
                    "<CoordinateLimitForce name='locked'><coordinate>x</coordinate></CoordinateLimitForce>"
                    "<PointToPointSpring name='p'><socket_body1>/ground</socket_body1><socket_body2>/bodyset/a"
                    "</socket_body2><point1>1 0 0</point1><point2>0 1 0</point2><stiffness>5</stiffness>"
                    "<rest_length>0.5</rest_length></PointToPointSpring>", tmp_path)
    w = math.pi / 180
    assert model.loads == (CoordinateLimitForce("q", 1 / w, 0.0, 1 / w, 0.0, 0.1 * w, 0.001 / w),
                           SpringDamper("ground", [1.0, 0.0, 0.0], "a", [0.0, 1.0, 0.0], 5.0, 0.0, 0.5))
    header = read_osim(tmp_path / "m.osim").header
    assert "2 force(s) that apply nothing (CoordinateLimitForce off (appliesForce = false), " \
           "CoordinateLimitForce locked (on the locked coordinate x))" in header.replace("\n# ", " ")


@pytest.mark.parametrize("forces, fragment", [
    ("<CoordinateLimitForce name='l'><coordinate>nope</coordinate></CoordinateLimitForce>",
     "CoordinateLimitForce[@name='l']/coordinate: expected the name of a coordinate, got 'nope'"),
    ("<CoordinateLimitForce name='l'><coordinate>q</coordinate><transition>0</transition></CoordinateLimitForce>",
     "CoordinateLimitForce[@name='l']/transition: expected a positive number, got 0.0"),
    ("<CoordinateLimitForce name='l'><coordinate>q</coordinate><upper_stiffness>k</upper_stiffness></CoordinateLimitForce>",
     "upper_stiffness: expected 1 numbers, got 'k'"),
    ("<CoordinateLimitForce name='l'><coordinate>q</coordinate><colour>1</colour></CoordinateLimitForce>",
     "<colour> is not supported"),
    ("<PointToPointSpring name='p'><socket_body1>/bodyset/a/offset</socket_body1><socket_body2>/ground</socket_body2>"
     "<point1>0 0 0</point1><point2>0 0 0</point2><stiffness>1</stiffness><rest_length>0</rest_length></PointToPointSpring>",
     "PointToPointSpring between bodies or ground"),
    ("<PathSpring name='s'><resting_length>-1</resting_length><stiffness>1</stiffness><GeometryPath><PathPointSet><objects>"
     "<PathPoint name='p'><socket_parent_frame>/ground</socket_parent_frame><location>0 0 0</location></PathPoint>"
     "<PathPoint name='r'><socket_parent_frame>/bodyset/a</socket_parent_frame><location>1 0 0</location></PathPoint>"
     "</objects></PathPointSet></GeometryPath></PathSpring>",
     "PathSpring[@name='s']/resting_length: expected a non-negative number, got -1.0"),
    ("<ExpressionBasedPointToPointForce name='h'/>", "<ExpressionBasedPointToPointForce> is not supported; supported: the forces Thelen2003Muscle"),
    ("<ExpressionBasedPointToPointForce name='h'/>", "PathActuator, BushingForce, CoordinateLimitForce, Ligament, PathSpring, "
                                      "PointToPointSpring"),
    ("<BushingForce name='b'><socket_frame1>/bodyset/a</socket_frame1><socket_frame2>/bodyset/a</socket_frame2>"
     "</BushingForce>", "BushingForce[@name='b']: both frames are on `a`"),
    ("<BushingForce name='b'><socket_frame1>/bodyset/a</socket_frame1><socket_frame2>/ground</socket_frame2>"
     "<rotational_damping>1 -1 0</rotational_damping></BushingForce>",
     "BushingForce[@name='b']/rotational_damping: expected 3 non-negative numbers"),
    ("<Ligament name='l'><resting_length>0</resting_length><GeometryPath><PathPointSet><objects>"
     "<PathPoint name='p'><socket_parent_frame>/ground</socket_parent_frame><location>0 0 0</location></PathPoint>"
     "<PathPoint name='r'><socket_parent_frame>/bodyset/a</socket_parent_frame><location>1 0 0</location></PathPoint>"
     "</objects></PathPointSet></GeometryPath></Ligament>",
     "Ligament[@name='l']/resting_length: a ligament's resting length must be positive"),
    ("<Ligament name='l'><resting_length>0.5</resting_length><force_length_curve><Constant><value>1</value></Constant>"
     "</force_length_curve><GeometryPath><PathPointSet><objects>"
     "<PathPoint name='p'><socket_parent_frame>/ground</socket_parent_frame><location>0 0 0</location></PathPoint>"
     "<PathPoint name='r'><socket_parent_frame>/bodyset/a</socket_parent_frame><location>1 0 0</location></PathPoint>"
     "</objects></PathPointSet></GeometryPath></Ligament>",
     "<Constant> is not supported; supported: a ligament's force-length curve as a SimmSpline"),
])
def test_import_errors_name_the_element(forces, fragment, tmp_path):
    with pytest.raises(ModelError) as error:
        _import(forces, tmp_path)
    assert fragment in str(error.value)


def test_wrapped_path_springs_follow_the_wrapping_option(tmp_path):
    """A path spring's wraps are read as a muscle's: a PathWrap without a wrap object is a problem naming it;
    with ``wrapping="ignore"`` the spring imports without its wraps."""
    spring = ("<PathSpring name='s'><resting_length>0.1</resting_length><stiffness>1</stiffness><GeometryPath>"
              "<PathPointSet><objects>"
              "<PathPoint name='p'><socket_parent_frame>/ground</socket_parent_frame><location>0 0 0</location></PathPoint>"
              "<PathPoint name='r'><socket_parent_frame>/bodyset/a</socket_parent_frame><location>1 0 0</location></PathPoint>"
              "</objects></PathPointSet><PathWrapSet><objects><PathWrap name='w'/></objects></PathWrapSet>"
              "</GeometryPath></PathSpring>")
    with pytest.raises(ModelError, match=re.escape("PathSpring[@name='s']/GeometryPath/PathWrapSet/objects/"
                                                   "PathWrap[@name='w']: missing <wrap_object>")):
        _import(spring, tmp_path)
    path = tmp_path / "m.osim"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbkron.load_model(path, wrapping="ignore")
    assert [load.name for load in model.loads] == ["s"] and model.loads[0].wraps == ()


# ---------------------------------------------------------------------- agreement with OpenSim 4.6
@pytest.mark.parametrize("name", compare_forces.MODELS)
def test_generalized_forces_agree_with_opensim(name, tmp_path):
    """Each element's generalized force equals OpenSim's (stored by compare_forces) to 1e-9 relative."""
    data = json.loads((DATA / f"forces_{name}.json").read_text())
    path = _stored(name, tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == data["sha256"]
    found = compare_forces.deviations(data, path)
    assert len(found) == {"forces": 6}.get(name, 1)
    assert max(found.values()) < 1e-9, found


def test_the_force_model_states_exercise_every_branch(tmp_path):
    """The stored states of ``forces`` put each limited coordinate inside, in both transitions and beyond
    both limits, the path spring slack and taut with its conditional point on and off, and the ligament
    slack, on its curve's rising part (strain 1 to 1.6) and beyond."""
    model = mbkron.load_model(_stored("forces", tmp_path))
    data = json.loads((DATA / "forces_forces.json").read_text())
    q = np.reshape(data["q"], (-1, 3))
    for load in model.loads[:2]:
        value = q[:, model.coordinates.index(load.coordinate)]
        regions = {int(np.searchsorted([load.lower_limit - load.transition, load.lower_limit, load.upper_limit,
                                        load.upper_limit + load.transition], v)) for v in value}
        assert regions == {0, 1, 2, 3, 4}
    spring = model.loads[2]
    length, _ = path_length_and_moment_arms(model, spring, model.kinematics(q, 1))
    assert (length < spring.resting_length).any() and (length > spring.resting_length).any()
    condition = spring.path[2][2]
    inside = (q[:, 1] >= condition.lo) & (q[:, 1] <= condition.hi)
    assert inside.any() and not inside.all()
    ligament = model.loads[4]
    length, _ = path_length_and_moment_arms(model, ligament, model.kinematics(q, 1))
    strain = length / ligament.resting_length
    assert set(np.searchsorted([1.0, 1.6], strain)) == {0, 1, 2}


@pytest.mark.parametrize("name", ["forces"])
def test_live_opensim_reference_equals_the_stored_one(name, tmp_path):
    pytest.importorskip("opensim")
    path = _stored(name, tmp_path)
    data = json.loads((DATA / f"forces_{name}.json").read_text())
    live = compare_forces.reference(name, path)
    np.testing.assert_allclose(live["generalized_forces"], data["generalized_forces"], rtol=1e-11, atol=1e-11)


LIGAMENT_MODEL = """
[model]
name = "tether"
[coordinates.s]
unit = "m"
range = [-0.4, 1]
[bodies.cart]
joint = "prismatic"
axis = [1, 0, 0]
variable = "s"
mass = 2
[[loads]]
type = "ligament"
name = "tether"
resting_length = 0.6
pcsa_force = 500
force_length = { kind = "linear", x = [1, 2], y = [0, 1] }
[[loads.path]]
body = "ground"
point = [0, 0, 0]
[[loads.path]]
body = "cart"
point = [0.5, 0, 0]
"""


def test_a_ligament_in_a_model_file_pulls_by_its_curve_and_round_trips():
    """A ligament along x (L = 0.5 + s): no force while L ≤ L₀ = 0.6, then T = F·f(L/L₀) with the file's linear
    curve f(x) = x − 1, and Q_s = −T (Eq. 192, R = −∂L/∂s = −1); without `force_length`, OpenSim's default
    curve; dump_model writes it and reads back equal; bad curves are ModelErrors naming the field."""
    from mbkron.multibody.muscles.ligaments import OPENSIM_FORCE_LENGTH, Ligament
    model = parse_model_file(LIGAMENT_MODEL).model
    (ligament,) = model.loads
    assert isinstance(ligament, Ligament) and ligament.force_length.kind == "linear"
    s = np.array([[-0.3], [0.05], [0.1], [0.4], [0.9]])
    length = 0.5 + s[:, 0]
    expected = np.where(length > 0.6, -500.0 * (length / 0.6 - 1.0), 0.0)
    np.testing.assert_allclose(model.applied_forces(s, np.zeros_like(s))[:, 0], expected, rtol=1e-14, atol=1e-12)
    assert model_differences(model, parse_model_file(dump_model(model)).model) == []
    default = parse_model_file(LIGAMENT_MODEL.replace('force_length = { kind = "linear", x = [1, 2], y = [0, 1] }\n',
                                                      "")).model.loads[0]
    assert default.force_length.kind == "fmm" and tuple(default.force_length.x) == OPENSIM_FORCE_LENGTH[0]
    for old, new, fragment in (("x = [1, 2]", "x = [2, 1]", "loads[0].force_length"),
                               ('kind = "linear"', 'kind = "cubic"', "loads[0].force_length.kind: expected one of"),
                               ("resting_length = 0.6", "resting_length = 0", "`resting_length` must be a finite positive")):
        with pytest.raises(ModelError, match=re.escape(fragment)):
            parse_model_file(LIGAMENT_MODEL.replace(old, new))


BUSHING_MODEL = LIGAMENT_MODEL.split("[[loads]]")[0] + """
[units]
angle = "deg"
[[loads]]
type = "bushing"
name = "mount"
body_1 = "ground"
body_2 = "cart"
frame_2 = { translation = [0.1, 0, 0], rotation = [{ axis = [0, 0, 1], angle = 90 }] }
rotational_stiffness = [1, 2, 3]
translational_stiffness = [400, 500, 600]
translational_damping = [7, 0, 0]
"""


def test_a_bushing_in_a_model_file_and_round_trip():
    """A bushing from the ground to a frame 0.1 m ahead of a cart on x (rotated 90° about z: the file's angle
    unit): the deflection is x = s + 0.1 and 90° about z, so Q_s = −400 (s + 0.1) − 7 ṡ (the rotation does not
    change with s); stiffnesses and dampings are SI whatever the angle unit; dump_model round-trips."""
    from mbkron.multibody.bushings import BushingForce
    from mbkron.algorithms.dynamics.bushings import bushing_deflection
    model = parse_model_file(BUSHING_MODEL).model
    (bushing,) = model.loads
    assert isinstance(bushing, BushingForce) and bushing.rotational_damping.tolist() == [0.0, 0.0, 0.0]
    s, sd = np.array([[-0.3], [0.0], [0.25]]), np.array([[1.0], [-2.0], [0.5]])
    np.testing.assert_allclose(model.applied_forces(s, sd)[:, 0], -400.0 * (s[:, 0] + 0.1) - 7.0 * sd[:, 0],
                               rtol=1e-13, atol=1e-12)
    phi, _ = bushing_deflection(model, bushing, model.kinematics(s, 1))
    np.testing.assert_allclose(phi[:, 2], np.pi / 2, rtol=0, atol=1e-15)
    assert model_differences(model, parse_model_file(dump_model(model)).model) == []
    with pytest.raises(ModelError, match=re.escape("load 0 (BushingForce): `body_1` and `body_2` are both 'cart'")):
        parse_model_file(BUSHING_MODEL.replace('body_1 = "ground"', 'body_1 = "cart"'))


def test_a_ligament_curve_written_as_a_named_function_is_read(tmp_path):
    """Older files (PredSim's foot models) write the curve as ``<SimmSpline name="force_length_curve">``, which
    OpenSim 4.6 reads as the property: so does the importer; without a curve, OpenSim's default."""
    from mbkron.multibody.muscles.ligaments import OPENSIM_FORCE_LENGTH
    path = ("<GeometryPath><PathPointSet><objects>"
            "<PathPoint name='p'><socket_parent_frame>/ground</socket_parent_frame><location>0 0 0</location></PathPoint>"
            "<PathPoint name='r'><socket_parent_frame>/bodyset/a</socket_parent_frame><location>1 0 0</location></PathPoint>"
            "</objects></PathPointSet></GeometryPath>")
    model = _import(f"<Ligament name='old'><resting_length>0.5</resting_length><pcsa_force>70</pcsa_force>{path}"
                    "<SimmSpline name='force_length_curve'><x>-5 1 1.1 5</x><y>0 0 3 300</y></SimmSpline></Ligament>"
                    f"<Ligament name='plain'><resting_length>0.4</resting_length>{path}</Ligament>", tmp_path)
    old, plain = model.loads
    assert old.force_length.kind == "fmm" and old.force_length.x.tolist() == [-5.0, 1.0, 1.1, 5.0]
    assert old.force_length.y.tolist() == [0.0, 0.0, 3.0, 300.0] and old.pcsa_force == 70.0
    assert tuple(plain.force_length.x) == OPENSIM_FORCE_LENGTH[0] and plain.pcsa_force == 0.0


def test_a_ligament_over_a_wrap_pulls_along_the_muscles_path(tmp_path):
    """A Ligament with arm26 TRIlat's GeometryPath (a cylinder, `TRI`) imports with its wrap: its length and its
    generalized force are those of the same path as a muscle (lengths and moment arms over wraps checked against
    OpenSim in test_wrapping_models.py): Q = R·F·f(L/L₀) with R and L the muscle's, f the default curve; its model
    file round-trips with the wrap object; with ``wrapping="ignore"`` it imports without it, named in the warning."""
    from mbkron.multibody.muscles.ligaments import opensim_force_length
    text = gzip.decompress((DATA / "arm26.osim.gz").read_bytes()).decode()
    start = text.index('<Thelen2003Muscle name="TRIlat">')
    path = text[text.index("<GeometryPath", start):text.index("</GeometryPath>", start) + len("</GeometryPath>")]
    ligament = f'<Ligament name="band"><resting_length>0.18</resting_length><pcsa_force>90</pcsa_force>{path}</Ligament>'
    at = text.rindex("</objects>", 0, text.index("</ForceSet>"))
    file = tmp_path / "arm26_band.osim"
    file.write_text(text[:at] + ligament + text[at:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbkron.load_model(file)
    band = model.loads[-1]
    assert band.name == "band" and [w.surface.name for w in band.wraps] == ["TRI"]
    q = np.array([[a, b] for a in (-0.3, 0.4, 1.2) for b in (0.2, 1.0, 2.0)])
    m = model.muscles.index("TRIlat")
    L, R = model.muscle_lengths(q)[:, m], model.moment_arms(q)[:, :, m]
    length, _ = path_length_and_moment_arms(model, band, model.kinematics(q, 1))
    np.testing.assert_array_equal(length, L)
    tension = np.where(L > 0.18, 90.0 * opensim_force_length()(L / 0.18), 0.0)  # L: 0.171 … 0.210 m
    assert (tension > 0).any() and (tension == 0).any()
    np.testing.assert_allclose(model.applied_forces(q, np.zeros_like(q), loads=(band,)), R * tension[:, None],
                               rtol=1e-12, atol=1e-12)
    again = parse_model_file(dump_model(model)).model
    assert model_differences(model, again) == []
    with pytest.warns(UserWarning, match="imported without their wrap objects: .*band"):
        plain = mbkron.load_model(file, wrapping="ignore")
    assert plain.loads[-1].wraps == ()
