"""mbkron's OpenSim importer against OpenSim 4.6: dynamics and muscle paths of imported models.

For each model of :data:`MODELS` (arm26 with its wrap objects removed on both sides), at
:data:`STATES` states -- the default pose, then seeded random poses uniform in the coordinates'
ranges, with normal random speeds and accelerations -- OpenSim computes:

- ``mass_matrix``: ``Cᵀ M C`` with ``M`` from ``SimbodyMatterSubsystem.calcM``;
- ``gravity``: ``−Cᵀ τ(q, 0, 0)`` and ``bias``: ``Cᵀ (τ(q, u, Ċq̇) − τ(q, 0, 0))``, where
  ``τ(q, u, u̇)`` is ``InverseDynamicsSolver.solve`` (constraints ignored, every force disabled, so
  ``τ = M u̇ + c(q, u) − g(q)``); these are mbkron's ``gravity_forces`` and ``velocity_forces``;
- ``inverse_dynamics``: ``Cᵀ τ(q, C q̇, C q̈ + Ċ q̇)``, mbkron's ``inverse_dynamics`` without loads;
- ``lengths``: ``Muscle.getLength`` (also, for the paths with conditional points, at
  :func:`edge_states`, where a conditional point's coordinate is just beyond its range's end) and ``moment_arms`` (coordinates × muscles): OpenSim's
  ``GeometryPath.computeMomentArm`` for paths without moving points (exact there), else
  ``−dL/dq`` of OpenSim's own lengths by Richardson-extrapolated central differences
  (:func:`length_gradient`, step :data:`STEP`; truncation ``O(h⁴)``, round-off ≈ 1e-12 m).

The full OpenSim state is set from the model's (independent) coordinates ``q``: an independent
coordinate takes its value; a locked one its ``default_value`` with speed and acceleration 0; the
dependent coordinate ``d`` of a ``CoordinateCouplerConstraint`` (``d = s·f(q_i)``, ``s`` the
``scale_factor``) takes ``s·f(q_i)``, speed ``s·f'(q_i) q̇_i`` and acceleration
``s·(f'(q_i) q̈_i + f''(q_i) q̇_i²)``, with ``f``, ``f'``, ``f''`` from the coupler's own
``Function.calcValue`` and ``calcDerivative`` ([0] and [0, 0]). So ``u = C q̇`` and
``u̇ = C q̈ + Ċ q̇`` with ``C = ∂q_full/∂q`` (column ``i``: 1 at ``q_i``, ``s·f'(q_i)`` at its
dependents) and ``Ċ q̇`` the ``s·f''(q_i) q̇_i²`` terms, rows placed by :func:`value_indices` —
for OpenSim's coordinate rates ``q̇_full``. The speeds are ``u = N⁻¹ q̇_full`` (``N`` the identity but for
Ball and Free joints, whose speeds are the angular velocity in the parent frame), so
``C ← N⁻¹ C`` and ``Ċ q̇ ← N⁻¹ (Ċ q̇ − Ṅ u)``.

Run ``python -m validation.opensim.compare_osim`` from the repository root: it writes
``tests/data/osim/<model>.json`` (the OpenSim side, read by ``tests/test_osim_agreement.py``) and
prints mbkron's largest deviations. Imports OpenSim and mbkron's public API only.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np

import mbkron
from mbkron.io import model_differences

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "osim"
#: The models compared (``tests/data/osim/<name>.osim.gz``, from opensim-org/opensim-models, see the
#: README there), and whether their wrap objects are removed (on both sides).
MODELS = {"arm26": True, "leg6dof9musc": False, "leg39": False, "gait2392_thelen2003muscle": False,
          "gait10dof18musc": False, "wrist": False, "Tug_of_War_Millard": False, "Rajagopal2015_opensense": False,
          "legacy_double_pendulum": False, "legacy_gait2392": False, "legacy_gait2354": False,
          "legacy_gait10dof18musc": False}
#: The OpenSim 2.x/3.x files among :data:`MODELS` (OpenSim upgrades them when it loads them, mbkron by
#: :mod:`mbkron.io.osim.legacy`) and the same model's OpenSim 4 file in opensim-models, also stored in
#: ``tests/data/osim`` (None: the collection has none; its 4.x double pendulum has another mass centre
#: and joint frame), which mbkron must import as an equal model (:func:`mbkron.io.model_differences`).
LEGACY = {"legacy_double_pendulum": None, "legacy_gait2392": "gait2392_subject01",
          "legacy_gait2354": "gait2354_simbody", "legacy_gait10dof18musc": "gait10dof18musc_subject01"}
#: Small models written by hand to exercise the importer's joints and functions, stored in
#: ``tests/data/osim/<name>.osim.gz`` (OpenSim loads them unchanged): ``free_ball``, a FreeJoint, a
#: BallJoint and a PinJoint with three paths (two or three points on each moving body, so the lengths
#: check the bodies' poses); ``multi``, TransformAxes that are LinearFunctions of several coordinates
#: (coupled and locked ones among them) and couplers of two independent coordinates (a
#: MultivariatePolynomialFunction and a LinearFunction); ``multi_axes``, MultivariatePolynomialFunctions
#: in the TransformAxes, rotations among them (OpenSim's velocity terms are wrong there, see docs/opensim.md);
#: ``splines``, NaturalCubicSplines and unsmoothed GCVSplines of half order 2 in TransformAxes (evaluated
#: beyond their knots), a coupler, a moving point, and a conditional point on the GCV-coupled coordinate;
#: ``gcv``, GCVSplines of half orders 1-4 (degrees 1, 3, 5, 7), interpolating and smoothing (a known
#: error variance, and generalized cross-validation) in TransformAxes (one of an affinely coupled
#: coordinate with negative slope, one inside a MultiplierFunction), in couplers (half order 4 smoothed,
#: entering a rotation; half order 2 smoothed, with a conditional point on its coordinate) and in a
#: MovingPathPoint, and PiecewiseConstantFunctions in a TransformAxis and a MovingPathPoint (the states
#: keep :data:`MARGIN` from their steps, :func:`step_knots`).
HAND_WRITTEN = ("free_ball", "multi", "multi_axes", "splines", "gcv")
#: States per model: the default pose and random ones.
STATES = 5
#: Step of the difference quotients (rad or m).
STEP = 1e-5
#: Step of the Hessians of MultivariatePolynomialFunction couplers (from OpenSim's exact gradients).
HESSIAN_STEP = 1e-3
#: Random poses keep this margin (rad or m) from conditional path points' range ends and from the
#: steps of piecewise-constant functions, so that no difference stencil crosses one (the length or
#: the pose jumps there).
MARGIN = 10 * STEP
#: Significant digits stored (the states are rounded before OpenSim evaluates them, so they are exact).
SIGNIFICANT = 12
#: Moment arms below this (m) are stored as 0: the difference quotients' round-off where a muscle
#: does not span a coordinate (OpenSim's and mbkron's values there are 0 or below 1e-16 m).
NEGLIGIBLE_ARM = 1e-13


def rounded(values) -> list[float]:
    """``values`` flattened, rounded to :data:`SIGNIFICANT` digits (the JSON stays a few kB per model)."""
    return [float(f"{v:.{SIGNIFICANT}g}") for v in np.ravel(np.asarray(values, dtype=float))]


def stored_osim(name: str, directory: Path) -> Path:
    """``tests/data/osim/<name>.osim.gz`` decompressed into ``directory``."""
    path = Path(directory) / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return path


def load_mbkron(path: Path, remove_wrapping: bool = False):
    """The mbkron model imported from ``path`` (wrap objects ignored with ``remove_wrapping``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbkron.load_model(path, wrapping="ignore" if remove_wrapping else "error")


def opensim():
    """The ``opensim`` module, logging errors only and to no file (no ``opensim.log`` in the cwd)."""
    import opensim as osim

    osim.Logger.removeFileSink()
    osim.Logger.setLevelString("error")
    return osim


class OpenSimModel:
    """An ``.osim`` model in OpenSim, driven by the independent coordinates ``names``."""

    def __init__(self, path: Path, names: list[str], remove_wrapping: bool):
        osim = self.osim = opensim()
        self.model = osim.Model(str(path))
        forces = self.model.getForceSet()
        for k in range(forces.getSize()):
            forces.get(k).set_appliesForce(False)
        actuators = (osim.PathActuator.safeDownCast(forces.get(k)) for k in range(forces.getSize()))
        self.muscles = [a for a in actuators if a is not None]  # muscles and path actuators, in ForceSet order
        if remove_wrapping:
            for muscle in self.muscles:
                muscle.updGeometryPath().updWrapSet().clearAndDestroy()
        coordinates = self.model.getCoordinateSet()
        for k in range(coordinates.getSize()):  # setValue would clamp difference stencils at a range end
            coordinates.get(k).set_clamped(False)
        self.state = self.model.initSystem()
        self.names = list(names)
        coordinates = self.model.getCoordinateSet()
        self.coordinates = {coordinates.get(k).getName(): coordinates.get(k) for k in range(coordinates.getSize())}
        self.couplers = {}
        constraints = self.model.getConstraintSet()
        for k in range(constraints.getSize()):
            coupler = osim.CoordinateCouplerConstraint.safeDownCast(constraints.get(k))
            independent = coupler.getIndependentCoordinateNames()
            self.couplers[coupler.getDependentCoordinateName()] = (
                coupler.getFunction(), [independent.get(k) for k in range(independent.getSize())],
                osim.PropertyHelper.getValueDouble(coupler.getPropertyByName("scale_factor")))
        #: OpenSim's independent, unlocked coordinates in CoordinateSet order: must be mbkron's coordinates.
        self.independent = [name for name, c in self.coordinates.items() if name not in self.couplers and not c.getDefaultLocked()]
        self.q_order = value_indices(self)
        self.conditions = conditional_ranges(path)
        for coordinate, knots in step_knots(path).items():
            self.conditions.setdefault(coordinate, []).extend((k, k) for k in knots)
        joints = self.model.getJointSet()
        #: Whether the speeds of some joint are not its coordinates' rates (Ball, Free): there
        #: ``computeMomentArm`` (conjugate to ``u``) is not −∂L/∂q, and the reference is the gradient.
        rotational_speeds = any(joints.get(k).getConcreteClassName() in ("BallJoint", "FreeJoint")
                                for k in range(joints.getSize()))
        self.moving = [rotational_speeds or any(path_points.get(k).getConcreteClassName() == "MovingPathPoint"
                                                for k in range(path_points.getSize()))
                       for path_points in (m.getGeometryPath().getPathPointSet() for m in self.muscles)]

    def coupler_values(self, name: str, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """The coupler's ``s·f``, its gradient and Hessian at the independent coordinates' values ``x``
        (OpenSim's ``calcValue`` and ``calcDerivative``)."""
        function, _, scale = self.couplers[name]

        def derivative(at: np.ndarray, *components) -> float:
            indices = self.osim.StdVectorInt()
            for k in components:
                indices.append(k)
            return scale * function.calcDerivative(indices, self._vector(at))
        n, x = len(x), np.asarray(x, dtype=float)
        gradient = np.array([derivative(x, i) for i in range(n)])
        if function.getConcreteClassName() != "MultivariatePolynomialFunction":
            return scale * function.calcValue(self._vector(x)), gradient, np.array(
                [[derivative(x, i, j) for j in range(n)] for i in range(n)])
        # OpenSim 4.6's MultivariatePolynomialFunction returns the first derivative for any order
        # (calcDerivative reads derivComponent[0] only): the Hessian by central differences of the
        # gradient (exact to round-off, ≈ 1e-11, for order ≤ 3, whose gradient is at most quadratic)
        steps = np.eye(n) * HESSIAN_STEP
        hessian = np.array([[(derivative(x + steps[j], i) - derivative(x - steps[j], i)) / (2 * HESSIAN_STEP)
                             for j in range(n)] for i in range(n)])
        return scale * function.calcValue(self._vector(x)), gradient, hessian

    def full_state(self, q, qd, qdd) -> tuple[dict, dict, dict, dict]:
        """Value, speed, acceleration of every OpenSim coordinate; and its column of C (dict by name)."""
        given = dict(zip(self.names, zip(q, qd, qdd)))
        values, speeds, accelerations, columns = {}, {}, {}, {}
        for name, coordinate in self.coordinates.items():
            column = np.zeros(len(self.names))
            if name in given:
                values[name], speeds[name], accelerations[name] = given[name]
                column[self.names.index(name)] = 1.0
            elif name in self.couplers:
                independent = self.couplers[name][1]
                x, xd, xdd = (np.array([given[n][k] for n in independent]) for k in range(3))
                f, df, ddf = self.coupler_values(name, x)
                values[name], speeds[name], accelerations[name] = f, df @ xd, df @ xdd + xd @ ddf @ xd
                for n, derivative in zip(independent, df):
                    column[self.names.index(n)] += derivative
            else:  # locked
                values[name], speeds[name], accelerations[name] = coordinate.getDefaultValue(), 0.0, 0.0
            columns[name] = column
        return values, speeds, accelerations, columns

    def set(self, values: dict, u: np.ndarray | None = None) -> None:
        """Set the coordinates' ``values`` and the generalized speeds ``u`` (zero if None)."""
        for name, value in values.items():
            self.coordinates[name].setValue(self.state, float(value), False)
        self.state.setU(self._vector(np.zeros(self.state.getNU()) if u is None else u))
        self.model.realizeVelocity(self.state)

    def _vector(self, values) -> object:
        vector = self.osim.Vector(len(values), 0.0)
        for k, v in enumerate(values):
            vector.set(k, float(v))
        return vector

    def _n_inverse(self, qlike: np.ndarray) -> np.ndarray:
        """``N⁻¹ qlike`` at the state's pose (``q̇ = N u``; ``N`` is the identity but for Ball and Free
        joints, whose speeds are angular velocities in the parent frame)."""
        out = self.osim.Vector()
        self.model.getMatterSubsystem().multiplyByNInv(self.state, False, self._vector(qlike), out)
        return np.array([out.get(k) for k in range(out.size())])

    def residual(self, values, u: np.ndarray, udot: np.ndarray) -> np.ndarray:
        self.set(values, u)
        self.model.realizeDynamics(self.state)
        solver = self.osim.InverseDynamicsSolver(self.model)
        tau = solver.solve(self.state, self._vector(udot))
        return np.array([tau.get(k) for k in range(tau.size())])

    def lengths(self, q) -> np.ndarray:
        values = self.full_state(q, np.zeros(len(q)), np.zeros(len(q)))[0]
        self.set(values)
        return np.array([m.getLength(self.state) for m in self.muscles])

    def reduction(self, q, qd, qdd):
        """The full state's values, and in OpenSim's ``u`` order ``u = C q̇``, ``C``, ``u̇ = C q̈ + Ċ q̇`` and
        ``Ċ q̇``. With ``q̇_full = C_q q̇`` and ``q̈_full = C_q q̈ + c_q`` the rates of OpenSim's
        coordinates: ``C = N⁻¹ C_q`` and ``Ċ q̇ = N⁻¹ (c_q − Ṅ u)`` (from ``q̇_full = N u``)."""
        values, speeds, accelerations, columns = self.full_state(q, qd, qdd)
        nq = self.state.getNQ()
        C_q, c_q, rates = np.zeros((nq, len(self.names))), np.zeros(nq), np.zeros(nq)
        for name, index in self.q_order.items():
            C_q[index], rates[index] = columns[name], speeds[name]
            c_q[index] = accelerations[name] - columns[name] @ qdd
        self.set(values)
        C = np.column_stack([self._n_inverse(column) for column in C_q.T]) if len(self.names) else np.zeros((nq, 0))
        u = self._n_inverse(rates)
        self.set(values, u)
        out = self.osim.Vector()
        self.model.getMatterSubsystem().multiplyByNDot(self.state, False, self._vector(u), out)
        cdot = self._n_inverse(c_q - np.array([out.get(k) for k in range(out.size())]))
        return values, u, C, C @ qdd + cdot, cdot

    def _mass_matrix(self, values, C) -> np.ndarray:
        self.set(values)
        nu = self.state.getNU()
        M = self.osim.Matrix()
        self.model.getMatterSubsystem().calcM(self.state, M)
        return C.T @ np.array([[M.get(i, j) for j in range(nu)] for i in range(nu)]) @ C

    def mass_matrix(self, q) -> np.ndarray:
        """``Cᵀ M C`` at ``q``."""
        zero = np.zeros(len(q))
        values, _, C, _, _ = self.reduction(q, zero, zero)
        return self._mass_matrix(values, C)

    def evaluate(self, q, qd, qdd) -> dict:
        values, u, C, udot, cdot = self.reduction(q, qd, qdd)
        nu = self.state.getNU()
        M = self._mass_matrix(values, C)
        rest = self.residual(values, np.zeros(nu), np.zeros(nu))
        moving = self.residual(values, u, cdot)
        full = self.residual(values, u, udot)
        self.set(values, u)
        lengths = np.array([m.getLength(self.state) for m in self.muscles])
        arms = np.array([[m.getGeometryPath().computeMomentArm(self.state, self.coordinates[c]) for m in self.muscles]
                         for c in self.names])
        gradient = length_gradient(self, np.asarray(q, dtype=float))
        clear = self.clear_of_conditions(q)
        if any(self.moving) and not clear:
            raise ValueError(f"the difference stencils at q = {list(q)} cross a conditional point's range end")
        arms[:, self.moving] = gradient[:, self.moving]
        return {"mass_matrix": M, "gravity": -C.T @ rest, "bias": C.T @ (moving - rest),
                "bias_from_mass_matrix": bias_from_mass_matrix(self, np.asarray(q, dtype=float), np.asarray(qd, dtype=float)),
                "inverse_dynamics": C.T @ full, "lengths": lengths, "moment_arms": arms,
                "computeMomentArm_vs_gradient": float(np.abs(arms - gradient).max()) if arms.size and clear else 0.0}

    def clear_of_conditions(self, q, margin: float = MARGIN) -> bool:
        """Whether every conditional point's coordinate (coupled ones from their couplers) is at least
        ``margin`` from its range ends at ``q``, and every piecewise-constant function's argument from
        its knots (so that no difference stencil crosses one)."""
        zero = np.zeros(len(q))
        values = self.full_state(q, zero, zero)[0]
        return all(abs(values[c] - e) > margin for c, ranges in self.conditions.items() for r in ranges for e in r)


def bias_from_mass_matrix(model: OpenSimModel, q: np.ndarray, qd: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """The bias forces implied by OpenSim's reduced mass matrix alone (Lagrange's equations of a
    scleronomic system, ``T = ½ q̇ᵀ M(q) q̇``): ``b_k = Σ_ij (∂M_ki/∂q_j − ½ ∂M_ij/∂q_k) q̇_i q̇_j``,
    ``∂M/∂q`` by central differences of step ``h`` (error ≈ 1e-10 relative). An independent check of
    OpenSim's own velocity terms (``bias``)."""
    derivatives = []
    for j in range(len(q)):
        step = np.zeros(len(q))
        step[j] = h
        derivatives.append((model.mass_matrix(q + step) - model.mass_matrix(q - step)) / (2 * h))
    dM = np.array(derivatives)  # dM[j] = ∂M/∂q_j
    return np.einsum("jki,i,j->k", dM, qd, qd) - 0.5 * np.einsum("kij,i,j->k", dM, qd, qd)


def value_indices(model: OpenSimModel) -> dict[str, int]:
    """Index of each coordinate's value in OpenSim's ``q``: the entry that changes when that value alone goes from
    0 to 1. Every coordinate is unlocked meanwhile (a locked one ignores ``setValue``: one locked beyond ±1 would
    take the others' places), and left at its value and lock as before."""
    values = {name: coordinate.getValue(model.state) for name, coordinate in model.coordinates.items()}
    locked = {name: coordinate.getLocked(model.state) for name, coordinate in model.coordinates.items()}
    for coordinate in model.coordinates.values():
        coordinate.setLocked(model.state, False)
    out = {}
    try:
        for name, coordinate in model.coordinates.items():
            for other in model.coordinates.values():
                other.setValue(model.state, 0.0, False)
            before = model.state.getQ()
            before = np.array([before.get(k) for k in range(before.size())])
            coordinate.setValue(model.state, 1.0, False)
            after = model.state.getQ()
            out[name] = int(np.argmax(np.abs(np.array([after.get(k) for k in range(after.size())]) - before)))
    finally:
        for name, coordinate in model.coordinates.items():
            coordinate.setValue(model.state, values[name], False)
        for name, coordinate in model.coordinates.items():
            coordinate.setLocked(model.state, locked[name])
    return out


def length_gradient(model: OpenSimModel, q: np.ndarray, h: float = STEP) -> np.ndarray:
    """``−dL/dq`` (coordinates × muscles) of OpenSim's lengths: central differences at steps ``h`` and
    ``2h`` (fourth order) combined by Richardson extrapolation (sixth order)."""
    out = []
    for k in range(len(q)):
        def central(step):
            shifted_up, shifted_down = q.copy(), q.copy()
            shifted_up[k] += step
            shifted_down[k] -= step
            return (model.lengths(shifted_up) - model.lengths(shifted_down)) / (2 * step)
        d1, d2, d4 = central(h), central(2 * h), central(4 * h)
        fourth_h = (4 * d1 - d2) / 3
        fourth_2h = (4 * d2 - d4) / 3
        out.append(-(16 * fourth_h - fourth_2h) / 15)
    return np.array(out)


def conditional_ranges(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Per coordinate, the ranges of the ConditionalPathPoints on it (from OpenSim)."""
    osim = opensim()
    model = osim.Model(str(path))
    out: dict[str, list] = {}
    muscles = model.getMuscles()
    for m in range(muscles.getSize()):
        points = muscles.get(m).getGeometryPath().getPathPointSet()
        for k in range(points.getSize()):
            point = osim.ConditionalPathPoint.safeDownCast(points.get(k))
            if point is not None:
                out.setdefault(point.getCoordinate().getName(), []).append((point.get_range(0), point.get_range(1)))
    return out


def step_knots(path: Path) -> dict[str, list[float]]:
    """Per coordinate, the knots of the PiecewiseConstantFunctions of it (in TransformAxes, moving path
    points and couplers), where those functions jump."""
    import xml.etree.ElementTree as ET

    parents = {}
    root = ET.parse(path).getroot()
    for parent in root.iter():
        for child in parent:
            parents[child] = parent
    out: dict[str, list[float]] = {}
    for function in root.iter("PiecewiseConstantFunction"):
        holder = parents[function]
        if holder.tag == "TransformAxis":
            names = (holder.findtext("coordinates") or "").split()
        elif holder.tag in ("x_location", "y_location", "z_location"):
            names = [parents[holder].findtext(f"socket_{holder.tag[0]}_coordinate").split("/")[-1]]
        else:  # a coupler's function
            names = (parents[holder].findtext("independent_coordinate_names") or "").split()
        for name in names:
            out.setdefault(name, []).extend(float(v) for v in function.findtext("x").split())
    return out


def states(model, opensim_model: OpenSimModel, count: int = STATES,
           seed: int = 2026) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default pose and seeded random poses inside the ranges (infinite ranges read as ±1) whose
    conditional points' coordinates (coupled ones included, set from their couplers) are at least
    :data:`MARGIN` from their range ends; normal random speeds and accelerations (first state: zero speeds)."""
    rng = np.random.default_rng(seed)
    names = model.coordinates
    low = np.array([max(model.coordinate(n).range[0], -1.0) for n in names])
    high = np.array([min(model.coordinate(n).range[1], 1.0) for n in names])
    rows = [model.default_q]
    while len(rows) < count:
        q = rng.uniform(low, high)
        if opensim_model.clear_of_conditions(q):
            rows.append(q)
    q = np.array(rows)
    qd = rng.normal(size=q.shape)
    qd[0] = 0.0
    return q, qd, rng.normal(size=q.shape)


#: Edge states put a conditional point's coordinate this far (rad or m) beyond its range's ends, inside
#: and outside OpenSim's widening of the range by 1e-5.
EDGE_OFFSETS = (0.5e-5, 1.5e-5)


def edge_states(model, path: Path) -> np.ndarray:
    """The default pose with one coordinate just outside a conditional point's range end: ``lo − δ``
    and ``hi + δ`` for δ in :data:`EDGE_OFFSETS` (each end once; within the coordinate's range;
    conditional points on coupled coordinates are not included)."""
    rows = []
    names = list(model.coordinates)
    ends = {(c, e, sign) for c, ranges in conditional_ranges(path).items() if c in names
            for lo, hi in ranges for e, sign in ((lo, -1.0), (hi, 1.0))}
    for coordinate, end, sign in sorted(ends):
        low, high = model.coordinate(coordinate).range
        for offset in EDGE_OFFSETS:
            value = end + sign * offset
            if low <= value <= high:
                q = np.array(model.default_q, dtype=float)
                q[names.index(coordinate)] = value
                rows.append(q)
    return np.reshape(rows, (len(rows), len(names)))


def reference(name: str, path: Path, remove_wrapping: bool | None = None) -> dict:
    """The OpenSim side for model ``name`` read from ``path`` (``remove_wrapping``: as :data:`MODELS`
    says) at :func:`states`."""
    path = Path(path)
    remove_wrapping = MODELS.get(name, False) if remove_wrapping is None else remove_wrapping
    model = load_mbkron(path, remove_wrapping)
    opensim_model = OpenSimModel(path, list(model.coordinates), remove_wrapping)
    if opensim_model.independent != list(model.coordinates):
        raise AssertionError(f"{name}: mbkron's coordinates {list(model.coordinates)} are not OpenSim's independent, "
                             f"unlocked coordinates in CoordinateSet order {opensim_model.independent}")
    q, qd, qdd = (np.reshape(rounded(a), a.shape) for a in states(model, opensim_model))
    results = [opensim_model.evaluate(*row) for row in zip(q, qd, qdd)]
    edges = np.reshape(rounded(edge_states(model, path)), (-1, len(model.coordinates)))
    conditional = [k for k, m in enumerate(opensim_model.muscles) if any(
        m.getGeometryPath().getPathPointSet().get(j).getConcreteClassName() == "ConditionalPathPoint"
        for j in range(m.getGeometryPath().getPathPointSet().getSize()))]
    edge_lengths = [opensim_model.lengths(row)[conditional] for row in edges]
    keys = ("mass_matrix", "gravity", "bias", "bias_from_mass_matrix", "inverse_dynamics", "lengths", "moment_arms")
    return {"model": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "opensim": opensim_model.osim.__version__, "wrapping_removed": remove_wrapping,
            "coordinates": list(model.coordinates), "muscles": [m.getName() for m in opensim_model.muscles],
            "moment_arm_reference": ["gradient" if moving else "computeMomentArm" for moving in opensim_model.moving],
            "q": rounded(q), "qd": rounded(qd), "qdd": rounded(qdd),
            **{key: rounded([r[key] for r in results]) for key in keys},
            "moment_arms": rounded([np.where(np.abs(r["moment_arms"]) < NEGLIGIBLE_ARM, 0.0, r["moment_arms"]) for r in results]),
            "edge_q": rounded(edges), "edge_muscles": conditional, "edge_lengths": rounded(edge_lengths),
            "computeMomentArm_vs_gradient": max(r["computeMomentArm_vs_gradient"] for r in results)}


def deviations(data: dict, path: Path) -> dict[str, float]:
    """mbkron's largest deviations from the OpenSim data of :func:`reference`: relative (to the largest
    entry) for the dynamics, metres for lengths and moment arms (``path``: as for :func:`reference`)."""
    model = load_mbkron(path, data["wrapping_removed"])
    n, nq = len(data["q"]) // len(data["coordinates"]), len(data["coordinates"])
    q, qd, qdd = (np.reshape(data[k], (n, nq)) for k in ("q", "qd", "qdd"))
    ours = {"mass_matrix": model.mass_matrix(q), "gravity": model.gravity_forces(q),
            "bias": model.velocity_forces(q, qd), "inverse_dynamics": model.inverse_dynamics(q, qd, qdd, loads=())}
    ours["bias_from_mass_matrix"] = ours["bias"]
    if model.muscles:
        ours.update(lengths=model.muscle_lengths(q), moment_arms=model.moment_arms(q))
    if data["edge_q"]:
        ours["edge_lengths"] = model.muscle_lengths(np.reshape(data["edge_q"], (-1, nq)))[:, data["edge_muscles"]]
    out = {}
    for key, value in ours.items():
        theirs = np.reshape(data[key], value.shape)
        error = float(np.abs(value - theirs).max()) if value.size else 0.0
        out[key] = error if key in ("lengths", "moment_arms", "edge_lengths") else error / max(float(np.abs(theirs).max()), 1e-300)
    return out


#: A model written by OpenSim itself with one joint of each kind with fixed axes (the four models
#: use only CustomJoint and WeldJoint), random offset frames, masses and inertias.
JOINT_MODEL = "joints"
_JOINT_TYPES = ("PinJoint", "SliderJoint", "UniversalJoint", "GimbalJoint", "PlanarJoint")


def write_joint_model(path: Path, seed: int = 1) -> None:
    """Write :data:`JOINT_MODEL`: a chain ground → b0 → … of the joints :data:`_JOINT_TYPES`."""
    osim = opensim()

    rng = np.random.default_rng(seed)
    model = osim.Model()
    model.setName(JOINT_MODEL)
    parent = model.getGround()
    for k, kind in enumerate(_JOINT_TYPES):
        body = osim.Body(f"b{k}", 1.0 + k, osim.Vec3(*(0.1 * rng.normal(size=3))),
                         osim.Inertia(0.1, 0.2, 0.3, 0.01, 0.02, 0.03))
        model.addBody(body)
        frames = [osim.Vec3(*(scale * rng.normal(size=3))) for scale in (0.2, 1.0, 0.2, 1.0)]
        model.addJoint(getattr(osim, kind)(f"j{k}", parent, frames[0], frames[1], body, frames[2], frames[3]))
        parent = body
    model.finalizeConnections()
    model.printToXML(str(path))


#: A model of every function form and coupler composition the importer handles, written by hand
#: (OpenSim loads it unchanged): a CustomJoint whose axes are a Sine, a SimmSpline of a coordinate
#: coupled affinely (``d = 1.5·(2 b + 0.1)``, beyond the knots: extrapolation), a MultiplierFunction of
#: a PiecewiseLinearFunction, a PolynomialFunction, a LinearFunction of a coordinate coupled by a Sine
#: (``e = 0.4 sin(2 a + 0.3)``) and a Constant; a PinJoint; a PathActuator with a MovingPathPoint (a
#: SimmSpline of the coupled ``d``) and a ConditionalPathPoint.
FUNCTION_MODEL = "functions"
_FUNCTION_MODEL_TEXT = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<Model name="functions">
<gravity>0.3 -9.80665 0.1</gravity>
<Ground name="ground" />
<BodySet name="bodyset"><objects>
<Body name="link"><mass>2</mass><mass_center>0.1 0.2 0.05</mass_center><inertia>0.1 0.2 0.3 0.01 0.02 0.03</inertia></Body>
<Body name="tip"><mass>0.5</mass><mass_center>0.05 -0.1 0.02</mass_center><inertia>0.01 0.02 0.015 0.001 0 0.002</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>
<CustomJoint name="cj">
<socket_parent_frame>ground_offset</socket_parent_frame>
<socket_child_frame>link_offset</socket_child_frame>
<coordinates>
<Coordinate name="a"><default_value>0.1</default_value><range>-1 1</range></Coordinate>
<Coordinate name="b"><range>-1 1</range></Coordinate>
<Coordinate name="d"><range>-4 4</range></Coordinate>
<Coordinate name="e"><range>-1 1</range></Coordinate>
</coordinates>
<frames>
<PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0.1 0.2 0.3</translation><orientation>0.3 -0.2 0.5</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="link_offset"><socket_parent>/bodyset/link</socket_parent><translation>0 0.1 0</translation><orientation>0.1 0 -0.2</orientation></PhysicalOffsetFrame>
</frames>
<SpatialTransform>
<TransformAxis name="rotation1"><coordinates>a</coordinates><axis>1 0 0</axis><Sine name="function"><amplitude>0.7</amplitude><omega>1.3</omega><phase>0.2</phase><offset>0.1</offset></Sine></TransformAxis>
<TransformAxis name="rotation2"><coordinates>d</coordinates><axis>0.2 1 0</axis><SimmSpline name="function"><x>-1 -0.3 0.2 0.9 1.5</x><y>0.2 -0.1 0.4 0.3 0.8</y></SimmSpline></TransformAxis>
<TransformAxis name="rotation3"><coordinates>b</coordinates><axis>0 0.3 1</axis><MultiplierFunction name="function"><function><PiecewiseLinearFunction><x>-1 -0.4 1</x><y>-0.5 0.1 0.3</y></PiecewiseLinearFunction></function><scale>1.7</scale></MultiplierFunction></TransformAxis>
<TransformAxis name="translation1"><coordinates>a</coordinates><axis>1 0 0</axis><PolynomialFunction name="function"><coefficients>0.1 -0.2 0.05</coefficients></PolynomialFunction></TransformAxis>
<TransformAxis name="translation2"><coordinates>e</coordinates><axis>0 1 0</axis><LinearFunction name="function"><coefficients>0.5 0.02</coefficients></LinearFunction></TransformAxis>
<TransformAxis name="translation3"><coordinates></coordinates><axis>0 0 1</axis><Constant name="function"><value>0.05</value></Constant></TransformAxis>
</SpatialTransform>
</CustomJoint>
<PinJoint name="pin">
<socket_parent_frame>link_frame</socket_parent_frame>
<socket_child_frame>tip_frame</socket_child_frame>
<coordinates><Coordinate name="c"><range>-2 2</range></Coordinate></coordinates>
<frames>
<PhysicalOffsetFrame name="link_frame"><socket_parent>/bodyset/link</socket_parent><translation>0.3 0 0.05</translation><orientation>0 0.2 0</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="tip_frame"><socket_parent>/bodyset/tip</socket_parent><translation>-0.05 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
</frames>
</PinJoint>
</objects></JointSet>
<ConstraintSet name="constraintset"><objects>
<CoordinateCouplerConstraint name="d_of_b"><coupled_coordinates_function><LinearFunction><coefficients>2 0.1</coefficients></LinearFunction></coupled_coordinates_function><independent_coordinate_names>b</independent_coordinate_names><dependent_coordinate_name>d</dependent_coordinate_name><scale_factor>1.5</scale_factor></CoordinateCouplerConstraint>
<CoordinateCouplerConstraint name="e_of_a"><coupled_coordinates_function><Sine><amplitude>0.4</amplitude><omega>2</omega><phase>0.3</phase><offset>0</offset></Sine></coupled_coordinates_function><independent_coordinate_names>a</independent_coordinate_names><dependent_coordinate_name>e</dependent_coordinate_name><scale_factor>1</scale_factor></CoordinateCouplerConstraint>
</objects></ConstraintSet>
<ForceSet name="forceset"><objects>
<PathActuator name="strap"><optimal_force>100</optimal_force><GeometryPath name="path"><PathPointSet><objects>
<PathPoint name="p0"><socket_parent_frame>/ground</socket_parent_frame><location>0 0.5 0.1</location></PathPoint>
<MovingPathPoint name="p1"><socket_parent_frame>/bodyset/link</socket_parent_frame>
<x_location><SimmSpline><x>-4 -1 0 1 4</x><y>0.1 0.15 0.12 0.2 0.1</y></SimmSpline></x_location>
<y_location><Constant><value>0.04</value></Constant></y_location>
<z_location><LinearFunction><coefficients>0.02 0.01</coefficients></LinearFunction></z_location>
<socket_x_coordinate>/jointset/cj/d</socket_x_coordinate><socket_y_coordinate>/jointset/cj/d</socket_y_coordinate><socket_z_coordinate>/jointset/cj/d</socket_z_coordinate>
</MovingPathPoint>
<ConditionalPathPoint name="p2"><socket_parent_frame>/bodyset/link</socket_parent_frame><location>0.25 0.05 0</location><socket_coordinate>/jointset/pin/c</socket_coordinate><range>-0.5 1</range></ConditionalPathPoint>
<PathPoint name="p3"><socket_parent_frame>/bodyset/tip</socket_parent_frame><location>0.1 0.02 0</location></PathPoint>
</objects></PathPointSet></GeometryPath></PathActuator>
</objects></ForceSet>
</Model>
</OpenSimDocument>
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=[*MODELS, JOINT_MODEL, FUNCTION_MODEL, *HAND_WRITTEN])
    parser.add_argument("--no-write", action="store_true", help="compare only; do not rewrite tests/data/osim")
    args = parser.parse_args(argv)
    for name in args.models:
        with tempfile.TemporaryDirectory() as directory:
            if name in (JOINT_MODEL, FUNCTION_MODEL):  # written here, stored beside the data (gzip)
                path = Path(directory) / f"{name}.osim"
                if name == JOINT_MODEL:
                    write_joint_model(path)
                else:
                    path.write_text(_FUNCTION_MODEL_TEXT)
                if not args.no_write:
                    (DATA / f"{name}.osim.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
            else:
                path = stored_osim(name, Path(directory))
            data = reference(name, path)
            found = deviations(data, path)
            if LEGACY.get(name):
                data["equal_to"] = LEGACY[name]
                data["differences_to_4x_file"] = model_differences(
                    load_mbkron(path), load_mbkron(stored_osim(LEGACY[name], Path(directory))))
        if not args.no_write:
            DATA.mkdir(parents=True, exist_ok=True)
            (DATA / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"{name}: " + ", ".join(f"{k} {v:.1e}" for k, v in found.items())
              + f"; |computeMomentArm − gradient| {data['computeMomentArm_vs_gradient']:.1e} m"
              + (f"; vs {data['equal_to']}: {data['differences_to_4x_file'] or 'equal'}" if "equal_to" in data else ""))


if __name__ == "__main__":
    main()
