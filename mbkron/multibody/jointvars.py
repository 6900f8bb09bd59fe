"""A model's descriptions of its joint variables (Section 3-1 of the dissertation), as the model builder takes them:

- :class:`Linear` -- ``f = c + Σ_k a_k q_k`` (identity maps, relative angles ``θ_i − θ_{i−1}``);
- :class:`CoordinateFunction` -- ``f = F(q_k)``, an empirical function (:mod:`mbkron.numerics.functions`) of one
  coordinate.

They are evaluated by :class:`mbkron.algorithms.jointvars.explicit.JointVariables` (the affine part) and
:class:`mbkron.algorithms.jointvars.functions.CoordinateFunctionVariables`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mbkron.numerics.functions import EmpiricalFunction

__all__ = ["CoordinateFunction", "Linear"]


@dataclass(frozen=True)
class Linear:
    """A joint variable that is an affine function of the coordinates.

    ``f = constant + Σ coefficients[name] * q[name]``. A coordinate name given as a plain string
    to the model builder means ``Linear({name: 1.0})``.

    Parameters
    ----------
    coefficients : mapping of str to float
        Coordinate name → coefficient.
    constant : float
        The constant term.
    """

    coefficients: Mapping[str, float]
    constant: float = 0.0


@dataclass(frozen=True)
class CoordinateFunction:
    """A joint variable that is an empirical function of one coordinate: ``f(q) = F(q[coordinate])``.

    Give it as ``variable=`` to :meth:`mbkron.ModelBuilder.add_body`.

    Parameters
    ----------
    function : EmpiricalFunction
        ``F``, in SI units (radians or metres in, radians or metres out).
    coordinate : str
        Name of the generalized coordinate.
    """

    function: EmpiricalFunction
    coordinate: str

    def __post_init__(self) -> None:
        if not isinstance(self.function, EmpiricalFunction):
            raise TypeError(
                f"CoordinateFunction.function must be an EmpiricalFunction (CubicSpline, PiecewiseLinear, "
                f"PiecewiseConstant, FourierSeries, GCVSpline), got {type(self.function).__name__}"
            )
        if not isinstance(self.coordinate, str):
            raise TypeError(f"CoordinateFunction.coordinate must be a coordinate name, got {self.coordinate!r}")

    def describe(self) -> str:
        """E.g. ``"fmm cubic spline, 7 knots on [0, 2.6] of elbow"``."""
        return f"{self.function.describe()} of {self.coordinate}"
