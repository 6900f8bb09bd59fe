"""validation/figures.py draws the shoulder figures (seed 002, Figs. 14–15 and 19–21) from the stored CSVs."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from validation import figures, shoulder_pipeline

SHOULDER = ["fig14_shoulder_elv", "fig15_rot_vs_elv", "sweep_elv_angle", "sweep_shoulder_rot", "fig19_shoulder_tracking",
            "fig20_shoulder_torques", "fig21_shoulder_muscle_forces"]


def test_shoulder_figures_are_written(tmp_path):
    inputs = [figures.DATA / f"{name}.csv" for name in SHOULDER[:3]]
    inputs += [shoulder_pipeline.RESULTS / "shoulder_tracking.csv", shoulder_pipeline.RESULTS / "shoulder_forces.csv"]
    if not all(path.exists() for path in inputs):
        pytest.skip("the shoulder CSVs are not in validation/results/ (not regenerated in tests: slow)")
    assert set(SHOULDER) <= set(figures.CAPTIONS)
    written = figures.make_figures(tmp_path, SHOULDER)
    assert [path.name for path in written] == [f"{name}.png" for name in SHOULDER]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 10_000
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically, nothing left behind


def test_the_leaders_are_the_seeds_table_5():
    assert list(figures.SHOULDER_LEADERS) == ["LAT1", "PECM3", "DELT1", "PECM1", "SUBSC", "DELT2"]
