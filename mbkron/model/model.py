"""The model: an immutable, validated description of a multibody tree and its coordinates.

Evaluation is a function of ``(model, q[, q̇, q̈])``; nothing mutable is shared between calls
(Pinocchio's model/data split: the per-state arrays live in :class:`~mbkron.kinematics.tree.KinematicsData`).
Build models with :class:`mbkron.ModelBuilder`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.dynamics import terms as dynamics
from mbkron.compiled import kernels
from mbkron.kinematics import tree as kinematics
from mbkron.dynamics import loads as loads_module
from mbkron.dynamics import reactions
from mbkron.core.description import GROUND, Body, Coordinate
from mbkron.core.errors import ConfigurationError
from mbkron.jointvars.explicit import JointVariables

__all__ = ["Model"]

_CHUNK_ELEMENTS = 2_000_000
"""Largest number of doubles in one batched dynamics intermediate; bigger batches are chunked."""


def _positive_definite(M: NDArray[np.float64]) -> bool:
    """Whether every matrix of the stack ``M`` (..., n, n) is positive definite (a Cholesky factor exists)."""
    if M.shape[-1] == 1:
        return bool(np.all(M > 0.0))
    try:
        np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return False
    return True


def _rows(values, start: int, stop: int, states: int):
    """Rows ``start:stop`` of per-state values given as an array of leading size ``states``."""
    if values is None or callable(values) or np.ndim(values) < 2 or np.shape(values)[0] != states:
        return values
    return np.asarray(values)[start:stop]


@dataclass(frozen=True, eq=False)
class Model:
    """An immutable, validated multibody model. Build it with :class:`mbkron.ModelBuilder`.

    Attributes
    ----------
    name : str
    gravity : ndarray, shape (3,)
        Gravitational acceleration in ground coordinates, m/s².
    tree : KinematicTree
        The kinematic description as arrays.
    joint_variable_map : JointVariables
        ``q ↦ (f, ∇f, H)``.
    loads : tuple of Load
        Applied loads that belong to the system (springs, drives); see :mod:`mbkron.dynamics.loads`.
    pseudo_inertias : ndarray, shape (nb, 4, 4)
        ``J_i`` of Eq. 131 about each body's frame origin.
    muscle_set : MuscleSet or None
        The musculotendon paths (:mod:`mbkron.muscles`), compiled; None without muscles.
    constraint_groups : tuple of ConstraintGroup
        How the joint variables without an explicit ``variable`` are solved
        (:meth:`mbkron.ModelBuilder.add_constraints`), as described to the builder.
    """

    name: str
    gravity: NDArray[np.float64]
    coordinate_records: tuple[Coordinate, ...]
    body_records: tuple[Body, ...]
    tree: kinematics.KinematicTree
    joint_variable_map: JointVariables
    loads: tuple
    pseudo_inertias: NDArray[np.float64]
    _body_index: Mapping[str, int] = field(repr=False)
    muscle_set: object = field(default=None, repr=False)
    constraint_groups: tuple = field(default=(), repr=False)

    # ------------------------------------------------------------------ description
    @property
    def coordinates(self) -> tuple[str, ...]:
        """Names of the generalized coordinates, in the order of ``q``."""
        return tuple(c.name for c in self.coordinate_records)

    @property
    def bodies(self) -> tuple[str, ...]:
        """Names of the moving bodies, parents before children."""
        return tuple(b.name for b in self.body_records)

    @property
    def joints(self) -> tuple[str, ...]:
        """Names of the joint variables (each named after its body), in the order of ``f``."""
        return tuple(b.name for b in self.body_records if b.joint != kinematics.FIXED)

    @property
    def nq(self) -> int:
        return len(self.coordinate_records)

    @property
    def nb(self) -> int:
        return len(self.body_records)

    @property
    def nj(self) -> int:
        return self.joint_variable_map.size

    def body(self, name: str) -> Body:
        """The description of body ``name``."""
        return self.body_records[self.body_index(name)]

    def coordinate(self, name: str) -> Coordinate:
        """The description of coordinate ``name``."""
        for record in self.coordinate_records:
            if record.name == name:
                return record
        raise KeyError(f"unknown coordinate `{name}`; the model has: {', '.join(self.coordinates)}")

    def body_index(self, body: str | int) -> int:
        """Index of a body given by name (or index, checked)."""
        if isinstance(body, (int, np.integer)) and not isinstance(body, bool):
            if not 0 <= body < self.nb:
                raise IndexError(f"body index {body} is outside 0..{self.nb - 1}")
            return int(body)
        try:
            return self._body_index[body]
        except (KeyError, TypeError):
            raise KeyError(f"unknown body `{body}`; the model has: {', '.join(self.bodies)}") from None

    @property
    def default_q(self) -> NDArray[np.float64]:
        """The coordinates' default values."""
        return np.array([c.default for c in self.coordinate_records])

    # ------------------------------------------------------------------ evaluation
    def _as_q(self, q: ArrayLike, name: str = "q") -> NDArray[np.float64]:
        q = np.asarray(q, dtype=float)
        if q.ndim == 0 or q.shape[-1] != self.nq:
            raise ValueError(f"`{name}` must have shape (..., {self.nq}) (one value per coordinate), got {q.shape}")
        return q

    def joint_variables(self, q: ArrayLike, order: int = 2):
        """Joint variables, their gradients and Hessians.

        Parameters
        ----------
        q : array_like, shape (..., nq)
        order : {0, 1, 2}

        Returns
        -------
        f : ndarray, shape (..., nj)
        grad : ndarray, shape (..., nj, nq)
        hess : ndarray, shape (..., nj, nq, nq)
        """
        return self._joint_values(self._as_q(q), order)

    def _joint_values(self, q: NDArray[np.float64], order: int):
        """:meth:`joint_variables` for a validated ``q``; non-finite values raise ConfigurationError."""
        if self.joint_variable_map.providers:
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                values = self.joint_variable_map.evaluate(q, order)
        else:
            values = self.joint_variable_map.evaluate(q, order)
        if not np.isfinite(values[0]).all():
            where = np.argwhere(~np.isfinite(values[0]))[0]
            raise ConfigurationError(
                f"joint variable `{self.joints[where[-1]]}` is not finite at q = {q[tuple(where[:-1])].tolist()}"
            )
        return values

    def kinematics(self, q: ArrayLike, order: int = 2) -> kinematics.KinematicsData:
        """Transforms ``⁰_iA_4`` and their first (D_i) and second (D'_i) derivatives at ``q``.

        Parameters
        ----------
        q : array_like, shape (..., nq)
        order : {0, 1, 2}
            Highest derivative computed.
        """
        q = self._as_q(q)
        return kinematics.compute_kinematics(self.tree, self._joint_values(q, order), q, order)

    def point_position(self, body: str | int, point: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
        """Ground-frame position of a body-fixed point (Eq. 41).

        Parameters
        ----------
        body : str or int
        point : array_like, shape (3,) or (..., 3)
            Body coordinates, m.
        q : array_like, shape (..., nq)

        Returns
        -------
        ndarray, shape (..., 3)
        """
        return kinematics.point_positions(self.kinematics(q, 0), self.body_index(body), self._as_point(point))

    def point_velocity(self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        """Ground-frame velocity of a body-fixed point (Eq. 44)."""
        kin = self.kinematics(q, 1)
        return kinematics.point_velocities(kin, self.body_index(body), self._as_point(point), self._as_q(qd, "qd"))

    def point_acceleration(
        self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike
    ) -> NDArray[np.float64]:
        """Ground-frame acceleration of a body-fixed point (Eq. 57)."""
        kin = self.kinematics(q, 2)
        return kinematics.point_accelerations(
            kin, self.body_index(body), self._as_point(point), self._as_q(qd, "qd"), self._as_q(qdd, "qdd")
        )

    def angular_velocity(self, body: str | int, q: ArrayLike, qd: ArrayLike, frame: str = "world") -> NDArray[np.float64]:
        """Angular velocity of a body (Eq. 177-182), in the ground frame or the body's own frame.

        Returns
        -------
        ndarray, shape (..., 3)
            rad/s.
        """
        kin = self.kinematics(q, 1)
        omega = kinematics.angular_velocities(self.tree, kin, self._as_q(qd, "qd"), frame)
        return omega[..., self.body_index(body), :]

    @staticmethod
    def _as_point(point: ArrayLike) -> NDArray[np.float64]:
        point = np.asarray(point, dtype=float)
        if point.ndim == 0 or point.shape[-1] != 3:
            raise ValueError(f"`point` must have shape (..., 3) (body coordinates), got {point.shape}")
        return point

    # ------------------------------------------------------------------ muscles
    @property
    def muscles(self) -> tuple[str, ...]:
        """Names of the musculotendon units, in the order of the columns of ``moment_arms``."""
        return () if self.muscle_set is None else self.muscle_set.names

    def _muscle_set(self):
        if self.muscle_set is None:
            raise ConfigurationError(f"model `{self.name}` has no muscles (add them with ModelBuilder.add_muscle)")
        return self.muscle_set

    def muscle_lengths(self, q: ArrayLike) -> NDArray[np.float64]:
        """Musculotendon path lengths ``L(q)`` (polylines through the path points), m.

        Returns
        -------
        ndarray, shape (..., n_mt)
        """
        return self._muscle_set().lengths(self.kinematics(q, 0))

    def moment_arms(self, q: ArrayLike) -> NDArray[np.float64]:
        """Moment-arm matrix ``R(q) = −∂L/∂q`` (Eq. 192-195): generalized force = ``R F_mt``.

        OpenSim's sign convention. Column ``m`` is muscle ``m``; row ``k`` coordinate ``k``.

        Returns
        -------
        ndarray, shape (..., nq, n_mt)
            m for angular coordinates, dimensionless for lengths.
        """
        return self._muscle_set().moment_arms(self.kinematics(q, 1))

    def muscle_velocities(self, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        """Musculotendon lengthening velocities ``L̇ = −Rᵀ q̇``, m/s, shape (..., n_mt)."""
        return -np.einsum("...km,...k->...m", self.moment_arms(q), self._as_q(qd, "qd"))

    def _muscle_generalized_forces(self, kin, muscle_forces, t: float, qd) -> NDArray[np.float64]:
        """``R F_mt`` (Eq. 192) for forces given as an array (..., n_mt) or a callable ``(t, q, qd)``."""
        forces = muscle_forces(t, kin.q, qd) if callable(muscle_forces) else muscle_forces
        forces = np.asarray(forces, dtype=float)
        muscle_set = self._muscle_set()
        if forces.shape[-1:] != (muscle_set.size,):
            raise ValueError(f"`muscle_forces` must have shape (..., {muscle_set.size}) (one tension per muscle: "
                             f"{', '.join(muscle_set.names)}), got {forces.shape}")
        return np.einsum("...km,...m->...k", muscle_set.moment_arms(kin), forces)

    def build_fast_paths(self) -> None:
        """Build the compiled fast paths of the constraint groups now rather than after their warm-up.

        With numba installed, a constraint group given as expressions switches to a compiled Newton
        step after :data:`mbkron.jointvars.solvers.FAST_PATH_WARM_UP` evaluations
        (:mod:`mbkron.jointvars.compiled`); call this before timing a computation. The machine code
        is generated on the next evaluation. Without numba it does nothing.
        """
        for _, provider in self.joint_variable_map.providers:
            build = getattr(provider, "compile", None)
            if build is not None:
                build()

    # ------------------------------------------------------------------ dynamics
    @cached_property
    def _kernel_inertia(self) -> NDArray[np.float64]:
        return kernels.inertia_rows(self.pseudo_inertias)

    @cached_property
    def _model_springs(self) -> tuple:
        """The spring-dampers among ``model.loads``."""
        return tuple(load for load in self.loads if isinstance(load, loads_module.SpringDamper))

    @cached_property
    def _model_spring_rows(self) -> NDArray[np.float64]:
        return self._build_spring_rows(self._model_springs)

    def _spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        """:func:`mbkron.compiled.kernels.spring_rows` of spring-dampers (cached for ``model.loads``)."""
        return self._model_spring_rows if springs is self._model_springs else self._build_spring_rows(springs)

    def _build_spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        bodies = [[self.nb if b == GROUND else self.body_index(b) for b in (s.body_a, s.body_b)] for s in springs]
        return kernels.spring_rows(bodies, springs)

    def _inertial_terms(self, q: NDArray[np.float64], qd: NDArray[np.float64], values, springs: tuple = ()):
        """``M``, ``N q̇`` and ``G`` (Eq. 145, 126, 187) at validated ``q``, ``q̇`` with joint values
        ``(f, ∇f, H)``, by the compiled kernel when available.

        Returns
        -------
        (M, N q̇, G), spring_forces, kin
            ``spring_forces``: generalized forces of the spring-dampers ``springs``, computed in the
            kernel (None on the numpy route, or where two spring points coincide); ``kin``: the
            first-order kinematics when the numpy route computed it (else None).
        """
        if kernels.ENABLED:
            M, velocity, gravity, spring_forces, regular = kernels.equations_of_motion(
                *self.tree.kernel_arrays, self._kernel_inertia, self.gravity, self._spring_rows(springs), *values, qd)
            return (M, velocity, gravity), (spring_forces if regular else None), None
        kin = kinematics.compute_kinematics(self.tree, values, q, 1)
        world = dynamics.world_pseudo_inertia(kin, self.pseudo_inertias)
        terms = (dynamics.mass_matrix(self.tree, kin, world), dynamics.velocity_forces(self.tree, kin, world, qd),
                 dynamics.gravity_forces(self.tree, kin, self.pseudo_inertias[:, :, 3], self.gravity))
        return terms, None, kin

    def _dynamic_kinematics(self, q: ArrayLike) -> kinematics.KinematicsData:
        """First-order kinematics with joint-variable Hessians (all the dynamics needs)."""
        q = self._as_q(q)
        return kinematics.compute_kinematics(self.tree, self._joint_values(q, 2), q, 1)

    def mass_matrix(self, q: ArrayLike) -> NDArray[np.float64]:
        """Generalized mass matrix ``M(q)`` (Eq. 145, 189).

        Parameters
        ----------
        q : array_like, shape (..., nq)

        Returns
        -------
        ndarray, shape (..., nq, nq)
        """
        q = self._as_q(q)
        return self._inertial_terms(q, np.zeros_like(q), self._joint_values(q, 2))[0][0]

    def velocity_forces(self, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
        """Coriolis and centrifugal generalized forces ``N(q, q̇) q̇`` (Eq. 126, 146, 190).

        Returns
        -------
        ndarray, shape (..., nq)
        """
        q, qd = np.broadcast_arrays(self._as_q(q), self._as_q(qd, "qd"))
        return self._inertial_terms(q, qd, self._joint_values(q, 2))[0][1]

    def gravity_forces(self, q: ArrayLike) -> NDArray[np.float64]:
        """Generalized gravity forces ``G(q)`` (Eq. 187, 197), on the right-hand side of Eq. 198."""
        q = self._as_q(q)
        return self._inertial_terms(q, np.zeros_like(q), self._joint_values(q, 2))[0][2]

    def applied_forces(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None
    ) -> NDArray[np.float64]:
        """Generalized forces of applied loads (``model.loads`` unless ``loads`` is given), Eq. 46.

        Returns
        -------
        ndarray, shape (..., nq)
        """
        kin = self._dynamic_kinematics(q)
        return self._applied(kin, self._as_q(qd, "qd"), loads, t, muscle_forces)

    def _applied(self, kin, qd, loads, t, muscle_forces=None) -> NDArray[np.float64]:
        loads = self.loads if loads is None else tuple(loads)
        Q = loads_module.generalized_forces(self, kin, loads, t, kin.q, qd)
        if muscle_forces is not None:
            Q = Q + self._muscle_generalized_forces(kin, muscle_forces, t, qd)
        return Q

    def equations_of_motion(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None
    ) -> dynamics.EquationsOfMotion:
        """All terms of ``M q̈ + N q̇ = G + Q`` (Eq. 198) from one kinematics evaluation.

        Parameters
        ----------
        q, qd : array_like, shape (..., nq)
        loads : sequence of Load, optional
            ``model.loads`` by default.
        t : float
        muscle_forces : array_like (..., n_mt) or callable (t, q, qd) -> (..., n_mt), optional
            Musculotendon tensions, N; their generalized forces ``R F_mt`` (Eq. 198) are added to
            ``applied_forces``.

        Returns
        -------
        EquationsOfMotion
            ``mass_matrix`` (..., nq, nq), ``velocity_forces``, ``gravity_forces``, ``applied_forces``
            (..., nq).
        """
        q, qd = self._as_q(q), self._as_q(qd, "qd")
        chunk = max(1, _CHUNK_ELEMENTS // (16 * self.nb * self.nq))  # bounds the (states, nb, nq, 4, 4) twists
        kinematics_free = kernels.ENABLED and not (self.loads if loads is None else loads) and muscle_forces is None
        if q.ndim == 2 and qd.shape == q.shape and q.shape[0] > chunk and not kinematics_free:
            states = q.shape[0]
            parts = [self._equations_of_motion(q[s:s + chunk], qd[s:s + chunk], loads, t,
                                               _rows(muscle_forces, s, s + chunk, states))
                     for s in range(0, states, chunk)]
            return dynamics.EquationsOfMotion(*(np.concatenate([getattr(p, name) for p in parts]) for name in (
                "mass_matrix", "velocity_forces", "gravity_forces", "applied_forces")))
        return self._equations_of_motion(q, qd, loads, t, muscle_forces)

    def _equations_of_motion(self, q, qd, loads, t, muscle_forces) -> dynamics.EquationsOfMotion:
        if q.shape != qd.shape:
            q, qd = np.broadcast_arrays(q, qd)
        values = self._joint_values(q, 2)
        loads = self.loads if loads is None else tuple(loads)
        springs = self._model_springs if loads is self.loads else tuple(
            load for load in loads if isinstance(load, loads_module.SpringDamper))
        (M, velocity, gravity), applied, kin = self._inertial_terms(q, qd, values, springs)
        if applied is None:
            applied = np.zeros(q.shape)
        elif loads:  # the kernel did the spring-dampers; joint-space loads need no kinematics
            joint_space = (loads_module.JointTorque, loads_module.GeneralizedForce)
            for load in loads:
                if isinstance(load, joint_space):
                    applied = applied + loads_module.joint_space_force(self, values[1], load, t, q, qd)
            loads = tuple(load for load in loads if not isinstance(load, joint_space + (loads_module.SpringDamper,)))
        if loads or muscle_forces is not None:
            kin = kin or kinematics.compute_kinematics(self.tree, values, q, 1)
            applied = applied + self._applied(kin, qd, loads, t, muscle_forces)
        return dynamics.EquationsOfMotion(mass_matrix=M, velocity_forces=velocity, gravity_forces=gravity,
                                          applied_forces=applied)

    def _equation_terms(self, q, qd, loads, t, muscle_forces=None):
        """``M`` and the right-hand side ``G + Q + R F_mt − N q̇`` of Eq. 198 without actuation."""
        terms = self.equations_of_motion(q, qd, loads, t, muscle_forces)
        return terms.mass_matrix, terms.gravity_forces + terms.applied_forces - terms.velocity_forces

    def inverse_dynamics(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None, t: float = 0.0,
        muscle_forces=None,
    ) -> NDArray[np.float64]:
        """Generalized forces ``τ`` that produce ``q̈``: ``τ = M q̈ + N q̇ − G − Q_loads − R F_mt`` (Eq. 198).

        Parameters
        ----------
        q, qd, qdd : array_like, shape (..., nq)
        loads : sequence of Load, optional
            Applied loads; ``model.loads`` by default (pass ``()`` for none).
        t : float
            Time, for loads given as functions of time.
        muscle_forces : array_like (..., n_mt) or callable (t, q, qd), optional
            Musculotendon tensions, N (Eq. 198).

        Returns
        -------
        ndarray, shape (..., nq)
        """
        M, rhs = self._equation_terms(q, qd, loads, t, muscle_forces)
        return (M @ self._as_q(qdd, "qdd")[..., None])[..., 0] - rhs

    def forward_dynamics(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        loads: tuple | None = None,
        t: float = 0.0,
        muscle_forces=None,
    ) -> NDArray[np.float64]:
        """Accelerations ``q̈ = M⁻¹(G + Q_loads + R F_mt + τ − N q̇)`` (Eq. 198).

        ``M`` is checked positive definite (a Cholesky factorisation exists); the system is then solved
        by LU (one batched LAPACK call: numpy has no batched triangular solve).

        Parameters
        ----------
        q, qd : array_like, shape (..., nq)
        tau : array_like, shape (..., nq), optional
            Generalized actuation forces.
        loads : sequence of Load, optional
            ``model.loads`` by default.
        t : float
        muscle_forces : array_like (..., n_mt) or callable (t, q, qd), optional
            Musculotendon tensions, N.

        Raises
        ------
        ConfigurationError
            If ``M(q)`` is not positive definite (a massless chain, a singular rhythm).
        """
        M, rhs = self._equation_terms(q, qd, loads, t, muscle_forces)
        if tau is not None:
            rhs = rhs + np.asarray(tau, dtype=float)
        if not _positive_definite(M):
            eigenvalues = np.linalg.eigvalsh(M)
            raise ConfigurationError(
                f"the mass matrix is not positive definite at q = {np.asarray(q).tolist()}: smallest "
                f"eigenvalue {eigenvalues.min():.3g} (bodies without mass or inertia, or a joint-variable map "
                "that is singular there)"
            )
        if self.nq == 1:
            return rhs / M[..., 0]
        return np.linalg.solve(M, rhs[..., None])[..., 0]

    def joint_reactions(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None, t: float = 0.0
    ) -> reactions.JointReactions:
        """Net joint force and moment that each body's parent exerts on it (Newton–Euler).

        See :mod:`mbkron.dynamics.reactions`: ground frame, moments about each body's frame origin; loads at
        body points (``model.loads`` unless ``loads`` is given) are external, joint actuation is part
        of the wrench.

        Returns
        -------
        JointReactions
            ``.force`` and ``.moment``, each of shape (..., nb, 3).
        """
        kin = self._dynamic_kinematics(q)
        return reactions.joint_reactions(self, kin, self._as_q(qd, "qd"), self._as_q(qdd, "qdd"), loads, t)
