"""An ``.osim`` file as the document the model-file reader consumes (:func:`osim_document`).

The document is the dictionary ``tomllib`` would return for an equivalent model file (units in
radians, every number the file's), so :mod:`mbkron.io.reader` builds the model from it and
``mbkron convert`` writes it with :func:`mbkron.io.writer.format_toml`. The sections come from
:mod:`~mbkron.io.osim.coordinates` (coordinates, couplers), :mod:`~mbkron.io.osim.joints` (bodies),
:mod:`~mbkron.io.osim.muscles` (muscles), :mod:`~mbkron.io.osim.forces` (springs and limit forces:
``[[loads]]``) and :mod:`~mbkron.io.osim.constraints` (loop-closing
constraints: ``[[constraints]]``, and the coordinates they solve leave ``[coordinates]``); the
model's name, gravity, credits and publications go to ``[model]`` and to the header of a converted file.

Elements without effect on the mechanics (markers, geometry and appearance, empty sets, probes,
controllers, contact geometry no contact force uses, actuators driven by controls) are not imported and are listed in the header; every other element
that is not understood is reported, all at once, in one :class:`~mbkron.core.errors.ModelError`.
"""

from __future__ import annotations

import hashlib
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from mbkron.core.errors import ModelError
from mbkron.io.osim.constraints import add_loop_constraints
from mbkron.io.osim.contact import CONTACT_FORCES, read_contact_geometry, used_geometry
from mbkron.io.osim.coordinates import Coordinates
from mbkron.io.osim.forces import FORCES, MUSCLES, read_forces
from mbkron.io.osim.joints import GROUND, add_joint
from mbkron.io.osim.legacy import upgrade_legacy
from mbkron.io.osim.muscles import read_muscles
from mbkron.io.osim.wraps import read_wrap_objects
from mbkron.io.osim.xml import XmlReader, parse_osim_bytes, read_osim_bytes

__all__ = ["OsimDocument", "WRAPPING", "osim_document", "read_osim"]

#: Values of the ``wrapping`` argument.
WRAPPING = ("import", "ignore", "error")
_INFORMATION = ("credits", "publications", "length_units", "force_units", "assembly_accuracy", "defaults")
_MECHANICS = ("Ground", "BodySet", "JointSet", "ConstraintSet", "ForceSet", "gravity")
_IGNORED = ("MarkerSet", "ContactGeometrySet", "ControllerSet", "ProbeSet")


@dataclass
class OsimDocument:
    """A model-file document read from an ``.osim`` file.

    Attributes
    ----------
    document : dict
        Sections as in a model file (``model``, ``units``, ``coordinates``, ``bodies``, ``muscles``,
        ``constraints`` when the file has loop-closing constraints).
    header : str
        Comment lines (``# …``) for a converted file: source, credits, publications, what was left out.
    sha256 : str
        SHA-256 of the file's bytes.
    wrapped : list of str
        Paths imported without their wrap objects (``wrapping="ignore"``).
    """

    document: dict
    header: str
    sha256: str
    wrapped: list[str] = field(default_factory=list)


def read_osim(path, *, wrapping: str = "import") -> OsimDocument:
    """Read an ``.osim`` file (OpenSim 4 format; 2.x and 3.x files are upgraded first by
    :func:`~mbkron.io.osim.legacy.upgrade_legacy`) into an :class:`OsimDocument`.

    Parameters
    ----------
    path : str or path-like
    wrapping : {"import", "ignore", "error"}
        ``"import"`` (default): paths keep their wrap objects (:mod:`mbkron.io.osim.wraps`);
        ``"ignore"``: they are imported without them, with a warning naming them; ``"error"``: a
        model whose paths have wrap objects raises one ModelError naming every such path.

    Raises
    ------
    ModelError
        The file cannot be read, is not a safe, well-formed OpenSim 4 document, or has unsupported
        elements (all listed, with their XML paths).
    """
    source = str(path)
    return osim_document(read_osim_bytes(path, source), source, wrapping=wrapping)


def _texts(element: ET.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None else ""


def osim_document(data: bytes, source: str, *, wrapping: str = "import") -> OsimDocument:
    """:func:`read_osim` of the bytes ``data`` (``source`` names them in messages)."""
    if wrapping not in WRAPPING:
        raise ValueError(f"`wrapping` must be one of {', '.join(map(repr, WRAPPING))}, got {wrapping!r}")
    root = parse_osim_bytes(data, source)
    version = root.get("Version", "")
    if not version.isdigit():
        raise ModelError([f"/OpenSimDocument: Version {version!r}: expected the file format's version number "
                          "(40000 and later: OpenSim 4; 20302-39999: OpenSim 2 and 3, upgraded as OpenSim 4 does)"], source)
    legacy = int(version) < 40000
    reader = upgrade_legacy(root, int(version), source) if legacy else XmlReader(root, source)
    model = root.find("Model")
    if model is None:
        raise ModelError(["/OpenSimDocument: missing <Model>"], source)
    ignored, components = [], []
    for child in model:
        if child.tag == "ContactGeometrySet":  # counted below: the geometry no contact force uses
            continue
        if child.tag in _IGNORED:
            objects = child.find("objects")
            if objects is not None and len(objects):
                ignored.append(f"{len(objects)} element(s) of <{child.tag}>")
        elif child.tag == "components":  # a model's own components: force elements are read with the ForceSet
            for element in child:
                if element.tag in FORCES or element.tag in MUSCLES:
                    components.append(element)
                else:
                    reader.unsupported_element(element, "model components that are force elements (" + ", ".join((*MUSCLES, *FORCES)) + ")")
        elif child.tag == "ComponentSet":
            objects = child.find("objects")
            for element in objects if objects is not None else []:
                reader.unsupported_element(element, "no components beyond bodies, joints, constraints and forces")
        elif child.tag not in _MECHANICS + _INFORMATION:
            reader.unsupported_element(child, "the model elements " + ", ".join(_MECHANICS + _IGNORED + _INFORMATION))
    for tag, unit in (("length_units", "meters"), ("force_units", "N")):
        text = reader.text(model, tag, unit)
        if text not in (unit, "m" if unit == "meters" else unit):
            reader.problem(model, f"expected {unit!r}, got {text[:40]!r}", tag)

    def objects(path: str) -> list[ET.Element]:
        holder = model.find(path)
        return list(holder) if holder is not None else []

    bodies = {}
    for body in objects("BodySet/objects"):
        name = reader.name(body)
        if body.tag != "Body":
            reader.unsupported_element(body, "<Body>")
        elif name == GROUND or name in bodies:
            reader.problem(body, f"the body name `{name}` is ground's or used twice")
        elif name is not None:
            bodies[name] = body
    joints = objects("JointSet/objects")
    constraints = objects("ConstraintSet/objects")
    coordinates = Coordinates(reader, joints, [c for c in constraints if c.tag == "CoordinateCouplerConstraint"])
    document_bodies: dict[str, dict] = {}
    motion: dict[str, str] = {}
    children: set[str] = set()
    for joint in joints:
        add_joint(reader, joint, coordinates, bodies, document_bodies, children, motion)
    for name, body in bodies.items():
        if name not in children:
            reader.problem(body, "no joint has this body as its child (free bodies are not imported)")
    wrap_objects = read_wrap_objects(reader, model, bodies if wrapping == "import" else None)
    force_set = objects("ForceSet/objects") + components
    forces = read_muscles(reader, [f for f in force_set if f.tag in MUSCLES], bodies, coordinates, wrapping,
                          wrap_objects)
    muscles, wrapped = forces.muscles, forces.wrapped
    renamed = {n: m for n, m in coordinates.model_names.items() if n != m}
    if forces.actuators:
        ignored.append(f"{len(forces.actuators)} actuator(s) driven by controls ({', '.join(forces.actuators)}; "
                       "apply generalized forces as tau instead)")
    if wrapped and wrapping == "error":
        reader.unsupported.append(f"{len(wrapped)} path(s) with wrap objects (refused with wrapping=\"error\"; import "
                                  "them with wrapping=\"import\", or without them with wrapping=\"ignore\" or the "
                                  f"option `--ignore-wrapping` of `mbkron convert` and `mbkron info`): "
                                  f"{', '.join(wrapped)}")
    gravity = reader.numbers(model, "gravity", 3, default=[0.0, -9.80665, 0.0])
    name = model.get("name") or "model"
    credits, publications = _texts(model.find("credits")), _texts(model.find("publications"))
    description = f"OpenSim model {name}" + (f". Credits: {credits}" if credits else "") + \
        (f". Publications: {publications}" if publications else "")
    coordinate_tables = {}
    for coordinate in coordinates.independent:
        info, model_name = coordinates.info[coordinate], coordinates.model_names[coordinate]
        coordinate_tables[model_name] = {**({"name": coordinate} if coordinate != model_name else {}),
                                         "range": list(info.range), "default": info.default,
                                         "unit": "m" if motion.get(model_name) == "translation" else "angle"}
    document = {
        "model": {"format_version": 1, "name": name, "description": description, "gravity": gravity},
        "units": {"angle": "rad", "length": "m", "mass": "kg"},
        "coordinates": coordinate_tables,
        "bodies": document_bodies,
        **({"wraps": forces.wraps} if forces.wraps else {}),
        "muscles": muscles,
    }
    acting = frozenset((force.findtext("coordinate") or "").strip() for force in force_set)  # forces on coordinates
    loops = add_loop_constraints(reader, [c for c in constraints if c.tag != "CoordinateCouplerConstraint"],
                                 bodies, document, acting)
    geometry = read_contact_geometry(model)
    loads = read_forces(reader, [f for f in force_set if f.tag not in MUSCLES], bodies, coordinates, joints, document,
                        motion, wrapping, wrap_objects, geometry)
    if loads.loads:
        document["loads"] = loads.loads
    if loads.wraps:
        document["wraps"] = {**document.get("wraps", {}), **loads.wraps}
    used = {name for force in force_set if force.tag in CONTACT_FORCES for name in used_geometry(force)}
    unused = [name for name in geometry if name not in used]
    if unused:
        ignored.append(f"{len(unused)} element(s) of <ContactGeometrySet> that no contact force uses")
    wrapped += loads.wrapped
    if loads.skipped:
        ignored.append(f"{len(loads.skipped)} force(s) that apply nothing ({', '.join(loads.skipped)})")
    ignored += [f"{count} legacy {what} (OpenSim 4.6 reads past them too)" for what, count in reader.legacy.items()]
    reader.raise_problems()
    if wrapped:
        warnings.warn(f"{source}: {len(wrapped)} path(s) imported without their wrap objects: {', '.join(wrapped)}",
                      stacklevel=3)
    wrapping_paths = [m for m, table in muscles.items() if "wraps" in table] + [
        load["name"] for load in loads.loads if "wraps" in load]
    header = _header(source, name, credits, publications, coordinates, wrapped, ignored, renamed, loops,
                     len(coordinate_tables), wrapping_paths, len(document.get("wraps", {})))
    if legacy:
        header = f"# OpenSim {version[0]}.x file (Version {version}), upgraded to OpenSim 4 as OpenSim 4.6 does.\n" + header
    return OsimDocument(document, header,
                        hashlib.sha256(data).hexdigest(), wrapped)


def _header(source: str, name: str, credits: str, publications: str, coordinates: Coordinates,
            wrapped: list[str], ignored: list[str], renamed: dict[str, str], loops: list[str], count: int,
            wrapping_paths: list[str], wrap_objects: int) -> str:
    eliminated = [f"{d} = {c[3]!r}·f({c[1]})" for d, c in coordinates.couplers.items()]
    locked = [f"{n} = {i.default!r}" for n, i in coordinates.info.items() if i.locked and n not in coordinates.couplers]
    lines = [f"OpenSim model `{name}`, converted from {source} by `mbkron convert` (see docs/opensim.md).",
             "Angles in radians: every number is the .osim file's. Each OpenSim joint is a chain of massless bodies",
             "named JOINT.AXIS followed by the OpenSim body (joint = \"fixed\").",
             f"Coordinates: OpenSim's independent, unlocked coordinates in CoordinateSet order ({count})."]
    if eliminated:
        lines.append("Eliminated by CoordinateCouplerConstraints: " + "; ".join(eliminated) + ".")
    if loops:
        lines.append("Loop-closing constraints (one [[constraints]] group; the coordinates of the joints it solves are not the "
                     "model's): " + "; ".join(loops) + ".")
    if locked:
        lines.append("Locked (fixed at the default value): " + ", ".join(locked) + ".")
    if renamed:
        lines.append("Coordinates named by identifiers in formulas (their OpenSim names kept as `name`): "
                     + ", ".join(f"{a!r} → {b}" for a, b in renamed.items()) + ".")
    if wrapping_paths:
        lines.append(f"Wrapping: {len(wrapping_paths)} path(s) over {wrap_objects} wrap object(s) ([wraps]; exact shortest "
                     "paths with OpenSim's rules of when and where to wrap, see docs/wrapping.md).")
    if wrapped:
        lines.append("Imported WITHOUT their wrap objects: " + ", ".join(wrapped) + ".")
    if ignored:
        lines.append("Not imported (no effect on the mechanics): " + ", ".join(ignored) + ".")
    lines.append("Hill muscles keep F_max, optimal fibre length, tendon slack length, pennation, v_max and a Thelen2003Muscle's curve constants; "
                 "other muscle classes get Thelen curves with the default constants.")
    if credits:
        lines.append(f"Credits: {credits}")
    if publications:
        lines.append(f"Publications: {publications}")
    return "".join(f"# {line}\n" for line in lines) + "\n"
