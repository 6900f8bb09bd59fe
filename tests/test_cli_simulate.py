"""`mbkron simulate`: the README's main job, its outputs, and a run that stops early."""

from __future__ import annotations

import csv
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from mbkron.cli import main
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.integrate.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]

MODELS = Path(__file__).resolve().parents[1] / "models"


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    with path.open() as handle:
        rows = list(csv.reader(handle))
    return rows[0], np.array(rows[1:], dtype=float)


def test_simulate_andrews_writes_trajectory_and_metadata(tmp_path, capsys):
    status = main(["simulate", str(MODELS / "andrews_squeezer.toml"), "--t-end", "0.004", "--method", "RKF45",
                   "--rtol", "1e-8", "--atol", "1e-8", "--samples", "9", "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    header, table = read_csv(tmp_path / "andrews_squeezer_simulation.csv")
    assert header[:4] == ["t", "beta", "beta_dot", "beta_ddot"] and header[4:] == [
        "f.crank", "f.Theta", "f.gamma", "f.delta", "f.Phi", "f.epsilon", "f.Omega"]
    np.testing.assert_allclose(table[:, 0], np.linspace(0, 0.004, 9))
    assert table[0, 1] == INITIAL["beta"] and table[0, 2] == 0.0
    assert table[0, 3] == pytest.approx(14222.4439199541138705911625887, rel=1e-10)  # the IVP test set's q''(0)
    reference = simulate(andrews_squeezer("lu"), (0, 0.004), [INITIAL["beta"]], method="RKF45", rtol=1e-8, atol=1e-8,
                         t_eval=np.linspace(0, 0.004, 9))
    np.testing.assert_allclose(table[:, 1], reference.q[:, 0], rtol=0, atol=1e-12)
    metadata = json.loads((tmp_path / "andrews_squeezer_simulation.json").read_text(),
                          parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    assert metadata["settings"]["method"] == "RKF45" and metadata["settings"]["status"] == 0
    assert metadata["settings"]["nfev"] > 0 and metadata["model"]["sha256"]
    assert "reached the end" in capsys.readouterr().out


def test_simulate_plot_needs_matplotlib_or_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    status = main(["simulate", str(MODELS / "two_link_arm.toml"), "--t-end", "0.05", "--samples", "5", "--plot",
                   "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    assert (tmp_path / "two_link_arm_simulation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_that_stops_early_keeps_rows_and_exits_1(tmp_path, capsys):
    model = tmp_path / "slider.toml"
    model.write_text("""
[model]
name = "slider"
gravity = [-9.81, 0, 0]
[coordinates.x]
unit = "m"
default = 1.0
[bodies.slider]
joint = "prismatic"
axis = [1, 0, 0]
variable = "log(x)"
mass = 1.0
""")
    status = main(["simulate", str(model), "--t-end", "5", "--qd0", "x=-2", "--method", "RKF45", "--out",
                   str(tmp_path), "--no-progress"])
    assert status == 1
    err = capsys.readouterr().err
    assert "stopped early" in err and "q = [" in err
    _, table = read_csv(tmp_path / "slider_simulation.csv")
    assert 3 < len(table) < 501 and np.all(table[:, 1] > 0)


def test_the_four_bar_outside_its_range_ends_at_its_fold_with_one_line(tmp_path, capsys):
    """#14 acceptance: `mbkron simulate models/four_bar.toml --t-end 1 --allow-outside-range` ends in seconds
    with a message naming the coordinate, t, q and the smallest singular value (it took ~114 000
    evaluations to a step-size underflow)."""
    status = main(["simulate", str(ROOT / "models" / "four_bar.toml"), "--t-end", "1", "--allow-outside-range",
                   "--out", str(tmp_path), "--no-progress"])
    assert status == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mbkron: error: the simulation stopped early: stopped after t = ")
    assert "driven by coordinate `q`" in err and "σ_min = " in err and "(crank, coupler, rocker)" in err
    settings = json.loads((tmp_path / "four_bar_simulation.json").read_text())["settings"]
    assert settings["outcome"] == "failed" and settings["nfev"] < 5000 and settings["steps"] < 1000
    assert -2.5981 < settings["last_row"]["q"][0] < -2.59 and 0.9 < settings["last_row"]["t"] < 1.0


@pytest.mark.parametrize("arguments, message", [
    (["--method", "Euler"], "argument --method: unknown solver 'Euler'; expected one of TRBDF2, RKF45"),
    (["--t-end", "-1"], "argument --t-end: must be a positive number of seconds, got '-1'"),
    (["--t-end", "0"], "argument --t-end: must be a positive number of seconds, got '0'"),
    (["--samples", "1"], "argument --samples: must be at least 2 (the start and the end), got 1"),
    (["--samples", "x"], "argument --samples: must be an integer, got 'x'"),
    (["--rtol", "-1"], "argument --rtol: must be a positive number, got '-1'"),
    (["--atol", "nan"], "argument --atol: must be a positive number, got 'nan'"),
])
def test_simulate_bad_argument_values_are_usage_errors(tmp_path, capsys, arguments, message):
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", str(MODELS / "two_link_arm.toml"), "--out", str(tmp_path), *arguments])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_simulate_bad_coordinate_name(tmp_path, capsys):
    status = main(["simulate", str(MODELS / "two_link_arm.toml"), "--out", str(tmp_path), "--q0", "gamma=1"])
    assert status == 1
    assert "unknown coordinate `gamma`" in capsys.readouterr().err


def test_the_cli_knows_every_solver():
    from mbkron.cli.simulate import METHOD_NAMES
    from mbkron.integrate.simulate import METHODS

    assert sorted(METHOD_NAMES) == sorted(METHODS)


@pytest.mark.parametrize("relative", ["afile", "afile/sub"])
def test_simulate_refuses_an_output_path_that_is_a_file_before_simulating(tmp_path, capsys, monkeypatch, relative):
    """`--out` is checked before the (expensive) simulation: nothing is computed and lost."""
    (tmp_path / "afile").write_text("not a directory")
    calls = []
    monkeypatch.setattr(importlib.import_module("mbkron.integrate.simulate"), "simulate",
                        lambda *a, **k: calls.append(a))
    status = main(["simulate", str(MODELS / "two_link_arm.toml"), "--out", str(tmp_path / relative)])
    assert status == 1 and calls == []
    err = capsys.readouterr().err
    assert err.startswith("mbkron: error: --out: ") and "Traceback" not in err


def test_simulate_method_is_case_insensitive_and_a_rerun_leaves_no_stale_figure(tmp_path):
    (tmp_path / "two_link_arm_simulation.png").write_bytes(b"an earlier run's figure")
    status = main(["simulate", str(MODELS / "two_link_arm.toml"), "--out", str(tmp_path), "--t-end", "0.05",
                   "--method", "rkf45", "--no-progress"])
    assert status == 0
    metadata = json.loads((tmp_path / "two_link_arm_simulation.json").read_text())
    assert metadata["settings"]["method"] == "RKF45" and metadata["outputs"]["png"] is None
    assert not (tmp_path / "two_link_arm_simulation.png").exists()


def test_a_model_with_muscles_is_told_they_apply_no_force(tmp_path, capsys):
    status = main(["simulate", str(MODELS / "leg6dof9musc.toml"), "--t-end", "0.001", "--samples", "2",
                   "--out", str(tmp_path), "--no-progress"])
    assert status == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "muscle" in line]
    assert len(lines) == 1 and lines[0].startswith("mbkron: warning: model `leg6dof9musc` has 9 muscles")
    assert "applies no muscle force" in lines[0]


def test_a_model_without_muscles_gets_no_muscle_warning(tmp_path, capsys):
    assert main(["simulate", str(MODELS / "two_link_arm.toml"), "--t-end", "0.01", "--samples", "2",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    assert "muscle" not in capsys.readouterr().err
