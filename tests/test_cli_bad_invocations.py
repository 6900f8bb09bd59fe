"""Bad invocations of every command: one line on stderr naming the argument or file, exit status 2 for
usage errors and 1 for bad input, never a traceback, and nothing computed or written first."""

from __future__ import annotations

from pathlib import Path

import pytest

from mbkron.cli import main

ROOT = Path(__file__).resolve().parents[1]
ARM = str(ROOT / "models" / "two_link_arm.toml")
LEG = str(ROOT / "models" / "leg6dof9musc.toml")
FOUR_BAR = str(ROOT / "models" / "four_bar.toml")
SHOULDER = str(ROOT / "models" / "shoulder_rhythm.toml")

USAGE = [  # argparse: exit status 2
    (["bogus"], "invalid choice: 'bogus'"),
    ([], "the following arguments are required: COMMAND"),
    (["simulate"], "the following arguments are required: MODEL"),
    (["simulate", ARM, "--method", "Euler"], "argument --method: unknown solver 'Euler'"),
    (["simulate", ARM, "--t-end", "-1"], "argument --t-end: must be a positive number of seconds"),
    (["simulate", ARM, "--t-end", "0"], "argument --t-end: must be a positive number of seconds"),
    (["simulate", ARM, "--t-end", "inf"], "argument --t-end: must be a positive number of seconds"),
    (["simulate", ARM, "--t-end", "abc"], "argument --t-end: must be a positive number of seconds, got 'abc'"),
    (["simulate", ARM, "--rtol", "-1"], "argument --rtol: must be a positive number"),
    (["simulate", ARM, "--rtol", "nan"], "argument --rtol: must be a positive number"),
    (["simulate", ARM, "--atol", "0"], "argument --atol: must be a positive number"),
    (["simulate", ARM, "--samples", "1"], "argument --samples: must be at least 2"),
    (["simulate", ARM, "--samples", "2.5"], "argument --samples: must be an integer"),
    (["simulate", ARM, "--bogus"], "unrecognized arguments: --bogus"),
    (["kinematics"], "the following arguments are required: MODEL"),
    (["kinematics", ARM, "--q"], "argument --q: expected one argument"),
    (["moment-arms"], "the following arguments are required: MODEL"),
    (["info"], "the following arguments are required: MODEL"),
    (["validate", "--quick", "--update-report"], "without --quick"),
    (["validate", "--update-report", "--out", "x"], "argument --out: not allowed with argument --update-report"),
    (["demo", "--samples", "many"], "argument --samples: invalid int value"),
]

INPUT = [  # bad files and values: exit status 1
    (["info", "no/such/model.toml"], "cannot read the model file no/such/model.toml"),
    (["info", str(ROOT / "models")], "cannot read the model file"),
    (["info", str(ROOT / "README.md")], "invalid model"),
    (["simulate", ARM, "--q0", "gamma=1"], "--q0: unknown coordinate `gamma`"),
    (["simulate", ARM, "--q0", "alpha1"], "--q0: expected NAME=VALUE pairs"),
    (["simulate", ARM, "--q0", "alpha1=1,alpha1=2"], "--q0: coordinate `alpha1` is given twice"),
    (["simulate", ARM, "--qd0", "alpha1=nan"], "--qd0 alpha1: `nan` at column 1: unknown name `nan`"),
    (["simulate", FOUR_BAR, "--q0", "q=3"], "--q0: `q` = 3 m is outside its range [-2, 2] m"),
    (["kinematics", ARM, "--q", "alpha9=1"], "--q: unknown coordinate `alpha9`"),
    (["kinematics", ARM, "--point", "hand=nobody:0,0,0"], "nobody"),
    (["kinematics", FOUR_BAR, "--q", "q=5"], "--q: `q` = 5 m is outside its range"),
    (["kinematics", ARM, "--trajectory", "missing.csv"], "cannot read trajectory missing.csv"),
    (["moment-arms", ARM], "has no muscles"),
    (["moment-arms", LEG, "--q", "knee_angle_r=-30"], "--q: `knee_angle_r` = -30 rad is outside its range"),
    (["moment-arms", SHOULDER, "--sweep", "nothing"], "--sweep: unknown coordinate `nothing`"),
    (["moment-arms", SHOULDER, "--from", "0"], "need --sweep COORDINATE"),
    (["simulate", ARM, "--out", "taken"], "--out: taken/two_link_arm_simulation.csv is a directory"),
]


def _run(capsys, argv):
    try:
        status = main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("argv, fragment", USAGE, ids=[" ".join(a[:3])[:40] for a, _ in USAGE])
def test_usage_errors(capsys, tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, argv)
    assert status == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("mbkron") and ": error: " in err and fragment in err, err
    assert not any(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("argv, fragment", INPUT, ids=[" ".join(a[:3])[-40:] for a, _ in INPUT])
def test_input_errors(capsys, tmp_path, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken" / "two_link_arm_simulation.csv").mkdir(parents=True)  # a directory where a result goes
    status, out, err = _run(capsys, argv)
    assert status == 1, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("mbkron: compiling")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("mbkron: error: ") and fragment in lines[0], err
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]  # nothing written


def test_the_table_is_long_enough():
    assert len(USAGE) + len(INPUT) >= 30
