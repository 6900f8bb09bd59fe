"""The ``compiled`` backend: the same equations as the ``numpy`` backend in numba kernels, state by state.

Kinematics by :func:`mbkron.compiled.kinematics.kinematics` (through
:func:`mbkron.kinematics.tree.compute_kinematics`); M, N q̇, G together with the
spring-dampers' forces by :func:`mbkron.compiled.dynamics.equations_of_motion`; lengths and moment
arms by :func:`mbkron.compiled.paths.path_lengths_and_moment_arms`. Needs numba (the ``fast`` extra).
"""

from __future__ import annotations

from mbkron.backends.base import Backend, InertialTerms
from mbkron.compiled import dynamics as compiled_dynamics
from mbkron.compiled.forward import solve_positive_definite
from mbkron.kinematics.tree import compute_kinematics

__all__ = ["CompiledBackend"]


class CompiledBackend(Backend):
    name = "compiled"
    compiled_kernels = True

    def kinematics(self, model, joint_values, q, order):
        return compute_kinematics(model.tree, joint_values, q, order, compiled=True)

    def inertial_terms(self, model, q, qd, joint_values, springs):
        M, velocity, gravity, spring_forces, regular = compiled_dynamics.equations_of_motion(
            *model.tree.kernel_arrays, model.kernel_inertia, model.gravity, model.spring_rows(springs),
            *joint_values, qd)
        return InertialTerms(M, velocity, gravity, spring_forces if regular else None, None)

    def muscle_lengths(self, model, kin):
        return model.muscle_set.compiled_lengths_and_moment_arms(kin, 0)[0]

    def moment_arms(self, model, kin):
        return model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)[1]

    def solve_positive_definite(self, M, b):
        x, ok = solve_positive_definite(M, b)
        return x if ok else None
