"""Loop-closure constraints: "point P on body a coincides with point Q on body b" (Eq. 100).

A :class:`LoopClosures` system is a :class:`~mbkron.jointvars.constraints.ConstraintSystem` whose
equations are generated from :class:`LoopClosure` declarations (plus orientation equations in
space). They are evaluated with mbkron's own tree kinematics on the *joint-space* tree, whose
coordinates are the joint variables themselves, so ``∂T/∂f`` and ``∂²T/∂f²`` (Eq. 75, 99) give
``∂g/∂f`` and ``∂²g/∂f²`` exactly. For the compiled Newton step the same equations are also written
as sympy expressions of the joint variables (:meth:`_BoundClosures.expressions`), from which
:mod:`mbkron.jointvars.compiled` generates its Newton step; the tree kinematics stay the reference
and the route for every state that step declines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sympy
from numpy.typing import ArrayLike, NDArray

from mbkron.core.description import GROUND
from mbkron.core.errors import ModelError
from mbkron.jointvars.constraints import (
    BoundConstraints,
    ConstraintContext,
    ConstraintExpressions,
    ConstraintSystem,
    expressions_from_derivatives,
)
from mbkron.kinematics import tree as kinematics

__all__ = ["LoopClosure", "LoopClosures"]

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


def _number(value: float) -> sympy.Expr:
    """``value`` as an exact double in an expression (0 and 1 as integers, which drop out)."""
    return sympy.S.Zero if value == 0.0 else sympy.S.One if value == 1.0 else sympy.Float(float(value))


def _combination(matrices: NDArray, factors) -> list[list[sympy.Expr]]:
    """``Σ_c factors[c] · matrices[c]`` as a 4×4 nested list of expressions (zero terms dropped)."""
    return [[sympy.Add(*(f * _number(C[x, y]) for f, C in zip(factors, matrices) if f != 0 and C[x, y] != 0.0))
             for y in range(4)] for x in range(4)]


def _apply(matrix: list[list[sympy.Expr]], vector: list[sympy.Expr]) -> list[sympy.Expr]:
    return [sympy.Add(*(a * v for a, v in zip(row, vector) if a != 0 and v != 0)) for row in matrix]


def _multiply(left: list[list[sympy.Expr]], right: list[list[sympy.Expr]]) -> list[list[sympy.Expr]]:
    columns = [list(column) for column in zip(*right)]
    return [[_apply([row], column)[0] for column in columns] for row in left]


class _SymbolicChain:
    """``r = T x`` and its first and second derivatives with respect to the joint variables, as
    expressions, for one body: ``T = A_1 ⋯ A_k`` along the ancestors (Eq. 40), with
    ``A_i = C_0 + sin(f_i) C_1 + (1 − cos f_i) C_2 + f_i C_3`` (``C = tree.local_coefficients[i]``,
    the basis of :func:`mbkron.kinematics.tree.local_transforms`), so
    ``∂A_i/∂f_i = cos(f_i) C_1 + sin(f_i) C_2 + C_3`` and ``∂²A_i/∂f_i² = −sin(f_i) C_1 + cos(f_i) C_2``.

    The derivatives are products with one or two factors differentiated, ``∂r/∂f_i = P_i A'_i S_i``
    and ``∂²r/∂f_i∂f_j = P_i A'_i (A_{i+1} ⋯ A_{j−1}) A'_j S_j`` (``P_i = A_1 ⋯ A_{i−1}``,
    ``S_i = A_{i+1} ⋯ A_k x``), built from shared partial products: the expressions stay a small
    graph (differentiating the written-out product instead grows it exponentially with the depth).

    Parameters
    ----------
    tree : KinematicTree
    body : int
        Body index, -1 for the ground.
    joint_symbols : mapping of int to int
        Joint-variable row → position of its symbol in ``x = (u, p)`` (every joint on the chain
        that moves has one).
    symbols : sequence of sympy.Symbol
        ``x = (u, p)``.
    """

    def __init__(self, tree, body: int, joint_symbols, symbols):
        chain = []
        while body >= 0:
            chain.append(body)
            body = int(tree.parent[body])
        self.local, self.first, self.second, self.slots = [], [], [], []
        for i in reversed(chain):  # root first
            C = tree.local_coefficients[i]
            row = int(tree.joint_of_body[i])
            if row < 0:  # fixed joint: A_i = C_0
                self.local.append(_combination(C, (1, 0, 0, 0)))
                continue
            f = symbols[joint_symbols[row]]
            sin, cos = sympy.sin(f), sympy.cos(f)
            self.local.append(_combination(C, (1, sin, 1 - cos, f)))
            self.first.append((len(self.local) - 1, _combination(C, (0, cos, sin, 1))))
            self.second.append(_combination(C, (0, -sin, cos, 0)))
            self.slots.append(joint_symbols[row])
        identity = [[sympy.S.One if x == y else sympy.S.Zero for y in range(4)] for x in range(4)]
        self.prefix = [identity]
        for A in self.local[:-1]:
            self.prefix.append(_multiply(self.prefix[-1], A))
        self._values: dict[tuple, tuple] = {}

    def derivatives(self, x: list[sympy.Expr]):
        """``r``, ``{slot: ∂r/∂x_slot}`` and ``{(slot, slot'): ∂²r/∂x_slot∂x_slot'}`` for the homogeneous ``x``."""
        key = tuple(x)
        if key not in self._values:
            suffix = [x]  # suffix[k] = A_{k+1} ⋯ A_n x (0-based positions along the chain)
            for A in reversed(self.local):
                suffix.insert(0, _apply(A, suffix[0]))
            first, second = {}, {}
            moved = [(_apply(dA, suffix[position + 1]), position) for position, dA in self.first]
            for a, ((position, dA), slot) in enumerate(zip(self.first, self.slots)):
                first[slot] = _apply(self.prefix[position], moved[a][0])
                second[slot, slot] = _apply(self.prefix[position], _apply(self.second[a], suffix[position + 1]))
                for b in range(a + 1, len(self.first)):
                    later, later_position = moved[b]
                    for between in reversed(self.local[position + 1:later_position]):
                        later = _apply(between, later)
                    second[slot, self.slots[b]] = second[self.slots[b], slot] = _apply(
                        self.prefix[position], _apply(dA, later))
            self._values[key] = (suffix[0], first, second)
        return self._values[key]


class _BoundClosures(BoundConstraints):
    """Loop-closure equations evaluated with the joint-space tree kinematics (Eq. 75, 99)."""

    def __init__(self, arrays: _ClosureArrays, tree, unknown_rows, explicit_rows, nq, nj):
        super().__init__(unknown_rows, explicit_rows, nq)
        self.arrays = arrays
        self.tree = tree
        self.nj = nj
        self._identity = np.eye(nj)
        self._zero_hessians = np.zeros((nj, nj, nj))
        self._shared = {}  # the expressions, derived on first use

    def expressions(self) -> ConstraintExpressions:
        """The equations as expressions of ``u`` (symbols ``u0, u1, ...``) and ``p`` (``p0, p1, ...``).

        The same equations as :meth:`first` and :meth:`second`: points ``r = T x`` and
        orientation products ``(R_a v_a)·(R_b v_b)`` (Leibniz rule for the derivatives), with ``T``
        and its derivatives written out along the tree (:class:`_SymbolicChain`); the body data
        enter as exact doubles. Derived on the first call (when the compiled step is built) and kept.
        """
        if "expressions" not in self._shared:
            symbols = sympy.symbols(f"u0:{self.size}") + sympy.symbols(f"p0:{self.n_inputs}")
            joint_symbols = dict(zip(self.unknown_rows.tolist(), range(self.size)))
            joint_symbols.update(zip(self.explicit_rows.tolist(), range(self.size, len(symbols))))
            chains: dict[int, _SymbolicChain] = {}

            def world(body, x):
                body = int(body)
                if body not in chains:
                    chains[body] = _SymbolicChain(self.tree, body, joint_symbols, symbols)
                return chains[body].derivatives([_number(v) for v in x])

            a, n = self.arrays, len(symbols)
            equations = len(a.point_components) + len(a.dot_bodies)
            g = np.full(equations, sympy.S.Zero, dtype=object)
            g_x = np.full((equations, n), sympy.S.Zero, dtype=object)
            g_xx = np.full((equations, n, n), sympy.S.Zero, dtype=object)
            for e, (bodies, x, k) in enumerate(zip(a.point_bodies, a.points, a.point_components)):
                for sign, (r, dr, d2r) in zip((1, -1), (world(bodies[0], x[0]), world(bodies[1], x[1]))):
                    g[e] += sign * r[k]
                    for slot, value in dr.items():
                        g_x[e, slot] += sign * value[k]
                    for slots, value in d2r.items():
                        g_xx[(e, *slots)] += sign * value[k]
            for e, (bodies, v) in enumerate(zip(a.dot_bodies, a.dot_vectors), start=len(a.point_components)):
                (xa, dxa, d2xa), (xb, dxb, d2xb) = world(bodies[0], v[0]), world(bodies[1], v[1])

                def dot(left, right):
                    return sympy.Add(*(s * t for s, t in zip(left[:3], right[:3])))

                g[e] = dot(xa, xb)
                for slot, value in dxa.items():
                    g_x[e, slot] += dot(value, xb)
                for slot, value in dxb.items():
                    g_x[e, slot] += dot(xa, value)
                for slots, value in d2xa.items():
                    g_xx[(e, *slots)] += dot(value, xb)
                for slots, value in d2xb.items():
                    g_xx[(e, *slots)] += dot(xa, value)
                for k, left in dxa.items():
                    for l, right in dxb.items():
                        g_xx[e, k, l] += dot(left, right)
                        g_xx[e, l, k] += dot(left, right)
            self._shared["expressions"] = expressions_from_derivatives(symbols, g[a.order], g_x[a.order],
                                                                       g_xx[a.order])
        return self._shared["expressions"]

    def _joint_space(self, u, p, order):
        """``f`` of the whole tree and its kinematics with respect to all joint variables."""
        f = np.zeros(self.nj)
        f[self.unknown_rows] = u
        f[self.explicit_rows] = p[: self.explicit_rows.size]
        values = (f, self._identity, self._zero_hessians if order >= 2 else None)
        return kinematics.compute_kinematics(self.tree, values, f, order)

    @staticmethod
    def _body_arrays(kin, bodies: NDArray[np.intp], order: int):
        """``T``, ``∂T/∂f``, ``∂²T/∂f²`` of the listed bodies, identity/zero for the ground (-1)."""
        ground = bodies < 0
        index = np.where(ground, 0, bodies)
        T = np.where(ground[..., None, None], np.eye(4), kin.T[index])
        dT = np.where(ground[..., None, None, None], 0.0, kin.dT[index])
        d2T = None
        if order >= 2:
            d2T = np.where(ground[..., None, None, None, None], 0.0, kin.d2T[index])
        return T, dT, d2T

    def _evaluate(self, u, p, order):
        a = self.arrays
        kin = self._joint_space(u, p, order)
        # Points: r = T x (homogeneous), one row per point equation and side.
        T, dT, d2T = self._body_arrays(kin, a.point_bodies, order)
        r = np.einsum("esxy,esy->esx", T, a.points)
        dr = np.einsum("eskxy,esy->eskx", dT, a.points)
        rows = np.arange(a.point_components.size)
        comp = a.point_components
        g = [r[rows, 0, comp] - r[rows, 1, comp]]
        dg = [dr[rows, 0, :, comp] - dr[rows, 1, :, comp]]
        d2g = []
        if order >= 2:
            d2r = np.einsum("esklxy,esy->esklx", d2T, a.points)
            d2g.append(d2r[rows, 0, :, :, comp] - d2r[rows, 1, :, :, comp])
        if a.dot_bodies.size:
            # Orientation: (R_a v_a)·(R_b v_b), Leibniz rule for both derivatives.
            T, dT, d2T = self._body_arrays(kin, a.dot_bodies, order)
            x = np.einsum("esxy,esy->esx", T, a.dot_vectors)
            dx = np.einsum("eskxy,esy->eskx", dT, a.dot_vectors)
            g.append(np.einsum("ex,ex->e", x[:, 0], x[:, 1]))
            dg.append(np.einsum("ekx,ex->ek", dx[:, 0], x[:, 1]) + np.einsum("ex,ekx->ek", x[:, 0], dx[:, 1]))
            if order >= 2:
                d2x = np.einsum("esklxy,esy->esklx", d2T, a.dot_vectors)
                cross = np.einsum("ekx,elx->ekl", dx[:, 0], dx[:, 1])
                d2g.append(
                    np.einsum("eklx,ex->ekl", d2x[:, 0], x[:, 1])
                    + cross
                    + np.swapaxes(cross, -1, -2)
                    + np.einsum("ex,eklx->ekl", x[:, 0], d2x[:, 1])
                )
        g = np.concatenate(g)[a.order]
        dg = np.concatenate(dg)[a.order]
        d2g = np.concatenate(d2g)[a.order] if order >= 2 else None
        return g, dg, d2g

    def _split(self, dg):
        """Columns of the unknowns and of ``p = (f_e, q)`` (``g`` does not depend on q directly)."""
        g_u = dg[..., self.unknown_rows]
        g_p = np.concatenate([dg[..., self.explicit_rows], np.zeros(dg.shape[:-1] + (self.nq,))], axis=-1)
        return g_u, g_p

    def first(self, u, p):
        g, dg, _ = self._evaluate(u, p, 1)
        return (g, *self._split(dg))

    def second(self, u, p):
        _, dg, d2g = self._evaluate(u, p, 2)
        g_u, g_p = self._split(dg)
        g_uu, g_up = self._split(d2g[:, self.unknown_rows, :])
        _, g_pp = self._split(d2g[:, self.explicit_rows, :])
        g_pp = np.concatenate([g_pp, np.zeros((g_pp.shape[0], self.nq, g_pp.shape[2]))], axis=1)
        return g_u, g_p, g_uu, g_up, g_pp


class LoopClosures(ConstraintSystem):
    """Constraint equations generated from loop-closure declarations.

    Each :class:`LoopClosure` contributes its equations in order (points first, then
    orientation). ``g`` and its derivatives come from the tree kinematics with the joint
    variables as coordinates: ``∂r/∂f_k = (∂T/∂f_k) x`` and ``∂²r/∂f_k∂f_l = (∂²T/∂f_k∂f_l) x``
    (Eq. 44, 57, 75, 99), exact.

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
        return _BoundClosures(
            arrays, tree, unknown_rows, explicit_rows, len(context.coordinates), len(context.joints)
        )

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
