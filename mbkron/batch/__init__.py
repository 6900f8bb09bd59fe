"""Batches of simulations and analyses over many trials or parameter sets, on dask.distributed (the
optional ``distributed`` extra) or serially (``docs/batch.md``).

- :mod:`mbkron.batch.item`: :class:`Item` (one job, plain data), :class:`Field`, :class:`JobKind`;
- :mod:`mbkron.batch.spec`: batch files (TOML, optionally a CSV of parameter sets), :func:`read_batch`;
- :mod:`mbkron.batch.jobs`: the job kinds (:data:`JOBS`: ``simulate``, ``analyze``) and :func:`execute`,
  which runs one item on a worker;
- :mod:`mbkron.batch.runner`: :func:`run_batch` (a LocalCluster, an existing cluster, or serial), resumable.

Importing this package does not import dask: only a batch run on a cluster does.
"""

from mbkron.batch.item import MARKER, SUMMARY, BatchFileError, Field, Item, JobKind
from mbkron.batch.jobs import JOBS, execute
from mbkron.batch.runner import BatchError, BatchInterrupted, BatchReport, run_batch
from mbkron.batch.spec import read_batch

__all__ = [
    "JOBS",
    "MARKER",
    "SUMMARY",
    "BatchError",
    "BatchFileError",
    "BatchInterrupted",
    "BatchReport",
    "Field",
    "Item",
    "JobKind",
    "execute",
    "read_batch",
    "run_batch",
]
