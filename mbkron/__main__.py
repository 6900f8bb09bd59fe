"""``python -m mbkron ...``: the ``mbkron`` command line (:func:`mbkron.cli.run`)."""

from mbkron.cli import run

run()
