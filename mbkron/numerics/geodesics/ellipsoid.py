"""Compiled shortest path over an ellipsoid, one segment at a time: the solver of OpenSim's ``WrapEllipsoid``.

The geometry, OpenSim's rules and the method are documented in :mod:`mbkron.multibody.muscles.wrap_ellipsoid`
(where the surface's ``solve`` runs this kernel over a batch, :mod:`mbkron.numerics.geodesics.segments`):
the segment wraps where the straight segment passes through the ellipsoid and neither end is inside;
the tangent point ``t₁`` on the horizon of ``p`` (angle ``φ``) and the geodesic's arc length ``s`` solve
the two end conditions at ``q`` by Newton's method (:data:`DIRECT_ITERATIONS` from the scaled sphere's
great circle, a backtracking line search on the residual's norm, stop at :data:`TOLERANCE`); the
geodesic ``x'' = −(x'ᵀ A x'/|A x|²) A x`` is integrated with DOP853's 12 stages in equal steps
(:data:`STEP_CURVATURE`); the initial guesses turned by :data:`TILTS` about the segment, the shortest
converged path kept, a path longer than its own initial guess rejected; continuation from a sphere
(:data:`CONTINUATION_LEVELS`) where Newton's method fails from the sphere's guess; with a quadrant the
long way round where both tangent points of the short way are on the other side or the short way did
not converge.

The Newton Jacobian is computed by the variational equations of the discrete integration (the same
DOP853 stages applied to the tangent system ``δx' = s δv``, ``δv' = s ∂a/∂(x, v) · (δx, δv)`` (+ ``(v, a)``
for the derivative by ``s``)): the exact derivative of the discrete end point, in real arithmetic.

No state is kept between calls (no warm starts): a result depends on ``p``, ``q`` and the surface only.
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.jit.calls import by_address
from mbkron.jit.common import jit
from mbkron.numerics.linalg import copy_into
from mbkron.numerics.runge_kutta import STAGES, dop853_equal_steps

__all__ = ["TOLERANCE", "DIRECT_ITERATIONS", "MAX_ITERATIONS", "CONTINUATION_LEVELS", "TILTS", "STEP_CURVATURE",
           "NO_WRAP", "FAILED", "ellipsoid_path"]

TOLERANCE = 1e-13
"""Newton stops when both end conditions (distances of ``q`` from the end's tangent line, in m) are below this."""
DIRECT_ITERATIONS = 12
"""Newton iterations from the scaled sphere's solution before trying continuation."""
MAX_ITERATIONS = 30
"""Newton iterations per continuation level before the solver gives up (:data:`FAILED`)."""
CONTINUATION_LEVELS = (4, 16, 64)
"""Numbers of continuation steps from a sphere tried in turn where Newton's method alone fails."""
TILTS = (0.0, math.pi / 4, -math.pi / 4)
"""Angles (rad) by which the initial guess's tangent points are turned about the segment."""
STEP_CURVATURE = 0.2
"""Integration step times the ellipsoid's largest normal curvature ``max(a)/min(a)²`` (at most)."""
NO_WRAP = -1.0
""":func:`ellipsoid_path`'s result where the segment does not wrap."""
FAILED = -2.0
""":func:`ellipsoid_path`'s result where Newton's method did not converge (the caller raises a ConfigurationError,
:func:`mbkron.numerics.geodesics.segments.failure_reason`)."""

_STAGES = STAGES
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(48)  # the initial guess's arc length
_SIZE = 18  # (x, v), its derivatives by φ and by s


@jit
def _dot3(u, v):  # pragma: no cover - compiled
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


@jit
def _cross3(u, v, out):  # pragma: no cover - compiled
    out[0], out[1], out[2] = u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]


@jit
def _frame(v, e1, e2):  # pragma: no cover - compiled
    """Two unit vectors perpendicular to each other and to ``v``: ``e₁ = v̂ × e_k`` (``k`` the axis of ``v``'s smallest
    component), ``e₂ = v̂ × e₁``."""
    norm = math.sqrt(_dot3(v, v))
    unit = v / norm
    k = 0
    for i in range(1, 3):
        if abs(unit[i]) < abs(unit[k]):
            k = i
    helper = np.zeros(3)
    helper[k] = 1.0
    _cross3(unit, helper, e1)
    e1 /= math.sqrt(_dot3(e1, e1))
    _cross3(unit, e1, e2)


@jit
def _horizon(p, a, horizon):  # pragma: no cover - compiled
    """``horizon`` (10,) = the centre (3), ``e₁``, ``e₂`` and radius of the horizon circle of ``p / a``."""
    scaled = p / a
    e1, e2 = np.empty(3), np.empty(3)
    _frame(scaled, e1, e2)
    norm2 = _dot3(scaled, scaled)
    for i in range(3):
        horizon[i], horizon[3 + i], horizon[6 + i] = scaled[i] / norm2, e1[i], e2[i]
    horizon[9] = math.sqrt(1.0 - 1.0 / norm2)


@jit
def _steps(a, arc):  # pragma: no cover - compiled
    """Equal integration steps (:data:`STEP_CURVATURE`), rounded up to a power of 2, at least 8."""
    curvature = max(a[0], a[1], a[2]) / min(a[0], a[1], a[2]) ** 2
    needed = max(8.0, math.ceil(abs(arc) * curvature / STEP_CURVATURE))
    return int(2.0 ** math.ceil(math.log2(needed)))


@jit
def _rate(y, parameters, out):  # pragma: no cover - compiled
    """d/dτ of the geodesic's (x, v) (τ = σ/s) and of its derivatives by φ and by s (the variational equations);
    ``parameters`` are ``(arc, w)``."""
    arc, w = parameters
    n0, n1, n2 = y[0] * w[0], y[1] * w[1], y[2] * w[2]
    c = (y[3] * w[0]) * y[3] + (y[4] * w[1]) * y[4] + (y[5] * w[2]) * y[5]
    d = n0 * n0 + n1 * n1 + n2 * n2
    g = c / d
    k = -g
    acc0, acc1, acc2 = k * n0, k * n1, k * n2
    out[0], out[1], out[2] = arc * y[3], arc * y[4], arc * y[5]
    out[3], out[4], out[5] = arc * acc0, arc * acc1, arc * acc2
    for j in range(2):  # δ(x, v) by φ (rows 6–11) and by s (rows 12–17)
        o = 6 + 6 * j
        dn0, dn1, dn2 = y[o] * w[0], y[o + 1] * w[1], y[o + 2] * w[2]
        dc = 2.0 * (y[3] * w[0] * y[o + 3] + y[4] * w[1] * y[o + 4] + y[5] * w[2] * y[o + 5])
        dd = 2.0 * (n0 * dn0 + n1 * dn1 + n2 * dn2)
        dg = (dc - g * dd) / d
        out[o], out[o + 1], out[o + 2] = arc * y[o + 3], arc * y[o + 4], arc * y[o + 5]
        out[o + 3] = -arc * (dg * n0 + g * dn0)
        out[o + 4] = -arc * (dg * n1 + g * dn1)
        out[o + 5] = -arc * (dg * n2 + g * dn2)
        if j == 1:
            out[o] += y[3]
            out[o + 1] += y[4]
            out[o + 2] += y[5]
            out[o + 3] += acc0
            out[o + 4] += acc1
            out[o + 5] += acc2


@jit
def _integrate(y, arc, a, w, k, stage_y):  # pragma: no cover - compiled
    """The geodesic from ``y`` over arc length ``arc`` (in place): DOP853's stages in equal steps."""
    dop853_equal_steps(_rate, (arc, w), y, _steps(a, arc), k, stage_y)


@jit
def _end_conditions(p, q, a, w, horizon, phi, arc, work, t1, t2, J):  # pragma: no cover - compiled
    """The two Newton residuals (m) at (φ, s), ``t₁``, ``t₂``, their Jacobian ``J`` (2, 2) and
    whether ``q`` is ahead of ``t₂`` along the geodesic's end tangent."""
    y, k, stage_y = work[0], work[1:1 + _STAGES], work[1 + _STAGES]
    cos, sin, radius = math.cos(phi), math.sin(phi), horizon[9]
    chord2 = 0.0
    for i in range(3):
        t1[i] = (horizon[i] + radius * (cos * horizon[3 + i] + sin * horizon[6 + i])) * a[i]
        y[i] = t1[i]
        y[3 + i] = t1[i] - p[i]
        chord2 += y[3 + i] * y[3 + i]
    chord = math.sqrt(chord2)
    for i in range(3):
        y[3 + i] /= chord
    along = 0.0
    for i in range(3):  # δt₁ and δu = (I − u uᵀ) δt₁ / |t₁ − p| by φ; none by s
        y[6 + i] = radius * (-sin * horizon[3 + i] + cos * horizon[6 + i]) * a[i]
        along += y[3 + i] * y[6 + i]
    for i in range(3):
        y[9 + i] = (y[6 + i] - along * y[3 + i]) / chord
        y[12 + i] = y[15 + i] = 0.0
    _integrate(y, arc, a, w, k, stage_y)
    speed = math.sqrt(y[3] * y[3] + y[4] * y[4] + y[5] * y[5])
    v, n, b, gap = y[3:6] / speed, y[0:3] * w, np.empty(3), np.empty(3)
    normal = math.sqrt(_dot3(n, n))
    n /= normal
    _cross3(v, n, b)
    for i in range(3):
        t2[i] = y[i]
        gap[i] = q[i] - y[i]
    r0, r1 = _dot3(gap, n), _dot3(gap, b)
    dv, dn, db, other = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for j in range(2):  # δr₀ = −δx·n + (q − x)·δn, δr₁ = −δx·b + (q − x)·(δv̂ × n + v̂ × δn)
        o = 6 + 6 * j
        dx = y[o:o + 3]
        along_v = _dot3(v, y[o + 3:o + 6])
        for i in range(3):
            dn[i] = dx[i] * w[i]
        along_n = _dot3(n, dn)
        for i in range(3):
            dv[i] = (y[o + 3 + i] - along_v * v[i]) / speed
            dn[i] = (dn[i] - along_n * n[i]) / normal
        _cross3(dv, n, db)
        _cross3(v, dn, other)
        db += other
        J[0, j] = -_dot3(dx, n) + _dot3(gap, dn)
        J[1, j] = -_dot3(dx, b) + _dot3(gap, db)
    return r0, r1, _dot3(gap, v) > 0.0


@jit
def _newton(p, q, a, phi, arc, iterations, work, t1, t2):  # pragma: no cover - compiled
    """Newton's method on (φ, s) (the step rules of :mod:`mbkron.multibody.muscles.wrap_ellipsoid`); returns φ, s and
    whether it converged to a valid path (``s ≥ 0``, ``q`` ahead of ``t₂``)."""
    w = 1.0 / a**2
    horizon, J, trial_J, u1, u2 = np.empty(10), np.empty((2, 2)), np.empty((2, 2)), np.empty(3), np.empty(3)
    _horizon(p, a, horizon)
    smallest = min(a[0], a[1], a[2])
    r0, r1, ahead = _end_conditions(p, q, a, w, horizon, phi, arc, work, t1, t2, J)
    for _ in range(iterations):
        if abs(r0) <= TOLERANCE and abs(r1) <= TOLERANCE:  # (not met by NaN)
            return phi, arc, arc >= 0.0 and ahead
        det = J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]
        d_phi = -(J[1, 1] * r0 - J[0, 1] * r1) / det if det != 0.0 else math.nan
        d_arc = -(-J[1, 0] * r0 + J[0, 0] * r1) / det if det != 0.0 else math.nan
        if not (math.isfinite(d_phi) and math.isfinite(d_arc)):
            d_phi = d_arc = 0.0
        # at most 1 rad along the horizon, the arc at most halved or doubled plus half the smallest
        # semi-axis; halved until the residual's norm decreases (Armijo), at most 10 times. A trial
        # carries its Jacobian: where it is accepted it is the next iterate's evaluation
        step = min(1.0, 1.0 / max(abs(d_phi), 1e-300))
        if d_arc < -0.5 * arc:
            step = min(step, 0.5 * arc / -d_arc)
        if d_arc > arc + 0.5 * smallest:
            step = min(step, (arc + 0.5 * smallest) / d_arc)
        norm = math.sqrt(r0 * r0 + r1 * r1)
        accepted = False
        for _ in range(10):
            s0, s1, trial_ahead = _end_conditions(p, q, a, w, horizon, phi + step * d_phi, arc + step * d_arc,
                                                  work, u1, u2, trial_J)
            if math.sqrt(s0 * s0 + s1 * s1) < (1.0 - 1e-4 * step) * norm:
                accepted = True
                break
            step *= 0.5
        phi, arc = phi + step * d_phi, arc + step * d_arc
        if accepted:
            r0, r1, ahead = s0, s1, trial_ahead
            copy_into(t1, u1)
            copy_into(t2, u2)
            for i in range(2):
                for j in range(2):
                    J[i, j] = trial_J[i, j]
        else:
            r0, r1, ahead = _end_conditions(p, q, a, w, horizon, phi, arc, work, t1, t2, J)
    return phi, arc, False


@jit
def _initial_guess(p, q, a, side, tilt):  # pragma: no cover - compiled
    """φ, s and the length of the path over the scaled sphere's great circle: ``side`` +1 the short way
    (through the scaled segment's point nearest the centre, ``d``), −1 the long way; the tangent points on
    the side of ``d`` turned by ``tilt`` about the segment (0: the sphere's solution), joined by the great
    circle between them (the minor arc if its middle is on that side, else the major arc), mapped back to
    the ellipsoid; its length by Gauss–Legendre quadrature."""
    # 3-vectors by loops, with the arithmetic of the array expressions they replace (numba compiles each array
    # expression as a loop of its own: a second of compilation for this function)
    P, Q, D, nearest = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for i in range(3):
        P[i], Q[i] = p[i] / a[i], q[i] / a[i]
        D[i] = Q[i] - P[i]
    along = _dot3(P, D) / _dot3(D, D)
    for i in range(3):
        nearest[i] = P[i] - along * D[i]
    length = math.sqrt(_dot3(nearest, nearest))
    if length < 1e-9:  # through the centre: any direction perpendicular to the segment, across the largest axis
        axis = np.zeros(3)
        axis[np.argmax(a)] = 1.0
        across, fallback = np.empty(3), np.empty(3)
        _cross3(D, axis, across)
        _cross3(across, D, fallback)
        if math.sqrt(_dot3(fallback, fallback)) < 1e-12:  # the segment along the largest axis
            _frame(D, fallback, across)
        norm = math.sqrt(_dot3(fallback, fallback))
        for i in range(3):
            nearest[i] = fallback[i] / norm
        length = 1.0
    d = np.empty(3)
    for i in range(3):
        d[i] = side * nearest[i] / length
    if tilt != 0.0:
        turned, direction = np.empty(3), np.empty(3)
        norm = math.sqrt(_dot3(D, D))
        for i in range(3):
            direction[i] = D[i] / norm
        _cross3(direction, d, turned)
        cosine, sine = math.cos(tilt), math.sin(tilt)
        for i in range(3):
            d[i] = cosine * d[i] + sine * turned[i]
    T1, T2, across = np.empty(3), np.empty(3), np.empty(3)
    for X, T in ((P, T1), (Q, T2)):
        norm2 = _dot3(X, X)
        along = _dot3(d, X) / norm2
        for i in range(3):
            across[i] = d[i] - along * X[i]
        norm = math.sqrt(_dot3(across, across))
        scale = math.sqrt(1.0 - 1.0 / norm2)
        for i in range(3):
            across[i] /= norm
            T[i] = X[i] / norm2 + scale * across[i]
    ortho, normal, middle = np.empty(3), np.empty(3), np.empty(3)
    along = _dot3(T2, T1)
    for i in range(3):
        ortho[i] = T2[i] - along * T1[i]
        middle[i] = T1[i] + T2[i]
    norm = math.sqrt(_dot3(ortho, ortho))
    for i in range(3):
        ortho[i] /= norm
    _cross3(T1, T2, normal)
    angle = math.atan2(math.sqrt(_dot3(normal, normal)), _dot3(T1, T2))
    if _dot3(middle, d) < 0.0:  # the major arc
        angle = 2 * math.pi - angle
        for i in range(3):
            ortho[i] = -ortho[i]
    total = 0.0
    for i in range(_NODES.shape[0]):
        theta = angle * (0.5 * (_NODES[i] + 1.0))
        c, s = math.cos(theta), math.sin(theta)
        speed2 = 0.0
        for j in range(3):
            speed2 += ((c * ortho[j] - s * T1[j]) * a[j]) ** 2
        total += _WEIGHTS[i] * math.sqrt(speed2)
    arc = 0.5 * angle * total
    start, end, to_start, from_end, y = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for i in range(3):
        start[i], end[i] = T1[i] * a[i], T2[i] * a[i]
        to_start[i], from_end[i] = start[i] - p[i], q[i] - end[i]
        y[i] = start[i] / a[i]
    length = math.sqrt(_dot3(to_start, to_start)) + arc + math.sqrt(_dot3(from_end, from_end))
    e1, e2 = np.empty(3), np.empty(3)
    _frame(P, e1, e2)  # p / a
    return math.atan2(_dot3(y, e2), _dot3(y, e1)), arc, length


@jit
def _length(p, q, t1, t2, arc):  # pragma: no cover - compiled
    """``|t1 − p| + arc + |q − t2|`` (by scalars: no array expressions)."""
    a0, a1, a2 = t1[0] - p[0], t1[1] - p[1], t1[2] - p[2]
    b0, b1, b2 = q[0] - t2[0], q[1] - t2[1], q[2] - t2[2]
    return math.sqrt(a0 * a0 + a1 * a1 + a2 * a2) + arc + math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)


_newton_at = by_address(_newton)
""":func:`_newton` called through its address (:mod:`mbkron.jit.calls`): compiled once, not once per call
site of :func:`_solve` and again inside each caller above."""


@jit
def _solve(p, q, a, side, tilt, continuation, work, t1, t2):  # pragma: no cover - compiled
    """Newton from the scaled sphere's solution, where that fails continuation from a sphere (module
    documentation of :mod:`mbkron.multibody.muscles.wrap_ellipsoid`); returns the arc and whether it converged to a path
    no longer than its guess (a feasible path on the same side: a longer converged path is another geodesic,
    winding round the ellipsoid or over another side)."""
    phi, arc, bound = _initial_guess(p, q, a, side, tilt)
    if side < 0:  # the long way round is a saddle of the length: no bound
        bound = np.inf
    # np.int64: the iteration counts as a run-time int64, not a literal each (one specialisation of _newton)
    phi, arc, converged = _newton_at((p, q, a, phi, arc, np.int64(DIRECT_ITERATIONS), work, t1, t2))
    converged = converged and _length(p, q, t1, t2, arc) <= bound * (1.0 + 1e-12)
    if not continuation:
        return arc, converged
    scaled_p, scaled_q = p / a, q / a
    radius = math.exp((math.log(a[0]) + math.log(a[1]) + math.log(a[2])) / 3.0)
    for levels in CONTINUATION_LEVELS:
        if converged:
            break
        previous = np.full(3, radius)
        phi_c, arc_c, _ = _initial_guess(scaled_p * radius, scaled_q * radius, previous, side, tilt)
        ok = True
        for fraction in np.linspace(0.0, 1.0, levels + 1)[1:]:
            level = radius ** (1.0 - fraction) * a**fraction
            if fraction == 1.0:
                phi_c, arc_c, level_ok = _newton_at((p, q, a, phi_c, arc_c * level.sum() / previous.sum(),
                                                     np.int64(MAX_ITERATIONS), work, t1, t2))
            else:
                phi_c, arc_c, level_ok = _newton_at((scaled_p * level, scaled_q * level, level, phi_c,
                                                     arc_c * level.sum() / previous.sum(), np.int64(MAX_ITERATIONS),
                                                     work, t1, t2))
            ok = ok and level_ok
            previous = level
        arc = arc_c
        converged = ok and _length(p, q, t1, t2, arc) <= bound * (1.0 + 1e-12)
    return arc, converged


_solve_at = by_address(_solve)
""":func:`_solve` called through its address."""


@jit
def _shortest_side(p, q, a, work, t1, t2):  # pragma: no cover - compiled
    """The shortest converged path the short way round from the guesses tilted by :data:`TILTS` (on a
    triaxial ellipsoid the geodesic nearest the scaled sphere's solution need not be the shortest; ties keep
    the earlier tilt; continuation from the untilted guess only)."""
    c1, c2 = np.empty(3), np.empty(3)
    best, best_arc, best_converged = np.inf, 0.0, False
    for index in range(len(TILTS)):
        arc, converged = _solve_at((p, q, a, 1.0, TILTS[index], index == 0, work, c1, c2))
        length = _length(p, q, c1, c2, arc) if converged else np.inf
        if index == 0 or length < best:
            best, best_arc, best_converged = length, arc, converged
            copy_into(t1, c1)
            copy_into(t2, c2)
    return best_arc, best_converged


@jit
def ellipsoid_path(p, q, a, axis, sign, t1, t2):  # pragma: no cover - compiled
    """The shortest path from ``p`` to ``q`` (ellipsoid frame, m) over the ellipsoid of semi-axes ``a``.

    Parameters
    ----------
    p, q : ndarray, shape (3,)
    a : ndarray, shape (3,)
        The semi-axes (m).
    axis, sign : int
        The quadrant (:func:`mbkron.multibody.muscles.wrapping.parse_quadrant`; ``sign`` 0: unconstrained).
    t1, t2 : ndarray, shape (3,)
        Set to the tangent points where the segment wraps.

    Returns
    -------
    float
        The geodesic's length, :data:`NO_WRAP` where the segment does not wrap, :data:`FAILED` where
        Newton's method did not converge (the callers raise a ConfigurationError there).
    """
    P, Q, D, nearest = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for i in range(3):  # by loops, as the array expressions P = p / a, …: no compiled loop for each
        P[i], Q[i] = p[i] / a[i], q[i] / a[i]
        D[i] = Q[i] - P[i]
    DD = _dot3(D, D)
    t = -_dot3(P, D) / DD if DD > 0.0 else 0.0
    t = 0.0 if not math.isfinite(t) else min(max(t, 0.0), 1.0)
    for i in range(3):
        nearest[i] = P[i] + t * D[i]
    if not (_dot3(nearest, nearest) < 1.0 and _dot3(P, P) > 1.0 and _dot3(Q, Q) > 1.0):
        return NO_WRAP
    work = np.empty((_STAGES + 2, _SIZE))
    arc, converged = _shortest_side(p, q, a, work, t1, t2)
    if sign != 0:
        wrong_side = max(sign * t1[axis], sign * t2[axis]) < 0.0
        if wrong_side or not converged:
            l1, l2 = np.empty(3), np.empty(3)
            long_arc, long_converged = _solve_at((p, q, a, -1.0, 0.0, np.bool_(True), work, l1, l2))
            if long_converged:
                arc, converged = long_arc, True
                copy_into(t1, l1)
                copy_into(t2, l2)
    return arc if converged else FAILED
