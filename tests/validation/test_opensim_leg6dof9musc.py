"""mbkron's leg6dof9musc model file (``mbkron convert`` of the .osim) against OpenSim running the original
.osim at a handful of poses, every conditional path point in and out of its path (the full sweeps are in
validation/results/opensim_leg6dof9musc.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("opensim")

import mbkron
from validation.opensim import compare_leg6dof9musc as compare_leg

pytestmark = pytest.mark.skipif(not compare_leg.OSIM.exists(), reason=f"{compare_leg.OSIM} not available")

#: pelvis_tilt (°), pelvis_tx (m), pelvis_ty (m), hip_flexion_r, knee_angle_r, ankle_angle_r (°).
POSES = [(10, 0.1, 0.9, 30, -30, 20), (-20, -0.3, 1.2, -100, -100, -60), (5, 0.0, 1.0, 60, -70, 30),
         (0, 0.5, 2.0, -20, 5, -10), (-80, -0.9, -0.5, 110, -119, 85)]
ANGLES = [0, 3, 4, 5]


def radians(poses) -> np.ndarray:
    q = np.array(poses, dtype=float)
    q[:, ANGLES] = np.deg2rad(q[:, ANGLES])
    return q


@pytest.fixture(scope="module")
def setup():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # toes_r's inertia (tests/test_model_warnings.py)
        model = mbkron.load_model(compare_leg.MODEL)
    leg = compare_leg.OpenSimLeg(model.coordinates)
    q = np.concatenate([model.default_q[None], radians(POSES), compare_leg.edge_states(model, compare_leg.OSIM)])
    return model, leg, q, compare_leg.compare(model, leg, q, "test")


def test_coordinates_and_muscles_are_opensims(setup):
    model, leg, *_ = setup
    assert leg.independent == list(model.coordinates)
    assert tuple(m.getName() for m in leg.muscles) == model.muscles


def test_the_poses_put_every_conditional_point_in_and_out_of_its_path(setup):
    model, leg, q, _ = setup
    conditions = [(c, r) for c, ranges in leg.conditions.items() for r in ranges]
    assert len(conditions) == 4
    for coordinate, (low, high) in conditions:
        values = q[:, model.coordinates.index(coordinate)]
        inside = (values >= low - 1e-5) & (values <= high + 1e-5)
        assert inside.any() and (~inside).any(), coordinate


def test_body_poses(setup):
    *_, c = setup
    np.testing.assert_allclose(c.poses[0], c.poses[1], rtol=0, atol=1e-14)


def test_lengths(setup):
    *_, c = setup
    np.testing.assert_allclose(c.lengths[0], c.lengths[1], rtol=1e-14, atol=0)


def test_moment_arms(setup):
    *_, c = setup
    np.testing.assert_allclose(c.arms[0], c.arms[1], rtol=0, atol=1e-14)


def test_reduced_mass_matrix(setup):
    model, leg, q, _ = setup
    assert compare_leg.mass_matrix_error(model, leg, q) < 1e-13


def test_compute_moment_arm_is_the_length_derivative(setup):
    """The reference is valid: computeMomentArm (knee: total derivative along the coupler) = −dL/dq."""
    _, leg, q, _ = setup
    assert all(leg.clear_of_conditions(row) for row in q[:4])  # checked there, not skipped
    assert compare_leg.derivative_check(leg, q[:4]) < 1e-9
