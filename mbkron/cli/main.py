"""The ``mbkron`` command line: the parser and :func:`main` (see ``docs/cli.md``).

Commands, one module each: ``info`` (describe a model file), ``kinematics`` (poses and point
kinematics at one configuration or along a trajectory), ``moment-arms`` (muscle moment arms and
lengths at one configuration or along a sweep of one coordinate), ``simulate`` (forward dynamics),
``validate`` (the validation report, run from a source checkout as a separate process) and ``demo``.

Exit status: 0 on success; 1 for an invalid model file or input, or a configuration at which the
model cannot be evaluated (one clear message on stderr, every problem of a model file listed); 2 for a
command-line usage error. Results are written atomically: a CSV file plus a JSON metadata file (model
SHA-256, mbkron version, command line, settings, timings).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import mbkron
from mbkron.cli import demo, info, kinematics, moment_arms, simulate, validate
from mbkron.cli.common import CommandError
from mbkron.core.errors import ConfigurationError, ModelError

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The parser of the ``mbkron`` command line; each command's ``run`` is its ``run`` default."""
    top = argparse.ArgumentParser(
        prog="mbkron", description="Empirically-based multibody dynamics.\n\nexample:\n  mbkron info models/two_link_arm.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"mbkron {mbkron.__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (info, kinematics, moment_arms, simulate, validate, demo):
        command.register(commands)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mbkron`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (``sys.argv[1:]`` by default).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser().parse_args(argv)
    args.argv = argv
    try:
        return args.run(args)
    except (ModelError, CommandError, ConfigurationError) as exc:
        print(f"mbkron: error: {exc}", file=sys.stderr)
        return getattr(exc, "status", 1)
    except BrokenPipeError:  # the reader of our output went away (e.g. `mbkron info M | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
