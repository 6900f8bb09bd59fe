"""A ligament: OpenSim's ``Ligament``, a passive tension along a musculotendon-like path.

The path is a :class:`~mbkron.multibody.muscles.paths.MusclePath` of the same points as a muscle's (body-fixed,
moving, conditional, wrapped); its length ``L(q)`` and moment arms ``R = −∂L/∂q`` (Eq. 192–195) are the
path's (:class:`~mbkron.multibody.muscles.springs.PathForce`). The tension is OpenSim 4.6's
``Ligament::computeForce``,

    T = F_pcsa · f(L / L₀)  where L > L₀,   T = 0  where L ≤ L₀,

with ``f`` the force–length curve of the strain ``L / L₀`` (dimensionless; OpenSim's default, 13 knots of a
``SimmSpline`` — the ``fmm`` cubic spline — rising from 0 at ``L = L₀`` to 2 at ``1.6 L₀``, is
:data:`OPENSIM_FORCE_LENGTH`), and the generalized force is ``R T`` (Eq. 192: the tension pulls the ends
together). It does not depend on the speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.numerics.functions import EmpiricalFunction, tabulated_function
from mbkron.multibody.muscles.springs import PathForce

__all__ = ["Ligament", "OPENSIM_FORCE_LENGTH", "opensim_force_length"]

#: OpenSim 4.6's default force–length curve of a ``Ligament`` (``Ligament::constructProperties``): knots
#: ``(x, y)`` of a ``SimmSpline`` (strain ``L / L₀`` → force per ``pcsa_force``).
OPENSIM_FORCE_LENGTH = (
    (-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0),
    (0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0),
)


def opensim_force_length() -> EmpiricalFunction:
    """:data:`OPENSIM_FORCE_LENGTH` as the ``fmm`` cubic spline OpenSim's ``SimmSpline`` is."""
    return tabulated_function(*OPENSIM_FORCE_LENGTH, "fmm")


@dataclass(frozen=True)
class Ligament(PathForce):
    """A passive path force with a force–length curve (OpenSim's ``Ligament``); see the module docstring.

    Attributes
    ----------
    name : str
    path : tuple
        As :class:`~mbkron.multibody.muscles.springs.PathForce`'s.
    resting_length : float
        ``L₀`` > 0, m.
    pcsa_force : float
        ``F_pcsa`` ≥ 0, N: the force at the strain where ``f = 1``.
    force_length : EmpiricalFunction
        ``f``, of the strain ``L / L₀`` (a tabulated function of :mod:`mbkron.numerics.functions`;
        default: OpenSim's, :func:`opensim_force_length`).
    """

    resting_length: float
    pcsa_force: float
    force_length: EmpiricalFunction = None  # type: ignore[assignment]  (set to OpenSim's in __post_init__)

    def __post_init__(self):
        if self.force_length is None:
            object.__setattr__(self, "force_length", opensim_force_length())

    def check_parameters(self, where: str, problems: list[str]) -> None:
        for key, positive in (("resting_length", True), ("pcsa_force", False)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or \
                    value < 0 or (positive and value == 0):
                problems.append(f"{where}: `{key}` must be a finite {'positive' if positive else 'non-negative'} "
                                f"number, got {value!r}")
        if not isinstance(self.force_length, EmpiricalFunction):
            problems.append(f"{where}: `force_length` must be a tabulated function of the strain "
                            f"(mbkron.numerics.functions), got {type(self.force_length).__name__}")

    def tension(self, length: NDArray, speed: NDArray) -> NDArray[np.float64]:
        length = np.asarray(length, dtype=float)
        strain = length / self.resting_length
        return np.where(length > self.resting_length, self.pcsa_force * self.force_length(strain), 0.0)
