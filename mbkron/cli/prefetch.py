"""The second core at a cold start: a helper process compiles some of a command's kernels while it compiles the rest.

With empty caches ``mbkron simulate`` of a closed-loop model (the README's main job) spends nearly all its time
compiling, one kernel after another, on one core. Its largest kernels compile apart (:mod:`mbkron.jit.calls`:
calls by address with declared return types), so :func:`start` hands two of them to a helper process on the
machine's second core: the terms of the equations of motion below the group's step and the dynamics
(:func:`mbkron.algorithms.dynamics.kernels.eom_state`: ``M``, ``N q̇``, ``G``) and the steps of the run's solver —
the TR-BDF2 steps, or the explicit Runge–Kutta steps of ``auto`` (DOP853 for such a model), ``DOP853``, ``RK45``,
``RK23`` (:meth:`mbkron.Model.compile_ahead`). They are the same for every model with a compiled constraint group, so the
helper compiles them with a one-body tree model built in code, which loads without compiling anything: it starts at
once, while the command loads its model (solving its loop closures, whose kernels it compiles first). The command
then compiles the step with its dynamics (down to the Cholesky solve), the Newton step and the kernel of its table's
joint variables, and waits for the steps only then; where it needs a kernel the helper has not finished, it waits
for it and loads it from numba's disk cache (:mod:`mbkron.jit.handoff`). Nothing is compiled twice, and nothing
that a run of such a model does not call. The README's main job from empty caches (issue 26, 2026-12-03, ninth
session): the command about 12 s of CPU, the helper about 12.5 s, about 13 s of wall clock at load 1.

A model without a compiled constraint group (a tree, or a group of Python functions) steps TR-BDF2 by the one
kernel that calls a Python right-hand side back (:func:`mbkron.numerics.trbdf2.callback_trbdf2`, the same for every
such model: about 7 s of CPU to compile, against 8.5 s for everything else of the two-link arm's run). Once the
model is read, :func:`follow` stops a helper compiling a group's kernels for such a model and starts one compiling
that kernel instead, while the command compiles the model's dynamics: the two-link arm's ``simulate`` from empty
caches 15.0 → 9 s of wall clock on an idle 2-core machine.

A helper is started only where it helps: numba is installed, the process may run on two cores or more (its CPU
affinity), its kernels are not in the disk cache yet, and ``MBKRON_PREFETCH`` is not ``0``; the first is started
before the command reads its model file — before the command imports numba, even: it is then handed its kernels'
locks through a socket, or nothing, and ends (all cached) — and :func:`follow` keeps, stops or replaces it once the
model is read. Its output is discarded; where it fails, the command compiles the kernels itself (its locks are
released when it exits, however it exits). It runs as ``python -m mbkron.cli.prefetch --locks=FD`` (the socket) or
``python -m mbkron.cli.prefetch KERNEL=FD ...`` (the locks inherited).
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["CALLBACK", "VARIABLE", "follow", "start"]

VARIABLE = "MBKRON_PREFETCH"
"""Set to ``0`` to start no helper process."""


CALLBACK = "python steps"
"""The name of :func:`mbkron.numerics.trbdf2.callback_trbdf2` among the kernels a helper compiles: TR-BDF2 steps of
a Python right-hand side."""


INDEX_NAMES = {"dynamics": "kernels.eom_state", "steps": "group.group_trbdf2", "explicit": "group.group_runge_kutta",
               CALLBACK: "trbdf2.callback_trbdf2"}
"""The start of numba's cache index file of each kernel a helper may compile, by name: ``<module file>.<function>``
(numba appends ``-<line>.py<version>.nbi``); read without importing numba (:func:`_maybe_cached`)."""


def _kernels() -> dict:
    """The kernels a helper may compile, by name: a group's (:data:`mbkron.algorithms.dynamics.group.AHEAD`) and
    :data:`CALLBACK`."""
    from mbkron.numerics.trbdf2 import callback_trbdf2
    from mbkron.algorithms.dynamics.group import AHEAD

    return {**AHEAD, CALLBACK: callback_trbdf2}


def _trbdf2(method: str) -> bool:
    return method.upper().replace("-", "") == "TRBDF2"


EXPLICIT = ("AUTO", "DOP853", "RK45", "RK23")
"""The ``--method`` values whose runs of a model with a compiled constraint group take compiled explicit Runge–Kutta
steps (``auto``: DOP853, :func:`mbkron.integrate.simulate.choose_method`), upper case."""


def _cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform says, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def start(method: str, wanted: tuple[str, ...] | None = None) -> subprocess.Popen | None:
    """Start a helper process compiling the kernels of a run with ``method`` of a model with a compiled constraint
    group (or the kernels named in ``wanted``) that are not in numba's disk cache yet, holding their locks for it;
    None where none is started (see the module's text). It is started before the command reads its model, so that
    it starts early: pass it to :func:`follow` once the model is read.

    Where numba's cache directory holds no index file of the kernels (:func:`_maybe_cached`: an empty cache), the
    process starts first, before this one imports numba to find the kernels' cache entries and take their locks
    (about a quarter of a second), and imports numba and mbkron meanwhile; it is then handed the locks through a
    socket (``socket.send_fds``), or nothing, where it exits (a lock held elsewhere). Otherwise the locks are taken
    first and a helper is started only for kernels not cached (a warm cache starts none). Nothing compiles a kernel
    before its lock is taken: only the helper's start is earlier.
    """
    import importlib.util
    import socket

    if (os.environ.get(VARIABLE, "1").strip() == "0" or _cores() < 2 or importlib.util.find_spec("numba") is None
            or importlib.util.find_spec("fcntl") is None):
        return None  # (without fcntl, as on Windows, no lock is held: nothing to hand over)
    if wanted is None:
        wanted = ("dynamics", "steps") if _trbdf2(method) else (
            ("dynamics", "explicit") if method.upper() in EXPLICIT else ("dynamics",))
    if not hasattr(socket, "send_fds") or _maybe_cached(wanted):  # the locks first, then a helper if one is needed
        held = _hold(wanted)
        try:
            return _spawn([f"{name}={descriptor}" for name, descriptor in held.items()],
                          tuple(held.values())) if held else None
        finally:  # the helper holds the locks now (or, where it did not start, nobody)
            for descriptor in held.values():
                os.close(descriptor)
    mine, its = socket.socketpair()
    try:
        helper = _spawn([f"--locks={its.fileno()}"], (its.fileno(),))
    finally:
        its.close()
    with mine:
        if helper is None:
            return None
        held = _hold(wanted)
        try:
            socket.send_fds(mine, ["\n".join(held).encode() or b"-"], list(held.values()))  # (names hold spaces)
        except OSError:
            held = {}
        finally:  # the helper holds the locks now (or, where it did not get them, nobody)
            for descriptor in held.values():
                os.close(descriptor)
    return helper if held else None  # (a helper handed nothing exits at once)


def _maybe_cached(wanted: tuple[str, ...]) -> bool:
    """Whether numba's disk cache may hold the kernels named in ``wanted`` (an index file of each, of any version of
    the kernels, where :func:`start` looks first: ``$NUMBA_CACHE_DIR``, else beside the modules), found without
    importing numba: then :func:`start` checks them properly before it starts a helper (none for a warm cache), else it
    starts one at once."""
    import glob

    configured = os.environ.get("NUMBA_CACHE_DIR")
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in wanted:
        pattern = f"{INDEX_NAMES.get(name, name)}-*.nbi"
        if configured:
            found = glob.glob(os.path.join(glob.escape(configured), "*", pattern))
        else:  # beside the kernels' modules, at any depth of the package
            found = glob.glob(os.path.join(glob.escape(package), "**", "__pycache__", pattern), recursive=True)
        if not found:
            return False
    return True


def _hold(wanted: tuple[str, ...]) -> dict[str, int]:
    """The locks of the kernels named in ``wanted`` that are not cached yet, by name (:func:`handoff.hold`)."""
    from mbkron.jit import handoff
    from mbkron.jit.common import AVAILABLE

    held: dict[str, int] = {}
    if not AVAILABLE:
        return held
    for name, kernel in _kernels().items():
        if name in wanted:
            descriptor = handoff.hold(kernel)
            if descriptor is not None:
                held[name] = descriptor
    return held


def _spawn(arguments: list[str], descriptors: tuple[int, ...]) -> subprocess.Popen | None:
    """``python -m mbkron.cli.prefetch ARGUMENTS`` with ``descriptors`` inherited, its output discarded; None where it
    cannot be started. It imports this mbkron (the same kernels, so the same cache entries), however this one was
    found."""
    environment = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, (here, environment.get("PYTHONPATH"))))
    try:
        return subprocess.Popen([sys.executable, "-m", "mbkron.cli.prefetch", *arguments], pass_fds=descriptors,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=environment)
    except OSError:
        return None


def follow(helper: subprocess.Popen | None, model, method: str) -> subprocess.Popen | None:
    """The helper for a run of ``model`` with ``method``, once the model is read: ``helper`` (what :func:`start`
    returned) where the model has a compiled constraint group (:attr:`mbkron.Model.compiled_group`); else ``helper``
    is stopped (its kernels would serve no run of this command; what it cached stays cached, its locks are released
    as it exits) and, for a TR-BDF2 run, a new one compiles :data:`CALLBACK` (None where none is started)."""
    if model.compiled_group:
        return helper
    if helper is not None and helper.poll() is None:
        helper.terminate()
    return start(method, (CALLBACK,)) if _trbdf2(method) else None


def _callback_steps() -> None:
    """Compile (or load) :data:`CALLBACK` for the argument types every run of a Python right-hand side has: a short
    TR-BDF2 run of ``y' = −y`` (scipy's ``solve_ivp`` contract, as :func:`mbkron.simulate` steps such models)."""
    from scipy.integrate import solve_ivp

    from mbkron.integrate.trbdf2 import TRBDF2

    solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0, 2.0], method=TRBDF2)


def _received(descriptor: int) -> list[str]:
    """``NAME=FD`` of each lock the starting process hands over through the socket ``descriptor`` (:func:`start`);
    none where it hands over nothing or is gone."""
    import socket

    with socket.socket(fileno=descriptor) as channel:
        try:
            message, descriptors, _, _ = socket.recv_fds(channel, 4096, 8)
        except OSError:
            return []
    names = message.decode().split("\n") if message not in (b"", b"-") else []
    return [f"{name}={fd}" for name, fd in zip(names, descriptors)]


def main(argv: list[str]) -> int:
    """The helper: compile each kernel named (``NAME=FD``, the lock's inherited descriptor; or ``--locks=FD``, a
    socket that hands them over, :func:`start`), releasing its lock when done."""
    import warnings

    channel = [int(argument.partition("=")[2]) for argument in argv if argument.startswith("--locks=")]
    model = None
    if channel:  # started early: what every group kernel needs first, while the command takes the locks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _placeholder_model()
        argv = _received(channel[0])
    from mbkron.jit import handoff

    held = {}
    for pair in argv:
        name, _, descriptor = pair.partition("=")
        held[name] = int(descriptor)
        handoff.adopt(_kernels()[name], held[name])
    try:
        if CALLBACK in held:
            with warnings.catch_warnings():  # the compile notice: the command gives it
                warnings.simplefilter("ignore")
                _callback_steps()
            handoff.release(held.pop(CALLBACK))
        if not held:
            return 0
        with warnings.catch_warnings():  # the compile notice: the command gives it
            warnings.simplefilter("ignore")
            model = _placeholder_model() if model is None else model
            for name in _kernels():
                if name in held:
                    model.compile_ahead((name,))
                    handoff.release(held.pop(name))
    finally:
        for descriptor in held.values():
            handoff.release(descriptor)
    return 0


def _placeholder_model():
    """One body on one coordinate: loads without compiling anything, and faster than an example model (whose package
    imports scipy's interpolation): the helper's head start is the point. Its kernel modules imported."""
    from mbkron.algorithms.jointvars import kernels as compiled  # noqa: F401 - numba and the kernels, before the locks arrive
    from mbkron.model.builder import ModelBuilder

    return (ModelBuilder(name="prefetch").add_coordinate("x")
            .add_body("link", axis=(0, 0, 1), variable="x", mass=1.0, com=(0.1, 0.0, 0.0),
                      inertia=(0.01, 0.01, 0.01)).build())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
