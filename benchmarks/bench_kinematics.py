"""D_i and D'_i (Eq. 75-99) for a 10-body tree with nq = 3: mbkron's fast path against naive routes.

Run from the repository root: ``python benchmarks/bench_kinematics.py``. Prints microseconds per
state and ratios against baselines measured in the same run:

- *naive*: the literal Kronecker recursion (Eq. 77, 89 with U matrices, per element of D and D');
- *loop*: the natural-layout recursion, a Python loop over bodies.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import sympy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mbkron  # noqa: E402
from benchmarks.common import best_time, machine  # noqa: E402
from mbkron.reference import transforms as kinematics_literal  # noqa: E402


def ten_body_tree(nonlinear: bool) -> mbkron.Model:
    """A branching 3-D tree: 10 bodies, revolute and prismatic joints, nq = 3."""
    rng = np.random.default_rng(2026)
    q = sympy.symbols("q1:4")
    parents = [-1, 0, 1, 2, 1, 4, 0, 6, 7, 8]
    b = mbkron.ModelBuilder(name="ten-body tree")
    for s in q:
        b.add_coordinate(s.name)
    for i, p in enumerate(parents):
        joint = "prismatic" if i % 4 == 3 else "revolute"
        variable = q[i % 3]
        if nonlinear and i % 2:
            variable = 0.3 * sympy.sin(q[i % 3]) + 0.2 * q[(i + 1) % 3] ** 2
        axis = rng.normal(size=3)
        b.add_body(f"b{i}", parent="ground" if p < 0 else f"b{p}", joint=joint, axis=axis, variable=variable,
                   offset=rng.uniform(-0.3, 0.3, size=3), mass=1.0, inertia=np.eye(3) * 0.01)
    return b.build()


def main() -> None:
    print(f"# D_i and D'_i, 10-body tree, nq = 3 — {machine()}")
    print(f"{'joint variables':>16} {'route':>32} {'µs/state':>10} {'× fast':>8}")
    for nonlinear in (False, True):
        model = ten_body_tree(nonlinear)
        rng = np.random.default_rng(0)
        q = rng.uniform(-1, 1, size=3)
        f, grad, hess = model.joint_variables(q)
        fast = best_time(lambda: model.kinematics(q))
        batch = rng.uniform(-1, 1, size=(10_000, 3))
        batched = best_time(lambda: model.kinematics(batch), repeat=3) / len(batch)
        loop = best_time(lambda: (model.joint_variables(q), kinematics_literal.derivatives_recursive(
            model.tree, f, grad, hess)))
        naive = best_time(lambda: (model.joint_variables(q), kinematics_literal.kron_derivatives_recursive(
            model.tree, f, grad, hess)), min_total=0.5, repeat=3)
        label = "nonlinear" if nonlinear else "linear"
        for route, seconds in (("mbkron fast path, one state", fast), ("mbkron batched, 10 000 states", batched),
                               ("loop over bodies (Eq. 77, 89)", loop), ("naive Kronecker (Eq. 77, 89)", naive)):
            print(f"{label:>16} {route:>32} {seconds * 1e6:10.1f} {seconds / fast:8.2f}")


if __name__ == "__main__":
    main()
