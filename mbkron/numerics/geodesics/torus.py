"""Compiled shortest path round the tube of a torus, one segment at a time: the solver of OpenSim's ``WrapTorus``.

The geometry, OpenSim's decision and the method are documented in :mod:`mbkron.multibody.muscles.wrap_torus`
(where the surface's ``solve`` runs this kernel over a batch, :mod:`mbkron.numerics.geodesics.segments`):
OpenSim's ring point (:func:`ring_point`, OpenSim's ``findClosestPoint`` by a safeguarded Newton descent
from each end) and its cylinder of radius ``r`` at that point
(:func:`mbkron.numerics.geodesics.circular.cylinder_path`, quadrant ``+x``) decide whether the segment wraps
and give the initial guess; the unknowns ``(u₁, v₁, s)`` (the torus angles of ``t₁`` and the geodesic's
arc length) solve the three tangency residuals by Newton's method (:data:`MAX_ANGLE_STEP`, the arc at
most halved or doubled plus ``r``, at most :data:`MAX_TURNS` turns round the tube, an Armijo line search,
:data:`MAX_ITERATIONS`, stop at :data:`TOLERANCE`); the geodesic in the torus angles is integrated with
DOP853's 12 stages in equal steps (:data:`STEP_CURVATURE`, each arc its own count); a converged path is
valid when ``s > 0``, ``q`` lies ahead of ``t₂`` and neither straight piece enters the solid
(:func:`enters_solid`); where the guess from OpenSim's cylinder gives no valid path and the straight
segment enters the solid, Newton's method starts again from the circle's solution in the meridian plane
of ``p``, then from the straight segment's point deepest in the solid (:data:`DEEPEST_GUESS_ARC`); where
those fail too the kernel reports :data:`FAILED` (the callers raise a ConfigurationError,
:func:`mbkron.numerics.geodesics.segments.failure_reason`).

The Newton Jacobian is computed by the variational equations of the discrete integration (DOP853's
stages applied to the tangent system of the geodesic equations in the angles, ``δy' = s ∂f/∂y δy``
(+ ``f`` for the derivative by ``s``)), started from the closed-form derivatives of ``t₁``'s initial
direction by ``(u₁, v₁)``, and closed by the closed-form derivatives of the end residuals by the end
state: the exact derivative of the discrete residuals, in real arithmetic. The constants are
:mod:`mbkron.numerics.geodesics.constants`'s. No state is kept between calls.
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.jit.calls import by_address
from mbkron.jit.common import jit
from mbkron.numerics.runge_kutta import STAGES, dop853_equal_steps
from mbkron.numerics.geodesics.constants import (DEEPEST_GUESS_ARC, MAX_ANGLE_STEP, MAX_ITERATIONS, MAX_TURNS,
                                           OPENSIM_CYLINDER_LENGTH, STEP_CURVATURE, TOLERANCE)
from mbkron.numerics.geodesics.circular import cylinder_path
from mbkron.numerics.geodesics.ellipsoid import FAILED, NO_WRAP

__all__ = ["TOLERANCE", "MAX_ITERATIONS", "MAX_ANGLE_STEP", "MAX_TURNS", "STEP_CURVATURE", "OPENSIM_CYLINDER_LENGTH",
           "DEEPEST_GUESS_ARC", "NO_WRAP", "FAILED", "torus_path", "ring_point", "enters_solid"]

_STAGES = STAGES
_SIZE = 16  # (u, v, u', v') and its derivatives by u₁, v₁ and s
_ARMIJO = 12  # halvings of a Newton step
_RING_ITERATIONS = 200  # Newton steps of each of OpenSim's ring-point descents


@jit
def _steps(R, r, arc):  # pragma: no cover - compiled
    """Equal integration steps for the arc (:data:`STEP_CURVATURE`), at least one."""
    curvature = max(1.0 / r, 1.0 / (R - r))
    return max(1, int(math.ceil(abs(arc) * curvature / STEP_CURVATURE)))


@jit
def _rate(y, parameters, out):  # pragma: no cover - compiled
    """d/dτ (τ = σ/s) of the geodesic's ``(u, v, u', v')`` and of its derivatives by u₁, v₁ and s; ``parameters``
    are ``(arc, R, r)``."""
    arc, R, r = parameters
    v, du, dv = y[1], y[2], y[3]
    sv, cv = math.sin(v), math.cos(v)
    ring = R + r * cv
    f2 = 2.0 * r * sv / ring * du * dv
    f3 = -ring * sv / r * du * du
    out[0], out[1], out[2], out[3] = arc * du, arc * dv, arc * f2, arc * f3
    # ∂f/∂(v, u', v') (nothing depends on u)
    f2_v = 2.0 * r * du * dv * (cv * ring + r * sv * sv) / (ring * ring)
    f2_du, f2_dv = 2.0 * r * sv * dv / ring, 2.0 * r * sv * du / ring
    f3_v = (r * sv * sv - ring * cv) * du * du / r
    f3_du = -2.0 * ring * sv * du / r
    for j in range(3):
        o = 4 + 4 * j
        out[o] = arc * y[o + 2]
        out[o + 1] = arc * y[o + 3]
        out[o + 2] = arc * (f2_v * y[o + 1] + f2_du * y[o + 2] + f2_dv * y[o + 3])
        out[o + 3] = arc * (f3_v * y[o + 1] + f3_du * y[o + 2])
        if j == 2:  # by s: the rate itself
            out[o] += du
            out[o + 1] += dv
            out[o + 2] += f2
            out[o + 3] += f3


@jit
def _integrate(y, arc, R, r, k, stage_y):  # pragma: no cover - compiled
    """The geodesic from ``y`` over arc length ``arc`` (in place): DOP853's stages in equal steps."""
    dop853_equal_steps(_rate, (arc, R, r), y, _steps(R, r, arc), k, stage_y)


@jit
def _residuals(p, q, R, r, u1, v1, arc, work, t1, t2, J, res):  # pragma: no cover - compiled
    """The three Newton residuals (m) into ``res``, ``t₁``, ``t₂``, their Jacobian ``J`` (3, 3) by
    ``(u₁, v₁, s)``, and whether ``q`` is ahead of ``t₂``.

    With ``e_u``, ``e_v``, ``n`` at ``t₁`` (a right-handed frame; ``∂e_u/∂u = −ρ̂``, ``∂e_v/∂u = −sin v e_u``,
    ``∂e_v/∂v = −n``, ``∂n/∂u = cos v e_u``, ``∂n/∂v = e_v``, ``ρ̂ = cos v n − sin v e_v``) and the chord
    ``c = t₁ − p``: ``a = c·e_u``, ``b = c·e_v``, ``N = c·n`` (the first residual), the start
    ``u' = a/(hG)``, ``v' = b/(hr)`` (``h = √(a² + b²)``, ``G = R + r cos v``) with ``∂a/∂u = G − c·ρ̂``,
    ``∂a/∂v = 0``, ``∂b/∂u = −a sin v``, ``∂b/∂v = r − N``, ``∂N/∂u = a cos v``, ``∂N/∂v = b``. At the end,
    with ``g = q − t₂`` and the tangent ``w = A e_u + B e_v`` (``A = u'G``, ``B = v'r``): the residuals
    ``g·n`` and ``g·(w × n) = B g·e_u − A g·e_v``."""
    y, k, stage_y = work[0], work[1:1 + _STAGES], work[1 + _STAGES]
    cu, su, cv, sv = math.cos(u1), math.sin(u1), math.cos(v1), math.sin(v1)
    ring = R + r * cv
    t1[0], t1[1], t1[2] = ring * cu, ring * su, r * sv
    e_u0, e_u1 = -su, cu
    e_v0, e_v1, e_v2 = -sv * cu, -sv * su, cv
    n0, n1, n2 = cv * cu, cv * su, sv
    c0, c1, c2 = t1[0] - p[0], t1[1] - p[1], t1[2] - p[2]
    normal_part = c0 * n0 + c1 * n1 + c2 * n2
    d0, d1, d2 = c0 - normal_part * n0, c1 - normal_part * n1, c2 - normal_part * n2
    norm = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    d0, d1, d2 = d0 / norm, d1 / norm, d2 / norm
    y[0], y[1] = u1, v1
    y[2] = (d0 * e_u0 + d1 * e_u1) / ring
    y[3] = (d0 * e_v0 + d1 * e_v1 + d2 * e_v2) / r
    a, b = c0 * e_u0 + c1 * e_u1, c0 * e_v0 + c1 * e_v1 + c2 * e_v2
    h = math.sqrt(a * a + b * b)
    a_u, b_u, b_v = ring - (c0 * cu + c1 * su), -sv * a, r - normal_part
    h_u, h_v = (a * a_u + b * b_u) / h, b * b_v / h
    for i in range(4, _SIZE):
        y[i] = 0.0
    y[4], y[9] = 1.0, 1.0  # δu by u₁, δv by v₁
    y[6] = a_u / (h * ring) - a * h_u / (h * h * ring)
    y[7] = b_u / (h * r) - b * h_u / (h * h * r)
    y[10] = -a * h_v / (h * h * ring) + a * r * sv / (h * ring * ring)
    y[11] = b_v / (h * r) - b * h_v / (h * h * r)
    J[0, 0], J[0, 1], J[0, 2] = cv * a, b, 0.0
    res[0] = normal_part
    _integrate(y, arc, R, r, k, stage_y)
    cu, su, cv, sv = math.cos(y[0]), math.sin(y[0]), math.cos(y[1]), math.sin(y[1])
    ring = R + r * cv
    t2[0], t2[1], t2[2] = ring * cu, ring * su, r * sv
    e_u0, e_u1 = -su, cu
    e_v0, e_v1, e_v2 = -sv * cu, -sv * su, cv
    n0, n1, n2 = cv * cu, cv * su, sv
    A, B = y[2] * ring, y[3] * r
    w0, w1, w2 = A * e_u0 + B * e_v0, A * e_u1 + B * e_v1, B * e_v2
    g0, g1, g2 = q[0] - t2[0], q[1] - t2[1], q[2] - t2[2]
    gn, gu, gv = g0 * n0 + g1 * n1 + g2 * n2, g0 * e_u0 + g1 * e_u1, g0 * e_v0 + g1 * e_v1 + g2 * e_v2
    res[1] = gn
    res[2] = g0 * (w1 * n2 - w2 * n1) + g1 * (w2 * n0 - w0 * n2) + g2 * (w0 * n1 - w1 * n0)
    # the end residuals by the end state (u₂, v₂, u₂', v₂')
    gu_u = -ring - (cv * gn - sv * gv)
    gv_u, gv_v = -sv * gu, -r - gn
    r2_u, r2_v = B * gu_u - A * gv_u, y[2] * r * sv * gv - A * gv_v
    r2_du, r2_dv = -ring * gv, r * gu
    for j in range(3):
        o = 4 + 4 * j
        J[1, j] = cv * gu * y[o] + gv * y[o + 1]
        J[2, j] = r2_u * y[o] + r2_v * y[o + 1] + r2_du * y[o + 2] + r2_dv * y[o + 3]
    return g0 * w0 + g1 * w1 + g2 * w2 > 0.0


@jit
def _solve3(J, rhs, x):  # pragma: no cover - compiled
    """``x = J⁻¹ rhs`` by Gaussian elimination with partial pivoting; False where ``det J`` is 0 or not finite."""
    M = J.copy()
    b = rhs.copy()
    det = 1.0
    for col in range(3):
        pivot = col
        for i in range(col + 1, 3):
            if abs(M[i, col]) > abs(M[pivot, col]):
                pivot = i
        if pivot != col:
            det = -det
            for j in range(3):
                M[col, j], M[pivot, j] = M[pivot, j], M[col, j]
            b[col], b[pivot] = b[pivot], b[col]
        det *= M[col, col]
        if M[col, col] == 0.0:
            return False
        for i in range(col + 1, 3):
            factor = M[i, col] / M[col, col]
            for j in range(col, 3):
                M[i, j] -= factor * M[col, j]
            b[i] -= factor * b[col]
    if not (math.isfinite(det) and det != 0.0):
        return False
    for i in range(2, -1, -1):
        total = b[i]
        for j in range(i + 1, 3):
            total -= M[i, j] * x[j]
        x[i] = total / M[i, i]
    return True


@jit
def _largest(res):  # pragma: no cover - compiled
    """``max |res|`` (NaN where a residual is NaN)."""
    largest = 0.0
    for i in range(3):
        if not abs(res[i]) <= largest:
            largest = abs(res[i])
    return largest


@jit
def _newton(p, q, R, r, u1, v1, arc, work, t1, t2):  # pragma: no cover - compiled
    """Newton's method on ``(u₁, v₁, s)`` (the step rules of :mod:`mbkron.multibody.muscles.wrap_torus`); returns the
    arc and whether it converged (residuals ≤ :data:`TOLERANCE`, ``q`` ahead of ``t₂``)."""
    longest = MAX_TURNS * 2.0 * math.pi * r
    z, step, res, J = np.array([u1, v1, min(arc, longest)]), np.empty(3), np.empty(3), np.empty((3, 3))
    ahead = _residuals(p, q, R, r, z[0], z[1], z[2], work, t1, t2, J, res)
    for _ in range(MAX_ITERATIONS):
        if _largest(res) <= TOLERANCE:
            break
        if not _solve3(J, -res, step):
            step[0] = step[1] = step[2] = 0.0  # stalls (and is reported as not converged)
        if not (math.isfinite(step[0]) and math.isfinite(step[1]) and math.isfinite(step[2])):
            step[0] = step[1] = step[2] = 0.0
        scale = min(1.0, MAX_ANGLE_STEP / max(abs(step[0]), abs(step[1]), 1e-300))
        if step[2] < -0.5 * abs(z[2]):
            scale = min(scale, 0.5 * abs(z[2]) / -step[2])
        if step[2] > abs(z[2]) + r:  # the arc at most doubled plus the tube's radius
            scale = min(scale, (abs(z[2]) + r) / step[2])
        norm = math.sqrt(res[0] * res[0] + res[1] * res[1] + res[2] * res[2])
        start0, start1, start2 = z[0], z[1], z[2]
        for _ in range(_ARMIJO):  # halve the step until the residual's norm decreases (the last trial is kept)
            z[0], z[1] = start0 + scale * step[0], start1 + scale * step[1]
            z[2] = min(start2 + scale * step[2], longest)
            ahead = _residuals(p, q, R, r, z[0], z[1], z[2], work, t1, t2, J, res)
            if math.sqrt(res[0] * res[0] + res[1] * res[1] + res[2] * res[2]) < (1.0 - 1e-4 * scale) * norm:
                break
            scale *= 0.5
    return z[2], _largest(res) <= TOLERANCE and ahead


@jit
def enters_solid(p, q, R, r):  # pragma: no cover - compiled
    """Whether the segment ``p → q`` passes through the interior of the solid torus
    (the sign of ``F`` along it is that of the quartic below: the minimum over ``[0, 1]`` of the quartic
    ``(|x|² + R² − r²)² − 4R²(x² + y²)`` along it, at the ends and the real roots of its derivative)."""
    return _quartic_minimum(p, q, R, r)[0] < 0.0


@jit
def _quartic_minimum(p, q, R, r):  # pragma: no cover - compiled
    """The minimum over ``t ∈ [0, 1]`` of :func:`enters_solid`'s quartic along ``p + t (q − p)`` and its ``t``
    (candidates: the derivative's real roots in (0, 1), then the ends)."""
    d = q - p
    A, B, C = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], 2.0 * (p[0] * d[0] + p[1] * d[1] + p[2] * d[2]), \
        p[0] * p[0] + p[1] * p[1] + p[2] * p[2] + R * R - r * r
    A2, B2, C2 = d[0] * d[0] + d[1] * d[1], 2.0 * (p[0] * d[0] + p[1] * d[1]), p[0] * p[0] + p[1] * p[1]
    c = np.array([A * A, 2 * A * B, B * B + 2 * A * C - 4 * R * R * A2, 2 * B * C - 4 * R * R * B2,
                  C * C - 4 * R * R * C2])
    lowest, where = np.inf, 0.0
    if c[0] > 0.0:
        companion = np.zeros((3, 3), dtype=np.complex128)  # of the derivative 4c₀t³ + 3c₁t² + 2c₂t + c₃
        companion[0, 0], companion[0, 1], companion[0, 2] = -3 * c[1] / (4 * c[0]), -2 * c[2] / (4 * c[0]), \
            -c[3] / (4 * c[0])
        companion[1, 0] = companion[2, 1] = 1.0
        roots = np.linalg.eigvals(companion)
        for root in roots:
            t = root.real if abs(root.imag) < 1e-9 and 0.0 < root.real < 1.0 else 0.0
            value = c[0] * t**4 + c[1] * t**3 + c[2] * t**2 + c[3] * t + c[4]
            if value < lowest:
                lowest, where = value, t
    for t in (0.0, 1.0):  # the ends
        value = c[0] * t**4 + c[1] * t**3 + c[2] * t**2 + c[3] * t + c[4]
        if value < lowest:
            lowest, where = value, t
    return lowest, where


@jit
def ring_point(p, q, R, axis, sign, c):  # pragma: no cover - compiled
    """OpenSim's ring point into ``c`` (:func:`mbkron.multibody.muscles.wrap_torus.opensim_ring_point`); returns
    False where a quadrant (``axis``, ``sign``; sign 0: none) rules out both descents' results."""
    a1, a2, chord = np.empty(3), np.empty(3), np.empty(3)
    d1 = d2 = 0.0
    for side in range(2):
        start, end, point = (p, q, a1) if side == 0 else (q, p, a2)
        for i in range(3):
            chord[i] = end[i] - start[i]
        n = chord / max(math.sqrt(chord[0] ** 2 + chord[1] ** 2 + chord[2] ** 2), 1e-300)
        c3, c4 = start[0] * n[0] + start[1] * n[1], n[0] * n[0] + n[1] * n[1]
        c5 = start[0] * start[0] + start[1] * start[1]
        along = start[0] * n[0] + start[1] * n[1] + start[2] * n[2]
        kink = max(c4 * c5 - c3 * c3, 0.0)
        u = 0.0
        for _ in range(_RING_ITERATIONS):
            rho = max(math.sqrt(max(c4 * u * u + 2 * c3 * u + c5, 0.0)), 1e-12 * R)
            slope = 2 * u + 2 * along - 4 * R * (c4 * u + c3) / rho
            curvature = 2 - 4 * R * kink / rho**3
            if curvature > 0:
                step = -slope / curvature
            else:
                step = -(1.0 if slope > 0 else (-1.0 if slope < 0 else 0.0)) * 0.2 * R
            step = min(max(step, -R), R)
            u += step
            if abs(step) <= 1e-14 * (1.0 + abs(u)):
                break
        for i in range(3):
            point[i] = start[i] + u * n[i]
        rho = math.hypot(point[0], point[1])
        distance = math.sqrt(max(point[0] ** 2 + point[1] ** 2 + point[2] ** 2 + R * R - 2 * R * rho, 0.0))
        if side == 0:
            d1 = distance
        else:
            d2 = distance
    first, found = d1 < d2, True
    if sign != 0:
        on1, on2 = (1 if a1[axis] >= 0 else -1) == sign, (1 if a2[axis] >= 0 else -1) == sign
        first = first if (on1 and on2) else on1
        found = on1 or on2
    best = a1 if first else a2
    azimuth = math.atan2(best[1], best[0])  # 0 on the axis (where OpenSim divides by zero)
    c[0], c[1], c[2] = R * math.cos(azimuth), R * math.sin(azimuth), 0.0
    return found


@jit
def _valid_newton(p, q, R, r, u1, v1, arc, work, t1, t2):  # pragma: no cover - compiled
    """:func:`_newton` and whether its result is a valid wrap: converged, a positive arc, and straight pieces
    that stay outside the solid (ended 1e-6 of their length before the tangent points, where they touch it)."""
    arc, valid = _newton(p, q, R, r, u1, v1, min(arc, MAX_TURNS * 2.0 * math.pi * r), work, t1, t2)
    valid = valid and arc > 0.0
    if valid:
        valid = not (enters_solid(p, p + (1 - 1e-6) * (t1 - p), R, r) or enters_solid(q, q + (1 - 1e-6) * (t2 - q), R, r))
    return arc, valid


_valid_newton_at = by_address(_valid_newton)
""":func:`_valid_newton` called through its address (:mod:`mbkron.jit.calls`): compiled once, not once per
call site of :func:`torus_path`."""


@jit
def torus_path(p, q, R, r, axis, sign, t1, t2):  # pragma: no cover - compiled
    """The path from ``p`` to ``q`` (torus frame, m) round the tube of the torus ``(R, r)``.

    Parameters
    ----------
    p, q : ndarray, shape (3,)
    R, r : float
        The ring's and the tube's radii (m), ``R > r > 0``.
    axis, sign : int
        The quadrant (:func:`mbkron.multibody.muscles.wrapping.parse_quadrant`; ``sign`` 0: unconstrained).
    t1, t2 : ndarray, shape (3,)
        Set to the tangent points where the segment wraps.

    Returns
    -------
    float
        The geodesic's length, :data:`NO_WRAP` where the segment does not wrap, :data:`FAILED` where
        no valid path was found although the straight segment enters the solid (the callers raise
        a ConfigurationError there).
    """
    c, frame, local_p, local_q, g1, g2 = (np.empty(3), np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3),
                                          np.empty(3))
    found = ring_point(p, q, R, axis, sign, c)
    norm = math.hypot(c[0], c[1])  # OpenSim's cylinder at c: rows x = −c/|c|, y = −z, z = x × y
    frame[0, 0], frame[0, 1], frame[0, 2] = -c[0] / norm, -c[1] / norm, 0.0
    frame[1, 0], frame[1, 1], frame[1, 2] = 0.0, 0.0, -1.0
    frame[2, 0], frame[2, 1], frame[2, 2] = c[1] / norm, -c[0] / norm, 0.0
    for i in range(3):
        local_p[i] = frame[i, 0] * (p[0] - c[0]) + frame[i, 1] * (p[1] - c[1]) + frame[i, 2] * (p[2] - c[2])
        local_q[i] = frame[i, 0] * (q[0] - c[0]) + frame[i, 1] * (q[1] - c[1]) + frame[i, 2] * (q[2] - c[2])
    guess_arc = cylinder_path(local_p, local_q, r, OPENSIM_CYLINDER_LENGTH, np.int64(0), np.int64(1), g1, g2)
    if not (found and guess_arc >= 0.0):
        return NO_WRAP
    guess = np.empty(3)
    for j in range(3):
        guess[j] = g1[0] * frame[0, j] + g1[1] * frame[1, j] + g1[2] * frame[2, j] + c[j]
    u1 = math.atan2(guess[1], guess[0])
    v1 = math.atan2(guess[2], math.hypot(guess[0], guess[1]) - R)
    work = np.empty((_STAGES + 2, _SIZE))
    arc, valid = _valid_newton_at((p, q, R, r, u1, v1, guess_arc, work, t1, t2))
    if not valid and enters_solid(p, q, R, r):  # again from the circle's solution in the meridian plane of p
        u1 = math.atan2(p[1], p[0])
        xi_p, xi_q = math.hypot(p[0], p[1]) - R, math.hypot(q[0], q[1]) - R
        d_p, d_q = max(math.hypot(xi_p, p[2]), r), max(math.hypot(xi_q, q[2]), r)
        a_p, a_q = math.atan2(p[2], xi_p), math.atan2(q[2], xi_q)
        down = 1.0 if p[2] >= q[2] else -1.0  # counterclockwise in (ξ, z) from above: through ξ < 0
        theta = (down * (a_q - a_p)) % (2 * math.pi) - math.acos(r / d_p) - math.acos(r / d_q)
        arc, valid = _valid_newton_at((p, q, R, r, u1, a_p + down * math.acos(r / d_p), r * max(theta, 0.1), work,
                                       t1, t2))
        if not valid:  # and from the point of the straight segment deepest in the solid
            x = p + _quartic_minimum(p, q, R, r)[1] * (q - p)
            arc, valid = _valid_newton_at((p, q, R, r, math.atan2(x[1], x[0]),
                                           math.atan2(x[2], math.hypot(x[0], x[1]) - R), DEEPEST_GUESS_ARC * r, work,
                                           t1, t2))
        if not valid:
            return FAILED
    return arc if valid else NO_WRAP
