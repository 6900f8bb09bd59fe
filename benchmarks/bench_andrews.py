"""Work–precision of Andrews' squeezer: mbkron's ODE against a Shabana-style DAE, over 0 ≤ t ≤ 0.03.

Run from the repository root: ``python benchmarks/bench_andrews.py [--quick]``. For a ladder of
tolerances it integrates

- mbkron's ODE in the one coordinate β (joint variables by Fourier pre-modelling, as the
  dissertation does, and by the exact LU solver) with TRBDF2, RKF45, and scipy's DOP853 and Radau;
- the DAE reference of ``validation.dae`` (21 absolute coordinates, 20 constraints, index-1 form
  with coordinate projection at the output times) with DOP853,
- the IVP test set's own formulation (seven angles, six multipliers) in index-1 form,
  ``[M Gᵀ; G 0][q̈; λ] = [f; −g_qq(q̇, q̇)]``, written from the test set's definitions (its initial
  accelerations and multipliers are checked first) and integrated with scipy's DOP853 and Radau,

and prints the error at t = 0.03 against the IVP test set's reference solution (max over the seven
angles) and the wall time, all measured in this run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import sympy
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402
from mbkron.expressions import parse_expression  # noqa: E402
from mbkron.examples.andrews import EQUATIONS, INITIAL, PARAMETERS as P, andrews_squeezer  # noqa: E402
from validation.andrews_reference import reference_mass_matrix  # noqa: E402
from mbkron.integrate.simulate import simulate  # noqa: E402
from validation import dae  # noqa: E402

ORDER = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
REFERENCE = np.array([0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
                      0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1])
T_END = 0.03
REPEATS = 3


def mbkron_error(model, method: str, tol: float) -> tuple[float, float, int]:
    start = time.perf_counter()
    run = simulate(model, (0.0, T_END), [INITIAL["beta"]], [0.0], method=method, rtol=tol, atol=tol)
    seconds = time.perf_counter() - start
    if not run.success:
        return np.nan, seconds, run.nfev
    f = dict(zip(model.joints, run.joint_variables[-1]))
    angles = np.array([f["crank"]] + [f[name] for name in ORDER[1:]])
    return float(np.abs(angles - REFERENCE).max()), seconds, run.nfev


def dae_system() -> tuple[dae.PlanarSystem, np.ndarray]:
    """Andrews' squeezer in absolute coordinates, body frames as in mbkron.examples.andrews."""
    s = dae.PlanarSystem(gravity=(0.0, 0.0))
    body = {name: s.add_body(dae.Body(name, mass=P[m], inertia=P[i], com=com)) for name, m, i, com in (
        ("crank", "m1", "i1", (P["ra"], 0)), ("coupler", "m2", "i2", (-P["da"], 0)),
        ("body3", "m3", "i3", (P["sa"], -P["sb"])), ("body4", "m4", "i4", (0, -(P["e"] - P["ea"]))),
        ("body5", "m5", "i5", (P["ta"], P["tb"])), ("body6", "m6", "i6", (P["zf"] - P["fa"], 0)),
        ("body7", "m7", "i7", (P["ua"], P["ub"])))}
    joints = [
        ("ground", (0, 0), "crank", (0, 0)), ("crank", (P["rr"], 0), "coupler", (0, 0)),
        ("ground", (P["xb"], P["yb"]), "body3", (0, 0)), ("ground", (P["xa"], P["ya"]), "body5", (0, 0)),
        ("body5", (P["zt"], 0), "body4", (0, 0)), ("ground", (P["xa"], P["ya"]), "body7", (0, 0)),
        ("body7", (0, -P["u"]), "body6", (0, 0)), ("coupler", (-P["d"], 0), "body3", (0, -P["ss"])),
        ("coupler", (-P["d"], 0), "body4", (0, -P["e"])), ("coupler", (-P["d"], 0), "body6", (P["zf"], 0)),
    ]
    for a, pa, b, pb in joints:
        s.add_constraint(dae.Revolute(dae.GROUND if a == "ground" else body[a], pa, body[b], pb))
    s.add_load(dae.SpringDamper(body["body3"], (P["sd"], -P["sc"]), dae.GROUND, (P["xc"], P["yc"]), P["c0"], 0.0,
                                P["l0"]))
    s.add_load(dae.BodyTorque(body["crank"], P["mom"]))
    b, th, g, ph, de, om, ep = (INITIAL[n] for n in ORDER)
    A = np.array([P["xa"], P["ya"]])
    poses = [  # (x, y, φ) of crank, coupler, body3, body4, body5, body6, body7
        (0.0, 0.0, b), (P["rr"] * np.cos(b), P["rr"] * np.sin(b), b + th), (P["xb"], P["yb"], g),
        (*(A + P["zt"] * np.array([np.cos(de), np.sin(de)])), de + ph), (*A, de),
        (*(A + P["u"] * np.array([np.sin(ep), -np.cos(ep)])), ep + om), (*A, ep),
    ]
    return s, np.concatenate(poses)


def dae_error(tol: float) -> tuple[float, float, int]:
    system, q0 = dae_system()
    start = time.perf_counter()
    run = dae.simulate(system, q0, np.zeros_like(q0), np.linspace(0.0, T_END, 31), method="DOP853", rtol=tol,
                       atol=tol, projection=True)
    seconds = time.perf_counter() - start
    q = run.q[-1]
    phi = q[2::3]  # crank, coupler, body3, body4, body5, body6, body7
    angles = np.array([phi[0], phi[1] - phi[0], phi[2], phi[3] - phi[4], phi[4], phi[5] - phi[6], phi[6]])
    error = np.abs(np.angle(np.exp(1j * (angles - REFERENCE)))).max()
    return float(error), seconds, int(run.info.get("nfev", 0))


def test_set_index1():
    """The test set's right-hand side ``y' = (q̇, q̈)`` with ``q̈, λ`` from the index-1 system."""
    names = ORDER
    symbols = {n: sympy.Symbol(n) for n in names}
    constants = {k: P[k] for k in ("rr", "d", "ss", "e", "zt", "zf", "u", "xa", "ya", "xb", "yb")}
    g = sympy.Matrix([parse_expression(eq, {**symbols, **{k: sympy.Symbol(k) for k in constants}}).subs(constants)
                      for eq in EQUATIONS])
    q = sympy.Matrix([symbols[n] for n in names])
    v = sympy.Matrix(sympy.symbols("v0:7"))
    G = g.jacobian(q)
    curvature = (G * v).jacobian(q) * v  # g_qq(v, v)
    G_fn, curvature_fn = sympy.lambdify([q], G), sympy.lambdify([q, v], curvature)
    p = P

    def mass_and_forces(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        be, th, ga, ph, de, om, ep = y[:7]
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
        return M, f

    def accelerations(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        M, f = mass_and_forces(y)
        G_value = np.array(G_fn(y[:7]), dtype=float)
        system = np.block([[M, G_value.T], [G_value, np.zeros((6, 6))]])
        rhs = np.concatenate([f, -np.array(curvature_fn(y[:7], y[7:]), dtype=float).ravel()])
        solution = np.linalg.solve(system, rhs)
        return solution[:7], solution[7:]

    return accelerations


def test_set_error(accelerations, method: str, tol: float) -> tuple[float, float, int]:
    y0 = np.concatenate([[INITIAL[n] for n in ORDER], np.zeros(7)])
    start = time.perf_counter()
    run = solve_ivp(lambda t, y: np.concatenate([y[7:], accelerations(y)[0]]), (0.0, T_END), y0, method=method,
                    rtol=tol, atol=tol)
    seconds = time.perf_counter() - start
    return float(np.abs(run.y[:7, -1] - REFERENCE).max()), seconds, run.nfev


def main_job(rounds: int = 5) -> None:
    """The README's main job (models/andrews_squeezer.toml, TRBDF2, rtol 1e-6, atol 1e-8, 501 output times)
    against scipy's Radau on the test set's index-1 DAE at the same tolerances: interleaved, medians."""
    model = mbkron.load_model(Path(__file__).resolve().parents[1] / "models" / "andrews_squeezer.toml")
    t_eval = np.linspace(0.0, T_END, 501)
    index1 = test_set_index1()
    y0 = np.concatenate([[INITIAL[n] for n in ORDER], np.zeros(7)])

    def ours():
        start = time.perf_counter()
        run = mbkron.simulate(model, (0.0, T_END), model.default_q, [0.0], method="TRBDF2", rtol=1e-6, atol=1e-8,
                              t_eval=t_eval)
        seconds = time.perf_counter() - start
        f = dict(zip(model.joints, run.joint_variables[-1]))
        return seconds, np.abs(np.array([f["crank"]] + [f[n] for n in ORDER[1:]]) - REFERENCE).max(), run.nfev

    def radau():
        start = time.perf_counter()
        run = solve_ivp(lambda t, y: np.concatenate([y[7:], index1(y)[0]]), (0.0, T_END), y0, method="Radau",
                        rtol=1e-6, atol=1e-8)
        return time.perf_counter() - start, np.abs(run.y[:7, -1] - REFERENCE).max(), run.nfev

    ours()  # compiles the kernels on a first run: not timed
    results = [(ours(), radau()) for _ in range(rounds)]
    mine, theirs = (np.median([r[k][0] for r in results]) for k in (0, 1))
    print(f"# main job, Andrews 0–0.03 s, rtol 1e-6, atol 1e-8 — {machine()}")
    print(f"mbkron simulate (TRBDF2, the ODE in β): {mine:.3f} s, error {results[0][0][1]:.2e}, nfev {results[0][0][2]}")
    print(f"scipy Radau, test-set index-1 DAE:      {theirs:.3f} s, error {results[0][1][1]:.2e}, nfev {results[0][1][2]}")
    print(f"ratio mbkron / Radau: {mine / theirs:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two tolerances only")
    parser.add_argument("--main-job", action="store_true", help="only the README's main job against Radau")
    args = parser.parse_args(argv)
    if args.main_job:
        main_job()
        return
    tolerances = (1e-5, 1e-8) if args.quick else tuple(10.0 ** -k for k in range(4, 13))
    models = {"premodel": andrews_squeezer("premodel", "expressions", step=2 * np.pi / 1024),
              "lu": andrews_squeezer("lu", "expressions")}
    index1 = test_set_index1()
    w0, multipliers0 = index1(np.concatenate([[INITIAL[n] for n in ORDER], np.zeros(7)]))
    np.testing.assert_allclose(w0[:2], [14222.4439199541138705911625887, -10666.8329399655854029433719415], rtol=1e-10)
    np.testing.assert_allclose(multipliers0[:2], [98.56687039624108960576549821700, -6.12268834425566265503114393122],
                               rtol=1e-9)  # the test set's consistent initial values
    for model in models.values():  # a first run compiles the kernels (when numba is installed): not timed
        mbkron_error(model, "TRBDF2", 1e-2)
    print(f"# Andrews' squeezer, 0 ≤ t ≤ 0.03, error vs the IVP test set — {machine()}")
    print(f"{'formulation':>28} {'method':>8} {'tol':>8} {'max error':>10} {'seconds':>8} {'nfev':>7}")
    rows = []
    def best(run, *args):  # the least disturbed of REPEATS timings of the same run
        results = [run(*args) for _ in range(REPEATS)]
        return results[0][0], min(r[1] for r in results), results[0][2]

    for tol in tolerances:
        for joint_variables, model in models.items():
            for method in ("TRBDF2", "RKF45", "DOP853", "Radau"):
                if method in ("TRBDF2", "Radau") and (joint_variables == "lu" and tol < 1e-6 or tol < 1e-10) or (
                        method == "TRBDF2" and tol < 1e-8):
                    continue  # slow and adds nothing (the same ODE as the premodel row; 2nd order at tight tol)
                error, seconds, nfev = best(mbkron_error, model, method, tol)
                rows.append((f"mbkron ODE ({joint_variables})", method, tol, error, seconds, nfev))
                print(f"{rows[-1][0]:>28} {method:>8} {tol:8.0e} {error:10.2e} {seconds:8.2f} {nfev:7d}")
        error, seconds, nfev = best(dae_error, tol)
        rows.append(("DAE reference (projection)", "DOP853", tol, error, seconds, nfev))
        print(f"{rows[-1][0]:>28} {'DOP853':>8} {tol:8.0e} {error:10.2e} {seconds:8.2f} {nfev:7d}")
        for method in ("DOP853", "Radau") if tol >= 1e-10 else ("DOP853",):
            error, seconds, nfev = best(test_set_error, index1, method, tol)
            rows.append(("test-set DAE, index 1", method, tol, error, seconds, nfev))
            print(f"{rows[-1][0]:>28} {method:>8} {tol:8.0e} {error:10.2e} {seconds:8.2f} {nfev:7d}")
    work_precision_summary(rows)


def work_precision_summary(rows: list[tuple]) -> None:
    """For each accuracy, the fastest run of each formulation that reached it, and the ratios."""
    families = ["mbkron ODE (premodel)", "mbkron ODE (lu)", "DAE reference (projection)", "test-set DAE, index 1"]
    print("\n# Fastest run reaching each accuracy (seconds; any method and tolerance of the formulation)")
    print(f"{'max error ≤':>12} " + " ".join(f"{name:>28}" for name in families) + f" {'DAE ref / mbkron':>17}")
    for accuracy in (1e-4, 1e-6, 1e-7, 1e-8, 3e-9):
        best = {name: min((r[4] for r in rows if r[0] == name and r[3] <= accuracy), default=np.inf)
                for name in families}
        fastest_mbkron = min(best[families[0]], best[families[1]])
        print(f"{accuracy:12.0e} " + " ".join(f"{best[name]:28.3f}" for name in families)
              + f" {best[families[2]] / fastest_mbkron:17.1f}")


if __name__ == "__main__":
    main()
