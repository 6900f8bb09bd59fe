"""mbkron's shoulder model file against the same shoulder built in OpenSim 4.6 (a handful of poses;
the full sweeps are in validation/results/opensim_shoulder.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opensim")

import mbkron
from validation.opensim import compare_shoulder
from validation.opensim.shoulder import OpenSimShoulder
from validation.shoulder_data import load_shoulder

POSES_DEG = [(0, 0, 0), (90, 0, -30), (-90, 179, -90), (130, 180, 20), (45, 42.829582, 19.9), (10, 91, -60)]


@pytest.fixture(scope="module")
def comparison():
    model = mbkron.load_model(compare_shoulder.MODEL)
    reference = compare_shoulder.Reference(OpenSimShoulder(), compare_shoulder.knots_by_coordinate(load_shoulder("A")))
    return model, compare_shoulder.compare(model, reference, np.deg2rad(POSES_DEG), "test")


def test_body_poses(comparison):
    _, c = comparison
    np.testing.assert_allclose(c.poses[0], c.poses[1], rtol=0, atol=1e-14)


def test_lengths(comparison):
    _, c = comparison
    np.testing.assert_allclose(c.lengths[0], c.lengths[1], rtol=1e-14, atol=0)


def test_moment_arms(comparison):
    """computeMomentArm (fixed points) to 1e-14 m; −dL/dq of OpenSim's lengths (moving points) to 1e-10 m."""
    model, c = comparison
    moving = np.array([m in compare_shoulder.DERIVATIVE_REFERENCE for m in model.muscles])
    ours, theirs = c.arms
    np.testing.assert_allclose(ours[..., ~moving], theirs[..., ~moving], rtol=0, atol=1e-14)
    np.testing.assert_allclose(ours[..., moving], theirs[..., moving], rtol=0, atol=1e-10)


def test_compute_moment_arm_is_not_the_length_derivative_with_moving_points():
    """Why the reference is −dL/dq for those muscles: OpenSim's computeMomentArm differs from it."""
    shoulder = OpenSimShoulder()
    reference = compare_shoulder.Reference(shoulder, compare_shoulder.knots_by_coordinate(load_shoulder("A")))
    q = np.deg2rad([30.0, 90.0, -30.0])
    gradient = reference.length_gradient(q)
    shoulder.set_pose(q)
    computed = shoulder.moment_arms()
    moving = np.array(reference.derivative_columns)
    assert np.abs(computed[:, moving] - gradient[:, moving]).max() > 1e-3
    np.testing.assert_allclose(computed[:, ~moving], gradient[:, ~moving], rtol=0, atol=1e-10)
