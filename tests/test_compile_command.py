"""``mbkron compile`` and what it promises: afterwards the README's main job compiles nothing; results do
not depend on whether a call compiled.

The child-process cases start from an empty ``MBKRON_CACHE_DIR`` (a model's generated constraint functions
not yet compiled) and share the session's kernel cache: from an empty one they would compile every kernel
(a minute or two), which CI's own ``mbkron compile`` on an empty cache already does before the tests
(tests/test_startup.py compiles from an empty cache). No timing is asserted (``benchmarks/bench_startup.py``
measures it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mbkron import cli
from mbkron.jit.common import AVAILABLE, COMPILING, COMPILING_MODEL

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "osim"
needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


def _python(*arguments: str, caches: Path, fresh_kernels: bool = True) -> subprocess.CompletedProcess:
    """A child Python with the empty ``caches / "mbkron"`` as ``MBKRON_CACHE_DIR`` and, with ``fresh_kernels``, the
    empty ``caches / "numba"`` as ``NUMBA_CACHE_DIR`` (else the session's kernel cache)."""
    environment = {**os.environ, "MBKRON_CACHE_DIR": str(caches / "mbkron"),
                   "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if fresh_kernels:
        environment["NUMBA_CACHE_DIR"] = str(caches / "numba")
    return subprocess.run([sys.executable, *arguments], cwd=ROOT, capture_output=True, text=True, env=environment,
                          timeout=3600)  # hang detection only: a loaded 2-core machine takes 30+ min


def test_compile_has_help_naming_the_cache_and_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["compile", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    assert "NUMBA_CACHE_DIR" in out and "MBKRON_CACHE_DIR" in out and "example:\n  mbkron compile" in out


@needs_numba
@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_below_one_is_one_line_naming_the_option(capsys, jobs):
    assert cli.main(["compile", "--jobs", jobs]) == 1
    out, err = capsys.readouterr()
    assert err == f"mbkron: error: `--jobs` must be a positive number of processes, not {jobs}\n" and out == ""


@needs_numba
def test_a_missing_model_file_is_one_line_naming_it_before_anything_is_compiled(capsys, tmp_path):
    missing = tmp_path / "no_such_model.toml"
    assert cli.main(["compile", str(missing)]) == 1
    out, err = capsys.readouterr()
    assert err == f"mbkron: error: cannot read the model file `{missing}`: no such file\n"
    assert out == ""


@needs_numba
def test_after_compile_the_main_job_compiles_nothing_and_compile_again_compiles_nothing(tmp_path):
    done = _python("-m", "mbkron", "compile", "models/andrews_squeezer.toml", caches=tmp_path, fresh_kernels=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("mbkron compile: 4 steps; kernel cache ")
    assert [line.split("]")[0] for line in lines[1:5]] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    # the session's kernel cache may hold every kernel already (CI compiles them ahead): either ending is right
    assert lines[-1].startswith("mbkron compile: ") and lines[-1].endswith(
        ("(cached for later runs)", "(all were in the cache already)"))
    assert COMPILING not in done.stderr  # the command's own work is not announced as a surprise

    job = _python("-m", "mbkron", "simulate", "models/andrews_squeezer.toml", "--t-end", "0.03", "--out",
                  str(tmp_path / "runs"), "--no-progress", caches=tmp_path, fresh_kernels=False)
    assert job.returncode == 0, job.stderr
    assert COMPILING not in job.stderr and COMPILING_MODEL not in job.stderr and "CompileNotice" not in job.stderr
    # the trees' other routes: an affine rhythm (the shoulder), loads solved apart (the planar chain's forces)
    for other in ("shoulder_rhythm_b", "planar_chain"):
        job = _python("-m", "mbkron", "simulate", f"models/{other}.toml", "--t-end", "0.01", "--out",
                      str(tmp_path / "runs"), "--no-progress", caches=tmp_path, fresh_kernels=False)
        assert job.returncode == 0, job.stderr
        assert COMPILING not in job.stderr, other

    again = _python("-m", "mbkron", "compile", caches=tmp_path, fresh_kernels=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1].startswith("mbkron compile: 0 kernels compiled in ")


FIRST_AND_SECOND_CALL = """
import gzip, sys
from pathlib import Path
import numpy as np
import mbkron
path = Path(sys.argv[1])
path.write_bytes(gzip.decompress(Path(sys.argv[2]).read_bytes()))
model = mbkron.load_model(path)
# the first call (which compiles) at 65 states over the shoulder's and the elbow's ranges, then again
grid = np.array([[a, b] for a in np.linspace(-0.5, 2.5, 13) for b in np.linspace(0.0, 2.4, 5)])
first, second = model.moment_arms(grid), model.moment_arms(grid)
lengths = model.muscle_lengths(grid), model.muscle_lengths(grid)
single = model.moment_arms(model.default_q), model.moment_arms(model.default_q)
print(first.tobytes() == second.tobytes(), lengths[0].tobytes() == lengths[1].tobytes(),
      single[0].tobytes() == single[1].tobytes(), float(np.abs(first - second).max()), first.shape)
"""


@needs_numba
def test_arm26_first_compiled_call_equals_later_calls_bit_for_bit(tmp_path):
    """Issue 26: a first ``moment_arms`` of arm26 (ellipsoid wraps) was seen to differ from the later
    identical calls by 1.9e-15 — two specialisations of one kernel (a literal and an int64 iteration count)
    with different arithmetic, chosen by whether a call was the first; the first call of a process must give
    the same bits. A fresh process on the session's kernel cache (where both specialisations would be)."""
    done = _python("-c", FIRST_AND_SECOND_CALL, str(tmp_path / "arm26.osim"), str(DATA / "arm26.osim.gz"),
                   caches=tmp_path, fresh_kernels=False)
    assert done.returncode == 0, done.stderr
    *equal, difference, shape = done.stdout.split(maxsplit=4)
    assert (equal, difference) == (["True", "True", "True"], "0.0"), done.stdout
    assert shape.strip() == "(65, 2, 6)"


@needs_numba
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_parallel_compile_stops_its_workers_and_says_what_is_kept(tmp_path, signal_number):
    """With an empty kernel cache the steps compile in two worker processes; a signal to the command stops them
    at once (not at the end of their steps), exit status 130, one line saying the cache keeps what was done."""
    environment = {**os.environ, "MBKRON_CACHE_DIR": str(tmp_path / "mbkron"),
                   "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
                   "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen([sys.executable, "-m", "mbkron", "compile", "--jobs", "2"], cwd=ROOT, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().startswith("mbkron compile: 3 steps")  # the workers are starting
    time.sleep(3.0)  # into their compilation (not a measurement: the outcome is the same at any moment)
    process.send_signal(signal_number)
    out, err = process.communicate(timeout=600)  # hang detection only: a stopped pool ends in seconds
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().endswith("the kernels compiled so far stay in the cache"), err
