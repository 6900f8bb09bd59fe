"""Reading the ``[[constraints]]`` groups of a model file.

:class:`ConstraintReader` reads each group of joint variables solved from constraints: the
equations (expressions = 0 of the coordinates, parameters and joint variables, Eq. 100) or the loop
closures, the solver and its settings, and adds it to the
:class:`~mbkron.model.builder.ModelBuilder` (:meth:`~mbkron.model.builder.ModelBuilder.add_constraints`).
"""

from __future__ import annotations


from mbkron.core.lazy import LazyModule
from mbkron.expressions import ExpressionError, check_name
from mbkron.io.reader_values import ValueReader, join, show
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.algorithms.jointvars.loop_closures import LoopClosure
from mbkron.multibody import tree as tree_description
from mbkron.model.builder import ModelBuilder
from mbkron.model.constraint_groups import SOLVERS

__all__ = ["ConstraintReader"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
_parser = LazyModule("mbkron.expressions.parser")


class ConstraintReader(ValueReader):
    """Reads the ``[[constraints]]`` groups of a model file."""

    def declare_joint_names(self, bodies: dict) -> None:
        """Symbols for the moving bodies' joint variables, usable in constraint equations."""
        for name, table in bodies.items():
            if not isinstance(table, dict) or table.get("joint", tree_description.REVOLUTE) == tree_description.FIXED:
                continue
            try:
                check_name(name)
            except ExpressionError:
                continue  # not an identifier: it cannot appear in equations (unknown name if used)
            if name not in self.symbols:  # a coordinate or parameter of the same name wins (reported if solved)
                self.joint_symbols[name] = sympy.Symbol(name, real=True)

    def read_constraint_group(self, value: object, path: str, bodies: dict, builder: ModelBuilder) -> None:
        """One [[constraints]] group: joints solved from equations or loop closures."""
        table = self.table(value, path)
        if table is None:
            return
        self.keys(table, path, ["joints"], ["equations", "loops", "solver", "guess", "settings"])
        joints = table.get("joints")
        if not isinstance(joints, list) or not joints or not all(isinstance(j, str) for j in joints):
            self.problem(join(path, "joints"), f"expected an array of body names, got {show(joints)}")
            return
        revolute = {n for n, t in bodies.items() if isinstance(t, dict) and t.get("joint", tree_description.REVOLUTE) == tree_description.REVOLUTE}
        for k, name in enumerate(joints):
            if name in self.symbols and name not in self.joint_symbols:
                self.problem(join(join(path, "joints"), k),
                             f"the body name `{name}` is also a coordinate or parameter name; rename one of them")
        if ("equations" in table) == ("loops" in table):
            self.problem(path, "give the constraints as `equations` (expressions = 0) or as `loops` (loop closures), one of them")
            return
        if "equations" in table:
            system = self.constraint_equations(table["equations"], join(path, "equations"), revolute)
        else:
            system = self.loop_closures(table["loops"], join(path, "loops"))
        solver = self.string(table.get("solver", "lu"), join(path, "solver"), SOLVERS)
        guess = {}
        guesses = self.table(table.get("guess", {}), join(path, "guess")) or {}
        for name, number in guesses.items():
            scale = self.angle_scale if name in revolute else 1.0
            guess[name] = self.number(number, join(join(path, "guess"), name), scale=scale)
        settings = {}
        for name, setting in (self.table(table.get("settings", {}), join(path, "settings")) or {}).items():
            setting_path = join(join(path, "settings"), name)
            if isinstance(setting, bool):
                settings[name] = setting
            elif isinstance(setting, list):
                settings[name] = self.number_array(setting, setting_path)
            else:
                settings[name] = self.number(setting, setting_path)
        if all(v is not None for v in (system, solver, *guess.values(), *settings.values())):
            builder.add_constraints(joints, system, solver, guess=guess, **settings)
            kind = f"{system.size} equations" if isinstance(system, SymbolicConstraints) else f"{len(system)} loop closures"
            for joint in joints:
                self.solved_by[joint] = f"solved from {path} ({kind}, solver {solver})"

    def constraint_equations(self, value: object, path: str, revolute: set[str]) -> SymbolicConstraints | None:
        if not isinstance(value, list) or not value:
            self.problem(path, f"expected an array of expression strings (each = 0), got {show(value)}")
            return None
        names = self.formula_names
        symbols = {**{n: self.symbols[n] for n in names}, **self.joint_symbols}
        variables = {symbols[n] for n in self.coordinate_units} | set(self.joint_symbols.values())
        angles = self.angle_symbols() + [s for n, s in self.joint_symbols.items() if n in revolute]
        equations = []
        for k, text in enumerate(value):
            equation_path = join(path, k)
            if not isinstance(text, str):
                self.problem(equation_path, f"expected an expression string, got {show(text)}")
                continue
            try:
                expr = _parser.parse_expression(text, symbols)
            except ExpressionError as exc:
                self.problem(equation_path, f"invalid expression: {exc}")
                continue
            expr = self.fold_constants(expr, equation_path, variables)
            if expr is not None:
                equations.append(self.to_si(expr, angles, output_angle=False))
        return SymbolicConstraints(equations) if len(equations) == len(value) else None

    def loop_closures(self, value: object, path: str) -> list[LoopClosure] | None:
        if not isinstance(value, list) or not value:
            self.problem(path, f"expected an array of loop-closure tables, got {show(value)}")
            return None
        closures = []
        for k, item in enumerate(value):
            item_path = join(path, k)
            table = self.table(item, item_path)
            if table is None:
                continue
            self.keys(table, item_path, ["body_a", "point_a", "body_b", "point_b"],
                      ["plane", "orientation", "axis_a", "axis_b", "rotation"])
            fields = {key: self.string(table.get(key), join(item_path, key)) for key in ("body_a", "body_b")}
            fields.update({key: self.vector(table.get(key), join(item_path, key)) for key in ("point_a", "point_b")})
            plane = self.string(table.get("plane", "xy"), join(item_path, "plane"), ("xy", "yz", "xz", "space"))
            fields["plane"] = None if plane == "space" else plane
            fields["orientation"] = None
            if "orientation" in table:
                fields["orientation"] = self.string(table["orientation"], join(item_path, "orientation"), ("revolute", "fixed"))
            for key in ("axis_a", "axis_b"):
                if key in table:
                    fields[key] = self.direction(table[key], join(item_path, key))
            if "rotation" in table:
                rotation = table["rotation"]
                if isinstance(rotation, list) and rotation and all(isinstance(r, list) for r in rotation):
                    fields["rotation"] = self.matrix(rotation, join(item_path, "rotation"))
                else:
                    fields["rotation"] = self.rotation_sequence(rotation, join(item_path, "rotation"))
            required = [fields[key] for key in fields if key not in ("plane", "orientation")]
            if plane is not None and all(v is not None for v in required) and ("orientation" not in table or fields["orientation"]):
                closures.append(LoopClosure(**fields))
        return closures if len(closures) == len(value) else None
