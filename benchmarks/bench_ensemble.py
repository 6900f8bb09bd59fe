"""Ensembles: K trajectories of a random 3-D 7-body chain, mbkron against sequential ``solve_ivp`` + ``pinocchio.aba``.

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_ensemble [--trajectories K]``.
0 ≤ t ≤ 1 s, DOP853, rtol = atol = 1e-8, 11 output times. The baseline integrates each trajectory
alone with scipy's ``solve_ivp`` (DOP853) and ``pinocchio.aba`` as its right-hand side (skipped when
Pinocchio is absent: then mbkron's own ``forward_dynamics`` is the right-hand side). mbkron runs the
whole ensemble with :func:`mbkron.simulate_ensemble`, on one thread and on all. Each trajectory of
the ensemble is compared with its single run (the difference must be within the tolerance).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python benchmarks/<file>.py` from anywhere

import mbkron  # noqa: E402
from benchmarks.bench_forward_dynamics import random_chain  # noqa: E402
from benchmarks.common import machine  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=1000)
    parser.add_argument("--bodies", type=int, default=7)
    args = parser.parse_args(argv)
    n, K = args.bodies, args.trajectories
    model, pin_model = random_chain(n)
    rng = np.random.default_rng(2)
    q0, qd0 = rng.uniform(-1, 1, size=(2, K, n))
    t_eval = np.linspace(0.0, 1.0, 11)
    options = dict(method="DOP853", rtol=1e-8, atol=1e-8)
    if pin_model is not None:
        import pinocchio as pin
        data, zero = pin_model.createData(), np.zeros(n)
        baseline_name = "solve_ivp + pinocchio.aba, one trajectory at a time"

        def rhs(t, y):
            return np.concatenate([y[n:], pin.aba(pin_model, data, y[:n], y[n:], zero)])
    else:
        baseline_name = "solve_ivp + mbkron forward_dynamics, one trajectory at a time"

        def rhs(t, y):
            return np.concatenate([y[n:], model.forward_dynamics(y[:n], y[n:])])
    mbkron.simulate_ensemble(model, (0.0, 1.0), q0[:4], qd0[:4], t_eval, **options)  # compile, not timed
    start = time.perf_counter()
    singles = [solve_ivp(rhs, (0.0, 1.0), np.concatenate([q0[k], qd0[k]]), t_eval=t_eval, **options) for k in range(K)]
    baseline = time.perf_counter() - start
    timings = {}
    try:
        import numba
        threads = numba.get_num_threads()
    except ImportError:
        numba, threads = None, 1
    for count in sorted({1, threads}):
        if numba is not None:
            numba.set_num_threads(count)
        start = time.perf_counter()
        result = mbkron.simulate_ensemble(model, (0.0, 1.0), q0, qd0, t_eval, **options)
        timings[count] = time.perf_counter() - start
    difference = max(max(np.abs(result.q[k] - s.y[:n].T).max(), np.abs(result.qd[k] - s.y[n:].T).max())
                     for k, s in enumerate(singles))
    scale = max(np.abs(s.y).max() for s in singles)
    print(f"# ensemble of {K} trajectories, random 3-D {n}-body chain, 0–1 s, DOP853, rtol = atol = 1e-8 — {machine()}")
    print(f"{baseline_name}: {baseline:.2f} s ({sum(s.nfev for s in singles)} evaluations)")
    for count, seconds in timings.items():
        print(f"mbkron.simulate_ensemble, {count} thread(s): {seconds:.2f} s ({result.nfev.sum()} evaluations); "
              f"baseline / mbkron = {baseline / seconds:.1f}")
    print(f"largest difference ensemble vs single runs: {difference:.2e} (state scale {scale:.2g}); "
          f"all succeeded: {result.success and all(s.success for s in singles)}")


if __name__ == "__main__":
    main()
