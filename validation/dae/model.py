"""Planar multibody system description: bodies, constraints, loads and their assembled terms.

Coordinates ``q = (q_1, …, q_nb)`` with ``q_b = (R_x, R_y, φ)`` of body b's frame origin
(see :mod:`validation.dae.planar`). With the centre of mass at body coordinates ``ū_c``,
mass ``m`` and centroidal inertia ``J_c``, the body's kinetic energy
``T = ½ m ‖Ṙ + A S ū_c φ̇‖² + ½ J_c φ̇²`` gives the mass matrix and quadratic velocity vector

    M_b = [[m I,               m A S ū_c      ],      Q_v,b = [m A ū_c φ̇²]
           [m (A S ū_c)ᵀ,      J_c + m ū_cᵀū_c]],             [0         ]

(the planar rigid-body inertia terms of Shabana, *Computational Dynamics*, 3rd ed., Ch. 5, in
their general form for a reference point that need not be the centre of mass). The
constrained equations of motion are ``M q̈ + C_qᵀ λ = Q_e + Q_v``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from validation.dae.constraints import Constraint
from validation.dae.loads import Load
from validation.dae.planar import (
    GROUND,
    ROT90,
    as_vector2,
    coordinates,
    point_position,
    point_velocity,
    pose,
    rotation,
)

__all__ = ["Body", "PlanarSystem"]


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body in the plane.

    Parameters
    ----------
    name : str
        Unique name (not ``"ground"``).
    mass : float
        Mass in kg (> 0).
    inertia : float
        Moment of inertia about the centre of mass in kg m² (> 0).
    com : array_like, shape (2,)
        Centre of mass in body coordinates, default the body-frame origin.
    """

    name: str
    mass: float
    inertia: float
    com: ArrayLike = (0.0, 0.0)

    def __post_init__(self) -> None:
        problems = [
            f"`{field}` must be finite and > 0, got {getattr(self, field)!r}"
            for field in ("mass", "inertia")
            if not (np.isfinite(getattr(self, field)) and getattr(self, field) > 0.0)
        ]
        if problems:
            raise ValueError(f"body {self.name!r}: " + "; ".join(problems))
        object.__setattr__(self, "com", as_vector2(self.com, f"com of body {self.name!r}"))


class PlanarSystem:
    """A planar multibody system in absolute coordinates.

    Bodies are numbered in the order they are added, starting at 1; the ground is body 0
    (name ``"ground"``). Constraints and loads may refer to bodies by number or name.

    Parameters
    ----------
    gravity : array_like, shape (2,)
        Gravitational acceleration in world coordinates, default ``(0, −9.81)``.

    Examples
    --------
    >>> from validation.dae import Body, PlanarSystem, Revolute
    >>> system = PlanarSystem()
    >>> rod = system.add_body(Body("rod", mass=1.0, inertia=1 / 12, com=(0.5, 0.0)))
    >>> pin = system.add_constraint(Revolute("ground", (0, 0), rod, (0, 0)))
    """

    def __init__(self, gravity: ArrayLike = (0.0, -9.81)) -> None:
        self.gravity = as_vector2(gravity, "gravity")
        self.bodies: list[Body] = []
        self.constraints: list[Constraint] = []
        self.loads: list[Load] = []
        self._rows: list[slice] = []

    # ------------------------------------------------------------------ building
    def add_body(self, body: Body) -> int:
        """Add a body and return its number (1-based)."""
        if body.name == "ground" or any(b.name == body.name for b in self.bodies):
            raise ValueError(f"body name {body.name!r} is already used (or reserved for the ground)")
        self.bodies.append(body)
        return len(self.bodies)

    def index(self, body: int | str) -> int:
        """Body number of a body given by number or name (``"ground"`` → 0)."""
        if isinstance(body, str):
            if body == "ground":
                return GROUND
            for k, b in enumerate(self.bodies, start=1):
                if b.name == body:
                    return k
            raise ValueError(
                f"unknown body {body!r}; bodies are {['ground'] + [b.name for b in self.bodies]}"
            )
        if isinstance(body, (int, np.integer)) and 0 <= body <= len(self.bodies):
            return int(body)
        raise ValueError(f"unknown body {body!r}; valid numbers are 0 (ground) .. {len(self.bodies)}")

    def _resolved(self, item):
        refs = {f: self.index(getattr(item, f)) for f in item.body_fields}
        if len(item.body_fields) == 2 and refs[item.body_fields[0]] == refs[item.body_fields[1]]:
            raise ValueError(f"{type(item).__name__} connects body {refs[item.body_fields[0]]} to itself")
        return dataclasses.replace(item, **refs)

    def add_constraint(self, constraint: Constraint) -> Constraint:
        """Add a constraint; return it with body references resolved to numbers.

        Keep the returned object to look up its multipliers (reaction forces) later.
        Unnamed constraints are named ``"<type><k>"``, e.g. ``"revolute3"``.
        """
        resolved = self._resolved(constraint)
        if resolved.name is None:
            resolved = dataclasses.replace(
                resolved, name=f"{type(resolved).__name__.lower()}{len(self.constraints) + 1}"
            )
        if any(c.name == resolved.name for c in self.constraints):
            raise ValueError(f"constraint name {resolved.name!r} is already used")
        start = self._rows[-1].stop if self._rows else 0
        self.constraints.append(resolved)
        self._rows.append(slice(start, start + resolved.n_eq))
        return resolved

    def add_load(self, load: Load) -> Load:
        """Add an applied load; return it with body references resolved to numbers."""
        resolved = self._resolved(load)
        self.loads.append(resolved)
        return resolved

    # ------------------------------------------------------------------ sizes
    @property
    def n_bodies(self) -> int:
        """Number of moving bodies."""
        return len(self.bodies)

    @property
    def n_coordinates(self) -> int:
        """Number of absolute coordinates, ``3 n_b``."""
        return 3 * len(self.bodies)

    @property
    def n_constraints(self) -> int:
        """Number of constraint equations ``m``."""
        return self._rows[-1].stop if self._rows else 0

    @property
    def degrees_of_freedom(self) -> int:
        """``n − m`` (assuming independent constraints)."""
        return self.n_coordinates - self.n_constraints

    def constraint(self, name: str) -> Constraint:
        """The constraint with the given name."""
        for c in self.constraints:
            if c.name == name:
                return c
        raise KeyError(f"no constraint named {name!r}; constraints are {[c.name for c in self.constraints]}")

    def rows(self, constraint: Constraint | str) -> slice:
        """Rows of ``C`` (and entries of ``λ``) belonging to a constraint (object or name)."""
        for c, rows in zip(self.constraints, self._rows):
            if c is constraint or c.name == constraint:
                return rows
        raise KeyError(
            f"{constraint!r} is not a constraint of this system; use the object returned by add_constraint "
            "or its name"
        )

    # ------------------------------------------------------------------ constraint terms
    def as_coordinates(self, q: ArrayLike, what: str = "q") -> NDArray[np.float64]:
        """Validate a single coordinate (or velocity) vector of shape (n,) and return it as floats."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.n_coordinates,):
            raise ValueError(f"`{what}` must have shape ({self.n_coordinates},) (3 per body), got {q.shape}")
        return q

    def residual(self, q: ArrayLike, t: float = 0.0) -> NDArray[np.float64]:
        """Stacked constraint residual ``C(q, t)``, shape (m,)."""
        q = self.as_coordinates(q)
        return (
            np.concatenate([c.residual(q, t) for c in self.constraints]) if self.constraints else np.zeros(0)
        )

    def jacobian(self, q: ArrayLike, t: float = 0.0) -> NDArray[np.float64]:
        """Stacked constraint Jacobian ``C_q``, shape (m, n)."""
        q = self.as_coordinates(q)
        if not self.constraints:
            return np.zeros((0, self.n_coordinates))
        return np.vstack([c.jacobian(q, t) for c in self.constraints])

    def partial_t(self, t: float = 0.0) -> NDArray[np.float64]:
        """Stacked ``C_t``, shape (m,)."""
        return np.concatenate([c.partial_t(t) for c in self.constraints]) if self.constraints else np.zeros(0)

    def gamma(self, q: ArrayLike, qd: ArrayLike, t: float = 0.0) -> NDArray[np.float64]:
        """Stacked acceleration right-hand side ``Q_d = −(C_q q̇)_q q̇ − 2 C_qt q̇ − C_tt``, shape (m,)."""
        q, qd = self.as_coordinates(q), self.as_coordinates(qd, "qd")
        return (
            np.concatenate([c.gamma(q, qd, t) for c in self.constraints]) if self.constraints else np.zeros(0)
        )

    # ------------------------------------------------------------------ inertia and forces
    def mass_matrix(self, q: ArrayLike) -> NDArray[np.float64]:
        """Configuration-dependent mass matrix ``M(q)``, shape (n, n), block diagonal per body."""
        q = self.as_coordinates(q)
        M = np.zeros((self.n_coordinates, self.n_coordinates))
        for k, body in enumerate(self.bodies, start=1):
            s = coordinates(k)
            c = body.mass * rotation(q[s.stop - 1]) @ (ROT90 @ body.com)
            block = M[s, s]
            block[:2, :2] = body.mass * np.eye(2)
            block[:2, 2] = block[2, :2] = c
            block[2, 2] = body.inertia + body.mass * body.com @ body.com
        return M

    def quadratic_velocity_forces(self, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        """Quadratic velocity vector ``Q_v`` (n,): ``m A ū_c φ̇²`` in the translational entries."""
        q, qd = self.as_coordinates(q), self.as_coordinates(qd, "qd")
        Qv = np.zeros(self.n_coordinates)
        for k, body in enumerate(self.bodies, start=1):
            s = coordinates(k)
            Qv[s.start : s.start + 2] = body.mass * (rotation(q[s.stop - 1]) @ body.com) * qd[s.stop - 1] ** 2
        return Qv

    def applied_forces(self, q: ArrayLike, qd: ArrayLike, t: float = 0.0) -> NDArray[np.float64]:
        """Generalized applied forces ``Q_e`` (n,): gravity plus all loads."""
        q, qd = self.as_coordinates(q), self.as_coordinates(qd, "qd")
        Q = np.zeros(self.n_coordinates)
        for k, body in enumerate(self.bodies, start=1):
            s = coordinates(k)
            Q[s.start : s.start + 2] += body.mass * self.gravity
            Q[s.stop - 1] += body.mass * (rotation(q[s.stop - 1]) @ (ROT90 @ body.com)) @ self.gravity
        for load in self.loads:
            Q += load.generalized_force(q, qd, t)
        return Q

    # ------------------------------------------------------------------ energy (batched)
    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        """Kinetic energy ``Σ ½ m ‖v_c‖² + ½ J_c φ̇²``, batched over leading axes of ``q``."""
        T = np.zeros(np.shape(q)[:-1])
        for k, body in enumerate(self.bodies, start=1):
            v = point_velocity(q, qd, k, body.com)
            T = T + 0.5 * body.mass * np.sum(v * v, axis=-1) + 0.5 * body.inertia * pose(qd, k)[1] ** 2
        return T

    def potential_energy(self, q: ArrayLike) -> NDArray[np.float64]:
        """Potential energy of gravity and springs, batched; zero with all centres of mass at the origin."""
        V = np.zeros(np.shape(q)[:-1])
        for k, body in enumerate(self.bodies, start=1):
            V = V - body.mass * point_position(q, k, body.com) @ self.gravity
        for load in self.loads:
            V = V + load.potential_energy(q)
        return V
