"""The model-file format's vocabulary, shared by the reader, the writer and the comparison.

The format is documented with an annotated example in ``docs/model-format.md``: its version, the
units of angles and coordinates, the sections, the fields of each ``[[loads]]`` type and of a Hill
muscle, and :class:`ExpressionValue`, the callable a load value given as formulas becomes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbkron.core.lazy import LazyModule
from mbkron.multibody.bushings import BushingForce
from mbkron.multibody.contact import SMOOTH_DEFAULTS, SmoothSphereHalfSpace
from mbkron.multibody.hunt_crossley import HuntCrossley
from mbkron.multibody.loads import (BodyTorque, CoordinateLimitForce, GeneralizedForce, JointTorque, LineForce,
                                          PointForce, SpringDamper)
from mbkron.io.formulas import evaluate_expression
from mbkron.multibody import tree as tree_description
from mbkron.multibody.muscles.ligaments import Ligament
from mbkron.multibody.muscles.springs import PathSpring

__all__ = ["ANGLE_UNITS", "FORMAT_VERSION", "MAX_FILE_CHARACTERS", "MAX_ENTRIES", "ExpressionValue", "exact_angle_scale"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
_format = LazyModule("mbkron.expressions.format")

#: The version of the model-file format mbkron reads and writes (``[model] format_version``).
FORMAT_VERSION = 1
#: Radians per unit of each accepted ``[units] angle``.
ANGLE_UNITS = {"rad": 1.0, "deg": math.pi / 180.0}


def exact_angle_scale(unit: str) -> sympy.Expr:
    """Radians per ``unit`` (a key of :data:`ANGLE_UNITS`) exactly, for formulas: 1 or pi/180 as sympy numbers."""
    return sympy.S.One if unit == "rad" else sympy.pi / 180


#: Coordinate units in files and in :class:`~mbkron.model.model.Coordinate`.
COORDINATE_UNITS = {"angle": "rad", "m": "m", "1": "1"}
#: Longest model file read, in characters (4 Mi; a 10,000-body file is about 1.5 M characters): parsing the TOML
#: text alone takes about a second per million characters.
MAX_FILE_CHARACTERS = 4 * 2**20
#: Most entries read in each section: larger files are refused before any work (docs/model-format.md,
#: "Limits"), so that the work per file stays bounded (seconds).
MAX_ENTRIES = {"parameters": 50_000, "coordinates": 10_000, "bodies": 10_000, "constraints": 1_000, "loads": 10_000,
               "muscles": 10_000, "wraps": 10_000}
TIME = "t"
VELOCITY_SUFFIX = "_dot"
SECTIONS = ("model", "units", "parameters", "coordinates", "bodies", "loads", "constraints", "wraps", "muscles")
JOINTS = (tree_description.REVOLUTE, tree_description.PRISMATIC, tree_description.FIXED)
MUSCLE_MODELS = ("hill", "path")
#: Hill parameters in a ``[muscles.NAME]`` section: (key, is an angle), in HillParameters' order.
HILL_FIELDS = (("max_isometric_force", False), ("optimal_fiber_length", False), ("tendon_slack_length", False),
               ("pennation_angle", True), ("max_contraction_velocity", False))
HILL_REQUIRED = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length")

# Fields of each [[loads]] type: (required, optional) -> kind of value.
POINT, SCALAR, VECTOR, NAME, FRAME, NUMBER = "point", "scalar", "vector", "name", "frame", "number"
# a number in the unit of the load's `coordinate` (angles in the file's angle unit), and per that unit; a path
COORDINATE_VALUE, PER_COORDINATE_VALUE, PATH = "coordinate value", "per coordinate value", "path"
# a tabulated function of a dimensionless argument: a table of `x`, `y` (≥ 2 knots) and `kind` (default "fmm")
CURVE = "curve"
# three numbers in SI units (whatever the file's angle unit); a rigid transform given as a body's `offset`
TRIPLE, TRANSFORM = "three numbers", "transform"
# a path's wraps: names of [wraps] tables or tables { object, range, method }, as a muscle's `wraps`
WRAPS = "wraps"
# contact surfaces: an array of tables `shape`, `body`, `location`, `radius` (a sphere's) or `normal` (a half-space's)
# and the material parameters (mbkron.multibody.hunt_crossley.ContactSurface)
SURFACES = "surfaces"
LOAD_FIELDS: dict[str, tuple[type, dict[str, str], dict[str, str]]] = {
    "point_force": (PointForce, {"body": NAME, "point": POINT, "force": VECTOR}, {"frame": FRAME}),
    "body_torque": (BodyTorque, {"body": NAME, "torque": VECTOR}, {"frame": FRAME}),
    "joint_torque": (JointTorque, {"joint": NAME, "torque": SCALAR}, {}),
    "generalized_force": (GeneralizedForce, {"coordinate": NAME, "value": SCALAR}, {}),
    "spring_damper": (
        SpringDamper,
        {"body_a": NAME, "point_a": POINT, "body_b": NAME, "point_b": POINT, "stiffness": NUMBER},
        {"damping": NUMBER, "free_length": NUMBER},
    ),
    "line_force": (
        LineForce,
        {"body_a": NAME, "point_a": POINT, "body_b": NAME, "point_b": POINT, "tension": SCALAR},
        {},
    ),
    "coordinate_limit": (
        CoordinateLimitForce,
        {"coordinate": NAME, "upper_stiffness": PER_COORDINATE_VALUE, "upper_limit": COORDINATE_VALUE,
         "lower_stiffness": PER_COORDINATE_VALUE, "lower_limit": COORDINATE_VALUE, "transition": COORDINATE_VALUE},
        {"damping": PER_COORDINATE_VALUE},
    ),
    "path_spring": (
        PathSpring,
        {"name": NAME, "path": PATH, "stiffness": NUMBER, "resting_length": NUMBER},
        {"dissipation": NUMBER, "wraps": WRAPS},
    ),
    "bushing": (
        BushingForce,
        {"name": NAME, "body_1": NAME, "body_2": NAME, "rotational_stiffness": TRIPLE, "translational_stiffness": TRIPLE},
        {"frame_1": TRANSFORM, "frame_2": TRANSFORM, "rotational_damping": TRIPLE, "translational_damping": TRIPLE},
    ),
    "ligament": (
        Ligament,
        {"name": NAME, "path": PATH, "resting_length": NUMBER, "pcsa_force": NUMBER},
        {"force_length": CURVE, "wraps": WRAPS},
    ),
    "smooth_sphere_half_space": (
        SmoothSphereHalfSpace,
        {"name": NAME, "sphere_body": NAME, "sphere_center": POINT, "radius": NUMBER, "half_space_body": NAME,
         "half_space_point": POINT, "half_space_normal": POINT},
        dict.fromkeys(SMOOTH_DEFAULTS, NUMBER),
    ),
    "hunt_crossley": (HuntCrossley, {"name": NAME, "surfaces": SURFACES}, {"transition_velocity": NUMBER}),
}
LOAD_TYPES = {cls: name for name, (cls, _, _) in LOAD_FIELDS.items()}

@dataclass(frozen=True, eq=False)
class ExpressionValue:
    """A load value given in a model file as formulas of time, coordinates and their rates.

    Called as ``value(t, q, qd)`` like any callable load value (:mod:`mbkron.algorithms.dynamics.loads`); evaluated by
    :func:`~mbkron.io.formulas.evaluate_expression` in double precision. The expressions are in SI units (the loader
    has converted angles): symbols are ``t`` (s), the coordinate names and ``<coordinate>_dot``.

    Attributes
    ----------
    expressions : tuple of sympy.Expr
        One per component (a scalar value has one and ``shape == ()``).
    shape : tuple of int
        ``()`` or ``(3,)``.
    coordinates : tuple of str
        Coordinate names in the order of ``q``.
    """

    expressions: tuple[sympy.Expr, ...]
    shape: tuple[int, ...]
    coordinates: tuple[str, ...]

    def __call__(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        qd = np.asarray(qd, dtype=float)
        values: dict[str, object] = {TIME: t}
        for k, name in enumerate(self.coordinates):
            values[name] = q[..., k]
            values[name + VELOCITY_SUFFIX] = qd[..., k]
        components = np.broadcast_arrays(*(evaluate_expression(e, values) for e in self.expressions),
                                         np.empty(q.shape[:-1]))[:-1]
        if self.shape == ():
            return np.array(components[0])
        return np.stack(components, axis=-1)

    def texts(self) -> list[str] | str:
        """The expressions as text of the model-file grammar (a list for a vector value)."""
        texts = [_format.format_expression(e) for e in self.expressions]
        return texts[0] if self.shape == () else texts


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quoted; control characters escaped)."""
    escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for character in text:
        if character in escapes:
            out.append(escapes[character])
        elif ord(character) < 0x20 or ord(character) == 0x7F:
            out.append(f"\\u{ord(character):04X}")
        else:
            out.append(character)
    return '"' + "".join(out) + '"'
