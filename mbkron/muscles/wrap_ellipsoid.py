"""The shortest path over an ellipsoid: OpenSim's ``WrapEllipsoid`` solved exactly (issue #16).

A path segment from ``p`` to ``q`` (both outside the ellipsoid, in the ellipsoid's frame: centre at
the origin, semi-axes ``a = (a₀, a₁, a₂)`` along x, y, z) that may not enter the ellipsoid
``E = {x : xᵀ A x ≤ 1}``, ``A = diag(a)⁻²``, is as short as possible. Where the straight segment misses
the interior of ``E`` it is the answer (not wrapped); otherwise the shortest path is a straight
segment ``p → t₁`` tangent to ``E``, a geodesic of the surface from ``t₁`` to ``t₂``, and a straight
segment ``t₂ → q`` tangent to ``E``, with no kink at ``t₁`` and ``t₂`` (the first variation of the length
with respect to the tangent points vanishes only if the directions agree). Its length

    L = |t₁ − p| + s + |q − t₂|,

with ``s`` the geodesic's arc length, is a minimum over the tangent points, so (envelope theorem)
``∂L/∂p = (p − t₁)/|p − t₁|`` and ``∂L/∂q = (q − t₂)/|q − t₂|`` with ``t₁, t₂`` held fixed: the exact
moment arms of a wrapping path (the wrapping framework, :mod:`mbkron.muscles`, uses them).

Method (shooting on the geodesic equation)
------------------------------------------
- ``t₁`` lies on the *horizon* of ``p``: the surface points whose tangent plane contains ``p``. In the
  scaled coordinates ``y = x / a`` (componentwise) ``E`` is the unit ball, tangency is affine invariant,
  and the horizon is the circle ``{y : |y| = 1, y·P = 1}`` (``P = p / a``): centre ``P/|P|²``, radius
  ``√(1 − 1/|P|²)``. It is parametrised by one angle ``φ`` (:func:`horizon_point`); the segment's
  direction ``u = (t₁ − p)/|t₁ − p|`` is then tangent to the surface at ``t₁``.
- The geodesic from ``t₁`` with initial direction ``u`` solves, for an implicit surface ``F(x) = 0``
  with ``∇F = 2 A x``, ``x'' = −(x'ᵀ A x' / |A x|²) A x`` (arc length ``σ``; its acceleration is
  normal to the surface). It is integrated over ``σ ∈ [0, s]`` by the explicit 8th-order Runge–Kutta
  method of Dormand and Prince (DOP853's coefficients, :func:`geodesic`) with ``n`` equal steps,
  ``n`` chosen so that the step times the largest normal curvature ``max(a)/min(a)²`` is at most
  :data:`STEP_CURVATURE`; the truncation error is then far below 1e-12 m (checked against twice the
  steps in ``tests/test_wrap_ellipsoid.py``).
- The unknowns ``(φ, s)`` are found by Newton's method on two conditions at the geodesic's end ``x(s)``
  with unit tangent ``v(s)``: ``q`` lies in the tangent plane there, ``(q − x)·n = 0``, and on the
  tangent line, ``(q − x)·(v × n) = 0`` (``n`` the unit normal). Their Jacobian is computed exactly
  by complex-step differentiation of the integration (the right-hand side is analytic). Newton stops
  when both residuals (in metres) are below :data:`TOLERANCE` (1e-13 m) and fails with a
  :class:`~mbkron.core.errors.ConfigurationError` naming the points after :data:`MAX_ITERATIONS`.
- The initial guess is the exact solution for the sphere in scaled coordinates: the great circle of the
  unit sphere through ``P`` and ``Q`` (``q / a``), its tangent points mapped back (they are on the
  horizons exactly, so only ``φ`` and ``s`` are approximate), ``s`` from the mapped arc. For a sphere
  it is the answer. On a triaxial ellipsoid the nearest geodesic need not be the shortest, so Newton
  also starts with the tangent points turned by ±45° about the segment (:data:`TILTS`) and the
  shortest converged path is kept; a path longer than its own (feasible) initial guess is rejected.
  Where Newton fails from the sphere's guess, a continuation deforms a sphere into the ellipsoid
  (:data:`CONTINUATION_LEVELS`).
- Complex ``p``, ``q`` (a complex step, :mod:`mbkron.muscles.complex_step`): the real problem is solved as
  above (every decision taken there), then one Newton step on the residual at the complex points with the
  real Jacobian gives the imaginary parts of ``(φ, s)`` — hence of ``t₁``, ``t₂`` and ``s`` — to first order,
  which is exact to round-off for the complex step's infinitesimal imaginary parts (:func:`_complex_step`).

Which side (``quadrant``)
-------------------------
As in OpenSim (``WrapEllipsoid::wrapLine``) the path wraps only where the straight segment passes
through the ellipsoid and neither end is inside it. Unconstrained (``"all"``), the path is the
shortest. With a quadrant ``±x, ±y, ±z`` the path must wrap on that side: where both tangent points of
the shortest path are on the other side, the path goes the long way round (through the allowed side:
OpenSim flips its point ``c1`` to the active side and wraps there). The long way is a geodesic but a
saddle of the length; the switch between the ways is a jump in length, as in OpenSim.

How this differs from OpenSim
-----------------------------
OpenSim's path over an ellipsoid lies in one plane (through ``p``, ``q`` and a surface point ``c1``
picked by the ``hybrid``, ``midpoint`` or ``axial`` heuristic), its tangent points are found by a
Levenberg–Marquardt iteration within that plane stopped at a squared residual of 1e-8 (in coordinates
scaled by ``3/Σa``), and its arc is a polyline of at most 499 segments of ≥ 1 mm in the same plane.
A plane section of an ellipsoid is a geodesic only for the principal sections (and every plane
through the centre of a sphere), so elsewhere OpenSim's path is longer than the shortest path, its
tangent points are not where the straight segments touch the surface tangentially out of plane,
and its length is not differentiable in the way the envelope theorem requires. Here the path is the
true shortest path (a geodesic), converged to 1e-12 m. docs/wrapping.md ("Ellipsoids") gives numbers.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.errors import ConfigurationError
from mbkron.core.tableaus import DOP853, equal_steps
from mbkron.muscles import complex_step as cs
from mbkron.muscles.wrapping import WrapSurface, parse_quadrant

__all__ = ["WrapEllipsoid", "TOLERANCE", "DIRECT_ITERATIONS", "MAX_ITERATIONS", "CONTINUATION_LEVELS",
           "STEP_CURVATURE", "TILTS", "shortest_path", "horizon_point", "geodesic"]

TOLERANCE = 1e-13
"""Newton stops when both end conditions (distances of ``q`` from the end's tangent line, in m) are below this."""
DIRECT_ITERATIONS = 12
"""Newton iterations from the scaled sphere's solution before trying continuation."""
MAX_ITERATIONS = 30
"""Newton iterations per continuation level before :func:`shortest_path` gives up (a ConfigurationError)."""
CONTINUATION_LEVELS = (4, 16, 64)
"""Numbers of continuation steps from a sphere tried in turn where Newton's method alone fails."""
TILTS = (0.0, np.pi / 4, -np.pi / 4)
"""Angles (rad) by which the initial guess's tangent points are turned about the segment (the shortest result kept)."""
STEP_CURVATURE = 0.2
"""Integration step times the ellipsoid's largest normal curvature ``max(a)/min(a)²`` (at most)."""


_COMPLEX_STEP = 1e-30
_GUESS_NODES = 48  # Gauss-Legendre nodes for the initial guess's arc length


def _dot(u, v):
    """Row-wise dot product without complex conjugation (complex-step safe)."""
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]


def horizon_point(p: NDArray, dimensions: NDArray, phi: NDArray) -> NDArray:
    """The point at angle ``phi`` of the horizon of ``p``: where the line from ``p`` touches the ellipsoid.

    Parameters
    ----------
    p : ndarray, shape (m, 3)
        Points outside the ellipsoid (ellipsoid frame).
    dimensions : ndarray, shape (3,)
        The semi-axes.
    phi : ndarray, shape (m,)
        Angles (rad) on the horizon circle of ``p / dimensions`` (see the module's documentation);
        complex values are allowed (complex-step differentiation).

    Returns
    -------
    ndarray, shape (m, 3)
        Points on the surface whose tangent plane contains ``p``.
    """
    scaled = p / dimensions
    e1, e2 = _perpendicular_frame(scaled)
    norm2 = _dot(scaled, scaled)
    radius = np.sqrt(1.0 - 1.0 / norm2)
    y = (scaled / norm2[:, None] + radius[:, None] * (np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2))
    return y * dimensions


def _horizon_angle(p: NDArray, dimensions: NDArray, point: NDArray) -> NDArray:
    """The angle ``φ`` of ``point`` (on the horizon of ``p``) in :func:`horizon_point`'s parametrisation."""
    scaled = p / dimensions
    e1, e2 = _perpendicular_frame(scaled)
    y = point / dimensions
    return np.arctan2(_dot(y, e2), _dot(y, e1))


def _perpendicular_frame(v: NDArray) -> tuple[NDArray, NDArray]:
    """Two unit vectors perpendicular to each other and to each row of ``v`` (complex rows: analytically)."""
    unit = v / cs.norm(v)[:, None]
    helper = np.zeros_like(v)
    helper[np.arange(len(v)), np.argmin(np.abs(unit.real), axis=-1)] = 1.0
    e1 = np.cross(unit, helper)
    e1 /= cs.norm(e1)[:, None]
    return e1, np.cross(unit, e1)


def _geodesic_rate(y: NDArray, arc: NDArray, inverse_squares: NDArray) -> NDArray:
    """d(x, v)/dτ of the geodesic equation with τ = σ / arc ∈ [0, 1] (rows (x, v), shape (m, 6))."""
    x, v = y[:, :3], y[:, 3:]
    normal = x * inverse_squares
    acceleration = -(_dot(v * inverse_squares, v) / _dot(normal, normal))[:, None] * normal
    return arc[:, None] * np.concatenate([v, acceleration], axis=1)


def _steps(dimensions: NDArray, arc: NDArray) -> NDArray[np.intp]:
    """Equal integration steps per path (:data:`STEP_CURVATURE`), rounded up to a power of 2 (≥ 8) so
    that paths of similar lengths share one batch."""
    curvature = dimensions.max() / dimensions.min() ** 2
    needed = np.maximum(8.0, np.ceil(np.abs(arc.real) * curvature / STEP_CURVATURE))
    return (2 ** np.ceil(np.log2(needed))).astype(np.intp)


def geodesic(start: NDArray, direction: NDArray, arc: NDArray, dimensions: ArrayLike,
             steps: int | None = None) -> tuple[NDArray, NDArray]:
    """The surface geodesic from ``start`` in unit tangent ``direction`` over arc length ``arc``.

    Integrates ``x'' = −(x'ᵀ A x' / |A x|²) A x`` (``A = diag(dimensions)⁻²``) with the 8th-order
    Dormand–Prince method in equal steps (complex inputs allowed: complex-step differentiation).

    Parameters
    ----------
    start, direction : ndarray, shape (m, 3)
        Points on the surface and unit tangent vectors there.
    arc : ndarray, shape (m,)
        Arc lengths (m).
    dimensions : array_like, shape (3,)
        The semi-axes.
    steps : int, optional
        Return the points and tangents after each of ``steps`` equal steps (shape (m, steps + 1, 3)).
        By default the number of steps per path follows from :data:`STEP_CURVATURE` and only the end
        is returned.

    Returns
    -------
    points, tangents : ndarray
        The end points and unit tangents (shape (m, 3)), or with ``steps`` every step's.
    """
    inverse_squares = 1.0 / np.asarray(dimensions, dtype=float) ** 2
    y = np.concatenate([start, direction], axis=1)
    if steps is not None:  # (DOP853's 12 stages in equal steps)
        y = equal_steps(DOP853, lambda x: _geodesic_rate(x, arc, inverse_squares), y, steps, samples=True)
        return y[..., :3], y[..., 3:]
    counts = _steps(np.asarray(dimensions, dtype=float), arc)
    for count in np.unique(counts):
        group = counts == count
        y[group] = equal_steps(DOP853, lambda x, arcs=arc[group]: _geodesic_rate(x, arcs, inverse_squares), y[group],
                               int(count))
    return y[:, :3], y[:, 3:]


def _end_conditions(p, q, dimensions, phi, arc):
    """The two Newton residuals (m) of :func:`shortest_path`, and t₁, t₂ (complex-step safe)."""
    t1 = horizon_point(p, dimensions, phi)
    chord = t1 - p
    u = chord / np.sqrt(_dot(chord, chord))[:, None]
    t2, v = geodesic(t1, u, arc, dimensions)
    v = v / np.sqrt(_dot(v, v))[:, None]
    n = t2 / dimensions**2
    n = n / np.sqrt(_dot(n, n))[:, None]
    b = np.cross(v, n)
    gap = q - t2
    return np.stack([_dot(gap, n), _dot(gap, b)], axis=-1), t1, t2, v


def _initial_guess(p, q, dimensions, side, tilt=0.0):
    """φ, s and the length of a path over the scaled sphere's great circle (module documentation).

    ``side`` (m,): +1 the short way round (through the scaled segment's point nearest the centre, ``d``),
    −1 the long way. ``tilt``: the tangent points are taken on the side of ``d`` turned by this angle
    about the segment (0: the sphere's solution), joined by the great circle between them."""
    P, Q = p / dimensions, q / dimensions
    D = Q - P
    nearest = P - (_dot(P, D) / _dot(D, D))[:, None] * D
    length = np.linalg.norm(nearest, axis=-1)
    through_centre = length < 1e-9
    if np.any(through_centre):  # any direction perpendicular to the segment: across the largest axis
        axis = np.zeros_like(P[through_centre])
        axis[:, int(np.argmax(dimensions))] = 1.0
        fallback = np.cross(np.cross(D[through_centre], axis), D[through_centre])
        fallback_norm = np.linalg.norm(fallback, axis=-1)
        degenerate = fallback_norm < 1e-12  # the segment along the largest axis: any perpendicular
        fallback[degenerate] = _perpendicular_frame(D[through_centre][degenerate])[0]
        nearest[through_centre] = fallback / np.linalg.norm(fallback, axis=-1, keepdims=True)
        length[through_centre] = 1.0
    d = side[:, None] * nearest / length[:, None]
    if tilt:
        d = np.cos(tilt) * d + np.sin(tilt) * np.cross(D / np.linalg.norm(D, axis=-1, keepdims=True), d)
    tangents = []
    for X in (P, Q):
        norm2 = _dot(X, X)
        across = d - (_dot(d, X) / norm2)[:, None] * X
        across /= np.linalg.norm(across, axis=-1, keepdims=True)
        tangents.append(X / norm2[:, None] + np.sqrt(1.0 - 1.0 / norm2)[:, None] * across)
    T1, T2 = tangents
    # the great-circle arc T1 → T2 on the side of d (the minor arc if its middle is on that side, else
    # the major arc) mapped back to the ellipsoid; its length by Gauss-Legendre quadrature
    ortho = T2 - _dot(T2, T1)[:, None] * T1
    ortho /= np.linalg.norm(ortho, axis=-1, keepdims=True)
    angle = np.arctan2(np.linalg.norm(np.cross(T1, T2), axis=-1), _dot(T1, T2))
    major = _dot(T1 + T2, d) < 0
    angle = np.where(major, 2 * np.pi - angle, angle)
    ortho *= np.where(major, -1.0, 1.0)[:, None]
    nodes, weights = np.polynomial.legendre.leggauss(_GUESS_NODES)
    theta = angle[None, :, None] * (0.5 * (nodes + 1.0))[:, None, None]
    speed = np.linalg.norm((np.cos(theta) * ortho - np.sin(theta) * T1) * dimensions, axis=-1)
    arc = 0.5 * angle * (weights @ speed)
    length = np.linalg.norm(T1 * dimensions - p, axis=-1) + arc + np.linalg.norm(q - T2 * dimensions, axis=-1)
    return _horizon_angle(p, dimensions, T1 * dimensions), arc, length


def _newton(p, q, dimensions, phi, arc, iterations):
    """Newton's method on (φ, s) with a backtracking line search on the residual's norm.

    Returns φ, s, t₁, t₂ and whether each path converged within ``iterations`` to a valid path
    (``s ≥ 0``, ``q`` ahead of ``t₂`` along the geodesic's end tangent)."""
    phi, arc = phi.copy(), arc.copy()
    m = len(p)
    t1, t2 = np.empty((m, 3)), np.empty((m, 3))
    converged = np.zeros(m, dtype=bool)
    active = np.arange(m)
    for _ in range(iterations):
        pa, qa, pa2, qa2 = p[active], q[active], np.concatenate([p[active]] * 2), np.concatenate([q[active]] * 2)
        k, fa, sa = len(active), phi[active], arc[active]
        # the Jacobian's columns d/dφ and d/ds by complex steps: one batch of 2k paths
        residual, t1c, t2c, v = _end_conditions(pa2, qa2, dimensions,
                                                np.concatenate([fa + 1j * _COMPLEX_STEP, fa.astype(complex)]),
                                                np.concatenate([sa.astype(complex), sa + 1j * _COMPLEX_STEP]))
        r = residual[:k].real
        done = np.max(np.abs(r), axis=-1) <= TOLERANCE
        t1[active[done]], t2[active[done]] = t1c[:k][done].real, t2c[:k][done].real
        converged[active[done]] = (sa[done] >= 0) & (_dot(qa[done] - t2c[:k][done].real, v[:k][done].real) > 0)
        keep = ~done
        if not keep.any():
            break
        active, pa, qa, fa, sa, r = active[keep], pa[keep], qa[keep], fa[keep], sa[keep], r[keep]
        j = (np.stack([residual[:k].imag, residual[k:].imag], axis=-1) / _COMPLEX_STEP)[keep]
        det = j[:, 0, 0] * j[:, 1, 1] - j[:, 0, 1] * j[:, 1, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            d_phi = -(j[:, 1, 1] * r[:, 0] - j[:, 0, 1] * r[:, 1]) / det
            d_arc = -(-j[:, 1, 0] * r[:, 0] + j[:, 0, 0] * r[:, 1]) / det
        bad = ~(np.isfinite(d_phi) & np.isfinite(d_arc))
        d_phi[bad], d_arc[bad] = 0.0, 0.0
        # step length: at most 1 rad along the horizon, the arc at most halved; halved until the
        # residual's norm decreases (Armijo), at most 10 times
        step = np.minimum(1.0, 1.0 / np.maximum(np.abs(d_phi), 1e-300))
        shrink = d_arc < -0.5 * sa
        step[shrink] = np.minimum(step[shrink], 0.5 * sa[shrink] / -d_arc[shrink])
        grow = d_arc > sa + 0.5 * dimensions.min()  # and at most doubled plus half the smallest semi-axis
        step[grow] = np.minimum(step[grow], (sa[grow] + 0.5 * dimensions.min()) / d_arc[grow])
        norm = np.linalg.norm(r, axis=-1)
        trying = np.arange(len(active))
        for _ in range(10):
            trial, _, _, _ = _end_conditions(pa[trying], qa[trying], dimensions,
                                             fa[trying] + step[trying] * d_phi[trying],
                                             sa[trying] + step[trying] * d_arc[trying])
            failed = ~(np.linalg.norm(trial, axis=-1) < (1.0 - 1e-4 * step[trying]) * norm[trying])
            trying = trying[failed]
            if not len(trying):
                break
            step[trying] *= 0.5
        phi[active] = fa + step * d_phi
        arc[active] = sa + step * d_arc
    return phi, arc, t1, t2, converged


def shortest_path(p: ArrayLike, q: ArrayLike, dimensions: ArrayLike, quadrant: str = "all"
                  ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The shortest path from ``p`` to ``q`` over an ellipsoid (module documentation).

    Parameters
    ----------
    p, q : array_like, shape (..., 3)
        The path's neighbouring points in the ellipsoid's frame (m); complex for a complex step (then
        ``t1``, ``t2`` and ``arc`` are complex).
    dimensions : array_like, shape (3,)
        The semi-axes (m), positive.
    quadrant : str
        OpenSim's quadrant: ``"all"`` or the side the path must wrap on (``"+x"``, ``"-y"``, ``"z"``, ...).

    Returns
    -------
    wrapped : ndarray of bool, shape (...)
        Whether the path touches the ellipsoid (the straight segment passes through it and neither
        end is inside).
    t1, t2 : ndarray, shape (..., 3)
        The tangent points (``t1`` joined to ``p``); where not wrapped both are ``(p + q)/2``, so that
        ``|t1 − p| + |q − t2|`` is the straight length.
    arc : ndarray, shape (...)
        The geodesic's length from ``t1`` to ``t2`` (0 where not wrapped).

    Raises
    ------
    ConfigurationError
        Where Newton's method does not converge in :data:`MAX_ITERATIONS` iterations (the message
        names the points).
    """
    a = np.asarray(dimensions, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"`dimensions` must be 3 positive finite semi-axes; got {dimensions!r}")
    axis, sign = parse_quadrant(quadrant)
    if np.iscomplexobj(p) or np.iscomplexobj(q):
        return _complex_step(p, q, a, quadrant)
    p, q = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(q, dtype=float))
    if p.shape[-1:] != (3,):
        raise ValueError(f"`p` and `q` must have shape (..., 3); got {p.shape}")
    shape = p.shape[:-1]
    p, q = p.reshape(-1, 3), q.reshape(-1, 3)
    P, Q = p / a, q / a
    D = Q - P
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.clip(-_dot(P, D) / _dot(D, D), 0.0, 1.0)
    t = np.nan_to_num(t)
    nearest = P + t[:, None] * D
    wrapped = (_dot(nearest, nearest) < 1.0) & (_dot(P, P) > 1.0) & (_dot(Q, Q) > 1.0)
    t1 = 0.5 * (p + q)
    t2, arc = t1.copy(), np.zeros(len(p))
    if np.any(wrapped):
        pw, qw = p[wrapped], q[wrapped]
        t1[wrapped], t2[wrapped], arc[wrapped] = _wrap(pw, qw, a, axis, sign)
    return wrapped.reshape(shape), t1.reshape(shape + (3,)), t2.reshape(shape + (3,)), arc.reshape(shape)


def _complex_step(p, q, dimensions, quadrant):
    """:func:`shortest_path` at complex ``p``, ``q``: the real path, and the imaginary parts of ``(φ, s)``
    from ``J δ = −Im r(p, q; φ, s)`` (``r`` the end conditions at the real solution ``(φ, s)``, ``J`` their
    real Jacobian by complex steps in ``φ`` and ``s``, as in :func:`_newton`)."""
    p, q = np.broadcast_arrays(np.asarray(p, dtype=complex), np.asarray(q, dtype=complex))
    wrapped, t1, t2, arc = shortest_path(p.real, q.real, dimensions, quadrant)
    t1, t2, arc = t1.astype(complex), t2.astype(complex), arc.astype(complex)
    middle = 0.5 * (p + q)  # where not wrapped: t1 = t2 = (p + q)/2
    t1[~wrapped], t2[~wrapped] = middle[~wrapped], middle[~wrapped]
    if wrapped.any():
        pw, qw, real_p, real_q = p[wrapped], q[wrapped], p[wrapped].real, q[wrapped].real
        phi, s, k = _horizon_angle(real_p, dimensions, t1[wrapped].real), arc[wrapped].real, int(wrapped.sum())
        residual, *_ = _end_conditions(np.concatenate([real_p, real_p, pw]), np.concatenate([real_q, real_q, qw]),
                                       dimensions, np.concatenate([phi + 1j * _COMPLEX_STEP, phi, phi]),
                                       np.concatenate([s, s + 1j * _COMPLEX_STEP, s]))
        jacobian = np.stack([residual[:k].imag, residual[k:2 * k].imag], axis=-1) / _COMPLEX_STEP
        d_phi, d_arc = np.moveaxis(-np.linalg.solve(jacobian, residual[2 * k:].imag[..., None])[..., 0], -1, 0)
        _, t1c, t2c, _ = _end_conditions(pw, qw, dimensions, phi + 1j * d_phi, s + 1j * d_arc)
        t1[wrapped] = t1[wrapped].real + 1j * t1c.imag
        t2[wrapped] = t2[wrapped].real + 1j * t2c.imag
        arc[wrapped] = s + 1j * d_arc
    return wrapped, t1, t2, arc


def _wrap(p, q, dimensions, axis, sign):
    """Tangent points and arc of the wrapped paths (the side by the quadrant, module documentation)."""
    if sign == 0:
        t1, t2, arc, converged = _shortest_side(p, q, dimensions)
    else:
        # the long way round where both tangent points of the short way are on the other side (or the
        # short way did not converge), and the long way converged
        short, long = _shortest_side(p, q, dimensions), _solve(p, q, dimensions, np.full(len(p), -1.0))
        wrong_side = np.maximum(sign * short[0][:, axis], sign * short[1][:, axis]) < 0
        take_long = (wrong_side | ~short[3]) & long[3]
        t1, t2, arc, converged = (np.where(take_long[:, None] if sh.ndim == 2 else take_long, lg, sh)
                                  for sh, lg in zip(short, long))
    if not converged.all():
        bad = np.flatnonzero(~converged)[:3]
        where = "; ".join(f"p={p[i].tolist()}, q={q[i].tolist()}" for i in bad)
        raise ConfigurationError(
            f"the shortest path over the ellipsoid with semi-axes {dimensions.tolist()} did not converge at "
            f"{int((~converged).sum())} of {len(p)} segments ({where}): Newton's method did not reach "
            f"{TOLERANCE} m in {MAX_ITERATIONS} iterations even by continuation from a sphere")
    return t1, t2, arc


def _shortest_side(p, q, dimensions):
    """The shortest of the paths the short way round from the initial guesses tilted by :data:`TILTS`.

    On a triaxial ellipsoid the geodesic nearest the scaled sphere's solution need not be the
    shortest (it may pass over another side); starting Newton's method from tangent points turned
    about the segment finds the others (from these only Newton's method, no continuation)."""
    best = None
    for tilt in TILTS:
        t1, t2, arc, converged = _solve(p, q, dimensions, np.ones(len(p)), tilt, continuation=tilt == 0.0)
        length = np.where(converged, np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1), np.inf)
        if best is None:
            best = (t1, t2, arc, converged, length)
        else:
            keep = length < best[4]
            best = tuple(np.where(keep[:, None] if b.ndim == 2 else keep, new, b)
                         for b, new in zip(best, (t1, t2, arc, converged, length)))
    return best[:4]


def _no_longer(p, q, t1, t2, arc, bound):
    """Whether the paths are no longer than ``bound`` (the initial guess's length, a feasible path over
    the surface on the same side): a converged path longer than that is another geodesic (one winding
    round the ellipsoid, or over another side), not the shortest."""
    length = np.linalg.norm(t1 - p, axis=-1) + arc + np.linalg.norm(q - t2, axis=-1)
    return length <= bound * (1.0 + 1e-12)


def _solve(p, q, dimensions, side, tilt=0.0, continuation=True):
    """Newton from the scaled sphere's solution; where that fails, continuation from a sphere.

    The continuation deforms a sphere (radius the semi-axes' geometric mean ``r``) into the ellipsoid,
    ``a(λ) = r^(1−λ) a^λ``, moving the points with it (``p(λ) = (p/a)·a(λ)``: the scaled points and the
    horizon parametrisation stay the same), in :data:`CONTINUATION_LEVELS` equal steps of ``λ``, each
    solved by Newton's method from the previous level's ``(φ, s)``."""
    phi, arc, bound = _initial_guess(p, q, dimensions, side, tilt)
    # the long way round is a saddle of the length (shorter paths lean towards the short side), no bound
    bound[side < 0] = np.inf
    phi, arc, t1, t2, converged = _newton(p, q, dimensions, phi, arc, DIRECT_ITERATIONS)
    converged &= _no_longer(p, q, t1, t2, arc, bound)
    for levels in CONTINUATION_LEVELS if continuation else ():
        if converged.all():
            break
        todo = np.flatnonzero(~converged)
        scaled_p, scaled_q = p[todo] / dimensions, q[todo] / dimensions
        radius = float(np.exp(np.mean(np.log(dimensions))))
        previous = np.full(3, radius)
        phi_c, arc_c, _ = _initial_guess(scaled_p * radius, scaled_q * radius, previous, side[todo], tilt)
        ok = np.ones(len(todo), dtype=bool)
        for fraction in np.linspace(0.0, 1.0, levels + 1)[1:]:
            a = radius ** (1.0 - fraction) * dimensions ** fraction
            pl, ql = (p[todo], q[todo]) if fraction == 1.0 else (scaled_p * a, scaled_q * a)
            phi_c, arc_c, t1_c, t2_c, level_ok = _newton(pl, ql, a, phi_c, arc_c * a.sum() / previous.sum(),
                                                         MAX_ITERATIONS)
            ok &= level_ok
            previous = a
        ok &= _no_longer(p[todo], q[todo], t1_c, t2_c, arc_c, bound[todo])
        phi[todo], arc[todo], t1[todo], t2[todo], converged[todo] = phi_c, arc_c, t1_c, t2_c, ok
    return t1, t2, arc, converged


@dataclass(frozen=True, kw_only=True)
class WrapEllipsoid(WrapSurface):
    """OpenSim's ``WrapEllipsoid``: an ellipsoid of semi-axes ``dimensions`` (m, along the wrap frame's
    x, y, z) centred at the wrap frame's origin; the properties it shares with the other surfaces are
    :data:`~mbkron.muscles.wrapping.COMMON_FIELDS` (:mod:`mbkron.muscles.wrapping`).

    Examples
    --------
    >>> e = WrapEllipsoid(name="hh", body="ground", dimensions=(1.0, 1.0, 1.0))
    >>> wrapped, t1, t2, arc = e.solve(np.array([-2.0, 0.0, 0.0]), np.array([2.0, 0.0, 0.0]))
    >>> bool(wrapped), abs(float(arc) - (math.pi - 2 * math.acos(0.5))) < 1e-12
    (True, True)
    """

    dimensions: tuple

    def shape_problems(self, where: str) -> list[str | None]:
        value = self.dimensions
        ok = (isinstance(value, (tuple, list)) and len(value) == 3
              and all(not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v) and v > 0 for v in value))
        return [None if ok else f"{where}: `dimensions` must be 3 finite semi-axes > 0 (m), got {value!r}"]

    def solve(self, p: ArrayLike, q: ArrayLike):
        """The path from ``p`` to ``q`` (wrap frame, m) over this ellipsoid: :func:`shortest_path`."""
        return shortest_path(p, q, self.dimensions, self.quadrant)
