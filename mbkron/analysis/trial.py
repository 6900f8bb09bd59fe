"""One entry point for the analysis of a measured trial: :func:`analyze_trial` runs the analyses asked for
(inverse dynamics, muscle analysis, static optimisation, joint reactions) on one motion, as ``mbkron
analyze`` and the ``analyze`` jobs of a batch do, and returns a :class:`TrialAnalysis` whose
:meth:`~TrialAnalysis.write` writes the files ``mbkron analyze`` writes (OpenSim's ``.sto`` tables, CSV for
the inverse dynamics and the reactions), each atomically.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np

from mbkron.analysis.external_loads import ExternalLoads, external_loads as read_loads
from mbkron.analysis.motion import TrialKinematics, trial_kinematics
from mbkron.io.storage import Storage

__all__ = ["ANALYSES", "OPTIONS", "TrialAnalysis", "analyze_trial", "write_analysis"]

ANALYSES = ("inverse_dynamics", "muscle_analysis", "static_optimization", "joint_reactions")
"""The analyses in the order they run (static optimisation needs the inverse dynamics; the reactions use
static optimisation's muscle forces)."""
OPTIONS = {"id": "inverse_dynamics", "muscles": "muscle_analysis", "so": "static_optimization",
           "reactions": "joint_reactions"}
"""The analyses' short names (``mbkron analyze --id`` ...; a batch item's ``analyses``)."""


@dataclass(frozen=True, eq=False)
class TrialAnalysis:
    """The analyses of one trial (:func:`analyze_trial`).

    Attributes
    ----------
    kinematics : TrialKinematics
        The frames analysed.
    analyses : tuple of str
        The analyses asked for, in the order of :data:`ANALYSES`.
    results : Mapping
        Every analysis computed, by name (of :data:`ANALYSES`): those asked for, and the inverse dynamics
        when static optimisation was asked for (it needs them).
    timings : Mapping
        Seconds each analysis took, by name.
    """

    kinematics: TrialKinematics
    analyses: tuple[str, ...]
    results: Mapping[str, object] = field(default_factory=dict)
    timings: Mapping[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str):
        """The result of analysis ``name`` (of :data:`ANALYSES`)."""
        return self.results[name]

    def write(self, out_dir: str | Path, name: str) -> dict[str, str]:
        """Write the results of the analyses asked for into ``out_dir`` as ``mbkron analyze`` does: files
        ``<name>_<analysis>...`` (:func:`write_analysis`), each atomically; ``out_dir`` is created if missing
        (as ``--out`` is).

        Returns
        -------
        dict of str to str
            The paths written, by table (``inverse_dynamics_sto``, ``MuscleAnalysis_Length``, ...).
        """
        written: dict[str, str] = {}
        for analysis in self.analyses:
            written.update(write_analysis(analysis, self.results[analysis], out_dir, name))
        return written


def write_analysis(analysis: str, result, out_dir: str | Path, name: str) -> dict[str, str]:
    """Write one analysis's result into ``out_dir`` (created if missing, with its parents):
    ``<name>_<analysis>.sto`` and ``.csv`` for the inverse dynamics and the reactions, OpenSim's tables
    (``<name>_MuscleAnalysis_*.sto``, ``<name>_StaticOptimization_*.sto``) for the muscle analysis and
    static optimisation; each atomically.

    Returns
    -------
    dict of str to str
        The paths written, by table.

    Raises
    ------
    OSError
        The directory cannot be created (its path named) or a file cannot be written.
    """
    from mbkron.io import write_csv

    directory = Path(out_dir)
    if analysis not in ANALYSES:
        raise ValueError(f"`analysis` must be one of {', '.join(ANALYSES)}, got {analysis!r}")
    if not directory.is_dir():
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OSError(error.errno, f"cannot create the directory `{out_dir}`: {error.strerror or error}") from None
    if analysis in ("muscle_analysis", "static_optimization"):
        return {Path(p).stem[len(name) + 1:]: str(p) for p in result.write(directory, name)}
    table = result.tau if analysis == "inverse_dynamics" else result.table
    sto, csv = directory / f"{name}_{analysis}.sto", directory / f"{name}_{analysis}.csv"
    result.write(sto)
    write_csv(csv, ("time",) + tuple(result.labels), np.column_stack([result.time, table]))
    return {f"{analysis}_sto": str(sto), f"{analysis}_csv": str(csv)}


def analyze_trial(model, motion: str | Path | Storage | TrialKinematics, *,
                  external_loads: str | Path | ExternalLoads | None = None,
                  external_loads_data: str | Path | Storage | None = None, lowpass: float | None = None,
                  time_range: tuple[float, float] | None = None, analyses: Sequence[str] = ("id",),
                  reserves: str | Path | Sequence = (), activation_exponent: float = 2.0,
                  reactions_frame: str = "ground",
                  each: Callable[[str, object], None] | None = None) -> TrialAnalysis:
    """Analyse a measured trial as OpenSim's tools do (``docs/analysis.md``), at every frame at once.

    Parameters
    ----------
    model : Model
        With its muscles' Hill parameters for static optimisation (an ``.osim`` import has them).
    motion : path-like, Storage or TrialKinematics
        The coordinates along the trial (``.mot``/``.sto``, a column per coordinate), or the trial's
        kinematics already computed (then ``lowpass`` and ``time_range`` must be None).
    external_loads : path-like or ExternalLoads, optional
        An OpenSim ExternalLoads file (its ``datafile`` read relative to it unless
        ``external_loads_data`` is given), or the loads read (:func:`~mbkron.analysis.external_loads`).
    external_loads_data : path-like or Storage, optional
        The loads' data (ground reactions).
    lowpass : float, optional
        Cut-off of OpenSim's low-pass filter for the coordinates, Hz (default: no filter).
    time_range : (float, float), optional
        The frames to report, s (default: the whole motion).
    analyses : sequence of str
        Of ``"id"``, ``"muscles"``, ``"so"``, ``"reactions"`` (:data:`OPTIONS`) or the full names of
        :data:`ANALYSES`; at least one.
    reserves : path-like or sequence, optional
        Reserve and residual actuators for static optimisation: an OpenSim force-set file of
        ``CoordinateActuator``, ``PointActuator`` and ``TorqueActuator`` elements
        (:func:`~mbkron.analysis.actuators.read_reserves`; its other forces are ignored with a warning) or
        the actuators read.
    activation_exponent : float
        The exponent ``p`` of static optimisation's objective Σ aᵖ (default 2).
    reactions_frame : {"ground", "child", "parent"}
        The frame the joint reactions are expressed in.
    each : callable, optional
        Called as ``each(analysis, result)`` after each analysis asked for (``mbkron analyze`` writes it
        there, so that an interruption keeps what was finished).

    Returns
    -------
    TrialAnalysis

    Raises
    ------
    StorageError
        A motion or data file that cannot be read (the file and line named).
    ValueError
        A bad argument (named), or an analysis that cannot be computed (its message starts with the
        analysis, e.g. ``static optimization: ...``).
    """
    wanted = _analyses(analyses)
    if isinstance(motion, TrialKinematics):
        if lowpass is not None or time_range is not None:
            raise ValueError("`lowpass` and `time_range` are for a motion file; `motion` is a TrialKinematics "
                             "already filtered and cut")
        kinematics = motion
    else:
        kinematics = trial_kinematics(model, motion, lowpass, time_range)
    loads = external_loads
    if loads is not None and not isinstance(loads, ExternalLoads):
        loads = read_loads(loads, external_loads_data)
    if isinstance(reserves, (str, Path)):
        from mbkron.analysis.static_optimization import read_reserves

        path = reserves
        reserves, skipped = read_reserves(path)
        if skipped:
            import warnings

            warnings.warn(f"`reserves` {path}: forces other than CoordinateActuator, PointActuator and TorqueActuator "
                          f"are not used by static optimisation, ignored: {', '.join(skipped)}", stacklevel=2)
    if reserves and "static_optimization" not in wanted:
        raise ValueError("`reserves` are for static optimisation: add `so` to `analyses`")
    results: dict[str, object] = {}
    timings: dict[str, float] = {}
    for name in ANALYSES:
        if name in wanted or (name == "inverse_dynamics" and "static_optimization" in wanted):
            started = time.perf_counter()
            try:
                results[name] = _compute(name, model, kinematics, loads, tuple(reserves), activation_exponent,
                                         reactions_frame, results)
            except ValueError as error:
                raise ValueError(f"{name.replace('_', ' ')}: {error}") from None
            timings[name] = time.perf_counter() - started
            if each is not None and name in wanted:
                each(name, results[name])
    return TrialAnalysis(kinematics, tuple(n for n in ANALYSES if n in wanted), MappingProxyType(results),
                         MappingProxyType(timings))


def _analyses(analyses: Sequence[str]) -> set[str]:
    if isinstance(analyses, str):
        analyses = (analyses,)
    wanted = set()
    for name in analyses:
        if name not in OPTIONS and name not in ANALYSES:
            raise ValueError(f"`analyses`: unknown analysis {name!r}; expected some of "
                             f"{', '.join(OPTIONS)} (or {', '.join(ANALYSES)})")
        wanted.add(OPTIONS.get(name, name))
    if not wanted:
        raise ValueError(f"`analyses` must name at least one of {', '.join(OPTIONS)}")
    return wanted


def _compute(name: str, model, kinematics: TrialKinematics, loads, reserves: tuple, activation_exponent: float,
             reactions_frame: str, results: dict):
    """One analysis (``results``: those computed before it)."""
    if name == "inverse_dynamics":
        from mbkron.analysis.inverse_dynamics import inverse_dynamics

        return inverse_dynamics(model, kinematics, loads)
    if name == "muscle_analysis":
        from mbkron.analysis.muscle_analysis import muscle_analysis

        return muscle_analysis(model, kinematics.q, kinematics.qd, time=kinematics.time)
    if name == "static_optimization":
        from mbkron.analysis.static_optimization import static_optimization

        return static_optimization(model, kinematics.time, kinematics.q, kinematics.qd,
                                   results["inverse_dynamics"].tau, activation_exponent=activation_exponent,
                                   reserves=reserves)
    from mbkron.analysis.reactions import joint_reactions

    so = results.get("static_optimization")
    return joint_reactions(model, kinematics, loads, None if so is None else so.forces, frame=reactions_frame)
