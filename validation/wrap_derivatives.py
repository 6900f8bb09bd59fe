"""arm26 with its ellipsoids: the moment arms against the literal Eq. 195 and differences of the lengths, at
random poses and next to the ellipsoids' engagements — the part of the wrapping checks too slow for the
test suite (the reference evaluates the located paths state by state, and the vectorised sweeps it locates
them with run the ellipsoid's geodesics by numpy: about a second per pose where TRIlong wraps over
``TRIlonghh``; docs/wrapping.md).

- ``POSES`` random poses uniform over arm26's coordinate ranges (``numpy.random.default_rng(26)``): R
  against :func:`mbkron.reference.moment_arms` (Eq. 195 on the tangent points held in their wrap bodies) at
  every pose, and against fourth-order central differences of L
  (step 2e-5) where the stencil crosses no switch (the O(h²) and O(h⁴) estimates agree to 1e-6).
  Poses where a path's sweeps do not settle even with its ellipsoids the short way (a ModelWarning: R is
  not −dL/dq there) are counted and left out.
- Switches of ``BIClonghh`` and ``TRIlonghh`` (wrapping or not) along shoulder sweeps at fixed elbow
  angles, found by bisection to ``b − a < 1e-8`` rad: the reference's R at ``a − 1e-6``, ``a``, ``b``,
  ``b + 1e-6`` against R there, and the jumps ``|L(b) − L(a)|``, ``|R(b) − R(a)|`` (L is C¹ through an
  engagement, where the straight line touches the surface; where a path point enters the ellipsoid the
  wrap stops, as in OpenSim, and L jumps, as it does where the quadrant rule changes the way round). A switch where the ellipsoid's solver fails on the way (a path point within
  round-off of the surface) or where the sweeps do not settle is reported as such.

Prints the largest differences (m) and the counts. Run ``python -m validation.wrap_derivatives
[--poses N] [--workers W]`` from the repository root; the poses are spread over ``W`` processes
(``--poses 0``: the switches only).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import mbkron
from mbkron import reference
from mbkron.core.errors import ConfigurationError
from validation.opensim.compare_wrapping import model_text

POSES = 200
STEP = 2e-5
ELLIPSOIDS = ("BIClonghh", "TRIlonghh")
#: Shoulder sweeps (60 states over the coordinate's range) at these elbow angles (rad). (At 0, 1 and 2
#: rad the ellipsoids' switches were the same to 1e-8 rad.)
ELBOW_ANGLES = (0.0,)

_MODELS: dict = {}


def models():
    """arm26 (with its ellipsoids), loaded once per process."""
    if not _MODELS:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "arm26.osim"
            path.write_text(model_text("arm26"))
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # importing the wraps warns about nothing
                _MODELS["model"] = mbkron.load_model(path)
    return _MODELS["model"]


def literal_arms(q: np.ndarray) -> np.ndarray:
    """R by the literal Eq. 195 on the located paths (:func:`mbkron.reference.moment_arms`, state by state),
    shape ``(n, nq, muscles)``."""
    return reference.moment_arms(models(), q)


def wrapped(q: np.ndarray) -> np.ndarray:
    """Whether each ellipsoid wraps its path, shape ``(n, 2)`` (:data:`ELLIPSOIDS`)."""
    model = models()
    wrapping = model.muscle_set.wrapping
    flags = model.muscle_set.path_points(model.kinematics(q, 0)).wrapped
    return flags[:, [wrapping.wrap_names.index(name) for name in ELLIPSOIDS]]


def random_poses(count: int) -> np.ndarray:
    model = models()
    low, high = (np.array([c.range[i] for c in model.coordinate_records]) for i in (0, 1))
    return np.random.default_rng(26).uniform(low, high, (count, model.nq))


def differences(q: np.ndarray) -> tuple:
    """``(−dL/dq, smooth)``: fourth-order central differences of the lengths, and where their stencil
    crosses no switch, each of shape ``(n, nq, muscles)``."""
    model = models()
    minus_gradient, smooth = [], []
    for e in np.eye(model.nq):
        L = [model.muscle_lengths(q + j * STEP * e) for j in (-2, -1, 1, 2)]
        minus_gradient.append(-(8 * (L[2] - L[1]) - (L[3] - L[0])) / (12 * STEP))
        smooth.append(np.abs((L[3] - L[0]) / (4 * STEP) - (L[2] - L[1]) / (2 * STEP)) < 1e-6)
    return np.stack(minus_gradient, axis=1), np.stack(smooth, axis=1)


def settled(q: np.ndarray) -> np.ndarray:
    """Per pose, whether the sweeps over every path's wraps settled (no ModelWarning)."""
    model = models()
    flags = np.ones(len(q), dtype=bool)
    for i, pose in enumerate(q):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", mbkron.ModelWarning)
            model.muscle_lengths(pose[None])
        flags[i] = not caught
    return flags


def engagements(elbow: float) -> list:
    """The switches of the ellipsoids along the shoulder sweep at ``elbow``: per switch the wrap's name, the
    bracketing shoulder angles ``a``, ``b``, max |reference − R| at the four states about it, and
    ``|L(b) − L(a)|`` and ``|R(b) − R(a)|`` of the wrap's muscle (instead, the name of the exception where
    the solver failed or the sweeps did not settle)."""
    model = models()
    shoulder = model.coordinate_records[0]

    def at(x):
        x = np.atleast_1d(x)
        return np.column_stack([x, np.full(len(x), elbow)])
    grid = np.linspace(*shoulder.range, 60)
    flags = wrapped(at(grid))
    muscles = model.muscle_set.wrapping.muscles
    wrap_muscle = {name: model.muscles.index(name.removesuffix("hh")) for name in ELLIPSOIDS}
    found = []
    for i, j in zip(*np.nonzero(flags[1:] != flags[:-1])):
        a, b = grid[i], grid[i + 1]
        m = wrap_muscle[ELLIPSOIDS[j]]
        try:
            while b - a >= 1e-8:
                mid = (a + b) / 2
                a, b = (mid, b) if wrapped(at(mid))[0, j] == flags[i, j] else (a, mid)
            near = at([a - 1e-6, a, b, b + 1e-6])
            with warnings.catch_warnings():
                warnings.simplefilter("error", mbkron.ModelWarning)
                R = model.moment_arms(near)
                literal = literal_arms(near)
        except (ConfigurationError, mbkron.ModelWarning) as error:
            found.append((ELLIPSOIDS[j], a, b, type(error).__name__, np.nan, np.nan))
            continue
        L = model.muscle_lengths(near[1:3])[:, m]
        found.append((ELLIPSOIDS[j], a, b, float(np.abs(literal - R)[..., muscles].max()), float(abs(L[1] - L[0])),
                      float(abs(R[2, 0, m] - R[1, 0, m]))))
    return found


def poses_part(q: np.ndarray) -> tuple:
    """For poses ``q``: max |reference − R| and max |differences − R| where smooth, at the poses whose
    sweeps settled; the smooth count; how often each ellipsoid wraps; the unsettled poses."""
    model = models()
    muscles = model.muscle_set.wrapping.muscles
    keep = settled(q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbkron.ModelWarning)
        R = model.moment_arms(q)[..., muscles]
        literal = literal_arms(q)[..., muscles]
        minus_gradient, smooth = differences(q)
        counts = wrapped(q).sum(axis=0)
    smooth = smooth[..., muscles] & keep[:, None, None]
    return (float(np.abs(literal - R)[keep].max(initial=0.0)),
            float(np.abs(minus_gradient[..., muscles] - R)[smooth].max(initial=0.0)),
            int(smooth.sum()), counts, q[~keep])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--poses", type=int, default=POSES, help=f"random poses (default {POSES})")
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="processes (default: the CPUs)")
    args = parser.parse_args(argv)
    models()  # loaded once here, before the timing and the workers
    q = random_poses(args.poses)
    start = time.perf_counter()
    print(f"arm26 with its ellipsoids; load average "
          f"{os.getloadavg()[0]:.2f}; {args.workers} processes")
    with ProcessPoolExecutor(args.workers) as pool:
        found = pool.map(engagements, ELBOW_ANGLES)
        parts = list(pool.map(poses_part, np.array_split(q, 4 * args.workers))) if args.poses else []
        found = [e for sweep in found for e in sweep]
    if parts:
        report_poses(args.poses, parts)
    print(f"{len(found)} switches on shoulder sweeps at elbow {ELBOW_ANGLES} rad:")
    for name, a, b, error, length_jump, jump in found:
        result = {"ConfigurationError": "the ellipsoid's solver failed (a path point on the surface)",
                  "ModelWarning": "in the band where TRIlong's sweeps do not settle"}.get(
            error, f"max |reference − R| within 1e-6 = {error:.2e} m, |L(b) − L(a)| = {length_jump:.2e} m, "
                   f"|R(b) − R(a)| = {jump:.2e} m")
        print(f"  {name} at shoulder {a:.9f}…{b:.9f}: {result}")
    print(f"({time.perf_counter() - start:.0f} s)")


def report_poses(count: int, parts: list) -> None:
    """Prints :func:`poses_part`'s results over all parts."""
    model = models()
    counts = sum(part[3] for part in parts)
    wrapped_muscles = len(model.muscle_set.wrapping.muscles)
    print(f"{count} random poses ({', '.join(f'{n} wraps at {c}' for n, c in zip(ELLIPSOIDS, counts))}), "
          f"{wrapped_muscles} wrapped muscles × {model.nq} coordinates:")
    unsettled = np.concatenate([part[4] for part in parts])
    print(f"  sweeps not settled at {len(unsettled)} poses (left out): {np.round(unsettled, 4).tolist()}")
    print(f"  max |reference − R| = {max(p[0] for p in parts):.2e} m (all other poses)")
    print(f"  max |differences − R| = {max(p[1] for p in parts):.2e} m "
          f"({sum(p[2] for p in parts)} of {count * model.nq * wrapped_muscles} stencils cross no switch)")


if __name__ == "__main__":
    main()
