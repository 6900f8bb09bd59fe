"""Inverse dynamics of a trial, as OpenSim's ``InverseDynamicsTool`` computes it, for all frames at once.

At every frame, the generalized forces that produce the trial's accelerations (Eq. 198):

    τ = M(q) q̈ + N(q, q̇) q̇ − G(q) − Q_loads(q, q̇) − Q_ext(t, q)

with the model's own loads (springs, drives; muscles are not loads; contact forces are left out with a
warning: the measured external loads stand for them, :func:`~mbkron.analysis.external_loads.trial_model_loads`)
in ``Q_loads`` and the external
loads (:mod:`mbkron.analysis.external_loads`) in ``Q_ext`` (Eq. 46). ``q``, ``q̇``, ``q̈`` come from
:func:`mbkron.analysis.motion.trial_kinematics` (OpenSim's padding, low-pass filter and quintic
splines). OpenSim's ``calcResidualForceIgnoringConstraints`` is the same equation: constraints are
ignored, and mbkron's coordinates are OpenSim's independent unlocked ones, so each ``τ_k`` is the
generalized force of coordinate ``k``.

Columns are named as OpenSim names them, ``<coordinate>_moment`` (N·m) for a rotational coordinate and
``<coordinate>_force`` (N) for a translational one, in the model's coordinate order (OpenSim writes
them in its multibody-tree order; compare by name).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.analysis.external_loads import ExternalLoads, FrameLoads, frame_loads, generalized_forces, trial_model_loads
from mbkron.analysis.motion import TrialKinematics
from mbkron.io.storage import write_storage

__all__ = ["InverseDynamics", "generalized_force_labels", "inverse_dynamics"]

STORAGE_NAME = "Inverse Dynamics Generalized Forces"
"""The name OpenSim gives the table of generalized forces (first line of the ``.sto``)."""


@dataclass(frozen=True, eq=False)
class InverseDynamics:
    """The generalized forces along a trial.

    Attributes
    ----------
    time : ndarray, shape (n,)
    tau : ndarray, shape (n, nq)
        N·m for angles, N for lengths, model coordinate order.
    labels : tuple of str
        ``<coordinate>_moment`` or ``<coordinate>_force`` per column.
    kinematics : TrialKinematics
    loads : FrameLoads or None
        The external loads at the frames (None without).
    """

    time: NDArray[np.float64]
    tau: NDArray[np.float64]
    labels: tuple[str, ...]
    kinematics: TrialKinematics
    loads: FrameLoads | None

    def write(self, path: str | Path) -> None:
        """Write the generalized forces as an OpenSim ``.sto`` (atomically; OpenSim reads it)."""
        write_storage(path, STORAGE_NAME, self.labels, self.time, self.tau)


def generalized_force_labels(model) -> tuple[str, ...]:
    """OpenSim's column names of the generalized forces: ``<coordinate>_moment`` or ``_force``."""
    return tuple(f"{c.name}_{'moment' if c.unit == 'rad' else 'force'}" for c in model.coordinate_records)


def inverse_dynamics(model, kinematics: TrialKinematics, external_loads: ExternalLoads | None = None,
                     *, workspace=None) -> InverseDynamics:
    """``τ`` at every frame of a trial, in one vectorised evaluation (module docstring).

    Parameters
    ----------
    model : Model
    kinematics : TrialKinematics
        Of ``model`` (:func:`mbkron.analysis.motion.trial_kinematics`).
    external_loads : ExternalLoads, optional
        :func:`mbkron.analysis.external_loads.external_loads`.
    workspace : Workspace, optional
        For models with constraint groups (:meth:`mbkron.Model.workspace`).

    Returns
    -------
    InverseDynamics

    Raises
    ------
    ValueError
        If ``kinematics`` is not of ``model`` (its coordinates differ), or a load names an unknown body.
    """
    if tuple(kinematics.coordinates) != tuple(model.coordinates):
        raise ValueError(f"`kinematics` has the coordinates {', '.join(kinematics.coordinates)}; model "
                         f"`{model.name}` has {', '.join(model.coordinates)}")
    q, qd, qdd = kinematics.q, kinematics.qd, kinematics.qdd
    tau = model.inverse_dynamics(q, qd, qdd, loads=trial_model_loads(model, "inverse dynamics"), workspace=workspace)
    loads = None
    if external_loads is not None:
        kin = model.kinematics(q, 1, workspace=workspace)
        loads = frame_loads(model, kin, external_loads, kinematics.time, kinematics.spline)
        tau = tau - generalized_forces(model, kin, loads)
    return InverseDynamics(kinematics.time, tau, generalized_force_labels(model), kinematics, loads)
