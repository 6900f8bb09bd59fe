"""The ``mbkron`` command line: the parser and :func:`main` (see ``docs/cli.md``).

Commands, one module each: ``info`` (describe a model file), ``kinematics`` (poses and point
kinematics at one configuration or along a trajectory), ``moment-arms`` (muscle moment arms and
lengths at one configuration or along a sweep of one coordinate), ``simulate`` (forward dynamics),
``validate`` (the validation report, run from a source checkout as a separate process) and ``demo``.

Exit status: 0 on success; 1 for an invalid model file or input, or a configuration at which the
model cannot be evaluated (one clear message on stderr, every problem of a model file listed); 2 for a
command-line usage error. Results are written atomically: a CSV file plus a JSON metadata file (model
SHA-256, mbkron version, command line, settings, timings).

Help and usage errors are cheap: the command modules import numpy, scipy, sympy, numba and the rest
of mbkron only when a command runs. The first run that compiles mbkron's numba kernels says so in
one line on stderr (the ``mbkron`` logger's INFO records are shown while a command runs).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import mbkron
from mbkron.cli import analyze, batch, convert, demo, info, kinematics, moment_arms, simulate, validate
from mbkron.cli.common import EXIT_INTERRUPTED, CommandError, interruption

__all__ = ["main", "parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line, ``mbkron <command>: error: … (see … --help)``, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    """The parser of the ``mbkron`` command line; each command's ``run`` is its ``run`` default."""
    top = _Parser(
        prog="mbkron", description="Empirically-based multibody dynamics.\n\nexample:\n  mbkron info models/two_link_arm.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"mbkron {mbkron.__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (info, convert, kinematics, moment_arms, simulate, analyze, batch, validate, demo):
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
    from mbkron.core.errors import ConfigurationError, ModelError  # after parsing: --help needs no numpy

    with _notices_on_stderr(), _termination_as_interrupt():
        try:
            return args.run(args)
        except (ModelError, CommandError, ConfigurationError) as exc:
            print(f"mbkron: error: {exc}", file=sys.stderr)
            return getattr(exc, "status", 1)
        except BrokenPipeError:  # the reader of our output went away (e.g. `mbkron info M | head`)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        except KeyboardInterrupt:  # before anything was computed (loading, compiling): nothing to keep
            print("mbkron: interrupted; nothing was written", file=sys.stderr)
            return EXIT_INTERRUPTED


@contextmanager
def _termination_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGINT (Ctrl-C) and SIGTERM stop it the same way: a ``KeyboardInterrupt``,
    raised at once, or — inside :func:`mbkron.cli.common.interruptible` (a simulation) — at the next
    step boundary, so that compiled kernels are never interrupted midway and the steps computed so far
    are written; exit status 130."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers: main thread only
        yield
        return
    previous = {number: signal.signal(number, interruption.request) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        interruption.reset()


@contextmanager
def _notices_on_stderr() -> Iterator[None]:
    """While a command runs, the ``mbkron`` logger's INFO records (the first compilation of the numba
    kernels) go to stderr as ``mbkron: <message>`` and a :class:`mbkron.ModelWarning` (e.g. an
    unphysical inertia in the model file) as ``mbkron: warning: <message>``, one line each;
    afterwards the logger and the warnings' display are as they were (``main`` may be called again in
    one process)."""
    from mbkron.core.errors import ModelWarning

    logger = logging.getLogger("mbkron")
    level = logger.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mbkron: %(message)s"))
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    with warnings.catch_warnings():
        show = warnings.showwarning

        def show_model_warning(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, ModelWarning):
                print(f"mbkron: warning: {message}", file=sys.stderr)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = show_model_warning
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
