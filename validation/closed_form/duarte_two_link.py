"""One- and two-link planar models of Duarte's notebook (seed 003).

Independent reference implementation of "Multibody dynamics of simple biomechanical models"
(M. Duarte): the planar inverted pendulum, the planar double inverted pendulum in relative
(joint-space) angles ``q = (α_1, α_2)`` written as ``τ = M(q) q̈ + C(q, q̇) + G(q) + E(q)``, and
Dempster's anthropometry exactly as the notebook computes it.  Nothing here imports
:mod:`mbkron`.

Conventions (seed 003)
----------------------
* x horizontal, y up, gravity ``(0, -g)``; the proximal joint is fixed at the origin.
* ``α_1`` is the angle of segment 1 from the horizontal, ``α_2`` the angle of segment 2 relative to
  segment 1 (``θ_1 = α_1``, ``θ_2 = α_1 + α_2`` are the segment angles).
* ``L_i`` length, ``d_i`` distance of the centre of mass from the proximal joint, ``m_i`` mass,
  ``I_i`` moment of inertia about the centre of mass.
* The external force ``F_e = (F_ex, F_ey)`` acts at the distal end of the last segment.
* ``τ_i`` (``T_i``) is the net joint moment at joint ``i`` on segment ``i`` (counter-clockwise
  positive), the generalized force conjugate to ``α_i``.  ``E`` is written on the same side as
  ``M q̈``: ``E = -Jᵀ F_e`` with ``J`` the Jacobian of the force's point of application, so
  ``τ`` is the joint moment *required* for the motion against gravity and ``F_e``.
* ``F_ri`` is the joint reaction force on segment ``i`` from segment ``i - 1`` (the ground for
  ``i = 1``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "NewtonEulerSolution",
    "TwoLinkParameters",
    "coriolis_centripetal",
    "dempster_parameters",
    "external_torques",
    "gravity_torques",
    "inertia_matrix",
    "joint_torques",
    "newton_euler",
    "one_link_torque",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class TwoLinkParameters:
    """Parameters of the planar two-link arm (notation of seed 003).

    Attributes
    ----------
    L1, L2 : float
        Segment lengths.
    d1, d2 : float
        Distances from the proximal joint to the segment centres of mass.
    m1, m2 : float
        Segment masses.
    I1, I2 : float
        Moments of inertia about the segment centres of mass.
    g : float
        Gravitational acceleration (the notebook's ``gn = 9.81``).
    """

    L1: float
    L2: float
    d1: float
    d2: float
    m1: float
    m2: float
    I1: float
    I2: float
    g: float = 9.81


@dataclass(frozen=True)
class NewtonEulerSolution:
    """Joint moments and reaction forces of the two-link arm (cell In [12] of seed 003).

    Attributes
    ----------
    torques : ndarray, shape (..., 2)
        ``(T_1, T_2)``.
    reaction_forces : ndarray, shape (..., 2, 2)
        ``[..., i - 1, :] = (F_rix, F_riy)``.
    """

    torques: FloatArray
    reaction_forces: FloatArray


def dempster_parameters(height: float = 1.70, mass: float = 70.0) -> TwoLinkParameters:
    """Upper arm and forearm + hand of Dempster's model, cell In [17] of seed 003.

    Exactly as the notebook: ``L1 = 0.188 h``, ``L2 = 0.253 h``, ``d1 = 0.436 L1``,
    ``d2 = 0.682 L2``, ``m1 = 0.0280 M``, ``m2 = 0.0220 M``, radii of gyration about the centre of
    mass ``0.322 L1`` and ``0.468 L2`` (``I = m (rg L)²``), ``g = 9.81``.

    Parameters
    ----------
    height : float
        Body height in metres (notebook: 1.70).
    mass : float
        Body mass in kilograms (notebook: 70).

    Returns
    -------
    TwoLinkParameters
    """
    l1, l2 = 0.188 * height, 0.253 * height
    m1, m2 = 0.0280 * mass, 0.0220 * mass
    rg1, rg2 = 0.322, 0.468
    return TwoLinkParameters(L1=l1, L2=l2, d1=0.436 * l1, d2=0.682 * l2, m1=m1, m2=m2,
                             I1=m1 * (rg1 * l1) ** 2, I2=m2 * (rg2 * l2) ** 2, g=9.81)


def _split(x: ArrayLike) -> tuple[FloatArray, FloatArray]:
    x = np.asarray(x, dtype=float)
    if x.shape[-1:] != (2,):
        raise ValueError(f"expected last axis of length 2, got shape {x.shape}")
    return x[..., 0], x[..., 1]


def _force(external_force: ArrayLike) -> tuple[FloatArray, FloatArray]:
    f = np.asarray(external_force, dtype=float)
    return f[..., 0], f[..., 1]


def one_link_torque(L: float, d: float, m: float, I: float, alpha: ArrayLike,
                    alpha_ddot: ArrayLike, external_force: ArrayLike = (0.0, 0.0),
                    g: float = 9.81) -> FloatArray:
    """Joint moment of the planar inverted pendulum (one link) of seed 003.

    ``T = I_o α̈ + m g d cos α + L F_ex sin α - L F_ey cos α`` with ``I_o = I + m d²``
    (inverse dynamics about the joint; the external force acts at distance ``L``).

    Returns
    -------
    ndarray, shape (...)
    """
    alpha = np.asarray(alpha, dtype=float)
    f_x, f_y = _force(external_force)
    return ((I + m * d**2) * np.asarray(alpha_ddot, dtype=float) + m * g * d * np.cos(alpha)
            + L * f_x * np.sin(alpha) - L * f_y * np.cos(alpha))


def inertia_matrix(p: TwoLinkParameters, q: ArrayLike) -> FloatArray:
    """``M(q)`` of the two-link arm (cell In [15] of seed 003).

    ``M_11 = I_1 + I_2 + L_1² m_2 + 2 L_1 d_2 m_2 cos q_2 + d_1² m_1 + d_2² m_2``,
    ``M_12 = M_21 = I_2 + L_1 d_2 m_2 cos q_2 + d_2² m_2``, ``M_22 = I_2 + d_2² m_2``.

    Returns
    -------
    ndarray, shape (..., 2, 2)
    """
    _, q2 = _split(q)
    c2 = np.cos(q2)
    m11 = p.I1 + p.I2 + p.L1**2 * p.m2 + 2 * p.L1 * p.d2 * p.m2 * c2 + p.d1**2 * p.m1 \
        + p.d2**2 * p.m2
    m12 = p.I2 + p.L1 * p.d2 * p.m2 * c2 + p.d2**2 * p.m2
    m22 = np.full_like(c2, p.I2 + p.d2**2 * p.m2)
    return np.stack([np.stack([m11, m12], -1), np.stack([m12, m22], -1)], -2)


def coriolis_centripetal(p: TwoLinkParameters, q: ArrayLike, q_dot: ArrayLike) -> FloatArray:
    """``C(q, q̇)`` of the two-link arm (cell In [15] of seed 003).

    ``C_1 = -L_1 d_2 m_2 (2 q̇_1 + q̇_2) sin(q_2) q̇_2``, ``C_2 = L_1 d_2 m_2 sin(q_2) q̇_1²``.

    Returns
    -------
    ndarray, shape (..., 2)
    """
    _, q2 = _split(q)
    w1, w2 = _split(q_dot)
    k = p.L1 * p.d2 * p.m2 * np.sin(q2)
    return np.stack([-k * (2 * w1 + w2) * w2, k * w1**2], axis=-1)


def gravity_torques(p: TwoLinkParameters, q: ArrayLike) -> FloatArray:
    """``G(q)`` of the two-link arm (cell In [15] of seed 003).

    ``G_1 = g (L_1 m_2 cos q_1 + d_1 m_1 cos q_1 + d_2 m_2 cos(q_1 + q_2))``,
    ``G_2 = d_2 g m_2 cos(q_1 + q_2)``.

    Returns
    -------
    ndarray, shape (..., 2)
    """
    q1, q2 = _split(q)
    c1, c12 = np.cos(q1), np.cos(q1 + q2)
    return np.stack([p.g * (p.L1 * p.m2 * c1 + p.d1 * p.m1 * c1 + p.d2 * p.m2 * c12),
                     p.d2 * p.g * p.m2 * c12], axis=-1)


def external_torques(p: TwoLinkParameters, q: ArrayLike, external_force: ArrayLike) -> FloatArray:
    """``E(q)`` of the two-link arm (cell In [15] of seed 003).

    ``E_1 = F_ex (L_1 sin q_1 + L_2 sin(q_1 + q_2)) - F_ey (L_1 cos q_1 + L_2 cos(q_1 + q_2))``,
    ``E_2 = L_2 (F_ex sin(q_1 + q_2) - F_ey cos(q_1 + q_2))``.

    Returns
    -------
    ndarray, shape (..., 2)
    """
    q1, q2 = _split(q)
    f_x, f_y = _force(external_force)
    s1, c1, s12, c12 = np.sin(q1), np.cos(q1), np.sin(q1 + q2), np.cos(q1 + q2)
    e1 = f_x * (p.L1 * s1 + p.L2 * s12) - f_y * (p.L1 * c1 + p.L2 * c12)
    e2 = p.L2 * (f_x * s12 - f_y * c12)
    return np.stack(np.broadcast_arrays(e1, e2), axis=-1)


def joint_torques(p: TwoLinkParameters, q: ArrayLike, q_dot: ArrayLike, q_ddot: ArrayLike,
                  external_force: ArrayLike = (0.0, 0.0)) -> FloatArray:
    """Inverse dynamics ``τ = M(q) q̈ + C(q, q̇) + G(q) + E(q)`` (seed 003).

    Returns
    -------
    ndarray, shape (..., 2)
    """
    q_ddot = np.asarray(q_ddot, dtype=float)
    return (np.einsum("...ij,...j->...i", inertia_matrix(p, q), q_ddot)
            + coriolis_centripetal(p, q, q_dot) + gravity_torques(p, q)
            + external_torques(p, q, external_force))


def newton_euler(p: TwoLinkParameters, q: ArrayLike, q_dot: ArrayLike, q_ddot: ArrayLike,
                 external_force: ArrayLike = (0.0, 0.0)) -> NewtonEulerSolution:
    """Joint moments and reaction forces from the free-body diagrams (cells In [9]–[12], seed 003).

    Link 2: ``F_r2 = m_2 a_2 - F_e + (0, m_2 g)``,
    ``T_2 = I_2 (α̈_1 + α̈_2) - d_2 F_r2x sin θ_2 + d_2 F_r2y cos θ_2
    + (L_2 - d_2) F_ex sin θ_2 - (L_2 - d_2) F_ey cos θ_2``;
    link 1: ``F_r1 = m_1 a_1 + F_r2 + (0, m_1 g)``,
    ``T_1 = I_1 α̈_1 + T_2 - d_1 F_r1x sin α_1 + d_1 F_r1y cos α_1 - (L_1 - d_1) F_r2x sin α_1
    + (L_1 - d_1) F_r2y cos α_1``.  This follows the notebook's code; the typeset Newton–Euler
    moment equation of link 2 above it has a sign slip on the ``F_ey`` term (see the seed notes).

    Returns
    -------
    NewtonEulerSolution
    """
    a1, a2 = _split(q)
    w1, w2 = _split(q_dot)
    b1, b2 = _split(q_ddot)
    f_x, f_y = _force(external_force)
    t2 = a1 + a2
    s1, c1, s12, c12 = np.sin(a1), np.cos(a1), np.sin(t2), np.cos(t2)
    # centre-of-mass accelerations (cells In [9] and In [10])
    x1dd = -p.d1 * s1 * b1 - p.d1 * c1 * w1**2
    y1dd = -p.d1 * s1 * w1**2 + p.d1 * c1 * b1
    x2dd = -p.L1 * s1 * b1 - p.L1 * c1 * w1**2 - p.d2 * (w1 + w2) ** 2 * c12 \
        - p.d2 * (b1 + b2) * s12
    y2dd = -p.L1 * s1 * w1**2 + p.L1 * c1 * b1 - p.d2 * (w1 + w2) ** 2 * s12 \
        + p.d2 * (b1 + b2) * c12
    fr2x = p.m2 * x2dd - f_x
    fr2y = p.m2 * y2dd + p.m2 * p.g - f_y
    tau2 = (p.I2 * (b1 + b2) - p.d2 * fr2x * s12 + p.d2 * fr2y * c12
            + (p.L2 - p.d2) * f_x * s12 - (p.L2 - p.d2) * f_y * c12)
    fr1x = p.m1 * x1dd + fr2x
    fr1y = p.m1 * y1dd + fr2y + p.m1 * p.g
    tau1 = (p.I1 * b1 + tau2 - p.d1 * fr1x * s1 + p.d1 * fr1y * c1
            - (p.L1 - p.d1) * fr2x * s1 + (p.L1 - p.d1) * fr2y * c1)
    torques = np.stack(np.broadcast_arrays(tau1, tau2), axis=-1)
    forces = np.stack([np.stack(np.broadcast_arrays(fr1x, fr1y), -1),
                       np.stack(np.broadcast_arrays(fr2x, fr2y), -1)], -2)
    return NewtonEulerSolution(torques, forces)
