"""The validation report (and the figures): ``python -m validation [--quick] [--out DIR] [--quiet] [--figures]``.

Run from the repository root of a source checkout; ``mbkron validate`` runs this as a separate
process with the same options. Writes ``DIR/REPORT.md`` and ``DIR/REPORT.json``
(:mod:`validation.report`; default ``validation/``) and with ``--figures`` the seed's figures
(:mod:`validation.figures`; ``docs/figures/``, or ``DIR/figures`` with ``--out``). Exit status 0
when no case failed, 1 when one failed or the report or figures cannot be written, 2 for a usage
error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validation import figures, report

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    """The command-line options (the same as ``mbkron validate``'s, but ``--source``)."""
    options = argparse.ArgumentParser(prog="python -m validation", description=__doc__.splitlines()[0])
    options.add_argument("--quick", action="store_true", help="short runs and few samples (under a minute; what CI runs)")
    options.add_argument("--out", metavar="DIR", type=Path, help="output directory (default: validation/)")
    options.add_argument("--quiet", action="store_true", help="no per-case progress lines")
    options.add_argument("--figures", action="store_true", help="also redraw the seed's figures (docs/figures/, or "
                         'DIR/figures with --out; needs pip install "mbkron[plot]")')
    return options


def main(argv: list[str] | None = None) -> int:
    """Run the validation cases, write the report (and the figures); returns the exit status."""
    args = parser().parse_args(argv)
    out = args.out or report.DEFAULT_OUT
    if args.figures:
        try:
            written = figures.make_figures(out / "figures" if args.out else figures.OUT)
        except (ImportError, FileNotFoundError) as exc:
            print(f"validation: error: cannot draw the figures: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {len(written)} figures to {written[0].parent if written else figures.OUT}", flush=True)
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
