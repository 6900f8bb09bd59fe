"""Cost and accuracy of the constraint solvers on an Andrews-sized system (Section 3-3).

Run ``python -m benchmarks.bench_constraints`` from the repository root. The system is Andrews'
squeezer's joint-variable map (:func:`mbkron.examples.andrews.andrews_squeezer`): seven
joint variables, ``n_q = 1``, ``β = q`` explicit and six solved. Each state is one call
``provider.evaluate(q, 2)`` as an ODE right-hand side makes it, walking ``q`` in steps of
1e-3 rad, so every state includes the Newton position update from the nearby previous solution.
With numba installed the LU and projection providers take their compiled fast path
(:mod:`mbkron.jointvars.compiled`, built here before timing); the rows "given f" time the Python
derivative routes, which the fast path replaces.

The machine may be shared, so every cost is also given as a ratio to a baseline measured in the
same run: ``numpy.linalg.solve`` of a 6×6 system with one right-hand side. Each figure is the
best of several repeats (the least disturbed by other processes).
"""

from __future__ import annotations

import os
import time

import numpy as np

from mbkron.jointvars.solvers import implicit_derivatives
from mbkron.examples.andrews import INITIAL, andrews_squeezer

REPEATS = 5
STATES = 2000
STEP = 1e-3


def best_time(function, count: int, repeats: int = REPEATS) -> float:
    """Best over ``repeats`` of the mean time per call of ``function(i)``, i = 0..count-1, in µs."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(count):
            function(i)
        best = min(best, (time.perf_counter() - start) / count * 1e6)
    return best


def baseline() -> float:
    rng = np.random.default_rng(0)
    A, b = rng.normal(size=(6, 6)) + 6 * np.eye(6), rng.normal(size=6)
    return best_time(lambda i: np.linalg.solve(A, b), 20000)


def per_state(provider, q: np.ndarray, order: int) -> float:
    """Mean cost of ``provider.evaluate`` per state along the path ``q`` (restarted each repeat)."""
    best = np.inf
    for _ in range(REPEATS):
        provider.evaluate(q[0], order)  # start of the path
        start = time.perf_counter()
        for qi in q:
            provider.evaluate(qi, order)
        best = min(best, (time.perf_counter() - start) / len(q) * 1e6)
    return best


def main() -> None:
    beta0 = INITIAL["beta"]
    path = (beta0 + STEP * np.arange(STATES))[:, None]
    models = {
        "lu": andrews_squeezer("lu", "expressions"),
        "projection": andrews_squeezer("projection", "expressions"),
        "premodel": andrews_squeezer("premodel", "expressions"),
        "finite_difference": andrews_squeezer("finite_difference", "expressions"),
    }
    providers = {name: model.joint_variable_map.providers[-1][1] for name, model in models.items()}
    for name in ("lu", "projection"):  # the compiled fast path (numba), else built after its warm-up
        print(f"compiled fast path for `{name}`: {'yes' if providers[name].compile() else 'no (numba absent)'}")
    unit = baseline()
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; "
          f"baseline np.linalg.solve 6×6: {unit:.2f} µs\n")

    # ---- projection breakdown
    projection = providers["projection"]
    solver = projection.solver
    positions = per_state(projection, path, 0)
    total = per_state(projection, path, 2)
    solutions = [solver.solve(q) for q in path[:200]]
    derivative_cost = {
        method: best_time(lambda i: implicit_derivatives(solver.system, solutions[i], 2, method, None), 200)
        for method in ("projection", "lu")
    }
    print("## Projection, per state (Andrews: 7 joint variables, 6 solved, n_q = 1)\n")
    print("| stage | µs | × baseline |\n|---|---|---|")
    rows = [
        ("Newton position update from the previous state (order 0)", positions),
        ("∇f + H by projection (Eq. 105-120), given f (Python route)", derivative_cost["projection"]),
        ("∇f + H by one LU, given f (Python route)", derivative_cost["lu"]),
        ("total per state, projection (position + ∇f + H)", total),
        ("total per state, LU (position + ∇f + H)", per_state(providers["lu"], path, 2)),
    ]
    for label, cost in rows:
        print(f"| {label} | {cost:.1f} | {cost / unit:.1f} |")

    # ---- the solvers side by side
    exact = providers["lu"]
    sample = path[::50]
    reference = [exact.evaluate(q, 2) for q in sample]
    print("\n## Solvers side by side (per state; errors: max abs. over 40 states vs the LU solution)\n")
    print("| solver | µs | × baseline | f error | ∇f error | H error |\n|---|---|---|---|---|---|")
    for name, provider in providers.items():
        cost = per_state(provider, path[: STATES // (10 if name == "finite_difference" else 1)], 2)
        errors = np.zeros(3)
        for q, ref in zip(sample, reference):
            values = provider.evaluate(q, 2)
            errors = np.maximum(errors, [np.abs(a - b).max() for a, b in zip(values, ref)])
        print(f"| {name} | {cost:.1f} | {cost / unit:.1f} | {errors[0]:.1e} | {errors[1]:.1e} | {errors[2]:.1e} |")
    fit = providers["premodel"].fit_error
    print(f"\nPre-model: Fourier series, {providers['premodel']._fit.harmonics} harmonics, "
          f"fit error at {fit.points} midpoints: f {fit.value:.1e}, ∇f {fit.gradient:.1e}, H {fit.hessian:.1e}.")
    print("Finite differences: default relative step ε^(1/4); 1 + 2 solves per state (n_q = 1).")


if __name__ == "__main__":
    main()
