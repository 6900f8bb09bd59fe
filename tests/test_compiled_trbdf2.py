"""TR-BDF2's compiled steps with a compiled right-hand side (:class:`mbkron.integrate.trbdf2.CompiledTRBDF2`).

Every TR-BDF2 step is :func:`mbkron.numerics.trbdf2.trbdf2_kernel`; with a Python right-hand side it calls it back
(:class:`~mbkron.integrate.trbdf2.TRBDF2`, tested against closed forms and the IVP test set in
tests/test_integrate.py), with a model's compiled right-hand side it runs several steps per call. Checked here:
``simulate`` uses the compiled steps for the README's main job and they agree with the run of the Python route;
steps the compiled right-hand side declines are redone by the same kernel with the Python route (the run then
agrees with scipy's Radau at a tight tolerance); the rows the kernel gives after each step are the trajectory's own,
and several steps per call give the run of single steps bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.jit.common import AVAILABLE
from mbkron.numerics import trbdf2 as kernel
from mbkron.integrate.trbdf2 import TRBDF2, CompiledTRBDF2
from mbkron.model.model import Model

MAIN_JOB = Path(__file__).resolve().parents[1] / "models" / "andrews_squeezer.toml"

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _squeezer():
    """The README's main job (Andrews' squeezer as an ODE in β) on its own workspace: the model, the workspace,
    the Python route of its right-hand side, the initial state (evaluated once) and the state kernel."""
    model = mbkron.load_model(MAIN_JOB)
    workspace = model.workspace()

    def fun(t, y):
        return np.concatenate([y[1:], model.forward_dynamics(y[:1], y[1:], workspace=workspace)])

    y0 = np.array([model.default_q[0], 0.0])
    fun(0.0, y0)
    state_kernel = model.state_kernel(workspace)
    assert state_kernel is not None
    return model, workspace, fun, y0, state_kernel


class _Declining:
    """A state kernel whose ``steps`` declines every ``every``-th call (to exercise the redo on purpose)."""

    def __init__(self, inner, every: int):
        self.inner, self.every, self.calls = inner, every, 0

    def steps(self, *arguments, **keywords):
        self.calls += 1
        if self.calls % self.every == 0:
            n = arguments[1].size
            return (kernel.STEP_DECLINED, 0, np.empty((1, 1 + 4 * n)), np.zeros(1, dtype=np.int64),
                    np.empty((0, n)), np.empty((0, n)))
        return self.inner.steps(*arguments, **keywords)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_declined_steps_are_redone_by_the_kernel_with_the_python_route(monkeypatch):
    """Andrews' squeezer with a compiled right-hand side that declines every third call: each declined step is
    redone from the continuation reached by the same kernel code with the Python route (``fun`` and ``jac`` through
    the callback, from the workspace's continuation); the run agrees with scipy's Radau at rtol 1e-10 (the oracle)
    and with the run without declined steps far inside the tolerance."""
    redone = []
    original = TRBDF2._callback_steps
    monkeypatch.setattr(TRBDF2, "_callback_steps", lambda self, *a, **k: redone.append(1) or original(self, *a, **k))
    times = np.linspace(0.0, 0.03, 31)
    runs = []
    for every in (0, 3):
        model, _, fun, y0, state_kernel = _squeezer()  # each run on its own workspace
        declining = _Declining(state_kernel, every) if every else state_kernel
        solver = CompiledTRBDF2(fun, 0.0, y0, 0.03, declining, rtol=1e-6, atol=1e-8, jac=state_kernel.jacobian,
                                steps_per_call=1)
        pieces, ends = [], []
        while solver.status == "running":
            solver.step()
            pieces.append(solver.dense_output())
            ends.append(solver.t)
        assert solver.status == "finished"
        runs.append((np.array([pieces[min(np.searchsorted(ends, t), len(ends) - 1)](t) for t in times]), solver))
    (plain, _), (declined, solver) = runs
    assert len(redone) > 100 and solver.njev > 1
    reference = mbkron.simulate(model, (0.0, 0.03), y0[:1], y0[1:], method="Radau", rtol=1e-10, atol=1e-12,
                                t_eval=times)
    assert reference.success
    expected = np.hstack([reference.q, reference.qd])
    scale = 1e-8 + 1e-6 * np.abs(expected)
    # the global error of a second-order method over ~690 steps, in units of the tolerance: measured 159 for both
    assert np.max(np.abs(declined - expected) / scale) < 300
    assert np.max(np.abs(declined - plain) / scale) < 0.1  # the two routes differ far inside the tolerance


def test_simulate_takes_compiled_steps_for_the_main_job(monkeypatch):
    """``simulate`` with TRBDF2 on a compiled model takes the compiled steps; its rows (states and
    accelerations at the output times, with the kernel's right-hand side) agree with the run of the Python route
    (the same kernel calling the Python right-hand side back, whose finite-difference Jacobian comes by another
    route, so the two differ by Newton's stopping test, not bitwise) far inside the requested tolerance."""
    model = mbkron.load_model(MAIN_JOB)
    t_eval = np.linspace(0.0, 0.03, 31)
    options = dict(method="TRBDF2", rtol=1e-6, atol=1e-8, t_eval=t_eval)
    built = []
    original = CompiledTRBDF2.__init__
    monkeypatch.setattr(CompiledTRBDF2, "__init__", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    compiled = mbkron.simulate(model, (0.0, 0.03), model.default_q, [0.0], **options)
    assert built == [1] and compiled.success
    monkeypatch.setattr(Model, "state_kernel", lambda self, workspace, tau=None: None)
    python = mbkron.simulate(model, (0.0, 0.03), model.default_q, [0.0], **options)
    assert built == [1]
    assert (compiled.n_steps, compiled.nfev, compiled.njev, compiled.nlu) == (
        python.n_steps, python.nfev, python.njev, python.nlu)
    y_compiled, y_python = (np.hstack([run.q, run.qd]) for run in (compiled, python))
    assert np.all(np.abs(y_compiled - y_python) <= 0.1 * (1e-8 + 1e-6 * np.abs(y_python)))
    np.testing.assert_allclose(compiled.joint_variables, python.joint_variables, rtol=1e-6, atol=1e-8)


def test_output_rows_are_the_dense_output_and_its_accelerations():
    """``CompiledTRBDF2.output_rows`` of the output times a step reached: the states equal the solver's dense
    output (the same Hermite arithmetic) and the accelerations equal ``Model.forward_dynamics`` at those states
    (evaluated anew from the assembly configuration, so equal to the constraint solver's tolerance)."""
    model, _, fun, y0, state_kernel = _squeezer()
    times = np.linspace(0.0, 0.03, 3001)[1:]  # several in most steps
    compiled = CompiledTRBDF2(fun, 0.0, y0, 0.03, state_kernel, times, rtol=1e-6, atol=1e-8, jac=state_kernel.jacobian)
    checked = 0
    while compiled.status == "running" and checked < 40:
        compiled.step()
        reached = times[(times > compiled.t_old) & (times <= compiled.t)]
        if reached.size < 2:
            continue
        states, accelerations = compiled.output_rows(reached)
        np.testing.assert_allclose(states, compiled.dense_output()(reached).T, rtol=1e-15, atol=0)
        expected = model.forward_dynamics(states[:, :1], states[:, 1:])
        np.testing.assert_allclose(accelerations, expected, rtol=1e-9)
        checked += 1
    assert checked == 40


def test_output_rows_inside_the_kernel_equal_the_trajectory_s_own():
    """The rows the kernel gives after each step for the output times it reaches (CompiledTRBDF2 given the run's
    output times, several steps per call) are, bit for bit, those the trajectory computes itself after each step
    taken alone (the dense output, then the compiled right-hand side at each time, advancing), and so is every
    step after (the continuation moves through the same states)."""
    times = np.linspace(0.0, 0.03, 201)[1:]
    runs = []
    for output_times in (times, None):
        _, _, fun, y0, state_kernel = _squeezer()
        solver = CompiledTRBDF2(fun, 0.0, y0, 0.03, state_kernel, output_times, rtol=1e-6, atol=1e-8,
                                jac=state_kernel.jacobian, steps_per_call=1 if output_times is None else None)
        rows, steps, done = [], [], 0
        while solver.status == "running":
            solver.step()
            steps.append((solver.t, solver.y.copy()))
            end = done
            while end < times.size and times[end] <= solver.t:
                end += 1
            if end > done:
                reached = times[done:end]
                computed = solver.output_rows(reached)
                if output_times is None:
                    assert computed is None
                    states = solver.dense_output()(reached).T
                    computed = states, np.array([state_kernel.accelerations(state) for state in states])
                rows.append(computed)
                done = end
        runs.append((steps, rows))
    (steps_a, rows_a), (steps_b, rows_b) = runs
    assert len(steps_a) == len(steps_b) > 100 and len(rows_a) == len(rows_b) > 100
    assert all(ta == tb and np.array_equal(ya, yb) for (ta, ya), (tb, yb) in zip(steps_a, steps_b))
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(rows_a, rows_b))


@pytest.mark.parametrize("name, t_end, rows", [("andrews_squeezer", 0.03, 101), ("andrews_squeezer", 0.03, None),
                                               ("four_bar", 2.0, None), ("five_bar", 0.5, 41)])
def test_several_steps_per_call_give_the_run_of_single_steps(monkeypatch, name, t_end, rows):
    """``simulate`` with TRBDF2 takes up to ``STEPS_PER_CALL`` steps in one compiled call, each followed by its
    rows (output times, or without them the right-hand side at its end), and hands them out one by one: the run
    is, bit for bit, the run of one step per call — also where it stops inside the interval (the four-bar's
    coordinate leaves its range, the last row at the crossing) — and the calls are fewer."""
    from mbkron.integrate import trbdf2 as solvers
    from mbkron.algorithms.dynamics.forward import StateKernel

    model = mbkron.load_model(Path(MAIN_JOB).parent / f"{name}.toml")
    t_eval = None if rows is None else np.linspace(0.0, t_end, rows)
    calls, original = [], StateKernel.steps
    monkeypatch.setattr(StateKernel, "steps", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    runs = []
    for per_call in (solvers.STEPS_PER_CALL, 1):
        monkeypatch.setattr(solvers, "STEPS_PER_CALL", per_call)
        calls.clear()
        runs.append((mbkron.simulate(model, (0.0, t_end), model.default_q, np.zeros(model.nq), method="TRBDF2",
                                     rtol=1e-6, atol=1e-8, t_eval=t_eval), len(calls)))
    (chunked, chunked_calls), (single, single_calls) = runs
    assert single_calls >= single.n_steps > 50 and chunked_calls < single_calls / 4
    assert (chunked.status, chunked.message) == (single.status, single.message)
    assert (chunked.n_steps, chunked.nfev, chunked.njev, chunked.nlu) == (single.n_steps, single.nfev, single.njev,
                                                                          single.nlu)
    for field in ("t", "q", "qd", "qdd", "joint_variables"):
        assert np.array_equal(getattr(chunked, field), getattr(single, field)), field
    assert name != "four_bar" or chunked.status == 1  # the range stop was exercised


def test_the_steps_kernel_alone_evaluates_the_right_hand_side_as_the_model_does():
    """A TR-BDF2 run's first evaluations (its start, its initial slope and step) are the steps' kernel's right-hand side
    alone (``StateKernel.step_accelerations``): bit for bit ``Model.forward_dynamics`` continuing the same way (from the
    assembly, then from each solution reached), and None where the kernel declines the state."""
    model = mbkron.load_model(MAIN_JOB)
    state_kernel = model.state_kernel(model.workspace())
    workspace = model.workspace()
    q0, rng = model.default_q, np.random.default_rng(11)
    for q, qd in ((q0, np.zeros(model.nq)), (q0 + 0.01, rng.normal(size=model.nq)),
                  (q0 + 0.03, rng.normal(size=model.nq))):
        expected = model.forward_dynamics(q, qd, workspace=workspace)
        assert np.array_equal(state_kernel.step_accelerations(np.concatenate([q, qd])), expected)
    assert state_kernel.step_accelerations(np.full(2 * model.nq, np.nan)) is None
