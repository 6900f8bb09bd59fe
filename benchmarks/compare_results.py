"""The shipped models' results, saved or compared bit for bit: how a change to the engine shows it changed nothing.

``python benchmarks/compare_results.py save FILE.npz`` on one commit (a worktree, with empty caches), then
``python benchmarks/compare_results.py compare FILE.npz`` on another, from the repository root. For every model in
``models/``: the joint variables with their gradients and Hessians along a seeded 200-state random walk with a
0.9-rad jump in its middle (one state at a time with a workspace, and the walk as one batch), forward dynamics (one
state at a time with a workspace, and batched), inverse dynamics (one state, and batched), and ``mbkron.simulate``
runs (TRBDF2 at 1e-6, DOP853 at 1e-5 and 1e-8, RK45 at 1e-6; a run that fails is recorded as NaN). With ``--osim``,
also every OpenSim test model (``tests/data/osim/*.osim.gz``) at 6 seeded states about its default pose: what
``validation.purity`` evaluates (joint variables, kinematics, M, N q̇, G, the equations of motion, forward and
inverse dynamics, muscle lengths and moment arms, one state and batched); an evaluation that raises is recorded as
its error's text, which must then be the same. ``compare`` prints each array that is not bit-identical with its
largest relative difference (entry by entry, ``|a − b| / max(1, |b|)``) and its largest difference relative to the
array's largest entry (what rounding in an ill-conditioned solve or a different summation order moves), then the
count. Only the public API is used. This is the comparison behind the closing
notes of issue 26's sessions (1 881 arrays of the shipped models).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbkron  # noqa: E402


def osim_results() -> dict[str, np.ndarray]:
    """The OpenSim test models' evaluations by ``validation.purity``, by name (an error as a text array)."""
    import tempfile

    from validation.purity import evaluate, load

    out: dict[str, np.ndarray] = {}
    osim = sorted((ROOT / "tests" / "data" / "osim").glob("*.osim.gz"))
    with tempfile.TemporaryDirectory() as directory:
        for path in osim:
            try:
                model = load(path, directory)
            except Exception as error:  # noqa: BLE001 - a model that does not load is a result too
                out[f"{path.name}|load"] = np.array(f"{type(error).__name__}: {error}")
                continue
            for case, value in evaluate(model, 6).items():
                if isinstance(value, str):
                    out[f"{path.name}|{case}"] = np.array(value)
                else:
                    out[f"{path.name}|{case}"] = np.concatenate([np.ravel(a).astype(float) for a in value])
    return out


def results() -> dict[str, np.ndarray]:
    """Every array compared (the shipped models'), by name."""
    out: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(3)
    for path in sorted((ROOT / "models").glob("*.toml")):
        name = path.stem
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbkron.load_model(path)
        q = model.default_q + 0.02 * rng.standard_normal((200, model.nq)).cumsum(axis=0)
        q[100] += 0.9
        workspace = model.workspace()
        for i, row in enumerate(q):
            f, grad, hess = model.joint_variables(row, 2, workspace=workspace)
            out[f"{name}|jv|{i}"] = np.concatenate([f.ravel(), grad.ravel(), hess.ravel()])
        qd = rng.standard_normal(model.nq)
        workspace = model.workspace()
        out[f"{name}|fd"] = np.array([model.forward_dynamics(row, qd, workspace=workspace) for row in q])
        QD, QDD = rng.standard_normal(q.shape), rng.standard_normal(q.shape)
        out[f"{name}|fdbatch"] = model.forward_dynamics(q, QD)
        out[f"{name}|idbatch"] = model.inverse_dynamics(q, QD, QDD)
        out[f"{name}|id1"] = np.array([model.inverse_dynamics(a, b, c) for a, b, c in zip(q[:20], QD[:20], QDD[:20])])
        out[f"{name}|batch"] = np.concatenate([a.ravel() for a in model.joint_variables(q, 2, workspace=model.workspace())])
        t_end = 0.03 if name == "andrews_squeezer" else 0.5
        for method, tol in (("TRBDF2", 1e-6), ("DOP853", 1e-5), ("DOP853", 1e-8), ("RK45", 1e-6)):
            run = mbkron.simulate(model, (0.0, t_end), model.default_q, np.zeros(model.nq), method=method, rtol=tol,
                                  atol=tol)
            out[f"{name}|{method}|{tol}"] = (np.concatenate([run.t, run.q.ravel(), run.qd.ravel()]) if run.success
                                             else np.array([np.nan]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["save", "compare"])
    parser.add_argument("file", type=Path)
    parser.add_argument("--osim", action="store_true", help="also the OpenSim test models (tests/data/osim)")
    args = parser.parse_args(argv)
    mine = results()
    if args.osim:
        mine.update(osim_results())
    if args.action == "save":
        np.savez(args.file, **mine)
        print(f"saved {len(mine)} arrays to {args.file}")
        return 0
    with np.load(args.file) as saved:
        theirs = {key: saved[key] for key in saved.files}
    differing, worst, worst_of_largest = 0, 0.0, 0.0
    for key in sorted(set(mine) | set(theirs)):
        a, b = mine.get(key), theirs.get(key)
        if a is None or b is None or a.shape != b.shape:
            differing += 1
            print(f"{key}: only one side has it, or the shapes differ")
        elif a.dtype.kind == "U" or b.dtype.kind == "U":  # an error's text
            if a.dtype != b.dtype or str(a) != str(b):
                differing += 1
                print(f"{key}: {str(b)[:200]!r} before, {str(a)[:200]!r} now")
        elif not np.array_equal(a, b, equal_nan=True):
            differing += 1
            relative = float(np.nanmax(np.abs(a - b) / np.maximum(1.0, np.abs(b))))
            scale = float(np.nanmax(np.abs(b), initial=0.0))
            of_largest = float(np.nanmax(np.abs(a - b))) / scale if scale > 0 else np.inf
            worst, worst_of_largest = max(worst, relative), max(worst_of_largest, of_largest)
            print(f"{key}: differs, largest relative difference {relative:.2e}, {of_largest:.2e} of the largest entry")
    total = len(set(mine) | set(theirs))
    print(f"{total - differing} of {total} arrays bit-identical; largest relative difference {worst:.2e} "
          f"(|a − b| / max(1, |b|) entry by entry), {worst_of_largest:.2e} of an array's largest entry")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
