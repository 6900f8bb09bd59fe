"""``mbkron analyze``: inverse dynamics and joint reactions of a measured motion (:mod:`mbkron.analysis`)."""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

from mbkron.cli.common import (EXIT_INTERRUPTED, CommandError, UsageError, add_command, interruption,
                               output_directory, result_metadata, result_set_lock, save)

__all__ = ["register", "run"]

FRAMES = ("ground", "child", "parent")
"""``--reactions-frame`` values (:data:`mbkron.analysis.reactions.FRAMES`; a test keeps them equal), here so
that a bad value is a usage error before numpy is imported."""


def register(commands) -> None:
    """Add the ``analyze`` command to the sub-command parsers ``commands``."""
    command = add_command(
        commands, "analyze", "inverse dynamics and joint reactions of a motion (.mot/.sto), as OpenSim's tools",
        "Read the model's coordinates from MOTION (an OpenSim .mot/.sto: inverse kinematics), optionally\n"
        "low-pass filter them as OpenSim does (--lowpass HZ: padding, 3rd-order Butterworth forward and\n"
        "backward), differentiate them by quintic splines and compute, at every frame at once:\n"
        "  --id         the generalized forces (OpenSim's InverseDynamicsTool: <coordinate>_moment/_force)\n"
        "  --reactions  the joint reactions on each child body (OpenSim's JointReaction: _fx.._mz, _px.._pz)\n"
        "with the loads of --external-loads (an OpenSim ExternalLoads .xml and its data file: ground\n"
        "reactions). Writes DIR/<motion>_inverse_dynamics.sto and .csv, DIR/<motion>_joint_reactions.sto and\n"
        ".csv (atomically; OpenSim reads the .sto) and DIR/<motion>_analysis.json (metadata: model and input\n"
        "SHA-256, settings, timings, outputs). Ctrl-C or SIGTERM keeps the results written so far (exit 130).",
        "mbkron analyze subject01_simbody.osim subject01_walk1_ik.mot --external-loads subject01_walk1_grf.xml "
        "--lowpass 6 --id --reactions --out results")
    command.add_argument("model", metavar="MODEL", help="model file (TOML) or OpenSim model (.osim)")
    command.add_argument("motion", metavar="MOTION", help="coordinates along the trial (.mot/.sto), a column per "
                         "coordinate of the model")
    command.add_argument("--external-loads", metavar="XML", help="OpenSim ExternalLoads file (its datafile is read "
                         "relative to it)")
    command.add_argument("--lowpass", metavar="HZ", type=_cutoff, help="low-pass cut-off for the coordinates, Hz "
                         "(OpenSim's lowpass_cutoff_frequency_for_coordinates; default: no filter)")
    command.add_argument("--time-range", metavar=("START", "END"), nargs=2, type=float,
                         help="report the frames between START and END, s (default: the whole motion)")
    command.add_argument("--id", action="store_true", help="inverse dynamics")
    command.add_argument("--reactions", action="store_true", help="joint reactions")
    command.add_argument("--reactions-frame", choices=FRAMES, default="ground",
                         help="frame the reactions are expressed in (default ground)")
    command.add_argument("--ignore-wrapping", action="store_true",
                         help="import an .osim model's paths without their wrap objects")
    command.add_argument("--out", metavar="DIR", default=".", help="output directory (default: here)")
    command.set_defaults(run=run)


def _cutoff(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive frequency in Hz, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron analyze``; returns the exit status."""
    if not (args.id or args.reactions):
        raise UsageError("choose at least one analysis: --id, --reactions (see mbkron analyze --help)")
    if args.time_range and not args.time_range[0] <= args.time_range[1]:
        raise UsageError(f"--time-range: START must not exceed END, got {args.time_range[0]} {args.time_range[1]}")
    directory = output_directory(args.out)
    stem = Path(args.motion).stem
    outputs = {name: directory / f"{stem}_{name}" for name in ("inverse_dynamics", "joint_reactions")}
    metadata_path = directory / f"{stem}_analysis.json"
    for path in [metadata_path] + [p.with_suffix(s) for p in outputs.values() for s in (".sto", ".csv")]:
        if path.is_dir():
            raise CommandError(f"--out: {path} is a directory; the results are written to that name")

    from mbkron.analysis.external_loads import external_loads
    from mbkron.analysis.motion import trial_kinematics
    from mbkron.io import read_model_file
    from mbkron.io.storage import StorageError

    started = time.perf_counter()
    model_file = read_model_file(args.model, wrapping="ignore" if args.ignore_wrapping else "error")
    model = model_file.model
    try:
        kinematics = trial_kinematics(model, args.motion, args.lowpass, args.time_range)
        loads = external_loads(args.external_loads) if args.external_loads else None
    except (StorageError, ValueError) as error:
        raise CommandError(str(error)) from None
    timings = {"load": time.perf_counter() - started}
    written: dict[str, str] = {}
    interrupted = False
    try:
        with interruption.deferred():
            for name, wanted in (("inverse_dynamics", args.id), ("joint_reactions", args.reactions)):
                if wanted:
                    interruption.check()
                    _analysis(name, model, kinematics, loads, args, outputs[name], timings, written)
    except KeyboardInterrupt:
        interrupted = True
    settings = {"motion": args.motion, "motion_sha256": _sha256(args.motion), "external_loads": args.external_loads,
                "lowpass_hz": args.lowpass, "time_range": args.time_range, "frames": int(kinematics.time.size),
                "ignored_columns": list(kinematics.ignored), "reactions_frame": args.reactions_frame,
                "interrupted": interrupted}
    with result_set_lock(metadata_path):
        from mbkron.io import write_json

        save(write_json, metadata_path, result_metadata("analyze", args.argv, model_file, settings, [], timings,
                                                        written))
    print(f"{model.name}: {kinematics.time.size} frames of {args.motion}; wrote "
          f"{', '.join(written.values()) or 'nothing'}, {metadata_path}")
    if interrupted:
        print("mbkron: interrupted; the results written up to then are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def _analysis(name, model, kinematics, loads, args, output: Path, timings: dict, written: dict) -> None:
    """Compute one analysis and write its .sto and .csv."""
    from mbkron.io import write_csv

    started = time.perf_counter()
    if name == "inverse_dynamics":
        from mbkron.analysis.inverse_dynamics import inverse_dynamics

        result = inverse_dynamics(model, kinematics, loads)
        labels, table = result.labels, result.tau
    else:
        from mbkron.analysis.reactions import joint_reactions

        result = joint_reactions(model, kinematics, loads, frame=args.reactions_frame)
        labels, table = result.labels, result.table
    timings[name] = time.perf_counter() - started
    sto, csv = output.with_suffix(".sto"), output.with_suffix(".csv")
    import numpy as np

    with result_set_lock(output):
        save(lambda path: result.write(path), sto)
        save(write_csv, csv, ("time",) + tuple(labels), np.column_stack([kinematics.time, table]))
    written[f"{name}_sto"], written[f"{name}_csv"] = str(sto), str(csv)


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
