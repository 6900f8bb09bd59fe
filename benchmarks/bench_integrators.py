"""Step counts and costs of mbkron's TRBDF2 against scipy's Radau and BDF.

Run ``python benchmarks/bench_integrators.py [rtol ...]`` from the repository root;
it prints a Markdown table (the one in ``docs/integrators.md``). The error column
is the largest component-wise error at the final time relative to
``atol + rtol*|y_ref|``, the reference being scipy's Radau at a much tighter
tolerance. If the optional ``extensisq`` package is installed its TRBDF2 is
included for comparison.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

from mbkron.integrate import TRBDF2

MU = 1000.0


def robertson(t: float, y: np.ndarray) -> list[float]:
    """Robertson's chemical kinetics (Hairer & Wanner, *Solving ODEs II*, IV.1)."""
    y1, y2, y3 = y
    return [-0.04 * y1 + 1e4 * y2 * y3, 0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2**2, 3e7 * y2**2]


def robertson_jac(t: float, y: np.ndarray) -> list[list[float]]:
    y1, y2, y3 = y
    return [
        [-0.04, 1e4 * y3, 1e4 * y2],
        [0.04, -1e4 * y3 - 6e7 * y2, -1e4 * y2],
        [0.0, 6e7 * y2, 0.0],
    ]


def van_der_pol(t: float, y: np.ndarray) -> list[float]:
    """Van der Pol oscillator with mu = 1000 in Lienard-free form."""
    return [y[1], MU * (1.0 - y[0] ** 2) * y[1] - y[0]]


def van_der_pol_jac(t: float, y: np.ndarray) -> list[list[float]]:
    return [[0.0, 1.0], [-2.0 * MU * y[0] * y[1] - 1.0, MU * (1.0 - y[0] ** 2)]]


@dataclass
class Problem:
    """A test problem with its analytic Jacobian and absolute tolerance."""

    name: str
    fun: Callable
    jac: Callable
    t_span: tuple[float, float]
    y0: list[float]
    atol: float


PROBLEMS = [
    Problem("Robertson, t ≤ 1e5", robertson, robertson_jac, (0.0, 1e5), [1.0, 0.0, 0.0], 1e-10),
    Problem("Van der Pol μ=1000, t ≤ 3000", van_der_pol, van_der_pol_jac, (0.0, 3000.0),
            [2.0, 0.0], 1e-8),
]


def methods() -> list[tuple[str, Any]]:
    """Solvers to compare: ours, scipy's implicit ones and, if installed, extensisq's."""
    found = [("mbkron TRBDF2", TRBDF2), ("scipy Radau", "Radau"), ("scipy BDF", "BDF")]
    try:
        import extensisq
    except ImportError:
        return found
    return found + [(f"extensisq {extensisq.__version__} TRBDF2", extensisq.TRBDF2)]


def main(rtols: list[float]) -> None:
    print("| problem | rtol | solver | Jacobian | steps | nfev | njev | nlu | error/tol "
          "| time [s] |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for problem in PROBLEMS:
        reference = solve_ivp(problem.fun, problem.t_span, problem.y0, method="Radau",
                              rtol=1e-11, atol=problem.atol * 1e-4, jac=problem.jac).y[:, -1]
        for rtol in rtols:
            for label, method in methods():
                for jac_label, jac in (("analytic", problem.jac), ("finite diff.", None)):
                    start = time.perf_counter()
                    sol = solve_ivp(problem.fun, problem.t_span, problem.y0, method=method,
                                    rtol=rtol, atol=problem.atol, jac=jac)
                    elapsed = time.perf_counter() - start
                    error = np.max(np.abs(sol.y[:, -1] - reference)
                                   / (problem.atol + rtol * np.abs(reference)))
                    print(f"| {problem.name} | {rtol:g} | {label} | {jac_label} | "
                          f"{sol.t.size - 1} | {sol.nfev} | {sol.njev} | {sol.nlu} | "
                          f"{error:.2g} | {elapsed:.2f} |")


if __name__ == "__main__":
    main([float(arg) for arg in sys.argv[1:]] or [1e-6])
