"""Derivatives of the dynamics: mbkron against Pinocchio's analytic derivatives (issue 30).

Run from the repository root (needs ``pip install pin``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.bench_derivatives [--rounds 7]

On the random 3-D chains of :mod:`benchmarks.bench_forward_dynamics` (7 and 20 bodies), one state from Python, CPU
time per call, the two sides interleaved within each round, medians: ``model.inverse_dynamics_derivatives(q, q̇,
q̈)`` against ``pinocchio.computeRNEADerivatives`` (both give ``∂τ/∂q``, ``∂τ/∂q̇`` and ``M``), and
``model.forward_dynamics_derivatives(q, q̇, τ)`` against ``pinocchio.computeABADerivatives`` (``∂q̈/∂q``, ``∂q̈/∂q̇``,
``M⁻¹``). Both sides' matrices are checked equal (1e-10 relative) before timing. Issue 30's target: ≤ 3×
Pinocchio's time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python benchmarks/<file>.py` from anywhere

from benchmarks.bench_api import interleaved  # noqa: E402
from benchmarks.bench_forward_dynamics import random_chain  # noqa: E402
from benchmarks.common import machine  # noqa: E402


def _close(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    theirs = np.triu(theirs) + np.triu(theirs, 1).T if what in ("M", "Minv") else theirs  # Pinocchio's upper triangle
    if np.abs(ours - theirs).max() > 1e-10 * np.abs(theirs).max():
        raise SystemExit(f"{what}: mbkron and Pinocchio differ ({np.abs(ours - theirs).max():.3g})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[7, 20])
    arguments = parser.parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio is not installed (pip install pin): nothing to compare")
        return
    print(f"# derivatives of the dynamics, one state — {machine()}")
    for n in arguments.sizes:
        model, pin_model = random_chain(n)
        data = pin_model.createData()
        q, qd, qdd = np.random.default_rng(1).uniform(-1.0, 1.0, (3, n))
        inverse = model.inverse_dynamics_derivatives(q, qd, qdd)
        pin.computeRNEADerivatives(pin_model, data, q, qd, qdd)
        for ours, theirs, what in ((inverse.dtau_dq, data.dtau_dq, "dtau_dq"), (inverse.dtau_dqd, data.dtau_dv, "dtau_dv"),
                                   (inverse.mass_matrix, data.M, "M")):
            _close(ours, theirs, what)
        forward = model.forward_dynamics_derivatives(q, qd, qdd)
        pin.computeABADerivatives(pin_model, data, q, qd, qdd)
        for ours, theirs, what in ((forward.dqdd_dq, data.ddq_dq, "ddq_dq"), (forward.dqdd_dqd, data.ddq_dv, "ddq_dv"),
                                   (forward.dqdd_dtau, data.Minv, "Minv")):
            _close(ours, theirs, what)
        times = interleaved({
            "inverse": lambda: model.inverse_dynamics_derivatives(q, qd, qdd),
            "rnea": lambda: pin.computeRNEADerivatives(pin_model, data, q, qd, qdd),
            "forward": lambda: model.forward_dynamics_derivatives(q, qd, qdd),
            "aba": lambda: pin.computeABADerivatives(pin_model, data, q, qd, qdd),
        }, arguments.rounds, 1000)
        print(f"{n:2d} bodies: inverse_dynamics_derivatives {times['inverse'] * 1e6:7.2f} µs, computeRNEADerivatives "
              f"{times['rnea'] * 1e6:6.2f} µs, ratio {times['inverse'] / times['rnea']:.2f}; forward_dynamics_derivatives "
              f"{times['forward'] * 1e6:7.2f} µs, computeABADerivatives {times['aba'] * 1e6:6.2f} µs, ratio "
              f"{times['forward'] / times['aba']:.2f}")
    print(f"# load average at the end: {machine().rsplit(' ', 1)[-1]}")


if __name__ == "__main__":
    main()
