"""OpenSim's ``leg6dof9musc.osim`` (Delp 1990 right leg, 9 Thelen muscles) as the mbkron model file
``models/leg6dof9musc.toml``.

The ``.osim`` file is parsed as data with :mod:`xml.etree.ElementTree`; nothing from it is evaluated.
Only the functions the file uses are read (``LinearFunction``, ``Constant``, ``SimmSpline``,
``MultiplierFunction``); anything else raises ``ValueError``.

Modelling choices (also written at the top of the model file):

- **Pelvis fixed to ground** at the pose the model has with its three pelvis coordinates at zero:
  ``Trans(ground_offset) · R_z(0) · R_y(c) · R_x(0)`` with ``c`` the joint's constant rotation. The
  comparison sets OpenSim's pelvis coordinates to zero, so body poses compare in ground.
- **Hip** ``hip_flexion_r``: OpenSim's CustomJoint ``R_z(q) · R_x(a) · R_y(b)`` (body-fixed successive
  rotations, ``a``, ``b`` constants) is a massless revolute body ``hip_r_hip_flexion_r`` about z and
  the fixed body ``femur_r`` rotated by the constants.
- **Knee** ``knee_angle_r``: ``Trans(t_x(q) x + t_y(q) y) · R_z(q)``, the translations SimmSplines of
  the knee angle, is two massless prismatic bodies (``knee_r_tx``, ``knee_r_ty``, FMM splines =
  SimmSpline) and the revolute ``tibia_r``.
- **Patella**: OpenSim's coordinate ``knee_angle_pat_r`` is tied to the knee by a
  CoordinateCouplerConstraint (``knee_angle_pat_r = 1·knee_angle_r + 0``), so the patella's spline
  translations and spline rotation are written as FMM splines of ``knee_angle_r`` itself (massless
  ``tib_pat_r_tx``, ``tib_pat_r_ty``; revolute ``patella_r``). No muscle attaches to the patella.
- **Ankle** ``ankle_angle_r``: revolute about OpenSim's axis (normalised, as Simbody does); subtalar
  and mtp are welds (fixed bodies ``calcn_r``, ``toes_r``).
- Angles in radians (``[units] angle = "rad"``), so every number, spline knots included, is the
  ``.osim`` file's number unchanged. Coordinate ranges and defaults are OpenSim's.
- **Muscles**: the 9 muscles with their path points; the quadriceps' MovingPathPoints on the tibia
  are FMM splines of the knee angle per component (a spline whose values are all equal is written as
  its constant), extrapolated linearly as OpenSim does.
- **ConditionalPathPoints** (not supported by mbkron, see docs/model-format.md): each is kept if it is
  active at the reference pose (all coordinates zero, standing) and removed otherwise. Kept:
  ``psoas_r-P3`` (active for hip flexion in [−90°, 45°]) and ``med_gas_r-P2`` (knee in [−45°, 10°]);
  removed: ``rect_fem_r-P2`` (knee in [−150°, −83.65°]) and ``vas_int_r-P3`` (knee in [−150°, −81.4°]).
  The file therefore equals OpenSim's paths on :func:`validity_ranges` — hip flexion in [−90°, 45°],
  knee in [−45°, 10°], ankle over its range — and not outside.
- Hill parameters: F_max, optimal fibre length, tendon slack length, pennation, v_max. The file format
  has no keys for the Thelen curve constants, so mbkron's defaults (KshapeActive 0.45, KshapePassive 5)
  apply, not the ``.osim``'s 0.5 and 4; only the path geometry is compared with OpenSim.

Run ``python -m validation.leg6dof9musc`` to (re)write the model file.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from mbkron.io import format_toml

__all__ = ["OSIM", "TARGET", "REFERENCE_POSE", "conditional_points", "leg_document", "main", "validity_ranges"]

OSIM = Path(os.environ.get("MBKRON_LEG6DOF9MUSC_OSIM",
                           "/work/shared/references/opensim-models/leg6dof9musc.osim"))
TARGET = Path(__file__).resolve().parents[1] / "models" / "leg6dof9musc.toml"
#: Independent coordinates of the model file, in order.
COORDINATES = ("hip_flexion_r", "knee_angle_r", "ankle_angle_r")
#: The pose (rad) at which a conditional path point's state decides whether it is kept.
REFERENCE_POSE = {name: 0.0 for name in COORDINATES}


def _model(path: Path = OSIM) -> ET.Element:
    model = ET.parse(path).getroot().find("Model")
    if model is None:
        raise ValueError(f"{path}: no <Model> element")
    return model


def _text(element: ET.Element, tag: str) -> str:
    child = element.find(tag)
    if child is None:
        raise ValueError(f"<{element.tag} name={element.get('name')!r}>: missing <{tag}>")
    return (child.text or "").strip()


def _floats(element: ET.Element, tag: str) -> list[float]:
    return [float(v) for v in _text(element, tag).split()]


def _function(element: ET.Element) -> tuple:
    """An OpenSim function as ``("constant", c)``, ``("linear", slope, intercept)`` or
    ``("spline", x, y)`` (SimmSpline, values already multiplied by any MultiplierFunction scale)."""
    if element.tag == "Constant":
        return ("constant", float(_text(element, "value")))
    if element.tag == "LinearFunction":
        slope, intercept = _floats(element, "coefficients")
        return ("linear", slope, intercept)
    if element.tag == "SimmSpline":
        return ("spline", _floats(element, "x"), _floats(element, "y"))
    if element.tag == "MultiplierFunction":
        scale = float(_text(element, "scale"))
        inner = _function(list(element.find("function"))[0])
        if inner[0] == "constant":
            return ("constant", scale * inner[1])
        if inner[0] == "spline":
            return ("spline", inner[1], [scale * v for v in inner[2]])
        return ("linear", scale * inner[1], scale * inner[2])
    raise ValueError(f"unsupported OpenSim function <{element.tag}>")


def _value(function: tuple, coordinate: str | None) -> object:
    """A joint variable or path-point component for the model file."""
    kind = function[0]
    if kind == "constant":
        return function[1]
    if coordinate is None:
        raise ValueError(f"function {function} has no coordinate")
    if kind == "linear":
        slope, intercept = function[1:]
        if (slope, intercept) == (1.0, 0.0):
            return coordinate
        return f"{slope!r}*{coordinate} + {intercept!r}"
    x, y = function[1:]
    if len(set(y)) == 1:
        return y[0]
    return {"type": "tabulated", "coordinate": coordinate, "kind": "fmm", "x": x, "y": y}


def _by_name(parent: ET.Element) -> dict[str, ET.Element]:
    return {e.get("name"): e for e in parent}


def _inertia(body: ET.Element) -> list:
    xx, yy, zz, xy, xz, yz = _floats(body, "inertia")
    return [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]


def _mass_properties(body: ET.Element) -> dict:
    return {"mass": float(_text(body, "mass")), "com": _floats(body, "mass_center"), "inertia": _inertia(body)}


def _frames(joint: ET.Element) -> dict[str, tuple[str, list, list]]:
    """Offset frames of a joint: name → (body, translation, xyz orientation)."""
    out = {}
    for frame in joint.findall("frames/PhysicalOffsetFrame"):
        out[frame.get("name")] = (_text(frame, "socket_parent").rsplit("/", 1)[-1],
                                  _floats(frame, "translation"), _floats(frame, "orientation"))
    return out


def _transform_axes(joint: ET.Element) -> list[tuple[str, str | None, list, tuple]]:
    """(name, coordinate or None, axis, function) of the six TransformAxes of a CustomJoint."""
    out = []
    for axis in joint.find("SpatialTransform"):
        function = [e for e in axis if e.tag not in ("coordinates", "axis")][0]
        coordinate = _text(axis, "coordinates") or None
        out.append((axis.get("name"), coordinate, _floats(axis, "axis"), _function(function)))
    return out


def _check_identity(frames: dict, name: str) -> None:
    _, translation, orientation = frames[name]
    if any(translation) or any(orientation):
        raise ValueError(f"child frame {name} is not the body frame (not supported)")


def _couplers(model: ET.Element) -> dict[str, str]:
    """dependent coordinate → independent coordinate, for identity couplers."""
    out = {}
    for constraint in model.find("ConstraintSet/objects"):
        if constraint.tag != "CoordinateCouplerConstraint":
            raise ValueError(f"unsupported constraint <{constraint.tag}>")
        function = _function(list(constraint.find("coupled_coordinates_function"))[0])
        if function != ("linear", 1.0, 0.0) or float(_text(constraint, "scale_factor")) != 1.0:
            raise ValueError(f"coupler {constraint.get('name')}: only dependent = independent is supported")
        out[_text(constraint, "dependent_coordinate_name")] = _text(constraint, "independent_coordinate_names")
    return out


def conditional_points(path: Path = OSIM) -> list[dict]:
    """Every ConditionalPathPoint: muscle, name, coordinate, range (rad) and whether it is kept."""
    out = []
    for muscle in _model(path).find("ForceSet/objects"):
        for point in muscle.find("GeometryPath/PathPointSet/objects"):
            if point.tag == "ConditionalPathPoint":
                coordinate = _text(point, "socket_coordinate").rsplit("/", 1)[-1]
                low, high = _floats(point, "range")
                active = low <= REFERENCE_POSE[coordinate] <= high
                out.append({"muscle": muscle.get("name"), "name": point.get("name"), "coordinate": coordinate,
                            "range": (low, high), "kept": active})
    return out


def validity_ranges(path: Path = OSIM) -> dict[str, tuple[float, float]]:
    """Per coordinate, the closed interval (rad) around :data:`REFERENCE_POSE` within the coordinate's
    range on which every conditional point keeps its reference state: there the model file's paths
    are OpenSim's."""
    model = _model(path)
    out = {}
    for joint in model.find("JointSet/objects"):
        for coordinate in joint.findall("coordinates/Coordinate"):
            if coordinate.get("name") in COORDINATES:
                out[coordinate.get("name")] = tuple(_floats(coordinate, "range"))
    for point in conditional_points(path):
        low, high = out[point["coordinate"]]
        a, b = point["range"]
        if point["kept"]:
            low, high = max(low, a), min(high, b)
        elif b < REFERENCE_POSE[point["coordinate"]]:
            low = max(low, math.nextafter(b, math.inf))
        else:
            high = min(high, math.nextafter(a, -math.inf))
        out[point["coordinate"]] = (low, high)
    return out


def leg_document(path: Path = OSIM) -> dict:
    """The model file as a TOML document (SI units, radians)."""
    model = _model(path)
    bodies_xml = _by_name(model.find("BodySet/objects"))
    joints = _by_name(model.find("JointSet/objects"))
    couplers = _couplers(model)

    def independent(coordinate: str | None) -> str | None:
        return couplers.get(coordinate, coordinate)

    coordinates = {}
    for joint in joints.values():
        for c in joint.findall("coordinates/Coordinate"):
            if c.get("name") in COORDINATES:
                coordinates[c.get("name")] = {"range": _floats(c, "range"), "default": float(_text(c, "default_value"))}
    document: dict = {
        "model": {"format_version": 1, "name": "leg6dof9musc",
                  "description": "OpenSim leg6dof9musc (Delp 1990 right leg, 9 Thelen 2003 muscles), pelvis fixed; "
                                 "conditional path points fixed at their state when standing (see the header)",
                  "gravity": _floats(model, "gravity")},
        "units": {"angle": "rad", "length": "m", "mass": "kg"},
        "coordinates": {name: coordinates[name] for name in COORDINATES},
        "bodies": {},
    }
    bodies = document["bodies"]

    # Pelvis: ground_pelvis with its coordinates at zero.
    pelvis_joint = joints["ground_pelvis"]
    frames = _frames(pelvis_joint)
    _check_identity(frames, _text(pelvis_joint, "socket_child_frame"))
    _, translation, orientation = frames[_text(pelvis_joint, "socket_parent_frame")]
    if any(orientation):
        raise ValueError("ground_pelvis: rotated parent frame not supported")
    axes = _transform_axes(pelvis_joint)
    rotation = [{"axis": a, "angle": f[1]} for _, c, a, f in axes[:3] if c is None and f[0] == "constant" and f[1]]
    shift = [f[1] for _, c, _, f in axes[3:] if c is None]
    if any(shift) or any(f[0] == "linear" and f[2] for _, c, _, f in axes if c is not None):
        raise ValueError("ground_pelvis: unexpected constant offsets")
    bodies["pelvis"] = {"joint": "fixed", "offset": {"translation": translation, "rotation": rotation},
                        **_mass_properties(bodies_xml["pelvis"])}

    for name, joint in joints.items():
        if name == "ground_pelvis":
            continue
        frames = _frames(joint)
        parent_body, translation, orientation = frames[_text(joint, "socket_parent_frame")]
        child_frame = _text(joint, "socket_child_frame")
        child = frames[child_frame][0]
        _check_identity(frames, child_frame)
        if any(orientation):
            raise ValueError(f"{name}: rotated parent frame not supported")
        if joint.tag == "WeldJoint":
            bodies[child] = {"parent": parent_body, "joint": "fixed", "offset": {"translation": translation},
                             **_mass_properties(bodies_xml[child])}
            continue
        if joint.tag != "CustomJoint":
            raise ValueError(f"unsupported joint <{joint.tag}>")
        axes = _transform_axes(joint)
        parent, offset = parent_body, {"translation": translation}
        # Translations first (X_FM = [R, p], p along the parent's axes), each a prismatic body.
        for label, coordinate, axis, function in axes[3:]:
            if function[0] == "constant":
                if function[1]:
                    raise ValueError(f"{name}: constant translation not supported")
                continue
            body = f"{name}_t{'xyz'[int(np.argmax(np.abs(axis)))]}"
            bodies[body] = {"parent": parent, "joint": "prismatic", "axis": axis,
                            "variable": _value(function, independent(coordinate)), "offset": offset}
            parent, offset = body, None
        # Rotations: the one driven by a coordinate, then the constant ones (body-fixed sequence).
        moving = [(c, a, f) for _, c, a, f in axes[:3] if c is not None]
        constant = [{"axis": a, "angle": f[1]} for _, c, a, f in axes[:3] if c is None and f[1] != 0.0]
        if len(moving) != 1 or axes[:3][0][1] is None:
            raise ValueError(f"{name}: exactly one coordinate-driven rotation, listed first, is supported")
        coordinate, axis, function = moving[0]
        body = child if not constant else f"{name}_{coordinate}"
        entry = {"parent": parent, "axis": axis, "variable": _value(function, independent(coordinate))}
        if offset is not None:
            entry["offset"] = offset
        bodies[body] = entry
        if constant:
            bodies[child] = {"parent": body, "joint": "fixed", "offset": {"translation": [0.0, 0.0, 0.0],
                                                                        "rotation": constant}}
        bodies[child].update(_mass_properties(bodies_xml[child]))
        for b in bodies.values():
            if b.get("offset") is None:
                b.pop("offset", None)

    document["muscles"] = {}
    for muscle in model.find("ForceSet/objects"):
        if muscle.tag != "Thelen2003Muscle":
            raise ValueError(f"unsupported force <{muscle.tag}>")
        wraps = muscle.find("GeometryPath/PathWrapSet/objects")
        if wraps is not None and len(wraps):
            raise ValueError(f"{muscle.get('name')}: wrapping is not supported")
        path_points = []
        for point in muscle.find("GeometryPath/PathPointSet/objects"):
            body = _text(point, "socket_parent_frame").rsplit("/", 1)[-1]
            if point.tag == "ConditionalPathPoint":
                coordinate = _text(point, "socket_coordinate").rsplit("/", 1)[-1]
                low, high = _floats(point, "range")
                if not low <= REFERENCE_POSE[coordinate] <= high:
                    continue
                path_points.append({"body": body, "point": _floats(point, "location")})
            elif point.tag == "PathPoint":
                path_points.append({"body": body, "point": _floats(point, "location")})
            elif point.tag == "MovingPathPoint":
                components = []
                for axis in "xyz":
                    coordinate = _text(point, f"socket_{axis}_coordinate").rsplit("/", 1)[-1]
                    function = _function(list(point.find(f"{axis}_location"))[0])
                    components.append(_value(function, independent(coordinate)))
                entry = {"body": body, "point": components}
                if any(isinstance(c, dict) for c in components):
                    entry["extrapolate"] = True
                path_points.append(entry)
            else:
                raise ValueError(f"unsupported path point <{point.tag}>")
        document["muscles"][muscle.get("name")] = {
            "model": "hill", "max_isometric_force": float(_text(muscle, "max_isometric_force")),
            "optimal_fiber_length": float(_text(muscle, "optimal_fiber_length")),
            "tendon_slack_length": float(_text(muscle, "tendon_slack_length")),
            "pennation_angle": float(_text(muscle, "pennation_angle_at_optimal")),
            "max_contraction_velocity": float(_text(muscle, "max_contraction_velocity")),
            "path": path_points}
    return document


def header(path: Path = OSIM) -> str:
    kept = [p for p in conditional_points(path) if p["kept"]]
    dropped = [p for p in conditional_points(path) if not p["kept"]]

    def describe(points):
        return "; ".join(f"{p['name']} ({p['coordinate']} in [{math.degrees(p['range'][0]):.2f}°, "
                         f"{math.degrees(p['range'][1]):.2f}°])" for p in points)

    valid = ", ".join(f"{c} in [{math.degrees(a):.2f}°, {math.degrees(b):.2f}°]" for c, (a, b) in validity_ranges(path).items())
    return f"""# OpenSim's leg6dof9musc (Delp et al. 1990 right leg, Yamaguchi & Zajac 1989 planar knee; 9 Thelen 2003
# muscles), from opensim-org/opensim-models Models/Leg6Dof9Musc/leg6dof9musc.osim (CC BY 3.0: Delp, Loan,
# Hoy, Zajac, Topp, Rosen, Thelen, Anderson, Seth, Reinbolt and the OpenSim team).
# GENERATED by `python -m validation.leg6dof9musc`; edit the script, not this file.
#
# - Angles in radians: every number is the .osim file's. Pelvis FIXED to ground at its pose with the
#   pelvis coordinates at zero. Hip: revolute `hip_r_hip_flexion_r` (z) then `femur_r` rotated by the
#   joint's constant angles (body-fixed). Knee: massless prismatic `knee_r_tx`, `knee_r_ty` (FMM splines of
#   knee_angle_r = OpenSim SimmSpline) then revolute `tibia_r`. Patella: OpenSim's knee_angle_pat_r is
#   coupled to knee_angle_r (identity CoordinateCouplerConstraint), so its splines are written as functions
#   of knee_angle_r. Ankle: revolute about OpenSim's (normalised) axis; subtalar and mtp welded.
# - Muscles: straight lines through the path points; the quadriceps' moving points on the tibia are FMM
#   splines of knee_angle_r, extrapolated linearly (as OpenSim).
# - Conditional path points (unsupported) are fixed at their state when standing (all coordinates 0).
#   Kept: {describe(kept)}.
#   Removed: {describe(dropped)}.
#   The paths equal OpenSim's only for {valid}.
# - Hill parameters F_max, l_opt, l_slack, pennation, v_max are the file's; the Thelen curve constants are
#   mbkron's defaults (KshapeActive 0.45, KshapePassive 5), not the file's 0.5 and 4.

"""


def main() -> None:
    """Write ``models/leg6dof9musc.toml``."""
    text = header() + format_toml(leg_document())
    temporary = TARGET.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, TARGET)
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
