"""docs/tutorial_two_link_arm.py runs headless and its numbers are right (so the tutorial never rots)."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from validation.closed_form import duarte_two_link as duarte

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial_two_link_arm.py"


def reach(t, duration):
    """The tutorial's movement, written out independently: minimum jerk from (−90°, 0) to (0, 90°)."""
    tau = t / duration
    span = np.deg2rad([90.0, 90.0])
    q = np.deg2rad([-90.0, 0.0]) + span * (10 * tau**3 - 15 * tau**4 + 6 * tau**5)[:, None]
    qd = span * ((30 * tau**2 - 60 * tau**3 + 30 * tau**4) / duration)[:, None]
    qdd = span * ((60 * tau - 180 * tau**2 + 120 * tau**3) / duration**2)[:, None]
    return q, qd, qdd


@pytest.fixture(scope="module")
def tutorial():
    return runpy.run_path(str(TUTORIAL))  # defines the functions; __name__ is not "__main__"


def test_runs_as_a_script_headless_and_writes_the_figure(tmp_path):
    pytest.importorskip("matplotlib")
    environment = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(TUTORIAL), "--duration", "0.5"], cwd=tmp_path, env=environment,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    match = re.search(r"max \|Δq\| = (\S+) rad, max \|Δq'\| = (\S+) rad/s", done.stdout)
    assert match and float(match[1]) < 1e-8 and float(match[2]) < 1e-7
    png = tmp_path / "tutorial_two_link_arm.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_torques_equal_duartes_closed_forms_and_forward_dynamics_returns_the_movement(tutorial, tmp_path):
    results = tutorial["main"](duration=0.5, out=tmp_path, samples=201)
    q, qd, qdd = reach(np.linspace(0.0, 0.5, 201), 0.5)
    p = duarte.dempster_parameters()
    torque = duarte.joint_torques(p, q, qd, qdd)
    inertial = np.einsum("nij,nj->ni", duarte.inertia_matrix(p, q), qdd)
    for k, joint in enumerate(("shoulder", "elbow")):
        assert results[f"{joint}_peak_torque_Nm"] == pytest.approx(np.abs(torque[:, k]).max(), rel=1e-10)
        assert results[f"{joint}_peak_inertial_Nm"] == pytest.approx(np.abs(inertial[:, k]).max(), rel=1e-10)
        assert results[f"{joint}_peak_velocity_Nm"] == pytest.approx(
            np.abs(duarte.coriolis_centripetal(p, q, qd)[:, k]).max(), rel=1e-10)
        assert results[f"{joint}_peak_gravity_Nm"] == pytest.approx(
            np.abs(duarte.gravity_torques(p, q)[:, k]).max(), rel=1e-10)
    assert results["forward_max_angle_error_rad"] < 1e-8
    assert results["forward_max_rate_error_rad_s"] < 1e-7


def test_the_arm_built_from_scratch_is_seed_003s(tutorial):
    from mbkron.examples import two_link_arm

    arm, reference = tutorial["build_arm"](), two_link_arm()
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-2, 2, size=(3, 10, 2))
    np.testing.assert_allclose(arm.inverse_dynamics(q, qd, qdd), reference.inverse_dynamics(q, qd, qdd),
                               rtol=0, atol=1e-12)
