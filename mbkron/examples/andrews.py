"""Andrews' squeezer mechanism (Schiehlen 1990; Hairer & Wanner, Solving ODEs II, VII.7; the IVP test
set problem "andrews"), as an ODE in one coordinate q = β (Section 4-4 B of the dissertation).

Seven bodies on revolute joints about z, no gravity; the joint variables (β, Θ, γ, Φ, δ, Ω, ε) are
tied by three loop closures at the point E (six equations), solved at every q; a spring (c0, l0)
between D on body 3 and the fixed point C; a constant drive torque ``mom`` on the crank.

=====  ===========  ============================================================================
body   name          joint (parent)                           body-frame points
=====  ===========  ============================================================================
1      ``crank``    β, absolute, at O = (0, 0)               F = (rr, 0); COM (ra, 0)
2      ``Theta``    Θ, relative, at F on the crank            E = (−d, 0); COM (−da, 0)
3      ``gamma``    γ, absolute, at B = (xb, yb)             E = (0, −ss); D = (sd, −sc); COM (sa, −sb)
5      ``delta``    δ, absolute, at A = (xa, ya)             G = (zt, 0); COM (ta, tb)
4      ``Phi``      Φ, relative, at G on body 5               E = (0, −e); COM (0, −(e − ea))
7      ``epsilon``  ε, absolute, at A                         H = (0, −u); COM (ua, ub)
6      ``Omega``    Ω, relative, at H on body 7               E = (zf, 0); COM (zf − fa, 0)
=====  ===========  ============================================================================

The frames are chosen so that the six loop equations are exactly the test set's g1…g6
(:data:`EQUATIONS`) and the 7×7 mass matrix in (β, Θ, γ, Φ, δ, Ω, ε) is the test set's (tested). Only
the distances of the centres of mass of bodies 3 and 7 from their pivots are given by the test set,
so their directions are a choice that changes nothing (no gravity, fixed pivots).
"""

from __future__ import annotations

import numpy as np

from mbkron.model.builder import ModelBuilder
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.algorithms.jointvars.loop_closures import LoopClosure, LoopClosures
from mbkron.multibody.loads import JointTorque, SpringDamper
from mbkron.model.model import Model

__all__ = ["PARAMETERS", "EQUATIONS", "INITIAL", "BODIES", "andrews_squeezer", "open_tree"]

PARAMETERS: dict[str, float] = dict(
    m1=0.04325, m2=0.00365, m3=0.02373, m4=0.00706, m5=0.07050, m6=0.00706, m7=0.05498,
    i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5,
    xa=-0.06934, ya=-0.00227, xb=-0.03635, yb=0.03273, xc=0.014, yc=0.072, c0=4530.0, l0=0.07785, mom=0.033,
    d=0.028, da=0.0115, e=0.02, ea=0.01421, rr=0.007, ra=0.00092, ss=0.035, sa=0.01874, sb=0.01043,
    sc=0.018, sd=0.02, ta=0.02308, tb=0.00916, u=0.04, ua=0.01228, ub=0.00449, zf=0.02, zt=0.04, fa=0.01421,
)
"""The IVP test set's data, SI units (kg, kg·m², m, N/m, N·m)."""

EQUATIONS = (
    "rr*cos(beta) - d*cos(beta + Theta) - ss*sin(gamma) - xb",
    "rr*sin(beta) - d*sin(beta + Theta) + ss*cos(gamma) - yb",
    "rr*cos(beta) - d*cos(beta + Theta) - e*sin(Phi + delta) - zt*cos(delta) - xa",
    "rr*sin(beta) - d*sin(beta + Theta) + e*cos(Phi + delta) - zt*sin(delta) - ya",
    "rr*cos(beta) - d*cos(beta + Theta) - zf*cos(Omega + epsilon) - u*sin(epsilon) - xa",
    "rr*sin(beta) - d*sin(beta + Theta) - zf*sin(Omega + epsilon) + u*cos(epsilon) - ya",
)
"""The loop equations g1…g6 of the test set, in the joint-variable names (``beta`` is the coordinate)."""

INITIAL: dict[str, float] = {
    "beta": -0.0617138900142764496358948458001,
    "Theta": 0.0,
    "gamma": 0.455279819163070380255912382449,
    "Phi": 0.222668390165885884674473185609,
    "delta": 0.487364979543842550225598953530,
    "Omega": -0.222668390165885884674473185609,
    "epsilon": 1.23054744454982119249735015568,
}
"""The test set's consistent initial configuration, rad (all velocities zero)."""

BODIES = ("crank", "Theta", "gamma", "delta", "Phi", "epsilon", "Omega")
"""Body names in parent-first order; the solved joint variables are named after their bodies."""

SOLVED = ("Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def _closures(p: dict[str, float]) -> list[LoopClosure]:
    E_coupler = (-p["d"], 0.0, 0.0)
    return [
        LoopClosure("Theta", E_coupler, "gamma", (0.0, -p["ss"], 0.0)),
        LoopClosure("Theta", E_coupler, "Phi", (0.0, -p["e"], 0.0)),
        LoopClosure("Theta", E_coupler, "Omega", (p["zf"], 0.0, 0.0)),
    ]


def andrews_squeezer(solver: str = "lu", constraints: str = "loop_closures", **settings: object) -> Model:
    """Andrews' squeezer with ``q = β`` and the six other angles solved from the loop closures.

    Parameters
    ----------
    solver : {"lu", "projection", "premodel", "finite_difference"}
        How ``∇f`` and ``H`` of the solved angles are obtained (see
        :meth:`mbkron.ModelBuilder.add_constraints`); ``"premodel"`` fits Fourier series in the
        periodic β, as the dissertation does.
    constraints : {"loop_closures", "expressions"}
        Generate the equations from the three loop closures at E (default), or use the test set's
        expressions :data:`EQUATIONS`; both describe the same constraint manifold.
    **settings
        Solver settings (e.g. ``step`` for pre-modelling).

    Returns
    -------
    Model
        Coordinate ``beta`` (periodic); loads: the spring and the drive torque.
    """
    p = PARAMETERS
    b = ModelBuilder(name="andrews_squeezer", gravity=(0.0, 0.0, 0.0))
    b.add_coordinate("beta", default=INITIAL["beta"], periodic=True)
    _add_bodies(b, {"crank": "beta"})
    if constraints == "loop_closures":
        system = LoopClosures(_closures(p))
    elif constraints == "expressions":
        system = SymbolicConstraints(EQUATIONS, {k: p[k] for k in ("rr", "d", "ss", "e", "zt", "zf", "u", "xa", "ya",
                                                                    "xb", "yb")})
    else:
        raise ValueError(f"`constraints` must be 'loop_closures' or 'expressions', got {constraints!r}")
    b.add_constraints(SOLVED, system, solver, guess={name: INITIAL[name] for name in SOLVED}, **settings)
    b.add_load(SpringDamper("gamma", (p["sd"], -p["sc"], 0.0), "ground", (p["xc"], p["yc"], 0.0), p["c0"], 0.0, p["l0"]))
    b.add_load(JointTorque("crank", p["mom"]))
    return b.build()


def _add_bodies(b: ModelBuilder, variables: dict[str, str]) -> None:
    """The seven bodies of the table above; joints not in ``variables`` are left to be solved."""
    p = PARAMETERS
    z = (0.0, 0.0, 1.0)

    def add(name: str, mass: str, inertia: str, com, **joint) -> None:
        b.add_body(name, axis=z, variable=variables.get(name), mass=p[mass], com=com,
                   inertia=np.diag([0.0, p[inertia], p[inertia]]), **joint)

    add("crank", "m1", "i1", (p["ra"], 0, 0))
    add("Theta", "m2", "i2", (-p["da"], 0, 0), parent="crank", offset=(p["rr"], 0, 0))
    add("gamma", "m3", "i3", (p["sa"], -p["sb"], 0), offset=(p["xb"], p["yb"], 0))
    add("delta", "m5", "i5", (p["ta"], p["tb"], 0), offset=(p["xa"], p["ya"], 0))
    add("Phi", "m4", "i4", (0, -(p["e"] - p["ea"]), 0), parent="delta", offset=(p["zt"], 0, 0))
    add("epsilon", "m7", "i7", (p["ua"], p["ub"], 0), offset=(p["xa"], p["ya"], 0))
    add("Omega", "m6", "i6", (p["zf"] - p["fa"], 0, 0), parent="epsilon", offset=(0, -p["u"], 0))


def open_tree() -> Model:
    """The seven bodies as an open tree with the seven angles (β, Θ, γ, Φ, δ, Ω, ε) as coordinates.

    No loop closures and no loads: its mass matrix is the test set's 7×7 ``M`` (the "index-1 DAE"
    form of the problem), which the tests compare entry by entry.
    """
    b = ModelBuilder(name="andrews_open_tree", gravity=(0.0, 0.0, 0.0))
    names = dict(zip(("crank", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon"),
                     ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")))
    for coordinate in names.values():
        b.add_coordinate(coordinate, default=INITIAL[coordinate])
    _add_bodies(b, names)
    return b.build()
