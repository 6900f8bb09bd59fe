"""Conditional path points (mbkron.multibody.muscles.conditions): the path is the polyline through the points
active at each state. Lengths and moment arms against a polyline written out by hand in numpy (and
its central differences), batched over states with different active sets; the
model file (reader, writer, model_differences); every ModelError; OpenSim 4.6 (if installed)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.io import dump_model, model_differences, parse_model_file
from mbkron.multibody.muscles import MovingPoint, PathPointCondition
from mbkron.multibody.muscles.conditions import OPENSIM_RANGE_TOLERANCE
from mbkron import reference
from mbkron.reference.muscle_paths import attachment_sequence
from mbkron.multibody.muscles.points import add_moving_point_bodies, point_condition

SHANK_OFFSET = np.array([0.0, -0.4, 0.0])
KNEE_AXIS = np.array([0.2, 0.0, 1.0]) / np.hypot(0.2, 1.0)
# (lo, hi) of the conditions, radians (degrees chosen so that the model file below states them exactly)
A = tuple(map(float, np.deg2rad([-110.0, -30.0])))   # rf: fixed point on the thigh, knee
B = tuple(map(float, np.deg2rad([-60.0, 15.0])))     # rf: moving point on the thigh, knee
C = tuple(map(float, np.deg2rad([-90.0, -90.0])))    # vas: a single angle, knee
D = tuple(map(float, np.deg2rad([-10.0, 10.0])))     # vas: a ground point, hip
KNEE_BOUNDS = sorted({*A, *B, *C})
HIP_BOUNDS = sorted(D)


def rotation(axis, angle):
    """Rodrigues' formula (independent of mbkron.algorithms.kinematics)."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def reference_paths(q):
    """Every muscle's points in the ground frame and their conditions ``(coordinate index, lo, hi)`` or None."""
    hip, knee = q
    thigh = lambda p: rotation((0, 0, 1), hip) @ np.asarray(p, float)
    shank = lambda p: thigh(SHANK_OFFSET + rotation(KNEE_AXIS, knee) @ np.asarray(p, float))
    return {
        "rf": [(np.array([0.05, 0.1, 0.02]), None), (thigh([0.04, -0.35, 0.0]), (1, *A)),
               (thigh([0.05 + 0.01 * np.cos(knee), -0.38, 0.01]), (1, *B)), (shank([0.03, -0.05, 0.0]), None)],
        "vas": [(thigh([0.03, -0.2, 0.0]), None), (thigh([0.045, -0.36, 0.0]), (1, *C)),
                (np.array([0.1, -0.3, 0.0]), (0, *D)), (shank([0.035, -0.06, 0.02]), None)],
        "plain": [(np.array([0.0, 0.1, 0.0]), None), (shank([0.02, -0.1, 0.0]), None)],
    }


def reference_lengths(q, active_at=None):
    """Polyline lengths through the points active at ``active_at`` (default ``q``), evaluated at ``q``."""
    q = np.asarray(q, float)
    at = q if active_at is None else active_at
    lengths = []
    for points in reference_paths(q).values():
        kept = [p for p, c in points if c is None or c[1] <= at[c[0]] <= c[2]]
        lengths.append(sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(kept)))
    return np.array(lengths)


def reference_moment_arms(q, h=1e-6):
    """``R = −∂L/∂q`` by central differences of the polyline through the points active at ``q``."""
    q = np.asarray(q, float)
    return -np.array([(reference_lengths(q + h * e, q) - reference_lengths(q - h * e, q)) / (2 * h) for e in np.eye(2)])


def builder():
    b = mbkron.ModelBuilder(name="model").add_coordinate("hip", range=(-1.0, 1.0)).add_coordinate("knee", range=(-2.5, 0.5))
    b.add_body("thigh", axis=(0, 0, 1), variable="hip", mass=1.0, com=(0, -0.2, 0), inertia=np.eye(3) * 0.01)
    b.add_body("shank", parent="thigh", axis=KNEE_AXIS, variable="knee", offset=SHANK_OFFSET, mass=1.0,
               com=(0, -0.2, 0), inertia=np.eye(3) * 0.01)
    return b


def add_muscles(b, moving=None, vas_range=C):
    knee = sympy.Symbol("knee")
    moving = moving or MovingPoint("thigh", (0.05 + 0.01 * sympy.cos(knee), -0.38, 0.01),
                                   active=PathPointCondition("knee", *B))
    b.add_muscle("rf", [("ground", (0.05, 0.1, 0.02)), ("thigh", (0.04, -0.35, 0.0), PathPointCondition("knee", *A)),
                        moving, ("shank", (0.03, -0.05, 0.0))])
    b.add_muscle("vas", [("thigh", (0.03, -0.2, 0.0)), ("thigh", (0.045, -0.36, 0.0), PathPointCondition("knee", *vas_range)),
                         ("ground", (0.1, -0.3, 0.0), PathPointCondition("hip", *D)), ("shank", (0.035, -0.06, 0.02))])
    b.add_muscle("plain", [("ground", (0.0, 0.1, 0.0)), ("shank", (0.02, -0.1, 0.0))])
    return b


def leg():
    return add_muscles(builder()).build()


def grid():
    """States on both sides of and exactly at every bound, shape (n_hip, n_knee, 2)."""
    knee = [k + d for k in KNEE_BOUNDS for d in (-1e-3, 0.0, 1e-3)]
    hip = [h + d for h in HIP_BOUNDS for d in (-1e-3, 0.0, 1e-3)]
    return np.stack(np.meshgrid(hip, knee, indexing="ij"), axis=-1)


def active_sets(q):
    """Which conditional points are active at each state of ``q`` (..., 2), as tuples."""
    return {tuple(bool(c[1] <= s[c[0]] <= c[2]) for points in reference_paths(s).values() for _, c in points if c)
            for s in q.reshape(-1, 2)}


def test_the_grid_has_every_combination_of_active_points():
    # knee: none, A, B, A and B, A and C (C lies inside A and outside B); times the hip point D or not
    assert len(active_sets(grid())) == 10
    point = PathPointCondition("knee", *A)
    assert point.is_active(np.array([A[0] - 1e-12, A[0], A[1], A[1] + 1e-12])).tolist() == [False, True, True, False]


def test_lengths_equal_the_polyline_through_the_active_points():
    q = grid()
    expected = np.array([reference_lengths(s) for s in q.reshape(-1, 2)]).reshape(q.shape[:-1] + (3,))
    np.testing.assert_allclose(leg().muscle_lengths(q), expected, rtol=0, atol=1e-12)


def test_moment_arms_are_central_differences_of_the_active_polyline():
    model = leg()
    away = [(-0.5, -1.5), (0.0, -1.0), (0.05, -0.2), (0.5, 0.4), (-0.05, -2.2), (0.3, -0.8)]
    for q in map(np.array, away):
        assert min(abs(q[1] - b) for b in KNEE_BOUNDS) > 1e-3 and min(abs(q[0] - b) for b in HIP_BOUNDS) > 1e-3
        np.testing.assert_allclose(model.moment_arms(q), reference_moment_arms(q), rtol=0, atol=1e-8)


def test_at_a_bound_the_moment_arms_are_those_of_the_set_active_there():
    model = leg()
    for q in [np.array([0.3, k]) for k in KNEE_BOUNDS] + [np.array([h, -1.0]) for h in HIP_BOUNDS]:
        np.testing.assert_allclose(model.moment_arms(q), reference_moment_arms(q), rtol=0, atol=1e-8)


def test_batched_states_with_different_active_sets_equal_states_one_by_one():
    q = grid()
    model = leg()
    lengths, R = model.muscle_lengths(q), model.moment_arms(q)
    for index in np.ndindex(q.shape[:-1]):
        np.testing.assert_allclose(lengths[index], model.muscle_lengths(q[index]), rtol=0, atol=1e-15)
        np.testing.assert_allclose(R[index], model.moment_arms(q[index]), rtol=0, atol=1e-15)


def test_muscle_forces_in_the_dynamics_use_the_active_path():
    q, qd, F = np.array([0.05, -0.2]), np.array([0.3, -0.1]), np.array([100.0, 50.0, 20.0])
    model = leg()
    difference = model.inverse_dynamics(q, qd, np.zeros(2), muscle_forces=F) - model.inverse_dynamics(q, qd, np.zeros(2))
    np.testing.assert_allclose(difference, -reference_moment_arms(q) @ F, rtol=0, atol=1e-6)


def test_located_paths_keep_the_active_points_where_they_are():
    model = leg()
    q = np.array([0.05, -0.2])   # rf: B active, A not; vas: only the ground point
    located = dict(zip(model.muscles, model.muscle_set.located_paths(q)))
    reference = reference_paths(q)
    T = model.kinematics(q, 0).T
    for name, path in located.items():
        kept = [p for p, c in reference[name] if c is None or c[1] <= q[c[0]] <= c[2]]
        assert len(path.points) == len(kept)
        for (body, local), expected in zip(path.points, kept):
            ground = local if body == "ground" else T[model.body_index(body), :3, :3] @ local + T[model.body_index(body), :3, 3]
            np.testing.assert_allclose(ground, expected, rtol=0, atol=1e-15)
    with pytest.raises(TypeError, match="located_paths"):
        attachment_sequence(model, model.muscle_set.paths[1])


def test_a_conditional_moving_point_as_zero_inertia_bodies_keeps_its_condition():
    knee = sympy.Symbol("knee")
    point = MovingPoint("thigh", (0.05 + 0.01 * sympy.cos(knee), -0.38, 0.01), active=PathPointCondition("knee", *B))
    b = builder()
    seed_point = add_moving_point_bodies(b, "rf_via", point)
    assert seed_point[2] == PathPointCondition("knee", *B)
    seed_model = add_muscles(b, seed_point).build()
    q = grid().reshape(-1, 2)
    np.testing.assert_allclose(seed_model.muscle_lengths(q), leg().muscle_lengths(q), rtol=0, atol=1e-14)
    np.testing.assert_allclose(reference.moment_arms(seed_model, q), leg().moment_arms(q), rtol=0, atol=1e-12)


def test_points_of_two_bodies_that_meet_name_both():
    """Point 2 (on the thigh) meets point 0 (on the ground) at hip = 0.5, where point 1 is inactive: the line
    of action is undefined there, a ConfigurationError naming both points and q."""
    b = builder()
    meets = (0.1 * np.cos(0.5), -0.1 * np.sin(0.5), 0.0)  # at hip = 0.5 the thigh turns it onto (0.1, 0, 0)
    b.add_muscle("m", [("ground", (0.1, 0.0, 0.0)), ("ground", (0.2, 0.0, 0.0), PathPointCondition("hip", -1.0, 0.0)),
                       ("thigh", meets), ("shank", (0.0, -0.1, 0.0))])
    model = b.build()
    model.moment_arms(np.array([-0.5, 0.0]))
    with pytest.raises(ConfigurationError, match=r"muscle `m`: points 0 and 2 of its path coincide at q = \[0.5, 0.0\]"):
        model.moment_arms(np.array([[-0.5, 0.0], [0.5, 0.0]]))


def test_coincident_conditional_points_are_one_point_while_both_are_active():
    """Issue 28: two ConditionalPathPoints at one place on one body (a valid OpenSim path) give a segment of
    length zero while both are active; it adds nothing (OpenSim sums the segments' lengths). Lengths equal the
    polyline through the active points written out by hand, moment arms its central differences, on each side
    of every switch: the first point alone (knee < −0.5), both (−0.5 … 0), the second alone (0 … 0.3), neither."""
    first, second = PathPointCondition("knee", -2.5, 0.0), PathPointCondition("knee", -0.5, 0.3)
    place = (0.04, -0.3, 0.01)
    b = builder()
    b.add_muscle("m", [("ground", (0.05, 0.1, 0.02)), ("thigh", place, first), ("thigh", place, second),
                       ("shank", (0.03, -0.05, 0.0))])
    model = b.build()

    def length(q, at):
        hip, knee = q
        thigh = rotation((0, 0, 1), hip)
        points = [np.array([0.05, 0.1, 0.02])]
        if -2.5 <= at[1] <= 0.0 or -0.5 <= at[1] <= 0.3:
            points.append(thigh @ np.array(place))
        points.append(thigh @ (SHANK_OFFSET + rotation(KNEE_AXIS, knee) @ np.array([0.03, -0.05, 0.0])))
        return sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(points))

    q = np.array([[0.3, knee] for knee in (-1.0, -0.25, 0.15, 0.4)])
    h = 1e-6
    expected_R = np.array([[-(length(x + h * e, x) - length(x - h * e, x)) / (2 * h) for e in np.eye(2)] for x in q])
    np.testing.assert_allclose(model.muscle_lengths(q)[:, 0], [length(x, x) for x in q], rtol=1e-14)
    np.testing.assert_allclose(model.moment_arms(q)[..., 0], expected_R, rtol=0, atol=1e-9)
    assert np.isfinite(model.equations_of_motion(q, np.zeros_like(q), muscle_forces=np.ones((4, 1))).applied_forces).all()


def test_every_bad_condition_is_a_model_error_naming_the_muscle_and_point():
    b = builder()
    knee = PathPointCondition("knee", -1.0, 0.0)
    b.add_muscle("ends", [("ground", (0, 0.1, 0), knee), ("thigh", (0.1, 0, 0)), ("shank", (0, -0.1, 0), knee)])
    b.add_muscle("bad", [("ground", (0, 0.1, 0)),
                         ("thigh", (0.1, 0, 0), PathPointCondition("kne", -1.0, 0.0)),
                         ("thigh", (0.1, -0.1, 0), PathPointCondition("knee", 0.5, -0.5)),
                         ("thigh", (0.1, -0.2, 0), PathPointCondition("knee", float("nan"), 0.0)),
                         MovingPoint("thigh", (0.1, 0.1 * sympy.Symbol("knee"), 0),
                                     active=PathPointCondition("hip", -np.inf, 0.0)),
                         ("thigh", (0.1, -0.3, 0), ("knee", -1.0, 0.0)),
                         ("shank", (0, -0.1, 0))])
    with pytest.raises(ModelError) as caught:
        b.build()
    assert caught.value.problems == [
        "muscle `ends`: point 0 is the origin and must be unconditional (a path always has its two ends); "
        "make it a fixed or moving point without a condition",
        "muscle `ends`: point 2 is the insertion and must be unconditional (a path always has its two ends); "
        "make it a fixed or moving point without a condition",
        "muscle `bad`: point 1 is active depending on unknown coordinate 'kne'; expected one of: hip, knee",
        "muscle `bad`: point 2: the range of its condition [0.5, -0.5] has lo > hi; expected lo ≤ hi",
        "muscle `bad`: point 3: the range of its condition must be 2 finite numbers, got [nan, 0.0]",
        "muscle `bad`: point 4: the range of its condition must be 2 finite numbers, got [-inf, 0.0]",
        "muscle `bad`: point 5: its condition must be a PathPointCondition, got tuple",
    ]


# ----------------------------------------------------------------------------- model files
LEG = """
[units]
angle = "deg"
[parameters]
deg = "pi/180"
[coordinates.hip]
range = [{hip_range}]
[coordinates.knee]
range = [{knee_range}]
[bodies.thigh]
axis = [0, 0, 1]
variable = "hip"
mass = 1.0
com = [0, -0.2, 0]
inertia = [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]
[bodies.shank]
parent = "thigh"
axis = [0.2, 0, 1]
variable = "knee"
offset = {{ translation = [0, -0.4, 0] }}
mass = 1.0
com = [0, -0.2, 0]
inertia = [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]
[muscles.rf]
model = "path"
[[muscles.rf.path]]
body = "ground"
point = [0.05, 0.1, 0.02]
[[muscles.rf.path]]
body = "thigh"
point = [0.04, -0.35, 0.0]
active = {{ coordinate = "knee", range = [-110, -30] }}
[[muscles.rf.path]]
body = "thigh"
point = ["0.05 + 0.01*cos(knee*deg)", -0.38, 0.01]
active = {{ coordinate = "knee", range = [-60, 15] }}
[[muscles.rf.path]]
body = "shank"
point = [0.03, -0.05, 0.0]
[muscles.vas]
model = "path"
[[muscles.vas.path]]
body = "thigh"
point = [0.03, -0.2, 0.0]
[[muscles.vas.path]]
body = "thigh"
point = [0.045, -0.36, 0.0]
active = {{ coordinate = "knee", range = [-90, -90] }}
[[muscles.vas.path]]
body = "ground"
point = [0.1, -0.3, 0.0]
active = {{ coordinate = "hip", range = ["-10", 10] }}
[[muscles.vas.path]]
body = "shank"
point = [0.035, -0.06, 0.02]
[muscles.plain]
model = "path"
[[muscles.plain.path]]
body = "ground"
point = [0.0, 0.1, 0.0]
[[muscles.plain.path]]
body = "shank"
point = [0.02, -0.1, 0.0]
""".format(hip_range=", ".join(repr(float(x)) for x in np.rad2deg([-1.0, 1.0])),
           knee_range=", ".join(repr(float(x)) for x in np.rad2deg([-2.5, 0.5])))


def problems_of(text):
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "leg.toml")
    return caught.value.problems


def test_a_file_in_degrees_reads_the_range_in_the_coordinates_unit():
    model = parse_model_file(LEG).model
    rf = model.muscle_set.paths[0].points
    np.testing.assert_allclose([rf[1][2].lo, rf[1][2].hi, rf[2].active.lo, rf[2].active.hi], [*A, *B], rtol=1e-15)
    assert (rf[1][2].coordinate, rf[2].active.coordinate) == ("knee", "knee")
    assert model_differences(model, leg()) == []
    q = grid()
    np.testing.assert_allclose(model.muscle_lengths(q[:, 1::3]), leg().muscle_lengths(q[:, 1::3]), rtol=0, atol=1e-15)


def test_round_trip_and_differences():
    model = leg()
    text = dump_model(model)
    assert f'active = {{ coordinate = "knee", range = [{A[0]!r}, {A[1]!r}] }}' in text   # inline, radians
    again = parse_model_file(text).model
    assert model_differences(model, again) == []
    assert [point_conditions(p) for p in again.muscle_set.paths] == [point_conditions(p) for p in model.muscle_set.paths]
    # a range that no random state tells apart is still a difference
    wider = add_muscles(builder(), vas_range=(C[0], C[1] + 1e-6)).build()
    assert model_differences(model, wider) == [
        f"muscle `vas`: conditional points point 1: knee in [{C[0]!r}, {C[1]!r}]; point 2: hip in [{D[0]!r}, {D[1]!r}] "
        f"vs point 1: knee in [{C[0]!r}, {C[1] + 1e-6!r}]; point 2: hip in [{D[0]!r}, {D[1]!r}]"]


def point_conditions(path):
    return [point_condition(p) for p in path.points]


def test_file_problems_name_the_table_path():
    text = LEG.replace('range = [-110, -30] }', 'range = [-110, -30, 0] }')
    text = text.replace('{ coordinate = "knee", range = [-60, 15] }', '{ coordinate = "kne", range = [-60, 15] }')
    text = text.replace('{ coordinate = "knee", range = [-90, -90] }', '{ coordinate = "knee", range = [-90, "x"], when = 1 }')
    text = text.replace('active = { coordinate = "hip", range = ["-10", 10] }', 'active = "hip"')
    problems = problems_of(text)
    assert problems[:3] + problems[4:] == [
        "muscles.rf.path[1].active.range: expected an array of 2 numbers [lo, hi] in the coordinate's unit, "
        "got [-110, -30, 0]",
        "muscles.rf.path[2].active.coordinate: expected the name of a coordinate (hip, knee), got 'kne'; "
        "did you mean `knee`?",
        "muscles.vas.path[1].active.when: unknown key; expected one of: coordinate, range",
        "muscles.vas.path[2].active: expected a table, got 'hip'",
    ]
    assert problems[3].startswith("muscles.vas.path[1].active.range[1]: invalid expression: `x`")


def test_file_conditions_checked_by_the_builder_name_the_muscle():
    text = LEG.replace('range = [-110, -30] }', 'range = [-30, -110] }')
    text = text.replace('body = "ground"\npoint = [0.0, 0.1, 0.0]', 'body = "ground"\npoint = [0.0, 0.1, 0.0]\n'
                        'active = { coordinate = "hip", range = [0, 1] }')
    problems = problems_of(text)
    assert any("muscle `rf`: point 1: the range of its condition" in p and "has lo > hi" in p for p in problems)
    assert any("muscle `plain`: point 0 is the origin and must be unconditional" in p for p in problems)


# ----------------------------------------------------------------------------- OpenSim
def test_lengths_equal_opensims_across_the_switch():
    """OpenSim 4.6's ``ConditionalPathPoint::isActive`` is ``lo − 1e-5 ≤ q ≤ hi + 1e-5``: a range widened by
    OPENSIM_RANGE_TOLERANCE gives OpenSim's lengths, also inside the widening."""
    osim = pytest.importorskip("opensim")
    lo, hi = -2.0, -0.5
    model = osim.Model()
    thigh = osim.Body("thigh", 1.0, osim.Vec3(0, -0.2, 0), osim.Inertia(0.01, 0.01, 0.01))
    shank = osim.Body("shank", 1.0, osim.Vec3(0, -0.2, 0), osim.Inertia(0.01, 0.01, 0.01))
    hip = osim.PinJoint("hip", model.getGround(), osim.Vec3(0), osim.Vec3(0), thigh, osim.Vec3(0), osim.Vec3(0))
    knee = osim.PinJoint("knee", thigh, osim.Vec3(0, -0.4, 0), osim.Vec3(0), shank, osim.Vec3(0), osim.Vec3(0))
    for body in (thigh, shank):
        model.addBody(body)
    for joint in (hip, knee):
        model.addJoint(joint)
    hip.updCoordinate().setName("hip")
    knee.updCoordinate().setName("knee")
    muscle = osim.PathActuator()
    muscle.setName("rf")
    muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0.05, 0.1, 0.02))
    muscle.addNewPathPoint("insertion", shank, osim.Vec3(0.03, -0.05, 0.0))
    via = osim.ConditionalPathPoint()
    via.setName("via")
    via.setParentFrame(thigh)
    via.set_location(osim.Vec3(0.06, -0.35, 0.01))
    via.setCoordinate(knee.updCoordinate())
    via.setRangeMin(lo)
    via.setRangeMax(hi)
    muscle.updGeometryPath().updPathPointSet().insert(1, via)
    via.thisown = False  # the path point set owns it now (Set::insert adopts the pointer)
    model.addForce(muscle)
    state = model.initSystem()

    b = mbkron.ModelBuilder().add_coordinate("hip").add_coordinate("knee")
    b.add_body("thigh", axis=(0, 0, 1), variable="hip")
    b.add_body("shank", parent="thigh", axis=(0, 0, 1), variable="knee", offset=(0, -0.4, 0))
    widened = PathPointCondition("knee", lo - OPENSIM_RANGE_TOLERANCE, hi + OPENSIM_RANGE_TOLERANCE)
    b.add_muscle("rf", [("ground", (0.05, 0.1, 0.02)), ("thigh", (0.06, -0.35, 0.01), widened),
                        ("shank", (0.03, -0.05, 0.0))])
    ours = b.build()
    knees = [bound + d for bound in (lo, hi) for d in (-0.1, -2e-5, -0.5e-5, 0.0, 0.5e-5, 2e-5, 0.1)]
    q = np.array([(h, k) for h in (-0.3, 0.4) for k in knees])
    theirs, counts = [], []
    for h, k in q:
        model.getCoordinateSet().get("hip").setValue(state, h)
        model.getCoordinateSet().get("knee").setValue(state, k)
        model.realizePosition(state)
        theirs.append(muscle.getGeometryPath().getLength(state))
        counts.append(muscle.getGeometryPath().getCurrentPath(state).getSize())
    assert counts[:7] == [2, 2, 3, 3, 3, 3, 3] and counts[7:14] == [3, 3, 3, 3, 3, 2, 2]
    np.testing.assert_allclose(ours.muscle_lengths(q)[:, 0], theirs, rtol=0, atol=1e-12)


def test_the_documented_muscle_has_a_conditional_point():
    text = (Path(__file__).resolve().parents[1] / "docs" / "model-format.md").read_text()
    example, muscles = re.findall(r"```toml\n(.*?)```", text, re.S)
    biceps = parse_model_file(example + muscles).model.muscle_set.paths[0]
    assert [point_condition(p) for p in biceps.points] == [None, None, PathPointCondition("elbow", 0.0, np.pi / 3), None, None]
