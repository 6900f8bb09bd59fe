"""mbkron's wrapping (cylinders) against OpenSim 4.6: sweeps of arm26 and Rajagopal2016.

For each sweep of :data:`SWEEPS` (one coordinate over a range, the others at their defaults) and each
wrapped muscle spanning the swept coordinate, OpenSim gives its length ``getLength``, its
``computeMomentArm`` about the swept coordinate and ``−dL/dq`` of its own length by central
differences (step :data:`STEP`); mbkron gives ``L`` and ``R`` (exact). arm26 is used with its
ellipsoid ``PathWrap`` entries removed on both sides (``arm26_cylinders``: TRIlong keeps its two
cylinders, BIClong has no wrap), until the ellipsoid is merged.

Run ``python -m validation.opensim.compare_wrapping`` from the repository root: it writes
``tests/data/wrapping_opensim.npz`` (read by ``tests/test_wrapping_opensim.py``), the figures
``docs/figures/wrap_<sweep>.png`` and prints the largest length differences where OpenSim's length
is continuous (no second difference of OpenSim's lengths above :data:`JUMP` next to the sample).
"""

from __future__ import annotations

import gzip
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np

import mbkron
from validation.opensim.compare_osim import OpenSimModel

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "osim"
OUTPUT = ROOT / "tests" / "data" / "wrapping_opensim.npz"
FIGURES = ROOT / "docs" / "figures"
#: (sweep name, model, swept coordinate, range (rad), samples)
SWEEPS = (("arm26_elbow", "arm26_cylinders", "r_elbow_flex", (0.0, 2.2689), 121),
          ("arm26_shoulder", "arm26_cylinders", "r_shoulder_elev", (-1.5708, 3.1416), 121),
          ("rajagopal_knee", "Rajagopal2016", "knee_angle_r", (0.0, 2.0944), 121),
          ("rajagopal_hip", "Rajagopal2016", "hip_flexion_r", (-0.5236, 2.0944), 121))
#: Step of OpenSim's −dL/dq (rad).
STEP = 1e-6
#: OpenSim's length is taken as discontinuous next to a second difference above this (m).
JUMP = 5e-4


def model_text(name: str) -> str:
    """The ``.osim`` text of a model from ``tests/data/osim`` (``arm26_cylinders``: arm26 without its
    ellipsoid PathWraps)."""
    if name == "Rajagopal2016":
        return gzip.decompress((DATA / "Rajagopal2016.osim.gz").read_bytes()).decode()
    text = gzip.decompress((DATA / "arm26.osim.gz").read_bytes()).decode()
    return re.sub(r"<PathWrap name=\"[^\"]*\">\s*(?:<!--[^>]*-->\s*)?<wrap_object>(TRIlonghh|BIClonghh)</wrap_object>"
                  r".*?</PathWrap>", "", text, flags=re.S)


def sweep(name: str, model_name: str, coordinate: str, bounds: tuple, count: int, directory: Path) -> dict:
    path = directory / f"{model_name}.osim"
    path.write_text(model_text(model_name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbkron.load_model(path, backend="numpy")
    opensim = OpenSimModel(path, list(model.coordinates), False)
    k = list(model.coordinates).index(coordinate)
    q = np.tile([c.default for c in model.coordinate_records], (count, 1))
    q[:, k] = np.linspace(*bounds, count)
    R = model.moment_arms(q)[:, k, :]
    spanning = [m for m in model.muscle_set.wrapping.muscles if np.abs(R[:, m]).max() > 1e-6]
    osim_coordinate = opensim.coordinates[coordinate]
    L_os, arm_os, grad_os = [], [], []
    for row in q:
        L_os.append(opensim.lengths(row)[spanning])
        arm_os.append([opensim.muscles[m].computeMomentArm(opensim.state, osim_coordinate) for m in spanning])
        step = np.zeros_like(row)
        step[k] = STEP
        grad_os.append(-(opensim.lengths(row + step)[spanning] - opensim.lengths(row - step)[spanning]) / (2 * STEP))
    return {"q": q[:, k], "muscles": np.array([model.muscles[m] for m in spanning]),
            "mbkron_length": model.muscle_lengths(q)[:, spanning], "mbkron_arm": R[:, spanning],
            "opensim_length": np.array(L_os), "opensim_arm": np.array(arm_os), "opensim_gradient": np.array(grad_os)}


def continuous(lengths: np.ndarray) -> np.ndarray:
    """Samples where a length is continuous (mask, shape of ``lengths``): not next to a second
    difference above :data:`JUMP` (the sweeps' smooth second differences are below 0.1 mm)."""
    kinks = np.abs(lengths[2:] - 2 * lengths[1:-1] + lengths[:-2]) > JUMP
    bad = np.zeros(lengths.shape, dtype=bool)
    for shift in range(3):
        bad[shift:shift + len(kinks)] |= kinks
    return ~bad


def figure(name: str, data: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    muscles = list(data["muscles"])
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for m, muscle in enumerate(muscles[:8]):
        c = colors[m % len(colors)]
        axes[0].plot(data["q"], data["mbkron_length"][:, m], color=c, label=muscle)
        axes[0].plot(data["q"], data["opensim_length"][:, m], ":", color=c, lw=2)
        axes[1].plot(data["q"], data["mbkron_arm"][:, m], color=c)
        axes[1].plot(data["q"], data["opensim_arm"][:, m], "--", color=c, lw=1)
        axes[1].plot(data["q"], data["opensim_gradient"][:, m], ":", color=c, lw=2)
    axes[0].set_ylabel("length L (m)")
    axes[1].set_ylabel("moment arm (m)")
    axes[1].set_xlabel(f"{name}: swept coordinate (rad)")
    axes[0].legend(fontsize=7, ncol=2)
    axes[0].set_title("solid: mbkron L, R = −dL/dq (exact);  dotted: OpenSim L and −dL/dq;  dashed: OpenSim computeMomentArm",
                      fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURES / f"wrap_{name}.png", dpi=90)
    plt.close(fig)


def main() -> None:
    stored = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, model_name, coordinate, bounds, count in SWEEPS:
            data = sweep(name, model_name, coordinate, bounds, count, Path(directory))
            figure(name, data)
            ok = continuous(data["opensim_length"])
            difference = np.abs(data["mbkron_length"] - data["opensim_length"])
            worst = np.where(ok, difference, 0.0).max(axis=0)
            print(f"{name}: {len(data['muscles'])} muscles; |ΔL| where OpenSim is continuous: max {worst.max():.2e} m "
                  f"({data['muscles'][np.argmax(worst)]}); OpenSim jumps at {int((~ok).any(axis=1).sum())} samples")
            stored.update({f"{name}.{key}": value for key, value in data.items()})
    np.savez_compressed(OUTPUT, **stored)
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
