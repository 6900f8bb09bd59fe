"""The compiled torus solver (mbkron.compiled.wrap_torus) and models with a torus.

The kernel's decisions, tangent points and lengths against the numpy solver's
(:func:`mbkron.muscles.wrap_torus.shortest_path`, itself checked against closed forms, independent
geodesic integrations and OpenSim in ``tests/test_wrap_torus.py``) over random segments of three tori,
with quadrants and segments that do not wrap; a model with a torus: the kernel's moment arms against
central differences of its lengths and against the literal Eq. 195 (:mod:`mbkron.reference`), and a
model with a torus and an ellipsoid against the same two oracles; a thin ring (issue 28): a path only the last initial
guess finds, checked independently, and a failure raising the ConfigurationError that names the
muscle, the wrap and the state.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from mbkron import reference
from mbkron.compiled.common import AVAILABLE
from mbkron.compiled.wrap_torus import FAILED, NO_WRAP, torus_path
from mbkron.core.errors import ConfigurationError
from mbkron.model.builder import ModelBuilder
from mbkron.muscles.wrap_ellipsoid import WrapEllipsoid
from mbkron.muscles.wrap_torus import WrapTorus, shortest_path
from mbkron.muscles.wrapping import PathWrap, parse_quadrant
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


def kernel(p, q, R, r, quadrant="all"):
    """``torus_path`` per segment: the arcs (NO_WRAP, FAILED) and the tangent points."""
    axis, sign = parse_quadrant(quadrant)
    arcs, t1, t2 = np.empty(len(p)), np.zeros((len(p), 3)), np.zeros((len(p), 3))
    for i in range(len(p)):
        arcs[i] = torus_path(p[i], q[i], float(R), float(r), axis, sign, t1[i], t2[i])
    return arcs, t1, t2


def numpy_solver(p, q, R, r, quadrant="all"):
    """``shortest_path`` on the batch; where it raises, per segment, with the failed ones marked."""
    try:
        return (*shortest_path(p, q, R, r, quadrant), np.zeros(len(p), dtype=bool))
    except ConfigurationError:
        results = []
        for i in range(len(p)):
            try:
                results.append((*shortest_path(p[i], q[i], R, r, quadrant), False))
            except ConfigurationError:
                results.append((False, np.zeros(3), np.zeros(3), 0.0, True))
        return tuple(np.array(column) for column in zip(*results))


@needs_numba
@pytest.mark.parametrize("R, r, spread, quadrants", [(0.05, 0.01, 1.0, ("all", "+x", "-y", "z")),
                                                      (0.03, 0.02, 1.0, ("all", "-x")),
                                                      (0.2, 0.01, 1.0, ("all", "+y")),
                                                      (0.05, 0.01, 6.0, ("all",))])
def test_kernel_equals_the_numpy_solver(R, r, spread, quadrants):
    p, q = segments(R, r, 200, int(R * 1000 + r * 1e5 + spread), spread)
    # and some that do not wrap: through the middle of the hole, far from the tube, an end in the solid
    p = np.concatenate([p, [[0.0, 0.0, 2 * r], [0.0, 2 * R, 2 * r], [R - 0.5 * r, 0.0, 0.1 * r]]])
    q = np.concatenate([q, [[0.0, 0.0, -2 * r], [0.0, 2 * R, -2 * r], [R - 0.5 * r, 0.0, -3 * r]]])
    counts = np.zeros(3, dtype=int)
    for quadrant in quadrants:
        wrapped, t1, t2, arc, failed = numpy_solver(p, q, R, r, quadrant)
        arcs, k1, k2 = kernel(p, q, R, r, quadrant)
        assert ((arcs == FAILED) == failed).all() and ((arcs >= 0) == wrapped).all()
        assert set(np.unique(arcs[arcs < 0])) <= {NO_WRAP, FAILED}
        w = wrapped
        expected = np.linalg.norm(t1[w] - p[w], axis=-1) + arc[w] + np.linalg.norm(q[w] - t2[w], axis=-1)
        ours = np.linalg.norm(k1[w] - p[w], axis=-1) + arcs[w] + np.linalg.norm(q[w] - k2[w], axis=-1)
        assert np.abs(ours / expected - 1).max(initial=0.0) <= 1e-12
        assert np.abs(arcs[w] - arc[w]).max(initial=0.0) <= 1e-12 * r
        assert np.abs(k1[w] - t1[w]).max(initial=0.0) <= 1e-10 * r and np.abs(k2[w] - t2[w]).max(initial=0.0) <= 1e-10 * r
        counts += [w.sum(), (~w & ~failed).sum(), failed.sum()]
    print(counts)
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


def thin_geometry(x):
    """F, ∇F and ∇²F of the thin ring at x."""
    R, r = THIN
    rho = np.hypot(x[0], x[1])
    hessian = np.diag([2 * (1 - R / rho)] * 2 + [2.0])
    hessian[:2, :2] += 2 * R * np.outer(x[:2], x[:2]) / rho**3
    gradient = np.array([2 * (1 - R / rho) * x[0], 2 * (1 - R / rho) * x[1], 2 * x[2]])
    return (rho - R) ** 2 + x[2] ** 2 - r**2, gradient, hessian


@needs_numba
def test_a_thin_ring_path_from_the_deepest_point_guess():
    """Through the hourglass-shaped hole of a thin ring (R − r = 0.5 mm), where neither OpenSim's cylinder nor
    the meridian's circle leads Newton's method to the path: both routes find the same path from the straight
    segment's deepest point, and it is the wrap: on the surface, tangent at both ends, an independent Cartesian
    geodesic (scipy's DOP853 on x'' = −(x'ᵀ∇²F x'/|∇F|²)∇F) from t₁ along t₁ − p ends at t₂ along q − t₂, and
    the string presses on the surface all along it (x'ᵀ∇²F x' > 0: it does not lift off)."""
    p, q = np.array(DEEP_P), np.array(DEEP_Q)
    wrapped, t1, t2, arc = shortest_path(p, q, *THIN)
    k1, k2 = np.zeros(3), np.zeros(3)
    assert wrapped and abs(torus_path(p, q, *THIN, 0, 0, k1, k2) - arc) <= 1e-12 * THIN[1]
    assert np.abs(k1 - t1).max() <= 1e-12 and np.abs(k2 - t2).max() <= 1e-12
    for t, other in ((t1, p), (t2, q)):
        value, gradient, _ = thin_geometry(t)
        cosine = np.dot(gradient, other - t) / np.linalg.norm(gradient) / np.linalg.norm(other - t)
        assert abs(value) < 1e-17 and abs(cosine) < 1e-11

    def rate(_, y):
        x, v = y[:3], y[3:]
        _, gradient, hessian = thin_geometry(x)
        return np.concatenate([v, -(v @ hessian @ v) / (gradient @ gradient) * gradient])

    start = (t1 - p) / np.linalg.norm(t1 - p)
    solution = solve_ivp(rate, (0, float(arc)), np.concatenate([t1, start]), method="DOP853", rtol=1e-13, atol=1e-16,
                         dense_output=True)
    end = solution.y[:, -1]
    assert np.abs(end[:3] - t2).max() < 1e-10
    assert np.abs(end[3:] / np.linalg.norm(end[3:]) - (q - t2) / np.linalg.norm(q - t2)).max() < 1e-8
    samples = solution.sol(np.linspace(0, float(arc), 201))
    assert min(samples[3:, i] @ thin_geometry(samples[:3, i])[2] @ samples[3:, i] for i in range(201)) > 0


@needs_numba
def test_a_failure_raises_naming_the_muscle_the_wrap_and_the_state():
    """(The numpy route raises at the same segment, after its three initial guesses: 24 s, not run here.)"""
    assert torus_path(np.array(THIN_P), np.array(THIN_Q), *THIN, 0, 0, np.zeros(3), np.zeros(3)) == FAILED
    b = ModelBuilder().add_coordinate("q1")
    b.add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
    ring = WrapTorus(name="thin", body="ground", outer_radius=THIN[0], inner_radius=THIN[1])
    b.add_muscle("tendon", [("ground", THIN_P), ("link", THIN_Q)], wraps=[PathWrap(ring)])
    model = b.build("compiled")
    q = np.array([[4 * np.pi / 3], [0.0]])  # (at the first state the ring is wrapped)
    message = r"muscle `tendon`, wrap `thin`: at state \(1,\) \(coordinates q = \[0\.0\]\).*no path round the inner side"
    with pytest.raises(ConfigurationError, match=message):
        model.muscle_lengths(q)
