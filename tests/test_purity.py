"""Evaluation is a pure function of its arguments: no history, no shared mutable state.

A model is a fixed description (Pinocchio's ``Model``); where constraint solvers continue from
lives in a caller-owned workspace (``Data``). So ``joint_variables(q*)`` is bit-identical whatever
was evaluated before, threads sharing one model get exactly the serial results, and a workspace
changes only the path the solver takes, not the answer beyond the solver's tolerance.
"""

from __future__ import annotations

import gzip
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.examples.linkages import five_bar, four_bar

MODELS = {
    "four-bar": (lambda: four_bar("lu"), np.array([0.7]), lambda rng: rng.uniform(-1.8, 1.9, (800, 1))),
    "five-bar": (lambda: five_bar("projection"), np.array([1.2, 1.7]),
                 lambda rng: np.stack([rng.uniform(0.9, 1.6, 800), rng.uniform(1.4, 2.0, 800)], axis=-1)),
    "andrews": (lambda: andrews_squeezer("lu", "expressions"), np.array([INITIAL["beta"] + 0.4]),
                lambda rng: INITIAL["beta"] + rng.uniform(-1.0, 2.0, (800, 1))),
    "andrews, loop closures": (lambda: andrews_squeezer("lu", "loop_closures"), np.array([INITIAL["beta"] + 0.4]),
                               lambda rng: INITIAL["beta"] + rng.uniform(-1.0, 2.0, (800, 1))),
}


def _equal(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("name", list(MODELS))
def test_results_do_not_depend_on_history(name):
    factory, q_star, others = MODELS[name]
    model = factory()
    before = model.joint_variables(q_star, 2)
    for q in others(np.random.default_rng(1)):  # 800 evaluations at other states
        model.joint_variables(q, 2)
    after = model.joint_variables(q_star, 2)
    assert _equal(before, after)
    assert _equal(before, factory().joint_variables(q_star, 2))  # a fresh model agrees too


@pytest.mark.parametrize("name", list(MODELS))
def test_threads_sharing_one_model_get_the_serial_results(name):
    factory, _, others = MODELS[name]
    model = factory()
    states = others(np.random.default_rng(2))[:150]
    serial = [model.joint_variables(q, 2) for q in states]
    results: dict[int, list] = {}

    def walk(thread: int) -> None:
        order = states if thread % 2 == 0 else states[::-1]  # different histories per thread
        values = [model.joint_variables(q, 2) for q in order]
        results[thread] = values if thread % 2 == 0 else values[::-1]

    threads = [threading.Thread(target=walk, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for thread in range(4):
        assert all(_equal(a, b) for a, b in zip(results[thread], serial)), thread


@pytest.mark.parametrize("name", list(MODELS))
def test_a_workspace_changes_the_path_not_the_answer(name):
    """Continuing from state to state (as simulate does) agrees with solving from the assembly
    configuration to the solver's accuracy (tolerance 1e-9, quadratic convergence: ~1e-18)."""
    factory, _, _ = MODELS[name]
    model = factory()
    rng = np.random.default_rng(3)
    start = MODELS[name][1]
    path = start + np.cumsum(rng.uniform(-2e-3, 4e-3, (300, start.size)), axis=0)
    workspace = model.workspace()
    for q in path:
        carried = model.joint_variables(q, 2, workspace=workspace)
        fresh = model.joint_variables(q, 2)
        for a, b in zip(carried, fresh):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * max(1.0, np.abs(b).max()))


def test_a_workspace_belongs_to_its_model():
    four, five = four_bar("lu"), five_bar("projection")
    with pytest.raises(ValueError, match="`workspace` belongs to another model"):
        five.joint_variables(np.array([1.2, 1.7]), 2, workspace=four.workspace())
    four.mass_matrix(np.array([0.7]), workspace=four.workspace())  # its own workspace fits


def _one_muscle(insertion: float):
    """A pendulum with one muscle from the ground to the link, its insertion ``insertion`` m along it."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("swing", default=0.3)
    b.add_body("link", axis=(0, 0, 1), variable="swing", mass=1.0, com=(0.5, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_muscle("m", [("ground", (0.0, 0.2, 0.0)), ("link", (insertion, 0.0, 0.0))])
    return b.build()


def test_muscle_paths_through_a_workspace_are_the_same_bits():
    """With a workspace, ``muscle_lengths`` and ``moment_arms`` share one evaluation of the paths (kept for the
    next call at the same pose); they give exactly what they give without one — in either order, pose after
    pose, for a batch — the kept values are not the caller's arrays, and another model's paths are never
    read from it."""
    with tempfile.TemporaryDirectory() as directory, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shipped arm26's inertias
        path = Path(directory) / "arm26.osim"
        path.write_bytes(gzip.decompress((Path(__file__).parent / "data" / "osim" / "arm26.osim.gz").read_bytes()))
        models = (mbkron.load_model(path), mbkron.load_model(Path(__file__).parents[1] / "models" / "leg6dof9musc.toml"))
    rng = np.random.default_rng(11)
    for model in models:  # wrapped paths (arm26), moving and conditional points (leg6dof9musc)
        low, high = (np.array([c.range[k] for c in model.coordinate_records]) for k in (0, 1))
        poses = low + (high - low) * rng.uniform(size=(8, model.nq))
        workspace = model.workspace()
        for i, q in enumerate(poses):
            calls = (model.moment_arms, model.muscle_lengths) if i % 2 else (model.muscle_lengths, model.moment_arms)
            for call in calls + calls:  # the second pair reads what the first kept
                assert np.array_equal(call(q, workspace=workspace), call(q))
        kept = model.muscle_lengths(poses, workspace=workspace)
        assert np.array_equal(kept, model.muscle_lengths(poses))
        kept[...] = 0.0  # the caller's copy
        assert np.array_equal(model.moment_arms(poses, workspace=workspace), model.moment_arms(poses))
        assert np.array_equal(model.muscle_lengths(poses, workspace=workspace), model.muscle_lengths(poses))
    model, workspace = models[0], models[0].workspace()  # a -0.0 after a 0.0: evaluated at the -0.0 given
    zero = model.default_q.copy()
    zero[0] = 0.0
    negative = zero.copy()
    negative[0] = -0.0
    for q in (zero, negative):
        for call in (model.muscle_lengths, model.moment_arms):
            assert call(q, workspace=workspace).tobytes() == call(q).tobytes()
    near, far = _one_muscle(0.4), _one_muscle(0.9)
    shared = near.workspace()
    q = np.array([0.3])
    near.muscle_lengths(q, workspace=shared)
    assert np.array_equal(far.muscle_lengths(q, workspace=shared), far.muscle_lengths(q))
    assert not np.array_equal(far.muscle_lengths(q), near.muscle_lengths(q))
