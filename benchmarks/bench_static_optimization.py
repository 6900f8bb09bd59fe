"""Static optimisation of a 92-muscle gait trial: mbkron against OpenSim 4.x's ``StaticOptimization``.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_static_optimization.py``.

Model: ``gait2392_thelen2003muscle.osim`` (23 coordinates, 92 Thelen muscles; ``tests/data/osim``) with
its wrap objects removed (mbkron does not wrap; OpenSim runs the same modified file) and its Thelen
curve constants applied (:func:`mbkron.analysis.muscle_analysis.with_thelen_curves`). Motion: the
gait2392 walking trial's inverse kinematics (``Pipelines/Gait2392_Simbody/subject01_walk1_ik.mot`` from
the opensim-models mirror, ``$MBKRON_OPENSIM_MODELS``), every other frame from the start: 100 frames.
Reserves: a ``CoordinateActuator`` on every coordinate (optimal force 100 on the pelvis, 1 N·m on
the joints); no ground reactions (the pelvis reserves take them), the same in both programs.

- **mbkron**: the 100 frames' ``q, q̇, q̈`` (a cubic spline through the motion's coordinates), their
  inverse dynamics ``τ`` (:meth:`mbkron.Model.inverse_dynamics`), then
  :func:`mbkron.analysis.static_optimization.static_optimization` for all frames in one call (timed
  alone: target ≤ 1 s; and with the muscle analysis and the inverse dynamics);
- **OpenSim**: ``AnalyzeTool`` with only its ``StaticOptimization`` analysis on the same frames (the
  tool's whole run, which includes its states and splines; its default convergence criterion 1e-4),
  when ``opensim`` is installed.

Medians of 5 runs for mbkron (warm), one run for OpenSim.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.interpolate import CubicSpline

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402
from mbkron.analysis.muscle_analysis import muscle_analysis, read_thelen_curves, with_thelen_curves  # noqa: E402
from mbkron.analysis.static_optimization import Reserve, static_optimization  # noqa: E402
from mbkron.io import read_storage, write_storage  # noqa: E402
from validation.opensim import compare_so  # noqa: E402

MOTION = "Pipelines/Gait2392_Simbody/subject01_walk1_ik.mot"
FRAMES = 100
ROUNDS = 5


def inputs(work: Path):
    """The prepared model file, the motion file of the benchmark's frames, and the frames' q (SI)."""
    source = work / "gait2392_source.osim"
    source.write_bytes(gzip.decompress((ROOT / "tests" / "data" / "osim" / "gait2392_thelen2003muscle.osim.gz")
                                       .read_bytes()))
    model_path = work / "gait2392.osim"
    compare_so.prepare_model(source, model_path)
    full = read_storage(compare_so.git_show(compare_so.MODELS, MOTION, work / "walk_full.mot"))
    rows = slice(0, 2 * FRAMES, 2)
    motion = work / "walk.mot"
    write_storage(motion, "Coordinates", full.labels, full.time[rows], full.values[rows], in_degrees=full.in_degrees)
    return model_path, motion, read_storage(motion)


def main() -> None:
    print(machine())
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        model_path, motion, table = inputs(work)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = with_thelen_curves(mbkron.load_model(model_path), read_thelen_curves(model_path))
        spline = CubicSpline(table.time, table.coordinates(model))
        t = table.time
        q, qd, qdd = spline(t), spline(t, 1), spline(t, 2)
        reserves = [Reserve(c, 100.0 if c.startswith("pelvis") else 1.0) for c in model.coordinates]

        def so_only():
            return static_optimization(model, t, q, qd, tau, reserves=reserves)

        def whole():
            forces = model.inverse_dynamics(q, qd, qdd)
            muscle_analysis(model, q, qd, time=t)
            return static_optimization(model, t, q, qd, forces, reserves=reserves)

        tau = model.inverse_dynamics(q, qd, qdd)
        result = so_only()  # warm-up (compiled kernels)
        whole()
        so_times, whole_times = [], []
        for _ in range(ROUNDS):
            start = time.perf_counter()
            so_only()
            so_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            whole()
            whole_times.append(time.perf_counter() - start)
        so_time, whole_time = statistics.median(so_times), statistics.median(whole_times)
        print(f"{model.nq} coordinates, {len(model.muscles)} muscles, {t.size} frames "
              f"({t[0]:.3f}–{t[-1]:.3f} s); {result.iterations} Newton iterations, all converged: "
              f"{bool(result.converged.all())}, largest |R F + reserves − τ| {np.abs(result.residual).max():.1e}")
        print(f"mbkron static optimisation: {so_time * 1e3:.1f} ms (target ≤ 1000 ms); with inverse dynamics and "
              f"muscle analysis: {whole_time * 1e3:.1f} ms")
        try:
            osim = compare_so.opensim_module()
        except ImportError:
            print("OpenSim is not installed: no comparison")
            return
        reserve_file = work / "reserves.xml"
        compare_so.reserves_xml([(r.coordinate, r.optimal_force) for r in reserves], reserve_file)
        osim.Model(str(model_path)).printToXML(str(model_path))
        setup = compare_so.setup_xml("gait2392", work, model_path, motion, None, reserve_file, float(t[0]), float(t[-1]),
                                     compare_so.static_optimization_xml(1e-4))
        tool = osim.AnalyzeTool(str(setup))
        start = time.perf_counter()
        tool.run()
        opensim_time = time.perf_counter() - start
        frames = read_storage(work / "results" / "gait2392_StaticOptimization_activation.sto").time.size
        print(f"OpenSim {osim.__version__} StaticOptimization (AnalyzeTool run, {frames} frames): {opensim_time:.2f} s; "
              f"mbkron is {opensim_time / so_time:.0f}× faster (static optimisation), "
              f"{opensim_time / whole_time:.0f}× with inverse dynamics and muscle analysis")


if __name__ == "__main__":
    main()
