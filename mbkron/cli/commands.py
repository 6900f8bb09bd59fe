"""The ``mbkron`` command line (see ``docs/cli.md``).

Commands: ``info`` (describe a model file), ``kinematics`` (poses and point kinematics at one
configuration or along a trajectory), ``moment-arms`` (muscle moment arms and lengths at one
configuration or along a sweep of one coordinate), ``simulate`` (forward dynamics), ``validate`` (the
validation report, from a source checkout) and ``demo``.

Exit status: 0 on success; 1 for an invalid model file or input, or a configuration at which the
model cannot be evaluated (one clear message on stderr, every problem of a model file listed); 2 for a
command-line usage error. Results are written atomically: a CSV file plus a JSON metadata file (model
SHA-256, mbkron version, command line, settings, timings).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io as text_io
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy
import sympy

import mbkron
from mbkron.kinematics import tree as kinematics
from mbkron.dynamics import loads as L
from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.expressions import ExpressionError, format_expression, parse_expression
from mbkron.jointvars.functions import CoordinateFunction
from mbkron.io.model_files import ExpressionValue, ModelFile, evaluate_expression, read_model_file
from mbkron.jointvars.explicit import Linear

__all__ = ["main"]

_PLOT_HINT = 'plotting needs matplotlib: pip install "mbkron[plot]"'
_CHUNK_ROWS = 2000  # trajectory rows per kinematics evaluation (bounds memory, drives the progress bar)
_MAX_SWEEP_ROWS = 1_000_000  # configurations of one `moment-arms` sweep


class CommandError(Exception):
    """A user error in a command's input: printed as one line, exit status 1."""


# ====================================================================== results
def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same directory, fsync, rename.

    Readers see either the old file or the complete new one, never a partial write.
    """
    directory = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _write_output(path: Path, data: bytes) -> None:
    try:
        write_atomically(path, data)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_csv(path: Path, columns: Sequence[str], table: np.ndarray) -> None:
    """A header and rows of numbers (17 significant digits, so values round-trip), atomically."""
    buffer = text_io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[format(v, ".17g") for v in row] for row in table])
    _write_output(path, buffer.getvalue().encode("utf-8"))


def _metadata(command: str, argv: Sequence[str], model_file: ModelFile, settings: dict, columns: list[dict],
              timings: dict[str, float], outputs: dict[str, str | None]) -> dict:
    return {
        "command": command,
        "command_line": ["mbkron", *argv],
        "mbkron_version": mbkron.__version__,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": {"path": model_file.source, "sha256": model_file.sha256, "name": model_file.model.name,
                  "angle_unit": model_file.angle_unit},
        "settings": settings,
        "columns": columns,
        "timings_s": {k: round(v, 6) for k, v in timings.items()},
        "outputs": outputs,
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                        "sympy": sympy.__version__, "platform": platform.platform()},
    }


def _progress(chunks: list, enabled: bool, description: str) -> Iterator:
    """Iterate over ``chunks`` with a tqdm progress bar when enabled, tqdm is installed and stderr is a terminal."""
    if enabled and len(chunks) > 1 and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            return iter(chunks)
        return iter(tqdm(chunks, desc=description, unit="chunk", file=sys.stderr))
    return iter(chunks)


def _require_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CommandError(_PLOT_HINT) from None
    return plt


# ====================================================================== input
def _value(text: str, model_file: ModelFile, what: str) -> float:
    """A number given on the command line: a literal or an expression of the model's parameters."""
    try:
        expr = parse_expression(text.strip(), list(model_file.parameters))
    except ExpressionError as exc:
        raise CommandError(f"{what}: {exc}") from None
    value = float(evaluate_expression(expr, model_file.parameters))
    if not np.isfinite(value):
        raise CommandError(f"{what}: {text!r} is not a finite number")
    return value


def _assignments(spec: str | None, model_file: ModelFile, option: str, base: np.ndarray | None = None) -> np.ndarray:
    """``"a1=30,a2=45"`` in the file's units → values in SI units (unlisted coordinates: ``base``, default 0)."""
    model = model_file.model
    values = np.zeros(model.nq) if base is None else np.array(base, dtype=float)
    if not spec:
        return values
    seen = set()
    for item in spec.split(","):
        name, equals, text = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise CommandError(f"{option}: expected NAME=VALUE pairs separated by commas, got {item.strip()!r}")
        if name not in model.coordinates:
            raise CommandError(f"{option}: unknown coordinate `{name}`; the model has: {', '.join(model.coordinates)}")
        if name in seen:
            raise CommandError(f"{option}: coordinate `{name}` is given twice")
        seen.add(name)
        values[model.coordinates.index(name)] = _value(text, model_file, f"{option} {name}") * model_file.coordinate_scale(name)
    return values


@dataclass(frozen=True)
class _Point:
    label: str
    body: str
    position: tuple[float, float, float]


def _points(specs: Sequence[str], model_file: ModelFile) -> list[_Point]:
    """``[LABEL=]BODY:x,y,z`` (metres, body frame; numbers or parameter expressions)."""
    points = []
    for number, spec in enumerate(specs, start=1):
        label, equals, rest = spec.partition("=")
        if not equals:
            label, rest = f"p{number}", spec
        body, colon, coordinates = rest.partition(":")
        body, label = body.strip(), label.strip()
        if not colon or not body or not label:
            raise CommandError(f"--point: expected [LABEL=]BODY:x,y,z, got {spec!r}")
        if body not in model_file.model.bodies:
            raise CommandError(f"--point {spec}: unknown body `{body}`; the model has: {', '.join(model_file.model.bodies)}")
        parts = coordinates.split(",")
        if len(parts) != 3:
            raise CommandError(f"--point {spec}: expected 3 coordinates x,y,z (metres, in the body's frame)")
        position = tuple(_value(p, model_file, f"--point {label}") for p in parts)
        if any(p.label == label for p in points):
            raise CommandError(f"--point: the label `{label}` is used twice")
        points.append(_Point(label, body, position))
    return points


def _trajectory(path: str, model_file: ModelFile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """``t, q, q̇, q̈`` (SI) from a CSV file with a header ``t, <coordinates>[, <c>_dot, <c>_ddot]``.

    Coordinates not in the file keep 0; rates not in the file are derivatives of a cubic spline
    (scipy, not-a-knot) through ``q(t)``.
    """
    from scipy.interpolate import CubicSpline as SciPySpline

    model = model_file.model
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read trajectory {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except csv.Error as exc:
        raise CommandError(f"{path}: not a CSV file: {exc}") from None
    rows = [r for r in rows if r and any(cell.strip() for cell in r)]
    if not rows:
        raise CommandError(f"{path}: empty; expected a header row naming `t` and coordinates")
    header = [h.strip() for h in rows[0]]
    allowed = {"t"} | {f"{c}{s}" for c in model.coordinates for s in ("", "_dot", "_ddot")}
    unknown = [h for h in header if h not in allowed]
    if unknown or "t" not in header or len(set(header)) != len(header):
        raise CommandError(
            f"{path}: the header must name `t` once and coordinates ({', '.join(model.coordinates)}), optionally "
            f"`<coordinate>_dot` and `<coordinate>_ddot`; got {', '.join(header)}"
        )
    data = np.empty((len(rows) - 1, len(header)))
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise CommandError(f"{path}:{line}: expected {len(header)} values, got {len(row)}")
        try:
            data[line - 2] = [float(cell) for cell in row]
        except ValueError:
            raise CommandError(f"{path}:{line}: not a number in {row}") from None
    if not np.all(np.isfinite(data)):
        raise CommandError(f"{path}: values must be finite numbers")
    t = data[:, header.index("t")]
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise CommandError(f"{path}: `t` must have at least 2 strictly increasing values")
    q = np.zeros((t.size, model.nq))
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    derived = []
    for k, name in enumerate(model.coordinates):
        scale = model_file.coordinate_scale(name)
        if name not in header:
            continue
        q[:, k] = data[:, header.index(name)] * scale
        spline = SciPySpline(t, q[:, k])
        for suffix, target, order in (("_dot", qd, 1), ("_ddot", qdd, 2)):
            if name + suffix in header:
                target[:, k] = data[:, header.index(name + suffix)] * scale
            else:
                target[:, k] = spline(t, order)
                derived.append(name + suffix)
    settings = {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(), "rows": int(t.size),
                "derived_by_cubic_spline": derived}
    return t, q, qd, qdd, settings


# ====================================================================== info
def _fmt(values, digits: int = 6) -> str:
    array = np.atleast_1d(np.asarray(values, dtype=float))
    text = ", ".join(f"{v:.{digits}g}" for v in array)
    return f"({text})" if array.size > 1 else text


def _describe_variable(body) -> str:
    variable = body.variable
    if isinstance(variable, str):
        return variable
    if isinstance(variable, CoordinateFunction):
        return variable.describe()
    if isinstance(variable, Linear):
        terms = [f"{c:+.6g}*{n}" for n, c in variable.coefficients.items()]
        return " ".join(terms + ([f"{variable.constant:+.6g}"] if variable.constant else [])).lstrip("+")
    if isinstance(variable, sympy.Expr):
        try:
            return format_expression(variable)
        except (ExpressionError, TypeError):
            return str(variable)
    return repr(variable)


def _describe_value(value, unit: str) -> str:
    if isinstance(value, ExpressionValue):
        texts = value.texts()
        return (texts if isinstance(texts, str) else "(" + ", ".join(texts) + ")") + f" {unit} (expression, SI)"
    if callable(value):
        return "a Python callable"
    return f"{_fmt(value)} {unit}"


def _describe_load(load) -> str:
    if isinstance(load, L.PointForce):
        return f"point force on {load.body} at {_fmt(load.point)} m: {_describe_value(load.force, 'N')} [{load.frame} frame]"
    if isinstance(load, L.BodyTorque):
        return f"torque on {load.body}: {_describe_value(load.torque, 'N·m')} [{load.frame} frame]"
    if isinstance(load, L.JointTorque):
        return f"joint torque on the joint of {load.joint}: {_describe_value(load.torque, 'N·m or N')}"
    if isinstance(load, L.GeneralizedForce):
        return f"generalized force on {load.coordinate}: {_describe_value(load.value, 'N·m or N')}"
    if isinstance(load, L.SpringDamper):
        return (f"spring-damper {load.body_a} {_fmt(load.point_a)} ↔ {load.body_b} {_fmt(load.point_b)}: "
                f"k = {load.stiffness:.6g} N/m, c = {load.damping:.6g} N·s/m, free length {load.free_length:.6g} m")
    if isinstance(load, L.LineForce):
        return (f"line force {load.body_a} {_fmt(load.point_a)} ↔ {load.body_b} {_fmt(load.point_b)}: "
                f"tension {_describe_value(load.tension, 'N')}")
    return repr(load)


def _info(args: argparse.Namespace) -> int:
    model_file = read_model_file(args.model)
    model = model_file.model
    unit = model_file.angle_unit
    scale = model_file.angle_scale
    lines = [f"model       {model.name}" + (f" — {model_file.description}" if model_file.description else ""),
             f"file        {model_file.source} (sha256 {model_file.sha256[:16]}…)",
             f"units       angles in {unit} in the file and on the command line (radians inside), lengths m, masses kg",
             f"gravity     {_fmt(model.gravity)} m/s²", "", "tree"]
    children: dict[str, list] = {}
    for body in model.body_records:
        children.setdefault(body.parent, []).append(body)

    def walk(name: str, indent: str) -> None:
        kids = children.get(name, [])
        for i, body in enumerate(kids):
            last = i == len(kids) - 1
            if body.joint == kinematics.FIXED:
                joint = "fixed"
            else:
                axis = body.rotation_axis if body.joint == kinematics.REVOLUTE else body.translation_axis
                joint = f"{body.joint} about {_fmt(axis, 4)}" if body.joint == kinematics.REVOLUTE else f"{body.joint} along {_fmt(axis, 4)}"
            lines.append(f"{indent}{'└─' if last else '├─'} {body.name}  [{joint}; mass {body.mass:.6g} kg, "
                         f"com {_fmt(body.com, 4)} m; offset {_fmt(body.offset[:3, 3], 4)} m]")
            walk(body.name, indent + ("   " if last else "│  "))

    lines.append("ground")
    walk(mbkron.model.model.GROUND, "")
    lines += ["", f"coordinates (q, {model.nq})"]
    for c in model.coordinate_records:
        factor = scale if c.unit == "rad" else 1.0
        shown = unit if c.unit == "rad" else c.unit
        low, high = (v / factor for v in c.range)
        lines.append(f"  {c.name:<14} {shown:<4} range [{low:.6g}, {high:.6g}]  default {c.default / factor:.6g}"
                     + ("  periodic" if c.periodic else ""))
    lines += ["", f"joint variables (f, {model.nj}; SI units)"]
    for body in model.body_records:
        if body.joint != kinematics.FIXED:
            lines.append(f"  {body.name:<14} {model_file.solved.get(body.name) or _describe_variable(body)}")
    lines += ["", f"loads ({len(model.loads)})"]
    lines += [f"  {i}: {_describe_load(load)}" for i, load in enumerate(model.loads)] or ["  none"]
    lines += ["", f"muscles ({len(model.muscles)})"]
    lines += [f"  {path.name:<14} {len(path.points)} path points, "
              + ("Hill (Thelen 2003)" if path.hill is not None else "path only")
              for path in (model.muscle_set.paths if model.muscle_set is not None else ())] or ["  none"]
    if model_file.parameters:
        lines += ["", f"parameters ({len(model_file.parameters)})"]
        lines += [f"  {name} = {value:.10g}" for name, value in model_file.parameters.items()]
    print("\n".join(lines))
    return 0


# ====================================================================== kinematics
def _kinematics(args: argparse.Namespace) -> int:
    argv = args.argv
    if args.plot:
        _require_matplotlib()
    started = time.perf_counter()
    model_file = read_model_file(args.model)
    model = model_file.model
    points = _points(args.point, model_file)
    loaded = time.perf_counter()
    if args.trajectory:
        if args.q or args.qd or args.qdd:
            raise CommandError("give either --trajectory or --q/--qd/--qdd, not both")
        t, q, qd, qdd, trajectory_settings = _trajectory(args.trajectory, model_file)
        settings: dict = {"trajectory": trajectory_settings}
    else:
        t = None
        q = _assignments(args.q, model_file, "--q")[None]
        qd = _assignments(args.qd, model_file, "--qd")[None]
        qdd = _assignments(args.qdd, model_file, "--qdd")[None]
        settings = {"q": args.q or "", "qd": args.qd or "", "qdd": args.qdd or ""}
    settings["points"] = {p.label: {"body": p.body, "position_m": list(p.position)} for p in points}

    columns, units = _kinematics_columns(model_file, points, trajectory=t is not None)
    chunks = [slice(start, start + _CHUNK_ROWS) for start in range(0, q.shape[0], _CHUNK_ROWS)]
    table = np.empty((q.shape[0], len(columns)))
    for chunk in _progress(chunks, not args.no_progress, "kinematics"):
        table[chunk] = _kinematics_rows(model_file, points, t if t is None else t[chunk], q[chunk], qd[chunk], qdd[chunk])
    computed = time.perf_counter()

    output = Path(args.output or f"{Path(args.model).stem}_kinematics.csv")
    _write_csv(output, columns, table)
    figure = output.with_suffix(".png") if args.plot else None
    if figure is not None:
        _write_output(figure, _plot_kinematics(model_file, points, columns, table, t is not None))
    written = time.perf_counter()
    metadata_path = output.with_suffix(".json")
    timings = {"load": loaded - started, "compute": computed - loaded, "write": written - computed}
    metadata = _metadata("kinematics", argv, model_file, settings,
                         [{"name": c, "unit": u} for c, u in zip(columns, units)], timings,
                         {"csv": str(output), "png": str(figure) if figure else None})
    _write_output(metadata_path, (json.dumps(metadata, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if table.shape[0] == 1:
        _print_configuration(model, points, columns, table[0])
    print(f"wrote {output} ({table.shape[0]} row{'s' if table.shape[0] != 1 else ''}, {len(columns)} columns), "
          f"{metadata_path}" + (f", {figure}" if figure else ""))
    return 0


def _kinematics_columns(model_file: ModelFile, points: list[_Point], trajectory: bool) -> tuple[list[str], list[str]]:
    model = model_file.model
    columns, units = (["t"], ["s"]) if trajectory else ([], [])
    for suffix, per in (("", ""), ("_dot", "/s"), ("_ddot", "/s²")):
        for name in model.coordinates:
            unit = model_file.angle_unit if model.coordinate(name).unit == "rad" else model.coordinate(name).unit
            columns.append(name + suffix)
            units.append(unit + per)
    for body in model.bodies:
        columns += [f"{body}.{axis}" for axis in "xyz"] + [f"{body}.R{r}{c}" for r in "123" for c in "123"]
        units += ["m"] * 3 + ["1"] * 9
    for point in points:
        for quantity, unit in (("", "m"), ("v", "m/s"), ("a", "m/s²")):
            columns += [f"{point.label}.{quantity}{axis}" for axis in "xyz"]
            units += [unit] * 3
    return columns, units


def _kinematics_rows(model_file: ModelFile, points: list[_Point], t, q, qd, qdd) -> np.ndarray:
    model = model_file.model
    kin = model.kinematics(q, order=2)
    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    parts = [] if t is None else [t[:, None]]
    parts += [q / scales, qd / scales, qdd / scales]
    parts += [np.concatenate([kin.T[:, :, :3, 3], kin.T[:, :, :3, :3].reshape(q.shape[0], -1, 9)], axis=-1).reshape(q.shape[0], -1)]
    for point in points:
        body = model.body_index(point.body)
        position = np.asarray(point.position)
        parts += [kinematics.point_positions(kin, body, position), kinematics.point_velocities(kin, body, position, qd),
                  kinematics.point_accelerations(kin, body, position, qd, qdd)]
    return np.concatenate(parts, axis=-1)


def _print_configuration(model, points: list[_Point], columns: list[str], row: np.ndarray) -> None:
    value = dict(zip(columns, row))
    print(f"{'':<16}{'x':>12}{'y':>12}{'z':>12}   (m, ground frame)")
    for body in model.bodies:
        print(f"{body + ' origin':<16}" + "".join(f"{value[f'{body}.{a}']:12.6f}" for a in "xyz"))
    for point in points:
        for quantity, unit in (("", "m"), ("v", "m/s"), ("a", "m/s²")):
            label = f"{point.label}" + (f" {quantity}" if quantity else "")
            print(f"{label:<16}" + "".join(f"{value[f'{point.label}.{quantity}{a}']:12.6f}" for a in "xyz") + f"   {unit}")


def _plot_kinematics(model_file: ModelFile, points: list[_Point], columns: list[str], table: np.ndarray,
                     trajectory: bool) -> bytes:
    plt = _require_matplotlib()
    model = model_file.model
    index = {c: i for i, c in enumerate(columns)}
    figure, axes = plt.subplots(1, 2 if trajectory else 1, figsize=(11 if trajectory else 6, 5), squeeze=False)
    sketch = axes[0, -1]
    rows = [0, table.shape[0] - 1] if trajectory else [0]
    for row, style in zip(rows, ("-", "--")):
        for body in model.body_records:
            end = table[row, [index[f"{body.name}.x"], index[f"{body.name}.y"]]]
            start = (0.0, 0.0) if body.parent == mbkron.model.model.GROUND else table[row, [index[f"{body.parent}.x"], index[f"{body.parent}.y"]]]
            sketch.plot([start[0], end[0]], [start[1], end[1]], "o" + style, color="0.3")
        for point in points:
            origin = table[row, [index[f"{point.body}.x"], index[f"{point.body}.y"]]]
            end = table[row, [index[f"{point.label}.x"], index[f"{point.label}.y"]]]
            sketch.plot([origin[0], end[0]], [origin[1], end[1]], style, color="0.6")
    for point in points:
        sketch.plot(table[:, index[f"{point.label}.x"]], table[:, index[f"{point.label}.y"]], ".-" if trajectory else "s",
                    label=point.label)
    sketch.set_aspect("equal", adjustable="datalim")
    sketch.set_xlabel("x (m)")
    sketch.set_ylabel("y (m)")
    sketch.set_title(f"{model.name}, x–y plane" + (" (first sample —, last --)" if trajectory else ""))
    if trajectory:
        ax = axes[0, 0]
        t = table[:, index["t"]]
        for point in points or []:
            for a in "xyz":
                ax.plot(t, table[:, index[f"{point.label}.{a}"]], label=f"{point.label}.{a}")
        if not points:
            for body in model.bodies:
                for a in "xy":
                    ax.plot(t, table[:, index[f"{body}.{a}"]], label=f"{body}.{a}")
        ax.set_xlabel("t (s)")
        ax.set_ylabel("position (m)")
        ax.legend(fontsize="small")
    if points:
        sketch.legend(fontsize="small")
    figure.tight_layout()
    buffer = text_io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


# ====================================================================== moment arms
def _sweep_values(args: argparse.Namespace, model_file: ModelFile) -> np.ndarray | None:
    """The swept coordinate's values in the file's units (``None`` without ``--sweep``)."""
    model = model_file.model
    if args.sweep is None:
        given = [option for option, value in (("--from", args.start), ("--to", args.stop), ("--step", args.step))
                 if value is not None]
        if given:
            raise CommandError(f"{', '.join(given)} need --sweep COORDINATE")
        return None
    if args.sweep not in model.coordinates:
        raise CommandError(f"--sweep: unknown coordinate `{args.sweep}`; the model has: {', '.join(model.coordinates)}")
    scale = model_file.coordinate_scale(args.sweep)
    low, high = (bound / scale for bound in model.coordinate(args.sweep).range)
    start = low if args.start is None else _value(args.start, model_file, "--from")
    stop = high if args.stop is None else _value(args.stop, model_file, "--to")
    step = 1.0 if args.step is None else _value(args.step, model_file, "--step")
    if not (np.isfinite(start) and np.isfinite(stop)):
        raise CommandError(f"--sweep {args.sweep}: the coordinate's range is unbounded; give --from and --to")
    if step <= 0 or stop < start:
        raise CommandError(f"--sweep {args.sweep}: need --from ≤ --to and --step > 0, got from {start:.6g}, "
                           f"to {stop:.6g}, step {step:.6g}")
    count = int(np.floor((stop - start) / step * (1 + 1e-12) + 1e-9)) + 1
    if count > _MAX_SWEEP_ROWS:
        raise CommandError(f"--sweep {args.sweep}: {count} configurations; at most {_MAX_SWEEP_ROWS} (use a larger --step)")
    return start + step * np.arange(count)


def _moment_arms(args: argparse.Namespace) -> int:
    argv = args.argv
    if args.plot:
        _require_matplotlib()
    started = time.perf_counter()
    model_file = read_model_file(args.model)
    model = model_file.model
    if not model.muscles:
        raise CommandError(f"model `{model.name}` has no muscles (see docs/model-format.md, [muscles.NAME])")
    sweep = _sweep_values(args, model_file)
    base = _assignments(args.q, model_file, "--q", base=model.default_q)
    if sweep is None:
        if args.plot:
            raise CommandError("--plot needs --sweep COORDINATE (it plots moment arms against the swept coordinate)")
        q = base[None]
    else:
        listed = {item.partition("=")[0].strip() for item in (args.q or "").split(",")}
        if args.sweep in listed:
            raise CommandError(f"`{args.sweep}` is swept: do not also give it in --q")
        q = np.repeat(base[None], sweep.size, axis=0)
        q[:, model.coordinates.index(args.sweep)] = sweep * model_file.coordinate_scale(args.sweep)
    loaded = time.perf_counter()

    columns, units = _moment_arm_columns(model_file)
    chunks = [slice(start, start + _CHUNK_ROWS) for start in range(0, q.shape[0], _CHUNK_ROWS)]
    table = np.empty((q.shape[0], len(columns)))
    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    for chunk in _progress(chunks, not args.no_progress, "moment arms"):
        rows = q[chunk]
        table[chunk] = np.concatenate([rows / scales, model.moment_arms(rows).reshape(rows.shape[0], -1),
                                       model.muscle_lengths(rows)], axis=-1)
    if sweep is not None:
        table[:, model.coordinates.index(args.sweep)] = sweep  # exactly as requested, not via radians
    computed = time.perf_counter()

    output = Path(args.output or f"{Path(args.model).stem}_moment_arms.csv")
    _write_csv(output, columns, table)
    figure = output.with_suffix(".png") if args.plot else None
    if figure is not None:
        _write_output(figure, _plot_moment_arms(model_file, args.sweep, table))
    written = time.perf_counter()
    settings = {"q": args.q or "", "sweep": None if sweep is None else {
        "coordinate": args.sweep, "from": float(sweep[0]), "to": float(sweep[-1]), "count": int(sweep.size),
        "unit": _coordinate_unit(model_file, args.sweep)}, "sign_convention": "R = -dL/dq (OpenSim)"}
    timings = {"load": loaded - started, "compute": computed - loaded, "write": written - computed}
    metadata_path = output.with_suffix(".json")
    metadata = _metadata("moment-arms", argv, model_file, settings,
                         [{"name": c, "unit": u} for c, u in zip(columns, units)], timings,
                         {"csv": str(output), "png": str(figure) if figure else None})
    _write_output(metadata_path, (json.dumps(metadata, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    if sweep is None:
        _print_moment_arms(model, table[0, model.nq:])
    print(f"wrote {output} ({table.shape[0]} row{'s' if table.shape[0] != 1 else ''}, {len(columns)} columns), "
          f"{metadata_path}" + (f", {figure}" if figure else ""))
    return 0


def _moment_arm_columns(model_file: ModelFile) -> tuple[list[str], list[str]]:
    """The coordinates (file units), ``<coordinate>.<muscle>`` (R, row-major) and ``L.<muscle>``."""
    model = model_file.model
    columns = list(model.coordinates)
    units = [_coordinate_unit(model_file, name) for name in model.coordinates]
    for name in model.coordinates:
        columns += [f"{name}.{muscle}" for muscle in model.muscles]
        units += ["m" if model.coordinate(name).unit == "rad" else "1"] * len(model.muscles)
    columns += [f"L.{muscle}" for muscle in model.muscles]
    units += ["m"] * len(model.muscles)
    return columns, units


def _print_moment_arms(model, values: np.ndarray) -> None:
    """Moment arms (one column per coordinate) and lengths at a single configuration."""
    arms = values[:model.nq * len(model.muscles)].reshape(model.nq, -1)
    lengths = values[model.nq * len(model.muscles):]
    print(f"{'muscle':<12}" + "".join(f"{name:>16}" for name in model.coordinates) + f"{'length':>12}")
    for m, muscle in enumerate(model.muscles):
        print(f"{muscle:<12}" + "".join(f"{arms[k, m]:16.6f}" for k in range(model.nq)) + f"{lengths[m]:12.6f}")
    print("(moment arms R = -dL/dq in m per rad or dimensionless per m of a translation; lengths in m)")


def _plot_moment_arms(model_file: ModelFile, swept: str, table: np.ndarray) -> bytes:
    """Moment arms of every muscle against the swept coordinate, one panel per coordinate (Fig. 14, 15)."""
    plt = _require_matplotlib()
    model = model_file.model
    muscles = len(model.muscles)
    x = table[:, model.coordinates.index(swept)]
    figure, axes = plt.subplots(1, model.nq, figsize=(4.5 * model.nq + 1.5, 4.5), squeeze=False)
    for k, (ax, name) in enumerate(zip(axes[0], model.coordinates)):
        block = table[:, model.nq + k * muscles:model.nq + (k + 1) * muscles]
        for m, muscle in enumerate(model.muscles):
            ax.plot(x, block[:, m], ("-", "--", ":")[m // 10 % 3], label=muscle)  # 10 colours per style
        ax.set_xlabel(f"{swept} ({_coordinate_unit(model_file, swept)})")
        ax.set_ylabel(f"moment arm about {name} ({'m' if model.coordinate(name).unit == 'rad' else '1'})")
        ax.set_title(f"{model.name}: {name}")
        ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    figure.tight_layout()
    buffer = text_io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


# ====================================================================== simulate
def _simulate(args: argparse.Namespace) -> int:
    from mbkron.integrate.simulate import METHODS, simulate

    argv = args.argv
    if args.plot:
        _require_matplotlib()
    if args.method not in METHODS:
        raise CommandError(f"--method: unknown solver {args.method!r}; expected one of {', '.join(METHODS)}")
    if not (np.isfinite(args.t_end) and args.t_end > 0) or args.samples < 2:
        raise CommandError("--t-end must be a positive number of seconds and --samples at least 2")
    started = time.perf_counter()
    model_file = read_model_file(args.model)
    model = model_file.model
    q0 = _assignments(args.q0, model_file, "--q0", base=model.default_q)
    qd0 = _assignments(args.qd0, model_file, "--qd0")
    loaded = time.perf_counter()
    bar = _time_bar(args.t_end, not args.no_progress)
    run = simulate(model, (0.0, args.t_end), q0, qd0, method=args.method, rtol=args.rtol, atol=args.atol,
                   t_eval=np.linspace(0.0, args.t_end, args.samples), progress=bar.update if bar else None)
    if bar:
        bar.close()
    computed = time.perf_counter()

    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    columns = ["t"] + [f"{n}{s}" for s in ("", "_dot", "_ddot") for n in model.coordinates] + [
        f"f.{j}" for j in model.joints]
    units = ["s"] + [_coordinate_unit(model_file, n) + per for per in ("", "/s", "/s²") for n in model.coordinates] + [
        "rad" if model.body(j).joint == "revolute" else "m" for j in model.joints]
    table = np.column_stack([run.t, run.q / scales, run.qd / scales, run.qdd / scales, run.joint_variables])
    directory = Path(args.out)
    directory.mkdir(parents=True, exist_ok=True)
    output = directory / f"{Path(args.model).stem}_simulation.csv"
    _write_csv(output, columns, table)
    figure = output.with_suffix(".png") if args.plot and len(run.t) else None
    if figure is not None:
        _write_output(figure, _plot_simulation(model_file, run, scales))
    written = time.perf_counter()
    settings = dict(run.settings, samples=args.samples, q0=list(q0), qd0=list(qd0), status=run.status,
                    message=run.message, nfev=run.nfev, njev=run.njev, nlu=run.nlu, steps=run.n_steps)
    timings = {"load": loaded - started, "simulate": computed - loaded, "write": written - computed}
    metadata_path = output.with_suffix(".json")
    metadata = _metadata("simulate", argv, model_file, settings,
                         [{"name": c, "unit": u} for c, u in zip(columns, units)], timings,
                         {"csv": str(output), "png": str(figure) if figure else None})
    _write_output(metadata_path, (json.dumps(metadata, indent=2, ensure_ascii=False, default=float) + "\n").encode())
    print(f"{model.name}: {run.message}; {run.n_steps} steps, {run.nfev} evaluations, {computed - loaded:.2f} s")
    print(f"wrote {output} ({len(run.t)} rows), {metadata_path}" + (f", {figure}" if figure else ""))
    if not run.success:
        print(f"mbkron: error: the simulation stopped early: {run.message} (the rows computed up to then are "
              f"written)", file=sys.stderr)
        return 1
    return 0


def _coordinate_unit(model_file: ModelFile, name: str) -> str:
    unit = model_file.model.coordinate(name).unit
    return model_file.angle_unit if unit == "rad" else unit


def _time_bar(t_end: float, enabled: bool):
    """A tqdm bar over simulated time when enabled, tqdm is installed and stderr is a terminal."""
    if not (enabled and sys.stderr.isatty()):
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None

    class TimeBar:
        def __init__(self):
            self.bar = tqdm(total=t_end, desc="simulate", unit="s", file=sys.stderr,
                            bar_format="{l_bar}{bar}| t = {n:.4g} of {total:.4g} s [{elapsed}<{remaining}]")

        def update(self, t: float) -> None:
            self.bar.update(min(t, t_end) - self.bar.n)

        def close(self) -> None:
            self.bar.close()

    return TimeBar()


def _plot_simulation(model_file: ModelFile, run, scales: np.ndarray) -> bytes:
    """q(t) and q̇(t), one panel each (the dissertation's Fig. 18 for Andrews' squeezer)."""
    plt = _require_matplotlib()
    model = model_file.model
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for k, name in enumerate(model.coordinates):
        unit = _coordinate_unit(model_file, name)
        axes[0].plot(run.t, run.q[:, k] / scales[k], label=f"{name} ({unit})")
        axes[1].plot(run.t, run.qd[:, k] / scales[k], label=f"{name}_dot ({unit}/s)")
    for ax, title in zip(axes, ("coordinates", "rates")):
        ax.set_xlabel("t (s)")
        ax.set_title(f"{model.name}: {title}")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
    figure.tight_layout()
    buffer = text_io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


# ====================================================================== demo
def _demo_arm() -> mbkron.Model:
    """A planar three-link arm (shoulder, elbow, wrist) with a rhythm-like coupled wrist."""
    elbow = sympy.Symbol("elbow")
    b = mbkron.ModelBuilder(name="demo-arm", gravity=(0.0, -9.81, 0.0))
    b.add_coordinate("shoulder", range=(-np.pi, np.pi)).add_coordinate("elbow", range=(0.0, 2.6))
    b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder", mass=2.0, com=(0.15, 0, 0),
               inertia=np.diag([0.0, 0.015, 0.015]))
    b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable="elbow", offset=(0.30, 0, 0),
               mass=1.2, com=(0.13, 0, 0), inertia=np.diag([0.0, 0.007, 0.007]))
    # An empirical rhythm: the wrist follows the elbow, f = 0.2 sin(elbow) (radians).
    b.add_body("hand", parent="forearm", axis=(0, 0, 1), variable=0.2 * sympy.sin(elbow),
               offset=(0.26, 0, 0), mass=0.4, com=(0.06, 0, 0), inertia=np.diag([0.0, 0.001, 0.001]))
    return b.build()


def _demo(args: argparse.Namespace) -> int:
    model = _demo_arm()
    t = np.linspace(0.0, args.t_end, args.samples)
    q = np.stack([0.8 * np.sin(2 * t), 1.2 + 0.5 * np.cos(3 * t)], axis=-1)
    qd = np.stack([1.6 * np.cos(2 * t), -1.5 * np.sin(3 * t)], axis=-1)
    qdd = np.stack([-3.2 * np.sin(2 * t), -4.5 * np.cos(3 * t)], axis=-1)
    fingertip = (0.12, 0.0, 0.0)
    p = model.point_position("hand", fingertip, q)
    v = model.point_velocity("hand", fingertip, q, qd)
    a = model.point_acceleration("hand", fingertip, q, qd, qdd)
    print(f"# {model.name}: bodies {', '.join(model.bodies)}; coordinates {', '.join(model.coordinates)}")
    print("# fingertip kinematics (Eq. 41, 44, 57), SI units")
    print(f"{'t':>6} {'x':>9} {'y':>9} {'vx':>9} {'vy':>9} {'ax':>9} {'ay':>9}")
    for row in zip(t, p[:, 0], p[:, 1], v[:, 0], v[:, 1], a[:, 0], a[:, 1]):
        print(" ".join(f"{x:9.4f}" if i else f"{x:6.3f}" for i, x in enumerate(row)))
    return 0


def _validation_report():
    """The ``validation.report`` module of the source checkout (cwd, or the one mbkron is imported from)."""
    for root in (Path.cwd(), Path(mbkron.__file__).resolve().parents[1]):
        if (root / "validation" / "report.py").is_file():
            if str(root) not in sys.path:
                sys.path.insert(0, str(root))
            from validation import report

            return report
    raise CommandError("run from the repository root (the validation/ references are not installed with the package)")


def _validate(args: argparse.Namespace) -> int:
    report_module = _validation_report()
    out = Path(args.out) if args.out else report_module.DEFAULT_OUT
    if args.figures:
        _require_matplotlib()
        from validation import figures

        try:
            written = figures.make_figures(out / "figures" if args.out else figures.OUT)
        except FileNotFoundError as exc:
            raise CommandError(f"cannot draw the figures: {exc}") from None
        print(f"wrote {len(written)} figures to {written[0].parent if written else figures.OUT}")
    report = report_module.run(args.quick, progress=None if args.quiet else report_module.print_case)
    try:
        text_path, json_path = report_module.write(report, out)
    except OSError as exc:
        raise CommandError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    print(f"{'all cases passed' if report.passed else 'FAILED'}: wrote {text_path} and {json_path}")
    return 0 if report.passed else 1


# ====================================================================== parser
def _figure_and_progress_options(command: argparse.ArgumentParser, figure: str) -> None:
    """``--plot`` and ``--no-progress``, the same for every command that writes results."""
    command.add_argument("--plot", action="store_true", help=f'also write {figure} (needs: pip install "mbkron[plot]")')
    command.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only on a terminal "
                         'with the progress extra: pip install "mbkron[progress]")')


def _parser() -> argparse.ArgumentParser:
    def command(name: str, help: str, description: str, example: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help, description=f"{description}\n\nexample:\n  {example}",
                                   formatter_class=argparse.RawDescriptionHelpFormatter)

    parser = argparse.ArgumentParser(
        prog="mbkron", description="Empirically-based multibody dynamics.\n\nexample:\n  mbkron info models/two_link_arm.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mbkron {mbkron.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = command("info", "describe a model file: tree, coordinates, joint variables, loads, muscles",
                   "Print a model file's body tree, coordinates, joint variables, loads, muscles and parameters.",
                   "mbkron info models/two_link_arm.toml")
    info.add_argument("model", metavar="MODEL", help="model definition file (TOML, docs/model-format.md)")
    info.set_defaults(run=_info)

    kin = command(
        "kinematics", "body poses and point positions, velocities, accelerations",
        "Body poses (origin and rotation matrix in the ground frame) and the position, velocity and acceleration\n"
        "of chosen body points, at one configuration (--q, --qd, --qdd) or along a trajectory (--trajectory).\n"
        "Values of coordinates are in the model file's units (its [units] angle for angles); outputs are SI.\n"
        "Writes OUTPUT (CSV) and OUTPUT with suffix .json (metadata), atomically.",
        'mbkron kinematics models/two_link_arm.toml --q "alpha1=30,alpha2=45" --point hand=link2:L2,0,0')
    kin.add_argument("model", metavar="MODEL", help="model definition file (TOML)")
    kin.add_argument("--q", metavar="NAME=VALUE,...", help="configuration; unlisted coordinates are 0")
    kin.add_argument("--qd", metavar="NAME=VALUE,...", help="coordinate rates (units/s); default 0")
    kin.add_argument("--qdd", metavar="NAME=VALUE,...", help="coordinate accelerations (units/s²); default 0")
    kin.add_argument("--trajectory", metavar="CSV",
                     help="CSV with a header naming `t` and coordinates (optionally <name>_dot, <name>_ddot; "
                          "missing rates come from a cubic spline through q(t))")
    kin.add_argument("--point", metavar="[LABEL=]BODY:x,y,z", action="append", default=[],
                     help="a body point (m, body frame; numbers or parameter names); repeatable")
    kin.add_argument("-o", "--output", metavar="CSV", help="output file (default: <model>_kinematics.csv here)")
    _figure_and_progress_options(kin, "a PNG figure")
    kin.set_defaults(run=_kinematics)

    arms = command(
        "moment-arms", "muscle moment arms and lengths at one configuration or along a sweep of one coordinate",
        "The moment-arm matrix R = -dL/dq (Eq. 193, 195; OpenSim's sign, generalized force = R F) and the\n"
        "musculotendon lengths L of every muscle, at one configuration (--q) or along a sweep of one coordinate\n"
        "(--sweep, --from, --to, --step in the model file's units; the other coordinates from --q or their\n"
        "defaults). Writes OUTPUT (CSV: the coordinates in file units, <coordinate>.<muscle> in m, L.<muscle>\n"
        "in m) and OUTPUT with suffix .json (metadata), atomically; with --plot also the moment arms against\n"
        "the swept coordinate, one panel per coordinate, as PNG.",
        "mbkron moment-arms models/shoulder_rhythm.toml --sweep shoulder_elv --from 0 --to 180 --step 1 "
        '--q "elv_angle=90" --plot')
    arms.add_argument("model", metavar="MODEL", help="model definition file (TOML) with muscles")
    arms.add_argument("--sweep", metavar="COORD", help="the coordinate to sweep (default: one configuration)")
    arms.add_argument("--from", dest="start", metavar="A", help="first value (file units; default: the range's start)")
    arms.add_argument("--to", dest="stop", metavar="B", help="last value, included (file units; default: the range's end)")
    arms.add_argument("--step", metavar="S", help="increment (file units; default 1)")
    arms.add_argument("--q", metavar="NAME=VALUE,...", help="the other coordinates (default: the file's defaults)")
    arms.add_argument("-o", "--output", metavar="CSV", help="output file (default: <model>_moment_arms.csv here)")
    _figure_and_progress_options(arms, "a PNG figure")
    arms.set_defaults(run=_moment_arms)

    sim = command(
        "simulate", "forward-dynamics run of a model file (TRBDF2 by default)",
        "Integrate M(q) q'' + N(q, q') q' = G(q) + Q from the coordinates' defaults (or --q0, --qd0, in the\n"
        "file's units) with mbkron's TR-BDF2, RKF45 or any scipy solve_ivp method. Writes\n"
        "DIR/<model>_simulation.csv (t, q, q', q'', joint variables; coordinates in the file's units, joint\n"
        "variables in SI) and .json (metadata: solver statistics, timings), atomically; with --plot also\n"
        "q(t) and q'(t) as PNG. A run that stops early (singular configuration, step-size underflow) keeps\n"
        "and writes everything computed up to then and exits with status 1.",
        "mbkron simulate models/andrews_squeezer.toml --t-end 0.03 --plot")
    sim.add_argument("model", metavar="MODEL", help="model definition file (TOML)")
    sim.add_argument("--t-end", type=float, default=1.0, help="end time, s (default 1)")
    sim.add_argument("--method", default="TRBDF2", help="TRBDF2 (default), RKF45, or a solve_ivp method (RK45, "
                     "DOP853, Radau, BDF, LSODA, RK23)")
    sim.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance (default 1e-6)")
    sim.add_argument("--atol", type=float, default=1e-8, help="absolute tolerance, SI units (default 1e-8)")
    sim.add_argument("--samples", type=int, default=501, help="output samples, evenly spaced (default 501)")
    sim.add_argument("--q0", metavar="NAME=VALUE,...", help="initial coordinates (default: the file's defaults)")
    sim.add_argument("--qd0", metavar="NAME=VALUE,...", help="initial rates (default 0)")
    sim.add_argument("--out", metavar="DIR", default=".", help="output directory (default: here)")
    _figure_and_progress_options(sim, "q(t) and q'(t) as PNG")
    sim.set_defaults(run=_simulate)

    val = command(
        "validate", "run every regression case against its independent reference; write the validation report",
        "Run the validation cases (closed forms of seeds 000, 001, 003; Shabana-style kinematics of the four-bar\n"
        "and five-bar; ODE vs DAE; Andrews' squeezer vs the IVP test set; sympy.physics.mechanics; OpenSim when\n"
        "installed) and write DIR/REPORT.md (errors, tolerances, timings, pass/fail, date, git commit) and\n"
        "DIR/REPORT.json, atomically. Run from the repository root: the validation/ references are not installed\n"
        "with the package. Exit status 1 when a case fails.",
        "mbkron validate --quick --out /tmp/report    (everything: mbkron validate --figures)")
    val.add_argument("--quick", action="store_true", help="short runs and few samples (under a minute; what CI runs)")
    val.add_argument("--out", metavar="DIR", help="output directory (default: validation/ of the repository)")
    val.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    val.add_argument("--figures", action="store_true", help="also redraw the seed's figures (docs/figures/, or "
                     'DIR/figures with --out; needs pip install "mbkron[plot]")')
    val.set_defaults(run=_validate)

    demo = command("demo", "kinematics of a shipped three-link arm along a trajectory",
                   "Print the fingertip position, velocity and acceleration of a three-link arm\n"
                   "whose wrist follows the elbow by an empirical rhythm.", "mbkron demo --samples 5")
    demo.add_argument("--t-end", type=float, default=1.0, help="duration in seconds (default 1.0)")
    demo.add_argument("--samples", type=int, default=11, help="number of output samples (default 11)")
    demo.set_defaults(run=_demo)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mbkron`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (``sys.argv[1:]`` by default).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args)
    except (ModelError, CommandError, ConfigurationError) as exc:
        print(f"mbkron: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader of our output went away (e.g. `mbkron info M | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
