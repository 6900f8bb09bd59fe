"""Exact first derivatives of the dynamics (issue 30, :mod:`mbkron.model.derivatives`).

Oracles: eighth-order central differences of the values (``inverse_dynamics``, ``forward_dynamics``: the engine's
other routes only through their values), the mass matrix by virtual work (Eq. 145, another algorithm than the
tangents' ``∂τ/∂q̈``), and Pinocchio's ``computeRNEADerivatives``/``computeABADerivatives`` stored by
``validation/pinocchio_derivatives.py`` (Pinocchio is not a test dependency).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy

import mbkron
from benchmarks.bench_forward_dynamics import random_chain
from tests.random_trees import build_model, random_tree

DATA = Path(__file__).parent / "data" / "pinocchio_derivatives.npz"
STENCIL = ((1, 4 / 5), (2, -1 / 5), (3, 4 / 105), (4, -1 / 280))
"""Eighth-order central differences: ``f' ≈ Σ c_j (f(x + j h) − f(x − j h)) / h``."""


def differences(function, x: np.ndarray, h: float) -> np.ndarray:
    """``∂function/∂x`` (outputs by rows) at ``x`` (n,) by :data:`STENCIL`."""
    columns = []
    for e in np.eye(x.size):
        columns.append(sum(c * (function(x + j * h * e) - function(x - j * h * e)) for j, c in STENCIL) / h)
    return np.stack(columns, axis=-1)


def simple_tree(seed: int, bodies: int = 9) -> mbkron.Model:
    """A random branching 3-D tree of revolute, prismatic and fixed joints, each moving joint ``w q_k + c`` of its
    own coordinate (what the derivatives cover), gravity along a random direction."""
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=bodies, nq=1, fixed_fraction=0.2)
    moving = [i for i, joint in enumerate(spec.joints) if joint != "fixed"]
    spec.q = list(sympy.symbols(f"q1:{len(moving) + 1}"))
    for k, i in enumerate(rng.permutation(moving)):
        weight, constant = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0), rng.uniform(-0.5, 0.5)
        spec.variables[i] = sympy.Float(round(weight, 3)) * spec.q[k] + sympy.Float(round(constant, 3))
    return build_model(spec, gravity=tuple(rng.normal(size=3)))


def constant_loads(spec, rng) -> tuple:
    """A constant torque on every moving joint and a constant generalized force on the first coordinate: loads the
    derivatives take as constants, whose generalized forces ``∇fᵀ τ_joint`` still depend on ``q`` through ``∇f``."""
    torques = [mbkron.loads.JointTorque(f"b{i}", float(rng.uniform(-2.0, 2.0)))
               for i, joint in enumerate(spec.joints) if joint != "fixed"]
    return (*torques, mbkron.loads.GeneralizedForce(spec.q[0].name, 1.5))


def coupled_tree(seed: int, bodies: int = 9, coordinates: int = 4) -> mbkron.Model:
    """A random branching 3-D tree whose joint variables are affine in several coordinates, ``a q_k + b q_l + c``
    (couplers, affine rhythms: the derivatives in the joint variables, then the chain rule), with
    :func:`constant_loads`."""
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=bodies, nq=coordinates, fixed_fraction=0.2)
    for i, joint in enumerate(spec.joints):
        if joint != "fixed":
            k, m = rng.choice(coordinates, size=2, replace=False)
            a, b, c = (sympy.Float(round(x, 3)) for x in rng.uniform(-1.0, 1.0, 3))
            spec.variables[i] = a * spec.q[k] + b * spec.q[m] + c
    return build_model(spec, gravity=tuple(rng.normal(size=3)), loads=constant_loads(spec, rng))


MODELS = {
    **{f"tree{seed}": lambda seed=seed: simple_tree(seed) for seed in (0, 1, 2)},
    **{f"coupled{seed}": lambda seed=seed: coupled_tree(seed) for seed in (0, 1)},
    "shoulder_rhythm": lambda: mbkron.load_model(Path(__file__).parents[1] / "models" / "shoulder_rhythm.toml"),
    "leg6dof9musc": lambda: mbkron.load_model(Path(__file__).parents[1] / "models" / "leg6dof9musc.toml"),
}
"""Simple trees (the derivatives in the coordinates), trees with affine joint maps and the shipped affine shoulder
rhythm (in the joint variables, then the chain rule)."""


@pytest.fixture(params=sorted(MODELS))
def tree(request):
    return MODELS[request.param]()


def _state(model, seed=7):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (3, model.nq))


def test_the_test_trees_have_every_joint_kind():
    kinds = {joint for seed in (0, 1, 2) for joint in random_tree(np.random.default_rng(seed), nb=9, nq=1,
                                                                fixed_fraction=0.2).joints}
    assert kinds == {"revolute", "prismatic", "fixed"}


def check_inverse_derivatives(model, q, qd, qdd, h: float) -> None:
    """``τ`` against ``inverse_dynamics``, ``∂τ/∂q`` and ``∂τ/∂q̇`` against :func:`differences` of step ``h`` to 1e-10
    of the largest entry, and ``∂τ/∂q̈`` against the mass matrix by virtual work (Eq. 145) to 1e-13."""
    d = model.inverse_dynamics_derivatives(q, qd, qdd)
    np.testing.assert_allclose(d.tau, model.inverse_dynamics(q, qd, qdd), rtol=1e-13, atol=1e-13)
    by_q = differences(lambda x: model.inverse_dynamics(x, qd, qdd), q, h)
    by_qd = differences(lambda x: model.inverse_dynamics(q, x, qdd), qd, h)
    for exact, numeric in ((d.dtau_dq, by_q), (d.dtau_dqd, by_qd)):
        assert np.abs(exact - numeric).max() <= 1e-10 * np.abs(numeric).max()
    M = model.mass_matrix(q)
    assert np.abs(d.mass_matrix - M).max() <= 1e-13 * np.abs(M).max()


def test_inverse_dynamics_derivatives_against_differences(tree):
    check_inverse_derivatives(tree, *_state(tree), 1e-2)


def test_forward_dynamics_derivatives_against_differences(tree):
    q, qd, tau = _state(tree, 8)
    d = tree.forward_dynamics_derivatives(q, qd, tau)
    np.testing.assert_array_equal(d.qdd, tree.forward_dynamics(q, qd, tau))
    by_q = differences(lambda x: tree.forward_dynamics(x, qd, tau), q, 1e-2)
    by_qd = differences(lambda x: tree.forward_dynamics(q, x, tau), qd, 1e-2)
    by_tau = differences(lambda x: tree.forward_dynamics(q, qd, x), tau, 1.0)  # q̈ is affine in τ
    for exact, numeric in ((d.dqdd_dq, by_q), (d.dqdd_dqd, by_qd), (d.dqdd_dtau, by_tau)):
        assert np.abs(exact - numeric).max() <= 1e-10 * np.abs(numeric).max()


def test_a_batch_is_its_states(tree):
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 2, 3, tree.nq))
    batch = tree.inverse_dynamics_derivatives(q, qd, qdd[0, 0])  # qdd broadcast to the batch
    forward = tree.forward_dynamics_derivatives(q, qd)
    for index in np.ndindex(2, 3):
        one = tree.inverse_dynamics_derivatives(q[index], qd[index], qdd[0, 0])
        for a, b in zip(batch, one):
            np.testing.assert_array_equal(a[index], b)
        one = tree.forward_dynamics_derivatives(q[index], qd[index])
        for a, b in zip(forward, one):
            np.testing.assert_allclose(a[index], b, rtol=1e-13, atol=1e-13)
    assert batch.dtau_dq.shape == (2, 3, tree.nq, tree.nq)


@pytest.mark.parametrize("size", [3, 7, 20])
def test_pinocchio_derivatives(size):
    """Pinocchio's ``computeRNEADerivatives`` and ``computeABADerivatives`` on random chains, stored by
    ``python -m validation.pinocchio_derivatives --save tests/data/pinocchio_derivatives.npz``."""
    stored = np.load(DATA)
    values = {name.split("/")[1]: stored[name] for name in stored.files if name.startswith(f"{size}/")}
    model, _ = random_chain(size)
    inverse = model.inverse_dynamics_derivatives(values["q"], values["qd"], values["qdd"])
    forward = model.forward_dynamics_derivatives(values["q"], values["qd"], values["tau"])
    for ours, theirs in ((inverse.dtau_dq, "dtau_dq"), (inverse.dtau_dqd, "dtau_dv"), (inverse.mass_matrix, "M"),
                         (forward.dqdd_dq, "ddq_dq"), (forward.dqdd_dqd, "ddq_dv"), (forward.dqdd_dtau, "Minv")):
        reference = values[theirs]
        assert np.abs(ours - reference).max() <= 1e-10 * np.abs(reference).max(), theirs


@pytest.mark.parametrize("name, why", [
    ("andrews_squeezer", "spring-dampers"),
    ("planar_chain", r"depend on the state or time \(LineForce, PointForce\)"),
])
def test_models_not_covered_yet_are_refused_by_name(name, why):
    model = mbkron.load_model(Path(__file__).parents[1] / "models" / f"{name}.toml")
    zero = np.zeros(model.nq)
    for call in (lambda: model.inverse_dynamics_derivatives(model.default_q, zero, zero),
                 lambda: model.forward_dynamics_derivatives(model.default_q, zero)):
        with pytest.raises(NotImplementedError, match=f"`{model.name}`.*{why}"):
            call()


def test_state_dependent_loads_are_refused():
    rng = np.random.default_rng(4)
    spec = random_tree(rng, nb=3, nq=1, fixed_fraction=0.0)
    spec.q = list(sympy.symbols("q1:4"))
    spec.variables = list(spec.q)
    model = build_model(spec, loads=(mbkron.loads.SpringDamper("ground", (0.1, 0.2, 0.0), "b2", (0.0, 0.1, 0.0),
                                                              50.0, 1.0, 0.2),))
    zero = np.zeros(model.nq)
    with pytest.raises(NotImplementedError, match="spring-dampers"):
        model.inverse_dynamics_derivatives(zero, zero, zero)


def test_arguments_are_checked():
    model, _ = random_chain(3)
    with pytest.raises(ValueError, match="`qdd`"):
        model.inverse_dynamics_derivatives(np.zeros(3), np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="`tau`"):
        model.forward_dynamics_derivatives(np.zeros(3), np.zeros(3), [0.0, np.nan, 0.0])


def functions_chain() -> mbkron.Model:
    """A branching chain whose joints are empirical functions of three coordinates, one of each kind the kernels
    have (natural cubic spline, Fourier series, quintic and cubic GCVSPL splines, nested affine maps, a piecewise
    linear map), revolute and prismatic: the third derivatives of every kind enter ``∂τ/∂q``
    (:func:`mbkron.numerics.tabulated.convective_gradients`); a constant torque on every joint and a generalized force
    (their ``∇fᵀ τ`` depends on ``q``). Knots every 0.5 from −2 to 2."""
    from mbkron.multibody.jointvars import CoordinateFunction
    from mbkron.numerics.functions import AffineMapped, CubicSpline, FourierSeries, PiecewiseLinear
    from mbkron.numerics.gcvspl import GCVSpline

    x = np.linspace(-2.0, 2.0, 9)
    functions = [
        (CubicSpline(x, np.sin(1.3 * x) + 0.2 * x), "a", "revolute"),
        (FourierSeries(3.0, 0.1, [0.4, -0.2], [0.3, 0.05]), "b", "revolute"),
        (GCVSpline(x, 0.05 * np.cos(x) + 0.02 * x * x, half_order=3), "a", "prismatic"),
        (AffineMapped(AffineMapped(GCVSpline(x, np.tanh(x), half_order=2), (0.8, 0.1), (1.5, -0.2)), (1.1, -0.05),
                      (0.7, 0.3)), "c", "revolute"),
        (PiecewiseLinear(x, 0.3 * x + 0.1 * np.abs(x)), "b", "revolute"),
        (AffineMapped(CubicSpline(x, 0.04 * x ** 3), (0.9, 0.0), (1.0, 0.01)), "c", "prismatic"),
    ]
    rng = np.random.default_rng(11)
    b = mbkron.ModelBuilder(gravity=(0.3, -9.7, 0.5))
    for name in "abc":
        b.add_coordinate(name)
    parents = ["ground", "b0", "b1", "b1", "b3", "b4"]
    for i, (function, coordinate, joint) in enumerate(functions):
        offset = np.eye(4)
        offset[:3, 3] = rng.uniform(-0.3, 0.3, 3)
        axis = rng.normal(size=3)
        A = rng.normal(size=(3, 3))
        b.add_body(f"b{i}", parent=parents[i], joint=joint, axis=axis / np.linalg.norm(axis), offset=offset,
                   variable=CoordinateFunction(function, coordinate), mass=float(rng.uniform(0.5, 2.0)),
                   com=rng.uniform(-0.2, 0.2, 3), inertia=np.trace(A @ A.T) * np.eye(3) * 0.05 - A @ A.T * 0.05
                   + 0.02 * np.eye(3))
        b.add_load(mbkron.loads.JointTorque(f"b{i}", float(rng.uniform(-2.0, 2.0))))
    b.add_load(mbkron.loads.GeneralizedForce("b", -0.8))
    return b.build()


def test_joint_functions_of_every_kind():
    model = functions_chain()
    q = np.array([0.23, -0.61, 0.85])  # (mapped) 0.1 or more from every knot: the stencil stays in one piece
    qd, qdd = np.array([0.7, -1.3, 0.4]), np.array([-0.5, 0.9, 1.6])
    check_inverse_derivatives(model, q, qd, qdd, 1e-2)
    forward = model.forward_dynamics_derivatives(q, qd, qdd)
    numeric = differences(lambda x: model.forward_dynamics(x, qd, qdd), q, 2.5e-3)  # q̈'s 9th derivatives are large:
    assert np.abs(forward.dqdd_dq - numeric).max() <= 1e-10 * np.abs(numeric).max()  # at 1e-2 the stencil is 1e-8 off


@pytest.mark.parametrize("name", ["gait2392_subject01", "Rajagopal2016", "leg39", "gcv", "splines"])
def test_opensim_models_with_couplers_and_spline_joints(name, tmp_path):
    """OpenSim models whose joint variables are couplers and spline or GCV-spline functions of a coordinate (the
    knees' translations): ``∂τ/∂q``, ``∂τ/∂q̇`` against eighth-order differences of the inverse dynamics at a
    state near the default pose. The stencil (±0.002) must not cross a knot, where the splines' third derivatives
    jump: Rajagopal2016's left knee lies 0.004 from one here (with ±0.01, 0.67 off of 98.7)."""
    from validation.purity import load

    model = load(Path(__file__).parent / "data" / "osim" / f"{name}.osim.gz", str(tmp_path))
    rng = np.random.default_rng(30)
    q = model.default_q + 0.1 * rng.uniform(-1.0, 1.0, model.nq)
    qd, qdd = rng.uniform(-1.0, 1.0, (2, model.nq))
    check_inverse_derivatives(model, q, qd, qdd, 5e-4)


def test_chunks_of_a_large_batch_are_its_states(monkeypatch):
    """The chain rule's batch is split so that the Hessians stay within ``_CHUNK_ELEMENTS`` doubles (here 2 states
    per chunk): the chunks together give what the whole batch gives in one piece, bit for bit."""
    import mbkron.algorithms.dynamics.forward as forward

    model = coupled_tree(0)
    rng = np.random.default_rng(9)
    q, qd, qdd = rng.uniform(-1.0, 1.0, (3, 5, model.nq))
    whole = model.inverse_dynamics_derivatives(q, qd, qdd)
    monkeypatch.setattr(forward, "_CHUNK_ELEMENTS", 2 * model.nj * model.nq * model.nq)
    chunked = model.inverse_dynamics_derivatives(q, qd, qdd)
    for a, b in zip(whole, chunked):
        np.testing.assert_array_equal(a, b)


def limited_tree(seed: int) -> mbkron.Model:
    """:func:`simple_tree` with a coordinate limit force on each of two coordinates (one undamped) and constant
    loads: the state-dependent loads the derivatives differentiate beside the compiled plan."""
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=6, nq=1, fixed_fraction=0.0)
    spec.q = list(sympy.symbols(f"q1:{len(spec.joints) + 1}"))
    spec.variables = list(spec.q)
    limits = (mbkron.loads.CoordinateLimitForce("q1", 40.0, 0.3, 25.0, -0.4, 0.1, 1.5),
              mbkron.loads.CoordinateLimitForce("q3", 10.0, 0.5, 60.0, -0.2, 0.05, 0.0))
    return build_model(spec, gravity=tuple(rng.normal(size=3)), loads=(*limits, *constant_loads(spec, rng)))


@pytest.mark.parametrize("name", ["limited_tree", "gait10dof18musc_spring"])
def test_coordinate_limit_forces(name, tmp_path):
    """Coordinate limit forces (state-dependent, differentiated beside the plan of the rest): ``∂τ/∂q``, ``∂τ/∂q̇``,
    ``∂q̈/∂q``, ``∂q̈/∂q̇`` against eighth-order differences with the limited coordinates beyond each limit, in each
    transition band (the smooth step's quintic) and between the limits, the stencils (±0.002) inside one region."""
    from validation.purity import load

    if name == "limited_tree":
        model = limited_tree(5)
    else:
        model = load(Path(__file__).parent / "data" / "osim" / f"{name}.osim.gz", str(tmp_path))
    assert model.derivative_loads
    rng = np.random.default_rng(31)
    for region in range(5):  # beyond the lower limit's band, in it, between the limits, in the upper band, beyond
        q = model.default_q + 0.1 * rng.uniform(-1.0, 1.0, model.nq)
        qd, qdd = rng.uniform(-1.0, 1.0, (2, model.nq))
        for limit in model.derivative_loads:
            low, up, width = limit.lower_limit, limit.upper_limit, limit.transition
            q[model.coordinates.index(limit.coordinate)] = (low - 1.6 * width, low - 0.63 * width, 0.5 * (low + up),
                                                          up + 0.37 * width, up + 1.7 * width)[region]
        check_inverse_derivatives(model, q, qd, qdd, 5e-4)
        d = model.forward_dynamics_derivatives(q, qd, qdd)
        np.testing.assert_array_equal(d.qdd, model.forward_dynamics(q, qd, qdd))
        for exact, x in ((d.dqdd_dq, 0), (d.dqdd_dqd, 1)):  # h = 2e-3: at 5e-4 the round-off of q̈ over h is 5e-10
            numeric = differences(lambda y: model.forward_dynamics(*((y, qd) if x == 0 else (q, y)), qdd),
                                  (q, qd)[x], 2e-3)
            assert np.abs(exact - numeric).max() <= 1e-10 * np.abs(numeric).max()


@pytest.mark.parametrize("name", ["four_bar", "five_bar", "four_bar.osim", "line_chain.osim", "point_chain.osim",
                                  "weld_chain.osim"])
def test_constraint_groups(name, tmp_path):
    """Joint variables solved by constraint groups — expressions (the four-bar of Eq. 121, the five-bar of Eq. 123,
    by LU and by the projection of Eq. 105–119) and loop closures (OpenSim's point, weld and coordinate-coupler
    loops, planar and spatial): the third derivatives of the joint variables by one more implicit differentiation,
    ``∂τ/∂q``, ``∂τ/∂q̇``, ``∂q̈/∂q``, ``∂q̈/∂q̇`` against eighth-order differences (each value solving the group
    again), a batch against its states, and a workspace's continuation against none."""
    from validation.purity import load

    if name.endswith(".osim"):
        model = load(Path(__file__).parent / "data" / "osim" / f"{name}.gz", str(tmp_path))
    else:
        model = mbkron.load_model(Path(__file__).parents[1] / "models" / f"{name}.toml")
    assert model.constraint_groups
    rng = np.random.default_rng(32)
    q = model.default_q + 0.05 * rng.uniform(-1.0, 1.0, model.nq)
    qd, qdd = rng.uniform(2.0, 3.0, (2, model.nq))  # speeds that dominate ∂τ/∂q̇ over the differences' round-off
    check_inverse_derivatives(model, q, qd, qdd, 2e-3)
    d = model.forward_dynamics_derivatives(q, qd, qdd)
    np.testing.assert_allclose(d.qdd, model.forward_dynamics(q, qd, qdd), rtol=1e-13, atol=1e-13)
    for exact, x in ((d.dqdd_dq, 0), (d.dqdd_dqd, 1)):
        numeric = differences(lambda y: model.forward_dynamics(*((y, qd) if x == 0 else (q, y)), qdd), (q, qd)[x],
                              2e-3)
        assert np.abs(exact - numeric).max() <= 1e-10 * np.abs(numeric).max()
    states = q + 0.02 * rng.uniform(-1.0, 1.0, (3, model.nq))
    batch = model.inverse_dynamics_derivatives(states, qd, qdd)
    workspace = model.workspace()
    for k in range(3):
        one = model.inverse_dynamics_derivatives(states[k], qd, qdd)
        continued = model.inverse_dynamics_derivatives(states[k], qd, qdd, workspace=workspace)
        for a, b, c in zip(batch, one, continued):
            np.testing.assert_allclose(a[k], b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
            np.testing.assert_allclose(c, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


def test_implicit_solvers_get_the_exact_state_jacobian():
    """A run of a model the derivatives cover, without actuation or extra loads, hands an implicit solver the exact
    ``[[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]`` (issue 30, item 3), bit for bit the forward dynamics' derivatives, instead of central
    differences (which differ from them by ~1e-8); the run's result agrees with a tight reference."""
    from scipy.integrate import Radau

    model = coupled_tree(1)
    seen = []

    class Recording(Radau):
        def __init__(self, fun, t0, y0, t_bound, jac=None, **options):
            seen.append((y0.copy(), jac(t0, y0)))
            super().__init__(fun, t0, y0, t_bound, jac=jac, **options)

    q0, qd0 = _state(model, 4)[:2]
    run = mbkron.simulate(model, (0.0, 0.2), q0, qd0, method=Recording, rtol=1e-8, atol=1e-10)
    (y0, J), nq = seen[0], model.nq
    exact = model.forward_dynamics_derivatives(y0[:nq], y0[nq:])
    np.testing.assert_array_equal(J[nq:, :nq], exact.dqdd_dq)
    np.testing.assert_array_equal(J[nq:, nq:], exact.dqdd_dqd)
    np.testing.assert_array_equal(J[:nq], np.hstack([np.zeros((nq, nq)), np.eye(nq)]))
    reference = mbkron.simulate(model, (0.0, 0.2), q0, qd0, method="DOP853", rtol=1e-12, atol=1e-12)
    assert np.abs(run.q[-1] - reference.q[-1]).max() <= 1e-6
