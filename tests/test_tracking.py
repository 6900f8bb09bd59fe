"""Computed-torque tracking (Eq. 200–201) and force sharing as package API (mbkron.analysis.tracking)."""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron.analysis.tracking import commanded_acceleration, computed_torque, share_forces, track
from mbkron.algorithms.muscles.hill import rigid_tendon_force

from tests.test_analysis_muscles import hinge_model

START = np.radians([30.0, 45.0])
AMPLITUDE = np.radians([20.0, -30.0])
OMEGA = 2 * np.pi


def desired(t):
    """A sinusoid about ``START`` on both joints, vectorised over ``t``."""
    t = np.asarray(t, dtype=float)[..., None]
    return (START + AMPLITUDE * np.sin(OMEGA * t), AMPLITUDE * OMEGA * np.cos(OMEGA * t),
            -AMPLITUDE * OMEGA**2 * np.sin(OMEGA * t))


@pytest.fixture(scope="module")
def arm():
    return mbkron.load_model("models/two_link_arm.toml")


def test_commanded_acceleration_is_eq_201():
    gains = np.array([10.0, 30.0])
    q, qd = np.array([0.7, 0.2]), np.array([-1.0, 2.0])
    t = 0.3
    q_des = START + AMPLITUDE * np.sin(OMEGA * t)
    qd_des = AMPLITUDE * OMEGA * np.cos(OMEGA * t)
    qdd_des = -AMPLITUDE * OMEGA**2 * np.sin(OMEGA * t)
    expected = qdd_des - 2 * gains * (qd - qd_des) - gains**2 * (q - q_des)
    np.testing.assert_allclose(commanded_acceleration(desired, gains, t, q, qd), expected, rtol=1e-15)


def test_computed_torque_is_the_inverse_dynamics_of_the_commanded_acceleration(arm):
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, t = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2), rng.uniform(0, 1)
        tau = computed_torque(arm, desired, 25.0, t, q, qd)
        np.testing.assert_allclose(tau, arm.inverse_dynamics(q, qd, commanded_acceleration(desired, 25.0, t, q, qd)),
                                   rtol=1e-12, atol=1e-12)


def test_tracking_follows_the_desired_motion(arm):
    run = track(arm, desired, np.array([20.0, 20.0]), (0.0, 1.0), samples=11, rtol=1e-9, atol=1e-11)
    assert run.max_error.max() < 1e-6 and run.max_rate_error.max() < 1e-5
    np.testing.assert_allclose(run.q_desired, desired(run.t)[0], rtol=0, atol=0)
    # the actuation is (nearly) the inverse dynamics of the desired motion itself
    np.testing.assert_allclose(run.tau, arm.inverse_dynamics(*desired(run.t)), rtol=0, atol=1e-3)
    # and the simulated accelerations obey Eq. 201
    for t, q, qd, qdd in zip(run.t, run.q, run.qd, run.qdd):
        np.testing.assert_allclose(qdd, commanded_acceleration(desired, 20.0, t, q, qd), rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="`samples` must be at least 2"):
        track(arm, desired, 20.0, (0.0, 1.0), samples=1)


def test_force_sharing_balances_the_torque_or_reports_infeasibility():
    model, arms = hinge_model([(0.05, 0.3, 1000.0), (0.03, 0.25, 400.0)], theta=0.2)
    q, qd = np.array([0.2]), np.array([0.0])
    share = share_forces(model, q, qd, np.array([5.0]))
    assert share.feasible and share.residual < 1e-6
    params = [p.hill for p in model.muscle_set.paths]
    forces = rigid_tendon_force(share.activations, model.muscle_lengths(q), model.muscle_velocities(q, qd), params)
    np.testing.assert_allclose(forces, share.forces, rtol=1e-14)
    assert arms @ forces == pytest.approx(5.0, abs=1e-6)
    # at rest at optimal fibre length (f_L = f_V = 1, no passive force) F = F_max a: min Σa² gives a ∝ R F_max
    c = arms * [1000.0, 400.0]
    np.testing.assert_allclose(share.activations, 5.0 * c / (c @ c), rtol=1e-6)
    beyond = share_forces(model, q, qd, np.array([1e4]))
    assert not beyond.feasible and "infeasible" in beyond.message
    np.testing.assert_allclose(beyond.activations, 1.0, atol=1e-9)
