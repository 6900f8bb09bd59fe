"""Batches (mbkron.batch): results equal to direct simulations, a 2-worker LocalCluster byte for byte equal to a
serial run, resumption (finished items skipped, changed and failed ones computed again), failures per item."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.batch import MARKER, SUMMARY, BatchError, read_batch, run_batch

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "two_link_arm.toml"

BATCH = f"""
[batch]
kind = "simulate"

[defaults]
model = "{MODEL.as_posix()}"
backend = "compiled"
t_end = 0.2
samples = 21
q0 = {{ alpha1 = 30 }}

[[item]]
id = "elbow-10"
q0 = {{ alpha2 = 10 }}

[[item]]
id = "heavy"
parameters = {{ body_mass = 80 }}

[[item]]
id = "rk"
method = "RKF45"
qd0 = {{ alpha2 = -20 }}
rtol = 1e-8

[[item]]
id = "typo"
q0 = {{ alpha3 = 5 }}
"""


def _batch(directory: Path, text: str = BATCH) -> list:
    path = directory / "batch.toml"
    path.write_text(text)
    return read_batch(path)


def _table(path: Path) -> tuple[list[str], np.ndarray]:
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], np.array(rows[1:], dtype=float)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _without_timings(data: bytes) -> dict:
    document = json.loads(data)
    document.pop("timings_s")
    return document


def test_items_are_the_simulations_they_describe(tmp_path):
    items = _batch(tmp_path)
    report = run_batch(items, tmp_path / "out", serial=True, progress=False)
    assert sorted(report.computed) == ["elbow-10", "heavy", "rk", "typo"] and report.skipped == []
    assert list(report.failed) == ["typo"] and "unknown coordinate `alpha3`" in report.failed["typo"]

    deg = np.pi / 180
    model = mbkron.load_model(MODEL)
    expected = mbkron.simulate(model, (0.0, 0.2), [30 * deg, 10 * deg], t_eval=np.linspace(0, 0.2, 21))
    header, table = _table(tmp_path / "out" / "elbow-10" / "simulation.csv")
    assert header[:5] == ["t", "alpha1", "alpha2", "alpha1_dot", "alpha2_dot"]
    np.testing.assert_array_equal(table[:, 0], expected.t)
    np.testing.assert_array_equal(table[:, 1:3], expected.q / deg)  # file units: degrees
    np.testing.assert_array_equal(table[:, 3:5], expected.qd / deg)

    # a parameter of the model file, set by the item: the same as the file with that parameter edited
    heavy = mbkron.io.parse_model_file(MODEL.read_text().replace("body_mass = 70.0", "body_mass = 80.0")).model
    assert heavy.body("link1").mass == pytest.approx(0.028 * 80, rel=1e-15)
    expected = mbkron.simulate(heavy, (0.0, 0.2), [30 * deg, 0.0], t_eval=np.linspace(0, 0.2, 21))
    np.testing.assert_array_equal(_table(tmp_path / "out" / "heavy" / "simulation.csv")[1][:, 1:3], expected.q / deg)

    expected = mbkron.simulate(model, (0.0, 0.2), [30 * deg, 0.0], [0.0, -20 * deg], method="RKF45", rtol=1e-8,
                               t_eval=np.linspace(0, 0.2, 21))
    np.testing.assert_array_equal(_table(tmp_path / "out" / "rk" / "simulation.csv")[1][:, 1:3], expected.q / deg)

    marker = json.loads((tmp_path / "out" / "rk" / MARKER).read_text())
    assert marker["outcome"] == "completed" and marker["spec_sha256"] == items[2].digest
    assert marker["fields"] == {"model": MODEL.as_posix(), "backend": "compiled", "t_end": 0.2, "samples": 21,
                                "q0": {"alpha1": 30.0}, "method": "RKF45", "qd0": {"alpha2": -20.0}, "rtol": 1e-8}
    assert marker["settings"]["method"] == "RKF45" and marker["settings"]["rtol"] == 1e-8
    assert marker["outputs"]["simulation.csv"]["bytes"] == (tmp_path / "out" / "rk" / "simulation.csv").stat().st_size
    failed = json.loads((tmp_path / "out" / "typo" / MARKER).read_text())
    assert failed["outcome"] == "failed" and failed["outputs"] == {}
    summary = json.loads((tmp_path / "out" / SUMMARY).read_text())
    assert summary["failed"] == {"typo": report.failed["typo"]} and summary["interrupted"] is False


def test_a_rerun_skips_finished_items_and_recomputes_changed_and_failed_ones(tmp_path):
    out = tmp_path / "out"
    run_batch(_batch(tmp_path), out, serial=True, progress=False)
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*/*")}
    again = run_batch(_batch(tmp_path), out, serial=True, progress=False)
    assert sorted(again.skipped) == ["elbow-10", "heavy", "rk"] and again.computed == ["typo"]  # failed: retried
    assert all(p.stat().st_mtime_ns == stamp for p, stamp in stamps.items() if p.parent.name != "typo")

    changed = BATCH.replace('id = "heavy"\nparameters = { body_mass = 80 }', 'id = "heavy"\nparameters = { body_mass = 90 }')
    changed = changed.replace("rtol = 1e-8", "rtol = 1e-7").replace('alpha3 = 5', 'alpha2 = 5')
    third = run_batch(_batch(tmp_path, changed), out, serial=True, progress=False)
    assert sorted(third.computed) == ["heavy", "rk", "typo"] and third.skipped == ["elbow-10"] and not third.failed
    assert json.loads((out / "rk" / MARKER).read_text())["settings"]["rtol"] == 1e-7

    (out / "elbow-10" / "simulation.csv").unlink()  # a finished item whose result is gone is computed again
    model_edit = tmp_path / "arm.toml"  # so is an item whose model file changed
    model_edit.write_text(MODEL.read_text().replace("g = 9.81", "g = 9.80665"))
    fourth = run_batch(_batch(tmp_path, changed.replace(MODEL.as_posix(), model_edit.as_posix())), out, serial=True,
                       progress=False)
    assert sorted(fourth.computed) == ["elbow-10", "heavy", "rk", "typo"]


def test_a_two_worker_local_cluster_gives_the_serial_results_byte_for_byte(tmp_path):
    pytest.importorskip("distributed")
    items = _batch(tmp_path)
    serial = run_batch(items, tmp_path / "serial", serial=True, progress=False)
    cluster = run_batch(items, tmp_path / "cluster", workers=2, progress=False)
    assert cluster.executor == "LocalCluster (2 workers)"
    assert sorted(cluster.computed) == sorted(serial.computed) and cluster.failed == serial.failed
    a, b = _files(tmp_path / "serial"), _files(tmp_path / "cluster")
    assert a.keys() == b.keys()
    for name in a:
        if name.endswith(MARKER):
            assert _without_timings(a[name]) == _without_timings(b[name]), name
        elif name != SUMMARY:
            assert a[name] == b[name], name


def test_arguments_and_a_batch_running_into_the_same_directory(tmp_path):
    items = _batch(tmp_path)
    with pytest.raises(ValueError, match="`serial` runs without dask"):
        run_batch(items, tmp_path, serial=True, workers=2)
    with pytest.raises(ValueError, match="`workers` sets the size of the LocalCluster"):
        run_batch(items, tmp_path, scheduler="tcp://127.0.0.1:1", workers=2)
    with pytest.raises(ValueError, match="`workers` must be a positive integer"):
        run_batch(items, tmp_path, workers=0)
    with pytest.raises(ValueError, match="distinct ids"):
        run_batch(items + items[:1], tmp_path, serial=True)
    import fcntl
    import os

    descriptor = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        with pytest.raises(BatchError, match="another batch is writing into"):
            run_batch(items, tmp_path, serial=True, progress=False)
    finally:
        os.close(descriptor)


def test_without_dask_a_batch_runs_serially_and_a_cluster_asked_for_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    with pytest.raises(BatchError, match=r'a batch on a cluster needs dask.distributed: pip install "mbkron\[distributed\]"'):
        run_batch(_batch(tmp_path), tmp_path / "out", workers=2, progress=False)
    report = run_batch(_batch(tmp_path), tmp_path / "out", progress=False)
    assert report.executor == 'serial: no dask.distributed here (pip install "mbkron[distributed]")'
    assert sorted(report.computed) == ["elbow-10", "heavy", "rk", "typo"]


def test_a_running_cluster_given_by_its_address(tmp_path):
    distributed = pytest.importorskip("distributed")
    items = _batch(tmp_path)[:2]
    run_batch(items, tmp_path / "serial", serial=True, progress=False)
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        report = run_batch(items, tmp_path / "remote", scheduler=cluster.scheduler_address, progress=False)
    assert report.executor == cluster.scheduler_address and sorted(report.computed) == ["elbow-10", "heavy"]
    for name in ("elbow-10", "heavy"):
        assert (tmp_path / "remote" / name / "simulation.csv").read_bytes() == (
            tmp_path / "serial" / name / "simulation.csv").read_bytes()
