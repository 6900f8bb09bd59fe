"""The records a model is described by: coordinates, bodies and the name of the ground frame."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["GROUND", "Coordinate", "Body"]

GROUND = "ground"
"""Name of the fixed (inertial) frame; a body whose parent is ``GROUND`` is a root."""


@dataclass(frozen=True)
class Coordinate:
    """A generalized coordinate.

    Attributes
    ----------
    name : str
    range : (float, float)
        Admissible interval, in SI units (radians or metres).
    default : float
        Default value, in the same units.
    unit : {"rad", "m", "1"}
        Angle, length or dimensionless.
    periodic : bool
        Whether the coordinate is an angle with period 2π (used by pre-modelling fits).
    original_name : str
        The coordinate's name in the file it was imported from when that name is not an identifier
        (an OpenSim name such as ``"auxprfem-auxprrud_coord"``; ``name`` is then the identifier
        formulas use, see docs/model-format.md), else ``""``.
    """

    name: str
    range: tuple[float, float] = (-math.inf, math.inf)
    default: float = 0.0
    unit: str = "rad"
    periodic: bool = False
    original_name: str = ""

    @property
    def label(self) -> str:
        """The name tables and people use: :attr:`original_name` if there is one, else :attr:`name`."""
        return self.original_name or self.name


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body, its joint to the parent, and its inertial parameters.

    The joint follows Fig. 1 of the dissertation after a constant offset:
    ``ᵖʳ⁽ⁱ⁾_iA_4 = offset · Trans(d · translation_axis) · Rot(rotation_axis, theta)``; for a
    revolute joint ``theta`` is the joint variable, for a prismatic joint ``d`` is.

    Attributes
    ----------
    name, parent : str
    joint : {"revolute", "prismatic", "fixed"}
    rotation_axis, translation_axis : ndarray, shape (3,)
        Unit vectors ``V_θ``, ``V_d`` in the offset frame.
    d, theta : float
        Constant joint parameters (the joint variable's own parameter is unused).
    offset : ndarray, shape (4, 4)
        Constant rigid transform from the parent frame to the joint frame.
    variable : str, Linear, sympy.Expr, or None
        The joint variable as a function of the coordinates; None for a fixed joint.
    mass : float
        kg.
    com : ndarray, shape (3,)
        Centre of mass in body coordinates, m.
    inertia : ndarray, shape (3, 3)
        Inertia tensor about the centre of mass, in body axes, kg·m².
    joint_name : str
        The name of the joint whose child this body is, as the source file names it (an OpenSim joint's
        name, which joint reactions are labelled by); empty: the joint is named after its bodies
        (:func:`mbkron.analysis.reactions.joint_reactions`).
    """

    name: str
    parent: str
    joint: str
    rotation_axis: NDArray[np.float64]
    translation_axis: NDArray[np.float64]
    d: float
    theta: float
    offset: NDArray[np.float64]
    variable: object
    mass: float
    com: NDArray[np.float64]
    inertia: NDArray[np.float64]
    joint_name: str = ""
