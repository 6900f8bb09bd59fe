"""The seed's shoulder tracking and force sharing (validation/shoulder_pipeline.py, seed 002 Section 4-4 C)."""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron.algorithms.muscles.hill import rigid_tendon_force
from validation import shoulder_pipeline as pipeline


@pytest.fixture(scope="module")
def model():
    return mbkron.load_model(pipeline.MODEL)


@pytest.fixture(scope="module")
def tracking(model):
    return pipeline.track(model, samples=21)


def test_tracking_error_is_below_the_seeds_bound(tracking):
    assert tracking.max_error.max() < 2e-4  # the seed's claim for the elevation
    assert tracking.max_error.max() < 1e-7  # RKF45 at rtol 1e-8 does far better
    np.testing.assert_allclose(np.degrees(tracking.q[[0, -1], 1]), [15.0, 105.0], atol=1e-5)


def test_torques_satisfy_the_equations_of_motion(model, tracking):
    K = np.array([100.0, 100.0, 1000.0])
    for t, q, qd, qdd, tau in zip(tracking.t, tracking.q, tracking.qd, tracking.qdd, tracking.tau):
        # Eq. 201 written out here, independently of the pipeline
        s = t / 1.0
        span = np.radians(90.0)
        q_des = np.radians([90.0, 15.0, -30.0]) + [0, span * (10 * s**3 - 15 * s**4 + 6 * s**5), 0]
        qd_des = np.array([0, span * (30 * s**2 - 60 * s**3 + 30 * s**4), 0])
        qdd_des = np.array([0, span * (60 * s - 180 * s**2 + 120 * s**3), 0])
        commanded = qdd_des - 2 * K * (qd - qd_des) - K**2 * (q - q_des)
        np.testing.assert_allclose(tau, model.inverse_dynamics(q, qd, commanded), rtol=0, atol=1e-12)
        np.testing.assert_allclose(qdd, commanded, rtol=0, atol=1e-9)  # the simulated run obeyed τ
        # near-perfect tracking: τ is the inverse dynamics of the desired motion
        np.testing.assert_allclose(tau, model.inverse_dynamics(q_des, qd_des, qdd_des), rtol=0, atol=1e-4)
    assert 2.0 < np.abs(tracking.tau[:, 1]).max() < 4.0  # lifting a 2 kg arm, centre of mass 0.14 m out


def test_force_sharing_reproduces_the_torques(model, tracking):
    params = [path.hill for path in model.muscle_set.paths]
    for i in (0, 10, 20):
        q, qd, tau = tracking.q[i], tracking.qd[i], tracking.tau[i]
        share = pipeline.share_forces(model, q, qd, tau)
        assert share.feasible and share.residual < pipeline.FEASIBILITY_TOLERANCE
        assert np.all((share.activations >= 0) & (share.activations <= 1))
        forces = rigid_tendon_force(share.activations, model.muscle_lengths(q), model.muscle_velocities(q, qd), params)
        np.testing.assert_allclose(forces, share.forces, rtol=1e-14, atol=0)
        np.testing.assert_allclose(model.moment_arms(q) @ forces, tau, rtol=0, atol=1e-6)
        # optimality (KKT): for activations strictly inside (0, 1), ∇Σa² = 2a lies in the span of the
        # balance's gradients ∂(R F)/∂a (central differences)
        a, h = share.activations, 1e-6
        lengths, velocities = model.muscle_lengths(q), model.muscle_velocities(q, qd)
        jacobian = np.column_stack([
            model.moment_arms(q) @ (rigid_tendon_force(a + h * e, lengths, velocities, params)
                                    - rigid_tendon_force(a - h * e, lengths, velocities, params)) / (2 * h)
            for e in np.eye(a.size)])
        free = (a > 1e-6) & (a < 1 - 1e-6)
        multipliers = np.linalg.lstsq(jacobian[:, free].T, 2 * a[free], rcond=None)[0]
        np.testing.assert_allclose(jacobian[:, free].T @ multipliers, 2 * a[free], rtol=0, atol=1e-4 * a.max())


def test_excessive_torque_is_reported_infeasible_with_its_residual(model, tracking):
    share = pipeline.share_forces(model, tracking.q[10], tracking.qd[10], np.array([0.0, 1e4, 0.0]))
    assert not share.feasible and share.residual > 1e3 and "infeasible" in share.message
