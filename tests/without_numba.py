"""pytest plugin: run the suite as on a machine without numba (``python -m pytest -p tests.without_numba``).

Makes ``import numba`` fail before mbkron is imported, so the ``compiled`` backend is unavailable,
models default to the ``numpy`` backend and every compiled-only test skips: the fallback a user
without the ``fast`` extra gets is really exercised. CI runs the suite once more this way. Tests marked
``child_process`` (their work runs in a child Python, which this hook does not reach) skip too.
"""

from __future__ import annotations

import importlib.abc
import sys

import pytest


class _NoNumba(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numba" or name.startswith("numba.") or name == "llvmlite" or name.startswith("llvmlite."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden by tests/without_numba.py)", name=name)
        return None


# mbkron's own light modules may be imported already (pytest resolves the ModelWarning category of the
# `filterwarnings` setting, mbkron.core.errors, before plugins load); nothing that imports numba may be
if "numba" in sys.modules or "mbkron.compiled.common" in sys.modules:  # pragma: no cover - a misuse
    raise RuntimeError("tests.without_numba must be loaded before numba and mbkron's kernels "
                       "(use `-p tests.without_numba`)")
sys.meta_path.insert(0, _NoNumba())


def pytest_report_header(config):
    return "numba hidden: the compiled backend is unavailable (tests/without_numba.py)"


def pytest_collection_modifyitems(config, items):
    """Skips the tests marked ``child_process``: their child Python is not under this hook and imports numba, so
    here they would run exactly as in the normal run (which runs them)."""
    skip = pytest.mark.skip(reason="child_process: the child Python sees numba; the normal run runs this test")
    for item in items:
        if item.get_closest_marker("child_process"):
            item.add_marker(skip)
