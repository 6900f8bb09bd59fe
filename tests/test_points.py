"""The point Jacobians (Eq. 44–46, 75, 180) and the bodies' velocity and acceleration twists (Eq. 57): one compiled
implementation each (:mod:`mbkron.algorithms.kinematics.points_kernels`, :func:`mbkron.algorithms.dynamics.kernels.body_motions`), against the
dissertation as written (the literal ``D_i``, ``D'_i`` of :mod:`mbkron.reference`), central differences of point
positions and the closed forms of a planar two-link arm."""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron import reference
from mbkron.algorithms.dynamics.points import body_motions, jacobians
from tests.random_trees import build_model, random_tree


def assert_close(actual, expected, rtol):
    """Equal to ``rtol`` relative to the expected array's largest entry (at least 1)."""
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def axial(skew):
    """The vector of the skew-symmetric blocks ``skew[..., :3, :3]``."""
    return np.stack([skew[..., 2, 1], skew[..., 0, 2], skew[..., 1, 0]], axis=-1)


@pytest.fixture(scope="module", params=range(4))
def tree_model(request):
    rng = np.random.default_rng(700 + request.param)
    return build_model(random_tree(rng, nb=int(rng.integers(2, 9)), nq=int(rng.integers(1, 5))))


def _body_points(model, rng):
    """Every body (and the ground, −1) with a random local point on it."""
    return list(range(-1, model.nb)), rng.uniform(-0.5, 0.5, size=(model.nb + 1, 3))


def _ground_points(model, kin, bodies, local):
    """The local points of ``bodies`` in the ground frame at the states of ``kin`` (Eq. 41; the ground's as given)."""
    out = np.empty(kin.q.shape[:-1] + (len(bodies), 3))
    for e, (b, p) in enumerate(zip(bodies, local)):
        out[..., e, :] = p if b < 0 else (kin.T[..., b, :3, :3] @ p) + kin.T[..., b, :3, 3]
    return out


@pytest.mark.parametrize("batch", [(), (3,)])
def test_point_jacobians_equal_the_literal_D(tree_model, batch):
    """``∂p/∂q_k = D_ik {p; 1}`` and ``∂ω/∂q̇_k`` the axial vector of ``D_ik T_i⁻¹`` (Eq. 44–46, 77, 180), from the
    reference's literal Kronecker-layout ``D_i``; the ground's rows are zero."""
    model = tree_model
    rng = np.random.default_rng(5)
    q = rng.uniform(-1.2, 1.2, size=batch + (model.nq,))
    bodies, local = _body_points(model, rng)
    kin = model.kinematics(q, 1)
    J = jacobians(model, kin, bodies, _ground_points(model, kin, bodies, local))
    expected = reference.kinematics(model, q, 1)
    assert J.shape == batch + (len(bodies), 6, model.nq)
    np.testing.assert_array_equal(J[..., 0, :, :], 0.0)
    for e, (b, p) in enumerate(zip(bodies[1:], local[1:]), start=1):
        dT = expected.dT[..., b, :, :, :]  # (..., nq, 4, 4)
        linear = np.swapaxes(dT[..., :3, :3] @ p + dT[..., :3, 3], -1, -2)
        angular = np.swapaxes(axial(dT @ np.linalg.inv(expected.T[..., b, None, :, :])), -1, -2)
        assert_close(J[..., e, :3, :], linear, 1e-12)
        assert_close(J[..., e, 3:, :], angular, 1e-12)


def test_point_jacobians_equal_central_differences(tree_model):
    """``∂p/∂q`` equals central differences of the points' positions (step 1e-5: truncation ~1e-10 times the
    positions' third derivatives, rounding ~1e-11)."""
    model = tree_model
    rng = np.random.default_rng(6)
    q = rng.uniform(-1.0, 1.0, size=model.nq)
    bodies, local = _body_points(model, rng)
    J = jacobians(model, model.kinematics(q, 1), bodies, _ground_points(model, model.kinematics(q, 1), bodies, local))
    h = 1e-5
    for k in range(model.nq):
        step = np.zeros(model.nq)
        step[k] = h
        plus, minus = (_ground_points(model, model.kinematics(q + s, 0), bodies, local) for s in (step, -step))
        assert_close(J[:, :3, k], (plus - minus) / (2 * h), 1e-8)


def _planar_arm(l1=0.7, l2=0.45):
    b = mbkron.ModelBuilder(name="planar-arm", gravity=(0.0, -9.81, 0.0))
    b.add_coordinate("q1").add_coordinate("q2")
    b.add_body("upper", axis=(0, 0, 1), variable="q1", mass=1.0, com=(0.3, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_body("fore", parent="upper", axis=(0, 0, 1), variable="q2", offset=(l1, 0, 0), mass=1.0, com=(0.2, 0, 0),
               inertia=np.eye(3) * 0.01)
    return b.build()


def test_planar_arm_closed_forms():
    """The hand ``p = l₁ (cos q₁, sin q₁) + l₂ (cos(q₁+q₂), sin(q₁+q₂))`` of a planar two-link arm: its Jacobian,
    the forearm's ``∂ω/∂q̇ = ẑ (1, 1)``, and its velocity and acceleration from ``V`` and ``T̈ T⁻¹ = α + V²``
    (Eq. 57) against ``ṗ = J q̇`` and ``p̈ = J q̈ + J̇ q̇`` written out."""
    l1, l2 = 0.7, 0.45
    model = _planar_arm(l1, l2)
    q, qd, qdd = np.array([0.4, -1.1]), np.array([1.3, -0.6]), np.array([-2.0, 0.7])
    s1, c1, s12, c12 = np.sin(q[0]), np.cos(q[0]), np.sin(q.sum()), np.cos(q.sum())
    kin = model.kinematics(q, 1)
    p = np.array([l1 * c1 + l2 * c12, l1 * s1 + l2 * s12, 0.0])
    J = jacobians(model, kin, [1], p[None])[0]
    linear = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12], [0.0, 0.0]])
    assert_close(J[:3], linear, 1e-15)
    assert_close(J[3:], np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), 1e-15)
    V, alpha = body_motions(model, kin, qd, qdd)
    w, v, dw, dv = V[1, :3], V[1, 3:], alpha[1, :3], alpha[1, 3:]
    rate = qd.sum()
    velocity = np.array([-l1 * s1 * qd[0] - l2 * s12 * rate, l1 * c1 * qd[0] + l2 * c12 * rate, 0.0])
    acceleration = np.array([-l1 * (s1 * qdd[0] + c1 * qd[0] ** 2) - l2 * (s12 * qdd.sum() + c12 * rate ** 2),
                             l1 * (c1 * qdd[0] - s1 * qd[0] ** 2) + l2 * (c12 * qdd.sum() - s12 * rate ** 2), 0.0])
    assert_close(np.cross(w, p) + v, velocity, 1e-14)
    assert_close(np.cross(dw, p) + dv + np.cross(w, np.cross(w, p) + v), acceleration, 1e-14)
    assert_close(w, np.array([0.0, 0.0, rate]), 1e-15)
    assert_close(dw, np.array([0.0, 0.0, qdd.sum()]), 1e-15)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_body_motions_equal_the_literal_D(tree_model, batch):
    """``V_i = Σ_k (∂T_i/∂q_k) T_i⁻¹ q̇_k`` and ``α_i + V_i² = T̈_i T_i⁻¹`` with ``T̈_i = Σ_k D_ik q̈_k + Σ_kl D'_ikl
    q̇_k q̇_l`` (Eq. 57, 77, 89), from the reference's literal ``D_i``, ``D'_i``; the convective terms ``q̇ᵀ H_j q̇``
    of the nonlinear joint variables from their Hessians."""
    model = tree_model
    rng = np.random.default_rng(8)
    q, qd, qdd = rng.uniform(-1.2, 1.2, size=(3,) + batch + (model.nq,))
    kin = model.kinematics(q, 2)
    convective = np.einsum("...jkl,...k,...l->...j", kin.hess, qd, qd)
    V, alpha = body_motions(model, kin, qd, qdd, convective)
    expected = reference.kinematics(model, q, 2)
    inverse = np.linalg.inv(expected.T)
    velocity = np.einsum("...ikxy,...k->...ixy", expected.dT, qd) @ inverse
    second = (np.einsum("...ikxy,...k->...ixy", expected.dT, qdd)
              + np.einsum("...iklxy,...k,...l->...ixy", expected.d2T, qd, qd)) @ inverse
    assert_close(axial(velocity), V[..., :3], 1e-12)
    assert_close(velocity[..., :3, 3], V[..., 3:], 1e-12)
    squared = velocity @ velocity
    assert_close(axial(second - squared), alpha[..., :3], 1e-11)
    assert_close((second - squared)[..., :3, 3], alpha[..., 3:], 1e-11)


def test_points_must_match_bodies():
    """A points array whose shape does not fit the bodies is refused, naming `points` and its shape."""
    model = _planar_arm()
    with pytest.raises(ValueError, match=r"`points` must have shape \(\.\.\., 2, 3\) for 2 bodies, got \(1, 3\)"):
        jacobians(model, model.kinematics(np.zeros(2), 1), [0, 1], np.zeros((1, 3)))
