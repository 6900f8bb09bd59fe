"""Forward dynamics in one compiled call (:mod:`mbkron.algorithms.dynamics.forward`) and the Cholesky solve of the general route.

Each route is compared with ``q̈ = M⁻¹(G − N q̇ + Q + τ)`` assembled from the model's terms ``M``, ``N q̇``,
``G`` (each held to the dissertation as written, :mod:`mbkron.reference`, in tests/test_reference.py) and
applied forces ``Q`` (:meth:`mbkron.Model.applied_forces`) and solved by LAPACK — at a few states also
with M, N q̇, G of the reference itself — and ``q̈`` with loads against Kane's method
(sympy.physics.mechanics) and closed forms. Errors (a mass matrix that is not positive definite,
coinciding spring points) are the general route's messages.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from mbkron import reference
from mbkron.jit.common import AVAILABLE
from mbkron.examples.andrews import andrews_squeezer
from tests.random_trees import build_model, kanes_spec, physical_inertia, random_tree, sympy_transforms
from validation.sympy_mechanics import equations_of_motion

needs_numba = pytest.mark.skipif(not AVAILABLE, reason="numba (the `fast` extra) is not installed")


def _close(actual, expected, rtol=1e-12):
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


def _terms(model, q, qd, literal=False):
    """``M`` and ``G − N q̇ + Q`` (Eq. 198): M, N q̇, G by the model's term functions, or (``literal``) by
    :mod:`mbkron.reference` (the Kronecker forms, state by state: slow), and the model's own loads ``Q``
    (:meth:`mbkron.Model.applied_forces`)."""
    q, qd = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(qd, dtype=float))
    source = reference if literal else None
    M, N, G = ((reference.mass_matrix(model, q), reference.velocity_forces(model, q, qd),
                reference.gravity_forces(model, q)) if source else
               (model.mass_matrix(q), model.velocity_forces(q, qd), model.gravity_forces(q)))
    return M, G - N + model.applied_forces(q, qd)


def _oracle_forward(model, q, qd, tau=None, literal=False):
    """``q̈ = M⁻¹(G − N q̇ + Q + τ)`` (Eq. 198) from :func:`_terms`, solved by LAPACK."""
    M, rhs = _terms(model, q, qd, literal)
    if tau is not None:
        rhs = rhs + tau
    return np.linalg.solve(M, rhs[..., None])[..., 0]


def _chain(nonlinear: bool = False) -> mbkron.Model:
    """A spatial 4-body chain with a spring-damper, a joint torque and a generalized force; joint
    variables affine in q, or (``nonlinear``) also sympy expressions."""
    rng = np.random.default_rng(11)
    b = mbkron.ModelBuilder(gravity=(0.3, -9.81, 0.2))
    for k in range(3):
        b.add_coordinate(f"q{k}")
    parent = "ground"
    q0, q1, q2 = sympy.symbols("q0:3")
    variables = [q0, sympy.sin(q1) + 0.3 * q1, q2, q0 * q2 - q1] if nonlinear else ["q0", "q1", "q2", mbkron.Linear(
        {"q0": 0.5, "q2": -1.0}, 0.1)]
    for k in range(4):
        A = rng.normal(size=(3, 3))
        variable = variables[k]
        b.add_body(f"b{k}", parent=parent, axis=rng.normal(size=3), variable=variable, offset=rng.uniform(-0.4, 0.4, 3),
                   mass=rng.uniform(0.5, 2), com=rng.uniform(-0.2, 0.2, 3), inertia=physical_inertia(A))
        parent = f"b{k}"
    b.add_load(mbkron.loads.SpringDamper("b3", (0.1, 0.2, 0.0), "ground", (0.5, 0.5, 0.5), stiffness=40.0,
                                             damping=2.0, free_length=0.3))
    b.add_load(mbkron.loads.JointTorque("b1", 0.7))
    b.add_load(mbkron.loads.GeneralizedForce("q2", -0.4))
    return b.build()


@needs_numba
@pytest.mark.parametrize("nonlinear", [False, True], ids=["affine", "nonlinear"])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2), (600,)])  # 600 states: the multi-threaded kernel
def test_compiled_route_equals_the_reference(nonlinear, batch):
    model = _chain(nonlinear)
    rng = np.random.default_rng(3)
    q, qd, tau = rng.uniform(-1.5, 1.5, size=(3,) + batch + (3,))
    for actuation in (None, tau, tau[(0,) * len(batch)] if batch else tau):
        expected = _oracle_forward(model, q, qd, actuation)
        actual = model.forward_dynamics(q, qd, actuation)
        assert actual.shape == batch + (3,)
        _close(actual, expected)
        first = (0,) * len(batch)  # and one state against the reference itself
        _close(actual[first], _oracle_forward(model, q[first], qd[first], None if actuation is None else
                                              np.broadcast_to(actuation, q.shape)[first], literal=True), 1e-10)


def test_accelerations_against_kanes_method_with_loads():
    """``q̈`` of a random 3-D tree (revolute and prismatic joints, nonlinear joint variables) with a spring-damper,
    a joint torque, a generalized force and actuation (Eq. 198) against a derivation that shares nothing with
    mbkron but the model description: ``M``, ``N q̇``, ``G`` by Kane's method (:mod:`validation.sympy_mechanics`),
    the spring's point from the sympy transforms of :mod:`tests.random_trees` (tension ``k (L − L₀) + c L̇``
    pulling the points together, ``Q = (∂p/∂q)ᵀ F``), the joint torque as ``∇f_jᵀ τ`` from sympy's derivative of
    the joint variable; ``q̈ = M⁻¹ (G + Q + τ − N q̇)`` by LAPACK. Inverse dynamics must give ``τ`` back."""
    rng = np.random.default_rng(21)
    spec = random_tree(rng, nb=5, nq=3, fixed_fraction=0.0)
    gravity = rng.normal(size=3) * 5.0
    tip, point, anchor = len(spec.joints) - 1, np.array([0.1, -0.2, 0.15]), np.array([0.4, 0.5, -0.3])
    k, c, free_length, torque, generalized = 40.0, 2.0, 0.3, 0.7, -0.4
    loads = [mbkron.loads.SpringDamper(f"b{tip}", tuple(point), "ground", tuple(anchor), stiffness=k, damping=c,
                                       free_length=free_length),
             mbkron.loads.JointTorque("b1", torque), mbkron.loads.GeneralizedForce(spec.q[2].name, generalized)]
    model = build_model(spec, gravity=gravity, loads=loads)
    kane = equations_of_motion(kanes_spec(spec, gravity))
    position = sympy.Matrix(sympy_transforms(spec)[tip][:3, :3]) * sympy.Matrix(point) + sympy_transforms(spec)[tip][:3, 3]
    p_of = sympy.lambdify([spec.q], position, "numpy")
    dp_of = sympy.lambdify([spec.q], position.jacobian(spec.q), "numpy")
    df1_of = sympy.lambdify([spec.q], [sympy.diff(spec.variables[1], s) for s in spec.q], "numpy")

    def reference(q, qd, tau):
        arm = np.ravel(p_of(q)) - anchor
        length, dp = np.linalg.norm(arm), np.asarray(dp_of(q), dtype=float)
        tension = k * (length - free_length) + c * (arm / length) @ (dp @ qd)
        Q = dp.T @ (-tension * arm / length) + torque * np.asarray(df1_of(q), dtype=float)
        Q[2] += generalized
        rhs = kane.gravity_forces(q) + Q + tau - kane.velocity_forces(q, qd)
        return np.linalg.solve(kane.mass_matrix(q), rhs)

    q, qd, tau = rng.uniform(-1.0, 1.0, size=(3, 4, 3))
    expected = np.array([reference(*state) for state in zip(q, qd, tau)])
    _close(model.forward_dynamics(q, qd, tau), expected, 1e-10)  # a batch
    for state, qdd in zip(zip(q, qd, tau), expected):
        _close(model.forward_dynamics(*state), qdd, 1e-10)  # and state by state
    _close(model.inverse_dynamics(q, qd, expected), tau, 1e-10)


@needs_numba
@pytest.mark.parametrize("seed", range(4))
def test_random_trees_equal(seed):
    rng = np.random.default_rng(700 + seed)
    model = build_model(random_tree(rng, nb=int(rng.integers(6, 10)), nq=2))
    q, qd, tau = rng.uniform(-1.0, 1.0, size=(3, 5, model.nq))
    _close(model.forward_dynamics(q, qd, tau), _oracle_forward(model, q, qd, tau))
    _close(model.forward_dynamics(q[0], qd[0]), _oracle_forward(model, q[0], qd[0], literal=True), 1e-10)


@needs_numba
def test_constrained_model_equal_along_a_path():
    """Joint variables solved from loop closures (the providers' route of the compiled call)."""
    model = andrews_squeezer("lu", "loop_closures")
    beta = model.default_q[0] + np.linspace(0.0, 0.2, 5)[:, None]
    qd = np.full_like(beta, 30.0)
    for b, v in zip(beta, qd):
        _close(model.forward_dynamics(b, v, workspace=model.workspace()), _oracle_forward(model, b, v))


def test_loads_outside_the_compiled_route_take_the_general_route():
    b = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, com=(0.5, 0, 0), inertia=[0.1, 0.1, 0.1])
    b.add_load(mbkron.loads.PointForce("a", (1.0, 0.0, 0.0), (0.0, 2.0, 0.0)))
    model = b.build()
    # m l² ẍ... about z: I_zz(origin) = 0.1 + 1·0.5² = 0.35; torques −m g 0.5 cos x + 2·1·cos x
    x = 0.3
    expected = (-9.81 * 0.5 * np.cos(x) + 2.0 * np.cos(x)) / 0.35
    np.testing.assert_allclose(model.forward_dynamics([x], [0.0]), [expected], rtol=1e-12)


def test_not_positive_definite_named():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("y")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, com=(1, 0, 0))
    b.add_body("b", parent="a", axis=(0, 0, 1), variable="y", offset=(1, 0, 0))  # massless tip
    model = b.build()
    # the massless tip: y moves nothing (M's second row and column are zero), x does
    with pytest.raises(mbkron.ConfigurationError,
                       match=r"not positive definite at q = \[0.1, 0.2\]: smallest eigenvalue .*, along `y` \("):
        model.forward_dynamics([0.1, 0.2], [0.0, 0.0])
    with pytest.raises(mbkron.ConfigurationError, match=r"not positive definite.*, along `y` \("):
        model.forward_dynamics([[0.1, 0.2]] * 3, [[0.0, 0.0]] * 3)


def test_a_coordinate_singularity_is_named():
    """The shipped shoulder (rhythm A) at its defaults, the arm hanging: the plane of elevation moves nothing there
    (Holzbaur's humerus turns by elv_angle, then the elevation, then back by elv_angle), so M's first row and
    column vanish; the error names that coordinate alone."""
    model = mbkron.load_model(Path(__file__).resolve().parents[1] / "models" / "shoulder_rhythm.toml")
    M = model.mass_matrix(model.default_q)
    assert np.abs(M[0]).max() < 1e-15 * np.abs(M).max()  # the oracle: the first row vanishes
    with pytest.raises(mbkron.ConfigurationError, match=r"along `elv_angle` \("):
        model.forward_dynamics(model.default_q, np.zeros(3))


@needs_numba
def test_cholesky_kernel():
    from mbkron.algorithms.dynamics.forward_kernels import solve_positive_definite

    rng = np.random.default_rng(5)
    A = rng.normal(size=(4, 6, 6))
    M = A @ np.swapaxes(A, -1, -2) + 0.1 * np.eye(6)
    b = rng.normal(size=(4, 6))
    x, ok = solve_positive_definite(M, b)
    assert ok
    _close(x, np.linalg.solve(M, b[..., None])[..., 0], 1e-11)
    indefinite = M.copy()
    indefinite[2] -= 2 * np.linalg.eigvalsh(M[2]).max() * np.eye(6)
    assert not solve_positive_definite(indefinite, b)[1]
    assert not solve_positive_definite(np.full((1, 1), np.nan), np.ones(1))[1]


def _simple_tree(seed: int) -> mbkron.Model:
    """A branching tree, every joint driven by its own coordinate (``w q + c``): revolute, prismatic and
    fixed joints, a spring-damper, a joint torque and a generalized force — the articulated-body route."""
    rng = np.random.default_rng(seed)
    b = mbkron.ModelBuilder(gravity=tuple(rng.normal(size=3) * 5))
    names, k = [], 0
    for i in range(9):
        parent = "ground" if i == 0 else names[int(rng.integers(max(0, i - 3), i))]
        A = rng.normal(size=(3, 3))
        inertial = dict(mass=rng.uniform(0.5, 2), com=rng.uniform(-0.2, 0.2, 3), inertia=physical_inertia(A))
        offset = np.eye(4)
        rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        offset[:3, :3] = rotation * np.sign(np.linalg.det(rotation))  # a proper rotation
        offset[:3, 3] = rng.uniform(-0.4, 0.4, 3)
        if i == 4:
            b.add_body(f"b{i}", parent=parent, joint="fixed", offset=offset, **inertial)
        else:
            b.add_coordinate(f"q{k}")
            variable = f"q{k}" if i % 3 else mbkron.Linear({f"q{k}": float(rng.uniform(0.5, 2))}, float(rng.uniform(-1, 1)))
            b.add_body(f"b{i}", parent=parent, joint="prismatic" if i == 5 else "revolute", axis=rng.normal(size=3),
                       variable=variable, offset=offset, **inertial)
            k += 1
        names.append(f"b{i}")
    b.add_load(mbkron.loads.SpringDamper("b8", (0.1, 0.0, 0.2), "b2", (0.3, 0.1, 0.0), stiffness=25.0, damping=1.5,
                                         free_length=0.2))
    b.add_load(mbkron.loads.JointTorque("b3", -0.6))
    b.add_load(mbkron.loads.GeneralizedForce("q1", 0.9))
    return b.build()


@needs_numba
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [(), (4,), (2, 3), (600,)])  # 600 states: over the threads
def test_articulated_body_route_equals_the_reference(seed, batch):
    model = _simple_tree(seed)
    rng = np.random.default_rng(seed)
    q, qd, tau = rng.uniform(-1.2, 1.2, size=(3,) + batch + (model.nq,))
    for actuation in (None, tau):
        _close(model.forward_dynamics(q, qd, actuation), _oracle_forward(model, q, qd, actuation), 1e-11)
    if batch == (4,):  # one state against the reference itself (about a second per state of this tree)
        _close(model.forward_dynamics(q[0], qd[0], tau[0]), _oracle_forward(model, q[0], qd[0], tau[0], literal=True),
               1e-10)
    # a massless tip is declined by the O(n) route too: the general route names it
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("y")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, com=(1, 0, 0))
    b.add_body("tip", parent="a", axis=(0, 0, 1), variable="y", offset=(1, 0, 0))
    massless = b.build()
    with pytest.raises(mbkron.ConfigurationError, match="not positive definite"):
        massless.forward_dynamics(np.zeros(batch + (2,)), np.zeros(batch + (2,)))


@needs_numba
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [(), (4,), (2, 3), (600,)])  # 600 states: over the threads
def test_recursive_newton_euler_route_equals_the_equations_of_motion(seed, batch):
    """Inverse dynamics of a simple tree (RNEA) against ``M q̈ + N q̇ − G − Q`` with M, N q̇, G of the
    reference, with the same tree's springs, joint torque and generalized force; and it inverts the
    forward dynamics."""
    model = _simple_tree(seed)
    rng = np.random.default_rng(seed + 10)
    q, qd, qdd = rng.uniform(-1.2, 1.2, size=(3,) + batch + (model.nq,))
    tau = model.inverse_dynamics(q, qd, qdd)
    M, rhs = _terms(model, q, qd)
    _close(tau, np.einsum("...ij,...j->...i", M, qdd) - rhs, 1e-11)
    _close(model.forward_dynamics(q, qd, tau), qdd, 1e-10)
    # loads given explicitly take the general route, which agrees
    _close(model.inverse_dynamics(q, qd, qdd, loads=model.loads), tau, 1e-11)


@needs_numba
def test_a_constraint_group_and_the_dynamics_in_one_call():
    """Andrews' squeezer: the group's compiled step and the dynamics in one call (with a workspace or from
    the assembly), and a jump the compiled step declines (the Python solver subdivides it): all equal to
    the reference."""
    model = andrews_squeezer("lu", "loop_closures")
    q = model.default_q + 0.05
    _close(model.forward_dynamics(q, [3.0]), _oracle_forward(model, q, [3.0], literal=True), 1e-10)
    _close(model.forward_dynamics(q, [3.0], [0.01]), _oracle_forward(model, q, [3.0], [0.01]))
    compiled = model.workspace()
    for beta in (model.default_q, model.default_q + 2.5, model.default_q + 2.51):
        _close(model.forward_dynamics(beta, [1.0], workspace=compiled), _oracle_forward(model, beta, [1.0]))
