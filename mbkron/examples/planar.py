"""Planar serial chains: seed 000's n-link musculoskeletal chain and the arms of seeds 001 and 003.

Links move in the x–y plane (y up, gravity ``(0, −g, 0)``), revolute joints about z. Link ``k``'s
frame has its origin at joint ``J_k`` and its x axis along ``û_k = J_k J_{k+1} / l_k``; angles are
counter-clockwise. Points on a link are given by their distance from ``J_k`` and angle from ``û_k``
(seed 000's ``l_C, ε_C`` and ``l_R, ε_R``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mbkron.model.builder import ModelBuilder
from mbkron.multibody.jointvars import Linear
from mbkron.multibody.loads import LineForce, Load, PointForce
from mbkron.model.model import Model

__all__ = ["ChainContact", "ChainMuscle", "planar_chain", "dempster_two_link", "two_link_arm", "three_link_arm"]


def _polar(distance: float, angle: float) -> tuple[float, float, float]:
    return (distance * np.cos(angle), distance * np.sin(angle), 0.0)


@dataclass(frozen=True)
class ChainContact:
    """A contact force ``R`` on link ``link`` (seed 000, Fig. 1).

    Applied at distance ``l_R`` from the link's proximal joint, at angle ``eps_R`` from ``û``; its
    direction makes the angle ``gamma_R`` with ``û`` (all counter-clockwise, radians).
    ``magnitude`` is in newtons, or a callable ``(t, q, qd)``.
    """

    link: int
    magnitude: float | Callable
    l_R: float
    eps_R: float
    gamma_R: float


@dataclass(frozen=True)
class ChainMuscle:
    """A muscle as a linear force actuator between links ``j1 < j2`` (seed 000).

    ``point1`` and ``point2`` are ``(x, y)`` in the link frames (along ``û``, ``ŵ`` from the proximal
    joint); ``j1 = 0`` is the base, whose frame is the ground frame at ``J_1``. The tension (N, or a
    callable ``(t, q, qd)``) pulls the attachments together.
    """

    j1: int
    point1: tuple[float, float]
    j2: int
    point2: tuple[float, float]
    tension: float | Callable


def _link(k: int) -> str:
    return "ground" if k == 0 else f"link{k}"


def planar_chain(
    lengths: Sequence[float],
    com_distances: Sequence[float],
    com_angles: Sequence[float],
    masses: Sequence[float],
    inertias: Sequence[float],
    *,
    contacts: Sequence[ChainContact] = (),
    muscles: Sequence[ChainMuscle] = (),
    loads: Sequence[Load] = (),
    coordinates: str = "absolute",
    g: float = 9.81,
    name: str = "planar_chain",
) -> Model:
    """The planar n-link chain of seed 000 as an mbkron model.

    Parameters
    ----------
    lengths, com_distances, com_angles, masses, inertias : sequence of float, length n
        Per link: ``l_i``, ``l_Ci``, ``ε_Ci`` (rad), ``m_i`` (kg) and ``I_Ci`` (kg·m², about the centre
        of mass).
    contacts : sequence of ChainContact
    muscles : sequence of ChainMuscle
        Added to ``model.loads`` as :class:`~mbkron.multibody.loads.PointForce` (body frame) and
        :class:`~mbkron.multibody.loads.LineForce`.
    loads : sequence of Load
        Further loads on the links (bodies ``link1 .. linkn``).
    coordinates : {"absolute", "relative"}
        ``q = θ`` (absolute link angles from the horizontal, seed 000; the joint variables are the
        relative angles ``θ_k − θ_{k−1}``, affine maps of q) or ``q = α`` (relative angles, seeds 001
        and 003). Coordinates are named ``theta1..`` or ``alpha1..``.
    g : float
        Gravitational acceleration, m/s².

    Returns
    -------
    Model
        Bodies ``link1 .. linkn``.
    """
    n = len(lengths)
    if coordinates not in ("absolute", "relative"):
        raise ValueError(f"`coordinates` must be 'absolute' or 'relative', got {coordinates!r}")
    for label, values in (("com_distances", com_distances), ("com_angles", com_angles), ("masses", masses),
                          ("inertias", inertias)):
        if len(values) != n:
            raise ValueError(f"`{label}` has {len(values)} entries; expected one per link ({n})")
    prefix = "theta" if coordinates == "absolute" else "alpha"
    b = ModelBuilder(name=name, gravity=(0.0, -g, 0.0))
    for k in range(1, n + 1):
        b.add_coordinate(f"{prefix}{k}")
    for k in range(1, n + 1):
        if coordinates == "absolute" and k > 1:
            variable = Linear({f"theta{k}": 1.0, f"theta{k - 1}": -1.0})
        else:
            variable = f"{prefix}{k}"
        inertia = inertias[k - 1]
        b.add_body(
            _link(k),
            parent=_link(k - 1),
            axis=(0.0, 0.0, 1.0),
            variable=variable,
            offset=(lengths[k - 2], 0.0, 0.0) if k > 1 else None,
            mass=masses[k - 1],
            com=_polar(com_distances[k - 1], com_angles[k - 1]),
            inertia=np.diag([0.0, inertia, inertia]),  # a slender link along û; planar motion uses I_zz
        )
    for c in contacts:
        magnitude = c.magnitude
        direction = np.array([np.cos(c.gamma_R), np.sin(c.gamma_R), 0.0])
        force = (lambda t, q, qd, m=magnitude, u=direction: m(t, q, qd) * u) if callable(magnitude) else magnitude * direction
        b.add_load(PointForce(_link(c.link), _polar(c.l_R, c.eps_R), force, frame="body"))
    for m in muscles:
        b.add_load(LineForce(_link(m.j1), (*m.point1, 0.0), _link(m.j2), (*m.point2, 0.0), m.tension))
    for load in loads:
        b.add_load(load)
    return b.build()


def dempster_two_link(height: float = 1.70, mass: float = 70.0) -> dict[str, float]:
    """Upper arm and forearm-plus-hand parameters exactly as seed 003 computes them (Dempster).

    ``L1 = 0.188 h``, ``L2 = 0.253 h``, ``d1 = 0.436 L1``, ``d2 = 0.682 L2``, ``m1 = 0.028 M``,
    ``m2 = 0.022 M``, ``I_i = m_i (r_i L_i)²`` with ``r = (0.322, 0.468)`` (about the centres of mass).

    Returns
    -------
    dict
        Keys ``L1, L2, d1, d2, m1, m2, I1, I2`` (SI).
    """
    L1, L2 = 0.188 * height, 0.253 * height
    m1, m2 = 0.028 * mass, 0.022 * mass
    return dict(L1=L1, L2=L2, d1=0.436 * L1, d2=0.682 * L2, m1=m1, m2=m2,
                I1=m1 * (0.322 * L1) ** 2, I2=m2 * (0.468 * L2) ** 2)


def two_link_arm(height: float = 1.70, mass: float = 70.0, g: float = 9.81) -> Model:
    """Seed 003's two-link arm: q = (α1, α2) relative angles from the horizontal, y up.

    Parameters from :func:`dempster_two_link`.
    """
    p = dempster_two_link(height, mass)
    return planar_chain([p["L1"], p["L2"]], [p["d1"], p["d2"]], [0.0, 0.0], [p["m1"], p["m2"]],
                        [p["I1"], p["I2"]], coordinates="relative", g=g, name="two_link_arm")


def three_link_arm(
    l1: float = 0.188 * 1.70,
    l2: float = 0.145 * 1.70,
    l3: float = 0.108 * 1.70,
    d1: float = 0.436 * 0.188 * 1.70,
    d2: float = 0.430 * 0.145 * 1.70,
    d3: float = 0.506 * 0.108 * 1.70,
    m1: float = 0.028 * 70.0,
    m2: float = 0.016 * 70.0,
    m3: float = 0.006 * 70.0,
    I1: float = 0.028 * 70.0 * (0.322 * 0.188 * 1.70) ** 2,
    I2: float = 0.016 * 70.0 * (0.303 * 0.145 * 1.70) ** 2,
    I3: float = 0.006 * 70.0 * (0.297 * 0.108 * 1.70) ** 2,
    d_s: float = 0.0,
    spring_force: float | Callable = 0.0,
    g: float = 9.81,
) -> Model:
    """Seed 001's three-link arm (upper arm, forearm, hand), q = (α1, α2, α3) relative angles.

    The spring force ``F_S`` pulls the hand along −x at distance ``d3 + d_s`` from the wrist on the
    hand axis (where seed 001's Eq. 17 and 42–44 put it; see docs/seed-notes/closed-form-seeds.md).
    Defaults: a 1.70 m, 70 kg person with Dempster's segment fractions (upper arm as in seed 003;
    forearm 0.145 h, hand 0.108 h, centres of mass at 0.430 and 0.506 of the segment, radii of
    gyration 0.303 and 0.297, masses 0.016 and 0.006 of body mass, as tabulated by Winter).

    Parameters
    ----------
    l1, l2, l3, d1, d2, d3, m1, m2, m3, I1, I2, I3 : float
        Seed 001's notation (SI); ``l3`` (hand length) does not enter the dynamics.
    d_s : float
        m.
    spring_force : float or callable (t, q, qd) -> float
        ``F_S`` in newtons.
    """
    if callable(spring_force):
        force = lambda t, q, qd: np.multiply.outer(spring_force(t, q, qd), [-1.0, 0.0, 0.0])  # noqa: E731
    else:
        force = (-float(spring_force), 0.0, 0.0)
    spring = PointForce("link3", (d3 + d_s, 0.0, 0.0), force, frame="ground")
    return planar_chain([l1, l2, l3], [d1, d2, d3], [0.0, 0.0, 0.0], [m1, m2, m3], [I1, I2, I3],
                        loads=(spring,), coordinates="relative", g=g, name="three_link_arm")
