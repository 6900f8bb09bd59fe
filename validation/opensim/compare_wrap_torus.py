"""mbkron's path round a torus against OpenSim 4.6's ``WrapTorus`` (issue #16).

Each sweep turns a pin joint (about ground's z) in 0.5° steps; a path from a ground point to a point
on the turned body passes through the hole of a torus fixed to that body (one path point each side,
so the path is one segment and OpenSim's ``PathSpring.getLength`` is the wrapped segment's length):

- ``pin-sideways``: the torus's axis along the body's x, the ground point moving sideways across the
  meridian plane of the insertion (the path leaves the meridian plane; at 0° it lies in it);
- ``pin-radial``: the torus's axis along the body's y, the ground point moving towards and away from the
  torus's axis (the path engages the tube, wraps it, and, past the tube's centre, OpenSim's
  ``+x`` cylinder forces the long way round);
- ``pin-crossing-all``, ``pin-crossing--y``: a path crossing the torus's plane ``y = 0`` obliquely, the
  second with the torus's quadrant ``-y`` (it restricts OpenSim's ring point to the side ``y < 0``);
- ``pin-thin-sideways``: a thin ring (``R, r`` = 0.011, 0.0105: a hole of 0.5 mm, issue 28), its axis along
  the body's x, the ground point 10 mm before the ring's plane moving sideways across the hole's funnel
  (±20 mm), the insertion 12 mm behind it near the axis.

For each state the segment's ends in the torus's frame (``p``, ``q``) are stored with OpenSim's
length in ``tests/data/wrap_torus_opensim.csv.gz`` (read by ``tests/test_wrap_torus.py``, which
recomputes mbkron's lengths; OpenSim is not needed there). Rows where OpenSim's length jumps (a change
between neighbouring states larger than 3 times both neighbouring changes plus 0.01 mm) are marked
``opensim_continuous = 0``. The script prints, per sweep, how often each wraps and the differences.

Run ``python -m validation.opensim.compare_wrap_torus`` from the repository root.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import numpy as np

from mbkron.multibody.muscles.wrap_torus import shortest_path
from validation.opensim.compare_wrap_ellipsoid import continuity, opensim_module, opensim_pin_sweep

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "data" / "wrap_torus_opensim.csv.gz"

#: (name, inner radius, outer radius, translation on the body, xyz body rotation, quadrant, origin in
#: ground, insertion on the body, angle range in degrees)
PIN_CASES = [
    ("pin-sideways", 0.01, 0.05, (0.1, 0.0, 0.0), (0.0, np.pi / 2, 0.0), "all",
     (0.04, 0.0, -0.044), (0.16, 0.0, -0.044), (-70, 70)),
    ("pin-radial", 0.01, 0.05, (0.1, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), "all",
     (0.145, 0.06, 0.004), (0.145, -0.06, 0.0), (-40, 20)),
    ("pin-crossing-all", 0.012, 0.045, (0.1, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), "all",
     (0.135, 0.07, 0.012), (0.14, -0.05, -0.02), (-40, 20)),
    ("pin-crossing--y", 0.012, 0.045, (0.1, 0.0, 0.0), (np.pi / 2, 0.0, 0.0), "-y",
     (0.135, 0.07, 0.012), (0.14, -0.05, -0.02), (-40, 20)),
    ("pin-thin-sideways", 0.0105, 0.011, (0.1, 0.0, 0.0), (0.0, np.pi / 2, 0.0), "all",
     (0.09, 0.0, 0.002), (0.112, 0.001, 0.0005), (-12.5, 12.5)),
]


def pin_sweep(case):
    """OpenSim's lengths and the segment's ends in the torus's frame for one pin sweep."""
    name, inner, outer, translation, rotation, quadrant, origin, insertion, bounds = case
    wrap = opensim_module().WrapTorus()
    wrap.setName("torus")
    wrap.set_inner_radius(inner)
    wrap.set_outer_radius(outer)
    return name, inner, outer, quadrant, opensim_pin_sweep(wrap, translation, rotation, quadrant, origin, insertion,
                                                           bounds)


def main() -> None:
    sweeps = [pin_sweep(case) for case in PIN_CASES]
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    with io.TextIOWrapper(gzip.GzipFile(OUTPUT, "wb", mtime=0), newline="") as f:  # reproducible bytes
        f.write("# OpenSim 4.6 WrapTorus lengths of one path segment vs its ends in the torus's frame; "
                "written by validation/opensim/compare_wrap_torus.py\n")
        writer = csv.writer(f)
        writer.writerow(["case", "inner_radius", "outer_radius", "quadrant", "degrees", "px", "py", "pz", "qx", "qy", "qz",
                         "opensim_length", "opensim_continuous"])
        for name, inner, outer, quadrant, rows in sweeps:
            p = np.array([r[1] for r in rows])
            q = np.array([r[2] for r in rows])
            opensim = np.array([r[3] for r in rows])
            wrapped, t1, t2, arc = shortest_path(p, q, outer, inner, quadrant)
            ours = np.linalg.norm(t1 - p, axis=1) + arc + np.linalg.norm(q - t2, axis=1)
            straight = np.linalg.norm(q - p, axis=1)
            opensim_wrapped = opensim > straight + 1e-9
            continuous = continuity(opensim)
            both = continuous & wrapped & opensim_wrapped
            difference = ours - opensim
            print(f"{name}: {len(rows)} states, wrapped: mbkron {int(wrapped.sum())}, OpenSim {int(opensim_wrapped.sum())}, "
                  f"both {int((wrapped & opensim_wrapped).sum())}; OpenSim jumps next to {int((~continuous).sum())} rows")
            if both.any():
                print(f"  where both wrap and OpenSim is continuous: mbkron - OpenSim in "
                      f"[{difference[both].min() * 1e6:.4f}, {difference[both].max() * 1e6:.2f}] µm")
            for degrees, d, w, o in zip(p[:, 0] * 0 + [r[0] for r in rows], difference, wrapped, opensim_wrapped):
                if w != o:
                    print(f"  {degrees:6.1f}°: mbkron wraps {w}, OpenSim {o}, mbkron - OpenSim {d * 1e3:.4f} mm")
            for (degrees, pi, qi, length), ok in zip(rows, continuous):
                writer.writerow([name, repr(inner), repr(outer), quadrant, repr(float(degrees)),
                                 *(repr(float(v)) for v in (*pi, *qi)), repr(float(length)), int(ok)])
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
