"""Bit-identical results across repeats, the first call of a process included, and across threads: every model file.

Run from the repository root::

    python -m validation.purity [--threads 4] [--states 6] [--fresh-caches] [MODEL ...]

For every shipped model (``models/*.toml``) and every OpenSim test model (``tests/data/osim/*.osim.gz``), or the
files given, a **fresh process** loads the model and evaluates, at seeded states about its default pose, what the
public API gives: joint variables with gradients and Hessians (a batch, and state by state with a workspace),
kinematics, ``M``, ``N q̇``, ``G``, ``equations_of_motion``, forward and inverse dynamics and their derivatives (one
state and a batch; a model the derivatives do not cover raises the same NotImplementedError each time), muscle
lengths and moment arms (one state and a batch, with and without a workspace). The first evaluation of each
is the process's first call of its kernels (compiled then, or loaded from numba's disk cache); the script then
evaluates everything twice more, once more with the C heap's free memory filled with NaN before each evaluation
(:func:`fill_freed_memory`: a kernel reading scratch it has not written shows there), and then in ``--threads``
threads at once on the one model (each thread with its own workspace), and compares every array with the first
evaluation **bit for bit** (``tobytes``). An evaluation that raises (a state outside what the model can assemble,
say) must raise the same error every time. Issue 26's acceptance: "results bit-identical across repeats, first call
included, and across 4 threads, for every shipped and ``.osim`` test model".

With ``--fresh-caches`` the processes share new, empty numba and mbkron caches (so the first model to use a kernel
compiles it, the later ones load it: both kinds of first call occur); by default they use the environment's. Prints
one line per model and exits with status 1 if any evaluation differed, 0 otherwise. Only mbkron's public API is used.
"""

from __future__ import annotations

import argparse
import ctypes
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["evaluate", "evaluations", "fill_freed_memory", "load", "main", "model_files"]


def model_files() -> list[Path]:
    """The shipped models and the OpenSim test models, in order."""
    return sorted((ROOT / "models").glob("*.toml")) + sorted((ROOT / "tests" / "data" / "osim").glob("*.osim.gz"))


def load(path: Path, directory: str):
    """The model of ``path`` (an ``.osim.gz`` decompressed into ``directory`` first), the models' own warnings
    silenced."""
    import mbkron

    if path.name.endswith(".gz"):
        plain = Path(directory) / path.name[:-3]
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        path = plain
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the models' own warnings (inertias, ignored OpenSim components)
        return mbkron.load_model(path)


def _states(model, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded states near the default pose (small enough for closed loops to assemble) and rates."""
    rng = np.random.default_rng(26)
    q = model.default_q + 0.1 * rng.uniform(-1.0, 1.0, (count, model.nq))
    return q, rng.uniform(-1.0, 1.0, (count, model.nq)), rng.uniform(-1.0, 1.0, (count, model.nq))


def fill_freed_memory(byte: int = 0xFF) -> bool:
    """Fill memory the C heap holds free with ``byte`` (by default ``0xFF``: every double there a NaN), so that the
    next allocations of numpy and of the compiled kernels (``np.empty``) hand out NaN where a fresh process might hand
    out anything: code that reads a buffer before writing it then gives NaN, or a different route's result, every
    time instead of once in a while. The chunks (16 to 4096 bytes, eight of each size) are taken from ``malloc`` and
    given back at once. Returns False where the C library has no ``malloc``/``free`` to call (nothing is done)."""
    try:
        libc = ctypes.CDLL(None)
        malloc, free = libc.malloc, libc.free
    except (OSError, AttributeError):
        return False
    malloc.restype, malloc.argtypes, free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
    chunks = []
    for size in range(16, 4097, 16):
        for _ in range(8):
            chunk = malloc(size)
            if chunk:
                ctypes.memset(chunk, byte, size)
                chunks.append(chunk)
    for chunk in reversed(chunks):
        free(chunk)
    return True


def evaluate(model, count: int, before: Callable[[], object] | None = None) -> dict[str, object]:
    """Every evaluation at the seeded states, by name: a tuple of arrays, or the error raised (as text); ``before``,
    if given, is called before each (e.g. :func:`fill_freed_memory`)."""
    q, qd, qdd = _states(model, count)
    workspace = model.workspace()

    def each(function):
        return lambda: np.stack([np.asarray(function(k)) for k in range(count)])

    cases = {
        "joint_variables": lambda: model.joint_variables(q, 2),
        "joint_variables, one state with a workspace": lambda: [
            np.concatenate([a.ravel() for a in model.joint_variables(q[k], 2, workspace=workspace)])
            for k in range(count)],
        "kinematics": lambda: model.kinematics(q, 2).T,
        "mass_matrix": lambda: model.mass_matrix(q),
        "mass_matrix, one state": each(lambda k: model.mass_matrix(q[k])),
        "velocity_forces": lambda: model.velocity_forces(q, qd),
        "gravity_forces": lambda: model.gravity_forces(q),
        "equations_of_motion, one state": each(lambda k: np.concatenate(
            [np.ravel(a) for a in vars(model.equations_of_motion(q[k], qd[k])).values()])),
        "forward_dynamics": lambda: model.forward_dynamics(q, qd),
        "forward_dynamics, one state": each(lambda k: model.forward_dynamics(q[k], qd[k])),
        "forward_dynamics, one state with a workspace": each(
            lambda k: model.forward_dynamics(q[k], qd[k], workspace=workspace)),
        "inverse_dynamics": lambda: model.inverse_dynamics(q, qd, qdd),
        "inverse_dynamics, one state": each(lambda k: model.inverse_dynamics(q[k], qd[k], qdd[k])),
        "inverse_dynamics_derivatives": lambda: model.inverse_dynamics_derivatives(q, qd, qdd),
        "inverse_dynamics_derivatives, one state": each(lambda k: np.concatenate(
            [np.ravel(a) for a in model.inverse_dynamics_derivatives(q[k], qd[k], qdd[k])])),
        "forward_dynamics_derivatives": lambda: model.forward_dynamics_derivatives(q, qd, qdd),
        "forward_dynamics_derivatives, one state": each(lambda k: np.concatenate(
            [np.ravel(a) for a in model.forward_dynamics_derivatives(q[k], qd[k], qdd[k])])),
    }
    if model.muscles:
        cases.update({
            "muscle_lengths": lambda: model.muscle_lengths(q),
            "moment_arms": lambda: model.moment_arms(q),
            "moment_arms, one state": each(lambda k: model.moment_arms(q[k])),
            "moment_arms, one state with a workspace": each(lambda k: model.moment_arms(q[k], workspace=workspace)),
        })
    out: dict[str, object] = {}
    for name, case in cases.items():
        if before is not None:
            before()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = case()
            out[name] = tuple(np.asarray(a) for a in (value if isinstance(value, (tuple, list)) else (value,)))
        except Exception as error:  # noqa: BLE001 - the error is the result, compared like any other
            out[name] = f"{type(error).__name__}: {error}"
    return out


def evaluations(model, count: int, before: Callable[[], object] | None = None) -> dict[str, object]:
    """:func:`evaluate` with each result as the bytes of its arrays (compared bit for bit), or the error's text."""
    return {name: value if isinstance(value, str) else b"".join(np.ascontiguousarray(a).tobytes() for a in value)
            for name, value in evaluate(model, count, before).items()}


def _differences(reference: dict, other: dict, label: str) -> list[str]:
    return [f"{name} ({label})" for name in reference if other.get(name) != reference[name]]


def check_one(path: Path, threads: int, count: int) -> dict:
    """Load ``path`` in this (fresh) process; the first, two repeated and ``threads`` concurrent evaluations."""
    with tempfile.TemporaryDirectory() as directory:
        start = time.process_time()
        model = load(path, directory)
    first = evaluations(model, count)  # the process's first calls
    seconds = time.process_time() - start
    differing = []
    for repeat in (1, 2):
        differing += _differences(first, evaluations(model, count), f"repeat {repeat}")
    if fill_freed_memory():
        differing += _differences(first, evaluations(model, count, fill_freed_memory), "freed memory filled with NaN")
    results: list[dict | None] = [None] * threads
    barrier = threading.Barrier(threads)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = evaluations(model, count)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for index, result in enumerate(results):
        differing += _differences(first, result or {}, f"thread {index}")
    errors = sorted({name for name, value in first.items() if isinstance(value, str)})
    return {"model": path.name, "evaluations": len(first), "errors": errors, "differing": differing,
            "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    """Check every model in its own process; 0 when everything was bit-identical, 1 otherwise."""
    options = argparse.ArgumentParser(prog="python -m validation.purity", description=__doc__.splitlines()[0])
    options.add_argument("models", nargs="*", type=Path, help="model files (default: every shipped and .osim test "
                         "model)")
    options.add_argument("--threads", type=int, default=4, help="threads evaluating at once (default 4)")
    options.add_argument("--states", type=int, default=6, help="seeded states per model (default 6)")
    options.add_argument("--fresh-caches", action="store_true", help="run on new, empty numba and mbkron caches")
    options.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # the child process's work
    arguments = options.parse_args(argv)
    if arguments.threads < 1 or arguments.states < 1:
        options.error("`--threads` and `--states` must be at least 1")
    if arguments.one is not None:
        print(json.dumps(check_one(arguments.one, arguments.threads, arguments.states)))
        return 0
    paths = arguments.models or model_files()
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        options.error(f"no such model file: {', '.join(missing)}")
    with tempfile.TemporaryDirectory() as caches:
        environment = dict(os.environ)
        if arguments.fresh_caches:
            environment.update(NUMBA_CACHE_DIR=str(Path(caches) / "numba"), MBKRON_CACHE_DIR=str(Path(caches) / "mbkron"))
        failed = 0
        for path in paths:
            done = subprocess.run([sys.executable, "-m", "validation.purity", "--one", str(Path(path).resolve()),
                                   "--threads", str(arguments.threads), "--states", str(arguments.states)],
                                  cwd=ROOT, env=environment, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0 or not done.stdout.strip():
                failed += 1
                print(f"{Path(path).name}: the check itself failed (exit {done.returncode}): "
                      f"{done.stderr.strip().splitlines()[-1:] or ''}", flush=True)
                continue
            report = json.loads(done.stdout.strip().splitlines()[-1])
            failed += bool(report["differing"])
            state = "DIFFERS: " + "; ".join(report["differing"]) if report["differing"] else "bit-identical"
            raised = f", {len(report['errors'])} raising the same error each time" if report["errors"] else ""
            print(f"{report['model']}: {report['evaluations']} evaluations{raised}, first calls "
                  f"{report['seconds']} s: {state}", flush=True)
    print(f"{len(paths) - failed} of {len(paths)} models bit-identical across repeats, first calls and "
          f"{arguments.threads} threads")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
