"""Sampled solutions (kinematic or dynamic) and their post-processing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.constraints import Constraint, DrivenAngle, DrivenCoordinate, Prismatic, Revolute
from validation.dae.model import PlanarSystem
from validation.dae.planar import GROUND, point_acceleration, point_position, point_velocity, pose

__all__ = ["Trajectory"]


@dataclass(frozen=True, eq=False)
class Trajectory:
    """States of a planar system at sample times, with multipliers.

    Produced by :func:`~validation.dae.kinematics.kinematic_analysis` and
    :func:`~validation.dae.dynamics.simulate`.

    Attributes
    ----------
    system : PlanarSystem
    t : ndarray, shape (n_t,)
    q, qd, qdd : ndarray, shape (n_t, n)
        Coordinates, velocities, accelerations.
    lam : ndarray, shape (n_t, m)
        Lagrange multipliers of ``M q̈ + C_qᵀ λ = Q_e + Q_v``.
    info : dict
        Solver statistics (see the producing function).
    """

    system: PlanarSystem
    t: NDArray[np.float64]
    q: NDArray[np.float64]
    qd: NDArray[np.float64]
    qdd: NDArray[np.float64]
    lam: NDArray[np.float64]
    info: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ points
    def _point(self, body: int | str, point: ArrayLike | None) -> tuple[int, ArrayLike]:
        b = self.system.index(body)
        if point is None:
            if b == GROUND:
                raise ValueError("the ground has no centre of mass; give a point")
            point = self.system.bodies[b - 1].com
        return b, point

    def point_position(self, body: int | str, point: ArrayLike | None = None) -> NDArray[np.float64]:
        """World positions (n_t, 2) of a body point (body coordinates; default the centre of mass)."""
        b, u = self._point(body, point)
        return point_position(self.q, b, u)

    def point_velocity(self, body: int | str, point: ArrayLike | None = None) -> NDArray[np.float64]:
        """World velocities (n_t, 2) of a body point (default the centre of mass)."""
        b, u = self._point(body, point)
        return point_velocity(self.q, self.qd, b, u)

    def point_acceleration(self, body: int | str, point: ArrayLike | None = None) -> NDArray[np.float64]:
        """World accelerations (n_t, 2) of a body point (default the centre of mass)."""
        b, u = self._point(body, point)
        return point_acceleration(self.q, self.qd, self.qdd, b, u)

    # ------------------------------------------------------------------ constraint quality
    def drift(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Constraint violation along the trajectory.

        Returns
        -------
        position : ndarray, shape (n_t,)
            ``‖C(q, t)‖₂``.
        velocity : ndarray, shape (n_t,)
            ``‖C_q q̇ + C_t‖₂``.
        """
        s = self.system
        pos = [np.linalg.norm(s.residual(q, t)) for t, q in zip(self.t, self.q)]
        vel = [
            np.linalg.norm(s.jacobian(q, t) @ qd + s.partial_t(t))
            for t, q, qd in zip(self.t, self.q, self.qd)
        ]
        return np.array(pos), np.array(vel)

    # ------------------------------------------------------------------ multipliers and reactions
    def multipliers(self, constraint: Constraint | str) -> NDArray[np.float64]:
        """Lagrange multipliers (n_t, n_eq) of one constraint (object or name)."""
        return self.lam[:, self.system.rows(constraint)]

    def reaction_force(self, joint: Revolute | str) -> NDArray[np.float64]:
        """World-frame force (n_t, 2) that a revolute joint exerts on its body j (body i gets the opposite).

        Equal to the joint's multipliers, since ``C = r_i − r_j`` gives body j the generalized
        constraint force ``−C_{q_j}ᵀ λ = J_jᵀ λ``, i.e. the force ``λ`` at the joint point.
        """
        c = self.system.constraint(joint) if isinstance(joint, str) else joint
        if not isinstance(c, Revolute):
            raise TypeError(
                f"reaction_force needs a Revolute joint, got {type(c).__name__}; use constraint_force"
            )
        return self.multipliers(c)

    def reaction_forces(self) -> dict[str, NDArray[np.float64]]:
        """:meth:`reaction_force` (n_t, 2) of every revolute joint, keyed by joint name."""
        return {c.name: self.multipliers(c) for c in self.system.constraints if isinstance(c, Revolute)}

    def constraint_force(self, constraint: Constraint | str) -> NDArray[np.float64]:
        """Generalized constraint forces ``−C_qᵀ λ`` (n_t, n) of one constraint on all coordinates.

        For body b the entries ``3(b−1) : 3b`` are the world force and the moment about the
        body-frame origin that the constraint applies to the body.
        """
        c = self.system.constraint(constraint) if isinstance(constraint, str) else constraint
        lam = self.multipliers(c)
        return np.stack([-c.jacobian(q, t).T @ lam_k for t, q, lam_k in zip(self.t, self.q, lam)])

    def driving_effort(self, drive: DrivenAngle | DrivenCoordinate | str) -> NDArray[np.float64]:
        """Actuator effort ``−λ`` (n_t,) of a driving constraint.

        The torque on body j (body i receives the opposite) of a :class:`DrivenAngle`, or the
        force along the prescribed direction at the point of a :class:`DrivenCoordinate`.
        """
        c = self.system.constraint(drive) if isinstance(drive, str) else drive
        if not isinstance(c, (DrivenAngle, DrivenCoordinate)):
            raise TypeError(f"driving_effort needs a DrivenAngle or DrivenCoordinate, got {type(c).__name__}")
        return -self.multipliers(c)[:, 0]

    # ------------------------------------------------------------------ joint coordinates
    def relative_angle(
        self, body_i: int | str, body_j: int | str
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Relative angle ``φ_j − φ_i`` (n_t,) and its rate; the ground has angle 0."""
        i, j = self.system.index(body_i), self.system.index(body_j)
        return pose(self.q, j)[1] - pose(self.q, i)[1], pose(self.qd, j)[1] - pose(self.qd, i)[1]

    def joint_coordinates(self) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
        """Joint coordinates and rates of every revolute and prismatic joint, keyed by joint name.

        A revolute joint gives the relative angle ``φ_j − φ_i`` between the body x axes; a
        prismatic joint gives the slider displacement along its axis from ``P_i`` to ``P_j``.
        Minimal-coordinate joint variables with other zero references differ by constants.
        """
        return {
            c.name: c.joint_coordinate(self.q, self.qd)
            for c in self.system.constraints
            if isinstance(c, (Revolute, Prismatic))
        }

    # ------------------------------------------------------------------ energy
    def energy(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Kinetic and potential (gravity + springs) energy, each of shape (n_t,)."""
        return self.system.kinetic_energy(self.q, self.qd), self.system.potential_energy(self.q)
