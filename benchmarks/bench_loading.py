"""Loading model files: a chain of n bodies (one coordinate per body) and n chained parameters.

Run from the repository root: ``python benchmarks/bench_loading.py`` (``--quick`` for the small
sizes only). Generates the files in a temporary directory, times :func:`mbkron.load_model`
(the median of a few loads) and prints seconds per load and the scaling
exponent ``log(t2/t1) / log(n2/n1)`` between consecutive sizes (1 = linear). Issue #18 asked for
a 2,000-body chain and 20,000 chained parameters to load in at most 5 s each.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402

CHAIN_SIZES = (100, 500, 2000)
PARAMETER_SIZES = (2000, 20000)


def chain_text(n: int) -> str:
    """A model file: a planar chain of ``n`` revolute bodies, body ``k`` driven by coordinate ``qk``."""
    lines = ["[model]", f'name = "chain_{n}"', "", "[coordinates]"]
    lines += [f"q{k} = {{}}" for k in range(n)]
    for k in range(n):
        parent = "ground" if k == 0 else f"b{k - 1}"
        lines += ["", f"[bodies.b{k}]", f'parent = "{parent}"', 'axis = [0, 0, 1]', f'variable = "q{k}"',
                  "offset = { translation = [0.1, 0, 0] }" if k else "", "mass = 1.0", "com = [0.05, 0, 0]",
                  "inertia = [0.001, 0.001, 0.001]"]
    return "\n".join(lines) + "\n"


def parameter_chain_text(n: int) -> str:
    """A one-body model with ``n`` parameters ``p1 = 1``, ``p(k+1) = "pk + 1"``; the mass is the last one."""
    lines = ["[parameters]", "p1 = 1"] + [f'p{k} = "p{k - 1} + 1"' for k in range(2, n + 1)]
    lines += ["", "[coordinates.q]", "", "[bodies.b]", 'axis = [0, 0, 1]', 'variable = "q"', f'mass = "p{n} / {n}"',
              "inertia = [1, 1, 1]"]
    return "\n".join(lines) + "\n"


def median_load_seconds(path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        mbkron.load_model(path)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def report(label: str, sizes: tuple[int, ...], text, directory: Path, repeat: int) -> None:
    previous = None
    for n in sizes:
        path = directory / f"{label}_{n}.toml"
        path.write_text(text(n))
        seconds = median_load_seconds(path, repeat)
        exponent = "" if previous is None else \
            f"   scaling exponent {math.log(seconds / previous[1]) / math.log(n / previous[0]):.2f}"
        print(f"{label:>20} n = {n:>6}: {seconds:8.3f} s{exponent}")
        previous = (n, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="loads per size (the median is printed)")
    parser.add_argument("--quick", action="store_true", help="only the two smallest sizes of each kind")
    arguments = parser.parse_args()
    print(machine())
    chains, parameters = (CHAIN_SIZES[:2], PARAMETER_SIZES[:1]) if arguments.quick else (CHAIN_SIZES, PARAMETER_SIZES)
    with tempfile.TemporaryDirectory() as directory:
        report("body chain", chains, chain_text, Path(directory), arguments.repeat)
        report("parameter chain", parameters, parameter_chain_text, Path(directory), arguments.repeat)


if __name__ == "__main__":
    main()
