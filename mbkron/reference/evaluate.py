"""A whole model evaluated by the dissertation as written: the oracle the engine is tested against.

One state at a time, with loops over bodies, in the Kronecker layout of Definition 1:

- D_i = ∂B_i/∂q and D'_i = ∂²B_i/∂q² by the recursions Eq. 74/77 and Eq. 89
  (:func:`mbkron.reference.transforms.kron_derivatives_recursive`), ``B_i = ⁰_iA_4ᵀ``, and the transforms
  by the products Eq. 38-40 (:func:`mbkron.reference.transforms.transforms`);
- M, N q̇ and G body by body by Eq. 145, the velocity part of Eq. 126 and Eq. 187
  (:mod:`mbkron.reference.virtual_work`);
- R column by column by the sparse form Eq. 195 with the GMLAV of Definitions 3-5
  (:func:`mbkron.reference.muscle_paths.moment_arms_eq195`), moving points taken at their current
  location plus their sliding term.

The joint variables ``(f, ∇f, H)`` (Eq. 100-120) are the model's own
(:meth:`mbkron.Model.joint_variables`): the reference covers the equations after them. Slow (numpy calls
per body and state) and not a backend: no simulation, no loads, nothing that new features must support.
It is what tests/test_reference.py holds the engine to, at random states of every kind of model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.algorithms.kinematics.tree import KinematicsData
from mbkron.reference import virtual_work as dynamics_literal
from mbkron.reference.transforms import derivatives_of_model as _derivatives, joint_values_of_model as _joint_values
from mbkron.reference.transforms import model_kinematics as kinematics
from mbkron.reference.muscle_paths import moment_arms_eq195

__all__ = ["gravity_forces", "kinematics", "mass_matrix", "moment_arms", "velocity_forces"]


def _inertial_terms(model, q: ArrayLike, qd: ArrayLike | None):
    """``M`` (Eq. 145), ``N q̇`` (Eq. 126) and ``G`` (Eq. 187) summed body by body."""
    q, joint_values = _joint_values(model, q, 2)
    T, D, D2 = _derivatives(model, joint_values, q)
    batch, nq = q.shape[:-1], q.shape[-1]
    qd = np.zeros_like(q) if qd is None else np.broadcast_to(np.asarray(qd, dtype=float), q.shape)
    M, velocity, gravity = np.zeros(batch + (nq, nq)), np.zeros(batch + (nq,)), np.zeros(batch + (nq,))
    for index in np.ndindex(batch):
        for i, body in enumerate(model.body_records):
            J = model.pseudo_inertias[i]
            M[index] += dynamics_literal.body_mass_matrix(D[index + (i,)], J)  # Eq. 145
            velocity[index] += dynamics_literal.body_velocity_matrix(
                D[index + (i,)], D2[index + (i,)], J, qd[index]) @ qd[index]  # Eq. 126
            gravity[index] += dynamics_literal.body_gravity_forces(D[index + (i,)], body.mass, body.com,
                                                                    model.gravity)  # Eq. 187
    return M, velocity, gravity


def mass_matrix(model, q: ArrayLike) -> NDArray[np.float64]:
    """``M(q) = Σ_i M_i`` by Eq. 145, shape (..., nq, nq)."""
    return _inertial_terms(model, q, None)[0]


def velocity_forces(model, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
    """``N(q, q̇) q̇`` by the velocity part of Eq. 126 (``D'_i`` of Eq. 89), shape (..., nq)."""
    return _inertial_terms(model, q, qd)[1]


def gravity_forces(model, q: ArrayLike) -> NDArray[np.float64]:
    """``G(q)`` by Eq. 187, shape (..., nq)."""
    return _inertial_terms(model, q, None)[2]


def moment_arms(model, q: ArrayLike, kin: KinematicsData | None = None) -> NDArray[np.float64]:
    """``R(q)`` column by column by Eq. 195 (Definitions 2-5), shape (..., nq, n_mt).

    Paths through moving points, conditional points and wraps enter through the path at each state
    (:meth:`mbkron.algorithms.paths.paths.MuscleSet.located_paths`: the active points, moving points where they
    are, tangent points held in their wrap bodies) plus the moving points' sliding term.

    Parameters
    ----------
    model : Model
    q : array_like, shape (..., nq)
    kin : KinematicsData, optional
        First-order kinematics at ``q`` to use instead of the reference's own (:func:`kinematics`), where the
        literal recursions over many coordinates would take seconds per state.
    """
    muscle_set = model.muscle_set
    if muscle_set is None:
        raise ValueError(f"model `{model.name}` has no muscles")
    kin = kinematics(model, q, 1) if kin is None else kin
    nodes = muscle_set.path_points(kin)  # first: raises the ConfigurationError for a zero-length segment
    batch = kin.q.shape[:-1]
    R = np.empty(batch + (model.nq, muscle_set.size))
    grad = np.broadcast_to(kin.grad, kin.f.shape + kin.grad.shape[-1:])
    for index in np.ndindex(batch):
        state = KinematicsData(q=kin.q[index], f=kin.f[index], grad=grad[index], hess=None, T=kin.T[index],
                               joint_twists=None, twists=None, d2T=None)
        located = muscle_set.located_paths(kin.q[index], kin.T[index])
        R[index] = moment_arms_eq195(model, located, kin.q[index], state)  # Eq. 195
    return R + _sliding_moment_arms(muscle_set, kin, nodes)


def _sliding_moment_arms(muscle_set, kin: KinematicsData, nodes) -> NDArray[np.float64]:
    """The part of ``R`` from moving points sliding in their bodies, ``Σ_j (ᵇR_jᵀ f_j) · ∂δ_j/∂q`` (..., nq, M):
    a moving point's offset ``δ_j(q)`` in its body adds ``f_j · ᵇR_j ∂δ_j/∂q_k`` per unit tension to ``R_km``
    (the body-fixed part is Eq. 195 at the point's current location). Zero without moving points."""
    batch = kin.q.shape[:-1]
    R = np.zeros(batch + (kin.q.shape[-1], muscle_set.size))
    if muscle_set.moving_terms is None:
        return R
    _, gradients = muscle_set.moving_terms.evaluate(kin.q)  # (..., n_moving, 3, nq), body frame
    rows = np.flatnonzero(muscle_set.moving_of_point >= 0)
    bodies = muscle_set.point_body[rows]
    on_ground = bodies == muscle_set.nb
    T = kin.T[..., np.where(on_ground, 0, bodies), :3, :3]
    rotations = np.where(on_ground[:, None, None], np.eye(3), T)  # (..., n_moving, 3, 3)
    body_forces = np.einsum("...pxy,...px->...py", rotations, nodes.forces[..., rows, :])  # ᵇRᵀ f
    sliding = np.einsum("...px,...pxk->...kp", body_forces, gradients[..., muscle_set.moving_of_point[rows], :, :])
    np.add.at(np.moveaxis(R, -1, 0), muscle_set.point_muscle[rows], np.moveaxis(sliding, -1, 0))
    return R

