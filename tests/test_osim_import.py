"""The OpenSim importer: functions and couplers, round trip through ``mbkron convert``, wrapping,
unsupported elements, XML paths in messages, safe XML and the command line.

The agreement with OpenSim's dynamics and paths is in ``tests/test_osim_agreement.py``.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import cli
from mbkron.core.errors import ModelError
from mbkron.io import format_toml, model_differences, parse_model_file
from mbkron.io.osim import read_osim
from mbkron.io.osim import xml as osim_xml
from mbkron.io.osim.functions import Affine, Expression, Formula, Multi, Table, Term, apply, compose, constant_term, \
    evaluate, read_function
from mbkron.io.osim.xml import XmlReader
from mbkron.numerics.functions import CubicSpline
from tests.test_startup import HEAVY, RUN_AND_LIST_MODULES, _python

DATA = Path(__file__).parent / "data" / "osim"
MODELS = ("arm26", "leg6dof9musc", "leg39", "gait2392_thelen2003muscle", "gait10dof18musc", "wrist",
          "Tug_of_War_Millard", "Rajagopal2015_opensense", "joints", "functions", "free_ball", "multi", "multi_axes", "splines",
          "gcv")
WRAPPED = ("TRIlong", "TRIlat", "TRImed", "BIClong", "BRA")


def osim_text(name: str) -> str:
    return gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()).decode("utf-8")


def write(tmp_path: Path, name: str, text: str | None = None, filename: str | None = None) -> Path:
    path = tmp_path / (filename or f"{name}.osim")
    path.write_text(osim_text(name) if text is None else text, encoding="utf-8")
    return path


def quiet_load(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbkron.load_model(path, **kwargs)


def function_of(text: str):
    root = ET.fromstring(f"<OpenSimDocument>{text}</OpenSimDocument>")
    reader = XmlReader(root, "test")
    function = read_function(reader, root[0])
    return function, reader


# ---------------------------------------------------------------------- functions
X, Y = [0.0, 0.3, 0.7, 1.2, 2.0], [0.1, -0.2, 0.5, 0.4, 1.0]
POINTS = np.linspace(-1.0, 3.0, 33)  # inside and outside the knots


def test_polynomial_and_sine_are_simtk_formulas():
    polynomial, _ = function_of("<PolynomialFunction><coefficients>2 -3 0.5 1.5</coefficients></PolynomialFunction>")
    sine, _ = function_of("<Sine><amplitude>1.3</amplitude><omega>2.1</omega><phase>0.4</phase><offset>-0.2</offset></Sine>")
    for x in POINTS:
        assert evaluate(polynomial, x) == pytest.approx(2 * x**3 - 3 * x**2 + 0.5 * x + 1.5, rel=1e-14, abs=1e-14)
        assert evaluate(sine, x) == pytest.approx(1.3 * math.sin(2.1 * x + 0.4) - 0.2, rel=1e-14, abs=1e-14)
    assert polynomial.text("q") == "(((2.0)*q + -3.0)*q + 0.5)*q + 1.5"


def test_multiplier_and_affine_compositions_are_exact():
    spline = Table("fmm", tuple(X), tuple(Y))
    reference = CubicSpline(X, Y, kind="fmm")
    scaled = compose(Affine(-1.7, 0.2), spline)
    assert isinstance(scaled, Table)
    # a spline of an affine function: knots mapped by the inverse (reversed for a negative slope)
    for slope in (2.0, -0.5):
        inner = compose(spline, Affine(slope, 0.3))
        assert isinstance(inner, Table) and list(inner.x) == sorted(inner.x)
        for x in POINTS:
            assert evaluate(inner, x) == pytest.approx(reference.evaluate(np.array([slope * x + 0.3]), 0)[0][0], abs=1e-12)
    for x in POINTS:
        assert evaluate(scaled, x) == pytest.approx(-1.7 * reference.evaluate(np.array([x]), 0)[0][0] + 0.2, abs=1e-12)
    assert compose(spline, spline) is None  # a spline of a spline: no exact form
    sine, _ = function_of("<Sine><amplitude>1</amplitude><omega>1</omega><phase>0</phase><offset>0</offset></Sine>")
    nested = compose(sine, sine)
    assert evaluate(nested, 0.7) == pytest.approx(math.sin(math.sin(0.7)), rel=1e-15)
    assert compose(sine, spline) is None


def test_multivariate_polynomial_terms_are_in_opensims_order():
    """OpenSim's documented order for dimension 3, order 3: index 6 is ``Y Z²``, 13 is ``X Y``, 19 ``X³``."""
    x, y, z = 0.7, -1.3, 0.4
    for index, expected in ((0, 1.0), (6, y * z**2), (13, x * y), (17, x**2 * z), (19, x**3)):
        coefficients = " ".join("1" if k == index else "0" for k in range(20))
        function, reader = function_of(f"<MultivariatePolynomialFunction><coefficients>{coefficients}</coefficients>"
                                       "<dimension>3</dimension><order>3</order></MultivariatePolynomialFunction>")
        assert isinstance(function, Multi) and function.arity == 3 and not reader.problems
        assert function.value([x, y, z]) == pytest.approx(expected, rel=1e-15)
        assert eval(function.text(["x", "y", "z"])) == pytest.approx(expected, rel=1e-15)  # the formula text
    linear, _ = function_of("<LinearFunction><coefficients>0.5 -2 3 0.25</coefficients></LinearFunction>")
    assert isinstance(linear, Multi) and linear.value([x, y, z]) == 0.5 * x - 2 * y + 3 * z + 0.25
    one, _ = function_of("<MultivariatePolynomialFunction><coefficients>1 2 3</coefficients><dimension>1</dimension>"
                         "<order>2</order></MultivariatePolynomialFunction>")
    assert isinstance(one, Formula) and evaluate(one, x) == 1 + 2 * x + 3 * x**2
    _, reader = function_of("<MultivariatePolynomialFunction><coefficients>1 2</coefficients><dimension>2</dimension>"
                            "<order>1</order></MultivariatePolynomialFunction>")
    assert reader.problems and "expected 3 coefficients (dimension 2, order 1), got 2" in reader.problems[0]


def test_functions_of_several_terms_are_formulas_in_the_coordinates():
    linear, _ = function_of("<LinearFunction><coefficients>0.5 -2 0.25</coefficients></LinearFunction>")
    a, b = Term(Affine(1.0, 0.0), "a"), Term(Affine(3.0, 1.0), "b")
    both = apply(linear, [a, b])
    assert isinstance(both.function, Expression) and both.coordinates == ("a", "b")
    assert eval(both.function.text, {"a": 0.2, "b": -0.4}) == pytest.approx(0.5 * 0.2 - 2 * (3 * -0.4 + 1) + 0.25, rel=1e-15)
    one = apply(linear, [constant_term(0.3), b])  # a locked argument: a formula of the one coordinate left
    assert isinstance(one.function, Formula) and one.coordinate == "b"
    assert evaluate(one.function, -0.4) == pytest.approx(0.5 * 0.3 - 2 * (3 * -0.4 + 1) + 0.25, rel=1e-15)
    assert apply(linear, [constant_term(0.3), constant_term(2.0)]).function == Affine(0.0, 0.5 * 0.3 - 4 + 0.25)
    table = Term(Table("fmm", tuple(X), tuple(Y)), "a")
    assert apply(linear, [table, b]) is None and apply(linear, [table, constant_term(1.0)]) is None


@pytest.mark.parametrize("text, expected", [
    ("<StepFunction />", "supported: the functions Constant, LinearFunction"),
])
def test_unsupported_functions_are_reported_with_what_is_supported(text, expected):
    function, reader = function_of(text)
    assert function is None
    assert len(reader.unsupported) == 1 and expected in reader.unsupported[0]


def test_natural_cubic_and_gcv_splines_are_tables():
    """OpenSim reads NaturalCubicSpline as SimmSpline (FMM ends); an unsmoothed GCVSpline of half order 2
    is the natural cubic interpolant: its second derivative vanishes at the end knots (its weights and
    stored coefficients are not read: OpenSim's fit uses neither)."""
    knots = f"<x>{' '.join(map(str, X))}</x><y>{' '.join(map(str, Y))}</y>"
    ncs, _ = function_of(f"<NaturalCubicSpline>{knots}</NaturalCubicSpline>")
    assert ncs == Table("fmm", tuple(X), tuple(Y))
    gcv, reader = function_of(f"<GCVSpline><half_order>2</half_order><error_variance>0</error_variance>{knots}"
                              "<weights>1 2 1 1 1</weights><coefficients>0 0 0 0 0</coefficients></GCVSpline>")
    assert gcv == Table("gcv", tuple(X), tuple(Y), 2, 0.0) and not reader.problems and not reader.unsupported
    values, _, second = gcv.function().evaluate(np.array([X[0], X[-1], *X]), 2)
    # to GCVSPL's floor of the smoothing parameter (p·‖Wᵀ‖ = 1e-15), not to the last bit
    assert np.abs(second[:2]).max() < 1e-13 and np.allclose(values[2:], Y, rtol=0, atol=1e-14)
    natural = CubicSpline(X, Y, kind="natural")(POINTS)
    assert np.allclose(gcv.function()(POINTS), natural, rtol=0, atol=1e-13)
    _, reader = function_of("<GCVSpline><half_order>2</half_order><x>0 1 2</x><y>0 1 0</y></GCVSpline>")
    assert reader.problems  # OpenSim's GCVSPL needs 2·half_order knots


def test_functions_equal_opensims_calcvalue(tmp_path):
    osim = pytest.importorskip("opensim")
    knots = f"<x>{' '.join(map(str, X))}</x><y>{' '.join(map(str, Y))}</y>"
    texts = [f"<SimmSpline>{knots}</SimmSpline>", f"<PiecewiseLinearFunction>{knots}</PiecewiseLinearFunction>",
             "<PolynomialFunction><coefficients>2 -3 0.5 1.5</coefficients></PolynomialFunction>",
             "<Sine><amplitude>1.3</amplitude><omega>2.1</omega><phase>0.4</phase><offset>-0.2</offset></Sine>",
             f"<MultiplierFunction><function><SimmSpline>{knots}</SimmSpline></function><scale>-1.7</scale></MultiplierFunction>",
             "<LinearFunction><coefficients>-0.7 0.3</coefficients></LinearFunction>", "<Constant><value>0.25</value></Constant>",
             f"<NaturalCubicSpline>{knots}</NaturalCubicSpline>",
             f"<GCVSpline><half_order>2</half_order><weights>1 2 0.5 3 1</weights>{knots}</GCVSpline>"]
    several = ["<LinearFunction><coefficients>-0.7 0.3 1.1 0.2</coefficients></LinearFunction>",
               "<MultivariatePolynomialFunction><coefficients>" + " ".join(str(0.1 * k - 0.7) for k in range(20))
               + "</coefficients><dimension>3</dimension><order>3</order></MultivariatePolynomialFunction>"]
    for k, text in enumerate(texts + several):
        path = tmp_path / f"f{k}.xml"
        path.write_text(f'<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">{text}</OpenSimDocument>')
        theirs = osim.Function.safeDownCast(osim.OpenSimObject.makeObjectFromFile(str(path)))
        ours, _ = function_of(text)
        if isinstance(ours, Multi):
            for point in np.random.default_rng(k).uniform(-2.0, 2.0, (20, 3)):
                argument = osim.Vector(3, 0.0)
                for i, v in enumerate(point):
                    argument.set(i, float(v))
                assert ours.value(list(point)) == pytest.approx(theirs.calcValue(argument), abs=1e-12), text
            continue
        for x in POINTS:
            assert evaluate(ours, x) == pytest.approx(theirs.calcValue(osim.Vector(1, float(x))), abs=1e-12), text


# ---------------------------------------------------------------------- couplers and coordinates
def test_coupler_scale_factor_multiplies_the_function(tmp_path):
    """leg6dof9musc's patella follows knee_angle_pat_r = scale·knee_angle_r: its joint variables are
    the patella splines at scale·knee (OpenSim: the dependent coordinate is scale_factor·f)."""
    text = osim_text("leg6dof9musc").replace("<scale_factor>1</scale_factor>", "<scale_factor>2</scale_factor>")
    document = read_osim(write(tmp_path, "leg6dof9musc", text)).document
    variable = document["bodies"]["tib_pat_r.rotation1"]["variable"]
    root = ET.fromstring(text)
    axis = root.find(".//CustomJoint[@name='tib_pat_r']/SpatialTransform/TransformAxis[@name='rotation1']")
    x = [float(v) for v in axis.find("SimmSpline/x").text.split()]
    y = [float(v) for v in axis.find("SimmSpline/y").text.split()]
    assert variable["coordinate"] == "knee_angle_r" and variable["kind"] == "fmm"
    assert variable["x"] == pytest.approx([v / 2 for v in x], abs=1e-15)
    assert variable["y"] == y


def test_coupler_semantics_in_opensim(tmp_path):
    osim = pytest.importorskip("opensim")
    text = osim_text("leg6dof9musc").replace("<scale_factor>1</scale_factor>", "<scale_factor>2</scale_factor>")
    model = osim.Model(str(write(tmp_path, "leg6dof9musc", text)))
    state = model.initSystem()
    coordinates = model.getCoordinateSet()
    coordinates.get("knee_angle_r").setValue(state, -0.5, True)
    assert coordinates.get("knee_angle_pat_r").getValue(state) == pytest.approx(2 * coordinates.get("knee_angle_r").getValue(state), abs=1e-8)


def _without_function(text: str, joint: str, axis: str) -> str:
    """``text`` with the function element of ``joint``'s TransformAxis ``axis`` removed."""
    start = text.index(f'<TransformAxis name="{axis}">', text.index(f'<CustomJoint name="{joint}">'))
    end = text.index("</TransformAxis>", start)
    block = text[start:end]
    function = re.search(r'<(LinearFunction|Constant) name="function">.*?</\1>', block, re.S)
    return text[:start] + block[:function.start()] + block[function.end():] + text[end:]


def test_a_transform_axis_without_a_function_is_the_constant_zero(tmp_path):
    """A TransformAxis whose function element is missing reads as OpenSim reads it, the property's default
    ``Constant(0)``, whatever coordinates it names (Moco's 3-D running model has such axes, naming none):
    leg6dof9musc's pelvis without the ``Constant 0`` of ``rotation3`` imports as the file itself, and without the
    ``LinearFunction`` of ``rotation1`` its pelvis no longer turns with ``pelvis_tilt`` (OpenSim 4.6 alike:
    the next test)."""
    text = osim_text("leg6dof9musc")
    original = quiet_load(write(tmp_path, "leg6dof9musc", text))
    no_constant = _without_function(text, "ground_pelvis", "rotation3")
    assert model_differences(quiet_load(write(tmp_path, "leg6dof9musc", no_constant, "a.osim")), original) == []
    model = quiet_load(write(tmp_path, "leg6dof9musc", _without_function(text, "ground_pelvis", "rotation1"), "b.osim"))
    tilt = model.coordinates.index("pelvis_tilt")
    q = np.tile(model.default_q, (2, 1))
    q[1, tilt] += 0.4
    T = model.kinematics(q, 0).T[:, model.body_index("pelvis")]
    np.testing.assert_array_equal(T[0], T[1])
    moved = original.kinematics(q, 0).T[:, original.body_index("pelvis")]
    assert np.abs(moved[0] - moved[1]).max() > 0.1  # the file itself turns it


def test_opensim_reads_an_axis_without_a_function_as_the_constant_zero(tmp_path):
    osim = pytest.importorskip("opensim")
    path = write(tmp_path, "leg6dof9musc", _without_function(osim_text("leg6dof9musc"), "ground_pelvis", "rotation1"))
    model = osim.Model(str(path))
    state = model.initSystem()
    poses = []
    for tilt in (0.0, 0.4):
        model.getCoordinateSet().get("pelvis_tilt").setValue(state, tilt)
        model.realizePosition(state)
        transform = model.getBodySet().get("pelvis").getTransformInGround(state)
        poses.append([transform.R().get(r, c) for r in range(3) for c in range(3)] + [transform.p().get(k) for k in range(3)])
    np.testing.assert_array_equal(poses[0], poses[1])


def test_leg39_coordinates_and_eliminated_couplers(tmp_path):
    imported = read_osim(write(tmp_path, "leg39"))
    assert list(imported.document["coordinates"]) == ["pelvis_tx", "pelvis_ty", "pelvis_tz", "hip_angle_r",
                                                      "knee_angle_r", "ankle_angle_r"]
    assert imported.document["coordinates"]["pelvis_tx"]["unit"] == "m"
    assert "tib_tx_r = 1.0·f(knee_angle_r)" in imported.header and "pelvis_tilt = 0.0" in imported.header
    bodies = imported.document["bodies"]
    assert bodies["knee_r.translation1"]["variable"]["coordinate"] == "knee_angle_r"
    assert not any("pelvis_tilt" in json.dumps(b) for b in bodies.values())  # locked at 0: no rotation at all


def test_free_and_ball_joints_are_chains_of_their_euler_angles(tmp_path):
    """Simbody's Free and Ball mobilizers in Euler-angle mode: translation of M in F along F's axes,
    then body-fixed X-Y-Z rotations; the coordinates in OpenSim's order (rx, ry, rz, tx, ty, tz)."""
    imported = read_osim(write(tmp_path, "free_ball"))
    coordinates = imported.document["coordinates"]
    assert list(coordinates)[:9] == ["free_rx", "free_ry", "free_rz", "free_tx", "free_ty", "free_tz",
                                     "ball_rx", "ball_ry", "ball_rz"]
    assert [coordinates[n]["unit"] for n in ("free_rx", "free_tx", "ball_rz")] == ["angle", "m", "angle"]
    bodies = imported.document["bodies"]
    chain = [(name, b["joint"], b["axis"], b["variable"]) for name, b in bodies.items() if name.startswith("free.")]
    assert chain == [("free.translationx", "prismatic", [1.0, 0.0, 0.0], "free_tx"),
                     ("free.translationy", "prismatic", [0.0, 1.0, 0.0], "free_ty"),
                     ("free.translationz", "prismatic", [0.0, 0.0, 1.0], "free_tz"),
                     ("free.rotationx", "revolute", [1.0, 0.0, 0.0], "free_rx"),
                     ("free.rotationy", "revolute", [0.0, 1.0, 0.0], "free_ry"),
                     ("free.rotationz", "revolute", [0.0, 0.0, 1.0], "free_rz")]
    assert [b["variable"] for name, b in bodies.items() if name.startswith("ball.")] == ["ball_rx", "ball_ry", "ball_rz"]
    model = quiet_load(write(tmp_path, "free_ball"))
    q = np.random.default_rng(3).uniform(-1.0, 1.0, model.nq)
    qd = np.random.default_rng(4).normal(size=model.nq)

    def xyz(angles):  # body-fixed X-Y-Z: R_x(a) R_y(b) R_z(c)
        out = np.eye(3)
        for axis, angle in zip(range(3), angles):
            c, s = math.cos(angle), math.sin(angle)
            i, j = (axis + 1) % 3, (axis + 2) % 3
            step = np.eye(3)
            step[i, i] = step[j, j] = c
            step[i, j], step[j, i] = -s, s
            out = out @ step
        return out
    # independently: box = X_PF · (R_xyz(rx, ry, rz), t in F) · X_BM⁻¹, the frames as in the file
    R_F, p_F = xyz([0.3, -0.2, 0.5]), np.array([0.1, 0.2, -0.1])
    R_M, p_M = xyz([-0.1, 0.4, 0.2]), np.array([0.05, 0.1, 0.0])
    R = R_F @ xyz(q[:3]) @ R_M.T
    p = p_F + R_F @ q[3:6] - R @ p_M
    for point in np.eye(3) - 0.2:
        assert np.allclose(model.point_position("box", point, q), p + R @ point, rtol=0, atol=1e-14)
    # the rates of the angles: ω = R_F (e_x ṙx + R_x e_y ṙy + R_x R_y e_z ṙz), the Ball/Free speeds' B q̇
    Rx, Rxy = xyz([q[0], 0, 0]), xyz([q[0], q[1], 0])
    omega = R_F @ (np.eye(3)[0] * qd[0] + Rx[:, 1] * qd[1] + Rxy[:, 2] * qd[2])
    assert np.allclose(model.angular_velocity("box", q, qd), omega, rtol=0, atol=1e-14)


# ---------------------------------------------------------------------- round trip, dispatch, wrapping
@pytest.mark.parametrize("name", MODELS)
def test_convert_round_trips(name, tmp_path):
    path = write(tmp_path, name)
    imported = quiet_load(path, wrapping="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = read_osim(path, wrapping="ignore")
    text = converted.header + format_toml(converted.document)
    with warnings.catch_warnings():  # OpenSim's inertias that violate the triangle inequality (toes_r, b0, link)
        warnings.simplefilter("ignore")
        reloaded = parse_model_file(text, "converted.toml").model
    assert model_differences(imported, reloaded) == []
    assert imported.name == reloaded.name == ET.fromstring(osim_text(name)).find("Model").get("name")


def test_load_model_dispatches_on_the_suffix_in_any_case(tmp_path):
    path = write(tmp_path, "leg39", filename="LEG39.OSIM")
    assert quiet_load(path).coordinates == quiet_load(write(tmp_path, "leg39")).coordinates
    with pytest.raises(ModelError, match="not valid TOML"):
        mbkron.load_model(write(tmp_path, "leg39", filename="leg39.toml"))


def test_wrapping_error_names_every_wrapped_path_and_ignore_warns(tmp_path):
    path = write(tmp_path, "arm26")
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(path, wrapping="error")
    assert len(raised.value.problems) == 1 and all(name in raised.value.problems[0] for name in WRAPPED)
    with pytest.warns(UserWarning, match="5 path\\(s\\) imported without their wrap objects: " + ", ".join(WRAPPED)):
        model = mbkron.load_model(path, wrapping="ignore")
    assert len(model.muscles) == 6
    with pytest.raises(ValueError, match="`wrapping` must be one of 'import', 'ignore', 'error'"):
        mbkron.load_model(path, wrapping="drop")


# ---------------------------------------------------------------------- problems: one ModelError, XML paths
def test_unsupported_elements_are_listed_together_with_their_xml_paths(tmp_path):
    text = osim_text("leg39")
    text = text.replace('<CustomJoint name="ankle_r">', '<EllipsoidJoint name="ankle_r">', 1)
    start = text.index('<EllipsoidJoint name="ankle_r">')
    end = text.index("</CustomJoint>", start)
    text = text[:end] + "</EllipsoidJoint>" + text[end + len("</CustomJoint>"):]
    text = text.replace("<SimmSpline>", "<GCVSpline>", 1).replace("</SimmSpline>", "</GCVSpline>", 1)
    text = text.replace("<mass_center>", "<mass_centre>1 2 3</mass_centre><mass_center>", 1)  # a misspelt extra child
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(write(tmp_path, "leg39", text))
    problems = raised.value.problems
    ball = [p for p in problems if "<EllipsoidJoint> is not supported" in p]
    gcv = [p for p in problems if "expected an integer half order 1-8 (degree 2·half_order − 1), got 0.0" in p]
    assert ball and ball[0].startswith("/OpenSimDocument/Model[@name='leg39']/JointSet[@name='jointset']/objects/EllipsoidJoint[@name='ankle_r']")
    assert "supported: the joints CustomJoint" in ball[0]
    assert any(p.startswith("/OpenSimDocument/Model[@name='leg39']/BodySet[@name='bodyset']/objects/Body[@name='pelvis']/"
                            "mass_centre: <mass_centre> is not supported; supported: inside <Body>: mass, mass_center, inertia")
               for p in problems)
    assert gcv and gcv[0].startswith("/OpenSimDocument/Model[@name='leg39']/ConstraintSet[@name='constraintset']/objects/"
                                     "CoordinateCouplerConstraint[@name='knee_tx_r']/coupled_coordinates_function/GCVSpline/"
                                     "half_order: ")  # OpenSim's default half order 0 is no spline


def test_bad_numbers_name_the_xml_path_and_what_was_expected(tmp_path):
    text = osim_text("leg39").replace("<mass>10.75379227</mass>", "<mass>ten</mass>", 1)
    text = re.sub(r"(<Coordinate name=\"knee_angle_r\">.*?<range>)[^<]*", r"\g<1>-2.0944", text, count=1, flags=re.S)
    text = text.replace("<location>", "<location>1e999 ", 1)
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(write(tmp_path, "leg39", text))
    message = str(raised.value)
    assert "/OpenSimDocument/Model[@name='leg39']/BodySet[@name='bodyset']/objects/Body[@name='pelvis']/mass: " \
           "expected 1 numbers, got 'ten'" in message
    assert "Coordinate[@name='knee_angle_r']/range: expected 2 numbers separated by spaces, got 1 value(s)" in message
    assert "/location: expected 3 numbers separated by spaces, got 4 value(s)" in message


# ---------------------------------------------------------------------- safe XML
BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<OpenSimDocument Version="40000"><Model name="&lol9;"/></OpenSimDocument>"""
EXTERNAL = """<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<OpenSimDocument Version="40000"><Model name="&x;"/></OpenSimDocument>"""


@pytest.mark.parametrize("text, match", [
    (BOMB, "refused: the XML declares a DTD, entities or external references"),
    (EXTERNAL, "refused: the XML declares a DTD"),
    ("<OpenSimDocument Version='40000'><Model>" + "<a>" * 200 + "</a>" * 200 + "</Model></OpenSimDocument>",
     "nested more than 64 levels"),
    ("<OpenSimDocument Version='40000'><Model>", "not well-formed XML"),
    ("<html/>", "expected the root element <OpenSimDocument>"),
    ("<OpenSimDocument Version='20000'><Model/></OpenSimDocument>", "OpenSim files of Version ≥ 20302 are read"),
])
@pytest.mark.timeout(300)  # ends an entity expansion (10⁹ "lol"s: minutes, or all memory); not a speed check
def test_unsafe_or_invalid_xml_is_a_model_error(tmp_path, text, match):
    path = tmp_path / "bad.osim"
    path.write_text(text)
    with pytest.raises(ModelError, match=re.escape(match)):
        mbkron.load_model(path)


def test_size_is_checked_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(osim_xml, "MAX_OSIM_BYTES", 1000)
    with pytest.raises(ModelError, match="more than 1,000 bytes"):
        mbkron.load_model(write(tmp_path, "arm26"))


# ---------------------------------------------------------------------- command line
def run(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


#: OpenSim's models have inertias that violate the triangle inequality (leg39's ``toes_r``): mbkron warns.
NONPHYSICAL_INERTIA = pytest.mark.filterwarnings("ignore:.*violate the triangle inequality")


@NONPHYSICAL_INERTIA
def test_convert_writes_a_model_file_that_loads_into_the_imported_model(capsys, tmp_path):
    source, output = write(tmp_path, "leg39"), tmp_path / "leg39.toml"
    status, out, err = run(capsys, "convert", source, "-o", output)
    assert status == 0 and f"wrote {output}" in out and "6 coordinates" in out
    assert output.read_text().startswith("# OpenSim model `leg39`, converted from")
    assert model_differences(mbkron.load_model(output), quiet_load(source)) == []
    status, _, err = run(capsys, "convert", source, "-o", output)
    assert status == 1 and err.strip() == f"mbkron: error: --output: {output} exists; give --overwrite to replace it"
    assert run(capsys, "convert", source, "-o", output, "--overwrite")[0] == 0
    status, _, err = run(capsys, "convert", output, "-o", tmp_path / "x.toml")
    assert status == 1 and "expected an OpenSim model file ending in .osim" in err


def test_convert_wrapping(capsys, tmp_path):
    source, output = write(tmp_path, "arm26"), tmp_path / "arm26.toml"
    status, _, err = run(capsys, "convert", source, "-o", output)  # arm26's cylinders and ellipsoids
    assert status == 0 and err == ""
    text = output.read_text()
    assert '[wraps.TRIlonghh]\nkind = "ellipsoid"' in text and '[wraps.TRI]\nkind = "cylinder"' in text
    assert model_differences(mbkron.load_model(output), mbkron.load_model(source)) == []
    output.unlink()
    status, out, err = run(capsys, "convert", source, "-o", output, "--ignore-wrapping")
    assert status == 0 and err.startswith("mbkron: warning: ") and "TRIlong" in err
    assert "Imported WITHOUT their wrap objects: TRIlong" in output.read_text()


@NONPHYSICAL_INERTIA
def test_info_reads_osim_files(capsys, tmp_path):
    status, out, _ = run(capsys, "info", write(tmp_path, "leg6dof9musc"))
    assert status == 0 and "model       leg6dof9musc" in out and "knee_r.rotation1" in out


def test_convert_help_imports_no_numerical_package():
    done = _python("-c", RUN_AND_LIST_MODULES, json.dumps(["convert", "--help"]))
    *printed, last = done.stdout.splitlines()
    status, modules, _ = json.loads(last)
    assert status == 0 and "usage: mbkron convert" in "\n".join(printed)
    assert [name for name in HEAVY if name in modules] == []


# ---------------------------------------------------------------------- names and inverted couplers
def test_names_become_unique_identifiers():
    from mbkron.io.osim.coordinates import identifiers

    names = identifiers(["ECU_pre-surgery", "ECU_pre_surgery", "2nd", "sin", "t", "knee", "ünï"])
    assert names == {"ECU_pre-surgery": "ECU_pre_surgery", "ECU_pre_surgery": "ECU_pre_surgery_2", "2nd": "_2nd",
                     "sin": "sin_", "t": "t_", "knee": "knee", "ünï": "_n_"}


@pytest.mark.parametrize("kind", ["fmm", "linear"])
def test_preimage_of_a_monotone_table_is_an_interval(kind):
    from mbkron.io.osim.functions import preimage

    increasing = Table(kind, (-1.0, 0.0, 0.5, 2.0), (-0.4, 0.1, 0.3, 1.5))
    low, high = preimage(increasing, 0.0, 1.0)
    assert evaluate(increasing, low) == pytest.approx(0.0, abs=1e-14)
    assert evaluate(increasing, high) == pytest.approx(1.0, abs=1e-14)
    low, high = preimage(increasing, -1.0, 2.0)  # both ends on the extrapolated lines
    assert evaluate(increasing, low) == pytest.approx(-1.0, abs=1e-14) and low < -1.0
    assert evaluate(increasing, high) == pytest.approx(2.0, abs=1e-14) and high > 2.0
    decreasing = Table(kind, (-1.0, 0.0, 0.5, 2.0), (0.4, -0.1, -0.3, -1.5))
    low, high = preimage(decreasing, -1.0, 0.0)
    assert evaluate(decreasing, high) == pytest.approx(-1.0, abs=1e-14) and evaluate(decreasing, low) == pytest.approx(0.0, abs=1e-14)
    assert preimage(Table(kind, (0.0, 1.0, 2.0), (0.0, 1.0, 0.0)), 0.2, 0.5) is None  # not monotone


def test_fmm_pieces_that_turn_back_between_knots_are_not_monotone():
    from mbkron.io.osim.functions import preimage

    table = Table("fmm", (0.0, 1.0, 2.0, 3.0), (0.0, 1.0, 1.001, 3.0))  # increasing knots, dips between 1 and 2
    spline = CubicSpline(table.x, table.y, kind="fmm")
    assert spline.evaluate(np.linspace(1, 2, 101), 1)[1].min() < 0
    assert preimage(table, 0.5, 0.9) is None


def test_actuators_driven_by_controls_are_listed_not_imported(tmp_path):
    actuator = ('<CoordinateActuator name="hip_motor"><coordinate>hip_angle_r</coordinate>'
                '<optimal_force>100</optimal_force></CoordinateActuator>')
    text = osim_text("leg39").replace("<ForceSet name=\"forceset\">\n\t\t\t<objects>", "<ForceSet name=\"forceset\">\n\t\t\t<objects>" + actuator, 1)
    assert actuator in text
    imported = read_osim(write(tmp_path, "leg39", text))
    assert "1 actuator(s) driven by controls (CoordinateActuator hip_motor; apply generalized forces as tau instead)" in imported.header
    assert "hip_motor" not in imported.document["muscles"]


# ---------------------------------------------------------------------- more problems, each with its XML path
def _replace(old: str, new: str):
    def change(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return change


@pytest.mark.parametrize("change, expected", [
    (lambda text: re.sub(r"(<Coordinate name=\"knee_angle_r\">.*?<default_value>)0", r"\g<1>1", text, count=1, flags=re.S),
     "Coordinate[@name='knee_angle_r']/default_value: the default 1.0 lies outside the range"),
    (_replace("<socket_parent_frame>/bodyset/pelvis</socket_parent_frame>",
              "<socket_parent_frame>/jointset/hip_r/pelvis_offset</socket_parent_frame>"),
     "PathPoint[@name='bifemlh_r-P1']: <PathPoint> is not supported; supported: path points on a body or ground"),
    (_replace("<dependent_coordinate_name>tib_tx_r</dependent_coordinate_name>",
              "<dependent_coordinate_name>tib_ty_r</dependent_coordinate_name>"),
     "CoordinateCouplerConstraint[@name='knee_ty_r']: the coordinate `tib_ty_r` is the dependent coordinate of two couplers"),
    (_replace("<independent_coordinate_names>knee_angle_r</independent_coordinate_names>\n\t\t\t\t\t<!--Name of the left-hand side "
              "(dependent) coordinate of the constraint coupling function.-->\n\t\t\t\t\t<dependent_coordinate_name>tib_tx_r",
              "<independent_coordinate_names>knee_angle_r hip_angle_r</independent_coordinate_names>"
              "<dependent_coordinate_name>tib_tx_r"),
     "CoordinateCouplerConstraint[@name='knee_tx_r']: <CoordinateCouplerConstraint> is not supported; supported: a function of "
     "as many arguments as coordinates: it takes 1, 2 coordinate(s) are named"),
    (_replace("<isEnforced>true</isEnforced>", "<isEnforced>false</isEnforced>"),
     "<CoordinateCouplerConstraint> is not supported; supported: enforced couplers (isEnforced = true)"),
    (_replace("<socket_child_frame>pelvis_offset</socket_child_frame>", "<socket_child_frame>/bodyset/femur</socket_child_frame>"),
     "CustomJoint[@name='ground_pelvis']/socket_child_frame: expected a path to a body, ground or one of the joint's frames, "
     "got '/bodyset/femur'"),
])
def test_more_problems_name_their_xml_path(tmp_path, change, expected):
    with pytest.raises(ModelError) as raised:
        mbkron.load_model(write(tmp_path, "leg39", change(osim_text("leg39"))))
    assert any(expected in problem and problem.startswith("/OpenSimDocument/Model[@name='leg39']/")
               for problem in raised.value.problems), raised.value.problems


def test_couplers_in_a_cycle_are_reported(tmp_path):
    text = osim_text("leg39").replace("<independent_coordinate_names>knee_angle_r</independent_coordinate_names>",
                                      "<independent_coordinate_names>tib_ty_r</independent_coordinate_names>", 1)
    text = text.replace("<independent_coordinate_names>knee_angle_r</independent_coordinate_names>",
                        "<independent_coordinate_names>tib_tx_r</independent_coordinate_names>", 1)
    with pytest.raises(ModelError, match="couplers depend on each other in a cycle: tib_t._r → tib_t._r → tib_t._r"):
        mbkron.load_model(write(tmp_path, "leg39", text))


def test_legacy_elements_opensim_reads_past_are_skipped_and_listed(tmp_path):
    """Issue 28: a path's ``<VisibleObject>``, a MovingPathPoint's ``<location>`` and a ConditionalPathPoint's
    ``<coordinate>`` (OpenSim 3 leftovers in 4.x files, which OpenSim 4.6 reads past) do not refuse the
    model: it loads as without them, and the convert header lists them."""
    text = osim_text("leg6dof9musc")
    changed = text.replace('<GeometryPath name="geometrypath">',
                           '<GeometryPath name="geometrypath"><VisibleObject><display_preference>4'
                           '</display_preference></VisibleObject>', 2)
    changed = changed.replace('<MovingPathPoint name="rect_fem_r-P3">',
                              '<MovingPathPoint name="rect_fem_r-P3"><location>0.1 0.2 0.3</location>', 1)
    changed = changed.replace('<ConditionalPathPoint name="psoas_r-P3">',
                              '<ConditionalPathPoint name="psoas_r-P3"><coordinate>knee_angle_r</coordinate>', 1)
    assert changed.count("<VisibleObject>") == 2 and "<coordinate>knee_angle_r</coordinate>" in changed
    header = read_osim(write(tmp_path, "legacy_leftovers", changed)).header
    assert "2 legacy <VisibleObject> inside <GeometryPath>" in header
    assert "1 legacy <location> inside <MovingPathPoint>" in header
    assert "1 legacy <coordinate> inside <ConditionalPathPoint>" in header
    plain, leftovers = quiet_load(write(tmp_path, "plain", text)), quiet_load(write(tmp_path, "leftovers", changed))
    q = plain.default_q + 0.1
    assert np.array_equal(plain.muscle_lengths(q), leftovers.muscle_lengths(q))
    assert np.array_equal(plain.moment_arms(q), leftovers.moment_arms(q))
