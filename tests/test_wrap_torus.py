"""The path round a torus (mbkron.multibody.muscles.wrap_torus, solved by the compiled kernel mbkron.numerics.geodesics.torus)
against independent computations.

A closed form (a path in a meridian plane: the tube's cross-section is a circle, so the 2-D circle's
tangents and arc); the conditions of the shortest path off the meridian planes (on the surface,
tangent, no kink, a geodesic: an independent Cartesian integration of the implicit surface's geodesic
equation by scipy's DOP853); the no-contact and inside cases and OpenSim's quadrant rule; ``R``
against differences of ``L`` on a two-link model with the torus on a moving body; model files and
``.osim`` import; OpenSim 4.6's lengths (``tests/data/wrap_torus_opensim.csv.gz``,
``validation/opensim/compare_wrap_torus.py``).
"""

from __future__ import annotations

import csv
import gzip
import re
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.core.errors import ModelError
from mbkron.io import dump_model, parse_model_file
from mbkron.model.builder import ModelBuilder
from mbkron.multibody.muscles.wrap_torus import WrapTorus, enters_solid, opensim_ring_point, shortest_path
from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder, surface_problems
from tests.geodesics import implicit_geodesic

DATA = Path(__file__).parent / "data"
R, r = 0.05, 0.01


def implicit(x):
    """F = (ρ − R)² + z² − r² of the torus (R, r)."""
    return (np.hypot(x[..., 0], x[..., 1]) - R) ** 2 + x[..., 2] ** 2 - r**2


def gradient(x):
    rho = np.hypot(x[..., 0], x[..., 1])
    return np.stack([2 * (1 - R / rho) * x[..., 0], 2 * (1 - R / rho) * x[..., 1], 2 * x[..., 2]], axis=-1)


def length(p, q, result):
    wrapped, t1, t2, arc = result
    return np.where(wrapped, np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1),
                    np.linalg.norm(q - p, axis=-1))


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# ------------------------------------------------------------------------------ closed form
def circle_path(P, Q):
    """The shortest path from P to Q (2-D, (ξ, z) relative to the tube's centre in a meridian plane)
    round the circle of radius r counterclockwise through the inner side ξ < 0: tangent angles
    αP + arccos(r/dP) and αQ − arccos(r/dQ), the arc r(γ − arccos(r/dP) − arccos(r/dQ)) with γ the
    counterclockwise angle from P to Q."""
    dP, dQ = np.hypot(*P), np.hypot(*Q)
    aP, aQ = np.arctan2(P[1], P[0]), np.arctan2(Q[1], Q[0])
    gamma = np.mod(aQ - aP, 2 * np.pi)
    theta = gamma - np.arccos(r / dP) - np.arccos(r / dQ)
    b1, b2 = aP + np.arccos(r / dP), aQ - np.arccos(r / dQ)
    return theta, r * np.array([np.cos(b1), np.sin(b1)]), r * np.array([np.cos(b2), np.sin(b2)]), \
        np.sqrt(dP**2 - r**2) + r * theta + np.sqrt(dQ**2 - r**2)


def test_meridian_paths_are_the_circle_closed_form():
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(60):
        phi = rng.uniform(-np.pi, np.pi)
        P = np.array([rng.uniform(-1.5 * r, 0.8 * r), rng.uniform(0.6 * r, 4 * r)])
        Q = np.array([rng.uniform(-1.5 * r, 0.8 * r), rng.uniform(-4 * r, -0.6 * r)])
        if min(np.hypot(*P), np.hypot(*Q)) < 1.05 * r:
            continue
        chord = Q - P
        nearest = P + np.clip(-(P @ chord) / (chord @ chord), 0, 1) * chord
        theta, T1, T2, expected = circle_path(P, Q)
        if np.hypot(*nearest) > 0.999 * r or theta <= 0:  # the segment must cut the disk on the inner side
            continue

        def lift(point):  # (ξ, z) of the meridian plane at azimuth φ → the torus frame
            return np.array([(R + point[0]) * np.cos(phi), (R + point[0]) * np.sin(phi), point[1]])

        p, q = lift(P), lift(Q)
        wrapped, t1, t2, arc = shortest_path(p, q, R, r)
        assert wrapped
        assert abs(arc - r * theta) < 1e-12 and abs(length(p, q, (wrapped, t1, t2, arc)) - expected) < 1e-12
        assert np.abs(t1 - lift(T1)).max() < 1e-12 and np.abs(t2 - lift(T2)).max() < 1e-12
        checked += 1
    assert checked > 20


def test_the_docstring_example_and_a_symmetric_half_wrap():
    # P = (−a, h), Q = (−a, −h): γ = 2 atan2(h, a)
    a, h = 0.004, 0.02
    wrapped, t1, t2, arc = WrapTorus(name="t", body="ground", inner_radius=r, outer_radius=R).solve(
        [R - a, 0.0, h], [R - a, 0.0, -h])
    d = np.hypot(a, h)
    assert wrapped and abs(arc - r * (2 * np.arctan2(h, a) - 2 * np.arccos(r / d))) < 1e-13
    assert abs(t1[2] + t2[2]) < 1e-15 and abs(t1[1]) < 1e-15


# ------------------------------------------------------------------- off the meridian planes
def off_meridian_cases(n, seed):
    """Segments through the hole past the tube near azimuth 0, their ends off each other's meridian."""
    rng = np.random.default_rng(seed)
    rho = rng.uniform(0.025, 0.047, (2, n))
    phi = rng.uniform(-0.7, 0.7, (2, n))
    z = np.array([1, -1])[:, None] * rng.uniform(0.005, 0.05, (2, n))
    points = np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=-1)
    outside = (implicit(points) > 1e-6).all(axis=0)
    return points[0, outside], points[1, outside]


def hessian(x):
    rho = np.hypot(x[0], x[1])
    H = np.diag([2 * (1 - R / rho)] * 2 + [2.0])
    H[:2, :2] += 2 * R * np.outer(x[:2], x[:2]) / rho**3
    return H


def cartesian_geodesic(start, direction, arc):
    """The geodesic of the torus from ``start`` in Cartesian coordinates (:func:`tests.geodesics.implicit_geodesic`):
    the end point and unit tangent."""
    points, tangents = implicit_geodesic(gradient, hessian, start, direction, arc)
    return points[-1], tangents[-1]


def test_tangent_no_kink_and_geodesic_off_the_meridian():
    p, q = off_meridian_cases(400, 5)
    wrapped, t1, t2, arc = shortest_path(p, q, R, r)
    assert wrapped.sum() > 40
    p, q, t1, t2, arc = p[wrapped], q[wrapped], t1[wrapped], t2[wrapped], arc[wrapped]
    assert np.abs(implicit(t1)).max() < 1e-16 and np.abs(implicit(t2)).max() < 1e-16  # on the surface (F ~ 2r·distance)
    # tangent: the straight segments lie in the tangent planes
    assert np.abs(np.sum(unit(t1 - p) * unit(gradient(t1)), axis=-1)).max() < 1e-11
    assert np.abs(np.sum(unit(q - t2) * unit(gradient(t2)), axis=-1)).max() < 1e-11
    turn = np.abs(np.arctan2(t1[:, 1], t1[:, 0]) - np.arctan2(t2[:, 1], t2[:, 0]))
    assert (turn > 0.01).sum() > 10  # many geodesics turn about the torus's axis (not in a meridian plane)
    for k in range(0, len(p), max(1, len(p) // 12)):
        # the surface geodesic continuing p → t1 without a kink ends at t2 after `arc`, continuing into t2 → q
        end, tangent = cartesian_geodesic(t1[k], unit(t1[k] - p[k]), arc[k])
        assert np.abs(end - t2[k]).max() < 1e-10
        assert np.abs(unit(tangent) - unit(q[k] - t2[k])).max() < 1e-8


def test_shorter_than_nearby_surface_paths():
    """The path's surface part, bumped sideways (keeping it on the surface and the tangent points), is longer."""
    p, q = off_meridian_cases(100, 8)
    wrapped, t1, t2, arc = shortest_path(p, q, R, r)
    k = np.flatnonzero(wrapped)[0]
    end, _ = cartesian_geodesic(t1[k], unit(t1[k] - p[k]), arc[k])
    tau = np.linspace(0, 1, 4001)
    # sample the geodesic in the torus angles, bump the angles by δ sin(πτ), measure the polyline
    samples = np.array([cartesian_geodesic(t1[k], unit(t1[k] - p[k]), s * arc[k])[0] if s > 0 else t1[k]
                        for s in np.linspace(0, 1, 41)])
    u = np.unwrap(np.arctan2(samples[:, 1], samples[:, 0]))
    v = np.unwrap(np.arctan2(samples[:, 2], np.hypot(samples[:, 0], samples[:, 1]) - R))
    u, v = (np.interp(tau, np.linspace(0, 1, 41), a) for a in (u, v))
    for du, dv in ((1e-3, 0.0), (0.0, 1e-3), (-1e-3, 5e-4)):
        uu, vv = u + du * np.sin(np.pi * tau), v + dv * np.sin(np.pi * tau)
        curve = np.stack([(R + r * np.cos(vv)) * np.cos(uu), (R + r * np.cos(vv)) * np.sin(uu), r * np.sin(vv)], axis=-1)
        assert np.linalg.norm(np.diff(curve, axis=0), axis=-1).sum() > arc[k]


# --------------------------------------------------------------- no contact, inside, quadrants
def test_no_contact_inside_and_enters_solid():
    p = np.array([[0.0, 0.0, 0.05], [0.044, 0.0, 0.002], [0.02, 0.01, 0.06], [0.044, 0.0, 0.03]])
    q = np.array([[0.0, 0.0, -0.05], [0.044, 0.0, -0.04], [0.02, -0.01, -0.06], [0.044, 0.0, -0.03]])
    wrapped, t1, t2, arc = shortest_path(p, q, R, r)
    # through the middle of the hole; p inside the solid (OpenSim: no wrap); far from the tube; wrapped
    assert wrapped.tolist() == [False, False, False, True]
    assert np.allclose(t1[:3], (p[:3] + q[:3]) / 2) and np.allclose(t2[:3], (p[:3] + q[:3]) / 2) and (arc[:3] == 0).all()
    # enters_solid against dense sampling of F along random segments
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-0.07, 0.07, (2, 300, 3))
    sampled = (implicit(a[:, None] + np.linspace(0, 1, 4001)[None, :, None] * (b - a)[:, None]) < 0).any(axis=1)
    assert (enters_solid(a, b, R, r) == sampled).mean() > 0.99 and sampled.sum() > 50


def test_opensim_ring_point_and_quadrant():
    # a segment in the meridian plane at azimuth 0.8: OpenSim's ring point is on that meridian
    phi = 0.8
    p = np.array([[0.045 * np.cos(phi), 0.045 * np.sin(phi), 0.02]])
    q = np.array([[0.043 * np.cos(phi), 0.043 * np.sin(phi), -0.03]])
    found, c = opensim_ring_point(p, q, R)
    assert found.all() and np.abs(c - [[R * np.cos(phi), R * np.sin(phi), 0.0]]).max() < 1e-12
    # quadrant -x: the ring point must be on the side x < 0, and both of OpenSim's candidates are at x > 0
    assert not opensim_ring_point(p, q, R, "-x")[0][0]
    assert not shortest_path(p, q, R, r, "-x")[0][0] and shortest_path(p, q, R, r, "+y")[0][0]


def test_shape_problems():
    assert surface_problems(WrapTorus(name="t", body="b", inner_radius=0.01, outer_radius=0.05)) == []
    problems = surface_problems(WrapTorus(name="t", body="b", inner_radius=0.05, outer_radius=0.05))
    assert problems == ["wrap object `t`: `outer_radius` must be greater than `inner_radius` (m), got 0.05 ≤ 0.05"]
    assert "`inner_radius` must be a finite number > 0" in surface_problems(
        WrapTorus(name="t", body="b", inner_radius=-1.0, outer_radius=0.05))[0]
    with pytest.raises(ValueError, match="`outer_radius` must be greater than `inner_radius`"):
        shortest_path([0, 0, 1], [0, 0, -1], 0.01, 0.02)
    with pytest.raises(TypeError, match="`p` must be real"):  # (a complex step is not supported)
        WrapTorus(name="t", body="b", inner_radius=0.01, outer_radius=0.05).solve([0.045 + 1e-30j, 0, 0.03],
                                                                                  [0.045, 0, -0.03])


# ----------------------------------------------------------------------------- moment arms
def torus_model():
    """Two links (about ground's z, then the upper link's y) with a torus on the upper link, turned,
    and a path from ground through its hole to the lower link (wraps at most poses, not at all)."""
    b = ModelBuilder().add_coordinate("q1").add_coordinate("q2")
    b.add_body("upper", axis=(0, 0, 1), variable="q1", mass=1.0)
    b.add_body("lower", parent="upper", axis=(0, 1, 0), variable="q2", mass=1.0, offset=(0.2, 0, 0))
    torus = WrapTorus(name="ring", body="upper", translation=(0.1, 0.0, 0.0), xyz_body_rotation=(0.1, np.pi / 2 + 0.2, 0.3),
                      inner_radius=0.01, outer_radius=0.05)
    b.add_muscle("through", [("ground", (0.04, 0.005, -0.044)), ("lower", (-0.04, 0.003, -0.046))], wraps=[PathWrap(torus)])
    return b.build()


def test_moment_arms_against_differences_at_random_poses():
    model = torus_model()
    rng = np.random.default_rng(3)
    q = rng.uniform([-1.0, -0.6], [1.0, 0.6], (240, 2))
    R_ = model.moment_arms(q)[:, :, 0]
    wrapped = model.muscle_set.path_points(model.kinematics(q, 0)).wrapped[:, 0]
    assert 0.3 < wrapped.mean() < 0.95
    h = 2e-5
    checked = 0
    for k in range(2):
        e = np.eye(2)[k]
        L = [model.muscle_lengths(q + s * h * e)[:, 0] for s in (-2, -1, 1, 2)]
        central, wide = (L[2] - L[1]) / (2 * h), (L[3] - L[0]) / (4 * h)
        difference = (4 * central - wide) / 3  # Richardson: O(h⁴)
        # a stencil across a switch of OpenSim's decision (L jumps or kinks there) shows as a jump in the differences
        smooth = np.abs(wide - central) < 1e-6
        assert np.abs(-difference - R_[:, k])[smooth].max() < 1e-9
        assert (smooth & wrapped).sum() > 0.25 * len(q)
        checked += smooth.sum()
    assert checked > 400


# ---------------------------------------------------------------------- model files and .osim
def test_model_file_round_trip_and_errors():
    model = torus_model()
    text = dump_model(model)
    assert re.search(r'\[wraps\.ring\]\nkind = "torus"\n.*inner_radius = 0\.01\nouter_radius = 0\.05', text, re.S)
    q = np.random.default_rng(4).uniform(-0.5, 0.5, (20, 2))
    assert np.abs(parse_model_file(text).model.muscle_lengths(q) - model.muscle_lengths(q)).max() == 0.0
    with pytest.raises(ModelError, match=r"wraps\.ring: `outer_radius` must be greater than `inner_radius`"):
        parse_model_file(text.replace("outer_radius = 0.05", "outer_radius = 0.005"))


def test_osim_import(tmp_path):
    text = gzip.decompress((DATA / "osim" / "arm26.osim.gz").read_bytes()).decode()
    element = re.search(r'<WrapEllipsoid name="TRIlonghh">.*?</WrapEllipsoid>', text, re.S).group(0)
    torus = re.sub(r"<dimensions>[^<]*</dimensions>", "<inner_radius>0.012</inner_radius><outer_radius>0.04</outer_radius>",
                   element.replace("WrapEllipsoid", "WrapTorus"))
    path = tmp_path / "arm26.osim"
    path.write_text(text.replace(element, torus))
    surfaces = {s.name: s for p in mbkron.load_model(path).muscle_set.paths for s in (w.surface for w in p.wraps)}
    assert surfaces["TRIlonghh"] == WrapTorus(name="TRIlonghh", body="r_humerus", inner_radius=0.012, outer_radius=0.04,
                                              translation=(-0.0078, -0.0041, -0.0014), quadrant="z",
                                              xyz_body_rotation=(3.00162, -0.853466, 2.57419))
    path.write_text(text.replace(element, torus.replace("<outer_radius>0.04", "<outer_radius>0.01")))
    with pytest.raises(ModelError, match="TRIlonghh.*`outer_radius` must be greater than `inner_radius`"):
        mbkron.load_model(path)


# --------------------------------------------------------------------------------- OpenSim
def opensim_rows():
    with gzip.open(DATA / "wrap_torus_opensim.csv.gz", "rt") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    cases = {}
    for row in rows:
        cases.setdefault(row["case"], []).append(row)
    return cases


def test_against_opensim():
    """OpenSim 4.6's decisions are reproduced at every state; its lengths are those of its cylinder's
    helix at its ring point (to its 1° tangent tolerance) and are shorter than the torus's shortest path
    because that helix cuts into the torus (docs/wrapping.md, "Tori")."""
    for case, rows in opensim_rows().items():
        p = np.array([[float(row[k]) for k in ("px", "py", "pz")] for row in rows])
        q = np.array([[float(row[k]) for k in ("qx", "qy", "qz")] for row in rows])
        inner, outer, quadrant = float(rows[0]["inner_radius"]), float(rows[0]["outer_radius"]), rows[0]["quadrant"]
        opensim = np.array([float(row["opensim_length"]) for row in rows])
        straight = np.linalg.norm(q - p, axis=-1)
        result = shortest_path(p, q, outer, inner, quadrant)
        ours = length(p, q, result)
        wrapped = result[0]
        assert (wrapped == (opensim > straight + 1e-9)).all(), case
        assert wrapped.sum() > 50
        assert np.abs(ours - opensim)[~wrapped].max(initial=0.0) < 1e-12
        difference = (ours - opensim)[wrapped]
        assert difference.min() > -1e-8 and difference.max() < 0.25e-3, case
        # OpenSim's length: the exact helix over its cylinder at its ring point, to within 0.04 mm
        found, c = opensim_ring_point(p[wrapped], q[wrapped], outer, quadrant)
        x = -c / outer
        frames = np.stack([x, np.broadcast_to([0.0, 0.0, -1.0], x.shape), np.cross(x, [0.0, 0.0, -1.0])], axis=1)
        pc, qc = (np.einsum("mij,mj->mi", frames, points[wrapped] - c) for points in (p, q))
        cylinder = WrapCylinder(name="c", body="b", radius=inner, length=1e4, quadrant="+x")
        helix = cylinder.solve(pc, qc)
        assert helix[0].all()
        assert np.abs(length(pc, qc, helix) - opensim[wrapped]).max() < 0.04e-3, case
