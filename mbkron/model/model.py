"""The model: an immutable, validated description of a multibody tree and its coordinates.

Evaluation is a pure function of ``(model, q[, q̇, q̈])``: bit-identical whatever was evaluated
before, and safe to call from several threads at once (Pinocchio's model/data split: the per-state
arrays live in :class:`~mbkron.algorithms.kinematics.tree.KinematicsData`). The one thing a trajectory carries
from state to state -- where the constraint solvers continue from -- lives in a caller-owned
:class:`Workspace` (``model.workspace()``), passed as ``workspace=`` to any evaluation; without
one, constraint groups start from their assembly configuration. The per-state work is done by the one
engine, the compiled kernels (:mod:`mbkron.jit`), each called by the module of its algorithm.
Build models with :class:`mbkron.ModelBuilder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.multibody.layout import inertia_rows, spring_rows
from mbkron.core.arguments import finite_evaluation, named_index, finite_result, order_argument, state_array
from mbkron.multibody.records import GROUND, Body, Coordinate
from mbkron.core.errors import ConfigurationError
from mbkron.multibody import loads as load_records
from mbkron.algorithms.dynamics import loads as loads_module, points as motions, reactions, terms as dynamics
from mbkron.algorithms.jointvars.explicit import JointVariables, check_joint_values, joint_dynamics, joint_values
from mbkron.algorithms.kinematics import tree as kinematics
from mbkron.multibody import tree as tree_description
from mbkron.model.backend import check_backend
from mbkron.algorithms.dynamics.forward import ForwardDynamics, solve_positive_definite
from mbkron.model.summary import summary
from mbkron.model.workspace import Workspace
from mbkron.algorithms.paths.paths import MuscleSet
from mbkron.algorithms.paths import forces as path_forces
from mbkron.multibody.muscles.springs import PathForce

__all__ = ["Model", "Workspace"]

_as_point = functools.partial(state_array, name="point", size=3, meaning="body coordinates")
_TERMS = dict(mass_matrix="mass matrix M", velocity_forces="velocity forces N q̇", gravity_forces="gravity forces G",
              applied_forces="applied forces Q")
_ACCELERATIONS, _FORCES = "accelerations q̈ (forward dynamics)", "generalized forces τ (inverse dynamics)"
_CHUNK_ELEMENTS = 2_000_000
"""Largest number of doubles in one batched dynamics intermediate; bigger batches are chunked."""


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
        Applied loads that belong to the system (springs, drives); see :mod:`mbkron.algorithms.dynamics.loads`.
    pseudo_inertias : ndarray, shape (nb, 4, 4)
        ``J_i`` of Eq. 131 about each body's frame origin.
    body_indices : mapping of str to int
        Each body's index (the order of ``body_records``) by its name.
    muscle_set : MuscleSet or None
        The musculotendon paths (:mod:`mbkron.multibody.muscles`), compiled; None without muscles.
    constraint_groups : tuple of ConstraintGroup
        How the joint variables without an explicit ``variable`` are solved
        (:meth:`mbkron.ModelBuilder.add_constraints`), as described to the builder.
    backend : {"compiled"}
        The engine that evaluates the model: always ``"compiled"``, the one engine (:mod:`mbkron.model.backend`).
        Kept for compatibility; ``"numpy"`` (removed) raises ValueError.
    kernel_inertia : ndarray, shape (nb, 13)
        Derived once when the model is made (not arguments): the pseudo-inertias as the kernels read them
        (:func:`mbkron.multibody.layout.inertia_rows`); with it, also derived and private, the model's
        spring-dampers and their kernel rows and the forward-dynamics plan
        (:class:`mbkron.algorithms.dynamics.forward.ForwardDynamics`). All read-only, fixed with the description.
    joint_indices, coordinate_indices : mapping of str to int
        Derived once when the model is made: the row of each joint variable (named after its body) in ``f`` and of
        each coordinate in ``q``; the algorithms read them (:func:`mbkron.core.arguments.named_index`) instead of
        calling back into the model.
    path_sets : tuple of (PathForce, MuscleSet)
        Derived once when the model is made: each path force of ``loads`` with its one-path muscle set
        (:func:`mbkron.algorithms.paths.forces.path_set`).
    """

    name: str
    gravity: NDArray[np.float64]
    coordinate_records: tuple[Coordinate, ...]
    body_records: tuple[Body, ...]
    tree: tree_description.KinematicTree
    joint_variable_map: JointVariables
    loads: tuple
    pseudo_inertias: NDArray[np.float64]
    body_indices: Mapping[str, int] = field(repr=False)
    muscle_set: object = field(default=None, repr=False)
    constraint_groups: tuple = field(default=(), repr=False)
    backend: str | None = None
    # derived in __post_init__ from the fields above (declared: nothing else is written into a Model)
    kernel_inertia: NDArray[np.float64] = field(init=False, repr=False)
    _model_springs: tuple = field(init=False, repr=False)
    _model_spring_rows: NDArray[np.float64] = field(init=False, repr=False)
    path_sets: tuple = field(init=False, repr=False)
    joint_indices: Mapping[str, int] = field(init=False, repr=False)
    coordinate_indices: Mapping[str, int] = field(init=False, repr=False)
    _forward: ForwardDynamics = field(init=False, repr=False)

    def __post_init__(self):
        constant = object.__setattr__
        constant(self, "backend", check_backend(self.backend))  # validated; None becomes "compiled"
        constant(self, "kernel_inertia", inertia_rows(self.pseudo_inertias))
        constant(self, "_model_springs", tuple(load for load in self.loads if load_records.in_kernel(load)))
        constant(self, "_model_spring_rows", self._build_spring_rows(self._model_springs))
        constant(self, "path_sets", tuple((load, path_forces.one_path_set(load, self.body_indices, self.coordinates))
                                          for load in self.loads if isinstance(load, PathForce)))
        constant(self, "joint_indices", {name: j for j, name in enumerate(self.joints)})
        constant(self, "coordinate_indices", {name: k for k, name in enumerate(self.coordinates)})
        constant(self, "_forward", ForwardDynamics.plan(self, self._model_spring_rows))

    __repr__ = summary  # counts, not arrays

    def with_backend(self, backend: str | None) -> Model:
        """The model itself for ``backend`` ``"compiled"`` or None: kept for compatibility, there is one engine.

        Raises
        ------
        ValueError
            Any other ``backend``: ``"numpy"`` was removed (:mod:`mbkron.reference` is the independent
            evaluation).
        """
        check_backend(backend)
        return self

    def workspace(self) -> Workspace:
        """A fresh :class:`Workspace` for evaluating this model along a trajectory or a sweep."""
        return Workspace(self.joint_variable_map)

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
        return tuple(b.name for b in self.body_records if b.joint != tree_description.FIXED)

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
        """The description of coordinate ``name``: its identifier or, for an imported one, its original name."""
        for record in self.coordinate_records:
            if name in (record.name, record.label):
                return record
        raise KeyError(f"unknown coordinate `{name}`; the model has: {', '.join(self.coordinates)}")

    def body_index(self, body: str | int) -> int:
        """Index of a body given by name (or index, checked)."""
        if isinstance(body, (int, np.integer)) and not isinstance(body, bool):
            if not 0 <= body < self.nb:
                raise IndexError(f"body index {body} is outside 0..{self.nb - 1}")
            return int(body)
        return named_index(self.body_indices, body, "body")

    @property
    def default_q(self) -> NDArray[np.float64]:
        """The coordinates' default values."""
        return np.array([c.default for c in self.coordinate_records])

    # ------------------------------------------------------------------ evaluation
    def _as_q(self, q: ArrayLike, name: str = "q") -> NDArray[np.float64]:
        """A state argument checked by :func:`mbkron.core.arguments.state_array` (shape (..., nq), finite)."""
        return state_array(q, name, self.nq, "one value per coordinate")

    def joint_variables(self, q: ArrayLike, order: int = 2, *, workspace: Workspace | None = None):
        """Joint variables, their gradients and Hessians.

        Parameters
        ----------
        q : array_like, shape (..., nq)
        order : {0, 1, 2}
        workspace : Workspace, optional
            Where constraint solvers continue from (advanced by the call); see :meth:`workspace`.
            Every evaluation method takes it.

        Returns
        -------
        f : ndarray, shape (..., nj)
        grad : ndarray, shape (..., nj, nq)
        hess : ndarray, shape (..., nj, nq, nq)
        """
        return self._joint_values(self._as_q(q), order_argument(order), workspace)

    def _joint_values(self, q: NDArray[np.float64], order: int, workspace: Workspace | None):
        """:meth:`joint_variables` for a validated ``q`` (:func:`mbkron.algorithms.jointvars.explicit.joint_values`)."""
        return joint_values(self, q, order, self._provider_states(workspace))

    def _joint_dynamics(self, q: NDArray[np.float64], qd: NDArray[np.float64], workspace: Workspace | None):
        """``(f, ∇f, q̇ᵀHq̇)`` at validated ``q``, ``qd`` (:func:`mbkron.algorithms.jointvars.explicit.joint_dynamics`)."""
        return joint_dynamics(self, q, qd, self._provider_states(workspace))

    def _provider_states(self, workspace: Workspace | None) -> tuple | None:
        """The joint-variable providers' states in ``workspace`` (checked to be this model's), or None: without a
        workspace or without providers."""
        jv = self.joint_variable_map
        return None if workspace is None or not jv.providers else workspace.states_for(jv)

    def kinematics(self, q: ArrayLike, order: int = 2, *, workspace: Workspace | None = None) -> kinematics.KinematicsData:
        """Transforms ``⁰_iA_4`` and their first (D_i) and second (D'_i) derivatives at ``q``.

        Parameters
        ----------
        q : array_like, shape (..., nq)
        order : {0, 1, 2}
            Highest derivative computed.
        """
        order = order_argument(order)
        return self._checked_kinematics(self._as_q(q), order, workspace)

    def _checked_kinematics(self, q: NDArray, order: int, workspace: Workspace | None, values: tuple | None = None):
        """Kinematics of ``order`` at a validated ``q`` (from joint ``values`` ``(f, ∇f, H or None)`` when given,
        else evaluated to ``order``); finite."""
        with np.errstate(all="ignore"):
            return self._silenced_kinematics(q, order, workspace, values)

    def _silenced_kinematics(self, q: NDArray, order: int, workspace: Workspace | None, values: tuple | None = None):
        """:meth:`_checked_kinematics` for a caller that has silenced numpy's floating-point warnings
        (``np.errstate(all="ignore")``); the joint variables checked as by
        :func:`~mbkron.algorithms.jointvars.explicit.joint_values`."""
        if values is None:
            values = self.joint_variable_map.evaluate_silenced(q, order, self._provider_states(workspace))
            check_joint_values(self, values[0], q)
        kin = kinematics.compute_kinematics(self.tree, values, q, order)
        finite_result(kin.T, "body transforms", q)
        return kin

    def point_position(self, body: str | int, point: ArrayLike, q: ArrayLike, *,
                       workspace: Workspace | None = None) -> NDArray[np.float64]:
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
        kin, index, point = self.kinematics(q, 0, workspace=workspace), self.body_index(body), _as_point(point)
        return finite_evaluation(lambda: kinematics.point_positions(kin, index, point), "point position", kin.q)

    def point_velocity(self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike, *,
                       workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Ground-frame velocity of a body-fixed point (Eq. 44), m/s: ``ω × r + v`` with the body's velocity twist
        (:func:`mbkron.algorithms.dynamics.points.point_velocities`)."""
        index, point = self.body_index(body), _as_point(point)
        q, qd = self._with_rates(q, qd)
        kin = self.kinematics(q, 1, workspace=workspace)
        return finite_evaluation(lambda: motions.point_velocities(self, kin, index, point, qd), "point velocity",
                                 kin.q, qd=qd)

    def point_acceleration(
        self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, *,
        workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Ground-frame acceleration of a body-fixed point (Eq. 57), m/s²: ``(α_i + V_i²) {r; 1}`` with the body's
        twists (:func:`mbkron.algorithms.dynamics.points.point_accelerations`)."""
        index, point = self.body_index(body), _as_point(point)
        q, qd, qdd = self._with_rates(q, qd, qdd)
        f, grad, convective = self._joint_dynamics(q, qd, workspace)  # q̇ᵀH q̇ without the Hessians or D'_i
        kin = self._checked_kinematics(q, 1, workspace, (f, grad, None))
        return finite_evaluation(lambda: motions.point_accelerations(self, kin, index, point, qd, qdd, convective),
                                 "point acceleration", kin.q, qd=qd, qdd=qdd)

    def angular_velocity(self, body: str | int, q: ArrayLike, qd: ArrayLike, frame: str = "world", *,
                         workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Angular velocity of a body (Eq. 177-182), in the ground frame or the body's own frame
        (:func:`mbkron.algorithms.dynamics.points.angular_velocities`).

        Returns
        -------
        ndarray, shape (..., 3)
            rad/s.
        """
        if frame not in ("world", "body"):  # before any evaluation
            raise ValueError(f"`frame` must be 'world' or 'body', got {frame!r}")
        index = self.body_index(body)
        q, qd = self._with_rates(q, qd)
        kin = self.kinematics(q, 1, workspace=workspace)
        return finite_evaluation(lambda: motions.angular_velocities(self, kin, qd, frame)[..., index, :],
                                 "angular velocity", kin.q, qd=qd)

    def _with_rates(self, q: ArrayLike, *rates: ArrayLike) -> tuple[NDArray[np.float64], ...]:
        """``q`` and its rates (``qd``, then ``qdd``) checked (:meth:`_as_q`), ``q`` broadcast to the rates' batch
        where theirs is larger (the kinematics are evaluated at every state)."""
        q = self._as_q(q)
        rates = tuple(self._as_q(rate, name) for rate, name in zip(rates, ("qd", "qdd")))
        shape = np.broadcast_shapes(q.shape, *(rate.shape for rate in rates))
        return (q if q.shape == shape else np.broadcast_to(q, shape).copy(), *rates)

    # ------------------------------------------------------------------ muscles
    @property
    def muscles(self) -> tuple[str, ...]:
        """Names of the musculotendon units, in the order of the columns of ``moment_arms``."""
        return () if self.muscle_set is None else self.muscle_set.names

    def _muscle_set(self):
        if self.muscle_set is None:
            raise ConfigurationError(f"model `{self.name}` has no muscles (add them with ModelBuilder.add_muscle)")
        return self.muscle_set

    def path_set(self, load: PathForce) -> MuscleSet:
        """The path of a path force (:class:`~mbkron.multibody.muscles.springs.PathForce`: a path spring, a ligament) as a
        one-path :class:`~mbkron.algorithms.paths.paths.MuscleSet` of this model's bodies and coordinates: for one of
        ``model.loads`` the one built with the model, for any other a new one."""
        return path_forces.path_set(self, load)

    def muscle_lengths(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Musculotendon path lengths ``L(q)`` (polylines through the path points), m, shape (..., n_mt).

        With a ``workspace`` the lengths and the moment arms are evaluated together and kept in it
        (:attr:`Workspace.paths`): :meth:`moment_arms` at the same ``q`` with it then evaluates nothing
        again. The values are the same, bit for bit, with or without a workspace.
        """
        if workspace is not None:
            return self._paths_kept(q, workspace)[0].copy()
        self._muscle_set()
        kin = self.kinematics(q, 0)
        return finite_evaluation(lambda: self.muscle_set.compiled_lengths_and_moment_arms(kin, 0)[0], "muscle lengths", kin.q)

    def _paths_kept(self, q: ArrayLike, workspace: Workspace) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(L, R)`` at ``q`` from ``workspace.paths`` where its last evaluation of this model's paths was at
        this very ``q`` (bit for bit: a ``-0.0`` is evaluated afresh after a ``0.0``), else evaluated (one
        kinematics, one call of the path kernels) and kept there."""
        muscle_set = self._muscle_set()
        q = self._as_q(q)
        kept = workspace.paths
        if kept is not None and kept[0] is muscle_set and kept[1].shape == q.shape and kept[1].tobytes() == q.tobytes():
            return kept[2], kept[3]
        with np.errstate(all="ignore"):
            kin = self._silenced_kinematics(q, 1, workspace)
            lengths, arms = self.muscle_set.compiled_lengths_and_moment_arms(kin, 1)
        finite_result(lengths, "muscle lengths", kin.q)
        finite_result(arms, "moment arms R", kin.q)
        kept = (muscle_set, q.copy(), lengths, arms)
        for array in kept[1:]:
            array.setflags(write=False)
        workspace.paths = kept
        return lengths, arms

    def moment_arms(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Moment-arm matrix ``R(q) = −∂L/∂q`` (Eq. 192-195): generalized force = ``R F_mt``.

        OpenSim's sign convention. Column ``m`` is muscle ``m``; row ``k`` coordinate ``k``.

        Returns
        -------
        ndarray, shape (..., nq, n_mt)
            m for angular coordinates, dimensionless for lengths.
        """
        if workspace is not None:
            return self._paths_kept(q, workspace)[1].copy()
        self._muscle_set()
        kin = self.kinematics(q, 1)
        return finite_evaluation(lambda: self.muscle_set.compiled_lengths_and_moment_arms(kin, 1)[1], "moment arms R", kin.q)

    def muscle_velocities(self, q: ArrayLike, qd: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Musculotendon lengthening velocities ``L̇ = −Rᵀ q̇``, m/s, shape (..., n_mt)."""
        arms, qd = self.moment_arms(q, workspace=workspace), self._as_q(qd, "qd")
        return finite_evaluation(lambda: -np.einsum("...km,...k->...m", arms, qd), "muscle velocities", np.asarray(q),
                                 qd=qd)

    def _muscle_generalized_forces(self, kin, muscle_forces, t: float, qd) -> NDArray[np.float64]:
        """``R F_mt`` (Eq. 192) for forces given as an array (..., n_mt) or a callable ``(t, q, qd)``."""
        forces = muscle_forces(t, kin.q, qd) if callable(muscle_forces) else muscle_forces
        muscle_set = self._muscle_set()
        forces = state_array(forces, "muscle_forces", muscle_set.size,
                             f"one tension per muscle: {', '.join(muscle_set.names)}")
        return np.einsum("...km,...m->...k", self.muscle_set.compiled_lengths_and_moment_arms(kin, 1)[1], forces)

    # ------------------------------------------------------------------ dynamics
    def spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        """:func:`mbkron.multibody.layout.spring_rows` of spring-dampers and line forces of constant tension (built
        once for those of ``model.loads``)."""
        return self._model_spring_rows if springs is self._model_springs else self._build_spring_rows(springs)

    def _build_spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        bodies = [[self.nb if b == GROUND else self.body_index(b) for b in (s.body_a, s.body_b)] for s in springs]
        return spring_rows(bodies, springs)

    def _terms(self, q, qd, workspace, name: str):
        """One of the inertial terms (``name``) at validated ``q``, ``qd``, checked finite (one state of an affine
        model in one kernel call: :meth:`ForwardDynamics.terms <mbkron.algorithms.dynamics.forward.ForwardDynamics.terms>`)."""
        fast = None if self._forward is None else self._forward.terms(q, qd)
        if fast is not None:
            return fast[("mass_matrix", "velocity_forces", "gravity_forces").index(name)]
        return finite_evaluation(lambda: getattr(dynamics.inertial_terms(
            self, qd, self._joint_dynamics(q, qd, workspace), self.spring_rows(())), name), _TERMS[name], q, qd=qd)

    def mass_matrix(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Generalized mass matrix ``M(q)`` (Eq. 145, 189).

        Parameters
        ----------
        q : array_like, shape (..., nq)

        Returns
        -------
        ndarray, shape (..., nq, nq)
        """
        q = self._as_q(q)
        return self._terms(q, np.zeros_like(q), workspace, "mass_matrix")

    def velocity_forces(self, q: ArrayLike, qd: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Coriolis and centrifugal generalized forces ``N(q, q̇) q̇`` (Eq. 126, 146, 190).

        Returns
        -------
        ndarray, shape (..., nq)
        """
        q, qd = np.broadcast_arrays(self._as_q(q), self._as_q(qd, "qd"))
        return self._terms(q, qd, workspace, "velocity_forces")

    def gravity_forces(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Generalized gravity forces ``G(q)`` (Eq. 187, 197), on the right-hand side of Eq. 198."""
        q = self._as_q(q)
        return self._terms(q, np.zeros_like(q), workspace, "gravity_forces")

    def applied_forces(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None, *,
        workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Generalized forces of applied loads (``model.loads`` unless ``loads`` is given), Eq. 46.

        Returns
        -------
        ndarray, shape (..., nq)
        """
        kin, qd = self._checked_kinematics(self._as_q(q), 1, workspace), self._as_q(qd, "qd")
        return finite_evaluation(lambda: self._applied(kin, qd, loads, t, muscle_forces), _TERMS["applied_forces"],
                                 kin.q, qd=qd)

    def _applied(self, kin, qd, loads, t, muscle_forces=None) -> NDArray[np.float64]:
        loads = self.loads if loads is None else tuple(loads)
        Q = loads_module.generalized_forces(self, kin, loads, t, kin.q, qd)
        if muscle_forces is not None:
            Q = Q + self._muscle_generalized_forces(kin, muscle_forces, t, qd)
        return Q

    def equations_of_motion(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None, *,
        workspace: Workspace | None = None,
    ) -> dynamics.EquationsOfMotion:
        """All terms of ``M q̈ + N q̇ = G + Q`` (Eq. 198) from one kinematics evaluation.

        One state of a model whose joint variables are affine (a tree, a rhythm), called without ``loads`` and
        ``muscle_forces``, is evaluated in one kernel call (:func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms`).

        Parameters
        ----------
        q, qd : array_like, shape (..., nq)
        loads : sequence of Load, optional
            ``model.loads`` by default.
        t : float
        muscle_forces : array_like (..., n_mt) or callable (t, q, qd) -> (..., n_mt), optional
            Musculotendon tensions, N; their generalized forces ``R F_mt`` (Eq. 198) are added to
            ``applied_forces``.
        workspace : Workspace, optional
            See :meth:`joint_variables`.

        Returns
        -------
        EquationsOfMotion
            ``mass_matrix`` (..., nq, nq), ``velocity_forces``, ``gravity_forces``, ``applied_forces``
            (..., nq).
        """
        q, qd = self._as_q(q), self._as_q(qd, "qd")
        own = self._forward is not None and loads is None and muscle_forces is None
        fast = self._forward.terms(q, qd) if own else None
        if fast is not None:  # one state of an affine model: one kernel call, its values checked finite there
            return dynamics.EquationsOfMotion(*fast[:4])
        with np.errstate(all="ignore"):
            terms = self._all_terms(q, qd, loads, t, muscle_forces, workspace)
        for name, quantity in _TERMS.items():
            finite_result(getattr(terms, name), quantity, q, qd=qd)
        return terms

    def _all_terms(self, q, qd, loads, t, muscle_forces, workspace) -> dynamics.EquationsOfMotion:
        """:meth:`equations_of_motion` at validated ``q``, ``qd``: chunked where a batch is large."""
        # bounds what a load may form from the kinematics: `kin.twists`, (states, nb, nq, 4, 4), on first use
        chunk = max(1, _CHUNK_ELEMENTS // (16 * self.nb * self.nq))
        kinematics_free = not (self.loads if loads is None else loads) and muscle_forces is None
        if q.ndim == 2 and qd.shape == q.shape and q.shape[0] > chunk and not kinematics_free:
            states = q.shape[0]
            parts = [self._equations_of_motion(q[s:s + chunk], qd[s:s + chunk], loads, t,
                                               _rows(muscle_forces, s, s + chunk, states), workspace)
                     for s in range(0, states, chunk)]
            return dynamics.EquationsOfMotion(*(np.concatenate([getattr(p, name) for p in parts]) for name in (
                "mass_matrix", "velocity_forces", "gravity_forces", "applied_forces")))
        return self._equations_of_motion(q, qd, loads, t, muscle_forces, workspace)

    def _equations_of_motion(self, q, qd, loads, t, muscle_forces, workspace) -> dynamics.EquationsOfMotion:
        if q.shape != qd.shape:
            q, qd = np.broadcast_arrays(q, qd)
        values = self._joint_dynamics(q, qd, workspace)
        loads = self.loads if loads is None else tuple(loads)
        springs = self._model_springs if loads is self.loads else tuple(load for load in loads if load_records.in_kernel(load))
        M, velocity, gravity, applied = dynamics.inertial_terms(self, qd, values, self.spring_rows(springs))
        if applied is None:
            applied = np.zeros(q.shape)
        elif loads:  # the kernel did the spring-dampers and constant line forces; joint-space loads need no kinematics
            joint_space = (load_records.JointTorque, load_records.GeneralizedForce)
            for load in loads:
                if isinstance(load, joint_space):
                    applied = applied + loads_module.joint_space_force(self, values[1], load, t, q, qd)
            loads = tuple(load for load in loads if not (isinstance(load, joint_space) or load_records.in_kernel(load)))
        if loads or muscle_forces is not None:
            kin = kinematics.compute_kinematics(self.tree, (*values[:2], None), q, 1)
            applied = applied + self._applied(kin, qd, loads, t, muscle_forces)
        return dynamics.EquationsOfMotion(mass_matrix=M, velocity_forces=velocity, gravity_forces=gravity,
                                          applied_forces=applied)

    def _equation_terms(self, q, qd, loads, t, muscle_forces, workspace):
        """``M`` and the right-hand side ``G + Q + R F_mt − N q̇`` of Eq. 198 without actuation."""
        terms = self.equations_of_motion(q, qd, loads, t, muscle_forces, workspace=workspace)
        return terms.mass_matrix, terms.gravity_forces + terms.applied_forces - terms.velocity_forces

    def inverse_dynamics(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None, t: float = 0.0,
        muscle_forces=None, *, workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Generalized forces ``τ`` that produce ``q̈``: ``τ = M q̈ + N q̇ − G − Q_loads − R F_mt`` (Eq. 198).

        A tree whose joints each have their own coordinate, called without
        ``loads`` and ``muscle_forces``, is evaluated in O(n) by the recursive Newton–Euler algorithm
        (:mod:`mbkron.algorithms.dynamics.articulated`), one call for a state or a batch; one state of another model whose
        joint variables are affine (a rhythm), in one call of :func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms`.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (..., nq)
        loads : sequence of Load, optional
            Applied loads; ``model.loads`` by default (pass ``()`` for none).
        t : float
            Time, for loads given as functions of time.
        muscle_forces : array_like (..., n_mt) or callable (t, q, qd), optional
            Musculotendon tensions, N (Eq. 198).
        workspace : Workspace, optional
            See :meth:`joint_variables`.

        Returns
        -------
        ndarray, shape (..., nq)
        """
        q, qd, qdd = self._as_q(q), self._as_q(qd, "qd"), self._as_q(qdd, "qdd")
        compiled = self._forward is not None and loads is None and muscle_forces is None
        tau = self._forward.inverse(q, qd, qdd) if compiled else None  # simple trees: RNEA
        if tau is None and compiled:  # one state of an affine model: τ from its terms in one kernel call
            fast = self._forward.terms(q, qd, qdd)
            tau = None if fast is None else fast[4]
        if tau is None:
            M, rhs = self._equation_terms(q, qd, loads, t, muscle_forces, workspace)
            tau = finite_evaluation(lambda: (M @ qdd[..., None])[..., 0] - rhs, _FORCES, q, qd=qd, qdd=qdd)
        return finite_result(tau, _FORCES, q, qd=qd, qdd=qdd)

    def forward_dynamics(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        tau: ArrayLike | None = None,
        loads: tuple | None = None,
        t: float = 0.0,
        muscle_forces=None,
        *,
        workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Accelerations ``q̈ = M⁻¹(G + Q_loads + R F_mt + τ − N q̇)`` (Eq. 198).

        ``M`` is factored once by Cholesky, whose failure is the check that it is positive definite
        (:func:`mbkron.algorithms.dynamics.forward.solve_positive_definite`). A model whose own loads are spring-dampers and constant joint torques or generalized forces,
        called without ``loads`` and ``muscle_forces``, is evaluated in one kernel call
        (:mod:`mbkron.algorithms.dynamics.forward`).

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
        workspace : Workspace, optional
            See :meth:`joint_variables`; :func:`mbkron.simulate` passes one per run.

        Raises
        ------
        ConfigurationError
            If ``M(q)`` is not positive definite (a massless chain, a singular rhythm).
        """
        common = self._forward is not None and tau is None and loads is None and muscle_forces is None and workspace is None
        qdd = self._forward.one_state(q, qd) if common else None  # the common case: checked by the finiteness of q̈
        if qdd is not None:
            return qdd
        q, qd = self._as_q(q), self._as_q(qd, "qd")
        if tau is not None:
            tau = state_array(tau, "tau", self.nq, "one generalized force per coordinate")
        if self._forward is not None and loads is None and muscle_forces is None:
            qdd = self._forward(self, q, qd, tau, self._provider_states(workspace))
            if qdd is not None:
                return finite_result(qdd, _ACCELERATIONS, q, qd=qd)
        M, rhs = self._equation_terms(q, qd, loads, t, muscle_forces, workspace)
        with np.errstate(all="ignore"):
            qdd = solve_positive_definite(M, rhs if tau is None else rhs + tau)
        if qdd is None:
            raise ConfigurationError(self._not_positive_definite(M, q))
        return finite_result(qdd, _ACCELERATIONS, q, qd=qd)

    def _not_positive_definite(self, M: NDArray, q: NDArray) -> str:
        """The error where ``M(q)`` (one or a batch) is not positive definite: its smallest eigenvalue and the
        coordinates along its eigenvector (those of at least 30 % of its largest component), whose motion moves no
        mass or inertia there."""
        nq = M.shape[-1]
        with np.errstate(all="ignore"):
            values, vectors = np.linalg.eigh(np.nan_to_num(M.reshape(-1, nq, nq)))
        state = int(np.argmin(values[:, 0]))
        direction = np.abs(vectors[state, :, 0])
        names = ", ".join(f"`{self.coordinates[k]}`" for k in np.flatnonzero(direction >= 0.3 * direction.max()))
        return (f"the mass matrix is not positive definite at q = {np.asarray(q).tolist()}: smallest eigenvalue "
                f"{values[state, 0]:.3g}, along {names} (a motion of these coordinates that moves no mass or inertia "
                "there: bodies without mass or inertia, or a joint-variable map that is singular there, as a plane "
                "of elevation at zero elevation); start from another state")

    def state_kernel(self, workspace: Workspace, tau: ArrayLike | None = None):
        """For integrators: the compiled right-hand side ``y' = (q̇, q̈)`` with the model's own loads and
        constant actuation ``tau``, continuing from ``workspace``, and a compiled TR-BDF2 step around it
        (:class:`mbkron.algorithms.dynamics.forward.StateKernel`); None where the model has none (not a single compiled
        constraint group)."""
        return None if self._forward is None else self._forward.state_kernel(self, workspace, tau)

    @property
    def compiled_group(self) -> bool:
        """Whether one constraint group's step and the dynamics run in one compiled call (:meth:`state_kernel`: the
        kernels :meth:`compile_ahead` compiles serve this model's runs)."""
        return self._forward is not None and self._forward.group is not None

    def compile_ahead(self, kernels: tuple[str, ...] = ("dynamics", "steps")) -> bool:
        """Compile (or load from numba's disk cache) kernels of the TR-BDF2 runs of models with one compiled
        constraint group (:meth:`state_kernel`), evaluating nothing: ``"dynamics"`` the terms of the equations of
        motion below the group's dynamics, ``"steps"`` the TR-BDF2 steps, in that order
        (:meth:`mbkron.algorithms.dynamics.forward.ForwardDynamics.compile_ahead`: they serve every such model, so any model with
        a compiled forward route can compile them). False (nothing compiled) where this model has none. The command
        line's helper process does this on a second core while a command compiles the rest
        (:mod:`mbkron.cli.prefetch`)."""
        if self._forward is None:
            return False
        self._forward.compile_ahead(kernels)
        return True

    def joint_reactions(
        self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None, t: float = 0.0, *,
        workspace: Workspace | None = None,
    ) -> reactions.JointReactions:
        """Net joint force and moment that each body's parent exerts on it (Newton–Euler).

        See :mod:`mbkron.algorithms.dynamics.reactions`: ground frame, moments about each body's frame origin; loads at
        body points (``model.loads`` unless ``loads`` is given) are external, joint actuation is part
        of the wrench.

        Returns
        -------
        JointReactions
            ``.force`` and ``.moment``, each of shape (..., nb, 3).
        """
        q, qd, qdd = self._as_q(q), self._as_q(qd, "qd"), self._as_q(qdd, "qdd")
        f, grad, convective = self._joint_dynamics(q, qd, workspace)
        kin = self._checked_kinematics(q, 1, workspace, (f, grad, None))
        with np.errstate(all="ignore"):
            wrenches = reactions.joint_reactions(self, kin, qd, qdd, loads, t, convective)
        finite_result(np.concatenate([wrenches.force, wrenches.moment], -1), "joint reactions", kin.q, qd=qd, qdd=qdd)
        return wrenches
