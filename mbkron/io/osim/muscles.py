"""OpenSim muscles and path actuators as ``[muscles.NAME]`` tables.

``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``, ``DeGrooteFregly2016Muscle`` and
``Schutte1993Muscle_Deprecated`` become Hill muscles (``model = "hill"``) with the file's
``max_isometric_force``, ``optimal_fiber_length``, ``tendon_slack_length``,
``pennation_angle_at_optimal`` and ``max_contraction_velocity`` (OpenSim's default 10 when absent).
A ``Thelen2003Muscle``'s curve constants (``FmaxTendonStrain``, ``FmaxMuscleStrain``, ``KshapeActive``,
``KshapePassive``, ``Af``, ``Flen``, ``fv_linear_extrap_threshold``, the activation and deactivation
time constants and ``minimum_activation``) become its ``curves`` table where they differ from the
defaults (:class:`~mbkron.multibody.muscles.hill.ThelenCurves`, OpenSim's class defaults); the other muscle
classes have curves of their own (Millard's quintic Béziers, De Groote–Fregly's closed forms) that mbkron
does not model: they get Thelen curves with the default constants. ``PathActuator`` becomes
``model = "path"`` (geometry only).

Path points (``GeometryPath/PathPointSet``), each on a body or ground, in body coordinates:

- ``PathPoint``: ``location``;
- ``MovingPathPoint``: ``x_location``, ``y_location``, ``z_location`` are functions of the coordinates
  ``socket_x/y/z_coordinate`` (each a term of the model's coordinates, see
  :mod:`mbkron.io.osim.coordinates`), extrapolated linearly outside their knots as in OpenSim;
- ``ConditionalPathPoint``: ``location``, active while ``socket_coordinate`` lies in ``range``
  widened by OpenSim's tolerance (``ConditionalPathPoint::isActive`` tests
  ``lo − 1e-5 ≤ q ≤ hi + 1e-5``, :data:`~mbkron.multibody.muscles.conditions.OPENSIM_RANGE_TOLERANCE`), written
  as ``active = {coordinate, range = [lo − 1e-5, hi + 1e-5]}``; on a locked coordinate the point is
  kept or dropped once, by its default value; on a coupled coordinate, through an affine coupler
  or a strictly monotone tabulated one (the widened range mapped to the independent coordinate;
  :func:`~mbkron.io.osim.functions.preimage`).

Actuators driven by controls (:data:`ACTUATORS`) are not imported (listed in the convert header).
A path's wrap objects (``PathWrapSet``) become its ``wraps`` list (:mod:`mbkron.io.osim.wraps`); with
``wrapping="ignore"`` the path is imported without them, with ``wrapping="error"`` it is refused
(:func:`read_muscles` returns the names of those paths).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NamedTuple

from mbkron.io.osim.coordinates import Coordinates
from mbkron.io.osim.functions import Affine, Table, emit, preimage, read_function
from mbkron.io.osim.joints import GROUND
from mbkron.io.osim.wraps import WrapObjects, read_path_wraps
from mbkron.io.osim.xml import XmlReader
from mbkron.io.writer import InlineTable
from mbkron.multibody.muscles.conditions import OPENSIM_RANGE_TOLERANCE
from mbkron.multibody.muscles.hill import ThelenCurves

__all__ = ["ACTUATORS", "HILL_MUSCLES", "ImportedForces", "read_geometry_path", "read_muscles"]

#: OpenSim muscles imported as Hill muscles.
HILL_MUSCLES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle", "DeGrooteFregly2016Muscle",
                "Schutte1993Muscle_Deprecated")
#: Actuators whose force is a control input (zero without a controller): not imported, listed in the
#: convert header (mbkron applies generalized forces as ``tau``).
ACTUATORS = ("CoordinateActuator", "ActivationCoordinateActuator", "PointActuator", "TorqueActuator")
_HILL_KEYS = (("max_isometric_force", "max_isometric_force", None), ("optimal_fiber_length", "optimal_fiber_length", None),
              ("tendon_slack_length", "tendon_slack_length", None), ("pennation_angle", "pennation_angle_at_optimal", 0.0),
              ("max_contraction_velocity", "max_contraction_velocity", 10.0))
#: ``Thelen2003Muscle`` properties and the :class:`~mbkron.multibody.muscles.hill.ThelenCurves` constants they set.
THELEN_CURVES = (("FmaxTendonStrain", "tendon_strain_at_fmax"), ("FmaxMuscleStrain", "fiber_strain_at_fmax"),
                 ("KshapeActive", "active_shape"), ("KshapePassive", "passive_shape"), ("Af", "af"), ("Flen", "flen"),
                 ("fv_linear_extrap_threshold", "extrapolation_threshold"),
                 ("activation_time_constant", "activation_time"), ("deactivation_time_constant", "deactivation_time"),
                 ("minimum_activation", "minimum_activation"))
#: OpenSim 4.6's ``Thelen2003Muscle`` class defaults where they differ from :class:`~mbkron.multibody.muscles.hill.ThelenCurves`'
#: (the constants of OpenSim's example models): what OpenSim uses for a property the file leaves out.
OPENSIM_THELEN_DEFAULTS = {"tendon_strain_at_fmax": 0.04, "flen": 1.4}
#: Elements of older formats that OpenSim 4.6 reads past in these places (an OpenSim 3 path's display
#: object; a moving point's fixed location, which its three functions replace; a conditional point's
#: coordinate by name, which its ``socket_coordinate`` replaces): skipped, and listed in the convert header.
LEGACY = {"GeometryPath": ("VisibleObject",), "MovingPathPoint": ("location",), "ConditionalPathPoint": ("coordinate",)}
_POINTS = {"PathPoint": ("socket_parent_frame", "location"),
           "ConditionalPathPoint": ("socket_parent_frame", "location", "socket_coordinate", "range"),
           "MovingPathPoint": ("socket_parent_frame", "x_location", "y_location", "z_location", "socket_x_coordinate",
                               "socket_y_coordinate", "socket_z_coordinate")}


def _body(reader: XmlReader, point: ET.Element, bodies: dict) -> str | None:
    path = reader.text(point, "socket_parent_frame")
    if path is None:
        return None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name != GROUND and name not in bodies:
        reader.unsupported_element(point, f"path points on a body or ground (socket_parent_frame {path!r} is neither)")
        return None
    return name


def _coordinate(reader: XmlReader, point: ET.Element, socket: str, coordinates: Coordinates) -> str | None:
    name = (reader.text(point, socket, "") or "").rstrip("/").rsplit("/", 1)[-1]
    if name and name not in coordinates.info:
        reader.problem(point, f"expected the path of a coordinate, got {name!r}", socket)
        return None
    return name


def _moving(reader: XmlReader, point: ET.Element, coordinates: Coordinates) -> list | None:
    components = []
    for axis in "xyz":
        holder = reader.child(point, f"{axis}_location")
        element = reader.only_child(holder, "function") if holder is not None else None
        coordinate = _coordinate(reader, point, f"socket_{axis}_coordinate", coordinates)
        if element is None or coordinate is None:
            return None
        term = coordinates.of(read_function(reader, element), [coordinate] if coordinate else [], element)
        if term is None:
            return None
        components.append(term)
    return components


def _conditional(reader: XmlReader, point: ET.Element, coordinates: Coordinates) -> dict | bool | None:
    """The ``active`` table; True/False for a point whose coordinate is locked; None after a problem."""
    name = _coordinate(reader, point, "socket_coordinate", coordinates)
    bounds = reader.numbers(point, "range", 2)
    if bounds is not None:
        bounds = [bounds[0] - OPENSIM_RANGE_TOLERANCE, bounds[1] + OPENSIM_RANGE_TOLERANCE]
    if not name or bounds is None:
        if name == "":
            reader.problem(point, "expected the path of a coordinate", "socket_coordinate")
        return None
    term = coordinates.term(name)
    if term is None:
        return None
    function = term.function
    if term.coordinate is None:
        return bounds[0] <= function.intercept <= bounds[1]
    if isinstance(function, Affine):
        low, high = sorted((b - function.intercept) / function.slope for b in bounds)
    else:
        interval = preimage(function, *bounds) if isinstance(function, Table) else None
        if interval is None:
            reader.unsupported_element(point, f"conditional points on a coordinate coupled affinely or by a strictly "
                                       f"monotone table (`{name}` is neither)")
            return None
        low, high = interval
    return {"coordinate": term.coordinate, "range": [low, high]}


def _path(reader: XmlReader, path: ET.Element, bodies: dict, coordinates: Coordinates) -> list[dict]:
    points = []
    holder = reader.child(path, "PathPointSet/objects")
    for point in holder if holder is not None else []:
        if point.tag not in _POINTS:
            reader.unsupported_element(point, "the path points " + ", ".join(_POINTS))
            continue
        reader.known_children(point, _POINTS[point.tag], LEGACY.get(point.tag, ()))
        body = _body(reader, point, bodies)
        if point.tag == "MovingPathPoint":
            terms = _moving(reader, point, coordinates)
            if body is not None and terms is not None:
                entry = {"body": body, "point": [emit(t) for t in terms]}
                if any(isinstance(t.function, Table) for t in terms):
                    entry["extrapolate"] = True
                points.append(entry)
            continue
        location = reader.numbers(point, "location", 3)
        active = _conditional(reader, point, coordinates) if point.tag == "ConditionalPathPoint" else True
        if body is None or location is None or active is None or active is False:
            continue
        entry = {"body": body, "point": location}
        if isinstance(active, dict):
            entry["active"] = InlineTable(active)
        points.append(entry)
    return points


class ImportedForces(NamedTuple):
    """What :func:`read_muscles` found in the ``ForceSet``."""

    muscles: dict[str, dict]  # the [muscles] tables, by model name
    wrapped: list[str]  # paths with wrap objects
    wraps: dict[str, dict]  # the [wraps] tables the imported paths name
    actuators: list[str]  # the ACTUATORS, not imported


def read_geometry_path(reader: XmlReader, force: ET.Element, name: str, bodies: dict, coordinates: Coordinates,
                wrapping: str, wrapped: list[str], objects: WrapObjects, used: dict) -> dict | None:
    """``{"path": points, "wraps": …}`` of the ``GeometryPath`` of ``force`` (a muscle's, a path spring's, a
    ligament's): its points, and its wraps as the ``wrapping`` option says (``"import"``; ``"ignore"``: left
    out, ``name`` added to ``wrapped``; ``"error"``: the same, and None), the wrap objects they use added to
    ``used``; None after a problem."""
    path = reader.child(force, "GeometryPath")
    if path is None:
        return None
    reader.known_children(path, ("PathPointSet", "PathWrapSet", "default_color"), LEGACY["GeometryPath"])
    wraps = path.find("PathWrapSet/objects")
    wrap_list = []
    if wraps is not None and len(wraps):
        if wrapping != "import":
            wrapped.append(name)
            if wrapping == "error":
                return None
        else:
            wrap_list = read_path_wraps(reader, path, objects)
            if wrap_list is None:
                return None
    table = {"path": _path(reader, path, bodies, coordinates)}
    if wrap_list:
        table["wraps"] = wrap_list
        used.update({w["object"]: objects.tables[w["object"]] for w in wrap_list})
    return table


def read_muscles(reader: XmlReader, forces: list[ET.Element], bodies: dict, coordinates: Coordinates,
                 wrapping: str, objects: WrapObjects) -> ImportedForces:
    """The muscles of the ``ForceSet`` and what else it holds (see :class:`ImportedForces`).

    With ``wrapping="import"`` a wrapped path keeps its wraps (over ``objects``, the model's wrap
    objects); with ``"error"`` it is recorded as unsupported; with ``"ignore"`` it is imported without
    its wrap objects. The muscles keep their OpenSim names (``ECU_pre-surgery``): a model file quotes a key that
    is not a bare key, and no formula names a muscle.
    """
    muscles: dict[str, dict] = {}
    used: dict[str, dict] = {}
    wrapped, actuators = [], []
    for force in forces:
        name = reader.name(force)
        if force.tag in ACTUATORS:
            actuators.append(f"{force.tag} {name}")
            continue
        if force.tag not in (*HILL_MUSCLES, "PathActuator"):
            reader.unsupported_element(force, "the forces " + ", ".join((*HILL_MUSCLES, "PathActuator")))
            continue
        if name is None:
            continue
        if name in muscles:
            reader.problem(force, f"the force name `{name}` is used twice")
            continue
        geometry = read_geometry_path(reader, force, name, bodies, coordinates, wrapping, wrapped, objects, used)
        if geometry is None:
            continue
        table: dict = {"model": "path"}
        if force.tag in HILL_MUSCLES:
            table["model"] = "hill"
            for key, tag, default in _HILL_KEYS:
                value = reader.number(force, tag, default)
                if value is not None:
                    table[key] = value
            if force.tag == "Thelen2003Muscle":
                curves = {key: reader.number(force, tag, OPENSIM_THELEN_DEFAULTS.get(key, getattr(ThelenCurves(), key)))
                          for tag, key in THELEN_CURVES}
                curves = {key: value for key, value in curves.items()
                          if value is not None and value != getattr(ThelenCurves(), key)}
                if curves:
                    table["curves"] = InlineTable(**curves)
        muscles[name] = {**table, **geometry}
    return ImportedForces(muscles, wrapped, used, actuators)
