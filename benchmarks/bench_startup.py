"""Cold start: wall-clock and CPU times of fresh processes, the quick ones as ratios to ``python -c pass``.

Run from the repository root: ``python benchmarks/bench_startup.py [--repeats 7] [--no-cold]``.
Every case is a new Python process (``subprocess``, output discarded), with ``PYTHONPATH`` set to
this checkout so that its ``mbkron`` is the one measured (also by the ``mbkron`` console script
when mbkron is installed from another directory). The machine's load average is printed before and
after each long case: on a shared machine, the CPU time (user + system of the child) is the better
measure of the work, the wall-clock time what a user waits.

Quick cases, interleaved (each repetition runs every case once, so that a change of the machine's
load affects all of them alike; medians reported):

- ``python -c pass`` (the interpreter's own start, the unit of the ratios);
- ``python -c "import mbkron"`` (the public names are imported on first use);
- ``mbkron --help`` (the console script next to this Python, when installed) and ``python -m mbkron --help``;
- ``python -c "import mbkron; mbkron.load_model('models/two_link_arm.toml')"``;
- the same with gait2392's ``.osim`` (``tests/data/osim``, decompressed into a temporary directory): the
  first load of an OpenSim model in a process, imports included (issue 26: ≤ 0.3 s of CPU).

Their wall-clock and CPU medians are printed, each with its ratio to ``python -c pass``.

Cold-start cases (once each, unless ``--no-cold``), as the acceptance of issue 26 names them:

1. the README's main job, ``mbkron simulate models/andrews_squeezer.toml --t-end 0.03 [--plot]``
   (``--plot`` when matplotlib is installed), to its first result (the written table) with empty
   ``NUMBA_CACHE_DIR`` and ``MBKRON_CACHE_DIR``: everything is compiled;
2. ``mbkron compile`` with other empty caches;
3. with the kernels so cached, models never seen before: gait2392's moment arms from its ``.osim``
   (``tests/data/osim``), ``mbkron simulate`` of a four-bar whose lengths differ from the shipped
   one (a temporary model file: its generated constraint functions are new), and of Andrews' squeezer with
   other lengths (loop closures: nothing generated), each with an empty ``MBKRON_CACHE_DIR``;
4. the main job with those caches (after ``mbkron compile``), then again with everything cached.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import os
import resource
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


def cases(osim: Path) -> dict[str, list[str]]:
    """The quick cases, by label: their command lines (``osim``: gait2392's decompressed model file)."""
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
    commands["import mbkron; mbkron.load_model(gait2392.osim)"] = [
        PYTHON, "-c", f"import mbkron; mbkron.load_model({str(osim)!r})"]
    return commands


def decompress_gait2392(directory: Path) -> Path:
    """gait2392's model file from ``tests/data/osim``, decompressed into ``directory``."""
    osim = directory / "gait2392.osim"
    stored = ROOT / "tests" / "data" / "osim" / "gait2392_thelen2003muscle.osim.gz"
    osim.write_bytes(gzip.decompress(stored.read_bytes()))
    return osim


def main_job(output: Path) -> list[str]:
    """The README's main job, writing into ``output``."""
    command = [PYTHON, "-m", "mbkron", "simulate", "models/andrews_squeezer.toml", "--t-end", "0.03",
               "--out", str(output), "--no-progress"]
    return command + (["--plot"] if importlib.util.find_spec("matplotlib") else [])


def changed_model(name: str, directory: Path) -> Path:
    """A copy of the shipped model file ``name`` whose parameters (lengths, hence constraint equations, and
    masses) differ from the shipped one's: every number of its ``[parameters]`` table scaled by 1.07 (a uniform
    scaling of the lengths keeps the assembly's angles)."""
    text = (ROOT / "models" / f"{name}.toml").read_text(encoding="utf-8")
    path = directory / f"{name}_changed.toml"
    lines, in_parameters = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            in_parameters = stripped.startswith("[parameters]")
        elif in_parameters and "=" in line and not stripped.startswith("#"):
            name, _, value = line.partition("=")
            number, _, comment = value.partition("#")
            try:
                line = f"{name}= {float(number) * 1.07!r}" + (f"  #{comment}" if comment else "")
            except ValueError:
                pass
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system of the child) of one run of ``command`` in the
    repository root (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def cold_cases(temporary: Path, env: dict[str, str]) -> list[tuple[str, float, float, str]]:
    """The cold-start cases: (label, wall s, CPU s, load before → after)."""
    def caches(name: str, numba: str | None = None) -> dict[str, str]:
        return {**env, "NUMBA_CACHE_DIR": str(temporary / (numba or name) / "numba"),
                "MBKRON_CACHE_DIR": str(temporary / name / "mbkron")}

    osim = decompress_gait2392(temporary)
    moment_arms = [PYTHON, "-c", f"import mbkron; m = mbkron.load_model({str(osim)!r}); m.moment_arms(m.default_q)"]
    four_bar = [PYTHON, "-m", "mbkron", "simulate", str(changed_model("four_bar", temporary)), "--t-end", "0.1",
                "--out", str(temporary / "runs"), "--no-progress"]
    squeezer = [PYTHON, "-m", "mbkron", "simulate", str(changed_model("andrews_squeezer", temporary)), "--t-end",
                "0.003", "--out", str(temporary / "runs"), "--no-progress"]
    runs = [
        ("1. main job, empty caches (compiles everything)", main_job(temporary / "runs"), caches("cold")),
        ("2. mbkron compile, empty caches", [PYTHON, "-m", "mbkron", "compile"], caches("compiled")),
        ("3a. gait2392 moment arms (.osim), kernels cached", moment_arms, caches("gait", "compiled")),
        ("3b. new four-bar simulate, kernels cached", four_bar, caches("four_bar", "compiled")),
        ("3c. new loop-closure model simulate, kernels cached", squeezer, caches("squeezer", "compiled")),
        ("4a. main job after mbkron compile", main_job(temporary / "runs"), caches("compiled")),
        ("4b. main job, everything cached", main_job(temporary / "runs"), caches("compiled")),
    ]
    measured = []
    for label, command, environment in runs:
        before = load()
        wall, cpu = seconds(command, environment)
        measured.append((label, wall, cpu, f"{before} -> {load()}"))
        print(f"# {label}: {wall:.1f} s wall, {cpu:.1f} s CPU ({measured[-1][3]})", file=sys.stderr, flush=True)
    return measured


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="repetitions of every quick case (default 7)")
    parser.add_argument("--no-cold", "--no-main-job", action="store_true",
                        help="only the quick cases (leave out the cold-start cases)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    print(f"# {machine()}")
    with tempfile.TemporaryDirectory(prefix="mbkron-bench-startup-") as temporary:
        commands = cases(decompress_gait2392(Path(temporary)))
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, command in commands.items():
                times[label].append(seconds(command, env))
    print(f"# {load()}")
    wall = {label: statistics.median(w for w, _ in values) for label, values in times.items()}
    cpu = {label: statistics.median(c for _, c in values) for label, values in times.items()}
    unit, cpu_unit = wall["python -c pass"], cpu["python -c pass"]
    print(f"# quick cases: medians of {args.repeats} interleaved runs each (wall-clock, and CPU = user + system of "
          f"the child); ratios to `python -c pass`")
    print(f"{'case':<52} {'wall s':>8} {'ratio':>7} {'CPU s':>8} {'ratio':>7}")
    for label in commands:
        print(f"{label:<52} {wall[label]:8.3f} {wall[label] / unit:7.2f} {cpu[label]:8.3f} {cpu[label] / cpu_unit:7.2f}")
    if not args.no_cold:
        with tempfile.TemporaryDirectory(prefix="mbkron-bench-startup-") as temporary:
            measured = cold_cases(Path(temporary), env)
        print("# cold start: one run each, fresh caches as named; CPU = user + system of the child")
        print(f"{'case':<52} {'wall s':>8} {'CPU s':>8}  load (1/5 min) before -> after")
        for label, wall, cpu, loads in measured:
            print(f"{label:<52} {wall:8.1f} {cpu:8.1f}  {loads}")
    print(f"# {machine()}")


if __name__ == "__main__":
    main()
