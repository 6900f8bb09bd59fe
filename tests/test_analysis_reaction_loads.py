"""Joint reactions with every load the inverse dynamics includes: a path spring against the same forces given
as explicit point forces (computed here by hand from the points' positions and velocities), coordinate limit
forces as generalized forces inside their joints, and muscle tensions over a wrapping surface (the tangent
points' forces on the wrap body)."""

from __future__ import annotations

import numpy as np
import pytest

from mbkron import analysis
from mbkron.analysis.motion import TrialKinematics
from mbkron.multibody.loads import CoordinateLimitForce, PointForce
from mbkron.model.builder import ModelBuilder
from mbkron.multibody.muscles.springs import PathSpring
from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder

SPRING = (("ground", (0.05, 0.2, 0.1)), ("b", (0.1, 0.03, 0.02)), ("c", (0.2, -0.02, 0.04)))
STIFFNESS, RESTING, DISSIPATION = 800.0, 0.05, 0.3
LIMIT = CoordinateLimitForce("q2", upper_stiffness=40.0, upper_limit=0.2, lower_stiffness=60.0, lower_limit=-0.3,
                             transition=0.1, damping=0.5)


def builder() -> ModelBuilder:
    """Three links: about z, about the first link's y, about the second's z; a cylinder on the middle link."""
    b = ModelBuilder().add_coordinate("q1").add_coordinate("q2").add_coordinate("q3")
    b.add_body("a", axis=(0, 0, 1), variable="q1", mass=2.0, com=(0.15, 0, 0), inertia=(0.01, 0.02, 0.02))
    b.add_body("b", parent="a", axis=(0, 1, 0), variable="q2", mass=1.5, offset=(0.3, 0, 0), com=(0.12, 0.01, 0),
               inertia=(0.01, 0.015, 0.012))
    b.add_body("c", parent="b", axis=(0, 0, 1), variable="q3", mass=1.0, offset=(0.3, 0, 0), com=(0.1, 0, 0.01),
               inertia=(0.005, 0.008, 0.008))
    return b


def trial(model, n: int = 40) -> TrialKinematics:
    rng = np.random.default_rng(13)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    return TrialKinematics(np.arange(n) * 0.01, q, qd, qdd, model.coordinates, (), None, "random states")


def spring_point_forces(model, q, qd):
    """The path spring's forces at its three points (n, 3, 3), by hand: ``T u`` pulling the ends together,
    ``T`` = k·max(L − L₀, 0)·(1 + d·L̇) with ``L̇`` from the points' velocities."""
    kin = model.kinematics(q, 1)
    positions, velocities = [], []
    for body, point in SPRING:
        p = np.append(point, 1.0)
        if body == "ground":
            positions.append(np.broadcast_to(point, q.shape[:-1] + (3,)))
            velocities.append(np.zeros(q.shape[:-1] + (3,)))
            continue
        i = model.body_index(body)
        positions.append((kin.T[:, i] @ p)[:, :3])
        velocities.append(np.einsum("nkxy,y,nk->nx", kin.twists[:, i] @ kin.T[:, i, None], p, qd)[:, :3])
    pieces = [positions[j + 1] - positions[j] for j in range(2)]
    lengths = [np.linalg.norm(piece, axis=-1) for piece in pieces]
    units = [piece / length[:, None] for piece, length in zip(pieces, lengths)]
    speed = sum((units[j] * (velocities[j + 1] - velocities[j])).sum(-1) for j in range(2))
    stretch = lengths[0] + lengths[1] - RESTING
    assert np.all(stretch > 0)
    tension = STIFFNESS * stretch * (1 + DISSIPATION * speed)
    return np.stack([units[0], units[1] - units[0], -units[1]], axis=1) * tension[:, None, None]


def test_a_path_spring_pulls_like_the_point_forces_it_applies():
    spring = PathSpring("band", SPRING, STIFFNESS, RESTING, DISSIPATION)
    with_spring = builder().add_load(spring).build()
    plain = builder().build()
    explicit = builder()
    for j, (body, point) in enumerate(SPRING[1:], start=1):  # (the ground point's force acts on no body)
        explicit.add_load(PointForce(body, point, lambda t, q, qd, j=j: spring_point_forces(plain, q, qd)[:, j]))
    explicit = explicit.build()
    kinematics = trial(plain)
    # the inverse dynamics (the spring by R T, Eq. 192) agree: the explicit forces are the spring's
    np.testing.assert_allclose(analysis.inverse_dynamics(with_spring, kinematics).tau,
                               analysis.inverse_dynamics(explicit, kinematics).tau, rtol=0, atol=1e-10)
    for frame in ("ground", "child"):
        result, expected = (analysis.joint_reactions(model, kinematics, frame=frame)
                            for model in (with_spring, explicit))
        np.testing.assert_allclose(result.force, expected.force, rtol=0, atol=1e-10)
        np.testing.assert_allclose(result.moment, expected.moment, rtol=0, atol=1e-10)
    # and the spring does change them
    assert np.abs(analysis.joint_reactions(plain, kinematics).force - result.force).max() > 1.0


def axes(model, q):
    """The joints' axes in the ground frame (n, 3 joints, 3)."""
    T = model.kinematics(q, 0).T
    return np.stack([T[:, i, :3, :3] @ model.body_records[i].rotation_axis for i in range(3)], axis=1)


def test_coordinate_limit_forces_act_inside_their_joint():
    """The reaction moment about each joint's axis is the coordinate's inverse-dynamics τ plus the coordinate
    limit force (both act inside the joint); the limit's q spans both limits and the range between."""
    model = builder().add_load(LIMIT).build()
    kinematics = trial(model)
    assert (kinematics.q[:, 1] > 0.3).any() and (kinematics.q[:, 1] < -0.4).any()
    tau = analysis.inverse_dynamics(model, kinematics).tau
    result = analysis.joint_reactions(model, kinematics)
    # the limit force by hand: beyond the transition the full stiffness and damping act
    q, qd = kinematics.q[:, 1], kinematics.qd[:, 1]
    limit = np.where(q > 0.3, -40.0 * (q - 0.2) - 0.5 * qd, np.where(q < -0.4, 60.0 * (-0.3 - q) - 0.5 * qd, np.nan))
    beyond = np.isfinite(limit)
    projected = np.einsum("njx,njx->nj", axes(model, kinematics.q), result.moment)
    np.testing.assert_allclose(projected[beyond, 1], tau[beyond, 1] + limit[beyond], rtol=0, atol=1e-10)
    inside = (kinematics.q[:, 1] > -0.3) & (kinematics.q[:, 1] < 0.2)
    np.testing.assert_allclose(projected[inside], tau[inside], rtol=0, atol=1e-10)
    assert beyond.sum() > 5 and inside.sum() > 5


@pytest.mark.parametrize("wrap", [False, True])
def test_muscle_tensions_over_a_wrap_take_their_moments_off_every_joint(wrap):
    """With tensions F the reaction moment about each axis is τ − R F; over a cylinder on the middle link the
    tangent points' forces act on that link."""
    b = builder()
    cylinder = WrapCylinder(name="elbow", body="b", translation=(0.3, 0.0, 0.0), radius=0.04, length=1.0)
    b.add_muscle("m", [("a", (0.1, 0.05, 0.02)), ("b", (0.1, 0.05, 0.0)), ("c", (0.15, 0.06, 0.01))],
                 wraps=[PathWrap(cylinder)] if wrap else [])
    b.add_muscle("n", [("ground", (0.0, -0.1, 0.0)), ("c", (0.2, -0.03, 0.0))])
    model = b.build()
    kinematics = trial(model)
    if wrap:
        wrapped = model.muscle_set.path_points(model.kinematics(kinematics.q, 0)).wrapped[:, 0]
        assert 5 < wrapped.sum() < len(wrapped) - 5
    tension = np.random.default_rng(3).uniform(10, 500, (kinematics.time.size, 2))
    tau = analysis.inverse_dynamics(model, kinematics).tau
    result = analysis.joint_reactions(model, kinematics, muscle_forces=tension)
    muscular = np.einsum("nkm,nm->nk", model.moment_arms(kinematics.q), tension)
    projected = np.einsum("njx,njx->nj", axes(model, kinematics.q), result.moment)
    np.testing.assert_allclose(projected, tau - muscular, rtol=0, atol=1e-10)
