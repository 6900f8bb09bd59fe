"""A kinematic tree's description: joint kinds, the joint transforms and joint matrices, the tree as arrays
(Eq. 38-39, 69-71).

Layout (see docs/conventions.md): body ``i``'s parent-to-child transform ``ᵖʳ⁽ⁱ⁾_iA_4 = P_i · Trans(d V_d) ·
Rot(V_θ, θ)`` (Eq. 38, with a constant offset ``P_i`` in front) and its joint matrix ``Â_i`` with
``∂(ᵖʳ⁽ⁱ⁾_iA_4)/∂f_i = ᵖʳ⁽ⁱ⁾_iA_4 · Â_i`` (Eq. 69-71). :class:`KinematicTree` holds them per body, in
parent-before-child order, and packs them for the kinematics kernel (:func:`mbkron.multibody.layout.tree_geometry`)
with numpy alone. The kinematics at states (Eq. 40-99) is :mod:`mbkron.algorithms.kinematics.tree`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody.layout import tree_geometry

__all__ = [
    "REVOLUTE",
    "PRISMATIC",
    "FIXED",
    "KinematicTree",
    "skew",
    "rotation_matrix",
    "joint_transform",
    "joint_matrix",
]

REVOLUTE, PRISMATIC, FIXED = "revolute", "prismatic", "fixed"


def skew(v: NDArray) -> NDArray:
    """Skew matrix ``ṽ`` with ``ṽ x = v × x``.

    Parameters
    ----------
    v : ndarray, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3, 3)
    """
    v = np.asarray(v)
    out = np.zeros(v.shape[:-1] + (3, 3), dtype=v.dtype)
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def rotation_matrix(axis: NDArray, angle: NDArray | float) -> NDArray:
    """Rotation by ``angle`` about the unit vector ``axis`` (Eq. 39).

    ``R = I₃ + Ṽ sin θ + 2 Ṽ² sin²(θ/2)``.

    Parameters
    ----------
    axis : ndarray, shape (3,)
        Unit vector.
    angle : float or ndarray, shape (...)

    Returns
    -------
    ndarray, shape (..., 3, 3)
    """
    K = skew(np.asarray(axis, dtype=float))
    angle = np.asarray(angle, dtype=float)[..., None, None]
    return np.eye(3) + K * np.sin(angle) + 2.0 * (K @ K) * np.sin(angle / 2.0) ** 2


def joint_transform(
    offset: NDArray, translation_axis: NDArray, d: float, rotation_axis: NDArray, theta: float
) -> NDArray:
    """Parent-to-child transform ``ᵖʳ⁽ⁱ⁾_iA_4 = P_i · Trans(d V_d) · Rot(V_θ, θ)`` (Eq. 38).

    Fig. 1 of the dissertation with a constant offset ``P_i`` in front (identity in the seed).

    Parameters
    ----------
    offset : ndarray, shape (4, 4)
    translation_axis, rotation_axis : ndarray, shape (3,)
        ``V_d`` and ``V_θ``, unit vectors in the offset frame.
    d, theta : float

    Returns
    -------
    ndarray, shape (4, 4)
    """
    local = np.eye(4)
    local[:3, :3] = rotation_matrix(rotation_axis, theta)
    local[:3, 3] = d * np.asarray(translation_axis, dtype=float)
    return np.asarray(offset, dtype=float) @ local


def joint_matrix(joint: str, rotation_axis: NDArray, translation_axis: NDArray, theta: float) -> NDArray:
    """The joint matrix ``_iÂ_4`` with ``∂(ᵖʳ⁽ⁱ⁾_iA_4)/∂f_i = ᵖʳ⁽ⁱ⁾_iA_4 · _iÂ_4`` (Eq. 69-71).

    Revolute: ``[[Ṽ_θ, 0], [0, 0]]``; prismatic: ``[[0, ⁱ_{pr(i)}A V_d], [0, 0]]`` where
    ``ⁱ_{pr(i)}A = Rot(V_θ, θ)ᵀ``; fixed: zero. (Eq. 70 prints ``Ṽ_θ`` for ``Âᵀ``; the
    transpose is a typo, see docs/theory.md.)

    Returns
    -------
    ndarray, shape (4, 4)
    """
    out = np.zeros((4, 4))
    if joint == REVOLUTE:
        out[:3, :3] = skew(np.asarray(rotation_axis, dtype=float))
    elif joint == PRISMATIC:
        out[:3, 3] = rotation_matrix(rotation_axis, theta).T @ np.asarray(translation_axis, dtype=float)
    elif joint != FIXED:
        raise ValueError(f"unknown joint type {joint!r}")
    return out


@dataclass(frozen=True, eq=False)
class KinematicTree:
    """The fixed, validated kinematic description of a tree, as arrays.

    Built once by the model builder. ``nb`` bodies in parent-before-child order.

    Attributes
    ----------
    parent : ndarray of int, shape (nb,)
        Index of each body's parent, ``-1`` for the ground.
    joint_types : tuple of str
    joint_of_body : ndarray of int, shape (nb,)
        Row of each body's joint variable in ``f``, ``-1`` for a fixed joint.
    local_coefficients : ndarray, shape (nb, 4, 4, 4)
        ``A_i = Σ_c basis_c · local_coefficients[i, c]`` with the basis
        ``(1, sin θ_i, 1 − cos θ_i, d_i)`` of the joint variable (Eq. 38-39 expanded).
    joint_matrices : ndarray, shape (nb, 4, 4)
        ``Â_i`` (Eq. 70-71).
    is_revolute, is_prismatic : ndarray of float, shape (nb,)
    nq : int
        Number of generalized coordinates.

    The tree keeps nothing filled on use: the dense ``nb × nb`` mask of the joint reactions' subtree sums,
    :meth:`ancestor_or_self`, is built by the call that needs it, and :meth:`per_body` gathers rows; loading a model
    costs memory and time linear in ``nb`` (the compiled kernels walk the parent links).
    """

    parent: NDArray[np.intp]
    joint_types: tuple[str, ...]
    joint_of_body: NDArray[np.intp]
    local_coefficients: NDArray[np.float64]
    joint_matrices: NDArray[np.float64]
    is_revolute: NDArray[np.float64]
    is_prismatic: NDArray[np.float64]
    nq: int
    kernel_arrays: tuple[NDArray[np.float64], NDArray[np.int64]] = field(init=False, repr=False)
    """The tree packed for the compiled kernels (:mod:`mbkron.algorithms.kinematics.kernels`), derived once with the tree:
    geometry rows (:func:`mbkron.multibody.layout.tree_geometry`) and ``(parent, joint row)`` per body, read-only."""

    @property
    def nb(self) -> int:
        return self.parent.size

    def ancestor_or_self(self) -> NDArray[np.float64]:
        """``[i, j] = 1`` when body ``j`` is ``i`` or one of its ancestors, shape (nb, nb): built at each call (the
        tree keeps nothing filled on use; the kernels walk the parent links instead)."""
        mask = np.eye(self.nb)
        for i, parent in enumerate(self.parent):
            if parent >= 0:
                mask[i] += mask[parent]
        return mask

    def ancestors_or_self_of(self, bodies: NDArray[np.intp]) -> NDArray[np.bool_]:
        """Mask of the bodies that are one of ``bodies`` or an ancestor of one, shape (nb,).

        Walks the parent links (each body is visited once), without the dense :attr:`ancestor_or_self`.
        """
        mask = np.zeros(self.nb, dtype=bool)
        for body in np.asarray(bodies, dtype=np.intp).ravel():
            while body >= 0 and not mask[body]:
                mask[body] = True
                body = self.parent[body]
        return mask

    def __post_init__(self):
        links = np.stack([self.parent, self.joint_of_body], axis=1).astype(np.int64)
        links.setflags(write=False)
        geometry = tree_geometry(self.local_coefficients, self.joint_matrices, self.is_revolute, self.is_prismatic)
        object.__setattr__(self, "kernel_arrays", (geometry, links))

    @classmethod
    def build(
        cls,
        parent: NDArray[np.intp],
        joint_types: tuple[str, ...],
        joint_of_body: NDArray[np.intp],
        offsets: NDArray,
        translation_axes: NDArray,
        d: NDArray,
        rotation_axes: NDArray,
        theta: NDArray,
        nq: int,
    ) -> KinematicTree:
        """Precompute the arrays from per-body joint data (already validated).

        Parameters
        ----------
        parent : ndarray of int, shape (nb,)
            Parent indices, each smaller than the body's own index, ``-1`` for the ground.
        joint_types : tuple of str
        joint_of_body : ndarray of int, shape (nb,)
        offsets : ndarray, shape (nb, 4, 4)
        translation_axes, rotation_axes : ndarray, shape (nb, 3)
            Unit vectors ``V_d``, ``V_θ``.
        d, theta : ndarray, shape (nb,)
            Constant joint parameters (ignored where they are the joint variable).
        nq : int
        """
        nb = parent.size
        coefficients = np.zeros((nb, 4, 4, 4))
        matrices = np.zeros((nb, 4, 4))
        for i, joint in enumerate(joint_types):
            P = offsets[i]
            if joint == REVOLUTE:
                K = skew(rotation_axes[i])
                fixed_part = np.eye(4)
                fixed_part[:3, 3] = d[i] * translation_axes[i]
                coefficients[i, 0] = P @ fixed_part
                coefficients[i, 1, :3, :3] = P[:3, :3] @ K
                coefficients[i, 2, :3, :3] = P[:3, :3] @ K @ K
            else:
                value = d[i] if joint == FIXED else 0.0
                coefficients[i, 0] = joint_transform(P, translation_axes[i], value, rotation_axes[i], theta[i])
                if joint == PRISMATIC:
                    coefficients[i, 3, :3, 3] = P[:3, :3] @ translation_axes[i]
            matrices[i] = joint_matrix(joint, rotation_axes[i], translation_axes[i], theta[i])
        arrays = dict(
            parent=parent,
            joint_of_body=joint_of_body,
            local_coefficients=coefficients,
            joint_matrices=matrices,
            is_revolute=np.array([j == REVOLUTE for j in joint_types], dtype=float),
            is_prismatic=np.array([j == PRISMATIC for j in joint_types], dtype=float),
        )
        for value in arrays.values():
            value.setflags(write=False)
        return cls(
            joint_types=tuple(joint_types),
            nq=nq,
            **arrays,
        )

    def per_body(self, per_joint: NDArray, trailing: int = 0) -> NDArray:
        """Map joint-variable quantities to bodies (zero for bodies on fixed joints).

        Parameters
        ----------
        per_joint : ndarray, shape (..., nj, *rest)
            The joint-variable axis followed by ``trailing`` further axes.
        trailing : int
            Number of axes after the joint-variable axis.

        Returns
        -------
        ndarray, shape (..., nb, *rest)
        """
        if np.all(self.joint_of_body >= 0):
            return per_joint  # no fixed joints: rows are bodies, in order
        axis = per_joint.ndim - 1 - trailing
        moving = np.flatnonzero(self.joint_of_body >= 0)
        out = np.zeros(per_joint.shape[:axis] + (self.nb,) + per_joint.shape[axis + 1:])
        out[(slice(None),) * axis + (moving,)] = np.take(per_joint, self.joint_of_body[moving], axis=axis)
        return out
