"""``mbkron validate``: run the validation report of a source checkout, as a separate process.

The independent references (``validation/``) are not installed with the package, and mbkron never
imports them: this command finds a source checkout of mbkron (the directory holding
``pyproject.toml`` with ``name = "mbkron"`` and ``validation/__main__.py``: the current directory or
the nearest one above it, or ``--source DIR``), runs ``python -m validation`` there with the same
Python and the given options, lets its output through and returns its exit status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from datetime import datetime, timezone
from pathlib import Path

from mbkron.cli.common import CommandError, UsageError, add_command

__all__ = ["find_checkout", "is_checkout", "register", "run"]


def register(commands) -> None:
    """Add the ``validate`` command to the sub-command parsers ``commands``."""
    val = add_command(
        commands, "validate", "run every regression case against its independent reference; write the validation report",
        "Run the validation cases (closed forms of seeds 000, 001, 003; Shabana-style kinematics of the four-bar\n"
        "and five-bar; ODE vs DAE; Andrews' squeezer vs the IVP test set; sympy.physics.mechanics; OpenSim when\n"
        "installed) and write DIR/REPORT.md (errors, tolerances, timings, pass/fail, date, git commit) and\n"
        "DIR/REPORT.json, atomically, into a new directory unless --out is given; the committed report\n"
        "(validation/REPORT.md) changes only with --update-report. The validation/ references are not\n"
        "installed with the package: this runs\n"
        "`python -m validation` of a source checkout (the current directory or one above it, or --source) as a\n"
        "separate process. Exit status 1 when a case fails.",
        "mbkron validate --quick --out /tmp/report    (everything: mbkron validate --figures)")
    val.add_argument("--quick", action="store_true", help="short runs and few samples, "
                     "named in the report (seconds once the kernels are compiled; what CI runs)")
    destination = val.add_mutually_exclusive_group()
    destination.add_argument("--out", metavar="DIR", help="output directory (default: a new directory "
                             "validation-report-<UTC time> here)")
    destination.add_argument("--update-report", action="store_true", help="rewrite the committed report of the "
                             "checkout (validation/REPORT.md, REPORT.json; with --figures docs/figures/); a full run only")
    val.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    val.add_argument("--figures", action="store_true", help="also redraw the seed's figures (DIR/figures; needs "
                     'pip install "mbkron[plot]")')
    val.add_argument("--source", metavar="DIR", help="the source checkout (default: the current directory or the "
                     "nearest one above it that is one)")
    val.set_defaults(run=run)


def is_checkout(directory: Path) -> bool:
    """Whether ``directory`` is a source checkout of mbkron: ``pyproject.toml`` of project ``mbkron`` and
    ``validation/__main__.py``."""
    try:
        project = tomllib.loads((directory / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == "mbkron" and (
        directory / "validation" / "__main__.py").is_file()


def find_checkout(start: Path) -> Path | None:
    """The nearest source checkout of mbkron at or above ``start`` (see :func:`is_checkout`), or None."""
    start = start.resolve()
    return next((directory for directory in (start, *start.parents) if is_checkout(directory)), None)


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron validate``; returns the exit status of ``python -m validation``."""
    if args.update_report and args.quick:
        raise UsageError("--update-report rewrites the committed full report: run it without --quick")
    if args.source is not None:
        root = Path(args.source).resolve()
        if not is_checkout(root):
            raise CommandError(f"--source: {args.source} is not a source checkout of mbkron (expected pyproject.toml "
                               f"of project `mbkron` and validation/__main__.py in it)")
    else:
        root = find_checkout(Path.cwd())
        if root is None:
            raise CommandError(f"no source checkout of mbkron in {Path.cwd()} or above it: run from the repository "
                               f"root (the validation/ references are not installed with the package), or give "
                               f"--source DIR")
    command = [sys.executable, "-m", "validation"]
    command += [option for option, given in (("--quick", args.quick), ("--quiet", args.quiet),
                                             ("--figures", args.figures), ("--update-report", args.update_report))
                if given]
    if not args.update_report:  # relative to here, not to the checkout
        out = Path(args.out) if args.out is not None else Path(
            f"validation-report-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}")
        command += ["--out", str(out.resolve())]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        status = subprocess.run(command, cwd=root, check=False).returncode
    except OSError as exc:
        raise CommandError(f"cannot run {sys.executable}: {exc.strerror or exc}") from None
    return status if status >= 0 else 128 - status  # killed by a signal: the shell's convention
