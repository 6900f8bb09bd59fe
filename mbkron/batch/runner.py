"""Running a batch: :func:`run_batch` maps the items' jobs over a dask.distributed cluster (a LocalCluster
by default) or runs them one after another in this process, and writes every item's results.

Each item's files go into ``out_dir/<id>/``, every one atomically, and last its finished marker
``item.json`` (the job's summary with the item's ``outcome``, the SHA-256 of its definition and of its
files, and timings); the driver writes them, as each item finishes, so workers need no shared file system. A
re-run skips every item whose marker has the same definition hash and did not fail: a batch interrupted by
Ctrl-C, SIGTERM or a killed driver resumes where it stopped, an item whose definition (fields or file
contents) changed is computed again, and so is a failed one. The batch's summary goes into
``out_dir/batch.json``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import mbkron
from mbkron.batch.jobs import execute, worker_threads
from mbkron.batch.item import MARKER, SUMMARY, Item
from mbkron.io.results import write_atomically, write_json

__all__ = ["BatchError", "BatchInterrupted", "BatchReport", "run_batch"]

DISTRIBUTED_HINT = 'pip install "mbkron[distributed]"'


class BatchError(RuntimeError):
    """A batch that cannot run: dask.distributed missing, a scheduler out of reach, the output directory
    unusable or in use by another batch."""


@dataclass
class BatchReport:
    """What a batch did.

    Attributes
    ----------
    computed : list of str
        The ids of the items computed by this run (failed ones included), in the order they finished.
    skipped : list of str
        The ids of the items finished by an earlier run with the same definition.
    failed : dict of str to str
        The failed items' ids and messages.
    warned : dict of str to list of str
        The ids of the items computed by this run that finished with warnings (outcome ``"warnings"``, e.g.
        frames static optimisation could not balance), and the warnings.
    executor : str
        ``"serial"``, ``"LocalCluster (N workers)"``, the scheduler's address, or ``"nothing to compute"``
        (every item finished earlier: no cluster is started).
    """

    computed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    warned: dict[str, list[str]] = field(default_factory=dict)
    executor: str = "serial"


class BatchInterrupted(KeyboardInterrupt):
    """A batch stopped by Ctrl-C or SIGTERM; ``report`` says what was finished (a re-run resumes)."""

    def __init__(self, report: BatchReport):
        super().__init__("batch interrupted")
        self.report = report


def run_batch(items: Sequence[Item], out_dir: str | Path, *, scheduler: str | None = None, workers: int | None = None,
              serial: bool = False, progress: bool = True) -> BatchReport:
    """Compute the items of a batch (:func:`mbkron.batch.read_batch`) that are not finished in ``out_dir``.

    Parameters
    ----------
    items : sequence of Item
        Distinct ids.
    out_dir : str or path-like
        Created if missing; each item's results go into ``out_dir/<id>/``.
    scheduler : str, optional
        The address of a running dask scheduler (``"tcp://host:8786"``); by default a LocalCluster of
        ``workers`` processes on this machine, started and stopped here — or, when dask.distributed is not
        installed and neither ``scheduler`` nor ``workers`` is given, a serial run (the report's
        ``executor`` says so).
    workers : int, optional
        The LocalCluster's worker processes (one thread each); default: the number of CPUs.
    serial : bool
        Run the items one after another in this process, without dask (same results, byte for byte).
    progress : bool
        A tqdm progress bar over the items on stderr.

    Returns
    -------
    BatchReport
        Failed items are reported in it (and in their ``item.json``), never raised.

    Raises
    ------
    ValueError
        For invalid arguments (named in backticks).
    BatchError
        A cluster was asked for (``scheduler`` or ``workers``) but dask.distributed is not installed (the
        message names the ``distributed`` extra), the scheduler
        cannot be reached, or ``out_dir`` cannot be used or is in use by another batch.
    BatchInterrupted
        On Ctrl-C or SIGTERM (a ``KeyboardInterrupt``): the items finished until then are written.
    """
    items = list(items)
    if not all(isinstance(item, Item) for item in items):
        raise ValueError("`items` must be Item objects (mbkron.batch.read_batch)")
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError("`items` must have distinct ids")
    if serial and (scheduler is not None or workers is not None):
        raise ValueError("`serial` runs without dask: give no `scheduler` or `workers` with it")
    if scheduler is not None and workers is not None:
        raise ValueError("`workers` sets the size of the LocalCluster: give no `scheduler` with it")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"`workers` must be a positive integer, got {workers!r}")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BatchError(f"cannot create the output directory {out}: {error.strerror or error}") from None
    started = time.perf_counter()
    report = BatchReport()
    with _exclusive(out):
        todo = []
        for item in items:
            if _finished(out / item.id, item.digest):
                report.skipped.append(item.id)
            else:
                todo.append(item)
        if not todo:
            report.executor = "nothing to compute"
        elif not serial and scheduler is None and workers is None and not _has_distributed():
            serial, report.executor = True, f"serial: no dask.distributed here ({DISTRIBUTED_HINT})"
        bar = _bar(len(items), len(report.skipped), progress)
        try:
            with ExitStack() as stack:
                results = _serial(todo) if serial or not todo else stack.enter_context(
                    _distributed(todo, scheduler, workers, report))
                for item, result in results:
                    _store(out / item.id, item, result)
                    report.computed.append(item.id)
                    if result["summary"].get("outcome") == "failed":
                        report.failed[item.id] = str(result["summary"].get("message", ""))
                    elif result["summary"].get("outcome") == "warnings":
                        report.warned[item.id] = [str(w) for w in result["summary"]["warnings"]]
                    if bar is not None:
                        bar.set_postfix(failed=len(report.failed), refresh=False)
                        bar.update()
        except KeyboardInterrupt:
            _summary(out, items, report, started, interrupted=True)
            raise BatchInterrupted(report) from None
        finally:
            if bar is not None:
                bar.close()
        _summary(out, items, report, started, interrupted=False)
    return report


# ====================================================================== executors
def _has_distributed() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _serial(todo: list[Item]) -> Iterator[tuple[Item, dict]]:
    for item in todo:
        yield item, execute(item)


@contextmanager
def _distributed(todo: list[Item], scheduler: str | None, workers: int | None,
                 report: BatchReport) -> Iterator[Iterator[tuple[Item, dict]]]:
    """The items' results, as they finish, from a dask.distributed cluster (started here unless
    ``scheduler`` is given); the cluster and the client are closed when the block ends."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise BatchError(f"a batch on a cluster needs dask.distributed: {DISTRIBUTED_HINT} "
                         "(or run it serially)") from None
    with ExitStack() as stack:
        if scheduler is None:
            count = workers or os.cpu_count() or 1
            stack.enter_context(worker_threads())  # the serial run's BLAS threads: its results, bit for bit
            # distributed's own log records stay quiet up to ERROR: a worker's failure reaches the report as its
            # item's (a failed future), and on Ctrl-C a worker whose scheduler has just closed logs a heartbeat
            # traceback at ERROR (seen once in a test run), which is not a problem of the batch
            cluster = stack.enter_context(LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                                                       dashboard_address=":0", silence_logs=logging.CRITICAL,
                                                       preload=["mbkron.batch.jobs"]))
            report.executor = f"LocalCluster ({count} workers)"
        else:
            cluster = scheduler
            report.executor = scheduler
        try:
            client = stack.enter_context(Client(cluster))
        except (OSError, TimeoutError, ValueError) as error:
            raise BatchError(f"cannot connect to the dask scheduler {scheduler}: {error}") from None
        futures = {client.submit(execute, item, key=f"mbkron-batch-{item.id}-{item.digest[:16]}"): item
                   for item in todo}

        def results() -> Iterator[tuple[Item, dict]]:
            # The results come with the futures (gathered on the client's event loop): this thread only
            # waits on a condition, never inside distributed's `sync`, whose handling of a Ctrl-C that
            # lands before its coroutine started logs a NameError traceback (distributed 2026.8).
            for future, result in as_completed(futures, with_results=True, raise_errors=False):
                item = futures.pop(future)
                if future.status != "finished":  # the worker died, or the task was lost: this item fails
                    error = result[1] if isinstance(result, tuple) else result
                    result = {"summary": {"outcome": "failed", "message": f"{type(error).__name__}: {error}"},
                              "files": {}, "seconds": 0.0}
                yield item, result

        yield results()


# ====================================================================== the output directory
def _finished(directory: Path, digest: str) -> bool:
    """Whether ``directory`` holds a finished, unfailed result of the item definition ``digest``."""
    try:
        marker = json.loads((directory / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(marker, dict) and marker.get("spec_sha256") == digest and marker.get("outcome") != "failed"
            and all((directory / name).is_file() for name in marker.get("outputs", {})))


def _store(directory: Path, item: Item, result: dict) -> None:
    """Write an item's files atomically, remove files of an earlier definition, then its marker."""
    directory.mkdir(exist_ok=True)
    (directory / MARKER).unlink(missing_ok=True)  # unfinished until the marker is written again
    files = result["files"]
    for name, data in files.items():
        write_atomically(directory / name, data)
    for path in directory.iterdir():
        if path.is_file() and path.name not in files:
            path.unlink()
    marker = {"id": item.id, "kind": item.kind, "fields": item.fields, "spec_sha256": item.digest, **result["summary"],
              "outputs": {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                          for name, data in files.items()},
              "mbkron_version": mbkron.__version__, "timings_s": {"job": round(result["seconds"], 6)}}
    write_json(directory / MARKER, marker)


def _summary(out: Path, items: list[Item], report: BatchReport, started: float, interrupted: bool) -> None:
    write_json(out / SUMMARY, {
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mbkron_version": mbkron.__version__, "executor": report.executor, "items": len(items),
        "interrupted": interrupted, "computed": report.computed, "skipped": report.skipped,
        "failed": report.failed, "warnings": report.warned, "timings_s": {"total": round(time.perf_counter() - started, 6)}})


@contextmanager
def _exclusive(out: Path) -> Iterator[None]:
    """Hold ``flock`` on the output directory (POSIX; nothing is created): one batch at a time writes there."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        descriptor = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as error:
        raise BatchError(f"cannot open the output directory {out}: {error.strerror or error}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BatchError(f"another batch is writing into {out}; wait for it or choose another directory") from None
        yield
    finally:
        os.close(descriptor)


def _bar(total: int, done: int, enabled: bool):
    """A tqdm bar over the items on stderr (None when disabled)."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc="batch", unit="item", file=sys.stderr)
