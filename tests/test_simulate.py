"""Forward-dynamics runs: accuracy against invariants and independent integrations, failures."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from scipy.integrate import solve_ivp

import mbkron
from mbkron.integrate.simulate import METHODS, simulate


def energy(model, q, qd):
    kinetic = 0.5 * np.einsum("ni,nij,nj->n", qd, model.mass_matrix(q), qd)
    potential = -sum(b.mass * model.point_position(b.name, b.com, q) @ model.gravity for b in model.body_records)
    return kinetic + potential


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "DOP853", "Radau"])
def test_energy_is_conserved_without_dissipation(method):
    model = mbkron.examples.two_link_arm()
    tol = 1e-7 if method in ("TRBDF2", "RKF45") else 1e-10
    run = simulate(model, (0.0, 1.0), [0.3, 0.5], [0.0, -1.0], method=method, rtol=tol, atol=tol * 1e-2)
    assert run.success and run.status == 0 and run.n_steps > 5
    E = energy(model, run.q, run.qd)
    assert np.abs(E - E[0]).max() < (1e-4 if method == "TRBDF2" else 1e-6) * abs(E[0])
    if method in ("TRBDF2", "Radau"):
        assert run.njev >= 1 and run.nlu >= 1


def test_trajectory_matches_independent_solve_ivp():
    """The same ODE integrated by scipy's solve_ivp on a right-hand side assembled by hand."""
    model = mbkron.examples.three_link_arm(spring_force=8.0, d_s=0.03)
    t_eval = np.linspace(0, 0.8, 41)
    q0, qd0 = np.array([-0.5, 0.6, 0.1]), np.array([0.2, 0.0, -0.3])

    def rhs(t, y):
        q, qd = y[:3], y[3:]
        M = model.mass_matrix(q)
        return np.concatenate([qd, np.linalg.solve(M, model.gravity_forces(q) + model.applied_forces(q, qd)
                                                   - model.velocity_forces(q, qd))])

    reference = solve_ivp(rhs, (0, 0.8), np.concatenate([q0, qd0]), method="DOP853", rtol=1e-12, atol=1e-12,
                          t_eval=t_eval)
    for method, tol in (("TRBDF2", 2e-5), ("RKF45", 1e-6), ("DOP853", 1e-8)):
        run = simulate(model, (0, 0.8), q0, qd0, method=method, rtol=1e-9, atol=1e-11, t_eval=t_eval)
        np.testing.assert_allclose(run.t, t_eval)
        np.testing.assert_allclose(run.q, reference.y[:3].T, atol=tol)
        np.testing.assert_allclose(run.qd, reference.y[3:].T, atol=20 * tol)
        np.testing.assert_allclose(run.qdd[5], model.forward_dynamics(run.q[5], run.qd[5]), atol=1e-12)
        np.testing.assert_allclose(run.joint_variables, run.q, atol=1e-15)  # relative angles: f = q


def test_actuation_constant_and_callable():
    model = mbkron.examples.two_link_arm()
    held = -model.gravity_forces([0.2, 0.4])  # exactly balances gravity: the arm stays put
    run = simulate(model, (0, 0.5), [0.2, 0.4], tau=held, method="RKF45", rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run.q[-1], [0.2, 0.4], atol=1e-9)
    calls = []

    def tau(t, q, qd):
        calls.append(t)
        return -model.gravity_forces(q) - 5.0 * qd  # gravity compensation plus damping

    run = simulate(model, (0, 2.0), [0.2, 0.4], [1.0, -1.0], tau=tau, method="TRBDF2")
    assert calls and run.success
    assert np.abs(run.qd[-1]).max() < 0.05 * np.abs(run.qd[0]).max()


def test_failure_keeps_the_trajectory_and_names_time_and_q():
    """A joint variable log(x) leaves its domain: the run stops with a message, data kept."""
    x = sympy.Symbol("x")
    b = mbkron.ModelBuilder(gravity=(-9.81, 0.0, 0.0))
    b.add_coordinate("x", unit="m")
    b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable=sympy.log(x), mass=1.0)
    model = b.build()
    run = simulate(model, (0.0, 5.0), [1.0], [-2.0], method="RKF45")
    assert not run.success and run.status == -1
    assert "stopped after t =" in run.message and "q = [" in run.message
    assert run.t.size > 3 and np.all(run.q > 0) and run.t[-1] < 5.0


def test_bad_arguments():
    model = mbkron.examples.two_link_arm()
    with pytest.raises(ValueError, match="unknown `method`"):
        simulate(model, (0, 1), [0, 0], method="Euler")
    with pytest.raises(ValueError, match="`q0` must be 2 finite numbers"):
        simulate(model, (0, 1), [0, 0, 0])
    with pytest.raises(ValueError, match="`tau` must be"):
        simulate(model, (0, 1), [0, 0], tau=[1, 2, 3])
    assert {"TRBDF2", "RKF45", "RK45", "Radau", "BDF", "LSODA", "DOP853", "RK23"} <= set(METHODS)
