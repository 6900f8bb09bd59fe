"""Joint reaction forces and moments along a trial, with OpenSim ``JointReaction``'s conventions.

For every joint of the model, at every frame, the wrench the joint exerts on its child body: Newton–Euler
on the subtree below the joint (:mod:`mbkron.algorithms.dynamics.reactions`) with the trial's ``q``, ``q̇``, ``q̈``,
gravity, the model's own loads (every load the inverse dynamics includes: path springs' tensions at their
path points, :func:`model_loads`), the external loads (:mod:`mbkron.analysis.external_loads`) and,
optionally, muscle tensions (e.g. from static optimisation) applied at their path points. It is the
*net* joint wrench: constraint forces plus what acts inside the joint — the joint's actuation (the part of
the inverse-dynamics ``τ`` the muscles do not provide) and the loads that are generalized forces
(coordinate limit forces, joint torques, generalized forces) — OpenSim's
``calcReactionOnChildExpressedInGround`` in an analysis whose actuators reproduce the motion (OpenSim
applies those loads as mobility forces, which its reactions include, and path springs as forces on bodies).

Conventions (OpenSim's ``JointReaction`` defaults, ``apply_on_bodies = child``):

- **on** the child body of the joint;
- **about** the origin of the joint's frame on the child (OpenSim's point of application). For a joint of
  an imported ``.osim`` model, mbkron's chain of massless axis bodies ``<joint>.<axis>`` ends at that
  frame, so it is the origin of the child's parent axis body; for other joints (a fixed or single-body
  joint) the origin of the child body's frame;
- **expressed in** ``frame``: ``"ground"`` (default), ``"child"`` (the child body's frame) or
  ``"parent"`` (the frame of the first body above the joint that is not an axis body); the point of
  application is given in that frame too.

Columns are named as OpenSim names them: ``<joint>_on_<child>_in_<frame>_fx … _mz, _px … _pz``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.analysis.external_loads import ExternalLoads, PerFrame, body_loads, frame_loads, trial_model_loads
from mbkron.analysis.motion import TrialKinematics
from mbkron.multibody import loads as load_records
from mbkron.io.storage import write_storage
from mbkron.algorithms.paths.forces import path_set, path_tension_and_moment_arms
from mbkron.multibody.muscles.springs import PathForce

__all__ = ["JointReactionLoads", "joint_reactions", "model_loads", "path_loads"]

FRAMES = ("ground", "child", "parent")
"""The frames a reaction can be expressed in."""
STORAGE_NAME = "Joint Reaction Loads"


@dataclass(frozen=True, eq=False)
class JointReactionLoads:
    """The joint reactions along a trial.

    Attributes
    ----------
    time : ndarray, shape (n,)
    joints, children, parents : tuple of str
        Per reported joint: its name, its child body, the body its parent frame belongs to.
    force, moment : ndarray, shape (n, n_joints, 3)
        On the child, N and N·m about ``point``, expressed in ``frame``.
    point : ndarray, shape (n, n_joints, 3)
        The point of application in ``frame``, m.
    frame : str
    """

    time: NDArray[np.float64]
    joints: tuple[str, ...]
    children: tuple[str, ...]
    parents: tuple[str, ...]
    force: NDArray[np.float64]
    moment: NDArray[np.float64]
    point: NDArray[np.float64]
    frame: str

    @property
    def labels(self) -> tuple[str, ...]:
        """OpenSim's column labels, nine per joint."""
        labels = []
        for joint, child, parent in zip(self.joints, self.children, self.parents):
            frame = {"ground": "ground", "child": child, "parent": parent}[self.frame]
            labels += [f"{joint}_on_{child}_in_{frame}_{kind}{axis}" for kind in "fmp" for axis in "xyz"]
        return tuple(labels)

    @property
    def table(self) -> NDArray[np.float64]:
        """The values, shape (n, 9 n_joints), in the order of :attr:`labels`."""
        return np.concatenate([self.force, self.moment, self.point], axis=-1).reshape(self.time.size, -1)

    def write(self, path: str | Path) -> None:
        """Write as an OpenSim ``.sto`` (atomically)."""
        write_storage(path, STORAGE_NAME, self.labels, self.time, self.table)


def _is_axis(name: str) -> bool:
    """A massless axis body of an imported OpenSim joint (``<joint>.<axis>``)."""
    return "." in name


def _joint_layout(model) -> tuple[list, list, list, list, list]:
    """Per reported body (not an axis body): joint name, body index, point body (index, -1: its own origin),
    parent body index (-1: ground), parent name."""
    bodies, joints, points, parents, parent_names = [], [], [], [], []
    for index, record in enumerate(model.body_records):
        if _is_axis(record.name):
            continue
        above = record.parent
        axis = _is_axis(above)
        joint = record.joint_name or (above.split(".")[0] if axis else record.name)
        while _is_axis(above):
            above = model.body_records[model.body_index(above)].parent
        bodies.append(index)
        joints.append(joint)
        points.append(model.body_index(record.parent) if axis else index)
        parents.append(-1 if above == "ground" else model.body_index(above))
        parent_names.append(above)
    return joints, bodies, points, parents, parent_names


def path_loads(model, kin, muscle_set, tensions: NDArray[np.float64]) -> tuple:
    """Tensions (n, n_paths) along the paths of ``muscle_set`` as loads on the bodies they pull: per body a
    :class:`~mbkron.multibody.loads.PointForce` at its origin and a :class:`~mbkron.multibody.loads.BodyTorque`
    (the moment about the origin), values per frame.

    The forces are ``F f_j`` at the path points and, on a wrapped path, at the tangent points on the wrap's
    body (:meth:`~mbkron.algorithms.paths.paths.MuscleSet.path_points`, Eq. 161). A moving point's sliding term of
    ``R`` is no force on a body: its generalized force stays in the net joint wrench.
    """
    nodes = muscle_set.path_points(kin)
    forces = nodes.forces * tensions[..., nodes.muscles][..., None]
    bodies, points = nodes.bodies, nodes.positions
    loads = []
    for b in np.unique(bodies[bodies < model.nb]):  # (the ground is body nb)
        on = bodies == b
        origin = kin.T[..., b, :3, 3]
        force = forces[..., on, :].sum(axis=-2)
        moment = np.cross(points[..., on, :] - origin[..., None, :], forces[..., on, :]).sum(axis=-2)
        name = model.bodies[b]
        loads += [load_records.PointForce(name, np.zeros(3), PerFrame(force)),
                  load_records.BodyTorque(name, PerFrame(moment))]
    return tuple(loads)


def muscle_loads(model, kin, muscle_forces: NDArray[np.float64]) -> tuple:
    """Muscle tensions (n, n_muscles) as loads on the bodies of their paths (:func:`path_loads`)."""
    muscle_set = model.muscle_set
    forces = np.asarray(muscle_forces, dtype=float)
    if muscle_set is None or forces.shape != kin.q.shape[:-1] + (muscle_set.size,):
        count = 0 if muscle_set is None else muscle_set.size
        raise ValueError(f"`muscle_forces` must have shape {kin.q.shape[:-1] + (count,)} (a tension per frame and "
                         f"muscle of model `{model.name}`), got {forces.shape}")
    return path_loads(model, kin, muscle_set, forces)


def model_loads(model, kin, qd: NDArray[np.float64]) -> tuple:
    """``model.loads`` as the Newton–Euler of :mod:`mbkron.algorithms.dynamics.reactions` takes them: a path force
    (:class:`~mbkron.multibody.muscles.springs.PathForce`: a path spring, a ligament) becomes its tension along its path (:func:`path_loads`,
    the tension of Eq. 192's ``R T`` at the frames' lengths and speeds); contact forces are left out with a
    warning (:func:`~mbkron.analysis.external_loads.trial_model_loads`); the other loads are kept."""
    loads = []
    for load in trial_model_loads(model, "joint reactions"):
        if isinstance(load, PathForce):
            tension, _ = path_tension_and_moment_arms(model, load, kin, qd)
            loads += path_loads(model, kin, path_set(model, load), tension[..., None])
        else:
            loads.append(load)
    return tuple(loads)


def joint_reactions(model, kinematics: TrialKinematics, external_loads: ExternalLoads | None = None,
                    muscle_forces: NDArray[np.float64] | None = None, frame: str = "ground", *,
                    workspace=None) -> JointReactionLoads:
    """Joint reactions at every frame of a trial, in one vectorised evaluation (module docstring).

    Parameters
    ----------
    model : Model
    kinematics : TrialKinematics
    external_loads : ExternalLoads, optional
    muscle_forces : array_like, shape (n, n_muscles), optional
        Musculotendon tensions at the frames, N (e.g. static optimisation's).
    frame : {"ground", "child", "parent"}

    Returns
    -------
    JointReactionLoads
    """
    if frame not in FRAMES:
        raise ValueError(f"`frame` must be one of {', '.join(FRAMES)}, got {frame!r}")
    q, qd, qdd = kinematics.q, kinematics.qd, kinematics.qdd
    kin = model.kinematics(q, 1, workspace=workspace)
    loads = model_loads(model, kin, qd)
    if external_loads is not None:
        loads += body_loads(model, kin, frame_loads(model, kin, external_loads, kinematics.time, kinematics.spline))
    if muscle_forces is not None:
        loads += muscle_loads(model, kin, muscle_forces)
    net = model.joint_reactions(q, qd, qdd, loads=loads, workspace=workspace)
    joints, bodies, points, parents, parent_names = _joint_layout(model)
    force = net.force[:, bodies]
    origin = kin.T[:, bodies][..., :3, 3]
    point = kin.T[:, points][..., :3, 3]
    moment = net.moment[:, bodies] + np.cross(origin - point, force)  # about the joint frame's origin
    if frame != "ground":
        rows = bodies if frame == "child" else parents
        R = np.where(np.array(rows)[None, :, None, None] >= 0, kin.T[:, rows][..., :3, :3], np.eye(3))
        o = np.where(np.array(rows)[None, :, None] >= 0, kin.T[:, rows][..., :3, 3], 0.0)
        inverse = np.swapaxes(R, -1, -2)
        force, moment = (inverse @ force[..., None])[..., 0], (inverse @ moment[..., None])[..., 0]
        point = (inverse @ (point - o)[..., None])[..., 0]
    children = tuple(model.bodies[b] for b in bodies)
    return JointReactionLoads(kinematics.time, tuple(joints), children, tuple(parent_names), force, moment, point,
                              frame)
