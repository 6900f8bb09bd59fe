"""Cold start: help and usage errors import no numerical package; the first compilation says so, once.

Each case runs a fresh Python in a subprocess (the modules a process has imported cannot be
un-imported). No timings are asserted here: ``benchmarks/bench_startup.py`` measures them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import mbkron
from mbkron.cli.main import COMMANDS, parser
from mbkron.jit.common import COMPILING, COMPILING_MODEL

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
print(json.dumps([status, sorted({name.partition(".")[0] for name in sys.modules}),
                  sorted(name for name in sys.modules if name.startswith("mbkron.cli."))]))
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
    exit_status, modules, cli_modules = json.loads(last)
    assert exit_status == status
    assert output in "\n".join(printed) + done.stderr
    assert [name for name in HEAVY if name in modules] == []
    # only the named command's module (and the helpers it imports), none for the top level
    named = {"simulate": "mbkron.cli.simulate", "kinematics": "mbkron.cli.kinematics", "info": "mbkron.cli.info"}
    expected = {"mbkron.cli.main"} | ({named[argv[0]], "mbkron.cli.common"} if argv[0] in named else set())
    assert set(cli_modules) == expected


def test_the_top_level_help_lists_every_command_as_the_commands_register_themselves():
    """``mbkron --help`` (commands listed from COMMANDS, no module imported) is the text of the parser
    with every command module registered, so a summary changed in a module cannot drift."""
    full, listed = parser(), parser("")
    assert listed.format_help() == full.format_help()
    assert all(f"\n    {name}" in full.format_help() for name in COMMANDS)


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
    [line] = cold.stderr.splitlines()  # one line on stderr: what, how long, where cached, how to avoid
    assert line.startswith(f"mbkron: {COMPILING} (about ")
    assert str(tmp_path / "numba-cache") in line and "`mbkron compile`" in line
    warm = _python(*command, env=cache)  # the same cache, now filled: the kernels are loaded, not compiled
    assert warm.returncode == 0, warm.stderr
    assert warm.stderr == ""
    assert warm.stdout == cold.stdout


def test_from_python_the_first_compilation_is_a_compile_notice_at_the_callers_line(tmp_path):
    pytest.importorskip("numba")
    # the cheapest first compilation (the kinematics kernel alone): what is tested is how it is announced
    script = ("import mbkron; model = mbkron.load_model('models/two_link_arm.toml'); "
              "print(model.kinematics([0.1, 0.2], 0).T.shape)")
    cache = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    cold = _python("-c", script, env=cache)
    assert cold.returncode == 0, cold.stderr
    # Python's default display of a warning: shown (not a log record), at the script's line, once
    assert cold.stderr.startswith(f"<string>:1: CompileNotice: {COMPILING} (about ")
    assert cold.stderr.count("CompileNotice") == 1
    assert cold.stdout == "(2, 4, 4)\n"
    warm = _python("-c", script, env=cache)
    assert (warm.returncode, warm.stderr, warm.stdout) == (0, "", cold.stdout)
    silenced = _python("-c", "import warnings, mbkron; warnings.simplefilter('ignore', mbkron.CompileNotice); "
                       + script.removeprefix("import mbkron; "), env={"NUMBA_CACHE_DIR": str(tmp_path / "other-cache")})
    assert (silenced.returncode, silenced.stderr) == (0, "")


def test_the_notice_is_a_warning_for_mbkron_kernels_only_once_each_kind_and_never_an_error():
    """numba's compile events of other packages' functions are ignored; the library's and the generated
    modules' kernels are announced once each; an "error" filter does not abort the compilation."""
    numba = pytest.importorskip("numba")
    from numba.core import event

    from mbkron.jit import common
    from mbkron.numerics import tabulated

    def not_mbkron(x):
        return x

    def generated(x):
        return x

    generated.__module__ = "mbkron_kernels_0123"  # as the generated modules are named (algorithms/jointvars/kernels.py)

    def notify(listener, dispatcher):
        listener.notify(event.Event("numba:compile", event.EventStatus.START, data={"dispatcher": dispatcher}))

    listener = common._FirstCompilation()  # a fresh one: this process may have compiled mbkron's kernels before
    kernel = tabulated.functions_at  # one of mbkron's kernels (the events are made here: nothing is compiled)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for dispatcher in (numba.njit(not_mbkron), kernel, kernel, numba.njit(generated), numba.njit(generated),
                           kernel):
            notify(listener, dispatcher)
    assert [w.category for w in caught] == [mbkron.CompileNotice, mbkron.CompileNotice]
    assert str(caught[0].message).startswith(f"{COMPILING} (")
    assert str(caught[1].message).startswith(f"{COMPILING_MODEL} (")
    assert issubclass(mbkron.CompileNotice, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        notify(common._FirstCompilation(), kernel)  # raises nothing


FINISH = """
import atexit, sys, threading, time
from mbkron.cli.main import finish
atexit.register(lambda: print("exit handler ran", flush=True))
def late():
    time.sleep(0.2)
    print("thread finished", flush=True)
threading.Thread(target=late).start()
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor(1)  # left running, as Python's exit allows: told to stop, its workers joined
pool.submit(time.sleep, 0.1)
print("buffered output", end="")  # not flushed: finish must flush it
sys.stderr.write("to stderr")
finish(3)
"""


def test_finish_ends_the_process_as_python_would():
    """The command line's exit (mbkron.cli.main.finish, without Python's teardown of every module): non-daemon
    threads joined, exit handlers run, the standard streams flushed, the status kept."""
    result = subprocess.run([sys.executable, "-c", FINISH], capture_output=True, text=True, timeout=120,
                            cwd=str(ROOT))
    assert result.returncode == 3
    assert result.stdout == "buffered outputthread finished\nexit handler ran\n"
    assert result.stderr == "to stderr"
