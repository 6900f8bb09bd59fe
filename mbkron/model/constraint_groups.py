"""Constraint groups of a model: which joint variables are solved from which constraints, and how.

A :class:`ConstraintGroup` is what :meth:`mbkron.ModelBuilder.add_constraints` records; at
:meth:`~mbkron.ModelBuilder.build` time :func:`attach` validates every group, binds its
constraint system to the model's description (its coordinates, bodies and tree), assembles it at the coordinates' defaults (fixing the assembly
branch) and plugs the chosen solver into the model's joint variables as a
:class:`~mbkron.algorithms.jointvars.explicit.JointVariableProvider`, so that ``model.joint_variables(q)`` and
``model.kinematics(q)`` work unchanged.

Solvers (``solver=``) and their settings:

=====================  =====================================================================
``"lu"`` (default)     exact ``∇f``, ``H`` by one LU of ``∂g/∂f`` (Eq. 101, 120)
``"projection"``       exact ``∇f``, ``H`` by the analytical projection (Eq. 102-120)
``"premodel"``         sweep and fit (Section 3-3): ``step``, ``range``, ``fourier_cutoff``,
                       ``estimate_error`` (:class:`~mbkron.algorithms.jointvars.premodel.PremodelJointVariables`)
``"finite_difference"`` computational molecule (Fig. 2): ``step``
                       (:class:`~mbkron.algorithms.jointvars.finite_difference.FiniteDifferenceJointVariables`)
=====================  =====================================================================

Every solver also takes the position-solver settings ``tolerance``, ``max_iterations``,
``max_condition``, ``jump_ratio``, ``jump_tolerance``, ``max_newton_step``, ``max_step``
(:class:`~mbkron.algorithms.jointvars.solvers.PositionSolver`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mbkron.algorithms.jointvars.constrained import ConstrainedJointVariables
from mbkron.algorithms.jointvars.solvers import METHODS, ExplicitInputs, PositionSolver
from mbkron.algorithms.jointvars.constraints import ConstraintContext, ConstraintSystem
from mbkron.algorithms.jointvars.loop_closures import LoopClosure, LoopClosures
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.algorithms.jointvars.finite_difference import FiniteDifferenceJointVariables
from mbkron.algorithms.jointvars.explicit import JointVariableProvider, JointVariables
from mbkron.multibody.records import Body, Coordinate
from mbkron.multibody.tree import FIXED, KinematicTree
from mbkron.algorithms.jointvars.premodel import PremodelJointVariables

__all__ = ["SOLVERS", "ConstraintGroup", "attach", "solved_joints"]

SOLVERS = (*METHODS, "premodel", "finite_difference")
_POSITION_SETTINGS = (
    "tolerance", "max_iterations", "max_condition", "jump_ratio", "jump_tolerance", "max_newton_step", "max_step",
)
_SOLVER_SETTINGS = {
    "lu": (),
    "projection": (),
    "premodel": ("step", "range", "fourier_cutoff", "estimate_error"),
    "finite_difference": ("step",),
}


@dataclass(frozen=True, eq=False)
class ConstraintGroup:
    """Joint variables solved from one constraint system (see :meth:`mbkron.ModelBuilder.add_constraints`).

    Attributes
    ----------
    joints : tuple of str
        Names of the bodies whose joint variables are solved, in the order of the unknowns.
    constraints : ConstraintSystem or sequence of LoopClosure
    solver : str
        One of :data:`SOLVERS`.
    guess : mapping of str to float
        Initial guesses for the assembly (0 for joints not listed).
    settings : mapping
        Solver and position-solver settings.
    """

    joints: tuple
    constraints: object
    solver: str = "lu"
    guess: Mapping[str, float] = field(default_factory=dict)
    settings: Mapping[str, object] = field(default_factory=dict)


def _check(group: ConstraintGroup, where: str, bodies: Sequence[Body], claimed: set[str],
           problems: list[str]) -> ConstraintSystem | None:
    """Validate a group against the model's ``bodies``; return its constraint system, or None after recording
    problems."""
    start = len(problems)
    moving = {b.name for b in bodies if b.joint != FIXED}
    if not group.joints or not all(isinstance(j, str) for j in group.joints):
        problems.append(f"{where}: `joints` must be a non-empty list of body names, got {list(group.joints)!r}")
    for name in group.joints:
        if isinstance(name, str) and name not in moving:
            kind = "has a fixed joint" if name in {b.name for b in bodies} else "is not a body of the model"
            problems.append(f"{where}: `{name}` {kind}; solved joints must be revolute or prismatic bodies")
        elif name in claimed:
            problems.append(f"{where}: joint `{name}` is solved by two constraint groups (or listed twice)")
        claimed.add(name)
    system = group.constraints
    if isinstance(system, LoopClosure) or (
        isinstance(system, Sequence) and system and all(isinstance(c, LoopClosure) for c in system)
    ):
        system = LoopClosures(system)
    if not isinstance(system, ConstraintSystem):
        problems.append(
            f"{where}: `constraints` must be a ConstraintSystem (SymbolicConstraints, LoopClosures) or a list "
            f"of LoopClosure, got {type(group.constraints).__name__}"
        )
    elif system.size != len(group.joints):
        problems.append(
            f"{where}: {system.size} constraint equations for {len(group.joints)} solved joint variables "
            f"({', '.join(map(str, group.joints))}); the numbers must be equal for the constraints to "
            f"determine the joint variables"
        )
    if group.solver not in SOLVERS:
        problems.append(f"{where}: `solver` must be one of {', '.join(SOLVERS)}, got {group.solver!r}")
    else:
        allowed = _POSITION_SETTINGS + _SOLVER_SETTINGS[group.solver]
        for key in group.settings:
            if key not in allowed:
                problems.append(f"{where}: unknown setting `{key}` for solver {group.solver!r}; expected one of: {', '.join(allowed)}")
    for name, value in dict(group.guess).items():
        if name not in group.joints:
            problems.append(f"{where}: `guess` names `{name}`, which is not one of the solved joints")
        elif isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
            problems.append(f"{where}: `guess` for `{name}` must be a finite number, got {value!r}")
    return system if len(problems) == start else None


def _provider(group: ConstraintGroup, solver: PositionSolver, coordinates: tuple[Coordinate, ...]) -> JointVariableProvider:
    settings = {k: v for k, v in group.settings.items() if k not in _POSITION_SETTINGS}
    if group.solver in METHODS:
        return ConstrainedJointVariables(solver, group.solver)
    if group.solver == "premodel":
        return PremodelJointVariables(solver, coordinates, **settings)
    return FiniteDifferenceJointVariables(solver, **settings)


def attach(groups: Sequence[ConstraintGroup], joint_variables: JointVariables, coordinates: tuple[Coordinate, ...],
           bodies: tuple[Body, ...], tree: KinematicTree) -> JointVariables:
    """The joint-variable map with every constraint group's joint variables provided by its solver.

    Called by :meth:`mbkron.ModelBuilder.build` with the parts of the description before the
    :class:`~mbkron.model.model.Model` is made (once, from the finished map).

    Parameters
    ----------
    groups : sequence of ConstraintGroup
    joint_variables : JointVariables
        The model's map with the solved joints' rows left empty (zero).
    coordinates : tuple of Coordinate
        The model's coordinates, in the order of ``q`` (their defaults are the assembly's ``q``).
    bodies : tuple of Body
        The model's bodies, parents before children (the order of the tree).
    tree : KinematicTree
        The model's kinematic tree.

    Returns
    -------
    JointVariables
        ``joint_variables`` itself without groups.

    Raises
    ------
    ModelError
        Listing every problem: invalid groups, equations that do not determine the joint
        variables, failed initial assembly (naming q and the condition number).
    """
    if not groups:
        return joint_variables
    problems: list[str] = []
    claimed: set[str] = set()
    systems = [_check(g, f"constraint group {k} ({', '.join(map(str, g.joints))})", bodies, claimed, problems)
               for k, g in enumerate(groups, start=1)]
    if problems:
        raise ModelError(problems)
    names = tuple(c.name for c in coordinates)
    joints = tuple(b.name for b in bodies if b.joint != FIXED)
    tree = dataclasses.replace(tree, nq=len(joints))  # the tree driven by the joint variables themselves
    body_index = {b.name: i for i, b in enumerate(bodies)}
    default_q = np.array([c.default for c in coordinates])
    providers = []
    for k, (group, system) in enumerate(zip(groups, systems), start=1):
        where = f"constraint group {k} ({', '.join(group.joints)})"
        context = ConstraintContext(names, joints, tuple(group.joints), tree, body_index)
        try:
            bound = system.bind(context)
            guess = np.array([float(dict(group.guess).get(j, 0.0)) for j in group.joints])
            position_settings = {k: v for k, v in group.settings.items() if k in _POSITION_SETTINGS}
            solver = PositionSolver(
                bound, ExplicitInputs(joint_variables, bound.explicit_rows), default_q, guess, tuple(group.joints),
                **position_settings,
            )
            providers.append((bound.unknown_rows, _provider(group, solver, coordinates)))
        except ModelError as error:
            problems.extend(f"{where}: {p}" for p in error.problems)
        except (ConfigurationError, ValueError, TypeError) as error:
            problems.append(f"{where}: {error}")
    if problems:
        raise ModelError(problems)
    return JointVariables(joint_variables.matrix, joint_variables.constant, joint_variables.providers + tuple(providers))


def solved_joints(groups: Sequence[ConstraintGroup]) -> set[str]:
    """Names of all joints listed in ``groups``."""
    return {j for g in groups for j in g.joints if isinstance(j, str)}

