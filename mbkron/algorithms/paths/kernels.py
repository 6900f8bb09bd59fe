"""Compiled muscle paths: lengths and moment arms of straight-line paths (Eq. 195), stacked cubics."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.common import inline_jit, jit, jitable
from mbkron.algorithms.kinematics.kernels import twist_vector
from mbkron.jit.arrays import batch_rows, writable
from mbkron.algorithms.kinematics.points_kernels import add_body_wrench, add_subtree_power, body_gradients, gradient_columns

__all__ = ["path_lengths_and_moment_arms"]


@inline_jit
def add_point_moment_arms(R, s, m, T, wrenches, touched, offset_gradients, body, row, moving_state, x0, x1, x2, f0,
                          f1, f2, rotation):  # pragma: no cover - compiled
    """One path point's part of Eq. 195 for muscle ``m`` at state ``s``: ``∂x/∂q_k · f``, as the wrench ``(x × f, f)``
    added to its body's in ``wrenches`` (:func:`mbkron.algorithms.kinematics.points_kernels.add_body_wrench`; the muscle's wrenches go into
    ``R[s, :, m]`` together, by the point Jacobians' :func:`mbkron.algorithms.kinematics.points_kernels.add_subtree_power`), and
    ``R[s, :, m] += (R_bᵀ f) · ∂δ/∂q_k``.

    ``x`` the point (ground frame) on ``body`` (``nb``: the ground, no part from the twists), ``f`` its
    force per unit tension, ``row`` its row among the moving points (−1: body-fixed); ``rotation`` a
    (3, 3) work array. Shared by the straight-path and the wrapped-path kernels."""
    nb, nq = T.shape[1], R.shape[1]
    if body < nb:
        add_body_wrench(wrenches, touched, body, x0, x1, x2, f0, f1, f2)
    if row >= 0:
        for r in range(3):
            for c in range(3):
                rotation[r, c] = T[s, body, r, c] if body < nb else (1.0 if r == c else 0.0)
        for c in range(3):
            body_force = rotation[0, c] * f0 + rotation[1, c] * f1 + rotation[2, c] * f2
            for k in range(nq):
                R[s, k, m] += body_force * offset_gradients[moving_state, row, c, k]


@inline_jit
def same_place(point_body, moving_of_point, local_points, j, e):  # pragma: no cover - compiled
    """Whether path points ``j`` and ``e`` are one place on one body at every q (body-fixed, same body, same
    location): a segment between them has length zero and no direction, and adds nothing — neither length
    (OpenSim's sum) nor force (its pulls on the two points cancel on their body)."""
    return (point_body[j] == point_body[e] and moving_of_point[j] < 0 and moving_of_point[e] < 0
            and local_points[j, 0] == local_points[e, 0] and local_points[j, 1] == local_points[e, 1]
            and local_points[j, 2] == local_points[e, 2])


@jitable
def state_joint_twists(links, S, grad, s, joint_twists, gradients, columns):  # pragma: no cover - compiled
    """The joints' ground twists ``joint_twists`` (nb, 6), gradients per body ``gradients`` (nb, nq) and their nonzero
    ``columns`` (nb, 2) of state ``s`` from the rows of :func:`joint_rows`."""
    for i in range(links.shape[0]):
        twist_vector(S[s, i], joint_twists[i])
    body_gradients(links, grad[s if grad.shape[0] > 1 else 0], gradients)
    gradient_columns(gradients, columns)


_NO_JOINTS = np.zeros((0, 2), dtype=np.int64)
_NO_JOINTS.setflags(write=False)


def joint_rows(joints: tuple | None, batch: tuple[int, ...], nb: int) -> tuple:
    """``(links, S, grad, nq, order)`` for the path kernels: the tree's links (read-only), the joints' ground twists
    (states, nb, 4, 4) and the gradients (states or 1, nj, nq) of ``joints = (links, S, grad)``
    (:class:`~mbkron.algorithms.kinematics.tree.KinematicsData`'s ``links``, ``joint_twists``, ``grad``), or of nothing
    (lengths only: order 0)."""
    if joints is None:
        return _NO_JOINTS, np.zeros((1, nb, 4, 4)), np.zeros((1, 0, 0)), 0, 0
    links, S, grad = joints
    return links, writable(S).reshape((-1, nb, 4, 4)), batch_rows(grad, batch, 2), grad.shape[-1], 1


@jit
def _path_kernel(T, links, S, grad, point_body, point_muscle, moving_of_point, local_points, offsets,
                 offset_gradients, active, segment_start, n_muscles, zero_length, order,
                 record):  # pragma: no cover - compiled
    """Batched path lengths and moment arms; see :func:`path_lengths_and_moment_arms`."""
    states, nb = T.shape[0], T.shape[1]
    nq = grad.shape[2]
    P, n_segments = point_body.shape[0], segment_start.shape[0]
    lengths = np.zeros((states, n_muscles))
    R = np.zeros((states if order >= 1 else 0, nq, n_muscles))
    recorded = states if record else 0
    node_x, node_f = np.zeros((recorded, P, 3)), np.zeros((recorded, P, 3))
    points, forces, rotation = np.empty((P, 3)), np.empty((P, 3)), np.empty((3, 3))
    joint_twists, gradients, columns = np.empty((nb, 6)), np.empty((nb, nq)), np.empty((nb, 2), dtype=np.int64)
    wrenches, touched = np.zeros((nb, 6)), np.zeros(nb, dtype=np.bool_)  # a muscle's wrenches per body
    for s in range(states):
        moving_state = s if offsets.shape[0] > 1 else 0
        active_state = s if active.shape[0] > 1 else 0
        for j in range(P):  # ground positions (Eq. 41) of body-fixed and moving points
            x0, x1, x2 = local_points[j, 0], local_points[j, 1], local_points[j, 2]
            row = moving_of_point[j]
            if row >= 0:
                x0 += offsets[moving_state, row, 0]
                x1 += offsets[moving_state, row, 1]
                x2 += offsets[moving_state, row, 2]
            b = point_body[j]
            if b == nb:
                points[j, 0], points[j, 1], points[j, 2] = x0, x1, x2
            else:
                for r in range(3):
                    points[j, r] = T[s, b, r, 0] * x0 + T[s, b, r, 1] * x1 + T[s, b, r, 2] * x2 + T[s, b, r, 3]
            forces[j, 0] = forces[j, 1] = forces[j, 2] = 0.0
            if record:
                for r in range(3):
                    node_x[s, j, r] = points[j, r]
        for g in range(n_segments):  # L_m = Σ |p_e − p_j| over the active polyline; f_j = u_j − u_{j−1}
            j = segment_start[g]
            if not active[active_state, j]:
                continue
            e = j + 1  # the next active point (the insertion is always active)
            while not active[active_state, e]:
                e += 1
            d0 = points[e, 0] - points[j, 0]
            d1 = points[e, 1] - points[j, 1]
            d2 = points[e, 2] - points[j, 2]
            length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if length < zero_length:
                if same_place(point_body, moving_of_point, local_points, j, e):
                    continue  # e.g. two coincident conditional points, both active
                return lengths, R, s * n_segments + g, node_x, node_f
            lengths[s, point_muscle[j]] += length
            forces[j, 0] += d0 / length
            forces[j, 1] += d1 / length
            forces[j, 2] += d2 / length
            forces[e, 0] -= d0 / length
            forces[e, 1] -= d1 / length
            forces[e, 2] -= d2 / length
        if record:
            for j in range(P):
                for r in range(3):
                    node_f[s, j, r] = forces[j, r]
        if order < 1:
            continue
        state_joint_twists(links, S, grad, s, joint_twists, gradients, columns)
        last = -1  # the last body with a wrench of the muscle
        for j in range(P):  # R_km = Σ_j ∂p_j/∂q_k · f_j + (R_bᵀ f_j) · ∂δ_j/∂q_k (Eq. 195)
            m = point_muscle[j]
            if point_body[j] < nb:
                last = max(last, point_body[j])
            add_point_moment_arms(R, s, m, T, wrenches, touched, offset_gradients, point_body[j], moving_of_point[j],
                                  moving_state, points[j, 0], points[j, 1], points[j, 2], forces[j, 0], forces[j, 1],
                                  forces[j, 2], rotation)
            if j == P - 1 or point_muscle[j + 1] != m:  # the muscle's last point
                add_subtree_power(links, joint_twists, gradients, columns, wrenches, touched, last, 1.0, R[s, :, m])
                last = -1
    return lengths, R, -1, node_x, node_f


# ----------------------------------------------------------------------------- wrappers
def path_lengths_and_moment_arms(T: NDArray, joints: tuple | None, point_body: NDArray, point_muscle: NDArray,
                                 moving_of_point: NDArray, local_points: NDArray, offsets: NDArray | None,
                                 offset_gradients: NDArray | None, segment_start: NDArray, n_muscles: int,
                                 zero_length: float, active: NDArray | None = None,
                                 record: bool = False) -> tuple[NDArray, NDArray | None, int, tuple | None]:
    """Lengths ``L`` and moment arms ``R = −∂L/∂q`` of straight-line paths (Eq. 195, ground frame).

    Point by point, ``R_km = Σ_j ∂p_j/∂q_k · f_j + (ᵇR_jᵀ f_j) · ∂δ_j/∂q_k`` (the sparse column form of Eq. 195,
    ``Σ_j ∂p_j/∂q_k · f_j`` the point Jacobians' :func:`mbkron.algorithms.kinematics.points_kernels.add_subtree_power`, :mod:`mbkron.algorithms.paths.paths`), over the active points
    (:mod:`mbkron.multibody.muscles.conditions`): segment ``s`` runs from ``segment_start[s]``, if it is active,
    to the next active point.

    Parameters
    ----------
    T : ndarray, shape (..., nb, 4, 4)
    joints : (ndarray, ndarray, ndarray), or None for lengths only
        The tree's ``links``, the joints' ground twists (..., nb, 4, 4) and the joint variables' gradients
        (..., nj, nq) (:class:`~mbkron.algorithms.kinematics.tree.KinematicsData`'s ``links``, ``joint_twists``, ``grad``).
    point_body, point_muscle, moving_of_point : ndarray of int64, shape (P,)
        Body of each point (``nb`` for the ground), its muscle, its row among the moving points (−1).
    local_points : ndarray, shape (P, 3)
        (These and ``segment_start`` are constant arrays: pass them read-only, see :func:`mbkron.jit.arrays.writable`.)
    offsets, offset_gradients : ndarray, shapes (..., n_moving, 3), (..., n_moving, 3, nq), or None
    segment_start : ndarray of int64, shape (n_segments,)
        First point of each segment (every point but the muscles' last ones).
    n_muscles : int
    zero_length : float
        Shorter segments stop the evaluation, except between two body-fixed points at one place on one
        body (:func:`same_place`), which add nothing.
    active : ndarray of bool, shape (..., P) or (1, P), optional
        Which points are active (``(1, P)``: the same at every state; pass a constant read-only
        row); every muscle's last point must be active. Default: all.
    record : bool, optional
        Also return every point's ground position and force per unit tension.

    Returns
    -------
    lengths : ndarray, shape (..., n_muscles)
    R : ndarray, shape (..., nq, n_muscles), or None
    short : int
        ``state * n_segments + segment`` of the first segment shorter than ``zero_length`` (then the
        other results are incomplete), −1 if none.
    nodes : (ndarray, ndarray) or None
        With ``record``: the points' ground positions and their forces ``f_j = u_j − u_{j−1}`` per unit
        tension (zero at inactive points), both of shape (..., P, 3).
    """
    batch = T.shape[:-3]
    nb = T.shape[-3]
    links, S, grad, nq, order = joint_rows(joints, batch, nb)
    T_rows = writable(T).reshape((-1, nb, 4, 4))
    if offsets is None:
        offsets, offset_gradients = np.zeros((1, 0, 3)), np.zeros((1, 0, 3, max(nq, 1)))
    else:
        offsets, offset_gradients = batch_rows(offsets, batch, 2), batch_rows(offset_gradients, batch, 3)
    if active is None:
        active = np.ones((1, point_body.shape[0]), dtype=bool)
    if active.ndim != 2 or active.flags.writeable:  # per-state rows, read-only like a constant row: one compilation
        active = np.ascontiguousarray(active, dtype=bool).reshape((-1, active.shape[-1])).view()
        active.setflags(write=False)
    lengths, R, short, node_x, node_f = _path_kernel(T_rows, links, S, grad, point_body, point_muscle, moving_of_point,
                                                     local_points, offsets, offset_gradients, active, segment_start,
                                                     n_muscles, zero_length, order, record)
    if short >= 0:
        return lengths, None, short, None
    nodes = (node_x.reshape(batch + node_x.shape[1:]), node_f.reshape(batch + node_f.shape[1:])) if record else None
    return (lengths.reshape(batch + (n_muscles,)), R.reshape(batch + (nq, n_muscles)) if order else None, -1, nodes)
