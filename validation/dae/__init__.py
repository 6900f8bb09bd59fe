"""Independent planar multibody reference in absolute coordinates (Shabana's traditional method).

Each moving body b has coordinates ``q_b = (R_x, R_y, φ)`` of its body-frame origin; joints and
drives are algebraic constraints ``C(q, t) = 0`` with analytical Jacobian ``C_q``, ``C_t`` and
acceleration right-hand side ``Q_d``. Kinematic analysis solves the constraints level by level;
dynamic analysis integrates the index-1 augmented equations with Baumgarte stabilisation
and/or coordinate projection. Uses only numpy and scipy (nothing from ``mbkron``), so it can
serve as an independent check of minimal-coordinate results.

References: A. A. Shabana, *Computational Dynamics*, 3rd ed., Wiley 2010 (Ch. 3 kinematics,
Ch. 6 constrained dynamics); J. Baumgarte, Comput. Methods Appl. Mech. Eng. 1 (1972) 1–16.

Examples
--------
A compound pendulum (a uniform rod of length 1 m pinned at its end):

>>> import numpy as np
>>> from validation.dae import Body, PlanarSystem, Revolute, simulate
>>> system = PlanarSystem()
>>> rod = system.add_body(Body("rod", mass=1.0, inertia=1 / 12, com=(0.5, 0.0)))
>>> pin = system.add_constraint(Revolute("ground", (0.0, 0.0), rod, (0.0, 0.0)))
>>> q0, qd0 = np.array([0.0, 0.0, -1.0]), np.zeros(3)
>>> run = simulate(system, q0, qd0, np.linspace(0.0, 2.0, 201), projection=True)
>>> run.reaction_force(pin).shape                   # force of the pin on the rod, world frame
(201, 2)
>>> bool(run.drift()[0].max() < 1e-12)
True
"""

from validation.dae.assembly import solve_position, solve_velocity
from validation.dae.constraints import (
    Constraint,
    DrivenAngle,
    DrivenCoordinate,
    FixedAngle,
    Motion,
    Prismatic,
    Revolute,
)
from validation.dae.dynamics import Baumgarte, accelerations, inverse_dynamics, project, simulate
from validation.dae.errors import ConvergenceError, SingularJacobianError
from validation.dae.kinematics import kinematic_analysis, solve_acceleration
from validation.dae.loads import BodyTorque, JointTorque, Load, PointForce, SpringDamper
from validation.dae.model import Body, PlanarSystem
from validation.dae.planar import GROUND
from validation.dae.trajectory import Trajectory

__all__ = [
    "GROUND",
    "Body",
    "PlanarSystem",
    "Motion",
    "Constraint",
    "Revolute",
    "Prismatic",
    "DrivenAngle",
    "FixedAngle",
    "DrivenCoordinate",
    "Load",
    "PointForce",
    "BodyTorque",
    "JointTorque",
    "SpringDamper",
    "solve_position",
    "solve_velocity",
    "solve_acceleration",
    "kinematic_analysis",
    "Baumgarte",
    "accelerations",
    "inverse_dynamics",
    "project",
    "simulate",
    "Trajectory",
    "SingularJacobianError",
    "ConvergenceError",
]
