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

Run ``python -m validation.shoulder_pipeline`` from the repository root: it writes
``validation/results/shoulder_tracking.csv`` (t, q, q_des, τ), ``shoulder_forces.csv`` (t, the
muscle forces and activations, the residual, feasibility) and ``shoulder_pipeline.md``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares, minimize

import mbkron
from mbkron.io import write_atomically
from mbkron.muscles.hill import rigid_tendon_force

__all__ = ["GAINS", "ForceSharing", "Tracking", "computed_torque", "desired_trajectory", "main", "share_forces",
           "track"]

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "shoulder_rhythm.toml"
RESULTS = ROOT / "validation" / "results"
#: K of Eq. 201 (1/s): PD gains 2K and K² (critically damped error dynamics).
GAINS = np.array([100.0, 100.0, 1000.0])
PLANE, AXIAL = np.radians(90.0), np.radians(-30.0)
ELEVATION_START, ELEVATION_END, DURATION = np.radians(15.0), np.radians(105.0), 1.0
#: Equality residual (N·m) below which a force-sharing point counts as feasible.
FEASIBILITY_TOLERANCE = 1e-6


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


def commanded_acceleration(t: float, q: NDArray, qd: NDArray, gains: NDArray = GAINS) -> NDArray:
    """``Q_d`` of Eq. 201."""
    q_des, qd_des, qdd_des = desired_trajectory(t)
    return qdd_des - 2 * gains * (qd - qd_des) - gains**2 * (q - q_des)


def computed_torque(model: mbkron.Model, t: float, q: NDArray, qd: NDArray, gains: NDArray = GAINS) -> NDArray:
    """``τ = M Q_d + N q̇ − G − Q`` (Eq. 200 with Eq. 201), N·m, shape (3,)."""
    terms = model.equations_of_motion(q, qd)
    acceleration = commanded_acceleration(t, q, qd, gains)
    return (terms.mass_matrix @ acceleration + terms.velocity_forces - terms.gravity_forces
            - terms.applied_forces)


@dataclass
class Tracking:
    """The tracking run: times, states, desired states and the required torques (Fig. 20)."""

    t: NDArray
    q: NDArray
    qd: NDArray
    qdd: NDArray
    q_desired: NDArray
    qd_desired: NDArray
    tau: NDArray
    message: str
    n_steps: int

    @property
    def max_error(self) -> NDArray:
        """``max |q − q_des|`` per coordinate, rad."""
        return np.abs(self.q - self.q_desired).max(axis=0)

    @property
    def max_rate_error(self) -> NDArray:
        """``max |q̇ − q̇_des|`` per coordinate, rad/s."""
        return np.abs(self.qd - self.qd_desired).max(axis=0)


def track(model: mbkron.Model, samples: int = 101, rtol: float = 1e-8, atol: float = 1e-10) -> Tracking:
    """Integrate the computed-torque closed loop with RKF45 from the desired initial state.

    Raises
    ------
    RuntimeError
        If the integration stops early (with the solver's message).
    """
    t_eval = np.linspace(0.0, DURATION, samples)
    q0, qd0, _ = desired_trajectory(0.0)

    def actuation(t: float, q: NDArray, qd: NDArray) -> NDArray:
        return computed_torque(model, t, q, qd)

    run = mbkron.simulate(model, (0.0, DURATION), q0, qd0, method="RKF45", rtol=rtol, atol=atol, t_eval=t_eval,
                          tau=actuation)
    if not run.success:
        raise RuntimeError(f"the tracking run stopped early: {run.message}")
    q_des, qd_des, _ = desired_trajectory(run.t)
    tau = np.array([computed_torque(model, t, q, qd) for t, q, qd in zip(run.t, run.q, run.qd)])
    return Tracking(run.t, run.q, run.qd, run.qdd, q_des, qd_des, tau, run.message, run.n_steps)


@dataclass
class ForceSharing:
    """Static-optimisation result at one state."""

    activations: NDArray
    forces: NDArray
    residual: float  # ‖R F − τ‖, N·m
    feasible: bool
    message: str


def share_forces(model: mbkron.Model, q: NDArray, qd: NDArray, tau: NDArray) -> ForceSharing:
    """Muscle forces that produce ``tau``: minimise ``Σ a²`` s.t. ``R F(a, L, L̇) = τ``, ``0 ≤ a ≤ 1``.

    Parameters
    ----------
    model : Model
        With Hill parameters for every muscle.
    q, qd : ndarray, shape (nq,)
    tau : ndarray, shape (nq,)
        Required generalized forces, N·m.

    Returns
    -------
    ForceSharing
        Infeasible (``feasible`` False, the bounded least-squares forces and their residual) when
        ``tau`` exceeds what the muscles can produce at this state.
    """
    params = [path.hill for path in model.muscle_set.paths]
    arms = model.moment_arms(q)
    lengths = model.muscle_lengths(q)
    velocities = model.muscle_velocities(q, qd)

    def forces(a: NDArray) -> NDArray:
        return rigid_tendon_force(a, lengths, velocities, params)

    def imbalance(a: NDArray) -> NDArray:
        return arms @ forces(a) - tau

    count = len(params)
    fit = least_squares(imbalance, np.full(count, 0.1), bounds=(0.0, 1.0), xtol=1e-15, ftol=1e-15, gtol=1e-15)
    best = float(np.linalg.norm(imbalance(fit.x)))
    if best > FEASIBILITY_TOLERANCE:
        return ForceSharing(fit.x, forces(fit.x), best, False,
                            f"infeasible: the muscles cannot produce τ here (least residual {best:.3g} N·m)")
    result = minimize(lambda a: a @ a, fit.x, jac=lambda a: 2 * a, method="SLSQP", bounds=[(0.0, 1.0)] * count,
                      constraints=[{"type": "eq", "fun": imbalance}], options={"ftol": 1e-12, "maxiter": 500})
    residual = float(np.linalg.norm(imbalance(result.x)))
    activations = result.x if result.success and residual <= FEASIBILITY_TOLERANCE else fit.x
    residual = float(np.linalg.norm(imbalance(activations)))
    return ForceSharing(activations, forces(activations), residual, True, result.message)


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
