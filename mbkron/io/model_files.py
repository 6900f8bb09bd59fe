"""Model definition files: read, validate, write and compare.

A model file is TOML (read with the standard library's :mod:`tomllib`) describing the units,
parameters, generalized coordinates, bodies, joint variables, loads and muscles of a model; the format is
documented with an annotated example in ``docs/model-format.md``.

- :func:`load_model` / :func:`read_model_file` / :func:`parse_model_file` read a file (or text)
  into a :class:`~mbkron.model.model.Model`. Validation collects every problem of the file into one
  :class:`~mbkron.core.errors.ModelError` whose lines name the table path (``bodies.forearm.inertia``)
  and what was expected. Angles are converted to radians once, here.
- Formulas in the file are parsed by :func:`mbkron.expressions.parser.parse_expression`, a whitelist
  parser; nothing in a file is ever given to ``eval``, ``exec``, ``compile`` or ``sympy.sympify``.
  Numbers computed from parameters are evaluated by this module in double precision
  (:func:`evaluate_expression`), never by sympy's arbitrary-precision arithmetic, so no formula can
  make loading hang.
- :func:`dump_model` writes a model back as model-file text (SI units, radians) that loads into an
  equal model; :func:`model_differences` / :func:`models_equal` compare two models (structure,
  parameters, and joint variables and loads numerically at random states).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy

from mbkron.kinematics import tree as kinematics
from mbkron.model.builder import ModelBuilder
from mbkron.model.constraint_groups import SOLVERS
from mbkron.jointvars.constraints import SymbolicConstraints
from mbkron.jointvars.loop_closures import LoopClosure
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.expressions import ExpressionError, check_grammar, check_name, codegen, format_expression, parse_expression
from mbkron.jointvars.functions import SPLINE_KINDS, CoordinateFunction, CubicSpline, FourierSeries, PiecewiseLinear, tabulated_function
from mbkron.jointvars.explicit import Linear
from mbkron.dynamics.loads import BodyTorque, GeneralizedForce, JointTorque, LineForce, PointForce, SpringDamper, evaluate_value
from mbkron.core.description import GROUND
from mbkron.model.model import Model
from mbkron.muscles.hill import HillParameters, ThelenCurves
from mbkron.muscles.points import MovingPoint

__all__ = [
    "FORMAT_VERSION",
    "ExpressionValue",
    "ModelFile",
    "dump_model",
    "evaluate_expression",
    "format_toml",
    "load_model",
    "model_differences",
    "models_equal",
    "parse_model_file",
    "read_model_file",
]

#: The version of the model-file format this module reads and writes (``[model] format_version``).
FORMAT_VERSION = 1
#: Radians per unit of each accepted ``[units] angle``.
ANGLE_UNITS = {"rad": 1.0, "deg": math.pi / 180.0}
_EXACT_ANGLE_SCALE = {"rad": sympy.S.One, "deg": sympy.pi / 180}
#: Coordinate units in files and in :class:`~mbkron.model.model.Coordinate`.
_COORDINATE_UNITS = {"angle": "rad", "m": "m", "1": "1"}
_TIME = "t"
_VELOCITY_SUFFIX = "_dot"
_SECTIONS = ("model", "units", "parameters", "coordinates", "bodies", "loads", "constraints", "muscles")
_JOINTS = (kinematics.REVOLUTE, kinematics.PRISMATIC, kinematics.FIXED)
_SHOW_WIDTH = 60
_MUSCLE_MODELS = ("hill", "path")
#: Hill parameters in a ``[muscles.NAME]`` section: (key, is an angle), in HillParameters' order.
_HILL_FIELDS = (("max_isometric_force", False), ("optimal_fiber_length", False), ("tendon_slack_length", False),
                ("pennation_angle", True), ("max_contraction_velocity", False))
_HILL_REQUIRED = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length")

# Fields of each [[loads]] type: (required, optional) -> kind of value.
_POINT, _SCALAR, _VECTOR, _NAME, _FRAME, _NUMBER = "point", "scalar", "vector", "name", "frame", "number"
_LOAD_FIELDS: dict[str, tuple[type, dict[str, str], dict[str, str]]] = {
    "point_force": (PointForce, {"body": _NAME, "point": _POINT, "force": _VECTOR}, {"frame": _FRAME}),
    "body_torque": (BodyTorque, {"body": _NAME, "torque": _VECTOR}, {"frame": _FRAME}),
    "joint_torque": (JointTorque, {"joint": _NAME, "torque": _SCALAR}, {}),
    "generalized_force": (GeneralizedForce, {"coordinate": _NAME, "value": _SCALAR}, {}),
    "spring_damper": (
        SpringDamper,
        {"body_a": _NAME, "point_a": _POINT, "body_b": _NAME, "point_b": _POINT, "stiffness": _NUMBER},
        {"damping": _NUMBER, "free_length": _NUMBER},
    ),
    "line_force": (
        LineForce,
        {"body_a": _NAME, "point_a": _POINT, "body_b": _NAME, "point_b": _POINT, "tension": _SCALAR},
        {},
    ),
}
_LOAD_TYPES = {cls: name for name, (cls, _, _) in _LOAD_FIELDS.items()}


# ====================================================================== numeric evaluation
def evaluate_expression(expr: sympy.Expr, values: Mapping[str, object]) -> np.ndarray:
    """Evaluate an expression of the whitelist grammar in double precision, elementwise.

    The expression is compiled once (cached) into numpy code by :mod:`mbkron.expressions.codegen`,
    which prints every number as a double literal, so no arbitrary-precision arithmetic happens and
    the cost is that of printing the expression once, then of numpy operations. Results may be
    ``inf`` or ``nan`` (e.g. ``exp(1000)``, ``log(-1)``); callers check.

    Parameters
    ----------
    expr : sympy.Expr
        An expression built by :func:`mbkron.expressions.parser.parse_expression` (or derived from one
        by substitution), using only the grammar's operations and functions.
    values : mapping of str to float or ndarray
        A value for every free symbol, by name; arrays broadcast.

    Returns
    -------
    ndarray
        The value (a 0-d array for scalar inputs).

    Raises
    ------
    KeyError
        If a symbol has no value.
    ExpressionError
        If the expression contains an operation outside the grammar.
    """
    names = tuple(sorted(symbol.name for symbol in expr.free_symbols))
    arguments = [np.asarray(values[name], dtype=float) for name in names]
    with np.errstate(all="ignore"):
        return np.asarray(_grammar_function(expr, names)(*arguments)[0], dtype=float)


@functools.lru_cache(maxsize=1024)
def _grammar_function(expr: sympy.Expr, names: tuple[str, ...]) -> Callable:
    """The numpy function of ``expr`` with the arguments ``names`` (its free symbols' names)."""
    check_grammar(expr)
    symbols = sorted(expr.free_symbols, key=lambda symbol: symbol.name)
    return codegen.numpy_function(symbols, [expr], name="expression")


def _is_normal_double(value: float) -> bool:
    return value == 0.0 or (math.isfinite(value) and abs(value) >= 2.2250738585072014e-308)


# ====================================================================== load values
@dataclass(frozen=True, eq=False)
class ExpressionValue:
    """A load value given in a model file as formulas of time, coordinates and their rates.

    Called as ``value(t, q, qd)`` like any callable load value (:mod:`mbkron.dynamics.loads`); evaluated by
    :func:`evaluate_expression` in double precision. The expressions are in SI units (the loader
    has converted angles): symbols are ``t`` (s), the coordinate names and ``<coordinate>_dot``.

    Attributes
    ----------
    expressions : tuple of sympy.Expr
        One per component (a scalar value has one and ``shape == ()``).
    shape : tuple of int
        ``()`` or ``(3,)``.
    coordinates : tuple of str
        Coordinate names in the order of ``q``.
    """

    expressions: tuple[sympy.Expr, ...]
    shape: tuple[int, ...]
    coordinates: tuple[str, ...]

    def __call__(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        values: dict[str, object] = {_TIME: t}
        for k, name in enumerate(self.coordinates):
            values[name] = q[..., k]
            values[name + _VELOCITY_SUFFIX] = qd[..., k]
        components = np.broadcast_arrays(*(evaluate_expression(e, values) for e in self.expressions),
                                         np.empty(q.shape[:-1]))[:-1]
        if self.shape == ():
            return np.array(components[0])
        return np.stack(components, axis=-1)

    def texts(self) -> list[str] | str:
        """The expressions as text of the model-file grammar (a list for a vector value)."""
        texts = [format_expression(e) for e in self.expressions]
        return texts[0] if self.shape == () else texts


# ====================================================================== reading
@dataclass(frozen=True)
class ModelFile:
    """A model read from a model file, with what the file said beyond the model itself.

    Attributes
    ----------
    model : Model
    source : str
        The file path (or the name given to :func:`parse_model_file`).
    angle_unit : {"rad", "deg"}
        The file's ``[units] angle``: the unit of angles people read and write for this model.
    parameters : dict of str to float
        The named parameters, evaluated.
    description : str
        ``[model] description``.
    sha256 : str
        SHA-256 of the file's bytes (hex).
    solved : dict of str to str
        For each joint variable solved from constraints, a description of its ``[[constraints]]``
        group (the model itself does not record the groups).
    """

    model: Model
    source: str
    angle_unit: str
    parameters: dict[str, float] = field(default_factory=dict)
    description: str = ""
    sha256: str = ""
    solved: dict[str, str] = field(default_factory=dict)

    @property
    def angle_scale(self) -> float:
        """Radians per unit of :attr:`angle_unit`."""
        return ANGLE_UNITS[self.angle_unit]

    def coordinate_scale(self, name: str) -> float:
        """SI units per file unit of coordinate ``name`` (the angle scale for angles, else 1)."""
        return self.angle_scale if self.model.coordinate(name).unit == "rad" else 1.0


def load_model(path: str | Path) -> Model:
    """Read a model definition file (TOML, see ``docs/model-format.md``).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Listing every problem in the file (with the file name and table paths), or why the file
        cannot be read.

    Examples
    --------
    >>> import mbkron
    >>> model = mbkron.load_model("models/two_link_arm.toml")   # doctest: +SKIP
    >>> model.coordinates                                        # doctest: +SKIP
    ('alpha1', 'alpha2')
    """
    return read_model_file(path).model


def read_model_file(path: str | Path) -> ModelFile:
    """Read a model definition file; like :func:`load_model` but returns the :class:`ModelFile`."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ModelError([f"cannot read the file: {exc.strerror or exc}"], source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError([f"the file is not UTF-8 text (byte {exc.start})"], source) from None
    return parse_model_file(text, source, sha256=hashlib.sha256(data).hexdigest())


def parse_model_file(text: str, source: str = "<string>", *, sha256: str | None = None) -> ModelFile:
    """Parse model-file text.

    Parameters
    ----------
    text : str
        TOML text.
    source : str
        Name used in error messages (a file name).
    sha256 : str, optional
        Hash recorded in the result (by default the SHA-256 of ``text`` encoded as UTF-8).

    Returns
    -------
    ModelFile

    Raises
    ------
    ModelError
        Listing every problem found.
    """
    if not isinstance(text, str):
        raise TypeError(f"model-file text must be a string, got {type(text).__name__}")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError([f"not valid TOML: {exc}"], source) from None
    except RecursionError:
        raise ModelError(["not valid TOML here: arrays or tables are nested too deeply"], source) from None
    if sha256 is None:
        sha256 = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _ModelReader(source).read(document, sha256)


def _show(value: object) -> str:
    """A short description of a value from a file, for a message (never a huge or deep repr)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value.bit_length() > 64:
            return f"an integer of {len(str(abs(value))) if value.bit_length() < 10_000 else 'thousands of'} digits"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in value[: _SHOW_WIDTH + 1])
        return repr(text[:_SHOW_WIDTH] + "…") if len(value) > _SHOW_WIDTH else repr(text)
    if isinstance(value, list):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and len(value) <= 9:
            return "[" + ", ".join(_show(v) for v in value) + "]"
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        keys = ", ".join(_show_key(k) for k in list(value)[:6])
        more = ", …" if len(value) > 6 else ""
        return f"a table with keys ({keys}{more})" if value else "an empty table"
    return f"a {type(value).__name__}"


def _show_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key[:_SHOW_WIDTH])


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{_show_key(key)}" if path else _show_key(key)


def _suggest(name: str, choices: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean `{match[0]}`?" if match else ""


class _ModelReader:
    """Reads one parsed TOML document, collecting problems; see :func:`parse_model_file`."""

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []
        self.parameters: dict[str, float] = {}
        self.invalid_parameters: set[str] = set()
        self.parameter_names: list[str] = []  # declared with a valid, unique name, in file order
        self.symbols: dict[str, sympy.Symbol] = {}
        self.angle_unit = "rad"
        self.coordinate_units: dict[str, str] = {}
        self.solved: set[str] = set()  # bodies whose joint variables are solved from constraints
        self.solved_by: dict[str, str] = {}  # solved joint -> description of its group
        self.joint_symbols: dict[str, sympy.Symbol] = {}  # moving bodies usable in constraint equations

    # ------------------------------------------------------------------ problems and types
    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def table(self, value: object, path: str) -> dict | None:
        if isinstance(value, dict):
            return value
        self.problem(path, f"expected a table, got {_show(value)}")
        return None

    def keys(self, table: dict, path: str, required: Iterable[str], optional: Iterable[str],
             misplaced: Mapping[str, str] | None = None) -> None:
        """Report missing required keys and unknown keys of ``table`` (``misplaced``: key -> explanation)."""
        required, optional, misplaced = list(required), list(optional), misplaced or {}
        for key in required:
            if key not in table:
                self.problem(path, f"`{key}` is required")
        allowed = required + optional
        for key in table:
            if key in misplaced:
                self.problem(_join(path, key), misplaced[key])
            elif key not in allowed:
                self.problem(_join(path, key), f"unknown key; expected one of: {', '.join(allowed)}"
                                               f"{_suggest(key, allowed + list(misplaced))}")

    def string(self, value: object, path: str, choices: Sequence[str] | None = None) -> str | None:
        if not isinstance(value, str):
            expected = f"one of: {', '.join(repr(c) for c in choices)}" if choices else "a string"
            self.problem(path, f"expected {expected}, got {_show(value)}")
            return None
        if choices is not None and value not in choices:
            self.problem(path, f"expected one of: {', '.join(repr(c) for c in choices)}, got {_show(value)}{_suggest(value, choices)}")
            return None
        return value

    def boolean(self, value: object, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.problem(path, f"expected true or false, got {_show(value)}")
            return None
        return value

    def name(self, value: object, path: str, what: str) -> str | None:
        """A name used in expressions (coordinates, parameters)."""
        try:
            check_name(value)
        except TypeError:
            self.problem(path, f"a {what} name must be a string, got {_show(value)}")
            return None
        except ExpressionError as exc:
            self.problem(path, f"invalid {what} name: {exc}")
            return None
        return value

    def parse(self, text: str, path: str, names: Iterable[str]) -> sympy.Expr | None:
        try:
            return parse_expression(text, {n: self.symbols[n] for n in names})
        except ExpressionError as exc:
            self.problem(path, f"invalid expression: {exc}")
            return None

    def number(self, value: object, path: str, *, scale: float = 1.0, infinite: bool = False) -> float | None:
        """A number, or a string expression of the parameters; multiplied by ``scale``."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.problem(path, f"expected a number (or an expression of the parameters), got {_show(value)}")
            return None
        if isinstance(value, str):
            expr = self.parse(value, path, self.parameter_names)
            if expr is None:
                return None
            result = self.constant(expr, path)
        elif isinstance(value, int):
            try:
                result = float(value)
            except OverflowError:
                self.problem(path, f"the number {_show(value)} is too large for double precision")
                return None
        else:
            result = value
        if result is None:
            return None
        if math.isnan(result) or (math.isinf(result) and not infinite):
            self.problem(path, f"expected a finite number, got {result!r}")
            return None
        result *= scale
        if math.isnan(result) or (math.isinf(result) and not infinite):
            self.problem(path, "the value overflows after unit conversion")
            return None
        return result

    def constant(self, expr: sympy.Expr, path: str, what: str = "the expression") -> float | None:
        """The value of a parameter-only expression; None (reported) if not finite."""
        bad = sorted(n.name for n in expr.free_symbols if n.name in self.invalid_parameters)
        if bad:
            self.problem(path, f"uses the invalid parameter(s) {', '.join(bad)} (see their own messages)")
            return None
        try:
            value = float(evaluate_expression(expr, self.parameters))
        except ExpressionError as exc:
            self.problem(path, str(exc))
            return None
        if not math.isfinite(value):
            self.problem(path, f"{what} evaluates to {value!r}; expected a finite number")
            return None
        return value

    def vector(self, value: object, path: str) -> list[float] | None:
        if not isinstance(value, list) or len(value) != 3:
            self.problem(path, f"expected an array of 3 numbers, got {_show(value)}")
            return None
        numbers = [self.number(v, _join(path, k)) for k, v in enumerate(value)]
        return None if any(n is None for n in numbers) else numbers

    def direction(self, value: object, path: str) -> list[float] | None:
        """A non-zero 3-vector, returned normalised (robustly: no overflow for huge components)."""
        vector = self.vector(value, path)
        if vector is None:
            return None
        norm = math.hypot(*vector)
        if not (math.isfinite(norm) and norm > 1e-12):
            self.problem(path, f"expected a non-zero direction (it is normalised), got {_show(value)}")
            return None
        return [v / norm for v in vector]

    def matrix(self, value: object, path: str) -> list[list[float]] | None:
        if not isinstance(value, list) or len(value) != 3:
            self.problem(path, f"expected a 3×3 array (3 rows of 3 numbers), got {_show(value)}")
            return None
        rows = [self.vector(row, _join(path, k)) for k, row in enumerate(value)]
        return None if any(r is None for r in rows) else rows

    def number_array(self, value: object, path: str, *, scale: float = 1.0, minimum: int = 0) -> list[float] | None:
        if not isinstance(value, list) or len(value) < minimum:
            at_least = f"at least {minimum} " if minimum else ""
            self.problem(path, f"expected an array of {at_least}numbers, got {_show(value)}")
            return None
        numbers = [self.number(v, _join(path, k), scale=scale) for k, v in enumerate(value)]
        return None if any(n is None for n in numbers) else numbers

    # ------------------------------------------------------------------ the document
    def read(self, document: dict, sha256: str) -> ModelFile:
        for key in document:
            if key not in _SECTIONS:
                self.problem(_show_key(key), f"unknown section; expected one of: {', '.join(_SECTIONS)}{_suggest(key, _SECTIONS)}")
        model_table = self.table(document.get("model", {}), "model") or {}
        units = self.table(document.get("units", {}), "units") or {}
        self.read_units(units)
        self.keys(model_table, "model", [], ["format_version", "name", "description", "gravity"])
        version = model_table.get("format_version", FORMAT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int) or version != FORMAT_VERSION:
            self.problem("model.format_version", f"this mbkron reads format version {FORMAT_VERSION}, got {_show(version)}")
        default_name = "model" if self.source.startswith("<") else Path(self.source).stem
        name = self.string(model_table.get("name", default_name), "model.name") or "model"
        description = self.string(model_table.get("description", ""), "model.description") or ""
        coordinates = self.table(document.get("coordinates", {}), "coordinates") or {}
        parameters = self.table(document.get("parameters", {}), "parameters") or {}
        coordinate_names = self.declare_names(coordinates, parameters)
        self.read_parameters(parameters)
        gravity = self.vector(model_table.get("gravity", [0.0, -9.81, 0.0]), "model.gravity") or [0.0, -9.81, 0.0]
        builder = ModelBuilder(name=name, gravity=gravity)
        self.read_coordinates(coordinates, coordinate_names, builder)
        bodies = self.table(document.get("bodies", {}), "bodies") or {}
        groups = document.get("constraints", [])
        if not isinstance(groups, list):
            self.problem("constraints", f"expected an array of tables ([[constraints]] sections), got {_show(groups)}")
            groups = []
        self.solved = {j for g in groups if isinstance(g, dict) and isinstance(g.get("joints"), list)
                       for j in g["joints"] if isinstance(j, str)}
        for body, table in bodies.items():
            self.read_body(body, table, builder)
        self.declare_joint_names(bodies)
        for index, group in enumerate(groups):
            self.read_constraint_group(group, f"constraints[{index}]", bodies, builder)
        loads = document.get("loads", [])
        if not isinstance(loads, list):
            self.problem("loads", f"expected an array of tables ([[loads]] sections), got {_show(loads)}")
            loads = []
        for index, load in enumerate(loads):
            self.read_load(load, f"loads[{index}]", builder)
        muscles = self.table(document.get("muscles", {}), "muscles") or {}
        for muscle, table in muscles.items():
            self.read_muscle(muscle, table, builder)
        model = None
        try:
            model = builder.build()
        except ModelError as exc:
            self.problems.extend(exc.problems)
        except RecursionError:
            self.problem("", "an expression is nested too deeply to be differentiated")
        if self.problems:
            raise ModelError(self.problems, self.source)
        ordered = {name: self.parameters[name] for name in parameters if name in self.parameters}
        return ModelFile(model, self.source, self.angle_unit, ordered, description, sha256, self.solved_by)

    def read_units(self, units: dict) -> None:
        self.keys(units, "units", [], ["angle", "length", "mass"])
        self.angle_unit = self.string(units.get("angle", "rad"), "units.angle", tuple(ANGLE_UNITS)) or "rad"
        self.string(units.get("length", "m"), "units.length", ("m",))
        self.string(units.get("mass", "kg"), "units.mass", ("kg",))

    def declare_names(self, coordinates: dict, parameters: dict) -> list[str]:
        """Check coordinate and parameter names (one namespace, with ``t`` and ``<coordinate>_dot``
        reserved for load expressions) and create their symbols; returns the valid coordinates."""
        taken: dict[str, str] = {_TIME: "time in load expressions"}
        coordinate_names = []
        for name in coordinates:
            path = _join("coordinates", name)
            if self.name(name, path, "coordinate"):
                if name in taken:
                    self.problem(path, f"the name `{name}` is reserved for {taken[name]}")
                    continue
                coordinate_names.append(name)
                taken[name] = path
        for name in coordinate_names:
            rate = name + _VELOCITY_SUFFIX
            if rate in taken:
                self.problem(taken[rate], f"the name `{rate}` is reserved for the rate of coordinate `{name}` in load expressions")
            taken[rate] = f"the rate of coordinate `{name}`"
        for name in parameters:
            path = _join("parameters", name)
            if self.name(name, path, "parameter"):
                if name in taken:
                    self.problem(path, f"the name `{name}` is already used by {taken[name]}; names must be unique")
                    continue
                taken[name] = path
                self.parameter_names.append(name)
                self.invalid_parameters.add(name)  # until evaluated
        self.symbols = {name: sympy.Symbol(name, real=True) for name in taken}
        return coordinate_names

    def read_parameters(self, parameters: dict) -> None:
        """Evaluate the parameters in dependency order (numbers, or expressions of other parameters)."""
        pending = {name: parameters[name] for name in self.parameter_names}
        done: set[str] = set()
        in_cycles: set[str] = set()

        def evaluate(name: str, chain: list[str]) -> None:
            if name in done:
                return
            if name in chain:
                cycle = chain[chain.index(name):]
                in_cycles.update(cycle)
                self.problem(_join("parameters", name), f"parameters depend on each other in a cycle: {' → '.join(cycle + [name])}")
                return
            value, path = pending[name], _join("parameters", name)
            if isinstance(value, str):
                expr = self.parse(value, path, pending)
                result = None
                if expr is not None:
                    dependencies = sorted(s.name for s in expr.free_symbols)
                    for dependency in dependencies:
                        evaluate(dependency, chain + [name])
                    if name not in in_cycles:
                        result = self.constant(expr, path)
            else:
                result = self.number(value, path)
            if result is not None:
                self.parameters[name] = result
                self.invalid_parameters.discard(name)
            done.add(name)

        for name in pending:
            evaluate(name, [])

    def read_coordinates(self, coordinates: dict, names: list[str], builder: ModelBuilder) -> None:
        for name in names:
            path = _join("coordinates", name)
            table = self.table(coordinates[name], path)
            if table is None:
                table = {}
            self.keys(table, path, [], ["range", "default", "unit", "periodic"])
            unit = self.string(table.get("unit", "angle"), _join(path, "unit"), tuple(_COORDINATE_UNITS)) or "angle"
            scale = self.angle_scale if unit == "angle" else 1.0
            self.coordinate_units[name] = unit
            bounds = (-math.inf, math.inf)
            if "range" in table:
                value = table["range"]
                if isinstance(value, list) and len(value) == 2:
                    low, high = (self.number(v, _join(_join(path, "range"), k), scale=scale, infinite=True)
                                 for k, v in enumerate(value))
                    if low is not None and high is not None:
                        if low < high:
                            bounds = (low, high)
                        else:
                            self.problem(_join(path, "range"), f"expected [low, high] with low < high, got {_show(value)}")
                else:
                    self.problem(_join(path, "range"), f"expected [low, high], got {_show(value)}")
            default = self.number(table.get("default", 0.0), _join(path, "default"), scale=scale)
            if default is not None and not bounds[0] <= default <= bounds[1]:
                self.problem(_join(path, "default"), f"lies outside the coordinate's range {_show(table.get('range'))}")
                default = None
            periodic = self.boolean(table.get("periodic", False), _join(path, "periodic"))
            builder.add_coordinate(name, range=bounds, default=default if default is not None else min(max(0.0, bounds[0]), bounds[1]),
                                   unit=_COORDINATE_UNITS[unit], periodic=bool(periodic))

    @property
    def angle_scale(self) -> float:
        return ANGLE_UNITS[self.angle_unit]

    # ------------------------------------------------------------------ bodies
    def read_body(self, name: object, table: object, builder: ModelBuilder) -> None:
        path = _join("bodies", name)
        table = self.table(table, path)
        if table is None:
            return
        common = ["parent", "joint", "offset", "mass", "com", "inertia"]
        joint = self.string(table.get("joint", kinematics.REVOLUTE), _join(path, "joint"), _JOINTS)
        variable = [] if name in self.solved else ["variable"]
        solved = {"variable": f"the joint variable of `{name}` is solved from [[constraints]]; remove `variable`"} \
            if name in self.solved else {}
        if joint == kinematics.REVOLUTE:
            self.keys(table, path, ["axis", *variable], common + ["d", "translation_axis"], {**solved,
                "theta": "a revolute joint's angle is its joint variable (`variable`); rotate the joint frame with `offset`",
                "rotation_axis": "give a revolute joint's rotation axis as `axis`"})
        elif joint == kinematics.PRISMATIC:
            self.keys(table, path, ["axis", *variable], common + ["theta", "rotation_axis"], {**solved,
                "d": "a prismatic joint's displacement is its joint variable (`variable`); move the joint frame with `offset`",
                "translation_axis": "give a prismatic joint's translation axis as `axis`"})
        elif joint == kinematics.FIXED:
            self.keys(table, path, [], common + ["d", "translation_axis", "theta", "rotation_axis"], {
                "axis": "a fixed joint has no axis; give its constant transform as `offset` (or d, theta)",
                "variable": "a fixed joint has no joint variable; remove `variable` or make the joint revolute or prismatic"})
        parent = self.string(table.get("parent", GROUND), _join(path, "parent")) or GROUND
        kwargs: dict[str, object] = {"parent": parent, "joint": joint or kinematics.FIXED}
        if joint in (kinematics.REVOLUTE, kinematics.PRISMATIC):
            kwargs["axis"] = (self.direction(table["axis"], _join(path, "axis")) if "axis" in table else None) or (0.0, 0.0, 1.0)
            if name not in self.solved:
                kwargs["variable"] = self.joint_variable(table.get("variable", 0.0), _join(path, "variable"), joint)
        for key, scale in (("d", 1.0), ("theta", self.angle_scale)):
            if key in table:
                kwargs[key] = self.number(table[key], _join(path, key), scale=scale) or 0.0
        for key in ("translation_axis", "rotation_axis"):
            if key in table:
                kwargs[key] = self.direction(table[key], _join(path, key))
        if "offset" in table:
            kwargs["offset"] = self.offset(table["offset"], _join(path, "offset"))
        kwargs["mass"] = self.number(table.get("mass", 0.0), _join(path, "mass")) or 0.0
        kwargs["com"] = self.vector(table.get("com", [0.0, 0.0, 0.0]), _join(path, "com")) or (0.0, 0.0, 0.0)
        if "inertia" in table:
            kwargs["inertia"] = self.inertia(table["inertia"], _join(path, "inertia"))
        builder.add_body(name, **kwargs)

    def offset(self, value: object, path: str) -> np.ndarray | None:
        table = self.table(value, path)
        if table is None:
            return None
        self.keys(table, path, [], ["translation", "rotation", "matrix"])
        translation = self.vector(table.get("translation", [0.0, 0.0, 0.0]), _join(path, "translation"))
        rotation = np.eye(3)
        if "rotation" in table and "matrix" in table:
            self.problem(path, "give the rotation once, as `rotation` (axis–angle sequence) or as `matrix`, not both")
        elif "matrix" in table:
            matrix = self.matrix(table["matrix"], _join(path, "matrix"))
            if matrix is not None:
                rotation = np.array(matrix)
        elif "rotation" in table:
            rotation = self.rotation_sequence(table["rotation"], _join(path, "rotation"))
        if translation is None or rotation is None:
            return None
        transform = np.eye(4)
        transform[:3, :3] = rotation
        transform[:3, 3] = translation
        return transform

    def rotation_sequence(self, value: object, path: str) -> np.ndarray | None:
        """``R = R_1 R_2 … R_n`` of ``[{axis, angle}, …]`` (each about the axes after the previous ones)."""
        if not isinstance(value, list):
            self.problem(path, f"expected an array of {{axis = [x, y, z], angle = a}} tables, got {_show(value)}")
            return None
        rotation = np.eye(3)
        for k, step in enumerate(value):
            step_path = _join(path, k)
            step = self.table(step, step_path)
            if step is None:
                rotation = None
                continue
            self.keys(step, step_path, ["axis", "angle"], [])
            axis = self.direction(step.get("axis"), _join(step_path, "axis")) if "axis" in step else None
            angle = self.number(step.get("angle"), _join(step_path, "angle"), scale=self.angle_scale) if "angle" in step else None
            if axis is None or angle is None:
                rotation = None
            elif rotation is not None:
                rotation = rotation @ kinematics.rotation_matrix(np.array(axis), angle)
        return rotation

    def inertia(self, value: object, path: str) -> list | None:
        if isinstance(value, list) and len(value) == 3 and all(isinstance(v, list) for v in value):
            return self.matrix(value, path)
        if isinstance(value, list) and len(value) == 3:
            return self.vector(value, path)
        self.problem(path, f"expected 3 principal moments [Ixx, Iyy, Izz] or a 3×3 matrix (kg·m², about the centre of mass), got {_show(value)}")
        return None

    # ------------------------------------------------------------------ joint variables
    def joint_variable(self, value: object, path: str, joint: str) -> object:
        """A body's ``variable``: expression string, number or function table; 0.0 if invalid."""
        output_scale = self.angle_scale if joint == kinematics.REVOLUTE else 1.0
        if isinstance(value, str):
            expr = self.coordinate_expression(value, path, output_angle=joint == kinematics.REVOLUTE)
            return expr if expr is not None else 0.0
        if isinstance(value, dict):
            return self.function_variable(value, path, output_scale)
        number = self.number(value, path, scale=output_scale)
        return number if number is not None else 0.0

    def coordinate_expression(self, text: str, path: str, *, output_angle: bool) -> sympy.Expr | None:
        """A formula of coordinates (in file units) and parameters, as a sympy expression in SI units."""
        names = list(self.coordinate_units) + self.parameter_names
        expr = self.parse(text, path, names)
        if expr is None:
            return None
        expr = self.fold_constants(expr, path, {self.symbols[n] for n in self.coordinate_units})
        if expr is None:
            return None
        return self.to_si(expr, self.angle_symbols(), output_angle=output_angle)

    def angle_symbols(self, rates: bool = False) -> list[sympy.Symbol]:
        """Symbols of the angular coordinates (and, with ``rates``, of their rates)."""
        names = [n for n, unit in self.coordinate_units.items() if unit == "angle"]
        names += [n + _VELOCITY_SUFFIX for n in names] if rates else []
        return [self.symbols[n] for n in names if n in self.symbols]

    def to_si(self, expr: sympy.Expr, angles: Iterable[sympy.Symbol], *, output_angle: bool) -> sympy.Expr:
        """Rewrite a formula in file units as one in SI units: the symbols ``angles`` stand for angles
        in the file's unit (exact factor pi/180 for degrees); ``output_angle``: the value is one too."""
        scale = _EXACT_ANGLE_SCALE[self.angle_unit]
        if scale == 1:
            return expr
        expr = expr.xreplace({symbol: symbol / scale for symbol in angles})
        if not output_angle:
            return expr
        # distribute over a sum (one level), so that `theta2 - theta1` stays readable and exact
        return sympy.Add(*(scale * term for term in expr.args)) if expr.is_Add else scale * expr

    def fold_constants(self, expr: sympy.Expr, path: str, variables: set[sympy.Symbol]) -> sympy.Expr | None:
        """Replace every subexpression free of ``variables`` (except plain numbers) by its value.

        The values (parameters substituted) are computed in double precision by
        :func:`evaluate_expression`, never by sympy, and must be finite normal doubles. So the sympy
        work that follows (differentiation, ``float`` of constant terms, code generation) never meets an
        exact constant such as ``sin(exp(exp(20)))`` whose arbitrary-precision evaluation would
        not finish, nor a parameter value that would make sympy evaluate one.
        """
        failed = False

        def rebuild(node: sympy.Basic) -> sympy.Basic:
            nonlocal failed
            if node.is_Number or node.is_NumberSymbol or node in variables:  # numbers, pi, E: exact and cheap
                return node
            if not node.free_symbols & variables:
                value = self.constant(node, path, "a constant part of the expression")
                if value is not None and not _is_normal_double(value):
                    self.problem(path, f"a constant part of the expression evaluates to {value!r}, below double precision")
                    value = None
                failed = failed or value is None
                return sympy.S.Zero if value is None else sympy.Float(value)
            return node.func(*(rebuild(argument) for argument in node.args))

        result = rebuild(expr)
        return None if failed else result

    def function_variable(self, table: dict, path: str, output_scale: float) -> object:
        kind = self.string(table.get("type"), _join(path, "type"), ("tabulated", "fourier"))
        if kind is None:
            return 0.0
        coordinate = table.get("coordinate")
        coordinate_path = _join(path, "coordinate")
        if not isinstance(coordinate, str) or coordinate not in self.coordinate_units:
            known = ", ".join(self.coordinate_units) or "(none)"
            suggestion = _suggest(coordinate, self.coordinate_units) if isinstance(coordinate, str) else ""
            self.problem(coordinate_path, f"expected the name of a coordinate ({known}), got {_show(coordinate)}{suggestion}")
            coordinate = None
        input_scale = self.angle_scale if self.coordinate_units.get(coordinate) == "angle" else 1.0
        if kind == "tabulated":
            self.keys(table, path, ["type", "coordinate", "x", "y", "kind"], [])
            x = self.number_array(table.get("x"), _join(path, "x"), scale=input_scale, minimum=2) if "x" in table else None
            y = self.number_array(table.get("y"), _join(path, "y"), scale=output_scale, minimum=2) if "y" in table else None
            spline_kind = self.string(table.get("kind"), _join(path, "kind"), SPLINE_KINDS) if "kind" in table else None
            if None in (coordinate, x, y, spline_kind):
                return 0.0
            try:
                function = tabulated_function(x, y, spline_kind)
            except ValueError as exc:
                self.problem(path, str(exc))
                return 0.0
        else:
            self.keys(table, path, ["type", "coordinate", "period"], ["a0", "a", "b"])
            period = self.number(table.get("period"), _join(path, "period"), scale=input_scale) if "period" in table else None
            a0 = self.number(table.get("a0", 0.0), _join(path, "a0"), scale=output_scale)
            a = self.number_array(table.get("a", []), _join(path, "a"), scale=output_scale)
            b = self.number_array(table.get("b", []), _join(path, "b"), scale=output_scale)
            if None in (coordinate, period, a0, a, b):
                return 0.0
            try:
                function = FourierSeries(period, a0, a, b)
            except ValueError as exc:
                self.problem(path, str(exc))
                return 0.0
        return CoordinateFunction(function, coordinate)

    # ------------------------------------------------------------------ constraints
    def declare_joint_names(self, bodies: dict) -> None:
        """Symbols for the moving bodies' joint variables, usable in constraint equations."""
        for name, table in bodies.items():
            if not isinstance(table, dict) or table.get("joint", kinematics.REVOLUTE) == kinematics.FIXED:
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
            self.problem(_join(path, "joints"), f"expected an array of body names, got {_show(joints)}")
            return
        revolute = {n for n, t in bodies.items() if isinstance(t, dict) and t.get("joint", kinematics.REVOLUTE) == kinematics.REVOLUTE}
        for k, name in enumerate(joints):
            if name in self.symbols and name not in self.joint_symbols:
                self.problem(_join(_join(path, "joints"), k),
                             f"the body name `{name}` is also a coordinate or parameter name; rename one of them")
        if ("equations" in table) == ("loops" in table):
            self.problem(path, "give the constraints as `equations` (expressions = 0) or as `loops` (loop closures), one of them")
            return
        if "equations" in table:
            system = self.constraint_equations(table["equations"], _join(path, "equations"), revolute)
        else:
            system = self.loop_closures(table["loops"], _join(path, "loops"))
        solver = self.string(table.get("solver", "lu"), _join(path, "solver"), SOLVERS)
        guess = {}
        guesses = self.table(table.get("guess", {}), _join(path, "guess")) or {}
        for name, number in guesses.items():
            scale = self.angle_scale if name in revolute else 1.0
            guess[name] = self.number(number, _join(_join(path, "guess"), name), scale=scale)
        settings = {}
        for name, setting in (self.table(table.get("settings", {}), _join(path, "settings")) or {}).items():
            setting_path = _join(_join(path, "settings"), name)
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
            self.problem(path, f"expected an array of expression strings (each = 0), got {_show(value)}")
            return None
        names = list(self.coordinate_units) + self.parameter_names
        symbols = {**{n: self.symbols[n] for n in names}, **self.joint_symbols}
        variables = {symbols[n] for n in self.coordinate_units} | set(self.joint_symbols.values())
        angles = self.angle_symbols() + [s for n, s in self.joint_symbols.items() if n in revolute]
        equations = []
        for k, text in enumerate(value):
            equation_path = _join(path, k)
            if not isinstance(text, str):
                self.problem(equation_path, f"expected an expression string, got {_show(text)}")
                continue
            try:
                expr = parse_expression(text, symbols)
            except ExpressionError as exc:
                self.problem(equation_path, f"invalid expression: {exc}")
                continue
            expr = self.fold_constants(expr, equation_path, variables)
            if expr is not None:
                equations.append(self.to_si(expr, angles, output_angle=False))
        return SymbolicConstraints(equations) if len(equations) == len(value) else None

    def loop_closures(self, value: object, path: str) -> list[LoopClosure] | None:
        if not isinstance(value, list) or not value:
            self.problem(path, f"expected an array of loop-closure tables, got {_show(value)}")
            return None
        closures = []
        for k, item in enumerate(value):
            item_path = _join(path, k)
            table = self.table(item, item_path)
            if table is None:
                continue
            self.keys(table, item_path, ["body_a", "point_a", "body_b", "point_b"],
                      ["plane", "orientation", "axis_a", "axis_b", "rotation"])
            fields = {key: self.string(table.get(key), _join(item_path, key)) for key in ("body_a", "body_b")}
            fields.update({key: self.vector(table.get(key), _join(item_path, key)) for key in ("point_a", "point_b")})
            plane = self.string(table.get("plane", "xy"), _join(item_path, "plane"), ("xy", "yz", "xz", "space"))
            fields["plane"] = None if plane == "space" else plane
            fields["orientation"] = None
            if "orientation" in table:
                fields["orientation"] = self.string(table["orientation"], _join(item_path, "orientation"), ("revolute", "fixed"))
            for key in ("axis_a", "axis_b"):
                if key in table:
                    fields[key] = self.direction(table[key], _join(item_path, key))
            if "rotation" in table:
                rotation = table["rotation"]
                if isinstance(rotation, list) and rotation and all(isinstance(r, list) for r in rotation):
                    fields["rotation"] = self.matrix(rotation, _join(item_path, "rotation"))
                else:
                    fields["rotation"] = self.rotation_sequence(rotation, _join(item_path, "rotation"))
            required = [fields[key] for key in fields if key not in ("plane", "orientation")]
            if plane is not None and None not in required and ("orientation" not in table or fields["orientation"]):
                closures.append(LoopClosure(**fields))
        return closures if len(closures) == len(value) else None

    # ------------------------------------------------------------------ loads
    def read_load(self, value: object, path: str, builder: ModelBuilder) -> None:
        table = self.table(value, path)
        if table is None:
            return
        kind = self.string(table.get("type"), _join(path, "type"), tuple(_LOAD_FIELDS))
        if kind is None:
            return
        cls, required, optional = _LOAD_FIELDS[kind]
        self.keys(table, path, ["type", *required], optional)
        arguments = {key: self.load_field(table[key], _join(path, key), field_kind)
                     for key, field_kind in {**required, **optional}.items() if key in table}
        if all(arguments.get(key) is not None for key in required) and None not in arguments.values():
            builder.add_load(cls(**arguments))

    def load_field(self, value: object, path: str, kind: str) -> object:
        if kind == _NAME:
            return self.string(value, path)
        if kind == _FRAME:
            return self.string(value, path, ("ground", "body"))
        if kind == _POINT:
            return self.vector(value, path)
        if kind == _NUMBER:
            return self.number(value, path)
        components = [value] if kind == _SCALAR else value
        if kind == _VECTOR and (not isinstance(value, list) or len(value) != 3):
            self.problem(path, f"expected an array of 3 numbers or expressions, got {_show(value)}")
            return None
        names = [_TIME, *self.coordinate_units, *(n + _VELOCITY_SUFFIX for n in self.coordinate_units)]
        names = [n for n in names if n in self.symbols]
        variables = {self.symbols[n] for n in names}
        names += self.parameter_names
        expressions = [self.load_component(component, path if kind == _SCALAR else _join(path, k), names, variables)
                       for k, component in enumerate(components)]
        if None in expressions:
            return None
        if all(e.is_Number for e in expressions):
            numbers = [float(e) for e in expressions]
            return numbers[0] if kind == _SCALAR else numbers
        shape = () if kind == _SCALAR else (3,)
        return ExpressionValue(tuple(expressions), shape, tuple(self.coordinate_units))

    def load_component(self, value: object, path: str, names: list[str], variables: set[sympy.Symbol]) -> sympy.Expr | None:
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
        path = _join("muscles", name)
        table = self.table(value, path)
        if table is None:
            return
        kind = self.string(table.get("model", "hill"), _join(path, "model"), _MUSCLE_MODELS)
        hill_keys = {key for key, _ in _HILL_FIELDS}
        if kind == "path":
            self.keys(table, path, ["path"], ["model"], {key: "a muscle of model \"path\" has no Hill parameters"
                                                          for key in hill_keys})
        else:
            self.keys(table, path, ["path", *_HILL_REQUIRED], ["model", *(hill_keys - set(_HILL_REQUIRED))])
        hill = None
        if kind == "hill":
            values = {key: self.number(table[key], _join(path, key), scale=self.angle_scale if angle else 1.0)
                      for key, angle in _HILL_FIELDS if key in table}
            if all(key in values for key in _HILL_REQUIRED) and None not in values.values():
                hill = HillParameters(**values)
        points = table.get("path", [])
        if not isinstance(points, list) or not all(isinstance(point, dict) for point in points):
            self.problem(_join(path, "path"), f"expected an array of tables ([[{path}.path]] sections), got {_show(points)}")
            return
        read = [self.path_point(point, f"{_join(path, 'path')}[{index}]") for index, point in enumerate(points)]
        if None not in read and kind is not None:
            builder.add_muscle(name, read, hill=hill)

    def path_point(self, table: dict, path: str) -> object:
        """One path point: ``(body, (x, y, z))``, or a :class:`MovingPoint` if a component varies."""
        self.keys(table, path, ["body", "point"], ["extrapolate"], {
            "active": "conditional path points are not supported (the path would change its points with q); "
                      "keep the point or remove it, see docs/model-format.md"})
        body = self.string(table.get("body"), _join(path, "body")) if "body" in table else None
        extrapolate = self.boolean(table.get("extrapolate", False), _join(path, "extrapolate"))
        value = table.get("point")
        if not isinstance(value, list) or len(value) != 3:
            if "point" in table:
                self.problem(_join(path, "point"), f"expected an array of 3 components (numbers, formulas of the "
                                                   f"coordinates, function tables, or arrays of these), got {_show(value)}")
            return None
        components = [self.point_component(c, _join(_join(path, "point"), k)) for k, c in enumerate(value)]
        if body is None or extrapolate is None or None in components:
            return None
        if all(isinstance(c, float) for c in components):
            if extrapolate:
                self.problem(_join(path, "extrapolate"), "only a moving point (one with a varying component) extrapolates")
            return body, tuple(components)
        return MovingPoint(body, components, extrapolate=extrapolate)

    def point_component(self, value: object, path: str, *, nested: bool = False) -> object:
        """A path point's coordinate (m): a number, a formula of coordinates and parameters, a
        tabulated or Fourier function table, or (not nested) an array of these, summed."""
        if isinstance(value, list) and not nested:
            if not value:
                self.problem(path, "expected a non-empty array of terms (they are summed)")
                return None
            terms = [self.point_component(v, _join(path, k), nested=True) for k, v in enumerate(value)]
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


# ====================================================================== writing
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_string(text: str) -> str:
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for character in text:
        if character in escapes:
            out.append(escapes[character])
        elif ord(character) < 0x20 or ord(character) == 0x7F:
            out.append(f"\\u{ord(character):04X}")
        else:
            out.append(character)
    return '"' + "".join(out) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


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
        return _toml_string(value)
    if isinstance(value, np.ndarray):
        return _toml_value(value.tolist())
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_table_array(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def format_toml(document: Mapping[str, object]) -> str:
    """TOML text of a document of tables, arrays, strings, numbers and booleans.

    Tables become ``[section]`` headers, non-empty arrays of tables ``[[section]]`` headers, and
    everything inside arrays inline values; ``tomllib.loads(format_toml(d)) == d`` for such
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
        scalars = [(k, v) for k, v in table.items() if not isinstance(v, Mapping) and not _is_table_array(v)]
        nested = [(k, v) for k, v in table.items() if isinstance(v, Mapping) or _is_table_array(v)]
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
            expr = parse_expression(equation, names) if isinstance(equation, str) else equation
            expr = expr.xreplace({s: values[s.name] for s in expr.free_symbols if s.name in values})
            equations.append(format_expression(expr))
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
        return format_expression(expr)
    if isinstance(variable, sympy.Expr):
        return format_expression(variable)
    if isinstance(variable, CoordinateFunction):
        table = _function_table(variable)
        if table is not None:
            return table
    raise ValueError(f"body `{body}`: its joint variable ({type(variable).__name__}) cannot be written to a model file")


def _function_table(variable: CoordinateFunction) -> dict | None:
    """A tabulated or Fourier function of one coordinate as a model-file table; None for other kinds."""
    function = variable.function
    if isinstance(function, (CubicSpline, PiecewiseLinear)):
        return {"type": "tabulated", "coordinate": variable.coordinate, "kind": function.kind,
                "x": function.x.tolist(), "y": function.y.tolist()}
    if isinstance(function, FourierSeries):
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
        return format_expression(term)
    elif isinstance(term, (int, float)) and not isinstance(term, bool):
        return float(term)
    raise ValueError(f"{where}: a {type(term).__name__} term cannot be written to a model file")


def _muscle_table(path) -> dict:
    """A :class:`~mbkron.muscles.paths.MusclePath` as a ``[muscles.NAME]`` table (SI units, radians)."""
    where = f"muscle `{path.name}`"
    entry: dict[str, object] = {"model": "path" if path.hill is None else "hill"}
    if path.hill is not None:
        if path.hill.curves != ThelenCurves():
            raise ValueError(f"{where}: non-default Thelen curve constants cannot be written to a model file")
        entry.update({key: float(getattr(path.hill, key)) for key, _ in _HILL_FIELDS})
    points = []
    for n, point in enumerate(path.points):
        if isinstance(point, MovingPoint):
            components = [[_point_term_text(t, f"{where}, point {n}") for t in terms] for terms in point.location]
            points.append({"body": point.body, "point": [c[0] if len(c) == 1 else c for c in components],
                           "extrapolate": point.extrapolate})
        else:
            points.append({"body": point[0], "point": np.asarray(point[1], dtype=float).tolist()})
    entry["path"] = points
    return entry


def _load_value_text(value: object, where: str) -> object:
    if isinstance(value, ExpressionValue):
        return value.texts()
    if callable(value):
        raise ValueError(f"{where} is a Python callable; only constants and model-file expressions can be written")
    array = np.asarray(value, dtype=float)
    return array.tolist() if array.ndim else float(array)


def dump_model(model: Model) -> str:
    """Model-file text describing ``model`` (SI units, angles in radians).

    ``parse_model_file(dump_model(model)).model`` equals ``model`` (see :func:`model_differences`).
    Parameters of the original file are not kept: every number is written out.

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
        entry: dict[str, object] = {}
        if c.range != (-math.inf, math.inf):
            entry["range"] = [float(c.range[0]), float(c.range[1])]
        entry["default"] = float(c.default)
        entry["unit"] = {v: k for k, v in _COORDINATE_UNITS.items()}[c.unit]
        entry["periodic"] = bool(c.periodic)
        coordinates[c.name] = entry
    if coordinates:
        document["coordinates"] = coordinates
    solved = {joint for group in model.constraint_groups for joint in group.joints}
    bodies = {}
    for b in model.body_records:
        entry = {"parent": b.parent, "joint": b.joint}
        if b.joint == kinematics.REVOLUTE:
            entry["axis"] = b.rotation_axis.tolist()
        elif b.joint == kinematics.PRISMATIC:
            entry["axis"] = b.translation_axis.tolist()
        if b.joint != kinematics.FIXED and b.name not in solved:
            entry["variable"] = _variable_text(b.variable, b.name)
        if b.joint != kinematics.PRISMATIC:
            entry["d"] = float(b.d)
            entry["translation_axis"] = b.translation_axis.tolist()
        if b.joint != kinematics.REVOLUTE:
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
        kind = _LOAD_TYPES[type(load)]
        _, required, optional = _LOAD_FIELDS[kind]
        entry = {"type": kind}
        for key, field_kind in {**required, **optional}.items():
            value = getattr(load, key)
            if field_kind in (_SCALAR, _VECTOR):
                entry[key] = _load_value_text(value, f"load {index} ({type(load).__name__}) `{key}`")
            elif field_kind == _POINT:
                entry[key] = np.asarray(value, dtype=float).tolist()
            elif field_kind == _NUMBER:
                entry[key] = float(value)
            else:
                entry[key] = value
        loads.append(entry)
    if model.constraint_groups:
        document["constraints"] = [_constraint_table(group, model) for group in model.constraint_groups]
    if loads:
        document["loads"] = loads
    if model.muscle_set is not None:
        document["muscles"] = {path.name: _muscle_table(path) for path in model.muscle_set.paths}
    header = f"# mbkron model file (format version {FORMAT_VERSION}), written by mbkron.io.model_files.dump_model.\n" \
             "# SI units; angles in radians.\n\n"
    return header + format_toml(document)


# ====================================================================== comparing
def _sample_coordinates(model: Model, rng: np.random.Generator, samples: int) -> np.ndarray:
    q = np.empty((samples, model.nq))
    for k, c in enumerate(model.coordinate_records):
        low, high = c.range
        if math.isfinite(low) and math.isfinite(high):
            q[:, k] = rng.uniform(low, high, samples)
        elif math.isfinite(low):
            q[:, k] = low + rng.exponential(1.0, samples)
        elif math.isfinite(high):
            q[:, k] = high - rng.exponential(1.0, samples)
        else:
            q[:, k] = c.default + rng.normal(0.0, 1.0, samples)
    return q


def _close(a: object, b: object, rtol: float, atol: float) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def model_differences(a: Model, b: Model, *, rtol: float = 1e-12, atol: float = 1e-12, samples: int = 8,
                      seed: int = 0) -> list[str]:
    """Everything that differs between two models, as messages (empty if they are equal).

    Compares names, gravity, coordinates (name, unit, range, default, periodic), bodies (parent,
    joint type and axis, the constant parts of the joint transform, inertial parameters), the joint
    variables ``f``, ``∇f`` and ``H`` at random coordinates (within the ranges), the loads
    (types, bodies, points, and values at random ``t, q, q̇``) and the muscles (names, Hill
    parameters, path lengths and moment arms at the random coordinates). Joint variables given in different
    forms (a coordinate name, a ``Linear`` map, a sympy expression) are equal if their values are.

    Parameters
    ----------
    a, b : Model
    rtol, atol : float
        Tolerances of the numerical comparisons (``numpy.allclose``).
    samples : int
        Number of random states.
    seed : int
        Seed of the random states.

    Returns
    -------
    list of str
    """
    out: list[str] = []
    if a.name != b.name:
        out.append(f"name: {a.name!r} vs {b.name!r}")
    if not _close(a.gravity, b.gravity, rtol, atol):
        out.append(f"gravity: {a.gravity.tolist()} vs {b.gravity.tolist()}")
    if a.coordinates != b.coordinates:
        out.append(f"coordinates: {a.coordinates} vs {b.coordinates}")
    else:
        for ca, cb in zip(a.coordinate_records, b.coordinate_records):
            for key in ("unit", "periodic"):
                if getattr(ca, key) != getattr(cb, key):
                    out.append(f"coordinate `{ca.name}`: `{key}` {getattr(ca, key)!r} vs {getattr(cb, key)!r}")
            for key in ("range", "default"):
                if not _close(getattr(ca, key), getattr(cb, key), rtol, atol):
                    out.append(f"coordinate `{ca.name}`: `{key}` {getattr(ca, key)} vs {getattr(cb, key)}")
    if a.bodies != b.bodies:
        out.append(f"bodies: {a.bodies} vs {b.bodies}")
    else:
        for ba, bb in zip(a.body_records, b.body_records):
            out.extend(_body_differences(ba, bb, rtol, atol))
    if out:
        return out
    rng = np.random.default_rng(seed)
    q = _sample_coordinates(a, rng, samples)
    for label, va, vb in zip(("f", "∇f", "H"), a.joint_variables(q), b.joint_variables(q)):
        if not _close(va, vb, rtol, atol):
            worst = int(np.argmax(np.abs(np.asarray(va) - np.asarray(vb)).reshape(samples, -1).max(axis=1)))
            out.append(f"joint variables: `{label}` differs, e.g. at q = {q[worst].tolist()}")
    out.extend(_load_differences(a, b, q, rng, rtol, atol))
    out.extend(_muscle_differences(a, b, q, rtol, atol))
    return out


def _constant_transform(body) -> np.ndarray:
    """The joint transform's constant factor(s): Trans(d V_d) for revolute, Rot(V_θ, θ) for prismatic."""
    if body.joint == kinematics.REVOLUTE:
        return kinematics.joint_transform(np.eye(4), body.translation_axis, body.d, body.rotation_axis, 0.0)
    if body.joint == kinematics.PRISMATIC:
        return kinematics.joint_transform(np.eye(4), body.translation_axis, 0.0, body.rotation_axis, body.theta)
    return kinematics.joint_transform(np.eye(4), body.translation_axis, body.d, body.rotation_axis, body.theta)


def _body_differences(ba, bb, rtol: float, atol: float) -> list[str]:
    where = f"body `{ba.name}`"
    out = []
    for key in ("parent", "joint"):
        if getattr(ba, key) != getattr(bb, key):
            return [f"{where}: `{key}` {getattr(ba, key)!r} vs {getattr(bb, key)!r}"]
    axis = {kinematics.REVOLUTE: "rotation_axis", kinematics.PRISMATIC: "translation_axis"}.get(ba.joint)
    if axis and not _close(getattr(ba, axis), getattr(bb, axis), rtol, atol):
        out.append(f"{where}: joint axis {getattr(ba, axis).tolist()} vs {getattr(bb, axis).tolist()}")
    if not _close(ba.offset @ _constant_transform(ba), bb.offset @ _constant_transform(bb), rtol, atol):
        out.append(f"{where}: the constant part of the joint transform (offset, d, theta) differs")
    for key in ("mass", "com", "inertia"):
        if not _close(getattr(ba, key), getattr(bb, key), rtol, atol):
            out.append(f"{where}: `{key}` {np.asarray(getattr(ba, key)).tolist()} vs {np.asarray(getattr(bb, key)).tolist()}")
    return out


def _load_differences(a: Model, b: Model, q: np.ndarray, rng: np.random.Generator, rtol: float, atol: float) -> list[str]:
    if len(a.loads) != len(b.loads):
        return [f"loads: {len(a.loads)} vs {len(b.loads)}"]
    out = []
    t = rng.uniform(0.0, 10.0)
    qd = rng.normal(0.0, 1.0, q.shape)
    for index, (la, lb) in enumerate(zip(a.loads, b.loads)):
        where = f"load {index}"
        if type(la) is not type(lb):
            out.append(f"{where}: {type(la).__name__} vs {type(lb).__name__}")
            continue
        _, required, optional = _LOAD_FIELDS[_LOAD_TYPES[type(la)]]
        for key, field_kind in {**required, **optional}.items():
            va, vb = getattr(la, key), getattr(lb, key)
            if field_kind in (_NAME, _FRAME):
                same = va == vb
            elif field_kind in (_SCALAR, _VECTOR):
                shape = (q.shape[0],) + ((3,) if field_kind == _VECTOR else ())
                same = _close(np.broadcast_to(evaluate_value(va, t, q, qd), shape),
                              np.broadcast_to(evaluate_value(vb, t, q, qd), shape), rtol, atol)
            else:
                same = _close(va, vb, rtol, atol)
            if not same:
                out.append(f"{where} ({type(la).__name__}): `{key}` differs")
    return out


def _muscle_differences(a: Model, b: Model, q: np.ndarray, rtol: float, atol: float) -> list[str]:
    """Muscle names, Hill parameters, and path lengths and moment arms at ``q``."""
    if a.muscles != b.muscles:
        return [f"muscles: {a.muscles} vs {b.muscles}"]
    if not a.muscles:
        return []
    out = []
    for pa, pb in zip(a.muscle_set.paths, b.muscle_set.paths):
        if (pa.hill is None) != (pb.hill is None) or (pa.hill is not None and (
                pa.hill.curves != pb.hill.curves
                or not _close([getattr(pa.hill, k) for k, _ in _HILL_FIELDS], [getattr(pb.hill, k) for k, _ in _HILL_FIELDS],
                              rtol, atol))):
            out.append(f"muscle `{pa.name}`: Hill parameters {pa.hill} vs {pb.hill}")
    evaluated = []
    for model in (a, b):
        try:
            evaluated.append((model.muscle_lengths(q), model.moment_arms(q)))
        except ConfigurationError as exc:
            evaluated.append(str(exc))
    if isinstance(evaluated[0], str) or isinstance(evaluated[1], str):
        if evaluated[0] != evaluated[1]:
            out.append(f"muscle paths: evaluation differs at random q: {evaluated[0]} vs {evaluated[1]}"[:500])
        return out
    for label, va, vb in zip(("lengths", "moment arms"), *evaluated):
        if not _close(va, vb, rtol, atol):
            out.append(f"muscle paths: {label} differ at random q")
    return out


def models_equal(a: Model, b: Model, *, rtol: float = 1e-12, atol: float = 1e-12) -> bool:
    """Whether :func:`model_differences` finds nothing."""
    return not model_differences(a, b, rtol=rtol, atol=atol)
