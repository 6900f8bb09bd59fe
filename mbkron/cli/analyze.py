"""``mbkron analyze``: inverse dynamics and joint reactions of a measured motion (:mod:`mbkron.analysis`)."""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

from mbkron.cli.common import (EXIT_INTERRUPTED, CommandError, UsageError, add_command, interruption,
                               output_directory, positive_number, result_metadata, result_set_lock, save)

__all__ = ["register", "run"]

FRAMES = ("ground", "child", "parent")
"""``--reactions-frame`` values (:data:`mbkron.analysis.reactions.FRAMES`; a test keeps them equal), here so
that a bad value is a usage error before numpy is imported."""


def register(commands) -> None:
    """Add the ``analyze`` command to the sub-command parsers ``commands``."""
    command = add_command(
        commands, "analyze", "inverse dynamics, muscle analysis, static optimisation and joint reactions of a "
        "motion (.mot/.sto), as OpenSim's tools",
        "Read the model's coordinates from MOTION (an OpenSim .mot/.sto: inverse kinematics), optionally\n"
        "low-pass filter them as OpenSim does (--lowpass HZ: padding, 3rd-order Butterworth forward and\n"
        "backward), differentiate them by quintic splines and compute, at every frame at once:\n"
        "  --id         the generalized forces (OpenSim's InverseDynamicsTool: <coordinate>_moment/_force)\n"
        "  --muscles    muscle lengths, speeds, moment arms (OpenSim's MuscleAnalysis tables)\n"
        "  --so         static optimisation (OpenSim's StaticOptimization: activations and forces)\n"
        "  --reactions  the joint reactions on each child body (OpenSim's JointReaction: _fx.._mz, _px.._pz),\n"
        "               with --so including its muscle forces\n"
        "with the loads of --external-loads (an OpenSim ExternalLoads .xml and its data file: ground\n"
        "reactions). Writes into DIR, atomically, OpenSim's tables (.sto, which OpenSim reads; CSV too for\n"
        "--id and --reactions) named <motion>_<analysis>..., and <motion>_analysis.json (metadata: model and\n"
        "input SHA-256, settings, timings, outputs). Ctrl-C or SIGTERM keeps the results written so far\n"
        "(exit 130).",
        "mbkron analyze subject01_simbody.osim subject01_walk1_ik.mot --external-loads subject01_walk1_grf.xml "
        "--lowpass 6 --id --reactions --out results")
    command.add_argument("model", metavar="MODEL", help="model file (TOML) or OpenSim model (.osim)")
    command.add_argument("motion", metavar="MOTION", help="coordinates along the trial (.mot/.sto), a column per "
                         "coordinate of the model")
    command.add_argument("--external-loads", metavar="XML", help="OpenSim ExternalLoads file (its datafile is read "
                         "relative to it)")
    command.add_argument("--lowpass", metavar="HZ", type=positive_number(" (Hz)"), help="low-pass cut-off for the coordinates, Hz "
                         "(OpenSim's lowpass_cutoff_frequency_for_coordinates; default: no filter)")
    command.add_argument("--time-range", metavar=("START", "END"), nargs=2, type=float,
                         help="report the frames between START and END, s (default: the whole motion)")
    command.add_argument("--id", action="store_true", help="inverse dynamics")
    command.add_argument("--muscles", action="store_true", help="muscle analysis: lengths, speeds, moment arms, "
                         "rigid-tendon fibre kinematics")
    command.add_argument("--so", action="store_true", help="static optimisation (needs the inverse dynamics, "
                         "computed for it); with --reactions the reactions include its muscle forces")
    command.add_argument("--reserves", metavar="XML", help="reserve and residual actuators for --so (an OpenSim "
                         "force-set file of CoordinateActuators, PointActuators, TorqueActuators)")
    command.add_argument("--activation-exponent", metavar="P", type=_exponent, default=2.0,
                         help="exponent of the activations in --so's objective (default 2)")
    command.add_argument("--reactions", action="store_true", help="joint reactions")
    command.add_argument("--reactions-frame", choices=FRAMES, default="ground",
                         help="frame the reactions are expressed in (default ground)")
    command.add_argument("--ignore-wrapping", action="store_true",
                         help="import an .osim model's paths without their wrap objects")
    command.add_argument("--out", metavar="DIR", default=".", help="output directory (default: here)")
    command.set_defaults(run=run)


def _exponent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 1 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number greater than 1, got {text!r}")
    return value


ANALYSES = ("inverse_dynamics", "muscle_analysis", "static_optimization", "joint_reactions")
"""The analyses in the order they run (:data:`mbkron.analysis.trial.ANALYSES`; a test keeps them equal)."""


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron analyze``; returns the exit status."""
    import numpy as np

    wanted = {"inverse_dynamics": args.id, "muscle_analysis": args.muscles, "static_optimization": args.so,
              "joint_reactions": args.reactions}
    if not any(wanted.values()):
        raise UsageError("choose at least one analysis: --id, --muscles, --so, --reactions (see mbkron analyze --help)")
    if args.time_range and not args.time_range[0] <= args.time_range[1]:
        raise UsageError(f"--time-range: START must not exceed END, got {args.time_range[0]} {args.time_range[1]}")
    if args.reserves and not args.so:
        raise UsageError("--reserves is for static optimisation: add --so")
    directory = output_directory(args.out)
    stem = Path(args.motion).stem
    metadata_path = directory / f"{stem}_analysis.json"
    for path in [metadata_path] + [directory / f"{stem}_{name}{suffix}" for name in ("inverse_dynamics",
                                   "joint_reactions") for suffix in (".sto", ".csv")]:
        if path.is_dir():
            raise CommandError(f"--out: {path} is a directory; the results are written to that name")

    from mbkron.analysis.trial import analyze_trial
    from mbkron.io import read_model_file
    from mbkron.io.storage import StorageError

    started = time.perf_counter()
    model_file = read_model_file(args.model, wrapping="ignore" if args.ignore_wrapping else "import")
    model = model_file.model
    timings = {"load": time.perf_counter() - started}
    written: dict[str, str] = {}
    analysis = None
    interrupted = False

    def write(name: str, result) -> None:  # each analysis as it finishes: an interruption keeps it
        _write(name, result, directory, stem, written)
        interruption.check()

    try:
        with interruption.deferred():
            analysis = analyze_trial(
                model, args.motion, external_loads=args.external_loads, lowpass=args.lowpass,
                time_range=args.time_range, analyses=[name for name in ANALYSES if wanted[name]],
                reserves=args.reserves or (), activation_exponent=args.activation_exponent,
                reactions_frame=args.reactions_frame,
                each=write)
    except KeyboardInterrupt:
        interrupted = True
    except (StorageError, ValueError) as error:
        raise CommandError(str(error)) from None
    if analysis is not None:
        timings.update(analysis.timings)
    frames = len(analysis.kinematics.time) if analysis is not None else None
    settings = {"motion": args.motion, "motion_sha256": _sha256(args.motion), "external_loads": args.external_loads,
                "lowpass_hz": args.lowpass, "time_range": args.time_range, "frames": frames,
                "ignored_columns": list(analysis.kinematics.ignored) if analysis is not None else [],
                "analyses": [n for n in ANALYSES if wanted[n]],
                "reactions_frame": args.reactions_frame, "reserves": args.reserves,
                "activation_exponent": args.activation_exponent, "interrupted": interrupted}
    if analysis is not None and "static_optimization" in analysis.results:
        unbalanced = int(np.count_nonzero(~analysis["static_optimization"].converged))
        settings["static_optimization_unbalanced_frames"] = unbalanced
        if unbalanced:
            from mbkron.analysis.static_optimization import unbalanced_message

            print(f"mbkron: warning: {unbalanced_message(unbalanced, frames, args.reserves)}", file=sys.stderr)
    with result_set_lock(metadata_path):
        from mbkron.io import write_json

        save(write_json, metadata_path, result_metadata("analyze", args.argv, model_file, settings, [], timings,
                                                        written))
    ignored = analysis.kinematics.ignored if analysis is not None else ()
    ignored = f" (columns not of the model, ignored: {', '.join(ignored)})" if ignored else ""
    print(f"{model.name}: {frames} frames of {args.motion}{ignored}; wrote "
          f"{', '.join(written.values()) or 'nothing'}, {metadata_path}")
    if interrupted:
        print("mbkron: interrupted; the results written up to then are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _write(name: str, result, directory: Path, stem: str, written: dict) -> None:
    """Write one analysis's files (:func:`mbkron.analysis.trial.write_analysis`) under the result-set lock."""
    from mbkron.analysis.trial import write_analysis

    with result_set_lock(directory / stem):
        try:
            written.update(write_analysis(name, result, directory, stem))
        except OSError as exc:
            raise CommandError(f"cannot write the {name.replace('_', ' ')} results: {exc.strerror or exc}") from None


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
