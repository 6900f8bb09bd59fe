"""mbkron's ``models/leg6dof9musc.toml`` against OpenSim 4.6 running the original ``leg6dof9musc.osim``.

The model file is OpenSim's ``leg6dof9musc.osim`` (opensim-org/opensim-models, Models/Leg6Dof9Musc) as
written by ``mbkron convert`` (docs/opensim.md): OpenSim's six independent coordinates (pelvis
``pelvis_tilt``, ``pelvis_tx``, ``pelvis_ty`` free in the sagittal plane; hip, knee, ankle),
``knee_angle_pat_r`` eliminated through its coupler, and the four ConditionalPathPoints. OpenSim loads
the ``.osim`` file unchanged; its state is set from the model's coordinates as in
:class:`validation.opensim.compare_osim.OpenSimModel` (the dependent ``knee_angle_pat_r`` from the
coupler's own function). Compared over :func:`sweeps` -- each coordinate across its whole range (angles
in 1° steps, the pelvis translations in 5 cm steps), the others at their default values, so every
conditional path point is switched on and off -- at :func:`edge_states` (a conditional point's
coordinate 0.5e-5 and 1.5e-5 beyond its range's ends, inside and outside OpenSim's widening of the
range by 1e-5) and at uniform random poses in the ranges:

- body poses (every OpenSim body, 4×4 transforms in ground);
- musculotendon lengths (``Muscle.getLength``);
- moment arms: OpenSim's ``GeometryPath.computeMomentArm`` (about the knee the total derivative along
  the coupler). No moving point of this model shares a body with its neighbour, so it is −dL/dq;
  :func:`derivative_check` measures that against Richardson-extrapolated central differences of
  OpenSim's own lengths (:func:`validation.opensim.compare_osim.length_gradient`) at the poses whose
  stencils stay clear of the conditional points' range ends;
- the reduced mass matrix ``Cᵀ M C`` (``SimbodyMatterSubsystem.calcM``).

Gravity, velocity forces and inverse dynamics are compared by :mod:`validation.opensim.compare_osim`
(stored in ``tests/data/osim/leg6dof9musc.json``, checked by ``tests/test_osim_agreement.py``).

Significant figures: ``−log10(max |mbkron − OpenSim| / max |OpenSim|)`` per muscle (and per coordinate
for moment arms) over the poses. Run ``python -m validation.opensim.compare_leg6dof9musc`` from the
repository root; it writes ``validation/results/opensim_leg6dof9musc.md``. The ``.osim`` file is read
from ``$MBKRON_LEG6DOF9MUSC_OSIM`` (default ``/work/shared/references/opensim-models/leg6dof9musc.osim``;
the same file is stored as ``tests/data/osim/leg6dof9musc.osim.gz``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim import comparison
from validation.opensim.compare_osim import OpenSimModel, edge_states, length_gradient
from validation.opensim.comparison import Comparison

__all__ = ["OSIM", "MODEL", "BODIES", "OpenSimLeg", "Comparison", "compare", "sweeps", "random_poses",
           "edge_states", "derivative_check", "mass_matrix_error", "main"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
OSIM = Path(os.environ.get("MBKRON_LEG6DOF9MUSC_OSIM", "/work/shared/references/opensim-models/leg6dof9musc.osim"))
MODEL = ROOT / "models" / "leg6dof9musc.toml"
BODIES = ("pelvis", "femur_r", "tibia_r", "patella_r", "talus_r", "calcn_r", "toes_r")
#: Sweep steps: 1° for angles, 5 cm for the pelvis translations.
STEPS = {"angle": np.pi / 180, "m": 0.05}


class OpenSimLeg(OpenSimModel):
    """The ``.osim`` model in OpenSim driven by mbkron's coordinates ``names`` (in order):
    ``evaluate(q)`` gives body poses, lengths and ``computeMomentArm`` for
    :func:`validation.opensim.comparison.compare`."""

    def __init__(self, names, path: Path = OSIM):
        super().__init__(path, list(names), remove_wrapping=False)
        bodies = self.model.getBodySet()
        self.bodies = {name: bodies.get(name) for name in BODIES}

    def set_pose(self, q: np.ndarray) -> None:
        zero = np.zeros(len(q))
        self.set(self.full_state(q, zero, zero)[0])

    def pose(self, body: str) -> np.ndarray:
        transform = self.bodies[body].getTransformInGround(self.state)
        R, p = transform.R(), transform.p()
        out = np.eye(4)
        out[:3, :3] = [[R.get(i, j) for j in range(3)] for i in range(3)]
        out[:3, 3] = [p.get(i) for i in range(3)]
        return out

    def moment_arms(self) -> np.ndarray:
        """``computeMomentArm`` at the current pose, shape (coordinates, muscles)."""
        return np.array([[m.getGeometryPath().computeMomentArm(self.state, self.coordinates[c]) for m in self.muscles]
                         for c in self.names])

    def evaluate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.set_pose(q)
        return (np.array([self.pose(b) for b in BODIES]), np.array([m.getLength(self.state) for m in self.muscles]),
                self.moment_arms())


def sweeps(model) -> dict[str, np.ndarray]:
    """Each coordinate over the multiples of its step (:data:`STEPS`) inside its range, the others at
    their default values."""
    out = {}
    for k, name in enumerate(model.coordinates):
        record = model.coordinate(name)
        low, high = record.range
        step = STEPS["m" if record.unit == "m" else "angle"]
        values = np.arange(np.ceil(low / step - 1e-9), np.floor(high / step + 1e-9) + 1) * step
        q = np.tile(model.default_q, (values.size, 1))
        q[:, k] = np.clip(values, low, high)
        out[name] = q
    return out


def random_poses(model, n: int, seed: int = 0) -> np.ndarray:
    """``n`` poses uniform in the coordinates' ranges."""
    low, high = np.array([model.coordinate(c).range for c in model.coordinates]).T
    return np.random.default_rng(seed).uniform(low, high, (n, model.nq))


def compare(model, leg: OpenSimLeg, q: np.ndarray, label: str) -> Comparison:
    """mbkron against OpenSim at every row of ``q`` (see :func:`validation.opensim.comparison.compare`)."""
    return comparison.compare(model, leg, BODIES, q, label)


def derivative_check(leg: OpenSimLeg, q: np.ndarray) -> float:
    """Largest |computeMomentArm − (−dL/dq of OpenSim's lengths)| (m) over the poses whose difference
    stencils stay clear of the conditional points' range ends (a point switching makes L jump)."""
    worst = 0.0
    for row in np.asarray(q, dtype=float):
        if leg.clear_of_conditions(row):
            gradient = length_gradient(leg, row)
            leg.set_pose(row)
            worst = max(worst, float(np.abs(leg.moment_arms() - gradient).max()))
    return worst


def mass_matrix_error(model, leg: OpenSimLeg, q: np.ndarray) -> float:
    """max |mbkron's − OpenSim's reduced mass matrix| / max |OpenSim's| over the poses ``q``."""
    ours = model.mass_matrix(q)
    theirs = np.array([leg.mass_matrix(row) for row in q])
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


#: Moment arms below this (m) in both programs: the muscle does not span the coordinate.
NOT_SPANNED = 1e-12


def _text(value: float) -> str:
    return "identical" if np.isinf(value) else ("—" if np.isnan(value) else f"{value:.1f}")


def report(model, comparisons: list[Comparison], mass_error: float, derivative_error: float, command: str) -> str:
    coordinates, muscles = tuple(model.coordinates), model.muscles
    ranges = ", ".join(f"{c} [{np.rad2deg(a):.2f}°, {np.rad2deg(b):.2f}°]" if model.coordinate(c).unit != "m"
                       else f"{c} [{a:g}, {b:g}] m" for c, (a, b) in ((c, model.coordinate(c).range) for c in coordinates))
    lines = ["# mbkron vs OpenSim 4.6: leg6dof9musc (right leg, 9 muscles)", "",
             f"Reproduce: `{command}` (from the repository root). Model: `models/leg6dof9musc.toml`, written by",
             "`mbkron convert` from `leg6dof9musc.osim`, which OpenSim loads unchanged: OpenSim's six coordinates",
             "(pelvis free in the sagittal plane), `knee_angle_pat_r` eliminated through its coupler (set in OpenSim",
             "from the coupler's function), and the four conditional path points (psoas_r-P3 on the hip, rect_fem_r-P2,",
             "vas_int_r-P3 and med_gas_r-P2 on the knee).", "",
             f"Poses: sweeps of each coordinate over its whole range ({ranges}; 1° or 5 cm steps, the others at",
             "their default values), which switch every conditional point on and off; edge states (a conditional",
             "point's coordinate 0.5e-5 and 1.5e-5 beyond each range end, inside and outside OpenSim's widening by",
             "1e-5, the others at their defaults); and uniform random poses in the ranges.", "",
             "Significant figures = −log10(max |mbkron − OpenSim| / max |OpenSim|) over the poses. Moment-arm",
             "reference: OpenSim's `computeMomentArm` (total derivative along the knee coupler); it equals −dL/dq of",
             f"OpenSim's lengths to {derivative_error:.1e} m (largest difference at the sweep poses whose stencils stay",
             "1e-4 clear of the conditional points' range ends; Richardson-extrapolated central differences,",
             "h = 1e-5), so it is a valid reference here. \"—\": the muscle does not span the coordinate",
             f"(|moment arm| < {NOT_SPANNED:.0e} m in both programs; the largest such value is given below the table).",
             "", f"Reduced mass matrix `Cᵀ M C` (`calcM`) at all poses: largest difference {mass_error:.1e} of the",
             "largest entry.",
             "", "## Body poses (largest entry difference of the 4×4 ground transforms)", "",
             "| poses | " + " | ".join(BODIES) + " |", "|---|" + "---|" * len(BODIES)]
    for c in comparisons:
        errors = np.abs(c.poses[0] - c.poses[1]).max(axis=(0, 2, 3))
        lines.append(f"| {c.label} ({len(c.q)}) | " + " | ".join(f"{e:.1e}" for e in errors) + " |")
    lines += ["", "## Musculotendon lengths: significant figures", "",
              "| muscle | " + " | ".join(c.label for c in comparisons) + " |", "|---|" + "---|" * len(comparisons)]
    figures = [Comparison.figures(*c.lengths, (0,)) for c in comparisons]
    for m, name in enumerate(muscles):
        lines.append(f"| {name} | " + " | ".join(_text(f[m]) for f in figures) + " |")
    lines.append("| **minimum** | " + " | ".join(f"**{np.nanmin(f):.1f}**" for f in figures) + " |")
    lines += ["", "## Moment arms: significant figures per coordinate (all poses)", "",
              "| muscle | " + " | ".join(coordinates) + " |", "|---|" + "---|" * len(coordinates)]
    ours = np.concatenate([c.arms[0] for c in comparisons])
    theirs = np.concatenate([c.arms[1] for c in comparisons])
    per = Comparison.figures(ours, theirs, (0,))  # (coordinate, muscle)
    size = np.maximum(np.abs(ours).max(axis=0), np.abs(theirs).max(axis=0))
    per[size < NOT_SPANNED] = np.nan
    for m, name in enumerate(muscles):
        lines.append(f"| {name} | " + " | ".join(_text(per[k, m]) for k in range(len(coordinates))) + " |")
    lines.append("| **minimum** | " + " | ".join(f"**{np.nanmin(per[k]):.1f}**" if np.isfinite(per[k]).any() else "—"
                                                for k in range(len(coordinates))) + " |")
    lines += ["", f"Largest |moment arm| where not spanned (\"—\"): {size[size < NOT_SPANNED].max():.1e} m "
              "(the pelvis coordinates move the whole leg rigidly).", ""]
    seconds = sum(c.seconds for c in comparisons)
    lines += ["", f"{sum(len(c.q) for c in comparisons)} poses, {seconds:.1f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=200, help="number of random poses (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model = mbkron.load_model(MODEL)
    leg = OpenSimLeg(model.coordinates)
    assert leg.independent == list(model.coordinates) and tuple(m.getName() for m in leg.muscles) == model.muscles
    sweep = sweeps(model)
    poses = {f"sweep {name}": q for name, q in sweep.items()}
    poses["edges"] = edge_states(model, OSIM)
    poses["random"] = random_poses(model, args.random, args.seed)
    comparisons = [compare(model, leg, q, label) for label, q in poses.items()]
    mass_error = mass_matrix_error(model, leg, np.concatenate(list(poses.values())))
    derivative_error = derivative_check(leg, np.concatenate(list(sweep.values())))
    command = "python -m validation.opensim.compare_leg6dof9musc" + (f" --random {args.random}" if args.random != 200 else "") \
        + (f" --seed {args.seed}" if args.seed else "")
    text = report(model, comparisons, mass_error, derivative_error, command)
    target = RESULTS / "opensim_leg6dof9musc.md"
    temporary = target.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, target)
    print(text)


if __name__ == "__main__":
    main()
