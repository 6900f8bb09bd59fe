"""The per-state work of a model by the compiled kernels: kinematics, ``M``, ``N q̇``, ``G`` with the
spring-dampers, path lengths and moment arms, and the Cholesky solve of forward dynamics.

Kinematics by :func:`mbkron.compiled.kinematics.kinematics` (through
:func:`mbkron.kinematics.tree.compute_kinematics`, Eq. 40, 75, 99); ``M``, ``N q̇``, ``G`` (Eq. 145,
126, 187) together with the spring-dampers' forces (Eq. 46, 161) by
:func:`mbkron.compiled.dynamics.equations_of_motion`; lengths and moment arms (Eq. 192-195) by
:meth:`mbkron.muscles.paths.MuscleSet.compiled_lengths_and_moment_arms`. Everything above it (applied
loads, forward and inverse dynamics, reactions, simulation) is written once, on
:class:`~mbkron.kinematics.tree.KinematicsData`. The tests hold every function here to
:mod:`mbkron.reference` (tests/test_reference.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.kinematics.tree import KinematicsData, compute_kinematics

__all__ = ["InertialTerms", "inertial_terms", "kinematics", "moment_arms", "muscle_lengths",
           "solve_positive_definite"]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
compiled_dynamics = LazyModule("mbkron.compiled.dynamics")
_compiled_forward = LazyModule("mbkron.compiled.forward")


class InertialTerms(NamedTuple):
    """``(M, N q̇, G, spring_forces)`` at a batch of states.

    ``spring_forces`` are the generalized forces of the spring-dampers asked for, or None where the kernel
    did not compute them (a singular state of a spring's direction: the caller applies them as loads).
    """

    mass_matrix: NDArray[np.float64]
    velocity_forces: NDArray[np.float64]
    gravity_forces: NDArray[np.float64]
    spring_forces: NDArray[np.float64] | None = None


def kinematics(model, joint_values, q: NDArray[np.float64], order: int) -> KinematicsData:
    """Transforms ``⁰_iA_4`` and their derivatives D_i, D'_i up to ``order`` (Eq. 40, 75, 99)."""
    return compute_kinematics(model.tree, joint_values, q, order)


def inertial_terms(model, q: NDArray[np.float64], qd: NDArray[np.float64], joint_values,
                   springs: tuple) -> InertialTerms:
    """``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) and the spring-dampers' generalized forces (Eq. 46, 161).

    ``joint_values`` is ``(f, ∇f, c)``: the convective terms ``c`` (..., nj) in place of the Hessians
    (:meth:`mbkron.jointvars.explicit.JointVariables.evaluate_convective`)."""
    M, velocity, gravity, spring_forces, regular = compiled_dynamics.equations_of_motion(
        *model.tree.kernel_arrays, model.kernel_inertia, model.gravity, model.spring_rows(springs),
        *joint_values, qd)
    return InertialTerms(M, velocity, gravity, spring_forces if regular else None)


def muscle_lengths(model, kin: KinematicsData) -> NDArray[np.float64]:
    """Path lengths ``L(q)`` of ``model.muscle_set``, shape (..., n_mt)."""
    return model.muscle_set.compiled_lengths_and_moment_arms(kin, 0)[0]


def moment_arms(model, kin: KinematicsData) -> NDArray[np.float64]:
    """``R = −∂L/∂q`` (Eq. 192-195) of ``model.muscle_set``, shape (..., nq, n_mt); ``kin`` of order ≥ 1."""
    return lengths_and_moment_arms(model, kin)[1]


def lengths_and_moment_arms(model, kin: KinematicsData) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``L`` and ``R`` of ``model.muscle_set`` from one evaluation of the paths; ``kin`` of order ≥ 1."""
    return model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)


def solve_positive_definite(M: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """``M⁻¹ b`` for stacks ``M`` (..., n, n), ``b`` (..., n) by one Cholesky factorisation ``M = L Lᵀ``
    (:func:`mbkron.compiled.forward.solve_positive_definite`); None if some ``M`` is not positive definite
    (the factorisation fails)."""
    x, ok = _compiled_forward.solve_positive_definite(M, b)
    return x if ok else None
