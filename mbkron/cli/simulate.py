"""``mbkron simulate``: a forward-dynamics run of a model file (:func:`mbkron.simulate`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mbkron.cli.common import (EXIT_INTERRUPTED, CommandError, add_command, assignments, check_ranges,
                               coordinate_unit, figure_and_progress_options, integer_at_least, interruption,
                               MIN_RTOL, number_at_least, one_of_any_case, output_directory, png_bytes, positive_number, range_option,
                               require_matplotlib, result_set_lock, write_metadata, write_table_and_figure)

if TYPE_CHECKING:
    import numpy as np

    from mbkron.io import ModelFile

__all__ = ["MAX_SAMPLES", "METHOD_NAMES", "register", "run"]

MAX_SAMPLES = 1_000_000
"""Most ``--samples`` of one run (its rows are held in memory: q, q', q'', joint variables)."""

INTERRUPTED = -2
"""``SimulationResult.status`` of a run stopped by Ctrl-C or SIGTERM (:class:`mbkron.SimulationInterrupted`)."""

METHOD_NAMES = ("TRBDF2", "RKF45", "RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")
"""The solvers of :func:`mbkron.simulate` (``mbkron.integrate.simulate.METHODS``; a test keeps them equal),
here so that a bad ``--method`` is a usage error before numpy and scipy are imported."""

AUTO = "auto"
"""The default ``--method``: the solvers :func:`mbkron.integrate.simulate.choose_method` chooses (DOP853 for a model
with a compiled constraint group, TRBDF2 from where its steps look stiff; TRBDF2 for other models;
``mbkron.integrate.simulate.AUTO``)."""


def register(commands) -> None:
    """Add the ``simulate`` command to the sub-command parsers ``commands``."""
    sim = add_command(
        commands, "simulate", "forward-dynamics run of a model file (DOP853 or TRBDF2: --method auto)",
        "Integrate M(q) q'' + N(q, q') q' = G(q) + Q from the coordinates' defaults (or --q0, --qd0, in the\n"
        "file's units) with mbkron's TR-BDF2, RKF45 or any scipy solve_ivp method; by default (--method auto)\n"
        "DOP853 for a model with a compiled constraint group, going on with TRBDF2 from where its steps are\n"
        "limited by stability (a stiff problem), and TRBDF2 for other models. Writes\n"
        "DIR/<model>_simulation.csv (t, q, q', q'', joint variables; coordinates in the file's units, joint\n"
        "variables in SI) and .json (metadata: solver statistics, timings), atomically; with --plot also\n"
        "q(t) and q'(t) as PNG. A run that stops early (singular configuration, step-size underflow) keeps\n"
        "and writes everything computed up to then and exits with status 1; one interrupted by Ctrl-C or\n"
        "SIGTERM does the same (JSON status -2, the message saying where) and exits with status 130. A run\n"
        "ends where a coordinate reaches the end of its range (the domain of the model's data; exit status 0,\n"
        "JSON outcome range_end) unless --allow-outside-range. Muscles apply no force (a warning says so for a\n"
        "model with muscles): muscle-driven simulation does not exist yet.",
        "mbkron simulate models/andrews_squeezer.toml --t-end 0.03 --plot")
    sim.add_argument("model", metavar="MODEL", help="model definition file (TOML)")
    sim.add_argument("--t-end", type=positive_number(" of seconds"), default=1.0, help="end time, s (default 1)")
    sim.add_argument("--method", type=one_of_any_case(METHOD_NAMES + (AUTO,), "solver"), default=AUTO,
                     help="auto (default: DOP853 for a compiled closed loop, TRBDF2 where it is stiff or else), TRBDF2, "
                     "RKF45, or a solve_ivp method (RK45, DOP853, Radau, BDF, LSODA, RK23); any case")
    sim.add_argument("--rtol", type=number_at_least(MIN_RTOL, "100·eps: no solver controls a smaller relative error"),
                     default=1e-6, help="relative tolerance (default 1e-6, at least 100·eps = 2.2e-14)")
    sim.add_argument("--atol", type=positive_number(), default=1e-8, help="absolute tolerance, SI units (default 1e-8)")
    sim.add_argument("--samples", type=integer_at_least(2, "the start and the end", MAX_SAMPLES, "rows held in memory"),
                     default=501, help=f"output samples, evenly spaced (default 501, at most {MAX_SAMPLES:,})")
    sim.add_argument("--q0", metavar="NAME=VALUE,...", help="initial coordinates (default: the file's defaults)")
    sim.add_argument("--qd0", metavar="NAME=VALUE,...", help="initial rates (default 0)")
    sim.add_argument("--out", metavar="DIR", default=".", help="output directory (default: here)")
    figure_and_progress_options(sim, "q(t) and q'(t) as PNG")
    range_option(sim)
    sim.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron simulate``; returns the exit status."""
    from mbkron.cli import prefetch

    argv = args.argv
    method = args.method
    directory = output_directory(args.out)  # before any expensive work: a bad --out loses nothing
    output = directory / f"{Path(args.model).stem}_simulation.csv"
    for path in (output, output.with_suffix(".json"), output.with_suffix(".png")):
        if path.is_dir():
            raise CommandError(f"--out: {path} is a directory; the results are written to that name")
    started = time.perf_counter()
    helper = prefetch.start(method)  # a cold start: a helper compiles two of the run's kernels on a second core
    if args.plot:
        require_matplotlib()

    import numpy as np

    from mbkron.integrate.simulate import SimulationInterrupted, simulate
    from mbkron.io import read_model_file
    from mbkron.io.results import simulation_table

    model_file = read_model_file(args.model)
    model = model_file.model
    if method == AUTO and not model.compiled_group:
        method = "TRBDF2"  # (choose_method's choice without a compiled group: its kernel for the helper to compile)
    helper = prefetch.follow(helper, model, method)
    q0 = assignments(args.q0, model_file, "--q0", base=model.default_q)
    qd0 = assignments(args.qd0, model_file, "--qd0")
    check_ranges(q0, model_file, "--q0", args.allow_outside_range)
    if model.muscles:  # before the run, so that a user does not wait for a motion the muscles had no part in
        print(f"mbkron: warning: {passive_muscles_note(model)}", file=sys.stderr)
    loaded = time.perf_counter()
    bar = _time_bar(args.t_end, not args.no_progress)

    def progress(t: float) -> None:
        if bar:
            bar.update(t)
        interruption.check()  # Ctrl-C or SIGTERM: stop between steps

    try:
        with interruption.deferred():
            result = simulate(model, (0.0, args.t_end), q0, qd0, method=method, rtol=args.rtol, atol=args.atol,
                              t_eval=np.linspace(0.0, args.t_end, args.samples), progress=progress,
                              ranges="ignore" if args.allow_outside_range else "stop")
    except SimulationInterrupted as stop:  # write what was computed, then exit 130
        result = stop.result
    finally:
        if bar:
            bar.close()
    computed = time.perf_counter()

    scales = np.array([model_file.coordinate_scale(name) for name in model.coordinates])
    columns, units, table = simulation_table(model_file, result)
    outcome = {0: "completed", 1: "range_end", INTERRUPTED: "interrupted"}.get(result.status, "failed")
    last = {"t": float(result.t[-1]), "q": (result.q[-1] / scales).tolist()} if len(result.t) else None
    settings = dict(result.settings, samples=args.samples, q0=list(q0), qd0=list(qd0), status=result.status,
                    outcome=outcome, last_row=last, message=result.message, nfev=result.nfev, njev=result.njev,
                    nlu=result.nlu, steps=result.n_steps)
    with result_set_lock(output):  # concurrent runs into one directory write whole sets in turn
        figure = write_table_and_figure(output, columns, table, (
            lambda: _plot_simulation(model_file, result, scales)) if args.plot and len(result.t) else None)
        written = time.perf_counter()
        timings = {"load": loaded - started, "simulate": computed - loaded, "write": written - computed}
        metadata_path = write_metadata("simulate", argv, model_file, settings, columns, units, timings, output, figure)
    print(f"{model.name}: {result.message}; {result.n_steps} steps, {result.nfev} evaluations, "
          f"{computed - loaded:.2f} s")
    print(f"wrote {output} ({len(result.t)} rows), {metadata_path}" + (f", {figure}" if figure else ""))
    if result.status == INTERRUPTED:
        print(f"mbkron: {result.message}; the rows computed up to then are written", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not result.success:
        print(f"mbkron: error: the simulation stopped early: {result.message} (the rows computed up to then are "
              f"written)", file=sys.stderr)
        return 1
    return 0


def passive_muscles_note(model) -> str:
    """What ``simulate`` says of a model with muscles: they apply no force (the command line has no
    excitations or muscle forces to give; :func:`mbkron.simulate`'s ``muscle_forces`` applies them)."""
    count = len(model.muscles)
    return (f"model `{model.name}` has {count} muscle{'s' if count != 1 else ''}, and `mbkron simulate` applies no "
            "muscle force (muscle-driven simulation does not exist yet; mbkron.simulate(..., muscle_forces=...) "
            "applies given forces)")


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


def _plot_simulation(model_file: ModelFile, result, scales: np.ndarray) -> bytes:
    """q(t) and q̇(t), one panel each (the dissertation's Fig. 18 for Andrews' squeezer)."""
    plt = require_matplotlib()
    model = model_file.model
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for k, name in enumerate(model.coordinates):
        unit = coordinate_unit(model_file, name)
        axes[0].plot(result.t, result.q[:, k] / scales[k], label=f"{name} ({unit})")
        axes[1].plot(result.t, result.qd[:, k] / scales[k], label=f"{name}_dot ({unit}/s)")
    units = sorted({coordinate_unit(model_file, name) for name in model.coordinates})
    unit = units[0] if len(units) == 1 else "file units"
    for ax, title, label in zip(axes, ("coordinates", "rates"), (f"q ({unit})", f"q̇ ({unit}/s)")):
        ax.set_xlabel("t (s)")
        ax.set_ylabel(label)
        ax.set_title(f"{model.name}: {title}")
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
    figure.tight_layout()
    return png_bytes(plt, figure)

