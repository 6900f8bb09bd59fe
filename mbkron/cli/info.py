"""``mbkron info``: describe a model file (tree, coordinates, joint variables, loads, muscles, parameters)."""

from __future__ import annotations

import argparse

from mbkron.cli.common import add_command

__all__ = ["register", "run"]


def register(commands) -> None:
    """Add the ``info`` command to the sub-command parsers ``commands``."""
    info = add_command(commands, "info", "describe a model file: tree, coordinates, joint variables, loads, muscles",
                       "Print a model file's body tree, coordinates, joint variables, loads, muscles and parameters.",
                       "mbkron info models/two_link_arm.toml\nmbkron info arm26.osim --ignore-wrapping")
    info.add_argument("model", metavar="MODEL",
                      help="model definition file (TOML, docs/model-format.md) or OpenSim model (.osim, docs/opensim.md)")
    info.add_argument("--ignore-wrapping", action="store_true",
                      help="OpenSim models: import paths with wrap objects without them (a warning names them); "
                           "default: import them")
    info.set_defaults(run=run)


def _fmt(values, digits: int = 6) -> str:
    import numpy as np

    array = np.atleast_1d(np.asarray(values, dtype=float))
    text = ", ".join(f"{v:.{digits}g}" for v in array)
    return f"({text})" if array.size > 1 else text


def _describe_variable(body) -> str:
    import sympy

    from mbkron.expressions import ExpressionError, format_expression
    from mbkron.multibody.jointvars import CoordinateFunction, Linear

    variable = body.variable
    if isinstance(variable, str):
        return variable
    if isinstance(variable, CoordinateFunction):
        return variable.describe()
    if isinstance(variable, Linear):
        terms = [f"{c:+.6g}*{n}" for n, c in variable.coefficients.items()]
        return " ".join(terms + ([f"{variable.constant:+.6g}"] if variable.constant else [])).lstrip("+")
    if isinstance(variable, sympy.Expr):
        try:
            return format_expression(variable)
        except (ExpressionError, TypeError):
            return str(variable)
    return repr(variable)


def _describe_value(value, unit: str) -> str:
    from mbkron.io import ExpressionValue

    if isinstance(value, ExpressionValue):
        texts = value.texts()
        return (texts if isinstance(texts, str) else "(" + ", ".join(texts) + ")") + f" {unit} (expression, SI)"
    if callable(value):
        return "a Python callable"
    return f"{_fmt(value)} {unit}"


def _describe_point(point, units: dict[str, tuple[str, float]]) -> str:
    """A path point: body and location (``moving`` for a point moving in its body) and its condition,
    in the coordinate's unit of the file (``units``: coordinate → (unit, SI per unit))."""
    from mbkron.multibody.muscles.points import MovingPoint, point_condition

    text = f"{point.body} (moving)" if isinstance(point, MovingPoint) else f"{point[0]} {_fmt(point[1], 4)}"
    condition = point_condition(point)
    if condition is not None:
        unit, factor = units[condition.coordinate]
        text += (f" while {condition.coordinate} in [{condition.lo / factor:.6g}, {condition.hi / factor:.6g}]"
                 f" {unit}")
    return text


def _describe_limit(load, units: dict[str, tuple[str, float]]) -> str:
    """A coordinate limit force in the coordinate's unit of the file, as it is written there."""
    unit, factor = units[load.coordinate]
    force = "N·m" if unit != "m" else "N"
    return (f"coordinate limit on {load.coordinate}: upper {load.upper_limit / factor:.6g} {unit} "
            f"(stiffness {load.upper_stiffness * factor:.6g} {force}/{unit}), lower {load.lower_limit / factor:.6g} "
            f"{unit} (stiffness {load.lower_stiffness * factor:.6g} {force}/{unit}), transition "
            f"{load.transition / factor:.6g} {unit}, damping {load.damping * factor:.6g} {force}·s/{unit}")


def _describe_wraps(wraps) -> str:
    """`` over <surfaces>`` for a path force's wraps (nothing without)."""
    return f" (over {', '.join(w.surface.name for w in wraps)})" if wraps else ""


def _describe_load(load, units: dict[str, tuple[str, float]]) -> str:
    """One line for a load of ``model.loads``; ``units``: coordinate → (unit in the file, SI per unit)."""
    from mbkron.multibody import loads as L
    from mbkron.multibody.bushings import BushingForce
    from mbkron.multibody.contact import SmoothSphereHalfSpace
    from mbkron.multibody.hunt_crossley import HuntCrossley
    from mbkron.multibody.muscles.ligaments import Ligament
    from mbkron.multibody.muscles.springs import PathSpring

    if isinstance(load, L.PointForce):
        return f"point force on {load.body} at {_fmt(load.point)} m: {_describe_value(load.force, 'N')} [{load.frame} frame]"
    if isinstance(load, L.BodyTorque):
        return f"torque on {load.body}: {_describe_value(load.torque, 'N·m')} [{load.frame} frame]"
    if isinstance(load, L.JointTorque):
        return f"joint torque on the joint of {load.joint}: {_describe_value(load.torque, 'N·m or N')}"
    if isinstance(load, L.GeneralizedForce):
        unit = "N" if units[load.coordinate][0] == "m" else "N·m"
        return f"generalized force on {load.coordinate}: {_describe_value(load.value, unit)}"
    if isinstance(load, L.SpringDamper):
        return (f"spring-damper {load.body_a} {_fmt(load.point_a)} ↔ {load.body_b} {_fmt(load.point_b)}: "
                f"k = {load.stiffness:.6g} N/m, c = {load.damping:.6g} N·s/m, free length {load.free_length:.6g} m")
    if isinstance(load, L.LineForce):
        return (f"line force {load.body_a} {_fmt(load.point_a)} ↔ {load.body_b} {_fmt(load.point_b)}: "
                f"tension {_describe_value(load.tension, 'N')}")
    if isinstance(load, L.CoordinateLimitForce):
        return _describe_limit(load, units)
    if isinstance(load, PathSpring):
        return (f"path spring {load.name}: " + " → ".join(_describe_point(p, units) for p in load.path)
                + _describe_wraps(load.wraps) + f"; stiffness {load.stiffness:.6g} N/m, resting length "
                f"{load.resting_length:.6g} m, dissipation {load.dissipation:.6g} s/m")
    if isinstance(load, BushingForce):
        return (f"bushing {load.name}: {load.body_1} frame ↔ {load.body_2} frame; stiffness "
                f"{_fmt(load.rotational_stiffness)} N·m/rad, {_fmt(load.translational_stiffness)} N/m; damping "
                f"{_fmt(load.rotational_damping)} N·m·s/rad, {_fmt(load.translational_damping)} N·s/m")
    if isinstance(load, SmoothSphereHalfSpace):
        return (f"smooth contact {load.name}: sphere on {load.sphere_body} at {_fmt(load.sphere_center)} m, radius "
                f"{load.radius:.6g} m ↔ half-space on {load.half_space_body} through {_fmt(load.half_space_point)} m, "
                f"normal {_fmt(load.half_space_normal)}; stiffness {load.stiffness:.6g} N/m², dissipation "
                f"{load.dissipation:.6g} s/m, friction {load.static_friction:.6g}/{load.dynamic_friction:.6g}/"
                f"{load.viscous_friction:.6g}")
    if isinstance(load, HuntCrossley):
        return (f"Hunt–Crossley contact {load.name} among " + ", ".join(
            f"a {s.shape.replace('_', '-')} on {s.body}" for s in load.surfaces)
            + f"; transition velocity {load.transition_velocity:.6g} m/s")
    if isinstance(load, Ligament):
        return (f"ligament {load.name}: " + " → ".join(_describe_point(p, units) for p in load.path)
                + _describe_wraps(load.wraps) + f"; resting length {load.resting_length:.6g} m, pcsa force {load.pcsa_force:.6g} N, "
                f"force–length curve: {load.force_length.describe()}")
    return repr(load)


#: Width of the wrapped model description (credits, publications) and the most lines shown of it.
DESCRIPTION_WIDTH, DESCRIPTION_LINES = 100, 6


def description_lines(name: str, description: str) -> list[str]:
    """The ``model`` lines: the name and the description (an OpenSim model's credits and publications can be
    kilobytes of one line) wrapped at :data:`DESCRIPTION_WIDTH` columns under the name; after
    :data:`DESCRIPTION_LINES` lines the rest is elided, saying how much and where it is."""
    import textwrap

    if not description:
        return [f"model       {name}"]
    wrapped = textwrap.wrap(f"{name} — {description}", DESCRIPTION_WIDTH - 12, break_long_words=True,
                            break_on_hyphens=False)
    if len(wrapped) > DESCRIPTION_LINES:
        shown = " ".join(wrapped[:DESCRIPTION_LINES])
        rest = len(f"{name} — {description}") - len(shown)
        wrapped = wrapped[:DESCRIPTION_LINES] + [f"… ({rest:,} more characters)"]
    return [("model       " if k == 0 else " " * 12) + line for k, line in enumerate(wrapped)]


def _width(names, least: int = 14) -> int:
    """A column as wide as the longest name (at least ``least``), so that names never run into the next field."""
    return max([least, *(len(name) for name in names)])


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron info``; returns the exit status."""
    import sys
    import warnings

    from mbkron.multibody.records import GROUND
    from mbkron.io import read_model_file
    from mbkron.multibody import tree as tree_description

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model_file = read_model_file(args.model, wrapping="ignore" if args.ignore_wrapping else "import")
    for warning in caught:
        print(f"mbkron: warning: {warning.message}", file=sys.stderr)
    model = model_file.model
    unit = model_file.angle_unit
    scale = model_file.angle_scale
    lines = [*description_lines(model.name, model_file.description),
             f"file        {model_file.source} (sha256 {model_file.sha256[:16]}…)",
             f"units       angles in {unit} in the file and on the command line (radians inside), lengths m, masses kg",
             f"gravity     {_fmt(model.gravity)} m/s²", "", "tree"]
    children: dict[str, list] = {}
    for body in model.body_records:
        children.setdefault(body.parent, []).append(body)

    def walk(name: str, indent: str) -> None:
        kids = children.get(name, [])
        for i, body in enumerate(kids):
            last = i == len(kids) - 1
            if body.joint == tree_description.FIXED:
                joint = "fixed"
            else:
                axis = body.rotation_axis if body.joint == tree_description.REVOLUTE else body.translation_axis
                joint = f"{body.joint} about {_fmt(axis, 4)}" if body.joint == tree_description.REVOLUTE else f"{body.joint} along {_fmt(axis, 4)}"
            lines.append(f"{indent}{'└─' if last else '├─'} {body.name}  [{joint}; mass {body.mass:.6g} kg, "
                         f"com {_fmt(body.com, 4)} m; offset {_fmt(body.offset[:3, 3], 4)} m]")
            walk(body.name, indent + ("   " if last else "│  "))

    lines.append("ground")
    walk(GROUND, "")
    lines += ["", f"coordinates (q, {model.nq})"]
    units = {c.name: (unit, scale) if c.unit == "rad" else (c.unit, 1.0) for c in model.coordinate_records}
    width = _width(c.name for c in model.coordinate_records)
    for c in model.coordinate_records:
        shown, factor = units[c.name]
        low, high = (v / factor for v in c.range)
        lines.append(f"  {c.name:<{width}} {shown:<4} range [{low:.6g}, {high:.6g}]  default {c.default / factor:.6g}"
                     + ("  periodic" if c.periodic else "") + (f"  (OpenSim name {c.original_name!r})" if c.original_name else ""))
    lines += ["", f"joint variables (f, {model.nj}; SI units)"]
    width = _width(b.name for b in model.body_records if b.joint != tree_description.FIXED)
    for body in model.body_records:
        if body.joint != tree_description.FIXED:
            lines.append(f"  {body.name:<{width}} {model_file.solved.get(body.name) or _describe_variable(body)}")
    lines += ["", f"loads ({len(model.loads)})"]
    lines += [f"  {i}: {_describe_load(load, units)}" for i, load in enumerate(model.loads)] or ["  none"]
    lines += ["", f"muscles ({len(model.muscles)})"]
    width = _width(model.muscles)
    lines += [f"  {path.name:<{width}} {len(path.points)} path points, "
              + "".join(f"over {type(w.surface).__name__} {w.surface.name}, " for w in path.wraps)
              + ("Hill (Thelen 2003)" if path.hill is not None else "path only")
              for path in (model.muscle_set.paths if model.muscle_set is not None else ())] or ["  none"]
    if model_file.parameters:
        lines += ["", f"parameters ({len(model_file.parameters)})"]
        lines += [f"  {name} = {value:.10g}" for name, value in model_file.parameters.items()]
    print("\n".join(lines))
    return 0
