"""The ``mbkron`` command line: the parser and :func:`main` (see ``docs/cli.md``).

Commands, one module each: ``info`` (describe a model file), ``kinematics`` (poses and point
kinematics at one configuration or along a trajectory), ``moment-arms`` (muscle moment arms and
lengths at one configuration or along a sweep of one coordinate), ``simulate`` (forward dynamics),
``validate`` (the validation report, run from a source checkout as a separate process), ``compile``
(mbkron's numba kernels ahead of time) and ``demo``; :data:`COMMANDS` lists them all.

Exit status: 0 on success; 1 for an invalid model file or input, or a configuration at which the
model cannot be evaluated (one clear message on stderr, every problem of a model file listed); 2 for a
command-line usage error. Results are written atomically: a CSV file plus a JSON metadata file (model
SHA-256, mbkron version, command line, settings, timings).

Help and usage errors are cheap: ``mbkron --help`` imports no command module (the commands' one-line
summaries are :data:`COMMANDS`), ``mbkron COMMAND ...`` imports only that command's module, and the
command modules import numpy, scipy, sympy, numba and the rest of mbkron only when a command runs.
The first run that compiles mbkron's numba kernels says so in one line on stderr (a
:class:`mbkron.CompileNotice`, shown as ``mbkron: <message>``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn
from contextlib import contextmanager

import mbkron

__all__ = ["COMMANDS", "finish", "main", "parser", "run"]

#: The commands in the order ``mbkron --help`` lists them: name → (module, one-line summary). The
#: summary is what the module's ``register`` passes to :func:`mbkron.cli.common.add_command` (a test
#: compares the two), so that ``mbkron --help`` lists every command without importing its module.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("mbkron.cli.info", "describe a model file: tree, coordinates, joint variables, loads, muscles"),
    "convert": ("mbkron.cli.convert", "convert an OpenSim model (.osim) to an mbkron model file (TOML)"),
    "kinematics": ("mbkron.cli.kinematics", "body poses and point positions, velocities, accelerations"),
    "moment-arms": ("mbkron.cli.moment_arms",
                    "muscle moment arms and lengths at one configuration or along a sweep of one coordinate"),
    "simulate": ("mbkron.cli.simulate", "forward-dynamics run of a model file (DOP853 or TRBDF2: --method auto)"),
    "analyze": ("mbkron.cli.analyze", "inverse dynamics, muscle analysis, static optimisation and joint reactions "
                "of a motion (.mot/.sto), as OpenSim's tools"),
    "batch": ("mbkron.cli.batch", "many simulations (or analyses) from a batch file, on dask or serially"),
    "validate": ("mbkron.cli.validate",
                 "run every regression case against its independent reference; write the validation report"),
    "compile": ("mbkron.cli.compile", "compile mbkron's numerical kernels ahead of time into the kernel cache"),
    "demo": ("mbkron.cli.demo", "kinematics of a shipped three-link arm along a trajectory"),
}


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line, ``mbkron <command>: error: … (see … --help)``, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of the ``mbkron`` command line; each command's ``run`` is its ``run`` default.

    Parameters
    ----------
    command : str, optional
        Register only this command's options (importing only its module); the others are listed by
        name and summary (:data:`COMMANDS`) and cannot be parsed. By default every command is
        registered. An unknown name registers none (argparse then names the valid choices).
    """
    top = _Parser(
        prog="mbkron", description="Empirically-based multibody dynamics.\n\nexample:\n  mbkron info models/two_link_arm.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"mbkron {mbkron.__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(module).register(commands)
        else:
            commands.add_parser(name, help=summary)
    return top


def _command(argv: Sequence[str]) -> str:
    """The command named by ``argv``: its first argument that is not an option ('' if there is none;
    the top level has only ``--help`` and ``--version``, which take no value)."""
    return next((argument for argument in argv if not argument.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mbkron`` console script; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (``sys.argv[1:]`` by default).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser(_command(argv)).parse_args(argv)
    args.argv = argv
    from mbkron.cli.common import EXIT_INTERRUPTED, CommandError  # after parsing: --help needs none of them
    from mbkron.core.errors import ConfigurationError, ModelError

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


def run() -> NoReturn:
    """The ``mbkron`` console script and ``python -m mbkron``: :func:`main` on ``sys.argv``, then :func:`finish`."""
    finish(main())


def finish(status: int) -> NoReturn:
    """End the process with ``status`` as Python would, without its teardown of every module.

    Python's exit waits for the threads that are not daemons, runs the exit handlers (``atexit``: logging's
    flush, multiprocessing's workers, ``weakref.finalize``) and flushes the standard streams, then frees every
    module and object one by one: after a command, numba's and LLVM's hundreds of compiled functions, 0.3 s of
    the README's main job's 2 s warm (and of every command). This does the first three and exits
    (:func:`os._exit`); every result file has been written and closed atomically before."""
    import atexit
    import threading

    # what Python's exit does first (CPython's own functions): threading's exit callbacks (thread-pool executors
    # told to stop), the threads that are not daemons joined, then the exit handlers; elsewhere Python's exit
    shutdown, handlers = getattr(threading, "_shutdown", None), getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or handlers is None:
        sys.exit(status)
    shutdown()
    handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to deliver
            pass
    os._exit(status)


@contextmanager
def _termination_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGINT (Ctrl-C) and SIGTERM stop it the same way: a ``KeyboardInterrupt``,
    raised at once, or — inside :func:`mbkron.cli.common.interruptible` (a simulation) — at the next
    step boundary, so that compiled kernels are never interrupted midway and the steps computed so far
    are written; exit status 130."""
    import signal
    import threading

    from mbkron.cli.common import interruption

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
    """While a command runs, a :class:`mbkron.CompileNotice` (numba compiles mbkron's kernels) goes to
    stderr as ``mbkron: <message>`` and a :class:`mbkron.ModelWarning` (e.g. an unphysical inertia in
    the model file) as ``mbkron: warning: <message>``, one line each (Python's warning filters still
    apply: ``-W ignore::mbkron.CompileNotice`` silences the notice); afterwards the warnings' display
    is as it was (``main`` may be called again in one process)."""
    with warnings.catch_warnings():
        show = warnings.showwarning

        def show_notice_or_model_warning(message, category, filename, lineno, file=None, line=None):
            from mbkron.jit.common import CompileNotice  # a warning was issued: mbkron is loaded
            from mbkron.core.errors import ModelWarning

            if issubclass(category, CompileNotice):
                print(f"mbkron: {message}", file=sys.stderr)
            elif issubclass(category, ModelWarning):
                print(f"mbkron: warning: {message}", file=sys.stderr)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = show_notice_or_model_warning
        yield
