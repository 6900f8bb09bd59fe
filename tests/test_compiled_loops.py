"""Loop closures evaluated by the library's callbacks, their compiled Newton step, and the on-disk cache of
the code generated for expression groups.

A bound loop-closure system evaluates ``g``, ``∂g``, ``∂²g`` by one implementation
(:mod:`mbkron.algorithms.jointvars.closure_kernels`, from the bodies and points packed by :meth:`_BoundClosures.kernel_data`),
which the compiled Newton step calls through C callbacks (and Python through the same kernel), with no code
generated per model. Here ``g`` is compared with the closures' definition evaluated from the model's own
kinematics, its derivatives with central differences, at random states, and the compiled continuation's
positions and derivatives with the implicit-function theorem along paths, for Andrews' squeezer (closures between bodies), spatial closures to the ground with
revolute and fixed orientation equations, and slider-cranks (prismatic joints solved and
explicit).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.jit.common import AVAILABLE
from mbkron.core.errors import ConfigurationError
from mbkron.examples.andrews import INITIAL, andrews_squeezer
from mbkron.examples.linkages import four_bar
from mbkron.algorithms.jointvars import generated
from mbkron.algorithms.jointvars.loop_closures import LoopClosure
from mbkron.algorithms.kinematics.tree import compute_kinematics
from tests.test_compiled_constraints import _provider, assert_implicit_function_theorem, python_constraint_solver

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

CRANK, ROD = 0.4, 1.0




def _rodrigues(axis, angle):
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def spatial_loop(orientation: str):
    """A 7R (fixed closure) or 6R (revolute closure) spatial loop closed to the ground, one degree
    of freedom (the loops of tests/test_constraints.py); returns the model and ``q`` at assembly."""
    rng = np.random.default_rng(11 if orientation == "fixed" else 5)
    n = 7 if orientation == "fixed" else 6
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    offsets = rng.normal(scale=0.5, size=(n, 3))
    f_star = rng.uniform(-1, 1, size=n)
    R_tip, r_tip = np.eye(3), np.zeros(3)
    for axis, offset, angle in zip(axes, offsets, f_star):
        r_tip, R_tip = r_tip + R_tip @ offset, R_tip @ _rodrigues(axis, angle)
    tip = np.array([0.2, -0.1, 0.3])
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=f_star[0])
    names = [f"body {k}" for k in range(n)]  # body names need not be identifiers
    for k, name in enumerate(names):
        b.add_body(name, parent="ground" if k == 0 else names[k - 1], axis=axes[k], offset=offsets[k],
                   variable="q" if k == 0 else None)
    if orientation == "fixed":
        closure = LoopClosure(names[-1], tip, "ground", R_tip @ tip + r_tip, plane=None, orientation="fixed",
                              rotation=R_tip.T)
    else:
        axis_a = np.array([0.0, 0.6, 0.8])
        closure = LoopClosure(names[-1], tip, "ground", R_tip @ tip + r_tip, plane=None, orientation="revolute",
                              axis_a=axis_a, axis_b=R_tip @ axis_a)
    b.add_constraints(names[1:], [closure], "lu", guess=dict(zip(names[1:], f_star[1:] + 0.01)))
    return b.build(), f_star[0]


def slider_crank(driven: str, solver: str = "lu"):
    """Crank (revolute at the origin), rod and a slider on the x axis (prismatic); the rod's end
    is the slider's origin. ``driven="crank"``: q is the crank angle, rod angle and slider
    position are solved (a prismatic unknown); ``driven="slider"``: q is the slider position (an
    explicit prismatic input), crank and rod angles are solved."""
    b = mbkron.ModelBuilder()
    if driven == "crank":
        b.add_coordinate("q", default=0.3)
        b.add_body("crank", axis=(0, 0, 1), variable="q")
        b.add_body("slider", joint="prismatic", axis=(1, 0, 0))
        unknowns, guess = ["rod", "slider"], {"rod": -0.4, "slider": 1.3}
    else:
        b.add_coordinate("q", default=1.0, unit="m")
        b.add_body("crank", axis=(0, 0, 1))
        b.add_body("slider", joint="prismatic", axis=(1, 0, 0), variable="q")
        unknowns, guess = ["crank", "rod"], {"crank": 1.2, "rod": -2.0}
    b.add_body("rod", parent="crank", axis=(0, 0, 1), offset=(CRANK, 0, 0))
    b.add_constraints(unknowns, [LoopClosure("rod", (ROD, 0, 0), "slider", (0, 0, 0))], solver, guess=guess)
    return b.build()


def _cases():
    """Models and paths of q through their workspace."""
    rng = np.random.default_rng(7)
    beta = INITIAL["beta"] + np.cumsum(rng.uniform(-2e-3, 6e-3, size=200))  # includes reversals
    fixed, q_fixed = spatial_loop("fixed")
    revolute, q_revolute = spatial_loop("revolute")
    return {
        "andrews lu": (andrews_squeezer("lu", "loop_closures"), beta[:, None]),
        "andrews projection": (andrews_squeezer("projection", "loop_closures"), beta[:, None]),
        "spatial fixed": (fixed, q_fixed + np.linspace(0.0, 0.05, 60)[:, None]),
        "spatial revolute": (revolute, q_revolute + np.linspace(0.0, 0.05, 60)[:, None]),
        "slider-crank, prismatic solved": (slider_crank("crank"), np.linspace(0.3, 4.0, 200)[:, None]),
        "slider-crank, prismatic explicit": (slider_crank("slider", "projection"), np.linspace(1.0, 1.35, 100)[:, None]),
    }


CASES = _cases()


def _differences(function, x, size, h):
    """Central differences of ``function(x)`` (length ``size``) in each entry of ``x``: shape (size, len(x))."""
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = h
        columns.append((function(x + step) - function(x - step)) / (2 * h))
    return np.stack(columns, axis=-1).reshape(size, x.size)


def _residuals_by_definition(model, system, u, p):
    """``g`` of the model's closures by :class:`LoopClosure`'s definition, from the ground transforms of the
    model's tree kinematics (:func:`mbkron.algorithms.kinematics.tree.compute_kinematics`, the engine's kernel) at the
    joint variables ``(u, p)``: ground components of ``r_a − r_b``, and the orientation equations through
    quantities that do not depend on the choice of the perpendicular pair (revolute: the sum of squares of the
    two equations is ``1 − ((R_a axis_a)·(R_b axis_b))²``; fixed: the entries ``M_zy, M_xz, M_yx`` of
    ``M = (R_a R)ᵀ R_b``). Returns the values in declaration order, the revolute pairs as their sum of
    squares in place of the first of the two (and nan in place of the second)."""
    f = np.zeros(model.nj)
    f[system.unknown_rows] = u
    f[system.explicit_rows] = p[: system.explicit_rows.size]
    T = compute_kinematics(model.tree, (f, np.eye(model.nj), None), f, 0).T

    def frame(body):
        return np.eye(4) if body == "ground" else T[model.body_index(body)]

    values = []
    for group in model.constraint_groups:
        closures = group.constraints
        for c in getattr(closures, "closures", closures):  # a LoopClosures system or the list of closures
            Ta, Tb = frame(c.body_a), frame(c.body_b)
            r = Ta @ np.append(c.point_a, 1.0) - Tb @ np.append(c.point_b, 1.0)
            values += [r[k] for k in ({"xy": (0, 1), "yz": (1, 2), "xz": (0, 2)}[c.plane] if c.plane else range(3))]
            if c.orientation == "revolute":
                a = Ta[:3, :3] @ np.asarray(c.axis_a) / np.linalg.norm(c.axis_a)
                b = Tb[:3, :3] @ np.asarray(c.axis_b) / np.linalg.norm(c.axis_b)
                values += [1.0 - (a @ b) ** 2, np.nan]
            elif c.orientation == "fixed":
                M = (Ta[:3, :3] @ np.asarray(c.rotation)).T @ Tb[:3, :3]
                values += [M[2, 1], M[0, 2], M[1, 0]]
    return np.array(values)


@pytest.mark.parametrize("case", list(CASES))
def test_closure_residuals_equal_their_definition_and_derivatives_equal_differences(case):
    """g of the closure evaluation (:mod:`mbkron.algorithms.jointvars.closure_kernels`, the one implementation behind the Python
    solver and the compiled step's callbacks) equals the closures' definition evaluated from the model's own
    kinematics at random (u, p), to round-off; ∂g and ∂²g (by the joints' ground twists) equal central
    differences of g and ∂g (an oracle that shares nothing with the twist formulas)."""
    model = CASES[case][0]
    system = _provider(model).solver.system
    m, n = system.size, system.n_inputs

    def g_and_gradient(x):
        g, g_u, g_p = system.first(x[:m], x[m:])
        return g, np.concatenate([g_u, g_p], axis=1)

    rng = np.random.default_rng(3)
    for _ in range(10):
        u, p = rng.uniform(-3, 3, m), rng.uniform(-3, 3, n)
        x = np.concatenate([u, p])
        g, gradient = g_and_gradient(x)
        expected = _residuals_by_definition(model, system, u, p)
        pairs = np.flatnonzero(np.isnan(expected))
        g = g.copy()
        g[pairs - 1] = g[pairs - 1] ** 2 + g[pairs] ** 2  # a revolute closure's two equations, as their sum of squares
        g[pairs] = np.nan
        np.testing.assert_allclose(g, expected, rtol=0, atol=1e-13 * max(1.0, np.nanmax(np.abs(expected))))
        scale = max(1.0, np.abs(gradient).max())
        np.testing.assert_allclose(gradient, _differences(lambda y: g_and_gradient(y)[0], x, m, 1e-6), rtol=0,
                                   atol=1e-8 * scale)
        g_u, g_p, g_uu, g_up, g_pp = system.second(u, p)
        np.testing.assert_allclose(np.concatenate([g_u, g_p], axis=1), gradient, rtol=0, atol=1e-14 * scale)
        hessian = np.zeros((m, m + n, m + n))
        hessian[:, :m, :m] = g_uu
        hessian[:, :m, m:] = g_up
        hessian[:, m:, :m] = np.swapaxes(g_up, 1, 2)
        hessian[:, m:, m:] = g_pp
        differenced = _differences(lambda y: g_and_gradient(y)[1].ravel(), x, m * (m + n), 1e-6)
        np.testing.assert_allclose(hessian, differenced.reshape(m, m + n, m + n), rtol=0,
                                   atol=1e-7 * max(1.0, np.abs(hessian).max()))


@needs_numba
@pytest.mark.parametrize("case", list(CASES))
def test_compiled_step_satisfies_the_implicit_function_theorem(case):
    assert_implicit_function_theorem(*CASES[case])


@needs_numba
def test_fold_of_a_loop_is_reported_where_it_is():
    """Pushing the slider to the crank's and rod's full reach (q = 1.4, crank and rod aligned, det ∂g/∂f = 0)
    fails there: the message names the last solution just before q = 1.4 (with a large condition number), the
    requested q beyond it and the failed trial between them."""
    provider = _provider(slider_crank("slider"))
    state = provider.new_state()
    with pytest.raises(ConfigurationError) as error:
        for q in np.linspace(1.0, CRANK + ROD + 0.05, 400):
            provider.evaluate(np.array([q]), 2, state)
    message = str(error.value)
    number = r"(-?\d+\.?\d*(?:e[-+]\d+)?)"
    found = re.match(rf"cannot continue the solution of \(crank, rod\) from q = \[{number}\] \(f = \[{number}, "
                     rf"{number}\], condition number of ∂g/∂f {number}\) towards q = \[{number}\]: .* at "
                     rf"q = \[{number}\]; the path meets a singular configuration", message)
    assert found, message
    start, crank, rod, condition, target, trial = (float(value) for value in found.groups())
    reach = CRANK + ROD
    assert reach - 1e-3 < start <= reach and float(condition) > 1e2
    assert abs(crank) < 0.1 and abs(rod) < 0.1  # crank and rod (nearly) aligned with the slider's axis
    assert target == pytest.approx(q) and reach < target
    assert start < trial < target


# ---------------------------------------------------------------------------------------------
# The on-disk cache of generated kernels.
@needs_numba
def test_kernel_module_written_once_by_hash(tmp_path, monkeypatch):
    """The module of an expression group is written under the hash of its text, atomically (no temporary file
    left), and a file of that name with other content is replaced before it is imported."""
    monkeypatch.setenv(generated.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(generated, "_GENERATED", {})
    expressions = _provider(four_bar("lu")).solver.system.expressions()
    source = generated.module_source(expressions)
    module = generated.kernel_module(expressions)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert files == [Path(module.__file__)]
    assert files[0].read_text(encoding="utf-8") == source
    assert generated.kernel_module(expressions) is module  # one module per process
    files[0].write_text("raise SystemExit('not ours')\n", encoding="utf-8")
    monkeypatch.setattr(generated, "_GENERATED", {})
    again = generated.kernel_module(expressions)
    assert files[0].read_text(encoding="utf-8") == source
    assert again.first.address and again.second.address  # the generated functions compiled from the rewritten file


def test_generated_module_names_no_user_text():
    """The joint names of an expression group never reach the printed source: neutral symbols only."""
    source = generated.module_source(_provider(four_bar("lu")).solver.system.expressions())
    assert not any(name in source for name in ("crank", "coupler", "rocker"))
    assert compile(source, "<test>", "exec")


@needs_numba
@pytest.mark.parametrize("case", ["spatial revolute", "slider-crank, prismatic solved"])
def test_a_closed_loop_model_generates_no_code(case, tmp_path, monkeypatch):
    """A loop-closure group writes nothing into the generated-code cache, and its compiled step (by the library's
    closure callbacks) satisfies the implicit-function theorem; with an unwritable cache directory too (nothing to
    write)."""
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(generated.CACHE_VARIABLE, str(blocker / "cache"))
    monkeypatch.setattr(generated, "_GENERATED", {})
    model, path = CASES[case]
    assert_implicit_function_theorem(model, path[:3])
    assert list(tmp_path.iterdir()) == [blocker]


@needs_numba
def test_unwritable_cache_falls_back_to_memory(tmp_path, monkeypatch):
    """A cache directory that cannot be created (a file is in the way) compiles an expression group in memory: the
    same values as its Python functions called back."""
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv(generated.CACHE_VARIABLE, str(blocker / "cache"))
    monkeypatch.setattr(generated, "_GENERATED", {})
    fast = _provider(four_bar("lu"))
    with python_constraint_solver():
        python = _provider(four_bar("lu"))
    q = np.array([0.35])
    for a, b in zip(fast.evaluate(q, 2), python.evaluate(q, 2)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))
    assert list(tmp_path.iterdir()) == [blocker]


_SECOND_PROCESS = """
import sys
import numpy as np
from mbkron.examples.andrews import andrews_squeezer
from mbkron.examples.linkages import four_bar
model = andrews_squeezer("lu", "loop_closures") if sys.argv[1] == "andrews" else four_bar("lu")
assert model.joint_variable_map.providers[-1][1].fast_step is not None
model.forward_dynamics(model.default_q, np.zeros(1))  # the step and the dynamics in one compiled call
model.joint_variables(model.default_q + 0.01, 2)  # the step alone
"""


@needs_numba
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="nothing is compiled or cached with NUMBA_DISABLE_JIT")
def test_second_process_loads_the_generated_functions_and_a_closed_loop_model_compiles_none(tmp_path):
    """numba's cache debug output: the first process with an expression group saves its generated constraint
    functions (``first`` and ``second``), the second loads them and saves nothing; a third process with a
    loop-closure model (Andrews' squeezer) neither saves nor loads a generated function (its group is evaluated
    by the library's closure callbacks) and loads the step and the dynamics: library kernels, not compiled per
    model."""
    env = dict(os.environ, MBKRON_CACHE_DIR=str(tmp_path), NUMBA_DEBUG_CACHE="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    outputs = [subprocess.run([sys.executable, "-c", _SECOND_PROCESS, model], env=env, capture_output=True, text=True,
                              check=True).stdout.splitlines() for model in ("four_bar", "four_bar", "andrews")]
    generated = "mbkron_kernels_"
    for function in (".first-", ".second-"):
        for output, event in zip(outputs[:2], ("saved", "loaded")):
            assert any(line.startswith(f"[cache] data {event}") and generated in line and function in line
                       for line in output), (function, event)
    assert not any(line.startswith("[cache] data saved") for line in outputs[1])
    assert not any(generated in line for line in outputs[2])
    for kernel in (".step_kernel-", ".group_forward-"):
        assert any(line.startswith("[cache] data loaded") and kernel in line for line in outputs[2]), kernel
