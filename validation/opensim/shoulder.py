"""The Holzbaur (2005) shoulder in OpenSim 4.x, built from the same data as ``models/shoulder_rhythm.toml``.

Built with the 4.x API from :func:`validation.shoulder_data.load_shoulder` (the README of the
reference data warns that loading the old OpenSim 1.9 file drops rotations), wrapping removed:

- each SIMM joint is a ``CustomJoint`` whose rotations (about the data's axes, in order) use one
  OpenSim coordinate each; the three independent coordinates (elv_angle, shoulder_elv,
  shoulder_rot) are those of the humeral joints, every other one is tied to them by a
  ``CoordinateCouplerConstraint`` with a ``LinearFunction`` (the rhythm functions are linear through
  zero). States are set with every dependent value computed here (exactly, no assembly);
- a moving via point whose components are one spline each is a ``MovingPathPoint`` with
  ``SimmSpline`` functions (x in radians, the base point added to the knots' y); DELT2's point,
  whose components are sums of two splines of different coordinates, is a fixed point on a chain
  of two massless bodies translated by the splines (the seed's zero-inertia-body form);
- phantom frames are bodies with a negligible mass (1e-6 kg), which kinematics do not use.

Only rhythm variant A (one coordinate per rhythm function) is built.
"""

from __future__ import annotations

import numpy as np
import opensim as osim

from validation.shoulder_data import Shoulder, load_shoulder

__all__ = ["OpenSimShoulder"]

PHANTOM_MASS = 1e-6


def _spline(x_deg: np.ndarray, y: np.ndarray, shift: float = 0.0) -> osim.SimmSpline:
    spline = osim.SimmSpline()
    for x, value in zip(np.deg2rad(x_deg), y):
        spline.addPoint(float(x), float(value + shift))
    return spline


def _unused_axes(axes: list) -> list:
    """Axes for a CustomJoint's unused rotations, independent of the used ones (OpenSim rejects collinear axes)."""
    basis = list(axes)
    for candidate in np.eye(3):
        if len(basis) == 3:
            break
        if np.linalg.matrix_rank(np.array(basis + [candidate]), tol=1e-6) == len(basis) + 1:
            basis.append(candidate)
    return basis[len(axes):]


def _names(*names: str) -> osim.ArrayStr:
    array = osim.ArrayStr()
    for name in names:
        array.append(name)
    return array


class OpenSimShoulder:
    """The OpenSim model and its state, with helpers to set a pose and read poses, lengths, moment arms.

    Parameters
    ----------
    shoulder : Shoulder, optional
        Variant A data (default: :func:`load_shoulder`).
    """

    INDEPENDENT = ("elv_angle", "shoulder_elv", "shoulder_rot")

    def __init__(self, shoulder: Shoulder | None = None):
        shoulder = load_shoulder("A") if shoulder is None else shoulder
        self.shoulder = shoulder
        model = osim.Model()
        model.setName("shoulder_rhythm_opensim")
        self.frames = {"thorax": model.getGround()}
        self.dependent: dict[str, tuple[str, float]] = {}  # coordinate -> (independent, slope)
        owner = {}  # first joint rotation using each independent coordinate owns it
        for joint in shoulder.joints:
            transform = osim.SpatialTransform()
            names = []
            for k, rotation in enumerate(joint.rotations):
                ((coordinate, slope),) = rotation.slopes.items()
                if coordinate in self.INDEPENDENT and slope == 1.0 and coordinate not in owner:
                    name = owner[coordinate] = coordinate
                else:
                    name = f"{joint.name}_{rotation.dof}"
                    self.dependent[name] = (coordinate, slope)
                names.append(name)
                axis = transform.updTransformAxis(k)
                axis.setCoordinateNames(_names(name))
                axis.setAxis(osim.Vec3(*rotation.axis))
                axis.set_function(osim.LinearFunction(1.0, 0.0))  # set_*: copies (setFunction adopts)
            for k, axis in enumerate(_unused_axes([r.axis for r in joint.rotations])):
                transform.updTransformAxis(len(joint.rotations) + k).setAxis(osim.Vec3(*axis))
            for k in range(3):
                transform.updTransformAxis(3 + k).set_function(osim.Constant(float(joint.translation[k])))
            mass, com, inertia = shoulder.inertia.get(joint.child, (PHANTOM_MASS, np.zeros(3), np.eye(3) * PHANTOM_MASS))
            body = osim.Body(joint.child, mass, osim.Vec3(*com),
                             osim.Inertia(inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2], inertia[1, 2]))
            model.addBody(body)
            parent = self.frames[joint.parent]
            model.addJoint(osim.CustomJoint(joint.name, parent, osim.Vec3(0), osim.Vec3(0), body, osim.Vec3(0),
                                            osim.Vec3(0), transform))
            self.frames[joint.child] = body
        for name, (independent, slope) in self.dependent.items():
            coupler = osim.CoordinateCouplerConstraint()
            coupler.setName(f"{name}_coupler")
            coupler.setIndependentCoordinateNames(_names(independent))
            coupler.setDependentCoordinateName(name)
            coupler.setFunction(osim.LinearFunction(slope, 0.0))
            model.addConstraint(coupler)
        for muscle in shoulder.muscles:
            actuator = osim.Thelen2003Muscle(muscle.name, muscle.max_isometric_force, muscle.optimal_fiber_length,
                                             muscle.tendon_slack_length, float(np.deg2rad(muscle.pennation_angle_deg)))
            for n, point in enumerate(muscle.points):
                self._add_point(model, actuator, f"{muscle.name}-P{n + 1}", point)
            model.addForce(actuator)
        model.finalizeConnections()
        self.state = model.initSystem()
        self.model = model
        self.coordinates = {c.getName(): c for c in (model.getCoordinateSet().get(i)
                                                     for i in range(model.getCoordinateSet().getSize()))}
        self.muscles = [model.getMuscles().get(m.name) for m in shoulder.muscles]

    def _add_point(self, model, actuator, name, point) -> None:
        frame = self.frames[point.body]
        if not point.moving:
            actuator.addNewPathPoint(name, frame, osim.Vec3(*point.base))
            return
        path = actuator.updGeometryPath()
        if all(len(o) == 1 for o in point.offsets):
            moving = osim.MovingPathPoint()
            moving.setName(name)
            moving.setParentFrame(frame)
            setters = (moving.set_x_location, moving.set_y_location, moving.set_z_location)
            coordinates = (moving.setXCoordinate, moving.setYCoordinate, moving.setZCoordinate)
            for axis, ((coordinate, x, y),) in enumerate(point.offsets):
                setters[axis](_spline(x, y, point.base[axis]))
                coordinates[axis](model.getCoordinateSet().get(coordinate))
            path.updPathPointSet().adoptAndAppend(moving)
            return
        # sums of splines of different coordinates: a chain of massless translated bodies
        parent, location = frame, osim.Vec3(*point.base)
        for k in range(len(point.offsets[0])):
            (coordinate, _, _), = {o[k][0]: o[k] for o in point.offsets}.values()
            body = osim.Body(f"{name}_{k}", PHANTOM_MASS, osim.Vec3(0), osim.Inertia(PHANTOM_MASS))
            transform = osim.SpatialTransform()
            dependent = f"{name}_{k}_{coordinate}"
            for axis in range(3):
                _, x, y = point.offsets[axis][k]
                translation = transform.updTransformAxis(3 + axis)
                translation.setCoordinateNames(_names(dependent))
                translation.set_function(_spline(x, y))
            model.addBody(body)
            model.addJoint(osim.CustomJoint(f"{name}_{k}_joint", parent, location, osim.Vec3(0), body, osim.Vec3(0),
                                            osim.Vec3(0), transform))
            self.dependent[dependent] = (coordinate, 1.0)
            parent, location = body, osim.Vec3(0)
        actuator.addNewPathPoint(name, parent, location)

    # ------------------------------------------------------------------ evaluation
    def set_pose(self, q: np.ndarray) -> None:
        """Set the independent coordinates (rad, in :attr:`INDEPENDENT` order) and every dependent one."""
        values = dict(zip(self.INDEPENDENT, map(float, q)))
        for name, value in values.items():
            self.coordinates[name].setValue(self.state, value, False)
        for name, (independent, slope) in self.dependent.items():
            self.coordinates[name].setValue(self.state, slope * values[independent], False)
        self.model.realizePosition(self.state)

    def lengths(self) -> np.ndarray:
        return np.array([m.getLength(self.state) for m in self.muscles])

    def moment_arms(self) -> np.ndarray:
        """``computeMomentArm`` for every (independent coordinate, muscle), shape (3, n_muscles)."""
        return np.array([[m.getGeometryPath().computeMomentArm(self.state, self.coordinates[c]) for m in self.muscles]
                         for c in self.INDEPENDENT])

    def pose(self, body: str) -> np.ndarray:
        """The 4×4 transform of a body in the ground (thorax) frame."""
        transform = self.frames[body].getTransformInGround(self.state)
        R, p = transform.R(), transform.p()
        out = np.eye(4)
        out[:3, :3] = [[R.get(i, j) for j in range(3)] for i in range(3)]
        out[:3, 3] = [p.get(i) for i in range(3)]
        return out
