"""Writing models as model files: :func:`dump_model`, and :func:`format_toml` for any document.

:func:`dump_model` writes a :class:`~mbkron.model.model.Model` back as model-file text (SI units,
radians) that loads into an equal model (:func:`mbkron.io.compare.model_differences` finds nothing).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from mbkron.core.lazy import LazyModule
from mbkron.multibody.hunt_crossley import MATERIAL
from mbkron.io.schema import (COORDINATE_UNITS, COORDINATE_VALUE, CURVE, FORMAT_VERSION, TRANSFORM, TRIPLE, WRAPS, HILL_FIELDS, LOAD_FIELDS, LOAD_TYPES,
                              NUMBER, PATH, PER_COORDINATE_VALUE, POINT, SCALAR, SURFACES, VECTOR, ExpressionValue, toml_string)
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.multibody.jointvars import CoordinateFunction, Linear
from mbkron.numerics.functions import AffineMapped, CubicSpline, FourierSeries, PiecewiseConstant, PiecewiseLinear
from mbkron.numerics.gcvspl import GCVSpline
from mbkron.multibody import tree as tree_description
from mbkron.model.model import Model
from mbkron.multibody.muscles.hill import CURVE_FIELDS, ThelenCurves
from mbkron.multibody.muscles.points import MovingPoint, point_condition
from mbkron.multibody.muscles.surfaces import kind_of
from mbkron.multibody.muscles.wrapping import shape_fields

__all__ = ["dump_model", "format_toml"]

# sympy (~0.2 s of CPU to import): imported by writing a model, not by reading one, which imports this module for
# InlineTable (mbkron.core.lazy)
sympy = LazyModule("sympy")
_format = LazyModule("mbkron.expressions.format")
_parser = LazyModule("mbkron.expressions.parser")

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, np.ndarray):
        return _toml_value(value.tolist())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


class InlineTable(dict):
    """A table that :func:`format_toml` writes inline (``key = { … }``), not as a ``[section]``."""


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def format_toml(document: Mapping[str, object]) -> str:
    """TOML text of a document of tables, arrays, strings, numbers and booleans.

    Tables become ``[section]`` headers (an :class:`InlineTable` an inline value), non-empty arrays of
    tables ``[[section]]`` headers, and everything inside arrays inline values; ``tomllib.loads(format_toml(d)) == d`` for such
    documents (floats are written with ``repr``, exactly; ``nan`` and ``inf`` as TOML's).

    Parameters
    ----------
    document : mapping
        Keys are strings.

    Returns
    -------
    str
    """
    lines: list[str] = []

    def emit(table: Mapping[str, object], path: list[str], header: str | None) -> None:
        is_nested = {k: (isinstance(v, Mapping) and not isinstance(v, InlineTable)) or _is_table_array(v)
                     for k, v in table.items()}
        scalars = [(k, v) for k, v in table.items() if not is_nested[k]]
        nested = [(k, v) for k, v in table.items() if is_nested[k]]
        if header is not None and (scalars or not nested):
            if lines:
                lines.append("")
            lines.append(header)
        for key, value in scalars:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        for key, value in nested:
            child = path + [_toml_key(key)]
            if isinstance(value, Mapping):
                emit(value, child, "[" + ".".join(child) + "]")
            else:
                for item in value:
                    lines.append("")
                    lines.append("[[" + ".".join(child) + "]]")
                    emit(item, child, None)

    emit(document, [], None)
    return "\n".join(lines) + "\n"


def _constraint_table(group, model: Model) -> dict:
    """A constraint group (:class:`mbkron.model.constraint_groups.ConstraintGroup`) as a ``[[constraints]]`` table."""
    entry: dict[str, object] = {"joints": list(group.joints), "solver": group.solver}
    system = group.constraints
    if isinstance(system, SymbolicConstraints):
        values = {name: sympy.Float(float(v)) for name, v in system.parameters.items()}
        names = set(values) | set(model.coordinates) | set(model.joints)
        equations = []
        for equation in system.equations:
            expr = _parser.parse_expression(equation, names) if isinstance(equation, str) else equation
            expr = expr.xreplace({s: values[s.name] for s in expr.free_symbols if s.name in values})
            equations.append(_format.format_expression(expr))
        entry["equations"] = equations
    else:
        loops = []
        for closure in getattr(system, "closures", system):
            loop: dict[str, object] = {"body_a": closure.body_a, "point_a": np.asarray(closure.point_a, float).tolist(),
                                       "body_b": closure.body_b, "point_b": np.asarray(closure.point_b, float).tolist(),
                                       "plane": closure.plane or "space"}
            if closure.orientation is not None:
                loop["orientation"] = closure.orientation
            for key in ("axis_a", "axis_b", "rotation"):
                if getattr(closure, key) is not None:
                    loop[key] = np.asarray(getattr(closure, key), float).tolist()
            loops.append(loop)
        entry["loops"] = loops
    if group.guess:
        entry["guess"] = {name: float(value) for name, value in group.guess.items()}
    if group.settings:
        entry["settings"] = {name: (value if isinstance(value, bool) else np.asarray(value, float).tolist())
                             for name, value in group.settings.items()}
    return entry


def _variable_text(variable: object, body: str) -> object:
    """A body's joint variable as a model-file value (SI units)."""
    if variable is None:
        raise ValueError(f"body `{body}`: its joint variable is solved from constraints, which a Model does not "
                         "record; such a model cannot be written to a model file yet")
    if isinstance(variable, str):
        return variable
    if isinstance(variable, (int, float)) and not isinstance(variable, bool):
        return float(variable)
    if isinstance(variable, Linear):
        expr = sympy.Float(float(variable.constant))
        for name, coefficient in variable.coefficients.items():
            expr += sympy.Float(float(coefficient)) * sympy.Symbol(name)
        return _format.format_expression(expr)
    if isinstance(variable, sympy.Expr):
        return _format.format_expression(variable)
    if isinstance(variable, CoordinateFunction):
        table = _function_table(variable)
        if table is not None:
            return table
    raise ValueError(f"body `{body}`: its joint variable ({type(variable).__name__}) cannot be written to a model file")


def _function_table(variable: CoordinateFunction) -> dict | None:
    """A tabulated or Fourier function of one coordinate as a model-file table; None for other kinds."""
    function = variable.function
    maps = {}
    if isinstance(function, AffineMapped):
        maps = {key: list(value) for key, value in (("argument", function.argument), ("value", function.value))}
        function = function.function
    if isinstance(function, (CubicSpline, PiecewiseLinear, PiecewiseConstant, GCVSpline)):
        gcv = {"half_order": function.half_order, "error_variance": function.error_variance} \
            if isinstance(function, GCVSpline) else {}
        return {"type": "tabulated", "coordinate": variable.coordinate, "kind": function.kind, **gcv, **maps,
                "x": function.x.tolist(), "y": function.y.tolist()}
    if isinstance(function, FourierSeries) and not maps:
        return {"type": "fourier", "coordinate": variable.coordinate, "period": function.period,
                "a0": function.a0, "a": function.a.tolist(), "b": function.b.tolist()}
    return None


def _point_term_text(term: object, where: str) -> object:
    """One term of a moving point's coordinate as a model-file value (m)."""
    if isinstance(term, CoordinateFunction):
        table = _function_table(term)
        if table is not None:
            return table
    elif isinstance(term, sympy.Expr):
        return _format.format_expression(term)
    elif isinstance(term, (int, float)) and not isinstance(term, bool):
        return float(term)
    raise ValueError(f"{where}: a {type(term).__name__} term cannot be written to a model file")


def _surface_table(surface: object) -> dict:
    """A wrapping surface as a ``[wraps.NAME]`` table (SI units, radians; :mod:`mbkron.io.reader_wraps`)."""
    table = {"kind": kind_of(surface), "body": surface.body, "translation": [float(x) for x in surface.translation],
             "rotation": [float(x) for x in surface.xyz_body_rotation], "quadrant": surface.quadrant,
             "active": surface.active}
    for key in shape_fields(type(surface)):
        value = getattr(surface, key)
        table[key] = [float(x) for x in value] if isinstance(value, (tuple, list)) else float(value)
    return table


def _muscle_table(path) -> dict:
    """A :class:`~mbkron.multibody.muscles.paths.MusclePath` as a ``[muscles.NAME]`` table (SI units, radians)."""
    where = f"muscle `{path.name}`"
    entry: dict[str, object] = {"model": "path" if path.hill is None else "hill"}
    if path.hill is not None:
        entry.update({key: float(getattr(path.hill, key)) for key, _ in HILL_FIELDS})
        curves = {key: float(getattr(path.hill.curves, key)) for key in CURVE_FIELDS
                  if getattr(path.hill.curves, key) != getattr(ThelenCurves(), key)}
        if curves:
            entry["curves"] = InlineTable(**curves)
    entry["path"] = _path_tables(path.points, where)
    if path.wraps:
        entry["wraps"] = _wrap_tables(path.wraps)
    return entry


def _wrap_tables(wraps) -> list:
    """A path's wraps as its ``wraps`` array (a muscle's, a path spring's, a ligament's)."""
    return [InlineTable(object=w.surface.name, range=list(w.range), method=w.method) for w in wraps]


def _path_tables(path_points, where: str) -> list[dict]:
    """The ``path`` array of tables of a muscle or path spring (SI units, radians)."""
    points = []
    for n, point in enumerate(path_points):
        if isinstance(point, MovingPoint):
            components = [[_point_term_text(t, f"{where}, point {n}") for t in terms] for terms in point.location]
            table = {"body": point.body, "point": [c[0] if len(c) == 1 else c for c in components],
                     "extrapolate": point.extrapolate}
        else:
            table = {"body": point[0], "point": np.asarray(point[1], dtype=float).tolist()}
        condition = point_condition(point)
        if condition is not None:  # the range in SI units, as the file's coordinates (radians)
            table["active"] = InlineTable(coordinate=condition.coordinate,
                                          range=[float(condition.lo), float(condition.hi)])
        points.append(table)
    return points


def surface_table(surface) -> dict:
    """A contact surface (:class:`~mbkron.multibody.hunt_crossley.ContactSurface`) as a ``[[loads.surfaces]]`` table."""
    table = {"shape": surface.shape, "body": surface.body, "location": np.asarray(surface.location, float).tolist()}
    if surface.shape == "sphere":
        table["radius"] = float(surface.radius)
    else:
        table["normal"] = np.asarray(surface.normal, float).tolist()
    return {**table, **{key: float(getattr(surface, key)) for key in MATERIAL}}


def _load_value_text(value: object, where: str) -> object:
    if isinstance(value, ExpressionValue):
        return value.texts()
    if callable(value):
        raise ValueError(f"{where} is a Python callable; only constants and model-file expressions can be written")
    array = np.asarray(value, dtype=float)
    return array.tolist() if array.ndim else float(array)


def dump_model(model: Model) -> str:
    """Model-file text describing ``model`` (SI units, angles in radians).

    ``parse_model_file(dump_model(model)).model`` equals ``model`` (see
    :func:`~mbkron.io.reader.parse_model_file`, :func:`~mbkron.io.compare.model_differences`).
    Parameters of the original file are not kept: every number is written out.

    Parameters
    ----------
    model : Model

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If the model holds something a model file cannot express: a Python callable as a load
        value, or a sympy joint variable using functions outside the expression grammar.
    """
    document: dict[str, object] = {
        "model": {"format_version": FORMAT_VERSION, "name": model.name, "gravity": model.gravity.tolist()},
        "units": {"angle": "rad", "length": "m", "mass": "kg"},
    }
    coordinates = {}
    for c in model.coordinate_records:
        entry: dict[str, object] = {"name": c.original_name} if c.original_name else {}
        if c.range != (-math.inf, math.inf):
            entry["range"] = [float(c.range[0]), float(c.range[1])]
        entry["default"] = float(c.default)
        entry["unit"] = {v: k for k, v in COORDINATE_UNITS.items()}[c.unit]
        entry["periodic"] = bool(c.periodic)
        coordinates[c.name] = entry
    if coordinates:
        document["coordinates"] = coordinates
    solved = {joint for group in model.constraint_groups for joint in group.joints}
    bodies = {}
    for b in model.body_records:
        entry = {"parent": b.parent, "joint": b.joint}
        if b.joint_name:
            entry["joint_name"] = b.joint_name
        if b.joint == tree_description.REVOLUTE:
            entry["axis"] = b.rotation_axis.tolist()
        elif b.joint == tree_description.PRISMATIC:
            entry["axis"] = b.translation_axis.tolist()
        if b.joint != tree_description.FIXED and b.name not in solved:
            entry["variable"] = _variable_text(b.variable, b.name)
        if b.joint != tree_description.PRISMATIC:
            entry["d"] = float(b.d)
            entry["translation_axis"] = b.translation_axis.tolist()
        if b.joint != tree_description.REVOLUTE:
            entry["theta"] = float(b.theta)
            entry["rotation_axis"] = b.rotation_axis.tolist()
        entry["mass"] = float(b.mass)
        entry["com"] = b.com.tolist()
        entry["inertia"] = b.inertia.tolist()
        entry["offset"] = {"translation": b.offset[:3, 3].tolist(), "matrix": b.offset[:3, :3].tolist()}
        bodies[b.name] = entry
    if bodies:
        document["bodies"] = bodies
    loads = []
    for index, load in enumerate(model.loads):
        kind = LOAD_TYPES[type(load)]
        _, required, optional = LOAD_FIELDS[kind]
        entry = {"type": kind}
        for key, field_kind in {**required, **optional}.items():
            value = getattr(load, key)
            if field_kind in (SCALAR, VECTOR):
                entry[key] = _load_value_text(value, f"load {index} ({type(load).__name__}) `{key}`")
            elif field_kind in (POINT, TRIPLE):
                entry[key] = np.asarray(value, dtype=float).tolist()
            elif field_kind == TRANSFORM:
                entry[key] = {"translation": value[:3, 3].tolist(), "matrix": value[:3, :3].tolist()}
            elif field_kind in (NUMBER, COORDINATE_VALUE, PER_COORDINATE_VALUE):
                entry[key] = float(value)
            elif field_kind == PATH:
                entry[key] = _path_tables(value, f"load {index} ({type(load).__name__})")
            elif field_kind == CURVE:
                entry[key] = {"kind": value.kind, "x": value.x.tolist(), "y": value.y.tolist()}
            elif field_kind == SURFACES:
                entry[key] = [surface_table(surface) for surface in value]
            elif field_kind == WRAPS:
                if not value:
                    continue
                entry[key] = _wrap_tables(value)
            else:
                entry[key] = value
        loads.append(entry)
    if model.constraint_groups:
        document["constraints"] = [_constraint_table(group, model) for group in model.constraint_groups]
    if loads:
        document["loads"] = loads
    surfaces = {}
    wrapped = [(f"muscle `{path.name}`", path.wraps) for path in (model.muscle_set.paths if model.muscle_set else ())]
    wrapped += [(f"load `{load.name}`", load.wraps) for load in model.loads if getattr(load, "wraps", ())]
    for where, wraps in wrapped:
        for wrap in wraps:
            if surfaces.setdefault(wrap.surface.name, wrap.surface) != wrap.surface:
                raise ValueError(f"{where}: two different wrap objects are named `{wrap.surface.name}`; a model file "
                                 "names each once")
    if surfaces:
        document["wraps"] = {name: _surface_table(surface) for name, surface in surfaces.items()}
    if model.muscle_set is not None:
        document["muscles"] = {path.name: _muscle_table(path) for path in model.muscle_set.paths}
    header = f"# mbkron model file (format version {FORMAT_VERSION}), written by mbkron.dump_model.\n" \
             "# SI units; angles in radians.\n\n"
    return header + format_toml(document)

