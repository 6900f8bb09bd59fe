"""Support for the compiled kernels: whether numba is installed, the compiling decorator, array layouts.

numba is a core dependency: every model is evaluated by compiled kernels (the one engine: kernels beside their
algorithms in :mod:`mbkron.algorithms` and :mod:`mbkron.numerics`, compiled by these decorators). :data:`AVAILABLE` says whether it is installed; without numba,
:func:`jit` returns the function unchanged, so the kernels' modules still import and the plain Python
functions remain callable (slowly) for reading and testing.

The kernels are compiled on their first call and cached on disk (numba's ``cache=True``: in
``__pycache__`` next to the modules, or under ``NUMBA_CACHE_DIR``); ``mbkron compile``
(:mod:`mbkron.cli.compile`) compiles them all ahead of time. The first compilation of mbkron's library
kernels in a process is announced by one :class:`CompileNotice` (a warning: Python shows it once, the
command line prints it as one line on stderr), and so is the first compilation of a model's generated
constraint functions; a kernel loaded from the disk cache is not compiled and announces nothing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import os
import sys
import warnings
from pathlib import Path

from mbkron.jit import handoff

try:  # numba missing (it is a core dependency): the kernels run as plain Python
    import numba
    from numba.core import caching as numba_caching
    from numba.core import event as numba_event
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

__all__ = ["AVAILABLE", "CACHE_VARIABLE", "COMPILING", "COMPILING_MODEL", "CompileNotice", "cache_directory",
           "compile_notice", "kernel_cache_directory", "kernel_sources_hash", "inline_jit", "jit", "jit_holding_gil", "jitable",
           "python_function"]

AVAILABLE: bool = numba is not None
"""Whether numba is installed (a core dependency: the kernels are compiled)."""

COMPILING = "compiling mbkron's numerical kernels for this machine"
"""The start of the :class:`CompileNotice` of mbkron's library kernels (:func:`compile_notice`)."""

COMPILING_MODEL = "compiling this model's constraint functions"
"""The start of the :class:`CompileNotice` of a model's generated kernel module."""


class CompileNotice(UserWarning):
    """numba is compiling mbkron's kernels in this process: the next call takes a while (once).

    Issued at most once per process for the library kernels and once for the models' generated
    constraint functions, when numba starts a real compilation (never for a kernel loaded from its
    disk cache). It is a notice, not a problem: silence it with
    ``warnings.filterwarnings("ignore", category=mbkron.CompileNotice)`` (pytest:
    ``filterwarnings = ["ignore::mbkron.CompileNotice"]``), or avoid it by running ``mbkron compile``
    once after installing. A filter that turns it into an error does not interrupt the compilation:
    the notice is then dropped.
    """


def kernel_cache_directory() -> str:
    """Where numba caches mbkron's compiled library kernels: ``$NUMBA_CACHE_DIR``, or the ``__pycache__``
    directories beside the kernels' modules in the installed package (numba falls back to a per-user directory
    where those are not writable)."""
    if AVAILABLE and numba.config.CACHE_DIR:
        return str(numba.config.CACHE_DIR)
    return os.environ.get("NUMBA_CACHE_DIR") or f"the __pycache__ directories under {Path(__file__).parents[1]}"


CACHE_VARIABLE = "MBKRON_CACHE_DIR"
"""Environment variable naming the directory of the models' generated constraint functions (default
``~/.cache/mbkron``)."""


def cache_directory() -> Path:
    """Where generated constraint functions are written: ``$MBKRON_CACHE_DIR`` or ``~/.cache/mbkron``."""
    configured = os.environ.get(CACHE_VARIABLE)
    return Path(configured) if configured else Path.home() / ".cache" / "mbkron"


def compile_notice(model: bool = False) -> str:
    """The text of the :class:`CompileNotice` for the library kernels or (``model``) for a model's
    generated constraint functions: what is compiled, roughly how long, and where it is cached."""
    if model:
        return (f"{COMPILING_MODEL} (a few seconds, once per set of constraint equations; cached in "
                f"{cache_directory()})")
    return (f"{COMPILING} (about 20 seconds to a minute on 2 cores, once: later runs load them from the cache in "
            f"{kernel_cache_directory()}; `mbkron compile` does this ahead of time)")


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn`, called from :meth:`_FirstCompilation.on_start`, that
    names the first frame outside mbkron and numba (the user's call that triggered the compilation)."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_globals.get("__name__", "") or ""
        if not (name.partition(".")[0] in ("mbkron", "numba", "contextlib") or name.startswith("mbkron_kernels")):
            return level
        frame, level = frame.f_back, level + 1
    return 1


if AVAILABLE:
    class _FirstCompilation(numba_event.Listener):
        """Issues a :class:`CompileNotice` when numba starts compiling one of mbkron's library kernels,
        once per process, and when it starts compiling a model's generated kernel module
        (``mbkron_kernels``), once per process.

        numba broadcasts ``"numba:compile"`` only for a real compilation: a kernel found in the disk
        cache is loaded before that event (``Dispatcher.compile``), so a warm run says nothing.
        """

        def __init__(self):
            self.announced: set[bool] = set()  # which notices were issued: False library, True model

        def on_start(self, event) -> None:
            module = getattr(getattr(event.data["dispatcher"], "py_func", None), "__module__", "") or ""
            model = module.startswith("mbkron_kernels")
            if not (model or module.startswith("mbkron.")) or model in self.announced:
                return
            self.announced.add(model)
            try:
                warnings.warn(compile_notice(model), CompileNotice, stacklevel=_caller_stacklevel())
            except CompileNotice:  # an "error" filter: a notice must not abort numba's compilation
                pass

        def on_end(self, event) -> None:
            pass

    numba_event.register("numba:compile", _FirstCompilation())

    class _KernelSourcesLocator:
        """numba's cache locator for mbkron's kernels, stamped with every kernel source of the package.

        numba keys a cached kernel on the source of the file that defines it only, but the machine code it
        caches includes every kernel it calls, often defined in other files (the closure callbacks call
        :mod:`mbkron.algorithms.jointvars.closure_kernels`, the TR-BDF2 step of a constraint group calls the forward dynamics):
        after an edit of a callee alone, a caller would be loaded with the old callee inside — wrong results,
        or memory errors where an array layout changed. This locator wraps the one numba would choose
        (same directory, same disambiguator) and adds :func:`kernel_sources_hash` to the stamp, so any change
        to a kernel source recompiles every mbkron kernel. Functions outside the package (the models'
        generated modules) keep numba's own locators.
        """

        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def get_source_stamp(self):
            return self._inner.get_source_stamp(), kernel_sources_hash()

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                inside = Path(py_file).resolve().is_relative_to(_PACKAGE)
            except (OSError, ValueError):
                return None
            if not inside:
                return None
            for locator_class in numba_caching.CacheImpl._locator_classes:
                if locator_class is not cls:
                    inner = locator_class.from_function(py_func, py_file)
                    if inner is not None:
                        return cls(inner)
            return None

    numba_caching.CacheImpl._locator_classes.insert(0, _KernelSourcesLocator)

    def _locked(method, exclusive: bool):
        """``method`` of numba's ``IndexDataCacheFile`` under a lock on its index file: shared to load, exclusive
        to save (:func:`_index_lock`)."""

        @functools.wraps(method)
        def locked(self, *args):
            with _index_lock(self._index_path, exclusive):
                return method(self, *args)
        return locked

    def _save_data_first(self, key, data):
        """numba's ``IndexDataCacheFile.save`` with the data file written before the index that names it."""
        overloads = self._load_index()
        data_name = overloads.get(key)
        if data_name is None:
            existing = set(overloads.values())
            data_name = next(name for name in map(self._data_name, itertools.count(1)) if name not in existing)
        self._save_data(data_name, data)
        if overloads.get(key) != data_name:
            overloads[key] = data_name
            self._save_index(overloads)

    # numba saves a cache entry as "read the index, add the entry, write the index, write the data": two processes
    # compiling one function for different argument types at once can each give their entry the same data file,
    # and a process that loads between the two writes — or after a process killed between them — can read the
    # index's new entry with an older data file of that name (the wrong machine code for its arguments). Here
    # each save and load is whole (locked) and the data is written before the index, so processes may compile
    # into one cache at once (`mbkron compile` in parallel, the test suite's workers) and a killed one leaves at
    # worst an unnamed data file.
    numba_caching.IndexDataCacheFile.save = _locked(_save_data_first, True)
    _load = _locked(numba_caching.IndexDataCacheFile.load, False)

    def _load_or_wait(self, key):
        """numba's ``IndexDataCacheFile.load``; on a miss, where another process is compiling the kernel for this
        process (:mod:`mbkron.jit.handoff`), after waiting for it, again."""
        data = _load(self, key)
        if data is None and handoff.wait_for(self._index_path):
            data = _load(self, key)
        return data

    numba_caching.IndexDataCacheFile.load = _load_or_wait


@contextlib.contextmanager
def _index_lock(index_path: str, exclusive: bool):
    """An advisory lock (``fcntl.flock``) on ``index_path + ".lock"`` for the block: exclusive or shared. Where
    the lock file cannot be opened (a read-only cache directory: numba then falls back to another) or the
    platform has no ``fcntl`` (Windows), no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        handle = open(index_path + ".lock", "a+b")  # noqa: SIM115 - closed below, after the lock is released
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def kernel_sources_hash() -> str:
    """SHA-256 of the source of every module of the package that defines compiled kernels (its text holds
    ``jit`` or ``cfunc``), in path order: part of the disk-cache stamp of every kernel, so that a change to
    any of them recompiles all (numba itself checks only the file defining each kernel)."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        text = path.read_bytes()
        if b"jit" in text or b"cfunc" in text:
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()


def jit(function):
    """``function`` compiled with numba (on its first call, cached on disk), or unchanged without numba."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(cache=True, nogil=True)(function)


def jit_holding_gil(function):
    """:func:`jit` for a kernel that calls Python (:func:`mbkron.jit.calls.call_python`): it keeps the GIL
    while it runs, so that each call back into Python need not wait for it (the GIL handed back and forth at
    every call, behind any other thread of the process)."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(cache=True)(function)


def inline_jit(function):
    """``function`` compiled into each caller (numba's ``inline="always"``), or unchanged without numba.

    For kernels that take compiled functions as arguments (a right-hand side, generated constraint
    functions): inlined into a generated module's function that passes that module's globals, the calls
    are direct and the caller can be cached on disk (numba cannot cache code that holds the address of
    a dispatcher object)."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(nogil=True, inline="always")(function)


def jitable(function):
    """``function`` unchanged in Python, and compiled into each kernel that calls it (numba's ``register_jitable``):
    for small helpers such as the scratch arrays a kernel's caller allocates once, which then cost no kernel of
    their own to compile."""
    if not AVAILABLE:  # pragma: no cover - exercised where numba is absent
        return function
    from numba.extending import register_jitable

    return register_jitable(function)


def python_function(function):
    """The plain Python function behind a :func:`jit` kernel (the kernel itself without numba)."""
    return getattr(function, "py_func", function)
