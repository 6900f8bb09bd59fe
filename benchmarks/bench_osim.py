"""OpenSim import: load time of gait2392 and its moment-arm matrix against OpenSim's computeMomentArm.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_osim.py``. Measures,
in one run, on ``gait2392_thelen2003muscle.osim`` (23 coordinates, 92 muscles; stored in
``tests/data/osim``):

- **import**: ``mbkron.load_model(path)`` in a fresh Python process (``import mbkron`` excluded; the
  first load pays the lazy imports and loads the cached compiled kernels), and warm in this process;
  target ≤ 2 s;
- **moment arms**: mbkron's full matrix ``R = −∂L/∂q`` (23 × 92) at one state,
  ``Model.moment_arms(q)``, against OpenSim 4.x's ``GeometryPath.computeMomentArm`` for all 2 116
  (coordinate, muscle) pairs at the same state (pose set and realized once, outside the timing);
  target ≥ 1000× faster. The two matrices are checked equal (1e-9 m) before timing.

Rounds are interleaved (mbkron, OpenSim, mbkron, …) and the medians reported.
"""

from __future__ import annotations

import gzip
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402

NAME = "gait2392_thelen2003muscle"
ROUNDS = 7
COLD = """
import sys, time
import mbkron
start = time.perf_counter()
mbkron.load_model(sys.argv[1])
print(time.perf_counter() - start)
"""


def cold_import(path: Path) -> float:
    done = subprocess.run([sys.executable, "-c", COLD, str(path)], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def warm_import(path: Path) -> float:
    start = time.perf_counter()
    mbkron.load_model(path)
    return time.perf_counter() - start


def opensim_arms(path: Path, names: list[str], q: np.ndarray):
    """A function computing OpenSim's full computeMomentArm matrix at ``q`` (pose set once)."""
    import opensim as osim

    osim.Logger.removeFileSink()
    osim.Logger.setLevelString("error")
    model = osim.Model(str(path))
    state = model.initSystem()
    coordinates = [model.getCoordinateSet().get(name) for name in names]
    for coordinate, value in zip(coordinates, q):
        coordinate.setValue(state, float(value), False)
    model.realizePosition(state)
    paths = [model.getMuscles().get(k).getGeometryPath() for k in range(model.getMuscles().getSize())]

    def arms(model=model) -> np.ndarray:  # the default keeps OpenSim's model alive while the paths are used
        return np.array([[p.computeMomentArm(state, c) for p in paths] for c in coordinates])
    return arms


def per_call(function, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{NAME}.osim"
        path.write_bytes(gzip.decompress((ROOT / "tests" / "data" / "osim" / f"{NAME}.osim.gz").read_bytes()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbkron.load_model(path)
        cold = [cold_import(path) for _ in range(3)]
        warm = [warm_import(path) for _ in range(ROUNDS)]
        print(f"# {machine()}")
        print(f"import of {NAME} ({model.nq} coordinates, {len(model.muscles)} muscles, {model.nb} bodies): "
              f"fresh process median {statistics.median(cold):.3f} s (of {len(cold)}), "
              f"warm median {statistics.median(warm):.3f} s; target ≤ 2 s")
        q = np.random.default_rng(1).uniform(*np.clip(np.array([model.coordinate(n).range for n in model.coordinates]).T, -1, 1))
        ours = model.moment_arms(q)
        try:
            theirs_function = opensim_arms(path, list(model.coordinates), q)
        except ImportError:
            print("OpenSim is not installed: the moment-arm comparison is skipped")
            return
        theirs = theirs_function()
        difference = float(np.abs(ours - theirs).max())
        assert difference < 1e-9, difference
        ours_times, theirs_times = [], []
        for _ in range(ROUNDS):
            ours_times.append(per_call(lambda: model.moment_arms(q), 2000))
            theirs_times.append(per_call(theirs_function, 1))
        ratio = statistics.median(theirs_times) / statistics.median(ours_times)
        print(f"moment-arm matrix {model.nq}×{len(model.muscles)} at one state (max |mbkron − OpenSim| {difference:.1e} m): "
              f"mbkron {statistics.median(ours_times) * 1e6:.1f} µs, OpenSim computeMomentArm over all pairs "
              f"{statistics.median(theirs_times) * 1e3:.1f} ms: {ratio:.0f}× (target ≥ 1000×)")


if __name__ == "__main__":
    main()
