"""Wrapped paths in the dissertation as written (`mbkron.reference`): the literal Eq. 193/195 on the polyline through the tangent points
held in their wrap bodies (`MuscleSet.located_paths`), against the engine's exact moment arms (two links with
cylinder, sphere, ground-fixed, moving-point and conditional-point paths; Rajagopal2016 at random poses) and
against one-sided differences of the wrapped length within 1e-6 of engagement."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import mbkron
from mbkron import reference
from mbkron.multibody.muscles.conditions import PathPointCondition
from mbkron.reference.muscle_paths import attachment_sequence, moment_arms_eq193, moment_arms_eq195
from mbkron.multibody.muscles.points import MovingPoint
from mbkron.algorithms.paths.wrap_paths import TANGENT_TOLERANCE
from mbkron.multibody.muscles.wrapping import PathWrap, WrapSphere
from tests.test_wrapping import arm_builder, engagements, forward
from validation.opensim.compare_wrapping import model_text


def arm_model():
    """tests/test_wrapping.py's two links (shoulder about z, elbow about the upper link's y; a cylinder on the
    upper link, a sphere on the lower one; a one-wrap, a two-wrap and a ranged path), plus a path over a
    ground-fixed sphere and a wrapped path with a moving point and a conditional point."""
    b, cylinder = arm_builder()
    fixed = WrapSphere(name="shoulder", body="ground", translation=(0.0, 0.0, 0.02), radius=0.025)
    b.add_muscle("grounded", [("ground", (-0.08, 0.01, 0.03)), ("upper", (0.15, -0.01, 0.02))], wraps=[PathWrap(fixed)])
    q2 = sympy.Symbol("q2")
    b.add_muscle("sliding", [("upper", (0.1, -0.02, 0.04)),
                             ("upper", (0.25, 0.0, 0.045), PathPointCondition("q2", -0.5, 1.0)),
                             MovingPoint("lower", (0.2 + 0.02 * sympy.sin(q2), 0.01, 0.03 + 0.01 * q2)),
                             ("lower", (0.3, 0.0, 0.01))],
                 wraps=[PathWrap(cylinder, (1, 3))])
    return b.build()


def assert_equal_moment_arms(R, reference):
    """Equal to 1e-12 relative to each path's largest moment arm at each state."""
    scale = np.abs(reference).max(axis=-2, keepdims=True)
    assert np.all(scale > 0)
    assert np.all(np.abs(R - reference) <= 1e-12 * scale)


def test_reference_moment_arms_equal_the_engine_with_wraps_engaged_and_not():
    model = arm_model()
    q = np.random.default_rng(17).uniform(-2.5, 2.5, (60, 2))
    wrapped = model.muscle_set.path_points(model.kinematics(q, 0)).wrapped
    assert wrapped.any(axis=0).all() and (~wrapped).any(axis=0).all()  # every wrap wraps and unwraps somewhere
    assert_equal_moment_arms(reference.moment_arms(model, q), model.moment_arms(q))


def test_located_paths_put_the_tangent_points_in_their_wrap_bodies():
    model = arm_model()
    ms = model.muscle_set
    q = np.random.default_rng(5).uniform(-2.5, 2.5, (400, 2))
    nodes = ms.path_points(model.kinematics(q, 0))
    of_two = ms.wrapping.wrap_muscles() == model.muscles.index("two")
    both = np.flatnonzero(nodes.wrapped[:, of_two].all(axis=-1))
    assert both.size > 5
    for i in both[:10]:  # `two` wraps over the cylinder and the sphere
        T = model.kinematics(q[i], 0).T
        located = ms.located_paths(q[i], T)
        two = located[model.muscles.index("two")]
        # origin, upper point, T1, T2 (cylinder, on `upper`), T1, T2 (sphere, on `lower`), insertion
        assert [body for body, _ in two.points] == ["ground", "upper", "upper", "upper", "lower", "lower", "lower"]
        ground = [x if body == "ground" else T[model.body_index(body), :3, :3] @ x + T[model.body_index(body), :3, 3]
                  for body, x in two.points]
        # the tangent points of wraps 1 to 4 (`two`'s), back in the ground
        tangent = nodes.positions[i, nodes.n_points + 2:nodes.n_points + 6]
        np.testing.assert_allclose(ground[2:6], tangent, rtol=0, atol=10 * TANGENT_TOLERANCE)
        # the literal Eq. 193 and Eq. 195 give the same columns
        np.testing.assert_allclose(moment_arms_eq193(model, located, q[i]), moment_arms_eq195(model, located, q[i]),
                                   rtol=0, atol=1e-15)
        # the wrap body's run: T1 and T2 are its effective points (Definition 2)
        runs = attachment_sequence(model, two)
        assert [run.body for run in runs] == [-1, 0, 1]
    with pytest.raises(ValueError, match="`T`"):
        ms.located_paths(q[0])


def test_reference_moment_arms_within_1e_6_of_engagement_are_one_sided_derivatives_and_c1():
    """The literal Eq. 195's R against one-sided differences of the wrapped L on both sides of engagement."""
    model = arm_model()
    muscle = model.muscles.index("one")  # a single wrap: L is C¹ through its engagement
    for a, b, direction in engagements(model, muscle, np.random.default_rng(23), 10):
        for side, start in ((1.0, b + 1e-6 * direction), (-1.0, a - 1e-6 * direction)):
            arms = reference.moment_arms(model, start)[:, muscle]
            one_sided = forward(lambda x: model.muscle_lengths(x)[..., muscle], start, side * direction)
            assert abs(-one_sided - side * direction @ arms) < 1e-9
        assert np.abs(reference.moment_arms(model, b)[:, muscle] - reference.moment_arms(model, a)[:, muscle]).max() < 1e-7


def test_reference_moment_arms_equal_the_engine_on_rajagopal(tmp_path):
    path = tmp_path / "Rajagopal2016.osim"
    path.write_text(model_text("Rajagopal2016"))
    model = mbkron.load_model(path)
    rng = np.random.default_rng(29)
    low, high = (np.array([c.range[i] for c in model.coordinate_records]) for i in (0, 1))
    q = rng.uniform(np.maximum(low, -1.0), np.minimum(high, 1.0), (30, model.nq))
    kin = model.kinematics(q, 1)
    wrapped = model.muscle_set.path_points(kin).wrapped
    assert 0.2 < wrapped.mean() < 0.8  # wraps engaged and not
    # the reference's R (Eq. 195, state by state) on the engine's kinematics: its own Kronecker
    # recursion (Eq. 74/77, 89) over Rajagopal's 39 coordinates takes seconds per state (tests/test_reference.py
    # proves the kinematics equal)
    assert_equal_moment_arms(reference.moment_arms(model, q, kin), model.moment_arms(q))
