"""Muscles in model files (`[muscles.NAME]`, mbkron.io.formulas): loading against an independent computation
of the path, error collection with table paths, round trips, equality with Python-built models,
and the shipped shoulder files."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.numerics.functions import CubicSpline
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.io import (
    dump_model,
    format_toml,
    load_model,
    model_differences,
    parse_model_file,
)
from mbkron.multibody.muscles import MovingPoint
from mbkron.multibody.muscles.hill import HillParameters
from validation import shoulder_data

MODELS = Path(__file__).resolve().parents[1] / "models"
L1, L2 = 0.3, 0.25

ARM = f"""
[units]
angle = "deg"
[parameters]
deg = "pi/180"
[coordinates.shoulder]
range = [-90, 90]
[coordinates.elbow]
range = [0, 150]
[bodies.upper_arm]
axis = [0, 0, 1]
variable = "shoulder"
[bodies.forearm]
parent = "upper_arm"
axis = [0, 0, 1]
variable = "elbow"
offset = {{ translation = [{L1}, 0, 0] }}
[muscles.flexor]
max_isometric_force = 600.0
optimal_fiber_length = 0.116
tendon_slack_length = 0.272
pennation_angle = 10
[[muscles.flexor.path]]
body = "ground"
point = [0.0, 0.05, 0.0]
[[muscles.flexor.path]]
body = "upper_arm"
point = ["0.2 + 0.01*cos(elbow*deg)", 0.03, 0]
[[muscles.flexor.path]]
body = "upper_arm"
point = [[0.28, {{ type = "tabulated", coordinate = "elbow", kind = "fmm", x = [0, 90, 150], y = [0, 0.004, 0.006] }}], 0.02, 0]
extrapolate = true
[[muscles.flexor.path]]
body = "forearm"
point = [0.05, 0.01, 0]
[muscles.extensor]
model = "path"
[[muscles.extensor.path]]
body = "upper_arm"
point = [0.1, -0.02, 0]
[[muscles.extensor.path]]
body = "forearm"
point = [-0.02, -0.01, 0]
"""


def parabola(x, y):
    """The FMM spline through 3 knots is the parabola through them (independent of mbkron.numerics.functions)."""
    return np.poly1d(np.polyfit(x, y, 2))


def reference_points(q):
    """The flexor's path points in the ground frame, by planar rotations written out by hand."""
    shoulder, elbow = q
    c1, s1 = np.cos(shoulder), np.sin(shoulder)
    c12, s12 = np.cos(shoulder + elbow), np.sin(shoulder + elbow)
    upper = lambda x, y: np.array([c1 * x - s1 * y, s1 * x + c1 * y])
    fore = lambda x, y: upper(L1, 0) + np.array([c12 * x - s12 * y, s12 * x + c12 * y])
    knots = np.deg2rad([0, 90, 150])
    inside = parabola(knots, [0, 0.004, 0.006])
    end = min(elbow, knots[-1])  # beyond the last knot: the straight line with the end slope
    lift = inside(end) + inside.deriv()(end) * (elbow - end)
    return [np.array([0.0, 0.05]), upper(0.2 + 0.01 * np.cos(elbow), 0.03), upper(0.28 + lift, 0.02), fore(0.05, 0.01)]


def reference_length(q):
    points = reference_points(q)
    return sum(np.linalg.norm(b - a) for a, b in itertools.pairwise(points))


def central_gradient(function, q, h=1e-5):
    """Fourth-order central differences."""
    out = np.empty(q.size)
    for k in range(q.size):
        e = np.zeros(q.size)
        e[k] = h
        out[k] = (-function(q + 2 * e) + 8 * function(q + e) - 8 * function(q - e) + function(q - 2 * e)) / (12 * h)
    return out


def python_arm():
    """The same model built in Python."""
    b = mbkron.ModelBuilder(name="model").add_coordinate("shoulder", range=np.deg2rad([-90, 90]))
    b.add_coordinate("elbow", range=np.deg2rad([0, 150]))
    b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder")
    b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable="elbow", offset=(L1, 0, 0))
    elbow = sympy.Symbol("elbow")
    lift = CoordinateFunction(CubicSpline(np.deg2rad([0, 90, 150]), [0, 0.004, 0.006], kind="fmm"), "elbow")
    b.add_muscle("flexor", [("ground", (0.0, 0.05, 0.0)),
                            MovingPoint("upper_arm", (0.2 + 0.01 * sympy.cos(elbow), 0.03, 0.0)),
                            MovingPoint("upper_arm", ((0.28, lift), 0.02, 0.0), extrapolate=True),
                            ("forearm", (0.05, 0.01, 0.0))],
                 hill=HillParameters(600.0, 0.116, 0.272, pennation_angle=np.deg2rad(10)))
    b.add_muscle("extensor", [("upper_arm", (0.1, -0.02, 0.0)), ("forearm", (-0.02, -0.01, 0.0))])
    return b.build()


def problems_of(text: str) -> list[str]:
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "test.toml")
    return caught.value.problems


@pytest.mark.parametrize("q_deg", [(0.0, 0.0), (30.0, 45.0), (-60.0, 120.0), (80.0, 149.0), (10.0, 160.0)])
def test_lengths_and_moment_arms_equal_an_independent_computation(q_deg):
    model = parse_model_file(ARM).model
    q = np.deg2rad(q_deg)
    assert model.muscles == ("flexor", "extensor")
    assert abs(model.muscle_lengths(q)[0] - reference_length(q)) < 1e-15
    np.testing.assert_allclose(model.moment_arms(q)[:, 0], -central_gradient(reference_length, q), rtol=0, atol=1e-10)


def test_hill_parameters_are_read_in_si_units():
    paths = parse_model_file(ARM).model.muscle_set.paths
    assert paths[0].hill == HillParameters(600.0, 0.116, 0.272, pennation_angle=np.deg2rad(10))
    assert paths[1].hill is None


def test_thelen_curve_constants_are_read_written_compared_and_checked():
    curved = ARM.replace("pennation_angle = 10\n", "pennation_angle = 10\ncurves = { active_shape = 0.5, af = 0.3 }\n", 1)
    assert curved != ARM
    model = parse_model_file(curved).model
    curves = model.muscle_set.paths[0].hill.curves
    assert (curves.active_shape, curves.af, curves.passive_shape, curves.flen) == (0.5, 0.3, 5.0, 1.8)
    text = dump_model(model)
    assert "curves = { active_shape = 0.5, af = 0.3 }" in text
    assert model_differences(parse_model_file(text).model, model) == []
    assert any("muscle `flexor`: Hill parameters" in d for d in model_differences(model, parse_model_file(ARM).model))
    bad = ARM.replace("pennation_angle = 10\n", "pennation_angle = 10\ncurves = { active_shape = -1, shape = 2 }\n", 1)
    with pytest.raises(ModelError) as error:
        parse_model_file(bad)
    message = str(error.value)
    assert "muscles.flexor.curves.shape: unknown key" in message
    assert "curve constant `active_shape` must be a positive number, got -1" in message
    bad = ARM.replace("pennation_angle = 10\n", "pennation_angle = 10\ncurves = { active_shape = -1 }\n", 1)
    with pytest.raises(ModelError, match="curve constant `active_shape` must be a positive number, got -1"):
        parse_model_file(bad)


def test_a_file_equals_the_python_built_model_and_differences_are_found():
    from_file = parse_model_file(ARM).model
    assert model_differences(from_file, python_arm()) == []
    moved = ARM.replace("point = [0.05, 0.01, 0]", "point = [0.05, 0.011, 0]")
    assert model_differences(parse_model_file(moved).model, from_file) == ["muscle paths: lengths differ at random q",
                                                                         "muscle paths: moment arms differ at random q"]
    weaker = ARM.replace("max_isometric_force = 600.0", "max_isometric_force = 601.0")
    assert any("muscle `flexor`: Hill parameters" in d for d in model_differences(parse_model_file(weaker).model, from_file))
    renamed = ARM.replace("[muscles.extensor]", "[muscles.triceps]").replace("muscles.extensor.path", "muscles.triceps.path")
    assert model_differences(parse_model_file(renamed).model, from_file) == [
        "muscles: ('flexor', 'triceps') vs ('flexor', 'extensor')"]


@pytest.mark.filterwarnings("ignore::mbkron.ModelWarning")  # the round trip reloads the shoulder's unphysical bodies
@pytest.mark.parametrize("source", ["arm", "shoulder_rhythm.toml", "shoulder_rhythm_b.toml"])
def test_round_trip(source):
    model = parse_model_file(ARM).model if source == "arm" else load_model(MODELS / source)
    text = dump_model(model)
    again = parse_model_file(text).model
    assert model_differences(model, again) == []
    q = np.deg2rad([[10.0, 20.0, -30.0][: model.nq], [40.0, 170.0, 15.0][: model.nq]])
    np.testing.assert_allclose(again.moment_arms(q), model.moment_arms(q), rtol=1e-13, atol=1e-16)


def test_without_extrapolate_a_moving_point_stops_at_its_knots():
    model = parse_model_file(ARM.replace("extrapolate = true\n", "")).model
    model.muscle_lengths(np.deg2rad([0.0, 150.0]))
    with pytest.raises(ConfigurationError, match="moving point 2 of muscle `flexor`.*extrapolate"):
        model.muscle_lengths(np.deg2rad([0.0, 150.5]))


def test_every_problem_is_reported_with_its_table_path():
    text = ARM.replace('point = [0.0, 0.05, 0.0]', 'point = [0.0, 0.05]\nactive = { coordinate = "elbw", range = [0, 90] }')
    text = text.replace('"0.2 + 0.01*cos(elbow*deg)"', '"0.2 + elbw"')
    text = text.replace('kind = "fmm", x = [0, 90, 150]', 'kind = "cubic", x = [0, 90, 150]')
    text = text.replace("tendon_slack_length = 0.272\n", "tendon_slack_lenght = 0.272\n")
    text = text.replace("pennation_angle = 10", "pennation_angle = 95")
    text = text.replace('body = "forearm"\npoint = [0.05', 'body = "hand"\npoint = [0.05')
    text = text.replace('model = "path"', 'model = "path"\nmax_isometric_force = 1.0')
    text = text.replace('point = [-0.02, -0.01, 0]', 'point = [-0.02, -0.01, 0]\nextrapolate = true')
    problems = problems_of(text)
    expected = [
        "muscles.flexor: `tendon_slack_length` is required",
        "muscles.flexor.tendon_slack_lenght: unknown key",
        "did you mean `tendon_slack_length`",
        "muscles.flexor.path[0].active.coordinate: expected the name of a coordinate",
        "muscles.flexor.path[0].point: expected an array of 3 components",
        "muscles.flexor.path[1].point[0]: invalid expression: `0.2 + elbw`",
        "did you mean `elbow`",
        "muscles.flexor.path[2].point[0][1].kind: expected one of",
        "muscles.extensor.max_isometric_force: a muscle of model \"path\" has no Hill parameters",
        "muscles.extensor.path[1].extrapolate: only a moving point",
    ]
    joined = "\n".join(problems)
    for fragment in expected:
        assert fragment in joined, fragment
    # builder-level checks appear once the table-level ones pass
    built = problems_of(ARM.replace("pennation_angle = 10", "pennation_angle = 95")
                        .replace('body = "forearm"\npoint = [0.05', 'body = "hand"\npoint = [0.05'))
    assert any("`pennation_angle` must be in [0, π/2)" in p for p in built), built
    assert any("muscle `flexor`: point 3 names unknown body 'hand'" in p for p in built), built


def test_a_muscles_section_of_the_wrong_type():
    assert problems_of('[coordinates.q]\n[bodies.b]\naxis = [0, 0, 1]\nvariable = "q"\n[muscles]\nm = 3\n') == [
        "muscles.m: expected a table, got 3"]
    assert "muscles.m.path: expected an array of tables" in "\n".join(problems_of(
        '[coordinates.q]\n[bodies.b]\naxis = [0, 0, 1]\nvariable = "q"\n[muscles.m]\nmodel = "path"\npath = 1\n'))


@pytest.mark.parametrize(("variant", "name"), [("A", "shoulder_rhythm.toml"), ("B", "shoulder_rhythm_b.toml")])
def test_the_shipped_shoulder_files_are_generated_from_the_reference_data(variant, name):
    text = (MODELS / name).read_text()
    assert text.endswith(format_toml(shoulder_data.shoulder_document(variant))), "regenerate: python -m validation.shoulder_data"
    model = load_model(MODELS / name)
    assert model.muscles == ("DELT1", "DELT2", "DELT3", "SUPSP", "INFSP", "SUBSC", "TMIN", "TMAJ",
                             "PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3")
    assert model.coordinates == ("elv_angle", "shoulder_elv", "shoulder_rot")
    assert model.body("humerus").mass == 1.99757


def test_shoulder_girdle_is_undone_by_the_unrot_joints():
    """Variant A: the humerus orientation relative to the thorax depends only on Holzbaur's humeral
    rotations R(y, elv_angle) R(x', elv) R(y, −elv_angle) R(y, rot) — the girdle cancels."""
    model = load_model(MODELS / "shoulder_rhythm.toml")
    rng = np.random.default_rng(3)
    q = rng.uniform([-np.pi / 2, 0, -np.pi / 2], [2.2, np.pi, 0.3], (5, 3))
    T = model.kinematics(q, 0).T
    humerus, scapphant = T[:, model.body_index("humerus")], T[:, model.body_index("scapphant")]
    # scapphant's orientation is the thorax's: the unrot joints apply the exact negative rotations
    np.testing.assert_allclose(scapphant[:, :3, :3], np.broadcast_to(np.eye(3), (5, 3, 3)), atol=1e-14)
    from scipy.spatial.transform import Rotation

    def about(axis, angle):
        return Rotation.from_rotvec(np.outer(angle, np.asarray(axis) / np.linalg.norm(axis))).as_matrix()

    y, x = (0.0048, 0.999089, 0.0424), (-0.998261, 0.0023, 0.058898)
    expected = about(y, q[:, 0]) @ about(x, q[:, 1]) @ about(y, -q[:, 0]) @ about(y, q[:, 2])
    np.testing.assert_allclose(humerus[:, :3, :3], expected, atol=1e-14)
