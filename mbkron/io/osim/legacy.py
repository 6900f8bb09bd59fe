"""OpenSim 2.x/3.x model files (``Version`` 20302–39999) upgraded to the OpenSim 4 structure.

OpenSim 4.6 reads an old file by rewriting its XML before reading it (the ``updateFromXMLNode``
methods of ``Model``, ``Body``, ``Joint``, ``Coordinate``, ``AbstractPathPoint``,
``ConditionalPathPoint``, ``MovingPathPoint``, ``Muscle``, ``Force``, ``Constraint``,
``PointConstraint``, ``GeometryPath`` and ``XMLDocument::addPhysicalOffsetFrame30505_30517``, and
the type renames of ``Object::renameType``). :func:`upgrade_legacy` does the same to the parsed tree,
so that the OpenSim 4 reader (:mod:`mbkron.io.osim.document`) reads it:

- **Joints** (``< 30501``: inside ``<Body><Joint>``, with ``parent_body``; ``30501``–``30504``:
  in the model's ``JointSet`` with ``connectors`` ``parent_body``/``child_body``) move to
  ``JointSet`` in the order of their bodies. ``location_in_parent``/``orientation_in_parent``
  become the joint's ``PhysicalOffsetFrame`` ``PARENT_offset`` on the parent body and
  ``location``/``orientation`` (``location_in_child``/``orientation_in_child`` from 30500) the frame
  ``CHILD_offset`` on the child body; the joint connects those frames. OpenSim writes the frames'
  numbers with C++'s default stream precision, **6 significant digits** (``%g``), and reads them
  back: so does this upgrade, so that the model equals the one OpenSim 4.6 builds from the file.
  ``reverse = true`` swaps the parent and child frames (OpenSim ≥ 30514). The joint's
  ``CoordinateSet`` becomes its ``coordinates``; a ``TransformAxis``'s ``<function>`` wrapper is
  unwrapped. The body named ``ground`` becomes the model's ground.
- **Bodies** (``< 30500``): ``inertia_xx … inertia_yz`` become ``inertia`` (``Ixx Iyy Izz Ixy Ixz
  Iyz``), again with 6 significant digits and OpenSim's defaults ``1 1 1 0 0 0`` for absent ones.
- **Coordinates**: ``motion_type`` is dropped (OpenSim 4 derives it from the joint).
- **Path points**: ``body`` → ``socket_parent_frame``; ``coordinate`` → ``socket_coordinate``
  (``ConditionalPathPoint``); ``x/y/z_coordinate`` → ``socket_x/y/z_coordinate`` and the unused
  ``location`` dropped (``MovingPathPoint``).
- **Forces** ``isDisabled`` → ``appliesForce`` and **constraints** ``isDisabled`` → ``isEnforced``
  (negated); ``PointConstraint`` ``body_1``/``body_2`` → ``socket_body_1``/``socket_body_2``.
- Type renames: ``Schutte1993Muscle`` → ``Schutte1993Muscle_Deprecated``, ``GeneralizedForce`` →
  ``CoordinateActuator``, ``Torque`` → ``TorqueActuator``, ``Force`` → ``PointActuator``,
  ``natCubicSpline`` → ``SimmSpline``, ``MusclePoint`` → ``PathPoint``, ``MuscleViaPoint`` →
  ``ConditionalPathPoint``, ``MovingMusclePoint`` → ``MovingPathPoint``, ``MusclePointSet`` →
  ``PathPointSet``, ``MuscleWrapSet`` → ``PathWrapSet``, ``MuscleWrap`` → ``PathWrap``.
- Display elements (``VisibleObject`` of bodies and paths) and an empty ``FrameSet`` are dropped.

Everything else stays as it is, so an element the upgrade does not know is reported by the reader
as unsupported (a non-empty ``FrameSet``, a 3.x ``WeldConstraint``, …). Messages name the elements
by their XML paths **in the original file** (:class:`LegacyReader`): a moved joint by its place
inside its body, a renamed element by its old name. (Line numbers appear only in messages about
XML that is not well-formed, which are raised before the upgrade, on the original text.)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from mbkron.core.errors import ModelError
from mbkron.io.osim.xml import XmlReader

__all__ = ["FIRST_VERSION", "LegacyReader", "upgrade_legacy"]

#: Oldest file version read (20302: ``pennation_angle`` became ``pennation_angle_at_optimal``).
FIRST_VERSION = 20302
_GROUND = "ground"
_DISPLAY = ("VisibleObject",)
#: ``Object::renameType`` of OpenSim 4.6 (``Force`` only among forces: see :func:`_rename_types`).
_TYPES = {"Schutte1993Muscle": "Schutte1993Muscle_Deprecated", "GeneralizedForce": "CoordinateActuator",
          "Torque": "TorqueActuator", "natCubicSpline": "SimmSpline", "MusclePoint": "PathPoint",
          "MuscleViaPoint": "ConditionalPathPoint", "MovingMusclePoint": "MovingPathPoint",
          "MusclePointSet": "PathPointSet", "MuscleWrapSet": "PathWrapSet", "MuscleWrap": "PathWrap"}
_INERTIA = (("inertia_xx", 1.0), ("inertia_yy", 1.0), ("inertia_zz", 1.0), ("inertia_xy", 0.0), ("inertia_xz", 0.0),
            ("inertia_yz", 0.0))
#: The old name of a child the upgrade renames, for messages about it (present or missing).
_FORMER = {"socket_parent_frame": "body", "socket_coordinate": "coordinate", "socket_x_coordinate": "x_coordinate",
           "socket_y_coordinate": "y_coordinate", "socket_z_coordinate": "z_coordinate",
           "appliesForce": "isDisabled", "isEnforced": "isDisabled", "socket_body_1": "body_1",
           "socket_body_2": "body_2"}


class LegacyReader(XmlReader):
    """An :class:`XmlReader` of an upgraded tree whose paths are those of the original file.

    The parents are recorded before the upgrade; elements the upgrade creates stand for the original
    element they were made from, renamed elements keep their old names in paths.
    """

    def __init__(self, root: ET.Element, source: str):
        super().__init__(root, source)
        self.origin: dict[ET.Element, ET.Element] = {}
        self.former: dict[ET.Element, str] = {}
        self.former_child: dict[tuple[ET.Element, str], str] = {}

    def path(self, element: ET.Element, tag: str | None = None) -> str:
        parts = [] if tag is None else [self.old_name(element, tag)]
        node: ET.Element | None = self.origin.get(element, element)
        while node is not None:
            name = node.get("name")
            label = self.former.get(node, node.tag)
            parts.append(f"{label}[@name={name!r}]" if name is not None else label)
            node = self._parents.get(node)
        return "/" + "/".join(reversed(parts))

    def child(self, element: ET.Element, tag: str, *, required: bool = True) -> ET.Element | None:
        found = element.find(tag)
        if found is None and required:
            self.problem(element, f"missing <{self.old_name(element, tag)}>")
        return found

    def old_name(self, element: ET.Element, tag: str) -> str:
        """The original file's name of the child ``tag`` of ``element`` (present or missing)."""
        return self.former_child.get((element, tag), _FORMER.get(tag, tag))

    # ------------------------------------------------------------------ editing the tree
    def rename(self, parent: ET.Element, element: ET.Element, tag: str) -> None:
        """Rename the child ``element`` of ``parent`` to ``tag`` (paths keep the old name)."""
        self.former.setdefault(element, element.tag)
        self.former_child[(parent, tag)] = self.former[element]
        element.tag = tag

    def new(self, parent: ET.Element, tag: str, origin: ET.Element, text: str | None = None,
            index: int | None = None, **attributes: str) -> ET.Element:
        """A new child ``tag`` of ``parent`` (at ``index``, else last) standing for ``origin`` in messages."""
        element = ET.Element(tag, attributes)
        element.text = text
        parent.insert(len(parent) if index is None else index, element)
        self.origin[element] = self.origin.get(origin, origin)
        return element


def _g(values: list[float]) -> str:
    """Numbers as C++'s default ``ostream`` writes them (``%g``: 6 significant digits)."""
    return " ".join(f"{value:g}" for value in values)


def _take(element: ET.Element, tag: str) -> ET.Element | None:
    """Remove and return the first child ``tag`` of ``element`` (None if there is none)."""
    child = element.find(tag)
    if child is not None:
        element.remove(child)
    return child


def _last(path: str) -> str:
    return path.strip().rstrip("/").rsplit("/", 1)[-1]


def upgrade_legacy(root: ET.Element, version: int, source: str) -> LegacyReader:
    """Upgrade the tree of an OpenSim 2.x/3.x file (``FIRST_VERSION ≤ version < 40000``) in place.

    Returns the reader for the upgraded tree, with problems found on the way (bad joint offsets or
    inertias) already recorded and paths into the original file.

    Raises
    ------
    ModelError
        ``version`` is older than :data:`FIRST_VERSION`.
    """
    if version < FIRST_VERSION:
        raise ModelError([f"/OpenSimDocument: Version {version}: OpenSim files of Version ≥ {FIRST_VERSION} are read "
                          "(2.x and later); open and save an older file in OpenSim 4 to convert it"], source)
    reader = LegacyReader(root, source)
    model = root.find("Model")
    if model is None:
        return reader  # reported by the OpenSim 4 reader
    _rename_types(reader, model)
    for element in list(model.iter()):
        for child in [c for c in element if c.tag in _DISPLAY]:
            element.remove(child)
    frames = model.find("FrameSet")
    if frames is not None and not _children(frames, "objects"):
        model.remove(frames)
    bodies = model.find("BodySet/objects")
    joints = _joint_set(reader, model)
    if bodies is not None:
        for body in list(bodies):
            _body(reader, bodies, body, joints, version)
    for joint in list(joints):
        _joint(reader, joint, version)
    for point in _iter_tags(model, ("PathPoint", "ConditionalPathPoint", "MovingPathPoint")):
        _path_point(reader, point)
    for coordinate in _iter_tags(model, ("Coordinate",)):
        _take(coordinate, "motion_type")
    for force in _children(model, "ForceSet/objects"):
        _negate(reader, force, "appliesForce")
    for constraint in _children(model, "ConstraintSet/objects"):
        _negate(reader, constraint, "isEnforced")
        if constraint.tag == "PointConstraint":
            for tag in ("body_1", "body_2"):
                element = constraint.find(tag)
                if element is not None:
                    reader.rename(constraint, element, f"socket_{tag}")
    return reader


def _iter_tags(model: ET.Element, tags: tuple[str, ...]) -> list[ET.Element]:
    return [element for element in model.iter() if element.tag in tags]


def _children(element: ET.Element, path: str) -> list[ET.Element]:
    """The children of the element at ``path`` below ``element`` (none if it is missing)."""
    holder = element.find(path)
    return list(holder) if holder is not None else []


def _rename_types(reader: LegacyReader, model: ET.Element) -> None:
    """OpenSim's type renames (``Force`` → ``PointActuator`` for the members of the ForceSet only)."""
    forces = model.find("ForceSet/objects")
    for parent in list(model.iter()):
        for element in parent:
            if element.tag in _TYPES or (parent is forces and element.tag == "Force"):
                reader.rename(parent, element, _TYPES.get(element.tag, "PointActuator"))


def _joint_set(reader: LegacyReader, model: ET.Element) -> ET.Element:
    """The model's ``JointSet/objects`` (created after ``BodySet`` if the file has none)."""
    objects = model.find("JointSet/objects")
    if objects is not None:
        return objects
    holder = model.find("JointSet")
    if holder is None:
        children = list(model)
        bodies = model.find("BodySet")
        holder = reader.new(model, "JointSet", bodies if bodies is not None else model,
                            index=children.index(bodies) + 1 if bodies is not None else None)
    return reader.new(holder, "objects", holder)


def _body(reader: LegacyReader, bodies: ET.Element, body: ET.Element, joints: ET.Element, version: int) -> None:
    """Move a body's nested joint to ``joints``; make its inertia a Vec6; ground leaves the BodySet."""
    holder = _take(body, "Joint")
    concrete = list(holder) if holder is not None else []
    if body.get("name") == _GROUND:
        bodies.remove(body)
        for joint in concrete:
            reader.unsupported_element(joint, "no joint of ground")
        return
    if version < 30500 and body.find("inertia") is None or any(body.find(tag) is not None for tag, _ in _INERTIA):
        values = []
        for tag, default in _INERTIA:
            value = reader.number(body, tag, default)
            values.append(default if value is None else value)
            _take(body, tag)
        reader.new(body, "inertia", body, _g(values))
    for extra in concrete[1:]:
        reader.unsupported_element(extra, "one joint inside <Joint>")
    if not concrete:
        return
    joint = concrete[0]
    holder.remove(joint)
    parent = _take(joint, "parent_body")
    if parent is None:
        reader.problem(joint, "missing <parent_body>")
    _connect(reader, joint, _last(parent.text or "") if parent is not None else "", body.get("name") or "", parent)
    joints.append(joint)


def _connect(reader: LegacyReader, joint: ET.Element, parent: str, child: str, origin: ET.Element | None) -> None:
    """Give ``joint`` the sockets of OpenSim 4 (before its offset frames are made: see :func:`_joint`);
    ``origin`` is the element that named the parent."""
    for socket, name in (("socket_parent_frame", parent), ("socket_child_frame", child)):
        reader.new(joint, socket, origin if origin is not None and socket == "socket_parent_frame" else joint, name)
    if origin is not None:
        reader.former_child[(joint, "socket_parent_frame")] = reader.former.get(origin, origin.tag)


def _joint(reader: LegacyReader, joint: ET.Element, version: int) -> None:
    """A joint of the JointSet in OpenSim 4 form: offset frames, sockets, ``coordinates``."""
    connectors = _take(joint, "connectors")
    if connectors is not None:  # 30501-30504: parent_body/child_body (or _frame) connectors
        names = {}
        for connector in connectors:
            key = (connector.get("name") or "").replace("_body", "_frame")
            names[key] = (_last(connector.findtext("connectee_name") or ""), connector)
        if set(names) != {"parent_frame", "child_frame"}:
            reader.problem(joint, "expected the connectors parent_body and child_body", "connectors")
            return
        _connect(reader, joint, names["parent_frame"][0], names["child_frame"][0], names["parent_frame"][1])
    sockets = {tag: joint.find(tag) for tag in ("socket_parent_frame", "socket_child_frame")}
    if None in sockets.values():
        reader.problem(joint, "expected <connectors> with the parent and child bodies (OpenSim 3.5 format)")
        return
    old = ("location", "orientation") if version < 30500 else ("location_in_child", "orientation_in_child")
    ends = (("socket_parent_frame", "location_in_parent", "orientation_in_parent"), ("socket_child_frame", *old))
    holder = reader.new(joint, "frames", joint)
    for socket, location, orientation in ends:
        body = sockets[socket].text or ""
        values = [reader.numbers(joint, tag, 3, default=[0.0, 0.0, 0.0]) or [0.0, 0.0, 0.0]
                  for tag in (location, orientation)]
        origin = joint.find(location) if joint.find(location) is not None else joint
        frame = reader.new(holder, "PhysicalOffsetFrame", origin, name=f"{body}_offset")
        reader.new(frame, "socket_parent", origin, body)
        reader.new(frame, "translation", origin, _g(values[0]))
        reader.new(frame, "orientation", joint.find(orientation) if joint.find(orientation) is not None else joint,
                   _g(values[1]))
        sockets[socket].text = f"{body}_offset"
        for tag in (location, orientation):
            _take(joint, tag)
    reverse = _take(joint, "reverse")
    if reverse is not None and (reverse.text or "").strip() == "true":
        sockets["socket_parent_frame"].text, sockets["socket_child_frame"].text = \
            sockets["socket_child_frame"].text, sockets["socket_parent_frame"].text
    elif reverse is not None and (reverse.text or "").strip() != "false":
        reader.problem(joint, f"expected true or false, got {(reverse.text or '').strip()[:40]!r}", "reverse")
    coordinate_set = _take(joint, "CoordinateSet")
    if coordinate_set is not None:
        coordinates = reader.new(joint, "coordinates", coordinate_set)
        objects = coordinate_set.find("objects")
        for coordinate in list(objects) if objects is not None else []:
            objects.remove(coordinate)
            coordinates.append(coordinate)
    transform = joint.find("SpatialTransform")
    for axis in transform if transform is not None else []:
        wrapper = axis.find("function")
        if wrapper is not None and len(wrapper) == 1:
            function = wrapper[0]
            axis.remove(wrapper)
            axis.append(function)


def _path_point(reader: LegacyReader, point: ET.Element) -> None:
    renames = {"body": "socket_parent_frame"}
    if point.tag == "ConditionalPathPoint":
        renames["coordinate"] = "socket_coordinate"
    if point.tag == "MovingPathPoint":
        renames.update({f"{axis}_coordinate": f"socket_{axis}_coordinate" for axis in "xyz"})
        _take(point, "location")
    for old, new in renames.items():
        element = point.find(old)
        if element is not None:
            reader.rename(point, element, new)


def _negate(reader: LegacyReader, element: ET.Element, tag: str) -> None:
    """``isDisabled`` → ``tag`` with the negated value (a value other than true/false is kept, and reported)."""
    flag = element.find("isDisabled")
    if flag is None:
        return
    reader.rename(element, flag, tag)
    flag.text = {"true": "false", "false": "true"}.get((flag.text or "").strip(), flag.text)
