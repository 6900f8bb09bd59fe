"""The seed's shoulder tracking and force-sharing problem (seed 002, Section 4-4 C, Eq. 200–201, Figs. 19–21).

1. **Tracking** (Fig. 19–20). The elevation follows a minimum-jerk trajectory from 15° to 105° in
   1 s while the plane of elevation is held at 90° and the axial rotation at −30° (the seed's
   values). Computed-torque control with critically damped PD terms (Eq. 201),

       Q_d = q̈_des − 2K (q̇ − q̇_des) − K² (q − q_des),   K = diag(100, 100, 1000),

   and Eq. 200, ``M q̈ − τ = G − N q̇``, ``q̈ = Q_d``, i.e. ``τ = M Q_d + N q̇ − G − Q`` (``Q``: the
   model's loads, none here). Integrated with :func:`mbkron.simulate` (RKF45, ``tau`` a callable).
   The trajectory starts at 15°, not 0°: at zero elevation the plane of elevation is undefined
   (the humeral rotations cancel) and the mass matrix is singular.
2. **Force sharing** (Fig. 21). At chosen time points, static optimisation with rigid-tendon Thelen
   (2003) muscles: minimise ``Σ a²`` subject to ``R(q) F(a, L(q), L̇(q, q̇)) = τ`` and
   ``0 ≤ a ≤ 1`` (SLSQP), started from the bounded least-squares activations. When even those leave
   a residual (``τ`` beyond what the muscles can produce there) the point is reported infeasible
   with that residual and the least-squares forces.

Both are :mod:`mbkron.analysis.tracking` (the package API), applied here to the seed's shoulder.

Run ``python -m validation.shoulder_pipeline`` from the repository root: it writes
``validation/results/shoulder_tracking.csv`` (t, q, q_des, τ), ``shoulder_forces.csv`` (t, the
muscle forces and activations, the residual, feasibility) and ``shoulder_pipeline.md``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

import mbkron
from mbkron.analysis import tracking
from mbkron.analysis.tracking import FEASIBILITY_TOLERANCE, ForceSharing, Tracking, share_forces
from mbkron.io import write_atomically

__all__ = ["FEASIBILITY_TOLERANCE", "GAINS", "ForceSharing", "Tracking", "computed_torque", "desired_trajectory",
           "main", "share_forces", "track"]

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "shoulder_rhythm.toml"
RESULTS = ROOT / "validation" / "results"
#: K of Eq. 201 (1/s): PD gains 2K and K² (critically damped error dynamics).
GAINS = np.array([100.0, 100.0, 1000.0])
PLANE, AXIAL = np.radians(90.0), np.radians(-30.0)
ELEVATION_START, ELEVATION_END, DURATION = np.radians(15.0), np.radians(105.0), 1.0


def desired_trajectory(t: NDArray | float) -> tuple[NDArray, NDArray, NDArray]:
    """``q_des, q̇_des, q̈_des`` (rad, rad/s, rad/s²), shape (..., 3): minimum-jerk elevation, the rest fixed.

    Parameters
    ----------
    t : float or ndarray
        Time, s; held at the end values after :data:`DURATION`.
    """
    s = np.clip(np.asarray(t, dtype=float) / DURATION, 0.0, 1.0)
    span = ELEVATION_END - ELEVATION_START
    elevation = ELEVATION_START + span * (10 * s**3 - 15 * s**4 + 6 * s**5)
    rate = span / DURATION * (30 * s**2 - 60 * s**3 + 30 * s**4)
    acceleration = span / DURATION**2 * (60 * s - 180 * s**2 + 120 * s**3)
    zero = np.zeros_like(s)
    q = np.stack([zero + PLANE, elevation, zero + AXIAL], axis=-1)
    return q, np.stack([zero, rate, zero], axis=-1), np.stack([zero, acceleration, zero], axis=-1)


def computed_torque(model: mbkron.Model, t: float, q: NDArray, qd: NDArray, gains: NDArray = GAINS) -> NDArray:
    """``τ = M Q_d + N q̇ − G − Q`` (Eq. 200 with Eq. 201) along :func:`desired_trajectory`, N·m, shape (3,)."""
    return tracking.computed_torque(model, desired_trajectory, gains, t, q, qd)


def track(model: mbkron.Model, samples: int = 101, rtol: float = 1e-8, atol: float = 1e-10) -> Tracking:
    """Integrate the computed-torque closed loop with RKF45 from the desired initial state
    (:func:`mbkron.analysis.tracking.track` with :func:`desired_trajectory` and :data:`GAINS`)."""
    return tracking.track(model, desired_trajectory, GAINS, (0.0, DURATION), samples=samples, method="RKF45",
                          rtol=rtol, atol=atol)


def _csv(columns: list[str], rows: NDArray) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[format(v, ".17g") for v in row] for row in rows])
    return buffer.getvalue().encode("utf-8")


def main(sharing_points: int = 21) -> None:
    """Run the tracking and force-sharing problem; write the CSVs and the summary under validation/results/."""
    model = mbkron.load_model(MODEL)
    tracking = track(model)
    names = model.coordinates
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_atomically(RESULTS / "shoulder_tracking.csv", _csv(
        ["t"] + list(names) + [f"{n}_desired" for n in names] + [f"tau.{n}" for n in names],
        np.column_stack([tracking.t, tracking.q, tracking.q_desired, tracking.tau])))
    indices = np.linspace(0, tracking.t.size - 1, sharing_points).round().astype(int)
    shares = [share_forces(model, tracking.q[i], tracking.qd[i], tracking.tau[i]) for i in indices]
    write_atomically(RESULTS / "shoulder_forces.csv", _csv(
        ["t"] + [f"F.{m}" for m in model.muscles] + [f"a.{m}" for m in model.muscles] + ["residual", "feasible"],
        np.array([[tracking.t[i], *s.forces, *s.activations, s.residual, float(s.feasible)]
                  for i, s in zip(indices, shares)])))
    infeasible = [(tracking.t[i], s.residual) for i, s in zip(indices, shares) if not s.feasible]
    lines = [
        "# Shoulder tracking and force sharing (seed 002, Section 4-4 C)", "",
        ("Generated by `python -m validation.shoulder_pipeline`. Elevation 15° → 105° (minimum jerk, 1 s), plane "
         "of elevation 90°, axial rotation −30°; computed torque (Eq. 200–201), K = diag(100, 100, 1000); RKF45 "
         f"(rtol 1e-8, atol 1e-10): {tracking.message}, {tracking.n_steps} steps."), "",
        "| coordinate | max \\|q − q_des\\| (rad) | max \\|q̇ − q̇_des\\| (rad/s) | max \\|τ\\| (N·m) |",
        "|---|---|---|---|",
        *[f"| {n} | {e:.2e} | {r:.2e} | {abs(tau).max():.3f} |"
          for n, e, r, tau in zip(names, tracking.max_error, tracking.max_rate_error, tracking.tau.T)], "",
        f"Seed: max elevation error < 2e-4 rad. Here: {tracking.max_error.max():.2e} rad.", "",
        f"Force sharing (rigid-tendon Thelen 2003, min Σa², SLSQP) at {len(shares)} time points: "
        f"{len(shares) - len(infeasible)} feasible (max residual "
        f"{max([s.residual for s in shares if s.feasible], default=0.0):.1e} N·m)"
        + (", infeasible at " + ", ".join(f"t = {t:.2f} s (residual {r:.3g} N·m)" for t, r in infeasible)
           if infeasible else "") + ".",
    ]
    write_atomically(RESULTS / "shoulder_pipeline.md", ("\n".join(lines) + "\n").encode("utf-8"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
