"""Speed of lengths and the full moment-arm matrix with wrapping: mbkron's compiled engine against OpenSim
4.6 in one benchmark, on Rajagopal2016 (80 paths, 42 wrapping over 40 cylinders, 29 coordinates) and on
arm26 (6 paths, 5 wrapping over 3 cylinders and 2 ellipsoids, 2 coordinates; the ellipsoids by the
compiled geodesic solver, :mod:`mbkron.numerics.geodesics.ellipsoid`).

mbkron: ``MuscleSet.compiled_lengths_and_moment_arms`` at ``states`` random poses (kinematics computed
once beforehand; and ``model.muscle_lengths`` + ``model.moment_arms`` with kinematics), best of
:data:`REPEATS`. OpenSim: ``getLength`` of every path and ``computeMomentArm`` of every (path,
coordinate) pair at :data:`OPENSIM_STATES` of the same poses. Per state, in milliseconds. Run
``python -m validation.opensim.benchmark_wrapping`` from the repository root (the machine's load
matters: run it alone; the script prints ``uptime``'s load first).
"""

from __future__ import annotations

import gzip
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim.compare_osim import OpenSimModel
from validation.opensim.compare_wrapping import model_text

#: Model name → mbkron states per repetition (arm26's poses uniform over its coordinates' ranges,
#: Rajagopal2016's normal about its defaults, σ = 0.3).
STATES = {"Rajagopal2016": 2000, "arm26": 500}
OPENSIM_STATES = 3
REPEATS = 5
ARM26 = Path(__file__).resolve().parents[2] / "tests" / "data" / "osim" / "arm26.osim.gz"


def main() -> None:
    print("load average (1, 5, 15 min):", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for name, states in STATES.items():
        print(f"{name}:")
        for label, seconds in measure(name, states).items():
            print(f"  {label}: {seconds * 1e3:.3f} ms per state")


def measure(name: str, states: int) -> dict[str, float]:
    """Seconds per state of each measurement on model ``name`` (``"Rajagopal2016"`` or ``"arm26"``)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{name}.osim"
        text = gzip.decompress(ARM26.read_bytes()).decode() if name == "arm26" else model_text(name)
        path.write_text(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbkron.load_model(path)
            straight = mbkron.load_model(path, wrapping="ignore")
        opensim = OpenSimModel(path, list(model.coordinates), False)
    assert model.muscle_set.wrapping.tables is not None  # every surface on the compiled route
    rng = np.random.default_rng(0)
    if name == "arm26":
        low, high = (np.array([c.range[k] for c in model.coordinate_records]) for k in (0, 1))
        q = low + (high - low) * rng.uniform(size=(states, model.nq))
    else:
        q = np.tile([c.default for c in model.coordinate_records], (states, 1)) + rng.normal(0, 0.3, (states, model.nq))
    results = {}
    for label, m in (("mbkron, wrapped (kernels only)", model), ("mbkron, wrap objects ignored (kernels only)", straight)):
        kin = m.kinematics(q, 1)
        m.muscle_set.compiled_lengths_and_moment_arms(kin, 1)
        best = min(_timed(lambda: m.muscle_set.compiled_lengths_and_moment_arms(kin, 1)) for _ in range(REPEATS))
        results[label] = best / states
    model.moment_arms(q[:2])
    best = min(_timed(lambda: (model.muscle_lengths(q), model.moment_arms(q))) for _ in range(2))
    results["mbkron, wrapped, with kinematics (model.muscle_lengths + model.moment_arms)"] = best / states
    coordinates = [opensim.coordinates[c] for c in model.coordinates]
    start = time.perf_counter()
    for row in q[:OPENSIM_STATES]:
        opensim.lengths(row)
        for muscle in opensim.muscles:
            for coordinate in coordinates:
                muscle.computeMomentArm(opensim.state, coordinate)
    results["OpenSim 4.6 getLength + computeMomentArm, all pairs"] = (time.perf_counter() - start) / OPENSIM_STATES
    return results


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
