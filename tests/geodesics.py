"""An independent geodesic integration for the wrapping tests.

A geodesic of the implicit surface ``F(x) = 0`` parametrised by arc length has its acceleration along the
normal: ``x'' = −(x'ᵀ ∇²F x' / |∇F|²) ∇F``. Here it is integrated in Cartesian coordinates by scipy's
adaptive DOP853 (``rtol`` 1e-13), unlike the solvers (:mod:`mbkron.numerics.geodesics.ellipsoid`,
:mod:`mbkron.numerics.geodesics.torus`), which integrate in their own coordinates in equal steps.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def implicit_geodesic(gradient, hessian, start, direction, arc, samples=None):
    """The geodesic of ``F = 0`` from ``start`` in the unit tangent ``direction`` over arc length ``arc``.

    ``gradient(x)`` and ``hessian(x)`` are ``∇F`` (3,) and ``∇²F`` (3, 3). Returns the points and unit
    tangents (shape (m, 3)) at the arc lengths ``samples`` (default: the end only, m = 1)."""
    def rate(_, y):
        x, v = y[:3], y[3:]
        g = gradient(x)
        return np.concatenate([v, -(v @ hessian(x) @ v) / (g @ g) * g])

    at = [float(arc)] if samples is None else samples
    y = solve_ivp(rate, (0.0, float(arc)), np.concatenate([start, direction]), method="DOP853", rtol=1e-13,
                  atol=1e-16, t_eval=at).y.T
    return y[:, :3], y[:, 3:] / np.linalg.norm(y[:, 3:], axis=-1, keepdims=True)
