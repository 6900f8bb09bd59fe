"""Static optimisation (mbkron.analysis.static_optimization): closed-form optima, KKT conditions, OpenSim 4.6.

The OpenSim data (tests/data/analysis_so/, written by validation/opensim/compare_so.py) hold the states,
OpenSim's static-optimisation activations and forces and its MuscleAnalysis moment arms for OpenSim's
arm26 test case and the gait2354 walking trial (wrap objects removed in both programs).
"""

from __future__ import annotations

import gzip
import json
import re
import warnings

import numpy as np
import pytest

import mbkron
from mbkron.analysis.static_optimization import Reserve, optimal_forces, read_reserves, static_optimization
from mbkron.io import read_storage
from mbkron.multibody.muscles.hill import HillParameters

from tests.test_analysis_muscles import DATA, case_model, hinge_model

CASES = ("arm26", "gait2354")


def opensim_case(name):
    return json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))


@pytest.fixture(scope="module", params=CASES)
def case(request, tmp_path_factory):
    data = opensim_case(request.param)
    return data, case_model(request.param, tmp_path_factory.mktemp(request.param))


def solve_case(data, model):
    """mbkron's static optimisation at OpenSim's states, from the τ of OpenSim's optimum."""
    coordinates, muscles = data["coordinates"], data["muscles"]
    order = [coordinates.index(c) for c in model.coordinates]
    arms = np.array(data["moment_arms"])  # (n, nq, m), OpenSim's MuscleAnalysis
    tau = np.einsum("nkm,nm->nk", arms, np.array(data["force"]))
    for name, force in zip(data["reserves"], np.array(data["reserve_force"]).T):
        tau[:, coordinates.index(name.removesuffix("_reserve"))] += force
    reserves = [Reserve(n.removesuffix("_reserve"), f) for n, f in zip(data["reserves"], data["reserve_optimal_force"])]
    bounds = np.array(data["bounds"])
    columns = [model.muscles.index(m) for m in muscles]
    inverse = np.empty(len(columns), dtype=int)
    inverse[columns] = np.arange(len(columns))
    result = static_optimization(model, data["time"], np.array(data["q"])[:, order], np.array(data["u"])[:, order],
                                 tau[:, order], reserves=reserves, activation_bounds=(bounds[inverse, 0], bounds[inverse, 1]))
    return result, columns


def test_activations_and_forces_agree_with_opensim(case):
    data, model = case
    result, columns = solve_case(data, model)
    assert result.converged.all()
    f_max = np.array([model.muscle_set.paths[k].hill.max_isometric_force for k in columns])
    np.testing.assert_allclose(result.activations[:, columns], data["activation"], rtol=0, atol=1e-3)
    assert (np.abs(result.forces[:, columns] - np.array(data["force"])) / f_max).max() <= 1e-3
    # the muscle model alone: OpenSim's F/a is its F° = F_max f_L f_V(a = 1) cos φ
    np.testing.assert_allclose(result.optimal_forces[:, columns] / f_max,
                               np.array(data["force"]) / np.array(data["activation"]) / f_max, rtol=0, atol=1e-9)


def test_the_optimum_is_at_least_as_good_as_opensims(case):
    data, model = case
    result, _ = solve_case(data, model)
    ours = (result.activations**2).sum(axis=1) + (result.reserve_controls**2).sum(axis=1)
    controls = np.array(data["reserve_force"]).reshape(len(data["time"]), -1) / np.array(
        data["reserve_optimal_force"] or [1.0])
    theirs = (np.array(data["activation"])**2).sum(axis=1) + (controls**2).sum(axis=1)
    assert np.all(ours <= theirs * (1 + 1e-9))  # OpenSim's solution is feasible for the same problem


def test_two_muscles_on_a_hinge_have_the_closed_form_optimum():
    # two agonists at optimal fibre length and rest (f_L = f_V = 1, F° = F_max), moment arm a d cos θ / L
    model, arm = hinge_model([(0.05, 0.3, 1000.0), (0.03, 0.25, 400.0)], theta=0.2)
    c = arm * np.array([1000.0, 400.0])
    tau = 20.0
    result = static_optimization(model, [0.0], [[0.2]], [[0.0]], [[tau]], activation_bounds=(0.0, 1.0))
    np.testing.assert_allclose(result.activations[0], tau * c / (c @ c), rtol=1e-12)
    np.testing.assert_allclose(result.forces[0], result.activations[0] * [1000.0, 400.0], rtol=1e-14)
    # p = 3: 3 x² = λ c, so x ∝ √c
    result = static_optimization(model, [0.0], [[0.2]], [[0.0]], [[tau]], activation_bounds=(0.0, 1.0),
                                 activation_exponent=3.0)
    np.testing.assert_allclose(result.activations[0], tau * np.sqrt(c) / (c @ np.sqrt(c)), rtol=1e-8)
    # p = 1.5: 1.5 √x = λ c, so x ∝ c²
    result = static_optimization(model, [0.0], [[0.2]], [[0.0]], [[tau]], activation_bounds=(0.0, 1.0),
                                 activation_exponent=1.5)
    np.testing.assert_allclose(result.activations[0], tau * c**2 / (c @ c**2), rtol=1e-8)
    # the stronger muscle saturates: the weaker makes up the rest
    big = c[0] + 0.5 * c[1]
    result = static_optimization(model, [0.0], [[0.2]], [[0.0]], [[big]], activation_bounds=(0.0, 1.0),
                                 tolerance=1e-13)
    np.testing.assert_allclose(result.activations[0], [1.0, 0.5], rtol=1e-12)


def test_an_antagonist_stays_at_its_lower_bound():
    model, arm = hinge_model([(0.05, 0.3, 1000.0), (-0.04, 0.3, 800.0)], theta=0.1)
    assert arm[0] > 0 > arm[1]
    c = arm * np.array([1000.0, 800.0])
    result = static_optimization(model, [0.0], [[0.1]], [[0.0]], [[10.0]])  # bounds: minimum activation 0.01, 1
    np.testing.assert_allclose(result.activations[0], [(10.0 - 0.01 * c[1]) / c[0], 0.01], rtol=1e-12)


def test_reserves_only():
    model = mbkron.ModelBuilder(gravity=(0, 0, 0)).add_coordinate("q").add_body(
        "link", axis=(0, 0, 1), variable="q", mass=1.0).build()
    tau = np.array([[3.0], [-6.0]])
    reserves = [Reserve("q", 2.0), Reserve("q", 1.0, name="small")]
    result = static_optimization(model, [0.0, 1.0], [[0.0], [0.1]], [[0.0], [0.0]], tau, reserves=reserves)
    # min x1² + x2² s.t. 2 x1 + x2 = τ: x = τ (2, 1)/5
    np.testing.assert_allclose(result.reserve_controls, tau * [2.0, 1.0] / 5.0, rtol=1e-14)
    np.testing.assert_allclose(result.reserve_forces, tau * [4.0, 1.0] / 5.0, rtol=1e-14)
    assert result.reserves == ("q_reserve", "small") and result.activations.shape == (2, 0)
    # bounded reserves: the first saturates at 1, the second takes the rest
    bounded = [Reserve("q", 2.0, -1.0, 1.0), Reserve("q", 1.0, name="small")]
    result = static_optimization(model, [0.0], [[0.0]], [[0.0]], [[5.0]], reserves=bounded, tolerance=1e-14)
    np.testing.assert_allclose(result.reserve_controls[0], [1.0, 3.0], rtol=1e-14)


@pytest.mark.parametrize("p", [2.0, 3.0, 1.5])
def test_kkt_conditions_at_the_optimum(p):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbkron.load_model("models/leg6dof9musc.toml")
    t = np.linspace(0.0, 1.0, 25)
    wave = np.sin(2 * np.pi * t)[:, None] * np.ones(model.nq)
    q, qd, qdd = model.default_q + 0.3 * wave, 0.6 * np.pi * np.cos(2 * np.pi * t)[:, None] * np.ones(model.nq), \
        -0.3 * (2 * np.pi) ** 2 * wave
    tau = model.inverse_dynamics(q, qd, qdd)
    reserves = [Reserve(c, 50.0) for c in model.coordinates]
    result = static_optimization(model, t, q, qd, tau, reserves=reserves, activation_exponent=p)
    assert result.converged.all()
    x = np.column_stack([result.activations, result.reserve_controls])
    lower = np.r_[np.full(len(model.muscles), 0.01), np.full(len(reserves), -np.inf)]
    upper = np.r_[np.ones(len(model.muscles)), np.full(len(reserves), np.inf)]
    # the constraint matrix, from the model's moment arms and F° (each checked on its own elsewhere)
    arms = model.moment_arms(q)
    f_opt = optimal_forces(model, model.muscle_lengths(q), model.muscle_velocities(q, qd))
    A = np.concatenate([arms * f_opt[:, None, :], np.broadcast_to(50.0 * np.eye(model.nq), (t.size,) + (model.nq,) * 2)],
                       axis=2)
    np.testing.assert_allclose(np.einsum("nkj,nj->nk", A, x), tau, rtol=0, atol=1e-8)  # feasibility
    assert np.all((x >= lower) & (x <= upper))
    objective_gradient = p * np.sign(x) * np.abs(x) ** (p - 1)
    for n in range(t.size):
        free = (x[n] > lower + 1e-9) & (x[n] < upper - 1e-9)
        g = objective_gradient[n]
        lam = np.linalg.lstsq(A[n][:, free].T, g[free], rcond=None)[0]  # stationarity on the free set
        np.testing.assert_allclose(A[n][:, free].T @ lam, g[free], rtol=0, atol=1e-7 * np.abs(g).max())
        excess = A[n].T @ lam - g  # bound multipliers: ≤ 0 at a lower bound, ≥ 0 at an upper one
        assert np.all(excess[x[n] <= lower + 1e-9] <= 1e-7) and np.all(excess[x[n] >= upper - 1e-9] >= -1e-7)
        np.testing.assert_allclose(lam, result.multipliers[n], rtol=1e-5, atol=1e-8)


def test_optimal_forces_are_the_rigid_tendon_active_force_at_full_activation():
    hill = HillParameters(1000.0, 0.1, 0.2, np.radians(20.0))
    model, _ = hinge_model([(0.05, 0.3, 1000.0)], theta=0.2, hill=hill)
    length = np.array([[0.29], [0.31], [0.3]])
    velocity = np.array([[0.0], [-0.2], [0.3]])
    h = 0.1 * np.sin(np.radians(20.0))
    fiber = np.hypot(length - 0.2, h)
    cos_phi = (length - 0.2) / fiber
    f_l = np.exp(-((fiber / 0.1 - 1) ** 2) / 0.45)
    v = velocity * cos_phi / (0.1 * 10.0)  # ṽ = v_M/(l_opt v_max), k = 0.25 + 0.75 = 1 at a = 1
    c = (2 + 2 / 0.25) / (1.8 - 1)
    f_v = np.where(v <= 0, (1 + v) / (1 - v / 0.25), (1 + v * c * 1.8) / (1 + v * c))
    np.testing.assert_allclose(optimal_forces(model, length, velocity), 1000.0 * f_l * f_v * cos_phi, rtol=1e-13)
    np.testing.assert_allclose(optimal_forces(model, length, velocity, use_muscle_physiology=False), 1000.0)
    assert optimal_forces(model, [[0.2 + 0.1 * h]], [[0.0]])[0, 0] == 0.0  # below OpenSim's minimum fibre length


def test_infeasible_frames_are_reported():
    model, arm = hinge_model([(0.05, 0.3, 100.0)], theta=0.2)
    result = static_optimization(model, [0.0, 1.0], [[0.2], [0.2]], [[0.0], [0.0]], [[1.0], [1e4]],
                                 activation_bounds=(0.0, 1.0), max_iterations=50)
    assert result.converged.tolist() == [True, False]
    assert result.activations[1, 0] == 1.0 and result.residual[1, 0] == pytest.approx(100.0 * arm[0] - 1e4)


def test_results_are_written_with_opensims_names(tmp_path):
    model, _ = hinge_model([(0.05, 0.3, 1000.0), (0.03, 0.25, 400.0)], theta=0.2)
    result = static_optimization(model, [0.0, 0.5], [[0.2], [0.25]], [[0.0], [0.1]], [[5.0], [8.0]],
                                 reserves=[Reserve("q", 10.0)])
    activation, force = result.write(tmp_path, "trial")
    assert activation.name == "trial_StaticOptimization_activation.sto"
    assert force.name == "trial_StaticOptimization_force.sto"
    table = read_storage(activation)
    assert table.name == "Static Optimization" and table.labels == ("m0", "m1", "q_reserve")
    np.testing.assert_array_equal(table.values, np.column_stack([result.activations, result.reserve_controls]))
    np.testing.assert_array_equal(read_storage(force).values, np.column_stack([result.forces, result.reserve_forces]))


def test_reserves_are_read_from_an_opensim_force_set(tmp_path):
    path = tmp_path / "actuators.xml"
    path.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="f"><objects>
      <PrescribedForce name="push"><frame_name>body</frame_name></PrescribedForce>
      <CoordinateActuator name="hip_reserve"><coordinate> hip </coordinate><optimal_force>2.5</optimal_force>
        <min_control>-infinity</min_control><max_control> 3 </max_control></CoordinateActuator>
      <CoordinateActuator name="knee_reserve"><coordinate>knee</coordinate></CoordinateActuator>
      <CoordinateActuator name="off"><appliesForce>false</appliesForce><coordinate>knee</coordinate></CoordinateActuator>
      </objects></ForceSet></OpenSimDocument>""")
    reserves, skipped = read_reserves(path)
    assert reserves == (Reserve("hip", 2.5, -np.inf, 3.0, "hip_reserve"), Reserve("knee", 1.0, name="knee_reserve"))
    assert skipped == ("push",)
    path.write_text("<OpenSimDocument><ForceSet><objects><CoordinateActuator name='x'/></objects></ForceSet>"
                    "</OpenSimDocument>")
    with pytest.raises(ValueError, match="CoordinateActuator `x`: no `coordinate`"):
        read_reserves(path)
    path.write_text('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">]><OpenSimDocument><ForceSet>'
                    '<objects><CoordinateActuator name="x"><coordinate>&a;</coordinate></CoordinateActuator>'
                    '</objects></ForceSet></OpenSimDocument>')
    with pytest.raises(ValueError, match="refused: the XML declares a DTD, entities or external references"):
        read_reserves(path)


def test_bad_arguments_are_named():
    model, _ = hinge_model([(0.05, 0.3, 1000.0)], theta=0.2)
    good = dict(time=[0.0], q=[[0.2]], qd=[[0.0]], tau=[[1.0]])
    with pytest.raises(ValueError, match="`tau` must have shape \\(1, 1\\)"):
        static_optimization(model, **{**good, "tau": [[1.0, 2.0]]})
    with pytest.raises(ValueError, match="`activation_exponent` must be a number greater than 1"):
        static_optimization(model, **good, activation_exponent=1.0)
    with pytest.raises(ValueError, match="unknown coordinate 'knee' of reserve `knee_reserve`"):
        static_optimization(model, **good, reserves=[Reserve("knee", 1.0)])
    with pytest.raises(ValueError, match="`activation_bounds`: the lower bound exceeds the upper bound for muscle"):
        static_optimization(model, **good, activation_bounds=(0.5, 0.2))
    with pytest.raises(ValueError, match="`optimal_force` of reserve `q` must be a positive number"):
        Reserve("q", 0.0)


def test_thelen_curves_of_the_gait_model_are_imported(tmp_path):
    """gait2354 sets KshapeActive 0.5, KshapePassive 4, Af 0.3 on every Thelen2003Muscle (read from the file's text)."""
    path = tmp_path / "gait2354.osim"
    text = gzip.decompress((DATA / "gait2354.osim.gz").read_bytes())
    path.write_bytes(text)
    assert text.count(b"<Thelen2003Muscle") == 54 and text.count(b"<KshapeActive>0.5</KshapeActive>") == 54
    assert text.count(b"<KshapePassive>4</KshapePassive>") == 54 and text.count(b"<Af>0.29999999999999999</Af>") == 54
    model = mbkron.load_model(path)
    curves = {p.hill.curves for p in model.muscle_set.paths}
    assert len(model.muscles) == 54 and len(curves) == 1
    (c,) = curves
    assert (c.active_shape, c.passive_shape, c.af, c.flen) == (0.5, 4.0, 0.3, 1.8)


def test_thelen_constants_a_file_leaves_out_are_opensims_class_defaults(tmp_path):
    """OpenSim 4.6's Thelen2003Muscle defaults FmaxTendonStrain to 0.04 and Flen to 1.4 (opensim-core's
    Thelen2003Muscle::constructProperties; `opensim.Thelen2003Muscle().get_Flen()` is 1.4 in 4.6), not the
    0.033 and 1.8 that OpenSim's example models write out: a file without them must get OpenSim's values."""
    text = gzip.decompress((DATA / "gait2354.osim.gz").read_bytes()).decode()
    stripped = re.sub(r"<(Flen|FmaxTendonStrain)>[^<]*</\1>", "", text)
    assert text.count("<Flen>") == 54 and "<Flen>" not in stripped and "<FmaxTendonStrain>" not in stripped
    (tmp_path / "omitted.osim").write_text(stripped)
    (tmp_path / "written.osim").write_text(text)
    omitted = {p.hill.curves for p in mbkron.load_model(tmp_path / "omitted.osim").muscle_set.paths}
    written = {p.hill.curves for p in mbkron.load_model(tmp_path / "written.osim").muscle_set.paths}
    assert [(c.tendon_strain_at_fmax, c.flen) for c in omitted] == [(0.04, 1.4)]
    assert [(c.tendon_strain_at_fmax, c.flen) for c in written] == [(0.033, 1.8)]
