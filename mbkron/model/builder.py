"""Build and validate a :class:`~mbkron.model.model.Model`.

Every problem in the description is collected and reported at once in one
:class:`~mbkron.core.errors.ModelError`, each naming the body or coordinate, the field, what was
expected and what came.

Example
-------
>>> import numpy as np, mbkron
>>> model = (
...     mbkron.ModelBuilder(gravity=(0, -9.81, 0))
...     .add_coordinate("q1")
...     .add_body("link", joint="revolute", axis=(0, 0, 1), variable="q1",
...               mass=1.0, com=(0.5, 0, 0), inertia=np.diag([0, 1/12, 1/12]))
...     .build()
... )
>>> model.point_position("link", (1, 0, 0), [np.pi / 2]).round(12)
array([0., 1., 0.])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from mbkron.core.lazy import LazyModule, is_sympy_expression
from mbkron.model.backend import check_backend
from mbkron.model import constraint_groups
from mbkron.algorithms.dynamics import terms as dynamics
from mbkron.multibody import tree as tree_description
from mbkron.core.errors import ModelError
from mbkron.expressions import ExpressionError
from mbkron.algorithms.jointvars.functions import CoordinateFunctionVariables
from mbkron.multibody.jointvars import CoordinateFunction, Linear
from mbkron.algorithms.jointvars.explicit import JointVariables, SymbolicJointVariables
from mbkron.multibody.loads import Load, check_load
from mbkron.multibody.records import GROUND, Body, Coordinate
from mbkron.model.checks import (
    as_linear, check_inertia, check_number, check_offset, check_unit, check_variable, check_vector,
    warn_unphysical_inertias,
)
from mbkron.model.model import Model
from mbkron.multibody.muscles.paths import MusclePath, check_path
from mbkron.algorithms.paths.paths import MuscleSet

__all__ = ["ModelBuilder"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")

_UNITS = ("rad", "m", "1")
MAX_DENSE_ENTRIES = 2**25
"""Most entries (float64: 256 MiB) of a dense matrix a model keeps: the joint-variable map ``∇f`` is
``nj × nq``. Larger models are refused by :meth:`ModelBuilder.build` before anything is allocated (the
kernels walk the parent links: no ``nb × nb`` matrix is built unless the joint reactions' subtree sums ask for
:meth:`mbkron.multibody.tree.KinematicTree.ancestor_or_self`)."""
_JOINTS = (tree_description.REVOLUTE, tree_description.PRISMATIC, tree_description.FIXED)


@dataclass
class _BodyInput:
    name: object
    parent: object
    joint: object
    axis: object
    variable: object
    offset: object
    d: object
    translation_axis: object
    theta: object
    rotation_axis: object
    mass: object
    com: object
    inertia: object
    joint_name: object = ""


class ModelBuilder:
    """Collects coordinates and bodies, then validates and builds an immutable :class:`Model`.

    Parameters
    ----------
    name : str
        Model name.
    gravity : array_like, shape (3,)
        Gravitational acceleration in ground coordinates, m/s² (default ``(0, -9.81, 0)``:
        y up).
    """

    def __init__(self, name: str = "model", gravity: ArrayLike = (0.0, -9.81, 0.0)):
        self.name = name
        self.gravity = gravity
        self._coordinates: list[tuple] = []
        self._bodies: list[_BodyInput] = []
        self._loads: list[Load] = []
        self._constraint_groups: list[constraint_groups.ConstraintGroup] = []
        self._muscles: list[MusclePath] = []

    def add_coordinate(
        self,
        name: str,
        *,
        range: tuple[float, float] = (-math.inf, math.inf),
        default: float = 0.0,
        unit: str = "rad",
        periodic: bool = False,
        original_name: str = "",
    ) -> ModelBuilder:
        """Add a generalized coordinate (SI units: radians or metres).

        ``name`` is an identifier (formulas use it); ``original_name``, if given, is the coordinate's
        name in the file it was imported from (an OpenSim name that is not an identifier), kept in
        :attr:`Coordinate.original_name <mbkron.multibody.records.Coordinate.original_name>`.

        Returns the builder, for chaining.
        """
        self._coordinates.append((name, range, default, unit, periodic, original_name))
        return self

    def add_body(
        self,
        name: str,
        *,
        parent: str = GROUND,
        joint: str = tree_description.REVOLUTE,
        axis: ArrayLike | None = None,
        variable: object = None,
        offset: ArrayLike | None = None,
        d: float = 0.0,
        translation_axis: ArrayLike | None = None,
        theta: float = 0.0,
        rotation_axis: ArrayLike | None = None,
        mass: float = 0.0,
        com: ArrayLike = (0.0, 0.0, 0.0),
        inertia: ArrayLike | None = None,
        joint_name: str = "",
    ) -> ModelBuilder:
        """Add a rigid body connected to ``parent`` by a 1-DOF (or fixed) joint.

        The joint transform is ``offset · Trans(d · V_d) · Rot(V_θ, θ)`` (Fig. 1, Eq. 38).

        Parameters
        ----------
        name : str
            Unique body name (not ``"ground"``).
        parent : str
            Parent body name, or ``"ground"``.
        joint : {"revolute", "prismatic", "fixed"}
        axis : array_like, shape (3,)
            The joint axis in the offset frame: ``V_θ`` for a revolute joint, ``V_d`` for a
            prismatic one (normalised). Required unless the joint is fixed.
        variable : str, Linear, sympy.Expr, or number
            The joint variable ``f_i(q)``: a coordinate name, an affine map, or a sympy
            expression in symbols named like the coordinates (exact derivatives). Required for
            revolute and prismatic joints, unless solved by :meth:`add_constraints` (then
            omitted); must be omitted for fixed ones.
        offset : array_like, shape (4, 4) or (3,), optional
            Constant transform from the parent frame to the joint frame, or just its
            translation. Identity by default.
        d, translation_axis : float, array_like
            Constant translation ``d · V_d`` of a revolute or fixed joint.
        theta, rotation_axis : float, array_like
            Constant rotation ``Rot(V_θ, θ)`` of a prismatic or fixed joint (radians).
        mass : float
            kg, non-negative.
        com : array_like, shape (3,)
            Centre of mass in body coordinates, m.
        inertia : array_like, shape (3, 3) or (3,)
            Inertia about the centre of mass in body axes (or its principal moments), kg·m²;
            symmetric positive semi-definite. Zero by default.
        joint_name : str, optional
            The name of the joint whose child this body is, as a source file names it (an OpenSim joint's
            name, e.g. ``"subtalar_r"``): joint reactions are labelled by it
            (:attr:`Body.joint_name <mbkron.multibody.records.Body.joint_name>`). Printable, not an identifier.

        Returns the builder, for chaining.
        """
        self._bodies.append(
            _BodyInput(name, parent, joint, axis, variable, offset, d, translation_axis, theta,
                       rotation_axis, mass, com, inertia, joint_name)
        )
        return self

    def add_load(self, load: Load) -> ModelBuilder:
        """Add an applied load that belongs to the system (see :mod:`mbkron.algorithms.dynamics.loads`).

        Returns the builder, for chaining.
        """
        self._loads.append(load)
        return self

    def add_muscle(self, name: str, path: Sequence, hill: object = None, wraps: Sequence = ()) -> ModelBuilder:
        """Add a musculotendon unit: a straight-line path through body-fixed and moving points.

        Parameters
        ----------
        name : str
            Any non-empty printable name (``"DELT1"``, OpenSim's ``"ECU_pre-surgery"``).
        path : sequence
            From origin to insertion, each ``(body, (x, y, z))`` (body coordinates, m; ``"ground"``
            allowed) or a :class:`mbkron.multibody.muscles.MovingPoint`. A conditional point (OpenSim's
            ``ConditionalPathPoint``), part of the path only while a coordinate is in a closed range,
            is ``(body, (x, y, z), PathPointCondition(coordinate, lo, hi))`` or a moving point with
            ``active=PathPointCondition(...)`` (:mod:`mbkron.multibody.muscles.conditions`; ``lo``, ``hi`` in the
            coordinate's SI unit); the origin and the insertion must be unconditional.
        hill : HillParameters, optional
            Musculotendon parameters (:mod:`mbkron.algorithms.muscles.hill`).
        wraps : sequence of PathWrap, optional
            Wrapping surfaces the path passes round, in order (:mod:`mbkron.multibody.muscles.wrapping`).

        Returns the builder, for chaining. Problems (unknown bodies or coordinates, coincident
        consecutive points, bad parameters or conditions) are reported by :meth:`build`; segments that become
        zero-length during motion raise :class:`~mbkron.core.errors.ConfigurationError` at evaluation.

        Examples
        --------
        >>> b = ModelBuilder().add_coordinate("q1")
        >>> b = b.add_body("link", axis=(0, 0, 1), variable="q1", mass=1.0)
        >>> b = b.add_muscle("flexor", [("ground", (0.0, 0.1, 0.0)), ("link", (0.5, 0.0, 0.0))])
        >>> b.build().moment_arms([0.0]).round(6)      # = −∂L/∂q = 0.05/|(0.5, −0.1)|
        array([[0.098058]])
        """
        self._muscles.append(MusclePath(name, tuple(path), hill, tuple(wraps)))
        return self

    def add_constraints(
        self,
        joints: Sequence[str],
        constraints: object,
        solver: str = "lu",
        *,
        guess: Mapping[str, float] | None = None,
        **settings: object,
    ) -> ModelBuilder:
        """Solve the joint variables of ``joints`` from algebraic constraints ``g(f, q) = 0``.

        Section 3-3 (Eq. 100-120): the listed bodies are added with ``variable=None``; their
        joint variables are the solution of the constraints, which may also use the other
        (explicit) joint variables, the coordinates and numeric parameters. At :meth:`build`
        the constraints are assembled at the coordinates' defaults starting from ``guess``;
        that fixes the assembly branch, which evaluation then follows by continuation. The
        result plugs into the model's joint variables, so ``model.joint_variables(q)`` and
        ``model.kinematics(q)`` work unchanged (batched over leading axes of ``q``).

        Parameters
        ----------
        joints : sequence of str
            Bodies (revolute or prismatic) whose joint variables are solved, in the order of
            the unknowns; as many as there are equations.
        constraints : ConstraintSystem or sequence of LoopClosure
            :class:`mbkron.algorithms.jointvars.constraints.SymbolicConstraints` (expressions in joint, coordinate and
            parameter names), :class:`mbkron.algorithms.jointvars.loop_closures.LoopClosures`, or a list of
            :class:`mbkron.algorithms.jointvars.loop_closures.LoopClosure`.
        solver : {"lu", "projection", "premodel", "finite_difference"}
            How ``∇f`` and ``H`` are obtained: exact by one LU of ``∂g/∂f`` (default) or by the
            analytical projection (Eq. 102-120), from a pre-modelled fit, or by central
            differences on the computational molecule (Fig. 2).
        guess : mapping of str to float, optional
            Initial guesses of the solved joint variables for the assembly (default 0).
        **settings
            Solver settings, see :mod:`mbkron.model.constraint_groups` (e.g. ``step=0.01`` for
            ``"premodel"``, ``max_condition=1e10``).

        Returns the builder, for chaining.

        Examples
        --------
        >>> from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
        >>> b = ModelBuilder().add_coordinate("x", range=(-0.5, 0.5))
        >>> b = b.add_body("arm", axis=(0, 0, 1))        # its angle solves cos(arm) = x
        >>> b = b.add_constraints(["arm"], SymbolicConstraints(["cos(arm) - x"]), guess={"arm": 1.5})
        >>> model = b.build()
        >>> bool(abs(model.joint_variables([0.0], 0)[0][0] - np.pi / 2) < 1e-14)
        True
        """
        self._constraint_groups.append(
            constraint_groups.ConstraintGroup(tuple(joints), constraints, solver, dict(guess or {}), dict(settings))
        )
        return self

    # ------------------------------------------------------------------ validation
    def build(self, backend: str | None = None, *, source: str | None = None) -> Model:
        """Validate everything and return the immutable :class:`Model`.

        Parameters
        ----------
        backend : {"compiled"}, optional
            Kept for compatibility: the one engine, ``"compiled"`` (:mod:`mbkron.model.backend`), evaluates every
            model; ``"numpy"`` (the removed route) raises ValueError.
        source : str, optional
            Where the description comes from (a model file), named in warnings; by default the
            model's name.

        Raises
        ------
        ModelError
            Listing every problem found.
        ValueError
            A ``backend`` other than ``"compiled"`` or None.

        Warns
        -----
        ModelWarning
            Once per body whose principal moments of inertia violate the triangle inequality
            (:func:`mbkron.model.checks.warn_unphysical_inertias`).
        """
        backend = check_backend(backend)
        problems: list[str] = []
        gravity = check_vector(self.gravity, "`gravity`", problems)
        coordinates = self._check_coordinates(problems)
        names = {c.name for c in coordinates}
        solved = constraint_groups.solved_joints(self._constraint_groups)
        bodies = [self._check_body(b, names, problems, solved) for b in self._bodies]
        if not bodies:  # nothing moves: no mass matrix, no kinematics (issue 27: divisions by zero later)
            problems.append("the model has no bodies (nothing moves); add at least one body")
        order = self._topological_order(bodies, problems)
        body_names = {b.name for b in bodies if isinstance(b.name, str)}
        joint_names = {b.name for b in bodies if isinstance(b.name, str) and b.joint != tree_description.FIXED}
        for index, load in enumerate(self._loads):
            check_load(load, body_names, joint_names, names, index, problems)
        self._check_muscles(body_names, names, problems)
        if problems:
            raise ModelError(problems)
        self._check_size(bodies, coordinates)
        ordered = [bodies[i] for i in order]
        joint_variable_map = self._joint_variable_map(ordered, coordinates, problems)
        if problems:
            raise ModelError(problems)
        tree, inertias = self._tree_and_inertias(gravity, coordinates, ordered)
        # the constraint groups' solvers and the muscle paths, bound to the description's parts, then one Model
        joint_variable_map = constraint_groups.attach(self._constraint_groups, joint_variable_map, tuple(coordinates),
                                                      tuple(ordered), tree)
        index = {b.name: i for i, b in enumerate(ordered)}
        muscle_set = MuscleSet(self._muscles, index, tuple(c.name for c in coordinates)) if self._muscles else None
        model = Model(name=self.name, gravity=gravity, coordinate_records=tuple(coordinates), body_records=tuple(ordered),
                      tree=tree, joint_variable_map=joint_variable_map, loads=tuple(self._loads),
                      pseudo_inertias=inertias, body_indices=index, muscle_set=muscle_set,
                      constraint_groups=tuple(self._constraint_groups), backend=backend)
        warn_unphysical_inertias(ordered, source or f"model `{self.name}`")
        return model

    @staticmethod
    def _check_size(bodies: list[Body], coordinates: list[Coordinate]) -> None:
        """Refuse a model whose dense matrices would exceed :data:`MAX_DENSE_ENTRIES` (before building them)."""
        nq = len(coordinates)
        nj = sum(b.joint != tree_description.FIXED for b in bodies)
        matrices = [(nj, nq, "the joint-variable map (joint variables × coordinates)", "")]
        problems = [f"the model is too large: {label} would be a dense {rows:,} × {columns:,} matrix of "
                    f"{rows * columns * 8 / 2**20:,.0f} MiB; at most {MAX_DENSE_ENTRIES:,} entries "
                    f"({MAX_DENSE_ENTRIES * 8 / 2**20:,.0f} MiB) are allowed{hint}"
                    for rows, columns, label, hint in matrices if rows * columns > MAX_DENSE_ENTRIES]
        if problems:
            raise ModelError(problems)

    def _check_muscles(self, body_names: set[str], coordinate_names: set[str], problems: list[str]) -> None:
        seen: set = set()
        for path in self._muscles:
            check_path(path, body_names, coordinate_names, problems)
            if path.name in seen:
                problems.append(f"muscle `{path.name}` is defined twice")
            seen.add(path.name)
            if path.hill is not None and hasattr(path.hill, "problems"):
                problems.extend(path.hill.problems(f"muscle `{path.name}`"))

    def _check_coordinates(self, problems: list[str]) -> list[Coordinate]:
        coordinates, seen = [], set()
        if not self._coordinates:
            problems.append("the model has no generalized coordinates; add at least one with `add_coordinate`")
        for name, rng, default, unit, periodic, original in self._coordinates:
            where = f"coordinate `{name}`"
            if not isinstance(name, str) or not name.isidentifier():
                problems.append(f"coordinate name {name!r} must be an identifier (letters, digits, _)")
                continue
            if name in seen:
                problems.append(f"{where} is defined twice")
            seen.add(name)
            if not isinstance(original, str) or not all(c.isprintable() for c in original):
                problems.append(f"{where}: `original_name` must be a string of printable characters, got {original!r:.80}")
                original = ""
            elif original and original != name:
                if original in seen:
                    problems.append(f"{where}: `original_name` `{original:.80}` is already another coordinate's name")
                seen.add(original)
            else:
                original = ""
            try:
                lo, hi = (float(x) for x in rng)
            except (TypeError, ValueError):
                problems.append(f"{where}: `range` must be a pair of numbers (low, high), got {rng!r}")
                lo, hi = -math.inf, math.inf
            if math.isnan(lo) or math.isnan(hi) or not lo < hi:
                problems.append(f"{where}: `range` must satisfy low < high, got {rng!r}")
            default_value = check_number(default, f"{where}: `default`", problems)
            if default_value is not None and not lo <= default_value <= hi:
                problems.append(f"{where}: `default` {default_value} lies outside `range` [{lo}, {hi}]")
            if unit not in _UNITS:
                problems.append(f"{where}: `unit` must be one of {', '.join(_UNITS)}, got {unit!r}")
            if not isinstance(periodic, bool):
                problems.append(f"{where}: `periodic` must be true or false, got {periodic!r}")
            coordinates.append(Coordinate(name, (lo, hi), default_value or 0.0, unit, bool(periodic), original))
        return coordinates

    def _check_body(
        self, b: _BodyInput, coordinate_names: set[str], problems: list[str], solved: set[str] = frozenset()
    ) -> Body:
        where = f"body `{b.name}`"
        if not isinstance(b.name, str) or not b.name or b.name == GROUND:
            problems.append(f"body name {b.name!r} must be a non-empty string other than `{GROUND}`")
        if not isinstance(b.parent, str):
            problems.append(f"{where}: `parent` must be a body name, got {b.parent!r}")
        joint = b.joint
        if joint not in _JOINTS:
            problems.append(f"{where}: `joint` must be one of {', '.join(_JOINTS)}, got {joint!r}")
        default_rotation, default_translation = (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)
        rotation_axis = b.rotation_axis if b.rotation_axis is not None else default_rotation
        translation_axis = b.translation_axis if b.translation_axis is not None else default_translation
        if joint == tree_description.REVOLUTE:
            rotation_axis = self._joint_axis(b, b.rotation_axis, "rotation_axis", where, problems, rotation_axis)
        elif joint == tree_description.PRISMATIC:
            translation_axis = self._joint_axis(b, b.translation_axis, "translation_axis", where, problems,
                                                translation_axis)
        elif b.axis is not None:
            problems.append(f"{where}: a fixed joint has no `axis`; give the constant transform as `offset`")
        rotation_axis = check_unit(rotation_axis, f"{where}: `rotation_axis`", problems)
        translation_axis = check_unit(translation_axis, f"{where}: `translation_axis`", problems)
        if joint == tree_description.FIXED and b.variable is not None:
            problems.append(f"{where}: a fixed joint has no joint variable; remove `variable`")
        if isinstance(b.name, str) and b.name in solved:
            if b.variable is not None:
                problems.append(f"{where}: its joint variable is solved by `add_constraints`; remove `variable`")
        elif joint in (tree_description.REVOLUTE, tree_description.PRISMATIC):
            check_variable(b.variable, coordinate_names, where, problems)
        mass = check_number(b.mass, f"{where}: `mass`", problems)
        if mass is not None and mass < 0:
            problems.append(f"{where}: `mass` must be non-negative (kg), got {mass}")
        if not isinstance(b.joint_name, str) or not b.joint_name.isprintable():
            problems.append(f"{where}: `joint_name` must be a string of printable characters, got {b.joint_name!r:.80}")
        return Body(
            name=b.name,
            parent=b.parent,
            joint=joint,
            rotation_axis=rotation_axis,
            translation_axis=translation_axis,
            d=check_number(b.d, f"{where}: `d`", problems) or 0.0,
            theta=check_number(b.theta, f"{where}: `theta`", problems) or 0.0,
            offset=check_offset(b.offset, where, problems),
            variable=b.variable,
            mass=mass or 0.0,
            com=check_vector(b.com, f"{where}: `com`", problems),
            inertia=check_inertia(b.inertia, where, problems),
            joint_name=b.joint_name if isinstance(b.joint_name, str) else "",
        )

    @staticmethod
    def _joint_axis(b, explicit, explicit_name, where, problems, fallback):
        if b.axis is None and explicit is None:
            problems.append(f"{where}: a {b.joint} joint needs `axis` (3 components, in the offset frame)")
            return fallback
        if b.axis is not None and explicit is not None:
            problems.append(f"{where}: give the joint axis once, as `axis` or as `{explicit_name}`, not both")
        return b.axis if b.axis is not None else explicit

    def _topological_order(self, bodies: list[Body], problems: list[str]) -> list[int]:
        """Stable parent-before-child order; reports duplicates, unknown parents and cycles."""
        index: dict[str, int] = {}
        for i, body in enumerate(bodies):
            if isinstance(body.name, str):
                if body.name in index:
                    problems.append(f"body `{body.name}` is defined twice")
                index.setdefault(body.name, i)
        unknown = [b for b in bodies if isinstance(b.parent, str) and b.parent != GROUND and b.parent not in index]
        for body in unknown:
            problems.append(
                f"body `{body.name}`: unknown `parent` `{body.parent}`; expected `{GROUND}` or one of: "
                f"{', '.join(sorted(index)) or '(no bodies)'}"
            )
        if unknown or any(not isinstance(b.parent, str) for b in bodies):
            return list(range(len(bodies)))
        order, placed = [], set()
        while len(order) < len(bodies):
            progress = False
            for i, body in enumerate(bodies):
                if i not in placed and (body.parent == GROUND or index[body.parent] in placed):
                    order.append(i)
                    placed.add(i)
                    progress = True
            if not progress:
                cycle = sorted(bodies[i].name for i in range(len(bodies)) if i not in placed)
                problems.append(f"bodies {', '.join(f'`{n}`' for n in cycle)} form a cycle: none reaches `{GROUND}`")
                return list(range(len(bodies)))
        return order

    @staticmethod
    def _joint_variable_map(bodies: list[Body], coordinates: list[Coordinate], problems: list[str]) -> JointVariables:
        names = [c.name for c in coordinates]
        column = {name: k for k, name in enumerate(names)}
        symbols = symbol_set = None  # sympy symbols of the coordinates, made for the first sympy variable
        moving = [b for b in bodies if b.joint != tree_description.FIXED]
        matrix = np.zeros((len(moving), len(names)))
        constant = np.zeros(len(moving))
        symbolic_rows, symbolic_exprs = [], []
        function_rows, functions = [], []
        for row, body in enumerate(moving):
            variable = body.variable
            if variable is None:  # solved by a constraint group (mbkron.model.constraint_groups)
                continue
            if isinstance(variable, CoordinateFunction):
                function_rows.append(row)
                functions.append(variable)
                continue
            if isinstance(variable, str):
                variable = Linear({variable: 1.0})
            elif isinstance(variable, (int, float)):
                variable = Linear({}, float(variable))
            if is_sympy_expression(variable):
                if symbols is None:
                    symbols = [sympy.Symbol(n) for n in names]
                    symbol_set = set(symbols)
                expr = variable.xreplace({s: sympy.Symbol(s.name) for s in variable.free_symbols})
                linear = as_linear(expr, symbol_set)
                if linear is None:
                    symbolic_rows.append(row)
                    symbolic_exprs.append(expr)
                    continue
                variable = linear
            for name, coefficient in variable.coefficients.items():
                matrix[row, column[name]] += coefficient
            constant[row] = variable.constant
        providers = ()
        if symbolic_exprs:
            try:
                providers = ((np.array(symbolic_rows), SymbolicJointVariables(symbolic_exprs, symbols)),)
            except ExpressionError:  # find the variables whose derivatives cannot be evaluated
                for row, expr in zip(symbolic_rows, symbolic_exprs):
                    try:
                        SymbolicJointVariables([expr], symbols)
                    except ExpressionError as error:
                        problems.append(
                            f"body `{moving[row].name}`: `variable` {expr} cannot be used as a joint variable: its "
                            f"value, gradient and Hessian must be smooth functions that can be evaluated ({error})")
                return JointVariables(matrix, constant, ())
        if functions:
            providers += ((np.array(function_rows), CoordinateFunctionVariables.from_descriptions(functions, names)),)
        matrix.setflags(write=False)
        constant.setflags(write=False)
        return JointVariables(matrix, constant, providers)

    @staticmethod
    def _tree_and_inertias(gravity, coordinates, bodies) -> tuple[tree_description.KinematicTree, np.ndarray]:
        """The kinematic tree of the ordered ``bodies`` and their pseudo-inertias (Eq. 131), read-only, with the
        bodies' and ``gravity``'s arrays made read-only too (they belong to the model from now on)."""
        index = {b.name: i for i, b in enumerate(bodies)}
        parent = np.array([index[b.parent] if b.parent != GROUND else -1 for b in bodies], dtype=np.intp)
        joint_of_body = np.full(len(bodies), -1, dtype=np.intp)
        row = 0
        for i, b in enumerate(bodies):
            if b.joint != tree_description.FIXED:
                joint_of_body[i] = row
                row += 1
        tree = tree_description.KinematicTree.build(
            parent=parent,
            joint_types=tuple(b.joint for b in bodies),
            joint_of_body=joint_of_body,
            offsets=np.array([b.offset for b in bodies]).reshape(-1, 4, 4),
            translation_axes=np.array([b.translation_axis for b in bodies]).reshape(-1, 3),
            d=np.array([b.d for b in bodies]),
            rotation_axes=np.array([b.rotation_axis for b in bodies]).reshape(-1, 3),
            theta=np.array([b.theta for b in bodies]),
            nq=len(coordinates),
        )
        for b in bodies:
            for array in (b.rotation_axis, b.translation_axis, b.offset, b.com, b.inertia):
                array.setflags(write=False)
        gravity.setflags(write=False)
        with np.errstate(over="ignore", invalid="ignore"):
            inertias = dynamics.pseudo_inertia(
                np.array([b.mass for b in bodies]), np.array([b.com for b in bodies]).reshape(-1, 3),
                np.array([b.inertia for b in bodies]).reshape(-1, 3, 3),
            )
        overflowed = [b.name for b, J in zip(bodies, inertias) if not np.all(np.isfinite(J))]
        if overflowed:
            raise ModelError([f"body `{name}`: `mass`, `com` and `inertia` overflow its pseudo-inertia (Eq. 131); "
                              "use SI units of a sensible size" for name in overflowed])
        inertias.setflags(write=False)
        return tree, inertias
