"""Fixtures shared by the suite."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest


@pytest.fixture
def children():
    """A list the test appends its :class:`subprocess.Popen` children to; any still running at teardown (the test
    failed, or pytest-timeout ended a hang) is killed with its process group when it leads one, so that no stray
    ``python -m mbkron`` outlives its test. Tests wait for children without a clock of their own: the suite's
    pytest-timeout (pyproject.toml) is the hang detector."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            try:
                if os.getpgid(process.pid) == process.pid:  # started with start_new_session=True: its workers too
                    os.killpg(process.pid, signal.SIGKILL)
                else:
                    process.kill()
            except ProcessLookupError:  # ended in between
                pass
        process.communicate()
