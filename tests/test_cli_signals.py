"""Ctrl-C and SIGTERM during `mbkron simulate`: what was computed is written, exit status 130, no traceback.

Real subprocesses receive real signals. A first short run fills numba's cache, so that the long run
is integrating (not compiling) when the signal arrives; if it arrives earlier (a slow machine), the
command must still stop cleanly, and the test waits longer and tries again.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "two_link_arm.toml"


def _simulate(out: Path, t_end: str, samples: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mbkron", "simulate", str(MODEL), "--t-end", t_end, "--samples",
                             samples, "--out", str(out), "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_simulation_writes_what_it_computed(tmp_path, signal_number, children):
    warm = _simulate(tmp_path / "warm", "0.01", "3")
    children.append(warm)
    assert warm.wait() == 0, warm.stderr.read()  # no clock here: the suite's pytest-timeout ends a hang
    for attempt, wait in enumerate((4.0, 10.0, 25.0)):
        out = tmp_path / f"run{attempt}"
        process = _simulate(out, "1e4", "100001")  # would take hours: only a signal ends it
        children.append(process)
        time.sleep(wait)  # lets it get into the integration (not a measurement: a too-early signal is retried)
        process.send_signal(signal_number)
        stdout, stderr = process.communicate()
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
        assert stderr.startswith("mbkron: interrupted")
        leftovers = [p.name for p in out.iterdir() if p.suffix not in (".csv", ".json")] if out.exists() else []
        assert not leftovers  # no temporary files
        metadata = out / "two_link_arm_simulation.json"
        if metadata.exists() and json.loads(metadata.read_text())["outputs"]["csv_rows"] >= 2:
            break  # (one row: the signal came as the integration started, on a loaded machine; wait longer)
    else:
        pytest.fail("the signal never arrived during the integration")
    data = json.loads(metadata.read_text())
    settings = data["settings"]
    assert settings["outcome"] == "interrupted" and settings["status"] == -2
    assert "interrupted after t = " in settings["message"] and "q = [" in settings["message"]
    with open(out / "two_link_arm_simulation.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    header, table = rows[0], np.array(rows[1:], dtype=float)
    assert header[:3] == ["t", "alpha1", "alpha2"] and len(table) >= 2
    t = table[:, 0]
    assert np.all(np.diff(t) > 0) and np.allclose(np.diff(t), 0.1)  # the output times up to the stop
    assert np.isfinite(table).all()
    assert settings["last_row"]["t"] == pytest.approx(t[-1]) and settings["last_row"]["q"] == pytest.approx(
        table[-1, 1:3].tolist())
    stopped_at = float(settings["message"].split("interrupted after t = ")[1].split()[0])
    assert t[-1] <= stopped_at < t[-1] + 0.1 + 1e-9
