"""Closed-form dynamics of a planar n-link musculoskeletal chain (seed 000).

Independent reference implementation of the closed-form joint torques and joint reaction
forces of seed 000 ("closed-form dynamic equations of a planar musculoskeletal chain with n
links and single- and multi-joint muscles").  Nothing here imports :mod:`mbkron`.

Model (Fig. 1 and Nomenclature of seed 000)
-------------------------------------------
* Links ``i = 1..n``; the fixed base is link 0 with ``θ_0 = θ̇_0 = θ̈_0 = 0``.  Joint ``J_i``
  articulates link ``i - 1`` with link ``i``; ``J_1`` is fixed at the origin.
* ``J_i J_{i+1} = l_i û_i`` with ``û_i = (cos θ_i, sin θ_i)``: ``θ_i`` is the *absolute* angle of
  link ``i`` from the horizontal X axis, counter-clockwise positive; ``ŵ_i = k̂ × û_i``.
* The centre of mass ``C_i`` lies at distance ``l_Ci`` from ``J_i`` at angle ``ε_Ci`` from ``û_i``
  (counter-clockwise); ``I_Ci`` is the moment of inertia about ``C_i`` and
  ``I_Ji = I_Ci + m_i l_Ci²`` (Huygens–Steiner).
* Gravity is ``g⃗ = (0, -g)`` (Y up).
* A contact external resistance of magnitude ``R`` acts on link ``i`` at the point at distance
  ``l_R`` from ``J_i`` and angle ``ε_R`` from ``û_i``; its direction makes the angle ``γ_R`` with
  ``û_i`` (so it points along ``(cos(θ_i + γ_R), sin(θ_i + γ_R))``).  Several contacts per link are
  allowed; their contributions add (Discussion of seed 000).
* A muscle is a linear force actuator of tension ``f`` between a point ``P`` on link ``j1`` and a
  point ``P'`` on link ``j2 > j1``; it exerts ``F⃗_{j2 j1} = f (P - P') / |P - P'|`` on link ``j2``
  and ``F⃗_{j1 j2} = -F⃗_{j2 j1}`` on link ``j1``.  It spans joints ``j1 + 1 .. j2``.

Returned quantities and sign conventions
----------------------------------------
* ``τ_k`` (``k = 1..n``, array index ``k - 1``) is the joint torque at joint ``k``: the moment
  about ``J_k`` of the muscle forces exerted on the links distal to joint ``k`` by the muscles that
  span joint ``k`` (Eq. 22).  The right-hand sides of Eqs. 13, 23 and 24 give the value of ``τ_k``
  *required* by the motion, the weights and the contact forces (inverse dynamics).  For an ideal
  torque actuator that acts with ``+τ_k`` on link ``k`` and ``-τ_k`` on link ``k - 1`` this is the
  generalized force conjugate to the *relative* angle ``α_k`` (``α_1 = θ_1``,
  ``α_k = θ_k - θ_{k-1}``), i.e. ``τ = M(α) α̈ + h(α, α̇) - Q_gravity - Q_contact`` of a
  Lagrangian model in relative coordinates.  The generalized force conjugate to the *absolute*
  angle ``θ_k`` is ``τ_k - τ_{k+1}`` (``τ_{n+1} = 0``), see :func:`absolute_generalized_forces`.
* ``φ⃗_{k,k+1}`` (``k = 0..n-1``, array index ``k``, i.e. joint ``k + 1``) is the joint reaction
  force exerted *on link k by link k + 1*, in ground coordinates (Eqs. 8–11).  Muscle forces are
  not part of it (they are applied at their attachment points), and pure couples (ideal torque
  actuators) do not change it.

Array layout: the state arrays ``theta``, ``theta_dot``, ``theta_ddot`` have shape ``(..., n)``;
leading batch axes broadcast through every function.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ContactForce",
    "Muscle",
    "PlanarChain",
    "ReactionBreakdown",
    "TorqueBreakdown",
    "absolute_from_relative",
    "absolute_generalized_forces",
    "appendix_a_three_link_torques",
    "appendix_a_two_link_torques",
    "base_external_force",
    "com_accelerations",
    "com_moment_term",
    "com_positions",
    "distal_inertial_force",
    "distal_joint_torque",
    "distal_moment_term",
    "joint_positions",
    "joint_reaction_breakdown",
    "joint_reaction_forces",
    "joint_reaction_forces_proximal",
    "joint_torque_breakdown",
    "joint_torques",
    "joint_torques_proximal",
    "muscle_forces",
    "muscle_joint_torques",
    "muscle_reaction_forces",
    "muscle_torque_contributions",
    "polar_point",
    "proximal_inertial_force",
    "proximal_moment_term",
    "relative_from_absolute",
    "torque_differences",
    "torque_differences_proximal",
]

FloatArray = NDArray[np.float64]


# ----------------------------------------------------------------------------------------------
# Parameter containers
# ----------------------------------------------------------------------------------------------


def polar_point(distance: float, angle: float) -> FloatArray:
    """Local coordinates of a point given by its distance from ``J_j`` and angle from ``û_j``.

    Parameters
    ----------
    distance : float
        Distance from the proximal joint ``J_j`` of the link (``l_R``, ``l_C`` in seed 000).
    angle : float
        Counter-clockwise angle from ``û_j`` (``ε_R``, ``ε_C`` in seed 000), radians.

    Returns
    -------
    ndarray, shape (2,)
        ``(distance cos(angle), distance sin(angle))``, components along ``û_j`` and ``ŵ_j``.
    """
    return np.array([distance * np.cos(angle), distance * np.sin(angle)])


@dataclass(frozen=True)
class ContactForce:
    """A contact external resistance ``R⃗_i`` on link ``i`` (Fig. 1 of seed 000).

    Attributes
    ----------
    link : int
        Link ``i`` the force acts on, ``1 <= i <= n``.
    magnitude : float
        ``R_i`` (signed: a negative value reverses the direction), newtons.
    l_R : float
        Distance ``l_Ri`` from ``J_i`` of the application point ``P_Ri``.
    eps_R : float
        Angle ``ε_Ri`` between ``J_i P_Ri`` and ``û_i`` (counter-clockwise).
    gamma_R : float
        Angle ``γ_Ri`` between ``R⃗_i`` and ``û_i`` (counter-clockwise).
    """

    link: int
    magnitude: float
    l_R: float
    eps_R: float
    gamma_R: float


@dataclass(frozen=True, eq=False)
class Muscle:
    """A single- or multi-joint muscle modelled as a linear force actuator (seed 000).

    Attributes
    ----------
    proximal_link : int
        Link ``j1`` (``0`` is the fixed base).
    proximal_point : array_like, shape (2,)
        Attachment ``P_{j1 j2}`` in the local coordinates of link ``j1``: components along
        ``û_{j1}`` and ``ŵ_{j1}`` measured from ``J_{j1}``.  For the base (``j1 = 0``) the ground
        coordinates of the point relative to ``J_1`` (the base has ``θ_0 = 0``).  Use
        :func:`polar_point` for a distance/angle description.
    distal_link : int
        Link ``j2``, ``j1 < j2 <= n``.
    distal_point : array_like, shape (2,)
        Attachment ``P_{j2 j1}`` in the local coordinates of link ``j2`` relative to ``J_{j2}``.
    force : float
        Tension ``f`` (positive pulls the two attachments together), newtons.
    """

    proximal_link: int
    proximal_point: FloatArray
    distal_link: int
    distal_point: FloatArray
    force: float

    def __post_init__(self) -> None:
        for name in ("proximal_point", "distal_point"):
            point = np.asarray(getattr(self, name), dtype=float)
            if point.shape != (2,):
                raise ValueError(f"Muscle.{name} must have shape (2,), got {point.shape}")
            object.__setattr__(self, name, point)


@dataclass(frozen=True, eq=False)
class PlanarChain:
    """Parameters of the planar n-link chain of seed 000.

    Attributes
    ----------
    l, l_C, eps_C, m, I_C : array_like, shape (n,)
        Per link ``i = 1..n`` (index ``i - 1``): length ``l_i = |J_i J_{i+1}|``, distance
        ``l_Ci = |J_i C_i|``, angle ``ε_Ci`` of ``J_i C_i`` from ``û_i``, mass ``m_i`` and moment of
        inertia ``I_Ci`` about the centre of mass.
    contacts : tuple of ContactForce
        Contact external resistances acting on the links (none by default).
    muscles : tuple of Muscle
        Muscles acting on the chain (none by default).
    g : float
        Magnitude of the gravitational acceleration; gravity is ``(0, -g)``.
    """

    l: FloatArray
    l_C: FloatArray
    eps_C: FloatArray
    m: FloatArray
    I_C: FloatArray
    contacts: tuple[ContactForce, ...] = ()
    muscles: tuple[Muscle, ...] = ()
    g: float = 9.81
    I_J: FloatArray = field(init=False, repr=False)
    distal_mass: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("l", "l_C", "eps_C", "m", "I_C"):
            arrays[name] = np.atleast_1d(np.asarray(getattr(self, name), dtype=float))
            object.__setattr__(self, name, arrays[name])
        n = arrays["l"].shape[0]
        problems = [f"`{k}` has shape {v.shape}, expected ({n},)" for k, v in arrays.items()
                    if v.shape != (n,)]
        problems += [f"contact on link {c.link} outside 1..{n}" for c in self.contacts
                     if not 1 <= c.link <= n]
        problems += [f"muscle links ({u.proximal_link}, {u.distal_link}) violate 0 <= j1 < j2 <= {n}"
                     for u in self.muscles if not 0 <= u.proximal_link < u.distal_link <= n]
        if problems:
            raise ValueError("invalid PlanarChain: " + "; ".join(problems))
        object.__setattr__(self, "contacts", tuple(self.contacts))
        object.__setattr__(self, "muscles", tuple(self.muscles))
        object.__setattr__(self, "I_J", self.I_C + self.m * self.l_C**2)
        # distal_mass[k-1] = sum_{j=k+1}^{n} m_j, the mass distal to link k.
        tail = np.cumsum(self.m[::-1])[::-1]
        object.__setattr__(self, "distal_mass", np.append(tail[1:], 0.0))

    @property
    def n(self) -> int:
        """Number of moving links ``n``."""
        return int(self.l.shape[0])


# ----------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------


def _cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """``(a × b) · k̂`` of planar vectors stored in the last axis."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _unit(angle: FloatArray) -> FloatArray:
    return np.stack([np.cos(angle), np.sin(angle)], axis=-1)


def _state(chain: PlanarChain, *arrays: ArrayLike) -> tuple[FloatArray, ...]:
    out = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    if out[0].shape[-1:] != (chain.n,):
        raise ValueError(f"state arrays must have last axis of length n = {chain.n}")
    return tuple(np.array(a) for a in out)


def _gravity(chain: PlanarChain) -> FloatArray:
    return np.array([0.0, -chain.g])


def _contact_vector(contact: ContactForce, theta: FloatArray) -> FloatArray:
    return contact.magnitude * _unit(theta[..., contact.link - 1] + contact.gamma_R)


def _own_load(chain: PlanarChain, theta: FloatArray, k: int) -> FloatArray:
    """``m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)`` (first bracket of Eq. 23)."""
    i = k - 1
    value = chain.m[i] * chain.g * chain.l_C[i] * np.cos(theta[..., i] + chain.eps_C[i])
    for c in chain.contacts:
        if c.link == k:
            value = value - c.magnitude * c.l_R * np.sin(c.gamma_R - c.eps_R)
    return value


def _transmitted_load(chain: PlanarChain, theta: FloatArray, k: int, i: int) -> FloatArray:
    """``m_i g l_k cos θ_k - R_i l_k sin(γ_Ri + θ_i - θ_k)`` (second bracket of Eq. 23), i >= 1."""
    th_k = theta[..., k - 1]
    value = chain.m[i - 1] * chain.g * chain.l[k - 1] * np.cos(th_k)
    for c in chain.contacts:
        if c.link == i:
            value = value - c.magnitude * chain.l[k - 1] * np.sin(
                c.gamma_R + theta[..., i - 1] - th_k)
    return value


def _base_load(chain: PlanarChain, theta: FloatArray, k: int, base_force: FloatArray) -> FloatArray:
    """``m_0 g l_k cos θ_k - R_0 l_k sin(γ_R0 + θ_0 - θ_k)`` = ``-(J_k J_{k+1} × (m_0 g⃗ + R⃗_0)) · k̂``."""
    return -chain.l[k - 1] * _cross(_unit(theta[..., k - 1]), base_force)


def _resolve_base_force(chain: PlanarChain, theta: FloatArray, theta_dot: FloatArray,
                        theta_ddot: FloatArray, base_force: ArrayLike | None) -> FloatArray:
    if base_force is None:
        return base_external_force(chain, theta, theta_dot, theta_ddot)
    return np.broadcast_to(np.asarray(base_force, dtype=float), theta.shape[:-1] + (2,))


# ----------------------------------------------------------------------------------------------
# Coordinates
# ----------------------------------------------------------------------------------------------


def relative_from_absolute(theta: ArrayLike) -> FloatArray:
    """Relative (joint) angles ``α_1 = θ_1``, ``α_k = θ_k - θ_{k-1}``.

    Linear, so it also maps absolute angular velocities/accelerations to relative ones.
    """
    theta = np.asarray(theta, dtype=float)
    return np.diff(theta, axis=-1, prepend=0.0)


def absolute_from_relative(alpha: ArrayLike) -> FloatArray:
    """Absolute link angles ``θ_k = α_1 + … + α_k`` (inverse of :func:`relative_from_absolute`)."""
    return np.cumsum(np.asarray(alpha, dtype=float), axis=-1)


def absolute_generalized_forces(tau: ArrayLike) -> FloatArray:
    """Generalized forces conjugate to the absolute angles θ from joint torques τ.

    Since ``α = D θ`` with ``D`` the difference matrix, ``Q_θ = Dᵀ Q_α``: a joint torque ``τ_k``
    acts with ``+τ_k`` on link ``k`` and ``-τ_k`` on link ``k - 1``, so
    ``Q_θ_k = τ_k - τ_{k+1}`` with ``τ_{n+1} = 0`` (the left-hand side of Eqs. 20–21 of seed 000).

    Parameters
    ----------
    tau : array_like, shape (..., n)
        Joint torques ``τ_1..τ_n`` (generalized forces conjugate to α).

    Returns
    -------
    ndarray, shape (..., n)
    """
    tau = np.asarray(tau, dtype=float)
    return tau - np.concatenate([tau[..., 1:], np.zeros_like(tau[..., :1])], axis=-1)


# ----------------------------------------------------------------------------------------------
# Kinematics
# ----------------------------------------------------------------------------------------------


def joint_positions(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Positions of ``J_1 .. J_{n+1}`` (``J_1`` at the origin), shape ``(..., n + 1, 2)``."""
    (theta,) = _state(chain, theta)
    steps = chain.l[:, None] * _unit(theta)
    zero = np.zeros(theta.shape[:-1] + (1, 2))
    return np.concatenate([zero, np.cumsum(steps, axis=-2)], axis=-2)


def _link_point(chain: PlanarChain, theta: FloatArray, link: int, local: FloatArray) -> FloatArray:
    """Ground position of a point given in the local coordinates of ``link`` (0 = base)."""
    if link == 0:
        return np.broadcast_to(local, theta.shape[:-1] + (2,))
    th = theta[..., link - 1]
    u, w = _unit(th), _unit(th + np.pi / 2)
    j = joint_positions(chain, theta)[..., link - 1, :]
    return j + local[0] * u + local[1] * w


def com_positions(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Positions of the centres of mass ``C_1..C_n``, shape ``(..., n, 2)``."""
    (theta,) = _state(chain, theta)
    joints = joint_positions(chain, theta)[..., :-1, :]
    return joints + chain.l_C[:, None] * _unit(theta + chain.eps_C)


def com_accelerations(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                      theta_ddot: ArrayLike) -> FloatArray:
    """Accelerations ``a⃗_Ci`` of the centres of mass, Eq. 5 of seed 000.

    ``a⃗_Ci = Σ_{j=0}^{i-1} (θ̈_j l_j ŵ_j - θ̇_j² l_j û_j) + (θ̈_i l_Ci ŵ_Ci - θ̇_i² l_Ci û_Ci)``;
    the ``j = 0`` (base) term vanishes.

    Returns
    -------
    ndarray, shape (..., n, 2)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    joint_terms = _joint_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    com_terms = _com_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    a_joint = np.cumsum(joint_terms, axis=-2) - joint_terms  # Σ_{j<i}
    return a_joint + com_terms


def _joint_acceleration_terms(chain, theta, theta_dot, theta_ddot) -> FloatArray:
    """``θ̈_i l_i ŵ_i - θ̇_i² l_i û_i`` = ``a⃗_{J_{i+1}} - a⃗_{J_i}``, shape (..., n, 2)."""
    return chain.l[:, None] * (theta_ddot[..., None] * _unit(theta + np.pi / 2)
                               - theta_dot[..., None] ** 2 * _unit(theta))


def _com_acceleration_terms(chain, theta, theta_dot, theta_ddot) -> FloatArray:
    """``θ̈_i l_Ci ŵ_Ci - θ̇_i² l_Ci û_Ci`` = ``a⃗_Ci - a⃗_Ji``, shape (..., n, 2)."""
    phi = theta + chain.eps_C
    return chain.l_C[:, None] * (theta_ddot[..., None] * _unit(phi + np.pi / 2)
                                 - theta_dot[..., None] ** 2 * _unit(phi))


def muscle_forces(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Muscle forces ``F⃗_{j2 j1}`` exerted on the distal attachment of each muscle.

    Returns
    -------
    ndarray, shape (..., n_muscles, 2)
        ``f (P_{j1 j2} - P_{j2 j1}) / |P_{j1 j2} - P_{j2 j1}|`` in ground coordinates; the force on
        the proximal link is the opposite.
    """
    (theta,) = _state(chain, theta)
    forces = []
    for u in chain.muscles:
        p1 = _link_point(chain, theta, u.proximal_link, u.proximal_point)
        p2 = _link_point(chain, theta, u.distal_link, u.distal_point)
        d = p1 - p2
        forces.append(u.force * d / np.linalg.norm(d, axis=-1, keepdims=True))
    return np.stack(forces, axis=-2) if forces else np.zeros(theta.shape[:-1] + (0, 2))


# ----------------------------------------------------------------------------------------------
# Joint reaction forces (Eqs. 2-12)
# ----------------------------------------------------------------------------------------------


def distal_inertial_force(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                          theta_ddot: ArrayLike) -> FloatArray:
    """Closed-form ``Σ_{i=k+1}^{n} m_i a⃗_Ci`` for ``k = 0..n-1``, Eq. 6 of seed 000.

    ``(Σ_{j=k+1}^n m_j) Σ_{i=0}^{k} T_i + (1 - δ_{k,n-1}) Σ_{i=k+1}^{n-1} (Σ_{j=i+1}^n m_j) T_i
    + Σ_{i=k+1}^n m_i S_i`` with ``T_i = θ̈_i l_i ŵ_i - θ̇_i² l_i û_i`` and
    ``S_i = θ̈_i l_Ci ŵ_Ci - θ̇_i² l_Ci û_Ci``.

    Returns
    -------
    ndarray, shape (..., n, 2)
        Index ``k`` (joint ``k + 1``): inertial force of the links distal to joint ``k + 1``.
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    t = _joint_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    s = _com_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    n, m, big_m = chain.n, chain.m, chain.distal_mass
    out = []
    for k in range(n):
        value = np.zeros(theta.shape[:-1] + (2,))
        if k >= 1:  # the i = 0 summand vanishes (the base does not move)
            value = value + big_m[k - 1] * t[..., :k, :].sum(axis=-2)
        for i in range(k + 1, n):
            value = value + big_m[i - 1] * t[..., i - 1, :]
        for i in range(k + 1, n + 1):
            value = value + m[i - 1] * s[..., i - 1, :]
        out.append(value)
    return np.stack(out, axis=-2)


def proximal_inertial_force(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                            theta_ddot: ArrayLike) -> FloatArray:
    """Closed-form ``Σ_{i=0}^{k} m_i a⃗_Ci`` for ``k = 0..n-1``, Eq. 7 of seed 000.

    ``Σ_{i=0}^{k-1} (Σ_{j=i+1}^{k} m_j) T_i + Σ_{i=1}^{k} m_i S_i`` (``T``, ``S`` as in
    :func:`distal_inertial_force`); zero for ``k = 0`` because the base does not move.

    Returns
    -------
    ndarray, shape (..., n, 2)
        Index ``k`` (joint ``k + 1``): inertial force of the links proximal to joint ``k + 1``.
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    t = _joint_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    s = _com_acceleration_terms(chain, theta, theta_dot, theta_ddot)
    m = chain.m
    out = []
    for k in range(chain.n):
        value = np.zeros(theta.shape[:-1] + (2,))
        for i in range(1, k):
            value = value + m[i:k].sum() * t[..., i - 1, :]
        for i in range(1, k + 1):
            value = value + m[i - 1] * s[..., i - 1, :]
        out.append(value)
    return np.stack(out, axis=-2)


def muscle_reaction_forces(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Sum of the forces of the muscles spanning each joint, Eq. 12 of seed 000.

    ``F⃗^M_{k,k+1} = Σ_{j2 >= k+1} Σ_{j1 <= k} Σ_m F⃗^m_{j2 j1}``.

    Returns
    -------
    ndarray, shape (..., n, 2)
        Index ``k`` (joint ``k + 1``).
    """
    (theta,) = _state(chain, theta)
    forces = muscle_forces(chain, theta)
    out = np.zeros(theta.shape[:-1] + (chain.n, 2))
    for idx, u in enumerate(chain.muscles):
        out[..., u.proximal_link:u.distal_link, :] += forces[..., idx, None, :]
    return out


def _link_loads(chain: PlanarChain, theta: FloatArray) -> FloatArray:
    """``m_i g⃗ + R⃗_i`` per link, shape (..., n, 2)."""
    loads = np.broadcast_to(chain.m[:, None] * _gravity(chain), theta.shape[:-1] + (chain.n, 2))
    loads = np.array(loads)
    for c in chain.contacts:
        loads[..., c.link - 1, :] += _contact_vector(c, theta)
    return loads


def base_external_force(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                        theta_ddot: ArrayLike) -> FloatArray:
    """External force ``m_0 g⃗ + R⃗_0`` on the base (link 0), from Eq. 4 of seed 000.

    Eq. 4, ``Σ_{i=0}^n (m_i g⃗ + R⃗_i) = Σ_{i=0}^n m_i a⃗_Ci`` with ``a⃗_C0 = 0``, gives
    ``m_0 g⃗ + R⃗_0 = Σ_{i=1}^n m_i a⃗_Ci - Σ_{i=1}^n (m_i g⃗ + R⃗_i)`` (inertial sum by Eq. 6, k = 0).

    Returns
    -------
    ndarray, shape (..., 2)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    inertial = distal_inertial_force(chain, theta, theta_dot, theta_ddot)[..., 0, :]
    return inertial - _link_loads(chain, theta).sum(axis=-2)


def joint_reaction_forces(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                          theta_ddot: ArrayLike) -> FloatArray:
    """Joint reaction forces from the distal links, Eqs. 8 (2nd form), 9 and 11 (1st form).

    ``φ⃗_{k,k+1} = Σ_{i=k+1}^n (m_i g⃗ + R⃗_i) + F⃗^M_{k,k+1} - Σ_{i=k+1}^n m_i a⃗_Ci`` with the
    muscle term of Eq. 12 and the inertial sum of Eq. 6 (Eq. 9; Eq. 8 is ``k = 0`` and Eq. 11
    ``k = n - 1``).  Needs no information on the base.

    Returns
    -------
    ndarray, shape (..., n, 2)
        Index ``k = 0..n-1``: ``φ⃗_{k,k+1}``, the force exerted on link ``k`` by link ``k + 1`` at
        joint ``k + 1``, in ground coordinates.
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    loads = _link_loads(chain, theta)
    distal_loads = np.cumsum(loads[..., ::-1, :], axis=-2)[..., ::-1, :]  # Σ_{i>=k+1}
    return (distal_loads + muscle_reaction_forces(chain, theta)
            - distal_inertial_force(chain, theta, theta_dot, theta_ddot))


def joint_reaction_forces_proximal(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                                   theta_ddot: ArrayLike,
                                   base_force: ArrayLike | None = None) -> FloatArray:
    """Joint reaction forces from the proximal links, Eqs. 8 (1st form), 10 and 11 (2nd form).

    ``φ⃗_{k,k+1} = -Σ_{i=0}^{k} (m_i g⃗ + R⃗_i) + F⃗^M_{k,k+1} + Σ_{i=0}^{k} m_i a⃗_Ci`` with the
    inertial sum of Eq. 7.

    Parameters
    ----------
    chain : PlanarChain
    theta, theta_dot, theta_ddot : array_like, shape (..., n)
        Absolute link angles and their first and second time derivatives.
    base_force : array_like, shape (..., 2), optional
        ``m_0 g⃗ + R⃗_0``, the weight of the base plus the contact force on it (e.g. a measured
        ground reaction force).  Default: the value implied by Eq. 4
        (:func:`base_external_force`), with which this equals :func:`joint_reaction_forces`.

    Returns
    -------
    ndarray, shape (..., n, 2)
        Same layout as :func:`joint_reaction_forces`.
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    base = _resolve_base_force(chain, theta, theta_dot, theta_ddot, base_force)
    loads = _link_loads(chain, theta)
    proximal_loads = base[..., None, :] + np.cumsum(loads, axis=-2) - loads  # Σ_{i=0}^{k}
    return (-proximal_loads + muscle_reaction_forces(chain, theta)
            + proximal_inertial_force(chain, theta, theta_dot, theta_ddot))


# ----------------------------------------------------------------------------------------------
# Moment equations and joint torques (Eqs. 13-24)
# ----------------------------------------------------------------------------------------------


def muscle_torque_contributions(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Moment of each muscle about each joint it spans, the summands of Eq. 22 of seed 000.

    ``(J_k P_{j2 j1} × F⃗_{j2 j1}) · k̂`` for ``j1 < k <= j2`` and zero for joints the muscle does
    not span.  Equals ``-f ∂L/∂α_k`` (``L`` the muscle length): the generalized force of the muscle
    conjugate to the relative angle ``α_k``.

    Returns
    -------
    ndarray, shape (..., n_muscles, n)
    """
    (theta,) = _state(chain, theta)
    forces = muscle_forces(chain, theta)
    joints = joint_positions(chain, theta)[..., :-1, :]
    out = np.zeros(theta.shape[:-1] + (len(chain.muscles), chain.n))
    for idx, u in enumerate(chain.muscles):
        p2 = _link_point(chain, theta, u.distal_link, u.distal_point)
        for k in range(u.proximal_link + 1, u.distal_link + 1):
            out[..., idx, k - 1] = _cross(p2 - joints[..., k - 1, :], forces[..., idx, :])
    return out


def muscle_joint_torques(chain: PlanarChain, theta: ArrayLike) -> FloatArray:
    """Joint torques ``τ_k`` produced by the muscles, Eq. 22 of seed 000.

    ``τ_k = Σ_{j2=k}^{k+n_s-1} Σ_{j1=j2-n_s}^{k-1} Σ_m (J_k P_{j2 j1} × F⃗_{j2 j1}) · k̂``: the
    moment about ``J_k`` of the forces exerted on the links distal to joint ``k`` by the muscles that
    span joint ``k``.

    Returns
    -------
    ndarray, shape (..., n)
    """
    return muscle_torque_contributions(chain, theta).sum(axis=-2)


def distal_joint_torque(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                        theta_ddot: ArrayLike) -> FloatArray:
    """Torque ``τ_n`` at the distal joint, Eq. 13 of seed 000.

    ``τ_n = m_n g l_Cn cos(θ_n + ε_Cn) - R_n l_Rn sin(γ_Rn - ε_Rn) + I_Jn θ̈_n
    + m_n l_Cn Σ_{i=1}^{n-1} l_i [θ̈_i cos(θ_n + ε_Cn - θ_i) + θ̇_i² sin(θ_n + ε_Cn - θ_i)]``

    Returns
    -------
    ndarray, shape (...)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    n = chain.n
    phi = theta[..., n - 1] + chain.eps_C[n - 1]
    coupling = sum((chain.l[i] * (theta_ddot[..., i] * np.cos(phi - theta[..., i])
                                  + theta_dot[..., i] ** 2 * np.sin(phi - theta[..., i]))
                    for i in range(n - 1)), np.zeros(theta.shape[:-1]))
    return (_own_load(chain, theta, n) + chain.I_J[n - 1] * theta_ddot[..., n - 1]
            + chain.m[n - 1] * chain.l_C[n - 1] * coupling)


def com_moment_term(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                    theta_ddot: ArrayLike) -> FloatArray:
    """``(J_k C_k × m_k a⃗_Ck) · k̂`` for ``k = 1..n``, Eq. 17 of seed 000.

    ``m_k l_Ck Σ_{i=0}^{k-1} l_i [θ̈_i cos(θ_k + ε_Ck - θ_i) + θ̇_i² sin(θ_k + ε_Ck - θ_i)]
    + m_k l_Ck² θ̈_k``

    Returns
    -------
    ndarray, shape (..., n)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    out = []
    for k in range(1, chain.n + 1):
        phi = theta[..., k - 1] + chain.eps_C[k - 1]
        value = chain.m[k - 1] * chain.l_C[k - 1] ** 2 * theta_ddot[..., k - 1]
        for i in range(1, k):
            value = value + chain.m[k - 1] * chain.l_C[k - 1] * chain.l[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(phi - theta[..., i - 1])
                + theta_dot[..., i - 1] ** 2 * np.sin(phi - theta[..., i - 1]))
        out.append(value)
    return np.stack(out, axis=-1)


def distal_moment_term(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                       theta_ddot: ArrayLike) -> FloatArray:
    """``(J_k J_{k+1} × Σ_{i=k+1}^n m_i a⃗_Ci) · k̂`` for ``k = 1..n``, Eq. 18 of seed 000.

    ``l_k (Σ_{j>k} m_j) Σ_{i=0}^{k-1} l_i [θ̈_i cos(θ_k - θ_i) + θ̇_i² sin(θ_k - θ_i)]
    + (Σ_{j>k} m_j) l_k² θ̈_k
    + (1 - δ_{k,n-1}) l_k Σ_{i=k+1}^{n-1} (Σ_{j>i} m_j) l_i [θ̈_i cos(θ_i - θ_k) - θ̇_i² sin(θ_i - θ_k)]
    + l_k Σ_{i=k+1}^n m_i l_Ci [θ̈_i cos(θ_i + ε_Ci - θ_k) - θ̇_i² sin(θ_i + ε_Ci - θ_k)]``
    (printed with the typo ``J_k J_{k+i}``, see docs/seed-notes).  The seed states it for
    ``k = 1..n-1``; the value for ``k = n`` is zero (no distal links).

    Returns
    -------
    ndarray, shape (..., n)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    n, l, l_c, m, big_m = chain.n, chain.l, chain.l_C, chain.m, chain.distal_mass
    out = []
    for k in range(1, n + 1):
        th_k = theta[..., k - 1]
        value = big_m[k - 1] * l[k - 1] ** 2 * theta_ddot[..., k - 1]
        for i in range(1, k):
            d = th_k - theta[..., i - 1]
            value = value + l[k - 1] * big_m[k - 1] * l[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(d) + theta_dot[..., i - 1] ** 2 * np.sin(d))
        for i in range(k + 1, n):
            d = theta[..., i - 1] - th_k
            value = value + l[k - 1] * big_m[i - 1] * l[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(d) - theta_dot[..., i - 1] ** 2 * np.sin(d))
        for i in range(k + 1, n + 1):
            d = theta[..., i - 1] + chain.eps_C[i - 1] - th_k
            value = value + l[k - 1] * m[i - 1] * l_c[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(d) - theta_dot[..., i - 1] ** 2 * np.sin(d))
        out.append(value)
    return np.stack(out, axis=-1)


def proximal_moment_term(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                         theta_ddot: ArrayLike) -> FloatArray:
    """``(J_k J_{k+1} × Σ_{i=0}^{k} m_i a⃗_Ci) · k̂`` for ``k = 1..n``, Eq. 19 of seed 000.

    ``l_k Σ_{i=0}^{k-1} (Σ_{j=i+1}^{k} m_j) l_i [θ̈_i cos(θ_k - θ_i) + θ̇_i² sin(θ_k - θ_i)]
    + l_k Σ_{i=1}^{k} m_i l_Ci [θ̈_i cos(θ_k - θ_i - ε_Ci) + θ̇_i² sin(θ_k - θ_i - ε_Ci)]``
    (printed with the typo ``J_k J_{k+i}``).

    Returns
    -------
    ndarray, shape (..., n)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    l, l_c, m = chain.l, chain.l_C, chain.m
    out = []
    for k in range(1, chain.n + 1):
        th_k = theta[..., k - 1]
        value = np.zeros(theta.shape[:-1])
        for i in range(1, k):
            d = th_k - theta[..., i - 1]
            value = value + l[k - 1] * m[i:k].sum() * l[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(d) + theta_dot[..., i - 1] ** 2 * np.sin(d))
        for i in range(1, k + 1):
            d = th_k - theta[..., i - 1] - chain.eps_C[i - 1]
            value = value + l[k - 1] * m[i - 1] * l_c[i - 1] * (
                theta_ddot[..., i - 1] * np.cos(d) + theta_dot[..., i - 1] ** 2 * np.sin(d))
        out.append(value)
    return np.stack(out, axis=-1)


def torque_differences(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                       theta_ddot: ArrayLike) -> FloatArray:
    """``τ_k - τ_{k+1}`` for ``k = 1..n-1`` from the moment equation of link k, Eq. 20 of seed 000.

    Eq. 20 solved for its first two terms (``τ_k - τ_{k+1}``, Eq. 22):
    ``m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)
    + Σ_{i=k+1}^n [m_i g l_k cos θ_k - R_i l_k sin(γ_Ri + θ_i - θ_k)]
    + I_Ck θ̈_k + (Eq. 17) + (Eq. 18)``; the printed right-hand side of Eq. 20 is exactly
    ``I_Ck θ̈_k + (Eq. 17) + (Eq. 18)``.  This is the generalized force conjugate to the absolute
    angle ``θ_k`` required by the motion.

    Returns
    -------
    ndarray, shape (..., n - 1)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    inertial = (chain.I_C * theta_ddot + com_moment_term(chain, theta, theta_dot, theta_ddot)
                + distal_moment_term(chain, theta, theta_dot, theta_ddot))
    out = []
    for k in range(1, chain.n):
        loads = _own_load(chain, theta, k)
        for i in range(k + 1, chain.n + 1):
            loads = loads + _transmitted_load(chain, theta, k, i)
        out.append(loads + inertial[..., k - 1])
    return np.stack(out, axis=-1) if out else np.zeros(theta.shape[:-1] + (0,))


def torque_differences_proximal(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                                theta_ddot: ArrayLike,
                                base_force: ArrayLike | None = None) -> FloatArray:
    """``τ_k - τ_{k+1}`` for ``k = 1..n-1`` from Eq. 21 of seed 000.

    ``m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)
    - Σ_{i=0}^{k} [m_i g l_k cos θ_k - R_i l_k sin(γ_Ri + θ_i - θ_k)]
    + I_Ck θ̈_k + (Eq. 17) - (Eq. 19)``; the ``i = 0`` bracket is the base load
    ``-(J_k J_{k+1} × (m_0 g⃗ + R⃗_0)) · k̂``.

    Parameters
    ----------
    base_force : array_like, shape (..., 2), optional
        ``m_0 g⃗ + R⃗_0``; default from Eq. 4 (:func:`base_external_force`).

    Returns
    -------
    ndarray, shape (..., n - 1)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    base = _resolve_base_force(chain, theta, theta_dot, theta_ddot, base_force)
    inertial = (chain.I_C * theta_ddot + com_moment_term(chain, theta, theta_dot, theta_ddot)
                - proximal_moment_term(chain, theta, theta_dot, theta_ddot))
    out = []
    for k in range(1, chain.n):
        loads = _own_load(chain, theta, k) - _base_load(chain, theta, k, base)
        for i in range(1, k + 1):
            loads = loads - _transmitted_load(chain, theta, k, i)
        out.append(loads + inertial[..., k - 1])
    return np.stack(out, axis=-1) if out else np.zeros(theta.shape[:-1] + (0,))


def joint_torques(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                  theta_ddot: ArrayLike) -> FloatArray:
    """Joint torques ``τ_{k*}`` (``k* = 1..n``) required by the motion, Eq. 23 of seed 000.

    Term by term as printed:
    ``τ_{k*} = Σ_{k=k*}^{n} [m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)]
    + Σ_{k=k*}^{n-1} Σ_{i=k+1}^{n} [m_i g l_k cos θ_k - R_i l_k sin(γ_Ri + θ_i - θ_k)]
    + Σ_{k=k*}^{n} m_k l_Ck Σ_{i=0}^{k-1} l_i [θ̈_i cos(θ_k + ε_Ck - θ_i) + θ̇_i² sin(θ_k + ε_Ck - θ_i)]
    + Σ_{k=k*}^{n-1} l_k (Σ_{j=k+1}^n m_j) Σ_{i=0}^{k-1} l_i [θ̈_i cos(θ_k - θ_i) + θ̇_i² sin(θ_k - θ_i)]
    + Σ_{k=k*}^{n-1} (I_Jk + Σ_{j=k+1}^n m_j l_k²) θ̈_k + I_Jn θ̈_n
    + Σ_{k=k*}^{n-1} (1 - δ_{k,n-1}) l_k Σ_{i=k+1}^{n-1} (Σ_{j=i+1}^n m_j) l_i [θ̈_i cos(θ_i - θ_k) - θ̇_i² sin(θ_i - θ_k)]
    + Σ_{k=k*}^{n-1} l_k Σ_{i=k+1}^{n} m_i l_Ci [θ̈_i cos(θ_i + ε_Ci - θ_k) - θ̇_i² sin(θ_i + ε_Ci - θ_k)]``
    (the ``i = 0`` terms vanish since the base does not move).  For ``k* = n`` it reduces to
    Eq. 13.  See the module docstring for the meaning and sign of ``τ``.

    Returns
    -------
    ndarray, shape (..., n)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    n, l, l_c, m, eps, big_m = chain.n, chain.l, chain.l_C, chain.m, chain.eps_C, chain.distal_mass
    acc, vel2 = theta_ddot, theta_dot**2
    per_k = []  # summand of the outer Σ_k of every printed term, for k = 1..n
    for k in range(1, n + 1):
        th_k = theta[..., k - 1]
        value = _own_load(chain, theta, k)
        for i in range(1, k):  # third term
            d = th_k + eps[k - 1] - theta[..., i - 1]
            value = value + m[k - 1] * l_c[k - 1] * l[i - 1] * (
                acc[..., i - 1] * np.cos(d) + vel2[..., i - 1] * np.sin(d))
        if k == n:
            per_k.append(value + chain.I_J[n - 1] * acc[..., n - 1])
            continue
        for i in range(k + 1, n + 1):  # second term
            value = value + _transmitted_load(chain, theta, k, i)
        for i in range(1, k):  # fourth term
            d = th_k - theta[..., i - 1]
            value = value + l[k - 1] * big_m[k - 1] * l[i - 1] * (
                acc[..., i - 1] * np.cos(d) + vel2[..., i - 1] * np.sin(d))
        value = value + (chain.I_J[k - 1] + big_m[k - 1] * l[k - 1] ** 2) * acc[..., k - 1]
        for i in range(k + 1, n):  # sixth term (empty for k = n - 1)
            d = theta[..., i - 1] - th_k
            value = value + l[k - 1] * big_m[i - 1] * l[i - 1] * (
                acc[..., i - 1] * np.cos(d) - vel2[..., i - 1] * np.sin(d))
        for i in range(k + 1, n + 1):  # seventh term
            d = theta[..., i - 1] + eps[i - 1] - th_k
            value = value + l[k - 1] * m[i - 1] * l_c[i - 1] * (
                acc[..., i - 1] * np.cos(d) - vel2[..., i - 1] * np.sin(d))
        per_k.append(value)
    per_k = np.stack(per_k, axis=-1)
    return np.cumsum(per_k[..., ::-1], axis=-1)[..., ::-1]  # Σ_{k=k*}^{n}


def joint_torques_proximal(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                           theta_ddot: ArrayLike,
                           base_force: ArrayLike | None = None) -> FloatArray:
    """Joint torques ``τ_{k*}`` (``k* = 1..n``) by the second form, Eq. 24 of seed 000.

    Term by term as printed:
    ``τ_{k*} = Σ_{k=k*}^{n} [m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)]
    - Σ_{k=k*}^{n-1} Σ_{i=0}^{k} [m_i g l_k cos θ_k - R_i l_k sin(γ_Ri + θ_i - θ_k)]
    + Σ_{k=k*}^{n} m_k l_Ck Σ_{i=0}^{k-1} l_i [θ̈_i cos(θ_k + ε_Ck - θ_i) + θ̇_i² sin(θ_k + ε_Ck - θ_i)]
    - Σ_{k=k*}^{n-1} l_k Σ_{i=0}^{k-1} (Σ_{j=i+1}^{k} m_j) l_i [θ̈_i cos(θ_k - θ_i) + θ̇_i² sin(θ_k - θ_i)]
    + Σ_{k=k*}^{n} I_Jk θ̈_k
    - Σ_{k=k*}^{n-1} l_k Σ_{i=1}^{k} m_i l_Ci [θ̈_i cos(θ_k - θ_i - ε_Ci) + θ̇_i² sin(θ_k - θ_i - ε_Ci)]``.
    The ``i = 0`` load bracket involves the base: ``m_0 g⃗ + R⃗_0``.

    Parameters
    ----------
    base_force : array_like, shape (..., 2), optional
        ``m_0 g⃗ + R⃗_0``; default from Eq. 4 (:func:`base_external_force`), with which the result
        equals :func:`joint_torques`.

    Returns
    -------
    ndarray, shape (..., n)
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    base = _resolve_base_force(chain, theta, theta_dot, theta_ddot, base_force)
    n, l, l_c, m, eps = chain.n, chain.l, chain.l_C, chain.m, chain.eps_C
    acc, vel2 = theta_ddot, theta_dot**2
    per_k = []
    for k in range(1, n + 1):
        th_k = theta[..., k - 1]
        value = _own_load(chain, theta, k) + chain.I_J[k - 1] * acc[..., k - 1]
        for i in range(1, k):  # third term
            d = th_k + eps[k - 1] - theta[..., i - 1]
            value = value + m[k - 1] * l_c[k - 1] * l[i - 1] * (
                acc[..., i - 1] * np.cos(d) + vel2[..., i - 1] * np.sin(d))
        if k < n:
            value = value - _base_load(chain, theta, k, base)  # second term, i = 0
            for i in range(1, k + 1):  # second term, i >= 1
                value = value - _transmitted_load(chain, theta, k, i)
            for i in range(1, k):  # fourth term
                d = th_k - theta[..., i - 1]
                value = value - l[k - 1] * m[i:k].sum() * l[i - 1] * (
                    acc[..., i - 1] * np.cos(d) + vel2[..., i - 1] * np.sin(d))
            for i in range(1, k + 1):  # sixth term
                d = th_k - theta[..., i - 1] - eps[i - 1]
                value = value - l[k - 1] * m[i - 1] * l_c[i - 1] * (
                    acc[..., i - 1] * np.cos(d) + vel2[..., i - 1] * np.sin(d))
        per_k.append(value)
    per_k = np.stack(per_k, axis=-1)
    return np.cumsum(per_k[..., ::-1], axis=-1)[..., ::-1]


# ----------------------------------------------------------------------------------------------
# Appendix A: two- and three-link chains
# ----------------------------------------------------------------------------------------------


def appendix_a_two_link_torques(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                                theta_ddot: ArrayLike) -> FloatArray:
    """``(τ_1, τ_2)`` of a two-link chain as printed in Appendix A of seed 000.

    ``τ_2 = m_2 g l_C2 cos(θ_2 + ε_C2) - R_2 l_R2 sin(γ_R2 - ε_R2)
    + m_2 l_C2 l_1 [θ̈_1 cos(θ_2 + ε_C2 - θ_1) + θ̇_1² sin(θ_2 + ε_C2 - θ_1)] + I_J2 θ̈_2``;
    ``τ_1 = Σ_{k=1}^{2} [m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)]
    + [m_2 g l_1 cos θ_1 - R_2 l_1 sin(γ_R2 + θ_2 - θ_1)]
    + m_2 l_C2 l_1 [θ̈_1 cos(θ_2 + ε_C2 - θ_1) + θ̇_1² sin(θ_2 + ε_C2 - θ_1)]
    + (I_J1 + m_2 l_1²) θ̈_1 + I_J2 θ̈_2
    + l_1 m_2 l_C2 [θ̈_2 cos(θ_2 + ε_C2 - θ_1) - θ̇_2² sin(θ_2 + ε_C2 - θ_1)]``.

    Returns
    -------
    ndarray, shape (..., 2)
    """
    if chain.n != 2:
        raise ValueError(f"appendix_a_two_link_torques needs n = 2, got {chain.n}")
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    (t1, t2), (w1, w2), (a1, a2) = (np.moveaxis(x, -1, 0) for x in (theta, theta_dot, theta_ddot))
    (l1, _), (_, lc2), (_, e2), (_, m2), (ij1, ij2) = (
        chain.l, chain.l_C, chain.eps_C, chain.m, chain.I_J)
    d = t2 + e2 - t1
    coupling_1 = m2 * lc2 * l1 * (a1 * np.cos(d) + w1**2 * np.sin(d))
    tau2 = _own_load(chain, theta, 2) + coupling_1 + ij2 * a2
    tau1 = (_own_load(chain, theta, 1) + _own_load(chain, theta, 2)
            + _transmitted_load(chain, theta, 1, 2) + coupling_1
            + (ij1 + m2 * l1**2) * a1 + ij2 * a2
            + l1 * m2 * lc2 * (a2 * np.cos(d) - w2**2 * np.sin(d)))
    return np.stack([tau1, tau2], axis=-1)


def appendix_a_three_link_torques(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                                  theta_ddot: ArrayLike) -> FloatArray:
    """``(τ_1, τ_2, τ_3)`` of a three-link chain as printed in Appendix A of seed 000.

    ``τ_3 = m_3 g l_C3 cos(θ_3 + ε_C3) - R_3 l_R3 sin(γ_R3 - ε_R3)
    + m_3 l_C3 Σ_{i=1}^{2} l_i [θ̈_i cos(θ_3 + ε_C3 - θ_i) + θ̇_i² sin(θ_3 + ε_C3 - θ_i)] + I_J3 θ̈_3``;
    ``τ_2 = Σ_{k=2}^{3} [m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)]
    + [m_3 g l_2 cos θ_2 - R_3 l_2 sin(γ_R3 + θ_3 - θ_2)]
    + m_2 l_C2 l_1 [θ̈_1 cos(θ_2 + ε_C2 - θ_1) + θ̇_1² sin(θ_2 + ε_C2 - θ_1)]
    + m_3 l_C3 Σ_{i=1}^{2} l_i [θ̈_i cos(θ_3 + ε_C3 - θ_i) + θ̇_i² sin(θ_3 + ε_C3 - θ_i)]
    + l_2 m_3 l_1 [θ̈_1 cos(θ_2 - θ_1) + θ̇_1² sin(θ_2 - θ_1)] + (I_J2 + m_3 l_2²) θ̈_2 + I_J3 θ̈_3
    + l_2 m_3 l_C3 [θ̈_3 cos(θ_3 + ε_C3 - θ_2) - θ̇_3² sin(θ_3 + ε_C3 - θ_2)]``;
    ``τ_1 = Σ_{k=1}^{3} [m_k g l_Ck cos(θ_k + ε_Ck) - R_k l_Rk sin(γ_Rk - ε_Rk)]
    + Σ_{i=2}^{3} [m_i g l_1 cos θ_1 - R_i l_1 sin(γ_Ri + θ_i - θ_1)]
    + m_3 g l_2 cos θ_2 - R_3 l_2 sin(γ_R3 + θ_3 - θ_2)
    + m_2 l_C2 l_1 [θ̈_1 cos(θ_2 + ε_C2 - θ_1) + θ̇_1² sin(θ_2 + ε_C2 - θ_1)]
    + m_3 l_C3 Σ_{i=1}^{2} l_i [θ̈_i cos(θ_3 + ε_C3 - θ_i) + θ̇_i² sin(θ_3 + ε_C3 - θ_i)]
    + l_2 m_3 l_1 [θ̈_1 cos(θ_2 - θ_1) + θ̇_1² sin(θ_2 - θ_1)]
    + [I_J1 + (m_2 + m_3) l_1²] θ̈_1 + (I_J2 + m_3 l_2²) θ̈_2 + I_J3 θ̈_3
    + l_1 m_3 l_2 [θ̈_2 cos(θ_2 - θ_1) - θ̇_2² sin(θ_2 - θ_1)]
    + l_1 Σ_{i=2}^{3} m_i l_Ci [θ̈_i cos(θ_i + ε_Ci - θ_1) - θ̇_i² sin(θ_i + ε_Ci - θ_1)]
    + l_2 m_3 l_C3 [θ̈_3 cos(θ_3 + ε_C3 - θ_2) - θ̇_3² sin(θ_3 + ε_C3 - θ_2)]``.

    Returns
    -------
    ndarray, shape (..., 3)
    """
    if chain.n != 3:
        raise ValueError(f"appendix_a_three_link_torques needs n = 3, got {chain.n}")
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    th, w, a = (np.moveaxis(x, -1, 0) for x in (theta, theta_dot, theta_ddot))
    l, lc, e, m, ij = chain.l, chain.l_C, chain.eps_C, chain.m, chain.I_J

    def plus(i: int, k: int, eps: float = 0.0) -> FloatArray:
        """``θ̈_i cos(θ_k + ε - θ_i) + θ̇_i² sin(θ_k + ε - θ_i)`` (1-based link indices)."""
        d = th[k - 1] + eps - th[i - 1]
        return a[i - 1] * np.cos(d) + w[i - 1] ** 2 * np.sin(d)

    def minus(i: int, k: int, eps: float = 0.0) -> FloatArray:
        """``θ̈_i cos(θ_i + ε - θ_k) - θ̇_i² sin(θ_i + ε - θ_k)`` (1-based link indices)."""
        d = th[i - 1] + eps - th[k - 1]
        return a[i - 1] * np.cos(d) - w[i - 1] ** 2 * np.sin(d)

    def own(k: int) -> FloatArray:
        return _own_load(chain, theta, k)

    def transmitted(k: int, i: int) -> FloatArray:
        return _transmitted_load(chain, theta, k, i)

    link3_on_1_2 = m[2] * lc[2] * sum(l[i - 1] * plus(i, 3, e[2]) for i in (1, 2))
    tau3 = own(3) + link3_on_1_2 + ij[2] * a[2]
    tau2 = (own(2) + own(3) + transmitted(2, 3)
            + m[1] * lc[1] * l[0] * plus(1, 2, e[1]) + link3_on_1_2
            + l[1] * m[2] * l[0] * plus(1, 2) + (ij[1] + m[2] * l[1] ** 2) * a[1] + ij[2] * a[2]
            + l[1] * m[2] * lc[2] * minus(3, 2, e[2]))
    tau1 = (own(1) + own(2) + own(3) + transmitted(1, 2) + transmitted(1, 3) + transmitted(2, 3)
            + m[1] * lc[1] * l[0] * plus(1, 2, e[1]) + link3_on_1_2
            + l[1] * m[2] * l[0] * plus(1, 2)
            + (ij[0] + (m[1] + m[2]) * l[0] ** 2) * a[0] + (ij[1] + m[2] * l[1] ** 2) * a[1]
            + ij[2] * a[2]
            + l[0] * m[2] * l[1] * minus(2, 1)
            + l[0] * sum(m[i - 1] * lc[i - 1] * minus(i, 1, e[i - 1]) for i in (2, 3))
            + l[1] * m[2] * lc[2] * minus(3, 2, e[2]))
    return np.stack([tau1, tau2, tau3], axis=-1)


# ----------------------------------------------------------------------------------------------
# Unique contributions
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TorqueBreakdown:
    """Unique contributions to the joint torques ``τ_k`` (last axis: joint ``k = 1..n``).

    Attributes
    ----------
    muscles : ndarray, shape (..., n_muscles, n)
        Moment of each muscle about each joint it spans (summands of Eq. 22, left-hand side).
    weights : ndarray, shape (..., n, n)
        ``[..., i - 1, k - 1]``: contribution of the weight of link ``i`` to the torque required at
        joint ``k`` (right-hand side of Eq. 23).
    contacts : ndarray, shape (..., n_contacts, n)
        Contribution of each contact force, in the order of ``chain.contacts``.
    accelerations : ndarray, shape (..., n, n)
        ``[..., i - 1, k - 1]``: contribution of the angular acceleration ``θ̈_i`` of link ``i``.
    velocities : ndarray, shape (..., n, n)
        ``[..., i - 1, k - 1]``: contribution of the angular velocity of link ``i`` (terms in
        ``θ̇_i²``; absolute angles produce no products ``θ̇_i θ̇_j``).
    """

    muscles: FloatArray
    weights: FloatArray
    contacts: FloatArray
    accelerations: FloatArray
    velocities: FloatArray

    @property
    def required(self) -> FloatArray:
        """Torques required by weights, contacts and motion: Eq. 23, shape (..., n)."""
        return sum(x.sum(axis=-2) for x in (self.weights, self.contacts, self.accelerations,
                                            self.velocities))

    @property
    def muscle_total(self) -> FloatArray:
        """Torques produced by the muscles: Eq. 22, shape (..., n)."""
        return self.muscles.sum(axis=-2)


@dataclass(frozen=True)
class ReactionBreakdown:
    """Unique contributions to the joint reaction forces ``φ⃗_{k,k+1}`` (Eq. 9 of seed 000).

    Axes ``(..., contributor, joint, xy)``; the joint axis has index ``k = 0..n-1`` for
    ``φ⃗_{k,k+1}`` as in :func:`joint_reaction_forces`.

    Attributes
    ----------
    muscles : ndarray, shape (..., n_muscles, n, 2)
        Force of each muscle on the joints it spans (Eq. 12); zero at the joints it does not span.
    weights : ndarray, shape (..., n, n, 2)
        Weight of link ``i`` (index ``i - 1``).
    contacts : ndarray, shape (..., n_contacts, n, 2)
        Each contact force.
    accelerations, velocities : ndarray, shape (..., n, n, 2)
        Terms in ``θ̈_i`` and in ``θ̇_i²`` of link ``i`` (index ``i - 1``).
    """

    muscles: FloatArray
    weights: FloatArray
    contacts: FloatArray
    accelerations: FloatArray
    velocities: FloatArray

    @property
    def total(self) -> FloatArray:
        """``φ⃗_{k,k+1}`` (Eq. 9), shape (..., n, 2)."""
        return sum(x.sum(axis=-3) for x in (self.muscles, self.weights, self.contacts,
                                            self.accelerations, self.velocities))


def _superpose(function, chain: PlanarChain, theta: FloatArray, theta_dot: FloatArray,
               theta_ddot: FloatArray, axis: int) -> tuple[FloatArray, ...]:
    """Evaluate ``function`` with one input at a time switched on (all others zero).

    The closed forms are sums of terms each linear in exactly one of ``m_i g``, ``R_i``,
    ``θ̈_i`` and ``θ̇_i²`` (times a function of the angles only), so evaluating them with a single
    input non-zero isolates exactly the printed terms in which that input appears.
    """
    bare = replace(chain, contacts=(), muscles=(), g=0.0)
    zero = np.zeros_like(theta)
    eye = np.eye(chain.n)
    weights = [function(replace(bare, m=chain.m * eye[i], g=chain.g), theta, zero, zero)
               for i in range(chain.n)]
    contacts = [function(replace(bare, contacts=(c,)), theta, zero, zero) for c in chain.contacts]
    accelerations = [function(bare, theta, zero, theta_ddot * eye[i]) for i in range(chain.n)]
    velocities = [function(bare, theta, theta_dot * eye[i], zero) for i in range(chain.n)]
    result_shape = weights[0].shape

    def stack(parts: list[FloatArray]) -> FloatArray:
        if parts:
            return np.stack(parts, axis=axis)
        return np.zeros(_insert_axis(result_shape, axis, 0))

    return tuple(stack(p) for p in (weights, contacts, accelerations, velocities))


def _insert_axis(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    position = len(shape) + 1 + axis if axis < 0 else axis
    return shape[:position] + (size,) + shape[position:]


def joint_torque_breakdown(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                           theta_ddot: ArrayLike) -> TorqueBreakdown:
    """Unique contribution of each muscle, weight, contact force and link motion to ``τ_k``.

    The muscle part is the summands of Eq. 22 (left-hand side); the other parts are the terms of
    Eq. 23 (right-hand side) grouped by the input they are proportional to.

    Returns
    -------
    TorqueBreakdown
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    weights, contacts, accelerations, velocities = _superpose(
        joint_torques, chain, theta, theta_dot, theta_ddot, axis=-2)
    return TorqueBreakdown(muscle_torque_contributions(chain, theta), weights, contacts,
                           accelerations, velocities)


def joint_reaction_breakdown(chain: PlanarChain, theta: ArrayLike, theta_dot: ArrayLike,
                             theta_ddot: ArrayLike) -> ReactionBreakdown:
    """Unique contribution of each muscle, weight, contact force and link motion to ``φ⃗_{k,k+1}``.

    Terms of Eq. 9 (with Eq. 12 split muscle by muscle) grouped by the input they are
    proportional to.

    Returns
    -------
    ReactionBreakdown
    """
    theta, theta_dot, theta_ddot = _state(chain, theta, theta_dot, theta_ddot)
    weights, contacts, accelerations, velocities = _superpose(
        joint_reaction_forces, chain, theta, theta_dot, theta_ddot, axis=-3)
    muscles = [muscle_reaction_forces(replace(chain, muscles=(u,)), theta) for u in chain.muscles]
    muscles = (np.stack(muscles, axis=-3) if muscles
               else np.zeros(theta.shape[:-1] + (0, chain.n, 2)))
    return ReactionBreakdown(muscles, weights, contacts, accelerations, velocities)
