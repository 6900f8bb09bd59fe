"""``python -m mbkron ...``: the ``mbkron`` command line (:func:`mbkron.cli.main`)."""

import sys

from mbkron.cli import main

sys.exit(main())
