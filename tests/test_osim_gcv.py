"""OpenSim's GCVSpline (every half order, smoothing) and PiecewiseConstantFunction: import, model files.

The functions themselves: :class:`mbkron.numerics.functions.PiecewiseConstant` against OpenSim's
``calcValue`` semantics worked out by hand from ``PiecewiseConstantFunction.cpp`` (and live against
OpenSim when installed), :class:`~mbkron.numerics.functions.AffineMapped` by the chain rule. The
importer: the tables it makes, their compositions with couplers, the problems it reports, OpenSim's
``calcValue`` and ``calcDerivative``. Model files: kinds ``gcv`` and ``constant`` with ``argument`` and
``value`` maps, units, round trip, errors. The dynamics of a model using them are compared with OpenSim
in ``tests/test_osim_agreement.py`` (model ``gcv``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import mbkron
from mbkron import reference
from mbkron.io import dump_model, model_differences, parse_model_file
from mbkron.io.osim.functions import Affine, Table, Term, compose, compose_term, emit, evaluate, preimage, read_function
from mbkron.io.osim.xml import XmlReader
from mbkron.core.errors import ModelError
from mbkron.numerics.functions import AffineMapped, CubicSpline, PiecewiseConstant
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.numerics.gcvspl import GCVSpline

X, Y = (0.0, 0.3, 0.7, 1.2, 2.0, 2.4, 3.1, 3.5), (0.1, -0.2, 0.5, 0.4, 1.0, 0.7, 0.2, 0.3)
POINTS = np.linspace(-1.0, 4.0, 41)


def function_of(text: str):
    root = ET.fromstring(f"<OpenSimDocument>{text}</OpenSimDocument>")
    reader = XmlReader(root, "test")
    return read_function(reader, root[0]), reader


def knots(x=X, y=Y) -> str:
    return f"<x>{' '.join(map(repr, x))}</x><y>{' '.join(map(repr, y))}</y>"


# ---------------------------------------------------------------------- PiecewiseConstant, AffineMapped
def test_piecewise_constant_follows_opensims_calcvalue():
    """``PiecewiseConstantFunction::calcValue``: y_0 up to x_0 (and within 2e-13 of it), y_{n−1} from
    x_{n−1} on (and within 2e-13 below), y_i on (x_i, x_{i+1}); at an interior knot the value its
    bisection (k = (i + j)/2 from i = 0, j = n) stops on, worked out by hand for x = 0 … 4:
    at 1: k = 2 → j = 2, k = 1 stops (y_1); at 2: k = 2 stops (y_2); at 3: k = 2 stops (y_2)."""
    step = PiecewiseConstant([0.0, 1.0, 2.0, 3.0, 4.0], [10.0, 11.0, 12.0, 13.0, 14.0])
    t = np.array([-5.0, 0.0, 1e-13, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0 - 3e-13, 4.0 - 1e-13, 4.0, 9.0])
    expected = [10, 10, 10, 10, 11, 11, 12, 12, 12, 13, 13, 14, 14, 14]
    value, first, second = step.evaluate(t.reshape(2, 7))
    np.testing.assert_array_equal(value.ravel(), expected)
    np.testing.assert_array_equal(first, 0.0)
    np.testing.assert_array_equal(second, 0.0)
    assert step.kind == "constant" and "piecewise constant, 5 knots" in step.describe()
    assert np.isnan(step(np.nan)) or step(np.nan) in step.y  # OpenSim's bisection stops at once on NaN


def test_piecewise_constant_equals_opensim_live():
    osim = pytest.importorskip("opensim")
    rng = np.random.default_rng(4)
    for n in (2, 3, 6, 11):
        x, y = np.sort(rng.uniform(-1.0, 1.0, n)), rng.standard_normal(n)
        theirs = osim.PiecewiseConstantFunction()
        for a, b in zip(x, y):
            theirs.addPoint(float(a), float(b))
        t = np.concatenate([x, x - 1e-13, x + 1e-13, x - 3e-13, x + 3e-13, x[:-1] + 0.5 * np.diff(x), [x[0] - 1, x[-1] + 1]])
        expected = [theirs.calcValue(osim.Vector(1, float(v))) for v in t]
        np.testing.assert_array_equal(PiecewiseConstant(x, y)(t), expected)


def test_affine_mapped_is_the_chain_rule():
    inner = CubicSpline([0.0, 1.0, 2.5, 3.0], [0.0, 1.0, 8.0, 27.0], "natural")
    mapped = AffineMapped(inner, (-0.7, 1.3), (2.5, -0.4))
    t = np.linspace(-1.0, 3.0, 9)
    value, first, second = mapped.evaluate(t)
    g, g1, g2 = inner.evaluate(-0.7 * t + 1.3)
    np.testing.assert_allclose(value, 2.5 * g - 0.4, rtol=1e-15)
    np.testing.assert_allclose(first, 2.5 * -0.7 * g1, rtol=1e-15)
    np.testing.assert_allclose(second, 2.5 * 0.49 * g2, rtol=1e-15)
    assert mapped.evaluate(t, 0)[1] is None and "2.5·F(-0.7·x + 1.3) + -0.4" in mapped.describe()


# ---------------------------------------------------------------------- the importer
@pytest.mark.parametrize("half_order", [1, 2, 3, 4])
@pytest.mark.parametrize("variance", [0.0, 0.003, -1.0])
def test_gcv_splines_are_gcv_tables(half_order, variance):
    """Any half order and error variance; OpenSim's fit ignores ``weights`` and ``coefficients``."""
    function, reader = function_of(f"<GCVSpline><half_order>{half_order}</half_order><error_variance>{variance!r}"
                                   f"</error_variance>{knots()}<weights>1 2 1 1 3 1 1 1</weights>"
                                   "<coefficients>0 0 0 0 0 0 0 0</coefficients></GCVSpline>")
    assert not reader.problems and not reader.unsupported
    assert function == Table("gcv", X, Y, half_order, variance)
    np.testing.assert_array_equal(function.function()(POINTS), GCVSpline(X, Y, half_order, variance)(POINTS))
    assert emit(Term(function, "q")) == {"type": "tabulated", "coordinate": "q", "kind": "gcv", "half_order": half_order,
                                         "error_variance": variance, "x": list(X), "y": list(Y)}


def test_piecewise_constant_functions_are_constant_tables():
    function, reader = function_of(f"<PiecewiseConstantFunction>{knots()}</PiecewiseConstantFunction>")
    assert function == Table("constant", X, Y) and not reader.problems
    assert isinstance(function.function(), PiecewiseConstant)
    one, _ = function_of("<PiecewiseConstantFunction><x>0.3</x><y>-2</y></PiecewiseConstantFunction>")
    assert one == Affine(0.0, -2.0)  # OpenSim: y_0 everywhere
    two, _ = function_of("<PiecewiseConstantFunction><x>0 1</x><y>1 2</y></PiecewiseConstantFunction>")
    assert two == Table("constant", (0.0, 1.0), (1.0, 2.0))  # a step, not the straight line


def test_compositions_keep_the_data_and_map_argument_and_value():
    """A coupler's scale and a MultiplierFunction map the value, an affine coupler the argument
    (negative slopes too: a step function keeps its sides); the data are never refitted."""
    for kind, extra in (("gcv", {"half_order": 3, "error_variance": 0.01}), ("constant", {})):
        table = Table(kind, X, Y, **extra)
        composed = compose(Affine(0.8, 0.1), compose(table, Affine(-0.96, 0.36)))
        assert composed == Table(kind, X, Y, **extra, argument=(-0.96, 0.36), value=(0.8, 0.1))
        t = np.linspace(-3.0, 3.0, 61)
        np.testing.assert_allclose(composed.function()(t), 0.8 * table.function()(-0.96 * t + 0.36) + 0.1, rtol=1e-15)
        assert composed.knots().tolist() == sorted((np.array(X) - 0.36) / -0.96)
        assert emit(Term(composed, "a"))["argument"] == [-0.96, 0.36]
        assert compose(Affine(0.0, 0.5), table) == Affine(0.0, 0.5)
        constant = compose_term(table, Term(Affine(0.0, 0.4), None))
        assert constant.coordinate is None and constant.function.intercept == evaluate(table, 0.4)
    fmm = compose(Table("fmm", X, Y), Affine(2.0, 0.0))  # the other kinds still transform their knots
    assert fmm == Table("fmm", tuple(v / 2.0 for v in X), Y)


def test_preimage_of_gcv_couplers():
    """A conditional point on a coordinate coupled by a strictly monotone GCV spline of half order 2 (a
    piecewise cubic with straight continuations) maps to an interval; other half orders continue as
    constants or curved polynomials and step functions are not monotone: reported (None)."""
    x, y = (-1.2, -0.7, -0.3, 0.2, 0.6, 1.1), (-1.5, -0.9, -0.35, 0.2, 0.7, 1.4)
    table = compose(Affine(0.9, 0.05), Table("gcv", x, y, 2, 1e-4))
    low, high = preimage(table, -0.2, 0.6)
    spline = table.function()
    assert spline(low) == pytest.approx(-0.2, abs=1e-14) and spline(high) == pytest.approx(0.6, abs=1e-14)
    beyond = preimage(table, -5.0, 5.0)  # on the straight continuations
    assert spline(beyond[0]) == pytest.approx(-5.0, abs=1e-13) and spline(beyond[1]) == pytest.approx(5.0, abs=1e-13)
    for other in (Table("gcv", x, y, 1, 0.0), Table("gcv", x, y, 3, 0.0), Table("constant", x, y)):
        assert preimage(other, -0.2, 0.6) is None


def test_preimage_of_a_table_with_huge_values_warns_nothing():
    """A file's coupler scaled by 1e300 (found by tests/fuzz_osim.py: numpy warned of an overflow in a product
    of curvatures). The values are finite: the preimage is the unscaled table's root, where the steep function
    crosses [-0.2, 0.6], and no numpy warning."""
    import warnings

    x, y = (-1.2, -0.7, -0.3, 0.2, 0.6, 1.1), (-1.5, -0.9, -0.35, 0.2, 0.7, 1.6)
    for kind in ("natural", "fmm"):
        root = preimage(Table(kind, x, y), -1e-13, 1e-13)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            low, high = preimage(Table(kind, x, tuple(1e300 * v for v in y)), -0.2, 0.6)
            assert root[0] - 1e-12 <= low <= high <= root[1] + 1e-12


@pytest.mark.parametrize("text, message", [
    (f"<GCVSpline>{knots()}</GCVSpline>", "half_order: expected an integer half order 1-8 (degree 2·half_order − 1), got 0.0"),
    (f"<GCVSpline><half_order>2.5</half_order>{knots()}</GCVSpline>", "got 2.5"),
    (f"<GCVSpline><half_order>9</half_order>{knots()}</GCVSpline>", "got 9.0"),
    (f"<GCVSpline><half_order>2</half_order>{knots(X, Y[:7])}</GCVSpline>",
     "expected as many values <y> as knots <x>, got 7 and 8"),
    ("<GCVSpline><half_order>3</half_order><x>0 1 2 3 4</x><y>0 1 0 1 0 1</y></GCVSpline>",
     "x: expected at least 6 numbers separated by spaces, got 5 value(s)"),
    ("<GCVSpline><half_order>1</half_order><error_variance>nan</error_variance><x>0 1</x><y>0 1</y></GCVSpline>",
     "error_variance: expected finite numbers, got 'nan'"),
    ("<GCVSpline><half_order>2</half_order><x>0 1e-300 2e-300 3e-300</x><y>0 1e300 -1e300 1e300</y></GCVSpline>",
     "cannot be fitted in double precision"),
    ("<PiecewiseConstantFunction><x>0 1 1</x><y>1 2 3</y></PiecewiseConstantFunction>", "expected strictly increasing knots"),
    ("<PiecewiseConstantFunction><x>-1e308 1e308</x><y>1 2</y></PiecewiseConstantFunction>", "overflows"),
])
def test_bad_gcv_and_step_functions_are_problems(text, message):
    function, reader = function_of(text)
    assert function is None and reader.problems and message in reader.problems[0], reader.problems


def test_functions_equal_opensims_calcvalue_and_derivatives(tmp_path):
    osim = pytest.importorskip("opensim")
    texts = [f"<GCVSpline><half_order>{m}</half_order><error_variance>{v!r}</error_variance>{knots()}</GCVSpline>"
             for m in (1, 2, 3, 4) for v in (0.0, 0.004, -1.0)]
    texts += [f"<MultiplierFunction><function><GCVSpline><half_order>3</half_order><error_variance>0.01</error_variance>"
              f"{knots()}</GCVSpline></function><scale>-1.7</scale></MultiplierFunction>",
              f"<PiecewiseConstantFunction>{knots()}</PiecewiseConstantFunction>"]
    points = np.concatenate([POINTS, X])
    for k, text in enumerate(texts):
        path = tmp_path / f"f{k}.xml"
        path.write_text(f'<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000">{text}</OpenSimDocument>')
        theirs = osim.Function.safeDownCast(osim.OpenSimObject.makeObjectFromFile(str(path)))
        ours, _ = function_of(text)
        values = ours.function().evaluate(points, 2)
        for order, expected in enumerate(values):
            reference = np.array([theirs.calcValue(osim.Vector(1, float(t))) if order == 0 else
                                  theirs.calcDerivative(osim.StdVectorInt([0] * order), osim.Vector(1, float(t)))
                                  for t in points])
            np.testing.assert_allclose(expected, reference, rtol=0, atol=1e-12 * max(1.0, np.abs(reference).max()),
                                       err_msg=text)


def test_gcv_model_imports_round_trips_and_equals_the_reference(tmp_path):
    """The stored model ``gcv`` (docs/opensim.md): the conversion header-free document round-trips, and
    the engine's mass matrix with its functions (GCV splines, steps, affine maps) as joint variables equals
    the dissertation as written (:func:`mbkron.reference.mass_matrix`, Eq. 145)."""
    import gzip

    from tests.test_osim_agreement import DATA

    path = tmp_path / "gcv.osim"
    path.write_bytes(gzip.decompress((DATA / "gcv.osim.gz").read_bytes()))
    model = mbkron.load_model(path)
    text = dump_model(model)
    for kind in ('kind = "gcv"', 'kind = "constant"', "argument = [", "value = ["):
        assert kind in text
    again = parse_model_file(text).model
    assert model_differences(model, again) == []
    q = np.array([[0.1, -0.2, 0.15], [-0.6, 0.3, -0.3], [0.8, 1.2, 0.9]])
    expected = reference.mass_matrix(model, q)
    np.testing.assert_allclose(model.mass_matrix(q), expected, rtol=0, atol=1e-12 * max(1.0, np.abs(expected).max()))


# ---------------------------------------------------------------------- model files
MODEL = """
[units]
angle = "deg"
[coordinates.q]
range = [-90, 90]
[coordinates.s]
unit = "m"
[bodies.a]
axis = [0, 0, 1]
variable = {{ type = "tabulated", coordinate = "q", kind = "gcv", half_order = 3, error_variance = {variance}, argument = [-0.5, 10], value = [2, 3], x = [-60, -30, 0, 20, 45, 70, 90], y = [5, -3, 8, 10, 2, 6, 1] }}
[bodies.b]
parent = "a"
joint = "prismatic"
axis = [1, 0, 0]
variable = {{ type = "tabulated", coordinate = "s", kind = "constant", x = [-1, 0, 0.5], y = [0.1, 0.3, -0.2] }}
"""


@pytest.mark.parametrize("variance", [0.0, 0.5, -1])
def test_model_file_gcv_and_constant_tables_convert_units_and_round_trip(variance):
    """In a file in degrees: knots, values and the intercepts of the maps in degrees, the error variance
    in degrees²; the spline is fitted to the numbers as written (the smoothing search depends on their
    units) and the units converted around it, so it is the spline of those numbers to the last bit."""
    model = parse_model_file(MODEL.format(variance=variance)).model
    a = model.body("a").variable
    assert isinstance(a, CoordinateFunction) and isinstance(a.function, AffineMapped)
    spline = a.function.function
    rad = np.pi / 180
    assert spline.half_order == 3 and spline.error_variance == variance
    reference = GCVSpline(np.array([-60, -30, 0, 20, 45, 70, 90.0]), np.array([5, -3, 8, 10, 2, 6, 1.0]), 3, variance)
    q = np.array([[37.0 * rad, 0.2], [-80.0 * rad, -2.0], [5.0 * rad, 0.7]])
    f, grad, hess = model.joint_variables(q)
    u = -0.5 * q[:, 0] / rad + 10  # the spline's argument, in degrees
    np.testing.assert_allclose(f[:, 0], (2 * reference(u) + 3) * rad, rtol=1e-14)
    np.testing.assert_allclose(grad[:, 0, 0], 2 * -0.5 * reference(u, 1), rtol=1e-14)
    np.testing.assert_allclose(hess[:, 0, 0, 0], 2 * 0.25 * reference(u, 2) / rad, rtol=1e-14)
    np.testing.assert_array_equal(f[:, 1], [0.3, 0.1, -0.2])
    np.testing.assert_array_equal(grad[:, 1], 0.0)
    again = parse_model_file(dump_model(model)).model
    assert model_differences(model, again) == []


@pytest.mark.parametrize("table, message", [
    ("{type='tabulated', coordinate='q', kind='gcv', x=[0,1,2,3], y=[0,1,0,1]}",
     "bodies.a.variable: `half_order` is required"),
    ("{type='tabulated', coordinate='q', kind='gcv', half_order=2.0, x=[0,1,2,3], y=[0,1,0,1]}", "got 2.0"),
    ("{type='tabulated', coordinate='q', kind='gcv', half_order=true, x=[0,1,2,3], y=[0,1,0,1]}", "got true"),
    ("{type='tabulated', coordinate='q', kind='gcv', half_order=3, x=[0,1,2,3], y=[0,1,0,1]}",
     "bodies.a.variable: `x` must be a 1-D array of at least 2·half_order = 6 knots, got shape (4,)"),
    ("{type='tabulated', coordinate='q', kind='gcv', half_order=2, error_variance='x', x=[0,1,2,3], y=[0,1,0,1]}",
     "bodies.a.variable.error_variance"),
    ("{type='tabulated', coordinate='q', kind='fmm', half_order=2, x=[0,1,2,3], y=[0,1,0,1]}",
     "bodies.a.variable.half_order: only for `kind = \"gcv\"`"),
    ("{type='tabulated', coordinate='q', kind='linear', argument=[0, 1], x=[0,1], y=[0,1]}",
     "bodies.a.variable.argument: expected [slope, intercept] with a non-zero slope, got [0, 1]"),
    ("{type='tabulated', coordinate='q', kind='linear', value=[1], x=[0,1], y=[0,1]}",
     "bodies.a.variable.value: expected [slope, intercept] with a non-zero slope"),
    ("{type='tabulated', coordinate='q', kind='constant', x=[0,1,1], y=[0,1,2]}", "x must be strictly increasing"),
])
def test_model_file_errors(table, message):
    with pytest.raises(ModelError, match=re.escape(message)):
        parse_model_file(f"[coordinates.q]\n[bodies.a]\naxis=[0,0,1]\nvariable={table}")
