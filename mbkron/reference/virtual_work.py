"""The dissertation's dynamic terms written literally in the Kronecker layout, for cross-checking.

:mod:`mbkron.algorithms.dynamics.terms` evaluates M, N q̇ and G by composite pseudo-inertias and twists. This module
writes Eq. 145, the velocity term derived from the second part of Eq. 126, and Eq. 187 one body at
a time from ``D_i`` and ``D'_i`` (:mod:`mbkron.reference.transforms`), so that the tests can prove the
routes equal.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.reference import kron

__all__ = ["body_mass_matrix", "body_velocity_matrix", "body_gravity_forces"]


def _C1(nq: int) -> NDArray:
    """``C_1 = vec(I_4) ⊗ I_nq`` (Eq. 142)."""
    return np.kron(kron.vec(np.eye(4))[:, None], np.eye(nq))


def body_mass_matrix(D: NDArray, J: NDArray) -> NDArray:
    """Eq. 145: ``M_i = C_1ᵀ (J_i ⊗ U_{nq,4}ᵀ)(D_i D_iᵀ ⊗ I_4)(I_4 ⊗ U_{nq,4}) C_1``.

    Parameters
    ----------
    D : ndarray, shape (4nq, 4)
        ``D_i = ∂B_i/∂q`` in the Kronecker layout.
    J : ndarray, shape (4, 4)
        Pseudo-inertia ``J_i`` (Eq. 131).

    Returns
    -------
    ndarray, shape (nq, nq)
    """
    nq = D.shape[0] // 4
    U = kron.commutation_matrix(nq, 4)
    C1 = _C1(nq)
    return C1.T @ np.kron(J, U.T) @ np.kron(D @ D.T, np.eye(4)) @ np.kron(np.eye(4), U) @ C1


def body_velocity_matrix(D: NDArray, D2: NDArray, J: NDArray, qd: NDArray) -> NDArray:
    """``N_i(q, q̇)`` from the second part of Eq. 126 (Eq. 147 as printed repeats Eq. 145).

    The second part, ``tr[D'_iᵀ (J̄_i ⊗ (q̇^[2] δqᵀ)) D_i]`` integrated over the body, is handled like
    the first part (Eq. 132–145) with ``D_i`` → ``D'_i`` on the acceleration side and
    ``q̈`` → ``q̇ ⊗ q̇ = (I_nq ⊗ q̇) q̇``:

        N_i = C_1ᵀ (J_i ⊗ U_{nq,4}ᵀ)(D_i D'_iᵀ ⊗ I_4)(I_4 ⊗ U_{nq²,4})(vec(I_4) ⊗ I_nq ⊗ q̇),

    so that ``δqᵀ N_i q̇`` is the velocity part of the inertial virtual work (docs/theory.md).

    Parameters
    ----------
    D : ndarray, shape (4nq, 4)
    D2 : ndarray, shape (4nq², 4)
        ``D'_i = ∂²B_i/∂q²`` in the Kronecker layout.
    J : ndarray, shape (4, 4)
    qd : ndarray, shape (nq,)

    Returns
    -------
    ndarray, shape (nq, nq)
    """
    nq = D.shape[0] // 4
    C2 = np.kron(kron.vec(np.eye(4))[:, None], np.kron(np.eye(nq), np.asarray(qd, float)[:, None]))
    return (
        _C1(nq).T
        @ np.kron(J, kron.commutation_matrix(nq, 4).T)
        @ np.kron(D @ D2.T, np.eye(4))
        @ np.kron(np.eye(4), kron.commutation_matrix(nq * nq, 4))
        @ C2
    )


def body_gravity_forces(D: NDArray, mass: float, com: NDArray, gravity: NDArray) -> NDArray:
    """Eq. 187: ``G_i = m_i ({ⁱr_cmᵀ 1} ⊗ I_nq) D_i {g; 0}``.

    Returns
    -------
    ndarray, shape (nq,)
    """
    nq = D.shape[0] // 4
    com_h = np.append(np.asarray(com, float), 1.0)[None, :]
    return mass * np.kron(com_h, np.eye(nq)) @ D @ np.append(np.asarray(gravity, float), 0.0)
