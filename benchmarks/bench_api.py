"""The public call path's overhead (issue 26's acceptance): CPU time through ``Model`` methods against the
kernels or baselines they wrap, one thread, interleaved rounds, medians.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_api`` (``--rounds``,
``--skip-loading``). Prints, with the machine's load average:

- one state of forward dynamics of the random 3-D chains of :mod:`benchmarks.bench_forward_dynamics`
  (7 and 20 bodies): ``model.forward_dynamics(q, qd)`` against ``pinocchio.aba`` (when installed);
- Rajagopal2016 (80 muscles, 29 coordinates) at its default pose: ``model.muscle_lengths(q)`` +
  ``model.moment_arms(q)``, and the same two calls with a workspace (which shares one evaluation of the
  paths between them; two poses in turn, so that every pair evaluates), against the path kernels alone,
  ``muscle_set.compiled_lengths_and_moment_arms`` at order 1 on kinematics computed beforehand (both L
  and R in one call);
- ``load_model`` of gait2392 (tests/data/osim): CPU time in a fresh process (imports included) and
  warm (mbkron already imported and a model loaded once), medians of a few processes/loads.

The results are checked first: forward dynamics equal to ``aba`` (1e-9 relative), L and R through the
public methods equal to the kernel's.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402
from benchmarks.bench_forward_dynamics import random_chain  # noqa: E402
from benchmarks.common import machine  # noqa: E402

DATA = ROOT / "tests" / "data" / "osim"


def cpu_per_call(function, number: int) -> float:
    """CPU seconds per call over ``number`` calls."""
    start = time.process_time()
    for _ in range(number):
        function()
    return (time.process_time() - start) / number


def interleaved(functions: dict, rounds: int, number: int) -> dict[str, float]:
    """Median CPU seconds per call of each function, the functions alternating within each round."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            samples[name].append(cpu_per_call(function, number))
    return {name: statistics.median(values) for name, values in samples.items()}


def forward_dynamics(rounds: int) -> None:
    try:
        import pinocchio as pin
    except ImportError:
        print("# forward dynamics: pinocchio is not installed (pip install pin): nothing to compare")
        return
    for n in (7, 20):
        model, pin_model = random_chain(n)
        data = pin_model.createData()
        rng = np.random.default_rng(1)
        q, v = rng.uniform(-2, 2, size=(2, n))
        zero = np.zeros(n)
        np.testing.assert_allclose(model.forward_dynamics(q, v), pin.aba(pin_model, data, q, v, zero), rtol=1e-9,
                                   atol=1e-9)
        times = interleaved({"mbkron": lambda: model.forward_dynamics(q, v),
                             "aba": lambda: pin.aba(pin_model, data, q, v, zero)}, rounds, 2000)
        print(f"forward dynamics, one state, {n:2d} bodies: model.forward_dynamics {times['mbkron'] * 1e6:6.2f} µs, "
              f"pinocchio.aba {times['aba'] * 1e6:6.2f} µs, ratio {times['mbkron'] / times['aba']:.2f}")


def muscles(rounds: int, directory: Path) -> None:
    path = directory / "Rajagopal2016.osim"
    path.write_bytes(gzip.decompress((DATA / "Rajagopal2016.osim.gz").read_bytes()))
    model = mbkron.load_model(path)
    q = model.default_q
    kin = model.kinematics(q, 1)
    lengths, arms = model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)
    np.testing.assert_allclose(model.muscle_lengths(q), lengths, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(model.moment_arms(q), arms, rtol=1e-13, atol=1e-15)
    # with a workspace (Pinocchio's Data): both calls share one evaluation of the paths; two poses in turn,
    # so that every pair of calls evaluates (the workspace keeps the last pose only)
    workspace, poses = model.workspace(), itertools.cycle([q, q + 0.01])

    def shared():
        pose = next(poses)
        return model.muscle_lengths(pose, workspace=workspace), model.moment_arms(pose, workspace=workspace)

    for pose in (q, q + 0.01):  # bit for bit the values without a workspace
        assert all(np.array_equal(a, b) for a, b in zip(shared(), (model.muscle_lengths(pose), model.moment_arms(pose))))
    times = interleaved({
        "public": lambda: (model.muscle_lengths(q), model.moment_arms(q)),
        "workspace": shared,
        "kernel": lambda: model.muscle_set.compiled_lengths_and_moment_arms(kin, 1),
    }, rounds, 200)
    print(f"Rajagopal2016 L and R, one pose: muscle_lengths + moment_arms {times['public'] * 1e3:.3f} ms, with a "
          f"workspace {times['workspace'] * 1e3:.3f} ms, path kernels alone {times['kernel'] * 1e3:.3f} ms, ratios "
          f"{times['public'] / times['kernel']:.2f} and {times['workspace'] / times['kernel']:.2f}")


_LOAD = """
import time, sys
start = time.process_time()
import mbkron
imported = time.process_time()
mbkron.load_model(sys.argv[1])
first = time.process_time()
times = []
for _ in range(5):
    began = time.process_time()
    mbkron.load_model(sys.argv[1])
    times.append(time.process_time() - began)
times.sort()
print(imported - start, first - imported, times[2])
"""


def loading(processes: int, directory: Path) -> None:
    path = directory / "gait2392_thelen2003muscle.osim"
    path.write_bytes(gzip.decompress((DATA / "gait2392_thelen2003muscle.osim.gz").read_bytes()))
    runs = [[float(x) for x in subprocess.run([sys.executable, "-c", _LOAD, str(path)], check=True, capture_output=True,
                                               text=True).stdout.split()] for _ in range(processes)]
    imported, first, warm = (statistics.median(column) for column in zip(*runs))
    print(f"load_model gait2392, CPU: import mbkron {imported:.3f} s, first load in the process {first:.3f} s, "
          f"warm load {warm:.3f} s (medians of {processes} processes)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--skip-loading", action="store_true")
    args = parser.parse_args(argv)
    print(f"# public call path — {machine()}")
    forward_dynamics(args.rounds)
    with tempfile.TemporaryDirectory() as directory:
        muscles(args.rounds, Path(directory))
        if not args.skip_loading:
            loading(3, Path(directory))
    print(f"# load average at the end: {machine().rsplit('load average ', 1)[1]}")


if __name__ == "__main__":
    main()
