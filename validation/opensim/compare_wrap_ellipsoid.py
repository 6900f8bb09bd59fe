"""mbkron's shortest path over an ellipsoid against OpenSim 4.6's ``WrapEllipsoid`` (issue #16).

Two kinds of sweeps, each a coordinate turned in 0.5° steps:

- ``pin-*``: a path from a ground point to a point on a body turned by a pin joint (about ground's z)
  over an ellipsoid fixed to that body (off its origin, turned), one path point each side, so the
  path is the one segment and OpenSim's ``PathSpring.getLength`` is the wrapped segment's length;
- ``arm26-*``: arm26's BIClong over ``BIClonghh`` (wrap range 2–3) along ``r_shoulder_elev``. The
  wrapped segment's length on the OpenSim side is ``Muscle.getLength`` less the path's other
  straight segments (OpenSim's path points); where OpenSim's range allows several segments the one
  OpenSim wraps is taken: the first that passes through the ellipsoid (``WrapEllipsoid::wrapLine``
  returns ``mandatoryWrap``, and ``GeometryPath::applyWrapObjects`` stops at the first such segment).
  (:func:`arm26_sweep` also runs TRIlong over ``TRIlonghh`` with its cylinders inactive: ``python -m
  validation.opensim.compare_wrap_ellipsoid TRIlong``; printed, not stored -- docs/wrapping.md ("Ellipsoids").)

For each state the segment's end points are expressed in the ellipsoid's frame (``p``, ``q``) and
stored with OpenSim's length in ``tests/data/wrap_ellipsoid_opensim.csv.gz`` (read by
``tests/test_wrap_ellipsoid.py``, which recomputes mbkron's lengths; OpenSim is not needed there).
Rows where OpenSim's length jumps (a change between neighbouring states larger than 3 times both
neighbouring changes plus 0.01 mm) are marked ``opensim_continuous = 0``. The script prints, per sweep, the
largest difference where OpenSim is continuous and where it is not.

Run ``python -m validation.opensim.compare_wrap_ellipsoid`` from the repository root.
"""

from __future__ import annotations

import csv
import gzip
import os
import sys
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from mbkron.multibody.muscles.wrap_ellipsoid import shortest_path

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "data" / "wrap_ellipsoid_opensim.csv.gz"
ARM26 = Path(os.environ.get("MBKRON_ARM26_OSIM", "/work/shared/references/opensim-models/arm26.osim"))
MAX_DIFFERENCE = 1e-3
"""The bound the test checks where OpenSim's length is continuous (issue #16: within 1 mm)."""
CHECKED = ("pin-spheroid-all", "pin-triaxial-all", "pin-offplane-all", "arm26-BIClong-BIClonghh")
"""The sweeps the test checks (where both wrap on the same side; docs/wrapping.md ("Ellipsoids") explains the
quadrant sweep's differences)."""

#: pin sweeps: (name, dimensions, translation on the body, xyz body rotation, quadrant, origin in
#: ground, insertion on the body, angle range in degrees)
PIN_CASES = [
    ("pin-spheroid-all", (0.03, 0.03, 0.05), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), "all",
     (0.08, 0.1, 0.0), (0.0, -0.12, 0.0), (-60, 60)),
    ("pin-triaxial-all", (0.04, 0.025, 0.03), (0.005, 0.0, 0.0), (0.3, -0.2, 0.5), "all",
     (0.07, 0.11, 0.01), (0.01, -0.12, -0.005), (-60, 60)),
    ("pin-triaxial-+x", (0.04, 0.025, 0.03), (0.005, 0.0, 0.0), (0.3, -0.2, 0.5), "+x",
     (0.07, 0.11, 0.01), (0.01, -0.12, -0.005), (-60, 60)),
    ("pin-offplane-all", (0.035, 0.02, 0.025), (0.0, 0.01, 0.0), (0.0, 0.6, 0.2), "all",
     (0.05, 0.1, 0.03), (-0.01, -0.11, -0.02), (-50, 70)),
]


def opensim_module():
    import opensim  # noqa: PLC0415 - OpenSim is optional (not in CI)
    return opensim


def _to_wrap_frame(points_body, translation, rotation):
    """Points in the body's frame → the wrap object's frame (OpenSim's body-fixed XYZ rotation)."""
    matrix = Rotation.from_euler("XYZ", rotation).as_matrix()
    return (np.asarray(points_body) - translation) @ matrix


def opensim_pin_sweep(wrap, translation, rotation, quadrant, origin, insertion, bounds) -> list:
    """OpenSim's length of a path spring from ``origin`` (ground) to ``insertion`` on a body turned by a pin
    joint about ground's z, over ``wrap`` (an OpenSim wrap object with its name and shape set) placed on that
    body, every 0.5° over ``bounds`` (degrees): rows ``(degrees, p, q, length)`` with the segment's ends
    ``p``, ``q`` in the wrap's frame."""
    osim = opensim_module()
    model = osim.Model()
    body = osim.Body("arm", 1.0, osim.Vec3(0), osim.Inertia(0.01))
    model.addBody(body)
    pin = osim.PinJoint("pin", model.getGround(), osim.Vec3(0), osim.Vec3(0), body, osim.Vec3(0), osim.Vec3(0))
    model.addJoint(pin)
    wrap.set_translation(osim.Vec3(*translation))
    wrap.set_xyz_body_rotation(osim.Vec3(*rotation))
    wrap.set_quadrant(quadrant)
    body.addWrapObject(wrap)
    spring = osim.PathSpring("path", 0.1, 1.0, 0.0)
    spring.updGeometryPath().appendNewPathPoint("origin", model.getGround(), osim.Vec3(*origin))
    spring.updGeometryPath().appendNewPathPoint("insertion", body, osim.Vec3(*insertion))
    spring.updGeometryPath().addPathWrap(wrap)
    model.addForce(spring)
    state = model.initSystem()
    rows = []
    lo, hi = bounds
    for degrees in np.arange(lo, hi + 1e-9, 0.5):
        angle = np.radians(degrees)
        pin.getCoordinate().setValue(state, angle)
        model.realizePosition(state)
        turn = Rotation.from_euler("z", angle).as_matrix()
        origin_body = np.asarray(origin) @ turn  # ground point in the body's frame (body turned by `angle`)
        p = _to_wrap_frame(origin_body, translation, rotation)
        q = _to_wrap_frame(insertion, translation, rotation)
        rows.append((degrees, p, q, spring.getLength(state)))
    return rows


def pin_sweep(case):
    """OpenSim's lengths and the segment's ends in the ellipsoid's frame for one pin sweep."""
    name, dims, translation, rotation, quadrant, origin, insertion, bounds = case
    wrap = opensim_module().WrapEllipsoid()
    wrap.setName("ellipsoid")
    wrap.set_dimensions(opensim_module().Vec3(*dims))
    return name, dims, quadrant, opensim_pin_sweep(wrap, translation, rotation, quadrant, origin, insertion, bounds)


def jumps(length: np.ndarray) -> np.ndarray:
    """The steps of ``length`` that jump: larger than 3 times both neighbouring steps plus 0.01 mm."""
    step = np.abs(np.diff(length))
    neighbours = np.maximum(np.r_[0.0, step[:-1]], np.r_[step[1:], 0.0])
    return step > 3 * neighbours + 1e-5


def continuity(length: np.ndarray) -> np.ndarray:
    """Rows next to no jump of ``length`` (:func:`jumps`)."""
    jump = jumps(length)
    continuous = np.ones(len(length), dtype=bool)
    continuous[1:] &= ~jump
    continuous[:-1] &= ~jump
    return continuous


def _vec(v):
    return np.array([v.get(0), v.get(1), v.get(2)])


def arm26_sweep(muscle_name, wrap_name, inactive=()):
    """OpenSim's wrapped segment's length for arm26's ``muscle_name`` over ``wrap_name`` along shoulder elevation."""
    osim = opensim_module()
    model = osim.Model(str(ARM26))
    for other in inactive:
        for body in model.getBodySet():
            for i in range(body.getWrapObjectSet().getSize()):
                if body.getWrapObjectSet().get(i).getName() == other:
                    body.getWrapObjectSet().get(i).set_active(False)
    state = model.initSystem()
    muscle = model.getMuscles().get(muscle_name)
    path = osim.GeometryPath.safeDownCast(muscle.getPath()) if hasattr(osim.GeometryPath, "safeDownCast") else muscle.getGeometryPath()
    wrap = None
    for body in model.getBodySet():
        for i in range(body.getWrapObjectSet().getSize()):
            if body.getWrapObjectSet().get(i).getName() == wrap_name:
                wrap, wrap_body = osim.WrapEllipsoid.safeDownCast(body.getWrapObjectSet().get(i)), body
    dims = tuple(_vec(wrap.get_dimensions()))
    translation, rotation = _vec(wrap.get_translation()), _vec(wrap.get_xyz_body_rotation())
    pathwrap = path.getWrapSet().get(next(i for i in range(path.getWrapSet().getSize())
                                          if path.getWrapSet().get(i).getWrapObjectName() == wrap_name))
    first, last = pathwrap.getStartPoint(), pathwrap.getEndPoint()
    points = path.getPathPointSet()
    count = points.getSize()
    lo_index = 0 if first < 1 else first - 1
    hi_index = count - 1 if last < 1 else last - 1
    elevation = model.getCoordinateSet().get("r_shoulder_elev")
    degrees = np.arange(-90.0, 180.0 + 1e-9, 0.5)
    local, others = [], []
    for angle in np.radians(degrees):
        elevation.setValue(state, angle)
        model.realizePosition(state)
        ground = np.array([_vec(points.get(i).getLocationInGround(state)) for i in range(count)])
        in_body = np.array([_vec(model.getGround().findStationLocationInAnotherFrame(state, osim.Vec3(*g), wrap_body))
                            for g in ground])
        local.append(_to_wrap_frame(in_body, translation, rotation))
        straight = np.linalg.norm(np.diff(ground, axis=0), axis=1)
        others.append(muscle.getLength(state) - straight.sum() + straight)  # OpenSim's length less the other segments
    local, others = np.array(local), np.array(others)
    # OpenSim wraps the first segment of the range that passes through the ellipsoid (its `mandatoryWrap`)
    chosen = np.full(len(degrees), hi_index - 1)
    for i in reversed(range(lo_index, hi_index)):
        chosen = np.where(shortest_path(local[:, i], local[:, i + 1], dims, wrap.get_quadrant())[0], i, chosen)
    rows = [(d, local[k, i], local[k, i + 1], others[k, i]) for k, (d, i) in enumerate(zip(degrees, chosen))]
    return f"arm26-{muscle_name}-{wrap_name}", dims, wrap.get_quadrant(), rows


def differences(dims, quadrant, rows) -> tuple:
    """mbkron's lengths − OpenSim's, which rows OpenSim is continuous at and its jumps, for one sweep's rows."""
    p = np.array([r[1] for r in rows])
    q = np.array([r[2] for r in rows])
    opensim = np.array([r[3] for r in rows])
    wrapped, t1, t2, arc = shortest_path(p, q, dims, quadrant)
    ours = np.linalg.norm(t1 - p, axis=1) + arc + np.linalg.norm(q - t2, axis=1)
    continuous, jump = continuity(opensim), jumps(opensim)
    difference = ours - opensim
    print(f"{len(rows)} states, wrapped {int(wrapped.sum())} (mbkron); "
          f"max |mbkron - OpenSim| {np.abs(difference[continuous]).max() * 1e3:.3f} mm where OpenSim is "
          f"continuous, {np.abs(difference).max() * 1e3:.3f} mm overall; mbkron - OpenSim in "
          f"[{difference.min() * 1e3:.4f}, {difference.max() * 1e3:.4f}] mm; OpenSim jumps at "
          f"{int(jump.sum())} steps")
    return difference, continuous, jump


def main() -> None:
    sweeps = [pin_sweep(case) for case in PIN_CASES]
    if ARM26.exists():
        sweeps.append(arm26_sweep("BIClong", "BIClonghh"))
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(OUTPUT, "wt", newline="") as f:
        f.write("# OpenSim 4.6 WrapEllipsoid lengths of one path segment vs its ends in the ellipsoid's frame; "
                "written by validation/opensim/compare_wrap_ellipsoid.py\n")
        writer = csv.writer(f)
        writer.writerow(["case", "a0", "a1", "a2", "quadrant", "degrees", "px", "py", "pz", "qx", "qy", "qz",
                         "opensim_length", "opensim_continuous", "max_difference"])
        for name, dims, quadrant, rows in sweeps:
            print(f"{name}: ", end="")
            _, continuous, _ = differences(dims, quadrant, rows)
            for (degrees, pi, qi, length), ok in zip(rows, continuous):
                writer.writerow([name, *(repr(float(v)) for v in dims), quadrant, repr(float(degrees)),
                                 *(repr(float(v)) for v in (*pi, *qi)), repr(float(length)), int(ok),
                                 repr(MAX_DIFFERENCE) if name in CHECKED else ""])
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


def triceps() -> None:
    """arm26's TRIlong over ``TRIlonghh`` (quadrant ``+z``) with its two cylinders inactive: prints the comparison
    and the states where the two differ by more than 1 mm (not stored)."""
    name, dims, quadrant, rows = arm26_sweep("TRIlong", "TRIlonghh", inactive=("TRI", "TRIlongglen"))
    print(f"{name} (cylinders inactive): ", end="")
    difference, continuous, jump = differences(dims, quadrant, rows)
    degrees = np.array([r[0] for r in rows])
    print(f"|mbkron - OpenSim| > 1 mm at {degrees[np.abs(difference) > 1e-3].tolist()} degrees; "
          f"OpenSim jumps after {degrees[:-1][jump].tolist()} degrees")


if __name__ == "__main__":
    if sys.argv[1:2] == ["TRIlong"]:
        triceps()
    else:
        main()
