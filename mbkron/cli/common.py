"""Helpers shared by the commands of the ``mbkron`` command line (see ``docs/cli.md``).

User errors are raised as :class:`CommandError` (printed as one line by :func:`mbkron.cli.main`,
exit status 1); results are written atomically by :mod:`mbkron.io.results`, with a JSON metadata
file from :func:`result_metadata`.

Importing this module is cheap (the parser helpers are needed for ``--help``): numpy, scipy, sympy
and the rest of mbkron are imported by the functions that use them.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import platform
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import mbkron

if TYPE_CHECKING:
    import numpy as np

    from mbkron.io import ModelFile

__all__ = [
    "CHUNK_ROWS",
    "EXIT_INTERRUPTED",
    "interruption",
    "CommandError",
    "UsageError",
    "integer_at_least",
    "MIN_RTOL",
    "number_at_least",
    "one_of_any_case",
    "positive_number",
    "add_command",
    "assignments",
    "check_ranges",
    "range_option",
    "chunks",
    "coordinate_unit",
    "figure_and_progress_options",
    "output_directory",
    "png_bytes",
    "progress",
    "require_matplotlib",
    "result_metadata",
    "result_set_lock",
    "save",
    "value",
    "write_metadata",
    "write_table_and_figure",
]

MIN_RTOL = 100 * sys.float_info.epsilon
"""The smallest ``--rtol`` (the API's floor, :data:`mbkron.integrate.arguments.MIN_RTOL`, without numpy)."""

PLOT_HINT = 'plotting needs matplotlib: pip install "mbkron[plot]"'
#: Rows per evaluation of a long table (bounds memory, drives the progress bar).
CHUNK_ROWS = 2000


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C or SIGTERM (the shell's 128 + SIGINT)."""


class _Interruption:
    """SIGINT/SIGTERM of a running command (installed by :func:`mbkron.cli.main`): a
    ``KeyboardInterrupt`` at once, or, while :meth:`deferred`, at the next :meth:`check`."""

    def __init__(self):
        self.requested = False
        self.deferring = False

    def request(self, signum, frame) -> None:
        self.requested = True
        if not self.deferring:
            raise KeyboardInterrupt

    def check(self) -> None:
        """Raise the requested interruption (called between steps)."""
        if self.requested:
            raise KeyboardInterrupt

    @contextmanager
    def deferred(self):
        """Interruptions only at :meth:`check` inside the block (numba kernels must not be interrupted)."""
        self.deferring = True
        try:
            yield self
        finally:
            self.deferring = False

    def reset(self) -> None:
        self.requested = self.deferring = False


interruption = _Interruption()
"""The running command's interruption state (one command runs at a time per process)."""


class CommandError(Exception):
    """A user error in a command's input (a model, a value, an output directory): printed as one line,
    exit status 1."""

    status = 1


class UsageError(CommandError):
    """Arguments that cannot go together (what argparse cannot express): one line, exit status 2."""

    status = 2


# ====================================================================== the parser
def add_command(commands, name: str, help: str, description: str, example: str) -> argparse.ArgumentParser:
    """A sub-command's parser whose description ends with an example command line."""
    return commands.add_parser(name, help=help, description=f"{description}\n\nexample:\n  {example}",
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def positive_number(unit: str = ""):
    """An argparse ``type``: a finite number > 0 (a usage error, exit status 2, otherwise)."""
    return number_at_least(0.0, "", unit)


def integer_at_least(minimum: int, why: str, maximum: int | None = None, why_maximum: str = ""):
    """An argparse ``type``: an integer ``≥ minimum`` (``why`` says what the minimum is for) and, when
    ``maximum`` is given, ``≤ maximum`` (``why_maximum`` says why)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text[:40]!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum} ({why}), got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,} ({why_maximum}), got {text[:40]}")
        return value
    return parse


def number_at_least(minimum: float, why: str, unit: str = ""):
    """An argparse ``type``: a finite number > 0 and ``≥ minimum`` (``why`` says what the minimum is; a
    ``minimum`` of 0 asks for a positive number only); a usage error, exit status 2, otherwise."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be a positive number{unit}, got {text[:40]!r}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:.3g} ({why}), got {text[:40]!r}")
        return value
    return parse


def one_of_any_case(names: Sequence[str], what: str):
    """An argparse ``type``: one of ``names`` in any case, returned as spelled in ``names``."""
    def parse(text: str) -> str:
        name = {n.lower(): n for n in names}.get(text.lower())
        if name is None:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; expected one of {', '.join(names)} (any case)")
        return name
    return parse


def figure_and_progress_options(command: argparse.ArgumentParser, figure: str) -> None:
    """``--plot`` and ``--no-progress``, the same for every command that writes results."""
    command.add_argument("--plot", action="store_true", help=f'also write {figure} (needs: pip install "mbkron[plot]")')
    command.add_argument("--no-progress", action="store_true", help="no progress bar (it is shown only on a terminal)")


# ====================================================================== results
def output_directory(path: str) -> Path:
    """The output directory ``path`` (``--out``), created if missing and checked writable, before any work.

    Raises
    ------
    CommandError
        ``path`` is a file, cannot be created, or cannot be written to.
    """
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise CommandError(f"--out: {path} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--out: cannot create the directory {path}: {exc.strerror or exc}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CommandError(f"--out: the directory {path} is not writable")
    return directory


def save(write: Callable[..., None], path: Path, *args) -> None:
    """``write(path, *args)`` (a writer of :mod:`mbkron.io.results`), an OSError as a :class:`CommandError`."""
    try:
        write(path, *args)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None


@contextmanager
def result_set_lock(output: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on the directory of ``output`` while a result set (CSV, PNG,
    JSON) is written into it.

    Every file is written atomically (a temporary file, then a rename); the lock makes the *set*
    atomic for concurrent runs into one ``--out``: they write one after another, each its whole set,
    so the CSV, the PNG and the JSON that describes them are always one run's. The lock is
    ``flock`` on the directory itself (POSIX; nothing is created, so nothing is left behind),
    released when the block ends or the process dies; a second writer waits for it (writing takes
    a moment). Without ``fcntl`` (Windows) nothing is locked.

    Raises
    ------
    CommandError
        The directory cannot be opened.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    directory = output.parent
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise CommandError(f"cannot open the output directory {directory}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def write_table_and_figure(output: Path, columns: Sequence[str], table: np.ndarray,
                           figure: Callable[[], bytes] | None) -> Path | None:
    """Write the CSV ``output`` and, when ``figure`` is given, the PNG it draws beside it (``output``
    with the suffix ``.png``); otherwise remove a PNG an earlier run left there, so that the files of a
    result set are all this run's. Returns the PNG's path, or None."""
    from mbkron.io import write_atomically, write_csv

    save(write_csv, output, columns, table)
    png = output.with_suffix(".png")
    if figure is None:
        png.unlink(missing_ok=True)
        return None
    save(write_atomically, png, figure())
    return png


def write_metadata(command: str, argv: Sequence[str], model_file: ModelFile, settings: dict, columns: Sequence[str],
                   units: Sequence[str], timings: dict[str, float], output: Path, figure: Path | None) -> Path:
    """Write the result's JSON metadata (:func:`result_metadata`) beside ``output``; returns its path.

    The outputs it records include the CSV's number of data rows and SHA-256 as written (call this
    inside :func:`result_set_lock` with the CSV's writing, so that they describe that file)."""
    import hashlib

    from mbkron.io import write_json

    path = output.with_suffix(".json")
    try:
        data = output.read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read back {output}: {exc.strerror or exc}") from None
    metadata = result_metadata(command, argv, model_file, settings,
                               [{"name": c, "unit": u} for c, u in zip(columns, units)], timings,
                               {"csv": str(output), "csv_rows": data.count(b"\n") - 1,
                                "csv_sha256": hashlib.sha256(data).hexdigest(), "png": str(figure) if figure else None})
    save(write_json, path, metadata)
    return path


def result_metadata(command: str, argv: Sequence[str], model_file: ModelFile, settings: dict, columns: list[dict],
             timings: dict[str, float], outputs: dict[str, str | None]) -> dict:
    """The JSON metadata of a result: model SHA-256, mbkron version, command line, settings, timings."""
    import numpy as np
    import scipy
    import sympy

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


def chunks(rows: int) -> list[slice]:
    """Slices of at most :data:`CHUNK_ROWS` rows covering ``rows`` rows."""
    return [slice(start, start + CHUNK_ROWS) for start in range(0, rows, CHUNK_ROWS)]


def progress(items: list, enabled: bool, description: str) -> Iterator:
    """Iterate over ``items`` with a tqdm progress bar when enabled, tqdm is installed and stderr is a terminal."""
    if enabled and len(items) > 1 and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            return iter(items)
        return iter(tqdm(items, desc=description, unit="chunk", file=sys.stderr))
    return iter(items)


def require_matplotlib():
    """``matplotlib.pyplot`` with the Agg backend, or a :class:`CommandError` saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CommandError(PLOT_HINT) from None
    return plt


def png_bytes(plt, figure) -> bytes:
    """A matplotlib figure as PNG (100 dpi); the figure is closed."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


# ====================================================================== input
def value(text: str, model_file: ModelFile, what: str) -> float:
    """A number given on the command line: a literal or an expression of the model's parameters."""
    import numpy as np

    from mbkron.expressions import ExpressionError, parse_expression
    from mbkron.io import evaluate_expression

    try:
        expr = parse_expression(text.strip(), list(model_file.parameters))
    except ExpressionError as exc:
        raise CommandError(f"{what}: {exc}") from None
    result = float(evaluate_expression(expr, model_file.parameters))
    if not np.isfinite(result):
        raise CommandError(f"{what}: {text!r} is not a finite number")
    return result


def assignments(spec: str | None, model_file: ModelFile, option: str, base: np.ndarray | None = None) -> np.ndarray:
    """``"a1=30,a2=45"`` in the file's units → values in SI units (unlisted coordinates: ``base``, default 0)."""
    import numpy as np

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
        values[model.coordinates.index(name)] = value(text, model_file, f"{option} {name}") * model_file.coordinate_scale(name)
    return values


def range_option(command: argparse.ArgumentParser) -> None:
    """``--allow-outside-range``, the same for every command that evaluates a model at given coordinates."""
    command.add_argument("--allow-outside-range", action="store_true",
                         help="evaluate also outside the coordinates' ranges (the domain of the model's data; an "
                         "error by default)")


def check_ranges(q: np.ndarray, model_file: ModelFile, option: str, allowed: bool) -> None:
    """A :class:`CommandError` naming the first coordinate of ``q`` (..., nq; SI units) outside its range,
    unless ``allowed`` (``--allow-outside-range``); values and ranges in the file's units."""
    import numpy as np

    if allowed:
        return
    model = model_file.model
    for k, coordinate in enumerate(model.coordinate_records):
        low, high = coordinate.range
        values = q[..., k]
        outside = (values < low) | (values > high)
        if np.any(outside):
            scale = model_file.coordinate_scale(coordinate.name)
            unit = coordinate_unit(model_file, coordinate.name)
            value = values[outside].flat[0] / scale
            raise CommandError(f"{option}: `{coordinate.name}` = {value:.9g} {unit} is outside its range "
                               f"[{low / scale:.9g}, {high / scale:.9g}] {unit} (the domain of the model's data); "
                               "pass --allow-outside-range to evaluate there anyway")


def coordinate_unit(model_file: ModelFile, name: str) -> str:
    """The unit of coordinate ``name`` in the file and on the command line (the file's angle unit for angles)."""
    unit = model_file.model.coordinate(name).unit
    return model_file.angle_unit if unit == "rad" else unit
