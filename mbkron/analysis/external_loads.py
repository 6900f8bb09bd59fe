"""External loads (ground reactions) along a trial, applied as OpenSim's ``ExternalForce`` applies them.

For each force of an ExternalLoads file (:mod:`mbkron.io.osim.external_loads`), OpenSim's
``ExternalForce`` makes functions of time of the three force, point and torque columns of the data
file: a cubic GCV spline of error variance 0 (the natural interpolating cubic spline; ``GCVSpline(3,
…)``) when the file has four rows or more, a piecewise-linear function for two or three rows, a
constant for one. The data are not filtered (the ``InverseDynamicsTool``'s low-pass applies to the
coordinates only). At each frame ``t`` and configuration ``q``:

- the force ``F`` and the torque ``τ`` are given in ``force_expressed_in_body`` ``E``: in ground
  ``F₀ = R_E F``, ``τ₀ = R_E τ``;
- the point ``p`` is given in ``point_expressed_in_body`` ``P``; the force acts at the point of the
  applied body ``A`` that is there at that instant, ``p_A = T_A⁻¹ T_P p`` (a point in ground, like a
  centre of pressure, moves over the foot); without a point identifier at ``A``'s origin;
- the generalized force is the virtual work of the wrench (Eq. 46, 180):
  ``Q = (∂p/∂q)ᵀ F₀ + (∂ω_A/∂q̇)ᵀ τ₀`` with the point Jacobian at ``p_A`` and the angular-velocity
  Jacobian of ``A``, evaluated for all frames at once from one batched kinematics.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody import loads as load_records
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.multibody.hunt_crossley import HuntCrossley
from mbkron.algorithms.dynamics.points import jacobians
from mbkron.io.osim.external_loads import ExternalForceSpec, ExternalLoadsSpec, read_external_loads
from mbkron.analysis.motion import splines
from mbkron.io.storage import Storage, StorageError, read_storage

__all__ = ["CONTACT_LOADS", "ExternalLoads", "FrameLoads", "PerFrame", "external_loads", "frame_loads", "generalized_forces",
           "body_loads", "trial_model_loads",
           "time_slack"]

_GROUND = "ground"


@dataclass(frozen=True, eq=False)
class ExternalLoads:
    """An ExternalLoads description bound to its data: ``(spec, columns)`` per force.

    Attributes
    ----------
    spec : ExternalLoadsSpec
    data : Storage
        The data file's table.
    columns : tuple of dict
        Per force, ``{"force"|"point"|"torque": (3,) column indices}`` of the identifiers given.
    source : str
        The data file's path as given (for messages), or the table's own name when it was passed read.
    """

    spec: ExternalLoadsSpec
    data: Storage
    columns: tuple[dict, ...]
    source: str = ""

    @property
    def forces(self) -> tuple[ExternalForceSpec, ...]:
        """The description's forces, in the order of :attr:`columns`."""
        return self.spec.forces


@dataclass(frozen=True, eq=False)
class FrameLoads:
    """The external loads at the frames of a trial, in ground, ready to apply.

    Attributes
    ----------
    time : ndarray, shape (n,)
    bodies : tuple of str
        The applied-to body of each force.
    force, torque : ndarray, shape (n, n_forces, 3)
        In ground, N and N·m (zero where not applied).
    point : ndarray, shape (n, n_forces, 3)
        The point of application in the applied body's frame, m.
    """

    time: NDArray[np.float64]
    bodies: tuple[str, ...]
    force: NDArray[np.float64]
    point: NDArray[np.float64]
    torque: NDArray[np.float64]


def external_loads(loads: str | Path | ExternalLoadsSpec, data: str | Path | Storage | None = None) -> ExternalLoads:
    """Read an ExternalLoads file (or take its description) and its data file, checked against each other.

    Parameters
    ----------
    loads : path-like or ExternalLoadsSpec
    data : path-like or Storage, optional
        The data (``.mot``/``.sto``); the description's ``datafile`` by default.

    Raises
    ------
    ExternalLoadsError
        For the XML file (see :func:`mbkron.io.osim.external_loads.read_external_loads`).
    StorageError
        If the data file cannot be read, or an identifier does not select exactly three of its columns
        (the force, the identifier and the columns found are named).
    """
    spec = loads if isinstance(loads, ExternalLoadsSpec) else read_external_loads(loads)
    if data is None:
        if spec.datafile is None:
            raise ValueError(f"`data` is needed: {spec.source} names no data file")
        data = spec.datafile
    table = data if isinstance(data, Storage) else read_storage(data)
    where = str(data) if not isinstance(data, Storage) else table.name
    columns, problems = [], []
    for force in spec.forces:
        found = {}
        for kind in ("force", "point", "torque"):
            identifier = getattr(force, f"{kind}_identifier")
            if identifier is None:
                continue
            indices = [i for i, label in enumerate(table.labels) if label.startswith(identifier)]
            if len(indices) != 3:
                problems.append(f"ExternalForce `{force.name}`: {kind}_identifier `{identifier}` selects "
                                f"{len(indices)} column(s) ({', '.join(table.labels[i] for i in indices) or 'none'}); "
                                "expected exactly 3 (x, y, z) whose labels start with it")
            found[kind] = np.array(indices)
        columns.append(found)
    if problems:
        raise StorageError(f"{where}: " + "; ".join(problems))
    return ExternalLoads(spec, table, tuple(columns), where)


def _functions_of_time(time: NDArray[np.float64], values: NDArray[np.float64], frames: NDArray[np.float64],
                       method: str) -> NDArray[np.float64]:
    """``ExternalForce``'s functions of the columns ``values`` (m, k) evaluated at ``frames``: a cubic GCV spline
    (four rows or more), piecewise linear (two or three), constant (one)."""
    if time.size == 1:
        return np.broadcast_to(values[0], (frames.size, values.shape[1])).copy()
    if time.size <= 3:
        return np.column_stack([_linear(time, values[:, k], frames) for k in range(values.shape[1])])
    return splines(time, values, 2, method)(frames)


def _linear(x: NDArray, y: NDArray, t: NDArray) -> NDArray:
    """Piecewise linear, extended linearly beyond the ends (OpenSim's ``PiecewiseLinearFunction``)."""
    i = np.clip(np.searchsorted(x, t, side="right") - 1, 0, x.size - 2)
    return y[i] + (y[i + 1] - y[i]) / (x[i + 1] - x[i]) * (t - x[i])


def _rotation(kin, model, body: str) -> NDArray[np.float64] | None:
    return None if body == _GROUND else kin.T[..., model.body_index(body), :3, :3]


def frame_loads(model, kin, loads: ExternalLoads, time: NDArray[np.float64], spline: str = "natural") -> FrameLoads:
    """The loads at the frames ``time`` with the model's configurations ``kin`` (module docstring).

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        Of ``model`` at the frames' ``q``, shape (n, nq), order ≥ 0.
    loads : ExternalLoads
    time : ndarray, shape (n,)
        Within the data file's time span, give or take :func:`time_slack` (round-off of the frames'
        times: the loads' splines are continued there, as OpenSim's are).
    spline : {"natural", "gcvspl"}
        How the cubic splines are fitted (:func:`mbkron.analysis.motion.splines`).

    Raises
    ------
    ValueError
        If a force names a body the model does not have (the force and the field are named), or a frame
        is outside the data's time span.
    """
    time = np.asarray(time, dtype=float)
    _check_bodies(model, loads.forces)
    data = loads.data
    slack = time_slack(data.time)
    if time.size and (time[0] < data.time[0] - slack or time[-1] > data.time[-1] + slack):
        raise ValueError(f"the frames ({time[0]:.9g} to {time[-1]:.9g} s) are not all within the external loads' "
                         f"data `{loads.source or data.name}` ({data.time[0]:.9g} to {data.time[-1]:.9g} s)")
    n, count = time.size, len(loads.forces)
    force, point, torque = (np.zeros((n, count, 3)) for _ in range(3))
    used = sorted({int(i) for columns in loads.columns for cols in columns.values() for i in cols})
    evaluated = np.zeros((time.size, len(data.labels)))
    evaluated[:, used] = _functions_of_time(data.time, data.values[:, used], time, spline)  # all columns at once
    for j, (spec, columns) in enumerate(zip(loads.forces, loads.columns)):
        at = {kind: evaluated[:, cols] for kind, cols in columns.items()}
        expressed = _rotation(kin, model, spec.force_expressed_in_body)
        for kind, target in (("force", force), ("torque", torque)):
            if kind in at:
                target[:, j] = at[kind] if expressed is None else (expressed @ at[kind][..., None])[..., 0]
        if spec.applied_to_body != _GROUND and "point" in at:
            in_ground = at["point"]
            if spec.point_expressed_in_body != _GROUND:
                T = kin.T[..., model.body_index(spec.point_expressed_in_body), :, :]
                in_ground = (T[..., :3, :3] @ in_ground[..., None])[..., 0] + T[..., :3, 3]
            T = kin.T[..., model.body_index(spec.applied_to_body), :, :]
            point[:, j] = (np.swapaxes(T[..., :3, :3], -1, -2) @ (in_ground - T[..., :3, 3])[..., None])[..., 0]
    return FrameLoads(time, tuple(spec.applied_to_body for spec in loads.forces), force, point, torque)


def time_slack(time: NDArray[np.float64]) -> float:
    """How far, s, frames may lie outside data sampled at ``time``: 1 % of its smallest step (0 for one row).

    A motion's times printed with a few decimals make OpenSim's resampled frames drift from the printed
    times (:mod:`mbkron.analysis.motion`: accumulated steps): a trial starting at 0 s has its first frame
    at −5e-7 s (opensim-models' Gait10dof18musc, 8 decimals). OpenSim evaluates its force splines there
    (continuing the end polynomial); so does :func:`frame_loads`, within this slack, which such drifts stay
    far below (about 1e-8 s per row of the motion) while a frame truly outside the data is refused.
    """
    return 0.01 * float(np.min(np.diff(time))) if time.size > 1 else 0.0


def _check_bodies(model, forces: tuple[ExternalForceSpec, ...]) -> None:
    known = set(model.bodies) | {_GROUND}
    problems = [f"ExternalForce `{spec.name}`: `{field}` names `{getattr(spec, field)}`, which is not a body of "
                f"model `{model.name}`" for spec in forces
                for field in ("applied_to_body", "force_expressed_in_body", "point_expressed_in_body")
                if getattr(spec, field) not in known]
    if problems:
        raise ValueError("; ".join(problems) + f" (its bodies: ground, {', '.join(model.bodies)})")


def generalized_forces(model, kin, loads: FrameLoads) -> NDArray[np.float64]:
    """Generalized forces of the loads at the frames by virtual work (Eq. 46, 180), shape (n, nq).

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        Of ``model`` at the frames, order ≥ 1.
    loads : FrameLoads
    """
    Q = np.zeros(kin.q.shape)
    # a load on the ground moves nothing
    applied = [(j, model.body_index(body)) for j, body in enumerate(loads.bodies) if body != _GROUND]
    if not applied:
        return Q
    points = []
    for j, b in applied:  # the points in the ground frame
        T = kin.T[..., b, :, :]
        points.append((T[..., :3, :3] @ loads.point[:, j, :, None])[..., 0] + T[..., :3, 3])
    J = jacobians(model, kin, [b for _, b in applied], np.stack(points, axis=-2))  # one call for every load
    for row, (j, _) in enumerate(applied):
        Q += np.einsum("...xk,...x->...k", J[..., row, :3, :], loads.force[:, j])
        Q += np.einsum("...xk,...x->...k", J[..., row, 3:, :], loads.torque[:, j])
    return Q


def body_loads(model, kin, loads: FrameLoads) -> tuple:
    """The loads as :mod:`mbkron.algorithms.dynamics.loads` loads for :meth:`mbkron.Model.joint_reactions`: per force,
    a :class:`~mbkron.multibody.loads.PointForce` at the body's origin and a
    :class:`~mbkron.multibody.loads.BodyTorque` with the torque plus the moment of the force about the
    origin (the same wrench), both in ground, their values (n, 3) per frame."""
    result = []
    for j, body in enumerate(loads.bodies):
        if body == _GROUND:
            continue
        T = kin.T[..., model.body_index(body), :, :]
        lever = (T[..., :3, :3] @ loads.point[:, j, :, None])[..., 0]
        force, moment = loads.force[:, j], loads.torque[:, j] + np.cross(lever, loads.force[:, j])
        result.append(load_records.PointForce(body, np.zeros(3), PerFrame(force)))
        result.append(load_records.BodyTorque(body, PerFrame(moment)))
    return tuple(result)


@dataclass(frozen=True, eq=False)
class PerFrame:
    """A load value known at every frame: ``value(t, q, qd)`` returns the (n, 3) array."""

    values: NDArray[np.float64]

    def __call__(self, t, q, qd) -> NDArray[np.float64]:
        return self.values


#: The model loads that stand for contact with the surroundings (:mod:`mbkron.algorithms.dynamics.contact`,
#: :mod:`mbkron.algorithms.dynamics.hunt_crossley`).
CONTACT_LOADS = (SmoothSphereHalfSpace, HuntCrossley)


def trial_model_loads(model, analysis: str) -> tuple:
    """``model.loads`` for an analysis of measured motion (``analysis`` names it in the warning): without its
    contact forces, which the measured external loads stand for (OpenSim's setups leave them out with
    ``forces_to_exclude``; included, they would count the ground's push twice), with a warning naming them."""
    contact = [load for load in model.loads if isinstance(load, CONTACT_LOADS)]
    if not contact:
        return model.loads
    names = ", ".join(f"`{getattr(load, 'name', type(load).__name__)}`" for load in contact)
    warnings.warn(f"model `{model.name}`: its {len(contact)} contact force(s) ({names}) are left out of the {analysis}: "
                  "the external loads measured in the trial stand for the contact (as OpenSim's setups leave them out "
                  "with forces_to_exclude)", UserWarning, stacklevel=3)
    return tuple(load for load in model.loads if not isinstance(load, CONTACT_LOADS))
