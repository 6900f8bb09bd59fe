"""The surfaces' shortest paths over batches of segments: the compiled kernels, one segment at a time.

The one implementation of each surface's shortest path is its kernel (:func:`~mbkron.numerics.geodesics.circular.sphere_path`,
:func:`~mbkron.numerics.geodesics.circular.cylinder_path`, :func:`~mbkron.numerics.geodesics.ellipsoid.ellipsoid_path`,
:func:`~mbkron.numerics.geodesics.torus.torus_path`), called by the wrapped-path kernel
(:mod:`mbkron.algorithms.paths.wrapping_kernels`) and, here, over a batch of segments for the surfaces' public
``solve(p, q)`` (:meth:`mbkron.multibody.muscles.wrapping.WrapSurface.solve`) and the torus's OpenSim decisions
(:func:`ring_points`, :func:`segments_enter_torus`). The kinds and parameters are those of the
wrapped-path kernel's tables: ``kind`` 0 sphere, 1 cylinder, 2 ellipsoid, 3 torus
(:data:`mbkron.numerics.geodesics.constants.COMPILED_KINDS`), ``params`` the quadrant's axis and sign, then the
sphere's radius, the cylinder's radius and length, the ellipsoid's three semi-axes or the torus's ``R``
and ``r``. Real points only: the paths are not complex-step differentiable (their derivatives are the
envelope theorem's, :mod:`mbkron.multibody.muscles.wrapping`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.numerics.geodesics import ellipsoid as wrap_ellipsoid, torus as wrap_torus
from mbkron.jit.calls import by_address
from mbkron.jit.common import jit
from mbkron.numerics.geodesics.circular import cylinder_path, sphere_path
from mbkron.numerics.geodesics.ellipsoid import FAILED, ellipsoid_path
from mbkron.numerics.geodesics.torus import enters_solid, ring_point, torus_path
from mbkron.core.arguments import state_array
from mbkron.core.errors import ConfigurationError

__all__ = ["failure_reason", "surface_path", "surface_path_at", "segment_paths", "ring_points", "segments_enter_torus"]

_SHOWN = 3
"""Failed segments named in a message."""


def failure_reason(kind: int, params: ArrayLike) -> str:
    """Why a wrap's solver failed (``kind`` 2: the ellipsoid's, 3: the torus's; ``params`` as the module's):
    the end of the ConfigurationError's message, after where it failed (the segments' points)."""
    params = np.asarray(params, dtype=float)
    if kind == 3:
        return (f"there is no path round the inner side of the torus with outer_radius {params[2]} and "
                f"inner_radius {params[3]}: the straight segment enters the torus, OpenSim would wrap it, but "
                f"Newton's method from OpenSim's cylinder approximation (and two other guesses) found no path that "
                f"touches the tube once (to {wrap_torus.TOLERANCE} m in {wrap_torus.MAX_ITERATIONS} iterations) "
                "without cutting it; a segment through the tube twice, or past its outer side, needs another wrap "
                "object")
    return (f"the shortest path over the ellipsoid with semi-axes {params[2:5].tolist()} did not converge: "
            f"Newton's method did not reach {wrap_ellipsoid.TOLERANCE} m in {wrap_ellipsoid.MAX_ITERATIONS} "
            "iterations even by continuation from a sphere")


_ellipsoid_path_at, _torus_path_at = by_address(ellipsoid_path), by_address(torus_path)
"""The two iterative solvers called through their addresses (:mod:`mbkron.jit.calls`): each compiled once."""


@jit
def surface_path(kind, params, sign, p, q, semi_axes, t1, t2):  # pragma: no cover - compiled
    """The shortest path from ``p`` to ``q`` (wrap frame) over the surface of ``kind`` with ``params`` (the
    module's), its tangent points into ``t1``, ``t2``; ``sign`` the quadrant's sign (``params[1]``, or 0 to
    drop the quadrant); ``semi_axes`` a (3,) work array. Returns the surface kernel's arc length, or
    ``NO_WRAP`` or ``FAILED`` (:mod:`mbkron.numerics.geodesics.ellipsoid`). The one dispatch on the kind, for the
    wrapped-path kernel (:mod:`mbkron.algorithms.paths.wrapping_kernels`) and :func:`segment_paths`."""
    axis = int(params[0])
    if kind == 0:
        return sphere_path(p, q, params[2], axis, sign, t1, t2)
    if kind == 1:
        return cylinder_path(p, q, params[2], params[3], axis, sign, t1, t2)
    if kind == 2:
        for c in range(3):
            semi_axes[c] = params[2 + c]
        return _ellipsoid_path_at((p, q, semi_axes, axis, sign, t1, t2))
    return _torus_path_at((p, q, params[2], params[3], axis, sign, t1, t2))


surface_path_at = by_address(surface_path)
""":func:`surface_path` called through its address (:mod:`mbkron.jit.calls`): the surfaces' solvers are
compiled once, not again inside each of their callers (here and :mod:`mbkron.algorithms.paths.wrapping_kernels`)."""


@jit
def _paths(kind, params, p, q, t1, t2, arcs):  # pragma: no cover - compiled
    """``arcs[i]`` = :func:`surface_path` of the segment ``p[i] → q[i]`` (its tangent points into ``t1[i]``,
    ``t2[i]``)."""
    semi_axes = np.empty(3)
    for i in range(p.shape[0]):
        arcs[i] = surface_path_at((kind, params, int(params[1]), p[i], q[i], semi_axes, t1[i], t2[i]))


@jit
def _ring_points(p, q, R, axis, sign, c, found):  # pragma: no cover - compiled
    for i in range(p.shape[0]):
        found[i] = ring_point(p[i], q[i], R, axis, sign, c[i])


@jit
def _enter(p, q, R, r, entering):  # pragma: no cover - compiled
    for i in range(p.shape[0]):
        entering[i] = enters_solid(p[i], q[i], R, r)


def _segments(p: ArrayLike, q: ArrayLike) -> tuple[tuple[int, ...], NDArray, NDArray]:
    """The batch shape and the rows (C-contiguous, shape (m, 3)) of ``p`` and ``q`` broadcast together."""
    meaning = "points of the wrap frame (m)"
    p, q = np.broadcast_arrays(state_array(p, "p", 3, meaning), state_array(q, "q", 3, meaning))
    return p.shape[:-1], np.ascontiguousarray(p.reshape(-1, 3)), np.ascontiguousarray(q.reshape(-1, 3))


def segment_paths(kind: int, params: ArrayLike, p: ArrayLike, q: ArrayLike
                  ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The shortest paths from ``p`` to ``q`` over one surface, by its kernel segment by segment.

    Parameters
    ----------
    kind : int
        The surface (module documentation).
    params : array_like, shape (5,)
        The quadrant's axis and sign, then the surface's sizes (m), zero-padded.
    p, q : array_like, shape (..., 3)
        The segments' ends in the wrap frame (m), broadcast together; real and finite.

    Returns
    -------
    wrapped, t1, t2, arc : ndarray, shapes (...), (..., 3), (..., 3), (...)
        The contract of :meth:`mbkron.multibody.muscles.wrapping.WrapSurface.solve`: where not wrapped ``t1 = t2 =
        (p + q)/2`` (so that ``|t1 − p| + |q − t2|`` is the straight length) and ``arc = 0``.

    Raises
    ------
    TypeError, ValueError, ConfigurationError
        ``p`` or ``q`` complex (a complex step: not supported), of another shape, or not finite
        (:func:`mbkron.core.arguments.state_array`).
    ConfigurationError
        Where the ellipsoid's or the torus's solver fails (the kernel's :data:`~mbkron.numerics.geodesics.ellipsoid.FAILED`):
        the message names the first segments and :func:`failure_reason`.
    """
    shape, p, q = _segments(p, q)
    params = np.array(params, dtype=float, order="C")
    params.setflags(write=False)  # read-only, as the wrapped-path kernel's: one specialisation of surface_path
    middle = 0.5 * (p + q)
    t1, t2, arcs = middle.copy(), middle.copy(), np.empty(len(p))
    _paths(int(kind), params, p, q, t1, t2, arcs)
    failed = np.flatnonzero(arcs == FAILED)
    if failed.size:
        where = "; ".join(f"p={p[i].tolist()}, q={q[i].tolist()}" for i in failed[:_SHOWN])
        raise ConfigurationError(f"at {failed.size} of {len(p)} segments ({where}; wrap frame) "
                                 f"{failure_reason(kind, params)}")
    wrapped = arcs >= 0.0
    # (a kernel may leave a rejected attempt's tangent points where it does not wrap)
    t1[~wrapped], t2[~wrapped] = middle[~wrapped], middle[~wrapped]
    return (wrapped.reshape(shape), t1.reshape(shape + (3,)), t2.reshape(shape + (3,)),
            np.where(wrapped, arcs, 0.0).reshape(shape))


def ring_points(p: ArrayLike, q: ArrayLike, outer_radius: float, axis: int, sign: int
                ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """OpenSim's ring points of the segments ``p → q`` (shape (..., 3), broadcast) by
    :func:`mbkron.numerics.geodesics.torus.ring_point`: ``found`` (...,) and ``c`` (..., 3)."""
    shape, p, q = _segments(p, q)
    c, found = np.empty_like(p), np.empty(len(p), dtype=bool)
    _ring_points(p, q, float(outer_radius), int(axis), int(sign), c, found)
    return found.reshape(shape), c.reshape(shape + (3,))


def segments_enter_torus(p: ArrayLike, q: ArrayLike, outer_radius: float, inner_radius: float) -> NDArray[np.bool_]:
    """Whether the segments ``p → q`` (shape (..., 3), broadcast) pass through the interior of the solid
    torus, by :func:`mbkron.numerics.geodesics.torus.enters_solid`; shape (...)."""
    shape, p, q = _segments(p, q)
    entering = np.empty(len(p), dtype=bool)
    _enter(p, q, float(outer_radius), float(inner_radius), entering)
    return entering.reshape(shape)
