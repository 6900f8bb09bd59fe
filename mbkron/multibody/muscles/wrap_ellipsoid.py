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
moment arms of a wrapping path (the wrapping framework, :mod:`mbkron.multibody.muscles`, uses them).

Method (shooting on the geodesic equation)
------------------------------------------
The solver is the compiled kernel :func:`mbkron.numerics.geodesics.ellipsoid.ellipsoid_path` (one segment at
a time; :func:`shortest_path` and :meth:`WrapEllipsoid.solve` run it over a batch,
:func:`mbkron.numerics.geodesics.segments.segment_paths`); its constants are that module's.

- ``t₁`` lies on the *horizon* of ``p``: the surface points whose tangent plane contains ``p``. In the
  scaled coordinates ``y = x / a`` (componentwise) ``E`` is the unit ball, tangency is affine invariant,
  and the horizon is the circle ``{y : |y| = 1, y·P = 1}`` (``P = p / a``): centre ``P/|P|²``, radius
  ``√(1 − 1/|P|²)``. It is parametrised by one angle ``φ``; the segment's direction
  ``u = (t₁ − p)/|t₁ − p|`` is then tangent to the surface at ``t₁``.
- The geodesic from ``t₁`` with initial direction ``u`` solves, for an implicit surface ``F(x) = 0``
  with ``∇F = 2 A x``, ``x'' = −(x'ᵀ A x' / |A x|²) A x`` (arc length ``σ``; its acceleration is
  normal to the surface). It is integrated over ``σ ∈ [0, s]`` by the explicit 8th-order Runge–Kutta
  method of Dormand and Prince (DOP853's coefficients) with ``n`` equal steps, ``n`` (a power of 2, at
  least 8) chosen so that the step times the largest normal curvature ``max(a)/min(a)²`` is at most
  :data:`~mbkron.numerics.geodesics.ellipsoid.STEP_CURVATURE`; the truncation error is then far below
  1e-12 m (``tests/test_wrap_ellipsoid.py`` checks the geodesics against scipy's integration).
- The unknowns ``(φ, s)`` are found by Newton's method on two conditions at the geodesic's end ``x(s)``
  with unit tangent ``v(s)``: ``q`` lies in the tangent plane there, ``(q − x)·n = 0``, and on the
  tangent line, ``(q − x)·(v × n) = 0`` (``n`` the unit normal). Their Jacobian is exact: the
  variational equations of the discrete integration (the same DOP853 stages applied to the tangent
  system ``δx' = s δv``, ``δv' = s ∂a/∂(x, v) · (δx, δv)``, plus ``(v, a)`` for the derivative by ``s``)
  give the derivative of the discrete end point. Each step is at most 1 rad along the horizon, the arc
  at most halved or doubled plus half the smallest semi-axis, and halved until the residual's norm
  decreases (Armijo). Newton stops when both residuals (in metres) are below
  :data:`~mbkron.numerics.geodesics.ellipsoid.TOLERANCE` (1e-13 m) and fails with a
  :class:`~mbkron.core.errors.ConfigurationError` naming the points after
  :data:`~mbkron.numerics.geodesics.ellipsoid.MAX_ITERATIONS` per continuation level.
- The initial guess is the exact solution for the sphere in scaled coordinates: the great circle of the
  unit sphere through ``P`` and ``Q`` (``q / a``), its tangent points mapped back (they are on the
  horizons exactly, so only ``φ`` and ``s`` are approximate), ``s`` from the mapped arc (Gauss–Legendre
  quadrature). For a sphere it is the answer. On a triaxial ellipsoid the nearest geodesic need not be
  the shortest, so Newton also starts with the tangent points turned by ±45° about the segment
  (:data:`~mbkron.numerics.geodesics.ellipsoid.TILTS`) and the shortest converged path is kept; a path
  longer than its own (feasible) initial guess is rejected. Where Newton fails from the sphere's guess
  (in :data:`~mbkron.numerics.geodesics.ellipsoid.DIRECT_ITERATIONS`), a continuation deforms a sphere (radius
  the semi-axes' geometric mean ``ρ``) into the ellipsoid, ``a(λ) = ρ^(1−λ) a^λ``, moving the points with
  it (the scaled points and the horizon parametrisation stay the same), in
  :data:`~mbkron.numerics.geodesics.ellipsoid.CONTINUATION_LEVELS` equal steps of ``λ``, each solved by
  Newton's method from the previous level's ``(φ, s)``.
- Real points only: a complex step is not supported (the path's derivatives are the envelope theorem's).

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

from mbkron.multibody.muscles.wrapping import WrapSurface

__all__ = ["WrapEllipsoid", "shortest_path"]


def shortest_path(p: ArrayLike, q: ArrayLike, dimensions: ArrayLike, quadrant: str = "all"
                  ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The shortest path from ``p`` to ``q`` over an ellipsoid (module documentation):
    :meth:`WrapEllipsoid.solve` of the ellipsoid of semi-axes ``dimensions`` with this ``quadrant``.

    Parameters
    ----------
    p, q : array_like, shape (..., 3)
        The path's neighbouring points in the ellipsoid's frame (m), broadcast together; real.
    dimensions : array_like, shape (3,)
        The semi-axes (m), positive.
    quadrant : str
        OpenSim's quadrant: ``"all"`` or the side the path must wrap on (``"+x"``, ``"-y"``, ``"z"``, ...).

    Returns
    -------
    wrapped, t1, t2, arc : ndarray
        As :meth:`mbkron.multibody.muscles.wrapping.WrapSurface.solve`: ``wrapped`` where the path touches the
        ellipsoid (the straight segment passes through it and neither end is inside).

    Raises
    ------
    ValueError
        ``dimensions`` not 3 positive finite semi-axes, or an unknown ``quadrant``.
    ConfigurationError
        Where Newton's method does not converge (the message names the points).
    """
    semi_axes = tuple(np.asarray(dimensions, dtype=float).ravel().tolist())
    return WrapEllipsoid(name="ellipsoid", body="ground", dimensions=semi_axes, quadrant=quadrant).solve(p, q)


@dataclass(frozen=True, kw_only=True)
class WrapEllipsoid(WrapSurface):
    """OpenSim's ``WrapEllipsoid``: an ellipsoid of semi-axes ``dimensions`` (m, along the wrap frame's
    x, y, z) centred at the wrap frame's origin; the properties it shares with the other surfaces are
    :data:`~mbkron.multibody.muscles.wrapping.COMMON_FIELDS` (:mod:`mbkron.multibody.muscles.wrapping`).

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

    def sizes(self) -> tuple[float, ...]:
        return tuple(self.dimensions)
