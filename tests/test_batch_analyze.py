"""``analyze`` batches: items of the stored gait2354 walking trial (an ``.osim`` model, its motion, ground
reactions and their ExternalLoads travelling as text) give the files of :func:`mbkron.analysis.analyze_trial`,
and a 2-worker LocalCluster gives the serial run's files byte for byte."""

from __future__ import annotations

import json

import pytest

import mbkron
from mbkron import analysis
from mbkron.batch import MARKER, SUMMARY, read_batch, run_batch
from tests.test_analysis_id import unpack
from tests.test_batch import _files, _without_timings

BATCH = """
[batch]
kind = "analyze"

[defaults]
model = "subject01_simbody.osim"
motion = "subject01_walk1_ik.mot"
external_loads = "subject01_walk1_grf.xml"
external_loads_data = "subject01_walk1_grf.mot"
backend = "compiled"

[[item]]
id = "lowpass6"
lowpass = 6
time_start = 0.4
time_end = 1.6
analyses = ["id", "reactions"]

[[item]]
id = "unfiltered"
time_end = 1.0
analyses = ["id", "muscles"]

[[item]]
id = "lowpass8-child"
lowpass = 8
time_start = 0.6
time_end = 1.5
analyses = ["reactions"]
reactions_frame = "child"

[[item]]
id = "no-data"
external_loads_data = "missing.mot"
"""


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    directory = unpack(tmp_path_factory.mktemp("trial"))
    (directory / "missing.mot").write_text("")  # read by the driver; the worker's parse fails: reported per item
    (directory / "batch.toml").write_text(BATCH)
    return directory, read_batch(directory / "batch.toml")


def test_items_write_the_files_of_analyze_trial(batch, tmp_path):
    trial, items = batch
    report = run_batch(items, tmp_path / "out", serial=True, progress=False)
    assert sorted(report.computed) == sorted(item.id for item in items)
    assert list(report.failed) == ["no-data"] and "missing.mot" in report.failed["no-data"]
    model = mbkron.load_model(trial / "subject01_simbody.osim")
    for identifier, options in (("lowpass6", dict(lowpass=6, time_range=(0.4, 1.6), analyses=("id", "reactions"))),
                                ("unfiltered", dict(time_range=(float("-inf"), 1.0), analyses=("id", "muscles"))),
                                ("lowpass8-child", dict(lowpass=8, time_range=(0.6, 1.5),
                                                        analyses=("reactions",), reactions_frame="child"))):
        result = analysis.analyze_trial(model, trial / "subject01_walk1_ik.mot",
                                        external_loads=trial / "subject01_walk1_grf.xml", **options)
        expected = tmp_path / "direct" / identifier
        expected.mkdir(parents=True)
        names = sorted(p.split("/")[-1] for p in result.write(expected, "subject01_walk1_ik").values())
        out = tmp_path / "out" / identifier
        assert sorted(p.name for p in out.iterdir() if p.name != MARKER) == names
        for name in names:
            assert (out / name).read_bytes() == (expected / name).read_bytes(), (identifier, name)
        marker = json.loads((out / MARKER).read_text())
        assert marker["outcome"] == "completed" and marker["settings"]["frames"] == result.kinematics.time.size
        assert marker["model"]["name"] == model.name and marker["files"] == names

    pytest.importorskip("distributed")
    cluster = run_batch(items, tmp_path / "cluster", workers=2, progress=False)
    assert cluster.executor == "LocalCluster (2 workers)" and cluster.failed == report.failed
    a, b = _files(tmp_path / "out"), _files(tmp_path / "cluster")
    assert a.keys() == b.keys()
    for name in a:
        if name.endswith(MARKER):
            assert _without_timings(a[name]) == _without_timings(b[name]), name
        elif name != SUMMARY:
            assert a[name] == b[name], name


SO_BATCH = BATCH[:BATCH.index("[[item]]")] + """ignore_wrapping = true
lowpass = 6
time_start = 0.5
time_end = 0.6
analyses = ["so"]

[[item]]
id = "no-reserves"
"""


def test_unbalanced_static_optimisation_is_a_warning_in_the_item_and_the_summary(batch, tmp_path):
    """Without reserves, the pelvis's six coordinates have no actuator: no frame balances (issue 27 item 13)."""
    trial, _ = batch
    (trial / "so.toml").write_text(SO_BATCH)
    report = run_batch(read_batch(trial / "so.toml"), tmp_path / "out", serial=True, progress=False)
    marker = json.loads((tmp_path / "out" / "no-reserves" / MARKER).read_text())
    frames = marker["settings"]["frames"]
    assert marker["settings"]["static_optimization_unbalanced_frames"] == frames > 0
    assert marker["outcome"] == "warnings"
    expected = f"could not balance the generalized forces at {frames} of {frames} frames"
    assert any(expected in w and "reserve actuators help" in w for w in marker["warnings"])
    assert list(report.warned) == ["no-reserves"] and report.failed == {}
    summary = json.loads((tmp_path / "out" / SUMMARY).read_text())
    assert summary["warnings"] == {"no-reserves": marker["warnings"]}
