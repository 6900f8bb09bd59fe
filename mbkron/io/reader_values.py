"""The model-file reader's base: collected problems, checked values and formulas.

:class:`ValueReader` holds the state of reading one document (the problems found so far, the
parameters, the symbols of names usable in formulas, the angle unit) and reads the values every
section uses: tables, strings, numbers (or expressions of the parameters), vectors, directions,
matrices, formulas of the coordinates (converted to SI units, constant parts folded to double
precision) and tabulated or Fourier function tables. Each method records a problem naming the
table path and returns None (or a harmless default) for an invalid value, so that one pass reports
every problem of a file. The sections are read by :mod:`mbkron.io.reader_bodies`,
:mod:`mbkron.io.reader_constraints` and :mod:`mbkron.io.reader_loads`.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence


from mbkron.core.lazy import LazyModule
from mbkron.core.errors import elide
from mbkron.expressions import ExpressionError, check_name
from mbkron.io.formulas import is_normal_double, evaluate_expression
from mbkron.io.schema import ANGLE_UNITS, VELOCITY_SUFFIX, exact_angle_scale, toml_string
from mbkron.numerics.functions import SPLINE_KINDS, AffineMapped, FourierSeries, tabulated_function
from mbkron.multibody.jointvars import CoordinateFunction
from mbkron.numerics.gcvspl import MAX_FILE_FIT_WORK, MAX_HALF_ORDER, GCVSpline

__all__ = ["ValueReader", "join", "show", "show_key", "suggest"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
_parser = LazyModule("mbkron.expressions.parser")

_SHOW_WIDTH = 60
_WORD = re.compile(r"\w+")  # candidate names in a formula (a name the pattern splits is found by the second parse)
_DETAILED_FAILURES = 100  # see ValueReader.parse


def show(value: object) -> str:
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
            return "[" + ", ".join(show(v) for v in value) + "]"
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        keys = ", ".join(show_key(k) for k in list(value)[:6])
        more = ", …" if len(value) > 6 else ""
        return f"a table with keys ({keys}{more})" if value else "an empty table"
    return f"a {type(value).__name__}"


def show_key(key: str) -> str:
    """A key as a message shows it: bare if it is a bare TOML key, else quoted (and shortened)."""
    return elide(key, _SHOW_WIDTH) if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key[:_SHOW_WIDTH])


def join(path: str, key: object) -> str:
    """The table path of ``key`` (a table key or an array index) inside ``path``, for messages."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{show_key(key)}" if path else show_key(key)


def suggest(name: str, choices: Iterable[str]) -> str:
    """``; did you mean `X`?`` for the choice closest to a misspelt ``name``, else the empty string."""
    match = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean `{match[0]}`?" if match else ""


class Symbols(Mapping):
    """The sympy symbol (real) of each of ``names``, made when first looked up.

    A file's names are declared (and checked) before its formulas are read; their symbols are made
    only for the formulas that use them, so a file without formulas (an OpenSim model) is read
    without importing sympy.
    """

    def __init__(self, names: Iterable[str]):
        self.names = dict.fromkeys(names)
        self.made: dict[str, sympy.Symbol] = {}

    def __getitem__(self, name: str) -> sympy.Symbol:
        try:
            return self.made[name]
        except KeyError:
            if name not in self.names:
                raise
        symbol = self.made[name] = sympy.Symbol(name, real=True)
        return symbol

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


class ValueReader:
    """The state of reading one parsed TOML document and the reading of values; see :mod:`mbkron.io.reader`."""

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []
        self.parameters: dict[str, float] = {}
        self.invalid_parameters: set[str] = set()
        self.parameter_names: dict[str, None] = {}  # declared with a valid, unique name, in file order
        self.symbols: Mapping[str, sympy.Symbol] = Symbols(())
        self.angle_unit = "rad"
        self.coordinate_units: dict[str, str] = {}
        # set once the coordinates are read (BodyReader.read_coordinates), for formulas of the coordinates:
        self.formula_names: dict[str, None] = {}  # the coordinates, then the parameters
        self._coordinate_symbols: tuple[set, set] | None = None  # made by the first formula of the coordinates
        self.solved: set[str] = set()  # bodies whose joint variables are solved from constraints
        self.solved_by: dict[str, str] = {}  # solved joint -> description of its group
        self.joint_symbols: dict[str, sympy.Symbol] = {}  # moving bodies usable in constraint equations
        self.detailed_failures = 0  # formulas parsed a second time for a detailed message (see parse)
        self.fit_work = 0  # knots × columns × half order of the GCV splines fitted so far (bounded per file)

    # ------------------------------------------------------------------ problems and types
    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def table(self, value: object, path: str) -> dict | None:
        if isinstance(value, dict):
            return value
        self.problem(path, f"expected a table, got {show(value)}")
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
                self.problem(join(path, key), misplaced[key])
            elif key not in allowed:
                self.problem(join(path, key), f"unknown key; expected one of: {', '.join(allowed)}"
                                               f"{suggest(key, allowed + list(misplaced))}")

    def string(self, value: object, path: str, choices: Sequence[str] | None = None) -> str | None:
        if not isinstance(value, str):
            expected = f"one of: {', '.join(repr(c) for c in choices)}" if choices else "a string"
            self.problem(path, f"expected {expected}, got {show(value)}")
            return None
        if choices is not None and value not in choices:
            self.problem(path, f"expected one of: {', '.join(repr(c) for c in choices)}, got {show(value)}{suggest(value, choices)}")
            return None
        return value

    def boolean(self, value: object, path: str) -> bool | None:
        if not isinstance(value, bool):
            self.problem(path, f"expected true or false, got {show(value)}")
            return None
        return value

    def name(self, value: object, path: str, what: str) -> str | None:
        """A name used in expressions (coordinates, parameters)."""
        try:
            check_name(value)
        except TypeError:
            self.problem(path, f"a {what} name must be a string, got {show(value)}")
            return None
        except ExpressionError as exc:
            self.problem(path, f"invalid {what} name: {exc}")
            return None
        return value

    def parse(self, text: str, path: str, names: Collection[str]) -> sympy.Expr | None:
        """Parse a formula that may use ``names`` (in the order a message lists them; a dict or set
        for fast membership).

        The parser is given only the allowed names that occur in ``text``, so that parsing costs
        what the text costs, not the number of names in the file. A formula that fails is parsed
        again with every allowed name, so that its message lists them and suggests the closest;
        after ``_DETAILED_FAILURES`` such failures in one file the message of the first parse is
        kept (its list of names is then only the formula's own), which bounds the work for a file
        of thousands of broken formulas.
        """
        used = {n: self.symbols[n] for n in dict.fromkeys(_WORD.findall(text)) if n in names}
        try:
            return _parser.parse_expression(text, used)
        except ExpressionError as exc:
            error = exc
        if self.detailed_failures < _DETAILED_FAILURES:
            self.detailed_failures += 1
            try:
                return _parser.parse_expression(text, {n: self.symbols[n] for n in names})
            except ExpressionError as exc:
                error = exc
        self.problem(path, f"invalid expression: {error}")
        return None

    def number(self, value: object, path: str, *, scale: float = 1.0, infinite: bool = False) -> float | None:
        """A number, or a string expression of the parameters; multiplied by ``scale``."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.problem(path, f"expected a number (or an expression of the parameters), got {show(value)}")
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
                self.problem(path, f"the number {show(value)} is too large for double precision")
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
            self.problem(path, f"expected an array of 3 numbers, got {show(value)}")
            return None
        numbers = [self.number(v, join(path, k)) for k, v in enumerate(value)]
        return None if any(n is None for n in numbers) else numbers

    def direction(self, value: object, path: str) -> list[float] | None:
        """A non-zero 3-vector, returned normalised (robustly: no overflow for huge components)."""
        vector = self.vector(value, path)
        if vector is None:
            return None
        norm = math.hypot(*vector)
        if not (math.isfinite(norm) and norm > 1e-12):
            self.problem(path, f"expected a non-zero direction (it is normalised), got {show(value)}")
            return None
        return [v / norm for v in vector]

    def matrix(self, value: object, path: str) -> list[list[float]] | None:
        if not isinstance(value, list) or len(value) != 3:
            self.problem(path, f"expected a 3×3 array (3 rows of 3 numbers), got {show(value)}")
            return None
        rows = [self.vector(row, join(path, k)) for k, row in enumerate(value)]
        return None if any(r is None for r in rows) else rows

    def number_array(self, value: object, path: str, *, scale: float = 1.0, minimum: int = 0) -> list[float] | None:
        if not isinstance(value, list) or len(value) < minimum:
            at_least = f"at least {minimum} " if minimum else ""
            self.problem(path, f"expected an array of {at_least}numbers, got {show(value)}")
            return None
        numbers = [self.number(v, join(path, k), scale=scale) for k, v in enumerate(value)]
        return None if any(n is None for n in numbers) else numbers
    @property
    def angle_scale(self) -> float:
        """Radians per unit of the file's ``[units] angle``."""
        return ANGLE_UNITS[self.angle_unit]

    # ------------------------------------------------------------------ formulas and functions of the coordinates
    def coordinate_expression(self, text: str, path: str, *, output_angle: bool) -> sympy.Expr | None:
        """A formula of coordinates (in file units) and parameters, as a sympy expression in SI units."""
        expr = self.parse(text, path, self.formula_names)
        if expr is None:
            return None
        coordinates, angles = self.coordinate_symbols()
        expr = self.fold_constants(expr, path, coordinates)
        if expr is None:
            return None
        return self.to_si(expr, expr.free_symbols & angles, output_angle=output_angle)

    def coordinate_symbols(self) -> tuple[set[sympy.Symbol], set[sympy.Symbol]]:
        """The symbols of the coordinates and those of the angular ones (made once, after the coordinates are
        read: :meth:`~mbkron.io.reader_bodies.BodyReader.read_coordinates` resets them)."""
        if self._coordinate_symbols is None:
            self._coordinate_symbols = ({self.symbols[n] for n in self.coordinate_units}, set(self.angle_symbols()))
        return self._coordinate_symbols

    def angle_symbols(self, rates: bool = False) -> list[sympy.Symbol]:
        """Symbols of the angular coordinates (and, with ``rates``, of their rates)."""
        names = [n for n, unit in self.coordinate_units.items() if unit == "angle"]
        names += [n + VELOCITY_SUFFIX for n in names] if rates else []
        return [self.symbols[n] for n in names if n in self.symbols]

    def to_si(self, expr: sympy.Expr, angles: Iterable[sympy.Symbol], *, output_angle: bool) -> sympy.Expr:
        """Rewrite a formula in file units as one in SI units: the symbols ``angles`` stand for angles
        in the file's unit (exact factor pi/180 for degrees); ``output_angle``: the value is one too."""
        scale = exact_angle_scale(self.angle_unit)
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
        :func:`~mbkron.io.formulas.evaluate_expression`, never by sympy, and must be finite normal doubles. So the sympy
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
                if value is not None and not is_normal_double(value):
                    self.problem(path, f"a constant part of the expression evaluates to {value!r}, below double precision")
                    value = None
                failed = failed or value is None
                return sympy.S.Zero if value is None else sympy.Float(value)
            return node.func(*(rebuild(argument) for argument in node.args))

        result = rebuild(expr)
        return None if failed else result

    def gcv_options(self, table: dict, path: str) -> dict | None:
        """``half_order`` (required, an integer 1-:data:`~mbkron.numerics.gcvspl.MAX_HALF_ORDER`) and
        ``error_variance`` (default 0; in the unit of ``y`` squared as written; negative: generalized
        cross-validation) of a ``kind = "gcv"`` table; None (reported, or missing: reported by
        :meth:`keys`) when invalid."""
        if "half_order" not in table:
            return None
        half_order = table["half_order"]
        if isinstance(half_order, bool) or not isinstance(half_order, int) or not 1 <= half_order <= MAX_HALF_ORDER:
            self.problem(join(path, "half_order"), f"expected an integer 1-{MAX_HALF_ORDER} (the spline's degree is "
                                                   f"2·half_order − 1), got {show(half_order)}")
            return None
        variance = self.number(table.get("error_variance", 0.0), join(path, "error_variance"))
        return None if variance is None else {"half_order": half_order, "error_variance": variance}

    def affine_map(self, table: dict, path: str, key: str, scale: float) -> tuple[float, float] | None:
        """``key = [slope, intercept]`` of a tabulated function (``argument``: the table is evaluated at
        ``slope·q + intercept``, ``q`` in the file's unit; ``value``: its value ``v`` becomes
        ``slope·v + intercept``), the intercept in the unit of ``x`` or ``y`` (multiplied by ``scale``,
        theirs); ``(1, 0)`` when absent."""
        if key not in table:
            return 1.0, 0.0
        values = self.number_array(table[key], join(path, key))
        if values is None or len(values) != 2 or values[0] == 0.0:
            if values is not None:
                self.problem(join(path, key), f"expected [slope, intercept] with a non-zero slope, got {show(table[key])}")
            return None
        return values[0], values[1] * scale

    def function_variable(self, table: dict, path: str, output_scale: float) -> object:
        kind = self.string(table.get("type"), join(path, "type"), ("tabulated", "fourier"))
        if kind is None:
            return 0.0
        coordinate = table.get("coordinate")
        coordinate_path = join(path, "coordinate")
        if not isinstance(coordinate, str) or coordinate not in self.coordinate_units:
            known = ", ".join(self.coordinate_units) or "(none)"
            suggestion = suggest(coordinate, self.coordinate_units) if isinstance(coordinate, str) else ""
            self.problem(coordinate_path, f"expected the name of a coordinate ({known}), got {show(coordinate)}{suggestion}")
            coordinate = None
        input_scale = self.angle_scale if self.coordinate_units.get(coordinate) == "angle" else 1.0
        if kind == "tabulated":
            spline_kind = self.string(table.get("kind"), join(path, "kind"), (*SPLINE_KINDS, "gcv")) if "kind" in table else None
            gcv = spline_kind == "gcv"
            self.keys(table, path, ["type", "coordinate", "x", "y", "kind"] + ["half_order"] * gcv,
                      ["error_variance"] * gcv + ["argument", "value"],
                      {key: "only for `kind = \"gcv\"`" for key in ("half_order", "error_variance") if not gcv})
            # a GCV spline is fitted to the numbers as written (its smoothing search depends on their
            # units) and the units are converted around it, by its maps; the other kinds convert x, y
            x_scale, y_scale = (1.0, 1.0) if gcv else (input_scale, output_scale)
            x = self.number_array(table.get("x"), join(path, "x"), scale=x_scale, minimum=2) if "x" in table else None
            y = self.number_array(table.get("y"), join(path, "y"), scale=y_scale, minimum=2) if "y" in table else None
            options = self.gcv_options(table, path) if gcv else {}
            maps = [self.affine_map(table, path, key, scale) for key, scale in (("argument", x_scale), ("value", y_scale))]
            if None in (coordinate, x, y, spline_kind, options, *maps):
                return 0.0
            if gcv:
                self.fit_work += len(y) * options["half_order"]
                if self.fit_work > MAX_FILE_FIT_WORK:
                    self.problem(path, f"the GCV splines of the file are too many to fit: with these {len(y):,} knots at "
                                       f"half order {options['half_order']} they have {self.fit_work:,} knots × half_order, "
                                       f"more than {MAX_FILE_FIT_WORK:,} (see Limits in docs/model-format.md)")
                    return 0.0
            try:
                function = GCVSpline(x, y, **options) if gcv else tabulated_function(x, y, spline_kind)
            except ValueError as exc:
                self.problem(path, str(exc))
                return 0.0
            if gcv:  # u = c·q_file + d = (c/s_in)·q + d; F = s_out·(a·S(u) + b)
                (c, d), (a, b) = maps
                maps = [(c / input_scale, d), (output_scale * a, output_scale * b)]
            if maps != [(1.0, 0.0), (1.0, 0.0)]:
                function = AffineMapped(function, *maps)
        else:
            self.keys(table, path, ["type", "coordinate", "period"], ["a0", "a", "b"])
            period = self.number(table.get("period"), join(path, "period"), scale=input_scale) if "period" in table else None
            a0 = self.number(table.get("a0", 0.0), join(path, "a0"), scale=output_scale)
            a = self.number_array(table.get("a", []), join(path, "a"), scale=output_scale)
            b = self.number_array(table.get("b", []), join(path, "b"), scale=output_scale)
            if None in (coordinate, period, a0, a, b):
                return 0.0
            try:
                function = FourierSeries(period, a0, a, b)
            except ValueError as exc:
                self.problem(path, str(exc))
                return 0.0
        return CoordinateFunction(function, coordinate)
