"""Where a command's compilation goes: CPU per numba kernel, inclusive and exclusive, from empty caches.

``python benchmarks/profile_compile.py [--keep-caches] -- <mbkron command line>``, e.g.
``python benchmarks/profile_compile.py -- simulate models/andrews_squeezer.toml --t-end 0.03 --out runs``.

Runs the command line in this process (:func:`mbkron.cli.main.main`) with ``NUMBA_CACHE_DIR`` and
``MBKRON_CACHE_DIR`` pointing into a new temporary directory (unless ``--keep-caches``: the environment's), and
times numba's ``numba:compile`` events with ``time.process_time``: a kernel's inclusive time covers the kernels
its compilation compiles (its callees, typed on the way), its exclusive time the rest — its own front end and
the LLVM optimisation of everything linked into it. Prints the total CPU of the command, the kernels compiled
from Python (top level, in order) and the 40 largest exclusive times. This is how docs/architecture.md's
compile figures (issue 26) were measured.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-caches", action="store_true", help="use the environment's kernel caches")
    args = parser.parse_args(own)
    if not command:
        parser.error("give the mbkron command line after `--`")
    if not args.keep_caches:  # before numba is imported: it reads NUMBA_CACHE_DIR once
        caches = Path(tempfile.mkdtemp(prefix="mbkron-compile-profile-"))
        os.environ["NUMBA_CACHE_DIR"], os.environ["MBKRON_CACHE_DIR"] = str(caches / "numba"), str(caches / "mbkron")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

    from numba.core import event

    stack: list[list] = []
    inclusive, exclusive, count = collections.Counter(), collections.Counter(), collections.Counter()
    top: list[tuple[str, float]] = []

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            function = ev.data["dispatcher"].py_func
            name = f"{function.__qualname__} ({Path(function.__code__.co_filename).name})"
            stack.append([name, time.process_time(), 0.0])

        def on_end(self, ev) -> None:
            name, started, children = stack.pop()
            spent = time.process_time() - started
            inclusive[name] += spent
            exclusive[name] += spent - children
            count[name] += 1
            if stack:
                stack[-1][2] += spent
            else:
                top.append((name, spent))

    event.register("numba:compile", Listener())
    from mbkron.cli.main import main as mbkron_main

    started = time.process_time()
    try:
        mbkron_main(command)
    except SystemExit:
        pass
    total = time.process_time() - started
    print(f"\n# {' '.join(command)}: {total:.1f} s of CPU, {sum(exclusive.values()):.1f} s of it compiling")
    print("# compiled from Python (inclusive s):")
    for name, spent in top:
        print(f"{spent:8.2f}  {name}")
    print("# the largest exclusive times (s): exclusive, inclusive, compilations, kernel")
    for name, spent in exclusive.most_common(40):
        print(f"{spent:8.2f} {inclusive[name]:8.2f} {count[name]:3d}x  {name}")


if __name__ == "__main__":
    main()
