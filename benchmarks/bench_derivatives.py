"""Derivatives of the dynamics: mbkron against Pinocchio's analytic derivatives (issue 30).

Run from the repository root (needs ``pip install pin``)::

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python -m benchmarks.bench_derivatives [--rounds 7]

On the random 3-D chains of :mod:`benchmarks.bench_forward_dynamics` (7 and 20 bodies), one state from Python, CPU
time per call, the two sides interleaved within each round, medians: ``model.inverse_dynamics_derivatives(q, q̇,
q̈)`` against ``pinocchio.computeRNEADerivatives`` (both give ``∂τ/∂q``, ``∂τ/∂q̇`` and ``M``), and
``model.forward_dynamics_derivatives(q, q̇, τ)`` against ``pinocchio.computeABADerivatives`` (``∂q̈/∂q``, ``∂q̈/∂q̇``,
``M⁻¹``). Both sides' matrices are checked equal (1e-10 relative) before timing. Issue 30's target: ≤ 3×
Pinocchio's time.

With OpenSim installed (``pip install opensim``), first gait2392's full ``∂τ/∂q``, ``∂τ/∂q̇`` over 100 frames against
central differences of OpenSim's ``InverseDynamicsSolver`` (:func:`opensim_differences`; issue 30: ≥ 50× faster, at
≥ 1e-8 better accuracy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python benchmarks/<file>.py` from anywhere

from benchmarks.bench_api import interleaved  # noqa: E402
from benchmarks.bench_forward_dynamics import random_chain  # noqa: E402
from benchmarks.common import machine  # noqa: E402


def _close(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    theirs = np.triu(theirs) + np.triu(theirs, 1).T if what in ("M", "Minv") else theirs  # Pinocchio's upper triangle
    if np.abs(ours - theirs).max() > 1e-10 * np.abs(theirs).max():
        raise SystemExit(f"{what}: mbkron and Pinocchio differ ({np.abs(ours - theirs).max():.3g})")


def opensim_differences(frames: int, step: float) -> None:
    """gait2392 (``tests/data/osim/gait2392_subject01.osim.gz``: 23 coordinates, none locked, no constraints, its
    muscles switched off on OpenSim's side and not loads on mbkron's) at ``frames`` seeded states near the default
    pose: the full ``∂τ/∂q`` and ``∂τ/∂q̇`` by mbkron in one batched call against central differences (step
    ``step``) of OpenSim's ``InverseDynamicsSolver.solve``, 4 × 23 solves per frame, CPU time of each side; and the
    differences' largest error against mbkron's exact derivatives, relative to the largest entry."""
    import gzip
    import tempfile
    import time
    import warnings

    import mbkron

    try:
        import opensim as osim
    except ImportError:
        print("# gait2392 against OpenSim: opensim is not installed (pip install opensim)")
        return
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "gait2392.osim"
        path.write_bytes(gzip.decompress((ROOT / "tests" / "data" / "osim" / "gait2392_subject01.osim.gz").read_bytes()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbkron.load_model(path)
        osim.Logger.setLevelString("error")
        opensim_model = osim.Model(str(path))
        forces = opensim_model.getForceSet()
        for i in range(forces.getSize()):
            forces.get(i).set_appliesForce(False)
        state = opensim_model.initSystem()
    coordinate_set = opensim_model.getCoordinateSet()
    if sorted(coordinate_set.get(i).getName() for i in range(coordinate_set.getSize())) != sorted(model.coordinates):
        raise SystemExit("gait2392: the coordinates of the two sides differ")
    coordinates = {name: coordinate_set.get(name) for name in model.coordinates}
    index = np.empty(model.nq, dtype=int)  # mbkron's coordinate k is OpenSim's speed index[k]: found by setting it
    for k, name in enumerate(model.coordinates):
        state.setU(osim.Vector(state.getNU(), 0.0))
        coordinates[name].setSpeedValue(state, 1.0)
        index[k] = int(np.argmax([state.getU().get(i) for i in range(state.getNU())]))
    rng = np.random.default_rng(30)
    q = model.default_q + 0.1 * rng.uniform(-1.0, 1.0, (frames, model.nq))
    qd, qdd = rng.uniform(-1.0, 1.0, (2, frames, model.nq))
    solver = osim.InverseDynamicsSolver(opensim_model)

    def tau(values, speeds, accelerations) -> np.ndarray:  # OpenSim's τ in mbkron's coordinate order
        for name, value in zip(model.coordinates, values):
            coordinates[name].setValue(state, float(value), False)
        u, udot = osim.Vector(model.nq, 0.0), osim.Vector(model.nq, 0.0)
        for k in range(model.nq):
            u.set(int(index[k]), float(speeds[k]))
            udot.set(int(index[k]), float(accelerations[k]))
        state.setU(u)
        opensim_model.realizeDynamics(state)
        out = solver.solve(state, udot)
        return np.array([out.get(int(index[k])) for k in range(model.nq)])

    samples = []
    for _ in range(5):  # the first compiles (or loads) the kernels: the median of five
        start = time.process_time()
        exact = model.inverse_dynamics_derivatives(q, qd, qdd)
        samples.append(time.process_time() - start)
    ours = float(np.median(samples))
    start = time.process_time()
    by_q, by_qd = np.empty((frames, model.nq, model.nq)), np.empty((frames, model.nq, model.nq))
    for s in range(frames):
        for m, e in enumerate(np.eye(model.nq) * step):
            by_q[s, :, m] = (tau(q[s] + e, qd[s], qdd[s]) - tau(q[s] - e, qd[s], qdd[s])) / (2 * step)
            by_qd[s, :, m] = (tau(q[s], qd[s] + e, qdd[s]) - tau(q[s], qd[s] - e, qdd[s])) / (2 * step)
    theirs = time.process_time() - start
    worst = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in ((by_q, exact.dtau_dq),
                                                                        (by_qd, exact.dtau_dqd)))
    agree = float(np.abs(tau(q[0], qd[0], qdd[0]) - exact.tau[0]).max() / np.abs(exact.tau[0]).max())
    print(f"gait2392, {frames} frames, ∂τ/∂q and ∂τ/∂q̇: mbkron {ours * 1e3:.1f} ms (one call), OpenSim central "
          f"differences (step {step:g}, {4 * model.nq} solves per frame) {theirs * 1e3:.0f} ms, ratio {theirs / ours:.0f}; "
          f"the differences' largest error {worst:.1e} of the largest entry; τ of the two sides {agree:.1e} apart")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[7, 20])
    parser.add_argument("--opensim-frames", type=int, default=100, help="gait2392 frames against OpenSim (0: skip)")
    parser.add_argument("--opensim-step", type=float, default=1e-6, help="OpenSim's central differences' step")
    arguments = parser.parse_args(argv)
    if arguments.opensim_frames > 0:
        opensim_differences(arguments.opensim_frames, arguments.opensim_step)
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
