"""The ``compiled`` backend: the same equations as the ``numpy`` backend in numba kernels, state by state.

Kinematics by :func:`mbkron.compiled.kinematics.kinematics`; M, N q̇, G together with the
spring-dampers' forces by :func:`mbkron.compiled.dynamics.equations_of_motion`; lengths and moment
arms by :func:`mbkron.compiled.paths.path_lengths_and_moment_arms`. Needs numba (the ``fast`` extra).
"""

from __future__ import annotations

from mbkron.backends.base import Backend, InertialTerms
from mbkron.compiled import dynamics as compiled_dynamics, kinematics as compiled_kinematics
from mbkron.kinematics.tree import KinematicsData

__all__ = ["CompiledBackend"]


class CompiledBackend(Backend):
    name = "compiled"
    compiled_kernels = True

    def kinematics(self, model, joint_values, q, order):
        f, grad, hess = joint_values
        T, S, twists, dT, d2T = compiled_kinematics.kinematics(*model.tree.kernel_arrays, f, grad, hess,
                                                               model.tree.nq, order)
        return KinematicsData(q=q, f=f, grad=grad, hess=hess, T=T, joint_twists=S, twists=twists, d2T=d2T,
                              derivative_transforms=dT)

    def inertial_terms(self, model, q, qd, joint_values, springs):
        M, velocity, gravity, spring_forces, regular = compiled_dynamics.equations_of_motion(
            *model.tree.kernel_arrays, model.kernel_inertia, model.gravity, model.spring_rows(springs),
            *joint_values, qd)
        return InertialTerms(M, velocity, gravity, spring_forces if regular else None, None)

    def muscle_lengths(self, model, kin):
        return model.muscle_set.compiled_lengths_and_moment_arms(kin, 0)[0]

    def moment_arms(self, model, kin):
        return model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)[1]
