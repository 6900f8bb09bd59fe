"""Constrained models end every solve within a bound (issue 27 items 1-2).

A NaN coordinate used to make the continuation's give-up test never true (four-bar: no return); a
large coordinate made it walk from the assembly in pieces of ``max_step`` (Andrews at β = 10⁶: no
return). Now a non-finite ``q`` is refused before any step, every solve takes at most ``max_steps``
continuation steps, and a coordinate in which the equations are periodic (a revolute angle) is
reached from the start shifted by whole periods. The hang tests carry a pytest timeout (generous:
numba may compile kernels on first use); the bound that ends them is in the code.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.core.errors import ConfigurationError, ModelError

ROOT = Path(__file__).resolve().parents[1]
FOUR_BAR = ROOT / "models" / "four_bar.toml"
ANDREWS = ROOT / "models" / "andrews_squeezer.toml"

# The IVP test set's "andrews" data and loop equations g1..g6 (Hairer & Wanner, Solving ODEs II,
# VII.7), written here independently of the model file.
XA, YA, XB, YB = -0.06934, -0.00227, -0.03635, 0.03273
D, E, ZF, ZT, U, SS, RR = 0.028, 0.02, 0.02, 0.04, 0.04, 0.035, 0.007


def _test_set_residuals(beta, Theta, gamma, Phi, delta, Omega, epsilon):
    x = RR * math.cos(beta) - D * math.cos(beta + Theta)
    y = RR * math.sin(beta) - D * math.sin(beta + Theta)
    return np.array([
        x - SS * math.sin(gamma) - XB,
        y + SS * math.cos(gamma) - YB,
        x - E * math.sin(Phi + delta) - ZT * math.cos(delta) - XA,
        y + E * math.cos(Phi + delta) - ZT * math.sin(delta) - YA,
        x - ZF * math.cos(Omega + epsilon) - U * math.sin(epsilon) - XA,
        y - ZF * math.sin(Omega + epsilon) + U * math.cos(epsilon) - YA,
    ])


def _angles(model, q):
    f = dict(zip(model.joints, model.joint_variables(np.array(q), 0)[0]))
    return [q[0], f["Theta"], f["gamma"], f["Phi"], f["delta"], f["Omega"], f["epsilon"]]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_coordinate_of_a_constrained_model_is_refused(value):
    model = mbkron.load_model(FOUR_BAR)
    for call in (lambda: model.mass_matrix([value]), lambda: model.forward_dynamics([value], [0.0]),
                 lambda: model.joint_variables([value], 0)):
        with pytest.raises(ValueError, match=r"`?q`?.*(nan|inf)"):
            call()


@pytest.mark.timeout(120)
def test_the_position_solver_refuses_a_non_finite_q_naming_it():
    model = mbkron.load_model(FOUR_BAR)
    solver = model.joint_variable_map.providers[-1][1].solver
    with pytest.raises(ConfigurationError, match=r"`q` must be finite .*q = \[nan\]"):
        solver.solve(np.array([math.nan]))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("beta", [1e3, -1e6, 1e6, 1e9])
def test_a_large_crank_angle_solves_the_test_sets_loop_equations(beta):
    """β far from the assembly: the solved angles satisfy the test set's g1..g6 at that β."""
    model = mbkron.load_model(ANDREWS)
    angles = _angles(model, [beta])
    # angles of magnitude A are represented to A·eps/2 (Θ winds with β: both are large); the links are at
    # most 0.04 m, and a residual adds a few such terms: a bound of 16 eps per radian of the angles
    rounding = 0.04 * 16 * np.finfo(float).eps * np.abs(angles).sum()
    assert np.abs(_test_set_residuals(*angles)).max() <= 1e-12 + rounding
    near = _angles(model, [math.remainder(beta, 2 * math.pi)])
    # the same configuration (the same branch) as at β reduced to (-π, π]: angles equal up to turns, and Θ
    # (relative to the crank) loses one turn per turn of β, as the continuous walk gives it
    assert (angles[1] - near[1]) / (2 * math.pi) == pytest.approx(-(beta - near[0]) / (2 * math.pi), abs=1e-6)
    turns = (np.array(angles[1:]) - np.array(near[1:])) / (2 * math.pi)
    np.testing.assert_allclose(turns, np.round(turns), atol=1e-6)
    assert np.isfinite(model.forward_dynamics([beta], [0.0])).all()


@pytest.mark.timeout(120)
def test_a_coordinate_too_large_to_place_within_its_period_is_refused():
    model = mbkron.load_model(ANDREWS)
    with pytest.raises(ConfigurationError, match=r"q = \[1e\+300\].*period"):
        model.mass_matrix([1e300])


SLIDER = """
[model]
name = "slider"
[coordinates.x]
unit = "m"
[bodies.link]
axis = [0, 0, 1]
mass = 1
com = [1, 0, 0]
inertia = [0, 1, 1]
[[constraints]]
joints = ["link"]
equations = ["link - x"]
solver = "lu"
guess = { link = 0.0 }
"""


@pytest.mark.timeout(300)
def test_a_long_walk_in_a_coordinate_that_is_not_periodic_ends_with_an_error_naming_q(tmp_path):
    """``link = x``: x enters outside sin/cos, so no period; 10⁶ needs 5·10⁶ steps of 0.2 > max_steps."""
    path = tmp_path / "slider.toml"
    path.write_text(SLIDER)
    model = mbkron.load_model(path)
    assert model.joint_variables([100.0], 0)[0] == pytest.approx([100.0], rel=1e-12)  # 500 steps: within the bound
    with pytest.raises(ConfigurationError, match=r"at q = \[1000000\].*did not arrive in 2000 steps"):
        model.mass_matrix([1e6])


@pytest.mark.parametrize("setting, value", [("max_step", 0.0), ("max_step", -1.0), ("max_newton_step", 0.0),
                                            ("tolerance", 0.0), ("max_iterations", 0), ("max_iterations", 10**9),
                                            ("jump_ratio", -0.5)])
@pytest.mark.timeout(120)
def test_position_settings_out_of_range_are_refused_at_load_naming_them(tmp_path, setting, value):
    """``max_step = 0`` made the continuation take steps of length 0 for ever."""
    path = tmp_path / "slider.toml"
    path.write_text(SLIDER + f"settings = {{ {setting} = {value} }}\n")
    with pytest.raises(ModelError, match=rf"`{setting}` must be"):
        mbkron.load_model(path)


def test_periods_of_the_structural_test():
    from mbkron.algorithms.jointvars.periods import coordinate_periods, input_period

    x, y, u = sympy.symbols("x y u")
    assert input_period([sympy.sin(x) + sympy.cos(2 * x + u)], x) == pytest.approx(2 * math.pi)
    assert input_period([sympy.sin(x * sympy.pi / 180) * u], x) == pytest.approx(360.0)
    assert input_period([sympy.sin(x) + x], x) is None  # x outside a trigonometric function
    assert input_period([sympy.sin(x ** 2)], x) is None  # not linear in x
    assert input_period([sympy.sin(x * u)], x) is None  # frequency depends on another symbol
    assert input_period([sympy.sin(x) + sympy.sin(math.sqrt(2) * x)], x) is None  # incommensurate
    assert input_period([sympy.sin(u)], x) == math.inf  # not used
    # p = (x + y, y): y moves both inputs; x + y with period 2π, y itself 2π → T_y = 2π
    expressions = [sympy.cos(u) * sympy.sin(x) + sympy.cos(2 * y)]
    periods = coordinate_periods([input_period(expressions, s) for s in (x, y)], np.array([[1.0, 1.0], [0.0, 1.0]]))
    np.testing.assert_allclose(periods, [2 * math.pi, 2 * math.pi])
    periods = coordinate_periods([input_period([sympy.sin(x) + y], s) for s in (x, y)],
                                 np.array([[1.0, 1.0], [0.0, 1.0]]))
    assert math.isclose(periods[0], 2 * math.pi) and math.isnan(periods[1])


@pytest.mark.timeout(600)
def test_kinematics_command_at_a_large_crank_angle_returns(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mbkron", "kinematics", str(ANDREWS), "--q", "beta=1e6", "--out",
                          str(tmp_path / "k")], cwd=ROOT, capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([sys.executable, "-m", "mbkron", "kinematics", str(ANDREWS), "--q", "beta=1e300", "--out",
                          str(tmp_path / "k2")], cwd=ROOT, capture_output=True, text=True, timeout=500)
    assert run.returncode == 1 and "Traceback" not in run.stderr and "q = [1e+300]" in run.stderr


@pytest.mark.timeout(900)
@pytest.mark.parametrize("signal_number", [signal.SIGTERM], ids=["SIGTERM"])
def test_a_fast_spinning_andrews_simulation_stops_on_a_signal(tmp_path, signal_number):
    """Started at β = 10⁵ rad spinning at 9,000 rad/s, the run used to spend minutes in its first solve
    (a walk from the assembly), deaf to signals; each step is now short, so SIGTERM stops it within
    seconds, with what was computed written."""
    warm = subprocess.run([sys.executable, "-m", "mbkron", "simulate", str(ANDREWS), "--t-end", "1e-4", "--samples",
                           "3", "--out", str(tmp_path / "warm"), "--no-progress", "--method", "TRBDF2"], cwd=ROOT,
                          capture_output=True,
                          text=True, timeout=800)
    assert warm.returncode == 0, warm.stderr
    out = tmp_path / "run"
    # TRBDF2 (the default when this test was written): DOP853, `--method auto`'s choice for this model, stops at
    # t = 0 here — a stage of its first step lands at β ≈ -2.7e14, where the constraints' period is lost to rounding
    process = subprocess.Popen([sys.executable, "-m", "mbkron", "simulate", str(ANDREWS), "--t-end", "5",
                                "--q0", "beta=1e5", "--qd0", "beta=9000", "--samples", "11", "--out", str(out),
                                "--no-progress", "--allow-outside-range", "--method", "TRBDF2"], cwd=ROOT,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(6.0)  # past the start (the kernels are warm: about 2 s) and into the first steps: the old first solve
    process.send_signal(signal_number)  # took minutes, deaf to signals
    try:
        _, stderr = process.communicate(timeout=600)  # a hang bound only: ended by the signal, not by finishing (t-end 5 takes hours)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the simulation did not stop after the signal (600 s)")
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.startswith("mbkron: interrupted")
