"""Kernels handed to another process to compile: a lock per kernel while it is compiled there, and the wait for it.

With empty caches the README's main job compiled for about 23 seconds on one core of a two-core machine (issue 26:
a cold start of at most 15 s). Its large kernels no longer depend on each other to compile (the constraint step,
the dynamics and TR-BDF2 call each other through their addresses, with their return types declared:
:func:`mbkron.jit.calls.by_address`), so a helper process can compile some of them on the second core while
the command compiles the rest (:mod:`mbkron.cli.prefetch`). Both compile into numba's disk cache; this module
keeps them from compiling one kernel twice:

- the starting process takes a kernel's lock (:func:`hold`: an exclusive ``fcntl.flock`` on
  ``<the kernel's numba cache index>.compiling``) *before* anything compiles the kernel, so that it cannot reach the
  kernel first, and hands the open file to the helper (inherited, or through a socket to a helper started just
  before, :func:`mbkron.cli.prefetch.start`), which releases it (:func:`release`) once the kernel is in the cache —
  or dies, which releases it too;
- a process whose numba misses a kernel in the disk cache while its lock is held waits for the lock (at most
  :data:`WAIT` seconds, then it compiles the kernel itself) and loads the kernel then
  (:func:`wait_for`, called by the cache's load in :mod:`mbkron.jit.common`).

Waits go one way only, from the command to the helper: the helper holds the locks and never waits for the
command's kernels, so nothing can deadlock. Where ``fcntl`` is missing (Windows) nothing is held and nothing
waits.
"""

from __future__ import annotations

import os
import time

__all__ = ["WAIT", "adopt", "cached", "compiling_path", "hold", "release", "wait_for"]

WAIT = 300.0
"""The longest a process waits for a kernel another process compiles (seconds), before it compiles it itself."""

_POLL = 0.01
"""How often a waiting process tries the lock again (seconds)."""

_ADOPTED: dict[int, str] = {}
"""The locks this process compiles for another (:func:`adopt`): descriptor → lock file."""

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _cache_file(kernel):
    """numba's index and data files of a disk-cached ``kernel`` (its dispatcher's), or None."""
    return getattr(getattr(kernel, "_cache", None), "_cache_file", None)


def compiling_path(kernel) -> str | None:
    """The lock file of a disk-cached numba ``kernel`` (its cache index's path and ``.compiling``), or None where
    it has no disk cache."""
    index = getattr(_cache_file(kernel), "_index_path", None)
    return None if index is None else index + ".compiling"


def cached(kernel) -> bool:
    """Whether numba's disk cache holds an entry of ``kernel`` (for some argument types) compiled from its current
    source: an index written by another version of the kernels is stale (numba compiles again)."""
    try:
        return bool(_cache_file(kernel)._load_index())
    except Exception:  # noqa: BLE001 - no cache, or an index numba cannot read: nothing usable is cached
        return False


def hold(kernel) -> int | None:
    """The file descriptor of ``kernel``'s lock (:func:`compiling_path`), taken exclusively; None where the kernel
    has no disk cache, is :func:`cached` already (the helper would only load it), or the lock is held elsewhere or
    cannot be taken. Pass it on to the process that compiles the kernel, which :func:`release`\\ s it."""
    path = compiling_path(kernel)
    if fcntl is None or path is None or cached(kernel):
        return None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def adopt(kernel, descriptor: int) -> None:
    """Take over the lock :func:`hold` took for ``kernel`` in another process (``descriptor``: inherited from it):
    this process compiles the kernel, so it does not wait for the lock (:func:`wait_for`), and releases it with
    :func:`release`."""
    path = compiling_path(kernel)
    if path is not None:
        _ADOPTED[descriptor] = path


def release(descriptor: int) -> None:
    """Release a lock taken by :func:`hold` (in the process it was handed to: :func:`adopt`) and close its
    descriptor."""
    _ADOPTED.pop(descriptor, None)
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def wait_for(index_path: str) -> bool:
    """Wait while another process compiles the kernel whose numba cache index is ``index_path`` (its lock is held),
    at most :data:`WAIT` seconds. True where there is such a lock, held or not (the kernel may be in the cache now:
    load again), False where there is none or the wait ran out."""
    path = index_path + ".compiling"
    if fcntl is None or path in _ADOPTED.values() or not os.path.exists(path):
        return False  # no lock, or this process's own
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(_POLL)
                continue
            except OSError:
                return False
            fcntl.flock(descriptor, fcntl.LOCK_UN)
            return True
    finally:
        os.close(descriptor)
