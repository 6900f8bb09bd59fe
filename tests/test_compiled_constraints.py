"""The compiled continuation of constraint groups (mbkron.algorithms.jointvars.kernels), the one implementation of Eq. 100-120.

Held to oracles independent of it: the constraints evaluated by their own Python functions (sympy's lambdify),
the implicit-function theorem's ``∇f = −(∂g/∂f)⁻¹ ∂g/∂q`` by ``numpy.linalg.solve``, ``H`` by central differences
of ``∇f``, closed-form solutions (a cubic by Cardano's formula), the equations' periodicity, and the failure
messages at a known fold. The generated callbacks are also compared with the same group's Python functions called
back from the same kernel (:func:`python_constraint_solver`).
"""

from __future__ import annotations

import contextlib
import re
from unittest import mock

import numpy as np
import pytest

import mbkron
from mbkron.jit.common import AVAILABLE
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.algorithms.jointvars.solvers import PositionSolver
from mbkron.core.errors import ConfigurationError
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.examples.linkages import five_bar, four_bar

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _provider(model):
    return model.joint_variable_map.providers[-1][1]


@contextlib.contextmanager
def python_constraint_solver():
    """Expression groups built inside call their Python functions back from the compiled continuation
    (:data:`mbkron.algorithms.jointvars.constraint_callbacks.GENERATED_CALLBACKS` False:
    :class:`mbkron.algorithms.jointvars.constraint_callbacks.PythonConstraints`)
    instead of compiling functions generated for each group — for the fuzzers' thousands of mutated groups, where
    compiling each group's generated functions would cost seconds, and numba's compiler calls ``eval`` (in
    ``collections.namedtuple``), which the fuzzers' guards forbid. Loop closures keep their library callbacks
    (:mod:`mbkron.algorithms.jointvars.closure_kernels`), compiled once, nothing per group."""
    from mbkron.algorithms.jointvars import constraint_callbacks

    with mock.patch.object(constraint_callbacks, "GENERATED_CALLBACKS", False):
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


def assert_implicit_function_theorem(model, path):
    """Along ``path`` (states continuing from each other): ``g(f, p(q)) = 0`` by the system's own Python functions,
    ``∇f = −(∂g/∂f)⁻¹ ∂g/∂p ∂p/∂q`` (Eq. 101) by ``numpy.linalg.solve`` on them, ``H`` (Eq. 120) by central
    differences of ``∇f`` at a few states; ``f`` the same at orders 0 and 1 (bit for bit: no second-order predictor
    without H), and at order 2 to Newton's accuracy."""
    provider = _provider(model)
    solver = provider.solver
    values = {}
    for order in (2, 0, 1):
        state = provider.new_state()
        values[order] = [provider.evaluate(q, order, state) for q in path]
    for k, q in enumerate(path):
        f, grad, hess = values[2][k]
        assert values[0][k][1] is None and values[1][k][2] is None and hess is not None
        np.testing.assert_array_equal(values[0][k][0], values[1][k][0])
        np.testing.assert_allclose(values[0][k][0], f, rtol=0, atol=1e-12 * (1.0 + np.abs(f).max()))
        np.testing.assert_allclose(values[1][k][1], grad, rtol=0, atol=1e-10 * (1.0 + np.abs(grad).max()))
        p, P, _ = solver.inputs.evaluate(q)
        g, J, g_p = solver.system.first(f, p)
        assert np.abs(g).max() <= 1e-12 * (1.0 + np.abs(f).max()) * (1.0 + np.abs(J).max())
        expected = -np.linalg.solve(J, g_p @ P)
        np.testing.assert_allclose(grad, expected, rtol=0, atol=1e-9 * max(1.0, np.abs(expected).max()))
    h = 1e-5
    for k in np.linspace(0, len(path) - 1, 4).astype(int):
        q, hess = path[k], values[2][k][2]
        columns = []
        for axis in np.eye(q.size):
            ends = []
            for sign in (1.0, -1.0):
                state = provider.new_state()
                provider.evaluate(q, 0, state)
                ends.append(provider.evaluate(q + sign * h * axis, 1, state)[1])
            columns.append((ends[0] - ends[1]) / (2 * h))
        differenced = np.stack(columns, axis=-1)  # [j, l, k] = ∂(∂f_j/∂q_l)/∂q_k
        np.testing.assert_allclose(hess, differenced, rtol=0, atol=1e-6 * max(1.0, np.abs(hess).max()))


@pytest.mark.parametrize("case", list(_paths()))
def test_positions_and_derivatives_satisfy_the_implicit_function_theorem(case):
    assert_implicit_function_theorem(*_paths()[case])


@pytest.mark.parametrize("case", list(_paths()))
def test_generated_callbacks_equal_the_groups_python_functions(case):
    """The functions generated for an expression group (compiled C callbacks) and its sympy-lambdified Python
    functions (called back from the same compiled continuation) give the same f, ∇f, H along the paths."""
    model, path = _paths()[case]
    with python_constraint_solver():
        python = _provider(_paths()[case][0])
    generated = _provider(model)
    assert python.step.kernels is not generated.step.kernels
    for order in (2, 0):
        mine, theirs = generated.new_state(), python.new_state()
        for q in path:
            for a, b in zip(generated.evaluate(q, order, mine), python.evaluate(q, order, theirs)):
                if b is not None:
                    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))


def _cubic(**settings):
    """One prismatic joint solved from ``s + s³/3 = q`` (no fold, not periodic), group ``settings`` as given."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=0.0, unit="1")
    b.add_body("s", joint="prismatic", axis=(1, 0, 0))
    b.add_constraints(["s"], SymbolicConstraints(["s + s**3/3 - q"]), "lu", guess={"s": 0.0}, **settings)
    return b.build()


def cubic_root(q):
    """The real root of ``s + s³/3 = q`` by Cardano's formula, with ``ds/dq = 1/(1 + s²)`` and
    ``d²s/dq² = −2s/(1 + s²)³``."""
    root = np.sqrt(2.25 * q**2 + 1.0)
    s = np.cbrt(1.5 * q + root) + np.cbrt(1.5 * q - root)
    return s, 1.0 / (1.0 + s**2), -2.0 * s / (1.0 + s**2) ** 3


def assert_cubic(values, q):
    f, grad, hess = values
    s, ds, d2s = cubic_root(q)
    np.testing.assert_allclose(f, [s], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(grad, [[ds]], rtol=1e-12)
    np.testing.assert_allclose(hess, [[[d2s]]], rtol=1e-11, atol=1e-14)


def test_walks_and_whole_turns_of_the_squeezer():
    """Andrews' squeezer (expressions): a jump that needs a walk of a few steps, and one of more than
    ``SHORT_WALK`` steps within half a period of the crank, reach the solution that small steps along the same
    branch reach (and that solves the constraints); a jump of more than half a period, several turns even (the
    start shifted by whole turns first), gives the solution one walk of a few turns back gives, moved by the
    branch's windings (the equations are periodic in the crank); a crank angle so large that its place within the
    turn is lost to rounding is refused, naming the periods."""
    provider = _provider(andrews_squeezer("lu", "expressions"))
    assert provider.solver.candidate_periods()[0] == pytest.approx(2 * np.pi)
    for jump in (0.6, 3.0):
        target = np.array([INITIAL["beta"] + jump])
        assert provider.solver.max_step < jump
        walked = provider.evaluate(target, 2, provider.new_state())
        state = provider.new_state()
        for beta in np.linspace(INITIAL["beta"], target[0], 600):
            stepped = provider.evaluate(np.array([beta]), 2, state)
        for a, b in zip(walked, stepped):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * max(1.0, np.abs(b).max()))
    state = provider.new_state()
    provider.evaluate(np.array([INITIAL["beta"] + 3.0]), 2, state)
    turns = np.array([INITIAL["beta"] + 6.5 + 3 * 2 * np.pi])  # more than half a period further, three more turns
    values = provider.evaluate(turns, 2, state)
    periods, windings = provider.solver.periods
    back = provider.evaluate(turns - 3 * periods, 2, provider.new_state())
    tolerance = provider.solver.tolerance * (1.0 + np.abs(back[0]).max())  # each solution to Newton's tolerance
    np.testing.assert_allclose(values[0], back[0] + 3 * windings[0], rtol=0, atol=tolerance)
    for a, b in zip(values[1:], back[1:]):  # ∇f and H periodic
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * max(1.0, np.abs(b).max()))
    with pytest.raises(ConfigurationError, match=r"position within the constraints' period \(\[6.28318") as error:
        provider.evaluate(np.array([1e17]), 2, state)
    assert "cannot solve (" in str(error.value) and "q = [1e+17]" in str(error.value)


def test_damped_newton_steps_give_the_closed_form():
    """Where Newton's step must be damped (here every correction above ``max_newton_step`` = 1e-4, far below
    the predictor's error on a curved constraint), the continuation still gives the closed-form root of
    ``s + s³/3 = q`` and its derivatives."""
    provider = _provider(_cubic(max_newton_step=1e-4))
    state = provider.new_state()
    for q in np.linspace(0.0, 1.5, 16):  # steps of 0.1: the linear predictor is off by up to ~2e-2
        assert_cubic(provider.evaluate(np.array([q]), 2, state), q)


def test_a_long_walk_where_the_equations_are_not_periodic_gives_the_closed_form():
    """A jump of many steps of ``max_step`` in a group whose equations cannot be periodic (no period shift to look
    for) is walked, bounded, to the closed-form root; one that needs more than ``max_steps`` ends with an error
    naming where it started, the steps and where it got."""
    provider = _provider(_cubic())
    assert not provider.solver.periodic_coordinates().any()
    far = np.array([40.0])  # s ≈ 4.8 from s = 0: a walk of dozens of steps of max_step = 0.2
    assert_cubic(provider.evaluate(far, 2, provider.new_state()), 40.0)
    short = PositionSolver(provider.solver.system, provider.solver.inputs, np.zeros(1), np.zeros(1), ("s",),
                           max_steps=5)
    with pytest.raises(ConfigurationError) as error:
        short.evaluate(far)
    message = str(error.value)
    assert message.startswith("cannot solve (s) at q = [40]: the continuation from q = [0] did not arrive in 5 steps")
    reached = float(re.search(r"reached q = \[([^]]*)\]", message).group(1))
    assert 0.0 < reached < 40.0


def test_fast_path_built_with_the_model():
    """The compiled step exists as soon as the model is built (with the group's method): no warm-up
    counter changes the code path."""
    model = andrews_squeezer("projection", "expressions")
    assert _provider(model).fast_step is not None and _provider(model).fast_step.projection


@pytest.mark.parametrize("solver", ["lu", "projection"])
def test_a_fold_is_reported_where_it_is(solver):
    """Walking f³ − 3f = q in small steps from (q, f) = (2, 2) into its fold at (−2, 1) (∂g/∂f = 3f² − 3 = 0) fails
    there, with a message naming the last solution (q, f, the condition number growing like 1/|f − 1|), the
    requested q and the failed trial just beyond the fold; the same for both derivative methods."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=2.0, unit="1")
    b.add_body("s", joint="prismatic", axis=(1, 0, 0))
    b.add_constraints(["s"], SymbolicConstraints(["s**3 - 3*s - q"]), solver, guess={"s": 2.0})
    provider = _provider(b.build())
    state = provider.new_state()
    with pytest.raises(ConfigurationError) as error:
        for q in np.linspace(2.0, -2.5, 400):
            provider.evaluate(np.array([q]), 2, state)
    message = str(error.value)
    number = r"(-?\d+\.?\d*(?:e[-+]\d+)?)"
    found = re.match(rf"cannot continue the solution of \(s\) from q = \[{number}\] \(f = \[{number}\], condition "
                     rf"number of ∂g/∂f {number}\) towards q = \[{number}\]: (.*) at q = \[{number}\]; the path meets "
                     "a singular configuration", message)
    assert found, message
    start_q, start_f, condition, target, failure, trial = found.groups()
    assert abs(float(start_q) + 2.0) < 1e-6 and abs(float(start_f) - 1.0) < 1e-2
    assert 1e3 < float(condition) < 1e5  # ‖[3f² − 3, −1]‖₁ / |3f² − 3| near the fold
    assert float(target) == pytest.approx(q, rel=1e-9) and q < -2.0
    assert -2.0 - 1e-6 < float(trial) < -2.0  # just beyond the fold, where no real f is near
    assert failure.startswith("no descent from f = [") or failure.startswith("the sign of det")


@pytest.mark.parametrize("name", ["andrews_squeezer", "four_bar", "five_bar"])
def test_a_batch_is_the_states_one_by_one(name):
    """A batch of states is solved in one compiled call walking its rows (FastStep.rows): the same f, ∇f, H bit for
    bit as evaluating the rows one by one with a workspace (each a compiled step, itself held to the oracles
    above), for a trajectory with a jump
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
