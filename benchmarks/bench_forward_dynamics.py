"""Forward dynamics of a random 3-D chain: mbkron against ``pinocchio.aba`` (optional; skipped if absent).

Run from the repository root: ``OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_forward_dynamics``.
A chain of n bodies on revolute joints with random axes, offsets and inertias (one coordinate per
body), built identically in both libraries. The accelerations are checked equal (1e-9 relative)
before timing. Timed in CPU time, interleaved, medians of several rounds:

- one state from Python: ``model.forward_dynamics(q, qd)`` against ``pinocchio.aba(model, data, q, v, τ)``;
- a batch of 10 000 states in one call against ``pinocchio.abaInParallel`` with one thread;
- inverse dynamics of the same batch, ``model.inverse_dynamics(Q, V, A)`` against
  ``pinocchio.rneaInParallel`` with one thread (checked equal first).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python benchmarks/<file>.py` from anywhere

import mbkron  # noqa: E402
from benchmarks.common import machine  # noqa: E402


def random_chain(n: int, seed: int = 0):
    """(mbkron model, pinocchio model or None): the same random spatial chain in both."""
    rng = np.random.default_rng(seed)
    b = mbkron.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    rotations, translations, axes, masses, coms, inertias = [], [], [], [], [], []
    parent = "ground"
    for k in range(n):
        angle_axis = rng.normal(size=3)
        angle = np.linalg.norm(angle_axis)
        K = np.array([[0, -angle_axis[2], angle_axis[1]], [angle_axis[2], 0, -angle_axis[0]],
                      [-angle_axis[1], angle_axis[0], 0]]) / angle
        R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
        t = rng.uniform(-0.3, 0.3, size=3)
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        A = rng.normal(size=(3, 3))
        offset = np.eye(4)
        offset[:3, :3], offset[:3, 3] = R, t
        rotations.append(R), translations.append(t), axes.append(axis)
        masses.append(rng.uniform(0.5, 3.0)), coms.append(rng.uniform(-0.2, 0.2, size=3))
        second_moments = A @ A.T * 0.05 + 0.01 * np.eye(3)
        inertias.append(np.trace(second_moments) * np.eye(3) - second_moments)  # a physical inertia tensor
        b.add_coordinate(f"q{k}")
        b.add_body(f"b{k}", parent=parent, axis=axis, variable=f"q{k}", offset=offset, mass=masses[-1],
                   com=coms[-1], inertia=inertias[-1])
        parent = f"b{k}"
    model = b.build()
    try:
        import pinocchio as pin
    except ImportError:
        return model, None
    pin_model = pin.Model()
    joint = 0
    for k in range(n):
        joint = pin_model.addJoint(joint, pin.JointModelRevoluteUnaligned(axes[k]), pin.SE3(rotations[k], translations[k]),
                                   f"j{k}")
        pin_model.appendBodyToJoint(joint, pin.Inertia(masses[k], coms[k], inertias[k]), pin.SE3.Identity())
    pin_model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model, pin_model


def median_time(function, repeat: int) -> float:
    """Median CPU seconds (``time.process_time``: other jobs on a loaded machine do not count) of ``repeat``
    calls; calls too short for the clock's resolution are timed in groups of ten."""
    group = 10 if repeat >= 100 else 1
    samples = []
    for _ in range(max(1, repeat // group)):
        start = time.process_time()
        for _ in range(group):
            function()
        samples.append((time.process_time() - start) / group)
    return float(np.median(samples))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[7, 20])
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        import numba
        numba.set_num_threads(1)  # the batch against abaInParallel with one thread
    except ImportError:
        pass
    print(f"# forward dynamics, random 3-D chain — {machine()}")
    print(f"{'n':>3} {'mbkron µs':>10} {'aba µs':>8} {'ratio':>6} | {'batch: mbkron ms':>17} {'abaInParallel ms':>17} "
          f"{'ratio':>6} | {'inverse: mbkron ms':>14} {'rneaInParallel ms':>18} {'ratio':>6}")
    for n in args.sizes:
        model, pin_model = random_chain(n)
        rng = np.random.default_rng(1)
        q, v = rng.uniform(-2, 2, size=(2, n))
        Q, V = rng.uniform(-2, 2, size=(2, args.batch, n))
        ours = model.forward_dynamics(q, v)
        if pin_model is None:
            print("pinocchio is not installed (pip install pin): nothing to compare")
            return
        import pinocchio as pin
        data = pin_model.createData()
        zero = np.zeros(n)
        np.testing.assert_allclose(ours, pin.aba(pin_model, data, q, v, zero), rtol=1e-9, atol=1e-9)
        model.forward_dynamics(Q[:2], V[:2])
        taus = np.zeros((n, args.batch))
        out = np.zeros((n, args.batch))
        Qf, Vf = np.asfortranarray(Q.T), np.asfortranarray(V.T)
        pool = pin.ModelPool(pin_model, 1)
        pin.abaInParallel(1, pool, Qf, Vf, taus, out)
        np.testing.assert_allclose(model.forward_dynamics(Q[:50], V[:50]), out[:, :50].T, rtol=1e-9, atol=1e-9)
        A = rng.uniform(-2, 2, size=(args.batch, n))
        Af = np.asfortranarray(A.T)
        np.testing.assert_allclose(model.inverse_dynamics(Q[:50], V[:50], A[:50]),
                                   pin.rneaInParallel(1, pool, Qf, Vf, Af)[:, :50].T, rtol=1e-9, atol=1e-9)
        one, one_pin, batch, batch_pin, inverse, inverse_pin = [], [], [], [], [], []
        inner = 200
        for _ in range(args.rounds):  # interleaved rounds
            one.append(median_time(lambda: model.forward_dynamics(q, v), inner))
            one_pin.append(median_time(lambda: pin.aba(pin_model, data, q, v, zero), inner))
            batch.append(median_time(lambda: model.forward_dynamics(Q, V), 1))
            batch_pin.append(median_time(lambda: pin.abaInParallel(1, pool, Qf, Vf, taus, out), 1))
            inverse.append(median_time(lambda: model.inverse_dynamics(Q, V, A), 1))
            inverse_pin.append(median_time(lambda: pin.rneaInParallel(1, pool, Qf, Vf, Af), 1))
        a, b, c, d, e, f = (float(np.median(x)) for x in (one, one_pin, batch, batch_pin, inverse, inverse_pin))
        print(f"{n:3d} {a * 1e6:10.1f} {b * 1e6:8.1f} {a / b:6.1f} | {c * 1e3:17.1f} {d * 1e3:17.1f} {c / d:6.2f} | "
              f"{e * 1e3:14.1f} {f * 1e3:18.1f} {e / f:6.2f}")


if __name__ == "__main__":
    main()
