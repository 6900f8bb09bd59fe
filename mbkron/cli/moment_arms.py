"""``mbkron moment-arms``: muscle moment arms R = -dL/dq and lengths (Eq. 193, 195).

At one configuration (``--q``) or along a sweep of one coordinate (``--sweep``, ``--from``,
``--to``, ``--step``), through :meth:`mbkron.Model.moment_arms` and :meth:`mbkron.Model.muscle_lengths`.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mbkron.cli.common import (CommandError, add_command, assignments, check_ranges, chunks, coordinate_unit,
                               figure_and_progress_options, png_bytes, progress, range_option, require_matplotlib,
                               result_set_lock, value, write_metadata, write_table_and_figure)

if TYPE_CHECKING:
    import numpy as np

    from mbkron.io import ModelFile

__all__ = ["register", "run"]

_MAX_SWEEP_ROWS = 1_000_000  # configurations of one `moment-arms` sweep


def register(commands) -> None:
    """Add the ``moment-arms`` command to the sub-command parsers ``commands``."""
    arms = add_command(
        commands, "moment-arms", "muscle moment arms and lengths at one configuration or along a sweep of one coordinate",
        "The moment-arm matrix R = -dL/dq (Eq. 193, 195; OpenSim's sign, generalized force = R F) and the\n"
        "musculotendon lengths L of every muscle, at one configuration (--q) or along a sweep of one coordinate\n"
        "(--sweep, --from, --to, --step in the model file's units; the other coordinates from --q or their\n"
        "defaults; the default step is 1 degree for an angle, 1 mm for a length, 1/100 of the range for a\n"
        "dimensionless coordinate, whatever the file's units). Writes OUTPUT (CSV: the coordinates in file\n"
        "units, <coordinate>.<muscle> in m, L.<muscle> in m) and OUTPUT with suffix .json (metadata),\n"
        "atomically; with --plot also the moment arms against the swept coordinate, one panel per coordinate\n"
        "in a grid, with a legend of the muscles, as PNG.",
        "mbkron moment-arms models/shoulder_rhythm.toml --sweep shoulder_elv --from 0 --to 180 --step 1 "
        '--q "elv_angle=90" --plot')
    arms.add_argument("model", metavar="MODEL", help="model definition file (TOML) with muscles")
    arms.add_argument("--sweep", metavar="COORD", help="the coordinate to sweep (default: one configuration)")
    arms.add_argument("--from", dest="start", metavar="A", help="first value (file units; default: the range's start)")
    arms.add_argument("--to", dest="stop", metavar="B", help="last value, included (file units; default: the range's end)")
    arms.add_argument("--step", metavar="S", help="increment (file units; default: 1 degree for an angle, 1 mm for a "
                      "length, 1/100 of the range for a dimensionless coordinate)")
    arms.add_argument("--q", metavar="NAME=VALUE,...", help="the other coordinates (default: the file's defaults)")
    arms.add_argument("-o", "--output", metavar="CSV", help="output file (default: <model>_moment_arms.csv here)")
    figure_and_progress_options(arms, "a PNG figure")
    range_option(arms)
    arms.set_defaults(run=run)


def _sweep_values(args: argparse.Namespace, model_file: ModelFile) -> np.ndarray | None:
    """The swept coordinate's values in the file's units (``None`` without ``--sweep``)."""
    import numpy as np

    model = model_file.model
    if args.sweep is None:
        given = [option for option, value in (("--from", args.start), ("--to", args.stop), ("--step", args.step))
                 if value is not None]
        if given:
            raise CommandError(f"{', '.join(given)} need --sweep COORDINATE")
        return None
    args.sweep = _coordinate_named(model, args.sweep)
    scale = model_file.coordinate_scale(args.sweep)
    low, high = (bound / scale for bound in model.coordinate(args.sweep).range)
    start = low if args.start is None else value(args.start, model_file, "--from")
    stop = high if args.stop is None else value(args.stop, model_file, "--to")
    if not (np.isfinite(start) and np.isfinite(stop)):
        raise CommandError(f"--sweep {args.sweep}: the coordinate's range is unbounded; give --from and --to")
    step = default_step(model_file, args.sweep, start, stop) if args.step is None else value(args.step, model_file, "--step")
    if step <= 0 or stop < start:
        raise CommandError(f"--sweep {args.sweep}: need --from ≤ --to and --step > 0, got from {start:.6g}, "
                           f"to {stop:.6g}, step {step:.6g}")
    count = int(np.floor((stop - start) / step * (1 + 1e-12) + 1e-9)) + 1
    if count > _MAX_SWEEP_ROWS:
        raise CommandError(f"--sweep {args.sweep}: {count} configurations; at most {_MAX_SWEEP_ROWS} (use a larger --step)")
    return start + step * np.arange(count)


def default_step(model_file: ModelFile, name: str, start: float, stop: float) -> float:
    """The sweep's step without ``--step``, in the file's units of coordinate ``name``: 1 degree for an angle
    (π/180 in a file in radians, such as every ``.osim`` model), 1 mm for a length, and 1/100 of
    ``stop - start`` for a dimensionless coordinate (1 if that is 0)."""
    unit = model_file.model.coordinate(name).unit
    if unit == "rad":
        return math.radians(1.0) / model_file.angle_scale
    if unit == "m":
        return 1e-3
    return (stop - start) / 100 or 1.0


def _coordinate_named(model, name: str) -> str:
    """The model's name of the coordinate ``name`` (its name, or the OpenSim name it was imported under)."""
    for record in model.coordinate_records:
        if name in (record.name, record.original_name):
            return record.name
    raise CommandError(f"--sweep: unknown coordinate `{name[:80]}`; the model has: "
                       f"{', '.join(c.label for c in model.coordinate_records)}")


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron moment-arms``; returns the exit status."""
    import numpy as np

    from mbkron.io import read_model_file

    argv = args.argv
    if args.plot:
        require_matplotlib()
    started = time.perf_counter()
    model_file = read_model_file(args.model)
    model = model_file.model
    if not model.muscles:
        raise CommandError(f"model `{model.name}` has no muscles (see docs/model-format.md, [muscles.NAME])")
    sweep = _sweep_values(args, model_file)
    base = assignments(args.q, model_file, "--q", base=model.default_q)
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
    check_ranges(q, model_file, "--sweep" if sweep is not None else "--q", args.allow_outside_range)
    loaded = time.perf_counter()

    columns, units = _moment_arm_columns(model_file)
    table = np.empty((q.shape[0], len(columns)))
    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    for chunk in progress(chunks(q.shape[0]), not args.no_progress, "moment arms"):
        rows = q[chunk]
        table[chunk] = np.concatenate([rows / scales, model.moment_arms(rows).reshape(rows.shape[0], -1),
                                       model.muscle_lengths(rows)], axis=-1)
    if sweep is not None:
        table[:, model.coordinates.index(args.sweep)] = sweep  # exactly as requested, not via radians
    computed = time.perf_counter()

    output = Path(args.output or f"{Path(args.model).stem}_moment_arms.csv")
    settings = {"q": args.q or "", "sweep": None if sweep is None else {
        "coordinate": args.sweep, "from": float(sweep[0]), "to": float(sweep[-1]), "count": int(sweep.size),
        "unit": coordinate_unit(model_file, args.sweep)}, "sign_convention": "R = -dL/dq (OpenSim)"}
    with result_set_lock(output):  # concurrent runs into one directory write whole sets in turn
        figure = write_table_and_figure(output, columns, table, (
            lambda: _plot_moment_arms(model_file, args.sweep, table)) if args.plot else None)
        written = time.perf_counter()
        timings = {"load": loaded - started, "compute": computed - loaded, "write": written - computed}
        metadata_path = write_metadata("moment-arms", argv, model_file, settings, columns, units, timings, output, figure)
    if sweep is None:
        _print_moment_arms(model, table[0, model.nq:])
    print(f"wrote {output} ({table.shape[0]} row{'s' if table.shape[0] != 1 else ''}, {len(columns)} columns), "
          f"{metadata_path}" + (f", {figure}" if figure else ""))
    return 0


def _moment_arm_columns(model_file: ModelFile) -> tuple[list[str], list[str]]:
    """The coordinates (file units), ``<coordinate>.<muscle>`` (R, row-major) and ``L.<muscle>``, by the names of
    the file the model was read from (an OpenSim coordinate's original name, :attr:`Coordinate.label`)."""
    model = model_file.model
    columns = [c.label for c in model.coordinate_records]  # OpenSim's names where the model was imported
    units = [coordinate_unit(model_file, name) for name in model.coordinates]
    for record in model.coordinate_records:
        columns += [f"{record.label}.{muscle}" for muscle in model.muscles]
        units += ["m" if record.unit == "rad" else "1"] * len(model.muscles)
    columns += [f"L.{muscle}" for muscle in model.muscles]
    units += ["m"] * len(model.muscles)
    return columns, units


def _print_moment_arms(model, values: np.ndarray) -> None:
    """Moment arms (one column per coordinate) and lengths at a single configuration, in columns as wide as
    their longest entry (names are never run together)."""
    arms = values[:model.nq * len(model.muscles)].reshape(model.nq, -1)
    lengths = values[model.nq * len(model.muscles):]
    names = [c.label for c in model.coordinate_records]
    first = max(len("muscle"), *(len(m) for m in model.muscles))
    widths = [max(len(name), 10) for name in names]
    print("  ".join([f"{'muscle':<{first}}", *(f"{name:>{w}}" for name, w in zip(names, widths)), f"{'length':>10}"]))
    for m, muscle in enumerate(model.muscles):
        print("  ".join([f"{muscle:<{first}}", *(f"{arms[k, m]:>{w}.6f}" for k, w in enumerate(widths)),
                         f"{lengths[m]:>10.6f}"]))
    print("(moment arms R = -dL/dq in m per rad or dimensionless per m of a translation; lengths in m)")


#: Largest figure of ``--plot``, inches (at 100 dpi: 1,800 × 1,600 px) …
_MOST_WIDTH, _MOST_HEIGHT = 18.0, 16.0
#: … and the largest panel.
_PANEL_WIDTH, _PANEL_HEIGHT = 4.0, 3.0
#: Line styles after the 20 colours of ``tab20``: 80 muscles get distinct lines.
_STYLES = ("-", "--", ":", "-.")
#: A panel whose moment arms are all below this (m, or dimensionless) is drawn on ±0.01: they are round-off.
_ROUND_OFF = 1e-12


def plot_layout(panels: int, muscles: int) -> tuple[int, int, int, float, float, float]:
    """``(rows, columns, legend columns, width, height, legend height)`` of the ``--plot`` figure, inches:
    panels in a near-square grid (at most 5 columns), the muscles' legend below them, the whole figure at
    most ``_MOST_WIDTH`` × ``_MOST_HEIGHT`` (the panels shrink to fit)."""
    columns = min(panels, 5, math.ceil(math.sqrt(panels)))
    rows = math.ceil(panels / columns)
    legend_columns = min(muscles, 8)
    legend = 0.14 * math.ceil(muscles / legend_columns) + 0.3
    width = min(_PANEL_WIDTH * columns + 0.5, _MOST_WIDTH)
    height = min(_PANEL_HEIGHT * rows + legend + 0.5, _MOST_HEIGHT)
    return rows, columns, legend_columns, width, height, legend


def _plot_moment_arms(model_file: ModelFile, swept: str, table: np.ndarray) -> bytes:
    """Moment arms of every muscle against the swept coordinate, one panel per coordinate in a grid, with one
    legend of the muscles below it (Fig. 14, 15); the size is bounded (:func:`plot_layout`)."""
    import numpy as np

    plt = require_matplotlib()
    model = model_file.model
    muscles = len(model.muscles)
    x = table[:, model.coordinates.index(swept)]
    rows, columns, legend_columns, width, height, legend = plot_layout(model.nq, muscles)
    figure, axes = plt.subplots(rows, columns, figsize=(width, height), squeeze=False)
    colours = plt.get_cmap("tab20").colors
    label = model.coordinate(swept).label
    for k, (ax, record) in enumerate(zip(axes.flat, model.coordinate_records)):
        block = table[:, model.nq + k * muscles:model.nq + (k + 1) * muscles]
        for m, muscle in enumerate(model.muscles):
            ax.plot(x, block[:, m], _STYLES[m // len(colours) % len(_STYLES)], color=colours[m % len(colours)],
                    label=muscle, linewidth=1.0)
        zero = not np.any(np.abs(block) >= _ROUND_OFF)  # e.g. about the pelvis's coordinates
        ax.set_title(f"about {record.label} ({'m' if record.unit == 'rad' else '1'})"
                     + (f", all |R| < {_ROUND_OFF:g}" if zero else ""), fontsize="small")
        if zero:  # round-off, not noise magnified to fill the panel
            ax.set_ylim(-0.01, 0.01)
        ax.set_xlabel(f"{label} ({coordinate_unit(model_file, swept)})", fontsize="x-small")
        ax.tick_params(labelsize="x-small")
        ax.grid(alpha=0.3)
    for ax in axes.flat[model.nq:]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=legend_columns, fontsize="x-small", frameon=False)
    figure.suptitle(f"{model.name}: moment arms R = -dL/dq against {label}", fontsize="medium")
    figure.tight_layout(rect=(0, legend / height, 1, 0.97))
    return png_bytes(plt, figure)
