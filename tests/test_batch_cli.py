"""`mbkron batch`: help without dask, usage errors, failed items and exit statuses, and a driver killed or
interrupted mid-batch that resumes without computing its finished items again (real subprocesses, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mbkron.batch import MARKER, read_batch, run_batch

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "two_link_arm.toml"

LIST_MODULES = """
import json, runpy, sys
sys.argv = ["mbkron", *json.loads(sys.argv[1])]
try:
    runpy.run_module("mbkron", run_name="__main__", alter_sys=True)
    status = 0
except SystemExit as exit:
    status = exit.code
print(json.dumps([status, sorted({name.partition(".")[0] for name in sys.modules})]))
"""


def _batch_file(directory: Path, items: int, t_end: float = 0.1, extra: str = "") -> Path:
    rows = "\n".join(f"i{k:03d},{k % 90},{60 + k}" for k in range(items))
    (directory / "sets.csv").write_text(f"id,q0.alpha1,parameters.body_mass\n{rows}\n")
    path = directory / "batch.toml"
    path.write_text(f'[batch]\nkind = "simulate"\nitems = "sets.csv"\n\n[defaults]\nmodel = "{MODEL.as_posix()}"\n'
                    f'backend = "compiled"\nt_end = {t_end}\nsamples = 11\n{extra}')
    return path


def _mbkron(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbkron", *arguments], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize("argv, status, output", [
    (["batch", "--help"], 0, "usage: mbkron batch"),
    (["batch", "b.toml"], 2, "the following arguments are required: --out"),
    (["batch", "b.toml", "--out", "o", "--workers", "0"], 2, "must be at least 1"),
    (["batch", "b.toml", "--out", "o", "--serial", "--workers", "2"], 2,
     "argument --workers: not allowed with argument --serial"),
    (["batch", "b.toml", "--out", "o", "--scheduler", "tcp://h:1", "--workers", "2"], 2,
     "argument --workers: not allowed with argument --scheduler"),
])
def test_help_and_usage_errors_import_neither_dask_nor_numpy(argv, status, output):
    done = subprocess.run([sys.executable, "-c", LIST_MODULES, json.dumps(argv)], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    *printed, last = done.stdout.splitlines()
    exit_status, modules = json.loads(last)
    assert exit_status == status and output in "\n".join(printed) + done.stderr
    if status:
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert [name for name in ("dask", "distributed", "numpy", "scipy", "sympy") if name in modules] == []


def test_failed_items_are_listed_and_the_exit_status_is_1(tmp_path):
    path = _batch_file(tmp_path, 3, extra='\n[[item]]\nid = "far"\nq0 = { alpha9 = 1 }\n')
    done = _mbkron("batch", str(path), "--out", str(tmp_path / "out"), "--serial")
    assert done.returncode == 1, done.stderr
    assert "4 items (serial): 3 computed, 0 finished earlier, 1 failed" in done.stdout
    assert "failed: far: `q0`: unknown coordinate `alpha9`" in done.stdout
    assert done.stderr.strip() == "mbkron: error: 1 of 4 items failed (listed above and in their item.json)"
    again = _mbkron("batch", str(path), "--out", str(tmp_path / "out"), "--serial")
    assert "4 items (serial): 0 computed, 3 finished earlier, 1 failed" in again.stdout  # the failed one: again


def test_a_bad_batch_file_is_one_line_and_status_1(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text("[batch]\nkind = 'simulate'\n[[item]]\nid = 'a'\nt_end = 'long'\n")
    done = _mbkron("batch", str(path), "--out", str(tmp_path / "out"), "--serial")
    assert done.returncode == 1
    assert done.stderr == f"mbkron: error: {path}: [[item]] #1: t_end: expected a finite positive number, got 'long'\n"


def _finished(out: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in out.glob(f"*/{MARKER}")}


def _start(path: Path, out: Path, *options: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mbkron", "batch", str(path), "--out", str(out), "--no-progress",
                             *options], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # a process group of its own, as a shell job


def _wait_for_markers(out: Path, process: subprocess.Popen, count: int) -> None:
    """Polls until ``count`` items are finished; no clock of its own: the suite's pytest-timeout ends a hang."""
    while len(_finished(out)) < count:
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)


@pytest.mark.parametrize("options", [["--workers", "2"], ["--serial"]], ids=["cluster", "serial"])
def test_a_killed_driver_resumes_without_computing_finished_items_again(tmp_path, options, children):
    if options[0] == "--workers":
        pytest.importorskip("distributed")
    path, out = _batch_file(tmp_path, 30, t_end=0.5), tmp_path / "out"
    process = _start(path, out, *options)
    children.append(process)
    _wait_for_markers(out, process, 3)
    process.kill()  # SIGKILL: no clean-up at all
    process.communicate()
    finished = _finished(out)
    assert 3 <= len(finished) < 30
    report = run_batch(read_batch(path), out, serial=True, progress=False)
    assert sorted(report.skipped) == sorted(finished)
    assert sorted(report.computed) == sorted(set(f"i{k:03d}" for k in range(30)) - set(finished))
    assert all(_finished(out)[name] == stamp for name, stamp in finished.items())  # not written again
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # no temporary file left behind


def test_ctrl_c_stops_the_batch_and_its_workers_cleanly(tmp_path, children):
    pytest.importorskip("distributed")
    path, out = _batch_file(tmp_path, 60, t_end=0.5), tmp_path / "out"
    process = _start(path, out, "--workers", "2")
    children.append(process)
    _wait_for_markers(out, process, 2)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C at a terminal: the whole process group, workers included
    stdout, stderr = process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    finished = len(_finished(out))
    assert stderr.startswith(f"mbkron: interrupted; {finished} of 60 items are finished in {out}")
    summary = json.loads((out / "batch.json").read_text())
    assert summary["interrupted"] is True and len(summary["computed"]) == finished
