"""Constrained joint variables (Section 3-3, Eq. 100-120): systems, solvers, builder hook, errors.

Reference values are independent of the code under test: closed-form inverse kinematics
differentiated by sympy, a literal Kronecker-product transcription of Eq. 108-119 written here,
an independent spatial forward kinematics (Rodrigues' formula), Taylor-remainder scaling and
``numpy.linalg.solve``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import mbkron
from mbkron import ConfigurationError, ModelError
from mbkron.algorithms.jointvars.derivatives import hessian_right_hand_side, projection_rows, projection_solve
from mbkron.algorithms.jointvars.constraints import SymbolicConstraints
from mbkron.algorithms.jointvars.loop_closures import LoopClosure, LoopClosures
from mbkron.examples import linkages
from mbkron.examples.andrews import INITIAL, SOLVED, andrews_squeezer

L1, L2 = 0.7, 0.5
EXACT = ("lu", "projection")


# ---------------------------------------------------------------------------------------------
# Two-link inverse kinematics: the tip of a two-link arm follows a target (X(q), Y(q)).
# X = x + 0.3 y² is an explicit, non-affine joint variable (prismatic), exercising ∂²p/∂q².
def arm(solver: str, kind: str = "symbolic", **options) -> mbkron.Model:
    b = mbkron.ModelBuilder()
    b.add_coordinate("x", default=0.6, unit="m").add_coordinate("y", default=0.4, unit="m")
    x, y = sp.symbols("x y")
    b.add_body("tx", joint="prismatic", axis=(1, 0, 0), variable=x + 0.3 * y**2)
    b.add_body("ty", parent="tx", joint="prismatic", axis=(0, 1, 0), variable="y")
    b.add_body("upper", axis=(0, 0, 1))
    b.add_body("fore", parent="upper", axis=(0, 0, 1), offset=(L1, 0, 0))
    if kind == "symbolic":
        system = SymbolicConstraints(
            ["l1*cos(upper) + l2*cos(upper + fore) - tx", "l1*sin(upper) + l2*sin(upper + fore) - y"],
            {"l1": L1, "l2": L2},
        )
    else:
        system = [LoopClosure("fore", (L2, 0, 0), "ty", (0, 0, 0))]
    b.add_constraints(["upper", "fore"], system, solver, guess={"upper": 0.0, "fore": 1.5}, **options)
    return b.build()


def closed_form_arm():
    """Elbow-positive inverse kinematics, its gradient and Hessian in (x, y), by sympy."""
    x, y = sp.symbols("x y")
    X, Y = x + sp.Rational(3, 10) * y**2, y
    elbow = sp.acos((X**2 + Y**2 - L1**2 - L2**2) / (2 * L1 * L2))
    shoulder = sp.atan2(Y, X) - sp.atan2(L2 * sp.sin(elbow), L1 + L2 * sp.cos(elbow))
    f = sp.Matrix([shoulder, elbow])
    grad = f.jacobian([x, y])
    hess = [sp.hessian(e, [x, y]) for e in f]
    return (sp.lambdify([x, y], f), sp.lambdify([x, y], grad), sp.lambdify([x, y], hess))


ARM_POINTS = np.array([[0.6, 0.4], [0.3, 0.7], [-0.2, 0.5], [0.8, -0.3], [0.45, 0.05]])


@pytest.mark.parametrize("kind", ["symbolic", "loop"])
@pytest.mark.parametrize("solver", EXACT)
def test_exact_solvers_match_closed_form_inverse_kinematics(solver, kind):
    model = arm(solver, kind)
    f_ref, grad_ref, hess_ref = closed_form_arm()
    f, grad, hess = model.joint_variables(ARM_POINTS)
    rows = [model.joints.index("upper"), model.joints.index("fore")]
    for k, (x, y) in enumerate(ARM_POINTS):
        np.testing.assert_allclose(f[k, rows], np.ravel(f_ref(x, y)), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(grad[k, rows], np.array(grad_ref(x, y), dtype=float), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hess[k, rows], np.array(hess_ref(x, y), dtype=float), rtol=1e-10, atol=1e-11)


class _ProviderFailure(Exception):
    """Raised by a patched explicit joint variable (below)."""


def test_an_error_of_a_non_affine_input_reaches_the_caller_unchanged(monkeypatch):
    """The non-affine input X = x + 0.3 y² is evaluated from inside the compiled continuation through a Python
    callback: an exception it raises there is raised to the caller as it is (not a message about the constraints),
    and the next call works again."""
    model = arm("lu")
    provider = model.joint_variable_map.providers[-1][1]
    inputs = provider.solver.inputs
    original = inputs.evaluate

    def failing(q):
        if q[1] > 0.5:
            raise _ProviderFailure(f"no X at y = {q[1]}")
        return original(q)

    monkeypatch.setattr(inputs, "evaluate", failing)
    with pytest.raises(_ProviderFailure, match="no X at y = 0.5") as error:  # where the walk first evaluates it
        model.joint_variables([0.5, 0.55])
    assert 0.5 < float(str(error.value).split("= ")[1]) <= 0.55
    f_ref = closed_form_arm()[0]
    np.testing.assert_allclose(model.joint_variables([0.43, 0.32], 0)[0][[2, 3]], np.ravel(f_ref(0.43, 0.32)),
                               rtol=1e-12, atol=1e-13)


def test_finite_differences_and_premodel_match_closed_form():
    f_ref, grad_ref, hess_ref = closed_form_arm()
    q = np.array([0.43, 0.32])
    rows = [2, 3]
    grad_exact, hess_exact = np.array(grad_ref(*q), float), np.array(hess_ref(*q), float)
    _, grad, hess = arm("finite_difference").joint_variables(q)
    np.testing.assert_allclose(grad[rows], grad_exact, rtol=0, atol=1e-7 * np.abs(grad_exact).max())
    np.testing.assert_allclose(hess[rows], hess_exact, rtol=0, atol=1e-5 * np.abs(hess_exact).max())
    model = arm("premodel", range=[(0.3, 0.6), (0.2, 0.5)], step=0.01)
    fit = model.joint_variable_map.providers[-1][1].fit_error
    f, grad, hess = model.joint_variables(q)
    # The reported fit error (midpoints of the sweep) bounds the error elsewhere, up to a small factor.
    assert np.abs(f[rows] - np.ravel(f_ref(*q))).max() <= 2 * fit.value
    assert np.abs(grad[rows] - grad_exact).max() <= 2 * fit.gradient
    assert fit.value < 1e-7 and fit.gradient < 1e-4 and fit.points == 30 * 30


# ---------------------------------------------------------------------------------------------
# The analytical projection (Eq. 102-119) against a literal Kronecker transcription and LU.
def literal_projection(J: np.ndarray, dG: np.ndarray) -> np.ndarray:
    """Eq. 110, 114-119 with explicit Kronecker products, vectors stacked as in Eq. 102."""
    m, nq = dG.shape
    g = [J[:, j : j + 1] for j in range(m)]  # ḡ_j, column vectors (Eq. 104)
    I, Iq = np.eye(m), np.eye(nq)
    dG_vec = dG.reshape(m * nq, 1)  # ∂G/∂q, block i = ∂g_i/∂q
    gammas = {m + 1: I}
    for i in range(m, 1, -1):
        gi, gam = g[i - 1], gammas[i + 1]
        sigma = I - gi @ gi.T @ gam / np.linalg.norm(gam @ gi) ** 2  # Eq. 116
        gammas[i] = gam @ sigma  # Eq. 117
    eta = np.zeros((m * nq, 1))  # η^(0)
    grads = []
    for i in range(1, m + 1):
        gi, gam = g[i - 1], gammas[i + 1]
        grad = -np.kron(gi.T @ gam, Iq) @ (eta + dG_vec) / np.linalg.norm(gam @ gi) ** 2  # Eq. 118
        eta = eta + np.kron(gi, grad)  # Eq. 119
        grads.append(grad.ravel())
    return np.array(grads)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # no wall-clock limits
@given(m=st.integers(1, 6), k=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_projection_equals_literal_kronecker_form_and_lu(m, k, seed):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(m, m)) + 2 * np.eye(m)
    assume(np.linalg.cond(J) <= 1e6)
    c = rng.normal(size=(m, k))
    x = projection_solve(projection_rows(J), J, c)
    np.testing.assert_allclose(x, literal_projection(J, c), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(J, -c), rtol=1e-9, atol=1e-9 * np.abs(x).max())
    # The recursion's γ_i are symmetric projectors: ‖γ ḡ‖² = ḡᵀ γ ḡ (docs/seed-notes/constraints.md), in floating
    # point to the accuracy of successive projections, which lose orthogonality like classical Gram-Schmidt:
    # O(ε κ(J)²) (Björck 1967), with m of them (1e-10 failed at κ = 1.0e4: 1.1e-10 off, seed 713, m = 5)
    rows = projection_rows(J)
    bound = 10 * m * np.finfo(float).eps * np.linalg.cond(J) ** 2
    np.testing.assert_allclose(np.einsum("ij,ji->i", rows, J), 1.0, rtol=bound)


@pytest.mark.parametrize("kind", ["symbolic", "closure"])
def test_condition_number_and_determinant_sign_of_a_solution_are_numpys(kind):
    """A solution's condition number is ``‖[∂g/∂f, ∂g/∂q]‖₁ ‖(∂g/∂f)⁻¹‖₁`` and its ``det_sign`` the sign of
    ``det ∂g/∂f``, both from numpy on the system's own (Python) derivatives at the solution; ``∂g/∂q`` through the
    non-affine input ``X = x + 0.3 y²`` (its ``∂p/∂q``)."""
    provider = arm("lu", kind).joint_variable_map.providers[-1][1]
    solver = provider.solver
    for q in ([0.6, 0.4], [0.5, 0.55], [0.3, -0.6]):
        solution = solver.solve(np.array(q))
        _, J, g_p = solver.system.first(solution.f, solution.p)
        g_q = g_p @ solution.P
        norm = max(np.abs(J).sum(axis=0).max(), np.abs(g_q).sum(axis=0).max())
        expected = norm * np.abs(np.linalg.inv(J)).sum(axis=0).max()
        # at the last Newton iteration's Jacobian: f moved by the last step since, ~tolerance (1e-9)
        assert solution.condition == pytest.approx(expected, rel=1e-7)
        assert solution.det_sign == np.sign(np.linalg.det(J))
        np.testing.assert_allclose(solution.P[0], [1.0, 0.6 * q[1]], rtol=1e-15)  # ∂X/∂q, the explicit input


def test_hessian_right_hand_side_by_taylor_remainder():
    """Nonlinear coupling in f and q: H from Eq. 120 makes the Taylor remainder O(δ³)."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("s", default=0.3).add_coordinate("t", default=-0.2)
    b.add_body("a", axis=(0, 0, 1)).add_body("c", axis=(0, 0, 1))
    system = SymbolicConstraints(
        ["a**3 + a*s*t - sin(t)*c + 0.5*c**2*s - 1.2", "c + a**2*s - cos(s + c*t) + exp(0.3*a*c) - 2"]
    )
    for solver in EXACT:
        b2 = copy.deepcopy(b)  # the same coordinates and bodies, a group of its own
        b2.add_constraints(["a", "c"], system, solver, guess={"a": 1.0, "c": 1.0})
        model = b2.build()
        q0 = np.array([0.3, -0.2])
        f0, grad, hess = model.joint_variables(q0)
        direction = np.array([0.6, -0.8])
        remainders = []
        for delta in (4e-3, 2e-3, 1e-3):
            dq = delta * direction
            f1 = model.joint_variables(q0 + dq, 0)[0]
            remainders.append(np.abs(f1 - f0 - grad @ dq - 0.5 * np.einsum("jkl,k,l->j", hess, dq, dq)).max())
        ratios = np.array(remainders[:-1]) / np.array(remainders[1:])
        np.testing.assert_allclose(ratios, 8.0, rtol=0.05)  # third order


def test_hessian_right_hand_side_matches_index_formula():
    """Γ_i = ∂²g_i/∂q² + Σ_j (∂²g_i/∂q∂f_j ∇f_jᵀ + ∇f_j ∂²g_i/∂f_j∂qᵀ) + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ (Eq. 120), the
    q-derivatives at fixed f through p = P q: ∂²g/∂q² = Pᵀ ∂²g/∂p² P, ∂²g/∂f∂q = ∂²g/∂f∂p P; written index by index."""
    rng = np.random.default_rng(7)
    m, n, nq = 3, 4, 2
    g_uu = rng.normal(size=(m, m, m))
    g_uu = g_uu + np.swapaxes(g_uu, 1, 2)
    g_pp = rng.normal(size=(m, n, n))
    g_pp = g_pp + np.swapaxes(g_pp, 1, 2)
    g_up, P, grad = rng.normal(size=(m, m, n)), rng.normal(size=(n, nq)), rng.normal(size=(m, nq))
    expected = np.zeros((m, nq, nq))
    for i in range(m):
        for k in range(nq):
            for l in range(nq):
                value = sum(P[a, k] * g_pp[i, a, b] * P[b, l] for a in range(n) for b in range(n))
                for j in range(m):
                    g_qf_k = sum(g_up[i, j, a] * P[a, k] for a in range(n))
                    g_qf_l = sum(g_up[i, j, a] * P[a, l] for a in range(n))
                    value += g_qf_k * grad[j, l] + grad[j, k] * g_qf_l
                    for r in range(m):
                        value += g_uu[i, j, r] * grad[j, k] * grad[r, l]
                expected[i, k, l] = value
    gamma = hessian_right_hand_side(P, grad, g_uu, g_up, g_pp, np.empty((m, nq, nq)))
    np.testing.assert_allclose(gamma, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Loop closures generated from declarations.
def test_five_bar_loop_closure_equals_eq_123():
    p = linkages.FIVE_BAR
    b = mbkron.ModelBuilder()
    b.add_coordinate("theta1", default=0.5).add_coordinate("theta2", default=1.0)
    b.add_body("link1", axis=(0, 0, 1), variable="theta1")
    b.add_body("link2", parent="link1", axis=(0, 0, 1), offset=(p["l1"], 0, 0), variable="theta2")
    b.add_body("link3", parent="link2", axis=(0, 0, 1), offset=(p["l2"], 0, 0))
    b.add_body("link4", parent="link3", axis=(0, 0, 1), offset=(p["l3"], 0, 0))
    closure = LoopClosures([LoopClosure("link4", (p["l4"], 0, 0), "ground", (p["l0"], 0, 0))])
    b.add_constraints(["link3", "link4"], closure, "projection", guess={"link3": -0.99, "link4": -2.27})
    loop = b.build()
    symbolic = linkages.five_bar("lu")
    q = linkages.five_bar_trajectory()(np.linspace(0, 4, 9))
    for a, c in zip(loop.joint_variables(q), symbolic.joint_variables(q)):
        np.testing.assert_allclose(a, c, rtol=1e-11, atol=1e-12)


def rodrigues(axis, angle):
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def spatial_chain(rng, n):
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    offsets = rng.normal(scale=0.5, size=(n, 3))
    return axes, offsets


def forward(axes, offsets, f):
    """Independent forward kinematics: world rotation and origin of the last body."""
    R, r = np.eye(3), np.zeros(3)
    for axis, offset, angle in zip(axes, offsets, f):
        r = r + R @ offset
        R = R @ rodrigues(axis, angle)
    return R, r


@pytest.mark.parametrize("orientation", ["fixed", "revolute"])
def test_spatial_loop_closure(orientation):
    """A 7R (fixed closure) or 6R (revolute closure) spatial loop with one degree of freedom."""
    rng = np.random.default_rng(11 if orientation == "fixed" else 5)
    n = 7 if orientation == "fixed" else 6
    axes, offsets = spatial_chain(rng, n)
    f_star = rng.uniform(-1, 1, size=n)
    R_tip, r_tip = forward(axes, offsets, f_star)
    tip_point = np.array([0.2, -0.1, 0.3])
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=f_star[0])
    names = [f"b{k}" for k in range(n)]
    for k, name in enumerate(names):
        b.add_body(name, parent="ground" if k == 0 else names[k - 1], axis=axes[k], offset=offsets[k],
                   variable="q" if k == 0 else None)
    if orientation == "fixed":
        closure = LoopClosure(names[-1], tip_point, "ground", R_tip @ tip_point + r_tip, plane=None,
                              orientation="fixed", rotation=R_tip.T)
    else:
        axis_a = np.array([0.0, 0.6, 0.8])
        closure = LoopClosure(names[-1], tip_point, "ground", R_tip @ tip_point + r_tip, plane=None,
                              orientation="revolute", axis_a=axis_a, axis_b=R_tip @ axis_a)
    guess = dict(zip(names[1:], f_star[1:] + 0.01))
    models = {}
    for solver in EXACT:  # the formulation (test_compiled_loops: the compiled step equals the Python solver)
        bs = copy.deepcopy(b)  # the same coordinates and bodies, a group of its own
        bs.add_constraints(names[1:], [closure], solver, guess=guess)
        models[solver] = bs.build()
    f0 = models["lu"].joint_variables([f_star[0]], 0)[0]
    np.testing.assert_allclose(f0, f_star, atol=1e-12)
    q = np.array([f_star[0] + 0.05])
    f, grad, hess = models["lu"].joint_variables(q)
    for a, c in zip(models["projection"].joint_variables(q), (f, grad, hess)):
        np.testing.assert_allclose(a, c, rtol=1e-9, atol=1e-11)
    # The solved configuration closes the loop by the independent forward kinematics.
    R, r = forward(axes, offsets, f)
    np.testing.assert_allclose(R @ tip_point + r, R_tip @ tip_point + r_tip, atol=1e-12)
    if orientation == "fixed":
        np.testing.assert_allclose(R, R_tip, atol=1e-12)
    else:
        np.testing.assert_allclose(R @ axis_a, R_tip @ axis_a, atol=1e-12)
    # Gradient and Hessian against central differences of the solved positions.
    # (steps near each formula's optimum: the third derivatives here are large)
    fp, fm = (models["lu"].joint_variables(q + s, 0)[0] for s in (1e-5, -1e-5))
    np.testing.assert_allclose(grad[:, 0], (fp - fm) / 2e-5, atol=1e-7 * np.abs(grad).max())
    fp, fm = (models["lu"].joint_variables(q + s, 0)[0] for s in (1e-4, -1e-4))
    np.testing.assert_allclose(hess[:, 0, 0], (fp - 2 * f + fm) / 1e-8, atol=1e-5 * np.abs(hess).max())


# ---------------------------------------------------------------------------------------------
# Linkages, premodel fits, continuation semantics.
def test_five_bar_solvers_agree_and_history_does_not_matter():
    q = linkages.five_bar_trajectory()(np.linspace(0, 4, 13))
    exact = linkages.five_bar("lu").joint_variables(q)
    projection = linkages.five_bar("projection")
    for a, c in zip(projection.joint_variables(q), exact):
        np.testing.assert_allclose(a, c, rtol=1e-11, atol=1e-12)
    fd = linkages.five_bar("finite_difference").joint_variables(q)
    np.testing.assert_allclose(fd[1], exact[1], atol=1e-7 * np.abs(exact[1]).max())
    np.testing.assert_allclose(fd[2], exact[2], atol=1e-5 * np.abs(exact[2]).max())
    # The continuation cache is an optimisation: results do not depend on the previous call.
    single = projection.joint_variables(q[3])
    projection.joint_variables([-2.5, 3.0])
    again = projection.joint_variables(q[3])
    for a, c in zip(single, again):
        np.testing.assert_allclose(a, c, rtol=1e-13, atol=1e-14)
    batch = projection.joint_variables(q[:12].reshape(2, 3, 2, 2))
    for a, c in zip(batch, exact):
        np.testing.assert_allclose(a.reshape(c[:12].shape), c[:12], rtol=1e-11, atol=1e-12)


def test_five_bar_other_branch_from_the_guess():
    p = linkages.FIVE_BAR
    b = mbkron.ModelBuilder()
    b.add_coordinate("theta1", default=0.5).add_coordinate("theta2", default=1.0)
    b.add_body("link1", axis=(0, 0, 1), variable="theta1")
    b.add_body("link2", parent="link1", axis=(0, 0, 1), offset=(1, 0, 0), variable="theta2")
    b.add_body("link3", parent="link2", axis=(0, 0, 1), offset=(1, 0, 0))
    b.add_body("link4", parent="link3", axis=(0, 0, 1), offset=(3, 0, 0))
    b.add_constraints(["link3", "link4"], SymbolicConstraints(linkages.EQ_123, {k: p[k] for k in ("l0", "l1", "l2", "l3", "l4")}),
                      guess={"link3": 3.0, "link4": 2.3})
    model = b.build()
    q = linkages.five_bar_trajectory()(np.linspace(0, 4, 9))
    f = model.joint_variables(q, 0)[0]
    # The mirrored branch: the joint between links 3 and 4 lies right of the line from the tip
    # of link 2 to (l0, 0), i.e. θ4 has the opposite sign to the default branch's.
    assert np.all(f[:, 3] > 0)
    assert np.all(linkages.five_bar("lu").joint_variables(q, 0)[0][:, 3] < 0)


def test_four_bar_premodel_spline_and_range():
    model = linkages.four_bar("premodel", step=0.02)
    provider = model.joint_variable_map.providers[-1][1]
    assert provider.range == ((-2.0, 2.0),)
    exact = linkages.four_bar("lu")
    q = np.linspace(-1.9, 1.9, 17)[:, None]
    f, grad, hess = model.joint_variables(q)
    fe, grade, hesse = exact.joint_variables(q)
    assert np.abs(f - fe).max() <= provider.fit_error.value
    assert np.abs(grad - grade).max() <= provider.fit_error.gradient
    assert provider.fit_error.value < 1e-4
    with pytest.raises(ConfigurationError, match=r"q = \[2\.1\] lies outside the pre-modelled range \[-2\.0, 2\.0\]"):
        model.joint_variables([2.1])


def test_andrews_fourier_premodel():
    model = andrews_squeezer("premodel", "expressions")
    provider = model.joint_variable_map.providers[-1][1]
    assert provider.fit_error.value < 1e-12 and provider.fit_error.hessian < 1e-10
    exact = andrews_squeezer("lu", "expressions")
    q = np.array([[-0.0617138900142764], [1.0], [3.0], [7.5], [-20.0]])  # any β: periodic
    # one turn of the crank β brings every absolute angle back: the crank's joint variable (β) gains 2π, the
    # relative Θ (rod on crank, absolute angle β + Θ) loses 2π, the other joint variables repeat
    turn = np.zeros(len(model.joints))
    turn[model.joints.index("crank")], turn[model.joints.index("Theta")] = 2 * np.pi, -2 * np.pi
    np.testing.assert_allclose(model.joint_variables(q + 2 * np.pi, 0)[0], model.joint_variables(q, 0)[0] + turn,
                               rtol=0, atol=1e-10)
    for a, c in zip(model.joint_variables(q), exact.joint_variables(q)):
        np.testing.assert_allclose(a, c, rtol=0, atol=1e-10 * max(1.0, np.abs(c).max()))
    f0 = dict(zip(exact.joints, exact.joint_variables(q[0], 0)[0]))
    np.testing.assert_allclose([f0[n] for n in SOLVED], [INITIAL[n] for n in SOLVED], atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Bad input: a clear error naming the configuration, never a silent wrong answer.
def scalar_model(equation: str, guess: float, default: float, solver: str = "lu", **options) -> mbkron.Model:
    b = mbkron.ModelBuilder()
    b.add_coordinate("q", default=default, unit="1")
    b.add_body("s", joint="prismatic", axis=(1, 0, 0))
    b.add_constraints(["s"], SymbolicConstraints([equation]), solver, guess={"s": guess}, **options)
    return b.build()


def test_fold_is_reported_not_jumped_over():
    """f³ − 3f = q: the upper branch ends at q = −2 (a fold); Newton would jump to f ≈ −2.1."""
    model = scalar_model("s**3 - 3*s - q", guess=2.0, default=2.0)
    f, grad, _ = model.joint_variables([0.0])
    root = np.roots([1, 0, -3, 0]).max()
    np.testing.assert_allclose(f, [root])
    np.testing.assert_allclose(grad, [[1 / (3 * root**2 - 3)]])
    with pytest.raises(ConfigurationError, match=r"from q = \[-1\.99.*condition number.*towards q = \[-3\]") as info:
        model.joint_variables([-3.0])
    assert "singular configuration" in str(info.value)


def test_passing_through_a_singular_configuration_is_reported():
    """s² = q²: the branch s = q meets s = −q at q = 0, where ∂g/∂s = 2s vanishes."""
    model = scalar_model("s**2 - q**2", guess=1.0, default=1.0)
    np.testing.assert_allclose(model.joint_variables([0.5], 0)[0], [0.5])
    with pytest.raises(ConfigurationError, match=r"q = \[-0\.5\]"):
        model.joint_variables([-0.5])
    with pytest.raises(ConfigurationError, match=r"condition number"):
        model.joint_variables([0.0])


def test_four_bar_beyond_its_reach():
    model = linkages.four_bar("lu")
    model.joint_variables([2.5])  # beyond the documented range but still on the branch
    with pytest.raises(ConfigurationError, match=r"towards q = \[3\.1\]"):
        model.joint_variables([3.1])  # the coupler's centre of mass never rises above 2.958


def test_rank_deficient_constraints():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1)).add_body("c", axis=(0, 0, 1))
    b.add_constraints(["a", "c"], SymbolicConstraints(["a + c - x", "2*a + 2*c - 2*x"]))
    with pytest.raises(ModelError, match=r"initial assembly of \(a, c\) failed at q = \[0\].*condition number"):
        b.build()


def test_wrong_number_of_equations_and_structural_problems():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1)).add_body("c", axis=(0, 0, 1)).add_body("d", axis=(0, 0, 1), variable="x")
    b.add_constraints(["a", "c"], SymbolicConstraints(["a - x"]))
    with pytest.raises(ModelError, match="1 constraint equations for 2 solved joint variables"):
        b.build()
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1)).add_body("c", axis=(0, 0, 1)).add_body("d", axis=(0, 0, 1), variable="x")
    b.add_constraints(["a", "c"], SymbolicConstraints(["a - x", "d - 2*x"]))
    with pytest.raises(ModelError) as info:
        b.build()
    text = str(info.value)
    assert "equation 2 does not involve any solved joint variable" in text
    assert "solved joint variable `c` does not appear in any equation" in text


def test_spatial_closure_of_a_planar_loop_is_redundant():
    b = mbkron.ModelBuilder()
    b.add_coordinate("theta1", default=0.5)
    for k, parent in enumerate(["ground", "l1", "l2", "l3"], start=1):
        b.add_body(f"l{k}", parent=parent, axis=(0, 0, 1), offset=(0 if k == 1 else 1.0, 0, 0),
                   variable="theta1" if k == 1 else None)
    b.add_constraints(["l2", "l3", "l4"], [LoopClosure("l4", (1, 0, 0), "ground", (2, 0, 0), plane=None, orientation="revolute")])
    with pytest.raises(ModelError, match="5 constraint equations for 3 solved joint variables"):
        b.build()


def test_builder_validation_of_constraint_groups():
    def builder(valid_tree: bool) -> mbkron.ModelBuilder:
        b = mbkron.ModelBuilder()
        b.add_coordinate("x")
        b.add_body("a", axis=(0, 0, 1), variable="x" if valid_tree else None)  # invalid: no variable, not solved
        b.add_body("c", axis=(0, 0, 1), variable=None if valid_tree else "x")  # invalid: solved but has a variable
        b.add_body("w", parent="c", joint="fixed")
        b.add_constraints(["c", "w", "nowhere"], SymbolicConstraints(["c", "c", "c"]), "magic", tol=1)
        b.add_constraints(["c"], SymbolicConstraints(["c - x"]), guess={"zz": 1.0})
        return b

    text = "\n".join(pytest.raises(ModelError, builder(valid_tree=False).build).value.problems)
    for expected in [
        "body `a`: `variable` is required",
        "body `c`: its joint variable is solved by `add_constraints`; remove `variable`",
    ]:
        assert expected in text, text
    b = builder(valid_tree=True)  # groups are checked once the tree is valid
    text = "\n".join(pytest.raises(ModelError, b.build).value.problems)
    for expected in [
        "`w` has a fixed joint",
        "`nowhere` is not a body of the model",
        "`solver` must be one of lu, projection, premodel, finite_difference, got 'magic'",
        "joint `c` is solved by two constraint groups",
        "`guess` names `zz`",
    ]:
        assert expected in text, text


def test_expression_strings_are_parsed_never_evaluated():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1))
    b.add_constraints(["a"], SymbolicConstraints(["__import__('os').system('false')"]))
    with pytest.raises(ModelError, match="equation 1"):
        b.build()
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1))
    b.add_constraints(["a"], SymbolicConstraints(["a - k*x - y"], {"k": 2.0}))
    with pytest.raises(ModelError, match="equation 1: .* unknown name `y`"):
        b.build()


def test_singular_configuration_reported_by_every_solver():
    for solver in ("projection", "finite_difference"):
        model = scalar_model("s**2 - q**2", guess=1.0, default=1.0, solver=solver)
        with pytest.raises(ConfigurationError, match="condition number"):
            model.joint_variables([0.0])


def test_continuation_does_not_alias_the_callers_array():
    """Solvers (e.g. TRBDF2) reuse their state buffers: mutating q after a call must not move where the
    workspace's continuation starts from (a regression: the stored start aliased the caller's array, so
    the next solve walked from a wrong q with the old f). The continuation lives in the caller's workspace
    (a call without one starts from the assembly configuration, so it cannot show this); the reference is
    the same state solved without a workspace, which no earlier call can influence."""
    model = andrews_squeezer("lu", "expressions")
    workspace = model.workspace()
    buffer = np.array([0.5869583107])
    model.joint_variables(buffer, workspace=workspace)
    buffer[0] = 0.2  # the caller reuses its buffer
    (continuation,) = workspace.states
    np.testing.assert_array_equal(continuation.start.q, [0.5869583107])  # still where the last solve was
    q = np.array([0.5869643662])
    np.testing.assert_allclose(model.joint_variables(q, workspace=workspace)[0], model.joint_variables(q)[0],
                               rtol=0, atol=1e-13)
