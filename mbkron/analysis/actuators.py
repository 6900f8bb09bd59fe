"""Reserve and residual actuators of static optimisation, as OpenSim defines them, and their force-set files.

OpenSim's reserve files (a ``<ForceSet>`` appended to the model, e.g. opensim-models'
``gait10dof_Reserve_Actuators.xml``) hold three kinds of ideal actuator, each producing
``x F°`` (control ``x`` times ``optimal_force`` ``F°``, ``computeActuation``):

- ``CoordinateActuator`` (:class:`Reserve`): a generalized force ``x F°`` on one ``coordinate``;
- ``PointActuator`` (:class:`PointActuator`, ``PointActuator::implProduceForces``): a force
  ``x F° d̂`` (``d̂ = direction/|direction|``; in ground if ``force_is_global``, else in the frame of
  ``body``) applied at ``point`` of ``body`` (in the body's frame, or, if ``point_is_global``, the
  body-fixed point that is at ``point`` in ground at that instant); pelvis residuals ``FX``, ``FY``;
- ``TorqueActuator`` (:class:`TorqueActuator`, ``TorqueActuator::implProduceForces``): a torque
  ``x F° â`` on ``bodyA`` and its opposite on ``bodyB`` (``â = axis/|axis|``; in ground if
  ``torque_is_global``, else in ``bodyA``'s frame); the residual ``MZ``.

Each actuator's generalized force per unit control is its column of static optimisation's balance
(:func:`unit_generalized_forces`), by virtual work (Eq. 46, 180):
``Q = F° e_k`` (coordinate ``k``), ``Q = F° (∂p/∂q)ᵀ d̂₀`` (point ``p``), ``Q = F° (∂ω_A/∂q̇ − ∂ω_B/∂q̇)ᵀ â₀``
(torque), with ``d̂₀``, ``â₀`` the directions in ground.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from mbkron.core.errors import ModelError
from mbkron.multibody.loads import BodyTorque, PointForce
from mbkron.algorithms.dynamics.loads import generalized_forces
from mbkron.io.osim.xml import parse_osim_bytes, read_osim_bytes

__all__ = ["ACTUATOR_TAGS", "PointActuator", "Reserve", "TorqueActuator", "check_actuators", "read_reserves",
           "unit_generalized_forces"]

ACTUATOR_TAGS = ("CoordinateActuator", "PointActuator", "TorqueActuator")
"""The force-set elements :func:`read_reserves` reads."""
_GROUND = "ground"


def _check_common(kind: str, name: str, optimal_force, min_control, max_control) -> None:
    if not (isinstance(optimal_force, (int, float)) and 0 < optimal_force < math.inf):
        raise ValueError(f"`optimal_force` of {kind} `{name}` must be a positive number, got {optimal_force!r}")
    if not min_control <= max_control:
        raise ValueError(f"`min_control` of {kind} `{name}` must not exceed `max_control`, got "
                         f"{min_control!r} > {max_control!r}")


def _unit(vector, field: str, kind: str, name: str) -> tuple[float, float, float]:
    value = np.asarray(vector, dtype=float).reshape(-1)
    norm = float(np.linalg.norm(value)) if value.size == 3 else 0.0
    if value.size != 3 or not np.all(np.isfinite(value)) or norm == 0.0:
        raise ValueError(f"`{field}` of {kind} `{name}` must be three finite numbers, not all zero, got {vector!r}")
    return tuple(float(v) for v in value / norm)


@dataclass(frozen=True)
class Reserve:
    """A reserve actuator: OpenSim's ``CoordinateActuator``, a generalized force ``x F°`` on one coordinate.

    Attributes
    ----------
    coordinate : str
    optimal_force : float
        ``F°``, N·m (rotational) or N (translational); positive.
    min_control, max_control : float
        Bounds of ``x`` (may be infinite).
    name : str
        Defaults to ``<coordinate>_reserve``.
    """

    coordinate: str
    optimal_force: float
    min_control: float = -math.inf
    max_control: float = math.inf
    name: str = ""

    def __post_init__(self):
        _check_common("reserve", self.coordinate, self.optimal_force, self.min_control, self.max_control)
        if not self.name:
            object.__setattr__(self, "name", f"{self.coordinate}_reserve")


@dataclass(frozen=True)
class PointActuator:
    """OpenSim's ``PointActuator``: a force ``x F° d̂`` at a point of a body (module docstring).

    Attributes
    ----------
    name, body : str
    point : (3,) tuple of float
        m, in ``body``'s frame, or in ground if ``point_is_global``.
    direction : (3,) tuple of float
        Normalised on construction; in ground if ``force_is_global``, else in ``body``'s frame.
    point_is_global, force_is_global : bool
        OpenSim's defaults: False.
    optimal_force : float
        N.
    min_control, max_control : float
    """

    name: str
    body: str
    point: tuple = (0.0, 0.0, 0.0)
    direction: tuple = (1.0, 0.0, 0.0)
    point_is_global: bool = False
    force_is_global: bool = False
    optimal_force: float = 1.0
    min_control: float = -math.inf
    max_control: float = math.inf

    def __post_init__(self):
        _check_common("PointActuator", self.name, self.optimal_force, self.min_control, self.max_control)
        point = np.asarray(self.point, dtype=float).reshape(-1)
        if point.size != 3 or not np.all(np.isfinite(point)):
            raise ValueError(f"`point` of PointActuator `{self.name}` must be three finite numbers, got {self.point!r}")
        object.__setattr__(self, "point", tuple(float(v) for v in point))
        object.__setattr__(self, "direction", _unit(self.direction, "direction", "PointActuator", self.name))


@dataclass(frozen=True)
class TorqueActuator:
    """OpenSim's ``TorqueActuator``: a torque ``x F° â`` on ``body_a``, its opposite on ``body_b``.

    Attributes
    ----------
    name, body_a : str
    body_b : str
        ``ground`` when OpenSim's ``bodyB`` is empty (a torque on ground moves nothing).
    axis : (3,) tuple of float
        Normalised on construction; in ground if ``torque_is_global`` (OpenSim's default True), else in
        ``body_a``'s frame.
    torque_is_global : bool
    optimal_force : float
        N·m.
    min_control, max_control : float
    """

    name: str
    body_a: str
    body_b: str = _GROUND
    axis: tuple = (0.0, 0.0, 1.0)
    torque_is_global: bool = True
    optimal_force: float = 1.0
    min_control: float = -math.inf
    max_control: float = math.inf

    def __post_init__(self):
        _check_common("TorqueActuator", self.name, self.optimal_force, self.min_control, self.max_control)
        object.__setattr__(self, "axis", _unit(self.axis, "axis", "TorqueActuator", self.name))
        if not self.body_b:
            object.__setattr__(self, "body_b", _GROUND)


def _body(model, body: str, actuator: str, field: str) -> int:
    if body == _GROUND:
        return -1
    if body not in model.bodies:
        raise ValueError(f"actuator `{actuator}`: `{field}` names `{body}`, which is not a body of model "
                         f"`{model.name}` (its bodies: ground, {', '.join(model.bodies)})")
    return model.body_index(body)


def check_actuators(model, actuators) -> None:
    """Raise ValueError naming each actuator whose coordinate or body ``model`` does not have."""
    for actuator in actuators:
        if isinstance(actuator, Reserve):
            if actuator.coordinate not in model.coordinates:
                raise ValueError(f"unknown coordinate {actuator.coordinate!r} of reserve `{actuator.name}`; the "
                                 f"model has: {', '.join(model.coordinates)}")
        elif isinstance(actuator, PointActuator):
            _body(model, actuator.body, actuator.name, "body")
        elif isinstance(actuator, TorqueActuator):
            _body(model, actuator.body_a, actuator.name, "bodyA")
            _body(model, actuator.body_b, actuator.name, "bodyB")
        else:
            raise ValueError(f"`reserves` must hold Reserve, PointActuator or TorqueActuator objects, got "
                             f"{type(actuator).__name__}")


def _loads(model, actuator, kin, batch: tuple) -> tuple:
    """The loads of ``actuator`` at unit control (:mod:`mbkron.algorithms.dynamics.loads`): a point force, or a torque on
    ``bodyA`` and its opposite on ``bodyB`` (none on ground, which does not move)."""
    if isinstance(actuator, PointActuator):
        b = _body(model, actuator.body, actuator.name, "body")
        if b < 0:
            return ()
        point = np.array(actuator.point)
        if actuator.point_is_global:  # a ground point, in the body's frame at each state
            T = kin.T[..., b, :, :]
            point = (np.swapaxes(T[..., :3, :3], -1, -2) @ (point - T[..., :3, 3])[..., None])[..., 0]
        return (PointForce(actuator.body, point, actuator.optimal_force * np.array(actuator.direction),
                           "ground" if actuator.force_is_global else "body"),)
    a = _body(model, actuator.body_a, actuator.name, "bodyA")
    b = _body(model, actuator.body_b, actuator.name, "bodyB")
    axis = actuator.optimal_force * np.array(actuator.axis)
    if not actuator.torque_is_global and a >= 0:  # in bodyA's frame; in ground for both bodies
        axis = kin.T[..., a, :3, :3] @ axis
    axis = np.broadcast_to(axis, batch + (3,))
    return tuple(BodyTorque(body, sign * axis) for body, sign in ((actuator.body_a, 1.0), (actuator.body_b, -1.0))
                 if body != _GROUND)


def unit_generalized_forces(model, actuators, q: NDArray, *, workspace=None) -> NDArray:
    """The generalized force of each actuator at unit control, ``Q_j = F°_j ∂(virtual work)/∂q``, (n, nq, n_a):
    a reserve's ``F°`` on its coordinate; point and torque actuators as the loads of
    :func:`mbkron.algorithms.dynamics.loads.generalized_forces` (Eq. 46).

    Parameters
    ----------
    model : Model
    actuators : sequence of Reserve, PointActuator, TorqueActuator
    q : ndarray, shape (n, nq)
    workspace : Workspace, optional

    Raises
    ------
    ValueError
        An actuator names a coordinate or body the model does not have.
    """
    check_actuators(model, actuators)
    q = np.asarray(q, dtype=float)
    out = np.zeros(q.shape + (len(actuators),))
    kin = None
    if any(not isinstance(a, Reserve) for a in actuators):
        kin = model.kinematics(q, 1, workspace=workspace)
    for j, actuator in enumerate(actuators):
        if isinstance(actuator, Reserve):
            out[..., model.coordinates.index(actuator.coordinate), j] = actuator.optimal_force
        else:
            out[..., j] = generalized_forces(model, kin, _loads(model, actuator, kin, q.shape[:-1]), 0.0, q, q)
    return out


def _number(element, tag: str, default: float) -> float:
    """The number of ``element``'s child ``tag`` (``infinity`` and ``-infinity`` included), ``default`` when empty."""
    text = element.findtext(tag)
    if text is None or not text.strip():
        return default
    word = text.strip().lower()
    if word.lstrip("+-") not in ("inf", "infinity"):
        try:
            return float(word)
        except ValueError:
            raise ValueError(f"`{tag}` must be a number, got {text.strip()!r}") from None
    return math.copysign(math.inf, -1.0 if word.startswith("-") else 1.0)


def _vector(element, tag: str, default: tuple) -> tuple:
    text = element.findtext(tag)
    if text is None or not text.strip():
        return default
    try:
        return tuple(float(v) for v in text.split())
    except ValueError:
        raise ValueError(f"`{tag}` must be three numbers, got {text.strip()!r}") from None


def _flag(element, tag: str, default: bool) -> bool:
    text = (element.findtext(tag) or "").strip().lower()
    if not text:
        return default
    if text not in ("true", "false"):
        raise ValueError(f"`{tag}` must be true or false, got {text!r}")
    return text == "true"


def read_reserves(path: str | Path) -> tuple[tuple, tuple[str, ...]]:
    """The actuators of an OpenSim force-set file (``<ForceSet>``): reserves and residuals.

    Reads each enabled ``CoordinateActuator`` (``coordinate``), ``PointActuator`` (``body``, ``point``,
    ``point_is_global``, ``direction``, ``force_is_global``) and ``TorqueActuator`` (``bodyA``, ``bodyB``,
    ``axis``, ``torque_is_global``) in ``ForceSet/objects``, with ``optimal_force`` (default 1) and
    ``min_control``/``max_control`` (default ±infinity), OpenSim's defaults for fields left out.

    Returns
    -------
    actuators : tuple of Reserve, PointActuator, TorqueActuator
        In the file's order.
    skipped : tuple of str
        The names of the file's other forces, not supported.

    Raises
    ------
    ValueError
        If the file is not an XML force set, or an actuator lacks its coordinate or body or has a bad
        value (the file, the actuator and the field named).
    """
    try:  # untrusted XML: the .osim importer's parser (bounded size, no DTD or entities)
        root = parse_osim_bytes(read_osim_bytes(path, str(path)), str(path))
    except ModelError as error:
        raise ValueError(f"cannot read the force-set file: {error}") from None
    objects = root.find("ForceSet/objects") if root.tag != "ForceSet" else root.find("objects")
    if objects is None:
        raise ValueError(f"`{path}` is not an OpenSim force set (no ForceSet/objects element)")
    actuators, skipped = [], []
    for element in objects:
        name = element.get("name", "")
        if element.tag not in ACTUATOR_TAGS:
            skipped.append(name or element.tag)
            continue
        if (element.findtext("isDisabled") or "").strip() == "true" or \
                (element.findtext("appliesForce") or "").strip() == "false":
            continue
        try:
            common = dict(optimal_force=_number(element, "optimal_force", 1.0),
                          min_control=_number(element, "min_control", -math.inf),
                          max_control=_number(element, "max_control", math.inf))
            actuators.append(_actuator(element, name, common))
        except ValueError as error:
            raise ValueError(f"`{path}`: {element.tag} `{name}`: {error}") from None
    return tuple(actuators), tuple(skipped)


def _actuator(element, name: str, common: dict):
    def required(tag: str) -> str:
        text = (element.findtext(tag) or "").strip()
        if not text:
            raise ValueError(f"no `{tag}`")
        return text

    if element.tag == "CoordinateActuator":
        return Reserve(required("coordinate"), name=name, **common)
    if element.tag == "PointActuator":
        return PointActuator(name, required("body"), _vector(element, "point", (0.0, 0.0, 0.0)),
                             _vector(element, "direction", (1.0, 0.0, 0.0)), _flag(element, "point_is_global", False),
                             _flag(element, "force_is_global", False), **common)
    return TorqueActuator(name, required("bodyA"), (element.findtext("bodyB") or "").strip(),
                          _vector(element, "axis", (0.0, 0.0, 1.0)), _flag(element, "torque_is_global", True),
                          **common)
