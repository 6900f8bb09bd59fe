"""Loop-closure constraints: "point P on body a coincides with point Q on body b" (Eq. 100).

A :class:`LoopClosures` system is a :class:`~mbkron.algorithms.jointvars.constraints.ConstraintSystem` whose
equations are generated from :class:`LoopClosure` declarations (plus orientation equations in
space). They are the tree's own kinematics in the joint variables: ground points ``r = A_0 ⋯ A_{L−1} v``
along the chain of joints to each closure body (Eq. 40, 44), differentiated exactly by the joints' ground
twists (Eq. 75, 76, 99). One implementation evaluates them, :func:`mbkron.algorithms.jointvars.closure_kernels.evaluate`, from
the bodies, points and directions packed by :meth:`_BoundClosures.kernel_data`: through C callbacks by the
compiled continuation (:mod:`mbkron.algorithms.jointvars.kernels`), and from Python where Python reads the constraints
(:meth:`_BoundClosures.first`: the singularity check of a run), with no code generated for a closed-loop model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.lazy import LazyModule
from mbkron.multibody.records import GROUND
from mbkron.core.errors import ModelError
from mbkron.algorithms.jointvars.constraints import BoundConstraints, ConstraintContext, ConstraintSystem

__all__ = ["LoopClosure", "LoopClosures"]

# the kernels import numba: imported when loop closures are evaluated, not with this module (mbkron.core.lazy)
closures = LazyModule("mbkron.algorithms.jointvars.closure_kernels")

_PLANES = {"xy": (0, 1), "yz": (1, 2), "xz": (0, 2)}
_ORIENTATIONS = ("revolute", "fixed")


@dataclass(frozen=True)
class LoopClosure:
    """A loop-closing joint: point ``point_a`` of ``body_a`` coincides with ``point_b`` of ``body_b``.

    The equations are ``r_a − r_b = 0`` in ground coordinates: the two components of ``plane``
    (planar mechanisms; default ``"xy"``) or all three (``plane=None``, spatial mechanisms). In
    space a closing revolute or fixed joint also constrains the relative orientation:

    - ``orientation="revolute"``: the joint axis ``axis_b`` of body b stays parallel to
      ``axis_a`` of body a -- two equations ``(R_a n_k) · (R_b axis_b) = 0`` with ``n_1, n_2`` a
      fixed orthonormal pair perpendicular to ``axis_a``;
    - ``orientation="fixed"``: the relative rotation ``R_aᵀ R_b`` equals ``rotation`` -- three
      equations, the off-diagonal entries ``M_zy, M_xz, M_yx`` of ``M = (R_a rotation)ᵀ R_b``
      (the components of the small relative rotation vector; exact, not linearised).

    Parameters
    ----------
    body_a, body_b : str
        Body names; ``"ground"`` allowed (its points are in ground coordinates).
    point_a, point_b : array_like, shape (3,)
        Body coordinates of the two points, m.
    plane : {"xy", "yz", "xz"} or None
        Plane of a planar loop, or None for a spatial loop.
    orientation : {None, "revolute", "fixed"}
        Orientation equations of a spatial closure.
    axis_a, axis_b : array_like, shape (3,), optional
        Revolute closure axes in body coordinates (default ``(0, 0, 1)``).
    rotation : array_like, shape (3, 3), optional
        Fixed closure: body b's orientation relative to body a (default identity).
    """

    body_a: str
    point_a: ArrayLike
    body_b: str
    point_b: ArrayLike
    plane: str | None = "xy"
    orientation: str | None = None
    axis_a: ArrayLike | None = None
    axis_b: ArrayLike | None = None
    rotation: ArrayLike | None = None

    @property
    def size(self) -> int:
        """Number of equations."""
        points = 2 if self.plane is not None else 3
        return points + {None: 0, "revolute": 2, "fixed": 3}.get(self.orientation, 0)


@dataclass(frozen=True, eq=False)
class _ClosureArrays:
    """Loop closures as index and vector arrays (one row per equation)."""

    point_bodies: NDArray[np.intp]  # (n_points, 2): body indices of a and b (-1 = ground)
    points: NDArray[np.float64]  # (n_points, 2, 4): homogeneous body points
    point_components: NDArray[np.intp]  # (n_points,): world component of each point equation
    dot_bodies: NDArray[np.intp]  # (n_dots, 2)
    dot_vectors: NDArray[np.float64]  # (n_dots, 2, 4): body vectors (homogeneous w = 0)
    order: NDArray[np.intp]  # row of each declared equation in (points, dots)


def _perpendicular_pair(axis: NDArray) -> tuple[NDArray, NDArray]:
    """An orthonormal pair perpendicular to the unit vector ``axis``."""
    helper = np.eye(3)[np.argmin(np.abs(axis))]
    n1 = np.cross(axis, helper)
    n1 /= np.linalg.norm(n1)
    return n1, np.cross(axis, n1)


class _BoundClosures(BoundConstraints):
    """Loop-closure equations evaluated by :func:`mbkron.algorithms.jointvars.closure_kernels.evaluate` (Eq. 40, 75, 76, 99): the
    same compiled code as the constraint step's callbacks, called from Python where Python reads them."""

    def __init__(self, arrays: _ClosureArrays, tree, unknown_rows, explicit_rows, nq):
        super().__init__(unknown_rows, explicit_rows, nq)
        self.arrays = arrays
        self.tree = tree
        self._data = self._pack()

    def variable_periods(self) -> list[float]:
        """``2π`` in the variable of each revolute joint (its transform depends on it through ``sin`` and
        ``cos`` only, :func:`mbkron.algorithms.kinematics.tree.local_transforms`), None for a prismatic one, ``inf`` for
        the coordinates (which the closures do not read)."""
        periods: list[float | None] = [math.inf] * (self.size + self.n_inputs)
        body_of_row = {int(row): body for body, row in enumerate(self.tree.joint_of_body) if row >= 0}
        for slot, row in enumerate((*self.unknown_rows.tolist(), *self.explicit_rows.tolist())):
            periods[slot] = 2.0 * math.pi if self.tree.is_revolute[body_of_row[row]] else None
        return periods

    def kernel_data(self) -> NDArray[np.float64]:
        """The closures packed for the library callbacks :mod:`mbkron.algorithms.jointvars.closure_callbacks`
        (:func:`mbkron.algorithms.jointvars.closure_kernels.pack`): the closure bodies and their ancestors with their rows of the
        tree's kernel geometry, each joint variable by its position in ``x = (u, p)``, and each body point or
        direction once."""
        return self._data

    def _pack(self) -> NDArray[np.float64]:
        """:meth:`kernel_data`, packed once when the system is bound."""
        slots = dict(zip(self.unknown_rows.tolist(), range(self.size)))
        slots.update(zip(self.explicit_rows.tolist(), range(self.size, self.size + self.explicit_rows.size)))
        geometry = self.tree.kernel_arrays[0]
        bodies, index = [], {}

        def listed(body: int) -> int:  # the body's record, its ancestors' first (-1: the ground)
            if body < 0:
                return -1
            if body not in index:
                parent = listed(int(self.tree.parent[body]))
                row = int(self.tree.joint_of_body[body])
                index[body] = len(bodies)
                bodies.append((parent, slots[row] if row >= 0 else -1, geometry[body]))
            return index[body]

        vectors, vector_of = [], {}

        def vector(body: int, v: NDArray) -> int:
            key = (listed(body), tuple(v.tolist()))
            if key not in vector_of:
                vector_of[key] = len(vectors)
                vectors.append((key[0], v))
            return vector_of[key]

        a = self.arrays
        rows = []
        for pair, x, component in zip(a.point_bodies, a.points, a.point_components):
            rows.append((closures.POINT, int(component), vector(int(pair[0]), x[0]), vector(int(pair[1]), x[1])))
        for pair, v in zip(a.dot_bodies, a.dot_vectors):
            rows.append((closures.DOT, 0, vector(int(pair[0]), v[0]), vector(int(pair[1]), v[1])))
        return closures.pack(self.size, self.size + self.n_inputs, [rows[k] for k in a.order], vectors, bodies)

    def _evaluate(self, u, p, order: int) -> NDArray[np.float64]:
        m, n = self.size, self.n_inputs
        size = m + m * m + m * n if order == 1 else m * m + m * n + m**3 + m * m * n + m * n * n
        out = np.zeros(size)
        closures.evaluate(np.ascontiguousarray(np.concatenate([u, p]), dtype=float), out, self._data, order)
        return out

    def third(self, u, p):
        """:meth:`BoundConstraints.third` by :func:`mbkron.algorithms.jointvars.closure_kernels.third` (Eq. 40, 75, 76,
        99 once more)."""
        m, n_x = self.size, self.size + self.n_inputs
        out = np.zeros(m * (n_x + n_x * n_x + n_x**3))
        closures.third(np.ascontiguousarray(np.concatenate([u, p]), dtype=float), out, self._data)
        return (out[:m * n_x].reshape(m, n_x), out[m * n_x:m * n_x * (1 + n_x)].reshape(m, n_x, n_x),
                out[m * n_x * (1 + n_x):].reshape(m, n_x, n_x, n_x))

    def first(self, u, p):
        m = self.size
        values = self._evaluate(u, p, 1)
        return values[:m], values[m:m + m * m].reshape(m, m), values[m + m * m:].reshape(m, -1)

    def second(self, u, p):
        m, n = self.size, self.n_inputs
        values = self._evaluate(u, p, 2)
        shapes = ((m, m), (m, n), (m, m, m), (m, m, n), (m, n, n))
        ends = np.cumsum([int(np.prod(shape)) for shape in shapes])
        return tuple(values[end - int(np.prod(shape)):end].reshape(shape) for end, shape in zip(ends, shapes))


class LoopClosures(ConstraintSystem):
    """Constraint equations generated from loop-closure declarations.

    Each :class:`LoopClosure` contributes its equations in order (points first, then
    orientation). ``g`` and its derivatives come from the tree kinematics with the joint
    variables as coordinates: ``∂r/∂f_k = (∂T/∂f_k) x`` and ``∂²r/∂f_k∂f_l = (∂²T/∂f_k∂f_l) x``
    (Eq. 44, 57, 75, 99), exact, by :mod:`mbkron.algorithms.jointvars.closure_kernels`.

    Parameters
    ----------
    closures : sequence of LoopClosure
    """

    def __init__(self, closures: Sequence[LoopClosure]):
        if isinstance(closures, LoopClosure):
            closures = [closures]
        self.closures = tuple(closures)

    @property
    def size(self) -> int:
        return sum(c.size for c in self.closures if isinstance(c, LoopClosure))

    def bind(self, context: ConstraintContext) -> BoundConstraints:
        problems: list[str] = []
        point_bodies, points, components, dot_bodies, dot_vectors, kinds = [], [], [], [], [], []
        for k, c in enumerate(self.closures, start=1):
            where = f"loop closure {k}"
            if not isinstance(c, LoopClosure):
                problems.append(f"{where} must be a LoopClosure, got {type(c).__name__}")
                continue
            a, b = (self._body(name, context, f"{where}: `{label}`", problems) for name, label in
                    ((c.body_a, "body_a"), (c.body_b, "body_b")))
            pa, pb = (_vector3(v, f"{where}: `{label}`", problems) for v, label in
                      ((c.point_a, "point_a"), (c.point_b, "point_b")))
            if c.plane is not None and c.plane not in _PLANES:
                problems.append(f"{where}: `plane` must be one of {', '.join(_PLANES)} or None, got {c.plane!r}")
                continue
            if c.orientation is not None and c.orientation not in _ORIENTATIONS:
                problems.append(f"{where}: `orientation` must be None, 'revolute' or 'fixed', got {c.orientation!r}")
                continue
            if c.orientation is not None and c.plane is not None:
                problems.append(f"{where}: orientation equations are for spatial closures; set `plane=None`")
                continue
            for component in _PLANES[c.plane] if c.plane is not None else (0, 1, 2):
                point_bodies.append((a, b))
                points.append((np.append(pa, 1.0), np.append(pb, 1.0)))
                components.append(component)
                kinds.append("point")
            for va, vb in self._orientation_pairs(c, where, problems):
                dot_bodies.append((a, b))
                dot_vectors.append((np.append(va, 0.0), np.append(vb, 0.0)))
                kinds.append("dot")
        if problems:
            raise ModelError(problems)
        # Equations in declaration order: position of each equation among points/dots.
        n_points = len(components)
        point_position, dot_position, order = 0, n_points, []
        for kind in kinds:
            if kind == "point":
                order.append(point_position)
                point_position += 1
            else:
                order.append(dot_position)
                dot_position += 1
        arrays = _ClosureArrays(
            point_bodies=np.array(point_bodies, dtype=np.intp).reshape(-1, 2),
            points=np.array(points).reshape(-1, 2, 4),
            point_components=np.array(components, dtype=np.intp),
            dot_bodies=np.array(dot_bodies, dtype=np.intp).reshape(-1, 2),
            dot_vectors=np.array(dot_vectors).reshape(-1, 2, 4),
            order=np.array(order, dtype=np.intp),
        )
        return self._bound(arrays, context)

    @staticmethod
    def _bound(arrays: _ClosureArrays, context: ConstraintContext) -> BoundConstraints:
        tree = context.tree
        bodies = np.unique(np.concatenate([arrays.point_bodies.ravel(), arrays.dot_bodies.ravel()]))
        bodies = bodies[bodies >= 0]
        # Joints that move some closure body: ancestors (or self) of a closure body.
        moving = tree.ancestors_or_self_of(bodies)
        acting = {int(tree.joint_of_body[i]) for i in np.flatnonzero(moving) if tree.joint_of_body[i] >= 0}
        joint_rows = {n: i for i, n in enumerate(context.joints)}
        unknown_rows = [joint_rows[n] for n in context.unknowns]
        idle = [n for n, row in zip(context.unknowns, unknown_rows) if row not in acting]
        if idle:
            raise ModelError(
                [f"solved joint variable `{n}` does not move any body of the loop closures" for n in idle]
            )
        explicit_rows = sorted(acting - set(unknown_rows))
        return _BoundClosures(arrays, tree, unknown_rows, explicit_rows, len(context.coordinates))

    @staticmethod
    def _body(name, context: ConstraintContext, label: str, problems: list[str]) -> int:
        if name == GROUND:
            return -1
        if name not in context.body_index:
            problems.append(f"{label}: unknown body `{name}`; expected `ground` or one of: {', '.join(context.body_index)}")
            return -1
        return context.body_index[name]

    @staticmethod
    def _orientation_pairs(c: LoopClosure, where: str, problems: list[str]) -> list[tuple[NDArray, NDArray]]:
        if c.orientation == "revolute":
            axis_a = _unit3(c.axis_a if c.axis_a is not None else (0, 0, 1), f"{where}: `axis_a`", problems)
            axis_b = _unit3(c.axis_b if c.axis_b is not None else (0, 0, 1), f"{where}: `axis_b`", problems)
            n1, n2 = _perpendicular_pair(axis_a)
            return [(n1, axis_b), (n2, axis_b)]
        if c.orientation == "fixed":
            R = np.eye(3) if c.rotation is None else np.asarray(c.rotation, dtype=float)
            if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) <= 0:
                problems.append(f"{where}: `rotation` must be a 3×3 rotation matrix")
                return []
            e = np.eye(3)
            # M = (R_a R)ᵀ R_b; equations M_zy, M_xz, M_yx: (R_a R e_i) · (R_b e_j).
            return [(R @ e[2], e[1]), (R @ e[0], e[2]), (R @ e[1], e[0])]
        return []


def _vector3(value, label: str, problems: list[str]) -> NDArray:
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        problems.append(f"{label} must be 3 numbers, got {value!r}")
        return np.zeros(3)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        problems.append(f"{label} must be 3 finite numbers, got {value!r}")
        return np.zeros(3)
    return array


def _unit3(value, label: str, problems: list[str]) -> NDArray:
    array = _vector3(value, label, problems)
    norm = np.linalg.norm(array)
    if norm < 1e-12:
        problems.append(f"{label} must be a non-zero vector")
        return np.array([0.0, 0.0, 1.0])
    return array / norm
