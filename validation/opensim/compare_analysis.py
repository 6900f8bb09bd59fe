"""mbkron's inverse dynamics of the gait2354 walking trial against OpenSim 4.6's ``InverseDynamicsTool``.

The trial is opensim-org/opensim-models' ``Pipelines/Gait2354_Simbody``: the scaled model
``OutputReference/subject01_simbody.osim``, the inverse-kinematics result ``subject01_walk1_ik.mot``
(73 frames at 60 Hz, times printed with 8 decimals), the ground reactions ``subject01_walk1_grf.mot``
(1501 rows at 600 Hz) with their ExternalLoads description ``subject01_walk1_grf.xml`` (two
``ExternalForce``s on ``calcn_r``/``calcn_l``, force, point and torque in ground) and the setup
``subject01_Setup_InverseDynamics.xml`` (time range 0.4–1.6 s, muscles excluded, low-pass 6 Hz).

OpenSim runs the setup unchanged except for the cut-off (6 Hz, and -1: no filter) and the output
precision (``IO.SetPrecision(16)``: 17 significant digits instead of 8 decimals); mbkron runs
:func:`mbkron.analysis.trial_kinematics`, :func:`~mbkron.analysis.external_loads` and
:func:`~mbkron.analysis.inverse_dynamics` with the same inputs, with both spline fits (``natural``,
``gcvspl``). Compared: the frames' times and every generalized force, by name (OpenSim writes them in
multibody-tree order). ``--write-data`` stores the inputs (gzip; the force data cut to 0.3–1.7 s, see
below) and OpenSim's results in ``tests/data/analysis/`` for ``tests/test_analysis_id.py``.

The force data are cut to 0.3–1.7 s for the stored copy (half the size): the natural cubic spline of
the loads is global, but a knot's influence decays by a factor ~0.27 per knot, so rows 60 knots away
from the trial change the loads at its frames by far less than round-off; the script measures it
(mbkron on the cut data against mbkron on the whole file).

Run ``python -m validation.opensim.compare_analysis [--write-data]`` from the repository root (needs
``opensim``; ``--figure`` draws ``docs/figures/analysis_inverse_dynamics.png``); the trial is read from the git repository ``$MBKRON_OPENSIM_MODELS`` (default
``/work/.mirror/opensim-org+opensim-models/repo``). It writes ``validation/results/opensim_analysis.md``.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

import mbkron
from mbkron import analysis
from mbkron.io.storage import read_storage, write_storage

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
DATA = ROOT / "tests" / "data" / "analysis"
REPOSITORY = Path(os.environ.get("MBKRON_OPENSIM_MODELS", "/work/.mirror/opensim-org+opensim-models/repo"))
PIPELINE = "Pipelines/Gait2354_Simbody"
FILES = {"subject01_simbody.osim": "OutputReference/subject01_simbody.osim",
         "subject01_walk1_ik.mot": "subject01_walk1_ik.mot",
         "subject01_walk1_grf.mot": "subject01_walk1_grf.mot",
         "subject01_walk1_grf.xml": "subject01_walk1_grf.xml",
         "subject01_Setup_InverseDynamics.xml": "subject01_Setup_InverseDynamics.xml"}
TIME_RANGE = (0.4, 1.6)
CUTOFFS = (6.0, -1.0)
FORCE_DATA_SPAN = (0.3, 1.7)
REACTION_FRAMES = np.arange(0, 73, 9)
FIGURE = ROOT / "docs" / "figures" / "analysis_inverse_dynamics.png"
PLOTTED = ("hip_flexion_r_moment", "knee_angle_r_moment", "ankle_angle_r_moment", "pelvis_ty_force")

__all__ = ["trial_files", "opensim_inverse_dynamics", "opensim_joint_reactions", "mbkron_inverse_dynamics",
           "differences", "draw", "main"]


def trial_files(directory: Path) -> Path:
    """Copy the trial's files out of the opensim-models repository into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, path in FILES.items():
        data = subprocess.run(["git", "-C", str(REPOSITORY), "show", f"HEAD:{PIPELINE}/{path}"], check=True,
                              capture_output=True).stdout
        (directory / name).write_bytes(data)
    return directory


def _opensim():
    """The ``opensim`` module, its log going nowhere (no ``opensim.log`` in the working directory)."""
    import opensim

    opensim.Logger.removeFileSink()
    opensim.Logger.setLevelString("error")
    return opensim


def opensim_inverse_dynamics(directory: Path, cutoff: float) -> tuple[np.ndarray, tuple[str, ...], np.ndarray, float]:
    """OpenSim's InverseDynamicsTool on the trial with low-pass ``cutoff`` (Hz; negative: none):
    time, labels, values (17 significant digits) and the wall time of ``run()``, s."""
    opensim = _opensim()
    opensim.IO.SetPrecision(16)
    tool = opensim.InverseDynamicsTool(str(directory / "subject01_Setup_InverseDynamics.xml"))
    tool.setLowpassCutoffFrequency(cutoff)
    results = Path(tempfile.mkdtemp(prefix="id_", dir=directory))
    tool.setResultsDir(str(results))
    here = os.getcwd()
    os.chdir(directory)  # the setup's files are relative to it
    try:
        started = time.perf_counter()
        tool.run()
        elapsed = time.perf_counter() - started
    finally:
        os.chdir(here)
    table = read_storage(results / "inverse_dynamics.sto")
    shutil.rmtree(results)
    return table.time, table.labels, table.values, elapsed


def mbkron_inverse_dynamics(directory: Path, cutoff: float, spline: str = "natural", force_data: Path | None = None):
    """mbkron's inverse dynamics of the trial (``force_data``: another copy of the force data file)."""
    model = mbkron.load_model(directory / "subject01_simbody.osim")
    kinematics = analysis.trial_kinematics(model, directory / "subject01_walk1_ik.mot", cutoff, TIME_RANGE, spline)
    loads = analysis.external_loads(directory / "subject01_walk1_grf.xml", force_data)
    return analysis.inverse_dynamics(model, kinematics, loads)


def opensim_joint_reactions(directory: Path, kinematics, labels: tuple[str, ...], tau: np.ndarray,
                            frames: np.ndarray) -> tuple[tuple[str, ...], np.ndarray]:
    """OpenSim's ``Joint.calcReactionOnChildExpressedInGround`` at ``frames`` of the trial, as its
    ``JointReaction`` analysis computes it: the model without muscles, a ``CoordinateActuator`` per
    coordinate whose actuation is overridden with OpenSim's inverse-dynamics ``tau`` (columns ``labels``),
    the external loads added, the state set to mbkron's ``q``, ``q̇`` and realized to accelerations
    (forward dynamics reproduces ``q̈``). Returns the labels ``<joint>_on_<child>_in_ground_fx … _pz`` of
    every joint and the values (len(frames), 9 n_joints)."""
    opensim = _opensim()

    here = os.getcwd()
    os.chdir(directory)  # the loads' data file is relative to it
    try:
        model = opensim.Model(str(directory / "subject01_simbody.osim"))
        model.updForceSet().clearAndDestroy()
        for name in kinematics.coordinates:
            actuator = opensim.CoordinateActuator(name)
            actuator.setName(f"{name}_actuator")
            actuator.setOptimalForce(1.0)
            model.addForce(actuator)
        model.addModelComponent(opensim.ExternalLoads(str(directory / "subject01_walk1_grf.xml"), True))
        state = model.initSystem()
    finally:
        os.chdir(here)
    coordinates = model.getCoordinateSet()
    actuators = [opensim.CoordinateActuator.safeDownCast(model.getForceSet().get(f"{name}_actuator"))
                 for name in kinematics.coordinates]
    suffix = {True: "moment", False: "force"}
    joints = [model.getJointSet().get(i) for i in range(model.getJointSet().getSize())]
    names = [f"{j.getName()}_on_{j.getChildFrame().findBaseFrame().getName()}_in_ground_{kind}{axis}"
             for j in joints for kind in "fmp" for axis in "xyz"]
    rows = []
    for i in frames:
        state.setTime(float(kinematics.time[i]))
        for k, name in enumerate(kinematics.coordinates):
            coordinate = coordinates.get(name)
            coordinate.setValue(state, float(kinematics.q[i, k]), False)
            coordinate.setSpeedValue(state, float(kinematics.qd[i, k]))
            rotational = coordinate.getMotionType() == opensim.Coordinate.Rotational
            actuators[k].overrideActuation(state, True)
            actuators[k].setOverrideActuation(state, float(tau[i, labels.index(f"{name}_{suffix[rotational]}")]))
        model.realizeAcceleration(state)
        row = []
        for joint in joints:
            reaction = joint.calcReactionOnChildExpressedInGround(state)
            point = joint.getChildFrame().getTransformInGround(state).p()
            row += [reaction.get(1)[x] for x in range(3)] + [reaction.get(0)[x] for x in range(3)] + [
                point[x] for x in range(3)]
        rows.append(row)
    return tuple(names), np.array(rows)


def differences(result, time_os: np.ndarray, labels: tuple[str, ...], values: np.ndarray) -> dict:
    """Largest |mbkron − OpenSim| per generalized force, and of the frames' times."""
    if result.time.shape != time_os.shape:
        raise AssertionError(f"{result.time.size} frames against OpenSim's {time_os.size}")
    columns = {label: values[:, labels.index(label)] for label in result.labels}
    return {"time": float(np.max(np.abs(result.time - time_os))),
            **{label: float(np.max(np.abs(result.tau[:, k] - columns[label]))) for k, label in enumerate(result.labels)}}


def cut_force_data(source: Path, target: Path) -> None:
    """The force data file's rows within :data:`FORCE_DATA_SPAN`, as a version-1 storage file."""
    table = read_storage(source)
    keep = (table.time >= FORCE_DATA_SPAN[0]) & (table.time <= FORCE_DATA_SPAN[1])
    write_storage(target, table.name, table.labels, table.time[keep], table.values[keep], table.in_degrees)


def write_data(directory: Path, references: dict) -> None:
    """Store the inputs and OpenSim's results for the tests (gzip)."""
    DATA.mkdir(parents=True, exist_ok=True)
    for name in ("subject01_simbody.osim", "subject01_walk1_ik.mot", "subject01_walk1_grf.xml"):
        _gzip(directory / name, DATA / f"{name}.gz")
    _gzip(directory / "subject01_walk1_grf_cut.mot", DATA / "subject01_walk1_grf.mot.gz")
    for cutoff, (time_os, labels, values, _) in references.items():
        path = directory / "reference.sto"
        write_storage(path, "Inverse Dynamics Generalized Forces", labels, time_os, values,
                      comments=(f"OpenSim {_opensim_version()} InverseDynamicsTool, lowpass {cutoff:g} Hz",))
        _gzip(path, DATA / f"opensim_inverse_dynamics_{_cutoff_name(cutoff)}.sto.gz")


def draw(result, time_os: np.ndarray, labels: tuple[str, ...], values: np.ndarray) -> None:
    """mbkron's and OpenSim's generalized forces of :data:`PLOTTED` over the trial, and their difference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, len(PLOTTED), figsize=(14, 5.5), sharex=True,
                                gridspec_kw={"height_ratios": (3, 1.4)})
    for column, label in enumerate(PLOTTED):
        ours, theirs = result.tau[:, result.labels.index(label)], values[:, labels.index(label)]
        axes[0, column].plot(time_os, theirs, color="0.6", lw=4, label="OpenSim 4.6")
        axes[0, column].plot(result.time, ours, color="C0", lw=1.2, label="mbkron")
        axes[0, column].set_title(label)
        axes[1, column].plot(result.time, ours - theirs, color="C3", lw=1)
        axes[1, column].set_xlabel("t (s)")
        axes[1, column].ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    axes[0, 0].set_ylabel("N·m (N for pelvis_ty)")
    axes[1, 0].set_ylabel("mbkron − OpenSim")
    axes[0, 0].legend(fontsize="small")
    figure.suptitle("Inverse dynamics of the gait2354 walking trial (low-pass 6 Hz, ground reactions)")
    figure.tight_layout()
    figure.savefig(FIGURE, dpi=80)
    plt.close(figure)


def _gzip(source: Path, target: Path) -> None:
    with gzip.GzipFile(target, "wb", compresslevel=9, mtime=0) as file:  # reproducible bytes
        file.write(source.read_bytes())


def _cutoff_name(cutoff: float) -> str:
    return f"lowpass{cutoff:g}" if cutoff >= 0 else "unfiltered"


def _opensim_version() -> str:
    return _opensim().__version__


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-data", action="store_true", help="store the inputs and OpenSim's results in "
                        "tests/data/analysis/")
    parser.add_argument("--figure", action="store_true", help=f"draw {FIGURE.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        directory = trial_files(Path(temporary))
        cut_force_data(directory / "subject01_walk1_grf.mot", directory / "subject01_walk1_grf_cut.mot")
        references = {cutoff: opensim_inverse_dynamics(directory, cutoff) for cutoff in CUTOFFS}
        lines = ["# Inverse dynamics of the gait2354 walking trial: mbkron against OpenSim " + _opensim_version(), "",
                 "Largest |mbkron − OpenSim| over the 73 frames (N·m or N; s for the times), written by "
                 "`python -m validation.opensim.compare_analysis`.", "",
                 "| low-pass | splines | times | worst generalized force | its difference | "
                 "largest |τ| |", "|---|---|---|---|---|---|"]
        for cutoff, (time_os, labels, values, _) in references.items():
            for spline in ("natural", "gcvspl"):
                result = mbkron_inverse_dynamics(directory, cutoff, spline)
                found = differences(result, time_os, labels, values)
                worst = max((k for k in found if k != "time"), key=found.get)
                lines.append(f"| {_cutoff_name(cutoff)} | {spline} | {found['time']:.1e} | {worst} | "
                             f"{found[worst]:.1e} | {np.max(np.abs(values)):.4g} |")
        full = mbkron_inverse_dynamics(directory, 6.0)
        reaction_labels, reactions = opensim_joint_reactions(directory, full.kinematics, *references[6.0][1:3],
                                                             REACTION_FRAMES)
        model = mbkron.load_model(directory / "subject01_simbody.osim")
        ours = analysis.joint_reactions(model, full.kinematics, analysis.external_loads(
            directory / "subject01_walk1_grf.xml"))
        ours_table = ours.table[REACTION_FRAMES][:, [ours.labels.index(label) for label in reaction_labels]]
        lines += ["", f"Joint reactions on the child bodies at {REACTION_FRAMES.size} frames (force, moment about "
                  "the child joint frame's origin and that point, in ground) against OpenSim's "
                  "`Joint.calcReactionOnChildExpressedInGround` with actuators driven by its inverse dynamics: "
                  f"largest difference {np.max(np.abs(ours_table - reactions)):.1e} (N, N·m, m; largest value "
                  f"{np.max(np.abs(reactions)):.4g})."]
        cut = mbkron_inverse_dynamics(directory, 6.0, force_data=directory / "subject01_walk1_grf_cut.mot")
        lines += ["", f"The force data cut to {FORCE_DATA_SPAN[0]}–{FORCE_DATA_SPAN[1]} s (the stored copy) change "
                  f"mbkron's moments by at most {np.max(np.abs(full.tau - cut.tau)):.1e} N·m."]
        if args.write_data:
            write_data(directory, references)
            path = directory / "reactions.sto"
            write_storage(path, "Joint Reaction Loads", reaction_labels, full.time[REACTION_FRAMES], reactions,
                          comments=(f"OpenSim {_opensim_version()} Joint.calcReactionOnChildExpressedInGround",))
            _gzip(path, DATA / "opensim_joint_reactions_lowpass6.sto.gz")
        if args.figure:
            draw(full, *references[6.0][:3])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "opensim_analysis.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
