"""The shortest path over an ellipsoid (mbkron.multibody.muscles.wrap_ellipsoid, solved by the compiled kernel
mbkron.numerics.geodesics.ellipsoid) against independent computations.

Closed forms: the sphere (a great circle), a principal section of a triaxial ellipsoid and a meridian of a
prolate spheroid (planar ellipse arcs: tangent points by root finding in the plane, arc lengths by
``scipy.special.ellipeinc`` and by ``quad``); the conditions of a shortest path (tangency, no kink and
the geodesic equation against an independent Cartesian integration by scipy, shorter than perturbed
surface paths and than a Fourier-parametrised direct minimisation), over random segments with quadrants;
the no-contact case, quadrants, continuity and C¹ through engagement; a failure near the surface; OpenSim
4.6's lengths (``tests/data/wrap_ellipsoid_opensim.csv``, ``validation/opensim/compare_wrap_ellipsoid.py``).
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq, minimize
from scipy.special import ellipeinc

from mbkron.jit.common import AVAILABLE
from mbkron.core.errors import ConfigurationError
from mbkron.multibody.muscles.wrap_ellipsoid import WrapEllipsoid, shortest_path
from mbkron.multibody.muscles.wrapping import parse_quadrant, surface_problems
from tests.geodesics import implicit_geodesic

DATA = Path(__file__).parent / "data" / "wrap_ellipsoid_opensim.csv.gz"


def path_length(p, q, result):
    wrapped, t1, t2, arc = result
    return np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1)


def sphere_length(p, q, r):
    """Tangent lengths plus the great-circle arc: the angle between p and q less the two tangent angles."""
    dp, dq = np.linalg.norm(p), np.linalg.norm(q)
    angle = np.arccos(np.dot(p, q) / (dp * dq))
    return np.sqrt(dp**2 - r**2) + np.sqrt(dq**2 - r**2) + r * (angle - np.arccos(r / dp) - np.arccos(r / dq))


def ellipse_path(p, q, a, b, arc_length):
    """The shortest path from p to q (2-d) around the ellipse x = a cos t, y = b sin t.

    Tangent parameters by brentq on the cross product of (e(t) - point) and e'(t); of the tangent pairs
    and both directions of travel, those where the straight segments continue the ellipse's direction
    of travel; the arc by ``arc_length(t1, t2)`` (t1 < t2, counter-clockwise)."""
    def e(t):
        return np.array([a * np.cos(t), b * np.sin(t)])

    def de(t):
        return np.array([-a * np.sin(t), b * np.cos(t)])

    def tangents(point):
        def f(t):
            d, tangent = e(t) - point, de(t)
            return d[0] * tangent[1] - d[1] * tangent[0]

        grid = np.linspace(0, 2 * np.pi, 721)
        values = [f(t) for t in grid]
        return [brentq(f, grid[i], grid[i + 1], xtol=1e-15) for i in range(720) if values[i] * values[i + 1] < 0]

    best = np.inf
    for t1 in tangents(p):
        for t2 in tangents(q):
            for direction in (1, -1):
                if np.dot(e(t1) - p, direction * de(t1)) <= 0 or np.dot(q - e(t2), direction * de(t2)) <= 0:
                    continue
                lo, hi = (t1, t2) if direction == 1 else (t2, t1)
                hi = hi if hi > lo else hi + 2 * np.pi
                length = np.linalg.norm(e(t1) - p) + arc_length(lo, hi) + np.linalg.norm(q - e(t2))
                best = min(best, length)
    return best


def test_sphere_symmetric_closed_form():
    # p and q at distance d from the centre, γ apart: L = 2√(d² − r²) + r(γ − 2 arccos(r/d))
    r, d = 0.03, 0.09
    for gamma in (2.5, 3.0, 3.1):
        p = np.array([d, 0.0, 0.0])
        q = d * np.array([np.cos(gamma), np.sin(gamma), 0.0])
        result = shortest_path(p, q, [r, r, r])
        assert result[0]
        expected = 2 * np.sqrt(d**2 - r**2) + r * (gamma - 2 * np.arccos(r / d))
        assert path_length(p, q, result) == pytest.approx(expected, abs=1e-13)


def test_sphere_random_great_circles():
    rng = np.random.default_rng(3)
    r = 0.025
    p = rng.normal(size=(80, 3)) * 0.06
    q = -p + rng.normal(size=(80, 3)) * 0.02
    keep = (np.linalg.norm(p, axis=1) > 1.05 * r) & (np.linalg.norm(q, axis=1) > 1.05 * r)
    p, q = p[keep], q[keep]
    result = shortest_path(p, q, [r, r, r])
    wrapped = result[0]
    assert wrapped.sum() > 20
    lengths = path_length(p, q, result)
    for i in np.flatnonzero(wrapped):
        assert lengths[i] == pytest.approx(sphere_length(p[i], q[i], r), abs=1e-12)
    assert np.allclose(lengths[~wrapped], np.linalg.norm(q - p, axis=1)[~wrapped], rtol=0, atol=1e-15)


@pytest.mark.parametrize("points", [([0.07, 0.01], [-0.06, 0.03]), ([0.01, 0.08], [-0.02, -0.07]),
                                    ([0.05, 0.05], [-0.03, -0.06])])
def test_principal_section_is_an_ellipse_arc(points):
    # points in the z = 0 plane; the z semi-axis the largest, so the path stays in the plane
    a = np.array([0.03, 0.045, 0.06])
    p, q = (np.array([*xy, 0.0]) for xy in points)
    result = shortest_path(p, q, a)
    assert result[0]
    assert abs(result[1][2]) < 1e-15 and abs(result[2][2]) < 1e-15
    # x = a₀ cos t, y = a₁ sin t with a₀ < a₁: ds = a₁ √(1 − m sin² t) dt, m = 1 − a₀²/a₁²
    m = 1 - (a[0] / a[1]) ** 2
    expected = ellipse_path(p[:2], q[:2], a[0], a[1],
                            lambda lo, hi: a[1] * (ellipeinc(hi, m) - ellipeinc(lo, m)))
    assert path_length(p, q, result) == pytest.approx(expected, abs=1e-12)


def test_prolate_spheroid_meridian():
    # spheroid about z; points in the meridian plane at azimuth 0.7 rad: the path is the meridian ellipse
    a = np.array([0.02, 0.02, 0.05])
    azimuth = 0.7
    radial = np.array([np.cos(azimuth), np.sin(azimuth), 0.0])
    z = np.array([0.0, 0.0, 1.0])
    p2, q2 = np.array([0.015, 0.07]), np.array([0.012, -0.06])  # the segment cuts the side: over the bulge
    p, q = p2[0] * radial + p2[1] * z, q2[0] * radial + q2[1] * z
    result = shortest_path(p, q, a)
    assert result[0]
    normal = np.cross(radial, z)
    assert abs(result[1] @ normal) < 1e-14 and abs(result[2] @ normal) < 1e-14
    expected = ellipse_path(p2, q2, a[0], a[2],
                            lambda lo, hi: quad(lambda t: np.hypot(a[0] * np.sin(t), a[2] * np.cos(t)), lo, hi,
                                                epsabs=1e-14, epsrel=1e-13, limit=200)[0])
    assert path_length(p, q, result) == pytest.approx(expected, abs=1e-12)


def random_wrapping_pairs(a, count, seed):
    """``count`` pairs of points outside the ellipsoid whose segment passes through it."""
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(4 * count, 3))
    p *= (rng.uniform(1.3, 3.0, 4 * count) / np.linalg.norm(p / a, axis=1))[:, None]
    q = -p * rng.uniform(0.5, 1.5, (4 * count, 1)) + rng.normal(size=(4 * count, 3)) * a * 0.5
    t = np.linspace(0, 1, 2001)[:, None, None]
    inside = np.sum(((p + t * (q - p)) / a) ** 2, axis=-1).min(axis=0) < 0.99
    outside = (np.sum((p / a) ** 2, axis=1) > 1) & (np.sum((q / a) ** 2, axis=1) > 1)
    keep = np.flatnonzero(inside & outside)[:count]
    return p[keep], q[keep]


A_TRIAXIAL = np.array([0.035, 0.02, 0.025])


def geodesic(start, direction, arc, a, samples=None):
    """The ellipsoid's geodesic (``F = xᵀ A x − 1``, ``A = diag(a)⁻²``) from ``start`` along ``direction``
    (:func:`tests.geodesics.implicit_geodesic`): points and unit tangents at ``samples`` (default the end)."""
    inverse_squares = 1.0 / np.asarray(a, dtype=float) ** 2
    return implicit_geodesic(lambda x: 2 * inverse_squares * x, lambda x: np.diag(2 * inverse_squares), start,
                             direction, arc, samples)


def horizon(point, a, angle):
    """The point at ``angle`` of the horizon of ``point`` (where the lines from it touch the ellipsoid): in
    ``y = x / a`` the unit sphere's circle of centre ``P/|P|²`` and radius ``√(1 − 1/|P|²)`` normal to ``P``."""
    P = point / a
    e1 = unit(np.cross(P, np.eye(3)[np.argmin(np.abs(P))]))
    e2 = np.cross(unit(P), e1)
    return (P / (P @ P) + np.sqrt(1 - 1 / (P @ P)) * (np.cos(angle) * e1 + np.sin(angle) * e2)) * a, e1, e2


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def assert_taut(p, q, a, result, end=1e-10, direction=1e-8, tangency=(1e-12, 1e-10)):
    """The wrapped paths of ``result`` are taut: the tangent points on the surface (their distances
    ``|F|/|∇F|``: ``t1`` to 1e-14 m, on the horizon by construction; ``t2``, the integration's end, to 1e-13 m,
    its truncation error), the straight pieces in the tangent planes (cosines below ``tangency`` at ``t1``,
    ``t2``: ``t2``'s residual is a distance of ``q`` from the tangent plane, up to 1e-13 m, and ``|q − t2|`` can
    be mm) and the surface's geodesic leaving ``t1`` along ``p → t1`` reaches ``t2`` after ``arc`` (within
    ``end`` m) along ``t2 → q`` (within ``direction``): no kink. (scipy's integration is good to about 1e-11 m
    over these arcs of a few cm.)"""
    wrapped, t1, t2, arc = result
    for t, other, on, tangent in ((t1, p, 1e-14, tangency[0]), (t2, q, 1e-13, tangency[1])):
        gradient = 2 * t[wrapped] / a**2
        assert (np.abs(np.sum((t[wrapped] / a) ** 2, axis=-1) - 1) / np.linalg.norm(gradient, axis=-1)).max() < on
        normal = unit(gradient)
        assert np.abs(np.sum(unit(other[wrapped] - t[wrapped]) * normal, axis=-1)).max() < tangent
    for k in np.flatnonzero(wrapped):
        ends, tangents = geodesic(t1[k], unit(t1[k] - p[k]), arc[k], a)
        assert np.abs(ends[-1] - t2[k]).max() < end and np.abs(tangents[-1] - unit(q[k] - t2[k])).max() < direction


def test_tangency_no_kink_and_geodesic_equation():
    p, q = random_wrapping_pairs(A_TRIAXIAL, 12, 5)
    result = shortest_path(p, q, A_TRIAXIAL)
    assert result[0].all()
    assert_taut(p, q, A_TRIAXIAL, result)


def test_shorter_than_perturbed_surface_paths():
    p, q = random_wrapping_pairs(A_TRIAXIAL, 4, 6)
    wrapped, t1, t2, arc = shortest_path(p, q, A_TRIAXIAL)
    u1 = (t1 - p) / np.linalg.norm(t1 - p, axis=1, keepdims=True)
    steps = 400
    length = path_length(p, q, (wrapped, t1, t2, arc))
    tau = np.linspace(0, 1, steps + 1)
    rng = np.random.default_rng(7)
    for i in range(len(p)):
        points = geodesic(t1[i], u1[i], arc[i], A_TRIAXIAL, tau * arc[i])[0]
        assert np.abs(points[-1] - t2[i]).max() < 1e-10  # (the geodesic of the path)
        scaled = points / A_TRIAXIAL
        # the geodesic's own polyline (the same discretisation as the perturbed curves') has length L
        polyline = np.linalg.norm(np.diff(points, axis=0), axis=1).sum() - arc[i]
        for _ in range(6):  # a smooth bump, zero at the ends, in a random direction; back onto the surface
            bump = np.outer(np.sin(np.pi * tau) ** 2 * np.sin(np.pi * rng.integers(1, 4) * tau),
                            rng.normal(size=3)) * 1e-3
            curve = (scaled + bump) / np.linalg.norm(scaled + bump, axis=1, keepdims=True) * A_TRIAXIAL
            perturbed = (np.linalg.norm(t1[i] - p[i]) + np.linalg.norm(np.diff(curve, axis=0), axis=1).sum()
                         + np.linalg.norm(q[i] - t2[i]))
            assert perturbed - polyline > length[i]


def test_no_longer_than_a_direct_minimisation():
    # a feasible path: tangent points on the horizons (angles free) joined by a surface curve whose scaled
    # form is a chord plus a bulge plus 6 sine modes, normalised; minimised by BFGS over all parameters
    p, q = random_wrapping_pairs(A_TRIAXIAL, 2, 8)
    result = shortest_path(p, q, A_TRIAXIAL)
    lengths = path_length(p, q, result)
    nodes, weights = np.polynomial.legendre.leggauss(96)
    tau, weights = 0.5 * (nodes + 1), 0.5 * weights
    modes = np.arange(1, 7)
    sines, cosines = np.sin(np.pi * np.outer(tau, modes)), np.pi * modes * np.cos(np.pi * np.outer(tau, modes))
    for i in range(2):
        P, Q = p[i] / A_TRIAXIAL, q[i] / A_TRIAXIAL
        side = P - (P @ (Q - P)) / ((Q - P) @ (Q - P)) * (Q - P)
        side /= np.linalg.norm(side)

        def length(z):
            ends = [horizon(point, A_TRIAXIAL, angle)[0] for point, angle in ((p[i], z[0]), (q[i], z[1]))]
            c = z[2:].reshape(-1, 3)
            T1, T2 = ends[0] / A_TRIAXIAL, ends[1] / A_TRIAXIAL
            y = np.outer(1 - tau, T1) + np.outer(tau, T2) + np.outer(4 * tau * (1 - tau), 0.3 * side) + sines @ c
            dy = (T2 - T1) + np.outer(4 * (1 - 2 * tau), 0.3 * side) + cosines @ c
            norm = np.linalg.norm(y, axis=1, keepdims=True)
            unit = y / norm
            du = (dy - np.sum(unit * dy, axis=1, keepdims=True) * unit) / norm
            return (np.linalg.norm(ends[0] - p[i]) + weights @ np.linalg.norm(du * A_TRIAXIAL, axis=1)
                    + np.linalg.norm(q[i] - ends[1]))

        # from the horizons' points towards the scaled segment's point nearest the centre (``side``)
        start = [np.arctan2(side @ e2, side @ e1) for e1, e2 in (horizon(point, A_TRIAXIAL, 0.0)[1:] for point in (p[i], q[i]))]
        direct = minimize(length, np.r_[start, np.zeros(3 * len(modes))], method="BFGS",
                          options={"gtol": 1e-11}).fun
        assert lengths[i] <= direct
        assert direct - lengths[i] < 2e-6


def test_integration_converged():
    # an eccentric ellipsoid (largest normal curvature 178/m): the solver's equal-step integration reaches the
    # same t2 as scipy's adaptive one (to 1e-12 m: both converged, the solver's to its truncation error)
    a = np.array([0.04, 0.015, 0.02])
    p, q = random_wrapping_pairs(a, 8, 9)
    result = shortest_path(p, q, a)
    assert result[0].all()
    assert_taut(p, q, a, result, end=1e-12)


def test_no_contact_and_inside():
    a = [0.03, 0.02, 0.025]
    p = np.array([[0.05, 0.03, 0.0], [0.05, 0.0, 0.0], [0.01, 0.0, 0.0]])
    q = np.array([[-0.05, 0.03, 0.0], [0.06, 0.01, 0.0], [-0.05, 0.0, 0.0]])  # misses, misses, p inside
    wrapped, t1, t2, arc = shortest_path(p, q, a)
    assert not wrapped.any() and (arc == 0).all()
    assert np.array_equal(t1, (p + q) / 2) and np.array_equal(t2, (p + q) / 2)


def test_quadrant_sides():
    # a sphere, the segment passing the centre on the −x side: "all" and "-x" wrap the short way, "+x" the
    # long way round (as OpenSim, which flips its wrap plane's point to the active side)
    r = 0.03
    p, q = np.array([-0.01, 0.08, 0.0]), np.array([-0.01, -0.08, 0.0])
    dp = np.linalg.norm(p)
    angle = np.arccos(p @ q / dp**2)
    short = 2 * np.sqrt(dp**2 - r**2) + r * (angle - 2 * np.arccos(r / dp))
    long = 2 * np.sqrt(dp**2 - r**2) + r * (2 * np.pi - angle - 2 * np.arccos(r / dp))
    for quadrant, expected, side in (("all", short, -1), ("-x", short, -1), ("+x", long, 1), ("X", long, 1)):
        result = shortest_path(p, q, [r, r, r], quadrant)
        assert path_length(p, q, result) == pytest.approx(expected, abs=1e-12)
        middle = geodesic(result[1], unit(result[1] - p), result[3] / 2, [r, r, r])[0][-1]
        assert np.sign(middle[0]) == side
    # segments that miss do not wrap, whichever the quadrant
    assert not shortest_path(p + [0.05, 0, 0], q + [0.05, 0, 0], [r, r, r], "-x")[0]


def test_continuous_and_c1_through_engagement():
    # q moves along a line; the segment starts to touch the ellipsoid at s*: L is C¹ there
    a = A_TRIAXIAL
    p = np.array([0.06, 0.03, 0.01])

    def q_at(s):
        return np.array([-0.06, 0.05 - s, 0.02])

    def clearance(s):
        P, Q = p / a, q_at(s) / a
        D = Q - P
        t = np.clip(-(P @ D) / (D @ D), 0, 1)
        return np.linalg.norm(P + t * D) - 1

    engage = brentq(clearance, 0.0, 0.06, xtol=1e-16)
    h = 1e-6
    s = engage + h * np.arange(-3, 4)
    qs = np.array([q_at(v) for v in s])
    lengths = path_length(p, qs, shortest_path(np.broadcast_to(p, qs.shape), qs, a))
    left = (lengths[3] - lengths[2]) / h
    right = (lengths[4] - lengths[3]) / h
    assert abs(left - right) < 1e-4  # a kink would make them differ by O(1)
    # a sweep through engagement and deep contact: no jumps
    sweep = np.linspace(0.0, 0.1, 201)
    qs = np.array([q_at(v) for v in sweep])
    lengths = path_length(p, qs, shortest_path(np.broadcast_to(p, qs.shape), qs, a))
    assert np.abs(np.diff(lengths)).max() < 1.5 * (sweep[1] - sweep[0])


def test_contract_shapes_and_dataclass():
    wrap = WrapEllipsoid(name="hh", body="humerus", translation=(0.0, 0.01, 0), dimensions=(0.035, 0.02, 0.02),
                         quadrant="z")
    assert surface_problems(wrap) == []
    p = np.zeros((2, 3, 3)) + [0.0, 0.0, 0.05]
    q = np.zeros((2, 3, 3)) + [0.001, 0.0, -0.05]
    wrapped, t1, t2, arc = wrap.solve(p, q)
    assert wrapped.shape == (2, 3) and t1.shape == (2, 3, 3) and t2.shape == (2, 3, 3) and arc.shape == (2, 3)
    assert wrapped.all() and (t1[..., 2] > 0).all()


def test_problems_name_the_field():
    bad = WrapEllipsoid(name="e", body=3, translation=(0, float("nan"), 0), dimensions=(0.1, 0.0, 0.1),
                        quadrant="+w", active="yes")
    problems = surface_problems(bad)
    assert len(problems) == 5
    for field in ("`body`", "`translation`", "`dimensions`", "`quadrant`", "`active`"):
        assert any(field in message and "wrap object `e`" in message for message in problems), field
    with pytest.raises(ValueError, match="`dimensions`"):
        shortest_path([0.1, 0, 0], [-0.1, 0, 0], [0.1, -0.1, 0.1])
    with pytest.raises(ValueError, match="`quadrant`"):
        shortest_path([0.1, 0, 0], [-0.1, 0, 0], [0.1, 0.1, 0.1], "up")


#: A point 1.2e-14 m off the surface of A_TRIAXIAL (found by a search of random points 1e-16 to 1e-8 m off
#: it): its horizon shrinks to a circle of radius ~1e-7 m and round-off dominates the end conditions.
NEAR_SURFACE_P = (0.018900647635387402, 0.012779112155269091, 0.013695705229846578)
NEAR_SURFACE_Q = (-0.029386753664006764, -0.02665106066825553, -0.03454296159788919)


def test_failure_is_a_configuration_error():
    p, q = np.array(NEAR_SURFACE_P), np.array(NEAR_SURFACE_Q)
    assert np.sum((p / A_TRIAXIAL) ** 2) - 1 > 0  # outside (by round-off): the segment is to be wrapped
    message = (r"at 1 of 2 segments \(p=\[0\.0189.*wrap frame\) the shortest path over the ellipsoid with semi-axes "
               r"\[0\.035, 0\.02, 0\.025\] did not converge: Newton's method did not reach 1e-13 m in 30 iterations")
    with pytest.raises(ConfigurationError, match=message):
        shortest_path(np.stack([p, p * 1.01]), q, A_TRIAXIAL)
    assert shortest_path(p * 1.01, q, A_TRIAXIAL)[0]  # (the other segment alone: a path)


@pytest.mark.skipif(not DATA.exists(), reason="no stored OpenSim comparison")
def test_against_opensim():
    """OpenSim's path is a feasible path (≥ ours up to its 1 mm polyline's chords) and close to ours."""
    with gzip.open(DATA, "rt") as f:
        rows = [row for row in csv.DictReader(row for row in f if not row.startswith("#"))]
    by_case: dict[str, list] = {}
    for row in rows:
        by_case.setdefault(row["case"], []).append(row)
    for case, case_rows in by_case.items():
        if not case_rows[0]["max_difference"]:
            continue  # a quadrant sweep: recorded for docs/wrapping.md ("Ellipsoids"), wraps differ by design
        dims = np.array([float(case_rows[0][k]) for k in ("a0", "a1", "a2")])
        quadrant = case_rows[0]["quadrant"]
        p = np.array([[float(r[k]) for k in ("px", "py", "pz")] for r in case_rows])
        q = np.array([[float(r[k]) for k in ("qx", "qy", "qz")] for r in case_rows])
        opensim = np.array([float(r["opensim_length"]) for r in case_rows])
        continuous = np.array([r["opensim_continuous"] == "1" for r in case_rows])
        ours = path_length(p, q, shortest_path(p, q, dims, quadrant))
        # OpenSim's path is feasible, so not shorter than ours, but for its polyline's chords (1 mm apart)
        assert (ours - opensim).max() <= 1e-5, case
        assert np.abs(ours - opensim)[continuous].max() <= float(case_rows[0]["max_difference"]), case


# ------------------------------------------------------------------- random segments, robustness
# (the robustness study of docs/wrapping.md, "Compiled solver and robustness")

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")
A_ARM26 = np.array([0.035, 0.02, 0.02])  # arm26's TRIlonghh


@pytest.mark.parametrize(("a", "quadrant", "count", "seed"),
                         [(A_TRIAXIAL, "all", 110, 21), (A_ARM26, "z", 50, 23), (A_TRIAXIAL, "-y", 40, 24)])
def test_random_segments(a, quadrant, count, seed):
    """Random segments through the ellipsoid all wrap, on taut paths (:func:`assert_taut`, on 12 of them);
    with a quadrant, the unconstrained path where one of its tangent points is on the quadrant's side, else
    the long way round: a taut path with a tangent point on that side, longer; segments that miss it or
    start inside do not wrap."""
    axis, sign = parse_quadrant(quadrant)
    p, q = random_wrapping_pairs(a, count, seed)
    result, free = shortest_path(p, q, a, quadrant), shortest_path(p, q, a)
    assert result[0].all() and len(p) == count
    some = slice(0, count, count // 12)
    assert_taut(p[some], q[some], a, tuple(x[some] for x in result))
    if sign:
        allowed = np.maximum(sign * free[1][:, axis], sign * free[2][:, axis]) >= 0
        assert 0 < allowed.sum() < count
        for x, y in zip(result[1:], free[1:]):
            assert np.array_equal(x[allowed], y[allowed])
        long = ~allowed
        assert_taut(p[long], q[long], a, tuple(x[long] for x in result))
        assert (np.maximum(sign * result[1][long, axis], sign * result[2][long, axis]) > 0).all()
        assert (path_length(p, q, result) > path_length(p, q, free))[long].all()
    # (and as many that miss or start inside)
    miss, inside = (2 * p, 3 * p), (0.3 * p, q)
    for ends in (miss, inside):
        wrapped, t1, t2, arc = shortest_path(*ends, a, quadrant)
        middle = (ends[0] + ends[1]) / 2
        assert not wrapped.any() and (arc == 0).all() and np.array_equal(t1, middle) and np.array_equal(t2, middle)


@needs_numba
def test_robust_eccentric_ellipsoids():
    # 10:1 and 10:5:1: principal sections (the largest semi-axis out of the plane) are planar ellipse arcs
    for a, points in ((np.array([0.01, 0.1, 0.1]), ([0.03, 0.05], [-0.02, 0.03])),
                      (np.array([0.05, 0.005, 0.05]), ([0.02, 0.03], [0.01, -0.04])),
                      (np.array([0.05, 0.01, 0.1]), ([0.06, 0.02], [-0.055, -0.01]))):
        p, q = (np.array([*xy, 0.0]) for xy in points)
        m = 1 - (min(a[:2]) / max(a[:2])) ** 2
        if a[0] < a[1]:  # x = a₀ cos t, y = a₁ sin t: ds = a₁ √(1 − m sin² t) dt
            arc = lambda lo, hi: a[1] * (ellipeinc(hi, m) - ellipeinc(lo, m))  # noqa: E731
        else:  # ds = a₀ √(1 − m cos² t) dt = a₀ √(1 − m sin² (t − π/2)) dt
            arc = lambda lo, hi: a[0] * (ellipeinc(hi - np.pi / 2, m) - ellipeinc(lo - np.pi / 2, m))  # noqa: E731
        expected = ellipse_path(p[:2], q[:2], a[0], a[1], arc)
        result = shortest_path(p, q, a)
        assert result[0]
        assert path_length(p, q, result) == pytest.approx(expected, abs=1e-12)


@needs_numba
def test_robust_end_points_near_the_surface():
    # a sphere (closed form) and arm26's ellipsoid (taut paths) with p 1e-6·min(a) off the surface
    r = 0.02
    direction = np.array([0.6, 0.0, 0.8])
    p = direction * r * (1 + 1e-6)
    qs = np.array([[-0.05, 0.01, -0.03], [-0.02, 0.04, -0.01], [0.0, -0.03, -0.05]])
    result = shortest_path(np.broadcast_to(p, qs.shape), qs, [r, r, r])
    assert result[0].all()
    for i, q in enumerate(qs):
        assert path_length(p, q, result)[i] == pytest.approx(sphere_length(p, q, r), abs=1e-12)
    rng = np.random.default_rng(41)
    u = rng.normal(size=(12, 3))
    surface = u / np.linalg.norm(u / A_ARM26, axis=1, keepdims=True)
    normal = surface / A_ARM26**2
    p = surface + 1e-6 * A_ARM26.min() * normal / np.linalg.norm(normal, axis=1, keepdims=True)
    q = -surface * 2.0 + rng.normal(size=(12, 3)) * 0.005
    ours = shortest_path(p, q, A_ARM26)
    assert ours[0].sum() >= 10
    assert_taut(p, q, A_ARM26, ours)


@needs_numba
def test_robust_near_engagement():
    # the segment moved through first contact: wrapped from 1e-9 past it, and L − |q − p| → 0 as depth^(3/2)
    a = A_ARM26
    p = np.array([0.06, 0.01, 0.03])
    q0 = np.array([-0.06, 0.01, 0.03])
    direction = np.array([0.0, 0.0, -1.0])

    def clearance(s):
        P, Q = p / a, (q0 + s * direction) / a
        D = Q - P
        return np.linalg.norm(P - (P @ D) / (D @ D) * D) - 1

    engage = brentq(clearance, 0.0, 0.06, xtol=1e-17)
    depths = np.array([-1e-9, 1e-9, 1e-7, 1e-5])
    qs = q0 + (engage + depths)[:, None] * direction
    ours = shortest_path(np.broadcast_to(p, qs.shape), qs, a)
    assert np.array_equal(ours[0], [False, True, True, True])
    extra = path_length(p, qs, ours) - np.linalg.norm(qs - p, axis=1)
    assert extra[0] == 0 and np.all(extra[1:] >= 0) and extra[1] < 1e-12 and extra[3] < 1e-6


@needs_numba
def test_robust_near_antipodal_points():
    # two nearly equal ways round a principal section (the z semi-axis the largest): the shorter is taken,
    # on either side of the symmetric configuration
    a = np.array([0.03, 0.02, 0.04])
    m = 1 - (a[1] / a[0]) ** 2
    arc = lambda lo, hi: a[0] * (ellipeinc(hi - np.pi / 2, m) - ellipeinc(lo - np.pi / 2, m))  # noqa: E731
    for offset in (-1e-6, 1e-6, 1e-3):
        p, q = np.array([0.0, 0.05, 0.0]), np.array([offset, -0.05, 0.0])
        result = shortest_path(p, q, a)
        assert path_length(p, q, result) == pytest.approx(ellipse_path(p[:2], q[:2], a[0], a[1], arc), abs=1e-12)
        middle = 0.5 * (result[1] + result[2])  # on the shorter side: that of the segment (x of the sign of offset)
        assert np.sign(middle[0]) == np.sign(offset)
