"""Static optimisation as OpenSim's ``StaticOptimization`` analysis, solved for all frames at once.

OpenSim's problem at each frame (``OpenSim/Analyses/StaticOptimization.cpp``,
``StaticOptimizationTarget.cpp``): one control ``x_j`` per actuator, bounded by its
``min_control``/``max_control``; the actuator's force is ``x_j F°_j``, where ``F°_j`` is

- for a muscle with ``use_muscle_physiology`` (the default): its force along the tendon at full
  activation with a rigid tendon, ``Muscle::calcInextensibleTendonActiveFiberForce(s, 1)``:
  ``F°_j = F_max f_L(l̃_M) f_V(ṽ_M, a = 1) cos φ`` -- the active fibre force only; passive fibre
  force does not enter (the muscle's actuation is overridden by ``x_j F°_j``) and the force is zero
  for a fibre at or below its minimum length (:mod:`mbkron.analysis.muscle_analysis`);
- for a muscle without ``use_muscle_physiology``: ``F_max``;
- for a reserve or residual actuator (``CoordinateActuator``, ``PointActuator``, ``TorqueActuator``:
  :mod:`mbkron.analysis.actuators`): its ``optimal_force``, applied as OpenSim applies it (a
  generalized force on a coordinate, a force at a point of a body, a torque on a body).

It minimises ``Σ_j |x_j|^p`` over all actuators (muscles and reserves alike; ``p`` is the
``activation_exponent``, 2 by default) subject to the equations of motion at the measured
acceleration of every unconstrained coordinate. OpenSim writes these as accelerations
(``q̈_target − q̈(x) = 0``); since ``q̈(x) = M⁻¹(Σ_j x_j F°_j r_j + rest)`` is affine in ``x`` and
``M`` is invertible, they are equivalent to the generalized-force balance used here,

    A x = τ,   A = [R(q) diag(F°) | E diag(F°_reserve)],

with ``τ`` the inverse-dynamics generalized forces (``M q̈ + N q̇ − G − Q_external``, Eq. 198),
``R`` the moment arms (Eq. 192–195) and ``E`` the actuators' generalized forces per unit of force
(unit columns for coordinate actuators; Eq. 46, 180 for point and torque actuators,
:func:`mbkron.analysis.actuators.unit_generalized_forces`): the same feasible set, the same optimum.

Method. For ``p > 1`` the problem is strictly convex with linear constraints. Its Lagrange dual,
``max_λ d(λ)``, ``d(λ) = λᵀτ + Σ_j min_{l_j ≤ x_j ≤ u_j} (|x_j|^p − (Aᵀλ)_j x_j)``, is concave and
continuously differentiable, with ``∇d = τ − A x(λ)``, where ``x(λ)`` minimises each term
in closed form: ``x_j = clip(sign(s_j) (|s_j|/p)^{1/(p−1)}, l_j, u_j)``, ``s = Aᵀλ`` (for ``p = 2``:
``x = clip(Aᵀλ/2)``). A dual maximiser gives the primal optimum: ``x(λ)`` satisfies the bounds and
stationarity with complementary bound multipliers by construction, and feasibility ``A x = τ`` is
``∇d = 0`` -- the KKT conditions, which are sufficient. The dual is maximised by a (semismooth) Newton
method with the generalized Hessian ``−A D Aᵀ``, ``D = diag(∂x_j/∂s_j)`` (zero on the actuators at a
bound: an active-set method on the KKT system) and a backtracking (Armijo) line search, vectorised
over frames: one batched ``nc × nc`` solve per iteration for all frames. It starts from the
unconstrained minimum-norm solution. For ``p = 2`` it ends after finitely many steps with the exact
active set; the iteration stops when ``‖A x − τ‖∞ ≤ tolerance`` (N·m). For ``p > 2``, ``x(s)`` has an
unbounded slope where a control crosses zero and Newton can stall; there the problem is solved by
sequential quadratic programming from the ``p = 2`` optimum, each quadratic subproblem (the objective's
gradient and diagonal Hessian, bound-constrained) by the same dual method, each step an exact line
minimisation of the objective towards the subproblem's solution (see ``_optimise``).

A frame where no controls within the bounds balance ``τ`` (a model too weak without reserves) has an
unbounded dual: it is reported with ``converged`` False and its residual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.analysis.actuators import PointActuator, Reserve, TorqueActuator, read_reserves, unit_generalized_forces
from mbkron.analysis.muscle_analysis import hill_arrays, rigid_tendon_fibers
from mbkron.io.storage import write_storage
from mbkron.algorithms.muscles.hill import active_force_length, force_velocity

__all__ = ["PointActuator", "Reserve", "StaticOptimizationResult", "TorqueActuator", "optimal_forces", "read_reserves",
           "static_optimization", "unbalanced_message"]


def optimal_forces(model, length: ArrayLike, velocity: ArrayLike, use_muscle_physiology: bool = True) -> NDArray:
    """``F°`` of every muscle: its force per unit control in OpenSim's static optimisation, N, (..., n_mt).

    ``F_max f_L f_V(a = 1) cos φ`` with a rigid tendon (module docstring), or ``F_max`` when
    ``use_muscle_physiology`` is False.

    Raises
    ------
    ValueError
        If a muscle of the model has no Hill parameters.
    """
    hill = hill_arrays(model)
    missing = [m for m, c in zip(model.muscles, hill["curves"]) if c is None]
    if missing:
        raise ValueError(f"`model` muscles without Hill parameters cannot be optimised: {', '.join(missing)}")
    length = np.asarray(length, dtype=float)
    if not use_muscle_physiology:
        return np.broadcast_to(hill["max_isometric_force"], length.shape).copy()
    fibers = rigid_tendon_fibers(hill, length, velocity)
    out = np.zeros(np.broadcast(length, np.asarray(velocity)).shape)
    for curves in set(hill["curves"]):
        columns = np.array([c == curves for c in hill["curves"]])
        active = active_force_length(fibers.normalized_fiber_length[..., columns], curves) * force_velocity(
            fibers.normalized_fiber_velocity[..., columns], 1.0, curves)
        out[..., columns] = hill["max_isometric_force"][columns] * active * fibers.cos_pennation[..., columns]
    return np.where(fibers.above_minimum, out, 0.0)


@dataclass(frozen=True, eq=False)
class StaticOptimizationResult:
    """Static optimisation of a motion (:func:`static_optimization`); arrays have one row per frame.

    Attributes
    ----------
    time : ndarray, shape (n,)
    muscles, reserves, coordinates : tuple of str
        The actuators' names and the coordinates whose balance is enforced.
    activations : ndarray, shape (n, n_mt)
        The muscles' controls ``x`` (OpenSim's activations).
    forces : ndarray, shape (n, n_mt)
        Muscle forces ``x F°``, N.
    optimal_forces : ndarray, shape (n, n_mt)
        ``F°`` (:func:`optimal_forces`), N.
    reserve_controls, reserve_forces : ndarray, shape (n, n_reserves)
        ``x`` and ``x F°`` of the reserves.
    residual : ndarray, shape (n, nc)
        ``A x − τ`` on the enforced coordinates (N·m or N).
    multipliers : ndarray, shape (n, nc)
        The balance's Lagrange multipliers ``λ`` (the dual solution).
    converged : ndarray of bool, shape (n,)
        ``‖residual‖∞ ≤ tolerance``; False where the actuators cannot balance ``τ`` within their bounds.
    iterations : int
        Newton iterations taken (for all frames together).
    """

    time: NDArray
    muscles: tuple[str, ...]
    reserves: tuple[str, ...]
    coordinates: tuple[str, ...]
    activations: NDArray
    forces: NDArray
    optimal_forces: NDArray
    reserve_controls: NDArray
    reserve_forces: NDArray
    residual: NDArray
    multipliers: NDArray
    converged: NDArray
    iterations: int

    def write(self, directory: str | Path, name: str) -> tuple[Path, Path]:
        """Write ``<name>_StaticOptimization_activation.sto`` (the controls of the muscles, then of the
        reserves: OpenSim's ``Static Optimization`` table) and ``<name>_StaticOptimization_force.sto``
        (their forces), OpenSim's file names and column labels (the actuator names).

        Returns
        -------
        tuple of Path
            The activation and force files.
        """
        directory = Path(directory)
        labels = list(self.muscles) + list(self.reserves)
        paths = (directory / f"{name}_StaticOptimization_activation.sto",
                 directory / f"{name}_StaticOptimization_force.sto")
        write_storage(paths[0], "Static Optimization", labels, self.time,
                      np.column_stack([self.activations, self.reserve_controls]))
        write_storage(paths[1], "ForceReporter", labels, self.time,
                      np.column_stack([self.forces, self.reserve_forces]))
        return paths


@dataclass(frozen=True)
class _Separable:
    """A separable objective ``Σ_j φ_j(x_j)`` over ``[lower, upper]`` per frame (arrays (n, n_x)): the power
    ``|x|^p`` (``p ≤ 2``) when ``weights`` is None, else the quadratic ``½ h (x − c)²``."""

    lower: NDArray
    upper: NDArray
    p: float = 2.0
    weights: NDArray | None = None  # h
    centres: NDArray | None = None  # c

    def rows(self, rows: NDArray) -> _Separable:
        return _Separable(self.lower[rows], self.upper[rows], self.p,
                          None if self.weights is None else self.weights[rows],
                          None if self.centres is None else self.centres[rows])

    def value(self, x: NDArray) -> NDArray:
        if self.weights is None:
            return (np.abs(x) ** self.p).sum(axis=1)
        return 0.5 * (self.weights * (x - self.centres) ** 2).sum(axis=1)

    def controls(self, s: NDArray) -> tuple[NDArray, NDArray]:
        """The minimiser ``x(s)`` of ``φ(x) − s x`` over the bounds and ``∂x/∂s`` (zero at a bound)."""
        p = self.p
        if self.weights is not None:
            free, slope = self.centres + s / self.weights, 1.0 / self.weights
        elif p == 2.0:
            free, slope = s / 2.0, np.full(s.shape, 0.5)
        else:  # 1 < p < 2: x(s) = sign(s) (|s|/p)^(1/(p−1)) is continuously differentiable, slope 0 at s = 0
            magnitude = (np.abs(s) / p) ** (1.0 / (p - 1.0))
            free = np.sign(s) * magnitude
            slope = magnitude ** (2.0 - p) / (p * (p - 1.0))
        x = np.clip(free, self.lower, self.upper)
        return x, np.where((free > self.lower) & (free < self.upper), slope, 0.0)


def _dual(lam: NDArray, A: NDArray, tau: NDArray, terms: _Separable):
    """``d(λ) = λᵀτ + Σ_j (φ_j(x_j) − s_j x_j)``, ``x(λ)`` and ``∂x/∂s`` per frame, ``s = Aᵀλ``, and the
    rounding error of ``d`` (64 ulp of the sum of the terms' magnitudes)."""
    s = np.einsum("nkj,nk->nj", A, lam)
    x, slope = terms.controls(s)
    parts = (np.einsum("nk,nk->n", lam, tau), terms.value(x), (s * x).sum(axis=1))
    rounding = 64 * np.finfo(float).eps * (np.abs(lam * tau).sum(axis=1) + np.abs(parts[1]) + np.abs(s * x).sum(axis=1))
    return parts[0] + parts[1] - parts[2], x, slope, rounding


def _solve(A: NDArray, tau: NDArray, terms: _Separable, lam: NDArray, tolerance: float, max_iterations: int):
    """Maximise the dual of every frame from ``lam`` by damped semismooth Newton (module docstring).

    Returns ``x``, ``λ`` and the iterations taken.
    """
    nc = A.shape[1]
    value, x, slope, _ = _dual(lam, A, tau, terms)
    size = np.trace(A @ A.transpose(0, 2, 1), axis1=1, axis2=2)[:, None, None]
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        gradient = tau - np.einsum("nkj,nj->nk", A, x)
        active = np.abs(gradient).max(axis=1, initial=0.0) > tolerance
        if not active.any():
            return x, lam, iterations - 1
        Aa, ga = A[active], gradient[active]
        hessian = np.einsum("nkj,nj,nlj->nkl", Aa, slope[active], Aa)
        ridge = 1e-13 * (np.trace(hessian, axis1=1, axis2=2)[:, None, None] + size[active]) + 1e-300
        step = np.linalg.solve(hessian + ridge * np.eye(nc), ga[..., None])[..., 0]
        ascent = np.einsum("nk,nk->n", ga, step)
        sub = terms.rows(active)
        base, start = value[active], lam[active]
        new = [start.copy(), base.copy(), x[active].copy(), slope[active].copy()]
        t = np.ones(len(step))
        pending = np.ones(len(step), dtype=bool)
        norm = np.abs(ga).max(axis=1)
        for _ in range(60):  # Armijo backtracking, frame by frame; near the optimum, where the increase
            trial = start + t[:, None] * step  # drowns in d's rounding, a step that halves the residual
            v, xt, st, rounding = _dual(trial, Aa, tau[active], sub)
            smaller = np.abs(tau[active] - np.einsum("nkj,nj->nk", Aa, xt)).max(axis=1) <= 0.5 * norm
            accept = pending & ((v >= base + 1e-4 * t * ascent) | ((v >= base - rounding) & smaller))
            for target, source in zip(new, (trial, v, xt, st)):
                target[accept] = source[accept]
            pending &= ~accept
            if not pending.any():
                break
            t = np.where(pending, 0.5 * t, t)
        lam[active], value[active], x[active], slope[active] = new
    return x, lam, iterations


def _minimum_norm_start(A: NDArray, tau: NDArray) -> NDArray:
    """``λ`` of the unconstrained minimum-norm solution ``x = Aᵀλ/2``: ``λ = 2 (A Aᵀ)⁻¹ τ`` (regularised)."""
    gram = A @ A.transpose(0, 2, 1)
    ridge = 1e-14 * np.trace(gram, axis1=1, axis2=2)[:, None, None] + 1e-300
    return 2.0 * np.linalg.solve(gram + ridge * np.eye(A.shape[1]), tau[..., None])[..., 0]


def _line_minimum(x: NDArray, d: NDArray, p: float) -> NDArray:
    """Per frame, the ``t ∈ [0, 1]`` minimising the convex ``Σ |x + t d|^p`` (bisection on its derivative)."""
    def derivative(t):
        y = x + t[:, None] * d
        return (p * np.sign(y) * np.abs(y) ** (p - 1.0) * d).sum(axis=1)

    low, high = np.zeros(len(x)), np.ones(len(x))
    whole = derivative(high) <= 0.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        rising = derivative(middle) > 0.0
        high, low = np.where(rising, middle, high), np.where(rising, low, middle)
    return np.where(whole, 1.0, 0.5 * (low + high))


def _optimise(A: NDArray, tau: NDArray, p: float, lower: NDArray, upper: NDArray, tolerance: float,
              max_iterations: int):
    """Minimise ``Σ |x|^p`` s.t. ``A x = τ``, ``l ≤ x ≤ u`` for every frame; returns ``x``, ``λ``, iterations.

    ``p ≤ 2``: the dual Newton method. ``p > 2``: there ``x(s)`` has unbounded slope where a control
    crosses zero, so the dual Newton method can stall; instead sequential quadratic programming from the
    ``p = 2`` optimum: each step solves, by the dual method, the bound-constrained QP with the objective's
    gradient ``g`` and diagonal Hessian ``h = p(p − 1)|x|^{p−2}`` (floored at ``|x| = 1e-6``), then
    minimises the objective exactly on the segment to the QP's solution (feasible, by convexity), until
    the step taken is below 1e-12; the last QP's multipliers are the problem's (``g = Aᵀλ`` on the free set).
    """
    quadratic = _Separable(lower, upper)
    x, lam, iterations = _solve(A, tau, quadratic if p >= 2.0 else _Separable(lower, upper, p),
                                _minimum_norm_start(A, tau), tolerance, max_iterations)
    if p <= 2.0:
        return x, lam, iterations
    active = np.ones(len(x), dtype=bool)
    for _ in range(max_iterations):
        xa = x[active]
        magnitude = np.maximum(np.abs(xa), 1e-6)
        weights = p * (p - 1.0) * magnitude ** (p - 2.0)
        centres = xa - p * np.sign(xa) * np.abs(xa) ** (p - 1.0) / weights
        y, lam[active], taken = _solve(A[active], tau[active], _Separable(lower[active], upper[active], 2.0, weights,
                                                                         centres), lam[active], tolerance,
                                       max_iterations)
        iterations += taken + 1
        step = _line_minimum(xa, y - xa, p)[:, None] * (y - xa)
        x[active] = xa + step
        done = np.abs(step).max(axis=1, initial=0.0) <= 1e-12 * (1.0 + np.abs(xa).max(axis=1, initial=0.0))
        active[np.flatnonzero(active)[done]] = False
        if not active.any():
            break
    return x, lam, iterations


def static_optimization(model, time: ArrayLike, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, *,
                        activation_exponent: float = 2.0, reserves=(), use_muscle_physiology: bool = True,
                        activation_bounds: tuple | None = None, coordinates=None, tolerance: float = 1e-9,
                        max_iterations: int = 200, workspace=None) -> StaticOptimizationResult:
    """OpenSim's static optimisation of a motion: the muscle controls and reserve forces that balance ``tau``.

    Minimises ``Σ |x|^p`` over muscles and reserves subject to ``R(q) (x F°) + reserves = τ`` at every
    frame (module docstring: OpenSim's semantics and the method).

    Parameters
    ----------
    model : Model
        Muscles with Hill parameters (rigid tendon, Thelen 2003 curves: :mod:`mbkron.algorithms.muscles.hill`), or
        none (reserves only).
    time : array_like, shape (n,)
        The frames' times, s (for the results' tables).
    q, qd : array_like, shape (n, nq)
        Coordinates and rates at each frame.
    tau : array_like, shape (n, nq)
        The generalized forces to balance (inverse dynamics, :meth:`mbkron.Model.inverse_dynamics`,
        with the external loads).
    activation_exponent : float
        ``p > 1``; OpenSim's default 2.
    reserves : sequence of Reserve, PointActuator, TorqueActuator
        Reserve and residual actuators (see :func:`read_reserves`).
    use_muscle_physiology : bool
        False: ``F° = F_max`` (OpenSim's option of the same name).
    activation_bounds : (lower, upper), optional
        Bounds of the muscle controls, scalars or arrays (n_mt,); by default each muscle's
        ``curves.minimum_activation`` (0.01, OpenSim's ``Thelen2003Muscle`` ``min_control``) and 1.
    coordinates : sequence of str, optional
        The coordinates whose balance is enforced (OpenSim: the unconstrained ones; a locked
        coordinate is left out); all by default.
    tolerance : float
        Largest ``|A x − τ|`` (N·m or N) accepted as balanced.
    max_iterations : int
    workspace : Workspace, optional

    Returns
    -------
    StaticOptimizationResult

    Raises
    ------
    ValueError
        For inconsistent shapes, an unknown coordinate (of a reserve or in ``coordinates``), a muscle
        without Hill parameters, ``activation_exponent ≤ 1`` or bounds with ``lower > upper``.
    """
    q, qd, tau = (np.asarray(a, dtype=float) for a in (q, qd, tau))
    time = np.asarray(time, dtype=float).reshape(-1)
    for label, array in (("q", q), ("qd", qd), ("tau", tau)):
        if array.ndim != 2 or array.shape != (time.size, model.nq):
            raise ValueError(f"`{label}` must have shape ({time.size}, {model.nq}) (one row per frame of `time`), "
                             f"got {array.shape}")
    p = float(activation_exponent)
    if not p > 1.0 or not math.isfinite(p):
        raise ValueError(f"`activation_exponent` must be a number greater than 1, got {activation_exponent!r}")
    names = model.coordinates
    enforced = names if coordinates is None else tuple(coordinates)
    unknown = [c for c in enforced if c not in names]
    if unknown:
        raise ValueError(f"unknown coordinate(s) {', '.join(map(repr, unknown))} in `coordinates`; "
                         f"the model has: {', '.join(names)}")
    reserves = tuple(reserves)
    columns = unit_generalized_forces(model, reserves, q, workspace=workspace)  # checks the actuators
    rows = [names.index(c) for c in enforced]
    if model.muscles:
        arms = model.moment_arms(q, workspace=workspace)
        speed = -np.einsum("nkm,nk->nm", arms, qd)
        f_opt = optimal_forces(model, model.muscle_lengths(q, workspace=workspace), speed, use_muscle_physiology)
        minimum = [curves.minimum_activation for curves in hill_arrays(model)["curves"]]
    else:  # reserves only
        arms, f_opt, minimum = np.zeros((time.size, model.nq, 0)), np.zeros((time.size, 0)), []
    if activation_bounds is None:
        lower, upper = np.array(minimum, dtype=float), np.ones(len(minimum))
    else:
        lower, upper = (np.broadcast_to(np.asarray(b, dtype=float), (len(model.muscles),)) for b in activation_bounds)
    if np.any(lower > upper):
        raise ValueError("`activation_bounds`: the lower bound exceeds the upper bound for muscle(s) "
                         + ", ".join(m for m, lo, hi in zip(model.muscles, lower, upper) if lo > hi))
    A = np.concatenate([arms[:, rows, :] * f_opt[:, None, :], columns[:, rows, :]], axis=2)
    low = np.concatenate([lower, [r.min_control for r in reserves]])
    high = np.concatenate([upper, [r.max_control for r in reserves]])
    shape = (time.size, A.shape[2])
    x, lam, iterations = _optimise(A, tau[:, rows], p, np.broadcast_to(low, shape), np.broadcast_to(high, shape),
                                   tolerance, max_iterations)
    residual = np.einsum("nkj,nj->nk", A, x) - tau[:, rows]
    m = len(model.muscles)
    optimal = np.array([r.optimal_force for r in reserves])
    return StaticOptimizationResult(
        time, model.muscles, tuple(r.name for r in reserves), enforced, x[:, :m], x[:, :m] * f_opt, f_opt,
        x[:, m:], x[:, m:] * optimal, residual, lam, np.abs(residual).max(axis=1, initial=0.0) <= tolerance,
        iterations)


def unbalanced_message(unbalanced: int, frames: int, reserves: str | None) -> str:
    """The warning for ``unbalanced`` of ``frames`` frames static optimisation could not balance, with the advice
    that fits: reserve actuators (``--reserves``) when none were given (``reserves`` None or empty, else the
    file's name), stronger or more of them when they were."""
    advice = ("reserve actuators help: `mbkron analyze --reserves`, a batch item's `reserves`" if not reserves else
              f"the reserves `{reserves}` are too weak or bounded there, or act on too few coordinates: check their "
              "optimal_force, min/max_control and that every unbalanced coordinate has one")
    return (f"static optimisation could not balance the generalized forces at {unbalanced} of {frames} frames "
            f"within the actuators' bounds ({advice})")
