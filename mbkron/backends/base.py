"""The contract every backend fulfils: the per-state work of a model, given its joint variables.

A backend turns ``(model, q, q̇, f, ∇f, H)`` into kinematics and the muscle paths' lengths and moment
arms, and ``(model, q, q̇, f, ∇f, c)`` with the convective terms ``c_j = q̇ᵀ H_j q̇`` into the terms of
Eq. 198 (the dynamics never needs ``H`` itself). Everything above it (applied loads, forward and inverse dynamics,
reactions, simulation) is written once, on :class:`~mbkron.kinematics.tree.KinematicsData`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular

from mbkron.kinematics.tree import KinematicsData

__all__ = ["Backend", "InertialTerms"]


class InertialTerms(NamedTuple):
    """``(M, N q̇, G, spring_forces, kin)`` at a batch of states.

    ``spring_forces`` are the generalized forces of the spring-dampers the backend was asked for
    (None when it did not compute them: the caller applies them as loads); ``kin`` is first-order
    kinematics when the backend computed it on the way (else None).
    """

    mass_matrix: NDArray[np.float64]
    velocity_forces: NDArray[np.float64]
    gravity_forces: NDArray[np.float64]
    spring_forces: NDArray[np.float64] | None = None
    kin: KinematicsData | None = None


class Backend(ABC):
    """One way of evaluating a model. Backends are stateless and shared by every model that uses them.

    Attributes
    ----------
    name : str
    compiled_kernels : bool
        Whether the compiled kernels run (line loads, tabulated moving points, projection recursions).
    """

    name: str = ""
    compiled_kernels: bool = False

    @abstractmethod
    def kinematics(self, model, joint_values, q: NDArray[np.float64], order: int) -> KinematicsData:
        """Transforms ``⁰_iA_4`` and their derivatives D_i, D'_i up to ``order`` (Eq. 40, 75, 99)."""

    @abstractmethod
    def inertial_terms(self, model, q: NDArray[np.float64], qd: NDArray[np.float64], joint_values,
                       springs: tuple) -> InertialTerms:
        """``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) and, where the backend can, the spring-dampers'
        generalized forces (Eq. 46, 161).

        ``joint_values`` is ``(f, ∇f, c)``: the convective terms ``c`` (..., nj) in place of the Hessians
        (:meth:`mbkron.jointvars.explicit.JointVariables.evaluate_convective`)."""

    def solve_positive_definite(self, M: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """``M⁻¹ b`` for stacks ``M`` (..., n, n), ``b`` (..., n) by one Cholesky factorisation ``M = L Lᵀ``
        and two triangular solves; None if some ``M`` is not positive definite (the factorisation fails)."""
        try:
            L = np.linalg.cholesky(M)
        except np.linalg.LinAlgError:
            return None
        if L.ndim == 2:
            return solve_triangular(L, solve_triangular(L, b, lower=True), lower=True, trans="T")
        y = np.linalg.solve(L, b[..., None])  # numpy has no batched triangular solve
        return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]

    def muscle_lengths(self, model, kin: KinematicsData) -> NDArray[np.float64]:
        """Path lengths ``L(q)`` of ``model.muscle_set``, shape (..., n_mt)."""
        return model.muscle_set.lengths(kin)

    def moment_arms(self, model, kin: KinematicsData) -> NDArray[np.float64]:
        """``R = −∂L/∂q`` (Eq. 192-195) of ``model.muscle_set``, shape (..., nq, n_mt); ``kin`` of order ≥ 1."""
        return model.muscle_set.moment_arms(kin)
