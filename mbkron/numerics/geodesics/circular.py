"""Compiled closed forms of the sphere's and the cylinder's shortest paths, one pair of points at a time.

The closed forms and OpenSim's sides and quadrant rules documented in :mod:`mbkron.multibody.muscles.wrapping`
(a great circle; a helix, unrolled); used by the wrapped-path kernel (:mod:`mbkron.algorithms.paths.wrapping_kernels`),
by the surfaces' ``solve`` over a batch (:mod:`mbkron.numerics.geodesics.segments`) and, for OpenSim's
cylinder at its ring point, by the torus's (:mod:`mbkron.numerics.geodesics.torus`).
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.jit.common import jit

__all__ = ["sphere_path", "cylinder_path"]

_TWO_PI = 2.0 * math.pi


@jit
def _on_side(x, sign):  # pragma: no cover - compiled
    """OpenSim's ``DSIGN(x) == sign`` (``DSIGN(0) = +1``)."""
    return (1 if x >= 0.0 else -1) == sign


@jit
def _angle(x):  # pragma: no cover - compiled
    """``x`` in (−2π, 2π) (a difference of two ``atan2``) modulo 2π, in [0, 2π)."""
    return x + _TWO_PI if x < 0.0 else x


@jit
def sphere_path(p, q, r, axis, sign, t1, t2):  # pragma: no cover - compiled
    """The shortest path from ``p`` to ``q`` round the sphere of radius ``r`` at the origin (a great circle;
    :class:`mbkron.multibody.muscles.wrapping.WrapSphere`), the quadrant ``axis``, ``sign`` (0: none); the tangent points
    into ``t1``, ``t2`` where it wraps; returns the arc (−1: no wrap)."""
    dp = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
    dq = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    if not (dp > r and dq > r):
        return -1.0
    u = p / dp
    v = q / dq
    cosine = u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
    e2 = v - cosine * u
    e2 -= (e2[0] * u[0] + e2[1] * u[1] + e2[2] * u[2]) * u
    sine = math.sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2])
    if sine < 1e-12:
        other = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        e2 = np.array([u[1] * other[2] - u[2] * other[1], u[2] * other[0] - u[0] * other[2],
                       u[0] * other[1] - u[1] * other[0]])
        e2 /= math.sqrt(e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2])
    else:
        e2 /= sine
    gamma = math.atan2(sine, cosine)
    ap, aq = math.acos(r / dp), math.acos(r / dq)
    theta = gamma - ap - aq
    if not theta > 0.0:
        return -1.0
    start, end = ap, gamma - aq
    if sign != 0:
        both = _on_side(p[axis], sign) and _on_side(q[axis], sign)
        short_mid, long_mid = (ap + gamma - aq) / 2, (gamma + aq - ap) / 2 - math.pi
        toward = sign * (math.cos(short_mid) * u[axis] + math.sin(short_mid) * e2[axis])
        away = sign * (math.cos(long_mid) * u[axis] + math.sin(long_mid) * e2[axis])
        if not both and away > toward:
            start, end, theta = -ap, gamma + aq - _TWO_PI, _TWO_PI - gamma - ap - aq
    for i in range(3):
        t1[i] = r * (math.cos(start) * u[i] + math.sin(start) * e2[i])
        t2[i] = r * (math.cos(end) * u[i] + math.sin(end) * e2[i])
    return r * theta


@jit
def cylinder_path(p, q, r, length, axis, sign, t1, t2):  # pragma: no cover - compiled
    """The shortest path from ``p`` to ``q`` round the cylinder of radius ``r`` about ``z`` (a helix;
    :class:`mbkron.multibody.muscles.wrapping.WrapCylinder`; no wrap where both tangent points lie beyond ``|z| > length/2``),
    the quadrant ``axis``, ``sign`` (0: none); the tangent points into ``t1``, ``t2`` where it wraps; returns the
    arc (−1: no wrap)."""
    rp, rq = math.hypot(p[0], p[1]), math.hypot(q[0], q[1])
    if not (rp > r and rq > r):
        return -1.0
    phi_p, phi_q = math.atan2(p[1], p[0]), math.atan2(q[1], q[0])
    ap, aq = math.acos(r / rp), math.acos(r / rq)
    ccw, cw = _angle(phi_q - phi_p), _angle(phi_p - phi_q)
    direction = 1.0 if ccw <= math.pi else -1.0
    rule = min(ccw, cw) - ap - aq > 0.0
    if sign != 0:
        if axis < 2:
            mid_ccw = phi_p + (ccw + ap - aq) / 2
            mid_cw = phi_p - (cw + ap - aq) / 2
            if axis == 0:
                direction = 1.0 if sign * math.cos(mid_ccw) >= sign * math.cos(mid_cw) else -1.0
            else:
                direction = 1.0 if sign * math.sin(mid_ccw) >= sign * math.sin(mid_cw) else -1.0
        on_p, on_q = _on_side(p[axis], sign), _on_side(q[axis], sign)
        c0, c1 = q[0] - p[0], q[1] - p[1]
        planar = max(c0 * c0 + c1 * c1, 1e-300)
        near = p[axis] + (-(p[0] * c0 + p[1] * c1) / planar) * (q[axis] - p[axis])
        forced = on_p != on_q and not _on_side(near, sign)
        rule = (rule or forced) if (on_p or on_q) else True
    theta = (ccw if direction > 0 else cw) - ap - aq
    if not (rule and theta > 0.0):
        return -1.0
    lp, lq = math.sqrt(rp * rp - r * r), math.sqrt(rq * rq - r * r)
    planar_length = lp + r * theta + lq
    rise = q[2] - p[2]
    z1 = p[2] + rise * lp / planar_length
    z2 = p[2] + rise * (lp + r * theta) / planar_length
    if abs(z1) > 0.5 * length and abs(z2) > 0.5 * length:
        return -1.0
    phi1, phi2 = phi_p + direction * ap, phi_q - direction * aq
    t1[0], t1[1], t1[2] = r * math.cos(phi1), r * math.sin(phi1), z1
    t2[0], t2[1], t2[2] = r * math.cos(phi2), r * math.sin(phi2), z2
    return r * theta * math.sqrt(1.0 + (rise / planar_length) ** 2)
