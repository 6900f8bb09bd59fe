"""The closed-chain linkages of Section 4-3: a four-bar (Eq. 121) and a five-bar (Eq. 123).

(Andrews' squeezer, Section 4-4 B, is in :mod:`mbkron.examples.andrews`.)

Both are planar chains of revolute joints about z from the ground pivot ``O`` at the origin,
closed at the ground pivot ``(l0, 0, 0)``. Body ``k`` has its frame at its proximal joint with
its x axis along the link, so ``θ_k`` is the angle of link ``k`` relative to link ``k − 1``
and the seed's ``S_12…k``/``C_12…k`` (Eq. 122) are the sines and cosines of the absolute link
angles. The constraint equations are the seed's, written as strings
(:class:`~mbkron.algorithms.jointvars.constraints.SymbolicConstraints`).

Four-bar (Eq. 121)
    ``q`` is the height of the coupler's (body 2's) centre of mass. Table 1's numbers did not
    survive in the seed; we use the Grashof drag-link (double crank; the ground is the
    shortest link, ``1 + 3 < 2 + 3``) ``l0 = 1, l1 = 3, l2 = 2, l3 = 3, l_cm2 = 1``. On its
    assembly branch with the coupler-rocker joint to the left of the line from the crank tip
    to ``(l0, 0)`` the coupler's centre of mass rises monotonically from ``q = −2.598``
    (crank at ``−π/3``) to ``q = 2.958`` as the crank turns forward, so ``q ∈ [−2, 2]`` (the
    seed's range) lies inside one regular branch with margin (``det ∂g/∂f ≠ 0``); the other
    half-turn of the crank is the mirror branch, which the solver never reaches. Point ``p``
    is the coupler point ``(1, 1, 0)`` of body 2 (1 unit along the coupler, 1 unit to its left).
Five-bar (Eq. 123, Table 2)
    ``l0 = 3, l1 = l2 = 1, l3 = l4 = 3``; ``q = (θ1, θ2)`` drive the first two joints, ``θ3, θ4``
    are solved. The loop always closes (the tip of link 2 is 1 to 5 units from ``(l0, 0)``,
    within ``|l3 − l4| = 0`` and ``l3 + l4 = 6``) and is never singular, so ``θ1, θ2`` are
    periodic with no restriction; the branch is the one with the joint between links 3 and 4
    to the left of the line from the tip of link 2 to ``(l0, 0)``. Point ``p`` sits on link 3
    at ``l_p = 2`` from its proximal joint: ``(2, 0, 0)`` in body 3. (The seed's figure, which
    showed where ``p`` is, was lost.)

Inertial parameters (not given by the seed) are those of uniform slender rods of 1 kg/m.
Trajectories: :func:`four_bar_trajectory` and :func:`five_bar_trajectory`, piecewise cubic
Hermite polynomials through chosen knots (Fig. 4 and the seed's five-bar trajectory figure).
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from mbkron.model.builder import ModelBuilder
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.model.model import Model

__all__ = [
    "FOUR_BAR",
    "FOUR_BAR_POINT",
    "FIVE_BAR",
    "FIVE_BAR_POINT",
    "four_bar",
    "five_bar",
    "four_bar_trajectory",
    "five_bar_trajectory",
]

FOUR_BAR = {"l0": 1.0, "l1": 3.0, "l2": 2.0, "l3": 3.0, "lcm2": 1.0}
"""Four-bar parameters (Eq. 121; our choice, see the module docstring)."""

FOUR_BAR_POINT = ("coupler", (1.0, 1.0, 0.0))
"""Point ``p`` of the four-bar: (body, body coordinates)."""

FIVE_BAR = {"l0": 3.0, "l1": 1.0, "l2": 1.0, "l3": 3.0, "l4": 3.0, "lp": 2.0}
"""Five-bar parameters (Table 2)."""

FIVE_BAR_POINT = ("link3", (FIVE_BAR["lp"], 0.0, 0.0))
"""Point ``p`` of the five-bar: (body, body coordinates)."""

EQ_121 = (
    "l1*sin(crank) + lcm2*sin(crank + coupler) - q",
    "(l2 - lcm2)*sin(crank + coupler) + l3*sin(crank + coupler + rocker) + q",
    "l1*cos(crank) + l2*cos(crank + coupler) + l3*cos(crank + coupler + rocker) - l0",
)
EQ_123 = (
    "l1*sin(link1) + l2*sin(link1 + link2) + l3*sin(link1 + link2 + link3) + l4*sin(link1 + link2 + link3 + link4)",
    "l1*cos(link1) + l2*cos(link1 + link2) + l3*cos(link1 + link2 + link3) + l4*cos(link1 + link2 + link3 + link4) - l0",
)


def _rod(builder: ModelBuilder, name: str, parent: str, offset: float, length: float, com: float, **joint) -> None:
    """A uniform slender rod along its x axis (1 kg/m), revolute about z."""
    mass = length
    builder.add_body(
        name, parent=parent, axis=(0, 0, 1), offset=(offset, 0.0, 0.0), mass=mass, com=(com, 0.0, 0.0),
        inertia=np.diag([0.0, mass * length**2 / 12, mass * length**2 / 12]), **joint,
    )


def four_bar(solver: str = "premodel", **settings: object) -> Model:
    """The four-bar linkage of Eq. 121 with ``q`` the coupler's centre-of-mass height.

    Parameters
    ----------
    solver : str
        Constraint solver (default ``"premodel"``, the seed's choice, with the seed's sweep step
        0.01); see :meth:`mbkron.ModelBuilder.add_constraints`.
    **settings
        Solver settings.

    Returns
    -------
    Model
        Coordinate ``q`` (m, range [−2, 2]); bodies ``crank``, ``coupler``, ``rocker``.
    """
    p = FOUR_BAR
    b = ModelBuilder(name="four-bar")
    b.add_coordinate("q", range=(-2.0, 2.0), default=0.0, unit="m")
    _rod(b, "crank", "ground", 0.0, p["l1"], p["l1"] / 2)
    _rod(b, "coupler", "crank", p["l1"], p["l2"], p["lcm2"])
    _rod(b, "rocker", "coupler", p["l2"], p["l3"], p["l3"] / 2)
    if solver == "premodel":
        settings.setdefault("step", 0.01)
    b.add_constraints(
        ["crank", "coupler", "rocker"], SymbolicConstraints(EQ_121, p), solver,
        guess={"crank": 0.29, "coupler": -1.34, "rocker": -2.39}, **settings,
    )
    return b.build()


def five_bar(solver: str = "projection", **settings: object) -> Model:
    """The five-bar linkage of Eq. 123 (Table 2) with ``q = (θ1, θ2)``.

    Parameters
    ----------
    solver : str
        Constraint solver (default ``"projection"``, the seed's choice); see
        :meth:`mbkron.ModelBuilder.add_constraints`.
    **settings
        Solver settings.

    Returns
    -------
    Model
        Coordinates ``theta1``, ``theta2`` (periodic, defaults 0.5 and 1.0); bodies ``link1`` …
        ``link4``.
    """
    p = FIVE_BAR
    b = ModelBuilder(name="five-bar")
    b.add_coordinate("theta1", default=0.5, periodic=True)
    b.add_coordinate("theta2", default=1.0, periodic=True)
    _rod(b, "link1", "ground", 0.0, p["l1"], p["l1"] / 2, variable="theta1")
    _rod(b, "link2", "link1", p["l1"], p["l2"], p["l2"] / 2, variable="theta2")
    _rod(b, "link3", "link2", p["l2"], p["l3"], p["l3"] / 2)
    _rod(b, "link4", "link3", p["l3"], p["l4"], p["l4"] / 2)
    parameters = {k: v for k, v in p.items() if k != "lp"}
    b.add_constraints(
        ["link3", "link4"], SymbolicConstraints(EQ_123, parameters), solver,
        guess={"link3": -0.99, "link4": -2.27}, **settings,
    )
    return b.build()


def four_bar_trajectory() -> CubicHermiteSpline:
    """``q(t)`` of the four-bar, ``t ∈ [0, 4]`` s: piecewise cubic Hermite (Fig. 4).

    Knots ``t = 0, 1, 2, 3, 4`` with ``q = −1.5, 1.8, 0.2, −1.8, −1.5`` m and slopes
    ``0, 0.5, −2, 0, 0`` m/s; it stays inside [−2, 2].
    """
    return CubicHermiteSpline([0.0, 1.0, 2.0, 3.0, 4.0], [-1.5, 1.8, 0.2, -1.8, -1.5], [0.0, 0.5, -2.0, 0.0, 0.0])


def five_bar_trajectory() -> CubicHermiteSpline:
    """``(θ1(t), θ2(t))`` of the five-bar, ``t ∈ [0, 4]`` s: piecewise cubic Hermite.

    Knots ``t = 0, 1, 2, 3, 4``; ``θ1 = 0.5, 1.5, 3.0, 2.0, 0.5`` rad with slopes
    ``0, 1.5, 0, −1.5, 0`` rad/s; ``θ2 = 1.0, −0.5, 0.8, 2.5, 1.0`` rad with slopes
    ``0, 0, 1.5, 0, 0`` rad/s.
    """
    t = [0.0, 1.0, 2.0, 3.0, 4.0]
    values = np.array([[0.5, 1.5, 3.0, 2.0, 0.5], [1.0, -0.5, 0.8, 2.5, 1.0]]).T
    slopes = np.array([[0.0, 1.5, 0.0, -1.5, 0.0], [0.0, 0.0, 1.5, 0.0, 0.0]]).T
    return CubicHermiteSpline(t, values, slopes, axis=0)
