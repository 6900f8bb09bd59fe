"""Kernels compiled by a helper process (mbkron.jit.handoff, mbkron.cli.prefetch): the locks, the wait, and that
what the helper compiles is what a run calls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mbkron
from mbkron.cli import prefetch
from mbkron.jit import handoff

fcntl = pytest.importorskip("fcntl")
numba = pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[1]

_HOLDER = """
import fcntl, os, sys, time
descriptor = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()  # until the test says so
open(sys.argv[2], "w").close()  # written before the release: a waiter that returns after it sees it
fcntl.flock(descriptor, fcntl.LOCK_UN)
"""


def _holder(lock: Path, marker: Path) -> subprocess.Popen:
    """A process holding ``lock`` exclusively until a line is written to its stdin."""
    process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock), str(marker)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_no_lock_no_wait(tmp_path):
    assert handoff.wait_for(str(tmp_path / "kernel.nbi")) is False


def test_waits_for_the_other_process_to_release(tmp_path):
    index, marker = tmp_path / "kernel.nbi", tmp_path / "released"
    holder = _holder(Path(str(index) + ".compiling"), marker)
    try:
        import threading

        threading.Timer(0.2, lambda: (holder.stdin.write("go\n"), holder.stdin.flush())).start()
        assert handoff.wait_for(str(index)) is True
        assert marker.exists()  # it returned after the release, not before
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_the_wait_is_bounded(tmp_path, monkeypatch):
    index, marker = tmp_path / "kernel.nbi", tmp_path / "released"
    holder = _holder(Path(str(index) + ".compiling"), marker)
    try:
        monkeypatch.setattr(handoff, "WAIT", 0.05)
        assert handoff.wait_for(str(index)) is False  # still held: the caller compiles the kernel itself
        assert not marker.exists()
    finally:
        holder.stdin.write("go\n")
        holder.stdin.close()
        holder.wait(timeout=60)


@numba.njit(cache=True)
def _never_compiled(x):  # pragma: no cover - its lock is taken, it is never called
    return x + 1


@numba.njit(cache=True)
def _compiled_here(x):
    return x + 2


def test_cached():
    assert not handoff.cached(_never_compiled)
    assert _compiled_here(1) == 3  # compiled (or loaded) and saved to numba's disk cache
    assert handoff.cached(_compiled_here)
    assert handoff.hold(_compiled_here) is None  # nothing for a helper to compile
    assert not handoff.cached(lambda x: x)  # not a cached kernel at all


def test_hold_adopt_release():
    path = handoff.compiling_path(_never_compiled)
    assert path is not None and path.endswith(".compiling")  # numba's cache index, as handoff reads it
    descriptor = handoff.hold(_never_compiled)
    assert descriptor is not None
    try:
        assert handoff.hold(_never_compiled) is None  # held: not twice
        index = path[:-len(".compiling")]
        handoff.adopt(_never_compiled, descriptor)
        assert handoff.wait_for(index) is False  # this process's own lock: it compiles, it does not wait
    finally:
        handoff.release(descriptor)
    with pytest.raises(OSError):
        os.fstat(descriptor)  # closed
    again = handoff.hold(_never_compiled)  # released: free again
    assert again is not None
    handoff.release(again)


@pytest.mark.parametrize("ahead", ["two_link_arm.toml", "andrews_squeezer.toml"])
def test_compile_ahead_compiles_what_a_run_calls(ahead):
    """The kernels compiled ahead, with a tree model (as the helper does: a placeholder group) or with the model
    itself, have the argument types a closed-loop model's run calls them with: after both, one specialisation each
    (a second one would mean the helper compiled something no run uses)."""
    from mbkron.algorithms.dynamics.group import AHEAD

    assert mbkron.load_model(ROOT / "models" / ahead).compile_ahead(("dynamics", "steps", "explicit")) is True
    model = mbkron.load_model(ROOT / "models" / "andrews_squeezer.toml")
    mbkron.simulate(model, (0.0, 0.002), model.default_q, method="TRBDF2")
    mbkron.simulate(model, (0.0, 0.002), model.default_q, method="auto")  # DOP853's compiled steps
    for name, kernel in AHEAD.items():
        assert len(kernel.signatures) == 1, (name, kernel.signatures)


def test_compile_ahead_arguments():
    with pytest.raises(ValueError, match="`kernels`"):
        mbkron.load_model(ROOT / "models" / "two_link_arm.toml").compile_ahead(("everything",))


def test_compiled_group():
    assert mbkron.load_model(ROOT / "models" / "andrews_squeezer.toml").compiled_group
    assert not mbkron.load_model(ROOT / "models" / "two_link_arm.toml").compiled_group


def test_a_helper_is_kept_for_a_group_and_stopped_for_a_tree():
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        squeezer = mbkron.load_model(ROOT / "models" / "andrews_squeezer.toml")
        assert prefetch.follow(helper, squeezer, "TRBDF2") is helper
        assert helper.poll() is None  # its kernels serve this model: it goes on
        # a tree model run by RK45 needs no helper: stopped, none started
        assert prefetch.follow(helper, mbkron.load_model(ROOT / "models" / "two_link_arm.toml"), "RK45") is None
        assert helper.wait(timeout=60) != 0  # stopped
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()


def test_the_callback_steps_compiled_ahead_are_what_a_tree_model_runs(tmp_path):
    """The helper's TR-BDF2 steps of a Python right-hand side (what :func:`prefetch.follow` starts for a model with
    no compiled group) have the argument types a tree model's run calls them with: after both, one specialisation
    (a second one would mean the helper compiled something no run uses), and its lock released."""
    from mbkron.numerics.trbdf2 import callback_trbdf2

    descriptor = os.open(tmp_path / "steps.compiling", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    assert prefetch.main([f"{prefetch.CALLBACK}={descriptor}"]) == 0
    with pytest.raises(OSError):
        os.fstat(descriptor)  # released and closed
    model = mbkron.load_model(ROOT / "models" / "two_link_arm.toml")
    mbkron.simulate(model, (0.0, 0.01), model.default_q, method="TRBDF2")
    assert len(callback_trbdf2.signatures) == 1, callback_trbdf2.signatures


def test_no_helper_when_switched_off(monkeypatch):
    monkeypatch.setenv(prefetch.VARIABLE, "0")
    assert prefetch.start("TRBDF2") is None


def test_helper_compiles_and_releases(tmp_path):
    """The helper's main: each kernel named compiled (or loaded) for the model file, its lock released."""
    descriptors = {}
    for name in ("dynamics", "steps", "explicit"):
        descriptors[name] = os.open(tmp_path / f"{name}.compiling", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(descriptors[name], fcntl.LOCK_EX)
    assert prefetch.main([f"{name}={descriptor}" for name, descriptor in descriptors.items()]) == 0
    for name, descriptor in descriptors.items():
        with pytest.raises(OSError):
            os.fstat(descriptor)  # released and closed
        probe = os.open(tmp_path / f"{name}.compiling", os.O_RDONLY)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free
        finally:
            os.close(probe)
    from mbkron.algorithms.dynamics.group import AHEAD

    assert all(len(kernel.signatures) == 1 for kernel in AHEAD.values())


def test_what_a_tr_bdf2_run_compiles_before_its_steps_is_what_it_calls():
    """A compiled TR-BDF2 run compiles the kernels below its right-hand side before it waits for its steps, which a
    helper may be compiling (``StateKernel.compile_forward``): for the argument types the run then calls them with
    (one specialisation after the run; a second would mean it compiled something no run uses)."""
    import numpy as np

    from mbkron.algorithms.dynamics.group import group_forward_into

    model = mbkron.load_model(ROOT / "models" / "andrews_squeezer.toml")
    model.state_kernel(model.workspace()).compile_forward()
    mbkron.simulate(model, (0.0, 0.002), model.default_q, method="TRBDF2", t_eval=np.linspace(0.0, 0.002, 3))
    assert len(group_forward_into.signatures) == 1, group_forward_into.signatures


def test_a_helper_started_early_is_handed_its_locks_or_nothing(tmp_path):
    """The helper :func:`prefetch.start` starts before it takes the locks (``--locks=FD``) compiles the kernels whose
    locks reach it through the socket and releases them; handed nothing, it compiles nothing and ends."""
    import socket

    for names in (("dynamics",), (prefetch.CALLBACK,), ()):
        mine, its = socket.socketpair()
        descriptors = []
        for name in names:
            descriptors.append(os.open(tmp_path / f"{name}.compiling", os.O_RDWR | os.O_CREAT, 0o644))
            fcntl.flock(descriptors[-1], fcntl.LOCK_EX)
        socket.send_fds(mine, ["\n".join(names).encode() or b"-"], descriptors)
        for descriptor in descriptors:
            os.close(descriptor)  # (the helper's copies hold the locks now)
        mine.close()
        assert prefetch.main([f"--locks={its.detach()}"]) == 0
        for name in names:
            probe = os.open(tmp_path / f"{name}.compiling", os.O_RDONLY)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released
            finally:
                os.close(probe)


def test_a_helper_started_at_a_cold_start_compiles_the_kernel_it_is_handed(tmp_path):
    """End to end, empty caches: :func:`prefetch.start` starts the helper before it takes the lock (here of the TR-BDF2
    steps of a Python right-hand side, whose name holds a space), hands the lock over, and the helper compiles the
    kernel into the cache and ends."""
    program = (
        "from mbkron.cli import prefetch\n"
        "helper = prefetch.start('TRBDF2', (prefetch.CALLBACK,))\n"
        "assert helper is not None and helper.wait(timeout=600) == 0\n"
        "from mbkron.jit import handoff\n"
        "from mbkron.numerics.trbdf2 import callback_trbdf2\n"
        "print(handoff.cached(callback_trbdf2), len(callback_trbdf2.signatures))\n")
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "MBKRON_CACHE_DIR": str(tmp_path / "mbkron"),
                   "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    environment.pop(prefetch.VARIABLE, None)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment, cwd=ROOT,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "0"]  # cached by the helper, not compiled here


def test_the_index_names_read_without_numba_are_numbas(tmp_path, monkeypatch):
    """:data:`prefetch.INDEX_NAMES` names each kernel's cache index file as numba does (a moved module renames it),
    and a warm cache is recognised there, beside the modules at any depth or under ``NUMBA_CACHE_DIR``."""
    if not handoff.compiling_path(prefetch._kernels()["steps"]):
        pytest.skip("no numba disk cache (NUMBA_DISABLE_JIT)")
    for name, kernel in prefetch._kernels().items():
        assert os.path.basename(handoff.compiling_path(kernel)).startswith(prefetch.INDEX_NAMES[name] + "-"), name
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not prefetch._maybe_cached(tuple(prefetch.INDEX_NAMES))
    (tmp_path / "some_dir").mkdir()
    for name, start in prefetch.INDEX_NAMES.items():
        (tmp_path / "some_dir" / f"{start}-42.py311.nbi").touch()
    assert prefetch._maybe_cached(tuple(prefetch.INDEX_NAMES))
