"""Wrapping in imported models: OpenSim import, model files, agreement with OpenSim 4.6 (stored data of
``validation/opensim/compare_wrapping.py``), C¹ through engagement on arm26's cylinder sweeps, and the moment
arms against differences of the lengths and the literal Eq. 195 (:mod:`mbkron.reference`)."""

from __future__ import annotations

import gzip
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import reference
from mbkron.jit.common import AVAILABLE
from mbkron.core.errors import ModelError
from mbkron.io import dump_model, model_differences, parse_model_file
from validation.opensim.compare_wrapping import (ARM26_STRIDE, EXCEPTIONS, SWEEPS, continuous, model_text,
                                                  sweep_states)

DATA = Path(__file__).parent / "data"

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("wrapping")
    out = {}
    for name in ("Rajagopal2016", "arm26_cylinders"):
        path = directory / f"{name}.osim"
        path.write_text(model_text(name))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # importing wraps warns about nothing
            out[name] = mbkron.load_model(path)
    return out


def test_rajagopal_imports_its_42_wrapped_paths_and_round_trips_through_a_model_file(models):
    model = models["Rajagopal2016"]
    wrapping = model.muscle_set.wrapping
    assert wrapping.muscles.size == 42 and len(model.muscles) == 80
    assert {type(w.surface).__name__ for m in wrapping.muscles for w in model.muscle_set.paths[m].wraps} == {"WrapCylinder"}
    text = dump_model(model)
    assert "[wraps.Gastroc_at_condyles_r]" in text and 'quadrant = "-y"' in text
    again = parse_model_file(text).model
    assert model_differences(model, again) == []
    assert model_differences(model, models["arm26_cylinders"]) != []


def test_rajagopal_moment_arms_against_differences_and_the_reference_at_200_poses(models):
    model = models["Rajagopal2016"]
    wrapped = model.muscle_set.wrapping.muscles
    rng = np.random.default_rng(8)
    low, high = (np.array([c.range[i] for c in model.coordinate_records]) for i in (0, 1))
    q = rng.uniform(np.maximum(low, -1.0), np.minimum(high, 1.0), (200, model.nq))
    R = model.moment_arms(q)[..., wrapped]
    # the literal Eq. 195 on the located paths, state by state (on the engine's kinematics, which
    # tests/test_reference.py holds to the reference's): at every pose (no stencil to cross a switch)
    literal = reference.moment_arms(model, q, model.kinematics(q, 1))[..., wrapped]
    h, checked = 2e-5, 0
    for name in ("hip_flexion_r", "hip_adduction_r", "hip_rotation_r", "knee_angle_r", "ankle_angle_r"):
        k = list(model.coordinates).index(name)
        step = np.zeros(model.nq)
        step[k] = h
        L = [model.muscle_lengths(q + j * step)[..., wrapped] for j in (-2, -1, 1, 2)]
        difference = (8 * (L[2] - L[1]) - (L[3] - L[0])) / (12 * h)  # O(h⁴)
        # a stencil that crosses a change of the wrapped set (L is not smooth there) shows it as a jump in the
        # differences; elsewhere R is −dL/dq
        smooth = np.abs((L[3] - L[0]) / (4 * h) - (L[2] - L[1]) / (2 * h)) < 1e-6
        assert np.abs(-difference - R[:, k, :])[smooth].max() < 1e-9
        checked += smooth.sum()
        assert np.abs(literal[:, k, :] - R[:, k, :]).max() < 1e-9
    assert checked > 0.9 * 5 * 200 * len(wrapped)


def test_arm26_with_its_ellipsoids_moment_arms_against_the_reference(tmp_path):
    """The literal Eq. 195 on the located paths (:mod:`mbkron.reference`: the tangent points of the ellipsoid's
    geodesics in their wrap body) at random poses with the shoulder below 0.3 rad, where BIClong wraps over
    `BIClonghh`, against the engine's R."""
    path = tmp_path / "arm26.osim"
    path.write_bytes(gzip.decompress((DATA / "osim" / "arm26.osim.gz").read_bytes()))
    model = mbkron.load_model(path)
    ms = model.muscle_set
    q = np.random.default_rng(26).uniform([-1.2, 0.0], [0.3, 2.27], (10, 2))
    kin = model.kinematics(q, 1)
    assert ms.path_points(kin).wrapped[:, ms.wrapping.wrap_names.index("BIClonghh")].all()
    assert np.abs(reference.moment_arms(model, q, kin) - model.moment_arms(q)).max() < 1e-9


@needs_numba
def test_arm26_with_its_ellipsoids_moment_arms_against_differences_at_200_poses(tmp_path):
    """The compiled route's R against fourth-order central differences of its lengths at 200 random poses over
    arm26's whole range (complex steps at these poses: ``python -m validation.wrap_derivatives``,
    docs/wrapping.md); one pose (130) is in the band where TRIlong's sweeps need the ellipsoids the short way."""
    path = tmp_path / "arm26.osim"
    path.write_text(model_text("arm26"))
    model = mbkron.load_model(path)
    wrapped = model.muscle_set.wrapping.muscles
    low, high = (np.array([c.range[i] for c in model.coordinate_records]) for i in (0, 1))
    q = np.random.default_rng(26).uniform(low, high, (200, model.nq))
    flags = model.muscle_set.path_points(model.kinematics(q[:6], 0)).wrapped
    assert flags[:, [model.muscle_set.wrapping.wrap_names.index(n) for n in ("BIClonghh", "TRIlonghh")]].any(axis=0).all()
    assert 2.018 < q[130, 0] < 2.046
    R = model.moment_arms(q)[..., wrapped]  # (a ModelWarning, were some sweeps unsettled, fails the test)
    h, checked = 2e-5, 0
    for k, e in enumerate(np.eye(model.nq)):
        L = [model.muscle_lengths(q + j * h * e)[..., wrapped] for j in (-2, -1, 1, 2)]
        difference = (8 * (L[2] - L[1]) - (L[3] - L[0])) / (12 * h)
        smooth = np.abs((L[3] - L[0]) / (4 * h) - (L[2] - L[1]) / (2 * h)) < 1e-6  # no switch crossed
        assert np.abs(-difference - R[:, k, :])[smooth].max() < 1e-9
        assert smooth[130].all()
        checked += smooth.sum()
    assert checked > 0.9 * 2 * 200 * len(wrapped)


@needs_numba
def test_sweeps_that_do_not_settle_go_the_short_way_or_warn(tmp_path, monkeypatch):
    """In TRIlong's band (docs/wrapping.md, "Sweeps that do not settle") the path is the one with `TRIlonghh`'s
    quadrant dropped (a model file saying so gives the same L and R); where even those sweeps do not settle
    (here: at most 2 sweeps allowed) a ModelWarning names the muscle."""
    path = tmp_path / "arm26.osim"
    path.write_text(model_text("arm26"))
    model = mbkron.load_model(path)
    text = model_text("arm26")
    start = text.index('name="TRIlonghh"')
    end = text.index("<quadrant>z</quadrant>", start)
    path.write_text(text[:start] + text[start:end] + "<quadrant>all</quadrant>" + text[end + 22:])
    short = mbkron.load_model(path)
    q = np.array([[2.0303105, 0.2299042], [2.04, 1.5]])
    muscle = list(model.muscles).index("TRIlong")
    (L, R), (short_L, short_R) = ((m.muscle_lengths(q), m.moment_arms(q)) for m in (model, short))
    assert np.abs(L - short_L)[:, muscle].max() < 1e-13
    assert np.abs(R - short_R)[..., muscle].max() < 1e-12
    monkeypatch.setattr("mbkron.algorithms.paths.paths.MAX_SWEEPS", 2)
    with pytest.warns(mbkron.ModelWarning, match=r"muscle `TRIlong`: the sweeps over its wraps did not settle in 2, "
                                                 r"even with its ellipsoids the short way, at \d state\(s\), the first "
                                                 r"at index \(0,\): .* its moment arms are not −dL/dq"):
        model.muscle_lengths(q)


def test_tori_are_imported_and_ignore_still_works(tmp_path):
    path = tmp_path / "arm26.osim"
    text = gzip.decompress((DATA / "osim" / "arm26.osim.gz").read_bytes())
    tori = re.sub(rb"<dimensions>[^<]*</dimensions>", b"<inner_radius>0.01</inner_radius><outer_radius>0.03</outer_radius>",
                  text.replace(b"WrapEllipsoid", b"WrapTorus"))  # arm26's ellipsoids made tori
    path.write_bytes(tori)
    imported = {s.name: (type(s).__name__, s.inner_radius, s.outer_radius) for p in mbkron.load_model(path).muscle_set.paths
                for s in (w.surface for w in p.wraps) if s.name.endswith("hh")}
    assert imported == {"TRIlonghh": ("WrapTorus", 0.01, 0.03), "BIClonghh": ("WrapTorus", 0.01, 0.03)}
    with pytest.warns(UserWarning, match="5 path\\(s\\) imported without their wrap objects"):
        assert mbkron.load_model(path, wrapping="ignore").muscle_set.wrapping is None
    path.write_bytes(text)
    wrapped = mbkron.load_model(path).muscle_set
    surfaces = {s.name: type(s).__name__ for path in wrapped.paths for s in (w.surface for w in path.wraps)}
    assert surfaces == {"TRI": "WrapCylinder", "TRIlonghh": "WrapEllipsoid", "TRIlongglen": "WrapCylinder",
                        "BIClonghh": "WrapEllipsoid"}  # arm26's WrapObjectSets


BASE = """
[coordinates.q1]
[bodies.link]
axis = [0, 0, 1]
variable = "q1"
mass = 1.0
"""


@pytest.mark.parametrize("wraps, muscle, expected", [
    ('[wraps.c]\nkind = "cone"\nbody = "link"\n', '"c"', "wraps.c.kind: expected one of: 'sphere', 'cylinder', 'ellipsoid', 'torus', got 'cone'"),
    ('[wraps.c]\nkind = "cylinder"\nbody = "link"\nradius = 0.1\n', '"c"', "wraps.c: `length` is required"),
    ('[wraps.c]\nkind = "sphere"\nbody = "link"\nradius = -0.1\n', '"c"', "wraps.c: `radius` must be a finite number > 0 (m), got -0.1"),
    ('[wraps.c]\nkind = "sphere"\nbody = "link"\nradius = 0.1\nquadrant = "up"\n', '"c"', "wraps.c.quadrant: expected one of: 'all', '+x'"),
    ('[wraps.c]\nkind = "sphere"\nbody = "nowhere"\nradius = 0.1\n', '"c"', "wrap object `c` is on unknown body 'nowhere'"),
    ('[wraps.c]\nkind = "sphere"\nbody = "link"\nradius = 0.1\n', '"d"', "muscles.m.wraps[0]: expected the name of a [wraps] table (c), got 'd'"),
    ('[wraps.c]\nkind = "sphere"\nbody = "link"\nradius = 0.1\n', '{ object = "c", range = [1] }',
     "muscles.m.wraps[0].range: expected 2 integers [first, last]"),
    ('[wraps.c]\nkind = "sphere"\nbody = "link"\nradius = 0.1\n', '{ object = "c", method = "best" }',
     "muscles.m.wraps[0].method: expected one of: 'hybrid', 'midpoint', 'axial', got 'best'"),
])
def test_model_file_wraps_are_checked(wraps, muscle, expected):
    text = BASE + wraps + f"""
[muscles.m]
model = "path"
wraps = [{muscle}]
path = [{{ body = "ground", point = [0, 0.1, 0] }}, {{ body = "link", point = [0.5, 0, 0] }}]
"""
    with pytest.raises(ModelError) as error:
        parse_model_file(text)
    assert expected in str(error.value)


def test_lengths_agree_with_opensim_where_its_length_is_continuous(models, tmp_path):
    # OpenSim's side is stored (OpenSim is not installed in CI); mbkron's is recomputed: all states of Rajagopal's
    # sweeps, every ARM26_STRIDE-th of arm26's (without numba, the numpy ellipsoid solver takes about 1 s per state); the documented
    # exceptions (EXCEPTIONS; docs/wrapping.md, "Against OpenSim 4.6") are asserted separately
    stored = np.load(DATA / "wrapping_opensim.npz")
    path = tmp_path / "arm26.osim"
    path.write_text(model_text("arm26"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arm26 = mbkron.load_model(path)
    checked = set()
    for name, model_name, coordinate, bounds, count, fixed in SWEEPS:
        model = arm26 if model_name == "arm26" else models[model_name]
        k = list(model.coordinates).index(coordinate)
        q = sweep_states(model, coordinate, bounds, count, fixed)
        assert np.array_equal(q[:, k], stored[f"{name}.q"]), name  # the stored sweep is this one
        muscles = list(stored[f"{name}.muscles"])
        excepted = np.zeros((count, len(muscles)), dtype=bool)
        for sweep_name, muscle, (low, high), _ in EXCEPTIONS:
            if sweep_name == name:
                excepted[(q[:, k] >= low) & (q[:, k] <= high), muscles.index(muscle)] = True
        rows = np.arange(0, count, ARM26_STRIDE if model_name == "arm26" else 1)
        L, R = model.muscle_lengths(q[rows]), model.moment_arms(q[rows])[:, k, :]
        columns = [list(model.muscles).index(m) for m in muscles]
        L, R, excepted = L[:, columns], R[:, columns], excepted[rows]
        reported, own_path = stored[f"{name}.opensim_length"], stored[f"{name}.opensim_path_length"]
        ok = (continuous(reported) & continuous(own_path))[rows] & ~excepted
        # OpenSim's reported length is the length of its own path except where it adds straight pieces between
        # stale tangent points (multi-wrap paths: docs/wrapping.md); mbkron's path is the shortest, OpenSim's a
        # feasible one (its arcs are polylines slightly inside the surfaces: a few µm)
        consistent = np.abs(reported - own_path)[rows] < 1e-6
        assert np.abs(L - reported[rows])[ok & consistent].max(initial=0.0) < 1e-3, name
        assert np.abs(L - own_path[rows])[ok].max() < 1e-3, name
        assert (L - own_path[rows])[ok].max() < 5e-6, name
        assert ok.mean() > 0.5, name
        # R: −dL/dq of OpenSim's length (central differences) where that length is its path's
        assert np.abs(R - stored[f"{name}.opensim_gradient"][rows])[ok & consistent].max(initial=0.0) < 1e-3, name
        for sweep_name, muscle, _, (least, most) in EXCEPTIONS:
            if sweep_name == name:
                m = muscles.index(muscle)
                difference = (L - own_path[rows])[excepted[:, m], m]
                assert least <= difference.min() and difference.max() <= most, (name, muscle)
                checked.add((name, muscle))
    assert checked == {(name, muscle) for name, muscle, *_ in EXCEPTIONS}


def test_arm26_lengths_are_c1_through_engagement(models):
    model = models["arm26_cylinders"]
    ms = model.muscle_set
    k = list(model.coordinates).index("r_elbow_flex")
    base = np.array([c.default for c in model.coordinate_records])

    def at(x):
        q = base.copy()
        q[k] = x
        return q

    def wrapped(x):
        return ms.path_points(model.kinematics(at(x)[None], 0)).wrapped[0]
    grid = np.linspace(0.0, 2.2689, 60)
    flags = np.array([wrapped(x) for x in grid])
    engagements = 0
    for i, j in zip(*np.nonzero(flags[1:] != flags[:-1])):
        a, b = grid[i], grid[i + 1]
        for _ in range(55):
            mid = (a + b) / 2
            a, b = (mid, b) if wrapped(mid)[j] == flags[i, j] else (a, mid)
        muscle = ms.wrapping.wrap_muscles()[j]
        arms = model.moment_arms(np.array([at(a), at(b)]))[:, k, muscle]
        assert abs(arms[1] - arms[0]) < 1e-7
        # the literal Eq. 195 1e-6 from the engagement on both sides, and at it (a, b: adjacent floating-point numbers)
        near = np.array([at(a - 1e-6), at(a), at(b), at(b + 1e-6)])
        assert np.abs(reference.moment_arms(model, near)[:, k, :] - model.moment_arms(near)[:, k, :]).max() < 1e-9
        engagements += 1
    assert engagements >= 3  # TRIlat, TRImed, BRA (and TRIlong) engage the TRI cylinder on this sweep


def test_writing_refuses_two_wrap_objects_of_one_name():
    from mbkron.model.builder import ModelBuilder
    from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder

    b = ModelBuilder().add_coordinate("q1").add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    for name, radius in (("m", 0.01), ("n", 0.02)):
        b.add_muscle(name, [("ground", (0, 0.1, 0)), ("link", (0.5, 0, 0))],
                     wraps=[PathWrap(WrapCylinder(name="c", body="link", radius=radius, length=1.0))])
    with pytest.raises(ValueError, match="muscle `n`: two different wrap objects are named `c`"):
        dump_model(b.build())
