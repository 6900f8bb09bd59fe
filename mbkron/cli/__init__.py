"""The ``mbkron`` command line.
"""

from mbkron.cli.commands import main

__all__ = ["main"]
