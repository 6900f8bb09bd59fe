"""mbkron's muscle analysis and static optimisation against OpenSim 4.6's ``AnalyzeTool`` on the same states.

Two cases, read from the opensim-core and opensim-models mirrors (``$MBKRON_OPENSIM_CORE``,
``$MBKRON_OPENSIM_MODELS``: git directories):

- ``arm26``: OpenSim's own test case (``Applications/Analyze/tests/resources``: ``arm26.osim``,
  ``arm26_InverseKinematics.mot``, the setup ``arm26_Setup_StaticOptimization.xml``: 0.25–0.75 s, 6 Hz
  low-pass, the model's force set, p = 2);
- ``gait2354``: the walking trial of ``Pipelines/Gait2354_Simbody`` (``subject01_simbody.osim``,
  ``subject01_walk1_ik.mot``, the ground reactions ``subject01_walk1_grf.xml``/``.mot``), the whole
  motion, 6 Hz low-pass, reserves: a ``CoordinateActuator`` on every coordinate (the pipeline's joint
  reserves, optimal force 1 N·m; the pelvis residuals as coordinate actuators with optimal force 100
  instead of its point and torque actuators, since mbkron's reserves act on coordinates).

Both models wrap muscles around cylinders and ellipsoids; mbkron does not wrap yet, so the wrap objects
are removed in OpenSim too (a modified ``.osim``, also what mbkron imports). OpenSim 4.6 refuses a
``Thelen2003Muscle`` minimum activation below 0.01 (arm26 has 0): raised to 0.01, with ``min_control``.
The muscles' Thelen curve constants (``KshapeActive`` 0.5, ``KshapePassive`` 4, ``Af`` 0.3 in both
models) are kept by the import (each muscle's ``curves``); the activation bounds are each muscle's
``min_control``/``max_control``.

OpenSim's ``AnalyzeTool`` runs ``StaticOptimization`` (convergence criterion 1e-10), ``MuscleAnalysis``
and ``Kinematics`` in one pass (output precision 20 digits): the ``Kinematics`` q and u are the states
that static optimisation saw, and mbkron is evaluated at exactly those. So that only the optimisation
is compared, ``τ`` is OpenSim's own: the generalized forces its optimum produces,
``τ = R_OpenSim F_OpenSim + reserves`` (``MuscleAnalysis`` moment arms) -- what its constraint
``q̈_target = q̈(x)`` balances, inverse dynamics with the ground reactions included. mbkron then solves
the same problem from ``τ``. Compared:

- muscle lengths and moment arms vs ``MuscleAnalysis`` (tolerance 1e-9 m);
- ``F° = F/a`` of OpenSim's results vs :func:`mbkron.analysis.static_optimization.optimal_forces`
  (the muscle model, independent of the optimiser), as a fraction of ``F_max``;
- activations (tolerance 1e-3) and muscle forces (tolerance 0.1 % of ``F_max``) vs ``StaticOptimization``;
- the objective ``Σ x²`` of OpenSim's solution relative to mbkron's (``objective_excess``, ≥ 0 where
  mbkron's optimum is the lower: OpenSim's interior-point solution is optimal to its tolerance only, so
  it differs from the exact optimum in the flat directions of the objective).

(OpenSim's ``MuscleAnalysis`` fibre lengths are those of its compliant-tendon states, and
``Thelen2003Muscle`` does not implement ``ignore_tendon_compliance``: mbkron's rigid-tendon fibre
kinematics are checked through ``F°`` instead.)

Run ``python -m validation.opensim.compare_so [CASE ...] [--work DIR]`` from the repository root: it
prints the table, writes ``validation/results/opensim_so.md`` and stores the inputs and OpenSim's
results for the tests (without OpenSim) in ``tests/data/analysis_so/<case>.json.gz`` and
``<case>.osim.gz`` (every ``Case.stride``-th frame). ``--figure`` draws
``docs/figures/analysis_so_activations.png`` (:func:`draw`) from that stored data alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import mbkron
from mbkron.analysis.muscle_analysis import muscle_analysis
from mbkron.analysis.static_optimization import Reserve, static_optimization
from mbkron.io import read_storage, write_atomically

__all__ = ["CASES", "Case", "git_show", "main", "opensim_module", "prepare_model", "reserves_xml", "run_case",
           "run_mbkron", "run_opensim", "setup_xml", "static_optimization_xml"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
DATA = ROOT / "tests" / "data" / "analysis_so"
FIGURE = ROOT / "docs" / "figures" / "analysis_so_activations.png"
PLOTTED = 8
"""Muscles in the figure: the most active ones of the gait trial (by OpenSim's peak activation)."""
CORE = Path(os.environ.get("MBKRON_OPENSIM_CORE", "/work/.mirror/opensim-org+opensim-core"))
MODELS = Path(os.environ.get("MBKRON_OPENSIM_MODELS", "/work/.mirror/opensim-org+opensim-models"))
#: Acceptance tolerances (issue #17).
TOLERANCE = {"length": 1e-9, "moment_arm": 1e-9, "activation": 1e-3, "force_fraction": 1e-3}


@dataclass(frozen=True)
class Case:
    """One comparison: files in a git mirror (``repository``), the time range and the reserves."""

    name: str
    repository: Path
    model: str
    motion: str
    start: float | None = None
    end: float | None = None
    external_loads: tuple[str, ...] = ()  # the loads description first, then its data file
    reserves: tuple[tuple[str, float], ...] | None = None  # (coordinate, optimal force); None: the model's own
    stride: int = 3  # every stride-th frame is stored for the tests


_GAIT_COORDINATES = ("pelvis_tilt", "pelvis_list", "pelvis_rotation", "pelvis_tx", "pelvis_ty", "pelvis_tz",
                     "hip_flexion_r", "hip_adduction_r", "hip_rotation_r", "knee_angle_r", "ankle_angle_r",
                     "subtalar_angle_r", "mtp_angle_r", "hip_flexion_l", "hip_adduction_l", "hip_rotation_l",
                     "knee_angle_l", "ankle_angle_l", "subtalar_angle_l", "mtp_angle_l", "lumbar_extension",
                     "lumbar_bending", "lumbar_rotation")
CASES = {
    "arm26": Case("arm26", CORE, "Applications/Analyze/tests/resources/arm26.osim",
                  "Applications/Analyze/tests/resources/arm26_InverseKinematics.mot", 0.25, 0.75),
    "gait2354": Case("gait2354", MODELS, "Models/Gait2354_Simbody/subject01_simbody.osim",
                     "Pipelines/Gait2354_Simbody/subject01_walk1_ik.mot", None, None,
                     ("Pipelines/Gait2354_Simbody/subject01_walk1_grf.xml",
                      "Pipelines/Gait2354_Simbody/subject01_walk1_grf.mot"),
                     tuple((c, 100.0 if c.startswith("pelvis") else 1.0) for c in _GAIT_COORDINATES), 6),
}


def git_show(repository: Path, path: str, destination: Path) -> Path:
    """Write the file ``path`` of the mirror ``repository``'s HEAD to ``destination``."""
    git_dir = repository / "repo" if (repository / "repo").is_dir() else repository
    text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"], check=True,
                          capture_output=True).stdout
    destination.write_bytes(text)
    return destination


def opensim_module():
    """The ``opensim`` module, logging errors only and to no file."""
    import opensim as osim

    osim.Logger.removeFileSink()
    osim.Logger.setLevelString("error")
    return osim


def prepare_model(source: Path, destination: Path) -> dict[str, tuple[float, float]]:
    """Write ``source`` without wrap objects (and a Thelen muscle's minimum activation
    and ``min_control`` raised to OpenSim 4.6's least, 0.01: arm26 has 0); return each muscle's control
    bounds (OpenSim's defaults: ``minimum_activation`` and 1)."""
    tree = ET.parse(source)
    bounds = {}
    for muscle in tree.getroot().iter("Thelen2003Muscle"):
        for wraps in muscle.iter("PathWrapSet"):
            for objects in wraps.iter("objects"):
                objects.clear()
        minimum = max(float(muscle.findtext("minimum_activation") or 0.01), 0.01)
        lower = max(float(muscle.findtext("min_control") or minimum), minimum)
        upper = float(muscle.findtext("max_control") or 1.0)
        for tag, value in (("minimum_activation", minimum), ("min_control", lower)):
            element = muscle.find(tag)
            if element is None:
                element = ET.SubElement(muscle, tag)
            element.text = repr(value)
        bounds[muscle.get("name")] = (lower, upper)
    tree.write(destination, encoding="UTF-8", xml_declaration=True)
    return bounds


def reserves_xml(reserves, path: Path) -> None:
    """Write a force set of ``CoordinateActuator`` reserves ``<coordinate>_reserve`` (unbounded controls)
    for ``(coordinate, optimal_force)`` pairs."""
    body = "".join(
        f'<CoordinateActuator name="{c}_reserve"><coordinate>{c}</coordinate><optimal_force>{f!r}</optimal_force>'
        "<min_control>-Inf</min_control><max_control>Inf</max_control></CoordinateActuator>" for c, f in reserves)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><ForceSet name="reserves">'
                    f"<objects>{body}</objects><groups/></ForceSet></OpenSimDocument>\n")


def static_optimization_xml(convergence: float = 1e-10) -> str:
    """OpenSim's ``StaticOptimization`` analysis (p = 2, the model's force set, muscle physiology)."""
    return ("<StaticOptimization name=\"StaticOptimization\"><on>true</on><step_interval>1</step_interval>"
            "<in_degrees>false</in_degrees><use_model_force_set>true</use_model_force_set>"
            "<activation_exponent>2</activation_exponent><use_muscle_physiology>true</use_muscle_physiology>"
            f"<optimizer_convergence_criterion>{convergence!r}</optimizer_convergence_criterion>"
            "<optimizer_max_iterations>1000</optimizer_max_iterations></StaticOptimization>")


#: ``MuscleAnalysis`` (moment arms for all coordinates) and ``Kinematics`` (q, u in radians).
MUSCLES_AND_KINEMATICS_XML = (
    "<MuscleAnalysis name=\"MuscleAnalysis\"><on>true</on><step_interval>1</step_interval>"
    "<in_degrees>false</in_degrees><muscle_list>all</muscle_list>"
    "<moment_arm_coordinate_list>all</moment_arm_coordinate_list><compute_moments>true</compute_moments>"
    "</MuscleAnalysis>"
    "<Kinematics name=\"Kinematics\"><on>true</on><step_interval>1</step_interval>"
    "<in_degrees>false</in_degrees><coordinates>all</coordinates></Kinematics>")


def setup_xml(name: str, work: Path, model: Path, motion: Path, loads: Path | None, reserves: Path | None,
              start: float, end: float, analyses: str) -> Path:
    """An ``AnalyzeTool`` setup file ``work/<name>_Setup_SO.xml`` running ``analyses`` (XML) on ``motion``
    (6 Hz low-pass) from ``start`` to ``end``, results in ``work/results`` with 20 digits."""
    setup = work / f"{name}_Setup_SO.xml"
    setup.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><AnalyzeTool name="{name}">'
        f"<model_file>{model}</model_file><replace_force_set>false</replace_force_set>"
        f"<force_set_files>{reserves or ''}</force_set_files><results_directory>{work / 'results'}</results_directory>"
        f"<output_precision>20</output_precision><initial_time>{start!r}</initial_time><final_time>{end!r}</final_time>"
        "<solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>"
        f"<AnalysisSet name=\"Analyses\"><objects>{analyses}</objects><groups/></AnalysisSet>"
        f"<external_loads_file>{loads or ''}</external_loads_file><coordinates_file>{motion}</coordinates_file>"
        "<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>"
        "</AnalyzeTool></OpenSimDocument>\n")
    return setup


def run_opensim(case: Case, work: Path) -> dict:
    """Run OpenSim's ``AnalyzeTool`` on ``case`` in ``work``; return its states and results as arrays."""
    osim = opensim_module()
    source = git_show(case.repository, case.model, work / f"{case.name}_source.osim")
    motion = git_show(case.repository, case.motion, work / Path(case.motion).name)
    loads = None
    for k, path in enumerate(case.external_loads):
        written = git_show(case.repository, path, work / Path(path).name)
        loads = written if k == 0 else loads
    model = work / f"{case.name}.osim"
    bounds = prepare_model(source, model)
    osim.Model(str(model)).printToXML(str(model))  # in OpenSim 4's format (arm26 is an OpenSim 3 file)
    reserves = None
    if case.reserves is not None:
        reserves = work / f"{case.name}_reserves.xml"
        reserves_xml(case.reserves, reserves)
    table = read_storage(motion)
    start = table.time[0] if case.start is None else case.start
    end = table.time[-1] if case.end is None else case.end
    setup = setup_xml(case.name, work, model, motion, loads, reserves, float(start), float(end),
                      static_optimization_xml() + MUSCLES_AND_KINEMATICS_XML)
    results = work / "results"
    done = results / f"{case.name}_StaticOptimization_force.sto"
    if not done.exists() and not osim.AnalyzeTool(str(setup)).run():
        raise RuntimeError(f"OpenSim's AnalyzeTool failed on {setup}")

    def table_of(suffix: str):
        return read_storage(results / f"{case.name}_{suffix}.sto")

    q, u = table_of("Kinematics_q"), table_of("Kinematics_u")
    activation, force = table_of("StaticOptimization_activation"), table_of("StaticOptimization_force")
    muscles = list(bounds)
    lengths = table_of("MuscleAnalysis_Length")
    arms = {c: table_of(f"MuscleAnalysis_MomentArm_{c}") for c in q.labels}
    return {
        "time": q.time, "coordinates": list(q.labels), "q": q.values, "u": u.values, "muscles": muscles,
        "reserves": [] if case.reserves is None else [f"{c}_reserve" for c, _ in case.reserves],
        "bounds": [bounds[m] for m in muscles],
        "activation": np.column_stack([activation.column(m) for m in muscles]),
        "force": np.column_stack([force.column(m) for m in muscles]),
        "reserve_force": np.column_stack([force.column(f"{c}_reserve") for c, _ in case.reserves])
        if case.reserves else np.zeros((q.time.size, 0)),
        "length": np.column_stack([lengths.column(m) for m in muscles]),
        "moment_arms": np.stack([np.column_stack([arms[c].column(m) for m in muscles]) for c in q.labels], axis=1),
        "static_optimization_time": activation.time,
    }


def opensim_tau(data: dict) -> np.ndarray:
    """OpenSim's generalized forces: ``R F`` of its optimal muscle forces plus its reserves, (n, nq)."""
    tau = np.einsum("nkm,nm->nk", data["moment_arms"], data["force"])
    for j, name in enumerate(data["reserves"]):
        tau[:, data["coordinates"].index(name.removesuffix("_reserve"))] += data["reserve_force"][:, j]
    return tau


def run_mbkron(model, data: dict) -> dict:
    """mbkron's muscle analysis and static optimisation at OpenSim's states, from OpenSim's ``τ``."""
    order = [data["coordinates"].index(c) for c in model.coordinates]
    q, u = np.asarray(data["q"])[:, order], np.asarray(data["u"])[:, order]
    tau = opensim_tau(data)[:, order]
    analysis = muscle_analysis(model, q, u, time=data["time"])
    reserves = [Reserve(name.removesuffix("_reserve"), float(f)) for name, f in zip(data["reserves"],
                                                                                  data["reserve_optimal_force"])]
    bounds = np.array(data["bounds"], dtype=float)
    result = static_optimization(model, data["time"], q, u, tau, reserves=reserves,
                                 activation_bounds=(bounds[:, 0], bounds[:, 1]))
    columns = [model.muscles.index(m) for m in data["muscles"]]
    return {"length": analysis.length[:, columns], "moment_arms": analysis.moment_arms[:, :, columns][:, np.argsort(order)],
            "optimal_force": result.optimal_forces[:, columns],
            "activation": result.activations[:, columns], "force": result.forces[:, columns],
            "max_isometric_force": np.array([model.muscle_set.paths[k].hill.max_isometric_force for k in columns]),
            "converged": result.converged, "residual": float(np.abs(result.residual).max()),
            "objective": (result.activations**2).sum(axis=1) + (result.reserve_controls**2).sum(axis=1)}


def load_case_model(path: Path):
    """The mbkron model of a prepared ``.osim`` file (no wraps; the import keeps its Thelen curve constants)."""
    return mbkron.load_model(path)


def deviations(ours: dict, data: dict) -> dict[str, float]:
    """Largest differences between mbkron and OpenSim."""
    force_scale = ours["max_isometric_force"]
    reserve_controls = np.asarray(data["reserve_force"]) / np.asarray(data["reserve_optimal_force"] or 1.0)
    theirs = (np.asarray(data["activation"])**2).sum(axis=1) + (reserve_controls**2).sum(axis=1)
    excess = (theirs - ours["objective"]) / ours["objective"]
    return {
        "length": float(np.abs(ours["length"] - data["length"]).max()),
        "moment_arm": float(np.abs(ours["moment_arms"] - data["moment_arms"]).max()),
        "optimal_force_fraction": float((np.abs(ours["optimal_force"] - data["force"] / data["activation"])
                                         / force_scale).max()),
        "activation": float(np.abs(ours["activation"] - data["activation"]).max()),
        "force_fraction": float((np.abs(ours["force"] - data["force"]) / force_scale).max()),
        "balance_residual": ours["residual"],
        "objective_excess_min": float(excess.min()),
        "objective_excess_max": float(excess.max()),
    }


def _jsonable(data: dict) -> dict:
    return {k: (np.asarray(v).tolist() if isinstance(v, np.ndarray) else v) for k, v in data.items()}


def run_case(case: Case, store: bool, work: Path | None = None) -> tuple[dict, dict]:
    """OpenSim and mbkron on ``case``; store every ``case.stride``-th frame for the tests when ``store``. In ``work``
    (a temporary directory by default) OpenSim's results are reused when present."""
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory) if work is None else work / case.name
        work.mkdir(parents=True, exist_ok=True)
        data = run_opensim(case, work)
        data["reserve_optimal_force"] = [f for _, f in case.reserves] if case.reserves else []
        if not np.array_equal(data["time"], data["static_optimization_time"]):
            raise RuntimeError("OpenSim's Kinematics and StaticOptimization frames differ")
        model_path = work / f"{case.name}.osim"
        model = load_case_model(model_path)
        ours = run_mbkron(model, data)
        found = deviations(ours, data)
        if store:
            DATA.mkdir(parents=True, exist_ok=True)
            keep = {k: (v[::case.stride] if isinstance(v, np.ndarray) and v.ndim and v.shape[0] == data["time"].size else v)
                    for k, v in data.items()}
            keep["opensim"] = opensim_module().__version__
            keep["source"] = {"repository": case.repository.name, "model": case.model, "motion": case.motion}
            keep["stride"] = case.stride
            write_atomically(DATA / f"{case.name}.json.gz", gzip.compress(
                json.dumps(_jsonable(keep), separators=(",", ":")).encode("utf-8"), mtime=0))
            write_atomically(DATA / f"{case.name}.osim.gz", gzip.compress(model_path.read_bytes(), mtime=0))
    return data, found


def stored_case(name: str, directory: Path) -> tuple[dict, object]:
    """The stored inputs and OpenSim's results of case ``name`` (``tests/data/analysis_so``) and its mbkron
    model (the stored ``.osim`` unpacked into ``directory``)."""
    data = json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))
    data = {k: (np.asarray(v, dtype=float) if k in ("time", "q", "u", "activation", "force", "reserve_force",
                                                     "length", "moment_arms") else v) for k, v in data.items()}
    path = directory / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return data, load_case_model(path)


def draw(name: str = "gait2354") -> Path:
    """:data:`FIGURE`: static optimisation's activations of the :data:`PLOTTED` most active muscles, mbkron's and
    OpenSim 4.6's, at the stored frames of case ``name`` (no OpenSim needed), and their differences."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with tempfile.TemporaryDirectory() as directory:
        data, model = stored_case(name, Path(directory))
    ours = run_mbkron(model, data)
    theirs = data["activation"]
    shown = np.argsort(-theirs.max(axis=0), kind="stable")[:PLOTTED]
    figure, axes = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True, gridspec_kw={"height_ratios": (3, 1.4)})
    for rank, k in enumerate(shown):
        colour = f"C{rank % 10}"
        axes[0].plot(data["time"], theirs[:, k], color=colour, lw=4, alpha=0.35)
        axes[0].plot(data["time"], ours["activation"][:, k], color=colour, lw=1.2, marker="o", ms=3,
                     label=data["muscles"][k])
        axes[1].plot(data["time"], ours["activation"][:, k] - theirs[:, k], color=colour, lw=1, marker="o", ms=3)
    axes[0].set_ylabel("activation")
    axes[0].legend(fontsize="small", ncol=4, title="mbkron (thin); OpenSim 4.6 (wide, pale)", title_fontsize="small")
    axes[1].set_ylabel("mbkron − OpenSim")
    axes[1].set_xlabel("t (s)")
    axes[1].ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    figure.suptitle(f"Static optimisation of the {name} walking trial ({len(data['muscles'])} muscles, "
                    f"{len(data['reserves'])} reserves, Σa²): {data['time'].size} frames")
    figure.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(FIGURE, dpi=80)
    plt.close(figure)
    return FIGURE


def _markdown(found: dict[str, dict], frames: dict[str, int]) -> str:
    names = list(TOLERANCE) + [k for k in next(iter(found.values())) if k not in TOLERANCE]
    lines = ["# Muscle analysis and static optimisation vs OpenSim 4.6", "",
             "Generated by `python -m validation.opensim.compare_so` (see its docstring: wrap objects removed in both, "
             "OpenSim's τ). Largest differences over all frames and muscles:", "",
             "| quantity | " + " | ".join(f"{c} ({frames[c]} frames)" for c in found) + " | tolerance |",
             "|---|" + "---|" * (len(found) + 1)]
    for name in names:
        tolerance = TOLERANCE.get(name)
        lines.append(f"| {name} | " + " | ".join(f"{found[c][name]:.2e}" for c in found) + " | "
                     + ("" if tolerance is None else f"{tolerance:g}") + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    """Run the cases, print and write the table; store the test data unless ``--no-store``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", choices=[[], *CASES], help="the cases (default: all)")
    parser.add_argument("--no-store", action="store_true", help="do not write tests/data/analysis_so/")
    parser.add_argument("--work", type=Path, help="keep OpenSim's files in WORK/<case> and reuse its results there")
    parser.add_argument("--figure", action="store_true", help=f"only draw {FIGURE.relative_to(ROOT)} from the stored "
                        "data (no OpenSim needed)")
    args = parser.parse_args(argv)
    if args.figure:
        print(f"wrote {draw()}")
        return
    found, frames = {}, {}
    for name in args.cases or list(CASES):
        data, found[name] = run_case(CASES[name], not args.no_store, args.work)
        frames[name] = data["time"].size
    text = _markdown(found, frames)
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_atomically(RESULTS / "opensim_so.md", text.encode("utf-8"))
    print(text)
    failed = [f"{c}: {k} {v[k]:.3g} > {t:g}" for c, v in found.items() for k, t in TOLERANCE.items()
              if not v[k] <= t or math.isnan(v[k])]
    if failed:
        raise SystemExit("outside the tolerances: " + "; ".join(failed))


if __name__ == "__main__":
    main()
