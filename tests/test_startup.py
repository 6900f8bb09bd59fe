"""Cold start: help and usage errors import no numerical package; the first compilation says so, once.

Each case runs a fresh Python in a subprocess (the modules a process has imported cannot be
un-imported). No timings are asserted here: ``benchmarks/bench_startup.py`` measures them.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mbkron
from mbkron.compiled.common import COMPILING

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "scipy", "sympy", "numba", "llvmlite", "matplotlib", "tqdm")

#: Runs ``python -m mbkron ARGS`` (the arguments come as JSON in argv[1]) and prints, as its last line
#: of stdout, the exit status and the top-level packages imported by then.
RUN_AND_LIST_MODULES = """
import json, runpy, sys
sys.argv = ["mbkron", *json.loads(sys.argv[1])]
try:
    runpy.run_module("mbkron", run_name="__main__", alter_sys=True)
    status = 0
except SystemExit as exit:
    status = exit.code
print(json.dumps([status, sorted({name.partition(".")[0] for name in sys.modules})]))
"""


def _python(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env})


@pytest.mark.parametrize("argv, status, output", [
    (["--help"], 0, "usage: mbkron"),
    (["simulate", "--help"], 0, "usage: mbkron simulate"),
    (["kinematics", "--help"], 0, "example:"),
    (["--version"], 0, f"mbkron {mbkron.__version__}"),
    (["no-such-command"], 2, "invalid choice: 'no-such-command'"),
    (["info"], 2, "the following arguments are required: MODEL"),
    (["simulate", "models/two_link_arm.toml", "--t-end"], 2, "expected one argument"),
])
def test_help_and_usage_errors_import_no_numerical_package(argv, status, output):
    done = _python("-c", RUN_AND_LIST_MODULES, json.dumps(argv))
    assert done.returncode == 0, done.stderr
    *printed, last = done.stdout.splitlines()
    exit_status, modules = json.loads(last)
    assert exit_status == status
    assert output in "\n".join(printed) + done.stderr
    assert [name for name in HEAVY if name in modules] == []


def test_import_mbkron_loads_the_public_names_on_first_use():
    script = ("import sys, mbkron; before = sorted(n for n in ('numpy', 'scipy', 'sympy', 'numba') if n in sys.modules); "
              "model = mbkron.load_model('models/two_link_arm.toml'); "
              "print(before, 'scipy.integrate' in sys.modules, 'matplotlib' in sys.modules, model.nq)")
    done = _python("-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "False", "False", "2"]  # nothing heavy at import; no integrator, no plots


def test_first_compilation_is_announced_once_and_not_when_loaded_from_the_cache(tmp_path):
    pytest.importorskip("numba")
    command = ["-m", "mbkron", "kinematics", "models/two_link_arm.toml", "--q", "alpha1=30,alpha2=45",
               "-o", str(tmp_path / "arm.csv")]
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}  # empty: everything is compiled
    cold = _python(*command, env=cache)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.splitlines() == [f"mbkron: {COMPILING}"]
    warm = _python(*command, env=cache)  # the same cache, now filled: the kernels are loaded, not compiled
    assert warm.returncode == 0, warm.stderr
    assert warm.stderr == ""
    assert warm.stdout == cold.stdout


def test_the_announcement_is_an_info_record_of_the_mbkron_logger_for_mbkron_kernels_only(caplog):
    """The library logs (never prints); numba's compile events of other packages' functions are ignored."""
    numba = pytest.importorskip("numba")
    from numba.core import event

    from mbkron.compiled import common, tabulated

    def not_mbkron(x):
        return x

    listener = common._FirstCompilation()  # a fresh one: this process may have compiled mbkron's kernels before
    kernel = tabulated._stacked_cubics  # one of mbkron's kernels (the events are made here: nothing is compiled)
    with caplog.at_level(logging.INFO, logger="mbkron"):
        for dispatcher in (numba.njit(not_mbkron), kernel, kernel):
            listener.notify(event.Event("numba:compile", event.EventStatus.START, data={"dispatcher": dispatcher}))
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [("mbkron", logging.INFO, COMPILING)]
