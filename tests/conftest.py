"""Markers of the suite (registered here so that ``pytest --strict-markers`` accepts them)."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "child_process: the test's work runs in a child Python (the command line, a script), which imports numba "
        "whenever it is installed; tests/without_numba.py skips it (the numba-hidden run would repeat the normal "
        "run's test exactly)")
