"""The compiled torus solver (mbkron.numerics.geodesics.torus) and models with a torus.

Random segments of three tori, with quadrants and segments that do not wrap: the wraps are taut paths
(independent Cartesian geodesics) where OpenSim's decision is to wrap, the others do not enter the torus
or raise; closed forms, geodesics and OpenSim's data are in ``tests/test_wrap_torus.py``. A model with a
torus: the kernel's moment arms against
central differences of its lengths and against the literal Eq. 195 (:mod:`mbkron.reference`), and a
model with a torus and an ellipsoid against the same two oracles; a thin ring (issue 28): a path only the last initial
guess finds, checked independently, and a failure raising the ConfigurationError that names the
muscle, the wrap and the state.
"""

from __future__ import annotations

import numpy as np
import pytest

from mbkron import reference
from mbkron.jit.common import AVAILABLE
from mbkron.numerics.geodesics.torus import FAILED, torus_path
from mbkron.core.errors import ConfigurationError
from mbkron.model.builder import ModelBuilder
from mbkron.multibody.muscles.wrap_ellipsoid import WrapEllipsoid
from mbkron.multibody.muscles.wrap_torus import WrapTorus, opensim_ring_point, shortest_path
from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder
from tests.geodesics import implicit_geodesic
from tests.test_wrap_torus import torus_model

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


def segments(R, r, n, seed, spread=1.0):
    """Segments from above to below the ring's plane with ends inside the ring radius near azimuth 0 (most
    pass through the hole and many wrap), ends outside the solid; ``spread`` scales the ends' distances."""
    rng = np.random.default_rng(seed)
    rho = rng.uniform(max(0.0, R - 2.5 * r), R - 0.3 * r, (2, n))
    phi = rng.uniform(-1, 1, (2, n)) * min(0.7, 3.5 * r / R)
    z = np.array([1, -1])[:, None] * spread * rng.uniform(0.5 * r, 5 * r, (2, n))
    points = np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=-1)
    outside = ((np.hypot(points[..., 0], points[..., 1]) - R) ** 2 + points[..., 2] ** 2 > (1.01 * r) ** 2).all(axis=0)
    return points[0, outside], points[1, outside]


def torus_geometry(x, R, r):
    """F, ∇F and ∇²F of the torus (R, r) at x."""
    rho = np.hypot(x[0], x[1])
    hessian = np.diag([2 * (1 - R / rho)] * 2 + [2.0])
    hessian[:2, :2] += 2 * R * np.outer(x[:2], x[:2]) / rho**3
    gradient = np.array([2 * (1 - R / rho) * x[0], 2 * (1 - R / rho) * x[1], 2 * x[2]])
    return (rho - R) ** 2 + x[2] ** 2 - r**2, gradient, hessian


def assert_taut(p, q, R, r, t1, t2, arc, presses=False):
    """A path round the tube is taut: on the surface (to 1e-15 m), the straight pieces tangent to it and outside the solid
    (sampled), and the Cartesian geodesic (:func:`tests.geodesics.implicit_geodesic`) from ``t1`` along
    ``p → t1`` ends at ``t2`` after ``arc`` along ``t2 → q`` (no kink); with ``presses``, the string presses
    on the surface all along it (``x'ᵀ∇²F x' > 0``: it does not lift off)."""
    def unit(v):
        return v / np.linalg.norm(v)
    for t, other in ((t1, p), (t2, q)):
        value, gradient, _ = torus_geometry(t, R, r)
        assert abs(value) / np.linalg.norm(gradient) < 1e-15 and abs(np.dot(unit(gradient), unit(other - t))) < 1e-11
        line = other + np.linspace(0, 1 - 1e-6, 2001)[:, None] * (t - other)
        assert ((np.hypot(line[:, 0], line[:, 1]) - R) ** 2 + line[:, 2] ** 2 >= r**2).all()
    samples = np.linspace(0, arc, 201) if presses else None
    points, tangents = implicit_geodesic(lambda x: torus_geometry(x, R, r)[1], lambda x: torus_geometry(x, R, r)[2],
                                         t1, unit(t1 - p), arc, samples)
    assert np.abs(points[-1] - t2).max() < 1e-10 and np.abs(tangents[-1] - unit(q - t2)).max() < 1e-8
    if presses:
        assert min(v @ torus_geometry(x, R, r)[2] @ v for x, v in zip(points, tangents)) > 0


def enters(p, q, R, r):
    """Whether the segment p → q passes through the solid torus: F < 0 at one of 20001 points along it."""
    x = p + np.linspace(0, 1, 20001)[:, None] * (q - p)
    return bool(((np.hypot(x[:, 0], x[:, 1]) - R) ** 2 + x[:, 2] ** 2 < r**2).any())


@pytest.mark.parametrize("R, r, spread, quadrants", [(0.05, 0.01, 1.0, ("all", "+x", "-y", "z")),
                                                      (0.03, 0.02, 1.0, ("all", "-x")),
                                                      (0.2, 0.01, 1.0, ("all", "+y")),
                                                      (0.05, 0.01, 6.0, ("all",))])
def test_random_segments_wrap_taut_where_opensim_wraps(R, r, spread, quadrants):
    """Over random segments (through the hole, most wrapping): a segment wraps only where OpenSim's cylinder at
    OpenSim's ring point wraps (:func:`opensim_ring_point`, :class:`~mbkron.multibody.muscles.wrapping.WrapCylinder`,
    both checked against OpenSim in ``tests/test_wrap_torus.py``) and then on a taut path (:func:`assert_taut`,
    every 8th); where OpenSim wraps and it does not, the segment misses the solid (sampled); where the solver
    fails (a ConfigurationError), OpenSim wraps and the segment enters the solid. Segments through the middle
    of the hole or from inside the solid do not wrap; one past the tube's outer side wraps taut where OpenSim wraps."""
    p, q = segments(R, r, 200, int(R * 1000 + r * 1e5 + spread), spread)
    p = np.concatenate([p, [[0.0, 0.0, 2 * r], [0.0, 2 * R, 2 * r], [R - 0.5 * r, 0.0, 0.1 * r]]])
    q = np.concatenate([q, [[0.0, 0.0, -2 * r], [0.0, 2 * R, -2 * r], [R - 0.5 * r, 0.0, -3 * r]]])
    counts = np.zeros(3, dtype=int)
    for quadrant in quadrants:
        found, c = opensim_ring_point(p, q, R, quadrant)
        x = -c / R  # OpenSim's cylinder at c: axes x towards the torus's axis, y = −z
        frames = np.stack([x, np.broadcast_to([0.0, 0.0, -1.0], x.shape), np.cross(x, [0.0, 0.0, -1.0])], axis=1)
        local = [np.einsum("mij,mj->mi", frames, points - c) for points in (p, q)]
        opensim = found & WrapCylinder(name="c", body="b", radius=r, length=1e4, quadrant="+x").solve(*local)[0]
        for i in range(len(p)):
            try:
                wrapped, t1, t2, arc = shortest_path(p[i], q[i], R, r, quadrant)
            except ConfigurationError as error:
                assert "no path round the inner side" in str(error) and opensim[i] and enters(p[i], q[i], R, r)
                counts[2] += 1
                continue
            assert not wrapped or opensim[i]
            if wrapped and counts[0] % 8 == 0:
                assert_taut(p[i], q[i], R, r, t1, t2, arc)
            if opensim[i] and not wrapped:
                assert not enters(p[i], q[i], R, r)
            counts[0 if wrapped else 1] += 1
        # through the middle of the hole, from inside the solid: no wrap; past the outer side, where OpenSim's cylinder
        # wraps (both ends off its quadrant's side) so does the path, over the tube and round its inner side
        wrapped, t1, t2, arc = shortest_path(p[-3:], q[-3:], R, r, quadrant)
        assert not wrapped[0] and not wrapped[2] and wrapped[1] == opensim[-2]
        if wrapped[1]:
            assert_taut(p[-2], q[-2], R, r, t1[1], t2[1], arc[1])
    assert counts[0] >= 15 * len(quadrants) and counts[1] >= 3 * len(quadrants)


# --------------------------------------------------------------------------------- models
def torus_and_ellipsoid_model():
    """Two links (about ground's z, then the upper link's y) with a torus and an ellipsoid on the upper link:
    one path through the torus's hole to the lower link (tests/test_wrap_torus.py's), one over both."""
    b = ModelBuilder().add_coordinate("q1").add_coordinate("q2")
    b.add_body("upper", axis=(0, 0, 1), variable="q1", mass=1.0)
    b.add_body("lower", parent="upper", axis=(0, 1, 0), variable="q2", mass=1.0, offset=(0.2, 0, 0))
    torus = WrapTorus(name="ring", body="upper", translation=(0.1, 0.0, 0.0), xyz_body_rotation=(0.1, np.pi / 2 + 0.2, 0.3),
                      inner_radius=0.01, outer_radius=0.05)
    ellipsoid = WrapEllipsoid(name="egg", body="upper", translation=(0.16, 0.0, -0.05), dimensions=(0.02, 0.015, 0.03))
    b.add_muscle("through", [("ground", (0.04, 0.005, -0.044)), ("lower", (-0.04, 0.003, -0.046))], wraps=[PathWrap(torus)])
    b.add_muscle("both", [("ground", (0.04, 0.005, -0.044)), ("lower", (0.0, 0.003, -0.08))],
                 wraps=[PathWrap(torus), PathWrap(ellipsoid)])
    return b.build()


@needs_numba
def test_torus_moment_arms_against_differences_and_the_reference():
    model = torus_model()
    q = np.random.default_rng(3).uniform([-1.0, -0.6], [1.0, 0.6], (240, 2))
    wrapped = model.muscle_set.path_points(model.kinematics(q, 0)).wrapped[:, 0]
    assert 0.3 < wrapped.mean() < 0.95
    literal = reference.moment_arms(model, q)[:, :, 0]  # Eq. 195 on the located paths, state by state
    R = model.moment_arms(q)[:, :, 0]
    scale = np.abs(R).max()
    h, checked = 1e-6, 0
    for k in range(2):
        step = np.eye(2)[k]
        L = [model.muscle_lengths(q + s * h * step)[:, 0] for s in (-2, -1, 1, 2)]
        central, wide = (L[2] - L[1]) / (2 * h), (L[3] - L[0]) / (4 * h)
        smooth = np.abs(wide - central) < 1e-6  # (a stencil across a switch of OpenSim's decision jumps)
        assert np.abs(-central - R[:, k])[smooth].max() <= 1e-7 * scale
        assert (smooth & wrapped).sum() > 0.25 * len(q)
        checked += smooth.sum()
        # the literal Eq. 195 at every state (no stencil to cross a switch)
        assert np.abs(literal[:, k] - R[:, k]).max() <= 1e-10 * scale
    assert checked > 0.9 * 2 * len(q)


@needs_numba
def test_a_model_with_a_torus_and_an_ellipsoid_against_differences_and_the_reference():
    """A path over a torus and an ellipsoid (the sweeps over two surfaces of different kinds) and paths over
    each: ``R`` against central differences of the lengths where no decision switches within the stencil,
    and against the literal Eq. 195 on the located paths (:mod:`mbkron.reference`) at every state."""
    model = torus_and_ellipsoid_model()
    q = np.random.default_rng(4).uniform([-1.0, -0.6], [1.0, 0.6], (40, 2))
    wrapped = model.muscle_set.path_points(model.kinematics(q, 0)).wrapped
    assert wrapped[:, 0].sum() >= 4 and wrapped[:, 1].sum() >= 4 and wrapped[:, 2].sum() >= 4
    R = model.moment_arms(q)
    scale = np.abs(R).max()
    assert np.abs(reference.moment_arms(model, q) - R).max() <= 1e-10 * scale
    h, checked = 1e-6, 0
    for k in range(2):
        step = np.eye(2)[k]
        L = [model.muscle_lengths(q + s * h * step) for s in (-2, -1, 1, 2)]
        central, wide = (L[2] - L[1]) / (2 * h), (L[3] - L[0]) / (4 * h)
        smooth = np.abs(wide - central) < 1e-6  # (a stencil across a switch of OpenSim's decision jumps)
        assert np.abs(-central - R[:, k])[smooth].max() <= 1e-7 * scale
        checked += smooth.sum()
    assert checked > 0.9 * 2 * R[:, 0].size


#: A segment through the hole of a thin ring (R = 0.011, r = 0.0105) where OpenSim wraps, the straight
#: segment enters the torus and no path touches the tube once (docs/wrapping.md, "Tori": thin rings).
THIN = 0.011, 0.0105
THIN_P = (-0.001353760808606584, 0.0030828889241272953, 0.008367575817106749)
THIN_Q = (-0.0036828000149046586, -0.006802033296838781, -0.011195451060322666)
#: One where only the last initial guess (the straight segment's point deepest in the solid) finds the path.
DEEP_P = (-0.0018211078082076431, 0.0006932029837682749, 0.009260020841198029)
DEEP_Q = (-0.00238286091263938, -0.006143286291174677, -0.010139544412567557)


@needs_numba
def test_a_thin_ring_path_from_the_deepest_point_guess():
    """Through the hourglass-shaped hole of a thin ring (R − r = 0.5 mm), where neither OpenSim's cylinder nor
    the meridian's circle leads Newton's method to the path: both routes find the same path from the straight
    segment's deepest point, and it is the wrap: a taut path (:func:`assert_taut`: on the surface, tangent at
    both ends, an independent Cartesian geodesic from t₁ along t₁ − p ends at t₂ along q − t₂), and the string
    presses on the surface all along it (x'ᵀ∇²F x' > 0: it does not lift off)."""
    p, q = np.array(DEEP_P), np.array(DEEP_Q)
    wrapped, t1, t2, arc = shortest_path(p, q, *THIN)
    assert wrapped
    assert_taut(p, q, *THIN, t1, t2, arc, presses=True)


@needs_numba
def test_a_failure_raises_naming_the_muscle_the_wrap_and_the_state():
    """The kernel reports FAILED; a model's evaluation and :func:`shortest_path` raise the ConfigurationError."""
    assert torus_path(np.array(THIN_P), np.array(THIN_Q), *THIN, 0, 0, np.zeros(3), np.zeros(3)) == FAILED
    message = (r"at 1 of 2 segments \(p=\[-0\.00135.*wrap frame\) there is no path round the inner side of the torus "
               r"with outer_radius 0\.011 and inner_radius 0\.0105: the straight segment enters the torus")
    with pytest.raises(ConfigurationError, match=message):
        shortest_path([THIN_P, DEEP_P], [THIN_Q, DEEP_Q], *THIN)
    b = ModelBuilder().add_coordinate("q1")
    b.add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    ring = WrapTorus(name="thin", body="ground", outer_radius=THIN[0], inner_radius=THIN[1])
    b.add_muscle("tendon", [("ground", THIN_P), ("link", THIN_Q)], wraps=[PathWrap(ring)])
    model = b.build("compiled")
    q = np.array([[4 * np.pi / 3], [0.0]])  # (at the first state the ring is wrapped)
    message = r"muscle `tendon`, wrap `thin`: at state \(1,\) \(coordinates q = \[0\.0\]\).*no path round the inner side"
    with pytest.raises(ConfigurationError, match=message):
        model.muscle_lengths(q)
