"""The dissertation's figures 4–6, 9–11, 17 and 18, reproduced from mbkron runs.

Run from the repository root (needs matplotlib: ``pip install "mbkron[plot]"``)::

    python -m validation.figures [--out docs/figures]

Figures 4–6 (four-bar) and 9–11 (five-bar) are drawn from the data that ``python -m
validation.linkages`` writes to ``validation/results/figures/`` (mbkron beside the Shabana-style
DAE kinematics); figures 17 and 18 (Andrews' squeezer) are computed here with
:func:`mbkron.models.andrews_squeezer` and :func:`mbkron.simulate`. Each figure is written
atomically as ``<name>.png``; :data:`CAPTIONS` lists them.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.cli import write_atomically
from mbkron.models import andrews_squeezer
from mbkron.models.andrews import INITIAL as ANDREWS_INITIAL
from mbkron.simulation import simulate
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
    "fig17_andrews_joint_variables": "Fig. 17 — Andrews' squeezer: joint variables vs the crank angle β",
    "fig18_andrews_q_qdot": "Fig. 18 — Andrews' squeezer: β(t) and β'(t), TR-BDF2, with the IVP test set at t = 0.03",
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
    figure.suptitle("Four-bar: joint variables by cubic-spline pre-modelling (step 0.01 on [−2, 2])")
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


_MAKERS: dict[str, Callable] = {
    "fig04_four_bar_trajectory": _four_bar_trajectory,
    "fig05_four_bar_joint_variables": _four_bar_joint_variables,
    "fig06_four_bar_point_p": _four_bar_point,
    "fig09_five_bar_point_p": _five_bar_point,
    "fig10_five_bar_gradients": _five_bar_gradients,
    "fig11_five_bar_theta4_manifold": _five_bar_manifold,
    "fig17_andrews_joint_variables": _andrews_joint_variables,
    "fig18_andrews_q_qdot": _andrews_q_qdot,
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
