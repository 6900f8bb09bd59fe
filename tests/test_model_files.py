"""Model definition files (mbkron.io.formulas): the shipped models against independent references, unit
conversion, round trips, validation messages and the safety of formulas."""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
import sympy
from scipy.spatial.transform import Rotation

import mbkron
import mbkron.examples
from mbkron.core.errors import ModelError
from mbkron.numerics.functions import CubicSpline, FourierSeries
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.io import (
    ExpressionValue,
    dump_model,
    format_toml,
    load_model,
    model_differences,
    models_equal,
    parse_model_file,
    read_model_file,
)
from mbkron.multibody.loads import LineForce, PointForce
from validation.closed_form import cesari_three_link as cesari
from validation.closed_form import duarte_two_link as duarte
from validation.closed_form import planar_chain as chain_reference

MODELS = Path(__file__).resolve().parents[1] / "models"
SHIPPED = sorted(MODELS.glob("*.toml"))


def assert_close(actual, expected, rtol=1e-12):
    expected = np.asarray(expected, dtype=float)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(1.0, float(np.abs(expected).max())))


def problems_of(text: str) -> list[str]:
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "test.toml")
    assert str(caught.value).startswith("invalid model in test.toml")
    return caught.value.problems


def point_jacobian(model, body, point, q):
    """∂p/∂q, shape (..., 3, nq), from the model's velocity of the point at unit rates."""
    columns = [model.point_velocity(body, point, q, np.broadcast_to(e, q.shape)) for e in np.eye(model.nq)]
    return np.stack(columns, axis=-1)


def line_force_generalized_forces(model, load, q, t):
    """Q = J_bᵀ F_b + J_aᵀ F_a for a line force of tension f pulling its two points together."""
    ends = []
    for body, point in ((load.body_a, load.point_a), (load.body_b, load.point_b)):
        if body == "ground":
            ends.append((np.broadcast_to(np.asarray(point, float), q.shape[:-1] + (3,)), np.zeros(q.shape[:-1] + (3, model.nq))))
        else:
            ends.append((model.point_position(body, point, q), point_jacobian(model, body, point, q)))
    (pa, ja), (pb, jb) = ends
    tension = np.asarray(load.tension(t, q, np.zeros_like(q)) if callable(load.tension) else load.tension)
    force_on_b = tension[..., None] * (pa - pb) / np.linalg.norm(pa - pb, axis=-1, keepdims=True)
    return np.einsum("...xk,...x->...k", jb, force_on_b) - np.einsum("...xk,...x->...k", ja, force_on_b)


# ====================================================================== shipped files
@pytest.mark.filterwarnings("ignore::mbkron.ModelWarning")  # the round trip reloads the shipped unphysical bodies
def test_every_shipped_file_loads_and_round_trips():
    assert {"two_link_arm.toml", "three_link_arm.toml", "planar_chain.toml", "four_bar.toml", "five_bar.toml",
            "andrews_squeezer.toml"} <= {p.name for p in SHIPPED}
    for path in SHIPPED:
        model_file = read_model_file(path)
        assert model_file.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        again = parse_model_file(dump_model(model_file.model)).model
        assert model_differences(model_file.model, again) == [], path.name


def test_two_link_arm_parameters_equal_duartes_dempster_computation():
    model_file = read_model_file(MODELS / "two_link_arm.toml")
    reference = duarte.dempster_parameters(1.70, 70.0)
    p = model_file.parameters
    for name in ("L1", "L2", "d1", "d2", "m1", "m2", "I1", "I2"):
        np.testing.assert_allclose(p[name], getattr(reference, name), rtol=1e-15, err_msg=name)
    model = model_file.model
    upper, fore = model.body("link1"), model.body("link2")
    assert (upper.mass, fore.mass) == (reference.m1, reference.m2)
    assert_close(upper.com, [reference.d1, 0, 0], 1e-15)
    assert_close(fore.com, [reference.d2, 0, 0], 1e-15)
    assert_close(fore.offset[:3, 3], [reference.L1, 0, 0], 1e-15)
    assert_close([upper.inertia[2, 2], fore.inertia[2, 2]], [reference.I1, reference.I2], 1e-15)
    assert_close(model.gravity, [0, -reference.g, 0], 0)
    assert model_file.angle_unit == "deg" and model.coordinates == ("alpha1", "alpha2")


def test_two_link_arm_kinematics_equal_hand_written_formulas():
    model = load_model(MODELS / "two_link_arm.toml")
    p = duarte.dempster_parameters()
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-np.pi, np.pi, (50, 2)), rng.normal(0, 2, (50, 2)), rng.normal(0, 5, (50, 2))
    a1, a12 = q[:, 0], q[:, 0] + q[:, 1]
    w1, w12 = qd[:, 0], qd[:, 0] + qd[:, 1]
    b1, b12 = qdd[:, 0], qdd[:, 0] + qdd[:, 1]
    end = np.stack([p.L1 * np.cos(a1) + p.L2 * np.cos(a12), p.L1 * np.sin(a1) + p.L2 * np.sin(a12)], -1)
    velocity = np.stack([-p.L1 * np.sin(a1) * w1 - p.L2 * np.sin(a12) * w12, p.L1 * np.cos(a1) * w1 + p.L2 * np.cos(a12) * w12], -1)
    acceleration = np.stack([
        -p.L1 * (np.sin(a1) * b1 + np.cos(a1) * w1**2) - p.L2 * (np.sin(a12) * b12 + np.cos(a12) * w12**2),
        p.L1 * (np.cos(a1) * b1 - np.sin(a1) * w1**2) + p.L2 * (np.cos(a12) * b12 - np.sin(a12) * w12**2)], -1)
    assert_close(model.point_position("link2", (p.L2, 0, 0), q)[:, :2], end)
    assert_close(model.point_velocity("link2", (p.L2, 0, 0), q, qd)[:, :2], velocity)
    assert_close(model.point_acceleration("link2", (p.L2, 0, 0), q, qd, qdd)[:, :2], acceleration, 1e-11)
    com2 = np.stack([p.L1 * np.cos(a1) + p.d2 * np.cos(a12), p.L1 * np.sin(a1) + p.d2 * np.sin(a12)], -1)
    assert_close(model.point_position("link2", model.body("link2").com, q)[:, :2], com2)


def test_two_link_arm_file_equals_the_python_factory():
    assert model_differences(load_model(MODELS / "two_link_arm.toml"), mbkron.examples.two_link_arm()) == []


def cesari_arm_from(model_file):
    p = model_file.parameters
    return cesari.CesariArm(l1=p["l1"], l2=p["l2"], d1=p["d1"], d2=p["d2"], d3=p["d3"], m1=p["m1"], m2=p["m2"],
                            m3=p["m3"], I1=p["I1"], I2=p["I2"], I3=p["I3"], d_s=p["d_S"], g=p["g"])


def test_three_link_arm_matches_cesaris_equations():
    model_file = read_model_file(MODELS / "three_link_arm.toml")
    model, arm = model_file.model, cesari_arm_from(model_file)
    for k, name in enumerate(("link1", "link2", "link3")):
        body = model.body(name)
        assert body.mass == getattr(arm, f"m{k + 1}")
        assert_close(body.com, [getattr(arm, f"d{k + 1}"), 0, 0], 1e-15)
        assert_close(body.inertia[2, 2], getattr(arm, f"I{k + 1}"), 1e-15)
    rng = np.random.default_rng(1)
    alpha = rng.uniform(-np.pi, np.pi, (40, 3))
    coms = np.stack([model.point_position(b, model.body(b).com, alpha)[:, :2] for b in model.bodies], axis=-2)
    assert_close(coms, cesari.com_positions(arm, alpha))
    # the spring: Q = Jᵀ F at its point must be −T_ext of Eqs. 42-44 (T_ext is on the side of M α̈)
    (spring,) = model.loads
    assert isinstance(spring, PointForce) and spring.frame == "ground"
    force = np.asarray(spring.force)
    f_s = model_file.parameters["F_S"]
    assert_close(force, [-f_s, 0, 0], 0)
    q_spring = np.einsum("...xk,x->...k", point_jacobian(model, spring.body, spring.point, alpha), force)
    assert_close(q_spring, -cesari.external_torques(arm, alpha, f_s))


def test_three_link_arm_file_equals_the_python_factory():
    model_file = read_model_file(MODELS / "three_link_arm.toml")
    p = model_file.parameters
    factory = mbkron.examples.three_link_arm(d_s=p["d_S"], spring_force=p["F_S"])
    assert model_differences(model_file.model, factory) == []


def planar_chain_reference(model_file, tension_at_t):
    p = model_file.parameters
    rad = math.pi / 180
    muscles = []
    for load in model_file.model.loads:
        if isinstance(load, LineForce):
            links = [0 if b == "ground" else int(b[4:]) for b in (load.body_a, load.body_b)]
            tension = load.tension(tension_at_t, np.zeros(4), np.zeros(4)) if callable(load.tension) else load.tension
            muscles.append(chain_reference.Muscle(links[0], np.asarray(load.point_a)[:2], links[1],
                                                  np.asarray(load.point_b)[:2], float(tension)))
    return chain_reference.PlanarChain(
        l=[p[f"l{k}"] for k in range(1, 5)], l_C=[p[f"lC{k}"] for k in range(1, 5)],
        eps_C=[p[f"epsC{k}"] * rad for k in range(1, 5)], m=[p[f"m{k}"] for k in range(1, 5)],
        I_C=[p[f"IC{k}"] for k in range(1, 5)],
        contacts=(chain_reference.ContactForce(4, p["R"], p["l_R"], p["eps_R"] * rad, p["gamma_R"] * rad),),
        muscles=tuple(muscles), g=p["g"])


def test_planar_chain_matches_seed_000_closed_forms():
    model_file = read_model_file(MODELS / "planar_chain.toml")
    model = model_file.model
    t = 0.37
    reference = planar_chain_reference(model_file, t)
    assert [u.distal_link - u.proximal_link for u in reference.muscles] == [1, 2, 2, 3]  # joints spanned
    rng = np.random.default_rng(2)
    theta = rng.uniform(-np.pi, np.pi, (30, 4))
    joints = np.stack([model.point_position(b, (0, 0, 0), theta)[:, :2] for b in model.bodies]
                      + [model.point_position("link4", (reference.l[3], 0, 0), theta)[:, :2]], axis=-2)
    assert_close(joints, chain_reference.joint_positions(reference, theta))
    coms = np.stack([model.point_position(b, model.body(b).com, theta)[:, :2] for b in model.bodies], axis=-2)
    assert_close(coms, chain_reference.com_positions(reference, theta))
    # muscles: the generalized forces (conjugate to θ) of the line forces equal Eq. 22's torques
    q_muscles = sum(line_force_generalized_forces(model, load, theta, t) for load in model.loads if isinstance(load, LineForce))
    expected = chain_reference.absolute_generalized_forces(chain_reference.muscle_joint_torques(reference, theta))
    assert_close(q_muscles, expected, 1e-11)
    # the contact force: Q = Jᵀ R (R given in link 4's frame) is minus its contribution to Eq. 23's τ
    contact = model.loads[0]
    force_world = np.einsum("...rc,c->...r", model.kinematics(theta, 0).T[:, 3, :3, :3], np.asarray(contact.force))
    q_contact = np.einsum("...xk,...x->...k", point_jacobian(model, "link4", contact.point, theta), force_world)
    zero = np.zeros_like(theta)
    breakdown = chain_reference.joint_torque_breakdown(reference, theta, zero, zero)
    assert_close(q_contact, -chain_reference.absolute_generalized_forces(breakdown.contacts.sum(axis=-2)), 1e-11)


def test_planar_chain_file_equals_the_python_factory():
    model_file = read_model_file(MODELS / "planar_chain.toml")
    p = model_file.parameters
    rad = math.pi / 180
    muscles = []
    for load in model_file.model.loads[1:]:
        links = [0 if b == "ground" else int(b[4:]) for b in (load.body_a, load.body_b)]
        tension = load.tension
        if isinstance(tension, ExpressionValue):
            tension = lambda t, q, qd: 300 * np.sin(np.pi * t) ** 2  # noqa: E731 - the file's formula, by hand
        muscles.append(mbkron.examples.ChainMuscle(links[0], tuple(load.point_a[:2]), links[1], tuple(load.point_b[:2]), tension))
    factory = mbkron.examples.planar_chain(
        [p[f"l{k}"] for k in range(1, 5)], [p[f"lC{k}"] for k in range(1, 5)], [p[f"epsC{k}"] * rad for k in range(1, 5)],
        [p[f"m{k}"] for k in range(1, 5)], [p[f"IC{k}"] for k in range(1, 5)],
        contacts=[mbkron.examples.ChainContact(4, p["R"], p["l_R"], p["eps_R"] * rad, p["gamma_R"] * rad)],
        muscles=muscles, g=p["g"])
    assert model_differences(model_file.model, factory) == []


# ====================================================================== units and forms
BASE = """
[units]
angle = "{unit}"
[parameters]
k = 2.0
[coordinates.a]
range = [{low}, {high}]
default = {default}
[coordinates.s]
unit = "m"
[bodies.one]
axis = [0, 0, 1]
variable = "{expression}"
offset = {{ translation = [0.1, 0, 0], rotation = [{{ axis = [0, 0, 1], angle = {angle} }}] }}
[bodies.two]
parent = "one"
joint = "prismatic"
axis = [1, 0, 0]
variable = "{prismatic}"
theta = {angle}
[[loads]]
type = "joint_torque"
joint = "one"
torque = "{torque}"
"""


def test_degrees_and_radians_describe_the_same_model():
    # in a file in degrees every angle is in degrees, also inside formulas (their inputs and, for a
    # revolute joint, their value); the second file says the same in radians
    degrees = parse_model_file(BASE.format(unit="deg", low=-90, high=120, default=30, angle=45,
                                           expression="0.5*a + 10", prismatic="s + 0.01*a",
                                           torque="k*(a - 45) - 0.5*a_dot + t")).model
    radians = parse_model_file(BASE.format(unit="rad", low=repr(-math.pi / 2), high=repr(2 * math.pi / 3),
                                           default=repr(math.pi / 6), angle=repr(math.pi / 4),
                                           expression="0.5*a + pi/18", prismatic="s + 0.01*a*180/pi",
                                           torque="k*(a*180/pi - 45) - 0.5*a_dot*180/pi + t")).model
    assert_close(degrees.coordinate("a").range, np.deg2rad([-90, 120]), 1e-15)
    assert_close(degrees.coordinate("a").default, np.deg2rad(30), 1e-15)
    assert_close(degrees.body("two").theta, np.deg2rad(45), 1e-15)
    assert_close(degrees.body("one").offset[:3, :3], Rotation.from_euler("z", 45, degrees=True).as_matrix(), 1e-15)
    q = np.array([0.7, 0.2])
    f = degrees.joint_variables(q, 0)[0]
    assert_close(f, [0.5 * 0.7 + np.deg2rad(10), 0.2 + 0.01 * np.rad2deg(0.7)], 1e-14)
    torque = degrees.loads[0].torque(1.5, q[None], np.array([[0.3, 0.0]]))
    assert_close(torque, [2.0 * (np.rad2deg(0.7) - 45) - 0.5 * np.rad2deg(0.3) + 1.5], 1e-13)
    assert model_differences(degrees, radians) == []


def test_offset_rotation_sequence_is_intrinsic_and_matrix_form_is_exact():
    text = """
[units]
angle = "deg"
[coordinates.unused]
[bodies.a]
joint = "fixed"
offset = { translation = [1, 2, 3], rotation = [{ axis = [0, 0, 1], angle = 30 }, { axis = [1, 0, 0], angle = -50 }, { axis = [0, 2, 0], angle = 10 }] }
[bodies.b]
joint = "fixed"
offset = { matrix = [[0, -1, 0], [1, 0, 0], [0, 0, 1]] }
"""
    model = parse_model_file(text).model
    expected = Rotation.from_euler("ZXY", [30, -50, 10], degrees=True).as_matrix()  # upper case: intrinsic
    assert_close(model.body("a").offset[:3, :3], expected, 1e-15)
    assert_close(model.body("a").offset[:3, 3], [1, 2, 3], 0)
    assert_close(model.body("b").offset[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], 0)


def test_tabulated_and_fourier_joint_variables_convert_units_and_round_trip():
    text = """
[units]
angle = "deg"
[coordinates.elbow]
[coordinates.knee]
[bodies.hand]
axis = [0, 0, 1]
variable = { type = "tabulated", coordinate = "elbow", kind = "fmm", x = [0, 30, 60, 90, 120], y = [0, 4, 15, 22, 25] }
[bodies.foot]
axis = [0, 0, 1]
variable = { type = "tabulated", coordinate = "knee", kind = "linear", x = [0, 45, 90], y = [0, 5, 5] }
[bodies.patella]
joint = "prismatic"
axis = [1, 0, 0]
variable = { type = "fourier", coordinate = "knee", period = 360, a0 = 0.01, a = [0.002], b = [-0.001] }
"""
    model = parse_model_file(text).model
    hand = model.body("hand").variable
    assert isinstance(hand, CoordinateFunction) and isinstance(hand.function, CubicSpline)
    assert_close(hand.function.x, np.deg2rad([0, 30, 60, 90, 120]), 1e-15)
    assert_close(hand.function.y, np.deg2rad([0, 4, 15, 22, 25]), 1e-15)
    reference = CubicSpline(np.deg2rad([0, 30, 60, 90, 120]), np.deg2rad([0, 4, 15, 22, 25]), "fmm")
    q = np.array([[np.deg2rad(47.0), np.deg2rad(70.0)]])
    f, grad, hess = model.joint_variables(q)
    value, first, second = reference.evaluate(q[0, 0])
    assert_close([f[0, 0], grad[0, 0, 0], hess[0, 0, 0, 0]], [value, first, second], 1e-13)
    assert_close(f[0, 1], np.deg2rad(5.0), 1e-14)
    patella = model.body("patella").variable.function
    assert isinstance(patella, FourierSeries)
    assert_close(patella.period, 2 * np.pi, 1e-15)  # metres out: coefficients unchanged, period in radians
    assert_close(f[0, 2], 0.01 + 0.002 * np.cos(q[0, 1]) - 0.001 * np.sin(q[0, 1]), 1e-14)
    again = parse_model_file(dump_model(model)).model
    assert model_differences(model, again) == []


def test_expression_joint_variables_and_parameters_round_trip():
    text = """
[parameters]
gain = "0.25*scale"
scale = 2
[coordinates.q1]
range = [-1, 2]
[coordinates.q2]
[bodies.a]
axis = [0, 0, 1]
variable = "gain*sin(q1)**2 + atan2(q2, 2) - pi/7"
[bodies.b]
parent = "a"
axis = [0, 1, 0]
variable = "q1 - 2*q2 + 0.5"
offset = { translation = ["gain", 0, 0] }
"""
    model_file = parse_model_file(text)
    assert model_file.parameters == {"gain": 0.5, "scale": 2.0}
    model = model_file.model
    q = np.random.default_rng(4).uniform(-1, 2, (20, 2))
    f = model.joint_variables(q, 0)[0]
    assert_close(f[:, 0], 0.5 * np.sin(q[:, 0]) ** 2 + np.arctan2(q[:, 1], 2) - np.pi / 7, 1e-14)
    assert_close(f[:, 1], q[:, 0] - 2 * q[:, 1] + 0.5, 1e-15)
    assert_close(model.body("b").offset[0, 3], 0.5, 0)
    assert model_differences(model, parse_model_file(dump_model(model)).model) == []


def test_dump_of_a_python_built_model_with_linear_and_sympy_variables():
    elbow = sympy.Symbol("elbow")
    b = mbkron.ModelBuilder(name="py", gravity=(0, 0, -9.81))
    b.add_coordinate("shoulder", range=(-1.0, 1.0), default=0.5).add_coordinate("elbow", unit="rad", periodic=True)
    b.add_coordinate("slide", unit="m")
    b.add_body("upper", axis=(0, 0, 1), variable=mbkron.Linear({"shoulder": 2.0, "elbow": -1.0}, 0.1), mass=1.0)
    b.add_body("fore", parent="upper", axis=(0, 1, 1), variable=0.2 * sympy.sin(elbow) + elbow,
               offset=mbkron.rigid_transform(Rotation.from_rotvec([0.1, 0.2, 0.3]).as_matrix(), (0.3, 0, 0)),
               inertia=[[0.1, 0.01, 0], [0.01, 0.2, 0], [0, 0, 0.3]], com=(0.1, 0.02, 0))
    b.add_body("sled", parent="fore", joint="prismatic", axis=(1, 0, 0), variable="slide", theta=0.3,
               rotation_axis=(0, 0, 1))
    b.add_body("tip", parent="sled", joint="fixed", d=0.05, translation_axis=(0, 1, 0))
    b.add_load(PointForce("tip", (0, 0, 0.1), (1.0, 2.0, 3.0), frame="body"))
    b.add_load(LineForce("ground", (0, 1, 0), "fore", (0.1, 0, 0), 12.5))
    model = b.build()
    text = dump_model(model)
    assert model_differences(model, parse_model_file(text).model) == []
    b.add_load(PointForce("tip", (0, 0, 0), lambda t, q, qd: np.zeros(3)))
    with pytest.raises(ValueError, match="Python callable"):
        dump_model(b.build())


def test_model_differences_finds_changes():
    base = (MODELS / "two_link_arm.toml").read_text()
    model = parse_model_file(base).model
    assert models_equal(model, parse_model_file(base).model)
    heavier = parse_model_file(base.replace('m2 = "0.0220*body_mass"', 'm2 = "0.0221*body_mass"')).model
    assert any("`mass`" in d for d in model_differences(model, heavier))
    coupled = parse_model_file(base.replace('variable = "alpha2"', 'variable = "alpha2 + 1e-6*alpha1"')).model
    assert any("joint variables" in d for d in model_differences(model, coupled))
    loaded = parse_model_file(base + '\n[[loads]]\ntype = "generalized_force"\ncoordinate = "alpha1"\nvalue = "t"\n').model
    assert model_differences(model, loaded) == ["loads: 0 vs 1"]


def test_format_toml_round_trips_through_tomllib():
    document = {"a": 1, "b": -0.1, "c": [1.5e-300, float("inf"), -2.0], "weird key": "q\"u\\o\x7f\tte\n",
                "t": {"x": True, "nested": {"deep": [[1, 2], []], "inline": [{"p": 1}, 2]}},
                "arr": [{"name": "one", "sub": {"v": 1}}, {"name": "two"}], "empty": {}}
    again = tomllib.loads(format_toml(document))
    assert again == document
    assert math.isnan(tomllib.loads(format_toml({"n": float("nan")}))["n"])


# ====================================================================== validation
def test_every_problem_is_reported_with_its_table_path():
    text = """
[model]
name = 3
gravity = [0, -9.81]
[units]
angle = "grad"
[parameters]
p = "p2"
p2 = "2*p"
bad = "__import__('os').system('echo pwned')"
[coordinates.q]
range = [1, 0]
[coordinates."not a name"]
[bodies.forearm]
axis = [0, 0, 1]
variable = "q + unknown"
mass = "-1"
inertia = [1, 2]
thetaa = 3
[bodies.hand]
joint = "fixed"
axis = [0, 0, 1]
[[loads]]
type = "line_force"
body_a = "forearm"
point_a = [0, 0]
body_b = "ground"
point_b = [0, 0, 0]
tension = 1
[muscles.biceps]
"""
    problems = problems_of(text)
    expected = [
        "model.name: expected a string, got 3",
        "model.gravity: expected an array of 3 numbers, got [0, -9.81]",
        "units.angle: expected one of: 'rad', 'deg', got 'grad'",
        "parameters.p: parameters depend on each other in a cycle",
        "parameters.bad: invalid expression",
        "unknown function `__import__`",
        "coordinates.q.range: expected [low, high] with low < high",
        'coordinates."not a name": invalid coordinate name',
        "bodies.forearm.variable: invalid expression",
        "unknown name `unknown`",
        "bodies.forearm.inertia: expected 3 principal moments",
        "bodies.forearm.thetaa: unknown key",
        "did you mean `theta`",
        "bodies.hand.axis: a fixed joint has no axis",
        "loads[0].point_a: expected an array of 3 numbers, got [0, 0]",
        "muscles.biceps: `path` is required",
        "muscles.biceps: `max_isometric_force` is required",
        "`mass` must be non-negative",
    ]
    joined = "\n".join(problems)
    for fragment in expected:
        assert fragment in joined, fragment


@pytest.mark.parametrize(
    "text, fragment",
    [("[bodies.a]\naxis=[0,0,1]\nvariable=\"q\"\n[coordinates.q]\ndefault=1e400", "expected a finite number, got inf"),
     ("[coordinates.q]\ndefault=nan", "coordinates.q.default: expected a finite number, got nan"),
     ("[coordinates.q]\ndefault=" + "9" * 400, "too large for double precision"),
     ("[coordinates.q]\nperiodic=1", "coordinates.q.periodic: expected true or false, got 1"),
     ("[coordinates.q]\nunit='deg'", "coordinates.q.unit: expected one of: 'angle', 'm', '1'"),
     ("[coordinates.q]\n[parameters]\nq=1", "parameters.q: the name `q` is already used by coordinates.q"),
     ("[coordinates.q]\n[coordinates.q_dot]", "the name `q_dot` is reserved for the rate of coordinate `q`"),
     ("[parameters]\nt=1", "parameters.t: the name `t` is already used by time"),
     ("[parameters]\np='exp(1000)'", "parameters.p: the expression evaluates to inf"),
     ("[parameters]\np='log(-1)'", "invalid expression"),
     ("[model]\nformat_version=2", "model.format_version: this mbkron reads format version 1, got 2"),
     ("[model]\nflavour='x'", "model.flavour: unknown key"),
     ("bodies = 3", "bodies: expected a table, got 3"),
     ("[bodies]\na = 3", "bodies.a: expected a table, got 3"),
     ("[bodies.a]\njoint='ball'", "bodies.a.joint: expected one of: 'revolute', 'prismatic', 'fixed'"),
     ("[bodies.a]\naxis=[0,0,1]", "bodies.a: `variable` is required"),
     ("[bodies.a]\naxis=[0,0,1]\nvariable='q'\ntheta=1", "bodies.a.theta: a revolute joint's angle is its joint variable"),
     ("[bodies.a]\njoint='prismatic'\naxis=[1,0,0]\nvariable=0\nd=1", "bodies.a.d: a prismatic joint's displacement"),
     ("[bodies.a]\njoint='fixed'\noffset={matrix=[[1,0,0],[0,1,0],[0,0,2]]}", "must be orthonormal"),
     ("[bodies.a]\njoint='fixed'\noffset={matrix=[[1,0,0],[0,1,0],[0,0,1]], rotation=[]}", "not both"),
     ("[bodies.a]\njoint='fixed'\noffset={rotation=[{axis=[0,0,0], angle=1}]}", "rotation[0].axis: expected a non-zero direction"),
     ("[coordinates.q]\n[bodies.a]\njoint='fixed'\nparent='b'\n[bodies.b]\njoint='fixed'\nparent='a'", "form a cycle"),
     ("[bodies.a]\njoint='fixed'\nparent='nowhere'", "unknown `parent` `nowhere`"),
     ("[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable={type='tabulated', coordinate='q', kind='fmm', x=[0,2,1], y=[0,1,2]}",
      "bodies.a.variable: x must be strictly increasing"),
     ("[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable={type='tabulated', coordinate='qq', kind='cubic', x=[0,1], y=[0,1]}",
      "bodies.a.variable.coordinate: expected the name of a coordinate (q), got 'qq'; did you mean `q`?"),
     ("[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable={type='fourier', coordinate='q', period=-1}",
      "bodies.a.variable: the period must be a positive finite number"),
     ("[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable={type='spline'}", "bodies.a.variable.type: expected one of"),
     ("[[loads]]\ntype='magnet'", "loads[0].type: expected one of: 'point_force'"),
     ("loads = {a = 1}", "loads: expected an array of tables"),
     ("[[loads]]\ntype='point_force'\nbody='x'\npoint=[0,0,0]\nforce=[0,0,'q']", "loads[0].force[2]: invalid expression"),
     ("[[loads]]\ntype='spring_damper'\nbody_a='ground'\npoint_a=[0,0,0]\nbody_b='ground'\npoint_b=[1,0,0]\nstiffness=-1",
      "`stiffness` must be a finite non-negative number"),
     ("[bodies.a]\naxis=[0,0,1]\nvariable={type='constraints'}", "bodies.a.variable.type: expected one of: 'tabulated', 'fourier'"),
     ("[constraints]\nequations=['q']", "constraints: expected an array of tables"),
     ("[mystery]\nx=1", "mystery: unknown section"),
     ("a = [[[[[[1]]]]]]\n", "a: unknown section"),
     ("x = = 1", "not valid TOML"),
     ("[parameters]\np = 1\n[parameters]\np = 2", "not valid TOML"),
     ]
)
def test_single_problems(text, fragment):
    assert any(fragment in p for p in problems_of(text)), problems_of(text)


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(ModelError, match="cannot read the model file .*: No such file or directory"):
        load_model(tmp_path / "missing.toml")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ModelError, match="not UTF-8"):
        load_model(binary)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelError):
        load_model(deep)


def test_load_model_is_exported():
    assert mbkron.load_model is load_model
    assert "load_model" in mbkron.__all__


# ====================================================================== safety of formulas
@pytest.mark.parametrize(
    "formula",
    ["sin(exp(exp(p)))*q", "exp(exp(exp(p)))*q", "q**(p**p**p)", "2**(p*1e300)", "tan(p)**(p*p)*q",
     "sin(p*1e300)*q + 10**p*q"],
)
def test_parameters_never_make_sympy_evaluate_huge_numbers(formula):
    """Loading and evaluating finish (arbitrary-precision evaluation of such constants would not):
    each ends with a model error naming the field, or a value that is not finite at q."""
    text = f"[parameters]\np = 20\n[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable=\"{formula}\"\n"
    try:
        model = parse_model_file(text).model
        with np.errstate(all="ignore"):
            model.joint_variables(np.array([0.3]), 0)
    except ModelError as exc:
        assert "bodies.a.variable" in str(exc)
    except mbkron.ConfigurationError as exc:
        assert "is not finite" in str(exc)  # reported by the model, not a hang


# ====================================================================== constraints
FOUR_BAR = (MODELS / "four_bar.toml").read_text()


def test_shipped_four_bar_equals_the_python_linkage():
    from mbkron.examples import linkages

    model_file = read_model_file(MODELS / "four_bar.toml")
    assert set(model_file.solved) == {"crank", "coupler", "rocker"}
    assert model_differences(model_file.model, linkages.four_bar(solver="lu"), rtol=1e-9, atol=1e-10) == []
    # the loop closes: the rocker's tip sits on the ground pivot (l0, 0) for every q in range
    assert model_file.model.body("crank").variable is None
    q = np.linspace(-2.0, 2.0, 9)[:, None]
    assert_close(model_file.model.point_position("rocker", (3.0, 0, 0), q), np.tile([1.0, 0, 0], (9, 1)), 1e-10)
    # and q is the height of the coupler's centre of mass
    assert_close(model_file.model.point_position("coupler", (1.0, 0, 0), q)[:, 1], q[:, 0], 1e-10)


def test_shipped_five_bar_equals_the_python_linkage():
    from mbkron.examples import five_bar

    model_file = read_model_file(MODELS / "five_bar.toml")
    assert model_differences(model_file.model, five_bar(solver="projection"), rtol=1e-9, atol=1e-10) == []
    # the loop closes: link 4's tip sits on the ground pivot (l0, 0) for any (theta1, theta2)
    q = np.array([[0.5, 1.0], [2.0, -0.3], [-1.0, 2.5]])
    assert_close(model_file.model.point_position("link4", (3.0, 0, 0), q), np.tile([3.0, 0, 0], (3, 1)), 1e-10)


def test_shipped_andrews_squeezer_equals_the_python_model():
    from mbkron.examples.andrews import INITIAL, andrews_squeezer

    model_file = read_model_file(MODELS / "andrews_squeezer.toml")
    assert model_differences(model_file.model, andrews_squeezer("lu"), rtol=1e-12, atol=1e-13) == []
    # the IVP test set's consistent initial acceleration (w = q'' at t = 0)
    beta_ddot = model_file.model.forward_dynamics([INITIAL["beta"]], [0.0])[0]
    assert beta_ddot == pytest.approx(14222.4439199541138705911625887, rel=1e-10)


def test_models_with_solved_joint_variables_round_trip():
    """Constraint groups (equations or loop closures, solver, guesses, settings) are written back."""
    from mbkron.examples import andrews_squeezer, five_bar

    for model in (parse_model_file(FOUR_BAR).model, five_bar(solver="projection", max_condition=1e9),
                  andrews_squeezer("premodel", "expressions", step=0.05), andrews_squeezer("lu")):
        text = dump_model(model)
        assert "[[constraints]]" in text
        again = parse_model_file(text).model
        assert model_differences(model, again, rtol=1e-9, atol=1e-10) == [], model.name
        assert [g.solver for g in again.constraint_groups] == [g.solver for g in model.constraint_groups]
        assert [dict(g.settings) for g in again.constraint_groups] == [dict(g.settings) for g in model.constraint_groups]


def test_joint_variables_solved_from_loop_closures():
    # the five-bar of Eq. 123 closed by a loop closure instead of its equations
    from mbkron.examples import linkages

    rods = "".join(f"""
[bodies.link{k}]
parent = "{parent}"
axis = [0, 0, 1]
{variable}
offset = {{ translation = [{offset}, 0, 0] }}
mass = {length}                      # uniform slender rods of 1 kg/m
com = ["{length}/2", 0, 0]
inertia = [0, "{length}**3/12", "{length}**3/12"]
""" for k, parent, variable, offset, length in [
        (1, "ground", 'variable = "theta1"', 0, 1), (2, "link1", 'variable = "theta2"', 1, 1),
        (3, "link2", "", 1, 3), (4, "link3", "", 3, 3)])
    text = """
[model]
name = "five-bar"
[coordinates.theta1]
default = 0.5
periodic = true
[coordinates.theta2]
default = 1.0
periodic = true
""" + rods + """
[[constraints]]
joints = ["link3", "link4"]
guess = { link3 = -0.99, link4 = -2.27 }
[[constraints.loops]]               # the tip of link 4 is pinned to the ground at (l0, 0, 0)
body_a = "link4"
point_a = [3, 0, 0]
body_b = "ground"
point_b = [3, 0, 0]
"""
    model = parse_model_file(text).model
    reference = linkages.five_bar(solver="lu")
    assert model_differences(model, reference, rtol=1e-9, atol=1e-10) == []


@pytest.mark.parametrize(
    "change, fragment",
    [(('joints = ["crank", "coupler", "rocker"]', 'joints = "crank"'), "constraints[0].joints: expected an array of body names"),
     (("solver = \"lu\"", "solver = \"newton\""), "constraints[0].solver: expected one of: 'lu', 'projection'"),
     (("- l0\",", "- l0 + zz\","), "constraints[0].equations[2]: invalid expression"),
     (("guess = {", "loops = []\nguess = {"), "constraints[0]: give the constraints as `equations`"),
     (("guess = { crank = 16.6,", "settings = { colour = 1 }\nguess = { crank = 16.6,"), "unknown setting `colour`"),
     (("guess = { crank = 16.6,", "guess = { crank = nan,"), "constraints[0].guess.crank: expected a finite number"),
     (('joints = ["crank", "coupler", "rocker"]', 'joints = ["crank", "coupler"]'), "3 constraint equations for 2"),
     (("[bodies.rocker]\n", "[bodies.rocker]\nvariable = \"q\"\n"), "bodies.rocker.variable: the joint variable of `rocker` is solved"),
     (("[bodies.coupler]\n", "[bodies.coupler]\nvariable = \"q\"\n"), "bodies.coupler.variable: the joint variable of `coupler` is solved")],
)
def test_constraint_problems(change, fragment):
    old, new = change
    assert old in FOUR_BAR
    assert any(fragment in p for p in problems_of(FOUR_BAR.replace(old, new, 1))), problems_of(FOUR_BAR.replace(old, new, 1))


def test_the_documented_example_loads_with_the_documented_muscle():
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "model-format.md").read_text()
    example, muscles = re.findall(r"```toml\n(.*?)```", text, re.S)
    model_file = parse_model_file(example, "example.toml")
    model = model_file.model
    assert model.bodies == ("upper_arm", "forearm", "hand", "marker") and model.coordinates == ("shoulder", "elbow")
    assert_close(model.coordinate("shoulder").default, np.deg2rad(20), 1e-15)
    hand = model.body("hand").variable
    assert hand.function.kind == "fmm" and hand.coordinate == "elbow"
    assert isinstance(model.loads[0].force, ExpressionValue)
    assert_close(model.loads[0].force(0.5, np.zeros((1, 2)), np.zeros((1, 2))), [[0, -20, 0]], 1e-15)
    with_muscle = parse_model_file(example + muscles, "example.toml").model
    assert with_muscle.muscles == ("biceps",)
    assert_close(with_muscle.muscle_set.paths[0].hill.pennation_angle, np.deg2rad(5), 1e-15)


def test_a_joint_variable_without_a_second_derivative_is_a_model_error():
    """abs(x) is not differentiable at 0: sympy's derivatives of it have no numeric form
    (re, Derivative, DiracDelta), so the file is refused with the body and field named and the function that has
    none, not with an exception from the printer (the adversarial probe's finding)."""
    text = '[coordinates.x]\n[bodies.a]\naxis = [0, 0, 1]\nvariable = "abs(x)"\nmass = 1\ninertia = [1, 1, 1]\n'
    with pytest.raises(ModelError) as error:
        parse_model_file(text, "abs.toml")
    assert error.value.problems == [error.value.problems[0]]
    assert error.value.problems[0].startswith("body `a`: `variable` Abs(x) cannot be used as a joint variable")
    assert re.search(r"it contains (re|Derivative|DiracDelta), which has no numeric implementation",
                     error.value.problems[0])
