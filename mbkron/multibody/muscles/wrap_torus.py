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
points, so the envelope theorem gives the exact moment arms (:mod:`mbkron.multibody.muscles.wrapping`).

Method (shooting on the geodesic equation)
------------------------------------------
- The geodesic is integrated in the torus angles: with the metric ``ds² = G² du² + r² dv²``,
  ``G = R + r cos v``, its equations (arc length ``σ``) are ``u'' = (2 r sin v / G) u' v'`` and
  ``v'' = −(G sin v / r) u'²`` (Clairaut: ``G² u'`` is constant), the same curve as
  ``x'' = −(x'ᵀ ∇²F x' / |∇F|²) ∇F`` of the implicit surface, but without a constraint to drift from.
  It is integrated over ``σ ∈ [0, s]`` by the 8th-order Dormand–Prince method (DOP853's
  coefficients) in equal steps, step × ``max(1/r, 1/(R − r))`` (the largest normal curvature)
  ≤ :data:`~mbkron.numerics.geodesics.torus.STEP_CURVATURE` (the truncation error is then below 1e-15 m;
  ``tests/test_wrap_torus.py`` checks the geodesics against scipy's Cartesian integration).
- The horizon of ``p`` on a torus is not a circle, so ``t₁ = x(u₁, v₁)`` is parametrised by its two
  angles and tangency is a residual: the unknowns ``(u₁, v₁, s)`` solve
  ``(t₁ − p)·n(t₁) = 0``, ``(q − x(s))·n = 0`` and ``(q − x(s))·(w × n) = 0`` at the geodesic's end
  ``x(s)`` with unit tangent ``w``; the geodesic starts in the direction of ``t₁ − p`` projected onto
  the tangent plane (the same direction once the first residual vanishes). Newton's method with the
  exact Jacobian (the variational equations of the discrete integration: DOP853's stages applied to
  the tangent system ``δy' = s ∂f/∂y δy`` (+ ``f`` for the derivative by ``s``), started from the
  closed-form derivatives of ``t₁``'s initial direction and closed by those of the end residuals), an
  Armijo line search on the residual's norm, the angles' steps at most
  :data:`~mbkron.numerics.geodesics.torus.MAX_ANGLE_STEP`, the arc at most halved or doubled plus ``r`` per
  step, and at most :data:`~mbkron.numerics.geodesics.torus.MAX_TURNS` times round the tube (``2π r`` each);
  converged when every residual is at most :data:`~mbkron.numerics.geodesics.torus.TOLERANCE` (m) within
  :data:`~mbkron.numerics.geodesics.torus.MAX_ITERATIONS`. A wrap is valid when it converged,
  ``s > 0``, ``q`` lies ahead of ``t₂`` and neither straight piece enters the solid (:func:`enters_solid`).
- The initial guess is OpenSim's approximation: a cylinder of radius ``r`` along the ring's tangent at
  OpenSim's ring point (below), whose closed-form helix (:class:`~mbkron.multibody.muscles.wrapping.WrapCylinder`)
  gives ``t₁`` (its torus angles) and ``s``; where that gives no valid wrap and the straight segment
  enters the solid, Newton's method starts again from the circle's solution in the meridian plane of
  ``p``, and where that fails too, from the point of the straight segment deepest in the solid (its
  torus angles, the arc :data:`~mbkron.numerics.geodesics.torus.DEEPEST_GUESS_ARC` ``r``: on thin rings, whose inner side is a narrow
  hourglass, the cylinder is a poor model of the tube). Where all fail, a
  :class:`~mbkron.core.errors.ConfigurationError` names the points.
  Scope: one contact with the tube's inner side. A segment through the tube twice (from outside the
  ring across the hole to outside the ring) or round its outer side has no such path (OpenSim wraps it
  over its cylinder all the same); for segments whose ends lie within the ring radius on both sides of
  the ring's plane the error is rare (in one batch of 60 of 2787 random segments for ``R/r = 5``, an
  end 6 µm from the surface; none for ``R/r`` = 1.5 and 20: docs/wrapping.md, "Tori").

What runs where
---------------
The solver is the compiled kernel :func:`mbkron.numerics.geodesics.torus.torus_path` (one segment at a time,
in the wrapped-path kernel, :mod:`mbkron.algorithms.paths.wrapping_kernels`); :func:`shortest_path`,
:meth:`WrapTorus.solve`, :func:`opensim_ring_point` and :func:`enters_solid` run it and its
:func:`~mbkron.numerics.geodesics.torus.ring_point` and :func:`~mbkron.numerics.geodesics.torus.enters_solid` over
a batch (:mod:`mbkron.numerics.geodesics.segments`). Its constants are that module's. Real points only: a
complex step is not supported (the path's derivatives are the envelope theorem's).

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
of :class:`~mbkron.multibody.muscles.wrapping.WrapCylinder`, which are OpenSim's) *and* the exact path round the
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

from mbkron.core.lazy import LazyModule
from mbkron.multibody.muscles.wrapping import WrapSurface, parse_quadrant, positive_problem

__all__ = ["WrapTorus", "shortest_path", "opensim_ring_point", "enters_solid"]

# the batched kernels (numba), imported by the first call: describing a torus needs none
_segments = LazyModule("mbkron.numerics.geodesics.segments")


def opensim_ring_point(p: ArrayLike, q: ArrayLike, outer_radius: float, quadrant: str = "all"
                       ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """OpenSim's ring point ``c`` (``WrapTorus::findClosestPoint``) for the segments ``p → q``.

    From each end the line through ``p`` and ``q`` is descended to a stationary point of OpenSim's
    function (the squared distance to the circle of radius ``2R`` in ``z = 0``, OpenSim's residual
    being its derivative), by Newton's method safeguarded to descend; of the two results the one
    nearer the ring (radius ``R``) is taken, with a quadrant the one on its side (both: the nearer;
    neither: no ring point). ``c`` is the ring point at that result's azimuth (0 for a point on the
    axis, where OpenSim's is undefined). Computed by :func:`mbkron.numerics.geodesics.torus.ring_point`.

    Parameters
    ----------
    p, q : array_like, shape (..., 3)
        The segments' ends (torus frame, m), broadcast together.
    outer_radius : float
        ``R`` (m).
    quadrant : str
        The torus's quadrant.

    Returns
    -------
    found : ndarray of bool, shape (...)
        False where a quadrant rules both results out (OpenSim does not wrap).
    c : ndarray, shape (..., 3)
        The ring points.
    """
    return _segments.ring_points(p, q, outer_radius, *parse_quadrant(quadrant))


def enters_solid(p: ArrayLike, q: ArrayLike, outer_radius: float, inner_radius: float) -> NDArray[np.bool_]:
    """Whether the segments ``p → q`` (shape (..., 3), broadcast) pass through the interior of the solid torus.

    Along ``x = p + t (q − p)`` the sign of ``F`` is that of the quartic
    ``(|x|² + R² − r²)² − 4R²(x² + y²)`` (``F`` times a positive factor); its minimum over ``t ∈ [0, 1]``
    (the ends and the real roots of its derivative) is negative exactly when the segment enters.
    Computed by :func:`mbkron.numerics.geodesics.torus.enters_solid`; shape (...)."""
    return _segments.segments_enter_torus(p, q, outer_radius, inner_radius)


def shortest_path(p: ArrayLike, q: ArrayLike, outer_radius: float, inner_radius: float, quadrant: str = "all"
                  ) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The path from ``p`` to ``q`` round the tube of a torus (module documentation):
    :meth:`WrapTorus.solve` of the torus ``(outer_radius, inner_radius)`` with this ``quadrant``.

    Parameters
    ----------
    p, q : array_like, shape (..., 3)
        The path's neighbouring points in the torus's frame (m), broadcast together; real.
    outer_radius, inner_radius : float
        ``R`` (the ring) and ``r`` (the tube), ``R > r > 0`` (m).
    quadrant : str
        OpenSim's quadrant of the torus (it restricts OpenSim's ring point).

    Returns
    -------
    wrapped, t1, t2, arc : ndarray
        As :meth:`mbkron.multibody.muscles.wrapping.WrapSurface.solve`: ``wrapped`` where the path wraps (OpenSim's
        decision and a valid path round the tube's inner side).

    Raises
    ------
    ValueError
        Radii that are not finite with ``outer_radius > inner_radius > 0``, or an unknown ``quadrant``.
    ConfigurationError
        Where Newton's method does not converge although the straight segment enters the solid torus.
    """
    return WrapTorus(name="torus", body="ground", outer_radius=outer_radius, inner_radius=inner_radius,
                     quadrant=quadrant).solve(p, q)


@dataclass(frozen=True, kw_only=True)
class WrapTorus(WrapSurface):
    """OpenSim's ``WrapTorus``: a torus about the wrap frame's ``z`` axis with the tube radius
    ``inner_radius`` and the ring radius ``outer_radius`` (m, ``outer_radius > inner_radius``); paths
    through the hole wrap round the tube's inner side (:mod:`mbkron.multibody.muscles.wrap_torus`).

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

    def sizes(self) -> tuple[float, ...]:
        return (self.outer_radius, self.inner_radius)
