"""A batch of 100 simulations (or analyses) on a dask LocalCluster against the same batch run serially: identical results, times.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_batch [--items N] [--workers W]
[--analyze]``. With ``--analyze`` the items are analyses of the gait2354 walking trial stored in
``tests/data/analysis`` (``.osim`` model, motion, ground reactions: inverse dynamics, muscle analysis,
joint reactions) with different low-pass cut-offs (4–13 Hz) and time ranges. Otherwise the items are forward-dynamics runs of ``models/two_link_arm.toml`` (TRBDF2, rtol 1e-6, atol 1e-8, 0–2 s,
201 samples) from different initial angles, each with its own body mass (a model parameter, so that every
item carries its own model text). The serial run goes first in this process (after one warm-up item, so
that numba's compilation is not timed); the cluster run's time includes starting and stopping the
LocalCluster (its workers load the compiled kernels from numba's cache). Every item's CSV must be
byte for byte the serial run's, and its item.json equal except ``timings_s``; the script fails otherwise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python benchmarks/<file>.py` from anywhere

from benchmarks.common import machine  # noqa: E402
from mbkron.batch import MARKER, read_batch, run_batch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def batch_file(directory: Path, items: int) -> Path:
    """A batch file of ``items`` simulations (a CSV of parameter sets) in ``directory``."""
    rows = "\n".join(f"arm{k:03d},{-60 + 120 * k / max(items - 1, 1):.6g},{(k * 37) % 90:.6g},{55 + k % 40}"
                     for k in range(items))
    (directory / "sets.csv").write_text(f"id,q0.alpha1,q0.alpha2,parameters.body_mass\n{rows}\n")
    path = directory / "batch.toml"
    path.write_text(f'[batch]\nkind = "simulate"\nitems = "sets.csv"\n\n[defaults]\n'
                    f'model = "{(ROOT / "models" / "two_link_arm.toml").as_posix()}"\nt_end = 2.0\nsamples = 201\n')
    return path


def analyze_batch_file(directory: Path, items: int) -> Path:
    """A batch file of ``items`` analyses of the stored walking trial (unpacked into ``directory``)."""
    for path in (ROOT / "tests" / "data" / "analysis").glob("subject01_*.gz"):
        (directory / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
    rows = "\n".join(f"walk{k:03d},{4 + k % 10},{0.4 + 0.02 * (k % 11):.6g},{1.6 - 0.04 * (k % 7):.6g}"
                     for k in range(items))
    (directory / "sets.csv").write_text(f"id,lowpass,time_start,time_end\n{rows}\n")
    path = directory / "batch.toml"
    path.write_text('[batch]\nkind = "analyze"\nitems = "sets.csv"\n\n[defaults]\nmodel = "subject01_simbody.osim"\n'
                    'motion = "subject01_walk1_ik.mot"\nexternal_loads = "subject01_walk1_grf.xml"\n'
                    'external_loads_data = "subject01_walk1_grf.mot"\nanalyses = ["id", "muscles", "reactions"]\n')
    return path


def compare(serial: Path, cluster: Path, ids: list[str]) -> None:
    """Raise if an item's files differ between the two runs (the markers' timings aside)."""
    for identifier in ids:
        a, b = serial / identifier, cluster / identifier
        names = sorted(p.name for p in a.iterdir())
        if names != sorted(p.name for p in b.iterdir()):
            raise AssertionError(f"{identifier}: different files")
        for name in names:
            x, y = (a / name).read_bytes(), (b / name).read_bytes()
            if name == MARKER:
                x, y = ({k: v for k, v in json.loads(d).items() if k != "timings_s"} for d in (x, y))
            if x != y:
                raise AssertionError(f"{identifier}/{name}: the cluster's result differs from the serial run's")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--analyze", action="store_true", help="analyses of the walking trial, not simulations")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        directory = Path(directory)
        items = read_batch((analyze_batch_file if args.analyze else batch_file)(directory, args.items))
        run_batch(items[:1], directory / "warm", serial=True, progress=False)  # compile, not timed
        start = time.perf_counter()
        serial = run_batch(items, directory / "serial", serial=True, progress=False)
        serial_time = time.perf_counter() - start
        start = time.perf_counter()
        cluster = run_batch(items, directory / "cluster", workers=args.workers, progress=False)
        cluster_time = time.perf_counter() - start
        if serial.failed or cluster.failed:
            raise AssertionError(f"failed items: {serial.failed or cluster.failed}")
        compare(directory / "serial", directory / "cluster", [item.id for item in items])
        start = time.perf_counter()
        resumed = run_batch(items, directory / "cluster", workers=args.workers, progress=False)
        resume_time = time.perf_counter() - start
        assert len(resumed.skipped) == len(items) and not resumed.computed
    print(machine())
    what = ("analyses (gait2354 walking trial: inverse dynamics, muscle analysis, joint reactions; low-pass 4-13 Hz)"
            if args.analyze else "simulations (two_link_arm, TRBDF2, 0-2 s, 201 samples)")
    print(f"{len(items)} {what}, identical results in both runs")
    rows = [("serial, in this process", serial_time),
            (f"LocalCluster, {args.workers} workers (start and stop included)", cluster_time),
            ("re-run, every item finished (skipped)", resume_time)]
    for label, seconds in rows:
        print(f"  {label:<58} {seconds:7.2f} s")
    print(f"  cluster / serial speed: {serial_time / cluster_time:.2f}x; serial {serial_time / len(items) * 1e3:.1f} ms "
          "per item")


if __name__ == "__main__":
    main()
