"""simulate(): every bad argument is a ValueError naming it, raised before any integration (issue #18.5-6)."""

from __future__ import annotations

import numpy as np
import pytest

import mbkron
from mbkron.integrate.simulate import simulate


@pytest.fixture(scope="module")
def arm():
    return mbkron.examples.two_link_arm()


@pytest.fixture(scope="module")
def muscled():
    b = mbkron.ModelBuilder(gravity=(0, 0, 0)).add_coordinate("q")
    b.add_body("link", axis=(0, 0, 1), variable="q", mass=1.0, com=(0.5, 0, 0), inertia=np.eye(3) * 0.01)
    b.add_muscle("m", [("ground", (0.0, 0.1, 0.0)), ("link", (0.5, 0.0, 0.0))])
    return b.build()


def _never(t):
    pytest.fail(f"integration started (a step reached t = {t}) although an argument is invalid")


BAD = [
    # (arguments, argument named in the message)
    (dict(t_span=(0, np.inf)), "t_span"),  # #18.5: never returned
    (dict(t_span=(0, -np.inf)), "t_span"),
    (dict(t_span=(0, np.nan)), "t_span"),  # #18.6: ran and failed with a misleading message
    (dict(t_span=(np.nan, 1)), "t_span"),
    (dict(t_span=(0, 0)), "t_span"),  # returned two samples at t = 0 with status 0
    (dict(t_span=(0, 1, 2)), "t_span"),
    (dict(t_span=1.0), "t_span"),
    (dict(atol=0.0), "atol"),  # ran and failed at q = [nan, nan]
    (dict(atol=-1e-8), "atol"),
    (dict(atol=np.nan), "atol"),
    (dict(atol=np.ones(3)), "atol"),  # the state has 4 components
    (dict(atol=[1e-8, 1e-8, 0.0, 1e-8]), "atol"),
    (dict(rtol=-1e-6), "rtol"),
    (dict(rtol=0.0), "rtol"),
    (dict(rtol=np.nan), "rtol"),
    (dict(rtol=1e-15), "rtol"),  # below 100 eps: refused, not raised silently
    (dict(rtol=[1e-6] * 4), "rtol"),
    (dict(t_eval=[0.5, 2.0]), "t_eval"),  # outside the span: returned an empty result with status 0
    (dict(t_eval=[-0.5, 0.5]), "t_eval"),
    (dict(t_eval=[0.0, np.nan, 0.5]), "t_eval"),  # NaN was silently dropped
    (dict(t_eval=[0.0, 0.5, 0.3]), "t_eval"),
    (dict(t_eval=[0.0, 0.5, 0.5]), "t_eval"),
    (dict(t_eval=[]), "t_eval"),
    (dict(t_eval=[[0.0, 0.5]]), "t_eval"),
    (dict(t_span=(1, 0), t_eval=[0.0, 0.5]), "t_eval"),  # backwards: t_eval must decrease
    (dict(muscle_forces=[1.0]), "muscle_forces"),  # failed inside the run: the model has no muscles
    (dict(muscle_forces=lambda t, q, qd: [1.0]), "muscle_forces"),
    (dict(tau=[1.0, 2.0, 3.0]), "tau"),
    (dict(tau=[np.inf, 0.0]), "tau"),
    (dict(tau=lambda t, q, qd: np.zeros(3)), "tau"),
    (dict(max_step=0.0), "max_step"),
    (dict(max_step=-1.0), "max_step"),
    (dict(max_step=np.nan), "max_step"),
    (dict(first_step=0.0), "first_step"),
    (dict(first_step=-1e-3), "first_step"),
    (dict(first_step=1.5), "first_step"),  # longer than the span
    (dict(first_step=np.nan), "first_step"),
    (dict(method="Euler"), "method"),
    (dict(q0=[0.0, 0.0, 0.0]), "q0"),
    (dict(qd0=[np.nan, 0.0]), "qd0"),
]


@pytest.mark.parametrize("method", ["TRBDF2", "RK45"])
@pytest.mark.parametrize("arguments, name", BAD, ids=[f"{name}-{k}" for k, (_, name) in enumerate(BAD)])
def test_bad_argument_is_a_value_error_naming_it(arm, arguments, name, method):
    call = dict(t_span=(0.0, 1.0), q0=[0.1, 0.2], method=method, progress=_never) | arguments
    with pytest.raises(ValueError, match=f"`{name}`"):
        simulate(arm, **call)


@pytest.mark.parametrize("forces", [[1.0, 2.0], [np.nan], lambda t, q, qd: [1.0, 2.0]])
def test_muscle_forces_of_the_wrong_length(muscled, forces):
    with pytest.raises(ValueError, match=r"`muscle_forces` must .*1 tensions \(one per muscle: m\)"):
        simulate(muscled, (0, 0.1), [0.0], muscle_forces=forces, progress=_never)


def test_edges_of_the_accepted_ranges(arm):
    """The boundary values themselves are valid: first_step = |span|, rtol = 100 eps, t_eval at both ends."""
    run = simulate(arm, (0.0, 0.01), [0.1, 0.2], method="RKF45", first_step=0.01, rtol=100 * np.finfo(float).eps,
                   atol=np.full(4, 1e-12), t_eval=[0.0, 0.01])
    assert run.success and run.t.tolist() == [0.0, 0.01]
    backwards = simulate(arm, (0.01, 0.0), run.q[-1], run.qd[-1], method="RKF45", rtol=1e-10, atol=1e-12,
                         t_eval=[0.01, 0.005, 0.0])
    assert backwards.success and backwards.t.tolist() == [0.01, 0.005, 0.0]
    np.testing.assert_allclose(backwards.q[-1], [0.1, 0.2], atol=1e-8)  # back to the start
