"""Wrapping surfaces: the shortest path over a sphere or a cylinder, and exact moment arms.

A musculotendon path that must pass round an obstacle (OpenSim's ``WrapSphere``, ``WrapCylinder``,
…) between two neighbouring path points ``P`` and ``Q`` has the length

    L = |T1 − P| + s(T1, T2) + |Q − T2|,

minimised over the tangent points ``T1``, ``T2`` on the surface (``s`` the surface geodesic between
them). The minimiser has straight segments tangent to the surface, continued without a kink by the
geodesic.

**Exact moment arms (envelope theorem).** ``L(q) = min_{T1,T2} ℓ(q; T1, T2)`` with ``T1``, ``T2``
parametrised in the wrap's body. At the minimiser ``∂ℓ/∂T = 0``, so ``dL/dq = ∂ℓ/∂q`` with ``T1``
and ``T2`` *held fixed in the wrap's body*; then ``s`` is constant, and ``R = −∂L/∂q`` is exactly the
moment-arm formula of the straight polyline ``P → T1`` and ``T2 → Q`` with ``T1``, ``T2`` body-fixed
points of the wrap's body, in which the piece ``T1 → T2`` carries no force and contributes its length
``s`` only. In the virtual-work form of :mod:`mbkron.algorithms.paths.paths` (Eq. 161, 185, 195):
``f_T1 = −u(P→T1)``, ``f_T2 = +u(T2→Q)``, and no sliding term for the tangent points. No finite
differences. Where the path does not wrap it is the polyline; at engagement ``T1 = T2`` and ``s = 0``,
so ``L`` is C¹ there for the true shortest path (``tests/test_wrapping_surfaces.py``).

**The surfaces** (frozen dataclasses with OpenSim's properties; a surface's frame is placed in its
``body`` by ``translation`` and the body-fixed X-Y-Z angles ``xyz_body_rotation``). Each has
``solve(p, q) -> (wrapped, t1, t2, arc)`` (:meth:`WrapSurface.solve`, by the surface's compiled kernel:
:mod:`mbkron.numerics.geodesics.circular`, :mod:`~mbkron.numerics.geodesics.ellipsoid`, :mod:`~mbkron.numerics.geodesics.torus`,
the engine's own): ``p``, ``q`` (..., 3) the neighbouring points in the wrap frame; ``wrapped`` (...,)
bool; ``t1``, ``t2`` (..., 3) the tangent points (``t1`` joined to ``p``; both ``(p + q)/2`` where not
wrapped); ``arc`` (...,) the geodesic length between them (0 where not wrapped).

- :class:`WrapSphere` — the shortest path lies in the plane through ``P``, ``Q`` and the centre (a
  great circle). With ``d_P = |P|``, ``α_P = arccos(r/d_P)`` and ``γ`` the angle between ``P`` and
  ``Q`` seen from the centre, the arc angle is ``θ = γ − α_P − α_Q`` (> 0 exactly when the segment
  ``PQ`` meets the sphere) and ``L = √(d_P² − r²) + rθ + √(d_Q² − r²)``.
- :class:`WrapCylinder` (axis ``z`` of its frame) — the path is a helix: unrolled, the 2-D problem in
  the plane normal to the axis (the circle of radius ``r``, the projections ``P'``, ``Q'``) gives the
  arc angle ``θ = Δφ − α_P − α_Q`` (``Δφ`` the angle swept from ``P'`` to ``Q'`` on the chosen side)
  and the planar length ``ℓ = √(ρ_P² − r²) + rθ + √(ρ_Q² − r²)``; the axial coordinate is linear in
  the unrolled length, so ``L = √(ℓ² + (z_Q − z_P)²)``.

**OpenSim's rules of when and where to wrap** (``WrapSphere::wrapLine``, ``WrapCylinder::wrapLine``,
OpenSim 4.6; the geometry is exact here, the decisions are OpenSim's):

- a point inside the sphere (inside the infinite cylinder) — no wrap (OpenSim's ``insideRadius``);
- ``quadrant = "all"``: wrap when the straight segment meets the surface (the cylinder taken as
  infinite), on the shorter side;
- a quadrant ``±x``/``±y``/``±z`` (axis ``a``, sign ``σ``; ``sign(0) = +1`` as OpenSim's ``DSIGN``):
  the cylinder (axis ``a`` = x or y) wraps on the side of the circle whose arc midpoint lies furthest
  towards ``σ``. When ``P`` or ``Q`` lies on the constrained side (``sign(x_a) = σ``) it wraps if the
  segment meets the cylinder, or if ``P``, ``Q`` are on opposite sides and the point of the line
  nearest the axis is not on the constrained side; when neither is, it wraps (the path must go
  round). Here the side's arc angle must also be positive (OpenSim's approximate tangent points
  would give a negative helix there). A ``z`` quadrant (along the axis) does not choose a side.
  The sphere needs the segment to meet it whatever the quadrant (as OpenSim); then with both points
  on the constrained side it takes the short great-circle arc, otherwise the arc (short or long)
  whose midpoint lies furthest towards ``σ`` (OpenSim's ``far_side_wrap``; OpenSim 4.6 gives that
  long arc a *negative* length, a bug not copied).
- the cylinder's ``length``: no wrap when both tangent points lie beyond ``|z| > length/2`` (OpenSim's
  rule; the cylinder is otherwise infinite). This, the quadrant rules and the switch to the long arc
  make ``L`` jump where they change their decision — as in OpenSim.

The differences with OpenSim's method are in ``docs/wrapping.md``: OpenSim's cylinder path is tangent
"to within 1 degree" (for a single wrap its tangent points are not iterated at all), so its length
is not the minimum, and its ``computeMomentArm`` is not ``−dL/dq``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.numerics.geodesics.constants import COMPILED_KINDS
from mbkron.core.lazy import LazyModule

__all__ = ["WrapSurface", "WrapCylinder", "WrapSphere", "PathWrap", "COMMON_FIELDS", "QUADRANTS", "body_fixed_xyz",
           "parse_quadrant", "positive_problem", "shape_fields", "surface_problems", "wrap_method_problems",
           "WRAP_METHODS"]

# the surfaces' kernels (numba), imported by the first solve: describing a surface needs none
_segments = LazyModule("mbkron.numerics.geodesics.segments")

#: OpenSim's quadrant names (``WrapObject::extendFinalizeFromProperties``) → (axis, sign); sign 0: all.
QUADRANTS = {**{name: (0, 0) for name in ("all", "ALL", "All")},
             **{f"{s}{a}": (i, -1 if s == "-" else 1) for i, axis in enumerate("xyz")
                for a in (axis, axis.upper()) for s in ("-", "+", "")}}
#: OpenSim's ``PathWrap`` methods; they select the ellipsoid algorithm and are ignored for spheres and cylinders.
WRAP_METHODS = ("hybrid", "midpoint", "axial")
#: The properties every surface has (the others of a surface class are its shape parameters).
COMMON_FIELDS = ("name", "body", "translation", "xyz_body_rotation", "quadrant", "active")


def parse_quadrant(quadrant: str) -> tuple[int, int]:
    """``(axis, sign)`` of an OpenSim quadrant name (sign 0 for ``"all"``); ValueError for others."""
    try:
        return QUADRANTS[quadrant]
    except (KeyError, TypeError):
        raise ValueError(f"`quadrant` must be one of \"all\", \"+x\", \"-x\", \"x\", \"+y\", …, \"-z\", "
                         f"got {quadrant!r}") from None


def body_fixed_xyz(angles) -> NDArray[np.float64]:
    """The rotation of body-fixed X-Y-Z angles (SimTK's ``setRotationToBodyFixedXYZ``):
    ``R = R_x(a) R_y(b) R_z(c)``, shape (3, 3)."""
    a, b, c = (float(x) for x in angles)
    ca, sa, cb, sb, cc, sc = math.cos(a), math.sin(a), math.cos(b), math.sin(b), math.cos(c), math.sin(c)
    Rx = np.array([[1.0, 0.0, 0.0], [0.0, ca, -sa], [0.0, sa, ca]])
    Ry = np.array([[cb, 0.0, sb], [0.0, 1.0, 0.0], [-sb, 0.0, cb]])
    Rz = np.array([[cc, -sc, 0.0], [sc, cc, 0.0], [0.0, 0.0, 1.0]])
    return Rx @ Ry @ Rz


def shape_fields(surface_class: type) -> tuple[str, ...]:
    """The shape parameters of a surface class (its dataclass fields beyond :data:`COMMON_FIELDS`)."""
    return tuple(f.name for f in fields(surface_class) if f.name not in COMMON_FIELDS)


def _vector_problem(value: object, label: str) -> str | None:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None or array.shape != (3,) or not np.all(np.isfinite(array)):
        return f"{label} must be 3 finite numbers, got {value!r}"
    return None


def positive_problem(value: object, label: str) -> str | None:
    """The problem with a size that must be a finite number > 0 (m), or None (for the surfaces' ``problems``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
        return f"{label} must be a finite number > 0 (m), got {value!r}"
    return None


def surface_problems(surface: object) -> list[str]:
    """Everything wrong with a surface's properties (each message names the surface and the field)."""
    where = f"wrap object `{getattr(surface, 'name', '?')}`"
    problems = []
    if not isinstance(surface.name, str) or not surface.name:
        problems.append(f"{where}: `name` must be a non-empty string, got {surface.name!r}")
    if not isinstance(surface.body, str):
        problems.append(f"{where}: `body` must be the name of a body or \"ground\", got {surface.body!r}")
    for key in ("translation", "xyz_body_rotation"):
        problem = _vector_problem(getattr(surface, key), f"{where}: `{key}`")
        if problem:
            problems.append(problem)
    if surface.quadrant not in QUADRANTS:
        problems.append(f"{where}: `quadrant` must be one of \"all\", \"+x\", \"-x\", \"x\", \"+y\", \"-y\", \"y\", "
                        f"\"+z\", \"-z\", \"z\", got {surface.quadrant!r}")
    if not isinstance(surface.active, bool):
        problems.append(f"{where}: `active` must be true or false, got {surface.active!r}")
    problems.extend(p for p in surface.shape_problems(where) if p)
    return problems


def wrap_method_problems(method: object, where: str) -> list[str]:
    """A problem if ``method`` is not one of OpenSim's :data:`WRAP_METHODS`."""
    if method not in WRAP_METHODS:
        return [f"{where}: `method` must be one of {', '.join(map(repr, WRAP_METHODS))}, got {method!r}"]
    return []


@dataclass(frozen=True, kw_only=True)
class WrapSurface:
    """The properties every wrapping surface shares (OpenSim's ``WrapObject``)."""

    name: str
    body: str
    translation: tuple = (0.0, 0.0, 0.0)
    xyz_body_rotation: tuple = (0.0, 0.0, 0.0)
    quadrant: str = "all"
    active: bool = True

    def frame(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(R, t)``: a point ``x`` of the wrap frame is ``R x + t`` in the body frame."""
        return body_fixed_xyz(self.xyz_body_rotation), np.asarray(self.translation, dtype=float)

    def constraint(self) -> tuple[int, int]:
        """``(axis, sign)`` of the quadrant (sign 0: unconstrained)."""
        return parse_quadrant(self.quadrant)

    def sizes(self) -> tuple[float, ...]:
        """The shape parameters (m) in the order of the compiled kernels' ``wrap_params``
        (:mod:`mbkron.numerics.geodesics.segments`)."""
        raise NotImplementedError

    def shape_problems(self, where: str) -> list[str | None]:
        """The problems with the shape parameters (None where there is none), each prefixed by ``where``."""
        raise NotImplementedError

    def kernel_params(self) -> tuple[float, ...]:
        """The kernels' ``wrap_params`` row (:mod:`mbkron.numerics.geodesics.segments`): the quadrant's axis and
        sign (:meth:`constraint`), then :meth:`sizes`, padded with zeros to 5 numbers."""
        params = (*self.constraint(), *self.sizes())
        return params + (0.0,) * (5 - len(params))

    def solve(self, p: ArrayLike, q: ArrayLike) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """The shortest path from ``p`` to ``q`` over this surface (the module's rules) by its compiled
        kernel (:func:`mbkron.numerics.geodesics.segments.segment_paths`).

        Parameters
        ----------
        p, q : array_like, shape (..., 3)
            The path's neighbouring points in the wrap frame (m), broadcast together; real and finite (a
            complex step is not supported: the derivatives are the envelope theorem's, see the module).

        Returns
        -------
        wrapped : ndarray of bool, shape (...)
        t1, t2 : ndarray, shape (..., 3)
            The tangent points (``t1`` joined to ``p``); where not wrapped both are ``(p + q)/2``, so that
            ``|t1 − p| + |q − t2|`` is the straight length.
        arc : ndarray, shape (...)
            The geodesic's length between them (0 where not wrapped).

        Raises
        ------
        ValueError
            The surface's shape parameters are invalid (:meth:`shape_problems`), or its quadrant.
        TypeError, ValueError, ConfigurationError
            ``p``, ``q`` complex, of another shape or not finite; where the ellipsoid's or the torus's
            solver fails (:func:`~mbkron.numerics.geodesics.segments.segment_paths`).
        """
        problems = [problem for problem in self.shape_problems(f"wrap object `{self.name}`") if problem]
        if problems:
            raise ValueError("; ".join(problems))
        return _segments.segment_paths(COMPILED_KINDS[type(self).__name__], self.kernel_params(), p, q)


@dataclass(frozen=True, kw_only=True)
class WrapSphere(WrapSurface):
    """OpenSim's ``WrapSphere``: a sphere of ``radius`` (m) centred at the wrap frame's origin.

    Examples
    --------
    >>> sphere = WrapSphere(name="ball", body="ground", radius=1.0)
    >>> wrapped, t1, t2, arc = sphere.solve(np.array([-2.0, 0.0, 0.0]), np.array([2.0, 0.0, 0.0]))
    >>> bool(wrapped), round(float(arc), 12) == round(math.pi - 2 * math.acos(0.5), 12)
    (True, True)
    """

    radius: float

    def shape_problems(self, where: str) -> list[str | None]:
        return [positive_problem(self.radius, f"{where}: `radius`")]

    def sizes(self) -> tuple[float, ...]:
        return (self.radius,)


@dataclass(frozen=True, kw_only=True)
class WrapCylinder(WrapSurface):
    """OpenSim's ``WrapCylinder``: ``radius`` (m), axis ``z`` of the wrap frame, ``length`` (m) centred
    at the origin (wrapping stops only when both tangent points lie beyond it, as in OpenSim).

    Examples
    --------
    >>> cylinder = WrapCylinder(name="c", body="ground", radius=1.0, length=1.0)
    >>> wrapped, t1, t2, arc = cylinder.solve(np.array([-2.0, 0.0, -1.0]), np.array([2.0, 0.0, 1.0]))
    >>> bool(wrapped), t1.round(6).tolist(), t2.round(6).tolist()   # under the axis, rising linearly
    (True, [-0.5, -0.866025, -0.232128], [0.5, -0.866025, 0.232128])
    """

    radius: float
    length: float

    def shape_problems(self, where: str) -> list[str | None]:
        return [positive_problem(self.radius, f"{where}: `radius`"),
                positive_problem(self.length, f"{where}: `length`")]

    def sizes(self) -> tuple[float, ...]:
        return (self.radius, self.length)


@dataclass(frozen=True)
class PathWrap:
    """One wrap of a path (OpenSim's ``PathWrap``).

    Attributes
    ----------
    surface : WrapSphere, WrapCylinder, …
        The wrap object (it names its body).
    range : (int, int)
        OpenSim's ``range``: the 1-based first and last path points between which the path may wrap
        over this object; a value < 1 means the first (last) point. Default ``(-1, -1)``: all.
    method : str
        OpenSim's ``method`` (``"hybrid"``, ``"midpoint"``, ``"axial"``): it selects OpenSim's ellipsoid
        algorithm; kept for the file formats, ignored by spheres and cylinders (exact geodesics).
    """

    surface: object
    range: tuple = (-1, -1)
    method: str = "hybrid"
