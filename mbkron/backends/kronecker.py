"""The ``kronecker`` backend: the dissertation as written, in the Kronecker layout of Definition 1.

One state at a time, with loops over bodies:

- D_i = ∂B_i/∂q and D'_i = ∂²B_i/∂q² by the recursions Eq. 74/77 and Eq. 89
  (:func:`mbkron.kinematics.literal.kron_derivatives_recursive`), ``B_i = ⁰_iA_4ᵀ``;
- M, N q̇ and G body by body by Eq. 145, the velocity part of Eq. 126 and Eq. 187
  (:mod:`mbkron.dynamics.literal`);
- R column by column by the sparse form Eq. 195 with the GMLAV of Definitions 3-5
  (:func:`mbkron.muscles.moment_arms.moment_arms_eq195`), moving points taken at their current
  location plus their sliding term.

Slow (numpy calls per body and state), but it is the formalism the project exists for, it runs a
whole model, and the other backends are tested equal to it.
"""

from __future__ import annotations

import numpy as np

from mbkron.backends.base import Backend, InertialTerms
from mbkron.core import kron
from mbkron.dynamics import literal as dynamics_literal
from mbkron.kinematics import literal as kinematics_literal
from mbkron.kinematics.tree import KinematicsData, rigid_inverse
from mbkron.muscles.moment_arms import moment_arms_eq195

__all__ = ["KroneckerBackend"]


def _state_values(joint_values, index, nj: int, nq: int):
    """``(f, ∇f, H)`` of one state; zeros for derivatives not computed."""
    f, grad, hess = joint_values
    g = np.zeros((nj, nq)) if grad is None else np.broadcast_to(grad, f.shape + (nq,))[index]
    h = np.zeros((nj, nq, nq)) if hess is None else np.broadcast_to(hess, f.shape + (nq, nq))[index]
    return f[index], g, h


class KroneckerBackend(Backend):
    name = "kronecker"

    def _derivatives(self, model, joint_values, q):
        """``T`` and the Kronecker-layout ``D_i``, ``D'_i`` of every body at every state."""
        tree, batch = model.tree, q.shape[:-1]
        nj, nq = joint_values[0].shape[-1], q.shape[-1]
        T = np.empty(batch + (tree.nb, 4, 4))
        D = np.empty(batch + (tree.nb, 4 * nq, 4))
        D2 = np.empty(batch + (tree.nb, 4 * nq * nq, 4))
        for index in np.ndindex(batch):
            f, g, h = _state_values(joint_values, index, nj, nq)
            T[index] = kinematics_literal.transforms(tree, f)[1]
            Di, D2i = kinematics_literal.kron_derivatives_recursive(tree, f, g, h)
            D[index], D2[index] = np.stack(Di), np.stack(D2i)
        return T, D, D2

    def kinematics(self, model, joint_values, q, order):
        f, grad, hess = joint_values
        if order == 0:
            T = np.empty(q.shape[:-1] + (model.tree.nb, 4, 4))
            for index in np.ndindex(q.shape[:-1]):
                T[index] = kinematics_literal.transforms(model.tree, f[index])[1]
            return KinematicsData(q=q, f=f, grad=grad, hess=hess, T=T, joint_twists=None, twists=None, d2T=None)
        T, D, D2 = self._derivatives(model, joint_values, q)
        return self._data(model, joint_values, q, T, D, D2, order)

    @staticmethod
    def _data(model, joint_values, q, T, D, D2, order) -> KinematicsData:
        """Natural-layout kinematics from the Kronecker layout (``∂T_i/∂q_k = (∂B_i/∂q_k)ᵀ``)."""
        nq = q.shape[-1]
        inverse = rigid_inverse(T)
        dT = np.swapaxes(kron.from_kron(D, nq, 1), -1, -2)  # (..., nb, nq, 4, 4)
        d2T = np.swapaxes(kron.from_kron(D2, nq, 2), -1, -2) if order >= 2 else None
        twists = dT @ inverse[..., None, :, :]  # Ω_ik = (∂T_i/∂q_k) T_i⁻¹
        joint_twists = T @ model.tree.joint_matrices @ inverse  # S_j = T_j Â_j T_j⁻¹
        f, grad, hess = joint_values
        return KinematicsData(q=q, f=f, grad=grad, hess=hess, T=T, joint_twists=joint_twists, twists=twists,
                              d2T=d2T, derivative_transforms=dT)

    def inertial_terms(self, model, q, qd, joint_values, springs):
        T, D, D2 = self._derivatives(model, joint_values, q)
        batch, nq = q.shape[:-1], q.shape[-1]
        qd = np.broadcast_to(qd, q.shape)
        M, velocity, gravity = np.zeros(batch + (nq, nq)), np.zeros(batch + (nq,)), np.zeros(batch + (nq,))
        for index in np.ndindex(batch):
            for i, body in enumerate(model.body_records):
                J = model.pseudo_inertias[i]
                M[index] += dynamics_literal.body_mass_matrix(D[index + (i,)], J)  # Eq. 145
                velocity[index] += dynamics_literal.body_velocity_matrix(
                    D[index + (i,)], D2[index + (i,)], J, qd[index]) @ qd[index]  # Eq. 126
                gravity[index] += dynamics_literal.body_gravity_forces(D[index + (i,)], body.mass, body.com,
                                                                        model.gravity)  # Eq. 187
        return InertialTerms(M, velocity, gravity, None, self._data(model, joint_values, q, T, D, D2, 1))

    def moment_arms(self, model, kin):
        muscle_set = model.muscle_set
        geometry = muscle_set.geometry(kin)  # first: raises the ConfigurationError for a zero-length segment
        batch = kin.q.shape[:-1]
        R = np.empty(batch + (model.nq, muscle_set.size))
        grad = np.broadcast_to(kin.grad, kin.f.shape + kin.grad.shape[-1:])
        for index in np.ndindex(batch):
            state = KinematicsData(q=kin.q[index], f=kin.f[index], grad=grad[index], hess=None, T=kin.T[index],
                                   joint_twists=None, twists=None, d2T=None)
            located = muscle_set.located_paths(kin.q[index], kin.T[index])
            R[index] = moment_arms_eq195(model, located, kin.q[index], state)  # Eq. 195
        return R + muscle_set.sliding_moment_arms(geometry)
