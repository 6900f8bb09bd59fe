"""Coordinate ranges in `mbkron.simulate`: the initial state inside them, a terminal event where one is left.

References: the closed form of a body falling along a prismatic joint, and scipy's own event
location (`solve_ivp(events=...)`) on the same equations of motion.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import mbkron


def _slider(low=-1.0, high=1.0) -> mbkron.Model:
    b = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    b.add_coordinate("y", range=(low, high), unit="m")
    b.add_body("slider", joint="prismatic", axis=(0, 1, 0), variable="y", mass=2.0, inertia=[0.1, 0.1, 0.1])
    return b.build()


def _pendulum() -> mbkron.Model:
    b = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    b.add_coordinate("phi", range=(-0.5, 2.0))
    b.add_body("rod", axis=(0, 0, 1), variable="phi", mass=1.0, com=(0.4, 0, 0), inertia=[0.01, 0.02, 0.02])
    return b.build()


@pytest.mark.parametrize("method", ["TRBDF2", "RKF45", "DOP853", "Radau"])
def test_a_fall_stops_where_the_range_ends(method):
    run = mbkron.simulate(_slider(), (0.0, 2.0), [0.0], method=method, rtol=1e-10, atol=1e-12)
    assert run.status == 1 and run.success
    assert run.t[-1] == pytest.approx(np.sqrt(2 / 9.81), abs=1e-12)  # y = −g t²/2 reaches −1
    assert run.q[-1, 0] == pytest.approx(-1.0, abs=1e-12)
    assert "coordinate `y` reached the lower end of its range, -1, at t = 0.451523641" in run.message
    assert np.all(run.q[:, 0] >= -1.0 - 1e-12)


def test_the_crossing_agrees_with_scipy_event_location():
    model = _pendulum()
    run = mbkron.simulate(model, (0.0, 5.0), [1.2], [-2.0], method="DOP853", rtol=1e-11, atol=1e-12)

    def rhs(t, y):
        return [y[1], model.forward_dynamics(y[:1], y[1:])[0]]

    def lower(t, y):
        return y[0] + 0.5

    lower.terminal = True
    reference = solve_ivp(rhs, (0.0, 5.0), [1.2, -2.0], method="DOP853", rtol=1e-12, atol=1e-13, events=lower)
    assert run.status == 1 and reference.status == 1
    assert run.t[-1] == pytest.approx(reference.t_events[0][0], abs=1e-8)
    assert run.qd[-1, 0] == pytest.approx(reference.y_events[0][0][1], abs=1e-7)
    assert "`phi` reached the lower end" in run.message


def test_output_times_stop_at_the_crossing_and_ignore_goes_on():
    model = _slider()
    run = mbkron.simulate(model, (0.0, 2.0), [0.0], t_eval=np.linspace(0.0, 2.0, 21))
    assert run.status == 1 and run.t[-1] == pytest.approx(0.4) and len(run.t) == 5
    free = mbkron.simulate(model, (0.0, 2.0), [0.0], ranges="ignore", rtol=1e-10, atol=1e-12)
    assert free.status == 0 and free.q[-1, 0] == pytest.approx(-9.81 * 2.0, rel=1e-9)


def test_initial_state_outside_a_range_and_bad_policy():
    with pytest.raises(ValueError, match=r"`q0`: coordinate `y` = 3 is outside its range \[-1, 1\]"):
        mbkron.simulate(_slider(), (0.0, 1.0), [3.0])
    assert mbkron.simulate(_slider(), (0.0, 0.1), [3.0], ranges="ignore").status == 0
    with pytest.raises(ValueError, match="`ranges` must be one of 'stop', 'ignore'"):
        mbkron.simulate(_slider(), (0.0, 1.0), [0.0], ranges="clip")
