"""M, N q̇ and G of random 3-D trees against sympy.physics.mechanics (Kane's method), an external
derivation that shares nothing with mbkron's Kronecker formalism but the model description."""

from __future__ import annotations

import numpy as np
import pytest

from tests.random_trees import build_model, kanes_spec, random_tree
from validation.sympy_mechanics import equations_of_motion


@pytest.mark.parametrize("seed, nb", [(11, 6), (12, 7)])
def test_random_trees_match_kanes_method(seed, nb):
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=nb, nq=3)
    assert {"revolute", "prismatic"} <= set(spec.joints)
    gravity = rng.normal(size=3) * 5.0
    model = build_model(spec, gravity=gravity)
    reference = equations_of_motion(kanes_spec(spec, gravity))
    for _ in range(4):
        q, qd = rng.uniform(-1.0, 1.0, size=(2, 3))
        for mine, theirs in ((model.mass_matrix(q), reference.mass_matrix(q)),
                             (model.velocity_forces(q, qd), reference.velocity_forces(q, qd)),
                             (model.gravity_forces(q), reference.gravity_forces(q))):
            np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-10 * max(1.0, np.abs(theirs).max()))
