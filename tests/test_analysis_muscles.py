"""Muscle analysis (mbkron.analysis.muscle_analysis): OpenSim 4.6's MuscleAnalysis, derivatives, fibre geometry."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.analysis.muscle_analysis import MAXIMUM_PENNATION, muscle_analysis
from mbkron.io import read_storage
from mbkron.multibody.muscles.hill import HillParameters

DATA = Path(__file__).parent / "data" / "analysis_so"


def case_model(name: str, directory: Path):
    """The mbkron model of a stored comparison case (its ``.osim`` without wraps; the import keeps its Thelen constants)."""
    path = directory / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return mbkron.load_model(path)


def hinge_model(specs, theta: float, hill: HillParameters | None = None):
    """A link on a hinge about z with muscles ``m0, m1, ...`` from ground ``(0, d, 0)`` to the link's
    ``(a, 0, 0)``, one per ``(a, d, F_max)`` of ``specs``; unless ``hill`` is given, each muscle's tendon
    slack length puts its fibre at optimal length 0.1 m at ``theta``. Returns the model and the moment
    arms at ``theta`` in closed form, ``R = −dL/dθ = a d cos θ / L`` with ``L² = a² + d² − 2 a d sin θ``."""
    builder = mbkron.ModelBuilder(gravity=(0, 0, 0)).add_coordinate("q")
    builder.add_body("link", axis=(0, 0, 1), variable="q", mass=1.0, com=(0.2, 0, 0), inertia=np.eye(3) * 0.01)
    arms = []
    for k, (a, d, f_max) in enumerate(specs):
        length = np.sqrt(a * a + d * d - 2 * a * d * np.sin(theta))
        arms.append(a * d * np.cos(theta) / length)
        builder.add_muscle(f"m{k}", [("ground", (0.0, d, 0.0)), ("link", (a, 0.0, 0.0))],
                           hill=hill or HillParameters(f_max, 0.1, length - 0.1))
    return builder.build(), np.array(arms)


@pytest.fixture(scope="module", params=("arm26", "gait2354"))
def case(request, tmp_path_factory):
    data = json.loads(gzip.decompress((DATA / f"{request.param}.json.gz").read_bytes()))
    return data, case_model(request.param, tmp_path_factory.mktemp(request.param))


def test_lengths_and_moment_arms_agree_with_opensim(case):
    data, model = case
    order = [data["coordinates"].index(c) for c in model.coordinates]
    columns = [model.muscles.index(m) for m in data["muscles"]]
    q, u = np.array(data["q"])[:, order], np.array(data["u"])[:, order]
    result = muscle_analysis(model, q, u, time=data["time"])
    np.testing.assert_allclose(result.length[:, columns], data["length"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(result.moment_arms[:, :, columns], np.array(data["moment_arms"])[:, order, :],
                               rtol=0, atol=1e-9)


def test_speeds_and_moment_arms_are_derivatives_of_the_lengths():
    model = hinge_model([(0.05, 0.3, 1.0), (-0.04, 0.2, 1.0)], 0.0)[0]
    q = np.array([[0.1], [0.4], [-0.3]])
    qd = np.array([[1.0], [-2.0], [0.5]])
    result = muscle_analysis(model, q, qd)
    h = 1e-6
    rate = (model.muscle_lengths(q + h * qd) - model.muscle_lengths(q - h * qd)) / (2 * h)
    np.testing.assert_allclose(result.lengthening_speed, rate, rtol=0, atol=1e-8)
    gradient = (model.muscle_lengths(q + h) - model.muscle_lengths(q - h)) / (2 * h)
    np.testing.assert_allclose(result.moment_arms[:, 0, :], -gradient, rtol=0, atol=1e-9)
    a, d = np.array([0.05, -0.04]), np.array([0.3, 0.2])
    closed = a * d * np.cos(q) / np.sqrt(a * a + d * d - 2 * a * d * np.sin(q))
    np.testing.assert_allclose(result.moment_arms[:, 0, :], closed, rtol=1e-13)


def test_rigid_tendon_fibre_kinematics():
    phi_opt = np.radians(25.0)
    hill = HillParameters(500.0, 0.08, 0.25, phi_opt, max_contraction_velocity=8.0)
    model, _ = hinge_model([(0.05, 0.3, 0.0), (0.05, 0.33, 0.0)], 0.0, hill=hill)
    q = np.linspace(-0.5, 0.5, 7)[:, None]
    qd = np.full_like(q, 1.5)
    result = muscle_analysis(model, q, qd)
    height = 0.08 * np.sin(phi_opt)
    along = result.length - 0.25
    # constant fibre height: l_M sin φ = h, l_M cos φ = L − l_s
    np.testing.assert_allclose(result.fiber_length * np.sin(result.pennation_angle), height, rtol=1e-13)
    np.testing.assert_allclose(result.fiber_length * np.cos(result.pennation_angle), along, rtol=1e-13)
    np.testing.assert_allclose(result.normalized_fiber_length, result.fiber_length / 0.08, rtol=1e-15)
    np.testing.assert_allclose(result.tendon_length, 0.25)
    # v_M = dl_M/dt along the motion (central differences of l_M(q(t)))
    step = 1e-6
    later = muscle_analysis(model, q + step * qd, qd).fiber_length
    earlier = muscle_analysis(model, q - step * qd, qd).fiber_length
    np.testing.assert_allclose(result.fiber_velocity, (later - earlier) / (2 * step), rtol=0, atol=1e-8)
    np.testing.assert_allclose(result.normalized_fiber_velocity, result.fiber_velocity / (0.08 * 8.0), rtol=1e-15)


def test_a_fibre_below_opensims_minimum_length_takes_it():
    hill = HillParameters(500.0, 0.1, 0.3, np.radians(30.0))
    model, _ = hinge_model([(0.05, 0.3, 0.0)], 0.0, hill=hill)  # L ≈ 0.304: L − l_s below l_min cos φ_max
    result = muscle_analysis(model, [[0.0]], [[0.0]])
    minimum = 0.1 * np.sin(np.radians(30.0)) / np.sin(MAXIMUM_PENNATION)
    assert result.fiber_length[0, 0] == pytest.approx(minimum, rel=1e-15)
    assert result.pennation_angle[0, 0] == pytest.approx(np.arccos(0.1), rel=1e-15)


def test_tables_are_written_with_opensims_names(tmp_path):
    model, _ = hinge_model([(0.05, 0.3, 100.0), (-0.04, 0.2, 100.0)], 0.0)
    time = np.array([0.0, 0.1])
    result = muscle_analysis(model, [[0.1], [0.2]], [[1.0], [1.0]], time=time)
    written = {p.name for p in result.write(tmp_path, "walk")}
    assert {"walk_MuscleAnalysis_Length.sto", "walk_MuscleAnalysis_MomentArm_q.sto",
            "walk_MuscleAnalysis_NormalizedFiberLength.sto", "walk_MuscleAnalysis_PennationAngle.sto"} <= written
    table = read_storage(tmp_path / "walk_MuscleAnalysis_MomentArm_q.sto")
    assert table.name == "MomentArm_q" and table.labels == ("m0", "m1")
    np.testing.assert_array_equal(table.values, result.moment_arms[:, 0, :])
    with pytest.raises(ValueError, match="`time` was not given"):
        muscle_analysis(model, [[0.1]], [[0.0]]).write(tmp_path, "x")


def test_bad_shapes_are_named():
    model, _ = hinge_model([(0.05, 0.3, 100.0)], 0.0)
    with pytest.raises(ValueError, match="`q` and `qd` must both have shape \\(n, 1\\)"):
        muscle_analysis(model, [0.1], [0.0])
    with pytest.raises(ValueError, match="`time` must have 1 values"):
        muscle_analysis(model, [[0.1]], [[0.0]], time=[0.0, 1.0])
