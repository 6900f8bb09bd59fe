"""``mbkron demo``: kinematics of a built-in three-link arm along a trajectory (no files needed)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from mbkron.cli.common import add_command

if TYPE_CHECKING:
    from mbkron.model.model import Model

__all__ = ["register", "run"]


def register(commands) -> None:
    """Add the ``demo`` command to the sub-command parsers ``commands``."""
    demo = add_command(commands, "demo", "kinematics of a shipped three-link arm along a trajectory",
                       "Print the fingertip position, velocity and acceleration of a three-link arm\n"
                       "whose wrist follows the elbow by an empirical rhythm.", "mbkron demo --samples 5")
    demo.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1.0)")
    demo.add_argument("--samples", type=int, default=11, help="number of output samples (default 11)")
    demo.set_defaults(run=run)


def _demo_arm() -> Model:
    """A planar three-link arm (shoulder, elbow, wrist) with a rhythm-like coupled wrist."""
    import numpy as np
    import sympy

    from mbkron.model.builder import ModelBuilder

    elbow = sympy.Symbol("elbow")
    b = ModelBuilder(name="demo-arm", gravity=(0.0, -9.81, 0.0))
    b.add_coordinate("shoulder", range=(-np.pi, np.pi)).add_coordinate("elbow", range=(0.0, 2.6))
    b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder", mass=2.0, com=(0.15, 0, 0),
               inertia=np.diag([0.0, 0.015, 0.015]))
    b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable="elbow", offset=(0.30, 0, 0),
               mass=1.2, com=(0.13, 0, 0), inertia=np.diag([0.0, 0.007, 0.007]))
    # An empirical rhythm: the wrist follows the elbow, f = 0.2 sin(elbow) (radians).
    b.add_body("hand", parent="forearm", axis=(0, 0, 1), variable=0.2 * sympy.sin(elbow),
               offset=(0.26, 0, 0), mass=0.4, com=(0.06, 0, 0), inertia=np.diag([0.0, 0.001, 0.001]))
    return b.build()


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron demo``; returns the exit status."""
    import numpy as np

    model = _demo_arm()
    t = np.linspace(0.0, args.t_end, args.samples)
    q = np.stack([0.8 * np.sin(2 * t), 1.2 + 0.5 * np.cos(3 * t)], axis=-1)
    qd = np.stack([1.6 * np.cos(2 * t), -1.5 * np.sin(3 * t)], axis=-1)
    qdd = np.stack([-3.2 * np.sin(2 * t), -4.5 * np.cos(3 * t)], axis=-1)
    fingertip = (0.12, 0.0, 0.0)
    p = model.point_position("hand", fingertip, q)
    v = model.point_velocity("hand", fingertip, q, qd)
    a = model.point_acceleration("hand", fingertip, q, qd, qdd)
    print(f"# {model.name}: bodies {', '.join(model.bodies)}; coordinates {', '.join(model.coordinates)}")
    print("# fingertip kinematics (Eq. 41, 44, 57), SI units")
    print(f"{'t':>6} {'x':>9} {'y':>9} {'vx':>9} {'vy':>9} {'ax':>9} {'ay':>9}")
    for row in zip(t, p[:, 0], p[:, 1], v[:, 0], v[:, 1], a[:, 0], a[:, 1]):
        print(" ".join(f"{x:9.4f}" if i else f"{x:6.3f}" for i, x in enumerate(row)))
    return 0
