"""The ``mbkron`` command line (``docs/cli.md``): :func:`main`, one module per command."""

from mbkron.cli.main import main

__all__ = ["main"]
