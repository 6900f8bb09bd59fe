"""mbkron's wrapping against OpenSim 4.6: sweeps of arm26 (cylinders and ellipsoids) and Rajagopal2016.

For each sweep of :data:`SWEEPS` (one coordinate over a range, some others fixed, the rest at their
defaults) and each wrapped muscle spanning the swept coordinate, OpenSim gives its length ``getLength``,
its ``computeMomentArm`` about the swept coordinate and ``−dL/dq`` of its own length by central
differences (step :data:`STEP`); mbkron gives ``L`` and ``R`` (exact) from one evaluation of the paths
per sweep (``model.muscle_lengths``, ``model.moment_arms``, and which wraps engage:
:meth:`~mbkron.algorithms.paths.paths.MuscleSet.path_points`).

Run ``python -m validation.opensim.compare_wrapping`` from the repository root: it writes
``tests/data/wrapping_opensim.npz`` (read by ``tests/test_wrapping_models.py``), the figures
``docs/figures/wrap_<sweep>.png`` and prints the largest length differences where OpenSim's length
is continuous (no second difference of OpenSim's lengths above :data:`JUMP` next to the sample) and
the states where OpenSim's swap of the first two wraps would apply (:func:`swap_states`). The arm26 sweeps
take minutes each: ``python -m validation.opensim.compare_wrapping SWEEP …`` computes some sweeps (run several
in parallel), ``… merge`` then writes the data and figures from them (:data:`PARTS`).
``python -m validation.opensim.compare_wrapping paths SWEEP INDEX MUSCLE`` prints both tools' paths
(points and tangent points in ground) at one state of a sweep.
"""

from __future__ import annotations

import gzip
import re
import sys
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
_SHOULDER, _ELBOW = (-1.5708, 3.1416), (0.0, 2.2689)
#: (sweep name, model, swept coordinate, range (rad), samples, fixed coordinates {name: value (rad)})
SWEEPS = (("arm26_shoulder_elbow0", "arm26", "r_shoulder_elev", _SHOULDER, 61, {"r_elbow_flex": 0.0}),
          ("arm26_shoulder_elbow90", "arm26", "r_shoulder_elev", _SHOULDER, 61, {"r_elbow_flex": 1.5708}),
          ("arm26_elbow_shoulder0", "arm26", "r_elbow_flex", _ELBOW, 61, {"r_shoulder_elev": 0.0}),
          ("arm26_elbow_shoulder90", "arm26", "r_elbow_flex", _ELBOW, 61, {"r_shoulder_elev": 1.5708}),
          ("rajagopal_knee", "Rajagopal2016", "knee_angle_r", (0.0, 2.0944), 121, {}),
          ("rajagopal_hip", "Rajagopal2016", "hip_flexion_r", (-0.5236, 2.0944), 121, {}),
          ("rajagopal_ankle", "Rajagopal2016", "ankle_angle_r", (-0.6981, 0.5236), 121, {}),
          ("rajagopal_ankle_knee60", "Rajagopal2016", "ankle_angle_r", (-0.6981, 0.5236), 121, {"knee_angle_r": 1.0472}),
          ("rajagopal_hip_adduction", "Rajagopal2016", "hip_adduction_r", (-0.8727, 0.5236), 121, {}),
          ("rajagopal_hip_rotation", "Rajagopal2016", "hip_rotation_r", (-0.6981, 0.6981), 121, {}))
#: Differences of mbkron's length from OpenSim's own path above 1 mm where OpenSim's length is continuous, explained
#: in docs/wrapping.md ("Against OpenSim 4.6"): (sweep, muscle, interval of the swept coordinate (rad),
#: bounds of mbkron's length − the length of OpenSim's path (m)).
EXCEPTIONS = tuple((name, "TRIlong", (2.04, 2.52), (-2e-3, 4e-2)) for name in ("arm26_shoulder_elbow0", "arm26_shoulder_elbow90"))
"""arm26 TRIlong from shoulder elevation 117° to 144°: mbkron's path goes the long way round ``TRIlonghh``
(quadrant ``+z``) where the shortest path's tangent points lie on ``−z``; OpenSim's stays near the short way.
(At 117°, where TRIlong's sweeps do not settle, mbkron's goes the short way, ignoring the quadrant: 1.8 mm
shorter than OpenSim's.)"""
#: ``tests/test_wrapping_models.py`` recomputes every ARM26_STRIDE-th state of arm26's sweeps (on the shoulder sweeps:
#: −90°, −36°, 18°, 72° (stale tangent points), 126° (the exception), 180°).
ARM26_STRIDE = 12
#: Step of OpenSim's −dL/dq (rad).
STEP = 1e-6
#: OpenSim's length is taken as discontinuous next to a second difference above this (m).
JUMP = 5e-4
#: Most muscles drawn in one panel of a figure.
PER_PANEL = 8


def model_text(name: str) -> str:
    """The ``.osim`` text of a model from ``tests/data/osim``: ``Rajagopal2016``, ``arm26`` (with its
    cylinders and ellipsoids) or ``arm26_cylinders`` (arm26 without its two ellipsoid PathWraps)."""
    if name == "Rajagopal2016":
        return gzip.decompress((DATA / "Rajagopal2016.osim.gz").read_bytes()).decode()
    text = gzip.decompress((DATA / "arm26.osim.gz").read_bytes()).decode()
    if name == "arm26":
        return text
    return re.sub(r"<PathWrap name=\"[^\"]*\">\s*(?:<!--[^>]*-->\s*)?<wrap_object>(TRIlonghh|BIClonghh)</wrap_object>"
                  r".*?</PathWrap>", "", text, flags=re.S)


def load(model_name: str, directory: Path) -> tuple:
    """mbkron's model and OpenSim's of ``model_name``, from a file in ``directory``."""
    path = directory / f"{model_name}.osim"
    path.write_text(model_text(model_name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbkron.load_model(path)
    return model, OpenSimModel(path, list(model.coordinates), False)


def sweep_states(model, coordinate: str, bounds: tuple, count: int, fixed: dict) -> np.ndarray:
    """The states of a sweep, shape (count, nq): defaults, ``fixed`` values, the swept coordinate."""
    names = list(model.coordinates)
    q = np.tile([c.default for c in model.coordinate_records], (count, 1))
    for name, value in fixed.items():
        q[:, names.index(name)] = value
    q[:, names.index(coordinate)] = np.linspace(*bounds, count)
    return q


def mbkron_side(model, q: np.ndarray, k: int) -> tuple:
    """mbkron's lengths (count, M), moment arms about coordinate ``k`` (count, M) and :func:`swap_states`,
    from one evaluation of the paths."""
    kin = model.kinematics(q, 0)
    return model.muscle_lengths(q), model.moment_arms(q)[:, k, :], swap_states(model, kin,
                                                                             model.muscle_set.path_points(kin))


def sweep(model_name: str, model, opensim, coordinate: str, bounds: tuple, count: int, fixed: dict) -> dict:
    """Both tools' lengths and moment arms along one sweep (the wrapped muscles spanning ``coordinate``),
    the length of OpenSim's path through its points' current locations (:func:`opensim_path`) and
    :func:`swap_effect` per state."""
    k = list(model.coordinates).index(coordinate)
    q = sweep_states(model, coordinate, bounds, count, fixed)
    L, R, swaps = mbkron_side(model, q, k)
    spanning = [m for m in model.muscle_set.wrapping.muscles if np.abs(R[:, m]).max() > 1e-6]
    osim_coordinate = opensim.coordinates[coordinate]
    L_os, path_os, arm_os, grad_os = [], [], [], []
    for row in q:
        L_os.append(opensim.lengths(row)[spanning])
        path_os.append([opensim_path(opensim, m)[-1] for m in spanning])
        arm_os.append([opensim.muscles[m].computeMomentArm(opensim.state, osim_coordinate) for m in spanning])
        step = np.zeros_like(row)
        step[k] = STEP
        grad_os.append(-(opensim.lengths(row + step)[spanning] - opensim.lengths(row - step)[spanning]) / (2 * STEP))
    return {"q": q[:, k], "muscles": np.array([model.muscles[m] for m in spanning]),
            "mbkron_length": L[:, spanning], "mbkron_arm": R[:, spanning],
            "opensim_length": np.array(L_os), "opensim_path_length": np.array(path_os), "opensim_arm": np.array(arm_os), "opensim_gradient": np.array(grad_os),
            "swap_effect": swap_effect(model_name, model, q, swaps)}


def continuous(lengths: np.ndarray) -> np.ndarray:
    """Samples where a length is continuous (mask, shape of ``lengths``): not next to a second
    difference above :data:`JUMP` (the sweeps' smooth second differences are below 0.3 mm)."""
    kinks = np.abs(lengths[2:] - 2 * lengths[1:-1] + lengths[:-2]) > JUMP
    bad = np.zeros(lengths.shape, dtype=bool)
    for shift in range(3):
        bad[shift:shift + len(kinks)] |= kinks
    return ~bad


def _inside(surface, x: np.ndarray) -> np.ndarray:
    """OpenSim's ``insideRadius`` test of points ``x`` (..., 3) in a wrap's frame."""
    kind = type(surface).__name__
    if kind == "WrapEllipsoid":
        return ((x / np.asarray(surface.dimensions)) ** 2).sum(axis=-1) - 1.0 < -1e-4
    if kind == "WrapCylinder":
        return (x[..., :2] ** 2).sum(axis=-1) < surface.radius ** 2
    return (x ** 2).sum(axis=-1) < surface.radius ** 2


def _wrap_frame(model, kin, surface) -> tuple[np.ndarray, np.ndarray]:
    """Ground rotations (n, 3, 3) and origins (n, 3) of a wrap's frame at the states of ``kin``."""
    rotation, translation = surface.frame()
    if surface.body == "ground":
        return np.broadcast_to(rotation, kin.T.shape[:-3] + (3, 3)), np.broadcast_to(translation, kin.T.shape[:-3] + (3,))
    T = kin.T[..., model.body_index(surface.body), :, :]
    return T[..., :3, :3] @ rotation, T[..., :3, :3] @ translation + T[..., :3, 3]


def _wrap_groups(model):
    """Per wrapped muscle: (muscle, its point rows, its surfaces, their 0-based spans, its first wrap's index)."""
    ms = model.muscle_set
    wrapping, owner = ms.wrapping, ms.wrapping.wrap_muscles()
    for m in wrapping.muscles:
        wraps = np.flatnonzero(owner == m)
        yield (m, np.flatnonzero(ms.point_muscle == m), [wrapping.surfaces[w] for w in wraps],
               [wrapping.spans[w] for w in wraps], int(wraps[0]))


def swap_states(model, kin, nodes) -> dict:
    """Where OpenSim would swap the first two wraps of a path (``GeometryPath::applyWrapObjects``: after the
    first sweep, the first wrap did not wrap and the *last* segment the second wrap tried had a point inside
    it). mbkron's final path stands in for OpenSim's first sweep: the first wrap does not wrap there and the
    second's last candidate segment (its range's last two active points; no tangent point of the first
    wrap lies between them) has an end inside the second surface. Returns {muscle: states (indices)}."""
    out = {}
    for m, rows, surfaces, spans, first in _wrap_groups(model):
        if len(surfaces) < 2:
            continue
        ends = nodes.positions[:, rows[[spans[1][1] - 1, spans[1][1]]], :]  # (states, 2, 3)
        rotation, origin = _wrap_frame(model, kin, surfaces[1])
        local = ((ends - origin[:, None, :])[..., None, :] @ rotation[:, None])[..., 0, :]
        hit = ~nodes.wrapped[:, first] & _inside(surfaces[1], local).any(axis=-1)
        if hit.any():
            out[model.muscles[m]] = np.nonzero(hit)[0]
    return out


def swapped_text(text: str, muscle: str) -> str:
    """``.osim`` text with the first two ``PathWrap`` entries of ``muscle`` swapped (OpenSim's order after its swap)."""
    start = text.index(f'name="{muscle}"')
    end = text.index("</PathWrapSet>", start)
    wraps = list(re.finditer(r"<PathWrap .*?</PathWrap>", text[start:end], flags=re.S))
    a, b = wraps[0], wraps[1]
    part = text[start:end]
    part = part[:a.start()] + b.group(0) + part[a.end():b.start()] + a.group(0) + part[b.end():]
    return text[:start] + part + text[end:]


def swap_effect(model_name: str, model, q: np.ndarray, swaps: dict) -> np.ndarray:
    """Per state, the largest change of mbkron's length of a path at the states of :func:`swap_states` when its
    first two wraps are taken in the swapped order (the swap's reproducer; NaN where the swap does not apply)."""
    change = np.full(len(q), np.nan)
    for muscle, rows in swaps.items():
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "swapped.osim"
            path.write_text(swapped_text(model_text(model_name), muscle))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                swapped = mbkron.load_model(path)
        m = list(model.muscles).index(muscle)
        difference = np.abs(swapped.muscle_lengths(q[rows])[:, m] - model.muscle_lengths(q[rows])[:, m])
        change[rows] = np.fmax(change[rows], difference)
    return change


def _vector(v) -> np.ndarray:
    return np.array([v.get(0), v.get(1), v.get(2)])


def opensim_path(opensim, m: int) -> tuple:
    """OpenSim's current path of muscle ``m`` (``getCurrentPath``) at ``opensim.state``, with both ground positions
    of each point: ``getLocationInGround`` (``Point``'s Position-stage cache) and its frame's transform of its
    current ``getLocation`` (for a ``PathWrapPoint``, the tangent point OpenSim's last sweep set), and the lengths
    through each (straight pieces plus OpenSim's wrap lengths). Returns (names, wrap names, cached positions,
    current positions, length by the cached positions, length by the current ones)."""
    state = opensim.state
    current = opensim.muscles[m].getGeometryPath().getCurrentPath(state)
    points = [current.get(i) for i in range(current.getSize())]
    wraps = [p.getWrapObject().getName() if p.getWrapObject() is not None else "" for p in points]
    cached = np.array([_vector(p.getLocationInGround(state)) for p in points])
    fresh = np.array([_vector(p.getParentFrame().findStationLocationInGround(state, p.getLocation(state))) for p in points])
    arcs = [opensim.osim.PathWrapPoint.safeDownCast(p).getWrapLength(state) if i > 0 and wraps[i] and wraps[i] == wraps[i - 1]
            else None for i, p in enumerate(points)]
    lengths = [sum(arc if arc is not None else np.linalg.norm(X[i] - X[i - 1]) for i, arc in enumerate(arcs) if i > 0)
               for X in (cached, fresh)]
    return [p.getName() for p in points], wraps, cached, fresh, *lengths


def paths(sweep_name: str, index: int, muscle: str) -> None:
    """Prints OpenSim's current path of ``muscle`` at state ``index`` of a sweep (:func:`opensim_path`) and mbkron's
    (path points and tangent points in path order), in ground (m)."""
    name, model_name, coordinate, bounds, count, fixed = next(s for s in SWEEPS if s[0] == sweep_name)
    with tempfile.TemporaryDirectory() as directory:
        model, opensim = load(model_name, Path(directory))
        q = sweep_states(model, coordinate, bounds, count, fixed)[index:index + 1]
        m = list(model.muscles).index(muscle)
        total = opensim.lengths(q[0])[m]
        names, wraps, cached, fresh, by_cached, by_fresh = opensim_path(opensim, m)
        print(f"OpenSim: L = {total:.6f} m; through getLocationInGround {by_cached:.6f} m, through the points' "
              f"current locations {by_fresh:.6f} m (columns: getLocationInGround, current location)")
        for point, wrap, x, y in zip(names, wraps, cached, fresh):
            print(f"  {point:20s} {wrap:14s} {x[0]:+.6f} {x[1]:+.6f} {x[2]:+.6f}   {y[0]:+.6f} {y[1]:+.6f} {y[2]:+.6f}")
        nodes = model.muscle_set.path_points(model.kinematics(q, 0))
        _, rows, surfaces, _, first = next(g for g in _wrap_groups(model) if g[0] == m)
        print(f"mbkron: L = {nodes.lengths[0, m]:.6f} m")
        mine = np.concatenate([rows, nodes.n_points + 2 * first + np.arange(2 * len(surfaces))])
        labels = [f"point {i + 1}" for i in range(len(rows))] + [f"{s.name} T{t}" for s in surfaces for t in (1, 2)]
        keys = nodes.keys[0, mine]
        for node in np.argsort(keys, kind="stable")[:np.isfinite(keys).sum()]:
            x = nodes.positions[0, mine[node]]
            print(f"  {labels[node]:35s} {x[0]:+.6f} {x[1]:+.6f} {x[2]:+.6f}")


def figure(name: str, data: dict) -> None:
    """``docs/figures/wrap_<name>.png``: per group of at most :data:`PER_PANEL` muscles a column with L, the
    moment arms and mbkron − OpenSim L."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    muscles = list(data["muscles"])
    groups = [range(i, min(i + PER_PANEL, len(muscles))) for i in range(0, len(muscles), PER_PANEL)]
    fig, axes = plt.subplots(3, len(groups), figsize=(5.5 * len(groups), 7), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": (3, 3, 2)})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for column, group in zip(axes.T, groups):
        for c, m in enumerate(group):
            color = colors[c % len(colors)]
            column[0].plot(data["q"], data["mbkron_length"][:, m], color=color, label=muscles[m])
            column[0].plot(data["q"], data["opensim_length"][:, m], ":", color=color, lw=2)
            column[1].plot(data["q"], data["mbkron_arm"][:, m], color=color)
            column[1].plot(data["q"], data["opensim_arm"][:, m], "--", color=color, lw=1)
            column[1].plot(data["q"], data["opensim_gradient"][:, m], ":", color=color, lw=2)
            column[2].plot(data["q"], 1e3 * (data["mbkron_length"][:, m] - data["opensim_length"][:, m]), color=color)
        column[0].legend(fontsize=7, ncol=2)
        column[2].set_xlabel(f"{name}: swept coordinate (rad)")
    axes[0, 0].set_ylabel("length L (m)")
    axes[1, 0].set_ylabel("moment arm (m)")
    axes[2, 0].set_ylabel("mbkron − OpenSim L (mm)")
    fig.suptitle(f"{name}\nsolid: mbkron L, R = −dL/dq (exact); dotted: OpenSim L, −dL/dq;\n"
                 "dashed: OpenSim computeMomentArm", fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURES / f"wrap_{name}.png", dpi=60)
    plt.close(fig)


#: Where ``python -m validation.opensim.compare_wrapping SWEEP …`` keeps its sweeps for ``… merge``.
PARTS = Path(tempfile.gettempdir()) / "mbkron_compare_wrapping"


def compute(names: list[str]) -> None:
    """Computes the sweeps ``names`` (model by model) and keeps each in :data:`PARTS`."""
    PARTS.mkdir(exist_ok=True)
    loaded = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, model_name, coordinate, bounds, count, fixed in SWEEPS:
            if name not in names:
                continue
            if model_name not in loaded:
                loaded[model_name] = load(model_name, Path(directory))
            data = sweep(model_name, *loaded[model_name], coordinate, bounds, count, fixed)
            np.savez(PARTS / f"{name}.npz", **data)
            print(f"computed {name}", flush=True)


def merge() -> None:
    """The figures, ``tests/data/wrapping_opensim.npz`` (OpenSim's side: the test recomputes mbkron's) and the
    report, from the sweeps in :data:`PARTS`."""
    stored = {}
    for name, *_ in SWEEPS:
        data = dict(np.load(PARTS / f"{name}.npz"))
        figure(name, data)
        ok = continuous(data["opensim_length"])
        difference = np.abs(data["mbkron_length"] - data["opensim_length"])
        worst = np.where(ok, difference, 0.0).max(axis=0)
        print(f"{name}: {len(data['muscles'])} muscles; |ΔL| where OpenSim is continuous: max {worst.max():.2e} m "
              f"({data['muscles'][np.argmax(worst)]}); OpenSim jumps at {int((~ok).any(axis=1).sum())} samples; "
              f"per muscle (mm): {', '.join(f'{m} {1e3 * w:.3f}' for m, w in zip(data['muscles'], worst))}; "
              f"the swap applies at {int(np.isfinite(data['swap_effect']).sum())} states, changes L by at most "
              f"{np.nan_to_num(data.pop('swap_effect')).max():.1e} m")
        stored.update({f"{name}.{key}": value for key, value in data.items() if not key.startswith("mbkron")})
    np.savez_compressed(OUTPUT, **stored)
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["paths"]:
        paths(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1:2] == ["merge"]:
        merge()
    else:
        compute(sys.argv[1:] or [name for name, *_ in SWEEPS])
        if not sys.argv[1:]:
            merge()
