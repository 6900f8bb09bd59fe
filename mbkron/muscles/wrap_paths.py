"""Paths with wrapping surfaces: which segment each wrap acts on, lengths and exact moment arms.

A wrapped path is, at every state, a polyline through its active points and the tangent points of
its wraps, in which the piece between the two tangent points of one wrap is the surface geodesic
(:mod:`mbkron.muscles.wrapping`). The wraps are applied as OpenSim's
``GeometryPath::applyWrapObjects`` does:

- in the order of the path's wrap list, each wrap first removes its tangent points from the current
  path, then tries every segment of the current path (active points and the other wraps' tangent
  points, but not the geodesic piece of another wrap) between the first active point at or after
  its ``range`` start and the last active point at or before its ``range`` end, and wraps the one
  whose wrapping lengthens the path least (OpenSim takes the first segment that *meets* the surface,
  else the least lengthening: the same choice unless two segments meet it, which OpenSim calls
  ill-conditioned);
- with several wraps this is repeated until the tangent points stop moving (to
  :data:`TANGENT_TOLERANCE`, at most :data:`MAX_SWEEPS` sweeps): a Gauss–Seidel iteration whose fixed
  point has every wrap's tangent points optimal for its neighbours, so that ``L`` is stationary in all
  of them and the envelope theorem (``R`` with the tangent points held in their bodies) is exact.
  Where the sweeps do not settle in :data:`MAX_SWEEPS` (a wrap's decision — its side, quadrant or
  segment — flips with its neighbours' tangent points, so that no such fixed point exists), they start
  again with the path's ellipsoids going the short way round (their quadrant rule, which makes the long
  way a discontinuous choice, dropped); where even those do not settle, a ``ModelWarning`` names the
  muscle: the length is the last sweep's and ``R`` is not ``−dL/dq`` there.
  OpenSim stops after 8 sweeps or when the length changes by less than 0.5 mm, and with one wrap
  it sweeps once (so does mbkron: one wrap has no neighbours to wait for).

OpenSim also swaps the first two wraps when the first does not wrap and the second finds a point
inside its surface; mbkron does not.

The moment arms are those of the polyline with the tangent points fixed in their wrap bodies
(Eq. 195 with ``f_T1 = −u(P→T1)``, ``f_T2 = +u(T2→Q)``, no force along the geodesic); the path
points' forces replace those of the straight polyline in :class:`~mbkron.muscles.paths.MuscleSet`,
and :meth:`PathWrapping.tangent_moment_arms` adds the tangent points' part.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from mbkron.compiled.wrapping import COMPILED_KINDS, unsettled_message
from mbkron.core.errors import ConfigurationError, ModelWarning
from mbkron.muscles import complex_step as cs
from mbkron.muscles.wrap_ellipsoid import WrapEllipsoid

__all__ = ["PathWrapping", "WrapGeometry", "MAX_SWEEPS", "TANGENT_TOLERANCE"]

#: Most sweeps over the wraps of a path with several wraps.
MAX_SWEEPS = 100
#: The sweeps stop when no tangent point moved more than this (m).
TANGENT_TOLERANCE = 1e-13


@dataclass(frozen=True)
class WrapGeometry:
    """The wrapped paths at a batch of states.

    Attributes
    ----------
    lengths : ndarray, shape (..., M_w)
        Lengths of the wrapped muscles (:attr:`PathWrapping.muscles`).
    point_forces : ndarray, shape (..., P_w, 3)
        Forces per unit tension at their path points (:attr:`PathWrapping.point_rows`), ground frame.
    tangent_points, tangent_forces : ndarray, shape (..., T, 3)
        The tangent points (two per wrap, zero force where it does not wrap) and their forces.
    wrapped : ndarray of bool, shape (..., W)
        Which wraps wrap.
    order : list of ndarray
        Per wrapped muscle, its nodes (points then tangent points) in path order, −1 for absent ones,
        shape (..., N_m).
    """

    lengths: NDArray[np.float64]
    point_forces: NDArray[np.float64]
    tangent_points: NDArray[np.float64]
    tangent_forces: NDArray[np.float64]
    wrapped: NDArray[np.bool_]
    order: list


class PathWrapping:
    """The wraps of a muscle set.

    Parameters
    ----------
    paths : sequence of MusclePath
    body_index : mapping of str to int
    point_rows : sequence of ndarray
        Per path, the rows of its points in the muscle set.
    zero_length : float
        Straight pieces shorter than this raise.
    """

    def __init__(self, paths: Sequence, body_index: Mapping[str, int], point_rows: Sequence[NDArray], zero_length: float):
        self.nb, self.zero_length, self.paths = len(body_index), zero_length, tuple(paths)
        self.muscles, self.groups, rows, bodies, frames, labels = [], [], [], [], [], []
        for m, path in enumerate(paths):
            wraps = [w for w in getattr(path, "wraps", ()) if w.surface.active]
            if not wraps:
                continue
            n = len(path.points)
            spans = [(0 if w.range[0] < 1 else w.range[0] - 1, n - 1 if w.range[1] < 1 else w.range[1] - 1) for w in wraps]
            first_wrap = len(frames)
            for w in wraps:
                body = w.surface.body
                bodies += [self.nb if body == "ground" else body_index[body]] * 2
                frames.append(w.surface.frame())
                labels.append(w.surface.name)
            self.groups.append((len(self.muscles), np.asarray(point_rows[m]), [w.surface for w in wraps], spans,
                                first_wrap, len(rows)))
            self.muscles.append(m)
            rows.extend(point_rows[m])
        self.muscles = np.array(self.muscles, dtype=np.intp)
        self.point_rows = np.array(rows, dtype=np.intp)
        self.tangent_body = np.array(bodies, dtype=np.intp)
        self.frame_rotations = np.array([f[0] for f in frames]).reshape(-1, 3, 3)
        self.frame_translations = np.array([f[1] for f in frames]).reshape(-1, 3)
        self.wrap_names = tuple(labels)
        self.tables = self._kernel_tables()

    def _kernel_tables(self) -> tuple | None:
        """The constant arrays of :func:`mbkron.compiled.wrapping.wrapped_lengths_and_moment_arms` and the
        muscles' and wraps' names, or None when a surface has no compiled solver (then the paths are
        evaluated by :meth:`mbkron.muscles.paths.MuscleSet.geometry`; every surface of mbkron has one)."""
        surfaces = [(surface, span) for _, _, group, spans, *_ in self.groups for surface, span in zip(group, spans)]
        if not all(type(surface).__name__ in COMPILED_KINDS for surface, _ in surfaces):
            return None
        params = []
        for surface, _ in surfaces:
            if hasattr(surface, "outer_radius"):  # a torus: R, r
                sizes = (surface.outer_radius, surface.inner_radius, 0.0)
            else:
                sizes = getattr(surface, "dimensions", None) or (surface.radius, getattr(surface, "length", 0.0), 0.0)
            params.append((*surface.constraint(), *sizes))
        tables = (np.array([rows[0] for _, rows, *_ in self.groups], dtype=np.int64),
                  np.array([len(rows) for _, rows, *_ in self.groups], dtype=np.int64),
                  np.cumsum([0] + [len(group) for _, _, group, *_ in self.groups]).astype(np.int64),
                  np.array([COMPILED_KINDS[type(surface).__name__] for surface, _ in surfaces], dtype=np.int64),
                  np.array(params, dtype=float).reshape(-1, 5), self.frame_rotations.copy(),
                  self.frame_translations.copy(), self.tangent_body[::2].astype(np.int64).copy(),
                  np.array([span for _, span in surfaces], dtype=float).reshape(-1, 2))
        for array in tables:
            array.setflags(write=False)
        return tables + ((tuple(self.paths[m].name for m in self.muscles), self.wrap_names),)

    def wrap_frames(self, T: NDArray) -> tuple[NDArray, NDArray]:
        """Ground-frame rotations (..., W, 3, 3) and origins (..., W, 3) of all wraps' frames."""
        body = self.tangent_body[::2]
        on_ground = body == self.nb
        Tb = T[..., np.where(on_ground, 0, body), :, :]
        Rb = np.where(on_ground[:, None, None], np.eye(3), Tb[..., :3, :3])
        ob = np.where(on_ground[:, None], 0.0, Tb[..., :3, 3])
        return Rb @ self.frame_rotations, ob + (Rb @ self.frame_translations[..., None])[..., 0]

    def evaluate(self, T: NDArray, points: NDArray, active: NDArray | None, q: NDArray) -> WrapGeometry:
        """The wrapped paths at the states of ``T`` (..., nb, 4, 4), given the ground positions of all
        path points (..., P, 3) and which are active (None: all)."""
        batch, dtype = points.shape[:-2], points.dtype  # complex for a complex step (mbkron.muscles.complex_step)
        rotations, origins = self.wrap_frames(T)
        W = self.frame_rotations.shape[0]
        lengths = np.zeros(batch + (len(self.muscles),), dtype=dtype)
        point_forces = np.zeros(batch + (len(self.point_rows), 3), dtype=dtype)
        tangent_points, tangent_forces = np.zeros(batch + (2 * W, 3), dtype=dtype), np.zeros(batch + (2 * W, 3), dtype=dtype)
        wrapped, order = np.zeros(batch + (W,), dtype=bool), []
        for index, rows, surfaces, spans, first, first_row in self.groups:
            n, w_count = len(rows), len(surfaces)
            part = slice(first, first + w_count)
            X = np.concatenate([points[..., rows, :], np.zeros(batch + (2 * w_count, 3))], axis=-2)
            keys = np.full(batch + (n + 2 * w_count,), np.inf)
            keys[..., :n] = np.arange(n) if active is None else np.where(active[..., rows], np.arange(n), np.inf)
            owner = np.concatenate([np.full(n, -1), np.repeat(np.arange(w_count), 2)])
            arcs = np.zeros(batch + (w_count,), dtype=dtype)
            start = X.copy(), keys.copy()
            frames = rotations[..., part, :, :], origins[..., part, :]
            unsettled = self._sweeps(surfaces, spans, n, X, keys, owner, arcs, *frames)
            if unsettled.any():  # again from the start there, the ellipsoids the short way
                short = tuple(replace(surface, quadrant="all") if isinstance(surface, WrapEllipsoid) else surface
                              for surface in surfaces)
                again = start[0][unsettled], start[1][unsettled], np.zeros_like(arcs[unsettled])
                still = self._sweeps(short, spans, n, *again[:2], owner, again[2], *(f[unsettled] for f in frames))
                X[unsettled], keys[unsettled], arcs[unsettled] = again
                if still.any():
                    states = np.argwhere(unsettled)[still]
                    warnings.warn(unsettled_message(self.paths[self.muscles[index]].name, len(states),
                                                    tuple(states[0]), MAX_SWEEPS), ModelWarning, stacklevel=4)
            length, forces, node_order = self._polyline(X, keys, owner, arcs, q, index)
            lengths[..., index] = length
            point_forces[..., first_row:first_row + n, :] = forces[..., :n, :]
            tangent_points[..., 2 * first:2 * (first + w_count), :] = X[..., n:, :]
            tangent_forces[..., 2 * first:2 * (first + w_count), :] = forces[..., n:, :]
            wrapped[..., part] = np.isfinite(keys[..., n::2])
            order.append(node_order)
        return WrapGeometry(lengths, point_forces, tangent_points, tangent_forces, wrapped, order)

    def _sweeps(self, surfaces, spans, n: int, X: NDArray, keys: NDArray, owner: NDArray, arcs: NDArray,
                rotations: NDArray, origins: NDArray) -> NDArray[np.bool_]:
        """Sweep over one path's wraps until no tangent point moves (in place); where the sweeps did not
        settle in :data:`MAX_SWEEPS`, True (shape: the batch's)."""
        moved = np.zeros(X.shape[:-2])
        for _ in range(1 if len(surfaces) == 1 else MAX_SWEEPS):
            before = X[..., n:, :].copy()
            for w, (surface, span) in enumerate(zip(surfaces, spans)):
                self._apply(surface, span, w, n, X, keys, owner, arcs, rotations[..., w, :, :], origins[..., w, :])
            moved = np.abs((X[..., n:, :] - before).real).max(axis=(-2, -1), initial=0.0)
            if moved.max(initial=0.0) <= TANGENT_TOLERANCE:
                return np.zeros(moved.shape, dtype=bool)
        return moved > TANGENT_TOLERANCE if len(surfaces) > 1 else np.zeros(moved.shape, dtype=bool)

    @staticmethod
    def _apply(surface, span: tuple[int, int], w: int, n: int, X: NDArray, keys: NDArray, owner: NDArray,
               arcs: NDArray, rotation: NDArray, origin: NDArray) -> None:
        """Remove wrap ``w``'s tangent points from the path and wrap the best segment of its range (in place)."""
        slots = slice(n + 2 * w, n + 2 * w + 2)
        keys[..., slots] = np.inf
        order = np.argsort(keys, axis=-1, kind="stable")
        sorted_keys = np.take_along_axis(keys, order, axis=-1)
        sorted_X = np.take_along_axis(X, order[..., None], axis=-2)
        ka, kb = sorted_keys[..., :-1], sorted_keys[..., 1:]
        oa, ob = owner[order[..., :-1]], owner[order[..., 1:]]
        # OpenSim's range: from the first active point at or after its start to the last active one at or before its end
        first = keys[..., span[0]:span[1] + 1].min(axis=-1, initial=np.inf)[..., None]
        last = np.where(np.isfinite(keys[..., :span[1] + 1]), keys[..., :span[1] + 1], -np.inf).max(axis=-1)[..., None]
        candidate = np.isfinite(kb) & (ka >= first) & (kb <= last) & ~((oa == ob) & (oa >= 0))
        # the segments' ends in the wrap frame: Rᵀ (x − o)
        local = ((sorted_X - origin[..., None, :])[..., None, :] @ rotation[..., None, :, :])[..., 0, :]
        p, q = local[..., :-1, :], local[..., 1:, :]
        # only the candidate segments are solved (the others may join points on the surface, e.g. the
        # removed tangent points of this wrap, where the tangent problem is degenerate)
        hit, t1, t2, arc = np.zeros(candidate.shape, dtype=bool), p.copy(), q.copy(), np.zeros(candidate.shape, dtype=p.dtype)
        if candidate.any():
            hit[candidate], t1[candidate], t2[candidate], arc[candidate] = surface.solve(p[candidate], q[candidate])
        change = (np.linalg.norm((t1 - p).real, axis=-1) + arc.real + np.linalg.norm((q - t2).real, axis=-1)
                  - np.linalg.norm((q - p).real, axis=-1))  # (a decision: of the real parts)
        change = np.where(hit, change, np.inf)
        best = np.argmin(change, axis=-1)[..., None]
        found = np.take_along_axis(hit, best, axis=-1)[..., 0]
        k1, k2 = np.take_along_axis(ka, best, axis=-1)[..., 0], np.take_along_axis(kb, best, axis=-1)[..., 0]
        keys[..., n + 2 * w] = np.where(found, k1 + (k2 - k1) / 3, np.inf)
        keys[..., n + 2 * w + 1] = np.where(found, k1 + 2 * (k2 - k1) / 3, np.inf)
        for slot, tangent in ((0, t1), (1, t2)):
            local_point = np.take_along_axis(tangent, best[..., None], axis=-2)[..., 0, :]
            X[..., n + 2 * w + slot, :] = np.where(found[..., None], origin + (rotation @ local_point[..., None])[..., 0],
                                                   X[..., n + 2 * w + slot, :])  # (unchanged where it does not wrap)
        arcs[..., w] = np.where(found, np.take_along_axis(arc, best, axis=-1)[..., 0], 0.0)

    def _polyline(self, X: NDArray, keys: NDArray, owner: NDArray, arcs: NDArray, q: NDArray,
                  index: int) -> tuple[NDArray, NDArray, NDArray]:
        """Length, node forces ``f = u_out − u_in`` (none along a geodesic) and node order of one path."""
        order = np.argsort(keys, axis=-1, kind="stable")
        sorted_keys = np.take_along_axis(keys, order, axis=-1)
        sorted_X = np.take_along_axis(X, order[..., None], axis=-2)
        oa, ob = owner[order[..., :-1]], owner[order[..., 1:]]
        used = np.isfinite(sorted_keys[..., 1:])
        geodesic = used & (oa == ob) & (oa >= 0)
        straight = used & ~geodesic
        delta = sorted_X[..., 1:, :] - sorted_X[..., :-1, :]
        pieces = cs.norm(delta)
        short = straight & (pieces.real < self.zero_length)
        if short.any():
            where = tuple(np.argwhere(short)[0])
            raise ConfigurationError(
                f"muscle `{self.paths[self.muscles[index]].name}`: two consecutive points of its wrapped path "
                f"coincide at q = {q[where[:-1]].tolist()}: the line of action is undefined")
        units = np.divide(delta, pieces[..., None], out=np.zeros_like(delta), where=straight[..., None])
        length = np.where(straight, pieces, 0.0).sum(axis=-1) + arcs.sum(axis=-1)
        zero = np.zeros(units.shape[:-2] + (1, 3))
        sorted_forces = np.concatenate([units, zero], axis=-2) - np.concatenate([zero, units], axis=-2)
        forces = np.zeros_like(sorted_forces)
        np.put_along_axis(forces, order[..., None], sorted_forces, axis=-2)
        return length, forces, np.where(np.isfinite(sorted_keys), order, -1)

    def tangent_moment_arms(self, twists: NDArray, geometry: WrapGeometry, n_muscles: int) -> NDArray[np.float64]:
        """The tangent points' part of ``R`` (..., nq, M): ``Σ_t ω_bk · (x_t × f_t) + v_bk · f_t`` with
        ``b`` the wrap's body (Eq. 195, the tangent points held in it)."""
        batch, nq = twists.shape[:-4], twists.shape[-3]
        on_body = self.tangent_body < self.nb
        bodies = self.tangent_body[on_body]
        X, F = geometry.tangent_points[..., on_body, :], geometry.tangent_forces[..., on_body, :]
        moment = np.cross(X, F)
        twist = twists[..., bodies, :, :, :]  # (..., T, nq, 4, 4)
        omega = np.stack([twist[..., 2, 1], twist[..., 0, 2], twist[..., 1, 0]], axis=-1)
        per_point = (np.einsum("...tkx,...tx->...tk", omega, moment)
                     + np.einsum("...tkx,...tx->...tk", twist[..., :3, 3], F))
        muscle_of_tangent = np.repeat(self.wrap_muscles(), 2)[on_body]
        R = np.zeros(batch + (nq, n_muscles))
        np.add.at(np.moveaxis(R, -1, 0), muscle_of_tangent, np.moveaxis(per_point, -2, 0))
        return R

    def wrap_muscles(self) -> NDArray[np.intp]:
        """The muscle of every wrap, shape (W,)."""
        return np.concatenate([np.full(len(surfaces), self.muscles[index], dtype=np.intp)
                               for index, _, surfaces, *_ in self.groups]) if self.groups else np.zeros(0, np.intp)
