"""Reading the tree of a model file: units, names, parameters, coordinates and bodies.

:class:`BodyReader` reads ``[units]``, ``[parameters]`` (evaluated in dependency order),
``[coordinates.NAME]`` and ``[bodies.NAME]`` (joint type and axis, offset, joint variable,
inertial parameters) into a :class:`~mbkron.model.builder.ModelBuilder`; angles are converted to
radians here, once.
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.core.lazy import LazyModule
from mbkron.multibody.records import GROUND
from mbkron.io.reader_values import Symbols, ValueReader, join, show
from mbkron.io.schema import ANGLE_UNITS, COORDINATE_UNITS, JOINTS, TIME, VELOCITY_SUFFIX
from mbkron.multibody import tree as tree_description
from mbkron.model.builder import ModelBuilder

__all__ = ["BodyReader"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")

_LONGEST_NAME = 1000  # characters of a coordinate's original name


class BodyReader(ValueReader):
    """Reads the units, names, parameters, coordinates and bodies of a model file."""

    # ------------------------------------------------------------------ units, names, parameters, coordinates
    def read_units(self, units: dict) -> None:
        self.keys(units, "units", [], ["angle", "length", "mass"])
        self.angle_unit = self.string(units.get("angle", "rad"), "units.angle", tuple(ANGLE_UNITS)) or "rad"
        self.string(units.get("length", "m"), "units.length", ("m",))
        self.string(units.get("mass", "kg"), "units.mass", ("kg",))

    def declare_names(self, coordinates: dict, parameters: dict) -> list[str]:
        """Check coordinate and parameter names (one namespace, with ``t`` and ``<coordinate>_dot``
        reserved for load expressions) and create their symbols; returns the valid coordinates."""
        taken: dict[str, str] = {TIME: "time in load expressions"}
        coordinate_names = []
        for name in coordinates:
            path = join("coordinates", name)
            if self.name(name, path, "coordinate"):
                if name in taken:
                    self.problem(path, f"the name `{name}` is reserved for {taken[name]}")
                    continue
                coordinate_names.append(name)
                taken[name] = path
        for name in coordinate_names:
            rate = name + VELOCITY_SUFFIX
            if rate in taken:
                self.problem(taken[rate], f"the name `{rate}` is reserved for the rate of coordinate `{name}` in load expressions")
            taken[rate] = f"the rate of coordinate `{name}`"
        for name in parameters:
            path = join("parameters", name)
            if self.name(name, path, "parameter"):
                if name in taken:
                    self.problem(path, f"the name `{name}` is already used by {taken[name]}; names must be unique")
                    continue
                taken[name] = path
                self.parameter_names[name] = None
                self.invalid_parameters.add(name)  # until evaluated
        self.symbols = Symbols(taken)
        return coordinate_names

    def read_parameters(self, parameters: dict) -> None:
        """Evaluate the parameters in dependency order (numbers, or expressions of other parameters).

        A depth-first walk of the dependencies with an explicit stack (a chain of thousands of
        parameters needs no recursion): each formula is parsed once, and each parameter is evaluated
        once, after the parameters it uses; a cycle is reported where the walk closes it.
        """
        pending = {name: parameters[name] for name in self.parameter_names}
        expressions: dict[str, sympy.Expr | None] = {}
        done: set[str] = set()
        in_cycles: set[str] = set()
        chain: list[str] = []  # the walk's current path of parameters ...
        position: dict[str, int] = {}  # ... and where each one is on it
        dependencies: list = []  # per parameter on the path: an iterator over the parameters it uses

        def enter(name: str) -> None:
            if name in done:
                return
            if name in position:
                cycle = chain[position[name]:]
                in_cycles.update(cycle)
                self.problem(join("parameters", name), f"parameters depend on each other in a cycle: {' → '.join(cycle + [name])}")
                return
            value, used = pending[name], ()
            if isinstance(value, str):
                expressions[name] = self.parse(value, join("parameters", name), pending)
                if expressions[name] is not None:
                    used = sorted(s.name for s in expressions[name].free_symbols)
            position[name] = len(chain)
            chain.append(name)
            dependencies.append(iter(used))

        def leave(name: str) -> None:
            value, path = pending[name], join("parameters", name)
            if isinstance(value, str):
                expr = expressions[name]
                result = self.constant(expr, path) if expr is not None and name not in in_cycles else None
            else:
                result = self.number(value, path)
            if result is not None:
                self.parameters[name] = result
                self.invalid_parameters.discard(name)
            done.add(name)
            del position[name]

        for root in pending:
            enter(root)
            while dependencies:
                dependency = next(dependencies[-1], None)
                if dependency is None:
                    dependencies.pop()
                    leave(chain.pop())
                else:
                    enter(dependency)

    def read_coordinates(self, coordinates: dict, names: list[str], builder: ModelBuilder) -> None:
        for name in names:
            path = join("coordinates", name)
            table = self.table(coordinates[name], path)
            if table is None:
                table = {}
            self.keys(table, path, [], ["name", "range", "default", "unit", "periodic"])
            original = self.original_name(table, path)
            unit = self.string(table.get("unit", "angle"), join(path, "unit"), tuple(COORDINATE_UNITS)) or "angle"
            scale = self.angle_scale if unit == "angle" else 1.0
            self.coordinate_units[name] = unit
            bounds = (-math.inf, math.inf)
            if "range" in table:
                value = table["range"]
                if isinstance(value, list) and len(value) == 2:
                    low, high = (self.number(v, join(join(path, "range"), k), scale=scale, infinite=True)
                                 for k, v in enumerate(value))
                    if low is not None and high is not None:
                        if low < high:
                            bounds = (low, high)
                        else:
                            self.problem(join(path, "range"), f"expected [low, high] with low < high, got {show(value)}")
                else:
                    self.problem(join(path, "range"), f"expected [low, high], got {show(value)}")
            default = self.number(table.get("default", 0.0), join(path, "default"), scale=scale)
            if default is not None and not bounds[0] <= default <= bounds[1]:
                self.problem(join(path, "default"), f"lies outside the coordinate's range {show(table.get('range'))}")
                default = None
            periodic = self.boolean(table.get("periodic", False), join(path, "periodic"))
            builder.add_coordinate(name, range=bounds, default=default if default is not None else min(max(0.0, bounds[0]), bounds[1]),
                                   unit=COORDINATE_UNITS[unit], periodic=bool(periodic), original_name=original)
        self.formula_names = dict.fromkeys([*self.coordinate_units, *self.parameter_names])
        self._coordinate_symbols = None  # made anew from these coordinates by the first formula

    def original_name(self, table: dict, path: str) -> str:
        """A coordinate's ``name``: its name in the file it was imported from (an OpenSim name that is not an
        identifier, e.g. ``"auxprfem-auxprrud_coord"``), kept by the model; ``""`` if absent or invalid."""
        if "name" not in table:
            return ""
        value = self.string(table["name"], join(path, "name"))
        if value is not None and (not value or not value.isprintable() or len(value) > _LONGEST_NAME):
            self.problem(join(path, "name"), f"expected a non-empty name of at most {_LONGEST_NAME} printable characters, "
                                             f"got {show(value)}")
            return ""
        return value or ""

    # ------------------------------------------------------------------ bodies
    def read_body(self, name: object, table: object, builder: ModelBuilder) -> None:
        path = join("bodies", name)
        table = self.table(table, path)
        if table is None:
            return
        common = ["parent", "joint", "offset", "mass", "com", "inertia", "joint_name"]
        joint = self.string(table.get("joint", tree_description.REVOLUTE), join(path, "joint"), JOINTS)
        variable = [] if name in self.solved else ["variable"]
        solved = {"variable": f"the joint variable of `{name}` is solved from [[constraints]]; remove `variable`"} \
            if name in self.solved else {}
        if joint == tree_description.REVOLUTE:
            self.keys(table, path, ["axis", *variable], common + ["d", "translation_axis"], {**solved,
                "theta": "a revolute joint's angle is its joint variable (`variable`); rotate the joint frame with `offset`",
                "rotation_axis": "give a revolute joint's rotation axis as `axis`"})
        elif joint == tree_description.PRISMATIC:
            self.keys(table, path, ["axis", *variable], common + ["theta", "rotation_axis"], {**solved,
                "d": "a prismatic joint's displacement is its joint variable (`variable`); move the joint frame with `offset`",
                "translation_axis": "give a prismatic joint's translation axis as `axis`"})
        elif joint == tree_description.FIXED:
            self.keys(table, path, [], common + ["d", "translation_axis", "theta", "rotation_axis"], {
                "axis": "a fixed joint has no axis; give its constant transform as `offset` (or d, theta)",
                "variable": "a fixed joint has no joint variable; remove `variable` or make the joint revolute or prismatic"})
        parent = self.string(table.get("parent", GROUND), join(path, "parent")) or GROUND
        kwargs: dict[str, object] = {"parent": parent, "joint": joint or tree_description.FIXED}
        if joint in (tree_description.REVOLUTE, tree_description.PRISMATIC):
            kwargs["axis"] = (self.direction(table["axis"], join(path, "axis")) if "axis" in table else None) or (0.0, 0.0, 1.0)
            if name not in self.solved:
                kwargs["variable"] = self.joint_variable(table.get("variable", 0.0), join(path, "variable"), joint)
        for key, scale in (("d", 1.0), ("theta", self.angle_scale)):
            if key in table:
                kwargs[key] = self.number(table[key], join(path, key), scale=scale) or 0.0
        for key in ("translation_axis", "rotation_axis"):
            if key in table:
                kwargs[key] = self.direction(table[key], join(path, key))
        if "offset" in table:
            kwargs["offset"] = self.offset(table["offset"], join(path, "offset"))
        kwargs["mass"] = self.number(table.get("mass", 0.0), join(path, "mass")) or 0.0
        kwargs["com"] = self.vector(table.get("com", [0.0, 0.0, 0.0]), join(path, "com")) or (0.0, 0.0, 0.0)
        if "inertia" in table:
            kwargs["inertia"] = self.inertia(table["inertia"], join(path, "inertia"))
        if "joint_name" in table:
            kwargs["joint_name"] = self.string(table["joint_name"], join(path, "joint_name")) or ""
        builder.add_body(name, **kwargs)

    def offset(self, value: object, path: str) -> np.ndarray | None:
        table = self.table(value, path)
        if table is None:
            return None
        self.keys(table, path, [], ["translation", "rotation", "matrix"])
        translation = self.vector(table.get("translation", [0.0, 0.0, 0.0]), join(path, "translation"))
        rotation = np.eye(3)
        if "rotation" in table and "matrix" in table:
            self.problem(path, "give the rotation once, as `rotation` (axis–angle sequence) or as `matrix`, not both")
        elif "matrix" in table:
            matrix = self.matrix(table["matrix"], join(path, "matrix"))
            if matrix is not None:
                rotation = np.array(matrix)
        elif "rotation" in table:
            rotation = self.rotation_sequence(table["rotation"], join(path, "rotation"))
        if translation is None or rotation is None:
            return None
        transform = np.eye(4)
        transform[:3, :3] = rotation
        transform[:3, 3] = translation
        return transform

    def rotation_sequence(self, value: object, path: str) -> np.ndarray | None:
        """``R = R_1 R_2 … R_n`` of ``[{axis, angle}, …]`` (each about the axes after the previous ones)."""
        if not isinstance(value, list):
            self.problem(path, f"expected an array of {{axis = [x, y, z], angle = a}} tables, got {show(value)}")
            return None
        rotation = np.eye(3)
        for k, step in enumerate(value):
            step_path = join(path, k)
            step = self.table(step, step_path)
            if step is None:
                rotation = None
                continue
            self.keys(step, step_path, ["axis", "angle"], [])
            axis = self.direction(step.get("axis"), join(step_path, "axis")) if "axis" in step else None
            angle = self.number(step.get("angle"), join(step_path, "angle"), scale=self.angle_scale) if "angle" in step else None
            if axis is None or angle is None:
                rotation = None
            elif rotation is not None:
                rotation = rotation @ tree_description.rotation_matrix(np.array(axis), angle)
        return rotation

    def inertia(self, value: object, path: str) -> list | None:
        if isinstance(value, list) and len(value) == 3 and all(isinstance(v, list) for v in value):
            return self.matrix(value, path)
        if isinstance(value, list) and len(value) == 3:
            return self.vector(value, path)
        self.problem(path, f"expected 3 principal moments [Ixx, Iyy, Izz] or a 3×3 matrix (kg·m², about the centre of mass), got {show(value)}")
        return None

    # ------------------------------------------------------------------ joint variables
    def joint_variable(self, value: object, path: str, joint: str) -> object:
        """A body's ``variable``: expression string, number or function table; 0.0 if invalid."""
        output_scale = self.angle_scale if joint == tree_description.REVOLUTE else 1.0
        if isinstance(value, str) and value in self.coordinate_units and (
                self.angle_unit == "rad" or (self.coordinate_units[value] != "angle" and joint != tree_description.REVOLUTE)):
            # a coordinate's name, no unit to convert: the name itself (the builder's own form, as from Python),
            # which is the parsed formula's value without parsing it (no sympy for an OpenSim model's joints)
            return value
        if isinstance(value, str):
            expr = self.coordinate_expression(value, path, output_angle=joint == tree_description.REVOLUTE)
            return expr if expr is not None else 0.0
        if isinstance(value, dict):
            return self.function_variable(value, path, output_scale)
        number = self.number(value, path, scale=output_scale)
        return number if number is not None else 0.0

