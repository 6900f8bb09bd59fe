"""The one engine: the ``backend`` keyword arguments kept for compatibility, and the engine's errors at
configurations where a quantity is undefined.

Every evaluation runs through the compiled kernels; their results are held to independent references
elsewhere (the dissertation as written, :mod:`mbkron.reference`, in tests/test_reference.py; sympy,
closed forms, Kane's method, OpenSim data in the other files).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbkron
from tests.random_trees import build_model, random_tree

MODEL = Path(__file__).resolve().parents[1] / "models" / "two_link_arm.toml"


def _builder():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, inertia=[1, 1, 1])
    return b


def test_backend_keywords_accept_the_one_engine():
    """``"compiled"`` and None name the one engine; ``with_backend`` returns the model itself."""
    model = _builder().build()
    assert model.backend == "compiled"
    assert _builder().build(backend="compiled").backend == "compiled"
    assert model.with_backend("compiled") is model and model.with_backend(None) is model
    assert mbkron.load_model(MODEL, backend="compiled").backend == "compiled"


@pytest.mark.parametrize("call", [
    lambda name: _builder().build(backend=name),
    lambda name: _builder().build().with_backend(name),
    lambda name: mbkron.load_model(MODEL, backend=name),
])
def test_the_removed_numpy_route_is_refused_with_where_to_go(call):
    with pytest.raises(ValueError, match=r"`backend` 'numpy' .*numpy route was removed.*mbkron\.reference"):
        call("numpy")
    with pytest.raises(ValueError, match=r"`backend` 'kronecker' .*mbkron\.reference"):  # an oracle, not a backend
        call("kronecker")
    with pytest.raises(ValueError, match="`backend` must be 'compiled'"):
        call("fortran")


def test_spring_with_coincident_points_is_reported():
    """A spring-damper whose two points coincide has no direction (Eq. 161): a configuration error."""
    from mbkron.multibody import loads as load_records

    model = build_model(random_tree(np.random.default_rng(11), nb=7, nq=3, fixed_fraction=0.0))
    q = np.zeros(model.nq)
    T = model.kinematics(q, 0).T[model.body_index("b3")]
    spring = load_records.SpringDamper("b3", (0.0, 0.0, 0.0), "ground", tuple(T[:3, 3]), stiffness=1.0)
    with pytest.raises(mbkron.ConfigurationError, match="coincide"):  # configuration-dependent: not a ModelError
        model.equations_of_motion(q, q, loads=(spring,))


def test_zero_length_segment_is_reported():
    """A path segment of zero length has no direction: its length is still the closed form, R is refused."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("x", unit="m")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="x", mass=1.0)
    b.add_muscle("m", [("ground", (0.5, 0, 0)), ("slider", (0, 0, 0))])
    model = b.build()
    assert model.muscle_lengths([0.2]) == pytest.approx([0.3])
    with pytest.raises(mbkron.ConfigurationError, match=r"muscle `m`: points 0 and 1 .* coincide"):
        model.moment_arms([0.5])
