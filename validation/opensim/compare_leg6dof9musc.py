"""mbkron's ``models/leg6dof9musc.toml`` against OpenSim 4.6 running the original ``leg6dof9musc.osim``.

OpenSim loads the ``.osim`` file unchanged; its pelvis coordinates are set to zero (mbkron's pelvis is
fixed there) and ``knee_angle_pat_r`` to ``knee_angle_r`` (the coupler). Compared over sweeps of hip
flexion, knee angle and ankle angle in 1° steps across :func:`validation.leg6dof9musc.validity_ranges`
(where every conditional path point keeps the state the model file fixes; the other coordinates at
zero), and at random poses in those ranges:

- body poses (every body, 4×4 transforms in ground);
- musculotendon lengths;
- moment arms ``R = −dL/dq``: OpenSim's ``GeometryPath.computeMomentArm`` (about the knee it is the
  total derivative along the coupler). No moving point here shares a body with its neighbour, so it
  equals −dL/dq; :func:`derivative_check` measures that with central differences of OpenSim's lengths.

Significant figures: ``−log10(max |mbkron − OpenSim| / max |OpenSim|)`` per muscle (and per coordinate
for moment arms) over the poses. Run ``python -m validation.opensim.compare_leg6dof9musc`` from the
repository root; it writes ``validation/results/opensim_leg6dof9musc.md``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim import comparison
from validation.opensim.comparison import Comparison
from validation.leg6dof9musc import COORDINATES, OSIM, TARGET as MODEL, validity_ranges

__all__ = ["MODEL", "BODIES", "OpenSimLeg", "Comparison", "compare", "sweeps", "derivative_check", "main"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
BODIES = ("pelvis", "femur_r", "tibia_r", "patella_r", "talus_r", "calcn_r", "toes_r")
PELVIS = ("pelvis_tilt", "pelvis_tx", "pelvis_ty")
COUPLED = {"knee_angle_pat_r": "knee_angle_r"}


class OpenSimLeg:
    """The ``.osim`` model in OpenSim: poses (rad, mbkron's coordinate order) → lengths, moment arms."""

    def __init__(self, path: Path = OSIM):
        import opensim as osim

        self.model = osim.Model(str(path))
        self.state = self.model.initSystem()
        coordinates = self.model.getCoordinateSet()
        self.coordinates = {coordinates.get(k).getName(): coordinates.get(k) for k in range(coordinates.getSize())}
        muscles = self.model.getMuscles()
        self.muscles = [muscles.get(k) for k in range(muscles.getSize())]
        bodies = self.model.getBodySet()
        self.bodies = {name: bodies.get(name) for name in BODIES}

    @property
    def muscle_names(self) -> tuple:
        return tuple(m.getName() for m in self.muscles)

    def set_pose(self, q: np.ndarray) -> None:
        values = dict(zip(COORDINATES, map(float, q)))
        for name in PELVIS:
            self.coordinates[name].setValue(self.state, 0.0, False)
        for name, value in values.items():
            self.coordinates[name].setValue(self.state, value, False)
        for dependent, independent in COUPLED.items():
            self.coordinates[dependent].setValue(self.state, values[independent], False)
        self.model.realizePosition(self.state)

    def lengths(self) -> np.ndarray:
        return np.array([m.getLength(self.state) for m in self.muscles])

    def moment_arms(self) -> np.ndarray:
        """``computeMomentArm``, shape (3, n_muscles)."""
        return np.array([[m.getGeometryPath().computeMomentArm(self.state, self.coordinates[c]) for m in self.muscles]
                         for c in COORDINATES])

    def pose(self, body: str) -> np.ndarray:
        transform = self.bodies[body].getTransformInGround(self.state)
        R, p = transform.R(), transform.p()
        out = np.eye(4)
        out[:3, :3] = [[R.get(i, j) for j in range(3)] for i in range(3)]
        out[:3, 3] = [p.get(i) for i in range(3)]
        return out

    def evaluate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.set_pose(q)
        return np.array([self.pose(b) for b in BODIES]), self.lengths(), self.moment_arms()

    def length_gradient(self, q: np.ndarray, h: float = 1e-5) -> np.ndarray:
        """−dL/dq by 4-point central differences of OpenSim's lengths, shape (3, n_muscles)."""
        out = []
        for k in range(len(COORDINATES)):
            total = 0.0
            for offset, weight in ((-2, 1 / 12), (-1, -8 / 12), (1, 8 / 12), (2, -1 / 12)):
                shifted = np.array(q, dtype=float)
                shifted[k] += offset * h
                self.set_pose(shifted)
                total = total + weight * self.lengths()
            out.append(-total / h)
        return np.array(out)


def sweeps() -> dict[str, np.ndarray]:
    """Each coordinate over the whole degrees inside its validity range, the others at zero (rad)."""
    out = {}
    for k, (name, (low, high)) in enumerate(validity_ranges().items()):
        degrees = np.arange(np.ceil(np.rad2deg(low) - 1e-9), np.floor(np.rad2deg(high) + 1e-9) + 1)
        q = np.zeros((degrees.size, len(COORDINATES)))
        q[:, k] = np.clip(np.deg2rad(degrees), low, high)
        out[name] = q
    return out


def random_poses(n: int, seed: int = 0) -> np.ndarray:
    low, high = np.array(list(validity_ranges().values())).T
    return np.random.default_rng(seed).uniform(low, high, (n, len(COORDINATES)))


def compare(model, leg: OpenSimLeg, q: np.ndarray, label: str) -> Comparison:
    """mbkron against OpenSim at every row of ``q`` (see :func:`validation.opensim.comparison.compare`)."""
    return comparison.compare(model, leg, BODIES, q, label)


def derivative_check(leg: OpenSimLeg, q: np.ndarray, h: float = 1e-5) -> float:
    """Largest |computeMomentArm − (−dL/dq by differences)| (m) over the poses whose difference
    stencils (±2h) stay inside the validity ranges (a conditional point switching makes L jump)."""
    low, high = np.array(list(validity_ranges().values())).T
    inside = np.all((q - 2 * h >= low) & (q + 2 * h <= high), axis=1)
    worst = 0.0
    for row in q[inside]:
        gradient = leg.length_gradient(row, h)
        leg.set_pose(row)
        worst = max(worst, float(np.abs(leg.moment_arms() - gradient).max()))
    return worst


#: Moment arms below this (m) in both programs: the muscle does not span the coordinate.
NOT_SPANNED = 1e-12


def _text(value: float) -> str:
    return "identical" if np.isinf(value) else ("—" if np.isnan(value) else f"{value:.1f}")


def report(comparisons: list[Comparison], muscles: tuple, derivative_error: float, command: str) -> str:
    ranges = ", ".join(f"{c} [{np.rad2deg(a):.2f}°, {np.rad2deg(b):.2f}°]" for c, (a, b) in validity_ranges().items())
    lines = ["# mbkron vs OpenSim 4.6: leg6dof9musc (right leg, 9 muscles)", "",
             f"Reproduce: `{command}` (from the repository root). Model: `models/leg6dof9musc.toml`, generated",
             "by `python -m validation.leg6dof9musc` from `leg6dof9musc.osim`, which OpenSim loads unchanged (pelvis",
             "coordinates set to 0 — mbkron's pelvis is fixed there — and `knee_angle_pat_r` = `knee_angle_r`).", "",
             f"Poses: 1° sweeps of each coordinate (others at 0) and uniform random poses, within {ranges}:",
             "the ranges where every conditional path point keeps the state the model file fixes (psoas_r-P3",
             "and med_gas_r-P2 kept, rect_fem_r-P2 and vas_int_r-P3 removed). Outside them the paths differ by",
             "construction.", "",
             "Significant figures = −log10(max |mbkron − OpenSim| / max |OpenSim|) over the poses. Moment-arm",
             "reference: OpenSim's `computeMomentArm` (total derivative along the knee coupler); it equals −dL/dq of",
             f"OpenSim's lengths to {derivative_error:.1e} m (largest difference at the sweep poses, 4-point central",
             "differences, h = 1e-5 rad, poses whose stencil stays inside the ranges), so it is a valid reference",
             f"here. \"—\": the muscle does not span the coordinate (|moment arm| < {NOT_SPANNED:.0e} m in both programs;",
             "the largest such value is given below the table).",
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
    lines += ["", "## Moment arms: significant figures per coordinate (all poses: sweeps and random)", "",
              "| muscle | " + " | ".join(COORDINATES) + " |", "|---|" + "---|" * len(COORDINATES)]
    ours = np.concatenate([c.arms[0] for c in comparisons])
    theirs = np.concatenate([c.arms[1] for c in comparisons])
    per = Comparison.figures(ours, theirs, (0,))  # (coordinate, muscle)
    size = np.maximum(np.abs(ours).max(axis=0), np.abs(theirs).max(axis=0))
    per[size < NOT_SPANNED] = np.nan
    for m, name in enumerate(muscles):
        lines.append(f"| {name} | " + " | ".join(_text(per[k, m]) for k in range(len(COORDINATES))) + " |")
    lines.append("| **minimum** | " + " | ".join(f"**{np.nanmin(per[k]):.1f}**" for k in range(len(COORDINATES))) + " |")
    lines += ["", f"Largest |moment arm| where not spanned (\"—\"): {size[size < NOT_SPANNED].max():.1e} m.", ""]
    seconds = sum(c.seconds for c in comparisons)
    lines += ["", f"{sum(len(c.q) for c in comparisons)} poses, {seconds:.1f} s.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=200, help="number of random poses (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    model = mbkron.load_model(MODEL)
    leg = OpenSimLeg()
    assert leg.muscle_names == model.muscles
    comparisons = [compare(model, leg, q, f"sweep {name}") for name, q in sweeps().items()]
    comparisons.append(compare(model, leg, random_poses(args.random, args.seed), "random"))
    derivative_error = derivative_check(leg, np.concatenate(list(sweeps().values())))
    command = "python -m validation.opensim.compare_leg6dof9musc" + (f" --random {args.random}" if args.random != 200 else "") \
        + (f" --seed {args.seed}" if args.seed else "")
    text = report(comparisons, model.muscles, derivative_error, command)
    target = RESULTS / "opensim_leg6dof9musc.md"
    temporary = target.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, target)
    print(text)


if __name__ == "__main__":
    main()
