"""Tree kinematics: A_4, B_i, D_i, D'_i and point positions (Eq. 38-99).

Layout (see docs/conventions.md): for body ``i`` the world transform ``T_i = ⁰_iA_4`` (Eq. 40)
maps body coordinates to ground coordinates; the seed's ``B_i`` is ``T_iᵀ``. Derivatives use the
natural tensor layout

    dT[..., i, k]     = ∂T_i/∂q_k             (D_i of Eq. 45, transposed blockwise)
    d2T[..., i, k, l] = ∂²T_i/∂q_k∂q_l        (D'_i of Eq. 58, transposed blockwise)

and ``mbkron.reference.kron.to_kron(np.swapaxes(dT[i], -1, -2))`` is the seed's ``D_i`` literally.

The kinematics is evaluated by the compiled kernel :func:`mbkron.algorithms.kinematics.kernels.kinematics`
(:func:`compute_kinematics`), through the closed form Eq. 75-76 factored through the *world twist* of
each joint. With the joint matrix ``Â_j`` (Eq. 70-71) put in the ground frame,
``S_j = T_j Â_j T_j⁻¹``, the seed's ``W_ji = T_j Â_j ʲT_i`` (Eq. 76) is ``S_j T_i``, hence

    ∂T_i/∂q_k = Ω_ik T_i,   Ω_ik = Σ_{j ⪯ i} S_j ∇f_jk                            (Eq. 75)

and, since ``∂S_j/∂q_l = [Ω_jl, S_j]`` (commutator),

    ∂²T_i/∂q_k∂q_l = (Σ_{j ⪯ i} [Ω_jl, S_j] ∇f_jk + S_j H_jkl) T_i + Ω_ik Ω_il T_i  (Eq. 99)

(``j ⪯ i``: j is i or an ancestor of i). The tree's description as arrays, the joint transforms and joint
matrices are :mod:`mbkron.multibody.tree`; this module keeps the positions of body points computed from
:class:`KinematicsData` (Eq. 41); the points' velocities and accelerations and the bodies' angular velocities are read
from the bodies' twists (:mod:`mbkron.algorithms.dynamics.points`, Eq. 44, 57, 177). The recursions (Eq. 77, 89) and the literal
closed forms (Eq. 94-99) are in :mod:`mbkron.reference.transforms`; the tests hold the kernel to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.multibody.tree import KinematicTree

__all__ = [
    "KinematicsData",
    "local_transforms",
    "compute_kinematics",
    "rigid_inverse",
    "point_positions",
]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
compiled_kinematics = LazyModule("mbkron.algorithms.kinematics.kernels")


@dataclass(frozen=True, eq=False, init=False)
class KinematicsData:
    """Per-state kinematic quantities (the evaluation workspace of a model at ``q``).

    Attributes
    ----------
    q : ndarray, shape (..., nq)
    f, grad, hess : ndarray
        Joint variables, shapes (..., nj), (..., nj, nq), (..., nj, nq, nq); ``grad``/``hess``
        are None below the computed order.
    T : ndarray, shape (..., nb, 4, 4)
        World transforms ``⁰_iA_4`` (Eq. 40); ``B_i = T_iᵀ``.
    joint_twists : ndarray, shape (..., nb, 4, 4) or None
        ``S_j = T_j Â_j T_j⁻¹``: the unit twist of each body's joint in the ground frame (zero for
        fixed joints), so that ``W_ji = S_j T_i`` (Eq. 76).
    twists : ndarray, shape (..., nb, nq, 4, 4) or None
        ``Ω_ik = (∂T_i/∂q_k) T_i⁻¹ = Σ_{j⪯i} S_j ∇f_jk`` (Eq. 75): world-frame twist matrices, rotational block
        skew. Formed on first use from ``joint_twists``, ``grad`` and the tree's ``links``
        (:func:`mbkron.algorithms.kinematics.kernels.twists_of`) where not given: the engine's point Jacobians, moment arms
        and dynamics use the joint twists (:mod:`mbkron.algorithms.kinematics.points_kernels`).
    d2T : ndarray, shape (..., nb, nq, nq, 4, 4) or None
        ``∂²T_i/∂q_k∂q_l`` (D'_i, Eq. 58 and 99).
    links : ndarray of int64, shape (nb, 2), or None
        The tree's ``(parent, joint row)`` per body (:attr:`KinematicTree.kernel_arrays`), for the kernels that
        walk the joints' ground twists.
    """

    q: NDArray[np.float64]
    f: NDArray[np.float64]
    grad: NDArray[np.float64] | None
    hess: NDArray[np.float64] | None
    T: NDArray[np.float64]
    joint_twists: NDArray[np.float64] | None
    d2T: NDArray[np.float64] | None
    derivative_transforms: NDArray[np.float64] | None = field(default=None, repr=False)
    """``dT`` when it was computed together with the rest (the reference computes it)."""
    links: NDArray[np.int64] | None = field(default=None, repr=False)

    def __init__(self, q, f, grad, hess, T, joint_twists, twists=None, d2T=None, derivative_transforms=None,
                 links=None):
        for name, value in (("q", q), ("f", f), ("grad", grad), ("hess", hess), ("T", T),
                            ("joint_twists", joint_twists), ("d2T", d2T),
                            ("derivative_transforms", derivative_transforms), ("links", links)):
            object.__setattr__(self, name, value)
        if twists is not None:  # given (the reference): kept as the first use's value
            self.__dict__["twists"] = twists

    @cached_property
    def twists(self) -> NDArray[np.float64] | None:
        """See the class docstring; None below order 1."""
        if self.joint_twists is None or self.grad is None or self.links is None:
            return None
        return compiled_kinematics.twists_of(self.links, self.joint_twists, self.grad)

    @cached_property
    def dT(self) -> NDArray[np.float64] | None:
        """``∂T_i/∂q_k = Ω_ik T_i`` (D_i, Eq. 45 and 75), shape (..., nb, nq, 4, 4); computed on first use."""
        if self.derivative_transforms is not None:
            return self.derivative_transforms
        if self.twists is None:
            return None
        shape = self.twists.shape
        return (self.twists.reshape(shape[:-4] + (shape[-4], shape[-3] * 4, 4)) @ self.T).reshape(shape)


def local_transforms(tree: KinematicTree, f: NDArray) -> NDArray:
    """Parent-to-child transforms ``ᵖʳ⁽ⁱ⁾_iA_4`` of every body (Eq. 38-39, vectorised).

    Parameters
    ----------
    tree : KinematicTree
    f : ndarray, shape (..., nj)
        Joint variables.

    Returns
    -------
    ndarray, shape (..., nb, 4, 4)
    """
    fb = tree.per_body(f)
    angle = fb * tree.is_revolute
    basis = np.stack(
        [np.ones_like(fb), np.sin(angle), 1.0 - np.cos(angle), fb * tree.is_prismatic], axis=-1
    )
    return np.einsum("...bc,bcxy->...bxy", basis, tree.local_coefficients)


def rigid_inverse(T: NDArray) -> NDArray:
    """Inverse of rigid transforms ``[[R, p], [0, 1]]``: ``[[Rᵀ, −Rᵀp], [0, 1]]``."""
    out = np.zeros_like(T)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -(Rt @ T[..., :3, 3:4])[..., 0]
    out[..., 3, 3] = 1.0
    return out


def compute_kinematics(tree: KinematicTree, joint_values, q: NDArray, order: int = 2) -> KinematicsData:
    """Transforms and their first and second derivatives for all bodies at ``q``, by the compiled kernel
    :func:`mbkron.algorithms.kinematics.kernels.kinematics` (Eq. 40, 75 and 99 through the joints' ground twists
    ``S_j = T_j Â_j T_j⁻¹``; see the module docstring; the world twists ``Ω_ik`` are formed on first use,
    :attr:`KinematicsData.twists`), state by state over any leading batch axes of ``q``.

    Parameters
    ----------
    tree : KinematicTree
    joint_values : tuple (f, grad, hess)
        Joint variables at ``q`` as returned by ``JointVariables.evaluate(q, order)`` (real).
    q : ndarray, shape (..., nq)
    order : {0, 1, 2}
        Highest derivative of the transforms computed (the joint values may carry more).

    Returns
    -------
    KinematicsData
    """
    f, grad, hess = joint_values
    T, S, d2T = compiled_kinematics.kinematics(*tree.kernel_arrays, f, grad, hess, tree.nq, order)
    return KinematicsData(q, f, grad, hess, T, S, None, d2T, None, tree.kernel_arrays[1])  # (positional: quicker)


def point_positions(kin: KinematicsData, body: int, points: NDArray) -> NDArray:
    """Ground-frame positions of body-fixed points (Eq. 41).

    Parameters
    ----------
    kin : KinematicsData
    body : int
        Body index.
    points : ndarray, shape (..., 3)
        Body coordinates; broadcast against the batch shape of ``kin``.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    T = kin.T[..., body, :, :]
    return (T[..., :3, :3] @ np.asarray(points, dtype=float)[..., None])[..., 0] + T[..., :3, 3]
