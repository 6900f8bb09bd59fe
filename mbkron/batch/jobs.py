"""Job kinds of a batch and the function that runs one item on a worker (:func:`execute`).

A job kind (:class:`JobKind`, registered in :data:`JOBS`) is its fields — what a batch file may say
about an item, each checked by a :class:`Field` — and one function ``run(item, out_dir) -> summary``:
it computes the item from the item's fields and file texts, writes its result files into ``out_dir``
and returns a JSON-serialisable summary with at least ``outcome`` (``"completed"``, ``"range_end"`` or
``"failed"``) and ``message``. :func:`execute` runs it in a temporary directory and returns the files'
bytes with the summary, so that the driver writes them (:mod:`mbkron.batch.runner`): workers need no
shared file system, and a cluster's results are byte for byte those of a serial run.

Models reach a worker as their TOML text (never a pickled model or its caches); each worker process
parses a model once and keeps it by the SHA-256 of the text (:func:`model_file`).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mbkron.batch.item import Field, Item, JobKind

if TYPE_CHECKING:
    from mbkron.io import ModelFile

__all__ = ["BACKENDS", "JOBS", "METHODS", "dask_setup", "execute", "model_file"]

METHODS = ("TRBDF2", "RKF45", "RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
"""The solvers of :func:`mbkron.simulate` (its ``METHODS``; a test keeps them equal), checked in a batch
file before anything numerical is imported."""
BACKENDS = ("compiled", "numpy", "kronecker")
"""The model backends (:mod:`mbkron.backends`)."""
MODEL_CACHE = 8
"""Models kept per worker process (the most recently used)."""


# ====================================================================== models on workers
_MODELS: OrderedDict[tuple[str, str | None], tuple[ModelFile, tuple[str, ...]]] = OrderedDict()


def model_file(text: str, source: str, backend: str | None = None) -> tuple[ModelFile, tuple[str, ...]]:
    """The model of model-file ``text``, parsed once per process (kept by SHA-256 of the text and backend),
    with the warnings its parsing gave (``ModelWarning`` messages, given again for a kept model)."""
    from mbkron.io import parse_model_file

    key = (hashlib.sha256(text.encode("utf-8")).hexdigest(), backend)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = parse_model_file(text, source, backend=backend)
    _MODELS[key] = parsed, tuple(str(w.message) for w in caught)
    while len(_MODELS) > MODEL_CACHE:
        _MODELS.popitem(last=False)
    return _MODELS[key]


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
    from mbkron.io import write_csv

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
    units = [loaded.angle_unit if model.coordinate(name).unit == "rad" else model.coordinate(name).unit
             for name in model.coordinates]
    columns = ["t"] + [f"{n}{s}" for s in ("", "_dot", "_ddot") for n in model.coordinates] + [
        f"f.{j}" for j in model.joints]
    column_units = ["s"] + [u + per for per in ("", "/s", "/s²") for u in units] + [
        "rad" if model.body(j).joint == "revolute" else "m" for j in model.joints]
    write_csv(out_dir / "simulation.csv", columns, np.column_stack([
        result.t, result.q / scales, result.qd / scales, result.qdd / scales, result.joint_variables]))
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
    """Analysis of a measured motion (issue #17: inverse dynamics, muscle analysis, static optimisation,
    joint reactions) with :mod:`mbkron.analysis`.

    MERGE POINT (the lead wires this at the merge of the ``analysis`` branch): call the trial analysis
    of :mod:`mbkron.analysis` (as ``mbkron analyze``) with the model text ``item.files["model"]``
    (:func:`model_file`), the motion's text ``item.files["motion"]``, when given the ExternalLoads
    description ``item.files["external_loads"]`` with its data ``item.files["external_loads_data"]``
    (texts, not paths: a worker cannot see the driver's files), the cut-off ``item.fields.get("lowpass")``
    and the analyses ``item.fields.get("analyses")``; write its tables into ``out_dir``; return
    ``{"outcome": ..., "message": ...}`` plus what it reports. Until then an item of this kind fails with
    a message saying so (the batch goes on).
    """
    import mbkron.analysis as analysis

    trial = getattr(analysis, "analyze_trial", None)
    if trial is None:
        raise NotImplementedError("this mbkron has no trial analysis yet (mbkron.analysis.analyze_trial); "
                                  "`analyze` batches need the analysis of issue #17")
    return trial(item, out_dir)


_COMMON = {
    "model": Field("file", required=True),  # the model file (TOML)
    "parameters": Field("table"),  # model parameters to set, NAME = number (the model's [parameters])
    "backend": Field("string", choices=BACKENDS),  # the model backend (default: compiled with numba, else numpy)
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
        "analyses": Field("strings", choices=("id", "muscles", "so", "reactions")),  # the analyses (default all)
    }),
}
"""The job kinds, by name (their fields are documented in ``docs/batch.md``; a test keeps both equal)."""
