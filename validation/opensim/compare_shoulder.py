"""mbkron's ``models/shoulder_rhythm.toml`` against the same shoulder in OpenSim 4.6.

Compared at the seed's sweeps (Figs. 14–15: each coordinate swept in 1° steps across its range,
the others at zero) and at random poses within the ranges:

- body poses (clavicle, scapula, humerus): largest difference of the 4×4 transforms;
- musculotendon lengths;
- moment arms ``R = −∂L/∂q``. The reference is OpenSim's ``GeometryPath.computeMomentArm`` for the
  muscles whose points are fixed in bodies. For muscles with moving via points it is not: OpenSim
  skips the segments whose two ends are on the same body, and a point that slides on its body
  changes such a segment's length (see docs/seed-notes/muscles.md, item 12); DELT2, whose moving
  point is built in OpenSim as a chain of massless coupled bodies, also disagrees with −dL/dq. For
  these muscles (:data:`DERIVATIVE_REFERENCE`) the reference is −dL/dq by finite differences of
  OpenSim's lengths (6-point stencils, central or one-sided so as never to straddle a spline knot
  where the smoothness drops; step ≤ 1e-3 rad, smaller near knots).

Accuracy is given in significant figures, ``−log10(max |mbkron − OpenSim| / max |OpenSim|)`` per
muscle over the poses. Run ``python -m validation.opensim.compare_shoulder`` from the repository
root; it writes ``validation/results/opensim_shoulder.md`` and the sweeps as CSV in
``validation/results/figures/`` (``fig14_shoulder_elv.csv`` and ``fig15_rot_vs_elv.csv``, the seed's
Figs. 14 and 15; ``sweep_elv_angle.csv`` and ``sweep_shoulder_rot.csv``).
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim import comparison
from validation.opensim.comparison import Comparison
from validation.opensim.shoulder import OpenSimShoulder

__all__ = ["DERIVATIVE_REFERENCE", "Comparison", "compare", "main", "sweeps"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "validation" / "results"
MODEL = ROOT / "models" / "shoulder_rhythm.toml"
BODIES = ("clavicle", "scapula", "humerus")
#: Muscles whose reference moment arms are −dL/dq of OpenSim's lengths (see the module docstring).
DERIVATIVE_REFERENCE = ("DELT2", "PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3")
MAX_STEP = 1e-3
#: 6-point first-derivative stencils: (offsets, weights / 60).
CENTRAL = (np.array([-3, -2, -1, 1, 2, 3]), np.array([-1, 9, -45, 45, -9, 1]) / 60.0)
FORWARD = (np.arange(6), np.array([-137, 300, -300, 200, -75, 12]) / 60.0)
BACKWARD = (-np.arange(6), -np.array([-137, 300, -300, 200, -75, 12]) / 60.0)


def sweeps(model) -> dict[str, np.ndarray]:
    """The seed's sweeps: each coordinate over its range in 1° steps, the others at zero (rad)."""
    out = {}
    for k, record in enumerate(model.coordinate_records):
        low, high = np.rad2deg(record.range)
        q = np.zeros((round(high - low) + 1, model.nq))
        q[:, k] = np.deg2rad(np.arange(round(low), round(high) + 1))
        out[record.name] = q
    return out


def stencil(q: float, knots: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The stencil and step that keep every point on one smooth piece (no knot strictly inside)."""
    below, above = knots[knots < q], knots[knots > q]
    left = q - below.max() if below.size else np.inf
    right = above.min() - q if above.size else np.inf
    on_knot = bool(np.any(knots == q))
    options = [(right / 5, FORWARD), (left / 5, BACKWARD)]
    if not on_knot:
        options.append((min(left, right) / 3, CENTRAL))
    step, (offsets, weights) = max(options, key=lambda option: option[0])
    return offsets, weights, min(MAX_STEP, 0.9 * step)


class Reference:
    """OpenSim's lengths, poses and moment arms at poses ``q`` (rad, mbkron's coordinate order)."""

    def __init__(self, shoulder: OpenSimShoulder, knots: dict[str, np.ndarray]):
        self.shoulder = shoulder
        self.knots = knots
        self.derivative_columns = [m.getName() in DERIVATIVE_REFERENCE for m in shoulder.muscles]

    def lengths(self, q: np.ndarray) -> np.ndarray:
        self.shoulder.set_pose(q)
        return self.shoulder.lengths()

    def length_gradient(self, q: np.ndarray) -> np.ndarray:
        """−dL/dq by finite differences of OpenSim's lengths, shape (nq, n_muscles)."""
        out = []
        for k, name in enumerate(self.shoulder.INDEPENDENT):
            offsets, weights, h = stencil(q[k], self.knots.get(name, np.empty(0)))
            total = 0.0
            for offset, weight in zip(offsets, weights):
                shifted = q.copy()
                shifted[k] += offset * h
                total = total + weight * self.lengths(shifted)
            out.append(-total / h)
        return np.array(out)

    def evaluate(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Poses (bodies, 4, 4), lengths, moment arms (nq, n_muscles)."""
        gradient = self.length_gradient(q)
        self.shoulder.set_pose(q)
        poses = np.array([self.shoulder.pose(b) for b in BODIES])
        lengths = self.shoulder.lengths()
        arms = np.where(self.derivative_columns, gradient, self.shoulder.moment_arms())
        return poses, lengths, arms


def compare(model, reference: Reference, q: np.ndarray, label: str) -> Comparison:
    """mbkron against OpenSim at every row of ``q`` (see :func:`validation.opensim.comparison.compare`)."""
    return comparison.compare(model, reference, BODIES, q, label)


def knots_by_coordinate(shoulder_data) -> dict[str, np.ndarray]:
    """Knots (rad) of every moving-point spline, per coordinate."""
    out: dict[str, list] = {}
    for muscle in shoulder_data.muscles:
        for point in muscle.points:
            for offsets in point.offsets:
                for coordinate, x, _ in offsets:
                    out.setdefault(coordinate, []).extend(np.deg2rad(x))
    return {name: np.unique(values) for name, values in out.items()}


def write_sweep_csv(comparison: Comparison, coordinate: int, muscles: tuple, path: Path, about: int | None = None) -> None:
    """The sweep of ``coordinate`` as CSV: moment arms about ``about`` (default: the swept coordinate), lengths."""
    about = coordinate if about is None else about
    header = ["q_deg"] + [f"{kind}_{m}_{source}" for kind in ("R", "L") for m in muscles for source in ("mbkron", "opensim")]
    rows = []
    for n, q in enumerate(comparison.q):
        row = [np.rad2deg(q[coordinate])]
        for ours, theirs in (comparison.arms, comparison.lengths):
            ours_row = ours[n, about] if ours.ndim == 3 else ours[n]
            theirs_row = theirs[n, about] if theirs.ndim == 3 else theirs[n]
            for a, b in zip(ours_row, theirs_row):
                row += [a, b]
        rows.append(row)
    temporary = path.with_suffix(".tmp")
    with temporary.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows([[f"{v:.17g}" for v in row] for row in rows])
    os.replace(temporary, path)


def _figures_text(value: float) -> str:
    return "identical" if np.isinf(value) else f"{value:.1f}"


def report(comparisons: list[Comparison], muscles: tuple, command: str) -> str:
    lines = ["# mbkron vs OpenSim 4.6: the Holzbaur (2005) shoulder (rhythm A, no wrapping)", "",
             f"Reproduce: `{command}` (from the repository root). Model: `models/shoulder_rhythm.toml`;",
             "OpenSim model built with the 4.x API from the same data (`validation/opensim/shoulder.py`).",
             "", "Significant figures = −log10(max |mbkron − OpenSim| / max |OpenSim|) over the poses, per",
             "muscle; lengths and moment arms of all muscles, about every coordinate. Moment-arm references:",
             "OpenSim's `computeMomentArm`, except for the muscles marked (−dL/dq) — moving via points,",
             "where `computeMomentArm` is not −dL/dq — whose reference is −dL/dq by finite differences of",
             "OpenSim's lengths (6-point stencils that never straddle a spline knot; see the module",
             "docstring); their accuracy is that of the differences (~1e-11 m).",
             "", "## Body poses (largest entry difference of the 4×4 ground transforms)", "",
             "| poses | " + " | ".join(BODIES) + " |", "|---|" + "---|" * len(BODIES)]
    for c in comparisons:
        errors = np.abs(c.poses[0] - c.poses[1]).max(axis=(0, 2, 3))
        lines.append(f"| {c.label} ({len(c.q)}) | " + " | ".join(f"{e:.1e}" for e in errors) + " |")
    for title, attribute, axis in (("Musculotendon lengths", "lengths", (0,)), ("Moment arms", "arms", (0, 1))):
        lines += ["", f"## {title}: significant figures", "", "| muscle | " + " | ".join(c.label for c in comparisons) + " |",
                  "|---|" + "---|" * len(comparisons)]
        figures = [Comparison.figures(*getattr(c, attribute), axis) for c in comparisons]
        for m, name in enumerate(muscles):
            marker = " (−dL/dq)" if attribute == "arms" and name in DERIVATIVE_REFERENCE else ""
            lines.append(f"| {name}{marker} | " + " | ".join(_figures_text(f[m]) for f in figures) + " |")
        lines.append("| **minimum** | " + " | ".join(f"**{f.min():.1f}**" for f in figures) + " |")
    lines += ["", "Sweep data: `validation/results/figures/fig14_shoulder_elv.csv` (moment arms about the elevation vs the "
              "elevation, the seed's Fig. 14), `fig15_rot_vs_elv.csv` (about the axial rotation vs the elevation, Fig. 15),",
              "`sweep_elv_angle.csv` (plane of elevation),",
              "and `sweep_shoulder_rot.csv` (axial rotation): moment arms `R_<muscle>_<source>` (m; about the swept",
              "coordinate except in Fig. 15's file) and lengths `L_…` (m) against the swept coordinate (`q_deg`).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=200, help="number of random poses (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from validation.shoulder_data import load_shoulder

    model = mbkron.load_model(MODEL)
    osim_shoulder = OpenSimShoulder()
    assert tuple(osim_shoulder.INDEPENDENT) == model.coordinates
    reference = Reference(osim_shoulder, knots_by_coordinate(load_shoulder("A")))
    comparisons = []
    figures = RESULTS / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    names = {"elv_angle": "sweep_elv_angle.csv", "shoulder_elv": "fig14_shoulder_elv.csv",
             "shoulder_rot": "sweep_shoulder_rot.csv"}
    for k, (coordinate, q) in enumerate(sweeps(model).items()):
        comparison = compare(model, reference, q, f"sweep {coordinate}")
        write_sweep_csv(comparison, k, model.muscles, figures / names[coordinate])
        if coordinate == "shoulder_elv":  # the seed's Fig. 15: about the axial rotation, against the elevation
            write_sweep_csv(comparison, k, model.muscles, figures / "fig15_rot_vs_elv.csv",
                            about=model.coordinates.index("shoulder_rot"))
        comparisons.append(comparison)
    rng = np.random.default_rng(args.seed)
    low, high = np.array([c.range for c in model.coordinate_records]).T
    comparisons.append(compare(model, reference, rng.uniform(low, high, (args.random, model.nq)), "random"))
    command = "python -m validation.opensim.compare_shoulder" + (f" --random {args.random}" if args.random != 200 else "") \
        + (f" --seed {args.seed}" if args.seed else "")
    text = report(comparisons, model.muscles, command)
    target = RESULTS / "opensim_shoulder.md"
    temporary = target.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, target)
    print(text)


if __name__ == "__main__":
    main()
