"""GCV spline fits are bounded (issue 27 item 3): a 5 KB model file of 800 knots at half order 32
took 50-100 s to load. Half order, knots × half_order per spline and per file are bounded and
refused, before the fit, with a ModelError naming the file, the field and the value."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mbkron.core.errors import ModelError
from mbkron.io import parse_model_file
from mbkron.io.osim.functions import read_function
from mbkron.io.osim.xml import XmlReader
from mbkron.numerics import gcvspl
from mbkron.numerics.gcvspl import GCVSpline

MAX_HALF_ORDER, MAX_FIT_WORK = 8, 4_000  # the documented bounds (docs/model-format.md, Limits)

MODEL = """
[coordinates.q]
[bodies.a]
axis = [0, 0, 1]
variable = {{ type = "tabulated", coordinate = "q", kind = "gcv", half_order = {m}, x = {x}, y = {y} }}
"""


def _model(m: int, n: int, bodies: int = 1) -> str:
    x = np.linspace(0.0, 1.0, n)
    text = MODEL.format(m=m, x=x.tolist(), y=np.sin(3.0 * x).tolist())
    for k in range(1, bodies):
        text += MODEL.split("[bodies.a]")[1].format(m=m, x=x.tolist(), y=np.sin(3.0 * x).tolist()).replace(
            "axis", f"[bodies.a{k}]\nparent = \"a{k - 1 if k > 1 else ''}\"\naxis", 1)
    return text


@pytest.mark.timeout(60)
def test_the_probes_800_knots_at_half_order_32_are_refused_before_fitting():
    with pytest.raises(ModelError, match=r"in big\.toml: bodies\.a\.variable\.half_order: expected an integer 1-8 .*got 32"):
        parse_model_file(_model(32, 800), "big.toml")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("m, n", [(8, 501), (4, 1001), (1, 4001)])
def test_too_many_knots_for_the_half_order_are_refused_before_fitting(m, n):
    assert n * m > MAX_FIT_WORK
    with pytest.raises(ModelError, match=rf"in big\.toml: bodies\.a\.variable: {n:,} data points at half order {m} "
                                         rf"are too many to fit: at most {MAX_FIT_WORK:,}"):
        parse_model_file(_model(m, n), "big.toml")


def test_within_the_bounds_a_spline_is_fitted_and_interpolates():
    model = parse_model_file(_model(MAX_HALF_ORDER, 2 * MAX_HALF_ORDER + 4)).model
    x = np.linspace(0.0, 1.0, 2 * MAX_HALF_ORDER + 4)
    f = model.joint_variables(x[:, None], 0)[0][:, 0]
    np.testing.assert_allclose(f, np.sin(3.0 * x), atol=1e-9)  # interpolates its data (error variance 0)


def test_the_work_of_all_fits_of_a_file_is_bounded(monkeypatch):
    import mbkron.io.reader_values as reader_values

    monkeypatch.setattr(reader_values, "MAX_FILE_FIT_WORK", 100)
    parse_model_file(_model(2, 25, bodies=2))  # 2 × 50: at the bound
    with pytest.raises(ModelError, match=r"bodies\.a2\.variable: the GCV splines of the file are too many to fit: "
                                         r"with these 25 knots at half order 2 they have 150 knots × half_order, more than 100"):
        parse_model_file(_model(2, 25, bodies=3))


def _osim_function(text: str):
    root = ET.fromstring(f"<OpenSimDocument>{text}</OpenSimDocument>")
    reader = XmlReader(root, "test")
    return read_function(reader, root[0]), reader


@pytest.mark.timeout(60)
def test_osim_gcv_splines_are_bounded_the_same_way(monkeypatch):
    x = " ".join(map(repr, np.linspace(0.0, 1.0, 800).tolist()))
    function, reader = _osim_function(f"<GCVSpline><half_order>8</half_order><x>{x}</x><y>{x}</y></GCVSpline>")
    assert function is None and "800 data points at half order 8 are too many to fit" in reader.problems[0]
    import mbkron.io.osim.functions as osim_functions

    monkeypatch.setattr(osim_functions, "MAX_FILE_FIT_WORK", 30)
    root = ET.fromstring("<OpenSimDocument>" + "<GCVSpline><half_order>2</half_order><x>0 1 2 3 4</x><y>0 1 0 1 0</y>"
                         "</GCVSpline>" * 4 + "</OpenSimDocument>")
    reader = XmlReader(root, "test")
    results = [read_function(reader, element) for element in root]
    assert [r is None for r in results] == [False, False, False, True]
    assert "40 knots × half_order, more than 30" in reader.problems[0]


def test_the_fit_itself_refuses_beyond_the_bounds():
    with pytest.raises(ValueError, match=r"`half_order` must be an integer from 1 to 8, got 9"):
        GCVSpline(np.arange(20.0), np.arange(20.0), 9)
    with pytest.raises(ValueError, match=r"4,002 data points at half order 2"):  # 2 columns of 2,001 knots
        gcvspl.GCVSpline(np.arange(2001.0), np.zeros((2001, 2)), 2)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("half_order", [2, 3, 4])
@pytest.mark.parametrize("variance", [-1.0, 0.0, 0.01])
def test_extreme_knots_end_the_smoothing_search_with_an_error(half_order, variance):
    """A knot at -1e308 (found by tests/fuzz_osim.py) made every criterion NaN, and GCVSPL's search, whose
    loops end on comparisons, never returned."""
    x = [-1e308, -1.4, -0.9, -0.5, 0.0, 0.4, 0.8, 1.5, 2.1, 2.6]
    y = [0.1, 0.05, -0.1, 0.2, 0.15, 0.3, 0.22, 0.12, 0.18, 0.05]
    with pytest.raises(ValueError, match="cannot be fitted in double precision"):
        GCVSpline(x, y, half_order, variance)
