"""Wrapping surfaces (sphere, cylinder): closed-form lengths, tangency, minimality, OpenSim's quadrant
rules, and exact moment arms against finite differences of the length and the literal Eq. 195
(:mod:`mbkron.reference`; incl. poses within 1e-6 of engagement)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbkron import reference
from mbkron.jit.common import AVAILABLE
from mbkron.core.errors import ModelError
from mbkron.algorithms.jointvars.explicit import JointVariableProvider, JointVariables
from mbkron.model.builder import ModelBuilder
from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder, WrapSphere, body_fixed_xyz, parse_quadrant

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


def half_wrap(d: float, r: float) -> float:
    """A string from (−d, 0) to (d, 0) over a circle of radius r at the origin: two tangents of
    length √(d² − r²) and the arc between the tangent points, at angles ±(π/2 − arccos(r/d)) from the
    top: r(π − 2 arccos(r/d))."""
    return 2 * math.sqrt(d * d - r * r) + r * (math.pi - 2 * math.acos(r / d))


def total(p, q, wrapped, t1, t2, arc):
    return np.where(wrapped, np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1),
                    np.linalg.norm(q - p, axis=-1))


#: A complex step's imaginary part (refused by the model).
COMPLEX_STEP = 1e-30


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# ----------------------------------------------------------------------------------- surfaces
def test_cylinder_half_wrap_and_helix_lengths():
    cylinder = WrapCylinder(name="c", body="ground", radius=0.3, length=10.0)
    p, q = np.array([-1.0, -1e-9, 0.0]), np.array([1.0, -1e-9, 0.0])
    wrapped, t1, t2, arc = cylinder.solve(p, q)
    assert wrapped and total(p, q, wrapped, t1, t2, arc) == pytest.approx(half_wrap(1.0, 0.3), abs=1e-8)
    # rising by h along the axis: the unrolled path is a straight line, L = √(ℓ² + h²)
    p[2], q[2] = -0.2, 0.5
    wrapped, t1, t2, arc = cylinder.solve(p, q)
    assert total(p, q, wrapped, t1, t2, arc) == pytest.approx(math.hypot(half_wrap(1.0, 0.3), 0.7), abs=1e-8)
    # the tangent points' heights are proportional to the unrolled length
    lp = math.sqrt(1 - 0.09)
    assert t1[2] == pytest.approx(-0.2 + 0.7 * lp / half_wrap(1.0, 0.3), abs=1e-8)  # (the 1e-9 offset of y)


def test_sphere_half_wrap_out_of_plane():
    sphere = WrapSphere(name="s", body="ground", radius=0.5)
    rotation = body_fixed_xyz([0.3, -1.1, 2.0])  # the same string turned into a general plane
    p, q = rotation @ [-2.0, 1e-9, 0.0], rotation @ [2.0, 1e-9, 0.0]
    wrapped, t1, t2, arc = sphere.solve(p, q)
    assert wrapped and total(p, q, wrapped, t1, t2, arc) == pytest.approx(half_wrap(2.0, 0.5), abs=1e-8)  # 1e-9 off
    assert np.linalg.norm(t1) == pytest.approx(0.5, abs=1e-14)


@pytest.mark.parametrize("surface", [WrapCylinder(name="c", body="ground", radius=0.05, length=1.0),
                                     WrapSphere(name="s", body="ground", radius=0.05)])
def test_tangency_smoothness_and_minimality(surface):
    rng = np.random.default_rng(4)
    p = rng.normal(size=(400, 3)) * 0.1
    q = -p + rng.normal(size=(400, 3)) * 0.02
    wrapped, t1, t2, arc = surface.solve(p, q)
    assert wrapped.sum() > 100
    p, q, t1, t2, arc = p[wrapped], q[wrapped], t1[wrapped], t2[wrapped], arc[wrapped]
    cylinder = isinstance(surface, WrapCylinder)
    normal1 = t1 * ([1, 1, 0] if cylinder else 1) / 0.05
    normal2 = t2 * ([1, 1, 0] if cylinder else 1) / 0.05
    assert np.allclose(np.linalg.norm(normal1, axis=-1), 1.0, atol=1e-12)  # on the surface
    u1 = (t1 - p) / np.linalg.norm(t1 - p, axis=-1, keepdims=True)
    u2 = (q - t2) / np.linalg.norm(q - t2, axis=-1, keepdims=True)
    assert np.abs(np.sum(u1 * normal1, axis=-1)).max() < 1e-12  # tangent
    assert np.abs(np.sum(u2 * normal2, axis=-1)).max() < 1e-12
    # no kink: the geodesic leaves t1 along u1 and reaches t2 along u2 (the path's direction of the
    # chord t1 → t2 on a geodesic: the surface-tangent direction towards t2)
    if cylinder:
        # helix: constant angle with the axis, equal to that of u1 and of u2
        assert np.allclose(u1[:, 2], u2[:, 2], atol=1e-12)
        rise = (t2[:, 2] - t1[:, 2]) / arc
        assert np.allclose(rise, u1[:, 2], atol=1e-12)
    else:
        # great circle: u1 lies in the plane of t1, t2 and the centre
        plane = np.cross(t1, t2)
        assert np.abs(np.sum(u1 * plane, axis=-1)).max() < 1e-12 * 0.05**2 * 10
    # minimality: moving the tangent points on the surface without the straight pieces entering it
    # (axially on the cylinder; back along the great circle, lengthening the arc, on the sphere) lengthens the path
    L = total(p, q, np.ones(len(p), bool), t1, t2, arc)
    for step in (1e-3, -1e-3):
        if cylinder:
            s1, s2 = t1 + [0.0, 0.0, step], t2 - [0.0, 0.0, step]
            turn = np.abs(np.arctan2(s1[:, 0] * s2[:, 1] - s1[:, 1] * s2[:, 0], np.sum(s1[:, :2] * s2[:, :2], -1)))
            geodesic = np.hypot(0.05 * turn, s2[:, 2] - s1[:, 2])
        else:
            axis = np.cross(t1, t2)
            axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
            back = -abs(step)
            s1 = t1 * math.cos(back) + np.cross(axis, t1) * math.sin(back)
            s2 = t2 * math.cos(back) - np.cross(axis, t2) * math.sin(back)
            geodesic = 0.05 * np.arctan2(np.linalg.norm(np.cross(s1, s2), axis=-1), np.sum(s1 * s2, -1))
        perturbed = np.linalg.norm(s1 - p, axis=-1) + geodesic + np.linalg.norm(q - s2, axis=-1)
        assert np.all(perturbed > L)


def test_no_contact_inside_and_finite_cylinder():
    cylinder = WrapCylinder(name="c", body="ground", radius=0.1, length=0.2)
    points = np.array([[-1.0, 0.2, 0.0], [-1.0, 0.0, 0.0], [-0.05, 0.0, 0.0], [-1.0, 0.0, 1.0]])
    ends = np.array([[1.0, 0.2, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    wrapped, *_ = cylinder.solve(points, ends)
    # misses, wraps, starts inside, passes beyond the cylinder's length (both tangent points at z = 1)
    assert wrapped.tolist() == [False, True, False, False]
    sphere = WrapSphere(name="s", body="ground", radius=0.1)
    wrapped, *_ = sphere.solve(points, ends)
    assert wrapped.tolist() == [False, True, False, False]


def test_quadrant_rules_of_the_cylinder():
    plus_y = WrapCylinder(name="c", body="ground", radius=0.1, length=1.0, quadrant="+y")
    # both points below (not on the constrained side) and the line misses below: OpenSim wraps round +y
    p, q = np.array([-1.0, -0.3, 0.0]), np.array([1.0, -0.3, 0.0])
    wrapped, t1, t2, arc = plus_y.solve(p, q)
    swept = 2 * math.pi - 2 * math.atan2(1.0, 0.3)  # from (−1, −0.3) over the top to (1, −0.3)
    assert wrapped and t1[1] > 0 and t2[1] > 0
    assert arc == pytest.approx(0.1 * (swept - 2 * math.acos(0.1 / math.hypot(1.0, 0.3))), abs=1e-14)
    # both above, the line misses above: no wrap
    wrapped, *_ = plus_y.solve(-p, -q)
    assert not wrapped
    # the line crosses the cylinder: wraps over the top whatever the short side
    p, q = np.array([-1.0, -0.01, 0.0]), np.array([1.0, -0.01, 0.0])
    wrapped, t1, t2, arc = plus_y.solve(p, q)
    free = WrapCylinder(name="c", body="ground", radius=0.1, length=1.0).solve(p, q)
    assert wrapped and t1[1] > 0 and free[1][1] < 0 and arc > free[3]
    # one point on each side, the line passes the cylinder on the -y side: the path must go round +y
    wrapped, t1, t2, arc = plus_y.solve(np.array([-1.0, 0.5, 0.0]), np.array([1.0, -0.8, 0.0]))
    assert wrapped and t1[1] > 0
    assert parse_quadrant("-x") == (0, -1) and parse_quadrant("y") == (1, 1) and parse_quadrant("all") == (0, 0)
    with pytest.raises(ValueError, match="`quadrant` must be one of"):
        parse_quadrant("north")


def test_quadrant_of_the_sphere_takes_the_long_arc_when_told():
    sphere = WrapSphere(name="s", body="ground", radius=0.1, quadrant="+y")
    p, q = np.array([-1.0, -0.01, 0.0]), np.array([1.0, -0.02, 0.0])
    wrapped, t1, t2, arc = sphere.solve(p, q)
    assert wrapped and t1[1] > 0 and t2[1] > 0
    free = WrapSphere(name="s", body="ground", radius=0.1).solve(p, q)
    assert free[3] < arc and free[1][1] < 0


# ----------------------------------------------------------------------------------- paths
def arm_model():
    """Two links (shoulder about z, elbow about the upper link's y) with a cylinder on the upper link
    and a sphere on the lower one: a one-wrap, a two-wrap (cylinder then sphere, over 3 points) and a
    ranged path."""
    return arm_builder()[0].build()


def arm_builder() -> tuple:
    """:func:`arm_model`'s builder, and its cylinder (for models that add paths)."""
    b = ModelBuilder().add_coordinate("q1").add_coordinate("q2")
    b.add_body("upper", axis=(0, 0, 1), variable="q1", mass=1.0)
    b.add_body("lower", parent="upper", axis=(0, 1, 0), variable="q2", mass=1.0, offset=(0.3, 0, 0))
    cylinder = WrapCylinder(name="elbow", body="upper", translation=(0.3, 0.0, 0.0), xyz_body_rotation=(0.1, 0.2, 0.3),
                            radius=0.03, length=2.0)
    sphere = WrapSphere(name="ball", body="lower", translation=(0.1, 0.0, 0.01), radius=0.02)
    b.add_muscle("one", [("upper", (0.1, 0.02, 0.04)), ("lower", (0.25, 0.01, 0.05))], wraps=[PathWrap(cylinder)])
    b.add_muscle("two", [("ground", (0.0, 0.05, 0.05)), ("upper", (0.2, 0.0, 0.03)), ("lower", (0.25, -0.01, 0.0))],
                 wraps=[PathWrap(cylinder), PathWrap(sphere)])
    b.add_muscle("ranged", [("ground", (0.0, 0.05, 0.05)), ("upper", (0.2, 0.0, 0.03)), ("lower", (0.25, -0.01, 0.0))],
                 wraps=[PathWrap(cylinder, (2, 3))])
    return b, cylinder


def richardson(f, q, direction, h=1e-4):
    """Central differences of ``f`` along ``direction``, Richardson-extrapolated (O(h⁴))."""
    d1 = (f(q + h * direction) - f(q - h * direction)) / (2 * h)
    d2 = (f(q + 2 * h * direction) - f(q - 2 * h * direction)) / (4 * h)
    return (4 * d1 - d2) / 3


def forward(f, q, direction, h=1e-4):
    """One-sided (forward) 4th-order differences along ``direction``: never steps behind ``q``."""
    values = [f(q + k * h * direction) for k in range(5)]
    return (-25 * values[0] + 48 * values[1] - 36 * values[2] + 16 * values[3] - 3 * values[4]) / (12 * h)


def test_moment_arms_against_differences_and_the_reference_at_random_poses():
    model = arm_model()
    rng = np.random.default_rng(7)
    q = rng.uniform(-2.5, 2.5, (240, 2))
    R = model.moment_arms(q)
    # the literal Eq. 195 on the located paths (mbkron.reference): at every pose (no stencil to cross a switch)
    assert np.abs(reference.moment_arms(model, q) - R).max() < 1e-9
    ms = model.muscle_set
    wrapped = ms.path_points(model.kinematics(q, 0)).wrapped
    assert wrapped.any(axis=0).all() and (~wrapped).any(axis=0).all()  # every wrap wraps and unwraps somewhere
    checked = 0
    for k in range(2):
        e = np.eye(2)[k]
        # states whose stencil crosses no switch of a wrap (where L is not smooth)
        same = np.all([ms.path_points(model.kinematics(q + s * 2e-4 * e, 0)).wrapped == wrapped for s in (-1, 1)],
                      axis=(0, 2))
        difference = richardson(model.muscle_lengths, q[same], e, 2e-5)
        assert np.abs(-difference - R[same, k, :]).max() < 1e-9
        checked += same.sum()
    assert checked > 400


def engagements(model, muscle: int, rng, count: int):
    """``count`` engagements of a single-wrap muscle's wrap on random segments of q-space, bisected to
    adjacent states: yields ``(a, b, direction)`` (a unit vector from ``a`` to ``b``)."""
    ms = model.muscle_set

    def wraps(q):
        return ms.path_points(model.kinematics(np.atleast_2d(q), 0)).wrapped[0]
    found = 0
    for _ in range(400):
        a, b = rng.uniform(-2.5, 2.5, (2, 2))
        wa, wb = wraps(a), wraps(b)
        switching = np.flatnonzero(wa != wb)
        if switching.size != 1 or ms.wrapping.wrap_muscles()[switching[0]] != muscle:
            continue
        for _ in range(60):  # bisection to the engagement
            mid = (a + b) / 2
            if wraps(mid)[switching[0]] == wa[switching[0]]:
                a = mid
            else:
                b = mid
        inside = a if wa[switching[0]] else b
        nodes = ms.path_points(model.kinematics(inside[None], 0))
        if nodes.lengths[0, muscle] - np.linalg.norm(np.diff(nodes.positions[0, :2], axis=0)) > 1e-9:
            continue  # not an engagement (the straight line is much shorter): the cylinder's length rule
        yield a, b, (b - a) / np.linalg.norm(b - a)
        found += 1
        if found == count:
            return
    raise AssertionError(f"{found} engagements found, {count} wanted")


def test_moment_arms_within_1e_6_of_engagement_and_c1():
    model = arm_model()
    for a, b, direction in engagements(model, 0, np.random.default_rng(11), 20):  # muscle `one`: a single wrap
        for side, start in ((1.0, b + 1e-6 * direction), (-1.0, a - 1e-6 * direction)):
            arms = model.moment_arms(start)[:, 0]
            one_sided = forward(lambda x: model.muscle_lengths(x)[..., 0], start, side * direction)
            assert abs(-one_sided - side * direction @ arms) < 1e-9
        # the literal Eq. 195 (mbkron.reference), 1e-6 from the engagement and at it (a, b: the bisection's last pair)
        near = np.array([a - 1e-6 * direction, a, b, b + 1e-6 * direction])
        arms = model.moment_arms(near)[..., 0]
        assert np.abs(reference.moment_arms(model, near)[..., 0] - arms).max() < 1e-9
        # C¹: the exact moment arms just inside and just outside agree
        assert np.abs(arms[2] - arms[1]).max() < 1e-7


def test_ranged_wrap_acts_on_its_segment_only():
    model = arm_model()
    q = np.random.default_rng(5).uniform(-2.5, 2.5, (300, 2))
    nodes = model.muscle_set.path_points(model.kinematics(q, 0))
    mine = np.flatnonzero(nodes.muscles == 2)  # `ranged`: points 0, 1, 2, tangent points 3, 4
    order = np.argsort(nodes.keys[:, mine], axis=-1, kind="stable")
    wrapped = nodes.wrapped[:, -1]
    assert wrapped.any() and (~wrapped).any()
    assert np.all(order[wrapped] == [0, 1, 3, 4, 2])
    assert np.all(order[~wrapped][:, :3] == [0, 1, 2]) and np.isinf(nodes.keys[~wrapped][:, mine[3:]]).all()


def test_path_checks_name_the_wrap_and_what_was_expected():
    b = ModelBuilder().add_coordinate("q1").add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    bad = WrapCylinder(name="c", body="nowhere", radius=-1.0, length=0.1, quadrant="up")
    b.add_muscle("m", [("ground", (0, 0.1, 0)), ("link", (0.5, 0, 0))], wraps=[PathWrap(bad, (0, 5)), "c"])
    with pytest.raises(ModelError) as error:
        b.build()
    text = str(error.value)
    for expected in ("wrap object `c`: `radius` must be a finite number > 0", "`quadrant` must be one of",
                     "is on unknown body 'nowhere'", "`range` [0, 5] must name points 1 ≤ first < last ≤ 2",
                     "wrap 1 must be a PathWrap of a wrap object"):
        assert expected in text


def test_complex_q_is_refused():
    """No evaluation takes complex steps: a complex ``q`` is refused, not truncated, by the model and by the
    joint-variable map itself."""
    model = arm_model()
    with pytest.raises(TypeError, match=r"`q` must be real .*imaginary parts would be lost"):
        model.muscle_lengths(np.zeros(2) + 1j * COMPLEX_STEP)

    class Solved(JointVariableProvider):
        size = 1

        def evaluate(self, q, order):
            return q[..., :1], None, None
    joint_variables = JointVariables(np.zeros((1, 2)), np.zeros(1), ((np.array([0]), Solved()),))
    with pytest.raises(TypeError, match="`q` must be real, got complex values"):
        joint_variables.evaluate(np.zeros(2) + 1j * COMPLEX_STEP, 0)


def great_circle(t1, u1, r, s):
    """Points and unit tangents at arc length ``s`` along the great circles of the sphere (radius r, centre 0)
    leaving ``t1`` in the tangent directions ``u1`` (rows)."""
    angle = (s / r)[:, None]
    return np.cos(angle) * t1 + r * np.sin(angle) * u1, np.cos(angle) * u1 - np.sin(angle) * t1 / r


def helix(t1, u1, r, s):
    """Points and unit tangents at arc length ``s`` along the helices of the cylinder (radius r about z)
    leaving ``t1`` in the tangent directions ``u1`` (rows): the angle about the axis grows at the rate
    ``u1 · e_φ / r``, the height at ``u1_z`` (the unrolled cylinder's straight lines)."""
    phi1 = np.arctan2(t1[:, 1], t1[:, 0])
    around = -np.sin(phi1) * u1[:, 0] + np.cos(phi1) * u1[:, 1]
    phi = phi1 + around * s / r
    points = np.stack([r * np.cos(phi), r * np.sin(phi), t1[:, 2] + u1[:, 2] * s], axis=-1)
    return points, np.stack([-around * np.sin(phi), around * np.cos(phi), u1[:, 2]], axis=-1)


def sphere_ways(p, q, r):
    """The two taut paths from ``p`` to ``q`` over the sphere (radius r, centre 0), in the plane of ``p``, ``q``
    and the centre with ``p`` at angle 0 and ``q`` at ``γ``: tangent points at ``±arccos(r/|p|)`` and
    ``γ ∓ arccos(r/|q|)``. {+1: the short way, −1: the long way} → (t1, t2, arc)."""
    u = unit(p)
    e2 = unit(q - np.sum(q * u, axis=-1, keepdims=True) * u)
    gamma = np.arctan2(np.sum(q * e2, axis=-1), np.sum(q * u, axis=-1))
    ap, aq = (np.arccos(np.minimum(r / np.linalg.norm(x, axis=-1), 1.0)) for x in (p, q))  # (0 inside: not used)

    def point(angle):
        return r * (np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * e2)
    return {1: (point(ap), point(gamma - aq), r * (gamma - ap - aq)),
            -1: (point(-ap), point(gamma + aq), r * (2 * np.pi - gamma - ap - aq))}


def cylinder_ways(p, q, r):
    """The two helices from ``p`` to ``q`` round the cylinder (radius r about z), unrolled: the planar
    tangent points at ``φ_p ± arccos(r/ρ_p)`` and ``φ_q ∓ arccos(r/ρ_q)``, the heights linear in the unrolled
    length. {+1: counterclockwise seen from +z, −1: clockwise} → (t1, t2, arc, planar arc angle)."""
    rp, rq = np.hypot(p[:, 0], p[:, 1]), np.hypot(q[:, 0], q[:, 1])
    phi_p, phi_q = np.arctan2(p[:, 1], p[:, 0]), np.arctan2(q[:, 1], q[:, 0])
    ap, aq = np.arccos(np.minimum(r / rp, 1.0)), np.arccos(np.minimum(r / rq, 1.0))  # (0 inside: not used)
    lp, lq, rise = np.sqrt(np.maximum(rp**2 - r**2, 0.0)), np.sqrt(np.maximum(rq**2 - r**2, 0.0)), q[:, 2] - p[:, 2]
    ways = {}
    for way in (1, -1):
        theta = np.mod(way * (phi_q - phi_p), 2 * np.pi) - ap - aq
        unrolled = lp + r * theta + lq
        a1, a2 = phi_p + way * ap, phi_q - way * aq
        t1 = np.stack([r * np.cos(a1), r * np.sin(a1), p[:, 2] + rise * lp / unrolled], axis=-1)
        t2 = np.stack([r * np.cos(a2), r * np.sin(a2), p[:, 2] + rise * (lp + r * theta) / unrolled], axis=-1)
        ways[way] = (t1, t2, r * theta * np.sqrt(1 + (rise / unrolled) ** 2), theta)
    return ways


def on_side(x, sign):
    """OpenSim's ``DSIGN(x) == sign`` (``DSIGN(0) = +1``)."""
    return np.where(x >= 0, 1, -1) == sign


@pytest.mark.parametrize("quadrant", ["all", "+x", "-x", "+y", "-y", "+z", "-z"])
def test_random_segments_are_taut_and_follow_opensims_rules(quadrant):
    """300 random segments per quadrant, over a sphere and a finite cylinder: which wrap and which way round
    (OpenSim's rules, the module's documentation, from the closed forms of both ways: :func:`sphere_ways`,
    :func:`cylinder_ways`), the tangent points and arcs of that way, and the path is taut: the surface's
    geodesic leaving ``t1`` along ``p → t1`` reaches ``t2`` after ``arc`` along ``t2 → q`` (no kink)."""
    rng = np.random.default_rng(6)
    p, q = rng.normal(size=(2, 300, 3)) * 0.1
    r, half = 0.05, 0.075
    axis, sign = parse_quadrant(quadrant)
    for surface in (WrapSphere(name="s", body="ground", radius=r, quadrant=quadrant),
                    WrapCylinder(name="c", body="ground", radius=r, length=2 * half, quadrant=quadrant)):
        sphere = isinstance(surface, WrapSphere)
        wrapped, t1, t2, arc = surface.solve(p, q)
        assert 30 < wrapped.sum() < 270
        assert (arc[~wrapped] == 0).all() and np.array_equal(t1[~wrapped], (p + q)[~wrapped] / 2)
        assert np.array_equal(t2[~wrapped], t1[~wrapped])
        # OpenSim's decisions, from the geometry of the segment (its points' distances from the centre or axis)
        planar = slice(0, 3) if sphere else slice(0, 2)
        chord = (q - p)[:, planar]
        nearest = p[:, planar] + np.clip(-np.sum(p[:, planar] * chord, -1) / np.sum(chord**2, -1), 0, 1)[:, None] * chord
        outside = (np.linalg.norm(p[:, planar], axis=-1) > r) & (np.linalg.norm(q[:, planar], axis=-1) > r)
        meets = outside & (np.linalg.norm(nearest, axis=-1) < r)
        ways = (sphere_ways if sphere else cylinder_ways)(p, q, r)
        middle = {way: (great_circle if sphere else helix)(ways[way][0], unit(ways[way][0] - p), r, ways[way][2] / 2)[0]
                  for way in (1, -1)}
        towards = np.where(sign * middle[1][:, axis] >= sign * middle[-1][:, axis], 1, -1)  # the way further to σ
        both = on_side(p[:, axis], sign) & on_side(q[:, axis], sign)
        if sphere:  # the segment must meet the sphere; the short way, unless a point is off the quadrant's side
            expected = meets
            way = np.where((sign == 0) | both, 1, towards)
        else:
            shorter = np.where(ways[1][3] <= ways[-1][3], 1, -1)
            way = shorter if sign == 0 or axis == 2 else towards
            rule = meets
            if sign != 0:  # the line's point nearest the axis decides for points on opposite sides
                line = p + (-np.sum(p[:, :2] * chord, -1) / np.sum(chord**2, -1))[:, None] * (q - p)
                one = on_side(p[:, axis], sign) | on_side(q[:, axis], sign)
                forced = (on_side(p[:, axis], sign) != on_side(q[:, axis], sign)) & ~on_side(line[:, axis], sign)
                rule = np.where(one, meets | forced, True)
            chosen = [np.where((way == 1)[:, None] if k < 2 else way == 1, ways[1][k], ways[-1][k]) for k in range(4)]
            within = (np.abs(chosen[0][:, 2]) <= half) | (np.abs(chosen[1][:, 2]) <= half)
            expected = outside & rule & (chosen[3] > 0) & within
        assert np.array_equal(wrapped, expected)
        for k, value in enumerate((t1, t2, arc)):
            oracle = np.where((way == 1)[:, None] if k < 2 else way == 1, ways[1][k], ways[-1][k])
            assert np.abs(value[wrapped] - oracle[wrapped]).max() < 1e-15
        # taut: on the surface, the straight pieces tangent, and the geodesic continues them without a kink
        u1, u2 = unit(t1[wrapped] - p[wrapped]), unit(q[wrapped] - t2[wrapped])
        for t, u in ((t1[wrapped], u1), (t2[wrapped], u2)):
            normal = t[:, planar] / r
            assert np.abs(np.linalg.norm(normal, axis=-1) - 1).max() < 1e-15
            assert np.abs(np.sum(u[:, planar] * normal, axis=-1)).max() < 1e-12
        end, direction = (great_circle if sphere else helix)(t1[wrapped], u1, r, arc[wrapped])
        assert np.abs(end - t2[wrapped]).max() < 1e-15 and np.abs(direction - u2).max() < 1e-12
        if sign == 0:  # unconstrained: the shorter way round
            lengths = {w: np.linalg.norm(ways[w][0] - p, axis=-1) + ways[w][2] + np.linalg.norm(q - ways[w][1], axis=-1)
                       for w in (1, -1)}
            shortest = np.minimum(lengths[1], lengths[-1])[wrapped]
            assert np.all(total(p, q, wrapped, t1, t2, arc)[wrapped] <= shortest + 1e-15)  # (round-off: 0.3 m)


@pytest.mark.parametrize("surface", [WrapSphere(name="s", body="ground", radius=0.05),
                                     WrapCylinder(name="c", body="ground", radius=0.05, length=1.0)])
def test_solve_refuses_complex_points_and_bad_shapes(surface):
    """A complex step is not supported (the derivatives are the envelope theorem's): a TypeError naming the
    argument, not a path of the real parts."""
    p, q = np.array([-0.2, 0.01, 0.0]), np.array([0.2, 0.01, 0.0])
    with pytest.raises(TypeError, match=r"`q` must be real .* imaginary parts would be lost"):
        surface.solve(p, q + 1j * COMPLEX_STEP)
    with pytest.raises(TypeError, match=r"`p` must be real"):
        surface.solve(p + 1j * COMPLEX_STEP, q)
    with pytest.raises(ValueError, match=r"`p` must have shape \(\.\.\., 3\)"):
        surface.solve(p[:2], q)
    with pytest.raises(ValueError, match=r"wrap object `bad`: `radius` must be a finite number > 0"):
        type(surface)(**{**surface.__dict__, "name": "bad", "radius": -0.05}).solve(p, q)


def test_step_study_of_the_differences():
    """The differences the moment arms are checked against converge as h⁴ to R (so R is their limit, and the
    1e-9 m of the checks is round-off and truncation of the differences, not a tolerance fitted to R)."""
    model = arm_model()
    ms = model.muscle_set
    q = np.random.default_rng(12).uniform(-2.5, 2.5, (200, 2))
    wrapped = ms.path_points(model.kinematics(q, 0)).wrapped
    e = np.eye(2)[1]
    same = np.all([ms.path_points(model.kinematics(q + s * 0.02 * e, 0)).wrapped == wrapped for s in (-1, 1)],
                  axis=(0, 2)) & wrapped[:, 0] & wrapped[:, 1]  # `one` and `two` wrap the cylinder
    assert same.sum() >= 5
    # muscles `two` and `ranged` (`one` has poses within 8e-3 rad of its cut locus, where both sides round the
    # cylinder are equally long and the shortest path changes side: L has a kink there, like at a switch)
    R = model.moment_arms(q[same])[:, 1, 1:]
    errors = [np.abs(-richardson(model.muscle_lengths, q[same], e, h)[:, 1:] - R).max() for h in (4e-3, 2e-3, 1e-3)]
    assert 8 < errors[0] / errors[1] < 32 and 8 < errors[1] / errors[2] < 32  # O(h⁴): 16 per halving
