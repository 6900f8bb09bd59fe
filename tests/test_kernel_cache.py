"""The disk cache of the compiled kernels is invalidated by any change to a kernel source, not only the file
that defines the cached kernel.

numba stamps a cached kernel with the source of its own file, but the machine code includes the kernels it
calls from other files; :mod:`mbkron.jit.common` adds the hash of every kernel source of the package to
the stamp (:func:`mbkron.jit.common.kernel_sources_hash`). Checked on a copy of the package, in child
processes with numba's cache debug output: the closure callbacks (defined in ``closure_callbacks.py``, their
body in ``closures.py``) are compiled and saved, then loaded, and compiled again after an edit of
``closures.py`` alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mbkron.jit.common import AVAILABLE

PACKAGE = Path(__file__).resolve().parents[1] / "mbkron"


@pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")
def test_an_edit_of_a_callee_recompiles_its_callers_from_other_files(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "src" / "mbkron", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "src"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               NUMBA_DEBUG_CACHE="1")

    def saved_and_loaded() -> tuple[set[str], set[str]]:
        output = subprocess.run([sys.executable, "-W", "ignore", "-c", "from mbkron.algorithms.jointvars import closure_callbacks"],
                                env=env, capture_output=True, text=True, check=True, cwd=tmp_path).stdout
        events: dict[str, set[str]] = {"saved": set(), "loaded": set()}
        for line in output.splitlines():
            for event, names in events.items():
                if line.startswith(f"[cache] data {event}") and "closure_callbacks" in line:
                    names.update(name for name in ("first", "second") if f".{name}-" in line)
        return events["saved"], events["loaded"]

    assert saved_and_loaded() == ({"first", "second"}, set())  # compiled and saved
    assert saved_and_loaded() == (set(), {"first", "second"})  # loaded
    callee = tmp_path / "src" / "mbkron" / "algorithms" / "jointvars" / "closure_kernels.py"
    callee.write_text(callee.read_text(encoding="utf-8") + "\n# an edit of the callee's file only\n", encoding="utf-8")
    assert saved_and_loaded() == ({"first", "second"}, set())  # compiled again, not the stale machine code
