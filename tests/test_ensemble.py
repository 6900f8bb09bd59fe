"""Ensembles (:func:`mbkron.simulate_ensemble`): each trajectory as its own single run, closed forms, failures kept apart.

References: scipy's ``solve_ivp`` with the same method and tolerances on each trajectory alone (an
independent implementation of the same step control: the steps, and so the results, agree up to
round-off), and the closed form of a harmonic oscillator.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from scipy.integrate import solve_ivp

import mbkron
from mbkron.examples.andrews import andrews_squeezer


def _arm() -> mbkron.Model:
    b = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    b.add_coordinate("shoulder").add_coordinate("elbow")
    b.add_body("upper", axis=(0, 0, 1), variable="shoulder", mass=2.0, com=(0.15, 0, 0), inertia=[0.01, 0.02, 0.02])
    b.add_body("fore", parent="upper", axis=(0, 0, 1), variable="elbow", offset=(0.3, 0, 0), mass=1.2,
               com=(0.13, 0, 0), inertia=[0.01, 0.01, 0.01])
    return b.build()


def _oscillator(k: float, m: float) -> mbkron.Model:
    """A slider on x held by a spring of free length 1 to (−1, 0, 0): ẍ = −(k/m) x for x > −1."""
    b = mbkron.ModelBuilder(gravity=(0, 0, 0))
    b.add_coordinate("x")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="x", mass=m, inertia=[0.1, 0.1, 0.1])
    b.add_load(mbkron.loads.SpringDamper("slider", (0, 0, 0), "ground", (-1, 0, 0), stiffness=k, free_length=1.0))
    return b.build()


@pytest.mark.parametrize("method", ["RK45", "DOP853"])
def test_each_trajectory_is_its_single_run(method):
    model = _arm()
    rng = np.random.default_rng(8)
    K = 12
    q0, qd0 = rng.uniform(-1.5, 1.5, size=(2, K, 2))
    tau = rng.uniform(-2, 2, size=(K, 2))
    t_eval = np.linspace(0.0, 0.5, 6)
    result = mbkron.simulate_ensemble(model, (0.0, 0.5), q0, qd0, t_eval, method=method, rtol=1e-8, atol=1e-9, tau=tau)
    assert result.success and result.q.shape == (K, 6, 2)
    for k in range(K):
        single = solve_ivp(lambda t, y: np.concatenate([y[2:], model.forward_dynamics(y[:2], y[2:], tau[k])]),
                           (0.0, 0.5), np.concatenate([q0[k], qd0[k]]), method=method, rtol=1e-8, atol=1e-9,
                           t_eval=t_eval)
        np.testing.assert_allclose(result.q[k], single.y[:2].T, rtol=0, atol=1e-10)
        np.testing.assert_allclose(result.qd[k], single.y[2:].T, rtol=0, atol=1e-9)
        if method == "RK45":  # the same steps: the same number of evaluations
            assert result.nfev[k] == single.nfev


def test_harmonic_oscillators_against_the_closed_form():
    k, m = 40.0, 0.5
    omega = np.sqrt(k / m)
    amplitudes = np.linspace(-0.3, 0.4, 8)
    t = np.linspace(0.0, 2.0, 21)
    result = mbkron.simulate_ensemble(_oscillator(k, m), (0.0, 2.0), amplitudes[:, None], None, t, rtol=1e-10,
                                      atol=1e-12)
    expected = amplitudes[:, None] * np.cos(omega * t)
    np.testing.assert_allclose(result.q[..., 0], expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(result.qd[..., 0], -amplitudes[:, None] * omega * np.sin(omega * t), rtol=0, atol=1e-7)


def test_a_failing_trajectory_does_not_stop_the_others():
    """``f = sin(x)`` has ∇f = 0 at x = π/2: M(q) is singular there; one trajectory runs into it."""
    x = sympy.Symbol("x")
    b = mbkron.ModelBuilder(gravity=(0, 0, 0))
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable=sympy.sin(x), mass=1.0, com=(0.5, 0, 0), inertia=[0.1, 0.1, 0.1])
    model = b.build()
    q0 = np.array([[0.0], [0.0], [1.4]])
    qd0 = np.array([[0.1], [-0.2], [5.0]])  # the third reaches π/2 within 0.1 s (and ẍ grows without bound)
    result = mbkron.simulate_ensemble(model, (0.0, 0.5), q0, qd0, np.linspace(0, 0.5, 6))
    assert list(result.status) == [0, 0, -1]
    assert not result.success
    assert np.isfinite(result.q[:2]).all() and np.isnan(result.q[2, -1]).all()
    assert np.isfinite(result.q[2, 0]).all()  # what it computed before is kept
    assert "t =" in result.message[2]


@pytest.mark.parametrize("kwargs, match", [
    (dict(method="Radau"), "`method`"),
    (dict(q0=np.zeros((3, 3))), "`q0`"),
    (dict(q0=np.full((3, 2), np.nan)), "`q0`"),
    (dict(t_span=(0.0, np.inf)), "`t_span`"),
    (dict(t_span=(1.0, 0.0)), "`t_span`"),
    (dict(t_eval=[0.0, 2.0]), "`t_eval`"),
    (dict(t_eval=[0.5, 0.2]), "`t_eval`"),
    (dict(t_eval=[0.0, np.nan]), "`t_eval`"),
    (dict(rtol=0.0), "`rtol`"),
    (dict(atol=np.nan), "`atol`"),
    (dict(tau=np.zeros(3)), "`tau`"),
])
def test_argument_errors(kwargs, match):
    arguments = dict(model=_arm(), t_span=(0.0, 1.0), q0=np.zeros((3, 2))) | kwargs
    with pytest.raises(ValueError, match=match):
        mbkron.simulate_ensemble(**arguments)


def test_constrained_models_continue_each_trajectory_on_its_own():
    """Andrews' squeezer (loop closures solved at every state): each trajectory with its own continuation,
    equal to its single run by `mbkron.simulate` with the same method."""
    model = andrews_squeezer("lu")
    beta0 = model.default_q[0] + np.array([0.0, 0.3, -0.4])
    beta_dot0 = np.array([0.0, 20.0, -10.0])
    t_eval = np.linspace(0.0, 0.004, 5)
    result = mbkron.simulate_ensemble(model, (0.0, 0.004), beta0[:, None], beta_dot0[:, None], t_eval, rtol=1e-9,
                                      atol=1e-9)
    assert result.success
    for k in range(3):
        single = mbkron.simulate(model, (0.0, 0.004), [beta0[k]], [beta_dot0[k]], method="DOP853", rtol=1e-9,
                                 atol=1e-9, t_eval=t_eval)
        np.testing.assert_allclose(result.q[k], single.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(result.qd[k], single.qd, rtol=1e-9, atol=1e-7)


@pytest.mark.parametrize("name", ["DORMAND_PRINCE", "DOP853"])
def test_tableaus_satisfy_the_order_conditions(name):
    """Quadrature conditions ``Σ b_i c_i^k = 1/(k+1)`` up to the order, row sums ``Σ_j a_ij = c_i`` and
    error weights summing to zero: a check of the typed coefficients independent of their source."""
    from mbkron.numerics import tableaus

    tab = getattr(tableaus, name)
    s = tab.stages
    np.testing.assert_allclose(tab.A[:len(tab.C)].sum(axis=1)[1:], tab.C[1:len(tab.A)], rtol=0, atol=1e-14)
    for k in range(tab.order):
        np.testing.assert_allclose(tab.B @ tab.C[:s] ** k, 1.0 / (k + 1), rtol=1e-13)
    c = tab.A[:s, :s].sum(axis=1)  # Σ b_i a_ij c_j = 1/6 (an order-3 condition)
    np.testing.assert_allclose(tab.B @ tab.A[:s, :s] @ c, 1.0 / 6.0, rtol=1e-13)
    for weights in (tab.E, tab.E3, tab.E5):
        if weights is not None:
            assert abs(weights.sum()) < 1e-14
