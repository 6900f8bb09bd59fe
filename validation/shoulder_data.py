"""The Holzbaur et al. (2005) shoulder, read from the compiled reference data, and written as mbkron
model files (``models/shoulder_rhythm.toml``, ``models/shoulder_rhythm_b.toml``).

The data (``validation/data/shoulder/holzbaur2005_shoulder.json``, in the repository; its README names
the public sources) give the
joint chain thorax → clavicle → (clavphant) → scapula → (scapphant, humphant, humphant1) → humerus:
each joint is ``Trans(t) · R(a₁, q₁) · R(a₂, q₂) · …`` with body-fixed successive rotations about
the normalised axes ``a_k``, each angle a function of one coordinate. Every rhythm function
``f0``–``f13`` is a two-knot spline through the origin, i.e. ``angle = slope · coordinate`` (degrees
per degree). Both the model file and the OpenSim model (``validation/opensim/shoulder.py``) are
built from :func:`load_shoulder`, so they describe the same shoulder.

mbkron writes each rotation as one revolute body: the last rotation of a joint carries the
segment's name and inertia (MoBL-ARMS, Saul et al. 2015 — the seed's Quental et al. 2012 table was
not available), the others are massless (``<segment>_r<k>``). Moving via points are fixed base
points plus splines of a coordinate (FMM cubic splines = OpenSim ``SimmSpline``), extrapolated
linearly outside their knots as OpenSim does. Wrapping surfaces are not modelled.

Run ``python -m validation.shoulder_data`` to (re)write the two model files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbkron.io import format_toml

__all__ = ["DATA", "Joint", "Muscle", "PathPoint", "Rotation", "Shoulder", "load_shoulder", "main", "shoulder_document"]

#: The compiled Holzbaur (2005) data (in the repository, with its provenance README); override with the
#: environment variable MBKRON_SHOULDER_JSON.
DATA = Path(os.environ.get("MBKRON_SHOULDER_JSON",
                           Path(__file__).resolve().parent / "data" / "shoulder" / "holzbaur2005_shoulder.json"))
MODELS = Path(__file__).resolve().parents[1] / "models"

#: Coordinate names in the data → names in mbkron's model files (and the OpenSim model).
COORDINATES = {"elv_angle": "elv_angle", "shoulder_elv": "shoulder_elv", "shoulder_rot": "shoulder_rot"}

#: Rhythm variant B (de Groot & Brand 2001, coefficients of the DAS3 code): girdle angle (deg) =
#: a·elv_angle + b·shoulder_elv, by (joint, SIMM dof); the unrot joints use the negated values.
VARIANT_B = {("sternoclavicular", "r2"): (0.120, -0.242), ("sternoclavicular", "r3"): (-0.046, 0.123),
             ("acromioclavicular", "r2"): (0.140, -0.049), ("acromioclavicular", "r3"): (-0.079, 0.396),
             ("acromioclavicular", "r1"): (-0.028, 0.184)}
#: The unrot joint that undoes each girdle joint.
INVERSE_JOINT = {"unrotscap": "sternoclavicular", "unrothum": "acromioclavicular"}
#: Segment name of the child frame of each joint (phantom frames are massless).
SEGMENTS = {"sternoclavicular": "clavicle", "unrotscap": "clavphant", "acromioclavicular": "scapula",
            "unrothum": "scapphant", "shoulder0": "humphant", "shoulder1": "humphant1", "shoulder2": "humerus"}


@dataclass(frozen=True)
class Rotation:
    """One rotation of a joint: ``angle = Σ slopes[c] · c`` (degrees per degree) about ``axis``.

    Attributes
    ----------
    axis : ndarray, shape (3,)
        Normalised, in the frame produced by the previous rotations of the joint.
    slopes : dict of str to float
        Coordinate name → slope; every rhythm function passes through zero and is linear.
    dof : str
        The SIMM degree of freedom (``r1``, ``r2``, ``r3``).
    """

    axis: np.ndarray
    slopes: dict
    dof: str


@dataclass(frozen=True)
class Joint:
    """A joint of the chain: ``Trans(translation) · R(rotations[0]) · R(rotations[1]) · …``."""

    name: str
    parent: str
    child: str
    translation: np.ndarray
    rotations: tuple


@dataclass(frozen=True)
class PathPoint:
    """A path point: ``base`` (m, body frame) plus, per axis, splines of a coordinate (x in degrees).

    ``offsets[axis]`` is a list of ``(coordinate, x_deg, y_m)``; empty for a fixed point.
    """

    body: str
    base: np.ndarray
    offsets: tuple

    @property
    def moving(self) -> bool:
        return any(self.offsets)


@dataclass(frozen=True)
class Muscle:
    """A muscle: the path as listed in the SIMM file and its Hill parameters (SI, pennation in degrees)."""

    name: str
    points: tuple
    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle_deg: float


@dataclass(frozen=True)
class Shoulder:
    """The whole data set: coordinates (range and default in degrees), joints, inertias, muscles."""

    coordinates: dict
    joints: tuple
    inertia: dict
    muscles: tuple


def _floats(values) -> np.ndarray:
    return np.array([float(v) for v in (values.split() if isinstance(values, str) else values)])


def _slope(function: dict) -> float:
    """Slope of a rhythm function, checking that it is the straight line through the origin."""
    x, y = _floats(function["x_deg_or_coord_units"]), _floats(function["y"])
    slope = (y[-1] - y[0]) / (x[-1] - x[0])
    if x.size != 2 or not np.isclose(y[0] - slope * x[0], 0.0, atol=1e-12):
        raise ValueError(f"a rhythm function is not linear through zero: x={x.tolist()}, y={y.tolist()}")
    return float(slope)


def load_shoulder(variant: str = "A", path: Path = DATA) -> Shoulder:
    """Read the shoulder data.

    Parameters
    ----------
    variant : {"A", "B"}
        Rhythm A: the girdle follows the elevation only (Holzbaur 2005). Rhythm B: the girdle angles
        also depend on the plane of elevation (de Groot & Brand 2001, :data:`VARIANT_B`).
    path : Path
        The JSON file.
    """
    if variant not in ("A", "B"):
        raise ValueError(f"variant must be 'A' or 'B', got {variant!r}")
    if not Path(path).is_file():
        raise FileNotFoundError(f"the shoulder reference data `{path}` is not a file (check MBKRON_SHOULDER_JSON)")
    data = json.loads(Path(path).read_text())
    functions = data["functions_deg"]
    coordinates = {COORDINATES[name]: (tuple(float(v) for v in c["range_deg"]), float(c["default_deg"]))
                   for name, c in data["generalized_coordinates_deg_range_default_SIMM"].items()}
    joints = []
    for joint in data["kinematic_chain"]:
        rotations = []
        for rotation in joint["rotations_in_order"]:
            axis = _floats(rotation["axis_in_parent_frame_unnormalized"])
            source = INVERSE_JOINT.get(joint["joint"], joint["joint"])
            sign = -1.0 if joint["joint"] in INVERSE_JOINT else 1.0
            if variant == "B" and (source, rotation["simm_dof"]) in VARIANT_B:
                a, b = VARIANT_B[(source, rotation["simm_dof"])]
                slopes = {"elv_angle": sign * a, "shoulder_elv": sign * b}
            else:
                slopes = {COORDINATES[rotation["angle_deg"]["of"]]: _slope(functions[rotation["angle_deg"]["function"]])}
            rotations.append(Rotation(axis / np.linalg.norm(axis), slopes, rotation["simm_dof"]))
        joints.append(Joint(joint["joint"], joint["parent"], joint["child"], _floats(joint["translation_in_parent_m"]),
                            tuple(rotations)))
    inertia = {}
    for name, body in data["bodies"].items():
        if "mass_kg" in body:
            xx, yy, zz, xy, xz, yz = _floats(body["inertia_about_com_body_axes_kgm2_xx_yy_zz_xy_xz_yz"])
            inertia[name] = (float(body["mass_kg"]), _floats(body["com_in_body_m"]),
                             np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
    muscles = []
    for name, muscle in data["muscles"].items():
        points = []
        for point in muscle["path_points_as_listed_in_msl"]:
            if point["type"] == "fixed":
                points.append(PathPoint(point["body"], _floats(point["xyz_m"]), ((), (), ())))
                continue
            offsets = ([], [], [])
            for frame in point["plus_offsets_in_body_axes_m"]:
                for axis, key in enumerate(("tx", "ty", "tz")):
                    function, coordinate = frame[key]
                    table = functions[function]
                    offsets[axis].append((COORDINATES[coordinate], _floats(table["x_deg_or_coord_units"]),
                                          _floats(table["y"])))
            points.append(PathPoint(point["body"], _floats(point["base_xyz_m"]), tuple(tuple(o) for o in offsets)))
        muscles.append(Muscle(name, tuple(points), float(muscle["max_isometric_force_N"]),
                              float(muscle["optimal_fiber_length_m"]), float(muscle["tendon_slack_length_m"]),
                              float(muscle["pennation_angle_deg"])))
    return Shoulder(coordinates, tuple(joints), inertia, tuple(muscles))


def _formula(slopes: dict) -> str:
    return " + ".join(f"{slope!r}*{name}" for name, slope in slopes.items()).replace("+ -", "- ")


def _component(base: float, offsets: list) -> object:
    """A path point's coordinate: the number, or the base plus its splines (summed)."""
    if not offsets:
        return float(base)
    return [float(base)] + [{"type": "tabulated", "coordinate": c, "kind": "fmm", "x": x.tolist(), "y": y.tolist()}
                            for c, x, y in offsets]


def shoulder_document(variant: str = "A") -> dict:
    """The model file of the shoulder as a TOML document (angles in degrees)."""
    shoulder = load_shoulder(variant)
    rhythm = ("A: the shoulder girdle follows the elevation only (Holzbaur et al. 2005)" if variant == "A" else
              "B: the girdle angles also depend on the plane of elevation (de Groot & Brand 2001 regression)")
    document: dict = {
        "model": {"format_version": 1, "name": "shoulder_rhythm" + ("" if variant == "A" else "_b"),
                  "description": f"Holzbaur (2005) shoulder with an empirical shoulder rhythm, variant {rhythm}; "
                                 "MoBL-ARMS inertias (the seed's Quental 2012 table was not available); "
                                 "straight-line muscle paths (no wrapping surfaces)",
                  "gravity": [0.0, -9.81, 0.0]},
        "units": {"angle": "deg", "length": "m", "mass": "kg"},
        "coordinates": {name: {"range": list(rng), "default": default} for name, (rng, default) in shoulder.coordinates.items()},
        "bodies": {"thorax": {"joint": "fixed"}},
    }
    bodies = document["bodies"]
    for joint in shoulder.joints:
        parent = joint.parent
        for k, rotation in enumerate(joint.rotations):
            last = k == len(joint.rotations) - 1
            name = joint.child if last else f"{joint.child}_{rotation.dof}"
            body: dict = {"parent": parent, "axis": rotation.axis.tolist(), "variable": _formula(rotation.slopes)}
            if k == 0 and np.any(joint.translation):
                body["offset"] = {"translation": joint.translation.tolist()}
            if last and joint.child in shoulder.inertia:
                mass, com, inertia = shoulder.inertia[joint.child]
                body.update(mass=mass, com=com.tolist(), inertia=inertia.tolist())
            bodies[name] = body
            parent = name
    document["muscles"] = {}
    for muscle in shoulder.muscles:
        path = []
        for point in muscle.points:
            entry: dict = {"body": point.body,
                           "point": [_component(b, list(o)) for b, o in zip(point.base, point.offsets)]}
            if point.moving:
                entry["extrapolate"] = True
            path.append(entry)
        document["muscles"][muscle.name] = {
            "model": "hill", "max_isometric_force": muscle.max_isometric_force,
            "optimal_fiber_length": muscle.optimal_fiber_length, "tendon_slack_length": muscle.tendon_slack_length,
            "pennation_angle": muscle.pennation_angle_deg, "path": path}
    return document


HEADER = """# The Holzbaur et al. (2005) shoulder with an empirical shoulder rhythm (seed 002, Section 4-4).
# GENERATED by `python -m validation.shoulder_data` from
# validation/data/shoulder/holzbaur2005_shoulder.json (see its README for the sources);
# edit the script, not this file.
#
# - Thorax fixed; clavicle, scapula and humerus with Holzbaur's joint axes, offsets and rhythm. Each
#   SIMM joint Trans(t)·R(a1,q1)·R(a2,q2)·… is a chain of revolute bodies (body-fixed successive
#   rotations); `<segment>_r<k>` bodies and the phantom frames (clavphant, scapphant, humphant,
#   humphant1) are massless. The "unrot" joints undo the girdle rotations, so the humerus angles
#   are thorax-relative.
# - Rhythm {variant}.
# - The rhythm functions f0–f13 are two-knot splines through zero, written as linear formulas
#   (degrees per degree).
# - Inertias: MoBL-ARMS (Saul et al. 2015, same body frames). The seed used Quental et al. (2012),
#   whose table was not available.
# - Muscles: the 14 muscles DELT1–3, SUPSP, INFSP, SUBSC, TMIN, TMAJ, PECM1–3, LAT1–3 with their
#   via points and moving via points (base point + FMM splines of a coordinate, x in degrees,
#   extrapolated linearly outside the knots as OpenSim does) and Hill parameters. Straight-line
#   paths: the wrapping surfaces of the original model are NOT modelled.

"""


def main() -> None:
    """Write ``models/shoulder_rhythm.toml`` (variant A) and ``models/shoulder_rhythm_b.toml`` (B)."""
    for variant, name in (("A", "shoulder_rhythm.toml"), ("B", "shoulder_rhythm_b.toml")):
        text = HEADER.format(variant="A (Holzbaur 2005): the girdle follows the elevation only" if variant == "A" else
                             "B (de Groot & Brand 2001): girdle angles = a·elv_angle + b·shoulder_elv\n"
                             "#   (mapping the regression's Hy to elv_angle is an inference; see the data's README)")
        target = MODELS / name
        temporary = target.with_name(f".{name}.tmp")
        temporary.write_text(text + format_toml(shoulder_document(variant)))
        temporary.replace(target)  # atomic: a reader sees the old file or the new one, never half of one
        print(f"wrote {target}")


if __name__ == "__main__":
    main()
