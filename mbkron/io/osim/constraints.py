"""OpenSim loop-closing constraints as one ``[[constraints]]`` group of loop closures.

``PointConstraint`` (``location_body_1`` of ``socket_body_1`` coincides with ``location_body_2`` of
``socket_body_2``), ``PointOnLineConstraint`` (a point of the follower body stays on a line; here a line
fixed in ground along one of its axes) and ``WeldConstraint`` (``socket_frame1`` and ``socket_frame2``
coincide: origin and orientation) become ``[[constraints.loops]]`` (docs/model-format.md; Eq. 100–120 of
the dissertation): a point constraint ``{body_a, point_a, body_b, point_b, plane}``, a point-on-line
constraint the same between the line's point and the follower's with ``plane`` normal to the line (the two
equations across it), a weld constraint
the same with ``plane = "space"``, ``orientation = "fixed"`` and ``rotation = R₁ R₂ᵀ`` (the frames'
orientations in their bodies, as the exact sequence of their X-Y-Z angles), so that
``R_aᵀ R_b = R₁ R₂ᵀ``.

**Equations.** A weld constraint has six. A point constraint has three, except on a *planar* loop:
every moving joint axis on the loop (the bodies from the two constrained bodies up to their common
ancestor) is a rotation about one direction ``n`` or a translation perpendicular to it, and ``n`` is
a coordinate axis of ground (the joints above the common ancestor do not move). Then the component
of the points' separation along ``n`` is constant and only the two others are equations
(``plane = "xy"`` for ``n = z``, …); the constant must be zero (OpenSim could not assemble the model
otherwise), which is checked.

**Dependent joint variables** (the rule): the candidates are the loop's joints whose variable is one
of the model's coordinates itself (``PinJoint``, ``SliderJoint``, a ``CustomJoint`` axis with the
identity function) and which that coordinate drives alone (no other joint variable, moving or
conditional path point uses it). They are taken alternately from the two sides of the loop,
starting next to the constrained bodies (the joint nearest body 1, the one nearest body 2, the
second nearest body 1, …), one per equation, skipping those already taken by an earlier constraint and
those that do not move the closure's equations independently of the ones chosen (:func:`_independent`);
all loop constraints form one group. The dependent coordinates are no longer coordinates of the
model; their bodies' variables are solved (``solver = "lu"``) from the closures, starting from
OpenSim's ``default_value`` (``guess``) at the independent coordinates' defaults. A loop with too
few candidates is reported as unsupported. ``ConstantDistanceConstraint`` and the other OpenSim
constraints are not imported.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

from mbkron.io.osim.joints import GROUND, Offset, frame_offset
from mbkron.io.osim.xml import XmlReader
from mbkron.io.writer import InlineTable
from mbkron.multibody.tree import rotation_matrix

__all__ = ["LOOP_CONSTRAINTS", "add_loop_constraints"]

#: OpenSim constraints imported as loop closures.
LOOP_CONSTRAINTS = ("PointConstraint", "PointOnLineConstraint", "WeldConstraint")
_PLANES = {2: "xy", 0: "yz", 1: "xz"}  # by the index of the normal
_COMPONENTS = {"xy": [0, 1], "yz": [1, 2], "xz": [0, 2], "space": [0, 1, 2]}  # the equations' ground axes
_STEP = 1e-6  # rad or m: the central differences of the closures' equations that check the chosen joints
_TOLERANCE = 1e-9  # m: largest out-of-plane separation of a planar point constraint; also for directions


def _frame_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _body_point(reader: XmlReader, constraint: ET.Element, socket: str, location: str,
                bodies: dict) -> tuple[str, list[float]] | None:
    path = reader.text(constraint, socket)
    point = reader.numbers(constraint, location, 3, default=[0.0, 0.0, 0.0])
    if path is None or point is None:
        return None
    name = _frame_name(path)
    if name != GROUND and name not in bodies:
        reader.problem(constraint, f"expected the path of a body or ground, got {path!r}", socket)
        return None
    return name, point


def _weld_frame(reader: XmlReader, constraint: ET.Element, socket: str, frames: dict,
                bodies: dict) -> tuple[str, Offset] | None:
    path = reader.text(constraint, socket)
    if path is None:
        return None
    name = _frame_name(path)
    if name in frames:
        offset = frame_offset(reader, frames[name])
        body = _frame_name(reader.text(frames[name], "socket_parent") or "")
        if offset is None:
            return None
    else:
        body, offset = name, Offset()
    if body != GROUND and body not in bodies:
        reader.problem(constraint, f"expected a body, ground or a frame of <frames> on one, got {path!r}", socket)
        return None
    return body, offset


_CHILDREN = {"PointConstraint": ("isEnforced", "socket_body_1", "socket_body_2", "location_body_1", "location_body_2"),
             "PointOnLineConstraint": ("isEnforced", "socket_line_body", "socket_follower_body", "line_direction_vec",
                                       "point_on_line", "point_on_follower"),
             "WeldConstraint": ("isEnforced", "socket_frame1", "socket_frame2", "frames")}


def _point_on_line(reader: XmlReader, constraint: ET.Element, bodies: dict) -> dict | None:
    """A ``PointOnLineConstraint`` whose line is fixed in ground along one of its axes, as the point closure
    between ``point_on_line`` and the follower's point whose equations are the two components across the
    line (``plane``: the ground plane normal to the line)."""
    line = _body_point(reader, constraint, "socket_line_body", "point_on_line", bodies)
    follower = _body_point(reader, constraint, "socket_follower_body", "point_on_follower", bodies)
    direction = reader.numbers(constraint, "line_direction_vec", 3, default=[1.0, 0.0, 0.0])
    if line is None or follower is None or direction is None:
        return None
    direction = np.array(direction) / max(np.linalg.norm(direction), 1e-300)
    k = int(np.argmax(np.abs(direction)))
    if line[0] != GROUND or abs(abs(direction[k]) - 1.0) > _TOLERANCE:
        reader.unsupported_element(constraint, "point-on-line constraints whose line is fixed in ground along one of "
                                   f"its axes (line body {line[0]!r}, direction {direction.round(6).tolist()})")
        return None
    return {"body_a": GROUND, "point_a": line[1], "body_b": follower[0], "point_b": follower[1], "plane": _PLANES[k]}


def _closure(reader: XmlReader, constraint: ET.Element, bodies: dict) -> dict | None:
    """The loop-closure table of a constraint (``plane`` decided later for point constraints)."""
    reader.known_children(constraint, _CHILDREN[constraint.tag])
    if not reader.boolean(constraint, "isEnforced", True):
        reader.unsupported_element(constraint, "enforced constraints (isEnforced = true); remove the disabled constraint")
        return None
    if constraint.tag == "PointOnLineConstraint":
        return _point_on_line(reader, constraint, bodies)
    if constraint.tag == "PointConstraint":
        a = _body_point(reader, constraint, "socket_body_1", "location_body_1", bodies)
        b = _body_point(reader, constraint, "socket_body_2", "location_body_2", bodies)
        if a is None or b is None:
            return None
        return {"body_a": a[0], "point_a": a[1], "body_b": b[0], "point_b": b[1]}
    holder = constraint.find("frames")
    frames = {f.get("name"): f for f in (holder if holder is not None else []) if f.tag == "PhysicalOffsetFrame"}
    for frame in holder if holder is not None else []:
        if frame.tag != "PhysicalOffsetFrame":
            reader.unsupported_element(frame, "PhysicalOffsetFrame")
    a = _weld_frame(reader, constraint, "socket_frame1", frames, bodies)
    b = _weld_frame(reader, constraint, "socket_frame2", frames, bodies)
    if a is None or b is None:
        return None
    table = {"body_a": a[0], "point_a": [float(v) for v in a[1].translation], "body_b": b[0],
             "point_b": [float(v) for v in b[1].translation], "plane": "space", "orientation": "fixed"}
    relative = Offset(rotation=a[1].rotation).then(Offset(rotation=b[1].rotation).inverse()).rotation
    if relative:
        table["rotation"] = [InlineTable(axis=list(axis), angle=float(angle)) for axis, angle in relative]
    return table


def _chain(name: str, document_bodies: dict) -> list[str] | None:
    """``name`` and its ancestors up to ground (included); None if a body on the way was not imported
    or the parents form a cycle (both reported elsewhere)."""
    chain = [name]
    while chain[-1] != GROUND:
        if chain[-1] not in document_bodies or len(chain) > len(document_bodies) + 1:
            return None
        chain.append(document_bodies[chain[-1]]["parent"])
    return chain


def _offset(table: dict) -> tuple[np.ndarray, np.ndarray]:
    offset = table.get("offset", {})
    R = np.eye(3)
    for step in offset.get("rotation", []):
        R = R @ rotation_matrix(np.array(step["axis"], dtype=float), step["angle"])
    return np.array(offset.get("translation", [0.0, 0.0, 0.0]), dtype=float), R


def _moves(table: dict) -> bool:
    """Whether a joint moves: not fixed and not a constant (a variable solved by an earlier closure moves)."""
    return table["joint"] != "fixed" and not isinstance(table.get("variable"), float)


def _poses(chain: list[str], document_bodies: dict,
           values: dict | None = None) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Position, rotation and joint axis of the bodies of ``chain`` (root first) in the root's frame,
    moving joints at 0 (or at their ``values``, by body) and constant ones at their value."""
    p, R = np.zeros(3), np.eye(3)
    poses = {}
    values = values or {}
    for name in chain:
        table = document_bodies[name]
        t, R_offset = _offset(table)
        p, R = p + R @ t, R @ R_offset
        axis = R @ np.array(table.get("axis", [0.0, 0.0, 1.0]), dtype=float) if table["joint"] != "fixed" else None
        if axis is not None:
            axis /= np.linalg.norm(axis)
        if table["joint"] != "fixed" and (not _moves(table) or name in values):
            value = values.get(name, table.get("variable"))
            if table["joint"] == "revolute":
                R = R @ rotation_matrix(np.array(table["axis"], dtype=float), value)
            else:
                p = p + axis * value
        poses[name] = (p, R, axis)
    return poses


def _plane(closure: dict, sides: list[list[str]], common: str, document_bodies: dict) -> tuple[str | None, float]:
    """The plane of a planar point-constraint loop (None if spatial) and the out-of-plane separation."""
    above = _chain(common, document_bodies)[:-1] if common != GROUND else []  # (common's chain exists)
    if any(_moves(document_bodies[name]) for name in above):
        return None, 0.0
    ancestor = _poses(list(reversed(above)), document_bodies) if above else {}
    R0 = ancestor[common][1] if above else np.eye(3)
    normal, points = None, []
    for side, body, point in zip(sides, ("body_a", "body_b"), ("point_a", "point_b")):
        poses = _poses(list(reversed(side)), document_bodies)
        for name in side:
            table = document_bodies[name]
            if _moves(table) and table["joint"] == "revolute":
                axis = poses[name][2]
                if normal is None:
                    normal = axis
                elif np.linalg.norm(np.cross(normal, axis)) > _TOLERANCE:
                    return None, 0.0
        p, R = poses[closure[body]][:2] if side else (np.zeros(3), np.eye(3))
        points.append(p + R @ np.array(closure[point], dtype=float))  # (ground's points: common is ground)
    if normal is None:
        return None, 0.0
    for side in sides:
        poses = _poses(list(reversed(side)), document_bodies)
        for name in side:
            if _moves(document_bodies[name]) and document_bodies[name]["joint"] == "prismatic":
                if abs(poses[name][2] @ normal) > _TOLERANCE:
                    return None, 0.0
    in_ground = R0 @ normal
    k = int(np.argmax(np.abs(in_ground)))
    if abs(abs(in_ground[k]) - 1.0) > _TOLERANCE:
        return None, 0.0
    return _PLANES[k], float(normal @ (points[0] - points[1]))


def _independent(candidates: list[str], closure: dict, chains: list[list[str]], document: dict,
                 size: int) -> list[str]:
    """The first ``size`` of ``candidates`` (in the rule's order) whose joint variables move the closure's
    equations independently at the default pose (each chosen one raises the rank of the equations' central
    differences by their variables), fewer if there are not enough: a joint that cannot move the points
    (a rotation about a constrained point, say) solves nothing."""
    if closure.get("orientation") == "fixed":  # a weld: its six equations, by the rule alone
        return candidates[:size]
    bodies = document["bodies"]
    at = {name: document["coordinates"][table["variable"]]["default"] for name, table in bodies.items()
          if table["joint"] != "fixed" and isinstance(table.get("variable"), str)
          and table["variable"] in document["coordinates"]}
    components = _COMPONENTS[closure["plane"]]

    def equations(values: dict) -> np.ndarray:
        ends = []
        for chain, body, point in zip(chains, ("body_a", "body_b"), ("point_a", "point_b")):
            x = np.array(closure[point], dtype=float)
            if closure[body] != GROUND:
                p, R, _ = _poses(list(reversed(chain[:-1])), bodies, values)[closure[body]]
                x = p + R @ x
            ends.append(x)
        return (ends[0] - ends[1])[components]

    chosen, columns = [], np.zeros((len(components), 0))
    for name in candidates:
        if len(chosen) == size:
            break
        column = (equations({**at, name: at[name] + _STEP}) - equations({**at, name: at[name] - _STEP})) / (2 * _STEP)
        trial = np.column_stack([columns, column])
        if np.linalg.matrix_rank(trial, tol=1e-7 * max(1.0, np.abs(trial).max())) == trial.shape[1]:
            chosen.append(name)
            columns = trial
    return chosen


def _mentions(value: object, name: str) -> bool:
    if isinstance(value, str):
        return re.search(rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_])", value) is not None
    if isinstance(value, dict):
        return any(_mentions(v, name) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, name) for v in value)
    return False


def _sole_driver(body: str, name: str, document: dict, reserved: frozenset = frozenset()) -> bool:
    """Whether coordinate ``name`` drives body ``body`` alone: no other joint variable, nor a path point, nor a
    force that acts on a coordinate (``reserved``: a CoordinateLimitForce's, an actuator's) uses it."""
    if name in reserved:
        return False
    if any(b != body and _mentions(t.get("variable"), name) for b, t in document["bodies"].items()):
        return False
    return not any(_mentions(entry.get("point"), name) or _mentions(entry.get("active"), name)
                   for muscle in document["muscles"].values() for entry in muscle["path"])


def add_loop_constraints(reader: XmlReader, constraints: list[ET.Element], bodies: dict, document: dict,
                         reserved: frozenset = frozenset()) -> list[str]:
    """Add the loop-closing ``constraints`` to ``document`` as one ``[[constraints]]`` group; the coordinates in
    ``reserved`` (those forces act on) stay coordinates.

    The dependent coordinates (see the module's rule) leave ``document["coordinates"]`` and their
    bodies' ``variable``; problems and unsupported elements are recorded on ``reader``. Returns one
    line per constraint for the convert header.
    """
    document_bodies = document["bodies"]
    loops, joints, guess, described = [], [], {}, []
    for constraint in constraints:
        if constraint.tag not in LOOP_CONSTRAINTS:
            reader.unsupported_element(constraint, "CoordinateCouplerConstraint, " + ", ".join(LOOP_CONSTRAINTS))
            continue
        closure = _closure(reader, constraint, bodies)
        chains = [] if closure is None else [_chain(closure[k], document_bodies) for k in ("body_a", "body_b")]
        if closure is None or None in chains:
            continue  # a problem was recorded (here, or for a body's joint)
        common = next(name for name in chains[0] if name in chains[1])
        sides = [chain[:chain.index(common)] for chain in chains]
        if constraint.tag == "PointOnLineConstraint":
            plane, _ = _plane({**closure, "plane": "space"}, sides, common, document_bodies)
            if plane is not None and plane != closure["plane"]:
                reader.unsupported_element(constraint, f"point-on-line constraints on a loop whose joints move in a "
                                           f"plane ({plane}) that contains the line: one equation")
                continue
        elif constraint.tag == "PointConstraint":
            plane, gap = _plane(closure, sides, common, document_bodies)
            if plane is not None and abs(gap) > _TOLERANCE:
                reader.problem(constraint, f"the points are {gap:.3g} m apart normal to the plane of the loop's "
                               "joints, which no pose changes: the constraint cannot be satisfied")
                continue
            closure["plane"] = plane or "space"
        size = 6 if constraint.tag == "WeldConstraint" else 2 if closure["plane"] != "space" else 3
        candidates = []
        for k in range(max(len(side) for side in sides)):
            for side in sides:
                if k < len(side):
                    table = document_bodies[side[k]]
                    variable = table.get("variable")
                    if (table["joint"] != "fixed" and isinstance(variable, str) and variable in document["coordinates"]
                            and side[k] not in joints and _sole_driver(side[k], variable, document, reserved)):
                        candidates.append(side[k])
        chosen = _independent(candidates, closure, chains, document, size)
        if len(chosen) < size:
            reader.unsupported_element(constraint, f"loop constraints with as many joints driven by a coordinate of their "
                                       f"own on the loop, moving its points independently, as equations ({size}; this "
                                       f"loop has {len(chosen)})")
            continue
        for body in chosen:
            coordinate = document_bodies[body].pop("variable")
            guess[body] = document["coordinates"].pop(coordinate)["default"]
            joints.append(body)
        loops.append(InlineTable(closure))
        described.append(f"{constraint.tag} {constraint.get('name')} ({closure['body_a']} ↔ {closure['body_b']}, "
                         f"plane {closure['plane']}): solves " + ", ".join(chosen))
    if loops:
        document["constraints"] = [{"joints": joints, "loops": loops, "solver": "lu", "guess": InlineTable(guess)}]
    return described
