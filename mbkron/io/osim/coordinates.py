"""OpenSim coordinates and ``CoordinateCouplerConstraint``: which are the model's coordinates.

The model's generalized coordinates are OpenSim's *independent, unlocked* coordinates, in the order
of ``Model.getCoordinateSet()``: the joints in ``JointSet`` order, each joint's ``<coordinates>`` in
file order. Every other coordinate is a :class:`~mbkron.io.osim.functions.Term` of them:

- a **locked** coordinate is the constant ``default_value`` (OpenSim locks it there);
- the **dependent** coordinate of an enforced ``CoordinateCouplerConstraint`` is *eliminated*:
  OpenSim's constraint is ``q_dep = scale_factor · f(q_indep)``, so the term is that function of the
  independent coordinate's own term (couplers may chain; a cycle is an error). A coupler of several
  independent coordinates needs a function of as many arguments (``LinearFunction`` of ``n + 1``
  coefficients, ``MultivariatePolynomialFunction``), applied to their terms in the order named
  (:func:`~mbkron.io.osim.functions.apply`).

A ``TransformAxis`` or moving path point names its function's arguments the same way.

``clamped`` is not imported: mbkron keeps a coordinate inside its range by the range checks of
``simulate`` and the command line (docs/model-format.md), not by a constraint.
"""

from __future__ import annotations

import math
import re
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from mbkron.expressions.names import ARITIES, CONSTANT_PI
from mbkron.io.schema import TIME

from mbkron.io.osim.functions import Affine, Multi, Term, apply, compose, compose_term, constant_term, read_function
from mbkron.io.osim.xml import XmlReader

__all__ = ["CoordinateInfo", "Coordinates", "identifiers"]

_RESERVED = {*ARITIES, CONSTANT_PI, TIME}


def identifiers(names: list[str], reserved: set[str] = _RESERVED) -> dict[str, str]:
    """A model-file identifier for each name: characters other than ASCII letters, digits and ``_``
    become ``_``, a leading digit gets a ``_`` in front, a reserved name (a function, ``pi``, ``t``) a
    ``_`` behind, and clashes a suffix ``_2``, ``_3``, …; identifiers are kept as they are."""
    out: dict[str, str] = {}
    taken = set(reserved)
    for name in names:
        candidate = re.sub(r"[^A-Za-z0-9_]", "_", unicodedata.normalize("NFKC", name)) or "_"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        if candidate in reserved:
            candidate += "_"
        unique, k = candidate, 2
        while unique in taken:
            unique, k = f"{candidate}_{k}", k + 1
        out[name] = unique
        taken.add(unique)
    return out


@dataclass
class CoordinateInfo:
    """An OpenSim coordinate as read: its element, range, default and locked flag."""

    element: ET.Element
    joint: str
    range: tuple[float, float]
    default: float
    locked: bool


class Coordinates:
    """The coordinates of a model and the terms (functions of the independent ones) of all of them.

    Parameters
    ----------
    reader : XmlReader
    joints : list of Element
        The joints of ``JointSet``, in order.
    constraints : list of Element
        The children of ``ConstraintSet/objects``.
    """

    def __init__(self, reader: XmlReader, joints: list[ET.Element], constraints: list[ET.Element]):
        self.reader = reader
        self.info: dict[str, CoordinateInfo] = {}
        for joint in joints:
            holder = joint.find("coordinates")
            for element in holder if holder is not None else []:
                self._read_coordinate(element, joint.get("name") or "")
        #: Per dependent coordinate: (constraint, its independent coordinates as text, function, scale,
        #: the independent coordinates).
        self.couplers: dict[str, tuple[ET.Element, str, object, float, tuple[str, ...]]] = {}
        for constraint in constraints:
            if constraint.tag != "CoordinateCouplerConstraint":
                reader.unsupported_element(constraint, "CoordinateCouplerConstraint (loop-closing constraints are not imported)")
                continue
            self._read_coupler(constraint)
        self._terms: dict[str, Term | None] = {}
        self._resolving: list[str] = []
        #: The model's name of each independent coordinate (an identifier; see :func:`identifiers`).
        self.model_names = identifiers(self.independent)

    def _read_coordinate(self, element: ET.Element, joint: str) -> None:
        reader = self.reader
        if element.tag != "Coordinate":
            reader.unsupported_element(element, "<Coordinate>")
            return
        name = reader.name(element)
        if name is None:
            return
        reader.known_children(element, ("default_value", "default_speed_value", "range", "clamped", "locked",
                                        "prescribed", "prescribed_function", "is_free_to_satisfy_constraints"))
        if name in self.info:
            reader.problem(element, f"the coordinate name `{name}` is used twice; names must be unique")
            return
        bounds = reader.numbers(element, "range", 2, default=[-math.inf, math.inf]) or [0.0, 0.0]
        default = reader.number(element, "default_value", 0.0)
        locked = reader.boolean(element, "locked", False)
        if reader.boolean(element, "prescribed", False):
            function = element.find("prescribed_function")
            if function is not None and len(function):
                reader.unsupported_element(element, "coordinates that are not prescribed functions of time")
        if bounds[0] >= bounds[1]:
            reader.problem(element, f"expected a range [low, high] with low < high, got {bounds}", "range")
        if default is not None and not bounds[0] <= default <= bounds[1]:
            reader.problem(element, f"the default {default!r} lies outside the range {bounds}", "default_value")
        self.info[name] = CoordinateInfo(element, joint, (bounds[0], bounds[1]), default or 0.0, locked)

    def _read_coupler(self, constraint: ET.Element) -> None:
        reader = self.reader
        reader.known_children(constraint, ("isEnforced", "coupled_coordinates_function", "independent_coordinate_names",
                                           "dependent_coordinate_name", "scale_factor"))
        if not reader.boolean(constraint, "isEnforced", True):
            reader.unsupported_element(constraint, "enforced couplers (isEnforced = true); remove the disabled constraint")
            return
        holder = reader.child(constraint, "coupled_coordinates_function")
        element = reader.only_child(holder, "function") if holder is not None else None
        function = read_function(reader, element) if element is not None else None
        independent = (reader.text(constraint, "independent_coordinate_names") or "").split()
        dependent = reader.text(constraint, "dependent_coordinate_name") or ""
        scale = reader.number(constraint, "scale_factor", 1.0)
        if not independent:
            reader.problem(constraint, "expected the names of the independent coordinates", "independent_coordinate_names")
            return
        named = [(n, "independent_coordinate_names") for n in independent] + [(dependent, "dependent_coordinate_name")]
        for name, tag in named:
            if name not in self.info:
                reader.problem(constraint, f"expected the name of a coordinate, got {name!r}", tag)
                return
        if dependent in self.couplers:
            reader.problem(constraint, f"the coordinate `{dependent}` is the dependent coordinate of two couplers")
            return
        if function is not None and scale is not None and self._arity_matches(function, independent, constraint):
            self.couplers[dependent] = (constraint, ", ".join(independent), compose(Affine(scale, 0.0), function),
                                        scale, tuple(independent))

    def _arity_matches(self, function, names: list[str], element: ET.Element) -> bool:
        """Whether ``function`` takes as many arguments as ``names`` (a constant takes any number);
        else the element is reported."""
        arity = function.arity if isinstance(function, Multi) else 1
        if arity == len(names) or (isinstance(function, Affine) and function.slope == 0.0):
            return True
        self.reader.unsupported_element(element, f"a function of as many arguments as coordinates: it takes {arity}, "
                                        f"{len(names)} coordinate(s) are named")
        return False

    def _apply(self, function, names: list[str]) -> Term | None:
        """``function`` of the terms of the coordinates ``names`` (None after a problem, or without an exact form)."""
        inner = [self.term(name) for name in names]
        if None in inner:
            return None
        if isinstance(function, Multi):
            return apply(function, inner)
        if isinstance(function, Affine) and function.slope == 0.0:
            return constant_term(function.intercept)
        return compose_term(function, inner[0])

    @property
    def independent(self) -> list[str]:
        """The model's coordinates: independent and unlocked, in CoordinateSet order."""
        return [name for name, info in self.info.items() if name not in self.couplers and not info.locked]

    def term(self, name: str) -> Term | None:
        """Coordinate ``name`` as a term of the independent coordinates; None after a recorded problem."""
        if name in self._terms:
            return self._terms[name]
        info = self.info[name]
        if name in self._resolving:
            cycle = " → ".join(self._resolving[self._resolving.index(name):] + [name])
            self.reader.problem(self.couplers[name][0], f"couplers depend on each other in a cycle: {cycle}")
            return None
        if name in self.couplers:
            constraint, _, function, _, independent = self.couplers[name]
            self._resolving.append(name)
            inner = [self.term(n) for n in independent]
            term = None if None in inner else self._apply(function, list(independent))
            self._resolving.pop()
            if None not in inner and term is None:
                self.reader.unsupported_element(constraint, "a coupler that is affine, or of independent coordinates "
                                                "that enter affinely or by formulas (a spline of a spline, or a "
                                                "spline in a function of several coordinates, has no exact form)")
        elif info.locked:
            term = constant_term(info.default)
        else:
            term = Term(Affine(1.0, 0.0), self.model_names[name])
        self._terms[name] = term
        return term

    def of(self, function, names: list[str], element: ET.Element) -> Term | None:
        """``function`` of the coordinates ``names`` (a TransformAxis or path-point function) as a term."""
        if function is None:
            return None
        if not names:
            if isinstance(function, Affine) and function.slope == 0.0:
                return constant_term(function.intercept)
            self.reader.unsupported_element(element, "a function of no coordinate must be a Constant")
            return None
        unknown = [name for name in names if name not in self.info]
        if unknown:
            self.reader.problem(element, f"names the unknown coordinate(s) {', '.join(map(repr, unknown))}")
            return None
        if not self._arity_matches(function, names, element):
            return None
        if any(self.term(name) is None for name in names):
            return None
        term = self._apply(function, names)
        if term is None:
            self.reader.unsupported_element(element, f"a function of {', '.join(f'`{n}`' for n in names)} composed with "
                                            "their couplers (only an affine function of a spline, a spline of an affine "
                                            "coupler, or formulas of formulas are exact)")
        return term
