"""The validation report (and the figures): ``python -m validation [--quick] [--out DIR | --update-report] [--quiet] [--figures]``.

Run from the repository root of a source checkout; ``mbkron validate`` runs this as a separate
process with the same options. Writes ``DIR/REPORT.md`` and ``DIR/REPORT.json``
(:mod:`validation.report`) and with ``--figures`` the seed's figures (:mod:`validation.figures`)
in ``DIR/figures``. ``DIR`` is ``--out``, by default a new directory
``validation-report-<UTC time>`` in the current directory: a run never changes a tracked file. The
committed report (``validation/REPORT.md``, ``REPORT.json``) and figures (``docs/figures/``) are
regenerated only on purpose, with ``--update-report`` (a full run: not with ``--quick``). Exit status 0
when no case failed, 1 when one failed or the report or figures cannot be written, 2 for a usage
error.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from validation import figures, report

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command-line options (the same as ``mbkron validate``'s, but ``--source``)."""
    options = argparse.ArgumentParser(prog="python -m validation", description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="short runs and few samples, "
                         "named in the report (seconds once the kernels are compiled; what CI runs)")
    destination = options.add_mutually_exclusive_group()
    destination.add_argument("--out", metavar="DIR", type=Path, help="output directory (default: a new directory "
                             "validation-report-<UTC time> here)")
    destination.add_argument("--update-report", action="store_true", help="rewrite the committed report "
                             "(validation/REPORT.md, REPORT.json; with --figures docs/figures/); a full run only")
    options.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    options.add_argument("--figures", action="store_true", help="also redraw the seed's figures (DIR/figures; needs "
                         'pip install "mbkron[plot]")')
    return options


def main(argv: list[str] | None = None) -> int:
    """Run the validation cases, write the report (and the figures); returns the exit status."""
    options = parser()
    args = options.parse_args(argv)
    if args.update_report and args.quick:
        options.error("--update-report rewrites the committed full report: run it without --quick")
    if args.update_report:
        out, figure_directory = report.DEFAULT_OUT, figures.OUT
    else:
        out = args.out or Path(f"validation-report-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}")
        figure_directory = out / "figures"
    if args.figures:
        try:
            written = figures.make_figures(figure_directory)
        except (ImportError, FileNotFoundError) as exc:
            print(f"validation: error: cannot draw the figures: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {len(written)} figures to {figure_directory}", flush=True)
    result = report.run(args.quick, progress=None if args.quiet else report.print_case)
    try:
        text_path, json_path = report.write(result, out)
    except OSError as exc:
        print(f"validation: error: cannot write the report to {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"{'all cases passed' if result.passed else 'FAILED'}: wrote {text_path} and {json_path}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
