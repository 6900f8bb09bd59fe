"""OpenSim contact: the ``ContactGeometrySet``'s spheres and half-spaces and the forces between them.

- ``ContactSphere`` (``socket_frame`` a body or ground, ``radius``, ``location``; its ``orientation`` does not
  matter) and ``ContactHalfSpace`` (``socket_frame``, ``location`` and ``orientation``, body-fixed X-Y-Z
  angles: the solid is the ``x > 0`` side of that frame, so its outward normal is the frame's −x axis), read
  by :func:`read_contact_geometry`;
- ``HuntCrossleyForce`` → ``type = "hunt_crossley"`` (:func:`hunt_crossley`): every geometry each of its
  ``ContactParameters`` names, with those parameters, a surface of the set; the law is
  :class:`~mbkron.multibody.hunt_crossley.HuntCrossley`'s;
- ``SmoothSphereHalfSpaceForce`` (sockets ``sphere`` and ``half_space``) → ``type = "smooth_sphere_half_space"``
  with the sphere's body, centre and radius, the half-space's body, point (``location``) and outward normal
  and the force's parameters (OpenSim 4.6's defaults where missing); the law is
  :class:`~mbkron.multibody.contact.SmoothSphereHalfSpace`'s. OpenSim 4.6 ignores the property
  ``derivative_smoothing`` of older files (it is no property of the force any more), and so does the import.

Other contact geometry (meshes, ellipsoids, …) is reported only when a force uses it; ``ElasticFoundationForce``
(meshes) is refused with one message naming it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import NamedTuple

from mbkron.multibody.contact import SMOOTH_DEFAULTS
from mbkron.multibody.hunt_crossley import MATERIAL
from mbkron.io.osim.joints import _X, _Y, _Z, GROUND, Offset
from mbkron.io.osim.xml import XmlReader

__all__ = ["CONTACT_FORCES", "ContactGeometry", "hunt_crossley", "read_contact_geometry", "smooth_sphere_half_space",
           "used_geometry"]

#: The contact forces read here (:func:`smooth_sphere_half_space`, :func:`hunt_crossley`).
CONTACT_FORCES = ("SmoothSphereHalfSpaceForce", "HuntCrossleyForce")
#: Contact forces refused with a specific message.
REFUSED_CONTACT = ("ElasticFoundationForce",)
_GEOMETRY = ("ContactSphere", "ContactHalfSpace")


class ContactGeometry(NamedTuple):
    """A contact sphere or half-space, in the coordinates of its body (or ground)."""

    tag: str  # "ContactSphere" or "ContactHalfSpace"
    body: str
    location: list[float]
    normal: list[float] | None  # a half-space's outward normal
    radius: float | None  # a sphere's


def _frame(reader: XmlReader, element: ET.Element, bodies: dict) -> str | None:
    path = reader.text(element, "socket_frame")
    if path is None:
        return None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name != GROUND and name not in bodies:
        reader.unsupported_element(element, f"contact geometry on a body or ground (socket_frame {path[:60]!r} is "
                                   "neither)")
        return None
    return name


def read_contact_geometry(model: ET.Element) -> dict[str, ET.Element]:
    """The elements of the ``ContactGeometrySet`` by name (read when a force uses them)."""
    holder = model.find("ContactGeometrySet/objects")
    return {element.get("name"): element for element in (holder if holder is not None else [])}


def _geometry(reader: XmlReader, element: ET.Element, bodies: dict) -> ContactGeometry | None:
    if element.tag not in _GEOMETRY:
        reader.unsupported_element(element, "the contact geometries " + ", ".join(_GEOMETRY))
        return None
    sphere = element.tag == "ContactSphere"
    reader.known_children(element, ("socket_frame", "location", "orientation", "Appearance", "display_preference",
                                    "color") + (("radius",) if sphere else ()))
    body = _frame(reader, element, bodies)
    location = reader.numbers(element, "location", 3, default=[0.0, 0.0, 0.0])
    orientation = reader.numbers(element, "orientation", 3, default=[0.0, 0.0, 0.0])
    if sphere:
        radius = reader.number(element, "radius")
        if radius is not None and not radius > 0:
            reader.problem(element, f"expected a positive radius, got {radius!r}", "radius")
            return None
        if None in (body, location, radius):
            return None
        return ContactGeometry(element.tag, body, location, None, radius)
    if None in (body, location, orientation):
        return None
    rotation = Offset(rotation=[(axis, angle) for axis, angle in zip((_X, _Y, _Z), orientation) if angle]).matrix()
    return ContactGeometry(element.tag, body, location, [float(-v) for v in rotation[:, 0]], None)


def _connected(reader: XmlReader, force: ET.Element, socket: str, tag: str, geometry: dict[str, ET.Element],
               bodies: dict) -> ContactGeometry | None:
    path = reader.text(force, socket)
    if path is None:
        return None
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name not in geometry:
        reader.problem(force, f"expected the path of an element of the ContactGeometrySet, got {path[:60]!r}", socket)
        return None
    read = _geometry(reader, geometry[name], bodies)
    if read is not None and read.tag != tag:
        reader.problem(force, f"expected a {tag}, got the {read.tag} {name!r}", socket)
        return None
    return read


def smooth_sphere_half_space(reader: XmlReader, force: ET.Element, name: str, geometry: dict[str, ET.Element],
                             bodies: dict) -> dict | None:
    """A ``SmoothSphereHalfSpaceForce`` as a ``[[loads]]`` table (see the module docstring)."""
    reader.known_children(force, ("appliesForce", "socket_sphere", "socket_half_space", *SMOOTH_DEFAULTS,
                                  "derivative_smoothing", "force_visualization_radius",
                                  "force_visualization_scale_factor"))
    sphere = _connected(reader, force, "socket_sphere", "ContactSphere", geometry, bodies)
    half_space = _connected(reader, force, "socket_half_space", "ContactHalfSpace", geometry, bodies)
    values = {key: reader.number(force, key, default) for key, default in SMOOTH_DEFAULTS.items()}
    for key, value in values.items():
        positive = key in ("transition_velocity", "constant_contact_force", "hertz_smoothing", "hunt_crossley_smoothing")
        if value is not None and (value < 0 or (positive and value == 0)):
            reader.problem(force, f"expected a {'positive' if positive else 'non-negative'} number, got {value!r}", key)
            values[key] = None
    if sphere is None or half_space is None or None in values.values():
        return None
    if sphere.body == half_space.body:
        reader.problem(force, f"the sphere and the half-space are both on `{sphere.body}`: the force never changes",
                       "socket_half_space")
        return None
    return {"type": "smooth_sphere_half_space", "name": name, "sphere_body": sphere.body,
            "sphere_center": sphere.location, "radius": sphere.radius, "half_space_body": half_space.body,
            "half_space_point": half_space.location, "half_space_normal": half_space.normal, **values}


def used_geometry(force: ET.Element) -> list[str]:
    """The names of the contact geometries a contact force uses (its sockets, or a HuntCrossleyForce's lists)."""
    if force.tag == "HuntCrossleyForce":
        return [name.rsplit("/", 1)[-1] for parameters in _children(force, "ContactParametersSet", "ContactParameters")
                for name in (parameters.findtext("geometry") or "").split()]
    return [(force.findtext(socket) or "").rstrip("/").rsplit("/", 1)[-1] for socket in ("socket_sphere", "socket_half_space")]


def _children(element: ET.Element, holder: str, item: str) -> list[ET.Element]:
    """``<HuntCrossleyForce::HOLDER>/objects/<HuntCrossleyForce::ITEM>`` (tags with ``::``)."""
    out = []
    for child in element:
        if child.tag == f"HuntCrossleyForce::{holder}":
            objects = child.find("objects")
            out += [c for c in (objects if objects is not None else []) if c.tag == f"HuntCrossleyForce::{item}"]
    return out


def hunt_crossley(reader: XmlReader, force: ET.Element, name: str, geometry: dict[str, ET.Element],
                  bodies: dict) -> dict | None:
    """A ``HuntCrossleyForce`` as a ``[[loads]]`` table ``type = "hunt_crossley"``: every geometry each
    ``ContactParameters`` names, in order, a surface with those parameters (OpenSim's defaults 0 where missing;
    a stiffness of 0 is refused: the law divides by the sum of two)."""
    reader.known_children(force, ("appliesForce", "HuntCrossleyForce::ContactParametersSet", "transition_velocity"))
    velocity = reader.number(force, "transition_velocity", 0.01)
    if velocity is not None and not velocity > 0:
        reader.problem(force, f"expected a positive number, got {velocity!r}", "transition_velocity")
        velocity = None
    surfaces, ok = [], velocity is not None
    for parameters in _children(force, "ContactParametersSet", "ContactParameters"):
        reader.known_children(parameters, ("geometry", *MATERIAL))
        values = {key: reader.number(parameters, key, 0.0) for key in MATERIAL}
        for key, value in values.items():
            if value is not None and (value < 0 or (key == "stiffness" and value == 0)):
                reader.problem(parameters, f"expected a {'positive' if key == 'stiffness' else 'non-negative'} number, "
                               f"got {value!r}", key)
                values[key] = None
        ok = ok and None not in values.values()
        for path in (parameters.findtext("geometry") or "").split():
            name_of = path.rstrip("/").rsplit("/", 1)[-1]
            if name_of not in geometry:
                reader.problem(parameters, f"expected the name of an element of the ContactGeometrySet, got "
                               f"{path[:60]!r}", "geometry")
                ok = False
                continue
            read = _geometry(reader, geometry[name_of], bodies)
            if read is None:
                ok = False
                continue
            shape = "sphere" if read.tag == "ContactSphere" else "half_space"
            surface = {"shape": shape, "body": read.body, "location": read.location}
            surface.update({"radius": read.radius} if shape == "sphere" else {"normal": read.normal})
            surfaces.append({**surface, **values})
    if not ok:
        return None
    if len(surfaces) < 2:
        reader.problem(force, f"expected at least 2 contact geometries in its contact parameters, got {len(surfaces)}")
        return None
    return {"type": "hunt_crossley", "name": name, "transition_velocity": velocity, "surfaces": surfaces}
