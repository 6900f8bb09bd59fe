"""Motion analysis: mbkron's inverse dynamics of the gait2354 walking trial against OpenSim's tool.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_analysis.py``. The trial
is the one stored in ``tests/data/analysis`` (opensim-org/opensim-models, Pipelines/Gait2354_Simbody:
23 coordinates, 73 frames at 60 Hz, two ground reactions from 600 Hz data, low-pass 6 Hz). Measured in
one run, rounds interleaved (mbkron, OpenSim, mbkron, …), medians reported:

- **analysis**, the model already loaded: mbkron reads the motion and loads files and computes
  ``trial_kinematics`` + ``external_loads`` + ``inverse_dynamics``; OpenSim runs its
  ``InverseDynamicsTool`` given the loaded model (``setModel``; reads the same files, filters, fits
  the splines, solves every frame, writes its ``.sto``). Target ≥ 20×.
- **whole run** from the files, as ``mbkron analyze --id`` does: the same plus loading the model file
  (``mbkron.load_model``; OpenSim's tool constructs its ``Model`` from the file), through
  :func:`mbkron.analysis.analyze_trial`, and writing the result (``.sto`` and ``.csv``);
- **whole run with muscle analysis** (``mbkron analyze --id --muscles``): the whole run plus the muscle
  analysis of the 54 muscles (lengths, speeds, moment arms about all 23 coordinates, its tables written); OpenSim's ``InverseDynamicsTool`` run plus an ``AnalyzeTool`` run with its
  ``MuscleAnalysis`` (and ``Kinematics``) on the same filtered coordinates
  (:func:`validation.opensim.compare_so.setup_xml`). Target ≥ 20×.

The two results are checked equal (1e-6 N·m) before timing. OpenSim's parts are skipped when the
``opensim`` module is not installed.
"""

from __future__ import annotations

import gc
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402
from mbkron import analysis  # noqa: E402
from mbkron.io.storage import read_storage  # noqa: E402

DATA = ROOT / "tests" / "data" / "analysis"
ROUNDS = 5
TIME_RANGE = (0.4, 1.6)
SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <InverseDynamicsTool name="subject01_walk1">
    <results_directory>{results}</results_directory>
    <model_file>subject01_simbody.osim</model_file>
    <time_range>0.4 1.6</time_range>
    <forces_to_exclude>Muscles</forces_to_exclude>
    <external_loads_file>subject01_walk1_grf.xml</external_loads_file>
    <coordinates_file>subject01_walk1_ik.mot</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
    <output_gen_force_file>inverse_dynamics.sto</output_gen_force_file>
  </InverseDynamicsTool>
</OpenSimDocument>
"""


def unpack(directory: Path) -> Path:
    for packed in DATA.glob("subject01_*.gz"):
        (directory / packed.name[:-3]).write_bytes(gzip.decompress(packed.read_bytes()))
    (directory / "setup.xml").write_text(SETUP.format(results=directory / "opensim"))
    return directory


def mbkron_analysis(model, directory: Path):
    kinematics = analysis.trial_kinematics(model, directory / "subject01_walk1_ik.mot", 6.0, TIME_RANGE)
    return analysis.inverse_dynamics(model, kinematics, analysis.external_loads(directory / "subject01_walk1_grf.xml"))


def mbkron_whole(directory: Path, muscles: bool = False):
    """``mbkron analyze``'s work: the model loaded, :func:`mbkron.analysis.analyze_trial`, its files written."""
    model = mbkron.load_model(directory / "subject01_simbody.osim")
    result = analysis.analyze_trial(model, directory / "subject01_walk1_ik.mot",
                                    external_loads=directory / "subject01_walk1_grf.xml", lowpass=6.0,
                                    time_range=TIME_RANGE, analyses=("id", "muscles") if muscles else ("id",))
    result.write(directory, "mbkron")
    return result


def opensim_muscle_analysis(directory: Path) -> None:
    import opensim

    from validation.opensim.compare_so import MUSCLES_AND_KINEMATICS_XML, setup_xml

    setup = setup_xml("subject01", directory, directory / "subject01_simbody.osim", directory / "subject01_walk1_ik.mot",
                      None, None, *TIME_RANGE, MUSCLES_AND_KINEMATICS_XML)
    opensim.AnalyzeTool(str(setup)).run()


def opensim_tool(directory: Path, model=None) -> None:
    import opensim

    tool = opensim.InverseDynamicsTool(str(directory / "setup.xml"))
    if model is not None:
        tool.setModel(model)
    here = os.getcwd()
    os.chdir(directory)
    try:
        tool.run()
    finally:
        os.chdir(here)


def timed(function) -> float:
    """Wall time of one call, garbage collection held off as ``timeit`` does (for both programs)."""
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        function()
        return time.perf_counter() - started
    finally:
        if collecting:
            gc.enable()


def main() -> None:
    try:
        import opensim
    except ImportError:
        opensim = None
    with tempfile.TemporaryDirectory() as temporary:
        directory = unpack(Path(temporary))
        model = mbkron.load_model(directory / "subject01_simbody.osim")
        ours = mbkron_analysis(model, directory)  # compiles and warms everything once
        mbkron_whole(directory, True)
        print(f"# inverse dynamics of the gait2354 walking trial ({ours.time.size} frames, {model.nq} coordinates)")
        print(machine())
        times = {"mbkron analysis": [], "mbkron whole run": [], "mbkron whole run + muscle analysis": [],
                 "OpenSim analysis": [], "OpenSim whole run": [], "OpenSim whole run + muscle analysis": []}
        if opensim is not None:
            opensim.Logger.removeFileSink()  # no opensim.log in the working directory
            opensim.Logger.setLevelString("Off")
            osim_model = opensim.Model(str(directory / "subject01_simbody.osim"))
            opensim_tool(directory, osim_model)
            theirs = read_storage(directory / "opensim" / "inverse_dynamics.sto")
            worst = max(float(np.max(np.abs(ours.tau[:, k] - theirs.column(label))))
                        for k, label in enumerate(ours.labels))
            print(f"largest difference from OpenSim: {worst:.1e} N·m (OpenSim writes 8 decimals)")
            assert worst < 1e-6
        for _ in range(ROUNDS):
            times["mbkron analysis"].append(timed(lambda: mbkron_analysis(model, directory)))
            if opensim is not None:
                times["OpenSim analysis"].append(timed(lambda: opensim_tool(directory, osim_model)))
            times["mbkron whole run"].append(timed(lambda: mbkron_whole(directory)))
            if opensim is not None:
                times["OpenSim whole run"].append(timed(lambda: opensim_tool(directory)))
            times["mbkron whole run + muscle analysis"].append(timed(lambda: mbkron_whole(directory, True)))
            if opensim is not None:
                times["OpenSim whole run + muscle analysis"].append(
                    times["OpenSim whole run"][-1] + timed(lambda: opensim_muscle_analysis(directory)))
        medians = {name: statistics.median(values) for name, values in times.items() if values}
        print("\n| what | median, ms |\n|---|---|")
        for name, value in medians.items():
            print(f"| {name} | {1e3 * value:.1f} |")
        if opensim is not None:
            print(f"\nanalysis: mbkron is {medians['OpenSim analysis'] / medians['mbkron analysis']:.0f}× faster "
                  f"(target ≥ 20×); whole run: {medians['OpenSim whole run'] / medians['mbkron whole run']:.1f}×; "
                  f"with muscle analysis: {medians['OpenSim whole run + muscle analysis'] / medians['mbkron whole run + muscle analysis']:.0f}×")
        else:
            print("\n(opensim is not installed: OpenSim's side skipped)")


if __name__ == "__main__":
    main()
