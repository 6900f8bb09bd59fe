"""Andrews' squeezer at equal accuracy: the model file a user loads against a lean index-1 DAE, 0 ≤ t ≤ 0.03.

Run from the repository root, on one thread::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/bench_andrews.py [--quick]

The two sides:

- **ODE** (the dissertation's embedding): exactly what a user runs, ``mbkron.load_model(
  "models/andrews_squeezer.toml")`` and ``mbkron.simulate`` from the file's initial state (the crank
  angle's default, at rest, as ``mbkron simulate`` does), with every solver mbkron offers: TRBDF2 (the
  default), RKF45, and scipy's DOP853, RK45, Radau, BDF and LSODA on the 2-state ODE in (β, β̇);
- **DAE**: the IVP test set's formulation (``andrews.f``: seven angles, six multipliers) in index-1
  form, ``[M Gᵀ; G 0][q̈; λ] = [f; −g_qq(q̇, q̇)]``, transcribed as leanly as the Fortran (scalar
  sines and cosines, one 13×13 dense solve; :func:`lean_index1`) and integrated by scipy's DOP853,
  RK45, Radau, BDF and LSODA on its 14 states (q, q̇).

The lean transcription is checked first against the test set's consistent initial accelerations and
multipliers and against the benchmark's earlier transcription (:func:`symbolic_index1`: the mass
matrix of :mod:`validation.andrews_reference` and ``G``, ``g_qq`` derived by sympy from the test set's
g1…g6) at random states; the CPU time of one evaluation of each, and of mbkron's right-hand side, is
printed. Then a work–precision table over rtol = atol = 1e-3 … 1e-12, two tolerances per decade for every
method of both sides (``--per-decade``, ``--methods``; and the command line's rtol 1e-6, atol 1e-8): error =
max |angle − reference| over the seven angles at t = 0.03 against the test set's reference solution, CPU
time (``time.process_time``) the median of interleaved rounds; the fastest run of each side reaching each
error target; the README's main job against Radau at the same tolerances;
and the angles of the two sides' most accurate runs compared at a few times. ``--diagnose`` adds where
the ODE's time and error go (per-evaluation cost along a trajectory, solver statistics, the constraint
solve's settings, stiffness, error control); docs/integrators.md quotes its output.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy
from scipy.integrate import solve_ivp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron
from benchmarks.common import LadderRun, machine
from mbkron.examples.andrews import EQUATIONS, INITIAL
from mbkron.examples.andrews import PARAMETERS as P
from validation.andrews_reference import (
    INITIAL_ACCELERATION,
    ORDER,
    REFERENCE_Q,
    T_REFERENCE,
    reference_mass_matrix,
)

MODEL_FILE = ROOT / "models" / "andrews_squeezer.toml"
REFERENCE = np.array(REFERENCE_Q)
T_END = T_REFERENCE
#: The test set's consistent initial multipliers (``andrews.f``, y(22…27)).
INITIAL_MULTIPLIERS = (98.5668703962410896057654982170, -6.12268834425566265503114393122, 0, 0, 0, 0)
#: mbkron's joint names of the test set's seven angles (the crank angle β is the joint ``crank``).
JOINTS = ("crank",) + ORDER[1:]
ODE_METHODS = ("TRBDF2", "RKF45", "DOP853", "RK45", "Radau", "BDF", "LSODA")
DAE_METHODS = ("DOP853", "RK45", "Radau", "BDF", "LSODA")
PER_DECADE = 2
"""Tolerances per decade of the work–precision ladder, the same for every method of both sides: with one, the
fastest run reaching an error target can be a decade tighter than needed on either side (the table's ratios at
1e-4, 1e-6 and 1e-7 on 2026-12-02 were set by runs that missed the target by 5–60 %)."""


def tolerances(per_decade: int = PER_DECADE) -> tuple[float, ...]:
    """rtol = atol of the ladder: 1e-3 … 1e-12, ``per_decade`` per decade (10^(−3 − k/per_decade))."""
    return tuple(10.0 ** (-3.0 - k / per_decade) for k in range(9 * per_decade + 1))

CLI_TOLERANCES = (1e-6, 1e-8)  # mbkron simulate's defaults (rtol, atol)
TARGETS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 3e-9, 1e-9, 1e-10)


# --------------------------------------------------------------------------- the DAE side

def lean_index1() -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The test set's index-1 system as ``andrews.f`` writes it: ``y = (q, q̇) ↦ (q̈, λ)``.

    Sines and cosines of the angles and of their three sums once, the mass matrix, forces, ``G`` and
    ``g_qq(q̇, q̇)`` as scalar formulas into one preallocated 13×13 system, one LAPACK solve.

    Returns
    -------
    callable
        ``accelerations(y)`` → ``(q̈, λ)``, shapes (7,) and (6,), for a state ``y`` of shape (14,).
    """
    p = P
    m2, m4, m6 = p["m2"], p["m4"], p["m6"]
    rr, d, da, e, ea, ss = p["rr"], p["d"], p["da"], p["e"], p["ea"], p["ss"]
    zt, zf, fa, u = p["zt"], p["zf"], p["fa"], p["u"]
    sa, sb, sc, sd, xb, yb, xc, yc = p["sa"], p["sb"], p["sc"], p["sd"], p["xb"], p["yb"], p["xc"], p["yc"]
    c0, l0, mom = p["c0"], p["l0"], p["mom"]
    m11 = p["m1"] * p["ra"] ** 2 + m2 * (rr**2 + da**2) + p["i1"] + p["i2"]
    m22 = m2 * da**2 + p["i2"]
    m33 = p["m3"] * (sa**2 + sb**2) + p["i3"]
    e4 = e - ea
    m44 = m4 * e4**2 + p["i4"]
    m55 = m4 * (zt**2 + e4**2) + p["m5"] * (p["ta"] ** 2 + p["tb"] ** 2) + p["i4"] + p["i5"]
    f6 = zf - fa
    m66 = m6 * f6**2 + p["i6"]
    m77 = m6 * (f6**2 + u**2) + p["m7"] * (p["ua"] ** 2 + p["ub"] ** 2) + p["i6"] + p["i7"]
    i2, i4, i6 = p["i2"], p["i4"], p["i6"]
    A = np.zeros((13, 13))
    A[1, 1], A[2, 2], A[3, 3], A[5, 5] = m22, m33, m44, m66
    b = np.zeros(13)

    def accelerations(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        be, th, ga, ph, de, om, ep, bep, thp, gap, php, dep, omp, epp = y.tolist()
        sibe, cobe, sith, coth = math.sin(be), math.cos(be), math.sin(th), math.cos(th)
        siga, coga, siph, coph = math.sin(ga), math.cos(ga), math.sin(ph), math.cos(ph)
        side, code, siom, coom = math.sin(de), math.cos(de), math.sin(om), math.cos(om)
        siep, coep = math.sin(ep), math.cos(ep)
        sibeth, cobeth = math.sin(be + th), math.cos(be + th)
        siphde, cophde = math.sin(ph + de), math.cos(ph + de)
        siomep, coomep = math.sin(om + ep), math.cos(om + ep)
        # mass matrix (symmetric; the constant entries are set once above)
        A[0, 0] = m11 - 2 * m2 * da * rr * coth
        A[0, 1] = A[1, 0] = m2 * (da**2 - da * rr * coth) + i2
        A[3, 4] = A[4, 3] = m4 * (e4**2 + zt * e4 * siph) + i4
        A[4, 4] = m55 + 2 * m4 * zt * e4 * siph
        A[5, 6] = A[6, 5] = m6 * (f6**2 - u * f6 * siom) + i6
        A[6, 6] = m77 - 2 * m6 * u * f6 * siom
        # G = ∂g/∂q in rows 7…12, Gᵀ in columns 7…12
        g_be_x, g_be_y = -rr * sibe + d * sibeth, rr * cobe - d * cobeth
        g_th_x, g_th_y = d * sibeth, -d * cobeth
        G = ((0, g_be_x), (1, g_th_x), (2, -ss * coga)), ((0, g_be_y), (1, g_th_y), (2, -ss * siga)), \
            ((0, g_be_x), (1, g_th_x), (3, -e * cophde), (4, -e * cophde + zt * side)), \
            ((0, g_be_y), (1, g_th_y), (3, -e * siphde), (4, -e * siphde - zt * code)), \
            ((0, g_be_x), (1, g_th_x), (5, zf * siomep), (6, zf * siomep - u * coep)), \
            ((0, g_be_y), (1, g_th_y), (5, -zf * coomep), (6, -zf * coomep - u * siep))
        for row, entries in enumerate(G, start=7):
            for column, value in entries:
                A[row, column] = A[column, row] = value
        # forces: the spring between D on body 3 and C, the drive torque, the velocity terms
        xd, yd = sd * coga + sc * siga + xb, sd * siga - sc * coga + yb
        length = math.hypot(xd - xc, yd - yc)
        force = -c0 * (length - l0) / length
        fx, fy = force * (xd - xc), force * (yd - yc)
        b[0] = mom - m2 * da * rr * thp * (thp + 2 * bep) * sith
        b[1] = m2 * da * rr * bep**2 * sith
        b[2] = fx * (sc * coga - sd * siga) + fy * (sd * coga + sc * siga)
        b[3] = m4 * zt * e4 * dep**2 * coph
        b[4] = -m4 * zt * e4 * php * (php + 2 * dep) * coph
        b[5] = -m6 * u * f6 * epp**2 * coom
        b[6] = m6 * u * f6 * omp * (omp + 2 * epp) * coom
        # −g_qq(q̇, q̇): the second time derivative of g at q̈ = 0
        crank_x = -rr * cobe * bep**2 + d * cobeth * (bep + thp) ** 2
        crank_y = -rr * sibe * bep**2 + d * sibeth * (bep + thp) ** 2
        b[7] = -(crank_x + ss * siga * gap**2)
        b[8] = -(crank_y - ss * coga * gap**2)
        b[9] = -(crank_x + e * siphde * (php + dep) ** 2 + zt * code * dep**2)
        b[10] = -(crank_y - e * cophde * (php + dep) ** 2 + zt * side * dep**2)
        b[11] = -(crank_x + zf * coomep * (omp + epp) ** 2 + u * siep * epp**2)
        b[12] = -(crank_y + zf * siomep * (omp + epp) ** 2 - u * coep * epp**2)
        solution = np.linalg.solve(A, b)
        return solution[:7], solution[7:]

    return accelerations


def symbolic_index1() -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The benchmark's earlier transcription of the same system, kept as a check and a cost reference.

    The mass matrix of :func:`validation.andrews_reference.reference_mass_matrix`, ``G`` and
    ``g_qq(q̇, q̇) = ∂(G q̇)/∂q q̇`` derived by sympy from the test set's g1…g6 and lambdified, the
    13×13 system assembled with ``np.block``.

    Returns
    -------
    callable
        ``accelerations(y)`` → ``(q̈, λ)``, as :func:`lean_index1`.
    """
    symbols = {name: sympy.Symbol(name) for name in ORDER}
    constants = {k: P[k] for k in ("rr", "d", "ss", "e", "zt", "zf", "u", "xa", "ya", "xb", "yb")}
    namespace = {**symbols, **{k: sympy.Symbol(k) for k in constants}}
    g = sympy.Matrix([sympy.sympify(equation, locals=namespace).subs(
        {namespace[k]: v for k, v in constants.items()}) for equation in EQUATIONS])
    q = sympy.Matrix([symbols[n] for n in ORDER])
    v = sympy.Matrix(sympy.symbols("v0:7"))
    G = g.jacobian(q)
    G_fn, curvature_fn = sympy.lambdify([q], G), sympy.lambdify([q, v], (G * v).jacobian(q) * v)
    p = P

    def accelerations(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        th, ga, ph, om = y[1], y[2], y[3], y[5]
        bep, thp, _, php, dep, omp, epp = y[7:]
        m2, m4, m6 = p["m2"], p["m4"], p["m6"]
        rr, da, e, ea, zt, zf, fa, u = p["rr"], p["da"], p["e"], p["ea"], p["zt"], p["zf"], p["fa"], p["u"]
        M = reference_mass_matrix(*y[:7])
        xd = p["sd"] * np.cos(ga) + p["sc"] * np.sin(ga) + p["xb"]
        yd = p["sd"] * np.sin(ga) - p["sc"] * np.cos(ga) + p["yb"]
        length = np.hypot(xd - p["xc"], yd - p["yc"])
        force = -p["c0"] * (length - p["l0"]) / length
        fx, fy = force * (xd - p["xc"]), force * (yd - p["yc"])
        f = np.array([
            p["mom"] - m2 * da * rr * thp * (thp + 2 * bep) * np.sin(th),
            m2 * da * rr * bep**2 * np.sin(th),
            fx * (p["sc"] * np.cos(ga) - p["sd"] * np.sin(ga)) + fy * (p["sd"] * np.cos(ga) + p["sc"] * np.sin(ga)),
            m4 * zt * (e - ea) * dep**2 * np.cos(ph),
            -m4 * zt * (e - ea) * php * (php + 2 * dep) * np.cos(ph),
            -m6 * u * (zf - fa) * epp**2 * np.cos(om),
            m6 * u * (zf - fa) * omp * (omp + 2 * epp) * np.cos(om),
        ])
        G_value = np.array(G_fn(y[:7]), dtype=float)
        system = np.block([[M, G_value.T], [G_value, np.zeros((6, 6))]])
        rhs = np.concatenate([f, -np.array(curvature_fn(y[:7], y[7:]), dtype=float).ravel()])
        solution = np.linalg.solve(system, rhs)
        return solution[:7], solution[7:]

    return accelerations


def initial_dae_state() -> np.ndarray:
    """The test set's consistent initial state ``(q, q̇)``: its seven angles at rest."""
    return np.concatenate([[INITIAL[name] for name in ORDER], np.zeros(7)])


def check_transcriptions(lean, symbolic, states: int = 200, seed: int = 29) -> float:
    """Both transcriptions give the test set's initial ``q̈`` and ``λ``, and the same values at random
    states (angles in [−π, π], rates in [−1500, 1500] rad/s). Returns the largest relative difference
    ``‖Δ(q̈, λ)‖∞ / ‖(q̈, λ)‖∞`` over the random states; raises AssertionError on a mismatch."""
    y0 = initial_dae_state()
    expected = np.concatenate([INITIAL_ACCELERATION, INITIAL_MULTIPLIERS])
    for accelerations in (lean, symbolic):
        np.testing.assert_allclose(np.concatenate(accelerations(y0)), expected, rtol=1e-12, atol=1e-9)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        y = np.concatenate([rng.uniform(-np.pi, np.pi, 7), rng.uniform(-1500, 1500, 7)])
        a, b = np.concatenate(lean(y)), np.concatenate(symbolic(y))
        worst = max(worst, np.abs(a - b).max() / np.abs(b).max())
    assert worst < 1e-12, f"the two DAE transcriptions differ by {worst:.2e} (relative)"
    return worst


def dae_rhs(accelerations) -> Callable[[float, np.ndarray], np.ndarray]:
    """``y' = (q̇, q̈)`` of the index-1 system, for :func:`scipy.integrate.solve_ivp`."""
    return lambda t, y: np.concatenate([y[7:], accelerations(y)[0]])


# --------------------------------------------------------------------------- runs

@dataclass
class Run(LadderRun):
    """One integration: its side, solver and tolerances, and what repeated runs measured."""

    error: float = np.nan  # against the test set's reference
    own_error: float = np.nan  # against this run's tight reference (:func:`tight_reference`)

    @property
    def label(self) -> str:
        return f"{self.side} {self.method} {self.tolerances()}"


def angles_of(model: mbkron.Model, result: mbkron.SimulationResult) -> np.ndarray:
    """The test set's seven angles, rows per output time, from mbkron's joint variables."""
    columns = [model.joints.index(name) for name in JOINTS]
    return result.joint_variables[:, columns]


def run_ode(model: mbkron.Model, method: str, rtol: float, atol: float, t_eval=None):
    """``mbkron.simulate`` from the model file's initial state (the command line's defaults)."""
    q0 = model.default_q
    return mbkron.simulate(model, (0.0, T_END), q0, np.zeros_like(q0), method=method, rtol=rtol, atol=atol,
                           t_eval=t_eval)


def run_dae(rhs, method: str, rtol: float, atol, t_eval=None):
    """scipy's ``solve_ivp`` on the index-1 DAE's 14 states from the test set's initial state."""
    return solve_ivp(rhs, (0.0, T_END), initial_dae_state(), method=method, rtol=rtol, atol=atol, t_eval=t_eval)


def tight_reference(model: mbkron.Model, rhs, tol: float = 1e-13) -> tuple[np.ndarray, float]:
    """The seven angles at t = 0.03 by DOP853 at rtol = atol = ``tol`` on the DAE, and their distance from
    the ODE's run at the same tolerance: both sides converge to one solution, which is about 1.4e-9 from
    the test set's reference (that reference's own precision), so errors below that are measured
    against this one."""
    dae = run_dae(rhs, "DOP853", tol, tol).y[:7, -1]
    ode = angles_of(model, run_ode(model, "DOP853", tol, tol))[-1]
    return dae, float(np.abs(dae - ode).max())


def measure(run: Run, model: mbkron.Model, rhs, own_reference: np.ndarray) -> None:
    """One repeat of ``run``: CPU time appended; errors and counters recorded."""
    start = time.process_time()
    if run.side == "ODE":
        result = run_ode(model, run.method, run.rtol, run.atol)
        seconds = time.process_time() - start
        ok, angles = result.success, angles_of(model, result)[-1]
        run.steps, run.nfev, run.njev, run.nlu = result.n_steps, result.nfev, result.njev, result.nlu
    else:
        result = run_dae(rhs, run.method, run.rtol, run.atol)
        seconds = time.process_time() - start
        ok, angles = result.success, result.y[:7, -1]
        run.steps, run.nfev, run.njev, run.nlu = result.t.size - 1, result.nfev, result.njev, result.nlu
    run.seconds.append(seconds)
    run.error = float(np.abs(angles - REFERENCE).max()) if ok else np.nan
    run.own_error = float(np.abs(angles - own_reference).max()) if ok else np.nan


def ladder(tolerances, ode_methods, dae_methods) -> list[Run]:
    """The runs of the work–precision table: every method at rtol = atol = each tolerance, and the command
    line's defaults for the ODE's solvers. TRBDF2 (order 2) stops at 1e-9 and the implicit methods of the
    ODE at 1e-11: beyond, a run costs seconds and adds no accuracy (the table shows the trend)."""
    runs = [Run("ODE", m, *CLI_TOLERANCES) for m in ode_methods]
    runs += [Run("DAE", m, *CLI_TOLERANCES) for m in dae_methods if m == "Radau"]
    for tol in tolerances:
        runs += [Run("ODE", m, tol, tol) for m in ode_methods
                 if not (m == "TRBDF2" and tol < 1e-9 or m in ("Radau", "BDF") and tol < 1e-11)]
        runs += [Run("DAE", m, tol, tol) for m in dae_methods]
    return runs


def interleaved(runs: list[Run], model: mbkron.Model, rhs, rounds: int, own_reference: np.ndarray) -> None:
    """``rounds`` rounds, each running every run once in turn (a slow period of the machine hits all alike)."""
    for _ in range(rounds):
        for run in runs:
            measure(run, model, rhs, own_reference)


def print_table(runs: list[Run]) -> None:
    """Every run: error, median CPU time and the solver's counters."""
    print(f"\n# Work–precision, 0 ≤ t ≤ {T_END}: error = max over the 7 angles at t = {T_END} vs the IVP test set's "
          f"reference; CPU medians — {machine()}")
    print(f"{'side':>4} {'method':>7} {'rtol':>7} {'atol':>7} {'error':>9} {'vs own':>9} {'CPU ms':>8} {'steps':>6} "
          f"{'nfev':>6} {'njev':>5} {'nlu':>5} {'µs/nfev':>8}")
    for r in runs:
        print(f"{r.side:>4} {r.method:>7} {r.rtol:7.1e} {r.atol:7.1e} {r.error:9.2e} {r.own_error:9.2e} "
              f"{1e3 * r.cpu:8.1f} {r.steps:6d} "
              f"{r.nfev:6d} {r.njev:5d} {r.nlu:5d} {1e6 * r.cpu / max(r.nfev, 1):8.1f}")


def fastest(runs: list[Run], side: str, target: float, own: bool = False) -> Run | None:
    """The run of ``side`` with the least CPU time whose error (against the run's own reference if ``own``)
    is at most ``target``."""
    reached = [r for r in runs if r.side == side and (r.own_error if own else r.error) <= target]
    return min(reached, key=lambda r: r.cpu, default=None)


def print_equal_accuracy(runs: list[Run], own: bool = False) -> None:
    """For each error target, the fastest run of each side reaching it and the ratio ODE / DAE."""
    against = "this run's tight reference" if own else "the test set's reference"
    print(f"\n# At equal accuracy (error against {against}): the fastest run of each side — {machine()}")
    print(f"{'error ≤':>8} {'ODE (mbkron, model file)':>34} {'DAE (lean index-1, scipy)':>34} {'ODE / DAE':>9}")
    for target in TARGETS:
        ours, theirs = fastest(runs, "ODE", target, own), fastest(runs, "DAE", target, own)

        def cell(r: Run | None) -> str:
            if r is None:
                return "not reached"
            return f"{1e3 * r.cpu:7.1f} ms {r.method} {r.rtol:.1e} ({r.own_error if own else r.error:.1e})"

        ratio = f"{ours.cpu / theirs.cpu:9.2f}" if ours and theirs else f"{'—':>9}"
        print(f"{target:8.0e} {cell(ours):>34} {cell(theirs):>34} {ratio}")


def main_job(model: mbkron.Model, rhs, rounds: int) -> None:
    """The README's main job (the command line's default ``--method auto``, rtol 1e-6, atol 1e-8, 501 output
    times; and TRBDF2, its default before) against scipy's Radau on the lean DAE at the same tolerances and output
    times: interleaved CPU medians."""
    t_eval = np.linspace(0.0, T_END, 501)
    methods = ("auto", "TRBDF2")
    ours: dict[str, list[float]] = {m: [] for m in methods}
    theirs: list[float] = []
    results = {}
    for _ in range(rounds):
        for method in methods:
            start = time.process_time()
            results[method] = run_ode(model, method, *CLI_TOLERANCES, t_eval=t_eval)
            ours[method].append(time.process_time() - start)
        start = time.process_time()
        b = run_dae(rhs, "Radau", *CLI_TOLERANCES, t_eval=t_eval)
        theirs.append(time.process_time() - start)
    error_b = np.abs(b.y[:7, -1] - REFERENCE).max()
    other = statistics.median(theirs)
    print(f"\n# Main job: rtol 1e-6, atol 1e-8, 501 output times, {rounds} interleaved rounds, CPU medians — {machine()}")
    for method in methods:
        a, mine = results[method], statistics.median(ours[method])
        error_a = np.abs(angles_of(model, a)[-1] - REFERENCE).max()
        label = f"mbkron {method} ({a.settings['method']}), the model file's ODE:"
        print(f"{label:<52} {1e3 * mine:7.1f} ms, error {error_a:.2e}, {a.n_steps} steps, nfev {a.nfev}; "
              f"time ratio ODE / DAE {mine / other:.2f}, error ratio {error_a / error_b:.3g}")
    print(f"{'scipy Radau, the lean index-1 DAE:':<52} {1e3 * other:7.1f} ms, error {error_b:.2e}, {b.t.size} rows, "
          f"nfev {b.nfev}")


def local_errors(model: mbkron.Model, rtol: float = CLI_TOLERANCES[0], atol: float = CLI_TOLERANCES[1]) -> None:
    """Is TR-BDF2's error estimate faithful on the squeezer? Along the accepted steps of TR-BDF2 at ``rtol``, ``atol``
    (the same kernel as the main job's, calling the model's Python route back: :class:`mbkron.integrate.TRBDF2`), the
    filtered Hosea–Shampine estimate ``(I − d h J)⁻¹ ((γ−1) z₁ + z₂ − γ z₃)/3`` against the true local error (one step
    from the same state by DOP853 at rtol = atol = 1e-13, minus the step's result), both in the solver's RMS norm
    relative to ``atol + rtol max(|y_n|, |y_γ|, |y_n+1|)``; and the global error's growth against a tight run."""
    from mbkron.integrate import TRBDF2
    from mbkron.numerics.trbdf2 import D, ERROR_WEIGHTS, UNFILTERED_WEIGHT

    workspace = model.workspace()

    def f(t, y):
        return np.concatenate([y[1:], model.forward_dynamics(y[:1], y[1:], workspace=workspace)])

    y0 = np.array([model.default_q[0], 0.0])
    tight = solve_ivp(f, (0.0, T_END), y0, method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True)
    solver = TRBDF2(f, 0.0, y0, T_END, rtol=rtol, atol=atol)
    rows = []
    while solver.status == "running":
        solver.step()
        t0, t1, h = solver.t_old, solver.t, solver.t - solver.t_old
        reference = solve_ivp(f, (t0, t1), solver.y_old, method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
        true = solver.y - reference
        w_old, w_mid, w_new = ERROR_WEIGHTS  # the solver's own weights, (γ − 1)/3, 1/3, −γ/3
        estimate = h * (w_old * solver.yp_old + w_mid * solver.yp_mid + w_new * solver.yp)
        filtered = np.linalg.solve(np.eye(2) - D * h * solver.J, estimate)
        scale = atol + rtol * np.maximum(np.maximum(np.abs(solver.y_old), np.abs(solver.y_mid)), np.abs(solver.y))
        norm = max(np.sqrt(np.mean((filtered / scale) ** 2)), np.sqrt(np.mean((estimate / scale) ** 2)) * UNFILTERED_WEIGHT)
        rows.append((t1, norm, np.sqrt(np.mean((true / scale) ** 2)), *np.abs(true / scale),
                     *(solver.y - tight.sol(t1)), *np.abs(true)))
    rows = np.array(rows)
    ratio = rows[:, 2] / rows[:, 1]
    print(f"\n# TR-BDF2's local error estimate at rtol {rtol:g}, atol {atol:g}: {len(rows)} accepted steps (Python "
          f"route) — {machine()}")
    print(f"estimate (the kernel's norm): median {np.median(rows[:, 1]):.3f}, max {rows[:, 1].max():.3f}; true local "
          f"error, same norm: median {np.median(rows[:, 2]):.3f}, max {rows[:, 2].max():.3f}")
    print(f"true / estimate: median {np.median(ratio):.3f}, 10–90 % {np.percentile(ratio, 10):.3f}–"
          f"{np.percentile(ratio, 90):.3f}, min {ratio.min():.3f}, max {ratio.max():.3f}")
    print(f"true local error / scale, median: β {np.median(rows[:, 3]):.3f}, β̇ {np.median(rows[:, 4]):.3f} (the norm's "
          f"larger part)")
    print(f"sum of |true local errors| in β {rows[:, 7].sum():.2e}, in β̇ {rows[:, 8].sum():.2e}; global error at "
          f"t = {T_END}: β {rows[-1, 5]:.2e}, β̇ {rows[-1, 6]:.2e}")
    for fraction in (0.25, 0.5, 0.75, 1.0):
        k = min(len(rows) - 1, int(fraction * len(rows)) - 1)
        print(f"  after {k + 1:4d} steps, t = {rows[k, 0]:.4f}: global error β {rows[k, 5]:9.2e}, β̇ {rows[k, 6]:9.2e}")


def same_trajectory(model: mbkron.Model, rhs, tol: float = 1e-12) -> None:
    """The seven angles of the two sides' DOP853 runs at ``tol`` at a few times, and their differences."""
    times = np.array([0.005, 0.01, 0.02, 0.03])
    ode = angles_of(model, run_ode(model, "DOP853", tol, tol, t_eval=times))
    dae = run_dae(rhs, "DOP853", tol, tol, t_eval=times).y[:7].T
    print(f"\n# The same trajectory: DOP853 at rtol = atol = {tol:.0e} on both sides, the 7 angles")
    for t, a, b in zip(times, ode, dae):
        print(f"t = {t:5.3f}  ODE {np.array2string(a, precision=6, max_line_width=200)}  "
              f"max |ODE − DAE| {np.abs(a - b).max():.1e}")
    print(f"at t = {T_END}: ODE − reference {np.abs(ode[-1] - REFERENCE).max():.1e}, DAE − reference "
          f"{np.abs(dae[-1] - REFERENCE).max():.1e}")


# --------------------------------------------------------------------------- costs per evaluation

def cpu_per_call(function: Callable[[], object], calls: int) -> float:
    """CPU seconds per call of ``function`` over ``calls`` calls."""
    start = time.process_time()
    for _ in range(calls):
        function()
    return (time.process_time() - start) / calls


def evaluation_costs(model: mbkron.Model, lean, symbolic, rounds: int, calls: int = 2000) -> dict[str, float]:
    """CPU µs per right-hand-side evaluation, interleaved medians: both DAE transcriptions at the test set's
    initial state, and mbkron's ``Model.forward_dynamics`` (with a workspace, the route of scipy's solvers)
    and its compiled state kernel (one compiled call, the route of TRBDF2's steps) at the model's
    initial state, where the constraint solve starts from its own solution (no continuation walk)."""
    y = initial_dae_state()
    q, qd = model.default_q, np.zeros(model.nq)
    workspace = model.workspace()
    kernel = model.state_kernel(model.workspace())
    state = np.concatenate([q, qd])
    candidates = {
        "lean index-1 DAE (this script)": lambda: lean(y),
        "symbolic index-1 DAE (earlier script)": lambda: symbolic(y),
        "mbkron Model.forward_dynamics": lambda: model.forward_dynamics(q, qd, workspace=workspace),
        "mbkron state kernel (compiled)": lambda: kernel.accelerations(state),
    }
    for function in candidates.values():
        function()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            samples[name].append(cpu_per_call(function, calls))
    return {name: 1e6 * statistics.median(values) for name, values in samples.items()}


# --------------------------------------------------------------------------- diagnosis

def model_variant(directory: Path, name: str, solver: str = "lu", **settings: float) -> mbkron.Model:
    """The model file with another constraint solver and settings (``[[constraints]] settings``), loaded
    as a user would load such a file."""
    text = MODEL_FILE.read_text()
    entries = ", ".join(f"{key} = {value!r}" for key, value in settings.items())
    replacement = f'solver = "{solver}"' + (f"\nsettings = {{ {entries} }}" if settings else "")
    assert text.count('solver = "lu"') == 1
    path = directory / f"{name}.toml"
    path.write_text(text.replace('solver = "lu"', replacement))
    return mbkron.load_model(path)


def walk_costs(model: mbkron.Model, spacings=(0.0, 0.01, 0.05, 0.2, 0.5, 1.0, 2.0), calls: int = 400) -> None:
    """CPU µs of ``Model.forward_dynamics`` per call when successive calls are ``Δβ`` apart: the constraint
    solve continues from the previous solution, in steps of at most ``max_step`` (0.2 rad) of predicted
    change."""
    print(f"\n# forward_dynamics per call vs the distance Δβ between successive calls — {machine()}")
    qd = np.array([500.0])
    for spacing in spacings:
        workspace = model.workspace()
        betas = model.default_q[0] + spacing * np.arange(calls)
        start = time.process_time()
        for beta in betas:
            model.forward_dynamics(np.array([beta]), qd, workspace=workspace)
        print(f"Δβ = {spacing:4.2f} rad: {1e6 * (time.process_time() - start) / calls:7.1f} µs")


def stiffness(model: mbkron.Model, rhs, runs: list[Run]) -> None:
    """Eigenvalues of both sides' Jacobians (central differences) along the trajectory, against the steps
    the explicit methods take."""
    dense = run_ode(model, "DOP853", 1e-10, 1e-10, t_eval=np.linspace(0, T_END, 61))
    workspace = model.workspace()

    def ode_jacobian(y: np.ndarray) -> np.ndarray:
        columns = []
        for k, h in enumerate((1e-7, 1e-7 * max(1.0, abs(y[1])))):
            step = np.zeros(2)
            step[k] = h
            ends = [model.forward_dynamics(z[:1], z[1:], workspace=workspace)[0] for z in (y + step, y - step)]
            columns.append((ends[0] - ends[1]) / (2 * h))
        return np.array([[0.0, 1.0], columns])

    def dae_jacobian(y: np.ndarray) -> np.ndarray:
        columns = []
        for k in range(14):
            step = np.zeros(14)
            step[k] = 1e-7 * max(1.0, abs(y[k]))
            columns.append((rhs(0.0, y + step) - rhs(0.0, y - step)) / (2 * step[k]))
        return np.array(columns).T

    largest = {"ODE": (0.0, 0.0), "DAE": (0.0, 0.0)}
    dae_states = run_dae(rhs, "DOP853", 1e-10, 1e-10, t_eval=dense.t).y.T
    for t, q, qd, y in zip(dense.t, dense.q, dense.qd, dae_states):
        for side, J in (("ODE", ode_jacobian(np.concatenate([q, qd]))), ("DAE", dae_jacobian(y))):
            size = np.abs(np.linalg.eigvals(J)).max()
            if size > largest[side][0]:
                largest[side] = (size, t)
    print("\n# Stiffness: largest |eigenvalue| of each side's Jacobian along the trajectory (61 times)")
    for side, (size, t) in largest.items():
        print(f"{side}: |λ| ≤ {size:.3g} 1/s (at t = {t:.4f}); DOP853 is stable for |λ| h ≲ 4–6, h ≲ {5 / size:.1e} s")
    for r in runs:
        if r.method in ("DOP853", "RK45") and r.rtol == r.atol:
            h = T_END / max(r.steps, 1)
            print(f"{r.side} {r.method} {r.rtol:.0e}: mean accepted step {h:.2e} s, |λ| h = "
                  f"{largest[r.side][0] * h:.2f}, nfev per accepted step {r.nfev / max(r.steps, 1):.1f}")


def diagnose(model: mbkron.Model, lean, runs: list[Run], rounds: int) -> None:
    """Where the ODE's time and error go: walks of the constraint solve, its settings, stiffness, error
    control."""
    rhs = dae_rhs(lean)
    local_errors(model)
    walk_costs(model)
    stiffness(model, rhs, runs)
    with tempfile.TemporaryDirectory() as directory:
        variants = {
            "file (lu, tolerance 1e-9, max_step 0.2)": model,
            "tolerance 1e-6": model_variant(Path(directory), "tol6", tolerance=1e-6),
            "tolerance 1e-13": model_variant(Path(directory), "tol13", tolerance=1e-13),
            "max_step 1.0": model_variant(Path(directory), "step1", max_step=1.0),
            "max_step 3.0": model_variant(Path(directory), "step3", max_step=3.0, max_newton_step=3.0,
                                          jump_ratio=5.0),
            "premodel (the dissertation)": model_variant(Path(directory), "premodel", "premodel",
                                                         step=2 * math.pi / 1024),
        }
        checks = [Run("ODE", m, tol, tol) for m in ("DOP853", "RK45") for tol in (1e-6, 1e-8, 1e-10)]
        checks += [Run("ODE", "Radau", tol, tol) for tol in (1e-6, 1e-8)]
        checks += [Run("ODE", "TRBDF2", *CLI_TOLERANCES)]
        table = [(name, Run(r.side, r.method, r.rtol, r.atol)) for r in checks for name in variants]
        own_reference = tight_reference(model, rhs)[0]
        for _ in range(rounds):
            for name, run in table:
                measure(run, variants[name], rhs, own_reference)
    print(f"\n# The model file's constraint settings (model variants loaded from files) — {machine()}")
    print(f"{'variant':>40} {'method':>7} {'tol':>10} {'error':>9} {'CPU ms':>8} {'steps':>6} {'nfev':>6} "
          f"{'µs/nfev':>8}")
    for name, r in table:
        tol = f"{r.rtol:.0e}" if r.rtol == r.atol else f"{r.rtol:.0e}/{r.atol:.0e}"
        print(f"{name:>40} {r.method:>7} {tol:>10} {r.error:9.2e} {1e3 * r.cpu:8.1f} {r.steps:6d} {r.nfev:6d} "
              f"{1e6 * r.cpu / r.nfev:8.1f}")
    error_control(model, rhs)


def error_control(model: mbkron.Model, rhs) -> None:
    """The DAE's error norm covers 14 states, the ODE's 2. Run the DAE with the ODE's norm (tolerances on
    β, β̇ only: atol 1e6 on the others, and the RMS norm rescaled from 2 to 14 components) and compare
    steps and errors with the ODE's DOP853 at the same tolerance."""
    print("\n# Error control: DOP853, ODE (norm over β, β̇) vs DAE (norm over 14 states, or over β, β̇ only)")
    for tol in (1e-6, 1e-8, 1e-10):
        ode = run_ode(model, "DOP853", tol, tol)
        full = run_dae(rhs, "DOP853", tol, tol)
        atol = np.full(14, 1e6)
        atol[[0, 7]] = tol / math.sqrt(7)  # RMS over 14 with 12 silent components = RMS over 2 / √7
        only = solve_ivp(rhs, (0.0, T_END), initial_dae_state(), method="DOP853", rtol=tol / math.sqrt(7), atol=atol)
        rows = (("ODE", ode.n_steps, angles_of(model, ode)[-1]), ("DAE 14", full.t.size - 1, full.y[:7, -1]),
                ("DAE β,β̇", only.t.size - 1, only.y[:7, -1]))
        print(f"tol {tol:.0e}: " + "; ".join(
            f"{name} {steps} steps, error {np.abs(a - REFERENCE).max():.2e} (β {abs(a[0] - REFERENCE[0]):.2e})"
            for name, steps, a in rows))


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="two tolerances, DOP853 and the main job's solvers, one round (a smoke test)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of every run (default 5)")
    parser.add_argument("--main-job", action="store_true", help="only the checks and the main job")
    parser.add_argument("--diagnose", action="store_true", help="also where the ODE's time and error go")
    parser.add_argument("--local-errors", action="store_true",
                        help="only TR-BDF2's local error estimate against the true local error (in --diagnose too)")
    parser.add_argument("--per-decade", type=int, default=PER_DECADE,
                        help=f"tolerances per decade of the ladder, both sides alike (default {PER_DECADE})")
    parser.add_argument("--methods", default=None,
                        help="comma-separated solvers of the ladder for both sides (default: every solver of each "
                             "side; a side runs those it offers), e.g. DOP853,LSODA for a finer ladder in less time")
    args = parser.parse_args(argv)
    if args.per_decade < 1:
        parser.error(f"--per-decade must be at least 1, got {args.per_decade}")
    ode_methods, dae_methods = ODE_METHODS, DAE_METHODS
    if args.methods is not None:
        chosen = [name.strip() for name in args.methods.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in ODE_METHODS + DAE_METHODS]
        if unknown or not chosen:
            parser.error(f"--methods: unknown solver(s) {', '.join(unknown) or '(none given)'}; choose from "
                         f"{', '.join(ODE_METHODS)}")
        ode_methods = tuple(m for m in ODE_METHODS if m in chosen)
        dae_methods = tuple(m for m in DAE_METHODS if m in chosen)
    rounds = 1 if args.quick else args.rounds
    model = mbkron.load_model(MODEL_FILE)
    if args.local_errors:
        local_errors(model)
        return
    lean, symbolic = lean_index1(), symbolic_index1()
    worst = check_transcriptions(lean, symbolic)
    rhs = dae_rhs(lean)
    run_ode(model, "TRBDF2", 1e-3, 1e-3)  # compiles (or loads) the kernels: not timed
    run_ode(model, "DOP853", 1e-3, 1e-3)
    run_ode(model, "Radau", 1e-3, 1e-3)
    print(f"# Andrews' squeezer: {MODEL_FILE.relative_to(ROOT)} (mbkron {mbkron.__version__}) vs the lean index-1 "
          f"DAE — {machine()}")
    print(f"both DAE transcriptions give the test set's initial q'' and multipliers; they differ by at most "
          f"{worst:.1e} (relative) at 200 random states")
    costs = evaluation_costs(model, lean, symbolic, rounds=max(rounds, 3), calls=300 if args.quick else 2000)
    print(f"CPU per right-hand-side evaluation (medians of {max(rounds, 3)} interleaved rounds) — {machine()}")
    for name, micro in costs.items():
        print(f"{name:>40}: {micro:7.1f} µs")
    print(f"{'symbolic / lean':>40}: {costs['symbolic index-1 DAE (earlier script)'] / costs['lean index-1 DAE (this script)']:7.2f}")
    main_job(model, rhs, rounds=3 if args.quick else max(rounds, 5))
    if args.main_job:
        return
    if args.quick:
        runs = ladder((1e-5, 1e-8), ("TRBDF2", "DOP853"), ("DOP853", "Radau"))
    else:
        runs = ladder(tolerances(args.per_decade), ode_methods, dae_methods)
    own_reference, spread = tight_reference(model, rhs)
    interleaved(runs, model, rhs, rounds, own_reference)
    print_table(runs)
    print_equal_accuracy(runs)
    print(f"\nthis run's tight reference: DOP853 at rtol = atol = 1e-13 on the DAE; the ODE's run at 1e-13 is "
          f"{spread:.1e} from it, the test set's reference {np.abs(own_reference - REFERENCE).max():.1e}")
    print_equal_accuracy(runs, own=True)
    same_trajectory(model, rhs, 1e-8 if args.quick else 1e-12)
    if args.diagnose:
        diagnose(model, lean, runs, rounds=min(rounds, 3))
    print(f"\n# end — {machine()}")


if __name__ == "__main__":
    main()
