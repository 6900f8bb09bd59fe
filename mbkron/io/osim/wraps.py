"""OpenSim wrap objects (``WrapObjectSet`` of the bodies and ground) as ``[wraps.NAME]`` tables, and
a path's ``PathWrapSet`` as its ``wraps`` list.

Each wrap object of a registered kind (:data:`mbkron.multibody.muscles.surfaces.SURFACES`: ``WrapSphere``,
``WrapCylinder``, ``WrapEllipsoid``, ``WrapTorus``) becomes ``{kind, body, translation, rotation,
quadrant, active, <shape>}`` with the file's numbers (``rotation`` = ``xyz_body_rotation``, radians); a ``PathWrap`` becomes
``{object, range, method}``. A path that names a wrap object of another kind or an unknown one is
reported.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import fields
from typing import NamedTuple

from mbkron.io.osim.joints import GROUND
from mbkron.io.osim.xml import XmlReader
from mbkron.io.writer import InlineTable
from mbkron.multibody.muscles.surfaces import SURFACES
from mbkron.multibody.muscles.wrapping import QUADRANTS, WRAP_METHODS, shape_fields

__all__ = ["WrapObjects", "read_wrap_objects", "read_path_wraps"]

#: OpenSim's wrap objects (those not in SURFACES are not imported yet).
_OPENSIM_WRAPS = ("WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus")
_COMMON = ("active", "xyz_body_rotation", "translation", "quadrant")


class WrapObjects(NamedTuple):
    """The wrap objects of a model: the tables of the supported ones, the elements of the others."""

    tables: dict[str, dict]
    unsupported: dict[str, ET.Element]
    reported: set  # the unsupported ones named by a path (reported once)


def _holders(model: ET.Element, bodies: dict[str, ET.Element]) -> list[tuple[str, ET.Element]]:
    ground = model.find("Ground")
    return ([(GROUND, ground)] if ground is not None else []) + list(bodies.items())


def read_wrap_objects(reader: XmlReader, model: ET.Element, bodies: dict[str, ET.Element] | None) -> WrapObjects:
    """The wrap objects of ground and of every body (``WrapObjectSet/objects``); none when ``bodies``
    is None (wrap objects not imported)."""
    tables: dict[str, dict] = {}
    unsupported: dict[str, ET.Element] = {}
    for body, holder in _holders(model, bodies) if bodies is not None else ():
        objects = holder.find("WrapObjectSet/objects")
        for element in objects if objects is not None else []:
            name = reader.name(element)
            if name is None:
                continue
            if name in tables or name in unsupported:
                reader.problem(element, f"the wrap object name `{name}` is used twice")
                continue
            if element.tag not in SURFACES:
                if element.tag not in _OPENSIM_WRAPS:
                    reader.unsupported_element(element, "the wrap objects " + ", ".join(_OPENSIM_WRAPS))
                unsupported[name] = element
                continue
            shape = shape_fields(SURFACES[element.tag])
            reader.known_children(element, _COMMON + shape)
            quadrant = reader.text(element, "quadrant", "all")
            if quadrant == "Unassigned":  # OpenSim's default: all
                quadrant = "all"
            if quadrant not in QUADRANTS:
                reader.problem(element, "expected all, +x, -x, x, +y, -y, y, +z, -z or z", "quadrant")
            table = {"kind": element.tag.removeprefix("Wrap").lower(), "body": body,
                     "translation": reader.numbers(element, "translation", 3, default=[0.0, 0.0, 0.0]),
                     "rotation": reader.numbers(element, "xyz_body_rotation", 3, default=[0.0, 0.0, 0.0]),
                     "quadrant": quadrant, "active": reader.boolean(element, "active", True)}
            for field in fields(SURFACES[element.tag]):  # a number (float) or a 3-vector
                if field.name in shape:
                    values = reader.numbers(element, field.name, 1 if field.type in (float, "float") else 3)
                    table[field.name] = values[0] if values is not None and len(values) == 1 else values
            if all(value is not None for value in table.values()):
                tables[name] = table
    return WrapObjects(tables, unsupported, set())


def read_path_wraps(reader: XmlReader, path: ET.Element, objects: WrapObjects) -> list[InlineTable] | None:
    """The ``wraps`` list of a ``GeometryPath`` (None after a problem)."""
    holder = path.find("PathWrapSet/objects")
    wraps, ok = [], True
    for wrap in holder if holder is not None else []:
        if wrap.tag != "PathWrap":
            reader.unsupported_element(wrap, "<PathWrap>")
            ok = False
            continue
        reader.known_children(wrap, ("wrap_object", "method", "range"))
        name = reader.text(wrap, "wrap_object")
        method = reader.text(wrap, "method", "hybrid")
        bounds = reader.numbers(wrap, "range", 2, default=[-1.0, -1.0])
        if name in objects.unsupported:
            element = objects.unsupported[name]
            if name not in objects.reported:
                objects.reported.add(name)
                reader.unsupported_element(element, "the wrap objects " + ", ".join(SURFACES) + f" (<{element.tag}> not yet; "
                                       "import the paths without wrap objects with load_model(..., wrapping=\"ignore\") "
                                           "or the option `--ignore-wrapping` of `mbkron convert` and `mbkron info`)")
            ok = False
        elif name is not None and name not in objects.tables:
            reader.problem(wrap, f"expected the name of a wrap object of a body or ground, got {name!r}", "wrap_object")
            ok = False
        if method not in WRAP_METHODS:
            reader.problem(wrap, f"expected one of {', '.join(WRAP_METHODS)}, got {method[:40]!r}", "method")
            ok = False
        if bounds is not None and not all(b == int(b) for b in bounds):
            reader.problem(wrap, "expected 2 integers (point numbers, -1 for the ends)", "range")
            bounds = None
        if name is None or bounds is None:
            ok = False
            continue
        wraps.append(InlineTable({"object": name, "range": [int(b) for b in bounds], "method": method}))
    return wraps if ok else None
