"""Speed of lengths and the full moment-arm matrix of Rajagopal2016 (80 paths, 42 wrapping over 40
cylinders, 29 coordinates): mbkron's compiled backend against OpenSim 4.6 in one benchmark.

mbkron: ``MuscleSet.compiled_lengths_and_moment_arms`` at :data:`STATES` random poses (kinematics
computed once beforehand; and ``model.muscle_lengths`` + ``model.moment_arms`` with kinematics), best of
:data:`REPEATS`. OpenSim: ``getLength`` of every path and ``computeMomentArm`` of every (path,
coordinate) pair at :data:`OPENSIM_STATES` of the same poses. Per state, in milliseconds. Run
``python -m validation.opensim.benchmark_wrapping`` from the repository root (the machine's load
matters: run it alone).
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim.compare_osim import OpenSimModel
from validation.opensim.compare_wrapping import model_text

STATES = 2000
OPENSIM_STATES = 3
REPEATS = 5


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "Rajagopal2016.osim"
        path.write_text(model_text("Rajagopal2016"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbkron.load_model(path, backend="compiled")
            straight = mbkron.load_model(path, backend="compiled", wrapping="ignore")
        opensim = OpenSimModel(path, list(model.coordinates), False)
    rng = np.random.default_rng(0)
    q = np.tile([c.default for c in model.coordinate_records], (STATES, 1)) + rng.normal(0, 0.3, (STATES, model.nq))
    results = {}
    for label, m in (("mbkron, wrapped (kernels only)", model), ("mbkron, wrap objects ignored (kernels only)", straight)):
        kin = m.kinematics(q, 1)
        m.muscle_set.compiled_lengths_and_moment_arms(kin, 1)
        best = min(_timed(lambda: m.muscle_set.compiled_lengths_and_moment_arms(kin, 1)) for _ in range(REPEATS))
        results[label] = best / STATES
    model.moment_arms(q[:2])
    best = min(_timed(lambda: (model.muscle_lengths(q), model.moment_arms(q))) for _ in range(2))
    results["mbkron, wrapped, with kinematics (model.muscle_lengths + model.moment_arms)"] = best / STATES
    coordinates = [opensim.coordinates[name] for name in model.coordinates]
    start = time.perf_counter()
    for row in q[:OPENSIM_STATES]:
        opensim.lengths(row)
        for muscle in opensim.muscles:
            for coordinate in coordinates:
                muscle.computeMomentArm(opensim.state, coordinate)
    results["OpenSim 4.6 getLength + computeMomentArm, all pairs"] = (time.perf_counter() - start) / OPENSIM_STATES
    for label, seconds in results.items():
        print(f"{label}: {seconds * 1e3:.3f} ms per state")


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
