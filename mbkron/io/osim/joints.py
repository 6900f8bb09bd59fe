"""OpenSim joints and bodies as chains of model-file bodies.

An OpenSim joint places its child body by ``X_G,child = X_G,parent · X_PF · X_FM(q) · X_BM⁻¹``: the
parent offset frame ``F`` (in the parent body), the mobilizer transform ``X_FM`` and the child offset
frame ``M`` (in the child body). A ``PhysicalOffsetFrame`` is ``translation`` and ``orientation``
(body-fixed X-Y-Z angles, ``R = R_x(a) R_y(b) R_z(c)``). Each joint becomes

1. massless bodies ``JOINT.AXIS`` (revolute or prismatic; the first carries ``X_PF`` as its
   ``offset``), one per axis that moves or has a non-zero constant value;
2. the OpenSim body itself, ``joint = "fixed"``, with ``offset = X_BM⁻¹`` and its mass, mass centre
   and inertia (``Ixx Iyy Izz Ixy Ixz Iyz`` about the mass centre → the symmetric matrix).

``X_FM`` per joint type (axes in the frame the previous axes produced):

- ``CustomJoint``: translations ``translation1..3`` along their axes in ``F``, then rotations
  ``rotation1..3`` about successive (body-fixed) axes, each axis's value its function of its
  coordinates (several for a function of several arguments, in the order named);
- ``PinJoint``: rotation about ``z``; ``SliderJoint``: translation along ``x``; ``WeldJoint``: none;
- ``UniversalJoint``: rotations about ``x`` then ``y``; ``GimbalJoint``: about ``x``, ``y``, ``z``;
- ``PlanarJoint`` (coordinates ``rz, tx, ty``): translations along ``x``, ``y`` of ``F``, then rotation about ``z``;
- ``BallJoint`` (``rx, ry, rz``): rotations about ``x``, ``y``, ``z`` (body-fixed X-Y-Z angles);
- ``FreeJoint`` (``rx, ry, rz, tx, ty, tz``): translations along ``x``, ``y``, ``z`` of ``F``, then
  rotations about ``x``, ``y``, ``z``.

Ball and Free joints are Simbody's ``MobilizedBody::Ball`` and ``Free``, which OpenSim runs with Euler
angles (``Model::initSystem`` sets ``setUseEulerAngles``): their coordinates are the body-fixed X-Y-Z
angles of ``X_FM`` and the translation of ``M``'s origin in ``F``, expressed in ``F`` — exactly the
chain above. Their generalized *speeds* are not the coordinates' rates but the angular velocity
``w_FM`` (and linear velocity ``v_FM``) in ``F``: mbkron's model is in the coordinates' rates ``q̇``,
so its mass matrix is OpenSim's ``Bᵀ M B`` with ``u = B(q) q̇`` (the comparison transforms by
``B = N⁻¹``). Ellipsoid and Scapulothoracic joints are not imported.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from mbkron.io.osim.coordinates import Coordinates
from mbkron.io.osim.functions import Affine, Term, constant_term, emit, read_function
from mbkron.io.osim.xml import XmlReader
from mbkron.io.writer import InlineTable
from mbkron.multibody.tree import rotation_matrix

__all__ = ["JOINTS", "Offset", "add_joint", "body_table", "GROUND"]

GROUND = "ground"
_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
#: Joints with fixed axes: (kind, axis, index of the joint's coordinate), in the order applied.
_FIXED_AXES = {
    "WeldJoint": [],
    "PinJoint": [("rotation", _Z, 0)],
    "SliderJoint": [("translation", _X, 0)],
    "UniversalJoint": [("rotation", _X, 0), ("rotation", _Y, 1)],
    "GimbalJoint": [("rotation", _X, 0), ("rotation", _Y, 1), ("rotation", _Z, 2)],
    "PlanarJoint": [("translation", _X, 1), ("translation", _Y, 2), ("rotation", _Z, 0)],
    "BallJoint": [("rotation", _X, 0), ("rotation", _Y, 1), ("rotation", _Z, 2)],
    "FreeJoint": [("translation", _X, 3), ("translation", _Y, 4), ("translation", _Z, 5),
                  ("rotation", _X, 0), ("rotation", _Y, 1), ("rotation", _Z, 2)],
}
#: The joints imported.
JOINTS = ("CustomJoint", *_FIXED_AXES)
_AXIS_NAMES = {"rotation": ("rotation1", "rotation2", "rotation3"), "translation": ("translation1", "translation2", "translation3")}


@dataclass
class Offset:
    """A constant transform: ``translation`` after the rotation sequence ``rotation`` [(axis, angle), …]."""

    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: list[tuple[tuple[float, float, float], float]] = field(default_factory=list)

    def matrix(self) -> np.ndarray:
        R = np.eye(3)
        for axis, angle in self.rotation:
            R = R @ rotation_matrix(np.array(axis), angle)
        return R

    def then(self, other: Offset) -> Offset:
        """``self · other``."""
        return Offset(self.translation + self.matrix() @ other.translation, self.rotation + other.rotation)

    def inverse(self) -> Offset:
        return Offset(-self.matrix().T @ self.translation, [(axis, -angle) for axis, angle in reversed(self.rotation)])

    def is_identity(self) -> bool:
        return not self.translation.any() and not self.rotation

    def table(self) -> dict:
        """The model-file ``offset`` (an inline table)."""
        out = InlineTable(translation=[float(v) for v in self.translation])
        if self.rotation:
            out["rotation"] = [{"axis": list(axis), "angle": float(angle)} for axis, angle in self.rotation]
        return out


def frame_offset(reader: XmlReader, frame: ET.Element) -> Offset | None:
    """The transform of a ``PhysicalOffsetFrame`` in its parent (body-fixed X-Y-Z orientation)."""
    reader.known_children(frame, ("socket_parent", "translation", "orientation"))
    translation = reader.numbers(frame, "translation", 3, default=[0.0, 0.0, 0.0])
    orientation = reader.numbers(frame, "orientation", 3, default=[0.0, 0.0, 0.0])
    if translation is None or orientation is None:
        return None
    return Offset(np.array(translation), [(axis, angle) for axis, angle in zip((_X, _Y, _Z), orientation) if angle])


def body_table(reader: XmlReader, body: ET.Element) -> dict:
    """Mass, mass centre and inertia of a ``Body`` (inertia ``Ixx Iyy Izz Ixy Ixz Iyz`` → matrix).

    ``components`` holding only offset frames (for geometry) are skipped: nothing refers to them
    (a joint or path point that did would name a frame that is reported as unknown)."""
    components = body.find("components")
    frames_only = components is not None and all(c.tag == "PhysicalOffsetFrame" for c in components)
    reader.known_children(body, ("mass", "mass_center", "inertia") + (("components",) if frames_only else ()))
    mass = reader.number(body, "mass", 0.0)
    com = reader.numbers(body, "mass_center", 3, default=[0.0, 0.0, 0.0])
    inertia = reader.numbers(body, "inertia", 6, default=[0.0] * 6)
    out: dict = {"mass": mass or 0.0, "com": com or [0.0, 0.0, 0.0]}
    if inertia is not None:
        xx, yy, zz, xy, xz, yz = inertia
        out["inertia"] = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    return out


def _frame_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def resolve_socket(reader: XmlReader, joint: ET.Element, socket: str, frames: dict, bodies: dict) -> tuple[str, Offset] | None:
    """(body, transform of the frame in the body) of a joint's (or a bushing's) socket: one of its offset frames,
    a body or ground."""
    path = reader.text(joint, socket)
    if path is None:
        return None
    offset = Offset()
    name = _frame_name(path)
    seen = set()
    while name in frames and name not in seen:
        seen.add(name)
        frame = frames[name]
        own = frame_offset(reader, frame)
        if own is None:
            return None
        offset = own.then(offset)
        name = _frame_name(reader.text(frame, "socket_parent") or "")
    if name == GROUND or name in bodies:
        return name, offset
    reader.problem(joint, f"expected a path to a body, ground or one of the joint's frames, got {path!r}", socket)
    return None


def _axes(reader: XmlReader, joint: ET.Element, coordinates: Coordinates) -> list[tuple[str, str, tuple, Term]] | None:
    """(name, kind, axis, term) of each axis of ``X_FM``, in the order applied."""
    holder = joint.find("coordinates")
    names = [c.get("name") or "" for c in (holder if holder is not None else [])]
    if joint.tag == "CustomJoint":
        transform = reader.child(joint, "SpatialTransform")
        if transform is None:
            return None
        out = {}
        for axis_element in transform:
            label = axis_element.get("name")
            if axis_element.tag != "TransformAxis" or label not in (*_AXIS_NAMES["rotation"], *_AXIS_NAMES["translation"]):
                reader.unsupported_element(axis_element, "TransformAxis named rotation1-3 or translation1-3")
                continue
            direction = reader.numbers(axis_element, "axis", 3)
            functions = [e for e in axis_element if e.tag not in ("coordinates", "axis")]
            used = (reader.text(axis_element, "coordinates", "") or "").split()
            if len(functions) > 1:
                reader.problem(axis_element, f"expected one function element, got {len(functions)}")
                continue
            if not functions:  # OpenSim reads the property's default, Constant(0), whatever the coordinates named
                term = constant_term(0.0)
            else:
                term = coordinates.of(read_function(reader, functions[0]), used, functions[0])
            if direction is None or term is None:
                continue
            if not np.any(direction):
                reader.problem(axis_element, "expected a non-zero axis", "axis")
                continue
            out[label] = ("rotation" if label.startswith("rotation") else "translation", tuple(direction), term)
        return [(label, *out[label]) for kind in ("translation", "rotation") for label in _AXIS_NAMES[kind] if label in out]
    axes = _FIXED_AXES[joint.tag]
    if len(names) != len({index for *_, index in axes}):
        reader.problem(joint, f"a {joint.tag} has {len({i for *_, i in axes})} coordinate(s), got {len(names)}", "coordinates")
        return None
    out = []
    for kind, direction, index in axes:
        term = coordinates.term(names[index]) if names[index] in coordinates.info else None
        if term is not None:
            out.append((f"{kind}{'xyz'[direction.index(1.0)]}", kind, direction, term))
    return out


def add_joint(reader: XmlReader, joint: ET.Element, coordinates: Coordinates, bodies: dict[str, ET.Element],
              document_bodies: dict[str, dict], children: set[str], motion: dict[str, str]) -> None:
    """Add the bodies of ``joint`` (massless axes, then its child body) to ``document_bodies``.

    ``children`` collects the child bodies seen; ``motion`` records, per model coordinate, whether
    it drives a rotation (``"rotation"``, which wins) or only translations.
    """
    name = reader.name(joint)
    if name is None:
        return
    holder = joint.find("frames")
    frames = {f.get("name"): f for f in (holder if holder is not None else []) if f.tag == "PhysicalOffsetFrame"}
    if joint.tag not in JOINTS:
        reader.unsupported_element(joint, "the joints " + ", ".join(JOINTS))
        child = resolve_socket(reader, joint, "socket_child_frame", frames, bodies)
        children.add(child[0] if child else "")  # its body is accounted for by this message
        return
    reader.known_children(joint, ("socket_parent_frame", "socket_child_frame", "coordinates", "frames")
                          + (("SpatialTransform",) if joint.tag == "CustomJoint" else ()))
    for frame in holder if holder is not None else []:
        if frame.tag != "PhysicalOffsetFrame":
            reader.unsupported_element(frame, "PhysicalOffsetFrame")
    parent = resolve_socket(reader, joint, "socket_parent_frame", frames, bodies)
    child = resolve_socket(reader, joint, "socket_child_frame", frames, bodies)
    axes = _axes(reader, joint, coordinates)
    if parent is None or child is None or axes is None:
        return
    (parent_body, parent_offset), (child_body, child_offset) = parent, child
    if child_body == GROUND or child_body in children:
        reader.problem(joint, f"the child body `{child_body}` is ground or the child of another joint "
                       "(closed loops are not imported)", "socket_child_frame")
        return
    children.add(child_body)
    previous, pending = parent_body, parent_offset
    for label, kind, direction, term in axes:
        value = emit(term)
        if value == 0.0 and isinstance(term.function, Affine):
            continue  # an axis that never moves
        for coordinate in term.coordinates:
            if motion.get(coordinate) != "rotation":
                motion[coordinate] = kind
        body = f"{name}.{label}"
        if body in bodies:
            reader.problem(joint, f"the generated body name `{body}` is also an OpenSim body's name")
            return
        table: dict = {"parent": previous, "joint": "revolute" if kind == "rotation" else "prismatic",
                       "axis": list(direction), "variable": value}
        if not pending.is_identity():
            table["offset"] = pending.table()
        document_bodies[body] = table
        previous, pending = body, Offset()
    table = {"parent": previous, "joint": "fixed", "joint_name": name}
    offset = pending.then(child_offset.inverse())
    if not offset.is_identity():
        table["offset"] = offset.table()
    document_bodies[child_body] = {**table, **body_table(reader, bodies[child_body])}
