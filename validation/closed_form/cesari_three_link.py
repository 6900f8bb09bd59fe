"""Inverse dynamics of the three-link planar arm of Cesari et al. (2001) (seed 001).

Independent reference implementation of Eqs. 1 and 3–44 of seed 001 (appendix of Cesari,
Shiratori, Olivato & Duarte, Biol. Cybern. 84:217–226, as reproduced in Zatsiorsky, *Kinetics of
Human Motion*).  Nothing here imports :mod:`mbkron`.  Printed equations that are wrong are
implemented in corrected form; each correction is marked in the docstring and documented with its
proof in ``docs/seed-notes/closed-form-seeds.md``.

Model and conventions
---------------------
* Segments 1, 2, 3 = upper arm, forearm, hand; joints 1, 2, 3 = shoulder (fixed at the origin),
  elbow, wrist.  Sagittal plane, x horizontal, y up, gravity ``(0, -g)``.
* ``α_i`` are the joint-space (relative) angles: ``α_1`` of the upper arm from the horizontal,
  ``α_2``, ``α_3`` of each segment relative to the previous one (Eq. 1:
  ``θ_1 = α_1``, ``θ_2 = α_1 + α_2``, ``θ_3 = α_1 + α_2 + α_3`` with ``θ_i`` the segment angles).
* ``l_i`` segment length, ``d_i`` distance of the centre of mass from the proximal joint,
  ``m_i`` mass, ``I_i`` moment of inertia about the centre of mass.
* The spring force ``F_S`` acts on the hand along ``-x`` (Eq. 15: ``m_3 ẍ_3 = F_x3 - F_S``) at the
  point at distance ``d_3 + d_S`` from the wrist on the hand axis, i.e. ``d_S`` beyond the hand's
  centre of mass: this is where Eqs. 17 and 42–44 put it (the nomenclature's "distance from the
  wrist joint" disagrees with both; see the seed notes).
* ``T_i`` is the joint moment at joint ``i`` exerted on segment ``i`` by segment ``i - 1``
  (counter-clockwise positive); it is the generalized force conjugate to ``α_i``.
  ``F_i = (F_xi, F_yi)`` is the joint reaction force exerted on segment ``i`` by segment ``i - 1``.

Array layout: angle arrays have shape ``(..., 3)``; ``spring_force`` broadcasts against ``...``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CesariArm",
    "NewtonEulerSolution",
    "com_accelerations",
    "com_positions",
    "external_torques",
    "gravity_torques",
    "inertia_matrix",
    "internal_angles",
    "joint_moments",
    "joint_space_angles",
    "newton_euler",
    "velocity_torques",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class CesariArm:
    """Parameters of the three-link arm (notation of seed 001).

    Attributes
    ----------
    l1, l2 : float
        Lengths of the upper arm and forearm (the hand length does not enter the equations).
    d1, d2, d3 : float
        Distances from the proximal joint to the centre of mass of each segment.
    m1, m2, m3 : float
        Segment masses.
    I1, I2, I3 : float
        Moments of inertia about the segment centres of mass.
    d_s : float
        Distance of the spring attachment beyond the hand's centre of mass (see module notes).
    g : float
        Gravitational acceleration.
    """

    l1: float
    l2: float
    d1: float
    d2: float
    d3: float
    m1: float
    m2: float
    m3: float
    I1: float
    I2: float
    I3: float
    d_s: float = 0.0
    g: float = 9.81


EXAMPLE_ARM = CesariArm(l1=0.31, l2=0.27, d1=0.14, d2=0.12, d3=0.06, m1=2.1, m2=1.2, m3=0.45,
                        I1=0.021, I2=0.008, I3=0.0009, d_s=0.04)
"""The arm the cross-checks use (tests and the validation report), with spring force ``EXAMPLE_SPRING``."""
EXAMPLE_SPRING = 17.5
"""N."""


@dataclass(frozen=True)
class NewtonEulerSolution:
    """Joint moments and joint reaction forces from Eqs. 15–23 of seed 001.

    Attributes
    ----------
    moments : ndarray, shape (..., 3)
        ``(T_1, T_2, T_3)``.
    reaction_forces : ndarray, shape (..., 3, 2)
        ``[..., i - 1, :] = (F_xi, F_yi)``, force on segment ``i`` from segment ``i - 1``.
    """

    moments: FloatArray
    reaction_forces: FloatArray


def _split(x: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    x = np.asarray(x, dtype=float)
    if x.shape[-1:] != (3,):
        raise ValueError(f"expected last axis of length 3, got shape {x.shape}")
    return x[..., 0], x[..., 1], x[..., 2]


def joint_space_angles(theta: ArrayLike) -> FloatArray:
    """Joint-space angles ``α`` from segment angles ``θ``, Eq. 1 of seed 001.

    ``α_1 = θ_1``, ``α_2 = θ_2 - α_1``, ``α_3 = θ_3 - α_2 - α_1``.
    """
    t1, t2, t3 = _split(theta)
    a1 = t1
    a2 = t2 - a1
    return np.stack([a1, a2, t3 - a2 - a1], axis=-1)


def internal_angles(alpha: ArrayLike) -> FloatArray:
    """Internal joint angles ``β``, Eq. 1 of seed 001: ``β_1 = α_1``, ``β_i = π - α_i`` (i = 2, 3)."""
    a1, a2, a3 = _split(alpha)
    return np.stack([a1, np.pi - a2, np.pi - a3], axis=-1)


def com_positions(arm: CesariArm, alpha: ArrayLike) -> FloatArray:
    """Centre-of-mass positions ``(x_i, y_i)``, Eqs. 3, 5, 7, 9, 11, 13 of seed 001.

    Returns
    -------
    ndarray, shape (..., 3, 2)
    """
    a1, a2, a3 = _split(alpha)
    s1, s12, s123 = a1, a1 + a2, a1 + a2 + a3
    x1, y1 = arm.d1 * np.cos(s1), arm.d1 * np.sin(s1)  # Eqs. 3, 5
    x2 = arm.l1 * np.cos(s1) + arm.d2 * np.cos(s12)  # Eq. 7
    y2 = arm.l1 * np.sin(s1) + arm.d2 * np.sin(s12)  # Eq. 9
    x3 = arm.l1 * np.cos(s1) + arm.l2 * np.cos(s12) + arm.d3 * np.cos(s123)  # Eq. 11
    y3 = arm.l1 * np.sin(s1) + arm.l2 * np.sin(s12) + arm.d3 * np.sin(s123)  # Eq. 13
    return np.stack([np.stack([x1, y1], -1), np.stack([x2, y2], -1), np.stack([x3, y3], -1)], -2)


def com_accelerations(arm: CesariArm, alpha: ArrayLike, alpha_dot: ArrayLike,
                      alpha_ddot: ArrayLike) -> FloatArray:
    """Centre-of-mass accelerations ``(ẍ_i, ÿ_i)``, Eqs. 4, 6, 8, 10, 12, 14 of seed 001.

    Corrected: Eq. 10 (the ``α̇_1²`` bracket is ``l_1 sin α_1 + d_2 sin(α_1 + α_2)`` and the
    ``(2 α̇_1 α̇_2 + α̇_2²)`` term has a minus sign) and Eq. 14 (the ``2 α̇_1 α̇_2`` bracket has
    ``d_3 sin(α_1 + α_2 + α_3)``, not ``cos``).

    Returns
    -------
    ndarray, shape (..., 3, 2)
    """
    a1, a2, a3 = _split(alpha)
    w1, w2, w3 = _split(alpha_dot)
    b1, b2, b3 = _split(alpha_ddot)
    l1, l2, d1, d2, d3 = arm.l1, arm.l2, arm.d1, arm.d2, arm.d3
    c1, c12, c123 = np.cos(a1), np.cos(a1 + a2), np.cos(a1 + a2 + a3)
    s1, s12, s123 = np.sin(a1), np.sin(a1 + a2), np.sin(a1 + a2 + a3)
    xdd1 = -d1 * (b1 * s1 + w1**2 * c1)  # Eq. 4
    ydd1 = d1 * (b1 * c1 - w1**2 * s1)  # Eq. 6
    xdd2 = (-(l1 * s1 + d2 * s12) * b1 - d2 * s12 * b2  # Eq. 8
            - (l1 * c1 + d2 * c12) * w1**2 - d2 * c12 * (2 * w1 * w2 + w2**2))
    ydd2 = ((l1 * c1 + d2 * c12) * b1 + d2 * c12 * b2  # Eq. 10, corrected
            - (l1 * s1 + d2 * s12) * w1**2 - d2 * s12 * (2 * w1 * w2 + w2**2))
    xdd3 = (-(l1 * s1 + l2 * s12 + d3 * s123) * b1  # Eq. 12
            - (l2 * s12 + d3 * s123) * b2 - d3 * s123 * b3
            - (l1 * c1 + l2 * c12 + d3 * c123) * w1**2
            - (l2 * c12 + d3 * c123) * w2**2 - d3 * c123 * w3**2
            - (l2 * c12 + d3 * c123) * 2 * w1 * w2
            - d3 * c123 * (2 * w1 * w3 + 2 * w2 * w3))
    ydd3 = ((l1 * c1 + l2 * c12 + d3 * c123) * b1  # Eq. 14, corrected
            + (l2 * c12 + d3 * c123) * b2 + d3 * c123 * b3
            - (l1 * s1 + l2 * s12 + d3 * s123) * w1**2
            - (l2 * s12 + d3 * s123) * w2**2 - d3 * s123 * w3**2
            - (l2 * s12 + d3 * s123) * 2 * w1 * w2
            - d3 * s123 * (2 * w1 * w3 + 2 * w2 * w3))
    return np.stack([np.stack([xdd1, ydd1], -1), np.stack([xdd2, ydd2], -1),
                     np.stack([xdd3, ydd3], -1)], -2)


def newton_euler(arm: CesariArm, alpha: ArrayLike, alpha_dot: ArrayLike, alpha_ddot: ArrayLike,
                 spring_force: ArrayLike = 0.0) -> NewtonEulerSolution:
    """Joint moments and reaction forces solving Eqs. 15–23 of seed 001 top-down.

    Hand (Eqs. 15–17), forearm (Eqs. 18–20), upper arm (Eqs. 21–23), with the accelerations of
    :func:`com_accelerations`.  Corrected: Eqs. 18, 19 and 22 are printed with ``F_r``/``F_v`` for
    ``F_x``/``F_y`` (text-extraction slips) and Eq. 23 with ``F_y1 d_1 sin α_1`` where the moment
    of the shoulder reaction force needs ``F_x1 d_1 sin α_1``.

    Parameters
    ----------
    arm : CesariArm
    alpha, alpha_dot, alpha_ddot : array_like, shape (..., 3)
        Joint-space angles and their time derivatives.
    spring_force : array_like
        ``F_S`` (acting along ``-x`` on the hand).

    Returns
    -------
    NewtonEulerSolution
    """
    a1, a2, a3 = _split(alpha)
    b1, b2, b3 = _split(alpha_ddot)
    f_s = np.asarray(spring_force, dtype=float)
    acc = com_accelerations(arm, alpha, alpha_dot, alpha_ddot)
    (xdd1, ydd1), (xdd2, ydd2), (xdd3, ydd3) = (np.moveaxis(acc[..., i, :], -1, 0)
                                                for i in range(3))
    s1, s12, s123 = np.sin(a1), np.sin(a1 + a2), np.sin(a1 + a2 + a3)
    c1, c12, c123 = np.cos(a1), np.cos(a1 + a2), np.cos(a1 + a2 + a3)
    g, l1, l2, d1, d2, d3 = arm.g, arm.l1, arm.l2, arm.d1, arm.d2, arm.d3
    # hand
    fx3 = arm.m3 * xdd3 + f_s  # Eq. 15
    fy3 = arm.m3 * ydd3 + arm.m3 * g  # Eq. 16
    t3 = (arm.I3 * b3 - fx3 * d3 * s123 + fy3 * d3 * c123 - f_s * arm.d_s * s123  # Eq. 17
          + arm.I3 * b1 + arm.I3 * b2)
    # forearm
    fx2 = arm.m2 * xdd2 + fx3  # Eq. 18
    fy2 = arm.m2 * ydd2 + fy3 + arm.m2 * g  # Eq. 19
    t2 = (arm.I2 * b2 + t3 - fx3 * (l2 - d2) * s12 + fy3 * (l2 - d2) * c12  # Eq. 20
          - fx2 * d2 * s12 + fy2 * d2 * c12 + arm.I2 * b1)
    # upper arm
    fx1 = arm.m1 * xdd1 + fx2  # Eq. 21
    fy1 = arm.m1 * ydd1 + fy2 + arm.m1 * g  # Eq. 22
    t1 = (arm.I1 * b1 + t2 - fx2 * (l1 - d1) * s1 + fy2 * (l1 - d1) * c1  # Eq. 23, corrected
          - fx1 * d1 * s1 + fy1 * d1 * c1)
    moments = np.stack(np.broadcast_arrays(t1, t2, t3), axis=-1)
    forces = np.stack([np.stack(np.broadcast_arrays(fx, fy), axis=-1)
                       for fx, fy in ((fx1, fy1), (fx2, fy2), (fx3, fy3))], axis=-2)
    return NewtonEulerSolution(moments, forces)


def inertia_matrix(arm: CesariArm, alpha: ArrayLike) -> FloatArray:
    """Inertia matrix ``M(α)``, Eqs. 27–35 of seed 001.

    Corrected: Eq. 31 is printed with ``m_3 (l_2² + d_3² + l_2 d_3 cos α_3)``; the correct
    ``M_22`` has ``2 l_2 d_3 cos α_3``.  Eqs. 30, 33, 34 repeat Eqs. 28, 29, 32 (symmetry).

    Returns
    -------
    ndarray, shape (..., 3, 3)
    """
    _, a2, a3 = _split(alpha)
    l1, l2, d1, d2, d3 = arm.l1, arm.l2, arm.d1, arm.d2, arm.d3
    m1, m2, m3, i1, i2, i3 = arm.m1, arm.m2, arm.m3, arm.I1, arm.I2, arm.I3
    c2, c3, c23 = np.cos(a2), np.cos(a3), np.cos(a2 + a3)
    m11 = (m1 * d1**2 + i1 + m2 * (l1**2 + d2**2 + 2 * l1 * d2 * c2) + i2  # Eq. 27
           + m3 * (l1**2 + l2**2 + d3**2 + 2 * l1 * l2 * c2 + 2 * l1 * d3 * c23
                   + 2 * l2 * d3 * c3) + i3)
    m12 = (m2 * (d2**2 + l1 * d2 * c2) + i2  # Eq. 28
           + m3 * (l2**2 + d3**2 + l1 * l2 * c2 + l1 * d3 * c23 + 2 * l2 * d3 * c3) + i3)
    m13 = m3 * (d3**2 + l1 * d3 * c23 + l2 * d3 * c3) + i3  # Eq. 29
    m21 = (m2 * (d2**2 + l1 * d2 * c2) + i2  # Eq. 30
           + m3 * (l2**2 + d3**2 + l1 * l2 * c2 + 2 * l2 * d3 * c3 + l1 * d3 * c23) + i3)
    m22 = m2 * d2**2 + i2 + m3 * (l2**2 + d3**2 + 2 * l2 * d3 * c3) + i3  # Eq. 31, corrected
    m23 = m3 * (d3**2 + l2 * d3 * c3) + i3  # Eq. 32
    m31 = m3 * (d3**2 + l1 * d3 * c23 + l2 * d3 * c3) + i3  # Eq. 33
    m32 = m3 * (d3**2 + l2 * d3 * c3) + i3  # Eq. 34
    m33 = np.full_like(c2, m3 * d3**2 + i3)  # Eq. 35
    rows = [np.stack([m11, m12, m13], -1), np.stack([m21, m22, m23], -1),
            np.stack([m31, m32, m33], -1)]
    return np.stack(rows, axis=-2)


def velocity_torques(arm: CesariArm, alpha: ArrayLike, alpha_dot: ArrayLike) -> FloatArray:
    """Centrifugal/Coriolis torques ``v(α, α̇)``, Eqs. 36–38 of seed 001.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    _, a2, a3 = _split(alpha)
    w1, w2, w3 = _split(alpha_dot)
    l1, l2, d2, d3, m2, m3 = arm.l1, arm.l2, arm.d2, arm.d3, arm.m2, arm.m3
    s2, s3, s23 = np.sin(a2), np.sin(a3), np.sin(a2 + a3)
    v1 = (-((m2 * l1 * d2 + m3 * l1 * l2) * s2 + m3 * l1 * d3 * s23) * (2 * w1 * w2 + w2**2)
          - (m3 * l1 * d3 * s23 + m3 * l2 * d3 * s3) * (2 * w1 * w3 + 2 * w2 * w3 + w3**2))
    v2 = (((m3 * l1 * l2 + m2 * d2 * l1) * s2 + m3 * d3 * l1 * s23) * w1**2
          - m3 * d3 * l2 * s3 * (2 * w1 * w3 + 2 * w2 * w3 + w3**2))
    v3 = ((m3 * l1 * d3 * s23 + m3 * l2 * d3 * s3) * w1**2
          + m3 * l2 * d3 * s3 * (2 * w1 * w2 + w2**2))
    return np.stack([v1, v2, v3], axis=-1)


def gravity_torques(arm: CesariArm, alpha: ArrayLike) -> FloatArray:
    """Gravity torques ``G(α)``, Eqs. 39–41 of seed 001.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    a1, a2, a3 = _split(alpha)
    c1, c12, c123 = np.cos(a1), np.cos(a1 + a2), np.cos(a1 + a2 + a3)
    g, l1, l2, d1, d2, d3 = arm.g, arm.l1, arm.l2, arm.d1, arm.d2, arm.d3
    g1 = (arm.m1 * g * d1 * c1 + arm.m2 * g * (l1 * c1 + d2 * c12)
          + arm.m3 * g * (l1 * c1 + l2 * c12 + d3 * c123))
    g2 = arm.m2 * g * d2 * c12 + arm.m3 * g * (l2 * c12 + d3 * c123)
    g3 = arm.m3 * g * d3 * c123
    return np.stack([g1, g2, g3], axis=-1)


def external_torques(arm: CesariArm, alpha: ArrayLike, spring_force: ArrayLike) -> FloatArray:
    """Torques of the spring force ``T_ext(α)``, Eqs. 42–44 of seed 001.

    ``T_ext = -Jᵀ (-F_S, 0)`` with ``J`` the Jacobian of the spring attachment point at distance
    ``d_3 + d_S`` from the wrist.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    a1, a2, a3 = _split(alpha)
    f_s = np.asarray(spring_force, dtype=float)
    s1, s12, s123 = np.sin(a1), np.sin(a1 + a2), np.sin(a1 + a2 + a3)
    reach = arm.d3 + arm.d_s
    t1 = -f_s * arm.l1 * s1 - f_s * arm.l2 * s12 - f_s * reach * s123
    t2 = -f_s * arm.l2 * s12 - f_s * reach * s123
    t3 = -f_s * reach * s123
    return np.stack(np.broadcast_arrays(t1, t2, t3), axis=-1)


def joint_moments(arm: CesariArm, alpha: ArrayLike, alpha_dot: ArrayLike, alpha_ddot: ArrayLike,
                  spring_force: ArrayLike = 0.0) -> FloatArray:
    """Joint moments ``T = M(α) α̈ + v(α, α̇) + G(α) + T_ext(α)``, Eq. 24 of seed 001.

    Returns
    -------
    ndarray, shape (..., 3)
        ``(T_1, T_2, T_3)`` of shoulder, elbow and wrist.
    """
    alpha_ddot = np.asarray(alpha_ddot, dtype=float)
    inertial = np.einsum("...ij,...j->...i", inertia_matrix(arm, alpha), alpha_ddot)
    return (inertial + velocity_torques(arm, alpha, alpha_dot) + gravity_torques(arm, alpha)
            + external_torques(arm, alpha, spring_force))
