"""The shoulder benchmark's DAE baseline computes the same mechanism as mbkron (benchmarks/bench_shoulder.py).

A correctness test, not a speed test: Pinocchio's full-coordinate chain built from the model file's text,
projected onto the coordinates (Aᵀ M_x A, Aᵀ(h_x − g_x), −Aᵀ g_x with A = ∂x/∂q), equals mbkron's M, N q̇
and G at random states, and the DAE's torques of the tracking problem (seed 002, Eq. 200–201) equal
``M Q_d + N q̇ − G``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pinocchio")

import mbkron  # noqa: E402
from benchmarks.bench_shoulder import (  # noqa: E402
    DAE,
    MODEL_FILE,
    check_commanded,
    check_dynamics,
    commanded,
    read_chain,
)
from validation.shoulder_pipeline import desired_trajectory  # noqa: E402


@pytest.fixture(scope="module")
def model() -> mbkron.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbkron.ModelWarning)  # the file's two non-physical inertias
        return mbkron.load_model(MODEL_FILE)


@pytest.fixture(scope="module")
def chain():
    return read_chain(MODEL_FILE)


def test_chain_has_the_files_joints_and_rhythm(model, chain):
    assert chain.joints == model.joints
    assert chain.coordinates == model.coordinates
    assert chain.model.nq == len(model.joints) == 14
    q = np.radians([90.0, 40.0, -30.0])
    np.testing.assert_allclose(chain.A @ q + chain.b, model.joint_variables(q, 0)[0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(chain.A[chain.independent], np.eye(3))
    assert chain.Phi_x.shape == (11, 14)
    np.testing.assert_allclose(chain.Phi_x @ chain.A, 0.0, atol=1e-15)  # Φ_x A = 0: the constraints hold for all q


def test_projected_dynamics_equal_mbkron(model, chain):
    worst = check_dynamics(model, chain, states=10, seed=3)  # raises above 1e-11 relative
    assert max(worst.values()) < 1e-11


def test_tracking_torques_and_accelerations(model, chain):
    assert check_commanded(states=10) < 1e-12
    dae = DAE(chain)
    for t in (0.0, 0.3, 0.8):
        q, qd, _ = desired_trajectory(t)
        q = q + np.array([0.01, -0.02, 0.03])  # off the desired trajectory
        y = dae.initial_state(q, qd)
        assert np.abs(chain.constraints(y[:dae.nx])).max() < 1e-15
        solution = dae.kkt(t, y)
        xdd, (tau, lam) = solution[:dae.nx], (solution[dae.nx + dae.m:], solution[dae.nx:dae.nx + dae.m])
        Qd = np.array(commanded(t, q, qd))
        np.testing.assert_allclose(xdd, chain.A @ Qd, rtol=1e-12, atol=1e-12)  # ẍ = A Q_d: S ẍ = Q_d, Φ_x ẍ = 0
        terms = model.equations_of_motion(q, qd)
        expected = terms.mass_matrix @ Qd + terms.velocity_forces - terms.gravity_forces - terms.applied_forces
        np.testing.assert_allclose(tau, expected, rtol=1e-11, atol=1e-13)
        blocks_xdd, blocks = dae.blocks(t, y)
        np.testing.assert_allclose(blocks_xdd, xdd, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(blocks[:dae.nq], tau, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(blocks[dae.nq:], lam, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(dae.torques(np.array([t]), y[None])[0], tau, rtol=1e-11, atol=1e-13)
