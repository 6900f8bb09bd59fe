"""Cold start: wall-clock times of fresh processes, as ratios to ``python -c pass``.

Run from the repository root: ``python benchmarks/bench_startup.py [--repeats 7] [--no-main-job]``.
Every case is a new Python process (``subprocess``, output discarded), with ``PYTHONPATH`` set to
this checkout so that its ``mbkron`` is the one measured (also by the ``mbkron`` console script
when mbkron is installed from another directory). The cases are interleaved: each repetition runs
every case once, so that a change of the machine's load affects all of them alike; the medians are
reported. Cases:

- ``python -c pass`` (the interpreter's own start, the unit of the ratios);
- ``python -c "import mbkron"`` (the public names are imported on first use);
- ``mbkron --help`` (the console script next to this Python, when installed) and ``python -m mbkron --help``;
- ``python -c "import mbkron; mbkron.load_model('models/two_link_arm.toml')"``;
- the main job, ``mbkron simulate models/andrews_squeezer.toml --t-end 0.03 [--plot]`` (``--plot``
  when matplotlib is installed): once *cold*, with ``NUMBA_CACHE_DIR`` an empty temporary directory
  (numba compiles mbkron's kernels), then *warm*, every repetition, with that directory filled.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402

PYTHON = sys.executable


def cases() -> dict[str, list[str]]:
    """The quick cases, by label: their command lines."""
    commands = {
        "python -c pass": [PYTHON, "-c", "pass"],
        'python -c "import mbkron"': [PYTHON, "-c", "import mbkron"],
    }
    script = Path(PYTHON).with_name("mbkron")  # the console script installed beside this Python
    if script.is_file():
        commands["mbkron --help"] = [str(script), "--help"]
    commands["python -m mbkron --help"] = [PYTHON, "-m", "mbkron", "--help"]
    commands["import mbkron; mbkron.load_model(two_link_arm)"] = [
        PYTHON, "-c", "import mbkron; mbkron.load_model('models/two_link_arm.toml')"]
    return commands


def main_job(output: Path) -> list[str]:
    """The README's main job, writing into ``output``."""
    command = [PYTHON, "-m", "mbkron", "simulate", "models/andrews_squeezer.toml", "--t-end", "0.03",
               "--out", str(output), "--no-progress"]
    return command + (["--plot"] if importlib.util.find_spec("matplotlib") else [])


def seconds(command: list[str], env: dict[str, str]) -> float:
    """Wall-clock seconds of one run of ``command`` in the repository root (it must succeed)."""
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repetitions of every case (default 7)")
    parser.add_argument("--no-main-job", action="store_true", help="leave out the main job (cold and warm)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    commands = cases()
    with tempfile.TemporaryDirectory(prefix="mbkron-bench-startup-") as temporary:
        job_env = {**env, "NUMBA_CACHE_DIR": str(Path(temporary) / "numba-cache")}
        cold = None
        if not args.no_main_job:
            job = main_job(Path(temporary) / "runs")
            cold = seconds(job, job_env)  # the first run: numba compiles and caches the kernels
            commands["main job, warm (NUMBA_CACHE_DIR filled)"] = job
        times: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, command in commands.items():
                times[label].append(seconds(command, job_env if label.startswith("main job") else env))

    medians = {label: statistics.median(values) for label, values in times.items()}
    unit = medians["python -c pass"]
    print(f"# cold start: median of {args.repeats} interleaved runs each; ratio to `python -c pass`")
    print(f"# {machine()}")
    print(f"{'case':<52} {'median s':>9} {'ratio':>7}")
    for label, median in medians.items():
        print(f"{label:<52} {median:9.3f} {median / unit:7.1f}")
    if cold is not None:
        print(f"{'main job, cold (NUMBA_CACHE_DIR empty; once)':<52} {cold:9.3f} {cold / unit:7.1f}")


if __name__ == "__main__":
    main()
