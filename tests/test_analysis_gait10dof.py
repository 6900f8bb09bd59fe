"""opensim-models' ``Pipelines/Gait10dof18musc`` walking trial run as published (issue 27 items 12, 14):
inverse dynamics from its first frame (t = 0, which OpenSim's resampling puts at −5e-7 s) and static
optimisation with the pipeline's own reserve file (pelvis residuals as point and torque actuators),
against OpenSim 4.6.

The inputs and OpenSim's results are stored in tests/data/analysis_gait10dof/ by
``python -m validation.opensim.compare_so_gait10dof`` (see its docstring; the model's Millard muscles
rewritten as Thelen muscles, which mbkron models, for the static optimisation).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import analysis
from mbkron.analysis.actuators import read_reserves, unit_generalized_forces
from mbkron.analysis.static_optimization import static_optimization
from mbkron.io.storage import read_storage, write_storage

DATA = Path(__file__).parent / "data" / "analysis_gait10dof"
ID_ACCEPTANCE = 1e-6  # N·m or N, as for gait2354 (tests/test_analysis_id.py)
SO_ACCEPTANCE = 1e-3  # activations (issue 27's acceptance line)


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("gait10dof")
    for packed in DATA.glob("*.gz"):
        (directory / packed.name[:-3]).write_bytes(gzip.decompress(packed.read_bytes()))
    return directory


@pytest.fixture(scope="module")
def model(trial):
    return mbkron.load_model(trial / "subject01_thelen.osim")


@pytest.mark.parametrize("time_range", [(0.0, 2.5), None])
def test_inverse_dynamics_from_the_first_frame_equals_opensims(trial, model, time_range):
    """The pipeline's ID setup (0–2.5 s, 6 Hz): the first frame is at −5e-7 s, before the force data's
    first row at 0 s; OpenSim continues the loads' splines there, and so does mbkron."""
    result = analysis.analyze_trial(model, trial / "subject01_walk_IK.mot", external_loads=trial / "subject01_walk_grf.xml",
                                    lowpass=6.0, time_range=time_range, analyses=("id",))["inverse_dynamics"]
    opensim = read_storage(trial / "opensim_inverse_dynamics.sto")
    np.testing.assert_allclose(result.time, opensim.time, rtol=0, atol=1e-12)
    assert result.time[0] == pytest.approx(-5e-7, abs=1e-9)
    for k, label in enumerate(result.labels):
        np.testing.assert_allclose(result.tau[:, k], opensim.column(label), rtol=0, atol=ID_ACCEPTANCE, err_msg=label)


def test_frames_outside_the_force_data_are_refused_naming_the_file(trial, model, tmp_path):
    """Force data that start 0.1 s after the motion: refused, the data named by its file (not the header's
    internal name ``subject01_walk1_grf.mot``)."""
    data = read_storage(trial / "subject01_walk_grf.mot")
    keep = data.time >= 0.1
    cut = tmp_path / "late_grf.mot"
    write_storage(cut, data.name, data.labels, data.time[keep], data.values[keep])
    loads = analysis.external_loads(trial / "subject01_walk_grf.xml", cut)
    with pytest.raises(ValueError, match="frames \\(-5.00000013e-07 to 2.4999985 s\\) are not all within the external loads' "
                       f"data `{cut}` \\(0.1 to 2.5 s\\)"):
        analysis.analyze_trial(model, trial / "subject01_walk_IK.mot", external_loads=loads, lowpass=6.0,
                               analyses=("id",))


@pytest.fixture(scope="module")
def so(trial, model):
    """mbkron's ``analyze --so`` of the trial with the pipeline's reserve file, and OpenSim 4.6's result."""
    result = analysis.analyze_trial(model, trial / "subject01_walk_IK.mot", external_loads=trial / "subject01_walk_grf.xml",
                                    lowpass=6.0, time_range=(0.0, 2.5), analyses=("so",),
                                    reserves=trial / "gait10dof_Reserve_Actuators.xml")
    return result, read_storage(trial / "opensim_so_thelen_activation.sto"), read_storage(
        trial / "opensim_so_thelen_force.sto")


def test_moment_arms_over_the_wrapped_paths_equal_opensims(trial, model, so):
    stored = np.load(DATA / "opensim_moment_arms.npz")
    kinematics = so[0].kinematics
    rows = [int(np.argmin(np.abs(kinematics.time - t))) for t in stored["time"]]
    np.testing.assert_allclose(kinematics.time[rows], stored["time"], rtol=0, atol=1e-12)
    order = [list(stored["coordinates"]).index(c) for c in model.coordinates]
    columns = [list(stored["muscles"]).index(m) for m in model.muscles]
    np.testing.assert_allclose(model.moment_arms(kinematics.q[rows]), stored["moment_arms"][:, order][:, :, columns],
                               rtol=0, atol=1e-9)


def test_static_optimisation_with_the_pipelines_reserves_balances_every_frame(so):
    """Issue 27 item 12: with FX, FY (PointActuator) and MZ (TorqueActuator) imported, every frame balances
    (before: 149 of 149 frames unbalanced, joint residuals up to 593 N·m)."""
    result = so[0]["static_optimization"]
    assert result.time.size == 151 and result.converged.all()
    assert result.reserves[:3] == ("FX", "FY", "MZ")
    assert np.abs(result.residual).max() <= 1e-9


def test_optimal_forces_equal_opensims(so):
    """``F° = F/a`` of OpenSim's solution: the muscle model at the wrapped paths' lengths and speeds."""
    result, activation, force = so
    so_result = result["static_optimization"]
    np.testing.assert_allclose(so_result.time, activation.time, rtol=0, atol=1e-12)
    theirs = np.column_stack([force.column(m) / activation.column(m) for m in so_result.muscles])
    assert np.abs(so_result.optimal_forces - theirs).max() <= 1e-8 * np.abs(theirs).max()


def test_activations_agree_with_opensim_where_its_solution_is_optimal(trial, model, so):
    """From OpenSim's own generalized forces (``τ = A x_OpenSim``: its solution balances the equations to its
    optimiser's tolerance only, up to 0.2 N·m here), mbkron's optimum is at least as good as OpenSim's on
    every frame, and the activations agree within 1e-3 wherever OpenSim's objective is not above the
    optimum (the problem is strictly convex: one minimiser; a higher objective is another point)."""
    result, activation, _ = so
    so_result, kinematics = result["static_optimization"], result.kinematics
    actuators, _ = read_reserves(trial / "gait10dof_Reserve_Actuators.xml")
    x = np.column_stack([activation.column(name) for name in so_result.muscles + so_result.reserves])
    m = len(so_result.muscles)
    A = np.concatenate([model.moment_arms(kinematics.q) * so_result.optimal_forces[:, None, :],
                        unit_generalized_forces(model, actuators, kinematics.q)], axis=2)
    tau = np.einsum("nkj,nj->nk", A, x)
    ours = static_optimization(model, kinematics.time, kinematics.q, kinematics.qd, tau, reserves=actuators)
    assert ours.converged.all()
    objective_ours = (ours.activations ** 2).sum(axis=1) + (ours.reserve_controls ** 2).sum(axis=1)
    objective_theirs = (x ** 2).sum(axis=1)
    assert np.all(objective_ours <= objective_theirs * (1 + 1e-12))
    optimal = objective_theirs <= objective_ours * (1 + 1e-9)
    assert optimal.sum() > optimal.size // 2  # not vacuous: OpenSim is optimal on most frames
    assert np.abs(ours.activations - x[:, :m]).max(axis=1)[optimal].max() <= SO_ACCEPTANCE
