"""The compiled fast path of expression-form constraint groups equals the Python solver.

mbkron.jointvars.compiled solves the common continuation step in one compiled function and sends
every other state back to PositionSolver; here both routes run side by side on the same paths (the
Python route is validated against Shabana-style kinematics and the IVP test set elsewhere). The
compiled step is built with the model; the Python route alone is the same provider with its compiled
step switched off (:func:`python_route`).
"""

from __future__ import annotations

import contextlib
import copy
from unittest import mock

import numpy as np
import pytest

import mbkron
from mbkron.compiled.common import AVAILABLE
from mbkron.jointvars.constraints import SymbolicConstraints
from mbkron.core.errors import ConfigurationError
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.examples.linkages import five_bar, four_bar

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _provider(model):
    return model.joint_variable_map.providers[-1][1]


def python_route(provider):
    """The same constraint-group provider with its compiled step switched off: every state is solved by
    :class:`mbkron.jointvars.solvers.PositionSolver` (the route the compiled step falls back to)."""
    python = copy.copy(provider)
    python.fast_step = None
    return python


@contextlib.contextmanager
def python_constraint_solver():
    """Expression groups built inside are solved by the engine's Python solver (:func:`python_route`:
    :class:`mbkron.jointvars.solvers.PositionSolver`, the route the compiled step falls back to, held equal to
    that step here) instead of a compiled step with functions generated for each group — for the fuzzers'
    thousands of mutated groups, where compiling each group's generated functions would cost seconds, and
    numba's compiler calls ``eval`` (in ``collections.namedtuple``), which the fuzzers' guards forbid. Loop
    closures keep their compiled step: its callbacks are the library's (:mod:`mbkron.compiled.closures`),
    compiled once, nothing per group."""
    from mbkron.jointvars import constrained

    compiled = constrained._compiled  # mbkron.jointvars.compiled, imported on first use (a LazyModule)
    supported = compiled.supports_fast_step
    with mock.patch.object(compiled, "supports_fast_step",
                           lambda solver: solver.system.kernel_data() is not None and supported(solver)):
        yield


def _paths():
    rng = np.random.default_rng(7)
    beta = INITIAL["beta"] + np.cumsum(rng.uniform(-2e-3, 6e-3, size=250))  # includes reversals
    theta = np.stack([np.linspace(0.9, 1.6, 200), np.linspace(2.0, 1.4, 200)], axis=-1)
    return {
        "andrews lu": (andrews_squeezer("lu", "expressions"), beta[:, None]),
        "andrews projection": (andrews_squeezer("projection", "expressions"), beta[:, None]),
        "four-bar lu": (four_bar("lu"), np.linspace(-1.8, 1.9, 300)[:, None]),
        "five-bar projection": (five_bar("projection"), theta),
    }


def assert_compiled_step_equals_python_solver(model, path):
    """Along ``path`` (states continuing from each other), the constraint group's compiled step and the
    Python solver give the same f, ∇f, H to 1e-12, at orders 2, 0 and 1."""
    fast = _provider(model)
    python = python_route(fast)
    assert fast.fast_step is not None
    for order in (2, 0, 1):
        fast_state, python_state = fast.new_state(), python.new_state()
        for q in path:
            mine, theirs = fast.evaluate(q, order, fast_state), python.evaluate(q, order, python_state)
            for a, b in zip(mine, theirs):
                assert (a is None) == (b is None)
                if b is not None:
                    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("case", list(_paths()))
def test_fast_path_equals_python_solver(case):
    assert_compiled_step_equals_python_solver(*_paths()[case])


def count_python_solves(monkeypatch, provider) -> dict:
    """Count the calls of ``provider``'s PositionSolver (the route the compiled step falls back to):
    ``calls["python"]``."""
    calls = {"python": 0}
    solve = provider.solver.solve

    def counting(*args, **kwargs):
        calls["python"] += 1
        return solve(*args, **kwargs)

    monkeypatch.setattr(provider.solver, "solve", counting)
    return calls


def _cubic(**settings):
    """One prismatic joint solved from ``s + s³/3 = q`` (no fold, not periodic), group ``settings`` as given."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=0.0, unit="1")
    b.add_body("s", joint="prismatic", axis=(1, 0, 0))
    b.add_constraints(["s"], SymbolicConstraints(["s + s**3/3 - q"]), "lu", guess={"s": 0.0}, **settings)
    return b.build()


def assert_same_values(mine, theirs):
    """f, ∇f, H of the two routes equal to 1e-12 of their size."""
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))


def test_fast_path_is_taken_and_falls_back(monkeypatch):
    """Small steps run compiled; so does a jump that needs a walk of a few steps (the Python solver's walk,
    in the kernel), with the Python solver's f, ∇f, H, a walk of more than ``SHORT_WALK`` steps within half a
    period of the crank (where the solvers look for no shift by whole periods), and a long jump of more than half
    a period, several turns even (where they shift the start by whole turns first: ``_period_shift``); a crank
    angle so large that its place within the turn is lost to rounding goes back to PositionSolver, which says
    so."""
    provider = _provider(andrews_squeezer("lu", "expressions"))
    calls = count_python_solves(monkeypatch, provider)
    state = provider.new_state()
    for beta in INITIAL["beta"] + 1e-3 * np.arange(50):
        provider.evaluate(np.array([beta]), 2, state)
    assert calls["python"] == 0
    reference = python_route(_provider(andrews_squeezer("lu", "expressions")))
    walk = np.array([INITIAL["beta"] + 0.6])
    assert 2 * provider.solver.max_step < 0.6  # the crank angle is a joint variable: a walk of three steps or more
    assert_same_values(provider.evaluate(walk, 2, state), reference.evaluate(walk, 2))
    assert calls["python"] == 0
    assert provider.solver.candidate_periods()[0] == pytest.approx(2 * np.pi)
    long = np.array([INITIAL["beta"] + 3.0])  # more than SHORT_WALK steps of max_step, less than half a period
    assert_same_values(provider.evaluate(long, 2, state), reference.evaluate(long, 2))
    assert calls["python"] == 0
    far = long + 3.5  # more than half a period further: the solvers shift by a whole turn
    np.testing.assert_allclose(provider.evaluate(far, 2, state)[0], reference.evaluate(far, 2)[0], rtol=0, atol=1e-12)
    turns = far + 3 * 2 * np.pi  # three more turns
    values = provider.evaluate(turns, 2, state)
    assert calls["python"] == 0
    for a, b in zip(values, reference.evaluate(turns, 2)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * max(1.0, np.abs(b).max()))
    # the oracle of the shift: the mechanism is periodic in the crank, its joint variables wind by whole turns
    periods, windings = provider.solver.periods
    back = provider.evaluate(turns - 3 * periods, 0, provider.new_state())[0]
    tolerance = provider.solver.tolerance * (1.0 + np.abs(back).max())  # each solution to Newton's tolerance
    np.testing.assert_allclose(values[0], back + 3 * windings[0], rtol=0, atol=tolerance)
    with pytest.raises(ConfigurationError, match="lost to rounding"):
        provider.evaluate(np.array([1e17]), 2, state)
    assert calls["python"] == 1


def test_damped_newton_steps_run_compiled(monkeypatch):
    """Where Newton's step must be damped (here every correction above ``max_newton_step`` = 1e-4, far below
    the predictor's error on a curved constraint), the compiled step damps as the Python solver does —
    PositionSolver is not called — and gives its f, ∇f, H."""
    fast, python = _provider(_cubic(max_newton_step=1e-4)), python_route(_provider(_cubic(max_newton_step=1e-4)))
    assert fast.fast_step is not None
    calls = count_python_solves(monkeypatch, fast)
    fast_state, python_state = fast.new_state(), python.new_state()
    for q in np.linspace(0.0, 1.5, 16):  # steps of 0.1: the linear predictor is off by up to ~2e-2
        assert_same_values(fast.evaluate(np.array([q]), 2, fast_state), python.evaluate(np.array([q]), 2, python_state))
    assert calls["python"] == 0


def test_a_long_walk_runs_compiled_where_the_equations_are_not_periodic(monkeypatch):
    """A jump of many steps of ``max_step`` in a group whose equations cannot be periodic (no period shift to look
    for) is walked in the kernel, bounded as the Python solver's walk, with its f, ∇f, H; Andrews' squeezer's
    loop closures are periodic in the crank, so there a long jump of more than half a turn still goes to
    PositionSolver (above)."""
    fast, python = _provider(_cubic()), python_route(_provider(_cubic()))
    assert not fast.solver.periodic_coordinates().any()
    calls = count_python_solves(monkeypatch, fast)
    far = np.array([40.0])  # s ≈ 4.8 from s = 0: a walk of dozens of steps of max_step = 0.2
    assert_same_values(fast.evaluate(far, 2, fast.new_state()), python.evaluate(far, 2, python.new_state()))
    assert calls["python"] == 0


def test_fast_path_built_with_the_model():
    """The compiled step exists as soon as the model is built (with the group's method): no warm-up
    counter changes the code path."""
    model = andrews_squeezer("projection", "expressions")
    assert _provider(model).fast_step is not None and _provider(model).fast_step.projection


@pytest.mark.parametrize("solver", ["lu", "projection"])
def test_fold_reported_as_by_python_solver(solver):
    """The fast path never hides an error: walking f³ − 3f = q in small steps into its fold at
    q = −2 fails with the Python solver's message, at the same state."""
    messages = []
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=2.0, unit="1")
    b.add_body("s", joint="prismatic", axis=(1, 0, 0))
    b.add_constraints(["s"], SymbolicConstraints(["s**3 - 3*s - q"]), solver, guess={"s": 2.0})
    fast = _provider(b.build())
    assert fast.fast_step is not None
    for provider in (fast, python_route(fast)):
        state = provider.new_state()
        with pytest.raises(ConfigurationError) as error:
            for q in np.linspace(2.0, -2.5, 400):
                provider.evaluate(np.array([q]), 2, state)
        messages.append(str(error.value))
    assert "singular configuration" in messages[0]
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name", ["andrews_squeezer", "four_bar", "five_bar"])
def test_a_batch_is_the_states_one_by_one(name):
    """A batch of states is solved in one compiled call walking its rows (FastStep.rows), from the first row
    it declines state by state: the same f, ∇f, H bit for bit as evaluating the rows one by one with a
    workspace (each a compiled step, itself held to the Python solver above), for a trajectory with a jump
    (a long walk, shifted by a whole turn first in the periodic squeezer) in its middle, orders 0 to 2."""
    from pathlib import Path

    model = mbkron.load_model(Path(__file__).resolve().parents[1] / "models" / f"{name}.toml")
    rng = np.random.default_rng(1)
    q = model.default_q + 0.02 * rng.standard_normal((120, model.nq)).cumsum(axis=0)
    q[60] += 3.0
    for order in (0, 1, 2):
        batch = model.joint_variables(q.reshape(4, 30, model.nq), order, workspace=model.workspace())
        workspace = model.workspace()
        single = [model.joint_variables(row, order, workspace=workspace) for row in q]
        for k in range(order + 1):
            expected = np.stack([values[k] for values in single]).reshape(batch[k].shape)
            assert np.array_equal(batch[k], expected), (name, order, k)
