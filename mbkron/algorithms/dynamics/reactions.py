"""Joint reaction forces and moments by Newton–Euler on every body.

Given ``(q, q̇, q̈)`` and the applied loads, the wrench that each body's parent (or the ground)
exerts on it through their joint follows from Newton's and Euler's laws applied to the subtree
below the joint:

    F_i = Σ_{s⪰i} (m_s a_s − m_s g − F_ext,s)
    M_i = Σ_{s⪰i} (Ḣ_s + (c_s − o_i) × m_s (a_s − g) − M_ext,s about o_i)

with ``a_s`` the centre-of-mass acceleration, ``Ḣ_s = I_s α_s + ω_s × I_s ω_s`` (about the centre of
mass) and ``o_i`` the origin of body ``i``'s frame. Accelerations come from mbkron's kinematics:
``T̈_i T_i⁻¹ = α_i + V_i²`` with the bodies' velocity and acceleration twists ``V_i``, ``α_i`` (Eq. 57, 75:
:func:`mbkron.algorithms.dynamics.points.body_motions`, the kernel :func:`mbkron.algorithms.dynamics.kernels.body_motions`).

The wrench is the *net* joint wrench: constraint forces plus whatever acts inside the joint
(:class:`~mbkron.multibody.loads.JointTorque`, :class:`~mbkron.multibody.loads.GeneralizedForce` actuation). Loads that act
at body points — point forces, body torques, the ends of springs and line forces (seed 000's muscles)
— are external to the bodies and excluded, as seed 000's φ excludes muscle forces. Its component
along a joint's axis is the joint's generalized force.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.core.arguments import named_index
from mbkron.algorithms.dynamics import terms as dynamics
from mbkron.multibody import loads as load_records
from mbkron.algorithms.dynamics import loads as loads_module
from mbkron.algorithms.dynamics.points import body_motions, twist_acceleration
from mbkron.algorithms.kinematics.tree import KinematicsData

__all__ = ["JointReactions", "joint_reactions"]


@dataclass(frozen=True)
class JointReactions:
    """Net joint wrenches exerted by each body's parent (or the ground) on the body.

    Attributes
    ----------
    force : ndarray, shape (..., nb, 3)
        N, ground frame.
    moment : ndarray, shape (..., nb, 3)
        N·m about the origin of the body's frame (the joint centre), ground frame.
    """

    force: NDArray[np.float64]
    moment: NDArray[np.float64]


def _body_loads(model, kin: KinematicsData, loads, t: float, qd: NDArray) -> tuple[NDArray, NDArray]:
    """Forces on each body and their moments about the ground origin, from loads at body points."""
    q = kin.q
    force = np.zeros(q.shape[:-1] + (model.nb, 3))
    moment = np.zeros_like(force)

    def apply(body: int, f: NDArray, point: NDArray) -> None:
        force[..., body, :] += f
        moment[..., body, :] += np.cross(point, f)

    for load in loads:
        if isinstance(load, load_records.PointForce):
            b = named_index(model.body_indices, load.body, "body")
            T = kin.T[..., b, :, :]
            f = loads_module.direction(loads_module.evaluate_value(load.force, t, q, qd), kin, b, load.frame)
            apply(b, f, T[..., :3, :3] @ np.asarray(load.point, float) + T[..., :3, 3])
        elif isinstance(load, load_records.BodyTorque):
            b = named_index(model.body_indices, load.body, "body")
            moment[..., b, :] += loads_module.direction(loads_module.evaluate_value(load.torque, t, q, qd), kin, b,
                                                        load.frame)
        elif isinstance(load, (load_records.SpringDamper, load_records.LineForce)):
            tension, _ = loads_module.line_tension(model, kin, load, t, q, qd)
            ends = []
            for body, point in ((load.body_a, load.point_a), (load.body_b, load.point_b)):
                point = np.asarray(point, float)
                if body == "ground":
                    ends.append((-1, np.broadcast_to(point, q.shape[:-1] + (3,))))
                else:
                    b = named_index(model.body_indices, body, "body")
                    T = kin.T[..., b, :, :]
                    ends.append((b, T[..., :3, :3] @ point + T[..., :3, 3]))
            (a, pa), (b, pb) = ends
            unit = (pb - pa) / np.linalg.norm(pb - pa, axis=-1, keepdims=True)
            if a >= 0:
                apply(a, tension[..., None] * unit, pa)
            if b >= 0:
                apply(b, -tension[..., None] * unit, pb)
    return force, moment


def joint_reactions(
    model, kin: KinematicsData, qd: NDArray, qdd: NDArray, loads, t: float = 0.0, convective: NDArray | None = None
) -> JointReactions:
    """Net joint wrenches for all bodies (see the module docstring).

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        At ``q``, order ≥ 1.
    qd, qdd : ndarray, shape (..., nq)
    loads : sequence of Load
    t : float
    convective : ndarray, shape (..., nj), optional
        ``q̇ᵀ H_j q̇`` per joint variable (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`);
        zero (affine joint variables) when omitted.

    Returns
    -------
    JointReactions
    """
    tree = model.tree
    V, alpha = body_motions(model, kin, qd, qdd, convective)  # T̈_i T_i⁻¹ = α_i + V_i² (Eq. 57)
    omega = V[..., :3]
    J = model.pseudo_inertias
    mass = J[:, 3, 3]
    com_world = (kin.T @ J[:, :, 3:4])[..., 0]  # m_i {c_i; 1} in the ground frame
    first_moment = com_world[..., :3]
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(mass[:, None] > 0, first_moment / mass[:, None], kin.T[..., :3, 3])
    # m(a − g), with m a = (α + V²) {m c; m}
    momentum_rate = twist_acceleration(V, alpha, first_moment, mass[:, None]) - mass[:, None] * model.gravity
    alpha = alpha[..., :3]
    R = kin.T[..., :3, :3]
    inertia_world = R @ np.array([b.inertia for b in model.body_records]) @ np.swapaxes(R, -1, -2)
    angular_rate = (inertia_world @ alpha[..., None])[..., 0] + np.cross(omega, (inertia_world @ omega[..., None])[..., 0])
    external_force, external_moment = _body_loads(model, kin, model.loads if loads is None else loads, t, qd)
    force_needed = momentum_rate - external_force
    moment_needed = angular_rate + np.cross(c, momentum_rate) - external_moment  # about the ground origin
    ancestors = tree.ancestor_or_self()
    force = dynamics.subtree_sum(ancestors, force_needed, 1)
    moment_origin = dynamics.subtree_sum(ancestors, moment_needed, 1)
    moment = moment_origin - np.cross(kin.T[..., :3, 3], force)
    return JointReactions(force=force, moment=moment)
