"""The dissertation's figures 4–6, 9–11, 14, 15 and 17–21, reproduced from mbkron runs.

Run from the repository root (needs matplotlib: ``pip install "mbkron[plot]"``)::

    python -m validation.figures [--out docs/figures]

Figures 4–6 (four-bar) and 9–11 (five-bar) are drawn from the data that ``python -m
validation.linkages`` writes to ``validation/results/figures/`` (mbkron beside the Shabana-style
DAE kinematics); figures 17 and 18 (Andrews' squeezer) are computed here with
:func:`mbkron.examples.andrews_squeezer` and :func:`mbkron.simulate`. Figures 14 and 15 (shoulder
moment arms of the group leaders, mbkron solid and OpenSim dashed) are drawn from the sweeps that
``python -m validation.opensim.compare_shoulder`` writes to ``validation/results/figures/``;
figures 19–21 (shoulder tracking and force sharing) from the CSVs of
``python -m validation.shoulder_pipeline`` in ``validation/results/`` (run here when missing).
Each figure is written atomically as ``<name>.png``; :data:`CAPTIONS` lists them.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.io import write_atomically
from mbkron.examples import andrews_squeezer
from mbkron.examples.andrews import INITIAL as ANDREWS_INITIAL
from mbkron.integrate.simulate import simulate
from validation import andrews_reference

__all__ = ["CAPTIONS", "DATA", "OUT", "main", "make_figures"]

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "validation" / "results" / "figures"
OUT = ROOT / "docs" / "figures"

#: Figure file stem -> caption (the seed's figure number first).
CAPTIONS = {
    "fig04_four_bar_trajectory": "Fig. 4 — four-bar: the desired trajectory q(t) and its derivatives",
    "fig05_four_bar_joint_variables": "Fig. 5 — four-bar: joint variables and their derivatives vs q (pre-modelling)",
    "fig06_four_bar_point_p": "Fig. 6 — four-bar: |v_p| and |a_p| vs time, mbkron and the DAE kinematics",
    "fig09_five_bar_point_p": "Fig. 9 — five-bar: trajectories, |v_p| and |a_p| vs time, mbkron and the DAE kinematics",
    "fig10_five_bar_gradients": "Fig. 10 — five-bar: |∇θ3|, |∇θ4| by projection and by numerical differentiation",
    "fig11_five_bar_theta4_manifold": "Fig. 11 — five-bar: the θ4 manifold over (θ1, θ2)",
    "sweep_elv_angle": "Supplementary — shoulder: group leaders' moment arms about the plane of elevation vs that angle, mbkron and OpenSim",
    "fig14_shoulder_elv": "Fig. 14 — shoulder: group leaders' moment arms about the elevation vs the elevation, mbkron and OpenSim",
    "fig15_rot_vs_elv": "Fig. 15 — shoulder: group leaders' moment arms about the axial rotation vs the elevation, mbkron and OpenSim",
    "sweep_shoulder_rot": "Supplementary — shoulder: group leaders' moment arms about the axial rotation vs that angle",
    "fig17_andrews_joint_variables": "Fig. 17 — Andrews' squeezer: joint variables vs the crank angle β",
    "fig18_andrews_q_qdot": "Fig. 18 — Andrews' squeezer: β(t) and β'(t), TR-BDF2, with the IVP test set at t = 0.03",
    "fig19_shoulder_tracking": "Fig. 19 — shoulder tracking: desired and actual elevation, and the tracking error",
    "fig20_shoulder_torques": "Fig. 20 — shoulder tracking: the required torques of the three coordinates",
    "fig21_shoulder_muscle_forces": "Fig. 21 — shoulder force sharing: muscle forces and activations (static optimisation)",
}
_HINT = 'the figures need matplotlib: pip install "mbkron[plot]"'


def _table(name: str) -> NDArray:
    """A CSV of ``validation/results/figures/`` as a structured array (columns by header name)."""
    path = DATA / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m validation.linkages` first")
    return np.genfromtxt(path, delimiter=",", names=True)


def _four_bar_trajectory(plt) -> object:
    data = _table("fig6_four_bar_point_p.csv")
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.3), sharex=True)
    for ax, column, label in zip(axes, ("q", "qd", "qdd"), ("q", "dq/dt (1/s)", "d²q/dt² (1/s²)")):
        ax.plot(data["t"], data[column], color="C0")
        ax.set(xlabel="t (s)", ylabel=label)
    figure.suptitle("Four-bar: piecewise-Hermite trajectory of the generalized coordinate")
    return figure


def _four_bar_joint_variables(plt) -> object:
    data = _table("fig5_four_bar_joint_variables.csv")
    figure, axes = plt.subplots(1, 3, figsize=(11, 3.3), sharex=True)
    for ax, prefix, label in zip(axes, ("theta{}", "dtheta{}_dq", "d2theta{}_dq2"), ("θ_k (rad)", "dθ_k/dq", "d²θ_k/dq²")):
        for k in (1, 2, 3):
            ax.plot(data["q"], data[prefix.format(k)], label=f"θ{k}")
        ax.set(xlabel="q", ylabel=label)
    axes[0].legend()
    figure.suptitle("Four-bar: joint variables by quintic Hermite pre-modelling (step 0.01 on [−2, 2])")
    return figure


def _speed_and_acceleration(axes, data: NDArray) -> None:
    """|v_p| and |a_p|: mbkron solid, the DAE kinematics dotted on top."""
    for ax, kind, label in zip(axes, ("speed", "acceleration"), ("|v_p|", "|a_p|")):
        ax.plot(data["t"], data[f"{kind}_mbkron"], lw=3, color="C0", label="mbkron")
        ax.plot(data["t"], data[f"{kind}_dae"], ":", lw=2, color="C3", label="DAE (Shabana)")
        ax.set(xlabel="t (s)", ylabel=label)
    axes[0].legend()


def _four_bar_point(plt) -> object:
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharex=True)
    _speed_and_acceleration(axes, _table("fig6_four_bar_point_p.csv"))
    figure.suptitle("Four-bar: point p (pre-modelling) against traditional kinematic analysis")
    return figure


def _five_bar_point(plt) -> object:
    data = _table("fig9_five_bar_point_p.csv")
    figure, axes = plt.subplots(1, 3, figsize=(13, 3.5), sharex=True)
    axes[0].plot(data["t"], data["theta1"], label="q1 = θ1")
    axes[0].plot(data["t"], data["theta2"], label="q2 = θ2")
    axes[0].set(xlabel="t (s)", ylabel="rad")
    axes[0].legend()
    _speed_and_acceleration(axes[1:], data)
    figure.suptitle("Five-bar: trajectories and point p (projection) against traditional kinematic analysis")
    return figure


def _five_bar_gradients(plt) -> object:
    data = _table("fig10_five_bar_gradients.csv")
    figure, ax = plt.subplots(figsize=(6.5, 4))
    for k, color in ((3, "C0"), (4, "C1")):
        ax.plot(data["t"], data[f"grad_theta{k}_projection"], lw=3, color=color, label=f"|∇θ{k}|, projection")
        ax.plot(data["t"], data[f"grad_theta{k}_fd"], ":", lw=2, color="k", label=f"|∇θ{k}|, finite differences")
    ax.set(xlabel="t (s)", ylabel="gradient magnitude", title="Five-bar: gradients of the solved joint variables")
    ax.legend()
    return figure


def _five_bar_manifold(plt) -> object:
    data = _table("fig11_five_bar_theta4_manifold.csv")
    n = int(round(np.sqrt(data.size)))
    theta1, theta2, theta4 = (data[c].reshape(n, n) for c in ("theta1", "theta2", "theta4"))
    theta2[1::2], theta4[1::2] = theta2[1::2, ::-1], theta4[1::2, ::-1]  # the sweep ran boustrophedon
    figure = plt.figure(figsize=(11, 4.8))
    surface = figure.add_subplot(1, 2, 1, projection="3d")
    surface.plot_surface(theta1, theta2, theta4, cmap="viridis", linewidth=0, antialiased=True)
    surface.set(xlabel="θ1 (rad)", ylabel="θ2 (rad)")
    surface.set_zlabel("θ4 (rad)", labelpad=12)
    ax = figure.add_subplot(1, 2, 2)
    filled = ax.contourf(theta1, theta2, theta4, levels=24, cmap="viridis")
    ax.contour(theta1, theta2, theta4, levels=12, colors="k", linewidths=0.5)
    figure.colorbar(filled, ax=ax, label="θ4 (rad)")
    ax.set(xlabel="θ1 (rad)", ylabel="θ2 (rad)")
    figure.suptitle("Five-bar: the θ4 manifold over the generalized coordinates (exact solver)")
    return figure


def _andrews_joint_variables(plt) -> object:
    model = andrews_squeezer("lu", "expressions")
    beta = np.linspace(ANDREWS_INITIAL["beta"], ANDREWS_INITIAL["beta"] + 2 * np.pi, 721)  # continuation from q0
    f, _, _ = model.joint_variables(beta[:, None], 0)
    figure, ax = plt.subplots(figsize=(7, 4.5))
    for name in andrews_reference.ORDER[1:]:
        ax.plot(beta, f[:, model.joints.index(name)], label=name)
    ax.set(xlabel="β (rad)", ylabel="joint variable (rad)",
           title="Andrews' squeezer: joint variables solved from the loop closures")
    ax.legend(ncol=3)
    return figure


def _andrews_q_qdot(plt) -> object:
    model = andrews_squeezer("premodel", "expressions", step=2 * np.pi / 512)
    times = np.linspace(0.0, 0.05, 501)
    run = simulate(model, (0.0, 0.05), [ANDREWS_INITIAL["beta"]], [0.0], method="TRBDF2", rtol=1e-8, atol=1e-8,
                   t_eval=times)
    if not run.success:
        raise RuntimeError(f"Andrews' squeezer run failed: {run.message}")
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    reference = (andrews_reference.REFERENCE_Q[0], andrews_reference.REFERENCE_QD[0])
    for ax, values, label, point in zip(axes, (run.q[:, 0], run.qd[:, 0]), ("β (rad)", "β' (rad/s)"), reference):
        ax.plot(run.t, values, color="C0", label="mbkron (Fourier pre-modelling, TR-BDF2)")
        ax.plot([andrews_reference.T_REFERENCE], [point], "o", color="C3", label="IVP test set, t = 0.03")
        ax.set(xlabel="t (s)", ylabel=label)
    axes[0].legend(fontsize="small")
    figure.suptitle("Andrews' squeezer: forward dynamics from β = −0.0620 rad at rest")
    return figure


#: The seed's group leaders (Table 5), in its group order, with their groups' members.
SHOULDER_LEADERS = {
    "LAT1": "group 1: LAT1–3",
    "PECM3": "group 2: PECM2–3",
    "DELT1": "group 3: DELT1",
    "PECM1": "group 4: PECM1",
    "SUBSC": "group 5: SUBSC, TMAJ, TMIN, INFSP, SUPSP, DELT3",
    "DELT2": "group 6: DELT2",
}
#: Sweep CSV -> (swept coordinate, coordinate the moment arms are about, the others' values).
_SWEEPS = {
    "fig14_shoulder_elv": ("elevation, shoulder_elv", "elevation, shoulder_elv", "others at 0"),
    "fig15_rot_vs_elv": ("elevation, shoulder_elv", "axial rotation, shoulder_rot", "others at 0"),
    "sweep_elv_angle": ("plane of elevation, elv_angle", "plane of elevation, elv_angle", "others at 0"),
    "sweep_shoulder_rot": ("axial rotation, shoulder_rot", "axial rotation, shoulder_rot", "others at 0"),
}


def _moment_arms(name: str, plt) -> object:
    """Leaders' moment arms along a sweep: mbkron solid, OpenSim dashed; right: |difference|."""
    data = _table(f"{name}.csv")
    coordinate, about, others = _SWEEPS[name]
    figure, (ax, err) = plt.subplots(1, 2, figsize=(12, 5.6), gridspec_kw={"width_ratios": [1.6, 1]})
    largest = max(np.abs(data[f"R_{m}_opensim"]).max() for m in SHOULDER_LEADERS)
    for k, (muscle, group) in enumerate(SHOULDER_LEADERS.items()):
        ours, theirs = data[f"R_{muscle}_mbkron"], data[f"R_{muscle}_opensim"]
        ax.plot(data["q_deg"], 1e3 * ours, lw=2.5, color=f"C{k}", label=f"{muscle} ({group})")
        ax.plot(data["q_deg"], 1e3 * theirs, "--", lw=1.5, color="k", dashes=(4, 3))
        err.semilogy(data["q_deg"], np.maximum(np.abs(ours - theirs), 1e-20), color=f"C{k}", lw=1.2, label=muscle)
    ax.plot([], [], "--", color="k", label="OpenSim 4.6 (dashed)")
    if largest < 1e-9:  # the plane of elevation does not move the humerus at zero elevation
        ax.set_ylim(-40, 40)
        ax.text(0.5, 0.3, f"all moment arms vanish at zero elevation\n(max |R| = {largest:.1e} m in OpenSim)",
                transform=ax.transAxes, ha="center", fontsize="small")
    ax.set(xlabel=f"{coordinate} (deg)", ylabel=f"moment arm about {about.split(', ')[1]} (mm)",
           title=f"Group leaders, mbkron (solid) and OpenSim (dashed), {others}")
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    err.set(xlabel=f"{coordinate} (deg)", ylabel="|mbkron − OpenSim| (m)", title="Difference (floor 1e-20 m)")
    err.set_ylim(1e-20, 1e-6)
    err.legend(fontsize="small", ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    figure.suptitle(f"Shoulder moment arms about the {about.split(', ')[0]} vs the {coordinate.split(', ')[0]} "
                    "(seed: 8 significant figures)")
    return figure


def _shoulder_table(name: str) -> NDArray:
    """A CSV that ``validation.shoulder_pipeline`` writes; the pipeline is run first when it is missing."""
    from validation import shoulder_pipeline

    path = shoulder_pipeline.RESULTS / name
    if not path.exists():
        shoulder_pipeline.main()
    return np.genfromtxt(path, delimiter=",", names=True, deletechars=set())  # keep "tau.q", "F.m"


def _shoulder_tracking(plt) -> object:
    data = _shoulder_table("shoulder_tracking.csv")
    figure, (ax, err) = plt.subplots(1, 2, figsize=(11, 3.8), sharex=True)
    ax.plot(data["t"], np.degrees(data["shoulder_elv_desired"]), lw=4, color="C1", alpha=0.6, label="desired")
    ax.plot(data["t"], np.degrees(data["shoulder_elv"]), "--", lw=1.5, color="k", label="computed torque (RKF45)")
    ax.set(xlabel="t (s)", ylabel="elevation angle (deg)",
           title="Elevation: minimum jerk 15° → 105°\n(plane of elevation 90°, axial rotation −30°)")
    ax.legend()
    for k, (column, label) in enumerate((("elv_angle", "plane of elevation"), ("shoulder_elv", "elevation"),
                                         ("shoulder_rot", "axial rotation"))):
        error = np.abs(data[column] - data[f"{column}_desired"])
        err.semilogy(data["t"], np.maximum(error, 1e-18), color=f"C{k}", label=f"{label} (max {error.max():.1e})")
    err.axhline(2e-4, ls=":", color="C3", label="seed's bound 2e-4 rad")
    err.set(xlabel="t (s)", ylabel="|q − q_des| (rad, floor 1e-18)", title="Tracking error")
    err.set_ylim(1e-18, 1e5)  # headroom for the legend above the seed's bound
    err.legend(fontsize="small", loc="upper center")
    return figure


def _shoulder_torques(plt) -> object:
    data = _shoulder_table("shoulder_tracking.csv")
    figure, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharex=True)
    for k, (ax, column, label) in enumerate(zip(axes, ("elv_angle", "shoulder_elv", "shoulder_rot"),
                                                ("plane of elevation", "elevation", "axial rotation"))):
        ax.plot(data["t"], data[f"tau.{column}"], color=f"C{k}")
        ax.set(xlabel="t (s)", ylabel="τ (N·m)", title=f"{label} ({column})")
    figure.suptitle("Shoulder tracking: required torques, τ = M Q_d + N q̇ − G (Eq. 200–201)")
    return figure


def _shoulder_forces(plt) -> object:
    data = _shoulder_table("shoulder_forces.csv")
    muscles = [c[2:] for c in data.dtype.names if c.startswith("F.")]
    figure, (ax, act) = plt.subplots(1, 2, figsize=(13, 4.8), sharex=True)
    for k, muscle in enumerate(muscles):
        # 14 muscles: the ten tab10 colours, then black/grey with distinct dashes
        style = ({"color": f"C{k}", "ls": "-", "marker": "."} if k < 10 else
                 {"color": ("k", "0.45")[k % 2], "ls": ("--", ":", "-.", (0, (6, 2)))[k - 10], "marker": "x", "ms": 4})
        ax.plot(data["t"], data[f"F.{muscle}"], label=muscle, **style)
        act.plot(data["t"], data[f"a.{muscle}"], label=muscle, **style)
    ax.set(xlabel="t (s)", ylabel="muscle force (N)", title="Muscle forces")
    act.set(xlabel="t (s)", ylabel="activation", title="Activations (0 ≤ a ≤ 1)")
    act.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")
    feasible = int(data["feasible"].sum())
    figure.suptitle(f"Shoulder force sharing: min Σa², rigid-tendon Thelen muscles, {feasible} of {data.size} "
                    f"points feasible (max residual {data['residual'].max():.1e} N·m)")
    return figure


_MAKERS: dict[str, Callable] = {
    "fig04_four_bar_trajectory": _four_bar_trajectory,
    "fig05_four_bar_joint_variables": _four_bar_joint_variables,
    "fig06_four_bar_point_p": _four_bar_point,
    "fig09_five_bar_point_p": _five_bar_point,
    "fig10_five_bar_gradients": _five_bar_gradients,
    "fig11_five_bar_theta4_manifold": _five_bar_manifold,
    "fig14_shoulder_elv": lambda plt: _moment_arms("fig14_shoulder_elv", plt),
    "fig15_rot_vs_elv": lambda plt: _moment_arms("fig15_rot_vs_elv", plt),
    "sweep_elv_angle": lambda plt: _moment_arms("sweep_elv_angle", plt),
    "sweep_shoulder_rot": lambda plt: _moment_arms("sweep_shoulder_rot", plt),
    "fig17_andrews_joint_variables": _andrews_joint_variables,
    "fig18_andrews_q_qdot": _andrews_q_qdot,
    "fig19_shoulder_tracking": _shoulder_tracking,
    "fig20_shoulder_torques": _shoulder_torques,
    "fig21_shoulder_muscle_forces": _shoulder_forces,
}


def make_figures(out: Path = OUT, names: list[str] | None = None) -> list[Path]:
    """Draw the figures and write them as PNG to ``out``.

    Parameters
    ----------
    out : Path
        Output directory (created if needed).
    names : list of str, optional
        Keys of :data:`CAPTIONS`; all by default.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says how to install it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(_HINT) from None
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or list(CAPTIONS):
        figure = _MAKERS[name](plt)
        for ax in figure.axes:
            ax.grid(alpha=0.3)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=110)
        plt.close(figure)
        write_atomically(out / f"{name}.png", buffer.getvalue())
        written.append(out / f"{name}.png")
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m validation.figures [--out DIR]``; 1 when matplotlib or the linkage data are missing."""
    parser = argparse.ArgumentParser(prog="python -m validation.figures", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output directory (default: docs/figures/)")
    args = parser.parse_args(argv)
    try:
        for path in make_figures(args.out):
            print(f"wrote {path}")
    except (ImportError, FileNotFoundError) as exc:
        print(f"validation.figures: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
