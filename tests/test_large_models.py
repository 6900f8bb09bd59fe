"""Large models evaluate in memory proportional to their size (issue 27, item 10).

The dynamics needs of the joint variables' second derivatives only the convective terms
``c_j = q̇ᵀ H_j q̇`` (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`), never the dense
Hessian ``H`` (nj × nq × nq: 64 GB for a 2,000-body chain). Here: the convective terms of every kind of
provider equal the contraction of the dense Hessians of :meth:`mbkron.Model.joint_variables`, and a
2,000-body chain's mass matrix, equations of motion, forward and inverse dynamics run in a child process
whose peak resident memory grows by less than a budget proportional to the model (a few dense nq × nq
matrices), with a limit on its address space that any nj × nq × nq array exceeds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from mbkron.examples.andrews import andrews_squeezer
from mbkron.numerics.functions import CubicSpline, FourierSeries
from mbkron.multibody.jointvars import CoordinateFunction


def _contracted(model, q, qd):
    """``q̇ᵀ H_j q̇`` from the dense Hessians of the public ``joint_variables(q, 2)``."""
    f, grad, hess = model.joint_variables(q, 2)
    return f, grad, np.einsum("...jkl,...k,...l->...j", hess, qd, qd)


def _expression_model() -> mbkron.Model:
    """A chain whose joint variables are affine, sympy expressions of several coordinates, and functions
    of one coordinate (a cubic spline and a Fourier series)."""
    q0, q1, q2 = sympy.symbols("q0:3")
    spline = CubicSpline([-1.0, 0.0, 0.5, 1.2], [0.0, 0.2, 0.1, 0.6], "fmm")
    fourier = FourierSeries(2 * np.pi, 0.1, [0.3], [-0.2])
    variables = ["q0", sympy.sin(q1) * q0 + q2 ** 3, CoordinateFunction(spline, "q2"),
                 mbkron.Linear({"q0": 0.5, "q2": -1.0}, 0.1), sympy.exp(q0 - q2) * sympy.cos(q1),
                 CoordinateFunction(fourier, "q1")]
    b = mbkron.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for k in range(3):
        b.add_coordinate(f"q{k}")
    for k, variable in enumerate(variables):
        b.add_body(f"b{k}", parent="ground" if k == 0 else f"b{k - 1}", axis=(0.0, 0.0, 1.0) if k % 2 else (1.0, 0.0, 0.0),
                   variable=variable, offset=(0.2, 0.1, 0.0) if k else None, mass=1.0, com=(0.1, 0.0, 0.0),
                   inertia=np.diag([1e-2, 2e-2, 2e-2]))
    return b.build()


def test_convective_terms_of_expressions_and_functions_equal_the_contracted_hessians():
    model = _expression_model()
    assert model.joint_variable_map.providers  # the expressions and functions are providers, not affine rows
    rng = np.random.default_rng(4)
    for q, qd in [rng.uniform(-0.9, 0.9, (2, 3)), (rng.uniform(-0.9, 0.9, (4, 2, 3)), rng.uniform(-2, 2, (4, 2, 3))),
                  (rng.uniform(-0.9, 0.9, 3), rng.uniform(-2, 2, (5, 3)))]:
        f, grad, convective = model.joint_variable_map.evaluate_convective(q, qd)
        expected_f, expected_grad, expected = _contracted(model, q, qd)
        np.testing.assert_array_equal(f, expected_f)
        np.testing.assert_array_equal(grad, expected_grad)
        assert convective.shape == np.broadcast_shapes(q.shape, qd.shape)[:-1] + (model.nj,)
        np.testing.assert_allclose(convective, np.broadcast_to(expected, convective.shape), rtol=1e-13, atol=1e-13)
        assert np.abs(convective).max() > 0.1  # the nonlinear rows are covered, not only zeros


@pytest.mark.parametrize("solver", ["lu", "finite_difference"])
def test_convective_terms_of_a_constraint_group_equal_the_contracted_hessians(solver):
    model = andrews_squeezer(solver)
    rng = np.random.default_rng(5)
    q = model.default_q + rng.uniform(-0.05, 0.05, (3, model.nq))
    qd = rng.uniform(-3.0, 3.0, (3, model.nq))
    f, grad, convective = model.joint_variable_map.evaluate_convective(q, qd)
    expected_f, expected_grad, expected = _contracted(model, q, qd)
    np.testing.assert_array_equal(f, expected_f)
    np.testing.assert_array_equal(grad, expected_grad)
    np.testing.assert_allclose(convective, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    assert np.abs(expected).max() > 1.0


_CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np, sympy, mbkron

    def chain(n, nonlinear):
        # revolute bodies, one coordinate each; nonlinear: three knee-like couplings q_k + 0.3 sin(q_(k-1))
        b = mbkron.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        for k in range(n):
            b.add_coordinate(f"q{k}")
        coupled = {3, n // 2, n - 2} if nonlinear else set()
        for k in range(n):
            variable = f"q{k}"
            if k in coupled:
                variable = sympy.Symbol(f"q{k}") + 0.3 * sympy.sin(sympy.Symbol(f"q{k - 1}"))
            b.add_body(f"b{k}", parent="ground" if k == 0 else f"b{k - 1}",
                       axis=(0.0, 0.0, 1.0) if k % 2 == 0 else (0.0, 1.0, 0.0), variable=variable,
                       offset=(0.1, 0.0, 0.0) if k else None, mass=1.0, com=(0.05, 0.01, 0.0),
                       inertia=np.diag([1e-3, 2e-3, 2e-3]))
        return b.build()

    def run(model):
        q, qd = np.random.default_rng(1).uniform(-0.5, 0.5, (2, model.nq))
        M = model.mass_matrix(q)
        terms = model.equations_of_motion(q, qd)
        qdd = model.forward_dynamics(q, qd)
        tau = model.inverse_dynamics(q, qd, qdd)
        return M, terms, qdd, tau

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux

    n, nonlinear = int(sys.argv[1]), sys.argv[2] == "1"
    run(chain(6, nonlinear))  # kernels loaded (or compiled) before the baseline
    baseline = peak_mb()
    with open("/proc/self/status") as status:
        virtual = next(int(line.split()[1]) for line in status if line.startswith("VmSize")) * 1024
    limit = virtual + 8 * 2**30  # any nj x nq x nq array of doubles (32 GB) exceeds it at once
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    model = chain(n, nonlinear)
    M, terms, qdd, tau = run(model)
    arrays = (M, terms.mass_matrix, terms.velocity_forces, terms.gravity_forces, terms.applied_forces, qdd, tau)
    print(json.dumps(dict(
        growth=peak_mb() - baseline, finite=all(bool(np.isfinite(a).all()) for a in arrays),
        providers=len(model.joint_variable_map.providers), same_mass_matrix=bool(np.array_equal(M, terms.mass_matrix)),
        residual=float(np.abs(tau).max()),
        scale=float(np.abs(M).max() * np.abs(qdd).max() + np.abs(terms.gravity_forces).max()
                    + np.abs(terms.velocity_forces).max()))))
""")

_BODIES = 2000
_BUDGET_MB = 12 * 8 * _BODIES**2 / 2**20 + 100
"""Growth of the peak resident memory allowed: a dozen dense nq × nq arrays of doubles (M, its Cholesky
factor, the kernel's body × body and body × coordinate scratch, the affine map and its gradient: 32 MB
each at 2,000 bodies) and 100 MB; a dense joint-variable Hessian alone is 2,000 times one of them."""


@pytest.mark.parametrize("nonlinear", [False, True], ids=["affine", "nonlinear"])
def test_a_2000_body_chain_evaluates_in_memory_proportional_to_its_size(nonlinear):
    root = str(Path(mbkron.__file__).resolve().parents[1])  # the child imports this mbkron
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(_BODIES), str(int(nonlinear))], capture_output=True,
                          text=True, timeout=900, cwd=root, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["providers"] == int(nonlinear)  # the couplings are sympy expressions, not affine rows
    assert result["finite"] and result["same_mass_matrix"]
    # q̈ from forward dynamics makes the inverse dynamics' τ vanish (no loads, no actuation) to round-off
    assert result["residual"] <= 1e-9 * result["scale"], result
    assert result["growth"] < _BUDGET_MB, result
