"""The shortest path round the tube of a torus: OpenSim's ``WrapTorus`` solved exactly (issue #16).

The torus (wrap frame: axis ``z``, centre at the origin) has the ring radius ``R`` (OpenSim's
``outer_radius``) and the tube radius ``r`` (``inner_radius``), ``R > r``; its surface is
``F(x) = (√(x² + y²) − R)² + z² − r² = 0`` and its solid ``F ≤ 0``. OpenSim wraps a path that passes
*through the hole* round the tube's inner side (the side facing the axis). Points of the surface are
``x(u, v) = ((R + r cos v) cos u, (R + r cos v) sin u, r sin v)`` (``u`` round the axis, ``v`` round
the tube; the inner side is ``cos v < 0``), with the unit vectors ``e_u = (−sin u, cos u, 0)``,
``e_v = (−sin v cos u, −sin v sin u, cos v)`` and the outward normal ``n = (cos v cos u, cos v sin u, sin v)``.

Where it wraps, the path from ``p`` to ``q`` is a straight segment ``p → t₁`` tangent to the surface,
a geodesic of the surface from ``t₁`` to ``t₂`` and a straight segment ``t₂ → q`` tangent to the
surface, without kinks: the shortest path round the inner side of the tube (there the surface's
Gaussian curvature is negative and geodesics are minimising). Its length is a minimum over the tangent
points, so the envelope theorem gives the exact moment arms (:mod:`mbkron.muscles.wrapping`).

Method (shooting on the geodesic equation)
------------------------------------------
- The geodesic is integrated in the torus angles: with the metric ``ds² = G² du² + r² dv²``,
  ``G = R + r cos v``, its equations (arc length ``σ``) are ``u'' = (2 r sin v / G) u' v'`` and
  ``v'' = −(G sin v / r) u'²`` (Clairaut: ``G² u'`` is constant), the same curve as
  ``x'' = −(x'ᵀ ∇²F x' / |∇F|²) ∇F`` of the implicit surface, but without a constraint to drift from.
  It is integrated over ``σ ∈ [0, s]`` by the 8th-order Dormand–Prince method (DOP853's
  coefficients) in equal steps, step × ``max(1/r, 1/(R − r))`` (the largest normal curvature)
  ≤ :data:`STEP_CURVATURE` for the longest arc of the batch (the truncation error is then below
  1e-15 m: ``tests/test_wrap_torus.py`` doubles the steps).
- The horizon of ``p`` on a torus is not a circle, so ``t₁ = x(u₁, v₁)`` is parametrised by its two
  angles and tangency is a residual: the unknowns ``(u₁, v₁, s)`` solve
  ``(t₁ − p)·n(t₁) = 0``, ``(q − x(s))·n = 0`` and ``(q − x(s))·(w × n) = 0`` at the geodesic's end
  ``x(s)`` with unit tangent ``w``; the geodesic starts in the direction of ``t₁ − p`` projected onto
  the tangent plane (the same direction once the first residual vanishes). Newton's method with the
  exact Jacobian (complex-step differentiation of the integration), an Armijo line search on the
  residual's norm, the angles' steps at most :data:`MAX_ANGLE_STEP`, the arc at most halved or
  doubled plus ``r`` per step, and at most :data:`MAX_TURNS` times round the tube (``2π r`` each);
  converged when every residual is at most :data:`TOLERANCE` (m). A wrap is valid when it converged,
  ``s > 0``, ``q`` lies ahead of ``t₂`` and neither straight piece enters the solid (:func:`enters_solid`).
- The initial guess is OpenSim's approximation: a cylinder of radius ``r`` along the ring's tangent at
  OpenSim's ring point (below), whose closed-form helix (:class:`~mbkron.muscles.wrapping.WrapCylinder`)
  gives ``t₁`` (its torus angles) and ``s``; where that gives no valid wrap and the straight segment
  enters the solid, Newton's method starts again from the circle's solution in the meridian plane of
  ``p``, and where that fails too, from the point of the straight segment deepest in the solid (its
  torus angles, the arc :data:`DEEPEST_GUESS_ARC` ``r``: on thin rings, whose inner side is a narrow
  hourglass, the cylinder is a poor model of the tube). Where all fail, a
  :class:`~mbkron.core.errors.ConfigurationError` names the points.
  Scope: one contact with the tube's inner side. A segment through the tube twice (from outside the
  ring across the hole to outside the ring) or round its outer side has no such path (OpenSim wraps it
  over its cylinder all the same); for segments whose ends lie within the ring radius on both sides of
  the ring's plane the error is rare (in one batch of 60 of 2787 random segments for ``R/r = 5``, an
  end 6 µm from the surface; none for ``R/r`` = 1.5 and 20: docs/wrapping.md, "Tori").

What runs where
---------------
This module is the vectorised evaluation (:meth:`mbkron.muscles.paths.MuscleSet.geometry`: error
messages, joint reactions' path loads, located paths): :func:`shortest_path` solves a
batch of segments at once. The engine solves one segment at a time inside the
wrapped-path kernel with :func:`mbkron.compiled.wrap_torus.torus_path`: the same decision, method,
guesses, step rules and constants (imported from there), the Newton Jacobian by variational equations
instead of complex steps; both agree to rounding (``tests/test_compiled_torus.py``).

When it wraps (OpenSim's decision)
----------------------------------
OpenSim 4.6's ``WrapTorus::wrapLine`` picks a point ``c`` of the ring circle (radius ``R`` in the
plane ``z = 0``): ``findClosestPoint`` searches the line through ``p`` and ``q`` from each end
(Levenberg–Marquardt on the derivative of the squared distance to the circle) and takes the
result nearer the ring — with a quadrant, the one on the quadrant's side (no wrap if neither is) —
and ``c`` at that point's azimuth. Its residual has a factor 2 too many (the derivative of the squared
distance to the circle of radius ``2R``), which is copied here (:func:`opensim_ring_point`: a
safeguarded Newton descent from each end instead of ``lmdif``, which may stop within its tolerance
of 1e-4 elsewhere). It then wraps over a cylinder of radius ``r``, length 10000, centred at ``c``,
axis along the ring's tangent, ``x`` towards the torus's axis and ``y = −z``, with quadrant ``+x``
(the inner side), by the cylinder's rules. Here the path wraps where that cylinder wraps (the rules
of :class:`~mbkron.muscles.wrapping.WrapCylinder`, which are OpenSim's) *and* the exact path round the
tube's inner side is a valid wrap (where the straight segment misses the torus the shooting finds
``s ≤ 0``: no wrap, as for the cylinder's positive arc angle). OpenSim's torus returns ``wrapped``,
not ``mandatoryWrap``: of several candidate segments the one lengthened least is wrapped, which is
mbkron's rule for every wrap.

How this differs from OpenSim
-----------------------------
OpenSim's path is the cylinder's helix at ``c``: the tube's cross-section there is the cylinder's, but
the torus curves away from the ring's tangent, so wherever the path does not lie in the meridian plane
of ``c`` OpenSim's tangent points are off the torus (inside or outside it) and its length is not the
torus's shortest path: its helix runs inside the solid torus (up to 0.65 mm deep in
``validation/opensim/compare_wrap_torus.py``'s sweeps), and its length is shorter than the shortest
feasible path (by up to 0.17 mm there); in a meridian plane both are the circle's closed form. The decision is
OpenSim's, so ``L`` jumps where OpenSim starts wrapping while the straight segment already enters the
torus (away from ``c``'s meridian the torus reaches nearer the axis than the cylinder), and is C¹ at
engagement only where the two tests agree (the meridian plane). docs/wrapping.md, "Tori" gives numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.compiled.wrap_torus import (DEEPEST_GUESS_ARC, MAX_ANGLE_STEP, MAX_ITERATIONS, MAX_TURNS,
                                        OPENSIM_CYLINDER_LENGTH, STEP_CURVATURE, TOLERANCE)
from mbkron.core.errors import ConfigurationError
from mbkron.core.tableaus import DOP853, equal_steps
from mbkron.muscles.wrapping import WrapCylinder, WrapSurface, positive_problem, parse_quadrant

__all__ = ["WrapTorus", "TOLERANCE", "MAX_ITERATIONS", "MAX_ANGLE_STEP", "MAX_TURNS", "STEP_CURVATURE", "OPENSIM_CYLINDER_LENGTH",
           "DEEPEST_GUESS_ARC", "shortest_path", "geodesic", "surface_point", "opensim_ring_point", "enters_solid"]

_COMPLEX_STEP = 1e-30


def _dot(a, b):
    """Row-wise dot product without complex conjugation (complex-step safe)."""
    return np.sum(a * b, axis=-1)


def _frame(u, v):
    """``e_u``, ``e_v`` and the outward normal ``n`` at the torus angles (rows, complex-step safe)."""
    cu, su, cv, sv = np.cos(u), np.sin(u), np.cos(v), np.sin(v)
    zero = np.zeros_like(cu)
    e_u = np.stack([-su, cu, zero], axis=-1)
    e_v = np.stack([-sv * cu, -sv * su, cv], axis=-1)
    n = np.stack([cv * cu, cv * su, sv], axis=-1)
    return e_u, e_v, n


def surface_point(outer_radius: float, inner_radius: float, u: NDArray, v: NDArray) -> NDArray:
    """The torus point ``x(u, v)`` (module documentation), shape ``u.shape + (3,)``; complex allowed."""
    ring = outer_radius + inner_radius * np.cos(v)
    return np.stack([ring * np.cos(u), ring * np.sin(u), inner_radius * np.sin(v)], axis=-1)


def _rate(y, arc, R, r):
    """d(u, v, u', v')/dτ of the geodesic equations with τ = σ / arc ∈ [0, 1]."""
    v, du, dv = y[:, 1], y[:, 2], y[:, 3]
    sv, ring = np.sin(v), R + r * np.cos(v)
    return arc[:, None] * np.stack([du, dv, 2.0 * r * sv / ring * du * dv, -ring * sv / r * du * du], axis=-1)


def _steps(R, r, arc):
    """Equal steps for a batch: the longest arc's (:data:`STEP_CURVATURE`; one batch is cheaper than several)."""
    curvature = max(1.0 / r, 1.0 / (R - r))
    return max(1, int(np.ceil(np.max(np.abs(arc.real), initial=0.0) * curvature / STEP_CURVATURE)))


def geodesic(outer_radius: float, inner_radius: float, u: NDArray, v: NDArray, direction: NDArray, arc: NDArray,
             steps: int | None = None) -> tuple[NDArray, NDArray, NDArray]:
    """The torus geodesic from the angles ``(u, v)`` in the unit tangent ``direction`` over arc length ``arc``.

    Parameters
    ----------
    outer_radius, inner_radius : float
        ``R`` and ``r`` (m).
    u, v : ndarray, shape (m,)
        The start's torus angles (complex allowed: complex-step differentiation).
    direction : ndarray, shape (m, 3)
        Unit tangent vectors at the start (a normal part is ignored).
    arc : ndarray, shape (m,)
        Arc lengths (m).
    steps : int, optional
        Integration steps (default by :data:`STEP_CURVATURE`).

    Returns
    -------
    u, v : ndarray, shape (m,)
        The end's torus angles.
    tangent : ndarray, shape (m, 3)
        The unit tangent at the end.
    """
    R, r = float(outer_radius), float(inner_radius)
    e_u, e_v, _ = _frame(u, v)
    y = np.stack([u, v, _dot(direction, e_u) / (R + r * np.cos(v)), _dot(direction, e_v) / r], axis=-1)
    y = equal_steps(DOP853, lambda x: _rate(x, arc, R, r), y, steps if steps is not None else _steps(R, r, arc))
    e_u, e_v, _ = _frame(y[:, 0], y[:, 1])
    tangent = (y[:, 2] * (R + r * np.cos(y[:, 1])))[:, None] * e_u + (y[:, 3] * r)[:, None] * e_v
    return y[:, 0], y[:, 1], tangent


def _residuals(p, q, R, r, u1, v1, arc):
    """The three Newton residuals (m), t₁, t₂ and the end tangent (complex-step safe)."""
    t1 = surface_point(R, r, u1, v1)
    _, _, n1 = _frame(u1, v1)
    chord = t1 - p
    normal_part = _dot(chord, n1)
    direction = chord - normal_part[:, None] * n1
    direction = direction / np.sqrt(_dot(direction, direction))[:, None]
    u2, v2, w = geodesic(R, r, u1, v1, direction, arc)
    t2 = surface_point(R, r, u2, v2)
    _, _, n2 = _frame(u2, v2)
    gap = q - t2
    return np.stack([normal_part, _dot(gap, n2), _dot(gap, np.cross(w, n2))], axis=-1), t1, t2, w


def _newton(p, q, R, r, u1, v1, arc):
    """Newton's method on ``(u₁, v₁, s)`` (module documentation).

    Returns t₁, t₂, the arc and whether each path converged (residuals ≤ :data:`TOLERANCE`, ``q`` ahead
    of ``t₂``)."""
    z = np.stack([u1, v1, arc], axis=-1)
    res, t1, t2, w = _residuals(p, q, R, r, z[:, 0], z[:, 1], z[:, 2])
    active = np.arange(len(p))
    eye = np.eye(3) * (1j * _COMPLEX_STEP)
    for _ in range(MAX_ITERATIONS):
        active = active[np.max(np.abs(res[active]), axis=-1) > TOLERANCE]
        if not len(active):
            break
        k, pa, qa, za = len(active), p[active], q[active], z[active]
        # the Jacobian's columns by complex steps: one batch of 3k paths
        zc = np.concatenate([za + eye[i] for i in range(3)])
        derivative = _residuals(np.tile(pa, (3, 1)), np.tile(qa, (3, 1)), R, r, zc[:, 0], zc[:, 1], zc[:, 2])[0].imag
        jac = np.stack([derivative[i * k:(i + 1) * k] for i in range(3)], axis=-1) / _COMPLEX_STEP
        det = np.linalg.det(jac)
        solvable = np.isfinite(det) & (det != 0.0)  # the others stall (and are reported as not converged)
        step = np.zeros((k, 3))
        step[solvable] = -np.linalg.solve(jac[solvable], res[active[solvable]][..., None])[..., 0]
        step[~np.all(np.isfinite(step), axis=-1)] = 0.0
        scale = np.minimum(1.0, MAX_ANGLE_STEP / np.maximum(np.abs(step[:, :2]).max(axis=-1), 1e-300))
        shrink = step[:, 2] < -0.5 * np.abs(za[:, 2])
        scale[shrink] = np.minimum(scale[shrink], 0.5 * np.abs(za[shrink, 2]) / -step[shrink, 2])
        grow = step[:, 2] > np.abs(za[:, 2]) + r  # the arc at most doubled plus the tube's radius
        scale[grow] = np.minimum(scale[grow], (np.abs(za[grow, 2]) + r) / step[grow, 2])
        norm = np.linalg.norm(res[active], axis=-1)
        trying = np.arange(k)
        for _ in range(12):  # Armijo: halve the step until the residual's norm decreases
            rows = active[trying]
            trial = za[trying] + scale[trying, None] * step[trying]
            trial[:, 2] = np.minimum(trial[:, 2], MAX_TURNS * 2 * np.pi * r)
            value, t1[rows], t2[rows], w[rows] = _residuals(pa[trying], qa[trying], R, r, *trial.T)
            res[rows], z[rows] = value, trial
            failed = ~(np.linalg.norm(value, axis=-1) < (1.0 - 1e-4 * scale[trying]) * norm[trying])
            trying = trying[failed]
            if not len(trying):
                break
            scale[trying] *= 0.5
    converged = np.max(np.abs(res), axis=-1) <= TOLERANCE
    return t1, t2, z[:, 2], converged & (_dot(q - t2, w) > 0)


def opensim_ring_point(p: NDArray, q: NDArray, outer_radius: float, quadrant: str = "all"
                       ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """OpenSim's ring point ``c`` (``WrapTorus::findClosestPoint``) for the segments ``p → q``.

    From each end the line through ``p`` and ``q`` is descended to a stationary point of OpenSim's
    function (the squared distance to the circle of radius ``2R`` in ``z = 0``, OpenSim's residual
    being its derivative), by Newton's method safeguarded to descend; of the two results the one
    nearer the ring (radius ``R``) is taken, with a quadrant the one on its side (both: the nearer;
    neither: no ring point). ``c`` is the ring point at that result's azimuth (0 for a point on the
    axis, where OpenSim's is undefined).

    Parameters
    ----------
    p, q : ndarray, shape (m, 3)
        The segments' ends (torus frame, m).
    outer_radius : float
        ``R`` (m).
    quadrant : str
        The torus's quadrant.

    Returns
    -------
    found : ndarray of bool, shape (m,)
        False where a quadrant rules both results out (OpenSim does not wrap).
    c : ndarray, shape (m, 3)
        The ring points.
    """
    R = float(outer_radius)
    axis, sign = parse_quadrant(quadrant)
    results, distances = [], []
    for start, end in ((p, q), (q, p)):
        chord = end - start
        n = chord / np.maximum(np.linalg.norm(chord, axis=-1, keepdims=True), 1e-300)
        c3, c4, c5 = _dot(start[:, :2], n[:, :2]), _dot(n[:, :2], n[:, :2]), _dot(start[:, :2], start[:, :2])
        kink = np.maximum(c4 * c5 - c3 * c3, 0.0)
        u = np.zeros(len(p))
        for _ in range(200):
            rho = np.maximum(np.sqrt(np.maximum(c4 * u * u + 2 * c3 * u + c5, 0.0)), 1e-12 * R)
            slope = 2 * u + 2 * _dot(start, n) - 4 * R * (c4 * u + c3) / rho
            curvature = 2 - 4 * R * kink / rho**3
            step = np.where(curvature > 0, -slope / np.where(curvature > 0, curvature, 1.0), -np.sign(slope) * 0.2 * R)
            step = np.clip(step, -R, R)
            u = u + step
            if np.all(np.abs(step) <= 1e-14 * (1.0 + np.abs(u))):
                break
        point = start + u[:, None] * n
        rho = np.hypot(point[:, 0], point[:, 1])
        results.append(point)
        distances.append(np.sqrt(np.maximum(_dot(point, point) + R * R - 2 * R * rho, 0.0)))
    (a1, a2), (d1, d2) = results, distances
    first = d1 < d2
    found = np.ones(len(p), dtype=bool)
    if sign:
        on1, on2 = np.where(a1[:, axis] >= 0, 1, -1) == sign, np.where(a2[:, axis] >= 0, 1, -1) == sign
        first = np.where(on1 & on2, first, on1)
        found = on1 | on2
    best = np.where(first[:, None], a1, a2)
    azimuth = np.arctan2(best[:, 1], best[:, 0])  # 0 on the axis (where OpenSim divides by zero)
    return found, np.stack([R * np.cos(azimuth), R * np.sin(azimuth), np.zeros(len(p))], axis=-1)


def _cylinder_frames(c):
    """OpenSim's cylinder frame at ring points ``c``: rows x = −c/|c|, y = −z, z = x × y (shape (m, 3, 3))."""
    x = -c / np.linalg.norm(c, axis=-1, keepdims=True)
    y = np.broadcast_to([0.0, 0.0, -1.0], x.shape)
    return np.stack([x, y, np.cross(x, y)], axis=1)


def enters_solid(p: NDArray, q: NDArray, outer_radius: float, inner_radius: float) -> NDArray[np.bool_]:
    """Whether the segments ``p → q`` (shape (m, 3)) pass through the interior of the solid torus.

    Along ``x = p + t (q − p)`` the sign of ``F`` is that of the quartic
    ``(|x|² + R² − r²)² − 4R²(x² + y²)`` (``F`` times a positive factor); its minimum over ``t ∈ [0, 1]``
    (the ends and the real roots of its derivative, :func:`_quartic_minimum`) is negative exactly when the
    segment enters."""
    return _quartic_minimum(p, q, outer_radius, inner_radius)[0] < 0.0


def _quartic_minimum(p, q, outer_radius, inner_radius):
    """The minimum over ``t ∈ [0, 1]`` of :func:`enters_solid`'s quartic along ``p + t (q − p)`` and its ``t``."""
    R, r = float(outer_radius), float(inner_radius)
    d = q - p
    A, B, C = _dot(d, d), 2 * _dot(p, d), _dot(p, p) + R * R - r * r
    A2, B2, C2 = _dot(d[:, :2], d[:, :2]), 2 * _dot(p[:, :2], d[:, :2]), _dot(p[:, :2], p[:, :2])
    coefficients = np.stack([A * A, 2 * A * B, B * B + 2 * A * C - 4 * R * R * A2, 2 * B * C - 4 * R * R * B2,
                             C * C - 4 * R * R * C2], axis=-1)
    derivative = coefficients[:, :4] * np.array([4.0, 3.0, 2.0, 1.0])
    companion = np.zeros((len(p), 3, 3))
    companion[:, 0, :] = -derivative[:, 1:] / derivative[:, :1]
    companion[:, 1, 0] = companion[:, 2, 1] = 1.0
    roots = np.linalg.eigvals(companion)
    t = np.where((np.abs(roots.imag) < 1e-9) & (roots.real > 0) & (roots.real < 1), roots.real, 0.0)
    t = np.concatenate([t, np.zeros((len(p), 1)), np.ones((len(p), 1))], axis=-1)
    values = sum(coefficients[:, [i]] * t ** (4 - i) for i in range(5))
    lowest = np.argmin(values, axis=-1)[:, None]
    return np.take_along_axis(values, lowest, axis=-1)[:, 0], np.take_along_axis(t, lowest, axis=-1)[:, 0]


def _valid_newton(p, q, R, r, u1, v1, arc):
    """:func:`_newton` from a guess, and whether each result is a valid wrap: converged, a positive arc,
    and straight pieces that stay outside the solid (ended 1e-6 of their length before the tangent
    points, where they touch it)."""
    t1, t2, s, valid = _newton(p, q, R, r, u1, v1, np.minimum(arc, MAX_TURNS * 2 * np.pi * r))
    valid &= s > 0
    valid[valid] &= ~(enters_solid(p[valid], p[valid] + (1 - 1e-6) * (t1[valid] - p[valid]), R, r)
                      | enters_solid(q[valid], q[valid] + (1 - 1e-6) * (t2[valid] - q[valid]), R, r))
    return t1, t2, s, valid


def _meridian_guess(p, q, R, r):
    """``(u₁, v₁, s)`` of the circle's solution (round the inner side) in the meridian plane of ``p``,
    ``q`` turned into that plane."""
    u = np.arctan2(p[:, 1], p[:, 0])
    xi_p, xi_q = np.hypot(p[:, 0], p[:, 1]) - R, np.hypot(q[:, 0], q[:, 1]) - R
    d_p, d_q = np.maximum(np.hypot(xi_p, p[:, 2]), r), np.maximum(np.hypot(xi_q, q[:, 2]), r)
    a_p, a_q = np.arctan2(p[:, 2], xi_p), np.arctan2(q[:, 2], xi_q)
    down = np.where(p[:, 2] >= q[:, 2], 1.0, -1.0)  # counterclockwise in (ξ, z) from above: through ξ < 0
    theta = np.mod(down * (a_q - a_p), 2 * np.pi) - np.arccos(r / d_p) - np.arccos(r / d_q)
    return u, a_p + down * np.arccos(r / d_p), r * np.maximum(theta, 0.1)


def _deepest_guess(p, q, R, r):
    """``(u₁, v₁, s)`` at the point of the straight segment deepest in the solid (the minimum of
    :func:`enters_solid`'s quartic), with the short arc ``0.1 r``."""
    x = p + _quartic_minimum(p, q, R, r)[1][:, None] * (q - p)
    return (np.arctan2(x[:, 1], x[:, 0]), np.arctan2(x[:, 2], np.hypot(x[:, 0], x[:, 1]) - R),
            np.full(len(p), DEEPEST_GUESS_ARC * r))


def shortest_path(p: ArrayLike, q: ArrayLike, outer_radius: float, inner_radius: float, quadrant: str = "all"
                  ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The path from ``p`` to ``q`` round the tube of a torus (module documentation).

    Parameters
    ----------
    p, q : array_like, shape (..., 3)
        The path's neighbouring points in the torus's frame (m).
    outer_radius, inner_radius : float
        ``R`` (the ring) and ``r`` (the tube), ``R > r > 0`` (m).
    quadrant : str
        OpenSim's quadrant of the torus (it restricts OpenSim's ring point).

    Returns
    -------
    wrapped : ndarray of bool, shape (...)
        Whether the path wraps (OpenSim's decision and a positive arc).
    t1, t2 : ndarray, shape (..., 3)
        The tangent points (``t1`` joined to ``p``); where not wrapped both are ``(p + q)/2``.
    arc : ndarray, shape (...)
        The geodesic's length from ``t1`` to ``t2`` (0 where not wrapped).

    Raises
    ------
    ConfigurationError
        Where Newton's method does not converge although the straight segment enters the solid torus.
    """
    R, r = float(outer_radius), float(inner_radius)
    if not (np.isfinite(R) and np.isfinite(r) and 0 < r < R):
        raise ValueError(f"`outer_radius` and `inner_radius` must be finite with outer_radius > inner_radius > 0; "
                         f"got {outer_radius!r} and {inner_radius!r}")
    p, q = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(q, dtype=float))
    if p.shape[-1:] != (3,):
        raise ValueError(f"`p` and `q` must have shape (..., 3); got {p.shape}")
    shape = p.shape[:-1]
    p, q = p.reshape(-1, 3), q.reshape(-1, 3)
    found, c = opensim_ring_point(p, q, R, quadrant)
    frames = _cylinder_frames(np.where(found[:, None], c, [R, 0.0, 0.0]))
    cylinder = WrapCylinder(name="torus", body="ground", radius=r, length=OPENSIM_CYLINDER_LENGTH, quadrant="+x")
    hit, g1, g2, guess_arc = cylinder.solve(((p - c)[:, None, :] @ frames.transpose(0, 2, 1))[:, 0],
                                            ((q - c)[:, None, :] @ frames.transpose(0, 2, 1))[:, 0])
    wrapped = found & hit
    t1, t2, arc = 0.5 * (p + q), 0.5 * (p + q), np.zeros(len(p))
    if wrapped.any():
        index = np.flatnonzero(wrapped)
        guess = (g1[index, None, :] @ frames[index])[:, 0] + c[index]
        u1 = np.arctan2(guess[:, 1], guess[:, 0])
        v1 = np.arctan2(guess[:, 2], np.hypot(guess[:, 0], guess[:, 1]) - R)
        pw, qw = p[index], q[index]
        s1, s2, s, valid = _valid_newton(pw, qw, R, r, u1, v1, guess_arc[index])
        failed = ~valid & enters_solid(pw, qw, R, r)
        for guess in (_meridian_guess, _deepest_guess):  # again from the meridian's circle, then the deepest point
            if not failed.any():
                break
            retry = np.flatnonzero(failed)
            s1[retry], s2[retry], s[retry], valid[retry] = _valid_newton(pw[retry], qw[retry], R, r,
                                                                         *guess(pw[retry], qw[retry], R, r))
            failed[retry] = ~valid[retry]
        if failed.any():
            bad = index[failed][:3]
            where = "; ".join(f"p={p[i].tolist()}, q={q[i].tolist()}" for i in bad)
            raise ConfigurationError(
                f"no path round the inner side of the torus with outer_radius {R} and inner_radius {r} at "
                f"{int(failed.sum())} of {len(p)} segments ({where}): the straight segment enters the torus, OpenSim "
                f"would wrap it, but Newton's method from OpenSim's cylinder approximation (and two other guesses) "
                f"found no path that touches the tube once (to {TOLERANCE} m in {MAX_ITERATIONS} iterations) without cutting it; a "
                "segment through the tube twice, or past its outer side, needs another wrap object")
        wrapped[index] = valid
        t1[index[valid]], t2[index[valid]], arc[index[valid]] = s1[valid], s2[valid], s[valid]
    return wrapped.reshape(shape), t1.reshape(shape + (3,)), t2.reshape(shape + (3,)), arc.reshape(shape)


@dataclass(frozen=True, kw_only=True)
class WrapTorus(WrapSurface):
    """OpenSim's ``WrapTorus``: a torus about the wrap frame's ``z`` axis with the tube radius
    ``inner_radius`` and the ring radius ``outer_radius`` (m, ``outer_radius > inner_radius``); paths
    through the hole wrap round the tube's inner side (:mod:`mbkron.muscles.wrap_torus`).

    Examples
    --------
    >>> torus = WrapTorus(name="t", body="ground", inner_radius=0.01, outer_radius=0.05)
    >>> p, q = np.array([0.045, 0.0, 0.03]), np.array([0.045, 0.0, -0.03])   # in the meridian plane y = 0
    >>> wrapped, t1, t2, arc = torus.solve(p, q)
    >>> theta = np.pi - 2 * np.arctan2(0.005, 0.03) - 2 * np.arccos(0.01 / np.hypot(0.005, 0.03))  # the circle's arc
    >>> bool(wrapped), bool(abs(float(arc) - 0.01 * theta) < 1e-15)
    (True, True)
    """

    inner_radius: float
    outer_radius: float

    def shape_problems(self, where: str) -> list[str | None]:
        problems = [positive_problem(self.inner_radius, f"{where}: `inner_radius`"),
                    positive_problem(self.outer_radius, f"{where}: `outer_radius`")]
        if not any(problems) and not self.outer_radius > self.inner_radius:
            problems.append(f"{where}: `outer_radius` must be greater than `inner_radius` (m), got "
                            f"{self.outer_radius!r} ≤ {self.inner_radius!r}")
        return problems

    def solve(self, p: ArrayLike, q: ArrayLike):
        """The path from ``p`` to ``q`` (wrap frame, m) round this torus: :func:`shortest_path`.

        For a complex step (complex ``p``, ``q``) the tangent points and the arc are those of the real
        parts: the path's first derivative does not depend on the tangent points' (they minimise ``L``),
        so ``Im L`` of the path through them is still exact — but it is the envelope theorem's value, not
        an independent check of it (``tests/test_wrap_torus.py`` checks R against differences)."""
        return shortest_path(np.real(p), np.real(q), self.outer_radius, self.inner_radius, self.quadrant)
