"""mbkron's leg6dof9musc model file against OpenSim running the original .osim (a handful of poses;
the full sweeps are in validation/results/opensim_leg6dof9musc.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opensim")

import mbkron
from mbkron.io import format_toml
from validation import leg6dof9musc
from validation.opensim import compare_leg6dof9musc as compare_leg

pytestmark = pytest.mark.skipif(not leg6dof9musc.OSIM.exists(), reason=f"{leg6dof9musc.OSIM} not available")

POSES_DEG = [(0, 0, 0), (30, -30, 20), (-89, -44, -89), (44, 10, 89), (-20, -15, 5)]


@pytest.fixture(scope="module")
def setup():
    model = mbkron.load_model(compare_leg.MODEL)
    leg = compare_leg.OpenSimLeg()
    return model, leg, compare_leg.compare(model, leg, np.deg2rad(POSES_DEG), "test")


def test_model_file_is_generated_from_the_osim():
    assert compare_leg.MODEL.read_text() == leg6dof9musc.header() + format_toml(leg6dof9musc.leg_document())


def test_conditional_point_choice():
    kept = {p["name"]: p["kept"] for p in leg6dof9musc.conditional_points()}
    assert kept == {"psoas_r-P3": True, "rect_fem_r-P2": False, "vas_int_r-P3": False, "med_gas_r-P2": True}
    ranges = {k: np.rad2deg(v) for k, v in leg6dof9musc.validity_ranges().items()}
    np.testing.assert_allclose(ranges["hip_flexion_r"], [-90, 45], atol=1e-3)
    np.testing.assert_allclose(ranges["knee_angle_r"], [-45, 10], atol=1e-3)


def test_body_poses(setup):
    *_, c = setup
    np.testing.assert_allclose(c.poses[0], c.poses[1], rtol=0, atol=1e-14)


def test_lengths(setup):
    *_, c = setup
    np.testing.assert_allclose(c.lengths[0], c.lengths[1], rtol=1e-14, atol=0)


def test_moment_arms(setup):
    *_, c = setup
    np.testing.assert_allclose(c.arms[0], c.arms[1], rtol=0, atol=1e-14)


def test_compute_moment_arm_is_the_length_derivative(setup):
    """The reference is valid: computeMomentArm (knee: total derivative along the coupler) = −dL/dq."""
    _, leg, _ = setup
    assert compare_leg.derivative_check(leg, np.deg2rad(POSES_DEG[1:3])) < 1e-9
