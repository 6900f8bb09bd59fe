"""The model: an immutable, validated description of a multibody tree and its coordinates.

Evaluation is a pure function of ``(model, q[, q̇, q̈])``: bit-identical whatever was evaluated
before, and safe to call from several threads at once (Pinocchio's model/data split: the per-state
arrays live in :class:`~mbkron.algorithms.kinematics.tree.KinematicsData`). The one thing a trajectory carries
from state to state -- where the constraint solvers continue from -- lives in a caller-owned
:class:`Workspace` (``model.workspace()``), passed as ``workspace=`` to any evaluation; without
one, constraint groups start from their assembly configuration. The evaluation methods are conveniences: each
calls the free function of the same name of ``(model, workspace, …)`` in :mod:`mbkron.model.kinematics`,
:mod:`mbkron.model.paths` or :mod:`mbkron.model.dynamics`, where the arguments are checked and the algorithms
called; the per-state work is done by the one engine, the compiled kernels (:mod:`mbkron.jit`), each called by
the module of its algorithm. Build models with :class:`mbkron.ModelBuilder`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.algorithms.dynamics import reactions, terms
from mbkron.algorithms.dynamics.forward import ForwardDynamics
from mbkron.algorithms.dynamics.loads import DIFFERENTIATED
from mbkron.algorithms.jointvars.explicit import JointVariables
from mbkron.algorithms.kinematics.tree import KinematicsData
from mbkron.algorithms.paths import forces as path_forces
from mbkron.algorithms.paths.paths import MuscleSet
from mbkron.core.arguments import named_index
from mbkron.model import derivatives, dynamics, kinematics, paths
from mbkron.model.backend import check_backend
from mbkron.model.summary import summary
from mbkron.model.workspace import Workspace
from mbkron.multibody import loads as load_records, tree as tree_description
from mbkron.multibody.layout import inertia_rows, spring_rows
from mbkron.multibody.muscles.springs import PathForce
from mbkron.multibody.records import GROUND, Body, Coordinate

__all__ = ["Model", "Workspace"]

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
        Derived once when the model is made (not arguments), like the fields below: the pseudo-inertias as the
        kernels read them (:func:`mbkron.multibody.layout.inertia_rows`). All read-only, fixed with the description.
    kernel_springs, kernel_spring_rows : tuple of Load, ndarray
        The loads of ``loads`` that the dynamics kernels evaluate (spring-dampers, line forces of constant tension:
        :func:`mbkron.multibody.loads.in_kernel`) and their rows (:meth:`spring_rows`).
    forward_plan : ForwardDynamics or None
        Which one-call route the forward and inverse dynamics take for this model, with its packed arrays
        (:class:`mbkron.algorithms.dynamics.forward.ForwardDynamics`); None where there is none.
    derivative_loads, derivatives_plan : tuple of Load, ForwardDynamics or None
        The loads whose derivatives :func:`mbkron.algorithms.dynamics.loads.load_derivatives` gives (state-dependent
        kinds, :data:`~mbkron.algorithms.dynamics.loads.DIFFERENTIATED`), and the plan of the rest of the dynamics that
        the derivatives of the dynamics run (``forward_plan`` itself where there are none).
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
    kernel_springs: tuple = field(init=False, repr=False)
    kernel_spring_rows: NDArray[np.float64] = field(init=False, repr=False)
    path_sets: tuple = field(init=False, repr=False)
    joint_indices: Mapping[str, int] = field(init=False, repr=False)
    coordinate_indices: Mapping[str, int] = field(init=False, repr=False)
    forward_plan: ForwardDynamics = field(init=False, repr=False)
    derivative_loads: tuple = field(init=False, repr=False)
    derivatives_plan: ForwardDynamics = field(init=False, repr=False)

    def __post_init__(self):
        constant = object.__setattr__
        constant(self, "backend", check_backend(self.backend))  # validated; None becomes "compiled"
        constant(self, "kernel_inertia", inertia_rows(self.pseudo_inertias))
        constant(self, "kernel_springs", tuple(load for load in self.loads if load_records.in_kernel(load)))
        constant(self, "kernel_spring_rows", self._build_spring_rows(self.kernel_springs))
        constant(self, "path_sets", tuple((load, path_forces.one_path_set(load, self.body_indices, self.coordinates))
                                          for load in self.loads if isinstance(load, PathForce)))
        constant(self, "joint_indices", {name: j for j, name in enumerate(self.joints)})
        constant(self, "coordinate_indices", {name: k for k, name in enumerate(self.coordinates)})
        constant(self, "forward_plan", ForwardDynamics.plan(self, self.kernel_spring_rows))
        constant(self, "derivative_loads", tuple(load for load in self.loads if isinstance(load, DIFFERENTIATED)))
        constant(self, "derivatives_plan", ForwardDynamics.plan(self, self.kernel_spring_rows, DIFFERENTIATED)
                 if self.derivative_loads else self.forward_plan)

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
        return kinematics.joint_variables(self, workspace, q, order)

    def kinematics(self, q: ArrayLike, order: int = 2, *, workspace: Workspace | None = None) -> KinematicsData:
        """Transforms ``⁰_iA_4`` and their first (D_i) and second (D'_i) derivatives at ``q``.

        Parameters
        ----------
        q : array_like, shape (..., nq)
        order : {0, 1, 2}
            Highest derivative computed.
        """
        return kinematics.kinematics(self, workspace, q, order)

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
        return kinematics.point_position(self, workspace, body, point, q)

    def point_velocity(self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike, *,
                       workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Ground-frame velocity of a body-fixed point (Eq. 44), m/s: ``ω × r + v`` with the body's velocity twist
        (:func:`mbkron.algorithms.dynamics.points.point_velocities`)."""
        return kinematics.point_velocity(self, workspace, body, point, q, qd)

    def point_acceleration(
        self, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, *,
        workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Ground-frame acceleration of a body-fixed point (Eq. 57), m/s²: ``(α_i + V_i²) {r; 1}`` with the body's
        twists (:func:`mbkron.algorithms.dynamics.points.point_accelerations`)."""
        return kinematics.point_acceleration(self, workspace, body, point, q, qd, qdd)

    def angular_velocity(self, body: str | int, q: ArrayLike, qd: ArrayLike, frame: str = "world", *,
                         workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Angular velocity of a body (Eq. 177-182), in the ground frame or the body's own frame
        (:func:`mbkron.algorithms.dynamics.points.angular_velocities`).

        Returns
        -------
        ndarray, shape (..., 3)
            rad/s.
        """
        return kinematics.angular_velocity(self, workspace, body, q, qd, frame)

    # ------------------------------------------------------------------ muscles
    @property
    def muscles(self) -> tuple[str, ...]:
        """Names of the musculotendon units, in the order of the columns of ``moment_arms``."""
        return () if self.muscle_set is None else self.muscle_set.names

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
        return paths.muscle_lengths(self, workspace, q)

    def moment_arms(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Moment-arm matrix ``R(q) = −∂L/∂q`` (Eq. 192-195): generalized force = ``R F_mt``.

        OpenSim's sign convention. Column ``m`` is muscle ``m``; row ``k`` coordinate ``k``.

        Returns
        -------
        ndarray, shape (..., nq, n_mt)
            m for angular coordinates, dimensionless for lengths.
        """
        return paths.moment_arms(self, workspace, q)

    def muscle_velocities(self, q: ArrayLike, qd: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Musculotendon lengthening velocities ``L̇ = −Rᵀ q̇``, m/s, shape (..., n_mt)."""
        return paths.muscle_velocities(self, workspace, q, qd)

    # ------------------------------------------------------------------ dynamics
    def spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        """:func:`mbkron.multibody.layout.spring_rows` of spring-dampers and line forces of constant tension (built
        once for those of ``model.loads``)."""
        return self.kernel_spring_rows if springs is self.kernel_springs else self._build_spring_rows(springs)

    def _build_spring_rows(self, springs: tuple) -> NDArray[np.float64]:
        bodies = [[self.nb if b == GROUND else self.body_index(b) for b in (s.body_a, s.body_b)] for s in springs]
        return spring_rows(bodies, springs)

    def mass_matrix(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Generalized mass matrix ``M(q)`` (Eq. 145, 189).

        Parameters
        ----------
        q : array_like, shape (..., nq)

        Returns
        -------
        ndarray, shape (..., nq, nq)
        """
        return dynamics.mass_matrix(self, workspace, q)

    def velocity_forces(self, q: ArrayLike, qd: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Coriolis and centrifugal generalized forces ``N(q, q̇) q̇`` (Eq. 126, 146, 190).

        Returns
        -------
        ndarray, shape (..., nq)
        """
        return dynamics.velocity_forces(self, workspace, q, qd)

    def gravity_forces(self, q: ArrayLike, *, workspace: Workspace | None = None) -> NDArray[np.float64]:
        """Generalized gravity forces ``G(q)`` (Eq. 187, 197), on the right-hand side of Eq. 198."""
        return dynamics.gravity_forces(self, workspace, q)

    def applied_forces(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None, *,
        workspace: Workspace | None = None,
    ) -> NDArray[np.float64]:
        """Generalized forces of applied loads (``model.loads`` unless ``loads`` is given), Eq. 46.

        Returns
        -------
        ndarray, shape (..., nq)
        """
        return dynamics.applied_forces(self, workspace, q, qd, loads, t, muscle_forces)

    def equations_of_motion(
        self, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0, muscle_forces=None, *,
        workspace: Workspace | None = None,
    ) -> terms.EquationsOfMotion:
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
        return dynamics.equations_of_motion(self, workspace, q, qd, loads, t, muscle_forces)

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
        return dynamics.inverse_dynamics(self, workspace, q, qd, qdd, loads, t, muscle_forces)

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
        return dynamics.forward_dynamics(self, workspace, q, qd, tau, loads, t, muscle_forces)

    def inverse_dynamics_derivatives(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, *,
                                     workspace: Workspace | None = None) -> derivatives.InverseDynamicsDerivatives:
        """Inverse dynamics ``τ = M q̈ + N q̇ − G − Q`` (Eq. 198, the model's own loads) and its exact first
        derivatives, by the tangents of the recursive Newton–Euler algorithm (:mod:`mbkron.model.derivatives`).

        Parameters
        ----------
        q, qd, qdd : array_like, shape (..., nq)
            Broadcast together.
        workspace : Workspace, optional
            See :meth:`joint_variables`.

        Returns
        -------
        InverseDynamicsDerivatives
            ``tau`` (..., nq); ``dtau_dq``, ``dtau_dqd`` and ``mass_matrix`` (= ``∂τ/∂q̈``), each (..., nq, nq) with
            ``[..., k, m] = ∂τ_k/∂x_m``.

        Raises
        ------
        NotImplementedError
            For models not covered yet: joint variables given as formulas or solved by constraint groups, or loads
            that depend on the state (docs/derivatives.md).
        """
        return derivatives.inverse_dynamics_derivatives(self, workspace, q, qd, qdd)

    def forward_dynamics_derivatives(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None, *,
                                     workspace: Workspace | None = None) -> derivatives.ForwardDynamicsDerivatives:
        """Forward dynamics ``q̈`` (:meth:`forward_dynamics`) and its exact first derivatives ``∂q̈/∂q = −M⁻¹ ∂τ/∂q``,
        ``∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇``, ``∂q̈/∂τ = M⁻¹`` (:mod:`mbkron.model.derivatives`).

        Parameters
        ----------
        q, qd : array_like, shape (..., nq)
        tau : array_like, shape (..., nq), optional
            Generalized actuation forces.
        workspace : Workspace, optional
            See :meth:`joint_variables`.

        Returns
        -------
        ForwardDynamicsDerivatives
            ``qdd`` (..., nq); ``dqdd_dq``, ``dqdd_dqd``, ``dqdd_dtau``, each (..., nq, nq) with
            ``[..., k, m] = ∂q̈_k/∂x_m``.

        Raises
        ------
        NotImplementedError
            As :meth:`inverse_dynamics_derivatives`.
        ConfigurationError
            If ``M(q)`` is not positive definite.
        """
        return derivatives.forward_dynamics_derivatives(self, workspace, q, qd, tau)

    def state_kernel(self, workspace: Workspace, tau: ArrayLike | None = None):
        """For integrators: the compiled right-hand side ``y' = (q̇, q̈)`` with the model's own loads and
        constant actuation ``tau``, continuing from ``workspace``, and a compiled TR-BDF2 step around it
        (:class:`mbkron.algorithms.dynamics.forward.StateKernel`); None where the model has none (not a single compiled
        constraint group)."""
        return None if self.forward_plan is None else self.forward_plan.state_kernel(self, workspace, tau)

    @property
    def compiled_group(self) -> bool:
        """Whether one constraint group's step and the dynamics run in one compiled call (:meth:`state_kernel`: the
        kernels :meth:`compile_ahead` compiles serve this model's runs)."""
        return self.forward_plan is not None and self.forward_plan.group is not None

    def compile_ahead(self, kernels: tuple[str, ...] = ("dynamics", "steps")) -> bool:
        """Compile (or load from numba's disk cache) kernels of the runs of models with one compiled constraint
        group (:meth:`state_kernel`), evaluating nothing: ``"dynamics"`` the terms of the equations of motion below the
        group's dynamics, ``"steps"`` the TR-BDF2 steps, ``"explicit"`` the explicit Runge–Kutta steps (DOP853's, the
        command line's default for such models), in the order given
        (:meth:`mbkron.algorithms.dynamics.forward.ForwardDynamics.compile_ahead`: they serve every such model, so any model with
        a compiled forward route can compile them). False (nothing compiled) where this model has none. The command
        line's helper process does this on a second core while a command compiles the rest
        (:mod:`mbkron.cli.prefetch`)."""
        if self.forward_plan is None:
            return False
        self.forward_plan.compile_ahead(kernels)
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
        return dynamics.joint_reactions(self, workspace, q, qd, qdd, loads, t)
