"""``mbkron convert``: an OpenSim model (``.osim``) as an mbkron model file (TOML)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mbkron.cli.common import CommandError, add_command

__all__ = ["register", "run"]


def register(commands) -> None:
    """Add the ``convert`` command to the sub-command parsers ``commands``."""
    convert = add_command(commands, "convert", "convert an OpenSim model (.osim) to an mbkron model file (TOML)",
                          "Write an OpenSim 4 model as an equivalent mbkron model file (see docs/opensim.md):\n"
                          "loading the written file gives the model mbkron.load_model imports from the .osim file.",
                          "mbkron convert arm26.osim -o arm26.toml --ignore-wrapping")
    convert.add_argument("model", metavar="MODEL", help="OpenSim model file (.osim, OpenSim 4 format)")
    convert.add_argument("-o", "--output", metavar="OUT", required=True, help="the model file to write (.toml)")
    convert.add_argument("--ignore-wrapping", action="store_true",
                         help="import paths with wrap objects without them (a warning names them); default: import them")
    convert.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    convert.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron convert``; returns the exit status."""
    import warnings

    from mbkron.io import parse_model_file, write_atomically
    from mbkron.io.osim import read_osim
    from mbkron.io.writer import format_toml

    source, output = Path(args.model), Path(args.output)
    if source.suffix.lower() != ".osim":
        raise CommandError(f"MODEL: expected an OpenSim model file ending in .osim, got {args.model}")
    if output.exists() and not args.overwrite:
        raise CommandError(f"--output: {args.output} exists; give --overwrite to replace it")
    if output.exists() and output.is_dir():
        raise CommandError(f"--output: {args.output} is a directory; expected a file name")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        imported = read_osim(source, wrapping="ignore" if args.ignore_wrapping else "import")
    for warning in caught:
        print(f"mbkron: warning: {warning.message}", file=sys.stderr)
    text = imported.header + format_toml(imported.document)
    model = parse_model_file(text, str(source)).model  # the model the file loads into (every problem reported)
    try:
        write_atomically(output, text.encode("utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
    print(f"wrote {output}: model {model.name}, {model.nq} coordinates, {model.nb} bodies, {len(model.muscles)} muscles")
    return 0
