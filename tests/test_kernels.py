"""The compiled kernels (mbkron.compiled.kernels) equal the vectorised numpy routes.

Everything else in the suite runs through the kernels when numba is installed, against independent
references (sympy, closed forms, Kane's method, Pinocchio); here the two implementations of the same
equations are compared directly on random 3-D trees, one state and batches, so that the numpy
routes (the fallback without numba) stay proven too.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from mbkron.compiled import kernels
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from tests.random_trees import build_model, random_tree

pytestmark = pytest.mark.skipif(not kernels.ENABLED,
                                reason="numba (the `fast` extra) is not installed, or MBKRON_KERNELS=numpy")


def _both(monkeypatch, compute):
    """``compute()`` through the kernels and through the numpy routes."""
    monkeypatch.setattr(kernels, "ENABLED", True)
    compiled = compute()
    monkeypatch.setattr(kernels, "ENABLED", False)
    reference = compute()
    monkeypatch.setattr(kernels, "ENABLED", True)
    return compiled, reference


def _assert_close(actual, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12 * scale)


@pytest.fixture(scope="module", params=range(6))
def tree_model(request):
    rng = np.random.default_rng(900 + request.param)
    return build_model(random_tree(rng, nb=int(rng.integers(1, 12)), nq=int(rng.integers(1, 5))))


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_kinematics_equal_numpy_route(monkeypatch, tree_model, batch, order):
    q = np.random.default_rng(1).uniform(-1.2, 1.2, size=batch + (tree_model.nq,))
    compiled, reference = _both(monkeypatch, lambda: tree_model.kinematics(q, order))
    assert compiled.T.shape == reference.T.shape == batch + (tree_model.nb, 4, 4)
    _assert_close(compiled.T, reference.T)
    for name in ("joint_twists", "twists", "dT", "d2T"):
        mine, theirs = getattr(compiled, name), getattr(reference, name)
        assert (mine is None) == (theirs is None), name
        if theirs is not None:
            assert mine.shape == theirs.shape, name
            _assert_close(mine, theirs)


@pytest.mark.parametrize("batch", [(), (4,), (2, 3), (600,)])  # 600 states: the multi-threaded kernel
def test_equations_of_motion_equal_numpy_route(monkeypatch, tree_model, batch):
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-1.2, 1.2, size=(2,) + batch + (tree_model.nq,))
    compiled, reference = _both(monkeypatch, lambda: tree_model.equations_of_motion(q, qd, loads=()))
    for name in ("mass_matrix", "velocity_forces", "gravity_forces", "applied_forces"):
        mine, theirs = getattr(compiled, name), getattr(reference, name)
        assert mine.shape == theirs.shape, name
        _assert_close(mine, theirs)
    M = compiled.mass_matrix
    assert np.array_equal(M, np.swapaxes(M, -1, -2))  # exactly symmetric


def test_separate_terms_and_broadcasting(monkeypatch, tree_model):
    """mass_matrix, velocity_forces and gravity_forces alone; q̇ broadcast against a batch of q."""
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-1, 1, size=(3, tree_model.nq)), rng.uniform(-1, 1, size=tree_model.nq)
    for compute in (lambda: tree_model.mass_matrix(q), lambda: tree_model.gravity_forces(q),
                    lambda: tree_model.velocity_forces(q, qd), lambda: tree_model.velocity_forces(q[0], q)):
        compiled, reference = _both(monkeypatch, compute)
        assert compiled.shape == reference.shape
        _assert_close(compiled, reference)


def test_closed_loop_with_loads(monkeypatch):
    """Andrews' squeezer: constraint-solved joint variables (per-state Hessians) and a spring and a
    motor torque among the loads, which go through the kinematics kernel."""
    model = andrews_squeezer("lu", "expressions")
    q = INITIAL["beta"] + np.linspace(0.0, 0.3, 40)[:, None]
    qd, qdd = np.full_like(q, 3.0), np.full_like(q, -20.0)
    compiled, reference = _both(monkeypatch, lambda: model.inverse_dynamics(q, qd, qdd, t=0.01))
    _assert_close(compiled, reference)


def _loaded_tree_model(seed: int):
    """A random tree with spring-dampers (one to the ground), joint-space loads and a point force."""
    from mbkron.dynamics import loads

    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=7, nq=3, fixed_fraction=0.0)
    model = build_model(spec)
    extra = (
        loads.SpringDamper("b6", (0.1, 0.0, 0.2), "ground", (0.5, -0.3, 0.1), stiffness=120.0, damping=3.0,
                           free_length=0.2),
        loads.SpringDamper("b2", (0.0, 0.3, 0.0), "b5", (0.2, 0.0, -0.1), stiffness=40.0, damping=0.5),
        loads.JointTorque("b1", lambda t, q, qd: 2.0 + q[..., 0]),
        loads.GeneralizedForce("q2", 1.5),
        loads.PointForce("b4", (0.1, 0.1, 0.0), (0.0, -3.0, 1.0)),
    )
    return model, extra


@pytest.mark.parametrize("batch", [(), (5,), (600,)])
def test_spring_dampers_and_joint_loads_in_the_kernel(monkeypatch, batch):
    """Spring-dampers go through the dynamics kernel, joint-space loads skip the kinematics; the
    applied forces equal the numpy route's (Eq. 46, 161)."""
    model, extra = _loaded_tree_model(11)
    rng = np.random.default_rng(6)
    q, qd = rng.uniform(-1, 1, size=(2,) + batch + (model.nq,))
    for chosen in (extra, extra[:2], extra[2:4]):
        compiled, reference = _both(monkeypatch, lambda: model.equations_of_motion(q, qd, loads=chosen, t=0.3))
        for name in ("mass_matrix", "velocity_forces", "gravity_forces", "applied_forces"):
            _assert_close(getattr(compiled, name), getattr(reference, name))
        assert np.abs(reference.applied_forces).max() > 1.0  # the loads do act


def test_spring_with_coincident_points_reported_by_both_routes(monkeypatch):
    from mbkron.dynamics import loads

    model, _ = _loaded_tree_model(11)
    q = np.zeros(model.nq)
    T = model.kinematics(q, 0).T[model.body_index("b3")]
    spring = loads.SpringDamper("b3", (0.0, 0.0, 0.0), "ground", tuple(T[:3, 3]), stiffness=1.0)
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        with pytest.raises(ValueError, match="coincide"):
            model.equations_of_motion(q, q, loads=(spring,))


def test_numpy_route_selected_by_environment():
    """``MBKRON_KERNELS=numpy`` turns the kernels off for a whole process."""
    code = "from mbkron import kernels; print(kernels.ENABLED)"
    env = dict(os.environ, MBKRON_KERNELS="numpy")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    env["MBKRON_KERNELS"] = ""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.fixture(scope="module", params=["shoulder_rhythm_b.toml", "leg6dof9musc.toml"])
def muscle_model(request):
    from pathlib import Path

    from mbkron import load_model

    return load_model(Path(__file__).resolve().parents[1] / "models" / request.param)


@pytest.mark.parametrize("batch", [(), (7,)])
def test_muscle_lengths_and_moment_arms_equal_numpy_route(monkeypatch, muscle_model, batch):
    """Moving points on tabulated functions (splines), via points, ground points."""
    rng = np.random.default_rng(5)
    lo, hi = np.array([c.range for c in muscle_model.coordinate_records]).T
    lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
    q = lo + (hi - lo) * rng.uniform(0.05, 0.95, size=batch + (muscle_model.nq,))
    for compute in (lambda: muscle_model.muscle_lengths(q), lambda: muscle_model.moment_arms(q)):
        compiled, reference = _both(monkeypatch, compute)
        assert compiled.shape == reference.shape
        _assert_close(compiled, reference)


def test_zero_length_segment_reported_by_both_routes(monkeypatch):
    import mbkron
    from mbkron.core.errors import ConfigurationError

    b = mbkron.ModelBuilder()
    b.add_coordinate("x", unit="m")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="x", mass=1.0)
    b.add_muscle("m", [("ground", (0.5, 0, 0)), ("slider", (0, 0, 0))])
    model = b.build()
    for enabled in (True, False):
        monkeypatch.setattr(kernels, "ENABLED", enabled)
        assert model.muscle_lengths([0.2]) == pytest.approx([0.3])
        with pytest.raises(ConfigurationError, match=r"muscle `m`: points 0 and 1 .* coincide"):
            model.moment_arms([0.5])
