"""Musculotendon paths and the moment-arm matrix (Definitions 2-5, Eq. 149-195) against independent routes.

References used here, none of which calls mbkron's muscle code:
- the exact chain rule: L = Σ|p_{s+1} − p_s| with the world transforms and their derivatives from
  sympy (``tests.test_kinematics.leibniz_reference``) and moving-point offsets from sympy;
- 8th-order central differences of L(q);
- closed forms (a point sliding on the ground, a two-point muscle as a ``LineForce`` load);
- the seed's literal forms (Eq. 171, 176, 193, 195) are checked against the fast path.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.numerics.functions import CubicSpline
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.multibody.loads import LineForce
from mbkron.multibody.muscles import MovingPoint, MusclePath, add_moving_point_bodies
from mbkron.reference import muscle_paths as literal
from tests.random_trees import build_model, random_tree
from tests.test_kinematics import assert_close, first_difference, leibniz_reference

RTOL = 1e-10


def random_paths(rng, spec, n_muscles=6, moving=True):
    """Paths over many bodies: ground points, repeated bodies, and (optionally) moving points given
    as sympy expressions or fmm splines, some next to a fixed point on the same body."""
    q = spec.q
    nb = len(spec.joints)
    paths = []
    for m in range(n_muscles):
        points = []
        for n in range(int(rng.integers(2, 7))):
            b = int(rng.integers(-1, nb))
            body = "ground" if b < 0 else f"b{b}"
            location = tuple(rng.uniform(-0.3, 0.3, 3))
            if moving and rng.random() < 0.35:
                k = int(rng.integers(len(q)))
                a = [sympy.Float(round(float(x), 3)) for x in rng.uniform(-0.1, 0.1, 3)]
                knots = np.linspace(-4, 4, 6)
                spline = CoordinateFunction(CubicSpline(knots, rng.uniform(-0.05, 0.05, 6), kind="fmm"), q[k].name)
                components = [location[0] + a[0] * sympy.sin(q[k]) + a[1] * q[(k + 1) % len(q)] ** 2,
                              (location[1], spline), location[2] + a[2] * sympy.cos(q[k] * q[(k + 1) % len(q)])]
                points.append(("fixed", body, location))  # a fixed point just before it, same body
                points.append(("moving", body, components))
            else:
                points.append(("fixed", body, location))
        paths.append(points)
    return paths


def as_muscle_paths(paths):
    out = []
    for m, points in enumerate(paths):
        described = [MovingPoint(body, value) if kind == "moving" else (body, value) for kind, body, value in points]
        out.append(MusclePath(f"m{m}", tuple(described)))
    return out


def with_muscles(spec, paths, zero_inertia_bodies=False):
    """The random tree with the muscles; moving points directly or as zero-inertia bodies."""
    model = build_model(spec)
    b = mbkron.ModelBuilder()
    for s in spec.q:
        b.add_coordinate(s.name)
    for name in model.bodies:
        r = model.body(name)
        kwargs = dict(parent=r.parent, joint=r.joint, offset=r.offset, mass=r.mass, com=r.com, inertia=r.inertia,
                      d=r.d, theta=r.theta)
        if r.joint == "revolute":
            kwargs.update(axis=r.rotation_axis, translation_axis=r.translation_axis)
        elif r.joint == "prismatic":
            kwargs.update(axis=r.translation_axis, rotation_axis=r.rotation_axis)
        else:
            kwargs.update(translation_axis=r.translation_axis, rotation_axis=r.rotation_axis)
        if r.joint != "fixed":
            kwargs["variable"] = spec.variables[int(name[1:])]
        b.add_body(name, **kwargs)
    for path in as_muscle_paths(paths):
        points = list(path.points)
        if zero_inertia_bodies:
            points = [add_moving_point_bodies(b, f"{path.name}_p{n}", p) if isinstance(p, MovingPoint) else p
                      for n, p in enumerate(points)]
        b.add_muscle(path.name, points)
    return b.build()


def chain_rule_reference(spec, paths):
    """q ↦ (L, ∂L/∂q): sympy transforms and offsets, exact chain rule; no mbkron muscle code."""
    transforms = leibniz_reference(spec)
    q = spec.q
    compiled = []
    for points in paths:
        row = []
        for kind, body, value in points:
            b = -1 if body == "ground" else int(body[1:])
            if kind == "fixed":
                row.append((b, lambda x, v=np.array(value): (v, np.zeros((3, len(q))))))
            else:
                parts = [c if isinstance(c, sympy.Expr) else sympy.Float(c[0]) for c in value]
                spline = value[1][1]
                column = [s.name for s in q].index(spline.coordinate)
                f = sympy.lambdify([q], [parts, [[p.diff(s) for s in q] for p in parts]])

                def evaluate(x, f=f, spline=spline, column=column):
                    v, dv = (np.array(a, dtype=float) for a in f(x))
                    s, ds, _ = spline.function.evaluate(x[column], 1)
                    v[1] += s
                    dv[1, column] += ds
                    return v, dv
                row.append((b, evaluate))
        compiled.append(row)

    def evaluate(x):
        T, dT, _ = transforms(x)
        lengths, gradients = [], []
        for row in compiled:
            positions, jacobians = [], []
            for b, local in row:
                r, dr = local(x)
                if b < 0:
                    positions.append(r)
                    jacobians.append(dr)
                else:
                    positions.append(T[b, :3, :3] @ r + T[b, :3, 3])
                    jacobians.append(np.einsum("kxy,y->xk", dT[b], np.append(r, 1.0))[:3] + T[b, :3, :3] @ dr)
            L, dL = 0.0, np.zeros(len(q))
            for s in range(len(positions) - 1):
                delta = positions[s + 1] - positions[s]
                L += np.linalg.norm(delta)
                dL += delta / np.linalg.norm(delta) @ (jacobians[s + 1] - jacobians[s])
            lengths.append(L)
            gradients.append(dL)
        return np.array(lengths), np.array(gradients).T

    return evaluate


@pytest.fixture(scope="module", params=[0, 1, 2])
def case(request):
    rng = np.random.default_rng(700 + request.param)
    spec = random_tree(rng, nb=9 + request.param, nq=3)
    paths = random_paths(rng, spec)
    q = rng.uniform(-1.2, 1.2, size=(3, 3))
    return spec, paths, with_muscles(spec, paths), q


def test_paths_cross_many_bodies_with_moving_points(case):
    spec, paths, model, _ = case
    assert max(len({b for _, b, _ in p}) for p in paths) >= 3
    same_body_moving = [p for p in paths if any(k == "moving" and p[i - 1][1] == b for i, (k, b, _) in enumerate(p))]
    assert same_body_moving, "a moving point must follow a fixed point on the same body"
    nonlinear = [v for v in spec.variables if v is not None and any(sympy.diff(v, s).free_symbols for s in spec.q)]
    assert nonlinear


def test_lengths_and_moment_arms_equal_exact_chain_rule(case):
    spec, paths, model, qs = case
    reference = chain_rule_reference(spec, paths)
    for q in qs:
        L, dL = reference(q)
        assert_close(model.muscle_lengths(q), L)
        assert_close(model.moment_arms(q), -dL)


def test_moment_arms_equal_finite_differences(case):
    _, _, model, qs = case
    for q in qs:
        assert_close(model.moment_arms(q), -first_difference(model.muscle_lengths, q, 1e-3), rtol=1e-9)


def test_batched_equals_per_state(case):
    _, _, model, qs = case
    batch = np.stack([qs, qs[::-1]])  # (2, 3, nq)
    R = model.moment_arms(batch)
    assert R.shape == (2, 3, model.nq, len(model.muscles))
    for index in np.ndindex(2, 3):
        np.testing.assert_allclose(R[index], model.moment_arms(batch[index]), rtol=0, atol=1e-15)
        np.testing.assert_allclose(model.muscle_lengths(batch)[index], model.muscle_lengths(batch[index]), atol=1e-15)


def test_zero_inertia_bodies_agree_with_moving_points(case):
    spec, paths, model, qs = case
    bodies = with_muscles(spec, paths, zero_inertia_bodies=True)
    assert bodies.nb > model.nb
    for q in qs:
        assert_close(bodies.muscle_lengths(q), model.muscle_lengths(q), rtol=1e-13)
        assert_close(bodies.moment_arms(q), model.moment_arms(q), rtol=1e-12)
        assert_close(bodies.mass_matrix(q), model.mass_matrix(q), rtol=1e-12)


def test_seed_eq193_and_eq195_equal_fast_path(case):
    """The literal Definitions 2-5 and Eq. 176, 184, 193, 195 (moving points as zero-inertia bodies)."""
    spec, paths, _, qs = case
    model = with_muscles(spec, paths, zero_inertia_bodies=True)
    for q in qs:
        R = model.moment_arms(q)
        assert_close(literal.moment_arms_eq193(model, model.muscle_set.paths, q), R, rtol=1e-12)
        assert_close(literal.moment_arms_eq195(model, model.muscle_set.paths, q), R, rtol=1e-12)


def test_gamma_eq171_kronecker_equals_eq176_closed_form(case):
    _, _, model, qs = case
    kin = model.kinematics(qs[0], 1)
    for i in range(model.nb):
        star = literal.gamma_kronecker(kin, i)
        assert_close(star[:, :3], literal.gamma_closed_form(model, kin, i), rtol=1e-13)
        np.testing.assert_allclose(star[:, 3], 0.0, atol=1e-15)


def test_beta_gives_the_angular_velocity(case):
    """Eq. 180: ω_(i) = β_iᵀ ϑ J q̇ equals the body-frame angular velocity."""
    _, _, model, qs = case
    qd = np.array([0.3, -1.1, 0.7])
    kin = model.kinematics(qs[1], 1)
    J, theta = literal.joint_jacobian(model, kin)
    for i in range(model.nb):
        expected = model.angular_velocity(i, qs[1], qd, frame="body")
        assert_close(literal.beta(model, kin, i).T @ theta @ J @ qd, expected, rtol=1e-13)


def test_attachment_sequence_and_effective_points():
    b = mbkron.ModelBuilder().add_coordinate("q")
    b.add_body("a", axis=(0, 0, 1), variable="q", mass=1.0).add_body("c", parent="a", axis=(0, 0, 1), variable="q")
    b.add_muscle("m", [("ground", (0, 1, 0)), ("a", (1, 0, 0)), ("a", (2, 0, 0)), ("a", (3, 0, 0)), ("c", (0, 1, 0)),
                       ("a", (4, 0, 0))])
    model = b.build()
    runs = literal.attachment_sequence(model, model.muscle_set.paths[0])
    assert [r.body for r in runs] == [-1, 0, 1, 0]
    np.testing.assert_array_equal(runs[1].first, [1, 0, 0])
    np.testing.assert_array_equal(runs[1].last, [3, 0, 0])


def test_sliding_point_next_to_a_fixed_point_closed_form():
    """OpenSim's computeMomentArm skips segments whose two points are on one body; the segment
    between a fixed and a moving point on the ground still changes length: R = −x/√(x² + 0.01)."""
    x = sympy.Symbol("x")
    b = mbkron.ModelBuilder().add_coordinate("x")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="x", mass=1.0)
    b.add_muscle("m", [("ground", (0, 0, 0)), MovingPoint("ground", (x, 0.1, 0.0)), ("slider", (0.0, 0.3, 0.0))])
    model = b.build()
    for value in (-0.7, 0.2, 1.3):
        np.testing.assert_allclose(model.moment_arms([value])[0, 0], -value / np.hypot(value, 0.1), rtol=1e-14)
        np.testing.assert_allclose(model.muscle_lengths([value])[0], np.hypot(value, 0.1) + 0.2, rtol=1e-14)


def test_two_point_muscle_equals_line_force_load():
    rng = np.random.default_rng(5)
    spec = random_tree(rng, nb=6, nq=3)
    paths = [[("fixed", "b1", (0.1, 0.2, 0.0)), ("fixed", "b5", (0.0, -0.1, 0.2))]]
    model = with_muscles(spec, paths)
    q, qd = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    load = LineForce("b1", (0.1, 0.2, 0.0), "b5", (0.0, -0.1, 0.2), tension=37.0)
    expected = model.applied_forces(q, qd, loads=(load,))
    assert_close(model.applied_forces(q, qd, loads=(), muscle_forces=[37.0]), expected, rtol=1e-13)


def test_muscle_forces_in_the_dynamics(case):
    _, _, model, qs = case
    q, qd, qdd = qs[0], np.array([0.2, -0.4, 0.9]), np.array([1.0, 0.5, -2.0])
    F = np.linspace(10.0, 60.0, len(model.muscles))
    R = model.moment_arms(q)
    tau = model.inverse_dynamics(q, qd, qdd)
    assert_close(model.inverse_dynamics(q, qd, qdd, muscle_forces=F), tau - R @ F, rtol=1e-12)
    assert_close(model.inverse_dynamics(q, qd, qdd, muscle_forces=lambda t, q, qd: F), tau - R @ F, rtol=1e-12)
    assert_close(model.forward_dynamics(q, qd, tau - R @ F, muscle_forces=F), qdd, rtol=1e-9)
    terms = model.equations_of_motion(q, qd, muscle_forces=F)
    assert_close(terms.applied_forces, model.applied_forces(q, qd) + R @ F, rtol=1e-12)


def test_muscle_velocities_are_length_rates(case):
    _, _, model, _ = case
    q0, qd = np.array([0.3, -0.2, 0.5]), np.array([0.7, -1.3, 0.4])
    rate = first_difference(lambda t: model.muscle_lengths(q0 + t * qd), np.zeros(1), 1e-3)[0]
    assert_close(model.muscle_velocities(q0, qd), rate, rtol=1e-9)


def test_simulate_with_muscle_forces():
    from mbkron.integrate.simulate import simulate
    b = mbkron.ModelBuilder(gravity=(0, 0, 0)).add_coordinate("q")
    b.add_body("link", axis=(0, 0, 1), variable="q", mass=1.0, com=(0.5, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_muscle("m", [("ground", (0.0, 0.1, 0.0)), ("link", (0.5, 0.0, 0.0))])
    model = b.build()
    constant = simulate(model, (0, 0.2), [0.0], method="RKF45", muscle_forces=[5.0], rtol=1e-10, atol=1e-12)
    by_callable = simulate(model, (0, 0.2), [0.0], method="RKF45", muscle_forces=lambda t, q, qd: [5.0],
                           rtol=1e-10, atol=1e-12, t_eval=constant.t)
    load = simulate(model, (0, 0.2), [0.0], method="RKF45", rtol=1e-10, atol=1e-12, t_eval=constant.t,
                    loads=(LineForce("ground", (0.0, 0.1, 0.0), "link", (0.5, 0.0, 0.0), 5.0),))
    assert constant.success and constant.q[-1, 0] > 0.01
    np.testing.assert_allclose(by_callable.q, constant.q, atol=1e-10)
    np.testing.assert_allclose(load.q, constant.q, atol=1e-10)


# ---------------------------------------------------------------------- bad input
def _one_link():
    return mbkron.ModelBuilder().add_coordinate("q").add_body("link", axis=(0, 0, 1), variable="q", mass=1.0)


def test_bad_descriptions_are_collected():
    b = _one_link()
    b.add_muscle("m1", [("femur", (0, 0, 0)), ("link", (1, 0, 0))])
    b.add_muscle("m2", [("link", (1, 0, 0)), ("ground", (0, 1, 0))], hill=-1)
    b.add_muscle("m3", [("link", (1, 0, 0))])
    b.add_muscle("m4", [("link", (1, 0, 0)), MovingPoint("link", (sympy.Symbol("knee"), 0, 0))])
    b.add_muscle("m1", [("link", (1, 0, 0)), ("ground", (0, 1, 0))])
    with pytest.raises(ModelError) as error:
        b.build()
    text = str(error.value)
    for expected in ("unknown body 'femur'", "muscle `m2`: `hill` must be", "at least 2 points", "unknown coordinate(s) knee",
                     "muscle `m1` is defined twice"):
        assert expected in text, expected


def test_bad_hill_parameters_are_reported():
    from mbkron.multibody.muscles.hill import HillParameters
    b = _one_link().add_muscle("m", [("link", (1, 0, 0)), ("ground", (0, 1, 0))], hill=HillParameters(-1.0, 0.1, 0.2, 2.0))
    with pytest.raises(ModelError, match="max_isometric_force.*positive.*\n.*pennation_angle"):
        b.build()


def test_zero_length_segment_at_evaluation_names_muscle_and_q():
    model = _one_link().add_muscle("m", [("ground", (1, 0, 0)), ("link", (1, 0, 0))]).build()
    with pytest.raises(ConfigurationError, match=r"muscle `m`: points 0 and 1 .* coincide at q = \[0.0\]"):
        model.moment_arms([0.0])
    assert model.muscle_lengths([0.5]) > 0


def test_moving_point_outside_its_data_range():
    spline = CubicSpline([0.0, 1.0, 2.0], [0.0, 0.1, 0.0], kind="fmm")
    point = MovingPoint("link", (0.5, CoordinateFunction(spline, "q"), 0.0))
    model = _one_link().add_muscle("m", [("ground", (0, 1, 0)), point]).build()
    model.muscle_lengths([1.5])
    with pytest.raises(ConfigurationError, match=r"moving point 1 of muscle `m`.*\[0, 2\].*q = \[2.5\]"):
        model.moment_arms([2.5])
    extrapolating = _one_link().add_muscle(
        "m", [("ground", (0, 1, 0)), MovingPoint("link", point.location, extrapolate=True)]).build()
    assert np.isfinite(extrapolating.moment_arms([2.5])).all()


def test_muscle_forces_shape_and_models_without_muscles():
    model = _one_link().add_muscle("m", [("ground", (0, 1, 0)), ("link", (1, 0, 0))]).build()
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 1\)"):
        model.inverse_dynamics([0.1], [0], [0], muscle_forces=[1.0, 2.0])
    bare = _one_link().build()
    assert bare.muscles == ()
    with pytest.raises(ConfigurationError, match="has no muscles"):
        bare.moment_arms([0.0])


def test_moving_point_symbols_are_matched_by_name_whatever_their_assumptions():
    """A sympy term in Symbol("q", real=True) (as the expression parser makes) has the gradient of
    one in Symbol("q") — it used to be silently zero."""
    real, plain = sympy.Symbol("q", real=True), sympy.Symbol("q")
    models = []
    for symbol in (real, plain):
        b = mbkron.ModelBuilder().add_coordinate("q")
        b.add_body("link", axis=(0, 0, 1), variable="q")
        b.add_muscle("m", [("ground", (0.0, 0.1, 0.0)), MovingPoint("link", (0.5 + 0.1 * sympy.sin(symbol), 0.0, 0.0))])
        models.append(b.build())
    q = np.array([0.3])

    def length(x):
        return np.linalg.norm((0.5 + 0.1 * np.sin(x)) * np.array([np.cos(x), np.sin(x)]) - np.array([0.0, 0.1]))

    h = 1e-6
    expected = -(length(q[0] + h) - length(q[0] - h)) / (2 * h)
    for model in models:
        assert abs(model.moment_arms(q)[0, 0] - expected) < 1e-9
