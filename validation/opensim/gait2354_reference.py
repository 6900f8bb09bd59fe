"""Why opensim-models' stored gait2354 inverse dynamics differs from OpenSim 4.6's run (docs/analysis.md).

``Pipelines/Gait2354_Simbody/OutputReference/ResultsInverseDynamics/inverse_dynamics.sto`` (last written
in 2017, opensim-models a26e12c) differs from OpenSim 4.6's ``InverseDynamicsTool`` on the same setup by
up to 19.6 N. This script computes mbkron's inverse dynamics (which equals OpenSim 4.6's to 3.3e-10) under
the candidate explanations and prints the largest difference from the 2017 file and from OpenSim 4.6's
run (``tests/data/analysis/opensim_inverse_dynamics_lowpass6.sto.gz``) for each:

- ``current``: the files as they are now;
- ``model-2017``: the model file of 2017 (OpenSim 3 format);
- ``load-kinematics``: OpenSim < 4.2's ``ExternalLoads::transformPointsExpressedInGroundToAppliedBodies``
  with the 2017 XML's ``external_loads_model_kinematics_file`` (the IK result filtered at 6 Hz): the
  loads sampled at the kinematics' rows, the centres of pressure re-expressed in the feet's frames there,
  the new table splined;
- ``grf-lowpass-<f>``: the force data low-pass filtered (OpenSim's filter) at ``f`` Hz.

Run ``python -m validation.opensim.gait2354_reference`` from the repository root (no OpenSim needed; the
opensim-models mirror, ``$MBKRON_OPENSIM_MODELS``).
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import tempfile
from pathlib import Path

import numpy as np

import mbkron
from mbkron import analysis
from mbkron.analysis.motion import find_index, lowpass_iir, pad, splines
from mbkron.io.storage import Storage, read_storage
from validation.opensim.compare_so import git_show

__all__ = ["main", "variants"]

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(os.environ.get("MBKRON_OPENSIM_MODELS", "/work/.mirror/opensim-org+opensim-models"))
PIPELINE = "Pipelines/Gait2354_Simbody"
OLD = "a26e12c"  # the commit that last wrote the stored result
TIME_RANGE = (0.4, 1.6)


def _old(path: str, destination: Path) -> Path:
    import subprocess

    git_dir = MODELS / "repo" if (MODELS / "repo").is_dir() else MODELS
    destination.write_bytes(subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{OLD}:{path}"], check=True,
                                           capture_output=True).stdout)
    return destination


def _transformed(model, motion: Path, loads):
    """OpenSim < 4.2's point transformation: the loads at the 6 Hz kinematics' rows around the time range,
    the points in the applied bodies' frames there, as a new table and description."""
    full = analysis.trial_kinematics(model, motion, 6.0, (-np.inf, np.inf))
    start = max(find_index(full.time, TIME_RANGE[0]) - 1, 0)
    stop = min(find_index(full.time, TIME_RANGE[1]) + 1, full.time.size - 1)
    t, T = full.time[start:stop + 1], model.kinematics(full.q[start:stop + 1], 0).T
    values = splines(loads.data.time, loads.data.values, 2)(t)  # ExternalForce's cubic splines (≥ 4 rows)
    labels, columns, forces = [], [], []
    for spec, cols in zip(loads.forces, loads.columns):
        b = model.body_index(spec.applied_to_body)
        point = values[:, cols["point"]]
        parts = {"F": values[:, cols["force"]], "P": np.einsum("nji,nj->ni", T[:, b, :3, :3], point - T[:, b, :3, 3]),
                 "M": values[:, cols["torque"]]}
        for kind, v in parts.items():
            labels += [f"{spec.name}_{kind}{axis}" for axis in "xyz"]
            columns += [v[:, k] for k in range(3)]
        forces.append(dataclasses.replace(spec, point_expressed_in_body=spec.applied_to_body,
                                          force_identifier=f"{spec.name}_F", point_identifier=f"{spec.name}_P",
                                          torque_identifier=f"{spec.name}_M"))
    table = Storage("transformed", tuple(labels), t, np.column_stack(columns))
    return analysis.external_loads(dataclasses.replace(loads.spec, forces=tuple(forces)), table)


def _filtered(loads, cutoff: float):
    data = loads.data
    m = data.time.size // 2
    values = lowpass_iir(pad(data.values, m), float(np.diff(data.time).min()), cutoff)[m:-m]
    return dataclasses.replace(loads, data=dataclasses.replace(data, values=values))


def variants(work: Path) -> dict[str, tuple[float, str, float]]:
    """Per variant: the largest difference from the 2017 file (and its column), and from OpenSim 4.6's run."""
    for name in ("subject01_simbody.osim", "subject01_walk1_ik.mot", "subject01_walk1_grf.xml",
                 "subject01_walk1_grf.mot"):
        git_show(MODELS, f"{PIPELINE}/{name}" if name != "subject01_simbody.osim"
                 else f"{PIPELINE}/OutputReference/{name}", work / name)
    _old(f"{PIPELINE}/OutputReference/subject01_simbody.osim", work / "old.osim")
    reference = read_storage(git_show(MODELS, f"{PIPELINE}/OutputReference/ResultsInverseDynamics/inverse_dynamics.sto",
                                      work / "reference.sto"))
    (work / "opensim.sto").write_bytes(gzip.decompress(
        (ROOT / "tests/data/analysis/opensim_inverse_dynamics_lowpass6.sto.gz").read_bytes()))
    opensim = read_storage(work / "opensim.sto")
    motion = work / "subject01_walk1_ik.mot"
    model = mbkron.load_model(work / "subject01_simbody.osim")
    loads = analysis.external_loads(work / "subject01_walk1_grf.xml")
    cases = {"current": (model, loads), "model-2017": (mbkron.load_model(work / "old.osim"), loads),
             "load-kinematics": (model, _transformed(model, motion, loads)),
             **{f"grf-lowpass-{f:g}": (model, _filtered(loads, f)) for f in (6.0, 20.0)}}
    out = {}
    for name, (m, l) in cases.items():
        result = analysis.inverse_dynamics(m, analysis.trial_kinematics(m, motion, 6.0, TIME_RANGE), l)
        old = {label: np.abs(result.tau[:, k] - reference.column(label)).max() for k, label in enumerate(result.labels)}
        worst = max(old, key=old.get)
        new = max(np.abs(result.tau[:, k] - opensim.column(label)).max() for k, label in enumerate(result.labels))
        out[name] = (float(old[worst]), worst, float(new))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        found = variants(Path(directory))
    print("| variant | largest difference from the 2017 file | from OpenSim 4.6's run |\n|---|---|---|")
    for name, (old, column, new) in found.items():
        print(f"| {name} | {old:.3g} ({column}) | {new:.2g} |")


if __name__ == "__main__":
    main()
