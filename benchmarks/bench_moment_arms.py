"""Moment-arm matrix R = −∂L/∂q of the Holzbaur shoulder (3 coordinates × 14 muscles): mbkron vs OpenSim.

Run from the repository root: ``python benchmarks/bench_moment_arms.py``. Times, in one run:

- mbkron, the full R (Eq. 195) at one state: ``Model.moment_arms(q)``, q of shape (3,);
- mbkron, R along the seed's 181-pose elevation sweep (0…180°, 1° steps) in one batched call;
- OpenSim 4.x (when ``opensim`` is installed): ``GeometryPath.computeMomentArm`` for all 42
  muscle–coordinate pairs of one pose, after setting the pose (``realizePosition``), on the same
  shoulder built by :mod:`validation.opensim.shoulder`.

Poses: plane of elevation 90°, axial rotation −30°, elevation swept. Before timing, mbkron's R is
checked against −dL/dq (central differences of mbkron's lengths) and, where OpenSim's
computeMomentArm is −dL/dq (muscles whose points are fixed in bodies; see
validation/opensim/compare_shoulder.py), against OpenSim.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402
from benchmarks.common import best_time, machine  # noqa: E402

MODEL = ROOT / "models" / "shoulder_rhythm.toml"


def elevation_sweep(count: int = 181) -> np.ndarray:
    """Poses (rad) with elevation 0…180° in ``count`` steps, plane of elevation 90°, axial rotation −30°."""
    q = np.empty((count, 3))
    q[:] = np.radians([90.0, 0.0, -30.0])
    q[:, 1] = np.radians(np.linspace(0.0, 180.0, count))
    return q


def check_against_length_derivative(model: mbkron.Model, q: np.ndarray, step: float = 1e-6) -> float:
    """Largest |R + ∂L/∂q| over the poses, ∂L/∂q by central differences, m."""
    worst = 0.0
    arms = model.moment_arms(q)
    for k in range(model.nq):
        shift = np.zeros(model.nq)
        shift[k] = step
        derivative = (model.muscle_lengths(q + shift) - model.muscle_lengths(q - shift)) / (2 * step)
        worst = max(worst, float(np.abs(arms[:, k, :] + derivative).max()))
    return worst


def opensim_shoulder():
    """The OpenSim shoulder of validation/opensim, or ``None`` (with the reason printed) when unavailable."""
    try:
        from validation.opensim.shoulder import OpenSimShoulder
        return OpenSimShoulder()
    except ImportError as exc:
        print(f"# OpenSim: skipped ({exc})")
    except OSError as exc:
        print(f"# OpenSim: skipped, the shoulder data is not available ({exc})")
    return None


def main() -> None:
    print(f"# moment arms, Holzbaur shoulder (3 coordinates × 14 muscles) — {machine()}")
    model = mbkron.load_model(MODEL)
    sweep = elevation_sweep()
    state = sweep[60]
    error = check_against_length_derivative(model, sweep)
    assert error < 1e-8, error
    print(f"# check: max |R + dL/dq (central differences)| over the sweep = {error:.1e} m")

    single = best_time(lambda: model.moment_arms(state))
    batched = best_time(lambda: model.moment_arms(sweep))
    rows = [("mbkron R, one state", single, 1),
            (f"mbkron R, {len(sweep)}-pose sweep, one call", batched, len(sweep))]

    shoulder = opensim_shoulder()
    if shoulder is not None:
        from validation.opensim.compare_shoulder import DERIVATIVE_REFERENCE

        fixed = [m for m, name in enumerate(model.muscles) if name not in DERIVATIVE_REFERENCE]
        shoulder.set_pose(state)
        difference = np.abs(shoulder.moment_arms()[:, fixed] - model.moment_arms(state)[:, fixed]).max()
        assert difference < 1e-10, difference
        print(f"# check: max |R_mbkron − R_OpenSim| over muscles with fixed points = {difference:.1e} m")

        def opensim_pose() -> np.ndarray:
            shoulder.set_pose(state)
            return shoulder.moment_arms()

        rows.append(("OpenSim computeMomentArm, 42 pairs, one pose", best_time(opensim_pose, repeat=3), 1))

    print(f"{'':<48}{'µs per call':>14}{'µs per state':>14}{'vs mbkron one state':>22}")
    for label, seconds, states in rows:
        per_state = seconds / states
        print(f"{label:<48}{seconds * 1e6:14.1f}{per_state * 1e6:14.1f}{per_state / single:21.2f}×")


if __name__ == "__main__":
    main()
