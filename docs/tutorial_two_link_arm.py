"""Tutorial: a two-link arm from scratch — inverse dynamics along a reach, and forward dynamics back.

Seed 003 (Duarte's notes on the planar two-link arm) moves the arm from hanging at the side of the
trunk to reaching forward, the upper arm horizontal and the elbow flexed 90°, along a minimum-jerk
trajectory (Flash & Hogan 1985), and shows which torques the muscles must supply: inertial, velocity
(centripetal and Coriolis) and gravitational. This script does the same with mbkron:

1. build the arm with :class:`mbkron.ModelBuilder` from Dempster's segment parameters
   (:func:`mbkron.examples.dempster_two_link`, 1.70 m, 70 kg);
2. inverse dynamics along a minimum-jerk movement of the shoulder and elbow angles: the torque
   contributions ``M q̈`` (inertial), ``N q̇`` (velocity) and ``−G`` (gravity), which add up to the
   joint torques ``τ = M q̈ + N q̇ − G``;
3. forward dynamics driven by those torques (:func:`mbkron.simulate`), which must give the movement
   back;
4. with matplotlib, a figure of the torque contributions (``tutorial_two_link_arm.png``).

Seed 003 plans the minimum-jerk path for the fingertip and solves the inverse kinematics numerically;
its start pose (the arm hanging straight) is a singular pose of the inverse kinematics, where the
elbow's velocity and acceleration are unbounded. Here the minimum-jerk profile is applied to the two
joint angles between the same start and end poses, which keeps every derivative exact.

Run from anywhere (mbkron installed, or from the repository root)::

    python docs/tutorial_two_link_arm.py [--duration 0.5] [--out .]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

import mbkron
from mbkron.examples import dempster_two_link

START = np.deg2rad([-90.0, 0.0])  # shoulder (from the horizontal), elbow (relative): hanging at the side
END = np.deg2rad([0.0, 90.0])  # upper arm forward and horizontal, elbow flexed 90°


def build_arm() -> mbkron.Model:
    """Seed 003's arm: two rods in the vertical x–y plane (y up), relative joint angles about z."""
    p = dempster_two_link(height=1.70, mass=70.0)
    b = mbkron.ModelBuilder(name="tutorial_two_link_arm", gravity=(0.0, -9.81, 0.0))
    b.add_coordinate("shoulder").add_coordinate("elbow")
    b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder", mass=p["m1"], com=(p["d1"], 0, 0),
               inertia=np.diag([0.0, p["I1"], p["I1"]]))
    b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable="elbow", offset=(p["L1"], 0, 0),
               mass=p["m2"], com=(p["d2"], 0, 0), inertia=np.diag([0.0, p["I2"], p["I2"]]))
    return b.build()


def minimum_jerk(t: NDArray, duration: float) -> tuple[NDArray, NDArray, NDArray]:
    """Joint angles, rates and accelerations of a minimum-jerk movement from START to END.

    ``q(t) = q0 + (qf − q0) s(τ)``, ``s = 10τ³ − 15τ⁴ + 6τ⁵``, ``τ = t / duration``: zero velocity and
    acceleration at both ends.
    """
    tau = np.clip(np.asarray(t, float) / duration, 0.0, 1.0)[..., None]
    s = 10 * tau**3 - 15 * tau**4 + 6 * tau**5
    ds = (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / duration
    dds = (60 * tau - 180 * tau**2 + 120 * tau**3) / duration**2
    span = END - START
    return START + span * s, span * ds, span * dds


def main(duration: float = 0.5, out: Path = Path("."), samples: int = 201) -> dict[str, float]:
    """Run the tutorial; returns the numbers it prints.

    Parameters
    ----------
    duration : float
        Movement time, s (seed 003 shows a slow 4 s and a fast 0.5 s movement).
    out : Path
        Directory for the figure.
    samples : int
        Time samples.

    Returns
    -------
    dict
        Peak torques and contributions (N·m) per joint, and the forward-dynamics errors (rad, rad/s).
    """
    arm = build_arm()
    t = np.linspace(0.0, duration, samples)
    q, qd, qdd = minimum_jerk(t, duration)

    # Inverse dynamics, term by term (Eq. 198 without muscles): τ = M q̈ + N q̇ − G.
    inertial = np.einsum("nij,nj->ni", arm.mass_matrix(q), qdd)
    velocity = arm.velocity_forces(q, qd)
    gravity = -arm.gravity_forces(q)
    torque = arm.inverse_dynamics(q, qd, qdd)
    assert np.allclose(inertial + velocity + gravity, torque, rtol=0, atol=1e-12)

    # Forward dynamics driven by the same torques, evaluated along the planned movement.
    def drive(time: float, _q: NDArray, _qd: NDArray) -> NDArray:
        q_t, qd_t, qdd_t = minimum_jerk(np.array([time]), duration)
        return arm.inverse_dynamics(q_t[0], qd_t[0], qdd_t[0])

    run = mbkron.simulate(arm, (0.0, duration), START, np.zeros(2), method="DOP853", rtol=1e-12, atol=1e-12,
                          t_eval=t, tau=drive)
    if not run.success:
        raise RuntimeError(f"forward dynamics failed: {run.message}")
    results = {"duration_s": duration}
    for k, joint in enumerate(("shoulder", "elbow")):
        for name, values in (("torque", torque), ("inertial", inertial), ("velocity", velocity), ("gravity", gravity)):
            results[f"{joint}_peak_{name}_Nm"] = float(np.abs(values[:, k]).max())
    results["forward_max_angle_error_rad"] = float(np.abs(run.q - q).max())
    results["forward_max_rate_error_rad_s"] = float(np.abs(run.qd - qd).max())

    print(f"Two-link arm (Dempster, 1.70 m, 70 kg), minimum-jerk reach in {duration:g} s")
    print(f"{'joint':<9} {'peak |τ|':>9} {'inertial':>9} {'velocity':>9} {'gravity':>9}   (N·m)")
    for joint in ("shoulder", "elbow"):
        print(f"{joint:<9} " + " ".join(f"{results[f'{joint}_peak_{name}_Nm']:9.4f}"
                                        for name in ("torque", "inertial", "velocity", "gravity")))
    print(f"forward dynamics reproduces the movement: max |Δq| = {results['forward_max_angle_error_rad']:.2e} rad, "
          f"max |Δq'| = {results['forward_max_rate_error_rad_s']:.2e} rad/s")

    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print('no figure: matplotlib is not installed (pip install "mbkron[plot]")')
        return results
    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for k, (ax, joint) in enumerate(zip(axes, ("Shoulder", "Elbow"))):
        ax.plot(t, inertial[:, k], label="inertial M q''")
        ax.plot(t, velocity[:, k], label="velocity N q'")
        ax.plot(t, gravity[:, k], label="gravity −G")
        ax.plot(t, torque[:, k], "k--", lw=2.5, label="joint torque τ (sum)")
        ax.set(title=joint, xlabel="t (s)", ylabel="torque (N·m)")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize="small")
    figure.suptitle(f"Torque contributions, minimum-jerk reach in {duration:g} s")
    figure.tight_layout()
    path = Path(out) / "tutorial_two_link_arm.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    print(f"wrote {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=0.5, help="movement time, s (default 0.5)")
    parser.add_argument("--out", type=Path, default=Path("."), help="directory for the figure (default: here)")
    arguments = parser.parse_args()
    main(arguments.duration, arguments.out)
