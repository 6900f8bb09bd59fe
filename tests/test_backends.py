"""The two backends -- the vectorised numpy route and the compiled kernels -- give the same results
(1e-12 relative) on random 3-D trees, a closed loop with loads, and muscle models with moving points.

The dissertation as written (:mod:`mbkron.reference`) is the oracle of both: tests/test_reference.py.
Everything else in the suite runs through the default backend against independent references (sympy,
closed forms, Kane's method, Pinocchio); here the two routes are compared directly until one engine
replaces them. The ``compiled`` backend's cases are skipped where numba is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron.backends import BACKENDS, available_backends
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from tests.random_trees import build_model, random_tree

def _all(model, compute):
    """``compute(m)`` for ``model`` on every available backend, as a dict by backend name."""
    return {name: compute(model.with_backend(name)) for name in available_backends()}


def _both(model, compute):
    """The other backends' results and the numpy backend's: a list of (name, result) and numpy's result."""
    results = _all(model, compute)
    reference = results.pop("numpy")
    return list(results.items()), reference


def _assert_close(actual, expected):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12 * scale)


@pytest.fixture(scope="module", params=range(6))
def tree_model(request):
    rng = np.random.default_rng(900 + request.param)
    return build_model(random_tree(rng, nb=int(rng.integers(1, 12)), nq=int(rng.integers(1, 5))))


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_kinematics_equal_on_every_backend(tree_model, batch, order):
    q = np.random.default_rng(1).uniform(-1.2, 1.2, size=batch + (tree_model.nq,))
    others, reference = _both(tree_model, lambda m: m.kinematics(q, order))
    assert others
    for backend, result in others:
        assert result.T.shape == reference.T.shape == batch + (tree_model.nb, 4, 4)
        _assert_close(result.T, reference.T)
        for name in ("joint_twists", "twists", "dT", "d2T"):
            mine, theirs = getattr(result, name), getattr(reference, name)
            assert (mine is None) == (theirs is None), (backend, name)
            if theirs is not None:
                assert mine.shape == theirs.shape, (backend, name)
                _assert_close(mine, theirs)


@pytest.mark.parametrize("batch", [(), (4,), (2, 3), (600,)])  # 600 states: the multi-threaded kernel
def test_equations_of_motion_equal_on_every_backend(tree_model, batch):
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-1.2, 1.2, size=(2,) + batch + (tree_model.nq,))
    others, reference = _both(tree_model, lambda m: m.equations_of_motion(q, qd, loads=()))
    for backend, result in others:
        for name in ("mass_matrix", "velocity_forces", "gravity_forces", "applied_forces"):
            mine, theirs = getattr(result, name), getattr(reference, name)
            assert mine.shape == theirs.shape, (backend, name)
            _assert_close(mine, theirs)
        if backend == "compiled":
            M = result.mass_matrix
            assert np.array_equal(M, np.swapaxes(M, -1, -2))  # exactly symmetric


def test_separate_terms_and_broadcasting(tree_model):
    """mass_matrix, velocity_forces and gravity_forces alone; q̇ broadcast against a batch of q."""
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-1, 1, size=(3, tree_model.nq)), rng.uniform(-1, 1, size=tree_model.nq)
    for compute in (lambda m: m.mass_matrix(q), lambda m: m.gravity_forces(q),
                    lambda m: m.velocity_forces(q, qd), lambda m: m.velocity_forces(q[0], q)):
        others, reference = _both(tree_model, compute)
        for backend, result in others:
            assert result.shape == reference.shape, backend
            _assert_close(result, reference)


@pytest.mark.parametrize(("solver", "constraints"),
                         [("lu", "expressions"), ("projection", "expressions"), ("lu", "loop_closures")])
def test_closed_loop_with_loads(solver, constraints):
    """Andrews' squeezer: constraint-solved joint variables (per-state Hessians; on the compiled
    backend the compiled Newton step for expressions, compiled tree kinematics for loop closures)
    and a spring and a motor torque among the loads."""
    model = andrews_squeezer(solver, constraints)
    q = INITIAL["beta"] + np.linspace(0.0, 0.3, 40)[:, None]
    qd, qdd = np.full_like(q, 3.0), np.full_like(q, -20.0)
    others, reference = _both(model, lambda m: m.inverse_dynamics(q, qd, qdd, t=0.01))
    for _, result in others:
        _assert_close(result, reference)


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
def test_spring_dampers_and_joint_loads(batch):
    """Spring-dampers go through the dynamics kernel on the compiled backend, joint-space loads skip
    the kinematics; the applied forces are equal on every backend (Eq. 46, 161)."""
    model, extra = _loaded_tree_model(11)
    rng = np.random.default_rng(6)
    q, qd = rng.uniform(-1, 1, size=(2,) + batch + (model.nq,))
    for chosen in (extra, extra[:2], extra[2:4]):
        others, reference = _both(model, lambda m: m.equations_of_motion(q, qd, loads=chosen, t=0.3))
        for backend, result in others:
            for name in ("mass_matrix", "velocity_forces", "gravity_forces", "applied_forces"):
                _assert_close(getattr(result, name), getattr(reference, name))
        assert np.abs(reference.applied_forces).max() > 1.0  # the loads do act


def test_spring_with_coincident_points_reported_by_every_backend():
    from mbkron.dynamics import loads

    model, _ = _loaded_tree_model(11)
    q = np.zeros(model.nq)
    T = model.kinematics(q, 0).T[model.body_index("b3")]
    spring = loads.SpringDamper("b3", (0.0, 0.0, 0.0), "ground", tuple(T[:3, 3]), stiffness=1.0)
    for backend in available_backends():
        with pytest.raises(mbkron.ConfigurationError, match="coincide"):  # configuration-dependent: not a ModelError
            model.with_backend(backend).equations_of_motion(q, q, loads=(spring,))


def test_backend_chosen_per_model():
    """Each model carries its backend; choosing one for a model changes no other model."""
    model, _ = _loaded_tree_model(3)
    assert model.backend == ("compiled" if "compiled" in available_backends() else "numpy")
    other = model.with_backend("numpy")
    assert (other.backend, model.backend) == ("numpy", model.backend)
    assert other.with_backend("numpy") is other
    with pytest.raises(ValueError, match="mbkron.reference"):  # the dissertation as written: an oracle, not a backend
        model.with_backend("kronecker")
    assert set(available_backends()) <= set(BACKENDS)
    with pytest.raises(ValueError, match="`backend` must be one of"):
        model.with_backend("fortran")
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, inertia=[1, 1, 1])
    assert b.build(backend="numpy").backend == "numpy"


@pytest.fixture(scope="module", params=["shoulder_rhythm_b.toml", "leg6dof9musc.toml"])
def muscle_model(request):
    from pathlib import Path

    from mbkron import load_model

    return load_model(Path(__file__).resolve().parents[1] / "models" / request.param)


@pytest.mark.parametrize("batch", [(), (7,)])
def test_muscle_lengths_and_moment_arms_equal_on_every_backend(muscle_model, batch):
    """Moving points on tabulated functions (splines), via points, ground points."""
    rng = np.random.default_rng(5)
    lo, hi = np.array([c.range for c in muscle_model.coordinate_records]).T
    lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
    q = lo + (hi - lo) * rng.uniform(0.05, 0.95, size=batch + (muscle_model.nq,))
    for compute in (lambda m: m.muscle_lengths(q), lambda m: m.moment_arms(q)):
        others, reference = _both(muscle_model, compute)
        assert len(others) == len(available_backends()) - 1
        for backend, result in others:
            assert result.shape == reference.shape, backend
            _assert_close(result, reference)


def test_zero_length_segment_reported_by_every_backend():
    from mbkron.core.errors import ConfigurationError

    b = mbkron.ModelBuilder()
    b.add_coordinate("x", unit="m")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="x", mass=1.0)
    b.add_muscle("m", [("ground", (0.5, 0, 0)), ("slider", (0, 0, 0))])
    for backend in available_backends():
        model = b.build(backend=backend)
        assert model.muscle_lengths([0.2]) == pytest.approx([0.3])
        with pytest.raises(ConfigurationError, match=r"muscle `m`: points 0 and 1 .* coincide"):
            model.moment_arms([0.5])
