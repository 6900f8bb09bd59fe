"""Wrapping surfaces (sphere, cylinder): closed-form lengths, tangency, minimality, OpenSim's quadrant
rules, and exact moment arms against finite differences of the length and the literal Eq. 195
(:mod:`mbkron.reference`; incl. poses within 1e-6 of engagement)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mbkron import reference
from mbkron.compiled.common import AVAILABLE
from mbkron.core.errors import ModelError
from mbkron.jointvars.explicit import JointVariableProvider, JointVariables
from mbkron.model.builder import ModelBuilder
from mbkron.muscles.wrapping import PathWrap, WrapCylinder, WrapSphere, body_fixed_xyz, parse_quadrant

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


def half_wrap(d: float, r: float) -> float:
    """A string from (−d, 0) to (d, 0) over a circle of radius r at the origin: two tangents of
    length √(d² − r²) and the arc between the tangent points, at angles ±(π/2 − arccos(r/d)) from the
    top: r(π − 2 arccos(r/d))."""
    return 2 * math.sqrt(d * d - r * r) + r * (math.pi - 2 * math.acos(r / d))


def total(p, q, wrapped, t1, t2, arc):
    return np.where(wrapped, np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1),
                    np.linalg.norm(q - p, axis=-1))


#: The imaginary step of the complex-step derivatives: f(x + ih) = f(x) + ih f'(x) + O(h²), no cancellation.
COMPLEX_STEP = 1e-30


def complex_step(f, x, direction):
    """The derivative of ``f`` at ``x`` along ``direction`` (rows: one per state), ``Im f(x + ih·direction) / h``."""
    return f(x + 1j * COMPLEX_STEP * direction).imag / COMPLEX_STEP


def wrapped_length_gradient(p, q, r):
    """∂L/∂p, ∂L/∂q of ``L = √(|p|² − r²) + √(|q|² − r²) + r(γ − arccos(r/|p|) − arccos(r/|q|))`` (γ the angle
    between ``p`` and ``q``: the path over a circle or sphere of radius r at the origin, short arc), by hand:
    ∂(√(d² − r²) − r arccos(r/d))/∂p = p √(d² − r²)/d² (d = |p|) and ∂γ/∂p = −(q̂ − cos γ p̂)/(d sin γ)."""
    dp, dq = (np.linalg.norm(x, axis=-1, keepdims=True) for x in (p, q))
    cos = np.sum(p * q, axis=-1, keepdims=True) / (dp * dq)
    sin = np.sqrt(1.0 - cos**2)
    gp = p * np.sqrt(dp**2 - r**2) / dp**2 - r * (q / dq - cos * p / dp) / (dp * sin)
    gq = q * np.sqrt(dq**2 - r**2) / dq**2 - r * (p / dp - cos * q / dq) / (dq * sin)
    return gp, gq


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


def test_complex_steps_of_the_closed_forms_equal_their_derivatives_by_hand():
    """``solve`` at complex points (a complex step) differentiates the sphere's and the cylinder's lengths
    exactly: against the closed forms' derivatives by hand (:func:`wrapped_length_gradient`; the cylinder's
    ``L = √(ℓ² + Δz²)`` with ``ℓ`` the wrapped length of the projections on the plane normal to the axis)."""
    r = 0.05
    points = np.random.default_rng(21).normal(size=(1000, 6)) * 0.1  # rows (p, q)
    for surface in (WrapSphere(name="s", body="ground", radius=r), WrapCylinder(name="c", body="ground", radius=r,
                                                                                  length=10.0)):
        def length(x, surface=surface):  # |·| without conjugation: analytic
            _, t1, t2, arc = surface.solve(x[..., :3], x[..., 3:])
            return np.sqrt(np.sum((t1 - x[..., :3]) ** 2, -1)) + arc + np.sqrt(np.sum((x[..., 3:] - t2) ** 2, -1))
        p, q = points[:, :3], points[:, 3:]
        planar = 3 if isinstance(surface, WrapSphere) else 2
        cos = np.sum(p[:, :planar] * q[:, :planar], -1) / np.linalg.norm(p[:, :planar], axis=-1) / np.linalg.norm(
            q[:, :planar], axis=-1)
        x = points[surface.solve(p, q)[0] & (cos > -0.999)]  # wrapped, not where the side round it switches
        assert len(x) > 100
        steps = np.stack([complex_step(length, x, e) for e in np.eye(6)], axis=-1)
        gp, gq = wrapped_length_gradient(x[:, :planar], x[:, 3:3 + planar], r)
        if planar == 2:  # the cylinder: ∂L/∂p = (ℓ ∂ℓ/∂p', −Δz)/L, ∂L/∂q = (ℓ ∂ℓ/∂q', Δz)/L
            rp, rq = np.linalg.norm(x[:, :2], axis=-1), np.linalg.norm(x[:, 3:5], axis=-1)
            angle = np.arccos(np.sum(x[:, :2] * x[:, 3:5], -1) / (rp * rq))
            ell = (np.sqrt(rp**2 - r**2) + np.sqrt(rq**2 - r**2) + r * (angle - np.arccos(r / rp) - np.arccos(r / rq)))
            rise = x[:, 5] - x[:, 2]
            L = np.hypot(ell, rise)
            gp = np.column_stack([ell[:, None] * gp / L[:, None], -rise / L])
            gq = np.column_stack([ell[:, None] * gq / L[:, None], rise / L])
        assert np.abs(steps - np.concatenate([gp, gq], axis=-1)).max() < 1e-12


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


@needs_numba
@pytest.mark.parametrize("quadrant", ["all", "+x", "-x", "+y", "-y", "+z", "-z"])
def test_compiled_solvers_equal_the_surfaces(quadrant):
    from mbkron.compiled import wrap_circular as kernels

    rng = np.random.default_rng(6)
    p, q = rng.normal(size=(2, 300, 3)) * 0.1
    axis, sign = parse_quadrant(quadrant)
    sphere = WrapSphere(name="s", body="ground", radius=0.05, quadrant=quadrant)
    cylinder = WrapCylinder(name="c", body="ground", radius=0.05, length=0.15, quadrant=quadrant)
    for surface in (sphere, cylinder):
        wrapped, t1, t2, arc = surface.solve(p, q)
        assert 30 < wrapped.sum() < 270
        for i in range(len(p)):
            s1, s2 = np.zeros(3), np.zeros(3)
            if surface is sphere:
                result = kernels.sphere_path(p[i], q[i], 0.05, axis, sign, s1, s2)
            else:
                result = kernels.cylinder_path(p[i], q[i], 0.05, 0.15, axis, sign, s1, s2)
            assert (result >= 0) == wrapped[i]
            if wrapped[i]:
                assert abs(result - arc[i]) < 1e-15 and np.abs(s1 - t1[i]).max() < 1e-15 and np.abs(s2 - t2[i]).max() < 1e-15


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
