"""The ``numpy`` backend: the vectorised twist form of the kinematics and dynamics, batched over states.

Kinematics by :func:`mbkron.kinematics.tree.compute_kinematics` (Eq. 40, 75, 99 through world
twists), M, N q̇, G by the composite pseudo-inertias of :mod:`mbkron.dynamics.terms`, moment arms
by the ground-frame column form of :meth:`mbkron.muscles.paths.MuscleSet.moment_arms` (Eq. 195).
"""

from __future__ import annotations

from mbkron.backends.base import Backend, InertialTerms
from mbkron.dynamics import terms
from mbkron.kinematics.tree import compute_kinematics

__all__ = ["NumpyBackend"]


class NumpyBackend(Backend):
    name = "numpy"

    def kinematics(self, model, joint_values, q, order):
        return compute_kinematics(model.tree, joint_values, q, order)

    def inertial_terms(self, model, q, qd, joint_values, springs):
        f, grad, convective = joint_values
        kin = compute_kinematics(model.tree, (f, grad, None), q, 1)
        world = terms.world_pseudo_inertia(kin, model.pseudo_inertias)
        return InertialTerms(terms.mass_matrix(model.tree, kin, world),
                             terms.velocity_forces(model.tree, kin, world, qd, convective),
                             terms.gravity_forces(model.tree, kin, model.pseudo_inertias[:, :, 3], model.gravity),
                             None, kin)
