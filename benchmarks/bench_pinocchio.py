"""M + N q̇ + G of a planar 7-link chain: mbkron against Pinocchio (optional; skipped if absent).

Run from the repository root: ``python benchmarks/bench_pinocchio.py``. Pinocchio (``pip install pin``)
computes M by CRBA and ``C(q, v) v + g(q)`` by RNEA with zero acceleration, called per state from
Python; mbkron computes the same terms for one state and for 10 000 states in one call. The results
are checked equal (1e-10) before timing; ratios are measured in the same run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import best_time, machine  # noqa: E402
from mbkron import examples as models  # noqa: E402

G = 9.81


def main() -> None:
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio is not installed (pip install pin): nothing to compare")
        return
    n = 7
    rng = np.random.default_rng(n)
    lengths, coms = rng.uniform(0.2, 0.5, n), rng.uniform(0.05, 0.2, n)
    masses, inertias = rng.uniform(0.5, 3, n), rng.uniform(0.005, 0.05, n)
    model = models.planar_chain(lengths, coms, np.zeros(n), masses, inertias, coordinates="relative", g=G)
    pin_model = pin.Model()
    parent = 0
    for k in range(n):
        placement = pin.SE3(np.eye(3), np.array([lengths[k - 1] if k else 0.0, 0.0, 0.0]))
        parent = pin_model.addJoint(parent, pin.JointModelRZ(), placement, f"joint{k + 1}")
        inertia = pin.Inertia(masses[k], np.array([coms[k], 0.0, 0.0]), np.diag([1e-12, inertias[k], inertias[k]]))
        pin_model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    pin_model.gravity.linear = np.array([0.0, -G, 0.0])
    data = pin_model.createData()

    q, v = rng.uniform(-2, 2, size=(2, n))
    terms = model.equations_of_motion(q, v, loads=())
    M_pin = pin.crba(pin_model, data, q)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    np.testing.assert_allclose(terms.mass_matrix, M_pin, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(terms.velocity_forces - terms.gravity_forces, pin.rnea(pin_model, data, q, v, np.zeros(n)),
                               rtol=1e-10, atol=1e-10)

    def pinocchio_terms(q, v):
        return pin.crba(pin_model, data, q).copy(), pin.rnea(pin_model, data, q, v, np.zeros(n)).copy()

    states = rng.uniform(-2, 2, size=(2, 10_000, n))
    single_pin = best_time(lambda: pinocchio_terms(q, v))
    single = best_time(lambda: model.equations_of_motion(q, v, loads=()))
    batch_pin = best_time(lambda: [pinocchio_terms(a, b) for a, b in zip(*states)], repeat=3)
    batch = best_time(lambda: model.equations_of_motion(*states, loads=()), repeat=3)
    print(f"# M + N q̇ + G, planar 7-link chain, Pinocchio {pin.__version__} — {machine()}")
    print(f"{'route':>52} {'one state µs':>13} {'10 000 states ms':>17}")
    print(f"{'Pinocchio (CRBA + RNEA, per state from Python)':>52} {single_pin * 1e6:13.1f} {batch_pin * 1e3:17.1f}")
    print(f"{'mbkron (equations_of_motion)':>52} {single * 1e6:13.1f} {batch * 1e3:17.1f}")
    print(f"{'ratio mbkron / Pinocchio':>52} {single / single_pin:13.1f} {batch / batch_pin:17.1f}")


if __name__ == "__main__":
    main()
