"""``method="auto"`` (the command line's default): DOP853 for a run with compiled steps, TR-BDF2 from where its steps
look stiff (Hairer's DOP853 stiffness test), TR-BDF2 for a model without a compiled right-hand side."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import DOP853, Radau, solve_ivp

import mbkron
from mbkron.cli import main
from mbkron.integrate.simulate import STIFF_STEP, choose_method, stiffness_estimate

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.parametrize("lam", [-50.0, 3.0, -2.0e4])
def test_the_stiffness_estimate_of_a_dop853_step_is_h_lambda_on_the_scalar_test_equation(lam):
    """For y' = λy the last two stages differ by λ times their arguments' difference: |h λ| in exact arithmetic;
    in floating point up to a few ulp of |y| over that difference (a few 1e-9 here)."""
    solver = DOP853(lambda t, y: lam * y, 0.0, np.array([1.0]), 10.0, rtol=1e-3, atol=1e-9, first_step=2.0 / abs(lam))
    for _ in range(3):
        solver.step()
        h = solver.t - solver.t_old
        assert stiffness_estimate(solver) == pytest.approx(abs(h * lam), rel=1e-7)


def test_the_stiffness_estimate_is_at_most_the_spectral_radius_of_a_linear_system():
    """y' = A y, A symmetric: ‖A d‖/‖d‖ lies between the smallest and largest |eigenvalue| (Rayleigh), up to the
    rounding of the small difference d of the last two stages' arguments."""
    A = np.array([[-300.0, 20.0], [20.0, -1.0]])
    radius = np.abs(np.linalg.eigvalsh(A))
    solver = DOP853(lambda t, y: A @ y, 0.0, np.array([1.0, 1.0]), 1.0, rtol=1e-3, atol=1e-9, first_step=4e-3)
    for _ in range(3):
        solver.step()
        h = abs(solver.t - solver.t_old)
        assert h * radius.min() * (1 - 1e-7) <= stiffness_estimate(solver) <= h * radius.max() * (1 + 1e-7)


def test_auto_starts_with_dop853_only_where_the_steps_are_compiled():
    assert choose_method(True) == "DOP853" and choose_method(False) == "TRBDF2"


def _rows(result):
    return np.concatenate([result.t, result.q.ravel(), result.qd.ravel(), result.qdd.ravel()])


def test_auto_on_the_squeezer_is_the_dop853_run_bit_for_bit():
    model = mbkron.load_model(MODELS / "andrews_squeezer.toml")
    times = np.linspace(0.0, 0.01, 11)
    auto = mbkron.simulate(model, (0.0, 0.01), model.default_q, method="auto", t_eval=times)
    dop853 = mbkron.simulate(model, (0.0, 0.01), model.default_q, method="DOP853", t_eval=times)
    assert auto.settings["method"] == "DOP853" and auto.message == dop853.message
    assert _rows(auto).tobytes() == _rows(dop853).tobytes() and auto.nfev == dop853.nfev


def test_auto_on_a_tree_is_the_trbdf2_run():
    model = mbkron.load_model(MODELS / "two_link_arm.toml")
    auto = mbkron.simulate(model, (0.0, 0.2), model.default_q, method="AUTO")
    trbdf2 = mbkron.simulate(model, (0.0, 0.2), model.default_q, method="TRBDF2")
    assert auto.settings["method"] == "TRBDF2"
    assert _rows(auto).tobytes() == _rows(trbdf2).tobytes()


def _damped_squeezer(directory: Path, damping: str) -> mbkron.Model:
    """The squeezer with a damper of ``damping`` N s/m beside its spring: an overdamped mode with an eigenvalue of
    about −1e7 s⁻¹ for 1e10 N s/m, stiff for DOP853."""
    text = (MODELS / "andrews_squeezer.toml").read_text()
    path = directory / "damped_squeezer.toml"
    path.write_text(text.replace('free_length = "l0"', f'free_length = "l0"\ndamping = {damping}'))
    return mbkron.load_model(path)


def test_auto_goes_on_with_trbdf2_where_dop853_steps_are_limited_by_stability(tmp_path):
    model = _damped_squeezer(tmp_path, "1e10")
    times = np.linspace(0.0, 0.03, 31)
    auto = mbkron.simulate(model, (0.0, 0.03), model.default_q, method="auto", t_eval=times)
    dop853 = mbkron.simulate(model, (0.0, 0.03), model.default_q, method="DOP853", t_eval=times)
    assert auto.success and auto.settings["method"] == "DOP853, TRBDF2" and "TRBDF2 from there" in auto.message
    switched = float(auto.message.split("DOP853 up to t = ")[1].split(",")[0])
    assert 0.0 < switched < 0.03
    before = times <= switched  # DOP853's rows, bit for bit
    assert auto.q[before].tobytes() == dop853.q[before].tobytes() and before.sum() < times.size
    assert auto.nfev < dop853.nfev / 4  # (DOP853 alone: steps limited by stability to the end)
    # the result against a tight Radau solution of the same model's ODE
    workspace = model.workspace()

    def rhs(t, y):
        return np.concatenate([y[1:], model.forward_dynamics(y[:1], y[1:], workspace=workspace)])

    tight = solve_ivp(rhs, (0.0, 0.03), [model.default_q[0], 0.0], method=Radau, rtol=1e-10, atol=1e-12,
                      t_eval=times)
    assert np.abs(auto.q[:, 0] - tight.y[0]).max() < 1e-5 * (1 + np.abs(tight.y[0]).max())


def test_the_command_line_runs_auto_by_default_and_names_the_solver(tmp_path):
    status = main(["simulate", str(MODELS / "andrews_squeezer.toml"), "--t-end", "0.004", "--samples", "5",
                   "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    settings = json.loads((tmp_path / "andrews_squeezer_simulation.json").read_text())["settings"]
    assert settings["method"] == "DOP853"
    assert main(["simulate", str(MODELS / "andrews_squeezer.toml"), "--t-end", "0.004", "--samples", "5",
                 "--method", "trbdf2", "--out", str(tmp_path), "--no-progress"]) == 0
    settings = json.loads((tmp_path / "andrews_squeezer_simulation.json").read_text())["settings"]
    assert settings["method"] == "TRBDF2"


def test_stiff_step_is_dop853s_stability_bound():
    """DOP853's stability function at −6.1 has modulus about 1 (the boundary on the negative real axis, Hairer &
    Wanner's 6.1): |R(z)| = |1 + z bᵀ(I − zA)⁻¹ 1| computed from scipy's tableau."""
    stages = DOP853.n_stages
    A, b = DOP853.A[:stages, :stages], DOP853.B

    def modulus(z):
        return abs(1 + z * b @ np.linalg.solve(np.eye(stages) - z * A, np.ones(stages)))

    assert modulus(-0.9 * STIFF_STEP) < 1 < modulus(-1.1 * STIFF_STEP)
