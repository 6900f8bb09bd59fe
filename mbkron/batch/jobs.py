"""Job kinds of a batch and the function that runs one item on a worker (:func:`execute`).

A job kind (:class:`JobKind`, registered in :data:`JOBS`) is its fields — what a batch file may say
about an item, each checked by a :class:`Field` — and one function ``run(item, out_dir) -> summary``:
it computes the item from the item's fields and file texts, writes its result files into ``out_dir``
and returns a JSON-serialisable summary with at least ``outcome`` (``"completed"``, ``"range_end"``,
``"warnings"`` -- finished, its results written, with ``warnings`` that need attention, e.g. frames static
optimisation could not balance -- or ``"failed"``) and ``message``. :func:`execute` runs it in a temporary directory and returns the files'
bytes with the summary, so that the driver writes them (:mod:`mbkron.batch.runner`): workers need no
shared file system, and a cluster's results are byte for byte those of a serial run.

Models reach a worker as their text, TOML or OpenSim's ``.osim`` by the file's suffix (never a pickled
model or its caches); each worker process parses a model once and keeps it by the SHA-256 of the text
(:func:`model_file`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
import time
import warnings
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mbkron.batch.item import Field, Item, JobKind

if TYPE_CHECKING:
    from mbkron.io import ModelFile

__all__ = ["BACKENDS", "BLAS_THREADS", "JOBS", "METHODS", "dask_setup", "execute", "model_file", "worker_threads"]

METHODS = ("TRBDF2", "RKF45", "RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
"""The solvers of :func:`mbkron.simulate` (its ``METHODS``; a test keeps them equal), checked in a batch
file before anything numerical is imported."""
BACKENDS = ("compiled",)
"""The values of the ``backend`` field, kept for compatibility: the one engine (:mod:`mbkron.model.backend`;
the numpy route was removed)."""
MODEL_CACHE = 8
"""Models kept per worker process (the most recently used)."""


# ====================================================================== models on workers
_MODELS: OrderedDict[tuple[str, str, str | None, str], tuple[ModelFile, tuple[str, ...]]] = OrderedDict()


def model_file(text: str, source: str, backend: str | None = None, *,
               wrapping: str = "import") -> tuple[ModelFile, tuple[str, ...]]:
    """The model of model-file ``text``, parsed once per process (kept by SHA-256 of the text, ``source``,
    backend and ``wrapping``), with the warnings its parsing gave (``ModelWarning`` messages, given again for a
    kept model). ``source`` (the file's path as the batch file gives it) names it in messages, and its suffix
    says the format: ``.osim`` is imported from OpenSim (with ``wrapping``, see
    :func:`mbkron.io.read_model_file`), anything else is TOML."""
    from mbkron.io import parse_model_file

    key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), source, backend, wrapping)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if Path(source).suffix.lower() == ".osim":
            parsed = _osim_model(text, source, backend, wrapping)
        else:
            parsed = parse_model_file(text, source, backend=backend)
    _MODELS[key] = parsed, tuple(str(w.message) for w in caught)
    while len(_MODELS) > MODEL_CACHE:
        _MODELS.popitem(last=False)
    return _MODELS[key]


def _osim_model(text: str, source: str, backend: str | None, wrapping: str) -> ModelFile:
    """An ``.osim`` model from its text (written to a temporary file for the importer; its errors, its
    warnings and the model file's ``source`` name ``source``)."""
    from mbkron.io import read_model_file

    with tempfile.TemporaryDirectory(prefix="mbkron-model-") as directory:
        path = Path(directory) / Path(source).name
        path.write_text(text, encoding="utf-8")
        with _named_as_given({path: source}):
            return dataclasses.replace(read_model_file(path, backend, wrapping=wrapping), source=source)


@contextmanager
def _named_as_given(names: dict[Path, str]):
    """A context in which the errors and warnings that name a temporary copy of an item's file (``names``: its
    path → the file's path as the batch file gives it) name the item's file instead: the temporary files,
    gone when the item ends, are never shown."""
    from mbkron.core.errors import ModelError

    def rename(text: str) -> str:
        for path, name in names.items():
            text = text.replace(str(path), name)
        return text

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except Exception as error:
            error.args = tuple(rename(a) if isinstance(a, str) else a for a in error.args)
            if isinstance(error, ModelError):
                error.problems = [rename(problem) for problem in error.problems]
                error.source = None if error.source is None else rename(error.source)
            raise
    for warning in caught:
        warnings.warn_explicit(rename(str(warning.message)), warning.category, warning.filename, warning.lineno)


def execute(item: Item) -> dict:
    """Run ``item``'s job (on a worker, or in the driver for a serial batch).

    Returns
    -------
    dict
        ``summary`` (the job's, or ``outcome: "failed"`` and the error's message if it raised), ``files``
        (name to bytes of every file it wrote) and ``seconds`` (the job's time).
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mbkron-batch-") as directory:
        try:
            summary = JOBS[item.kind].run(item, Path(directory))
        except Exception as error:  # a failed item is reported; the batch goes on
            summary = {"outcome": "failed", "message": _describe(error)}
        files = {path.name: path.read_bytes() for path in sorted(Path(directory).iterdir()) if path.is_file()}
    return {"summary": summary, "files": files, "seconds": time.perf_counter() - started}


def dask_setup(worker) -> None:
    """dask's preload hook, run as each worker of the LocalCluster starts (``preload=["mbkron.batch.jobs"]``):
    Ctrl-C at a terminal signals the whole process group, workers included; they ignore it and are stopped
    by the driver, which handles it (:class:`mbkron.batch.BatchInterrupted`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The environment variables that set the threads of the linear algebra libraries."""


def worker_threads():
    """A context in which a LocalCluster's workers start with this process's BLAS thread counts (its
    variables of :data:`BLAS_THREADS`, else the CPUs it may run on: the libraries' default), set in dask's
    ``distributed.nanny.pre-spawn-environ`` (they must be set before a worker imports numpy).

    dask caps a worker's BLAS at one thread; a BLAS on more threads sums some products in another order,
    which changes the last bits of results (the moment arms and fibre velocities of the muscle analysis,
    for one). With the driver's counts the workers compute what a serial run computes, bit for bit.
    """
    import os

    import dask

    count = str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    return dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": os.environ.get(name, count)
                            for name in BLAS_THREADS})


def _describe(error: Exception) -> str:
    """An error's message, named by its type unless it is one of mbkron's or a ValueError (checked input)."""
    from mbkron.core.errors import ModelError

    return str(error) if isinstance(error, (ModelError, ValueError)) else f"{type(error).__name__}: {error}"


# ====================================================================== simulate
def simulate_job(item: Item, out_dir: Path) -> dict:
    """Forward dynamics of the item's model (as ``mbkron simulate``): writes ``simulation.csv`` (t, q, q̇,
    q̈ in the file's units, joint variables in SI) and returns the run's outcome, settings and statistics."""
    import numpy as np

    from mbkron.integrate.simulate import simulate
    from mbkron.io.results import simulation_table, write_csv

    fields = item.fields
    loaded, notes = model_file(item.files["model"], fields["model"], fields.get("backend"))
    model = loaded.model
    q0 = _coordinates(fields.get("q0", {}), loaded, "q0", model.default_q)
    qd0 = _coordinates(fields.get("qd0", {}), loaded, "qd0", np.zeros(model.nq))
    t_end, samples = fields.get("t_end", 1.0), fields.get("samples", 501)
    result = simulate(model, (0.0, t_end), q0, qd0, method=fields.get("method", "TRBDF2"),
                      rtol=fields.get("rtol", 1e-6), atol=fields.get("atol", 1e-8),
                      t_eval=np.linspace(0.0, t_end, samples),
                      ranges="ignore" if fields.get("allow_outside_range", False) else "stop")
    scales = np.array([loaded.coordinate_scale(name) for name in model.coordinates])
    columns, column_units, table = simulation_table(loaded, result)
    write_csv(out_dir / "simulation.csv", columns, table)
    return {"outcome": {0: "completed", 1: "range_end"}.get(result.status, "failed"), "message": result.message,
            "model": {"name": model.name, "sha256": loaded.sha256, "angle_unit": loaded.angle_unit},
            "warnings": list(notes),
            "settings": dict(result.settings, samples=samples, q0=(q0 / scales).tolist(), qd0=(qd0 / scales).tolist()),
            "statistics": {"status": result.status, "nfev": result.nfev, "njev": result.njev, "nlu": result.nlu,
                           "steps": result.n_steps},
            "columns": [{"name": c, "unit": u} for c, u in zip(columns, column_units)]}


def _coordinates(values: dict, loaded: ModelFile, name: str, base) -> Any:
    """Coordinates ``{name: value}`` in the file's units over ``base`` (SI), in SI units."""
    import numpy as np

    model = loaded.model
    q = np.array(base, dtype=float)
    for coordinate, value in values.items():
        if coordinate not in model.coordinates:
            raise ValueError(f"`{name}`: unknown coordinate `{coordinate}`; the model has: "
                             f"{', '.join(model.coordinates)}")
        q[model.coordinates.index(coordinate)] = value * loaded.coordinate_scale(coordinate)
    return q


# ====================================================================== analyze
def analyze_job(item: Item, out_dir: Path) -> dict:
    """Analysis of a measured motion, as ``mbkron analyze`` (:func:`mbkron.analysis.analyze_trial`): writes
    the tables ``mbkron analyze`` writes, named after the motion file (``<motion>_inverse_dynamics.sto``,
    ...), and returns the outcome, the model, the settings and what the analysis reports.

    The model (TOML or ``.osim``), the motion, the ExternalLoads file with its data and the reserves come
    as their texts (a worker cannot see the driver's files); the ExternalLoads' data is the item's
    ``external_loads_data``, not the XML's ``datafile``.
    """
    import numpy as np

    from mbkron.analysis.trial import OPTIONS, analyze_trial
    from mbkron.io.storage import parse_storage

    fields, files = item.fields, item.files
    loaded, notes = model_file(files["model"], fields["model"], fields.get("backend"),
                               wrapping="ignore" if fields.get("ignore_wrapping", False) else "import")
    if ("external_loads" in fields) != ("external_loads_data" in fields):
        raise ValueError("`external_loads` and `external_loads_data` go together: the ExternalLoads file and its "
                         "data (.mot/.sto; the files travel as text, so the XML's datafile is not read)")
    analyses = fields.get("analyses", list(OPTIONS))
    start, end = fields.get("time_start"), fields.get("time_end")
    time_range = None if start is None and end is None else (-np.inf if start is None else start,
                                                              np.inf if end is None else end)
    with tempfile.TemporaryDirectory(prefix="mbkron-inputs-") as directory, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loads = _input_file(directory, fields, files, "external_loads")
        reserves = _input_file(directory, fields, files, "reserves") or ()
        data = parse_storage(files["external_loads_data"], fields["external_loads_data"]) if loads else None
        with _named_as_given({path: fields[name] for name, path in (("external_loads", loads), ("reserves", reserves))
                              if path}):
            result = analyze_trial(loaded.model, parse_storage(files["motion"], fields["motion"]),
                                   external_loads=loads, external_loads_data=data, lowpass=fields.get("lowpass"),
                                   time_range=time_range, analyses=analyses, reserves=reserves,
                                   activation_exponent=fields.get("activation_exponent", 2.0),
                                   reactions_frame=fields.get("reactions_frame", "ground"))
    stem = Path(fields["motion"]).stem
    written = result.write(out_dir, stem)
    frames = int(result.kinematics.time.size)
    found = [str(warning.message) for warning in caught]  # the analysis's warnings: they change the outcome
    summary = {"outcome": "completed", "message": f"{frames} frames: {', '.join(result.analyses)}",
               "model": {"name": loaded.model.name, "sha256": loaded.sha256}, "warnings": list(notes),
               "settings": {"lowpass_hz": fields.get("lowpass"), "time_range": [start, end],
                            "analyses": list(result.analyses), "frames": frames,
                            "ignored_columns": list(result.kinematics.ignored)},
               "files": sorted(Path(path).name for path in written.values())}
    if "static_optimization" in result.results:
        unbalanced = int(np.count_nonzero(~result["static_optimization"].converged))
        summary["settings"]["static_optimization_unbalanced_frames"] = unbalanced
        if unbalanced:
            from mbkron.analysis.static_optimization import unbalanced_message

            found.append(unbalanced_message(unbalanced, frames, fields.get("reserves")))
    if found:  # the model file's notes are listed too, as for simulate items, but do not make it "warnings"
        summary["outcome"] = "warnings"
        summary["warnings"] += found
        summary["message"] += f"; {len(found)} warning(s): {found[-1]}"
    return summary


def _input_file(directory: str, fields: dict, files: dict, name: str) -> Path | None:
    """The item's file ``name`` written into ``directory`` under its own base name (for readers that take
    a path), or None when the item has none."""
    if name not in fields:
        return None
    path = Path(directory) / Path(fields[name]).name
    path.write_text(files[name], encoding="utf-8")
    return path


_COMMON = {
    "model": Field("file", required=True),  # the model file (TOML; .osim too for analyze)
    "parameters": Field("table"),  # model parameters to set, NAME = number (the model's [parameters])
    "backend": Field("string", choices=BACKENDS),  # kept for compatibility: "compiled", the one engine
}

JOBS: dict[str, JobKind] = {
    "simulate": JobKind("simulate", simulate_job, {
        **_COMMON,
        "t_end": Field("number", positive=True),  # end time, s (default 1)
        "method": Field("string", choices=METHODS),  # the solver (default TRBDF2)
        "rtol": Field("number", positive=True),  # relative tolerance (default 1e-6)
        "atol": Field("number", positive=True),  # absolute tolerance, SI units (default 1e-8)
        "samples": Field("integer", minimum=2),  # output samples, evenly spaced (default 501)
        "q0": Field("table"),  # initial coordinates, file units (default: the file's defaults)
        "qd0": Field("table"),  # initial rates, file units per s (default 0)
        "allow_outside_range": Field("boolean"),  # integrate outside the coordinates' ranges (default false)
    }),
    "analyze": JobKind("analyze", analyze_job, {
        **_COMMON,
        "motion": Field("file", required=True),  # the motion (OpenSim .mot/.sto of coordinates)
        "external_loads": Field("file"),  # an OpenSim ExternalLoads file (.xml)
        "external_loads_data": Field("file"),  # its data (ground reactions, .mot): travels as text, as the XML
        "lowpass": Field("number", positive=True),  # low-pass cut-off for the coordinates, Hz (default none)
        "time_start": Field("number"),  # the first time reported, s (default: the motion's)
        "time_end": Field("number"),  # the last time reported, s (default: the motion's)
        "analyses": Field("strings", choices=("id", "muscles", "so", "reactions")),  # the analyses (default all)
        "reserves": Field("file"),  # reserve and residual actuators for so (an OpenSim force-set file)
        "activation_exponent": Field("number", positive=True),  # exponent of so's objective (default 2)
        "reactions_frame": Field("string", choices=("ground", "child", "parent")),  # the reactions' frame
        "ignore_wrapping": Field("boolean"),  # import an .osim model's paths without their wrap objects
    }),
}
"""The job kinds, by name (their fields are documented in ``docs/batch.md``; a test keeps both equal)."""
