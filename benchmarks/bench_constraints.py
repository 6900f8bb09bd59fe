"""Cost and accuracy of the constraint solvers on an Andrews-sized system (Section 3-3).

Run ``python -m benchmarks.bench_constraints`` from the repository root. The system is Andrews'
squeezer's joint-variable map (:func:`mbkron.examples.andrews.andrews_squeezer`): seven
joint variables, ``n_q = 1``, ``β = q`` explicit and six solved. Each state is one call
``model.joint_variables(q, order)`` as an ODE right-hand side makes it, walking ``q`` in steps of
1e-3 rad, so every state includes the Newton position update from the nearby previous solution.
The LU and projection groups take their compiled Newton step (:mod:`mbkron.algorithms.jointvars.kernels`; a
first, untimed walk loads or compiles it; the Python solver redoes only the states it declines). The constraints are the test
set's expressions, and in one more row the model's three loop closures (the equations generated
from the closure declarations; the same manifold). Each walk carries a workspace
(``model.workspace()``), as :func:`mbkron.simulate` does. The cost of ``∇f`` and
``H`` given ``f`` is the cost per state at order 2 less that at order 0 (the position update).

The machine may be shared, so every cost is also given as a ratio to a baseline measured in the
same run: ``numpy.linalg.solve`` of a 6×6 system with one right-hand side. Each figure is the
best of several repeats (the least disturbed by other processes).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

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


def per_state(model, q: np.ndarray, order: int) -> float:
    """Mean cost of ``model.joint_variables`` per state along the path ``q`` (restarted each repeat), in µs."""
    best = np.inf
    for _ in range(REPEATS):
        workspace = model.workspace()
        model.joint_variables(q[0], order, workspace=workspace)  # start of the path
        start = time.perf_counter()
        for qi in q:
            model.joint_variables(qi, order, workspace=workspace)
        best = min(best, (time.perf_counter() - start) / len(q) * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    beta0 = INITIAL["beta"]
    path = (beta0 + STEP * np.arange(STATES))[:, None]
    variants = {name: (name, "expressions") for name in ("lu", "projection", "premodel", "finite_difference")}
    variants["lu, loop closures"] = ("lu", "loop_closures")
    models = {name: andrews_squeezer(*variant) for name, variant in variants.items()}
    for model in models.values():  # a first walk loads the compiled kernels: not timed
        per_state(model, path[:50], 2)
    unit = baseline()
    print(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; "
          f"baseline np.linalg.solve 6×6: {unit:.2f} µs\n")

    # ---- stages
    positions = {name: per_state(models[name], path, 0) for name in ("lu", "projection")}
    totals = {name: per_state(models[name], path, 2) for name in ("lu", "projection")}
    print("## Per state (Andrews: 7 joint variables, 6 solved, n_q = 1)\n")
    print("| stage | µs | × baseline |\n|---|---|---|")
    rows = [
        ("Newton position update from the previous state (order 0)", positions["projection"]),
        ("∇f + H by projection (Eq. 105-120), given f (order 2 − order 0)",
         totals["projection"] - positions["projection"]),
        ("∇f + H by one LU, given f (order 2 − order 0)", totals["lu"] - positions["lu"]),
        ("total per state, projection (position + ∇f + H)", totals["projection"]),
        ("total per state, LU (position + ∇f + H)", totals["lu"]),
    ]
    for label, cost in rows:
        print(f"| {label} | {cost:.1f} | {cost / unit:.1f} |")

    # ---- the solvers side by side
    sample = path[::50]
    reference = [models["lu"].joint_variables(q, 2) for q in sample]
    print("\n## Solvers side by side (per state; errors: max abs. over 40 states vs the LU solution)\n")
    print("| solver | µs | × baseline | f error | ∇f error | H error |\n|---|---|---|---|---|---|")
    for name, model in models.items():
        cost = per_state(model, path[: STATES // (10 if name == "finite_difference" else 1)], 2)
        errors = np.zeros(3)
        for q, ref in zip(sample, reference):
            values = model.joint_variables(q, 2)
            errors = np.maximum(errors, [np.abs(a - b).max() for a, b in zip(values, ref)])
        print(f"| {name} | {cost:.1f} | {cost / unit:.1f} | {errors[0]:.1e} | {errors[1]:.1e} | {errors[2]:.1e} |")
    print("\nPre-model: Fourier series in the periodic β (sweep step 0.01).")
    print("Finite differences: default relative step ε^(1/4); 1 + 2 solves per state (n_q = 1).")


if __name__ == "__main__":
    main()
