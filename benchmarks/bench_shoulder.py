"""The shoulder tracking problem at equal accuracy: the model file's embedded ODE against a DAE of the same mechanism.

Run from the repository root, on one thread::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python -m benchmarks.bench_shoulder [--quick]

The problem is the seed's (seed 002, Section 4-4 C, Eq. 200–201, "more than 3 times faster" than the DAE):
the Holzbaur (2005) shoulder with the de Groot–Brand style rhythm (``models/shoulder_rhythm.toml``, 3
coordinates, 14 revolute joint angles that are linear in them), the elevation following a minimum-jerk
15° → 105° in 1 s with the plane of elevation at 90° and the axial rotation at −30°, computed torque with
critically damped PD terms, K = diag(100, 100, 1000) (:mod:`validation.shoulder_pipeline`), 101 output
times. Every run returns the same outputs: q(t), q̇(t) and τ(t) at the output times.

- **ODE** (the dissertation's embedding), mbkron's public API on the file a user loads:

  * ``track``: :func:`mbkron.analysis.tracking.track` as the pipeline calls it (``mbkron.simulate`` with
    ``tau`` a callable that evaluates ``Model.equations_of_motion``; ``simulate`` then evaluates
    ``Model.forward_dynamics`` with that τ; τ at the outputs row by row);
  * ``simulate``: the same closed loop through ``mbkron.simulate`` with a lean ``tau`` (one
    ``equations_of_motion`` call with a workspace, the commanded acceleration in scalar arithmetic) and
    τ at the outputs from one batched ``equations_of_motion`` call;
  * ``Eq200``: the seed's formulation integrated as written: every evaluation solves Eq. 200 for (q̈, τ)
    from one ``equations_of_motion`` call (its block solution q̈ = Q_d, τ = M Q_d + N q̇ − G), by
    ``scipy.integrate.solve_ivp`` (or mbkron's RKF45 class passed to it) on the 6 states (q, q̇).

- **DAE**: the same mechanism in its 14 joint angles x (the open chain of the file's bodies, with their
  axes, offsets, masses, centres of mass and inertias, built in Pinocchio from the file's text, no mbkron
  dynamics), the rhythm x = A q + b as 11 affine constraints Φ(x) = 0 and the tracking law on the 3
  joints that are the coordinates (x_S = S x = q):

      M_x ẍ + h_x = Sᵀ τ + Φ_xᵀ λ,   Φ_x ẍ = −Φ̇_x ẋ (= 0: Φ is affine),   S ẍ = Q_d(t, S x, S ẋ),

  the index-1 form after index reduction, integrated by ``solve_ivp`` on the 28 states (x, ẋ):

  * ``KKT``: ``pin.crba`` and ``pin.nonLinearEffects``, one dense 28×28 solve for (ẍ, λ, τ) per
    evaluation (the constant rows set once);
  * ``blocks``: the same system solved by its blocks, as the constraint rows [Φ_x; S] are square and
    constant here: ẍ = [Φ_x; S]⁻¹ [0; Q_d] (a precomputed inverse), ``pin.rnea`` for the joint torques
    and (τ, λ) = [Sᵀ Φ_xᵀ]⁻¹ rnea (a precomputed inverse).

  No stabilisation: the constraints are affine, and explicit Runge–Kutta methods preserve affine invariants
  of the state exactly (Φ_x ẍ = 0 in every stage), implicit ones up to their Newton iterations, so position
  and velocity drift stay at round-off (at the Newton tolerance for Radau, BDF, TRBDF2); the script measures
  them (max |Φ(x)|, |Φ_x ẋ| at the outputs) and counts |Φ(x)| into the DAE's error.

Both sides also run with the dynamics evaluated at the output times only (``kinematic``): with an exact
model the closed loop is q̈ = Q_d, so the ODE integrates Q_d and the DAE ẍ = [Φ_x; S]⁻¹ [0; Q_d]; τ (and
λ) follow at the 101 outputs.

Errors are against the exact solution: the loop starts on the desired trajectory, so the error dynamics
ë + 2K ė + K² e = 0 keep q = q_des(t) (cross-checked against both sides' DOP853 runs at 1e-13); error =
max over the 101 outputs and 3 coordinates of |q − q_des| (for the DAE also of |Φ(x)|), τ error = max
|τ − τ(q_des, q̇_des, q̈_des)| (N·m) printed beside it. τ at the outputs: the ODE's routes (but ``track``)
from one batched ``equations_of_motion`` call, the DAE's from one ``pin.rneaInParallel`` call (one thread)
and the blocks' constant inverse, whatever route integrated the states.

The exact solution is q_des: a minimum-jerk (degree-5 polynomial) elevation and constants. BDF and LSODA
(whose Adams and BDF formulas of order ≤ 5 are exact on such polynomials) reach errors of 1e-10 in ~110–170
steps on both sides, which makes them the fastest runs at every error target; the explicit pairs are
limited by accuracy on the elevation (the K = 1000 mode of the axial rotation stays at rest unless
round-off excites it, as in ``simulate``'s route, whose steps then become stability-limited, h ≈ 3e-3 s).

Checks before timing: at random states, Pinocchio's full-coordinate Aᵀ M_x A, Aᵀ(h_x − g_x), −Aᵀ g_x
against mbkron's ``mass_matrix``, ``velocity_forces``, ``gravity_forces``; the humerus' centre of mass
against ``Model.point_position``; the two sides' τ at random states and commanded accelerations.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    import pinocchio as pin
except ImportError:  # pragma: no cover - depends on the environment
    sys.exit("bench_shoulder needs Pinocchio for the DAE baseline: `pip install pin` (or conda's pinocchio)")

import mbkron
from benchmarks.common import LadderRun, machine
from mbkron.analysis import tracking
from mbkron.integrate import RKF45, TRBDF2
from validation.shoulder_pipeline import (
    AXIAL,
    DURATION,
    ELEVATION_END,
    ELEVATION_START,
    GAINS,
    PLANE,
    desired_trajectory,
)

MODEL_FILE = ROOT / "models" / "shoulder_rhythm.toml"
SAMPLES = 101  # the pipeline's output times
T_EVAL = np.linspace(0.0, DURATION, SAMPLES)
METHODS = ("RKF45", "DOP853", "RK45", "TRBDF2", "Radau", "BDF", "LSODA")
EXPLICIT = ("RKF45", "DOP853", "RK45")
TOLERANCES = tuple(10.0 ** -k for k in range(3, 13))
TARGETS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
PIPELINE_TOLERANCES = (1e-8, 1e-10)  # validation.shoulder_pipeline.track's rtol, atol
#: The initial tracking errors e(0) (rad) of the scenarios: the seed's (none) and 2° on every coordinate.
SCENARIOS = {"seed": np.zeros(3), "offset": np.radians([2.0, 2.0, 2.0])}
SCENARIO_NOTES = {
    "seed": "the seed's problem: q = q_des exactly, a quintic and constants; the K = 1000 mode at rest",
    "offset": "e(t) = e₀ (1 + K t) exp(−K t): every mode excited, no polynomial solution; without the track route, "
              "which starts on the desired trajectory",
}
#: The routes of each side that solve the dynamics in every evaluation (the seed's setting), and the
#: routes that evaluate them only at the output times.
EVERY_EVALUATION = {"ODE": ("track", "simulate", "Eq200"), "DAE": ("KKT", "blocks")}
OUTPUTS_ONLY = {"ODE": ("kinematic",), "DAE": ("kinematic",)}


def solver(method: str):
    """A ``solve_ivp`` method: scipy's by name, mbkron's classes for RKF45 and TRBDF2."""
    return {"RKF45": RKF45, "TRBDF2": TRBDF2}.get(method, method)


#: The initial tracking error e(0) (rad; ė(0) = 0) of the current scenario: zero in the seed's problem.
OFFSET = np.zeros(3)


# --------------------------------------------------------------------------- the tracking law (Eq. 201)

SPAN = ELEVATION_END - ELEVATION_START
K1, K2, K3 = (float(k) for k in GAINS)


def commanded(t: float, q: np.ndarray, qd: np.ndarray) -> tuple[float, float, float]:
    """``Q_d = q̈_des − 2K (q̇ − q̇_des) − K² (q − q_des)`` (Eq. 201) along the pipeline's desired trajectory, in
    scalar arithmetic (both sides use it; :func:`check_commanded` compares it with the pipeline's)."""
    s = min(max(t / DURATION, 0.0), 1.0)
    s2 = s * s
    elevation = ELEVATION_START + SPAN * s2 * s * (10.0 - 15.0 * s + 6.0 * s2)
    rate = SPAN / DURATION * s2 * (30.0 - 60.0 * s + 30.0 * s2)
    acceleration = SPAN / DURATION**2 * s * (60.0 - 180.0 * s + 120.0 * s2)
    q0, q1, q2 = q.tolist()
    v0, v1, v2 = qd.tolist()
    return (-2.0 * K1 * v0 - K1 * K1 * (q0 - PLANE),
            acceleration - 2.0 * K2 * (v1 - rate) - K2 * K2 * (q1 - elevation),
            -2.0 * K3 * v2 - K3 * K3 * (q2 - AXIAL))


def check_commanded(states: int = 50, seed: int = 1) -> float:
    """Largest difference between :func:`commanded` and :func:`mbkron.analysis.tracking.commanded_acceleration`
    with the pipeline's :func:`~validation.shoulder_pipeline.desired_trajectory`, at random states."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        t, q, qd = rng.uniform(0, DURATION), rng.uniform(-2, 2, 3), rng.uniform(-3, 3, 3)
        expected = tracking.commanded_acceleration(desired_trajectory, GAINS, t, q, qd)
        worst = max(worst, float(np.abs(np.array(commanded(t, q, qd)) - expected).max() / np.abs(expected).max()))
    assert worst < 1e-12, f"the scalar commanded acceleration differs from the pipeline's by {worst:.1e}"
    return worst


# --------------------------------------------------------------------------- the DAE side: the file's chain

def _rotation(axis, angle: float) -> np.ndarray:
    """``Rot(V, θ) = I + Ṽ sin θ + Ṽ² (1 − cos θ)`` (Eq. 39) about the normalised ``axis``."""
    v = np.asarray(axis, dtype=float)
    v = v / np.linalg.norm(v)
    skew = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + math.sin(angle) * skew + (1 - math.cos(angle)) * skew @ skew


def _placement(offset: dict | None, radians_per_unit: float) -> pin.SE3:
    """A body's ``offset`` table (translation and rotation, or matrix) as a Pinocchio placement."""
    offset = offset or {}
    rotation = np.eye(3)
    if "matrix" in offset:
        rotation = np.array(offset["matrix"], dtype=float)
    for item in offset.get("rotation", ()):  # intrinsic, composed left to right
        rotation = rotation @ _rotation(item["axis"], radians_per_unit * float(item["angle"]))
    return pin.SE3(rotation, np.array(offset.get("translation", (0.0, 0.0, 0.0)), dtype=float))


@dataclass
class Chain:
    """The file's open chain in its joint angles x: Pinocchio's model and the rhythm ``x = A q + b``.

    Attributes
    ----------
    model : pinocchio.Model
        One revolute joint per body with a joint variable, in the file's order (x index = joint order).
    joints, coordinates : tuple of str
    A : ndarray, shape (nx, nq)
        ``∂x/∂q`` (rad/rad), constant: the file's formulas are linear.
    b : ndarray, shape (nx,)
        ``x(0)``, rad.
    independent : ndarray of int, shape (nq,)
        The joints whose angle is a coordinate (``S x = q``).
    """

    model: pin.Model
    joints: tuple[str, ...]
    coordinates: tuple[str, ...]
    A: np.ndarray
    b: np.ndarray
    independent: np.ndarray

    @property
    def dependent(self) -> np.ndarray:
        return np.array([i for i in range(len(self.joints)) if i not in set(self.independent.tolist())])

    @property
    def S(self) -> np.ndarray:
        """Selection of the independent joints, shape (nq, nx)."""
        S = np.zeros((len(self.coordinates), len(self.joints)))
        S[np.arange(len(self.coordinates)), self.independent] = 1.0
        return S

    @property
    def Phi_x(self) -> np.ndarray:
        """``∂Φ/∂x`` of the rhythm constraints ``Φ(x) = x_D − A_D S x − b_D`` (D: the dependent joints)."""
        D = self.dependent
        return np.eye(len(self.joints))[D] - self.A[D] @ self.S

    def constraints(self, x: np.ndarray) -> np.ndarray:
        """``Φ(x)``, rad, shape (..., nx − nq)."""
        D = self.dependent
        return x[..., D] - x[..., self.independent] @ self.A[D].T - self.b[D]


def read_chain(path: Path) -> Chain:
    """The open chain of a model file whose joint variables are affine in the coordinates, built in Pinocchio.

    Reads the file's text (``tomllib``): gravity, the bodies' parents, axes, offsets, masses, centres of mass
    and inertias (about the centre of mass, body axes), and each joint variable's formula (sympy, in the
    file's angle unit). Only what the shoulder uses is supported (revolute and fixed joints, affine formulas,
    no ``d`` or ``theta``); anything else raises ``NotImplementedError``.
    """
    data = tomllib.loads(path.read_text())
    degrees = data.get("units", {}).get("angle", "rad") == "deg"
    unit = math.pi / 180 if degrees else 1.0
    coordinates = tuple(data["coordinates"])
    symbols = {name: sympy.Symbol(name) for name in coordinates}
    model = pin.Model()
    model.gravity = pin.Motion(np.array(data["model"].get("gravity", (0.0, -9.81, 0.0)), dtype=float), np.zeros(3))
    frames: dict[str, tuple[int, pin.SE3]] = {}  # body → (Pinocchio joint, placement of its frame in it)
    joints, rows, offsets = [], [], []
    for name, body in data["bodies"].items():
        unsupported = {"d", "theta", "translation_axis", "rotation_axis"} & set(body)
        if unsupported:
            raise NotImplementedError(f"body {name}: {sorted(unsupported)} not supported by this baseline")
        parent_joint, parent_frame = frames.get(body["parent"], (0, pin.SE3.Identity())) if "parent" in body \
            else (0, pin.SE3.Identity())
        placement = parent_frame * _placement(body.get("offset"), unit)
        kind = body.get("joint", "revolute")
        if kind == "fixed":
            frames[name] = (parent_joint, placement)
        elif kind == "revolute":
            axis = np.array(body["axis"], dtype=float)
            joint = model.addJoint(parent_joint, pin.JointModelRevoluteUnaligned(axis / np.linalg.norm(axis)),
                                   placement, name)
            frames[name] = (joint, pin.SE3.Identity())
            formula = sympy.sympify(body["variable"], locals=symbols)
            polynomial = sympy.Poly(formula, *symbols.values())
            if polynomial.total_degree() > 1:
                raise NotImplementedError(f"body {name}: the joint variable {body['variable']!r} is not affine")
            rows.append([float(formula.diff(symbols[c])) for c in coordinates])  # unit/unit = rad/rad
            offsets.append(unit * float(formula.subs({s: 0 for s in symbols.values()})))
            joints.append(name)
        else:
            raise NotImplementedError(f"body {name}: joint {kind!r} not supported by this baseline")
        if "mass" in body:
            inertia = np.array(body.get("inertia", np.zeros((3, 3))), dtype=float)
            inertia = np.diag(inertia) if inertia.shape == (3,) else inertia
            joint, frame = frames[name]
            if joint > 0:
                model.appendBodyToJoint(joint, pin.Inertia(float(body["mass"]),
                                                           np.array(body.get("com", (0, 0, 0)), dtype=float),
                                                           inertia), frame)
    A, b = np.array(rows), np.array(offsets)
    independent = []
    for k in range(len(coordinates)):
        unit_row = np.eye(len(coordinates))[k]
        matches = [i for i in range(len(joints)) if np.array_equal(A[i], unit_row) and b[i] == 0.0]
        if not matches:
            raise NotImplementedError(f"no joint angle equals the coordinate {coordinates[k]}")
        independent.append(matches[0])
    return Chain(model, tuple(joints), coordinates, A, b, np.array(independent))


class DAE:
    """The index-1 DAE of the tracking problem on the chain's 28 states ``y = (x, ẋ)``, Pinocchio's dynamics.

    Parameters
    ----------
    chain : Chain
    """

    def __init__(self, chain: Chain):
        self.chain = chain
        self.model, self.data = chain.model, chain.model.createData()
        nx, nq = len(chain.joints), len(chain.coordinates)
        self.nx, self.nq, self.m = nx, nq, nx - nq
        self.S, self.Phi_x = chain.S, chain.Phi_x
        self.independent = chain.independent
        n = nx
        # [M −Φ_xᵀ −Sᵀ; Φ_x 0 0; S 0 0] [ẍ; λ; τ] = [−h; −Φ̇_x ẋ = 0; Q_d]: the constant rows set once
        self.kkt_matrix = np.zeros((2 * n, 2 * n))
        self.kkt_matrix[:n, n:n + self.m] = -self.Phi_x.T
        self.kkt_matrix[:n, n + self.m:] = -self.S.T
        self.kkt_matrix[n:n + self.m, :n] = self.Phi_x
        self.kkt_matrix[n + self.m:, :n] = self.S
        self.kkt_rhs = np.zeros(2 * n)
        self.upper = np.triu_indices(n, 1)
        # the blocks: the constraint rows C = [Φ_x; S] are square and constant, and so is B = [Sᵀ Φ_xᵀ]
        self.accelerations_of_Qd = np.linalg.inv(np.vstack([self.Phi_x, self.S]))[:, self.m:]  # ẍ = (·) Q_d
        self.multipliers_of_torques = np.linalg.inv(np.hstack([self.S.T, self.Phi_x.T]))  # (τ, λ) = (·) τ_x
        self.Qd = np.zeros(nq)
        self.pool = pin.ModelPool(self.model, 1)

    def initial_state(self, q0: np.ndarray, qd0: np.ndarray) -> np.ndarray:
        """The consistent ``(x, ẋ)`` of ``(q, q̇)``."""
        return np.concatenate([self.chain.A @ q0 + self.chain.b, self.chain.A @ qd0])

    def kkt(self, t: float, y: np.ndarray) -> np.ndarray:
        """``(ẍ, λ, τ)`` from one dense solve (``pin.crba`` for the upper triangle of M_x, ``pin.nonLinearEffects``
        for h_x = C ẋ + g)."""
        n = self.nx
        x, xd = y[:n], y[n:]
        M = pin.crba(self.model, self.data, x)
        M.T[self.upper] = M[self.upper]  # (crba fills the upper triangle)
        A, rhs = self.kkt_matrix, self.kkt_rhs
        A[:n, :n] = M
        rhs[:n] = -pin.nonLinearEffects(self.model, self.data, x, xd)
        rhs[n + self.m:] = commanded(t, x[self.independent], xd[self.independent])
        return np.linalg.solve(A, rhs)

    def kkt_rhs_function(self) -> Callable[[float, np.ndarray], np.ndarray]:
        """``y' = (ẋ, ẍ)`` by :meth:`kkt`, for ``solve_ivp``."""
        n = self.nx
        return lambda t, y: np.concatenate([y[n:], self.kkt(t, y)[:n]])

    def blocks(self, t: float, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``ẍ`` and ``(τ, λ)`` by the blocks: ẍ = C⁻¹ [0; Q_d], τ_x = rnea(x, ẋ, ẍ), (τ, λ) = B⁻¹ τ_x."""
        n = self.nx
        x, xd = y[:n], y[n:]
        self.Qd[:] = commanded(t, x[self.independent], xd[self.independent])
        xdd = self.accelerations_of_Qd @ self.Qd
        return xdd, self.multipliers_of_torques @ pin.rnea(self.model, self.data, x, xd, xdd)

    def blocks_rhs_function(self) -> Callable[[float, np.ndarray], np.ndarray]:
        """``y' = (ẋ, ẍ)`` by :meth:`blocks`, for ``solve_ivp``."""
        n = self.nx
        return lambda t, y: np.concatenate([y[n:], self.blocks(t, y)[0]])

    def kinematic_rhs_function(self) -> Callable[[float, np.ndarray], np.ndarray]:
        """``y' = (ẋ, C⁻¹ [0; Q_d])``: the closed loop without the dynamics (exact for an exact model)."""
        n, C, Qd = self.nx, self.accelerations_of_Qd, self.Qd

        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            Qd[:] = commanded(t, y[self.independent], y[n + self.independent])
            return np.concatenate([y[n:], C @ Qd])

        return rhs

    def torques(self, t: np.ndarray, y: np.ndarray) -> np.ndarray:
        """τ at rows of states ``y`` (the output times ``t``), shape (rows, nq), by the blocks in one batch:
        ẍ = C⁻¹ [0; Q_d] per row, ``pin.rneaInParallel`` (one thread) for the joint torques, τ = (B⁻¹ τ_x)[:nq]."""
        n = self.nx
        Qd = np.array([commanded(ti, row[self.independent], row[n + self.independent]) for ti, row in zip(t, y)])
        xdd = Qd @ self.accelerations_of_Qd.T
        torques = pin.rneaInParallel(1, self.pool, np.asfortranarray(y[:, :n].T), np.asfortranarray(y[:, n:].T),
                                     np.asfortranarray(xdd.T)).reshape(n, -1)  # (a batch of one comes back 1-D)
        return (self.multipliers_of_torques[:self.nq] @ torques).T


# --------------------------------------------------------------------------- checks

def random_states(model: mbkron.Model, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` states with q inside the coordinates' ranges (elevation ≥ 10°: the plane of elevation is
    undefined at 0) and rates in ±3 rad/s."""
    rng = np.random.default_rng(seed)
    low = np.array([model.coordinate(c).range[0] for c in model.coordinates])
    high = np.array([model.coordinate(c).range[1] for c in model.coordinates])
    low[1] = max(low[1], np.radians(10.0))
    return rng.uniform(low, high, (count, model.nq)), rng.uniform(-3.0, 3.0, (count, model.nq))


def check_dynamics(model: mbkron.Model, chain: Chain, states: int = 20, seed: int = 29) -> dict[str, float]:
    """Largest relative differences between the DAE's projected dynamics and mbkron's at random states.

    ``Aᵀ M_x A`` vs ``Model.mass_matrix``, ``Aᵀ (h_x − g_x)`` vs ``Model.velocity_forces`` (N q̇),
    ``−Aᵀ g_x`` vs ``Model.gravity_forces`` (G), the humerus' centre of mass (Pinocchio's placement) vs
    ``Model.point_position``, and τ from the DAE's KKT solve vs ``M Q_d + N q̇ − G`` with mbkron's terms
    at a random time. Relative to the largest entry of mbkron's value; raises AssertionError above 1e-11.
    """
    pm, pd = chain.model, chain.model.createData()
    A = chain.A
    dae = DAE(chain)
    worst = dict.fromkeys(("M", "N qd", "G", "humerus COM", "tau (KKT)", "tau (blocks)", "tau (batch)"), 0.0)
    humerus = pm.getJointId("humerus")
    com = np.array(tomllib.loads(MODEL_FILE.read_text())["bodies"]["humerus"]["com"])
    rng = np.random.default_rng(seed)

    def relative(a, b):
        return float(np.abs(np.asarray(a) - b).max() / np.abs(b).max())

    for q, qd in zip(*random_states(model, states, seed)):
        x, xd = A @ q + chain.b, A @ qd
        M = pin.crba(pm, pd, x)
        M = np.triu(M) + np.triu(M, 1).T
        g = pin.computeGeneralizedGravity(pm, pd, x)
        h = pin.nonLinearEffects(pm, pd, x, xd)
        terms = model.equations_of_motion(q, qd)
        worst["M"] = max(worst["M"], relative(A.T @ M @ A, terms.mass_matrix))
        worst["N qd"] = max(worst["N qd"], relative(A.T @ (h - g), terms.velocity_forces))
        worst["G"] = max(worst["G"], relative(-A.T @ g, terms.gravity_forces))
        pin.forwardKinematics(pm, pd, x)
        worst["humerus COM"] = max(worst["humerus COM"],
                                   relative(pd.oMi[humerus].act(com), model.point_position("humerus", com, q)))
        t = rng.uniform(0.0, DURATION)
        Qd = np.array(commanded(t, q, qd))
        tau = terms.mass_matrix @ Qd + terms.velocity_forces - terms.gravity_forces - terms.applied_forces
        y = np.concatenate([x, xd])
        worst["tau (KKT)"] = max(worst["tau (KKT)"], relative(dae.kkt(t, y)[dae.nx + dae.m:], tau))
        worst["tau (blocks)"] = max(worst["tau (blocks)"], relative(dae.blocks(t, y)[1][:dae.nq], tau))
        worst["tau (batch)"] = max(worst["tau (batch)"], relative(dae.torques(np.array([t, t]), np.array([y, y]))[1],
                                                                  tau))
    for name, value in worst.items():
        assert value < 1e-11, f"the DAE's {name} differs from mbkron's by {value:.1e} (relative)"
    return worst


# --------------------------------------------------------------------------- runs

@dataclass
class Output:
    """What every run returns: q, q̇, τ at the output times (and, for the DAE, the constraint violations)."""

    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    success: bool
    steps: int
    nfev: int
    njev: int = 0
    nlu: int = 0
    drift: float = 0.0  # max |Φ(x)|, rad
    velocity_drift: float = 0.0  # max |Φ_x ẋ|, rad/s


def lean_torque(model: mbkron.Model, workspace) -> Callable[[float, np.ndarray, np.ndarray], np.ndarray]:
    """``τ(t, q, q̇) = M Q_d + N q̇ − G − Q`` (Eq. 200–201) from one ``equations_of_motion`` call with a workspace."""

    def tau(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        terms = model.equations_of_motion(q, qd, workspace=workspace)
        return (terms.mass_matrix @ np.array(commanded(t, q, qd)) + terms.velocity_forces - terms.gravity_forces
                - terms.applied_forces)

    return tau


def output_torques(model: mbkron.Model, t: np.ndarray, q: np.ndarray, qd: np.ndarray, workspace) -> np.ndarray:
    """τ at the output rows from one batched ``equations_of_motion`` call."""
    terms = model.equations_of_motion(q, qd, workspace=workspace)
    Qd = np.array([commanded(ti, qi, qdi) for ti, qi, qdi in zip(t, q, qd)])
    return (np.einsum("nij,nj->ni", terms.mass_matrix, Qd) + terms.velocity_forces - terms.gravity_forces
            - terms.applied_forces)


def initial_state() -> tuple[np.ndarray, np.ndarray]:
    """The desired initial state plus the scenario's :data:`OFFSET` on q."""
    q0, qd0, _ = desired_trajectory(0.0)
    return q0 + OFFSET, qd0


def run_ode(model: mbkron.Model, route: str, method: str, rtol: float, atol: float, t_eval=T_EVAL) -> Output:
    """One run of the ODE side by ``route`` (module docstring), from the desired initial state; ``t_eval=None``
    (solve_ivp's routes only) just counts the accepted steps (``Output.steps``; other fields empty)."""
    q0, qd0 = initial_state()
    if route == "track":
        result = tracking.track(model, desired_trajectory, GAINS, (0.0, DURATION), samples=SAMPLES, method=method,
                                rtol=rtol, atol=atol)
        return Output(result.q, result.qd, result.tau, True, result.n_steps, -1)
    workspace = model.workspace()
    if route == "simulate":
        result = mbkron.simulate(model, (0.0, DURATION), q0, qd0, method=method, rtol=rtol, atol=atol, t_eval=T_EVAL,
                                 tau=lean_torque(model, workspace))
        tau = output_torques(model, result.t, result.q, result.qd, workspace)
        return Output(result.q, result.qd, tau, result.success, result.n_steps, result.nfev, result.njev, result.nlu)
    nq = model.nq
    if route == "Eq200":
        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            q, qd = y[:nq], y[nq:]
            terms = model.equations_of_motion(q, qd, workspace=workspace)
            # Eq. 200, [M −I; I 0] [q̈; τ] = [G − N q̇; Q_d], by its blocks: q̈ = Q_d, τ = M Q_d + N q̇ − G
            qdd = np.array(commanded(t, q, qd))
            rhs.tau = terms.mass_matrix @ qdd + terms.velocity_forces - terms.gravity_forces - terms.applied_forces
            return np.concatenate([qd, qdd])
    elif route == "kinematic":
        def rhs(t: float, y: np.ndarray) -> np.ndarray:
            return np.concatenate([y[nq:], commanded(t, y[:nq], y[nq:])])
    else:
        raise ValueError(route)
    result = solve_ivp(rhs, (0.0, DURATION), np.concatenate([q0, qd0]), method=solver(method), rtol=rtol, atol=atol,
                       t_eval=t_eval)
    if t_eval is None:
        return Output(np.empty(0), np.empty(0), np.empty(0), result.success, result.t.size - 1, result.nfev)
    q, qd = result.y[:nq].T, result.y[nq:].T
    tau = output_torques(model, result.t, q, qd, workspace) if result.success else np.full_like(q, np.nan)
    return Output(q, qd, tau, result.success, result.t.size, result.nfev, result.njev, result.nlu)


def run_dae(dae: DAE, route: str, method: str, rtol: float, atol: float, t_eval=T_EVAL) -> Output:
    """One run of the DAE side by ``route`` (module docstring), from the desired initial state; ``t_eval=None``
    just counts the accepted steps."""
    rhs = {"KKT": dae.kkt_rhs_function, "blocks": dae.blocks_rhs_function,
           "kinematic": dae.kinematic_rhs_function}[route]()
    result = solve_ivp(rhs, (0.0, DURATION), dae.initial_state(*initial_state()), method=solver(method), rtol=rtol,
                       atol=atol, t_eval=t_eval)
    if t_eval is None:
        return Output(np.empty(0), np.empty(0), np.empty(0), result.success, result.t.size - 1, result.nfev)
    n = dae.nx
    y = result.y.T
    x, xd = y[:, :n], y[:, n:]
    if not result.success:
        nan = np.full((SAMPLES, dae.nq), np.nan)
        return Output(nan, nan, nan, False, result.t.size, result.nfev)
    tau = dae.torques(result.t, y)
    return Output(x[:, dae.independent], xd[:, dae.independent], tau, True, result.t.size, result.nfev,
                  result.njev, result.nlu, float(np.abs(dae.chain.constraints(x)).max()),
                  float(np.abs(xd @ dae.Phi_x.T).max()))


@dataclass
class Run(LadderRun):
    """One integration: its side, route, solver and tolerances, and what repeated runs measured."""

    route: str = ""
    error: float = np.nan  # max |q − q_des| (DAE: and |Φ(x)|), rad
    tau_error: float = np.nan  # max |τ − τ_exact|, N·m
    drift: float = np.nan
    velocity_drift: float = np.nan

    @property
    def label(self) -> str:
        return f"{self.side} {self.route} {self.method} {self.tolerances(0)}"


@dataclass
class Exact:
    """The exact solution at the output times, q = q_des + e, and its τ = M q̈ + N q̇ − G (mbkron's terms).

    The error obeys ë + 2K ė + K² e = 0 (Eq. 201 with q̈ = Q_d), so e(t) = e₀ (1 + K t) exp(−K t) from e(0) = e₀
    (:data:`OFFSET`), ė(0) = 0; e ≡ 0 in the seed's problem."""

    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray


def exact_solution(model: mbkron.Model) -> Exact:
    q, qd, qdd = desired_trajectory(T_EVAL)
    t, K = T_EVAL[:, None], GAINS
    decay = np.exp(-K * t)
    q = q + OFFSET * (1 + K * t) * decay
    qd = qd - OFFSET * K**2 * t * decay
    qdd = qdd + OFFSET * K**2 * (K * t - 1) * decay
    terms = model.equations_of_motion(q, qd)
    tau = np.einsum("nij,nj->ni", terms.mass_matrix, qdd) + terms.velocity_forces - terms.gravity_forces
    return Exact(q, qd, tau)


def measure(run: Run, model: mbkron.Model, dae: DAE, exact: Exact) -> None:
    """One repeat of ``run``: CPU time appended; errors and counters recorded."""
    start = time.process_time()
    out = run_ode(model, run.route, run.method, run.rtol, run.atol) if run.side == "ODE" else \
        run_dae(dae, run.route, run.method, run.rtol, run.atol)
    run.seconds.append(time.process_time() - start)
    run.nfev, run.njev, run.nlu = out.nfev, out.njev, out.nlu
    if run.route in ("track", "simulate"):
        run.steps = out.steps
    elif len(run.seconds) == 1:  # solve_ivp with t_eval returns the outputs only: count the steps once, untimed
        run.steps = (run_ode(model, run.route, run.method, run.rtol, run.atol, None) if run.side == "ODE" else
                     run_dae(dae, run.route, run.method, run.rtol, run.atol, None)).steps
    run.drift, run.velocity_drift = out.drift, out.velocity_drift
    if out.success:
        run.error = max(float(np.abs(out.q - exact.q).max()), out.drift)
        run.tau_error = float(np.abs(out.tau - exact.tau).max())
    else:
        run.error = run.tau_error = np.nan


def ladder(tolerances, methods, routes: dict[str, tuple[str, ...]]) -> list[Run]:
    """Every route of each side with every method at rtol = atol = each tolerance; the pipeline's own run
    (``track``, RKF45 at rtol 1e-8, atol 1e-10). ``track`` runs RKF45 and DOP853 only (it is ``simulate``
    with a slower ``tau``; the table shows by how much), TRBDF2 (order 2) stops at 1e-9."""
    runs = [Run("ODE", "RKF45", *PIPELINE_TOLERANCES, route="track")] if "track" in routes["ODE"] else []
    for tol in tolerances:
        for side in ("ODE", "DAE"):
            for route in routes[side]:
                runs += [Run(side, m, tol, tol, route=route) for m in methods
                         if not (route == "track" and m not in ("RKF45", "DOP853") or m == "TRBDF2" and tol < 1e-9)]
    return runs


def interleaved(runs: list[Run], model: mbkron.Model, dae: DAE, exact: Exact, rounds: int) -> None:
    """``rounds`` rounds, each running every run once in turn (a slow period of the machine hits all alike)."""
    for _ in range(rounds):
        for run in runs:
            measure(run, model, dae, exact)


def print_table(runs: list[Run]) -> None:
    print(f"\n# Work–precision, 0 ≤ t ≤ {DURATION:g} s, {SAMPLES} output times: error = max |q − q_des| over the "
          f"outputs and 3 coordinates (DAE: and |Φ(x)|), rad; τ error N·m; CPU medians — {machine()}")
    print(f"{'side':>4} {'route':>9} {'method':>6} {'rtol':>7} {'atol':>7} {'error':>9} {'τ error':>9} "
          f"{'|Φ|':>8} {'|Φ_x ẋ|':>8} {'CPU ms':>8} {'steps':>6} {'nfev':>6} {'njev':>4} {'nlu':>5} {'µs/nfev':>8}")
    for r in runs:
        drift = f"{r.drift:8.1e} {r.velocity_drift:8.1e}" if r.side == "DAE" else f"{'':>8} {'':>8}"
        nfev = f"{r.nfev:6d}" if r.nfev >= 0 else f"{'—':>6}"
        per = f"{1e6 * r.cpu / r.nfev:8.1f}" if r.nfev > 0 else f"{'—':>8}"
        print(f"{r.side:>4} {r.route:>9} {r.method:>6} {r.rtol:7.0e} {r.atol:7.0e} {r.error:9.2e} {r.tau_error:9.2e} "
              f"{drift} {1e3 * r.cpu:8.1f} {r.steps:6d} {nfev} {r.njev:4d} {r.nlu:5d} {per}")


def fastest(runs: list[Run], side: str, routes: tuple[str, ...], target: float, methods=METHODS) -> Run | None:
    """The run of ``side`` by one of ``routes`` and ``methods`` with the least CPU time whose error is at most
    ``target``."""
    reached = [r for r in runs if r.side == side and r.route in routes and r.method in methods and r.error <= target]
    return min(reached, key=lambda r: r.cpu, default=None)


def print_equal_accuracy(runs: list[Run], routes: dict[str, tuple[str, ...]], title: str, methods=METHODS) -> None:
    """For each error target, the fastest run of each side (among ``routes`` and ``methods``) reaching it and the
    ratio ODE / DAE."""
    print(f"\n# At equal accuracy, {title}: the fastest run of each side — {machine()}")
    print(f"ODE routes {', '.join(routes['ODE'])}; DAE routes {', '.join(routes['DAE'])}; methods {', '.join(methods)}")
    print(f"{'error ≤':>8} {'ODE (mbkron, model file)':>46} {'DAE (Pinocchio, 14 angles)':>46} {'ODE / DAE':>9}")
    for target in TARGETS:
        ours = fastest(runs, "ODE", routes["ODE"], target, methods)
        theirs = fastest(runs, "DAE", routes["DAE"], target, methods)

        def cell(r: Run | None) -> str:
            if r is None:
                return "not reached"
            return f"{1e3 * r.cpu:7.1f} ms {r.route} {r.method} {r.rtol:.0e} ({r.error:.1e}, τ {r.tau_error:.0e})"

        ratio = f"{ours.cpu / theirs.cpu:9.2f}" if ours and theirs else f"{'—':>9}"
        print(f"{target:8.0e} {cell(ours):>46} {cell(theirs):>46} {ratio}")


def print_equal_tolerance(runs: list[Run], ode_route: str, dae_route: str, methods) -> None:
    """At each tolerance and method, ``ode_route``'s CPU time over ``dae_route``'s."""
    print(f"\n# At equal tolerance (rtol = atol), CPU ODE {ode_route} / DAE {dae_route}, and their error ratio")
    print(f"{'tol':>7} " + " ".join(f"{m:>16}" for m in methods))
    by_key = {(r.side, r.route, r.method, r.rtol, r.atol): r for r in runs}
    for tol in sorted({r.rtol for r in runs if r.rtol == r.atol}, reverse=True):
        cells = []
        for m in methods:
            a, b = by_key.get(("ODE", ode_route, m, tol, tol)), by_key.get(("DAE", dae_route, m, tol, tol))
            cells.append(f"{a.cpu / b.cpu:6.2f} (e {a.error / b.error:5.2f})" if a and b and b.error > 0
                         else f"{'—':>16}")
        print(f"{tol:7.0e} " + " ".join(f"{c:>16}" for c in cells))


def same_trajectory(model: mbkron.Model, dae: DAE, exact: Exact, tol: float = 1e-13) -> None:
    """Both sides' DOP853 runs at ``tol``: their q, q̇, τ against each other and against the exact solution."""
    ode = run_ode(model, "simulate", "DOP853", tol, tol)
    other = run_dae(dae, "KKT", "DOP853", tol, tol)
    print(f"\n# The same trajectory: DOP853 at rtol = atol = {tol:.0e}, ODE simulate and DAE KKT, {SAMPLES} outputs")
    for name, a, b, e in (("q, rad", ode.q, other.q, exact.q), ("q̇, rad/s", ode.qd, other.qd, exact.qd),
                          ("τ, N·m", ode.tau, other.tau, exact.tau)):
        print(f"{name:>10}: max |ODE − DAE| {np.abs(a - b).max():.1e}; ODE − exact {np.abs(a - e).max():.1e}; "
              f"DAE − exact {np.abs(b - e).max():.1e} (max |exact| {np.abs(e).max():.3g})")
    print(f"DAE constraint violation: max |Φ(x)| {other.drift:.1e} rad, max |Φ_x ẋ| {other.velocity_drift:.1e} rad/s")
    i = int(np.argmax(np.abs(exact.tau).max(axis=1)))
    print(f"τ at t = {T_EVAL[i]:.2f} s (largest): exact {np.array2string(exact.tau[i], precision=5)}, "
          f"ODE {np.array2string(ode.tau[i], precision=5)}, DAE {np.array2string(other.tau[i], precision=5)}")


# --------------------------------------------------------------------------- costs per evaluation

def cpu_per_call(function: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        function()
    return (time.process_time() - start) / calls


def evaluation_costs(model: mbkron.Model, dae: DAE, rounds: int, calls: int = 2000) -> dict[str, float]:
    """CPU µs per right-hand-side evaluation and of its parts, interleaved medians, at a state on the trajectory
    (t = 0.4 s)."""
    t = 0.4
    q, qd, _ = desired_trajectory(t)
    y = np.concatenate([q, qd])
    Y = dae.initial_state(q, qd)
    workspace = model.workspace()
    tau = lean_torque(model, workspace)
    nq = model.nq
    pipeline_tau = tau_of_pipeline(model)
    pm, pd = dae.model, dae.data
    x, xd = Y[:dae.nx], Y[dae.nx:]
    xdd = dae.accelerations_of_Qd @ np.array(commanded(t, q, qd))
    out_q, out_qd, _ = desired_trajectory(T_EVAL)
    out_y = np.array([dae.initial_state(a, b) for a, b in zip(out_q, out_qd)])
    candidates = {
        "ODE track: pipeline τ + forward_dynamics": lambda: model.forward_dynamics(
            q, qd, pipeline_tau(t, q, qd), workspace=workspace),
        "ODE simulate: lean τ + forward_dynamics": lambda: model.forward_dynamics(q, qd, tau(t, q, qd),
                                                                                 workspace=workspace),
        "ODE Eq200: equations_of_motion + Eq. 200": lambda: (model.equations_of_motion(q, qd, workspace=workspace),
                                                           np.concatenate([y[nq:], commanded(t, q, qd)])),
        "  Model.equations_of_motion (workspace)": lambda: model.equations_of_motion(q, qd, workspace=workspace),
        "  Model.forward_dynamics with τ (workspace)": lambda: model.forward_dynamics(q, qd, q, workspace=workspace),
        "  Model.inverse_dynamics (workspace)": lambda: model.inverse_dynamics(q, qd, qd, workspace=workspace),
        "  pipeline computed_torque (no workspace)": lambda: pipeline_tau(t, q, qd),
        "  lean τ (equations_of_motion + Q_d)": lambda: tau(t, q, qd),
        "  commanded Q_d (scalar, both sides)": lambda: commanded(t, q, qd),
        "DAE KKT: crba + nle + 28×28 solve": lambda: dae.kkt(t, Y),
        "DAE blocks: rnea + two products": lambda: dae.blocks(t, Y),
        "  pin.crba (14 joints)": lambda: pin.crba(pm, pd, x),
        "  pin.nonLinearEffects": lambda: pin.nonLinearEffects(pm, pd, x, xd),
        "  pin.rnea": lambda: pin.rnea(pm, pd, x, xd, xdd),
        "  numpy.linalg.solve 28×28": lambda: np.linalg.solve(dae.kkt_matrix, dae.kkt_rhs),
        "ODE kinematic: Q_d only": lambda: np.concatenate([y[nq:], commanded(t, q, qd)]),
        "ODE τ at the 101 outputs (batched eom)": lambda: output_torques(model, T_EVAL, out_q, out_qd, workspace),
        "DAE τ at the 101 outputs (rneaInParallel)": lambda: dae.torques(T_EVAL, out_y),
        "DAE kinematic: C⁻¹ [0; Q_d]": lambda: dae.kinematic_rhs_function()(t, Y),
    }
    for function in candidates.values():
        function()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            samples[name].append(cpu_per_call(function, calls))
    return {name: 1e6 * statistics.median(values) for name, values in samples.items()}


def tau_of_pipeline(model: mbkron.Model) -> Callable[[float, np.ndarray, np.ndarray], np.ndarray]:
    """The ``tau`` callable :func:`mbkron.analysis.tracking.track` passes to ``simulate`` (the pipeline's)."""
    return lambda t, q, qd: tracking.computed_torque(model, desired_trajectory, GAINS, t, q, qd)


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="two tolerances, RKF45 and DOP853, one round (a smoke test)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of every run (default 3)")
    parser.add_argument("--scenario", choices=("seed", "offset", "both"), default="both",
                        help="start on the desired trajectory (the seed's problem), 2° off it, or both (default)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    with warnings.catch_warnings():  # the file's two non-physical inertias (its header says why)
        warnings.simplefilter("ignore", mbkron.ModelWarning)
        model = mbkron.load_model(MODEL_FILE)
    chain = read_chain(MODEL_FILE)
    dae = DAE(chain)
    print(f"# Shoulder tracking (seed 002, Eq. 200–201): {MODEL_FILE.relative_to(ROOT)} (mbkron {mbkron.__version__}, "
          f"{model.nq} coordinates) vs the DAE in its {dae.nx} joint angles ({dae.m} rhythm constraints; Pinocchio "
          f"{pin.__version__}) — {machine()}")
    print(f"independent joints (S x = q): {', '.join(chain.joints[i] for i in chain.independent)}")
    print(f"scalar Q_d vs the pipeline's commanded_acceleration: {check_commanded():.1e} (relative, 50 random states)")
    worst = check_dynamics(model, chain)
    print("DAE (Pinocchio, full coordinates) projected vs mbkron at 20 random states, max relative difference: "
          + ", ".join(f"{name} {value:.1e}" for name, value in worst.items()))
    for route in ("simulate", "Eq200", "kinematic"):  # compiles (or loads) the kernels: not timed
        run_ode(model, route, "RKF45", 1e-3, 1e-3)
    run_ode(model, "track", "RKF45", 1e-3, 1e-3)
    cost_rounds = max(rounds, 3)
    costs = evaluation_costs(model, dae, rounds=cost_rounds, calls=300 if args.quick else 2000)
    print(f"\n# CPU per right-hand-side evaluation and its parts (medians of {cost_rounds} interleaved rounds, state "
          f"at t = 0.4 s) — {machine()}")
    for name, micro in costs.items():
        print(f"{name:>46}: {micro:7.1f} µs")
    for name, offset in SCENARIOS.items():
        if args.scenario not in ("both", name):
            continue
        OFFSET[:] = offset
        exact = exact_solution(model)
        print(f"\n\n## Scenario {name}: e(0) = {np.degrees(offset).tolist()}° ({SCENARIO_NOTES[name]})")
        every = EVERY_EVALUATION if name == "seed" else {"ODE": ("simulate", "Eq200"), "DAE": EVERY_EVALUATION["DAE"]}
        if args.quick:
            runs = ladder((1e-5, 1e-8), ("RKF45", "DOP853"),
                          {"ODE": ("simulate", "Eq200", "kinematic"), "DAE": ("KKT", "blocks", "kinematic")})
        else:
            runs = ladder(TOLERANCES, METHODS, {"ODE": every["ODE"] + OUTPUTS_ONLY["ODE"],
                                                "DAE": every["DAE"] + OUTPUTS_ONLY["DAE"]})
        same_trajectory(model, dae, exact, 1e-10 if args.quick else 1e-13)
        interleaved(runs, model, dae, exact, rounds)
        print_table(runs)
        print_equal_accuracy(runs, every, "the dynamics solved in every evaluation (the seed's setting)")
        print_equal_accuracy(runs, every, "the same, explicit Runge–Kutta pairs only (the seed's RKF45 and its kin)",
                             EXPLICIT)
        print_equal_accuracy(runs, {"ODE": ("simulate",), "DAE": every["DAE"]},
                             "mbkron.simulate (what a user runs) against the DAE's routes")
        print_equal_accuracy(runs, OUTPUTS_ONLY, "the dynamics at the output times only")
        methods = ("RKF45", "DOP853") if args.quick else METHODS
        print_equal_tolerance(runs, "simulate", "KKT", methods)
        print_equal_tolerance(runs, "Eq200", "KKT", methods)
        print_equal_tolerance(runs, "Eq200", "blocks", methods)
    print(f"\n# end — {machine()}")


if __name__ == "__main__":
    main()
