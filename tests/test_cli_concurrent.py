"""Two `mbkron simulate` runs into one `--out` at the same time: the result set is one run's, whole.

Real subprocesses. To make them write at the same moment (not just by luck of timing), the test
holds the result-set lock of the directory (:func:`mbkron.cli.common.result_set_lock`) while both
simulate, waits until the kernel shows both runs blocked on it (``/proc/locks``: Linux), and
releases it: the two then contend for the directory at once. The CSV must be exactly one run's
(its rows, its initial state), the JSON must describe that CSV (row count and SHA-256 of the
file) and that run's settings, and nothing else may be left (no temporary files, no lock file).
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mbkron.cli.common import result_set_lock

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "two_link_arm.toml"
RUNS = {"a": ("alpha1=10,alpha2=20", 20001), "b": ("alpha1=-30,alpha2=40", 20002)}  # q0 (deg), samples
LOCKS = Path("/proc/locks")

pytestmark = pytest.mark.skipif(not LOCKS.exists() or sys.platform != "linux", reason="needs Linux's /proc/locks")


def _simulate(out: Path, q0: str, samples: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mbkron", "simulate", str(MODEL), "--t-end", "0.5", "--q0", q0,
                             "--samples", str(samples), "--out", str(out), "--no-progress"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _blocked_on_a_lock(pids: set[int]) -> set[int]:
    """The processes among ``pids`` waiting for a file lock (``->`` lines of /proc/locks)."""
    waiting = set()
    for line in LOCKS.read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "->" and fields[2] == "FLOCK":
            waiting.add(int(fields[5]))
    return waiting & pids


def test_two_concurrent_runs_leave_one_whole_result_set(tmp_path, children):
    out = tmp_path / "out"
    out.mkdir()
    with result_set_lock(out / "two_link_arm_simulation.csv"):
        processes = [_simulate(out, q0, samples) for q0, samples in RUNS.values()]
        children.extend(processes)  # killed at teardown if a hang is ended by pytest-timeout (pyproject.toml)
        pids = {process.pid for process in processes}
        while _blocked_on_a_lock(pids) != pids:  # both have simulated and wait to write (no clock: see above)
            finished = [p for p in processes if p.poll() is not None]
            assert not finished, [p.communicate()[1] for p in finished]  # a run may not write past the lock
            time.sleep(0.05)
        assert list(out.iterdir()) == []
    for process in processes:
        _, stderr = process.communicate()
        assert process.returncode == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == ["two_link_arm_simulation.csv", "two_link_arm_simulation.json"]
    data = (out / "two_link_arm_simulation.csv").read_bytes()
    metadata = json.loads((out / "two_link_arm_simulation.json").read_text())
    table = np.array(list(csv.reader(data.decode().splitlines()))[1:], dtype=float)
    # the CSV is one run's: its row count and its initial state, from the first row to the last
    (name,) = [name for name, (_, samples) in RUNS.items() if samples == len(table)]
    expected_q0 = [float(x.split("=")[1]) for x in RUNS[name][0].split(",")]
    assert table[0, 1:3] == pytest.approx(expected_q0, abs=1e-12)
    assert table[0, 0] == 0.0 and table[-1, 0] == pytest.approx(0.5) and np.all(np.diff(table[:, 0]) > 0)
    # the JSON describes that very file and that run
    outputs, settings = metadata["outputs"], metadata["settings"]
    assert outputs["csv_rows"] == len(table) and outputs["csv_sha256"] == hashlib.sha256(data).hexdigest()
    assert settings["samples"] == RUNS[name][1] and settings["outcome"] == "completed"
    assert np.degrees(settings["q0"]) == pytest.approx(expected_q0)
    assert metadata["command_line"][metadata["command_line"].index("--q0") + 1] == RUNS[name][0]
