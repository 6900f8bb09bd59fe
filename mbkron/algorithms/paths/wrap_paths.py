"""Paths with wrapping surfaces: which segment each wrap acts on, lengths and exact moment arms.

A wrapped path is, at every state, a polyline through its active points and the tangent points of
its wraps, in which the piece between the two tangent points of one wrap is the surface geodesic
(:mod:`mbkron.multibody.muscles.wrapping`). The wraps are applied as OpenSim's
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
(Eq. 195 with ``f_T1 = −u(P→T1)``, ``f_T2 = +u(T2→Q)``, no force along the geodesic). One kernel,
:func:`mbkron.algorithms.paths.wrapping_kernels.wrapped_lengths_and_moment_arms`, applies these rules state by state;
:class:`PathWrapping` lays a muscle set's wraps out for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.numerics.geodesics.constants import COMPILED_KINDS

__all__ = ["PathWrapping", "MAX_SWEEPS", "TANGENT_TOLERANCE"]

#: Most sweeps over the wraps of a path with several wraps.
MAX_SWEEPS = 100
#: The sweeps stop when no tangent point moved more than this (m).
TANGENT_TOLERANCE = 1e-13


class PathWrapping:
    """The wraps of a muscle set, as the constant arrays of the wrapped-path kernel
    (:func:`mbkron.algorithms.paths.wrapping_kernels.wrapped_lengths_and_moment_arms`).

    Parameters
    ----------
    paths : sequence of MusclePath
    body_index : mapping of str to int
    point_rows : sequence of ndarray
        Per path, the rows of its points in the muscle set.

    Attributes
    ----------
    muscles : ndarray of int, shape (M_w,)
        The wrapped paths (those with an active wrap), in the set's order.
    surfaces : tuple
        The active wraps' surfaces, path by path in the order of each path's wrap list (the wrap order).
    spans : tuple of (int, int)
        Per wrap, the 0-based first and last path point of its range.
    wrap_names : tuple of str
        The surfaces' names, in the wrap order.
    tangent_body : ndarray of int, shape (2 W,)
        The body of each tangent point (its wrap's; ``nb``: the ground).
    tables : tuple
        The kernel's arrays and the muscles' and wraps' names.
    """

    def __init__(self, paths: Sequence, body_index: Mapping[str, int], point_rows: Sequence[NDArray]):
        nb = len(body_index)
        muscles, first_rows, counts, wrap_counts, surfaces, spans, bodies = [], [], [], [], [], [], []
        for m, path in enumerate(paths):
            wraps = [w for w in getattr(path, "wraps", ()) if w.surface.active]
            if not wraps:
                continue
            n = len(path.points)
            muscles.append(m)
            first_rows.append(point_rows[m][0])
            counts.append(n)
            wrap_counts.append(len(wraps))
            for w in wraps:
                surfaces.append(w.surface)
                spans.append((0 if w.range[0] < 1 else w.range[0] - 1, n - 1 if w.range[1] < 1 else w.range[1] - 1))
                bodies.append(nb if w.surface.body == "ground" else body_index[w.surface.body])
        self.muscles = np.array(muscles, dtype=np.intp)
        self.surfaces, self.spans = tuple(surfaces), tuple(spans)
        self.wrap_names = tuple(surface.name for surface in surfaces)
        self.tangent_body = np.repeat(np.array(bodies, dtype=np.intp), 2)
        self._wrap_muscles = np.repeat(self.muscles, wrap_counts).astype(np.intp)
        params = [surface.kernel_params() for surface in surfaces]
        frames = [surface.frame() for surface in surfaces]
        tables = (np.array(first_rows, dtype=np.int64), np.array(counts, dtype=np.int64),
                  np.cumsum([0] + wrap_counts).astype(np.int64),
                  np.array([COMPILED_KINDS[type(surface).__name__] for surface in surfaces], dtype=np.int64),
                  np.array(params, dtype=float).reshape(-1, 5),
                  np.array([f[0] for f in frames], dtype=float).reshape(-1, 3, 3),
                  np.array([f[1] for f in frames], dtype=float).reshape(-1, 3),
                  np.array(bodies, dtype=np.int64), np.array(spans, dtype=float).reshape(-1, 2))
        for array in (*tables, self.muscles, self.tangent_body, self._wrap_muscles):
            array.setflags(write=False)
        self.tables = tables + ((tuple(paths[m].name for m in muscles), self.wrap_names),)

    def wrap_muscles(self) -> NDArray[np.intp]:
        """The muscle of every wrap, shape (W,)."""
        return self._wrap_muscles
