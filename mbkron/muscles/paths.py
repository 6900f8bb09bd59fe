"""Musculotendon paths: straight segments through body-fixed and moving points; length and moment arms.

A path is a sequence of points, each fixed in a body (or the ground) or moving in it
(:class:`~mbkron.muscles.points.MovingPoint`), and possibly part of the path only while a coordinate
is in a range (a conditional point, :mod:`mbkron.muscles.conditions`); the musculotendon unit is the
polyline through the active points, or, where the path has wraps (:class:`~mbkron.muscles.wrapping.PathWrap`),
through the active points and the wraps' tangent points with surface geodesics between those
(:mod:`mbkron.muscles.wrap_paths`; moment arms exact by the envelope theorem, :mod:`mbkron.muscles.wrapping`). For tension ``F`` (> 0 pulls the ends
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

Everything is vectorised over the leading axes of ``q`` and over all muscles at once: the index
bookkeeping (which point is on which body, which segment belongs to which muscle) is done once,
into constant 0/1 matrices. Conditional points add, per state, the active set and the segment ends
(:class:`~mbkron.muscles.conditions.ActivePoints`); a set without them never computes these. Wrapped
paths replace their lengths and their points' forces and add their tangent points' part of ``R``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.compiled.paths import path_lengths_and_moment_arms
from mbkron.compiled.wrapping import wrapped_lengths_and_moment_arms
from mbkron.core.description import GROUND
from mbkron.core.errors import ConfigurationError
from mbkron.muscles import complex_step as cs
from mbkron.muscles.conditions import ActivePoints, condition_problems
from mbkron.muscles.points import MovingPoint, MovingPointTerms, point_condition
from mbkron.muscles.surfaces import SURFACES
from mbkron.muscles.wrap_paths import MAX_SWEEPS, TANGENT_TOLERANCE, PathWrapping, WrapGeometry
from mbkron.muscles.wrapping import PathWrap, surface_problems, wrap_method_problems

__all__ = ["MusclePath", "MuscleSet", "PathGeometry", "check_path", "ZERO_LENGTH"]

#: Segments shorter than this (m) have no direction: evaluation raises.
ZERO_LENGTH = 1e-12


@dataclass(frozen=True)
class MusclePath:
    """The description of one musculotendon unit.

    Attributes
    ----------
    name : str
    points : tuple
        Each ``(body, (x, y, z))`` (body coordinates, m; ``body`` may be ``"ground"``),
        ``(body, (x, y, z), condition)`` (a conditional point,
        :class:`~mbkron.muscles.conditions.PathPointCondition`) or a
        :class:`~mbkron.muscles.points.MovingPoint` (conditional if its ``active`` is set), from origin
        to insertion; the origin and the insertion are unconditional.
    hill : HillParameters or None
        Musculotendon parameters (:mod:`mbkron.muscles.hill`); None for a path without a force model.
    wraps : tuple of PathWrap
        The path's wraps in order (OpenSim's ``PathWrapSet``), each naming its surface and the range of
        points it may wrap (:mod:`mbkron.muscles.wrap_paths`).
    """

    name: str
    points: tuple
    hill: object = None
    wraps: tuple = ()


def check_path(path: MusclePath, bodies: set[str], coordinates: set[str], problems: list[str]) -> None:
    """Append to ``problems`` everything wrong with a muscle description."""
    where = f"muscle `{path.name}`"
    if not isinstance(path.name, str) or not path.name or not path.name.isprintable():
        # any printable name: OpenSim's (``ECU_pre-surgery``) are kept; no formula names a muscle
        problems.append(f"muscle name {path.name!r:.80} must be a non-empty string of printable characters")
    allowed = bodies | {GROUND}
    if len(path.points) < 2:
        problems.append(f"{where}: a path needs at least 2 points, got {len(path.points)}")
    for n, point in enumerate(path.points):
        label = f"{where}: point {n}"
        if isinstance(point, MovingPoint):
            body = point.body
            unknown = point.coordinate_names() - coordinates
            if unknown:
                problems.append(f"{label} (moving) depends on unknown coordinate(s) {', '.join(sorted(unknown))}")
        else:
            try:
                body, location = point[:2] if len(point) == 3 else point
                location = np.asarray(location, dtype=float)
            except (TypeError, ValueError):
                problems.append(f"{label} must be (body, (x, y, z)), (body, (x, y, z), PathPointCondition) "
                                f"or a MovingPoint, got {point!r}")
                continue
            if location.shape != (3,) or not np.all(np.isfinite(location)):
                problems.append(f"{label}: the location must be 3 finite numbers, got {point[1]!r}")
        if body not in allowed:
            problems.append(f"{label} names unknown body {body!r}; expected one of: {', '.join(sorted(allowed))}")
        condition = point_condition(point)
        if condition is not None:
            if n in (0, len(path.points) - 1):
                problems.append(f"{label} is the {'origin' if n == 0 else 'insertion'} and must be unconditional "
                                "(a path always has its two ends); make it a fixed or moving point without a condition")
            problems.extend(condition_problems(condition, coordinates, label))
    _check_wraps(path, allowed, problems)
    hill = path.hill
    if hill is not None and not hasattr(hill, "max_isometric_force"):
        problems.append(f"{where}: `hill` must be HillParameters or None, got {type(hill).__name__}")


def _check_wraps(path: MusclePath, bodies: set[str], problems: list[str]) -> None:
    """Append the problems of a path's wraps: surfaces, bodies, ranges, methods, repeats."""
    where = f"muscle `{path.name}`"
    if not isinstance(path.wraps, tuple):
        problems.append(f"{where}: `wraps` must be a tuple of PathWrap, got {type(path.wraps).__name__}")
        return
    seen = set()
    for n, wrap in enumerate(path.wraps):
        label = f"{where}: wrap {n}"
        if not isinstance(wrap, PathWrap) or type(wrap.surface).__name__ not in SURFACES:
            surface = getattr(wrap, "surface", wrap)
            problems.append(f"{label} must be a PathWrap of a wrap object ({', '.join(SURFACES)}), got "
                            f"{type(wrap).__name__} of {type(surface).__name__}")
            continue
        surface = wrap.surface
        problems.extend(f"{label}: {p}" for p in surface_problems(surface))
        if isinstance(surface.body, str) and surface.body not in bodies:
            problems.append(f"{label}: wrap object `{surface.name}` is on unknown body {surface.body!r}; expected one "
                            f"of: {', '.join(sorted(bodies))}")
        if surface.name in seen:
            problems.append(f"{label}: wrap object `{surface.name}` is listed twice")
        seen.add(surface.name)
        problems.extend(wrap_method_problems(wrap.method, label))
        bounds = wrap.range
        count = len(path.points)
        if (not isinstance(bounds, tuple) or len(bounds) != 2
                or not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)):
            problems.append(f"{label}: `range` must be 2 integers (1-based first and last points, < 1 for the ends), "
                            f"got {bounds!r}")
            continue
        first = 1 if bounds[0] < 1 else bounds[0]
        last = count if bounds[1] < 1 else bounds[1]
        if not 1 <= first < last <= count:
            problems.append(f"{label}: `range` {list(bounds)} must name points 1 ≤ first < last ≤ {count} of the path "
                            "(< 1 for the ends)")


@dataclass(frozen=True)
class PathGeometry:
    """Positions and segments of all paths at one batch of states.

    Attributes
    ----------
    points : ndarray, shape (..., P, 3)
        Ground-frame positions of all path points (all muscles concatenated).
    units : ndarray, shape (..., S, 3)
        Unit vectors of all segments.
    segment_lengths : ndarray, shape (..., S)
    lengths : ndarray, shape (..., M)
        Path lengths ``L_m``, m.
    offset_gradients : ndarray, shape (..., P_moving, 3, nq) or None
        ``∂δ_j/∂q`` of the moving points, body frame.
    moving_rotations : ndarray, shape (..., P_moving, 3, 3) or None
        Rotation matrices of the moving points' bodies.
    active : ndarray of bool, shape (..., P), or None
        Which points are active (None: a set without conditional points, all are); segments whose
        start is inactive have zero length and unit vector.
    wrap : WrapGeometry or None
        The wrapped paths (None: a set without wraps); ``lengths`` include them, ``units`` and
        ``segment_lengths`` are those of their straight polylines.
    """

    points: NDArray[np.float64]
    units: NDArray[np.float64]
    segment_lengths: NDArray[np.float64]
    lengths: NDArray[np.float64]
    offset_gradients: NDArray[np.float64] | None
    moving_rotations: NDArray[np.float64] | None
    active: NDArray[np.bool_] | None = None
    wrap: WrapGeometry | None = None


class MuscleSet:
    """All musculotendon paths of a model, compiled into index arrays for vectorised evaluation.

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
        ground = self.nb
        bodies, local, muscle_of_point, moving_rows, slots, labels, extrapolate = [], [], [], [], [], [], []
        starts, segment_muscle, conditions, point_rows = [], [], [], []
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
            starts += range(first, len(bodies) - 1)
            segment_muscle += [m] * (len(path.points) - 1)
        P, S, M = len(bodies), len(starts), len(self.paths)
        self.point_body = np.array(bodies, dtype=np.int64)
        self.local_points = np.array(local).reshape(P, 3)
        self.segment_start = np.array(starts, dtype=np.int64)
        self.segment_end = self.segment_start + 1
        self.segment_muscle = np.array(segment_muscle, dtype=np.intp)
        # f = D u: +u_s on the first point of segment s, −u_s on its second
        self.segment_to_point = np.zeros((P, S))
        self.segment_to_point[self.segment_start, np.arange(S)] = 1.0
        self.segment_to_point[self.segment_end, np.arange(S)] = -1.0
        self.segment_to_muscle = np.zeros((M, S))
        self.segment_to_muscle[self.segment_muscle, np.arange(S)] = 1.0
        # (muscle, body) pairs: C[m * (nb + 1) + b, j] = 1 when point j of muscle m is on body b
        self.point_to_body_muscle = np.zeros((M * (self.nb + 1), P))
        self.point_to_body_muscle[np.array(muscle_of_point) * (self.nb + 1) + self.point_body, np.arange(P)] = 1.0
        self.moving_rows = np.array(moving_rows, dtype=np.intp)
        self.moving_selection = np.zeros((P, len(moving_rows)))  # local += selection @ offsets
        self.moving_selection[self.moving_rows, np.arange(len(moving_rows))] = 1.0
        # ground points: gathered from body 0 (any body) and then replaced by their local coordinates
        self.on_ground = (self.point_body == ground)[:, None]
        self.gather_body = np.where(self.point_body == ground, 0, self.point_body)
        self.moving_to_muscle = np.zeros((M, len(moving_rows)))
        self.moving_to_muscle[np.array(muscle_of_point, dtype=np.intp)[self.moving_rows], np.arange(len(moving_rows))] = 1
        self.point_muscle = np.array(muscle_of_point, dtype=np.int64)
        self.moving_of_point = np.full(P, -1, dtype=np.int64)
        self.moving_of_point[self.moving_rows] = np.arange(len(moving_rows))
        # one number per place: body-fixed points at one location on one body share it (a segment between
        # them adds nothing: :func:`mbkron.compiled.paths.same_place`), every other point has its own
        places = {}
        self.place = np.array([places.setdefault((b, tuple(x)), len(places)) if row < 0 else -1 - j for j, (b, x, row)
                               in enumerate(zip(self.point_body.tolist(), self.local_points.tolist(),
                                                self.moving_of_point.tolist()))], dtype=np.int64)
        self.moving_terms = (MovingPointTerms(slots, len(moving_rows), coordinate_names, labels, extrapolate)
                             if moving_rows else None)
        # the code path is chosen here: a set without conditional points never computes an active set
        self.active_points = ActivePoints(conditions, coordinate_names, self.segment_start, P) if conditions else None
        self._segments = self._fixed_segments if self.active_points is None else self._conditional_segments
        self.all_active = np.ones((1, P), dtype=bool)
        wrapping = PathWrapping(self.paths, body_index, point_rows, ZERO_LENGTH)
        self.wrapping = wrapping if wrapping.muscles.size else None
        if self.wrapping is not None:  # the compiled straight-path kernel skips the wrapped paths' points
            rows = np.flatnonzero(~np.isin(self.point_muscle, self.wrapping.muscles))
            renumber = np.cumsum(np.isin(np.arange(P), rows)) - 1
            kept = self.segment_start[~np.isin(self.segment_muscle, self.wrapping.muscles)]
            self._straight = (rows, self.point_body[rows], self.point_muscle[rows], self.moving_of_point[rows],
                              self.local_points[rows], renumber[kept].astype(np.int64))
            for array in self._straight:
                array.setflags(write=False)
        for array in (self.place, self.point_body, self.local_points, self.segment_start, self.segment_end, self.segment_muscle,
                      self.point_muscle, self.moving_of_point, self.all_active,
                      self.segment_to_point, self.segment_to_muscle, self.point_to_body_muscle, self.moving_rows,
                      self.moving_to_muscle, self.moving_selection, self.on_ground, self.gather_body):
            array.setflags(write=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.paths)

    @property
    def size(self) -> int:
        return len(self.paths)

    def lengths(self, kin) -> NDArray[np.float64]:
        """Path lengths ``L_m`` at the states of ``kin`` (any order), m, shape (..., M)."""
        return self.geometry(kin).lengths

    def compiled_lengths_and_moment_arms(self, kin, order: int) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """Lengths and (``order`` 1) moment arms by the compiled kernels (the engine's):
        :func:`mbkron.compiled.paths.path_lengths_and_moment_arms` for the straight paths and
        :func:`mbkron.compiled.wrapping.wrapped_lengths_and_moment_arms` for the wrapped ones (by the numpy
        route, :meth:`geometry`, when a surface has no compiled solver)."""
        offsets = gradients = None
        if self.moving_terms is not None:
            offsets, gradients = self.moving_terms.evaluate(kin.q, compiled=True)
        active = self.all_active if self.active_points is None else self.active_points.active(kin.q)
        wrapping = self.wrapping
        compiled_wraps = wrapping is not None and wrapping.tables is not None
        lengths, R = self._compiled_straight(kin, order, offsets, gradients, active, compiled_wraps)
        if wrapping is None:
            return lengths, R
        if compiled_wraps:
            wrapped_lengths, wrapped_R, short = wrapped_lengths_and_moment_arms(
                kin.T, kin.twists if order else None, self.point_body, self.moving_of_point, self.local_points, offsets,
                gradients, active, wrapping.tables, TANGENT_TOLERANCE, MAX_SWEEPS, ZERO_LENGTH, kin.q)
            if short >= 0:
                self.geometry(kin)  # raises the ConfigurationError naming the muscle and q
        else:
            geometry = self.geometry(kin)
            wrapped_lengths = geometry.lengths[..., wrapping.muscles]
            wrapped_R = self.moment_arms(kin, geometry)[..., wrapping.muscles] if order else None
        lengths[..., wrapping.muscles] = wrapped_lengths
        if order:
            R[..., wrapping.muscles] = wrapped_R
        return lengths, R

    def _compiled_straight(self, kin, order: int, offsets: NDArray | None, gradients: NDArray | None, active: NDArray,
                           skip_wrapped: bool) -> tuple[NDArray, NDArray | None]:
        """The straight-path kernel over all paths, or (``skip_wrapped``) over the unwrapped ones only
        (the wrapped paths' columns are then zero)."""
        if not skip_wrapped:
            arrays = (self.point_body, self.point_muscle, self.moving_of_point, self.local_points, self.segment_start)
        elif self._straight[0].size:
            rows, *arrays = self._straight
            active = active[..., rows]
        else:  # every path wraps
            batch = kin.q.shape[:-1]
            return np.zeros(batch + (self.size,)), np.zeros(batch + (self.nq, self.size)) if order else None
        body, muscle, moving, local, starts = arrays
        lengths, R, short = path_lengths_and_moment_arms(kin.T, kin.twists if order else None, body, muscle, moving,
                                                         local, offsets, gradients, starts, self.size, ZERO_LENGTH, active)
        if short >= 0:
            self.geometry(kin)  # raises the ConfigurationError naming the muscle, its points and q
        return lengths, R

    def geometry(self, kin) -> PathGeometry:
        """Point positions, segment directions and path lengths at the states of ``kin``.

        Parameters
        ----------
        kin : KinematicsData
            Any order.

        Raises
        ------
        ConfigurationError
            A segment of zero length (its direction, hence the force, is undefined), naming the
            muscle, the points and q; a moving point outside its tabulated range.
        """
        q = kin.q
        offsets, offset_gradients, moving_rotations = None, None, None
        if self.moving_terms is not None:
            offsets, offset_gradients = self.moving_terms.evaluate(q)
        points = self._points(kin.T, offsets)
        if self.moving_terms is not None:
            rotations = kin.T[..., self.gather_body[self.moving_rows], :3, :3]
            moving_rotations = np.where(self.on_ground[self.moving_rows, :, None], np.eye(3), rotations)
        active, segment_lengths, units = self._segments(q, points)
        lengths = segment_lengths @ self.segment_to_muscle.T
        wrap = None
        if self.wrapping is not None:
            wrap = self.wrapping.evaluate(kin.T, points, active, q)
            lengths[..., self.wrapping.muscles] = wrap.lengths
        return PathGeometry(points, units, segment_lengths, lengths, offset_gradients, moving_rotations, active, wrap)

    def _points(self, T: NDArray, offsets: NDArray | None) -> NDArray[np.float64]:
        """Ground positions of all path points (Eq. 41), shape (..., P, 3); ``offsets``: the moving points'."""
        local = self.local_points if offsets is None else self.local_points + self.moving_selection @ offsets
        T = T[..., self.gather_body, :, :]
        return np.where(self.on_ground, local, (T[..., :3, :3] @ local[..., None])[..., 0] + T[..., :3, 3])

    def _fixed_segments(self, q: NDArray, points: NDArray) -> tuple[None, NDArray, NDArray]:
        """Active set (None: all points), segment lengths and unit vectors of paths without conditions."""
        delta = points[..., self.segment_end, :] - points[..., self.segment_start, :]
        segment_lengths = cs.norm(delta)
        moves = self.place[self.segment_start] != self.place[self.segment_end]  # else a segment of length 0, no force
        self._check_lengths(q, moves & (segment_lengths.real < ZERO_LENGTH), segment_lengths, self.segment_end)
        units = np.divide(delta, segment_lengths[..., None], out=np.zeros_like(delta), where=moves[:, None])
        return None, segment_lengths, units

    def _conditional_segments(self, q: NDArray, points: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """Active set, segment lengths and unit vectors of the active polylines (zero for the
        segments whose start is inactive)."""
        active = self.active_points.active(q)
        ends = self.active_points.segment_ends(active)
        delta = np.take_along_axis(points, ends[..., None], axis=-2) - points[..., self.segment_start, :]
        used = active[..., self.segment_start] & (self.place[self.segment_start] != self.place[ends])
        segment_lengths = np.where(used, cs.norm(delta), 0.0)  # (none between two points at one place)
        self._check_lengths(q, used & (segment_lengths.real < ZERO_LENGTH), segment_lengths, ends)
        units = np.divide(delta, segment_lengths[..., None], out=np.zeros_like(delta), where=used[..., None])
        return active, segment_lengths, units

    def _check_lengths(self, q: NDArray, short: NDArray, segment_lengths: NDArray, ends: NDArray) -> None:
        """Raise the ConfigurationError for the first segment flagged ``short`` (zero length); ``ends``:
        the segments' end points, (S,) or of the shape of ``short``."""
        if not short.any():
            return
        where = tuple(np.argwhere(short)[0])
        s = int(where[-1])
        end = int(np.broadcast_to(ends, short.shape)[where])
        first = int(np.flatnonzero(self.point_muscle == self.segment_muscle[s])[0])
        raise ConfigurationError(
            f"muscle `{self.paths[self.segment_muscle[s]].name}`: points {self.segment_start[s] - first} and "
            f"{end - first} of its path coincide at q = {q[where[:-1]].tolist()} "
            f"(segment length {segment_lengths[where].real:.3g} m): the line of action is undefined"
        )

    def point_forces(self, geometry: PathGeometry) -> NDArray[np.float64]:
        """Force at every path point per unit tension, ``f_j = u_j − u_{j−1}`` (the segments of the
        active polyline; zero at inactive points; a wrapped path's with its tangent points), shape (..., P, 3)."""
        if geometry.active is not None:
            forces = self.active_points.point_forces(geometry.active, geometry.units)
        else:
            forces = np.swapaxes(np.swapaxes(geometry.units, -1, -2) @ self.segment_to_point.T, -1, -2)
        if geometry.wrap is not None:
            forces[..., self.wrapping.point_rows, :] = geometry.wrap.point_forces
        return forces

    def moment_arms(self, kin, geometry: PathGeometry | None = None) -> NDArray[np.float64]:
        """Moment-arm matrix ``R = −∂L/∂q`` by the ground-frame sparse column form (Eq. 195).

        Parameters
        ----------
        kin : KinematicsData
            With ``order >= 1`` (twists needed).
        geometry : PathGeometry, optional
            From :meth:`geometry` at the same states (computed if omitted).

        Returns
        -------
        ndarray, shape (..., nq, M)
            ``R[..., k, m]``: generalized force on ``q_k`` per newton of tension in muscle ``m``
            (m for angles, dimensionless for lengths).
        """
        geometry = self.geometry(kin) if geometry is None else geometry
        forces = self.point_forces(geometry)
        batch, nb, nq, M = kin.q.shape[:-1], self.nb, self.nq, self.size
        # Σ_{j on b} f_j p̄_jᵀ per (muscle, body): the GMLAV E_mb (last column) and, through the
        # skew part, its moment Ê_mb (Definitions 3-5, Eq. 153-154), ground frame.
        homogeneous = np.concatenate([geometry.points, np.ones(geometry.points.shape[:-1] + (1,))], axis=-1)
        outer = (forces[..., :, None] * homogeneous[..., None, :]).reshape(batch + (-1, 12))
        wrenches = (self.point_to_body_muscle @ outer).reshape(batch + (M, nb + 1, 12))[..., :nb, :]
        # R_km = Σ_b ⟨Ω_bk[:3, :], Σ_j f_j p̄_jᵀ⟩ = Σ_b (ω_bk·Ê_mb + v_bk·E_mb)   (Eq. 195)
        twists = np.swapaxes(kin.twists[..., :3, :].reshape(batch + (nb, nq, 12)), -2, -3)
        R = twists.reshape(batch + (nq, nb * 12)) @ np.swapaxes(wrenches.reshape(batch + (M, nb * 12)), -1, -2)
        if self.moving_terms is not None:
            R = R + self.sliding_moment_arms(geometry, forces)
        if geometry.wrap is not None:
            R = R + self.wrapping.tangent_moment_arms(kin.twists, geometry.wrap, M)
        return R

    def sliding_moment_arms(self, geometry: PathGeometry, forces: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """The part of ``R`` from moving points sliding on their bodies: ``Σ_j (ᵇR_jᵀ f_j) · ∂δ_j/∂q``.

        A moving point's offset ``δ_j(q)`` in its body adds ``f_j · ᵇR_j ∂δ_j/∂q_k`` per unit tension
        to ``R_km`` (the body-fixed part is Eq. 195 at the point's current location).

        Returns
        -------
        ndarray, shape (..., nq, M)
            Zero without moving points.
        """
        if self.moving_terms is None:
            return np.zeros(geometry.lengths.shape[:-1] + (self.nq, self.size))
        forces = self.point_forces(geometry) if forces is None else forces
        body_forces = (np.swapaxes(geometry.moving_rotations, -1, -2) @ forces[..., self.moving_rows, :, None])[..., 0]
        sliding = np.einsum("...px,...pxk->...kp", body_forces, geometry.offset_gradients)
        return sliding @ self.moving_to_muscle.T

    def located_paths(self, q: NDArray[np.float64], T: NDArray[np.float64] | None = None) -> tuple[MusclePath, ...]:
        """The paths at one state as polylines of body-fixed points (what the seed's forms of
        :mod:`mbkron.reference.muscle_paths` need): the active points only, every moving point fixed where it is
        at ``q``, and a wrapped path's tangent points (:meth:`PathWrapping.evaluate
        <mbkron.muscles.wrap_paths.PathWrapping.evaluate>`) as points fixed in their wrap's body, in path order.

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
        offsets = None if self.moving_terms is None else self.moving_terms.evaluate(q)[0]
        local = self.local_points if offsets is None else self.local_points + self.moving_selection @ offsets
        active = self.all_active[0] if self.active_points is None else self.active_points.active(q)
        bodies = [point.body if isinstance(point, MovingPoint) else point[0]
                  for path in self.paths for point in path.points]
        located = [[(bodies[row], local[row]) for row in np.flatnonzero((self.point_muscle == m) & active)]
                   for m in range(self.size)]
        if self.wrapping is not None:
            if T is None:
                raise ValueError("`T` (the transforms at `q`, shape (nb, 4, 4)) is needed to locate the tangent "
                                 "points of the wrapped paths")
            points = self._points(T, offsets)
            wrap = self.wrapping.evaluate(T, points, None if self.active_points is None else active, q)
            for (index, wrap_rows, surfaces, _, first, _), order in zip(self.wrapping.groups, wrap.order):
                n, nodes = len(wrap_rows), []
                for node in order[order >= 0]:
                    if node < n:
                        nodes.append((bodies[wrap_rows[node]], local[wrap_rows[node]]))
                        continue
                    tangent = 2 * first + node - n
                    body, x = surfaces[(node - n) // 2].body, wrap.tangent_points[tangent]
                    b = self.wrapping.tangent_body[tangent]
                    nodes.append((body, x if b == self.nb else T[b, :3, :3].T @ (x - T[b, :3, 3])))
                located[self.wrapping.muscles[index]] = nodes
        return tuple(MusclePath(path.name, tuple(points), path.hill) for path, points in zip(self.paths, located))
