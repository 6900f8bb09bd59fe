"""Musculotendon paths: straight segments through body-fixed and moving points; length and moment arms (the
descriptions: :mod:`mbkron.multibody.muscles.paths`).

A path is a sequence of points, each fixed in a body (or the ground) or moving in it
(:class:`~mbkron.multibody.muscles.points.MovingPoint`), and possibly part of the path only while a coordinate
is in a range (a conditional point, :mod:`mbkron.multibody.muscles.conditions`); the musculotendon unit is the
polyline through the active points, or, where the path has wraps (:class:`~mbkron.multibody.muscles.wrapping.PathWrap`),
through the active points and the wraps' tangent points with surface geodesics between those
(:mod:`mbkron.algorithms.paths.wrap_paths`; moment arms exact by the envelope theorem, :mod:`mbkron.multibody.muscles.wrapping`). For tension ``F`` (> 0 pulls the ends
together) the unit applies at point ``j`` the force ``F f_j`` with ``f_j = u_j − u_{j−1}`` (``u_s`` the
unit vector of segment ``s`` from its first to its second point; the missing ``u`` at the ends is zero).

**Moment arms (the fast path).** By virtual work (Eq. 161, 185) the generalized force of a unit
tension is

    R_{·,m} = Σ_i (ω_i · Ê_mi + v_i · E_mi) + Σ_{moving j} (ᵇR_jᵀ f_j) · ∂δ_j/∂q,

the sparse column form of Eq. 195 written in the ground frame: ``E_mi = Σ_{j on i} f_j`` is the
GMLAV of muscle ``m`` on body ``i`` (Definition 3: only the first and last points of each run on
a body contribute, the interior ones cancel), ``Ê_mi = Σ_{j on i} p_j × f_j`` its moment about the
ground origin (Definition 4), and ``Ω_ik = [[ω̃_ik, v_ik], [0, 0]] = (∂T_i/∂q_k) T_i⁻¹`` the world
twist of body ``i`` (the seed's ``γ_i`` and ``Jᵀϑβ_i`` of Eq. 176 and 184 in the ground frame). The
last sum is the work of moving points sliding in their body (``δ_j(q)`` the body-frame position),
which the seed obtains by making each moving point a zero-inertia body. This is ``R = −∂L/∂q`` with
``L = Σ_s |p_{s+1} − p_s|`` (OpenSim's convention: generalized force = ``R F``); tests check it
against finite differences and the chain rule, and against the literal Eq. 193 / 195
(:mod:`mbkron.reference.muscle_paths`).

:class:`MuscleSet` lays the paths out once, as the constant arrays of the two path kernels (one
implementation each, state by state): :func:`mbkron.algorithms.paths.kernels.path_lengths_and_moment_arms` for
the straight paths and :func:`mbkron.algorithms.paths.wrapping_kernels.wrapped_lengths_and_moment_arms` for the wrapped
ones (the tangent points' part of ``R`` included). Conditional points add, per state, the active set
(:class:`~mbkron.algorithms.paths.conditions.ActivePoints`); a set without them never computes it. The kernels
also report what they sum (:meth:`MuscleSet.path_points`: every node's position and force), which the
joint reactions (path loads on bodies) and the reference's located paths read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody.records import GROUND
from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.algorithms.paths.conditions import ActivePoints
from mbkron.multibody.muscles.paths import ZERO_LENGTH, MusclePath
from mbkron.algorithms.paths.points import MovingPointTerms
from mbkron.multibody.muscles.points import MovingPoint, point_condition
from mbkron.algorithms.paths.wrap_paths import MAX_SWEEPS, TANGENT_TOLERANCE, PathWrapping

__all__ = ["MuscleSet", "PathPoints"]

# the path kernels (numba), imported by the first evaluation: laying a model's paths out needs none
_compiled_paths = LazyModule("mbkron.algorithms.paths.kernels")
_compiled_wrapping = LazyModule("mbkron.algorithms.paths.wrapping_kernels")


@dataclass(frozen=True)
class PathPoints:
    """Every path's nodes at a batch of states, as the path kernels see them (:meth:`MuscleSet.path_points`).

    The nodes are the set's ``P`` path points (the muscles' points concatenated, each path from origin
    to insertion), then two per wrap (:attr:`PathWrapping.wrap_names <mbkron.algorithms.paths.wrap_paths.PathWrapping>`
    order): the tangent points where the path leaves its earlier node for the surface and where it
    returns to its later node.

    Attributes
    ----------
    positions : ndarray, shape (..., N, 3)
        Ground-frame positions, m (zero where the node is absent).
    forces : ndarray, shape (..., N, 3)
        Force at the node per newton of tension, ``f_j = u_out − u_in`` (Eq. 161; ``u`` the unit vectors
        of the straight pieces, none along a geodesic), ground frame; zero where absent. A tangent point's
        acts on its wrap's body.
    keys : ndarray, shape (..., N)
        Order along the node's path: sorting one path's finite keys gives its nodes from origin to
        insertion; ``inf`` where the node is absent (an inactive conditional point, a tangent point of a
        wrap that does not wrap).
    bodies : ndarray of int, shape (N,)
        The body each node is fixed in (a tangent point: its wrap's body; ``nb``: the ground).
    muscles : ndarray of int, shape (N,)
        The path of each node.
    lengths : ndarray, shape (..., M)
        Path lengths, m.
    n_points : int
        ``P``.
    """

    positions: NDArray[np.float64]
    forces: NDArray[np.float64]
    keys: NDArray[np.float64]
    bodies: NDArray[np.int64]
    muscles: NDArray[np.int64]
    lengths: NDArray[np.float64]
    n_points: int

    @property
    def wrapped(self) -> NDArray[np.bool_]:
        """Which wraps wrap their path, shape (..., W)."""
        return np.isfinite(self.keys[..., self.n_points::2])


class MuscleSet:
    """All musculotendon paths of a model, as the constant arrays the path kernels read.

    Parameters
    ----------
    paths : sequence of MusclePath
        Already validated (:func:`check_path`).
    body_index : mapping of str to int
        Body name → index in the model (parents first).
    coordinate_names : sequence of str
    """

    def __init__(self, paths: Sequence[MusclePath], body_index: Mapping[str, int], coordinate_names: Sequence[str]):
        self.paths = tuple(paths)
        self.nb, self.nq = len(body_index), len(coordinate_names)
        self.body_names = tuple(sorted(body_index, key=body_index.get)) + (GROUND,)  # by index; nb: the ground
        ground = self.nb
        bodies, local, muscle_of_point, index_in_path, moving_rows, slots, labels, extrapolate = [], [], [], [], [], [], [], []
        starts, conditions, point_rows = [], [], []
        for m, path in enumerate(self.paths):
            first = len(bodies)
            point_rows.append(np.arange(first, first + len(path.points)))
            for n, point in enumerate(path.points):
                row = len(bodies)
                condition = point_condition(point)
                if condition is not None:
                    conditions.append((row, condition))
                if isinstance(point, MovingPoint):
                    body, location = point.body, point.constant_part
                    slots += [(len(moving_rows), axis, term) for axis, term in point.varying_terms()]
                    moving_rows.append(row)
                    labels.append(f"{n} of muscle `{path.name}`")
                    extrapolate.append(point.extrapolate)
                else:
                    body, location = point[:2]
                bodies.append(ground if body == GROUND else body_index[body])
                local.append(np.asarray(location, dtype=float))
                muscle_of_point.append(m)
                index_in_path.append(n)
            starts += range(first, len(bodies) - 1)
        P = len(bodies)
        self.point_body = np.array(bodies, dtype=np.int64)
        self.local_points = np.array(local).reshape(P, 3)
        self.segment_start = np.array(starts, dtype=np.int64)
        self.point_muscle = np.array(muscle_of_point, dtype=np.int64)
        self.point_index = np.array(index_in_path, dtype=np.int64)  # its place in its path
        self.moving_of_point = np.full(P, -1, dtype=np.int64)
        self.moving_of_point[np.array(moving_rows, dtype=np.intp)] = np.arange(len(moving_rows))
        self.moving_terms = (MovingPointTerms(slots, len(moving_rows), coordinate_names, labels, extrapolate)
                             if moving_rows else None)
        self.active_points = ActivePoints(conditions, coordinate_names, P) if conditions else None
        self.all_active = np.ones((1, P), dtype=bool)
        wrapping = PathWrapping(self.paths, body_index, point_rows)
        self.wrapping = wrapping if wrapping.muscles.size else None
        # the straight-path kernel runs over the unwrapped paths' points only (rows of the set, renumbered)
        straight = ~np.isin(self.point_muscle, [] if self.wrapping is None else self.wrapping.muscles)
        rows = np.flatnonzero(straight)
        renumber = np.cumsum(straight) - 1
        kept = self.segment_start[straight[self.segment_start]]
        self._straight = (rows, self.point_body[rows], self.point_muscle[rows], self.moving_of_point[rows],
                          self.local_points[rows], renumber[kept].astype(np.int64))
        self._straight_all_active = self.all_active[:, rows]  # the straight kernel's constant active row
        # the nodes of path_points: the points, then each wrap's two tangent points
        self._node_bodies, self._node_muscles = self.point_body, self.point_muscle
        if self.wrapping is not None:
            self._node_bodies = np.concatenate([self.point_body, self.wrapping.tangent_body]).astype(np.int64)
            self._node_muscles = np.concatenate([self.point_muscle, np.repeat(self.wrapping.wrap_muscles(), 2)])
        for array in (self.point_body, self.local_points, self.segment_start, self.point_muscle, self.point_index,
                      self.moving_of_point, self.all_active, *self._straight, self._straight_all_active,
                      self._node_bodies, self._node_muscles):
            array.setflags(write=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.paths)

    @property
    def size(self) -> int:
        return len(self.paths)

    def compiled_lengths_and_moment_arms(self, kin, order: int) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """Lengths ``L`` (..., M) and, with ``order`` 1, moment arms ``R = −∂L/∂q`` (..., nq, M) at the states
        of ``kin`` (with ``order`` 1: first-order kinematics, for the joints' ground twists), by the path kernels:
        :func:`mbkron.algorithms.paths.kernels.path_lengths_and_moment_arms` for the straight paths and
        :func:`mbkron.algorithms.paths.wrapping_kernels.wrapped_lengths_and_moment_arms` for the wrapped ones.

        Raises
        ------
        ConfigurationError
            A segment of zero length (its direction, hence the force, is undefined), naming the muscle,
            the points and q; a moving point outside its tabulated range; a wrap whose solver fails.
        """
        lengths, R, _ = self._evaluate(kin, order, False)
        return lengths, R

    def path_points(self, kin) -> PathPoints:
        """Every path's points, tangent points and their forces per unit tension at the states of ``kin``
        (any order): what the path kernels sum into ``L`` and ``R`` (:class:`PathPoints`).

        Raises
        ------
        ConfigurationError
            As :meth:`compiled_lengths_and_moment_arms`.
        """
        lengths, _, nodes = self._evaluate(kin, 0, True)
        return PathPoints(*nodes, lengths=lengths, n_points=self.point_body.size)

    def _evaluate(self, kin, order: int, record: bool) -> tuple:
        """Lengths, moment arms (``order`` 1) and, with ``record``, the :class:`PathPoints` fields
        ``positions``, ``forces``, ``keys``, ``bodies``, ``muscles``."""
        offsets = gradients = None
        if self.moving_terms is not None:
            offsets, gradients = self.moving_terms.evaluate(kin.q)
        batch, P, wrapping = kin.q.shape[:-1], self.point_body.size, self.wrapping
        # one active row for all states (read-only: one kernel specialisation), or a row per state
        active = self.all_active if self.active_points is None else self.active_points.active(kin.q)
        joints = (kin.links, kin.joint_twists, kin.grad) if order else None  # the point Jacobians' (Eq. 46, 75)
        rows, *arrays = self._straight
        if rows.size:
            if wrapping is None:
                straight_active = active
            else:
                straight_active = self._straight_all_active if self.active_points is None else active[..., rows]
            lengths, R, short, straight_nodes = _compiled_paths.path_lengths_and_moment_arms(
                kin.T, joints, *arrays[:4], offsets, gradients, arrays[4], self.size, ZERO_LENGTH, straight_active,
                record)
            if short >= 0:
                state, segment = divmod(short, arrays[4].size)
                self._raise_short_segment(kin.q, active, state, int(rows[arrays[4][segment]]))
        else:  # every path wraps
            lengths, R = np.zeros(batch + (self.size,)), np.zeros(batch + (self.nq, self.size)) if order else None
        if record and wrapping is None:  # (else the wrapped kernel's nodes, all rows)
            positions, forces, keys = np.zeros(batch + (P, 3)), np.zeros(batch + (P, 3)), np.full(batch + (P,), np.inf)
        if wrapping is not None:
            wrapped_lengths, wrapped_R, short, wrapped_nodes = _compiled_wrapping.wrapped_lengths_and_moment_arms(
                kin.T, joints, self.point_body, self.moving_of_point, self.local_points, offsets, gradients, active,
                wrapping.tables, TANGENT_TOLERANCE, MAX_SWEEPS, ZERO_LENGTH, kin.q, record)
            if short >= 0:
                state, muscle = divmod(short, wrapping.muscles.size)
                q = kin.q.reshape(-1, self.nq)[state]
                raise ConfigurationError(f"muscle `{self.paths[wrapping.muscles[muscle]].name}`: two consecutive points "
                                         f"of its wrapped path coincide at q = {q.tolist()}: the line of action is "
                                         "undefined")
            lengths[..., wrapping.muscles] = wrapped_lengths
            if order:
                R[..., wrapping.muscles] = wrapped_R
            if record:
                positions, forces, keys = wrapped_nodes
        if not record:
            return lengths, R, None
        if rows.size:
            on = (active if self.active_points is not None else np.broadcast_to(active[0], batch + (P,)))[..., rows]
            positions[..., rows, :] = np.where(on[..., None], straight_nodes[0], 0.0)
            forces[..., rows, :] = straight_nodes[1]
            keys[..., rows] = np.where(on, self.point_index[rows], np.inf)
        return lengths, R, (positions, forces, keys, self._node_bodies, self._node_muscles)

    def _raise_short_segment(self, q: NDArray, active: NDArray, state: int, start: int) -> None:
        """Raise the ConfigurationError for the segment from point ``start`` (a row of the set) at batch
        row ``state``, whose length is below :data:`ZERO_LENGTH` (``active``: (1, P) or a row per state)."""
        active_rows = active.reshape(-1, active.shape[-1])
        q_row, active_row = q.reshape(-1, self.nq)[state], active_rows[state if active_rows.shape[0] > 1 else 0]
        end = start + 1 + int(np.argmax(active_row[start + 1:]))  # the next active point (the insertion is)
        first = start - int(self.point_index[start])
        raise ConfigurationError(
            f"muscle `{self.paths[self.point_muscle[start]].name}`: points {start - first} and {end - first} of its "
            f"path coincide at q = {q_row.tolist()}: the line of action is undefined")

    def located_paths(self, q: NDArray[np.float64], T: NDArray[np.float64] | None = None) -> tuple[MusclePath, ...]:
        """The paths at one state as polylines of body-fixed points (what the seed's forms of
        :mod:`mbkron.reference.muscle_paths` need): the active points only, every moving point fixed where it is
        at ``q``, and a wrapped path's tangent points as points fixed in their wrap's body, in path order
        (:meth:`path_points`).

        A wrapped piece ``T1 → T2`` becomes the chord between its tangent points: both are on one rigid body,
        so its two forces cancel and Eq. 193/195 give ``R = −∂L/∂q`` of the wrapped length (envelope theorem,
        docs/theory.md §4c′); the polyline's own length is not ``L`` (the geodesic is longer than the chord).

        Parameters
        ----------
        q : ndarray, shape (nq,)
        T : ndarray, shape (nb, 4, 4), optional
            The bodies' transforms at ``q``; needed when the set has wrapped paths.

        Raises
        ------
        ValueError
            The set has wrapped paths and ``T`` is missing.
        """
        if self.moving_terms is None and self.active_points is None and self.wrapping is None:
            return self.paths
        q = np.asarray(q, dtype=float)
        local = self.local_points.copy()
        if self.moving_terms is not None:
            moving = np.flatnonzero(self.moving_of_point >= 0)
            local[moving] += self.moving_terms.evaluate(q[None])[0][0, self.moving_of_point[moving]]
        if self.wrapping is None:
            active = self.all_active[0] if self.active_points is None else self.active_points.active(q)
            keys, muscles = np.where(active, self.point_index, np.inf), self.point_muscle
        else:
            if T is None:
                raise ValueError("`T` (the transforms at `q`, shape (nb, 4, 4)) is needed to locate the tangent "
                                 "points of the wrapped paths")
            T = np.asarray(T, dtype=float)
            nodes = self.path_points(_Transforms(q[None], T[None]))
            keys, muscles, positions = nodes.keys[0], nodes.muscles, nodes.positions[0]
        located = []
        for m, path in enumerate(self.paths):
            mine = np.flatnonzero((muscles == m) & np.isfinite(keys))
            points = []
            for node in mine[np.argsort(keys[mine], kind="stable")]:
                if node < local.shape[0]:  # a path point (a moving one where it is at q)
                    points.append((self.body_names[self.point_body[node]], local[node]))
                    continue
                body, x = int(self.wrapping.tangent_body[node - local.shape[0]]), positions[node]
                points.append((self.body_names[body], x if body == self.nb else T[body, :3, :3].T @ (x - T[body, :3, 3])))
            located.append(MusclePath(path.name, tuple(points), path.hill))
        return tuple(located)


@dataclass(frozen=True)
class _Transforms:
    """The kinematics :meth:`MuscleSet.path_points` reads: ``q`` and the transforms ``T``."""

    q: NDArray[np.float64]
    T: NDArray[np.float64]
