"""The ``mbkron`` command line (``docs/cli.md``): :func:`main` (the console script: :func:`run`), one module per
command."""

from mbkron.cli.main import main, run

__all__ = ["main", "run"]
