"""``mbkron batch``: the items of a batch file on a dask cluster or serially (:func:`mbkron.batch.run_batch`)."""

from __future__ import annotations

import argparse
import sys

from mbkron.cli.common import EXIT_INTERRUPTED, CommandError, add_command, integer_at_least

__all__ = ["register", "run"]


def register(commands) -> None:
    """Add the ``batch`` command to the sub-command parsers ``commands``."""
    command = add_command(
        commands, "batch", "many simulations (or analyses) from a batch file, on dask or serially",
        "Run the items of a batch file (TOML: [batch] kind, [defaults], [[item]] tables or a CSV of parameter\n"
        "sets; docs/batch.md) on a dask.distributed LocalCluster of this machine (the `distributed` extra;\n"
        "without it the items run serially), on a running cluster (--scheduler), or one after another here\n"
        "(--serial; the same results, byte for byte). Each item's results go into DIR/<id>/, atomically, its\n"
        "item.json (outcome, definition hash) last; a re-run skips the finished items, so an interrupted\n"
        "batch resumes where it stopped, and computes again the items whose definition changed or that\n"
        "failed. A failed item is reported and the others go on; the exit status is then 1 (130 after\n"
        "Ctrl-C or SIGTERM).",
        "mbkron batch arm_batch.toml --out arm_batch --workers 2")
    command.add_argument("batch", metavar="BATCH", help="batch file (TOML)")
    command.add_argument("--out", metavar="DIR", required=True, help="output directory (created if missing)")
    where = command.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="a running dask scheduler, e.g. tcp://10.0.0.5:8786 (default: a LocalCluster here)")
    where.add_argument("--workers", metavar="N", type=integer_at_least(1, "one worker process"),
                       help="worker processes of the LocalCluster (default: the number of CPUs)")
    where.add_argument("--serial", action="store_true", help="run the items here, one after another, without dask")
    command.add_argument("--no-progress", action="store_true", help="no progress bar")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron batch``; returns the exit status."""
    from mbkron.batch import BatchError, BatchFileError, BatchInterrupted, read_batch, run_batch

    try:
        items = read_batch(args.batch)
        report = run_batch(items, args.out, scheduler=args.scheduler, workers=args.workers, serial=args.serial,
                           progress=not args.no_progress and sys.stderr.isatty())
    except (BatchFileError, BatchError) as error:
        raise CommandError(str(error)) from None
    except BatchInterrupted as stop:
        finished = len(stop.report.computed) + len(stop.report.skipped)
        print(f"mbkron: interrupted; {finished} of {len(items)} items are finished in {args.out} (run the same "
              "command again to compute the rest)", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"batch of {len(items)} items ({report.executor}): {len(report.computed) - len(report.failed)} computed, "
          f"{len(report.skipped)} finished earlier, {len(report.failed)} failed, {len(report.warned)} with warnings; "
          f"results in {args.out}")
    for identifier, message in report.failed.items():
        print(f"  failed: {identifier}: {message}")
    for identifier, found in report.warned.items():
        for message in found:
            print(f"  warning: {identifier}: {message}")
    if report.failed:
        print(f"mbkron: error: {len(report.failed)} of {len(items)} items failed (listed above and in their "
              "item.json)", file=sys.stderr)
        return 1
    return 0
