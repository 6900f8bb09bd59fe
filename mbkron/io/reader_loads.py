"""Reading the ``[[loads]]`` and ``[muscles.NAME]`` sections of a model file.

:class:`LoadReader` reads each applied load (constant values, or formulas of ``t``, the coordinates
and their rates that become :class:`~mbkron.io.schema.ExpressionValue` callables) and each muscle
(Hill parameters and the path points, fixed or moving, possibly conditional) into the
:class:`~mbkron.model.builder.ModelBuilder`.
"""

from __future__ import annotations


from mbkron.core.lazy import LazyModule
from mbkron.expressions import ExpressionError
from mbkron.io.formulas import evaluate_expression
from mbkron.io.reader_values import ValueReader, join, show, suggest
from mbkron.io.schema import (COORDINATE_VALUE, CURVE, FRAME, TRANSFORM, TRIPLE, WRAPS, HILL_FIELDS, HILL_REQUIRED, LOAD_FIELDS, MUSCLE_MODELS, NAME,
                              NUMBER, PATH, PER_COORDINATE_VALUE, POINT, SCALAR, SURFACES, TIME, VECTOR, VELOCITY_SUFFIX,
                              ExpressionValue)
from mbkron.multibody.hunt_crossley import MATERIAL, SURFACE_SHAPES, ContactSurface
from mbkron.numerics.functions import SPLINE_KINDS, tabulated_function
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.model.builder import ModelBuilder
from mbkron.multibody.muscles.hill import CURVE_FIELDS, HillParameters, ThelenCurves
from mbkron.multibody.muscles.conditions import PathPointCondition
from mbkron.multibody.muscles.points import MovingPoint

__all__ = ["LoadReader"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")


class LoadReader(ValueReader):
    """Reads the ``[[loads]]`` and ``[muscles.NAME]`` sections of a model file."""

    def read_load(self, value: object, path: str, builder: ModelBuilder) -> None:
        table = self.table(value, path)
        if table is None:
            return
        kind = self.string(table.get("type"), join(path, "type"), tuple(LOAD_FIELDS))
        if kind is None:
            return
        cls, required, optional = LOAD_FIELDS[kind]
        self.keys(table, path, ["type", *required], optional)
        arguments = {key: self.load_field(table[key], join(path, key), field_kind)
                     for key, field_kind in {**required, **optional}.items() if key in table}
        # numbers in the unit of the load's coordinate: radians per file angle unit for an angle
        scale = self.angle_scale if self.coordinate_units.get(arguments.get("coordinate")) == "angle" else 1.0
        for key, field_kind in {**required, **optional}.items():
            if arguments.get(key) is not None and field_kind in (COORDINATE_VALUE, PER_COORDINATE_VALUE):
                arguments[key] = arguments[key] * scale if field_kind == COORDINATE_VALUE else arguments[key] / scale
        if all(arguments.get(key) is not None for key in required) and all(v is not None for v in arguments.values()):
            builder.add_load(cls(**arguments))

    def load_field(self, value: object, path: str, kind: str) -> object:
        if kind == NAME:
            return self.string(value, path)
        if kind == FRAME:
            return self.string(value, path, ("ground", "body"))
        if kind in (POINT, TRIPLE):
            return self.vector(value, path)
        if kind == TRANSFORM:
            return self.offset(value, path)
        if kind in (NUMBER, COORDINATE_VALUE, PER_COORDINATE_VALUE):
            return self.number(value, path)
        if kind == PATH:
            return self.path_points(value, path)
        if kind == CURVE:
            return self.curve(value, path)
        if kind == SURFACES:
            return self.surfaces(value, path)
        if kind == WRAPS:
            return self.muscle_wraps(value, path)
        components = [value] if kind == SCALAR else value
        if kind == VECTOR and (not isinstance(value, list) or len(value) != 3):
            self.problem(path, f"expected an array of 3 numbers or expressions, got {show(value)}")
            return None
        names = [TIME, *self.coordinate_units, *(n + VELOCITY_SUFFIX for n in self.coordinate_units)]
        names = [n for n in names if n in self.symbols]
        variables = {self.symbols[n] for n in names}
        names = dict.fromkeys([*names, *self.parameter_names])
        expressions = [self.load_component(component, path if kind == SCALAR else join(path, k), names, variables)
                       for k, component in enumerate(components)]
        if None in expressions:
            return None
        if all(e.is_Number for e in expressions):
            numbers = [float(e) for e in expressions]
            return numbers[0] if kind == SCALAR else numbers
        shape = () if kind == SCALAR else (3,)
        return ExpressionValue(tuple(expressions), shape, tuple(self.coordinate_units))

    def curve(self, value: object, path: str) -> object:
        """A tabulated function of a dimensionless argument: ``{ x = [...], y = [...], kind = "fmm" }`` (≥ 2
        knots, ``x`` increasing; ``kind`` one of :data:`~mbkron.numerics.functions.SPLINE_KINDS`, default
        ``"fmm"``, OpenSim's ``SimmSpline``)."""
        table = self.table(value, path)
        if table is None:
            return None
        self.keys(table, path, ["x", "y"], ["kind"])
        kind = self.string(table.get("kind", "fmm"), join(path, "kind"), SPLINE_KINDS)
        x = self.number_array(table.get("x"), join(path, "x"), minimum=2) if "x" in table else None
        y = self.number_array(table.get("y"), join(path, "y"), minimum=2) if "y" in table else None
        if None in (kind, x, y):
            return None
        try:
            return tabulated_function(x, y, kind)
        except ValueError as exc:
            self.problem(path, str(exc))
            return None

    def surfaces(self, value: object, path: str) -> tuple | None:
        """Contact surfaces (``[[loads.surfaces]]``): ``shape`` (``"sphere"`` or ``"half_space"``), ``body``,
        ``location`` (m), a sphere's ``radius`` (m) or a half-space's outward unit ``normal``, and the material
        parameters (default 0)."""
        if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
            self.problem(path, f"expected an array of tables ([[{path}]] sections), got {show(value)}")
            return None
        read = []
        for k, table in enumerate(value):
            where = f"{path}[{k}]"
            shape = self.string(table.get("shape"), join(where, "shape"), SURFACE_SHAPES)
            extra = ["radius"] if shape == "sphere" else ["normal"] if shape == "half_space" else []
            self.keys(table, where, ["shape", "body", "location", *extra], MATERIAL)
            values = {"body": self.string(table["body"], join(where, "body")) if "body" in table else None,
                      "location": self.vector(table["location"], join(where, "location")) if "location" in table else None}
            for key in extra:
                values[key] = (self.number(table[key], join(where, key)) if key == "radius" else
                               self.vector(table[key], join(where, key))) if key in table else None
            values.update({key: self.number(table[key], join(where, key)) for key in MATERIAL if key in table})
            read.append(None if shape is None or None in values.values() else ContactSurface(shape, **values))
        return None if None in read else tuple(read)

    def load_component(self, value: object, path: str, names: dict[str, None], variables: set[sympy.Symbol]) -> sympy.Expr | None:
        """One component of a load value: a number, or a formula of t, q, q̇ and parameters (SI result)."""
        if not isinstance(value, str):
            number = self.number(value, path)
            return None if number is None else sympy.Float(number)
        expr = self.parse(value, path, names)
        expr = None if expr is None else self.fold_constants(expr, path, variables)
        if expr is None:
            return None
        try:  # every operation must be one evaluate_expression knows (sympy may rewrite what was parsed)
            evaluate_expression(expr, {symbol.name: 0.0 for symbol in variables})
        except ExpressionError as exc:
            self.problem(path, str(exc))
            return None
        return self.to_si(expr, self.angle_symbols(rates=True), output_angle=False)
    # ------------------------------------------------------------------ muscles
    def read_muscle(self, name: str, value: object, builder: ModelBuilder) -> None:
        """One ``[muscles.NAME]`` section: Hill parameters and the path (``[[muscles.NAME.path]]``)."""
        path = join("muscles", name)
        table = self.table(value, path)
        if table is None:
            return
        kind = self.string(table.get("model", "hill"), join(path, "model"), MUSCLE_MODELS)
        hill_keys = {key for key, _ in HILL_FIELDS}
        if kind == "path":
            self.keys(table, path, ["path"], ["model", "wraps"], {key: "a muscle of model \"path\" has no Hill parameters"
                                                                   for key in hill_keys})
        else:
            self.keys(table, path, ["path", *HILL_REQUIRED], ["model", "wraps", "curves", *(hill_keys - set(HILL_REQUIRED))])
        hill = None
        if kind == "hill":
            values = {key: self.number(table[key], join(path, key), scale=self.angle_scale if angle else 1.0)
                      for key, angle in HILL_FIELDS if key in table}
            curves = self.thelen_curves(table["curves"], join(path, "curves")) if "curves" in table else ThelenCurves()
            if all(key in values for key in HILL_REQUIRED) and None not in values.values() and curves is not None:
                hill = HillParameters(**values, curves=curves)
        read = self.path_points(table.get("path", []), join(path, "path"))
        wraps = self.muscle_wraps(table["wraps"], join(path, "wraps")) if "wraps" in table else ()
        if read is not None and kind is not None and wraps is not None:
            builder.add_muscle(name, read, hill=hill, wraps=wraps)

    def thelen_curves(self, value: object, path: str) -> ThelenCurves | None:
        """A muscle's ``curves`` table: Thelen (2003) curve constants other than the defaults (SI units)."""
        table = self.table(value, path)
        if table is None:
            return None
        self.keys(table, path, [], CURVE_FIELDS)
        values = {key: self.number(table[key], join(path, key)) for key in CURVE_FIELDS if key in table}
        return None if None in values.values() else ThelenCurves(**values)

    def path_points(self, points: object, path: str) -> tuple | None:
        """The points of a muscle's or a path spring's ``path`` (an array of tables), or None after a problem."""
        if not isinstance(points, list) or not all(isinstance(point, dict) for point in points):
            self.problem(path, f"expected an array of tables ([[{path}]] sections), got {show(points)}")
            return None
        read = [self.path_point(point, f"{path}[{index}]") for index, point in enumerate(points)]
        return None if None in read else tuple(read)

    def path_point(self, table: dict, path: str) -> object:
        """One path point: ``(body, (x, y, z))``, or a :class:`MovingPoint` if a component varies;
        ``(body, (x, y, z), condition)`` or a moving point with ``active`` if it has ``active``."""
        self.keys(table, path, ["body", "point"], ["extrapolate", "active"])
        body = self.string(table.get("body"), join(path, "body")) if "body" in table else None
        extrapolate = self.boolean(table.get("extrapolate", False), join(path, "extrapolate"))
        condition = self.point_condition(table["active"], join(path, "active")) if "active" in table else None
        value = table.get("point")
        if not isinstance(value, list) or len(value) != 3:
            if "point" in table:
                self.problem(join(path, "point"), f"expected an array of 3 components (numbers, formulas of the "
                                                   f"coordinates, function tables, or arrays of these), got {show(value)}")
            return None
        components = [self.point_component(c, join(join(path, "point"), k)) for k, c in enumerate(value)]
        if body is None or extrapolate is None or None in components or ("active" in table and condition is None):
            return None
        if all(isinstance(c, float) for c in components):
            if extrapolate:
                self.problem(join(path, "extrapolate"), "only a moving point (one with a varying component) extrapolates")
            return (body, tuple(components)) if condition is None else (body, tuple(components), condition)
        return MovingPoint(body, components, extrapolate=extrapolate, active=condition)

    def point_condition(self, value: object, path: str) -> PathPointCondition | None:
        """``active = { coordinate, range = [lo, hi] }`` (the range in the coordinate's file unit, closed)."""
        table = self.table(value, path)
        if table is None:
            return None
        self.keys(table, path, ["coordinate", "range"], [])
        coordinate = table.get("coordinate")
        if "coordinate" in table and (not isinstance(coordinate, str) or coordinate not in self.coordinate_units):
            known = ", ".join(self.coordinate_units) or "(none)"
            hint = suggest(coordinate, self.coordinate_units) if isinstance(coordinate, str) else ""
            self.problem(join(path, "coordinate"), f"expected the name of a coordinate ({known}), got {show(coordinate)}{hint}")
            return None
        bounds = table.get("range")
        if "range" in table and (not isinstance(bounds, list) or len(bounds) != 2):
            self.problem(join(path, "range"), f"expected an array of 2 numbers [lo, hi] in the coordinate's unit, "
                                              f"got {show(bounds)}")
            return None
        if "coordinate" not in table or "range" not in table:
            return None
        scale = self.angle_scale if self.coordinate_units[coordinate] == "angle" else 1.0
        bounds = self.number_array(bounds, join(path, "range"), scale=scale)
        return None if bounds is None else PathPointCondition(coordinate, *bounds)

    def point_component(self, value: object, path: str, *, nested: bool = False) -> object:
        """A path point's coordinate (m): a number, a formula of coordinates and parameters, a
        tabulated or Fourier function table, or (not nested) an array of these, summed."""
        if isinstance(value, list) and not nested:
            if not value:
                self.problem(path, "expected a non-empty array of terms (they are summed)")
                return None
            terms = [self.point_component(v, join(path, k), nested=True) for k, v in enumerate(value)]
            return None if None in terms else terms
        if isinstance(value, dict):
            function = self.function_variable(value, path, 1.0)
            return function if isinstance(function, CoordinateFunction) else None
        if isinstance(value, str):
            expr = self.coordinate_expression(value, path, output_angle=False)
            if expr is None:
                return None
            return float(expr) if expr.is_Number else expr
        return self.number(value, path)
