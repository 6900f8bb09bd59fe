"""Static optimisation of opensim-models' ``Pipelines/Gait10dof18musc`` walking trial: OpenSim 4.6 and mbkron.

The pipeline as published (``OutputReference``): the model ``subject01.osim`` (10 coordinates, 18
muscles wrapped over cylinders), the inverse-kinematics result ``IK/subject01_walk_IK.mot``, the ground
reactions ``ExperimentalData/subject01_walk_grf.xml``/``.mot`` and the reserve file
``gait10dof_Reserve_Actuators.xml`` (pelvis residuals ``FX``, ``FY`` as ``PointActuator``, ``MZ`` as a
``TorqueActuator``; a ``CoordinateActuator`` on every other coordinate). The time range and low-pass are
those of the pipeline's ``ID/walk_Setup_ID.xml`` (0–2.5 s, 6 Hz). OpenSim's ``AnalyzeTool`` runs
``StaticOptimization`` (p = 2, the model's force set with the reserve file appended, muscle physiology,
convergence 1e-10) on it, output precision 20.

Two variants of the model:

- ``thelen`` (compared within the acceptance tolerance, activations ≤ 1e-3): the 18
  ``Millard2012EquilibriumMuscle`` are rewritten as ``Thelen2003Muscle`` with the same path and
  parameters (``max_isometric_force``, ``optimal_fiber_length``, ``tendon_slack_length``,
  ``pennation_angle_at_optimal``, ``max_contraction_velocity``), OpenSim 4.6's default Thelen curve
  constants written out (:data:`OPENSIM_THELEN_DEFAULTS`) and ``min_control`` 0.01 (= ``minimum_activation``, mbkron's default lower bound): mbkron models the Thelen
  curves only, so this variant compares everything else -- the reserve file's point, torque and
  coordinate actuators, the inverse dynamics with the ground reactions, the wrapped paths' moment arms
  and the optimisation -- end to end, from the files;
- ``millard`` (with ``--millard``): the model as published. mbkron imports Millard muscles with Thelen
  curves (see :mod:`mbkron.io.osim.muscles`), so here the activations differ by the curves; the
  deviation is reported, not stored or asserted.

Run ``python -m validation.opensim.compare_so_gait10dof [--work DIR]`` from the repository root (needs
``opensim`` and the opensim-models mirror, ``$MBKRON_OPENSIM_MODELS``): it prints the largest
differences, writes ``validation/results/opensim_so_gait10dof.md`` and stores, gzip-compressed, in
``tests/data/analysis_gait10dof/``: the pipeline's motion, ground reactions and reserve file
(byte-identical), the ``thelen`` model, OpenSim's ``StaticOptimization`` activations and forces of it, its
``MuscleAnalysis`` moment arms (every third frame, ``.npz``) and its ``InverseDynamicsTool`` result with
the pipeline's ``ID/walk_Setup_ID.xml`` settings.
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from mbkron.io import read_storage, write_atomically
from validation.opensim.compare_so import git_show, opensim_module

__all__ = ["FILES", "VARIANTS", "main", "moment_arms_npz", "run_mbkron", "run_opensim", "run_opensim_id",
           "run_opensim_muscle_analysis", "thelen_model"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "analysis_gait10dof"
RESULTS = ROOT / "validation" / "results"
MODELS = Path(os.environ.get("MBKRON_OPENSIM_MODELS", "/work/.mirror/opensim-org+opensim-models"))
PIPELINE = "Pipelines/Gait10dof18musc/OutputReference"
FILES = {"model": "subject01.osim", "motion": "IK/subject01_walk_IK.mot",
         "loads": "ExperimentalData/subject01_walk_grf.xml", "loads_data": "ExperimentalData/subject01_walk_grf.mot",
         "reserves": "gait10dof_Reserve_Actuators.xml"}
"""The pipeline's files (relative to :data:`PIPELINE`), laid out as there (the loads name their data file)."""
TIME_RANGE = (0.0, 2.5)
LOWPASS = 6.0
VARIANTS = ("thelen", "millard")
TOLERANCE = 1e-3
"""Largest activation difference accepted (issue 27's acceptance line), ``thelen`` variant."""
OPENSIM_THELEN_DEFAULTS = (("FmaxTendonStrain", "0.04"), ("FmaxMuscleStrain", "0.6"), ("KshapeActive", "0.45"),
                           ("KshapePassive", "5"), ("Af", "0.25"), ("Flen", "1.4"), ("fv_linear_extrap_threshold", "0.95"))
"""``Thelen2003Muscle``'s property defaults in OpenSim 4.6 (``Thelen2003Muscle::constructProperties``), written
out: mbkron's defaults for an element left out differ (``Flen`` 1.8, ``FmaxTendonStrain`` 0.033, older
OpenSim's), so the file states them and both programs read the same curves."""
_KEPT = ("isDisabled", "appliesForce", "min_control", "max_control", "GeometryPath", "optimal_force",
         "max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal",
         "max_contraction_velocity")


def thelen_model(source: Path, destination: Path) -> list[str]:
    """Write ``source`` with every ``Millard2012EquilibriumMuscle`` as a ``Thelen2003Muscle`` (module docstring);
    return the muscles' names."""
    tree = ET.parse(source)
    names = []
    for muscle in tree.getroot().iter("Millard2012EquilibriumMuscle"):
        muscle.tag = "Thelen2003Muscle"
        for child in list(muscle):
            if child.tag not in _KEPT:
                muscle.remove(child)
        for tag, value in (("min_control", "0.01"), ("minimum_activation", "0.01"), *OPENSIM_THELEN_DEFAULTS):
            element = muscle.find(tag)
            if element is None:
                element = ET.SubElement(muscle, tag)
            element.text = value
        names.append(muscle.get("name"))
    tree.write(destination, encoding="UTF-8", xml_declaration=True)
    return names


def _setup(work: Path, name: str, model: Path) -> Path:
    files = {k: work / v for k, v in FILES.items()}
    setup = work / f"{name}_Setup_SO.xml"
    setup.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><AnalyzeTool name="{name}">'
        f"<model_file>{model}</model_file><replace_force_set>false</replace_force_set>"
        f"<force_set_files>{files['reserves']}</force_set_files>"
        f"<results_directory>{work / 'results'}</results_directory><output_precision>20</output_precision>"
        f"<initial_time>{TIME_RANGE[0]!r}</initial_time><final_time>{TIME_RANGE[1]!r}</final_time>"
        "<solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>"
        "<AnalysisSet name=\"Analyses\"><objects>"
        "<StaticOptimization name=\"StaticOptimization\"><on>true</on><step_interval>1</step_interval>"
        "<in_degrees>false</in_degrees><use_model_force_set>true</use_model_force_set>"
        "<activation_exponent>2</activation_exponent><use_muscle_physiology>true</use_muscle_physiology>"
        "<optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>"
        "<optimizer_max_iterations>1000</optimizer_max_iterations></StaticOptimization>"
        "</objects><groups/></AnalysisSet>"
        f"<external_loads_file>{files['loads']}</external_loads_file><coordinates_file>{files['motion']}"
        f"</coordinates_file><lowpass_cutoff_frequency_for_coordinates>{LOWPASS!r}"
        "</lowpass_cutoff_frequency_for_coordinates></AnalyzeTool></OpenSimDocument>\n")
    return setup


def run_opensim_id(work: Path) -> Path:
    """OpenSim's ``InverseDynamicsTool`` with the pipeline's ``ID/walk_Setup_ID.xml`` settings (0–2.5 s, 6 Hz,
    muscles excluded) on the files in ``work`` (:func:`run_opensim` puts them there), 17 significant digits;
    returns the result file (reused when present)."""
    osim = opensim_module()
    result = work / "results" / "opensim_inverse_dynamics.sto"
    if result.exists():
        return result
    setup = work / "walk_Setup_ID.xml"
    setup.write_text(
        '<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000">'
        f'<InverseDynamicsTool name="walk_subject"><model_file>{work / FILES["model"]}</model_file>'
        f"<results_directory>{result.parent}</results_directory>"
        f"<time_range>{TIME_RANGE[0]!r} {TIME_RANGE[1]!r}</time_range><forces_to_exclude>Muscles</forces_to_exclude>"
        f"<external_loads_file>{work / FILES['loads']}</external_loads_file>"
        f"<coordinates_file>{work / FILES['motion']}</coordinates_file>"
        f"<lowpass_cutoff_frequency_for_coordinates>{LOWPASS!r}</lowpass_cutoff_frequency_for_coordinates>"
        f"<output_gen_force_file>{result.name}</output_gen_force_file></InverseDynamicsTool></OpenSimDocument>\n")
    tool = osim.InverseDynamicsTool(str(setup))
    osim.IO.SetPrecision(16)  # 17 significant digits instead of 8 decimals
    if not tool.run():
        raise RuntimeError("OpenSim's InverseDynamicsTool failed")
    return result


def run_opensim(work: Path, variants=VARIANTS) -> dict[str, Path]:
    """The pipeline's files into ``work`` and OpenSim's static optimisation of ``variants``; returns the
    activation files by variant (reused when present)."""
    osim = opensim_module()
    for relative in FILES.values():
        (work / relative).parent.mkdir(parents=True, exist_ok=True)
        git_show(MODELS, f"{PIPELINE}/{relative}", work / relative)
    thelen_model(work / FILES["model"], work / "subject01_thelen.osim")
    out = {}
    for variant in variants:
        model = work / ("subject01_thelen.osim" if variant == "thelen" else FILES["model"])
        result = work / "results" / f"{variant}_StaticOptimization_activation.sto"
        if not result.exists() and not osim.AnalyzeTool(str(_setup(work, variant, model))).run():
            raise RuntimeError(f"OpenSim's AnalyzeTool failed on variant {variant}")
        out[variant] = result
    return out


def run_opensim_muscle_analysis(work: Path) -> Path:
    """OpenSim's ``MuscleAnalysis`` and ``Kinematics`` of the ``thelen`` model at the same frames (the
    ``AnalyzeTool`` of :func:`run_opensim` without static optimisation); returns the results directory."""
    from validation.opensim.compare_so import MUSCLES_AND_KINEMATICS_XML

    osim = opensim_module()
    if not (work / "results" / "thelen_ma_Kinematics_q.sto").exists():
        setup = _setup(work, "thelen_ma", work / "subject01_thelen.osim")
        text = setup.read_text()
        start, end = text.index("<StaticOptimization"), text.index("</StaticOptimization>") + len("</StaticOptimization>")
        setup.write_text(text[:start] + MUSCLES_AND_KINEMATICS_XML + text[end:])
        if not osim.AnalyzeTool(str(setup)).run():
            raise RuntimeError("OpenSim's AnalyzeTool (MuscleAnalysis) failed")
    return work / "results"


def moment_arms_npz(results: Path, stride: int = 3) -> bytes:
    """OpenSim's moment arms of the ``thelen`` model, every ``stride``-th frame, as ``.npz`` bytes: ``time``,
    ``coordinates``, ``muscles``, ``moment_arms`` (frames, coordinates, muscles), m."""
    import io

    q = read_storage(results / "thelen_ma_Kinematics_q.sto")
    tables = {c: read_storage(results / f"thelen_ma_MuscleAnalysis_MomentArm_{c}.sto") for c in q.labels}
    muscles = tables[q.labels[0]].labels
    arms = np.stack([np.column_stack([tables[c].column(m) for m in muscles]) for c in q.labels], axis=1)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, time=q.time[::stride], coordinates=np.array(q.labels), muscles=np.array(muscles),
             moment_arms=arms[::stride])
    return buffer.getvalue()


def run_mbkron(model_path: Path, motion: Path, loads: Path, reserves: Path):
    """The model and mbkron's inverse dynamics and static optimisation from the files, as ``mbkron analyze
    --id --so`` runs them (:func:`mbkron.analysis.trial.analyze_trial`)."""
    import mbkron
    from mbkron.analysis.trial import analyze_trial

    model = mbkron.load_model(model_path)
    return model, analyze_trial(model, motion, external_loads=loads, lowpass=LOWPASS, time_range=TIME_RANGE,
                                analyses=("so",), reserves=reserves)


def deviation(model, trial, reserves: Path, activation_file: Path) -> dict[str, float]:
    """mbkron's static optimisation (``trial``: :func:`run_mbkron`'s analysis) against OpenSim's activation
    table, two ways:

    - from the files (mbkron's own inverse dynamics, equal to OpenSim's to 4e-10): the largest activation
      and reserve-control differences, and the frames above :data:`TOLERANCE`;
    - from OpenSim's own generalized forces, ``τ = A x_OpenSim`` (its solution balances mbkron's ``τ`` only
      to its optimiser's constraint tolerance): ``objective_excess`` (OpenSim's ``Σ x²`` over mbkron's
      optimum's − 1: ≥ 0 up to round-off where mbkron's is the optimum), the frames where OpenSim's
      objective is above the optimum (``> 1e-9``: its interior-point solution is not at the optimum), and
      the largest activation difference on the other frames.
    """
    from mbkron.analysis.actuators import read_reserves, unit_generalized_forces
    from mbkron.analysis.static_optimization import static_optimization

    result, kinematics = trial["static_optimization"], trial.kinematics
    theirs = read_storage(activation_file)
    if theirs.time.size != result.time.size or np.abs(theirs.time - result.time).max() > 1e-9:
        raise RuntimeError(f"frames differ: OpenSim {theirs.time.size}, mbkron {result.time.size}")
    x = np.column_stack([theirs.column(name) for name in result.muscles + result.reserves])
    m = len(result.muscles)
    muscles = np.abs(x[:, :m] - result.activations).max(axis=1)
    actuators, _ = read_reserves(reserves)
    A = np.concatenate([model.moment_arms(kinematics.q) * result.optimal_forces[:, None, :],
                        unit_generalized_forces(model, actuators, kinematics.q)], axis=2)
    tau = np.einsum("nkj,nj->nk", A, x)
    ours = static_optimization(model, kinematics.time, kinematics.q, kinematics.qd, tau, reserves=actuators)
    excess = (x**2).sum(1) / ((ours.activations**2).sum(1) + (ours.reserve_controls**2).sum(1)) - 1
    optimal = excess <= 1e-9
    return {"frames": result.time.size, "unbalanced_frames": int((~result.converged).sum()),
            "activation": float(muscles.max()), "frames_above_tolerance": int((muscles > TOLERANCE).sum()),
            "reserve_control": float(np.abs(x[:, m:] - result.reserve_controls).max()),
            "opensim_balance_residual": float(np.abs(tau - trial["inverse_dynamics"].tau).max()),
            "objective_excess_min": float(excess.min()), "objective_excess_max": float(excess.max()),
            "opensim_suboptimal_frames": int((~optimal).sum()),
            "activation_where_optimal": float(np.abs(x[:, :m] - ours.activations).max(axis=1)[optimal].max(initial=0.0))}


def main(argv=None) -> None:
    """Run OpenSim and mbkron, print and write the table, store the test data."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="keep OpenSim's files in WORK and reuse its results there")
    parser.add_argument("--no-store", action="store_true", help="do not write tests/data/analysis_gait10dof/")
    parser.add_argument("--millard", action="store_true", help="also run the published (Millard) model "
                        "(OpenSim takes some minutes more; its result is reported, not stored)")
    args = parser.parse_args(argv)
    variants = VARIANTS if args.millard else ("thelen",)
    with tempfile.TemporaryDirectory() as directory:
        work = args.work or Path(directory)
        work.mkdir(parents=True, exist_ok=True)
        activations = run_opensim(work, variants)
        inverse_dynamics = run_opensim_id(work)
        analyses = run_opensim_muscle_analysis(work)
        found = {}
        for variant in variants:
            model = work / ("subject01_thelen.osim" if variant == "thelen" else FILES["model"])
            loaded, trial = run_mbkron(model, work / FILES["motion"], work / FILES["loads"], work / FILES["reserves"])
            found[variant] = deviation(loaded, trial, work / FILES["reserves"], activations[variant])
        if not args.no_store:
            DATA.mkdir(parents=True, exist_ok=True)
            stored = {"subject01_thelen.osim": work / "subject01_thelen.osim",
                      **{Path(v).name: work / v for k, v in FILES.items() if k != "model"},
                      "opensim_so_thelen_activation.sto": activations["thelen"],
                      "opensim_so_thelen_force.sto": activations["thelen"].with_name("thelen_StaticOptimization_force.sto"),
                      "opensim_inverse_dynamics.sto": inverse_dynamics}
            for name, path in stored.items():
                write_atomically(DATA / f"{name}.gz", gzip.compress(path.read_bytes(), mtime=0))
            write_atomically(DATA / "opensim_moment_arms.npz", moment_arms_npz(analyses))
    keys = list(next(iter(found.values())))
    lines = ["# Static optimisation of Gait10dof18musc's walking trial vs OpenSim 4.6", "",
             "Generated by `python -m validation.opensim.compare_so_gait10dof` (see its docstring); mbkron from the "
             "files (its own inverse dynamics), the pipeline's reserve file; see `deviation`'s docstring for the columns:",
             "", "| variant | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines += [f"| {v} | " + " | ".join(f"{f[k]:.3g}" for k in keys) + " |" for v, f in found.items()]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_atomically(RESULTS / "opensim_so_gait10dof.md", text.encode("utf-8"))
    print(text)
    thelen = found["thelen"]
    if not thelen["activation_where_optimal"] <= TOLERANCE or thelen["unbalanced_frames"]:
        raise SystemExit(f"thelen: activations outside {TOLERANCE:g} where OpenSim is optimal, or unbalanced frames")


if __name__ == "__main__":
    main()
