"""The engine held to the dissertation as written (`mbkron.reference`).

The reference evaluates the seed's formulas literally, state by state, in the Kronecker layout: T by
Eq. 38-40, D_i and D'_i by the recursions Eq. 74/77 and 89, M, N q̇ and G body by body by Eq. 145, 126 and
187, R column by column by Eq. 195 with the GMLAV of Definitions 3-5. The engine computes the same
quantities by other routes (world twists, composite pseudo-inertias, the articulated-body algorithm, the
ground-frame column form of R); here they must agree to 1e-12 relative on random 3-D trees, a closed loop
(Andrews' squeezer: constraint-solved joint variables with per-state Hessians), and muscle models with
moving and conditional points. The reference itself is checked against independent routes (sympy,
finite differences, closed forms) in tests/test_kinematics.py, tests/test_dynamics.py and
tests/test_muscles.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import reference
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from tests.random_trees import build_model, random_tree

MODELS = Path(__file__).resolve().parents[1] / "models"


def assert_close(actual, expected, rtol=1e-12):
    """Equal to ``rtol`` relative to the array's largest entry (at least 1)."""
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


@pytest.fixture(scope="module", params=range(4))
def tree_model(request):
    rng = np.random.default_rng(900 + request.param)
    return build_model(random_tree(rng, nb=int(rng.integers(1, 10)), nq=int(rng.integers(1, 5))))


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_kinematics(tree_model, batch):
    """T (Eq. 40), ∂T/∂q (D_i, Eq. 77), ∂²T/∂q² (D'_i, Eq. 89) and the twists derived from them."""
    model = tree_model
    q = np.random.default_rng(1).uniform(-1.2, 1.2, size=batch + (model.nq,))
    expected = reference.kinematics(model, q, 2)
    result = model.kinematics(q, 2)
    for name in ("T", "dT", "d2T", "twists", "joint_twists"):
        assert_close(getattr(result, name), getattr(expected, name))
    assert_close(model.kinematics(q, 0).T, reference.kinematics(model, q, 0).T)


def test_equations_of_motion(tree_model):
    """M (Eq. 145), N q̇ (Eq. 126) and G (Eq. 187) at a batch of states, and the engine's inverse dynamics
    (the recursive Newton–Euler algorithm on simple trees) equal to M q̈ + N q̇ − G built from them."""
    model = tree_model
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1.2, 1.2, size=(3, 5, model.nq))
    M, N, G = (reference.mass_matrix(model, q), reference.velocity_forces(model, q, qd),
               reference.gravity_forces(model, q))
    assert_close(model.mass_matrix(q), M)
    assert_close(model.velocity_forces(q, qd), N)
    assert_close(model.gravity_forces(q), G)
    assert_close(model.inverse_dynamics(q, qd, qdd, loads=()), np.einsum("...ij,...j->...i", M, qdd) + N - G)
    assert_close(model.forward_dynamics(q, qd, loads=()), np.linalg.solve(M, (G - N)[..., None])[..., 0], 1e-10)


@pytest.mark.parametrize(("solver", "constraints"),
                         [("lu", "expressions"), ("projection", "expressions"), ("lu", "loop_closures")])
def test_closed_loop(solver, constraints):
    """Andrews' squeezer: joint variables solved from the constraints (their ∇f, H enter D_i, D'_i)."""
    model = andrews_squeezer(solver, constraints)
    q = INITIAL["beta"] + np.linspace(0.0, 0.3, 6)[:, None]
    qd = np.full_like(q, 3.0)
    assert_close(model.mass_matrix(q), reference.mass_matrix(model, q))
    assert_close(model.velocity_forces(q, qd), reference.velocity_forces(model, q, qd))
    assert_close(model.gravity_forces(q), reference.gravity_forces(model, q))


@pytest.fixture(scope="module", params=["shoulder_rhythm_b.toml", "leg6dof9musc.toml"])
def muscle_model(request):
    return mbkron.load_model(MODELS / request.param)


@pytest.mark.parametrize("batch", [(), (4,), (2, 2)])
def test_moment_arms(muscle_model, batch):
    """R by Eq. 195 (via, moving and conditional points; the moving points' sliding term)."""
    model = muscle_model
    rng = np.random.default_rng(5)
    lo, hi = np.array([c.range for c in model.coordinate_records]).T
    lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
    q = lo + (hi - lo) * rng.uniform(0.05, 0.95, size=batch + (model.nq,))
    expected = reference.moment_arms(model, q)
    assert np.abs(expected).max() > 1e-3  # the paths do span the coordinates
    assert_close(model.moment_arms(q), expected)


def test_the_reference_is_not_a_backend():
    model = mbkron.load_model(MODELS / "two_link_arm.toml")
    with pytest.raises(ValueError, match=r"`backend` 'kronecker' .*no longer a backend.*mbkron\.reference"):
        model.with_backend("kronecker")
    with pytest.raises(ValueError, match="has no muscles"):
        reference.moment_arms(model, model.default_q)
