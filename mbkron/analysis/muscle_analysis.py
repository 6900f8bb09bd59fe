"""Muscle analysis along a motion: lengths, velocities, moment arms and rigid-tendon fibre kinematics.

What OpenSim's ``MuscleAnalysis`` reports for a trial, computed for all frames in one vectorised call:

- musculotendon length ``L(q)`` (the path length, seed Eq. 149–170) and lengthening speed
  ``L̇ = −R(q)ᵀ q̇`` (:meth:`mbkron.Model.muscle_velocities`);
- the moment arms ``R(q) = −∂L/∂q`` (Eq. 192–195) per coordinate and muscle, OpenSim's sign;
- with a rigid tendon (OpenSim's muscles with ``ignore_tendon_compliance = true``, and the muscle model
  of its static optimisation): tendon length ``l_s``, fibre length ``l_M = √((L − l_s)² + h²)``
  (``h = l_opt sin φ_opt``, constant fibre height), normalised fibre length ``l_M/l_opt``,
  pennation ``φ = asin(h/l_M)``, fibre velocity ``v_M = L̇ cos φ`` and normalised fibre velocity
  ``v_M/(l_opt v_max)``. The short-fibre limits are OpenSim's ``MuscleFixedWidthPennationModel``: the
  fibre is no shorter than ``l_min = h/sin φ_max`` (``φ_max = acos 0.1``, Thelen2003Muscle's maximum
  pennation), which it takes when ``L − l_s < l_min cos φ_max``; there ``φ = φ_max``.

:meth:`MuscleAnalysisResult.write` writes the tables as OpenSim names them
(``<name>_MuscleAnalysis_Length.sto``, ``..._MomentArm_<coordinate>.sto`` and so on), angles in radians.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.errors import ConfigurationError
from mbkron.io.storage import write_storage

__all__ = ["MAXIMUM_PENNATION", "MuscleAnalysisResult", "RigidTendonFibers", "hill_arrays", "muscle_analysis",
           "rigid_tendon_fibers"]

MAXIMUM_PENNATION = float(np.arccos(0.1))
"""``φ_max``, rad: OpenSim's ``Thelen2003Muscle`` default ``maximum_pennation_angle`` (``acos 0.1``)."""


def _paths(model) -> tuple:
    """The model's muscle paths; ConfigurationError without muscles."""
    if model.muscle_set is None:
        raise ConfigurationError(f"model `{model.name}` has no muscles (add them with ModelBuilder.add_muscle)")
    return model.muscle_set.paths


def hill_arrays(model) -> dict[str, NDArray]:
    """The model's per-muscle Hill parameters as arrays of shape (n_mt,), NaN for a muscle without one.

    Keys: ``max_isometric_force``, ``optimal_fiber_length``, ``tendon_slack_length``,
    ``pennation_angle``, ``max_contraction_velocity``; ``curves`` is the tuple of each muscle's
    :class:`~mbkron.multibody.muscles.hill.ThelenCurves` (None without Hill parameters).
    """
    paths = _paths(model)
    keys = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle",
            "max_contraction_velocity")
    out = {key: np.array([np.nan if p.hill is None else getattr(p.hill, key) for p in paths], dtype=float)
           for key in keys}
    out["curves"] = tuple(None if p.hill is None else p.hill.curves for p in paths)
    return out


@dataclass(frozen=True)
class RigidTendonFibers:
    """Fibre kinematics with a rigid tendon, each of shape (..., n_mt); see :func:`rigid_tendon_fibers`."""

    fiber_length: NDArray
    normalized_fiber_length: NDArray
    pennation_angle: NDArray
    cos_pennation: NDArray
    fiber_velocity: NDArray
    normalized_fiber_velocity: NDArray
    above_minimum: NDArray
    """Where the fibre is longer than OpenSim's minimum ``l_min`` (only there does a fibre produce force)."""


def rigid_tendon_fibers(hill: dict, length: ArrayLike, velocity: ArrayLike) -> RigidTendonFibers:
    """Fibre length, pennation and fibre velocity of rigid-tendon muscles (module docstring).

    Parameters
    ----------
    hill : dict
        :func:`hill_arrays` of the model.
    length, velocity : array_like, shape (..., n_mt)
        Musculotendon length (m) and lengthening speed (m/s).
    """
    length = np.asarray(length, dtype=float)
    optimal, phi_opt = hill["optimal_fiber_length"], hill["pennation_angle"]
    height = optimal * np.sin(phi_opt)
    minimum = height / np.sin(MAXIMUM_PENNATION)
    along = length - hill["tendon_slack_length"]
    fiber = np.where(along >= minimum * np.cos(MAXIMUM_PENNATION), np.hypot(along, height), minimum)
    above = fiber > minimum
    with np.errstate(divide="ignore", invalid="ignore"):
        sine = np.where(above, height / fiber, np.sin(MAXIMUM_PENNATION))
    phi = np.where(phi_opt > np.finfo(float).eps, np.where(above, np.arcsin(np.minimum(sine, 1.0)), MAXIMUM_PENNATION),
                   0.0)
    cos_phi = np.cos(phi)
    fiber_velocity = np.asarray(velocity, dtype=float) * cos_phi
    return RigidTendonFibers(fiber, fiber / optimal, phi, cos_phi, fiber_velocity,
                             fiber_velocity / (optimal * hill["max_contraction_velocity"]), above)


@dataclass(frozen=True, eq=False)
class MuscleAnalysisResult:
    """Muscle analysis of a motion (:func:`muscle_analysis`); arrays have one row per frame.

    Attributes
    ----------
    time : ndarray, shape (n,) or None
    muscles, coordinates : tuple of str
    length, lengthening_speed : ndarray, shape (n, n_mt)
        m, m/s.
    moment_arms : ndarray, shape (n, nq, n_mt)
        ``R(q)``: m for angular coordinates, dimensionless for translational ones.
    tendon_length, fiber_length, normalized_fiber_length, pennation_angle, fiber_velocity,
    normalized_fiber_velocity : ndarray, shape (n, n_mt)
        Rigid-tendon fibre kinematics (m, –, rad, m/s, –); NaN for a path without Hill parameters.
    """

    time: NDArray | None
    muscles: tuple[str, ...]
    coordinates: tuple[str, ...]
    length: NDArray
    lengthening_speed: NDArray
    moment_arms: NDArray
    tendon_length: NDArray
    fiber_length: NDArray
    normalized_fiber_length: NDArray
    pennation_angle: NDArray
    fiber_velocity: NDArray
    normalized_fiber_velocity: NDArray

    #: OpenSim's storage name (file suffix) of each table, and the attribute holding it.
    TABLES = (("Length", "length"), ("TendonLength", "tendon_length"), ("FiberLength", "fiber_length"),
              ("NormalizedFiberLength", "normalized_fiber_length"), ("PennationAngle", "pennation_angle"),
              ("FiberVelocity", "fiber_velocity"), ("NormFiberVelocity", "normalized_fiber_velocity"))

    def tables(self) -> dict[str, NDArray]:
        """Every table by OpenSim's storage name: those of :attr:`TABLES`, ``LengtheningSpeed`` and one
        ``MomentArm_<coordinate>`` per coordinate, each (n, n_mt)."""
        out = {name: getattr(self, attribute) for name, attribute in self.TABLES}
        out["LengtheningSpeed"] = self.lengthening_speed
        out.update({f"MomentArm_{c}": self.moment_arms[:, k, :] for k, c in enumerate(self.coordinates)})
        return out

    def write(self, directory: str | Path, name: str) -> list[Path]:
        """Write every table as ``<directory>/<name>_MuscleAnalysis_<table>.sto`` (OpenSim's file names;
        columns ``time`` and the muscles; radians, ``inDegrees=no``). Columns of NaN (the fibre tables of
        a path without Hill parameters) are left out.

        Returns
        -------
        list of Path
            The files written.

        Raises
        ------
        ValueError
            If the analysis was made without ``time``.
        """
        if self.time is None:
            raise ValueError("`time` was not given to muscle_analysis: the tables cannot be written without it")
        directory = Path(directory)
        written = []
        for table, values in self.tables().items():
            keep = np.isfinite(values).all(axis=0)
            path = directory / f"{name}_MuscleAnalysis_{table}.sto"
            write_storage(path, table, [m for m, k in zip(self.muscles, keep) if k], self.time, values[:, keep])
            written.append(path)
        return written


def muscle_analysis(model, q: ArrayLike, qd: ArrayLike, *, time: ArrayLike | None = None,
                    workspace=None) -> MuscleAnalysisResult:
    """Lengths, lengthening speeds, moment arms and rigid-tendon fibre kinematics of every muscle.

    Parameters
    ----------
    model : Model
        With muscles.
    q, qd : array_like, shape (n, nq)
        Coordinates and their rates at each frame (SI units).
    time : array_like, shape (n,), optional
        The frames' times, for :meth:`MuscleAnalysisResult.write`.
    workspace : Workspace, optional
        For models with constraint groups (see :meth:`mbkron.Model.joint_variables`).

    Returns
    -------
    MuscleAnalysisResult

    Raises
    ------
    ValueError
        If ``q``/``qd`` are not (n, nq) arrays of the same shape, or ``time`` has not n values.
    ConfigurationError
        If the model has no muscles.
    """
    q = np.asarray(q, dtype=float)
    qd = np.asarray(qd, dtype=float)
    if q.ndim != 2 or q.shape[1] != model.nq or qd.shape != q.shape:
        raise ValueError(f"`q` and `qd` must both have shape (n, {model.nq}) (one row per frame), got {q.shape} "
                         f"and {qd.shape}")
    if time is not None:
        time = np.asarray(time, dtype=float).reshape(-1)
        if time.size != q.shape[0]:
            raise ValueError(f"`time` must have {q.shape[0]} values (one per frame), got {time.size}")
    hill = hill_arrays(model)
    length = model.muscle_lengths(q, workspace=workspace)
    arms = model.moment_arms(q, workspace=workspace)
    speed = -np.einsum("nkm,nk->nm", arms, qd)
    fibers = rigid_tendon_fibers(hill, length, speed)
    tendon = np.broadcast_to(hill["tendon_slack_length"], length.shape).copy()
    return MuscleAnalysisResult(time, model.muscles, model.coordinates, length, speed, arms, tendon,
                                fibers.fiber_length, fibers.normalized_fiber_length, fibers.pennation_angle,
                                fibers.fiber_velocity, fibers.normalized_fiber_velocity)
