"""OpenSim force elements that are not muscles, as ``[[loads]]`` tables.

- ``CoordinateLimitForce`` → ``type = "coordinate_limit"`` on one of the model's coordinates, in SI
  units as OpenSim 4.6 converts them (``CoordinateLimitForce::extendConnectToModel``): for a
  rotational coordinate (``w = π/180``) the limits and the transition are ``w·value`` (degrees to
  radians), the stiffnesses and the damping ``value/w`` (per degree to per radian); for a translational
  one ``w = 1``. The law is :class:`~mbkron.multibody.loads.CoordinateLimitForce`'s.
- ``PathSpring`` → ``type = "path_spring"``: ``stiffness``, ``resting_length``, ``dissipation`` and the
  ``GeometryPath``'s points and wraps, read as a muscle's (:mod:`mbkron.io.osim.muscles`; the wrap objects
  they use join ``[wraps]``); the law is :class:`~mbkron.multibody.muscles.springs.PathSpring`'s.
- ``BushingForce`` → ``type = "bushing"``: the bodies and transforms of ``socket_frame1`` and ``socket_frame2``
  (the force's own ``PhysicalOffsetFrame``s, bodies or ground), the rotational and translational stiffnesses
  and dampings; the law is :class:`~mbkron.multibody.bushings.BushingForce`'s.
- ``Ligament`` → ``type = "ligament"``: ``resting_length``, ``pcsa_force``, the ``force_length_curve`` (a
  tabulated function of the strain ``L / L₀``) and the path's points and wraps; the law is
  :class:`~mbkron.multibody.muscles.ligaments.Ligament`'s.
- ``SmoothSphereHalfSpaceForce`` → ``type = "smooth_sphere_half_space"``, ``HuntCrossleyForce`` →
  ``type = "hunt_crossley"`` (:mod:`mbkron.io.osim.contact`); ``ElasticFoundationForce`` is refused with a
  message naming it.
- ``PointToPointSpring`` (Simbody's ``TwoPointLinearSpring``, tension ``k (L − L₀)``) →
  ``type = "spring_damper"`` with ``stiffness``, ``free_length = rest_length`` and no damping, between
  ``point1`` of ``socket_body1`` and ``point2`` of ``socket_body2`` (bodies or ground).

A force with ``appliesForce = false`` applies nothing in OpenSim, and a CoordinateLimitForce on a locked
coordinate acts only on that coordinate, whose lock takes it: neither is imported (both are listed in
the convert header). OpenSim's defaults apply to missing properties.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import NamedTuple

from mbkron.io.osim.contact import CONTACT_FORCES, REFUSED_CONTACT, hunt_crossley, smooth_sphere_half_space
from mbkron.io.osim.coordinates import Coordinates
from mbkron.io.osim.functions import Table, read_function
from mbkron.io.osim.joints import GROUND, resolve_socket
from mbkron.io.osim.muscles import ACTUATORS, HILL_MUSCLES, read_geometry_path
from mbkron.io.osim.wraps import WrapObjects
from mbkron.io.osim.xml import XmlReader
from mbkron.numerics.functions import SPLINE_KINDS
from mbkron.multibody.muscles.ligaments import OPENSIM_FORCE_LENGTH

__all__ = ["FORCES", "MUSCLES", "ImportedLoads", "read_forces"]

#: The OpenSim forces read here; every force not in :data:`MUSCLES` is given to :func:`read_forces`,
#: which reports the others as unsupported.
FORCES = ("BushingForce", "CoordinateLimitForce", "Ligament", "PathSpring", "PointToPointSpring", *CONTACT_FORCES)
#: The forces :func:`mbkron.io.osim.muscles.read_muscles` reads (muscles, path actuators, actuators).
MUSCLES = (*HILL_MUSCLES, "PathActuator", *ACTUATORS)
# OpenSim's defaults (constructProperties) of a CoordinateLimitForce's properties
_LIMIT_DEFAULTS = (("upper_stiffness", 1.0), ("upper_limit", 0.0), ("lower_stiffness", 1.0), ("lower_limit", 0.0),
                   ("transition", 0.1), ("damping", 0.001))
_EULER_JOINTS = ("BallJoint", "FreeJoint")  # speeds are not the coordinates' rates (docs/opensim.md)


class ImportedLoads(NamedTuple):
    """What :func:`read_forces` found."""

    loads: list[dict]  # the [[loads]] tables
    wrapped: list[str]  # path springs and ligaments imported without their wrap objects
    skipped: list[str]  # not imported: forces with appliesForce = false, limit forces on locked coordinates
    wraps: dict  # the [wraps] tables of the wrap objects their paths use


def _coordinate_limit(reader: XmlReader, force: ET.Element, coordinates: Coordinates, joints: dict[str, str],
                      document: dict, motion: dict[str, str], skipped: list[str]) -> dict | None:
    reader.known_children(force, ("appliesForce", "coordinate", *(key for key, _ in _LIMIT_DEFAULTS),
                                  "compute_dissipation_energy"))
    name = (reader.text(force, "coordinate") or "").rstrip("/").rsplit("/", 1)[-1]
    values = {key: reader.number(force, key, default) for key, default in _LIMIT_DEFAULTS}
    if name not in coordinates.info:
        reader.problem(force, f"expected the name of a coordinate, got {name[:60]!r}", "coordinate")
        return None
    info = coordinates.info[name]
    if info.locked and name not in coordinates.couplers:  # the lock's reaction takes its force
        skipped.append(f"CoordinateLimitForce {force.get('name')} (on the locked coordinate {name})")
        return None
    model_name = coordinates.model_names.get(name)
    if model_name not in document["coordinates"] or joints.get(info.joint) in _EULER_JOINTS:
        reader.unsupported_element(force, f"CoordinateLimitForce on the model's coordinates (`{name}` is coupled, "
                                   "solved by a loop constraint or of a BallJoint or FreeJoint)")
        return None
    for key in ("upper_stiffness", "lower_stiffness", "transition"):
        if values[key] is not None and values[key] <= 0:  # OpenSim divides by the stiffnesses; Step needs a width
            reader.problem(force, f"expected a positive number, got {values[key]!r}", key)
            values[key] = None
    if values["damping"] is not None and values["damping"] < 0:
        reader.problem(force, f"expected a non-negative number, got {values['damping']!r}", "damping")
        values["damping"] = None
    if None in values.values():
        return None
    w = math.pi / 180 if motion.get(model_name) == "rotation" else 1.0  # SimTK_DEGREE_TO_RADIAN
    table = {"type": "coordinate_limit", "coordinate": model_name}
    for key, _ in _LIMIT_DEFAULTS:
        table[key] = values[key] / w if key in ("upper_stiffness", "lower_stiffness", "damping") else w * values[key]
    return table


def _non_negative(reader: XmlReader, force: ET.Element, defaults: tuple) -> dict:
    """The force's numbers ``(key, default)`` (no default: required); None for a missing or negative one."""
    values = {key: reader.number(force, key, default) for key, default in defaults}
    for key, value in values.items():
        if value is not None and value < 0:
            reader.problem(force, f"expected a non-negative number, got {value!r}", key)
            values[key] = None
    return values


def _path_spring(reader: XmlReader, force: ET.Element, name: str, bodies: dict, coordinates: Coordinates,
                 wrapping: str, wrapped: list[str], objects: WrapObjects, used: dict) -> dict | None:
    reader.known_children(force, ("appliesForce", "GeometryPath", "resting_length", "stiffness", "dissipation"))
    values = _non_negative(reader, force, (("resting_length", None), ("stiffness", None), ("dissipation", 0.0)))
    path = read_geometry_path(reader, force, name, bodies, coordinates, wrapping, wrapped, objects, used)
    if path is None or None in values.values():
        return None
    return {"type": "path_spring", "name": name, "stiffness": values["stiffness"],
            "resting_length": values["resting_length"], "dissipation": values["dissipation"], **path}


def _ligament(reader: XmlReader, force: ET.Element, name: str, bodies: dict, coordinates: Coordinates,
              wrapping: str, wrapped: list[str], objects: WrapObjects, used: dict) -> dict | None:
    """A ``Ligament``: ``resting_length``, ``pcsa_force`` and the ``force_length_curve`` (OpenSim's defaults
    where missing: 0, 0 and :data:`~mbkron.multibody.muscles.ligaments.OPENSIM_FORCE_LENGTH`; a resting length of 0
    is refused, as OpenSim asserts), the curve a tabulated function of the strain."""
    # the curve as OpenSim 4 writes it (<force_length_curve><SimmSpline …/></force_length_curve>) or as older
    # files do (<SimmSpline name="force_length_curve">), which OpenSim 4.6 reads too
    holder = force.find("force_length_curve")
    named = next((child for child in force if child.get("name") == "force_length_curve"), None)
    reader.known_children(force, ("appliesForce", "GeometryPath", "resting_length", "pcsa_force", "force_length_curve")
                          + ((named.tag,) if named is not None else ()))
    values = _non_negative(reader, force, (("resting_length", 0.0), ("pcsa_force", 0.0)))
    if values["resting_length"] == 0.0:
        reader.problem(force, "a ligament's resting length must be positive (OpenSim asserts it), got 0", "resting_length")
        values["resting_length"] = None
    table = {"type": "ligament", "name": name, **values}
    curve = reader.only_child(holder, "force_length_curve") if holder is not None else named
    if curve is not None:
        function = read_function(reader, curve)
        if not (isinstance(function, Table) and function.kind in SPLINE_KINDS
                and function.argument == function.value == (1.0, 0.0)):
            if function is not None:
                reader.unsupported_element(curve, "a ligament's force-length curve as a SimmSpline, NaturalCubicSpline, "
                                           "PiecewiseLinearFunction or PiecewiseConstantFunction")
            return None
        table["force_length"] = {"kind": function.kind, "x": list(function.x), "y": list(function.y)}
    else:
        table["force_length"] = {"kind": "fmm", "x": list(OPENSIM_FORCE_LENGTH[0]), "y": list(OPENSIM_FORCE_LENGTH[1])}
    path = read_geometry_path(reader, force, name, bodies, coordinates, wrapping, wrapped, objects, used)
    if path is None or None in values.values():
        return None
    return {**table, **path}


def _bushing(reader: XmlReader, force: ET.Element, name: str, bodies: dict) -> dict | None:
    """A ``BushingForce`` between its two frames (its own offset frames, bodies or ground), the stiffnesses
    and dampings OpenSim's (0 where missing)."""
    reader.known_children(force, ("appliesForce", "socket_frame1", "socket_frame2", "frames", "rotational_stiffness",
                                  "translational_stiffness", "rotational_damping", "translational_damping"))
    holder = force.find("frames")
    frames = {f.get("name"): f for f in (holder if holder is not None else []) if f.tag == "PhysicalOffsetFrame"}
    for frame in holder if holder is not None else []:
        if frame.tag != "PhysicalOffsetFrame":
            reader.unsupported_element(frame, "PhysicalOffsetFrame")
    ends = [resolve_socket(reader, force, socket, frames, bodies) for socket in ("socket_frame1", "socket_frame2")]
    values = {key: reader.numbers(force, key, 3, default=[0.0, 0.0, 0.0]) for key in
              ("rotational_stiffness", "translational_stiffness", "rotational_damping", "translational_damping")}
    for key, value in values.items():
        if value is not None and min(value) < 0:
            reader.problem(force, f"expected 3 non-negative numbers, got {value!r}", key)
            values[key] = None
    if None in ends or None in values.values():
        return None
    (body_1, offset_1), (body_2, offset_2) = ends
    if body_1 == body_2:
        reader.problem(force, f"both frames are on `{body_1}`: the bushing applies nothing (remove it or set "
                       "appliesForce to false)")
        return None
    return {"type": "bushing", "name": name, "body_1": body_1, "frame_1": offset_1.table(), "body_2": body_2,
            "frame_2": offset_2.table(), **values}


def _point_to_point(reader: XmlReader, force: ET.Element, bodies: dict) -> dict | None:
    reader.known_children(force, ("appliesForce", "socket_body1", "socket_body2", "point1", "point2", "stiffness",
                                  "rest_length"))
    ends = []
    for socket in ("socket_body1", "socket_body2"):
        frame = (reader.text(force, socket) or "").rstrip("/").rsplit("/", 1)[-1]
        if frame != GROUND and frame not in bodies:
            reader.unsupported_element(force, f"PointToPointSpring between bodies or ground (`{socket}` "
                                       f"{frame[:60]!r} is neither)")
            return None
        ends.append(frame)
    point1, point2 = reader.numbers(force, "point1", 3), reader.numbers(force, "point2", 3)
    stiffness, rest_length = reader.number(force, "stiffness"), reader.number(force, "rest_length")
    if ends[0] == ends[1]:
        reader.problem(force, f"both ends are on `{ends[0]}`: the spring's length never changes", "socket_body2")
        return None
    for key, value in (("stiffness", stiffness), ("rest_length", rest_length)):
        if value is not None and value < 0:
            reader.problem(force, f"expected a non-negative number, got {value!r}", key)
            return None
    if None in (point1, point2, stiffness, rest_length):
        return None
    return {"type": "spring_damper", "body_a": ends[0], "point_a": point1, "body_b": ends[1], "point_b": point2,
            "stiffness": stiffness, "free_length": rest_length}


def read_forces(reader: XmlReader, forces: list[ET.Element], bodies: dict, coordinates: Coordinates,
                joints: list[ET.Element], document: dict, motion: dict[str, str], wrapping: str,
                objects: WrapObjects, contact_geometry: dict[str, ET.Element] | None = None) -> ImportedLoads:
    """The :data:`FORCES` among ``forces`` (the ``ForceSet``'s elements other than :data:`MUSCLES`) as
    ``[[loads]]`` tables; any other force is reported as unsupported.

    ``document`` is the model's document with its final ``coordinates`` (after loop constraints);
    ``motion`` tells which model coordinates drive a rotation (:func:`mbkron.io.osim.joints.add_joint`).
    The wraps of path springs and ligaments follow ``wrapping`` as a muscle's (``objects``: the model's wrap
    objects; the tables of those used are returned in ``wraps``).
    ``contact_geometry`` holds the ``ContactGeometrySet``'s elements by name
    (:func:`mbkron.io.osim.contact.read_contact_geometry`).
    """
    joint_tags = {joint.get("name"): joint.tag for joint in joints}
    loads, wrapped, skipped, used = [], [], [], {}
    for force in forces:
        if force.tag in FORCES and not reader.boolean(force, "appliesForce", True):
            skipped.append(f"{force.tag} {force.get('name')} (appliesForce = false)")
            continue
        if force.tag in REFUSED_CONTACT:
            reader.unsupported_element(force, f"the contact forces {' and '.join(CONTACT_FORCES)}; mbkron cannot "
                                       f"import {force.tag} yet")
            continue
        if force.tag not in FORCES:
            reader.unsupported_element(force, "the forces " + ", ".join((*HILL_MUSCLES, "PathActuator", *FORCES)))
            continue
        if force.tag == "CoordinateLimitForce":
            table = _coordinate_limit(reader, force, coordinates, joint_tags, document, motion, skipped)
        elif force.tag == "PathSpring":
            table = _path_spring(reader, force, reader.name(force) or "", bodies, coordinates, wrapping, wrapped,
                                 objects, used)
        elif force.tag == "BushingForce":
            table = _bushing(reader, force, reader.name(force) or "", bodies)
        elif force.tag in CONTACT_FORCES:
            read = smooth_sphere_half_space if force.tag == "SmoothSphereHalfSpaceForce" else hunt_crossley
            table = read(reader, force, reader.name(force) or "", contact_geometry or {}, bodies)
        elif force.tag == "Ligament":
            table = _ligament(reader, force, reader.name(force) or "", bodies, coordinates, wrapping, wrapped,
                              objects, used)
        else:
            table = _point_to_point(reader, force, bodies)
        if table is not None:
            loads.append(table)
    return ImportedLoads(loads, wrapped, skipped, used)
