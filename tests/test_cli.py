"""The mbkron command line: run in-process through main([...]) and once as a subprocess."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import cli
from mbkron.cli.common import CHUNK_ROWS
from mbkron.jit.common import COMPILING, COMPILING_MODEL
from mbkron.io import write_atomically
from validation.closed_form import duarte_two_link as duarte

ROOT = Path(__file__).resolve().parents[1]
TWO_LINK = ROOT / "models" / "two_link_arm.toml"


def run(capsys, *argv):
    """``mbkron argv...`` in this process: its status, stdout and stderr (without the one-line notice of
    the first compilation of the numba kernels in this process, which some test or other prints)."""
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, "".join(line for line in err.splitlines(keepends=True)
                                if not line.startswith((f"mbkron: {COMPILING} (", f"mbkron: {COMPILING_MODEL} (")))


def read_csv(path):
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], np.array(rows[1:], dtype=float)


def hand_kinematics(q, qd, qdd):
    """End point of seed 003's arm (radians), by hand."""
    p = duarte.dempster_parameters()
    a1, a12 = q[..., 0], q[..., 0] + q[..., 1]
    w1, w12 = qd[..., 0], qd[..., 0] + qd[..., 1]
    b1, b12 = qdd[..., 0], qdd[..., 0] + qdd[..., 1]
    position = np.stack([p.L1 * np.cos(a1) + p.L2 * np.cos(a12), p.L1 * np.sin(a1) + p.L2 * np.sin(a12)], -1)
    velocity = np.stack([-p.L1 * np.sin(a1) * w1 - p.L2 * np.sin(a12) * w12, p.L1 * np.cos(a1) * w1 + p.L2 * np.cos(a12) * w12], -1)
    acceleration = np.stack([
        -p.L1 * (np.sin(a1) * b1 + np.cos(a1) * w1**2) - p.L2 * (np.sin(a12) * b12 + np.cos(a12) * w12**2),
        p.L1 * (np.cos(a1) * b1 - np.sin(a1) * w1**2) + p.L2 * (np.cos(a12) * b12 - np.sin(a12) * w12**2)], -1)
    return position, velocity, acceleration


def column(header, table, name):
    return table[:, header.index(name)]


def test_info_describes_the_model(capsys):
    status, out, err = run(capsys, "info", ROOT / "models" / "planar_chain.toml")
    assert status == 0 and err == ""
    for fragment in ("model       planar_chain", "└─ link4", "theta1", "-theta3 + theta4", "loads (5)",
                     "tension 300*sin(pi*t)**2 N", "muscles", "gamma_R = 90", "angles in deg"):
        assert fragment in out, fragment


def test_info_on_an_osim_model_with_wrapping_names_the_option_and_ignores_wrap_objects_with_it(capsys, tmp_path):
    import gzip

    path = tmp_path / "arm26.osim"
    path.write_bytes(gzip.decompress((ROOT / "tests" / "data" / "osim" / "arm26.osim.gz").read_bytes()))
    wrapped = ("TRIlong", "TRIlat", "TRImed", "BIClong", "BRA")  # arm26's paths with wrap objects
    status, out, err = run(capsys, "info", path)  # cylinders and ellipsoids imported
    assert status == 0 and err == "" and "model       arm26" in out
    assert all(name in out for name in ("TRIlonghh", "BIClonghh"))
    status, out, err = run(capsys, "info", path, "--ignore-wrapping")
    assert status == 0 and "model       arm26" in out and "muscles (6)" in out
    assert err == f"mbkron: warning: {path}: 5 path(s) imported without their wrap objects: {', '.join(wrapped)}\n"


def test_kinematics_at_one_configuration(capsys, tmp_path):
    output = tmp_path / "arm.csv"
    status, out, err = run(capsys, "kinematics", TWO_LINK, "--q", "alpha1=30, alpha2=45", "--qd", "alpha1=10,alpha2=-20",
                           "--qdd", "alpha2=100", "--point", "hand=link2:L2,0,0", "--point", "link1:0.1,0,0", "-o", output)
    assert status == 0, err
    header, table = read_csv(output)
    assert table.shape == (1, len(header))
    q, qd, qdd = np.deg2rad([30.0, 45.0]), np.deg2rad([10.0, -20.0]), np.deg2rad([0.0, 100.0])
    position, velocity, acceleration = hand_kinematics(q, qd, qdd)
    np.testing.assert_allclose([column(header, table, f"hand.{a}")[0] for a in "xy"], position, rtol=1e-13)
    np.testing.assert_allclose([column(header, table, f"hand.v{a}")[0] for a in "xy"], velocity, rtol=1e-13)
    np.testing.assert_allclose([column(header, table, f"hand.a{a}")[0] for a in "xy"], acceleration, rtol=1e-12)
    assert column(header, table, "alpha1")[0] == pytest.approx(30.0, rel=1e-15)
    np.testing.assert_allclose([column(header, table, f"p2.{a}")[0] for a in "xy"], 0.1 * np.array([np.cos(q[0]), np.sin(q[0])]), rtol=1e-13)
    rotation = np.array([[column(header, table, f"link2.R{r}{c}")[0] for c in "123"] for r in "123"])
    np.testing.assert_allclose(rotation[:2, :2], [[np.cos(q.sum()), -np.sin(q.sum())], [np.sin(q.sum()), np.cos(q.sum())]], atol=1e-15)
    metadata = json.loads(output.with_suffix(".json").read_text())
    assert metadata["model"]["sha256"] == hashlib.sha256(TWO_LINK.read_bytes()).hexdigest()
    assert metadata["mbkron_version"] == mbkron.__version__
    assert metadata["command_line"][:2] == ["mbkron", "kinematics"]
    assert {"load", "compute", "write"} <= set(metadata["timings_s"])
    assert [c["name"] for c in metadata["columns"]] == header
    assert {c["name"]: c["unit"] for c in metadata["columns"]}["hand.ax"] == "m/s²"
    assert "hand" in out and "wrote" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arm.csv", "arm.json"]  # no temporary files left


def test_kinematics_along_a_trajectory(capsys, tmp_path):
    # q(t) cubic in t: the not-a-knot spline through the samples reproduces it, so the rates the
    # command derives must equal the exact derivatives
    t = np.linspace(0.0, 2.0, 41)
    coefficients = np.array([[10.0, 20.0, -8.0, 3.0], [40.0, -15.0, 12.0, -2.0]])  # degrees
    q_deg = np.stack([np.polynomial.Polynomial(c)(t) for c in coefficients], -1)
    qd_deg = np.stack([np.polynomial.Polynomial(c).deriv(1)(t) for c in coefficients], -1)
    qdd_deg = np.stack([np.polynomial.Polynomial(c).deriv(2)(t) for c in coefficients], -1)
    trajectory = tmp_path / "trajectory.csv"
    trajectory.write_text("t,alpha1,alpha2\n" + "".join(f"{a!r},{b!r},{c!r}\n" for a, b, c in zip(t.tolist(), *q_deg.T.tolist())))
    output = tmp_path / "out" / "k.csv"
    output.parent.mkdir()
    status, out, err = run(capsys, "kinematics", TWO_LINK, "--trajectory", trajectory, "--point", "hand=link2:L2,0,0",
                           "-o", output, "--no-progress")
    assert status == 0, err
    header, table = read_csv(output)
    assert table.shape[0] == t.size
    np.testing.assert_allclose(column(header, table, "alpha2_dot"), qd_deg[:, 1], rtol=1e-9, atol=1e-9)
    position, velocity, acceleration = hand_kinematics(np.deg2rad(q_deg), np.deg2rad(qd_deg), np.deg2rad(qdd_deg))
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.{a}") for a in "xy"], -1), position, rtol=1e-12)
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.v{a}") for a in "xy"], -1), velocity, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.a{a}") for a in "xy"], -1), acceleration, rtol=1e-8, atol=1e-8)
    metadata = json.loads(output.with_suffix(".json").read_text())
    assert metadata["settings"]["trajectory"]["rows"] == t.size
    assert set(metadata["settings"]["trajectory"]["derived_by_cubic_spline"]) == {"alpha1_dot", "alpha2_dot", "alpha1_ddot", "alpha2_ddot"}
    # rates given in the file are used as they are
    trajectory.write_text("t,alpha1,alpha2,alpha1_dot\n0,0,0,90\n1,10,0,90\n")
    assert run(capsys, "kinematics", TWO_LINK, "--trajectory", trajectory, "-o", output)[0] == 0
    header, table = read_csv(output)
    np.testing.assert_array_equal(column(header, table, "alpha1_dot"), [90.0, 90.0])


def test_plot_writes_a_png(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "arm.csv"
    status, out, err = run(capsys, "kinematics", TWO_LINK, "--q", "alpha1=20", "--point", "link2:L2,0,0", "-o", output, "--plot")
    assert status == 0, err
    assert output.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(output.with_suffix(".json").read_text())["outputs"]["png"] == str(output.with_suffix(".png"))


def test_plot_without_matplotlib_says_how_to_install_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    status, out, err = run(capsys, "kinematics", TWO_LINK, "-o", tmp_path / "x.csv", "--plot")
    assert status == 1
    assert 'pip install "mbkron[plot]"' in err
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize(
    "argv, fragment",
    [(["kinematics", TWO_LINK, "--q", "alpha3=1"], "unknown coordinate `alpha3`; the model has: alpha1, alpha2"),
     (["kinematics", TWO_LINK, "--q", "alpha1"], "expected NAME=VALUE pairs"),
     (["kinematics", TWO_LINK, "--q", "alpha1=3x"], "--q alpha1:"),
     (["kinematics", TWO_LINK, "--point", "hand:0,0,0"], "unknown body `hand`"),
     (["kinematics", TWO_LINK, "--point", "link1:0,0"], "expected 3 coordinates"),
     (["kinematics", TWO_LINK, "--trajectory", "missing.csv"], "cannot read trajectory"),
     (["kinematics", TWO_LINK, "--trajectory", "missing.csv", "--q", "alpha1=1"], "either --trajectory or --q"),
     (["info", "no/such/model.toml"], "cannot read the model file no/such/model.toml: No such file or directory"),
     (["kinematics", ROOT / "models" / "four_bar.toml", "--q", "q=5", "--allow-outside-range"],
      "cannot continue the solution"),
     (["kinematics", ROOT / "models" / "four_bar.toml", "--q", "q=5"],
      "--q: `q` = 5 m is outside its range [-2, 2] m"),
     (["moment-arms", ROOT / "models" / "leg6dof9musc.toml", "--q", "knee_angle_r=-30"],
      "--q: `knee_angle_r` = -30 rad is outside its range [-2.0943951, 0.17453293] rad"),
     (["simulate", ROOT / "models" / "four_bar.toml", "--q0", "q=3"], "--q0: `q` = 3 m is outside its range")],
)
def test_user_errors_are_one_clear_line(capsys, tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, *argv)
    assert status == 1
    assert err.startswith("mbkron: error: ") and fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_trajectory_files(capsys, tmp_path):
    cases = {"t,alpha1\n0,1\n0,2\n": "strictly increasing", "t,elbow\n0,1\n": "the header must name",
             "t,alpha1\n0,1\n1,x\n": ":3: not a number", "t,alpha1\n0,1,2\n": ":2: expected 2 values", "": "empty"}
    for text, fragment in cases.items():
        path = tmp_path / "bad.csv"
        path.write_text(text)
        status, _, err = run(capsys, "kinematics", TWO_LINK, "--trajectory", path, "-o", tmp_path / "o.csv")
        assert status == 1 and fragment in err, (text, err)


def test_invalid_model_file_lists_every_problem(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[coordinates.q]\n[bodies.a]\naxis = [0, 0]\nvariable = "q + r"\nmass = -2\n')
    status, out, err = run(capsys, "info", path)
    assert status == 1
    assert f"invalid model in {path}: 3 problems" in err
    for fragment in ("bodies.a.axis", "unknown name `r`", "`mass` must be non-negative"):
        assert fragment in err


@pytest.mark.parametrize("command", ["info", "kinematics", "demo", "simulate", "moment-arms", "validate"])
def test_every_command_has_help_with_an_example(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert "example:" in capsys.readouterr().out


def test_demo_still_runs(capsys):
    status, out, err = run(capsys, "demo", "--samples", "3")
    assert status == 0 and "fingertip" in out and len(out.splitlines()) == 6


def test_write_atomically_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "result.csv"
    target.write_text("old")

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomically(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.csv"]


def test_console_script_as_a_subprocess(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "mbkron", "kinematics", str(TWO_LINK), "--q", "alpha1=90",
                           "--point", "tip=link2:L2,0,0", "-o", str(tmp_path / "k.csv")],
                          capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr
    header, table = read_csv(tmp_path / "k.csv")
    p = duarte.dempster_parameters()
    np.testing.assert_allclose([column(header, table, "tip.x")[0], column(header, table, "tip.y")[0]],
                               [0.0, p.L1 + p.L2], atol=1e-15)
    failed = subprocess.run([sys.executable, "-m", "mbkron", "info", str(tmp_path / "none.toml")],
                            capture_output=True, text=True, env=environment)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr


def test_long_trajectories_are_computed_in_chunks_without_a_progress_bar_off_a_terminal(capsys, tmp_path):
    t = np.linspace(0.0, 10.0, 2 * CHUNK_ROWS + 17)  # three chunks
    trajectory = tmp_path / "long.csv"
    trajectory.write_text("t,alpha1,alpha2\n" + "".join(f"{v!r},{30 * math.sin(v)!r},45.0\n" for v in t.tolist()))
    status, out, err = run(capsys, "kinematics", TWO_LINK, "--trajectory", trajectory, "--point", "tip=link2:L2,0,0",
                           "-o", tmp_path / "long_out.csv")
    assert status == 0 and err == ""  # stderr is not a terminal here: no progress bar
    header, table = read_csv(tmp_path / "long_out.csv")
    position, _, _ = hand_kinematics(np.deg2rad(np.stack([30 * np.sin(t), np.full_like(t, 45.0)], -1)), np.zeros((t.size, 2)),
                                     np.zeros((t.size, 2)))
    np.testing.assert_allclose(np.stack([column(header, table, "tip.x"), column(header, table, "tip.y")], -1), position, rtol=1e-12)


def test_a_simulation_csv_is_a_trajectory_for_kinematics(capsys, tmp_path):
    """`simulate`'s CSV (with its `f.<joint>` columns) feeds `kinematics --trajectory`; the rates in the file are used."""
    status, _, err = run(capsys, "simulate", TWO_LINK, "--t-end", "0.05", "--samples", "6", "--out", tmp_path,
                         "--no-progress")
    assert status == 0, err
    simulation = tmp_path / "two_link_arm_simulation.csv"
    sim_header, sim_table = read_csv(simulation)
    assert any(name.startswith("f.") for name in sim_header)
    output = tmp_path / "k.csv"
    status, _, err = run(capsys, "kinematics", TWO_LINK, "--trajectory", simulation, "--point", "hand=link2:L2,0,0",
                         "-o", output, "--no-progress")
    assert status == 0, err
    header, table = read_csv(output)
    q = np.deg2rad(np.stack([column(sim_header, sim_table, n) for n in ("alpha1", "alpha2")], -1))
    qd = np.deg2rad(np.stack([column(sim_header, sim_table, n + "_dot") for n in ("alpha1", "alpha2")], -1))
    qdd = np.deg2rad(np.stack([column(sim_header, sim_table, n + "_ddot") for n in ("alpha1", "alpha2")], -1))
    position, velocity, acceleration = hand_kinematics(q, qd, qdd)
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.{a}") for a in "xy"], -1), position, rtol=1e-12)
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.v{a}") for a in "xy"], -1), velocity, rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(np.stack([column(header, table, f"hand.a{a}") for a in "xy"], -1), acceleration,
                               rtol=1e-9, atol=1e-9)
