"""``mbkron kinematics``: body poses and point positions, velocities, accelerations.

At one configuration (``--q``, ``--qd``, ``--qdd``) or along a trajectory read from a CSV file
(``--trajectory``); Eq. 41, 44 and 57 of the dissertation through :meth:`mbkron.Model.kinematics`.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mbkron.cli.common import (CommandError, add_command, assignments, check_ranges, chunks, figure_and_progress_options,
                               png_bytes, progress, range_option, require_matplotlib, result_set_lock, value,
                               write_metadata, write_table_and_figure)

if TYPE_CHECKING:
    import numpy as np

    from mbkron.io import ModelFile

__all__ = ["register", "run"]


def register(commands) -> None:
    """Add the ``kinematics`` command to the sub-command parsers ``commands``."""
    kin = add_command(
        commands, "kinematics", "body poses and point positions, velocities, accelerations",
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
    figure_and_progress_options(kin, "a PNG figure")
    range_option(kin)
    kin.set_defaults(run=run)


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
        position = tuple(value(p, model_file, f"--point {label}") for p in parts)
        if any(p.label == label for p in points):
            raise CommandError(f"--point: the label `{label}` is used twice")
        points.append(_Point(label, body, position))
    return points


def _trajectory(path: str, model_file: ModelFile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """``t, q, q̇, q̈`` (SI) from a CSV file with a header ``t, <coordinates>[, <c>_dot, <c>_ddot]``.

    Coordinates not in the file keep 0; rates not in the file are derivatives of a cubic spline
    (scipy, not-a-knot) through ``q(t)``. Joint-variable columns ``f.<joint>`` (as ``mbkron simulate``
    writes them) are accepted and not read: the joint variables follow from q.
    """
    import numpy as np
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
    allowed = {"t"} | {f"{c}{s}" for c in model.coordinates for s in ("", "_dot", "_ddot")} | {
        f"f.{j}" for j in model.joints}
    unknown = [h for h in header if h not in allowed]
    if unknown or "t" not in header or len(set(header)) != len(header):
        raise CommandError(
            f"{path}: the header must name `t` once and coordinates ({', '.join(model.coordinates)}), optionally "
            f"`<coordinate>_dot`, `<coordinate>_ddot` and joint variables `f.<joint>` (not read); got "
            f"{', '.join(header)}"
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


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron kinematics``; returns the exit status."""
    import numpy as np

    from mbkron.io import read_model_file

    argv = args.argv
    if args.plot:
        require_matplotlib()
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
        q = assignments(args.q, model_file, "--q")[None]
        qd = assignments(args.qd, model_file, "--qd")[None]
        qdd = assignments(args.qdd, model_file, "--qdd")[None]
        settings = {"q": args.q or "", "qd": args.qd or "", "qdd": args.qdd or ""}
    check_ranges(q, model_file, "--trajectory" if args.trajectory else "--q", args.allow_outside_range)
    settings["points"] = {p.label: {"body": p.body, "position_m": list(p.position)} for p in points}

    columns, units = _kinematics_columns(model_file, points, trajectory=t is not None)
    table = np.empty((q.shape[0], len(columns)))
    for chunk in progress(chunks(q.shape[0]), not args.no_progress, "kinematics"):
        table[chunk] = _kinematics_rows(model_file, points, t if t is None else t[chunk], q[chunk], qd[chunk], qdd[chunk])
    computed = time.perf_counter()

    output = Path(args.output or f"{Path(args.model).stem}_kinematics.csv")
    with result_set_lock(output):  # concurrent runs into one directory write whole sets in turn
        figure = write_table_and_figure(output, columns, table, (
            lambda: _plot_kinematics(model_file, points, columns, table, t is not None)) if args.plot else None)
        written = time.perf_counter()
        timings = {"load": loaded - started, "compute": computed - loaded, "write": written - computed}
        metadata_path = write_metadata("kinematics", argv, model_file, settings, columns, units, timings, output, figure)
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
    import numpy as np

    from mbkron.algorithms.dynamics import points as motions
    from mbkron.algorithms.jointvars.explicit import quadratic_forms
    from mbkron.algorithms.kinematics import tree as kinematics

    model = model_file.model
    kin = model.kinematics(q, order=2)
    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    parts = [] if t is None else [t[:, None]]
    parts += [q / scales, qd / scales, qdd / scales]
    parts += [np.concatenate([kin.T[:, :, :3, 3], kin.T[:, :, :3, :3].reshape(q.shape[0], -1, 9)], axis=-1).reshape(q.shape[0], -1)]
    convective = None if kin.hess is None else quadratic_forms(kin.hess, qd)
    for point in points:
        body = model.body_index(point.body)
        position = np.asarray(point.position)
        parts += [kinematics.point_positions(kin, body, position),
                  motions.point_velocities(model, kin, body, position, qd),
                  motions.point_accelerations(model, kin, body, position, qd, qdd, convective)]
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
    from mbkron.multibody.records import GROUND

    plt = require_matplotlib()
    model = model_file.model
    index = {c: i for i, c in enumerate(columns)}
    figure, axes = plt.subplots(1, 2 if trajectory else 1, figsize=(11 if trajectory else 6, 5), squeeze=False)
    sketch = axes[0, -1]
    rows = [0, table.shape[0] - 1] if trajectory else [0]
    for row, style in zip(rows, ("-", "--")):
        for body in model.body_records:
            end = table[row, [index[f"{body.name}.x"], index[f"{body.name}.y"]]]
            start = (0.0, 0.0) if body.parent == GROUND else table[row, [index[f"{body.parent}.x"], index[f"{body.parent}.y"]]]
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
    return png_bytes(plt, figure)

