"""Compiled wrapped paths: the surfaces' shortest paths, OpenSim's segment choice and
the sweeps over several wraps, lengths and exact moment arms (Eq. 195 with the tangent points held in
their wrap bodies), state by state.

The rules are OpenSim's, as :mod:`mbkron.algorithms.paths.wrap_paths` describes them (which segment each wrap
acts on, the sweeps over several wraps until the tangent points settle); here they are applied state by
state, so that every state stops sweeping when its own tangent points have converged; the linearly
converging sweeps over several wraps are extrapolated (Aitken: after three steady sweeps, a jump to the
limit of the geometric sequence of steps; the next sweep re-solves every wrap from there, so the fixed
point and the stopping test are those of the plain sweeps); where they do not settle in ``max_sweeps``,
they start again with the path's ellipsoids the short way round. Surfaces: :data:`~mbkron.numerics.geodesics.constants.COMPILED_KINDS` (the sphere and the cylinder in closed form,
:mod:`mbkron.numerics.geodesics.circular`; the ellipsoid, :mod:`mbkron.numerics.geodesics.ellipsoid`; the torus,
:mod:`mbkron.numerics.geodesics.torus`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.common import jit
from mbkron.jit.arrays import batch_rows, writable
from mbkron.numerics.linalg import copy_into
from mbkron.algorithms.paths.kernels import add_point_moment_arms, joint_rows, state_joint_twists
from mbkron.algorithms.kinematics.points_kernels import add_subtree_power
from mbkron.numerics.geodesics.ellipsoid import FAILED
from mbkron.numerics.geodesics.segments import failure_reason, surface_path_at
from mbkron.core.errors import ConfigurationError, ModelWarning

__all__ = ["wrapped_lengths_and_moment_arms", "unsettled_message"]


def unsettled_message(muscle: str, count: int, first: tuple, max_sweeps: int) -> str:
    """The warning where the sweeps over a path's wraps did not settle."""
    return (f"muscle `{muscle}`: the sweeps over its wraps did not settle in {max_sweeps}, even with its ellipsoids "
            f"the short way, at {count} state(s), the first at index {tuple(int(i) for i in first)}: its wraps' "
            f"decisions (OpenSim's sides, quadrants and segments) keep alternating, so no path is tangent to all "
            f"its wraps there; its length is the last sweep's and its moment arms are not −dL/dq "
            f"(docs/wrapping.md, \"Sweeps that do not settle\")")


def _failure_message(muscle: str, wrap: str, kind: int, params: NDArray, state: str, failure: NDArray) -> str:
    """The ConfigurationError's message where a wrap's solver failed (kind 2: the ellipsoid, 3: the torus)."""
    return (f"muscle `{muscle}`, wrap `{wrap}`: at state {state} (p={failure[3:6].tolist()}, "
            f"q={failure[6:].tolist()}, wrap frame) {failure_reason(kind, params)}")


@jit
def _sort(keys, order, count):  # pragma: no cover - compiled
    """``order[:count]`` = indices sorting ``keys[:count]`` (insertion sort, stable; a handful of nodes)."""
    for i in range(count):
        order[i] = i
    for i in range(1, count):
        j, item = i, order[i]
        while j > 0 and keys[order[j - 1]] > keys[item]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = item


@jit
def _wrap_kernel(T, links, S, grad, point_body, moving_of_point, local_points, offsets, offset_gradients, active, muscle_first,
                 muscle_count,
                 muscle_wraps, wrap_kind, wrap_params, wrap_rotation, wrap_translation, wrap_body, wrap_span,
                 tolerance, max_sweeps, zero_length, order, record):  # pragma: no cover - compiled
    """See :func:`wrapped_lengths_and_moment_arms`."""
    states, nb = T.shape[0], T.shape[1]
    nq = grad.shape[2]
    n_muscles, n_wraps = muscle_first.shape[0], wrap_kind.shape[0]
    P = point_body.shape[0]
    lengths = np.zeros((states, n_muscles))
    R = np.zeros((states if order >= 1 else 0, nq, n_muscles))
    recorded = states if record else 0  # the nodes: the set's P points, then two tangent points per wrap
    node_x, node_f = np.zeros((recorded, P + 2 * n_wraps, 3)), np.zeros((recorded, P + 2 * n_wraps, 3))
    node_key = np.full((recorded, P + 2 * n_wraps), np.inf)
    failure = np.full(9, -1.0)  # state, muscle, wrap, p, q (wrap frame) where an ellipsoid's solver failed
    unsettled = np.zeros((states, n_muscles), dtype=np.bool_)  # the sweeps used up max_sweeps
    most = 0
    for m in range(n_muscles):
        most = max(most, muscle_count[m] + 2 * (muscle_wraps[m + 1] - muscle_wraps[m]))
    X, F, old, older = np.empty((most, 3)), np.empty((most, 3)), np.zeros((most, 3)), np.zeros((most, 3))
    keys, owner, sorted_nodes = np.empty(most), np.empty(most, dtype=np.int64), np.empty(most, dtype=np.int64)
    Rg, og = np.empty((n_wraps, 3, 3)), np.empty((n_wraps, 3))
    arcs, found = np.empty(n_wraps), np.empty(n_wraps, dtype=np.bool_)
    p, q, t1, t2, b1, b2, semi_axes, rotation = (np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3),
                                                 np.empty(3), np.empty(3), np.empty((3, 3)))
    joint_twists, gradients, columns = np.empty((nb, 6)), np.empty((nb, nq)), np.empty((nb, 2), dtype=np.int64)
    wrenches, touched = np.zeros((nb, 6)), np.zeros(nb, dtype=np.bool_)  # a muscle's wrenches per body
    for s in range(states):
        have_twists = False
        active_state = s if active.shape[0] > 1 else 0
        moving_state = s if offset_gradients.shape[0] > 1 else 0
        offset_state = s if offsets.shape[0] > 1 else 0
        for w in range(n_wraps):  # the wraps' frames in the ground
            body = wrap_body[w]
            for i in range(3):
                og[w, i] = wrap_translation[w, i] if body == nb else T[s, body, i, 3]
                for j in range(3):
                    Rg[w, i, j] = wrap_rotation[w, i, j]
            if body < nb:
                for i in range(3):
                    og[w, i] += (T[s, body, i, 0] * wrap_translation[w, 0] + T[s, body, i, 1] * wrap_translation[w, 1]
                                 + T[s, body, i, 2] * wrap_translation[w, 2])
                    for j in range(3):
                        Rg[w, i, j] = (T[s, body, i, 0] * wrap_rotation[w, 0, j] + T[s, body, i, 1] * wrap_rotation[w, 1, j]
                                       + T[s, body, i, 2] * wrap_rotation[w, 2, j])
        for m in range(n_muscles):
            n, first, w0 = muscle_count[m], muscle_first[m], muscle_wraps[m]
            W = muscle_wraps[m + 1] - w0
            N = n + 2 * W
            for j in range(n):  # ground positions (Eq. 41) of the path's points
                x0, x1, x2 = local_points[first + j, 0], local_points[first + j, 1], local_points[first + j, 2]
                row = moving_of_point[first + j]
                if row >= 0:
                    x0 += offsets[offset_state, row, 0]
                    x1 += offsets[offset_state, row, 1]
                    x2 += offsets[offset_state, row, 2]
                body = point_body[first + j]
                if body == nb:
                    X[j, 0], X[j, 1], X[j, 2] = x0, x1, x2
                else:
                    for i in range(3):
                        X[j, i] = T[s, body, i, 0] * x0 + T[s, body, i, 1] * x1 + T[s, body, i, 2] * x2 + T[s, body, i, 3]
                keys[j] = j if active[active_state, first + j] else np.inf
                owner[j] = -1
            settled = W == 1
            for attempt in range(1 if W == 1 else 2):  # the 2nd: the ellipsoids the short way (module docs)
                for w in range(W):
                    keys[n + 2 * w] = keys[n + 2 * w + 1] = np.inf
                    owner[n + 2 * w] = owner[n + 2 * w + 1] = w
                    arcs[w0 + w], found[w0 + w] = 0.0, False
                steady = 0  # sweeps since the last change of which wraps wrap, or the last extrapolation
                for _ in range(1 if W == 1 else max_sweeps):
                    moved = 0.0
                    for j in range(n, N):
                        for i in range(3):
                            older[j, i] = old[j, i]
                            old[j, i] = X[j, i]
                    for w in range(W):  # remove wrap w's tangent points, wrap the best segment of its range
                        g = w0 + w
                        keys[n + 2 * w] = keys[n + 2 * w + 1] = np.inf
                        _sort(keys, sorted_nodes, N)
                        low, high = np.inf, -np.inf  # OpenSim's range: its first and last active points
                        for j in range(int(wrap_span[g, 0]), int(wrap_span[g, 1]) + 1):
                            if keys[j] < np.inf:
                                low, high = min(low, keys[j]), max(high, keys[j])
                        best, best_arc, k1, k2 = np.inf, 0.0, 0.0, 0.0
                        for i in range(N - 1):
                            a, b = sorted_nodes[i], sorted_nodes[i + 1]
                            if keys[b] == np.inf:
                                break
                            if keys[a] < low or keys[b] > high or (owner[a] == owner[b] and owner[a] >= 0):
                                continue
                            for c in range(3):  # Rgᵀ (x − o)
                                p[c] = ((X[a, 0] - og[g, 0]) * Rg[g, 0, c] + (X[a, 1] - og[g, 1]) * Rg[g, 1, c]
                                        + (X[a, 2] - og[g, 2]) * Rg[g, 2, c])
                                q[c] = ((X[b, 0] - og[g, 0]) * Rg[g, 0, c] + (X[b, 1] - og[g, 1]) * Rg[g, 1, c]
                                        + (X[b, 2] - og[g, 2]) * Rg[g, 2, c])
                            sign = int(wrap_params[g, 1])
                            if attempt == 1 and wrap_kind[g] == 2:
                                sign = 0  # the sweeps did not settle: the ellipsoids the short way
                            arc = surface_path_at((wrap_kind[g], wrap_params[g], sign, p, q, semi_axes, t1, t2))
                            if arc == FAILED:
                                failure[0], failure[1], failure[2] = s, m, g
                                for c in range(3):
                                    failure[3 + c], failure[6 + c] = p[c], q[c]
                                return lengths, R, -1, failure, unsettled, node_x, node_f, node_key
                            if arc < 0.0:
                                continue
                            change = (math.sqrt((t1[0] - p[0]) ** 2 + (t1[1] - p[1]) ** 2 + (t1[2] - p[2]) ** 2) + arc
                                      + math.sqrt((q[0] - t2[0]) ** 2 + (q[1] - t2[1]) ** 2 + (q[2] - t2[2]) ** 2)
                                      - math.sqrt((q[0] - p[0]) ** 2 + (q[1] - p[1]) ** 2 + (q[2] - p[2]) ** 2))
                            if change < best:
                                best, best_arc, k1, k2 = change, arc, keys[a], keys[b]
                                copy_into(b1, t1)
                                copy_into(b2, t2)
                        hit = best < np.inf
                        if hit != found[g]:
                            moved = np.inf
                        found[g], arcs[g] = hit, best_arc
                        if not hit:
                            continue
                        keys[n + 2 * w], keys[n + 2 * w + 1] = k1 + (k2 - k1) / 3, k1 + 2 * (k2 - k1) / 3
                        for slot in range(2):
                            local = b1 if slot == 0 else b2
                            for i in range(3):
                                x = og[g, i] + Rg[g, i, 0] * local[0] + Rg[g, i, 1] * local[1] + Rg[g, i, 2] * local[2]
                                moved = max(moved, abs(x - X[n + 2 * w + slot, i]))
                                X[n + 2 * w + slot, i] = x
                    if moved <= tolerance:
                        settled = True
                        break
                    steady = 0 if moved == np.inf else steady + 1
                    if steady >= 3:  # Aitken: the sweeps converge linearly; jump to the limit of the last two steps
                        last = previous = 0.0
                        for j in range(n, N):
                            for i in range(3):
                                last += (X[j, i] - old[j, i]) ** 2
                                previous += (old[j, i] - older[j, i]) ** 2
                        ratio = math.sqrt(last / previous) if previous > 0.0 else 1.0
                        if ratio < 0.9:
                            for j in range(n, N):
                                for i in range(3):
                                    X[j, i] += ratio / (1.0 - ratio) * (X[j, i] - old[j, i])
                            steady = 0
                if settled:
                    break
            unsettled[s, m] = not settled
            _sort(keys, sorted_nodes, N)  # the polyline: its length and f = u_out − u_in (none along a geodesic)
            for j in range(N):
                F[j, 0] = F[j, 1] = F[j, 2] = 0.0
            total = 0.0
            for i in range(N - 1):
                a, b = sorted_nodes[i], sorted_nodes[i + 1]
                if keys[b] == np.inf:
                    break
                if owner[a] == owner[b] and owner[a] >= 0:
                    total += arcs[w0 + owner[a]]
                    continue
                d0, d1, d2 = X[b, 0] - X[a, 0], X[b, 1] - X[a, 1], X[b, 2] - X[a, 2]
                piece = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                if piece < zero_length:
                    return lengths, R, s * n_muscles + m, failure, unsettled, node_x, node_f, node_key
                total += piece
                F[a, 0] += d0 / piece
                F[a, 1] += d1 / piece
                F[a, 2] += d2 / piece
                F[b, 0] -= d0 / piece
                F[b, 1] -= d1 / piece
                F[b, 2] -= d2 / piece
            lengths[s, m] = total
            if record:  # the path's points at their rows, wrap w's tangent points at P + 2 w (+1)
                for j in range(N):
                    row = first + j if j < n else P + 2 * w0 + (j - n)
                    node_key[s, row] = keys[j]
                    if keys[j] < np.inf:
                        for i in range(3):
                            node_x[s, row, i], node_f[s, row, i] = X[j, i], F[j, i]
            if order < 1:
                continue
            if not have_twists:  # the joints' ground twists of the state, once
                state_joint_twists(links, S, grad, s, joint_twists, gradients, columns)
                have_twists = True
            last = -1  # the last body with a wrench
            for j in range(N):  # R_km = Σ_j ∂x_j/∂q_k · f_j + (R_bᵀ f_j) · ∂δ_j/∂q_k (Eq. 195)
                if F[j, 0] == 0.0 and F[j, 1] == 0.0 and F[j, 2] == 0.0:
                    continue
                body = point_body[first + j] if j < n else wrap_body[w0 + (j - n) // 2]
                if body < nb:
                    last = max(last, body)
                add_point_moment_arms(R, s, m, T, wrenches, touched, offset_gradients, body,
                                      moving_of_point[first + j] if j < n else -1, moving_state, X[j, 0], X[j, 1],
                                      X[j, 2], F[j, 0], F[j, 1], F[j, 2], rotation)
            add_subtree_power(links, joint_twists, gradients, columns, wrenches, touched, last, 1.0, R[s, :, m])
    return lengths, R, -1, failure, unsettled, node_x, node_f, node_key


def wrapped_lengths_and_moment_arms(T: NDArray, joints: tuple | None, point_body: NDArray, moving_of_point: NDArray,
                                    local_points: NDArray, offsets: NDArray | None, offset_gradients: NDArray | None,
                                    active: NDArray, tables: tuple, tolerance: float, max_sweeps: int,
                                    zero_length: float, q: NDArray | None = None,
                                    record: bool = False) -> tuple[NDArray, NDArray | None, int, tuple | None]:
    """Lengths and moment arms ``R = −∂L/∂q`` of the wrapped paths.

    Parameters
    ----------
    T : ndarray, shape (..., nb, 4, 4)
    joints : (ndarray, ndarray, ndarray), or None for lengths only
        As for :func:`mbkron.algorithms.paths.kernels.path_lengths_and_moment_arms`.
    point_body, moving_of_point : ndarray of int64, shape (P,)
        Of all path points of the muscle set (as :func:`mbkron.algorithms.paths.kernels.path_lengths_and_moment_arms`).
    local_points : ndarray, shape (P, 3)
    offsets, offset_gradients : ndarray, shapes (..., n_moving, 3), (..., n_moving, 3, nq), or None
    active : ndarray of bool, shape (..., P) or (1, P)
    tables : tuple
        :attr:`mbkron.algorithms.paths.wrap_paths.PathWrapping.tables`: the constant arrays ``muscle_first``,
        ``muscle_count``, ``muscle_wraps`` (M_w + 1 offsets into the wraps), ``wrap_kind``
        (:data:`COMPILED_KINDS`), ``wrap_params`` (quadrant axis, sign, then the sphere's radius, the
        cylinder's radius and length, the ellipsoid's three semi-axes, or the torus's ``R`` and ``r``), ``wrap_rotation``,
        ``wrap_translation``, ``wrap_body``, ``wrap_span`` (0-based first, last point); then the
        muscles' and the wraps' names (for error messages).
    tolerance, max_sweeps : float, int
        The sweeps over several wraps stop when no tangent point moved more than ``tolerance`` (m).
    zero_length : float
    q : ndarray, shape (..., nq), optional
        The states' coordinates, named in error messages.
    record : bool, optional
        Also return the paths' nodes (below).

    Returns
    -------
    lengths : ndarray, shape (..., M_w)
    R : ndarray, shape (..., nq, M_w), or None
    short : int
        ``state * M_w + muscle`` of the first path with a piece shorter than ``zero_length``, −1 if none.
    nodes : (ndarray, ndarray, ndarray) or None
        With ``record``: the ground positions (..., P + 2 W, 3), forces per unit tension (..., P + 2 W, 3)
        and order keys (..., P + 2 W) of the wrapped paths' nodes — row ``j < P`` the set's path point
        ``j``, rows ``P + 2 w`` and ``P + 2 w + 1`` the tangent points of wrap ``w`` (joined to the
        path's earlier and later node); sorting a path's finite keys gives its nodes in path order;
        ``inf`` (and zero position and force) for an inactive point, a wrap that does not wrap and the
        rows of the unwrapped paths. The piece between a wrap's two tangent points is the geodesic, which
        carries no force.

    Raises
    ------
    ConfigurationError
        Where the ellipsoid's solver (:func:`mbkron.numerics.geodesics.ellipsoid.ellipsoid_path`) does not
        converge or the torus's (:func:`mbkron.numerics.geodesics.torus.torus_path`) finds no path although the
        straight segment enters the torus; the message names the muscle, the wrap, the state (and its
        ``q``) and the points.

    Warns
    -----
    ModelWarning
        Per muscle whose sweeps did not settle in ``max_sweeps`` at some states, even when started again
        with its ellipsoids the short way round (:func:`unsettled_message`).
    """
    batch, nb = T.shape[:-3], T.shape[-3]
    links, S, grad, nq, order = joint_rows(joints, batch, nb)
    T_rows = writable(T).reshape((-1, nb, 4, 4))
    if offsets is None:
        offsets, gradients = np.zeros((1, 0, 3)), np.zeros((1, 0, 3, max(nq, 1)))
    else:
        offsets, gradients = batch_rows(offsets, batch, 2), batch_rows(offset_gradients, batch, 3)
    if active.ndim != 2 or active.flags.writeable:
        active = np.ascontiguousarray(active, dtype=bool).reshape((-1, active.shape[-1])).view()
        active.setflags(write=False)
    *arrays, (muscle_names, wrap_names) = tables
    n_muscles = arrays[0].shape[0]
    lengths, R, short, failure, unsettled, *nodes = _wrap_kernel(T_rows, links, S, grad, point_body, moving_of_point,
                                                                 local_points, offsets, gradients, active, *arrays,
                                                                 tolerance, max_sweeps, zero_length, order, record)
    if failure[0] >= 0:
        state, muscle, wrap = (int(value) for value in failure[:3])
        index = tuple(int(i) for i in np.unravel_index(state, batch))
        where = f"{index}" if q is None else f"{index} (coordinates q = {np.asarray(q)[index].tolist()})"
        raise ConfigurationError(_failure_message(muscle_names[muscle], wrap_names[wrap], int(arrays[3][wrap]),
                                                  arrays[4][wrap], where, failure))
    if short >= 0:
        return lengths, None, short, None
    for muscle in np.flatnonzero(unsettled.any(axis=0)):
        states = np.flatnonzero(unsettled[:, muscle])
        warnings.warn(unsettled_message(muscle_names[muscle], len(states), np.unravel_index(states[0], batch),
                                        max_sweeps), ModelWarning, stacklevel=3)
    if record:
        size = nodes[2].shape[1]
        nodes = (nodes[0].reshape(batch + (size, 3)), nodes[1].reshape(batch + (size, 3)), nodes[2].reshape(batch + (size,)))
    return (lengths.reshape(batch + (n_muscles,)), R.reshape(batch + (nq, n_muscles)) if order else None, -1,
            tuple(nodes) if record else None)
