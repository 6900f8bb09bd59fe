"""Planar rigid-body kinematics in absolute Cartesian coordinates.

Every moving body ``b`` (numbered 1..n_b, the ground is body 0) carries the three coordinates
``q_b = (R_x, R_y, φ)``: the world position of its body-frame origin and the angle of its body
x axis from the world x axis. A point with body coordinates ``u`` is at

    r = R + A(φ) u,        A(φ) = [[cos φ, −sin φ], [sin φ, cos φ]]

(Shabana, *Computational Dynamics*, 3rd ed., Ch. 3 "Kinematics"). With ``A_φ = A S`` and
``S = [[0, −1], [1, 0]]`` the velocity and acceleration are

    ṙ = Ṙ + A S u φ̇,        r̈ = R̈ + A S u φ̈ − A u φ̇².

For the ground (body 0) ``u`` is the world position of the point and all rates vanish.
All functions accept batched coordinates ``q`` of shape ``(..., n)`` unless stated otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "GROUND",
    "ROT90",
    "rotation",
    "coordinates",
    "pose",
    "point_position",
    "point_velocity",
    "point_acceleration",
    "point_convective_acceleration",
    "point_jacobian",
    "as_vector2",
]

GROUND = 0
"""Index of the ground body."""

ROT90 = np.array([[0.0, -1.0], [1.0, 0.0]])
"""The constant matrix ``S`` with ``dA/dφ = A S`` (rotation by +90°)."""


def rotation(phi: ArrayLike) -> NDArray[np.float64]:
    """Planar rotation matrices ``A(φ)``.

    Parameters
    ----------
    phi : array_like, shape (...)
        Angles in radians.

    Returns
    -------
    ndarray, shape (..., 2, 2)
        ``[[cos φ, −sin φ], [sin φ, cos φ]]``.
    """
    phi = np.asarray(phi, dtype=float)
    c, s = np.cos(phi), np.sin(phi)
    A = np.empty(phi.shape + (2, 2))
    A[..., 0, 0] = A[..., 1, 1] = c
    A[..., 0, 1] = -s
    A[..., 1, 0] = s
    return A


def coordinates(body: int) -> slice:
    """Slice of the coordinates ``(R_x, R_y, φ)`` of a moving body in ``q``.

    Parameters
    ----------
    body : int
        Body number, 1..n_b.

    Returns
    -------
    slice
        ``slice(3 (body − 1), 3 body)``.

    Raises
    ------
    ValueError
        If ``body`` is the ground or negative.
    """
    if body < 1:
        raise ValueError(f"body {body} has no coordinates (the ground is body 0, moving bodies 1..n_b)")
    return slice(3 * (body - 1), 3 * body)


def pose(q: ArrayLike, body: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Origin position and angle of a body.

    Parameters
    ----------
    q : array_like, shape (..., n)
        Absolute coordinates of all bodies (or their time derivatives: the map is linear).
    body : int
        Body number; 0 (ground) gives zeros.

    Returns
    -------
    R : ndarray, shape (..., 2)
    phi : ndarray, shape (...)
    """
    q = np.asarray(q, dtype=float)
    if body == GROUND:
        return np.zeros(q.shape[:-1] + (2,)), np.zeros(q.shape[:-1])
    x = q[..., coordinates(body)]
    return x[..., :2], x[..., 2]


def point_position(q: ArrayLike, body: int, u: ArrayLike) -> NDArray[np.float64]:
    """World position ``r = R + A(φ) u`` of a body point.

    Parameters
    ----------
    q : array_like, shape (..., n)
    body : int
        Body number (0 for the ground, then ``u`` is the world position).
    u : array_like, shape (2,)
        Body coordinates of the point.

    Returns
    -------
    ndarray, shape (..., 2)
    """
    R, phi = pose(q, body)
    return R + rotation(phi) @ np.asarray(u, dtype=float)


def point_velocity(q: ArrayLike, qd: ArrayLike, body: int, u: ArrayLike) -> NDArray[np.float64]:
    """World velocity ``ṙ = Ṙ + A S u φ̇`` of a body point.

    Parameters
    ----------
    q, qd : array_like, shape (..., n)
        Coordinates and their rates.
    body : int
    u : array_like, shape (2,)

    Returns
    -------
    ndarray, shape (..., 2)
    """
    _, phi = pose(q, body)
    Rd, phid = pose(qd, body)
    return Rd + (rotation(phi) @ (ROT90 @ np.asarray(u, dtype=float))) * phid[..., None]


def point_convective_acceleration(
    q: ArrayLike, qd: ArrayLike, body: int, u: ArrayLike
) -> NDArray[np.float64]:
    """Velocity-dependent part ``−A u φ̇²`` of a body point's acceleration.

    This is ``(J q̇)_q q̇`` for the point Jacobian ``J``; it enters the constraint right-hand
    side ``Q_d`` and the quadratic velocity vector.

    Parameters
    ----------
    q, qd : array_like, shape (..., n)
    body : int
    u : array_like, shape (2,)

    Returns
    -------
    ndarray, shape (..., 2)
    """
    _, phi = pose(q, body)
    _, phid = pose(qd, body)
    return -(rotation(phi) @ np.asarray(u, dtype=float)) * (phid**2)[..., None]


def point_acceleration(
    q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, body: int, u: ArrayLike
) -> NDArray[np.float64]:
    """World acceleration ``r̈ = R̈ + A S u φ̈ − A u φ̇²`` of a body point.

    Parameters
    ----------
    q, qd, qdd : array_like, shape (..., n)
    body : int
    u : array_like, shape (2,)

    Returns
    -------
    ndarray, shape (..., 2)
    """
    return point_velocity(q, qdd, body, u) + point_convective_acceleration(q, qd, body, u)


def point_jacobian(q: ArrayLike, body: int, u: ArrayLike) -> NDArray[np.float64]:
    """Jacobian ``∂r/∂q`` of a body point (single configuration).

    Parameters
    ----------
    q : array_like, shape (n,)
    body : int
    u : array_like, shape (2,)

    Returns
    -------
    ndarray, shape (2, n)
        ``[I, A S u]`` in the columns of ``body``, zero elsewhere (all zero for the ground).
    """
    q = np.asarray(q, dtype=float)
    J = np.zeros((2, q.shape[-1]))
    if body != GROUND:
        s = coordinates(body)
        J[0, s.start] = J[1, s.start + 1] = 1.0
        J[:, s.start + 2] = rotation(q[s.start + 2]) @ (ROT90 @ np.asarray(u, dtype=float))
    return J


def as_vector2(value: ArrayLike, what: str) -> NDArray[np.float64]:
    """Validate and convert a planar vector.

    Parameters
    ----------
    value : array_like
        Two finite numbers.
    what : str
        Name quoted in the error message.

    Returns
    -------
    ndarray, shape (2,)

    Raises
    ------
    ValueError
        If ``value`` is not two finite numbers.
    """
    v = np.asarray(value, dtype=float)
    if v.shape != (2,) or not np.all(np.isfinite(v)):
        raise ValueError(f"`{what}` must be two finite numbers (a planar vector), got {value!r}")
    return v
