"""#27.7, #27.8, #27.18: the public methods' arguments, their non-finite results and ``repr(model)``.

Each argument error names the argument in backticks, what was expected and what came; results that
are not finite raise a ConfigurationError naming the quantity and q, and no numpy RuntimeWarning
reaches the caller (every test here turns warnings into errors).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron import ConfigurationError, load_model
from mbkron.core.arguments import all_finite, finite_result, order_argument, state_array

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
OSIM = ROOT / "tests" / "data" / "osim"

pytestmark = pytest.mark.filterwarnings("error")  # no RuntimeWarning (or ComplexWarning) may escape


def _osim(name: str, tmp_path: Path) -> mbkron.Model:
    path = tmp_path / f"{name}.osim"
    path.write_bytes(gzip.decompress((OSIM / f"{name}.osim.gz").read_bytes()))
    return load_model(path)


@pytest.fixture(scope="module")
def arm():
    return load_model(MODELS / "two_link_arm.toml")


@pytest.fixture(scope="module")
def four_bar():
    return load_model(MODELS / "four_bar.toml")


# ---------------------------------------------------------------------------------------- 27.7
def test_empty_batch_names_q(arm, four_bar):
    with pytest.raises(ValueError, match=r"`q` must hold at least one state of 2 values, got an empty batch of shape "
                                         r"\(0, 2\)"):
        arm.mass_matrix(np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"`q` must hold at least one state of 1 values, got an empty batch"):
        four_bar.mass_matrix(np.zeros((0, 1)))


def test_ensemble_of_no_trajectories_names_q0(arm):
    with pytest.raises(ValueError, match=r"`q0` must hold at least one state .* shape \(0, 2\)"):
        mbkron.simulate_ensemble(arm, (0.0, 0.1), np.zeros((0, 2)))


def test_huge_speed_is_a_configuration_error_naming_qd(arm, four_bar):
    """``qd = 1e300`` returned NaN accelerations silently (the squared speeds overflow)."""
    for model, q, qd in ((arm, [0.1, 0.2], [1e300, 0.0]), (four_bar, [0.1], [1e300])):
        with pytest.raises(ConfigurationError, match=r"^non-finite .* at q = \[.*\], qd = \[1e\+300"):
            model.forward_dynamics(q, qd)


@pytest.mark.parametrize("tau", [[1.0, 2.0, 3.0], [1.0], [[1.0, 2.0, 3.0]]])
def test_tau_of_the_wrong_length_names_tau(arm, tau):
    with pytest.raises(ValueError, match=r"`tau` must have shape \(\.\.\., 2\) \(one generalized force per coordinate\), "
                                         rf"got shape \({len(np.shape(tau)) > 1 and '1, ' or ''}{np.shape(tau)[-1]},?\)"):
        arm.forward_dynamics([0.1, 0.2], [0.0, 0.0], tau=tau)


def test_tau_of_the_wrong_length_on_a_constrained_model(four_bar):
    """A (2,) tau for the one-coordinate four-bar was broadcast and accepted."""
    with pytest.raises(ValueError, match=r"`tau` must have shape \(\.\.\., 1\)"):
        four_bar.forward_dynamics([0.1], [0.0], tau=[1.0, 2.0])


def test_complex_coordinates_are_refused_not_truncated(arm):
    q = np.array([0.1 + 1e-20j, 0.2])
    with pytest.raises(TypeError, match=r"`q` must be real .* complex values \[\(0\.1\+1e-20j\), \(0\.2\+0j\)\]"):
        arm.mass_matrix(q)
    with pytest.raises(TypeError, match=r"`qd` must be real"):
        arm.velocity_forces([0.1, 0.2], q)
    with pytest.raises(TypeError, match=r"`q0` must be real"):
        mbkron.simulate(arm, (0.0, 0.01), q)
    with pytest.raises(TypeError, match=r"`q0` must be real"):
        mbkron.simulate_ensemble(arm, (0.0, 0.01), q[None])


@pytest.mark.parametrize("order", [-1, 3, 1.5, "2", True, None])
def test_order_outside_0_to_2_is_refused(arm, order):
    with pytest.raises(ValueError, match=r"`order` must be an integer in 0\.\.2 .*, got " + repr(order).replace(".", r"\.")):
        arm.joint_variables([0.1, 0.2], order=order)
    with pytest.raises(ValueError, match=r"`order` must be an integer in 0\.\.2"):
        arm.kinematics([0.1, 0.2], order=order)


def test_order_accepts_numpy_integers(arm):
    f, grad, hess = arm.joint_variables([0.1, 0.2], order=np.int64(2))
    np.testing.assert_array_equal(grad, np.eye(2))  # f = (alpha1, alpha2): the identity, an independent fact
    assert order_argument(np.int32(0)) == 0


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_non_finite_accelerations_are_refused(arm, four_bar, bad):
    """``inverse_dynamics`` with ``qdd = inf`` returned inf."""
    with pytest.raises(ConfigurationError, match=rf"`qdd` must be finite .*got {bad!r} at index \(0,\)"):
        arm.inverse_dynamics([0.1, 0.2], [0.0, 0.0], [bad, 0.0])
    with pytest.raises(ConfigurationError, match=r"`qdd` must be finite"):
        four_bar.inverse_dynamics([0.1], [0.0], [bad])


@pytest.mark.parametrize("method, arguments", [
    ("mass_matrix", ("q",)), ("gravity_forces", ("q",)), ("velocity_forces", ("q", "qd")),
    ("forward_dynamics", ("q", "qd")), ("inverse_dynamics", ("q", "qd", "qdd")), ("joint_reactions", ("q", "qd", "qdd")),
    ("equations_of_motion", ("q", "qd")), ("applied_forces", ("q", "qd")), ("kinematics", ("q",)),
])
def test_every_state_argument_is_checked_by_name(arm, method, arguments):
    """One checker for every method: each argument in turn gets a NaN, a wrong length and a non-number."""
    good = {"q": [0.1, 0.2], "qd": [0.3, -0.1], "qdd": [0.0, 1.0]}
    for name in arguments:
        for value, error, message in (
            ([0.1, np.nan], ConfigurationError, rf"`{name}` must be finite \(one value per coordinate\), got nan"),
            ([0.1, 0.2, 0.3], ValueError, rf"`{name}` must have shape \(\.\.\., 2\) .*got shape \(3,\)"),
            (["a", "b"], TypeError, rf"`{name}` must be numbers of shape \(\.\.\., 2\)"),
            ([[0.1], [0.2, 0.3]], ValueError, rf"`{name}` must be numbers of shape"),
        ):
            with pytest.raises(error, match=message):
                getattr(arm, method)(**{key: value if key == name else good[key] for key in arguments})


def test_point_argument_is_checked(arm):
    with pytest.raises(ValueError, match=r"`point` must have shape \(\.\.\., 3\) \(body coordinates\), got shape \(2,\)"):
        arm.point_position("link1", [1.0, 0.0], [0.1, 0.2])
    with pytest.raises(ConfigurationError, match=r"`point` must be finite"):
        arm.point_position("link1", [1.0, np.inf, 0.0], [0.1, 0.2])


def test_valid_arguments_are_returned_unconverted_and_lists_are_converted():
    q = np.array([0.1, 0.2])
    assert state_array(q, "q", 2) is q  # the common case costs no copy
    converted = state_array([1, 2], "q", 2)
    assert converted.dtype == np.float64 and converted.tolist() == [1.0, 2.0]
    assert state_array(np.array([1e300, -1e300]), "q", 2).tolist() == [1e300, -1e300]  # huge but finite: accepted


def test_a_valid_call_is_unchanged(arm):
    """The checks change no result: M of the arm against its closed form (Duarte's two-link arm)."""
    q = np.array([0.3, 0.7])
    m1, m2, L1, d1, d2 = 1.96, 1.54, 0.188 * 1.7, 0.436 * 0.188 * 1.7, 0.682 * 0.253 * 1.7
    I1, I2 = m1 * (0.322 * L1) ** 2, m2 * (0.468 * 0.253 * 1.7) ** 2
    c2 = np.cos(q[1])
    M = np.array([[I1 + I2 + m1 * d1**2 + m2 * (L1**2 + d2**2 + 2 * L1 * d2 * c2), I2 + m2 * (d2**2 + L1 * d2 * c2)],
                  [I2 + m2 * (d2**2 + L1 * d2 * c2), I2 + m2 * d2**2]])
    np.testing.assert_allclose(arm.mass_matrix(q), M, rtol=1e-12)


# ---------------------------------------------------------------------------------------- 27.8
def _gravity_1e308(tmp_path) -> Path:
    text = (MODELS / "two_link_arm.toml").read_text()
    path = tmp_path / "gravity.toml"
    path.write_text(text.replace("g = 9.81 ", "g = 1e308 "))
    return path


def _prismatic_1e300(tmp_path) -> Path:
    path = tmp_path / "prismatic.toml"
    path.write_text('[model]\nname = "slider"\n[coordinates.a]\n[bodies.slider]\nparent = "ground"\njoint = "prismatic"\n'
                    'axis = [1, 0, 0]\nvariable = "1e300*a"\nmass = 1.0\ninertia = [1, 1, 1]\n')
    return path


def _osim_constant_1e308(tmp_path) -> Path:
    text = gzip.decompress((OSIM / "splines.osim.gz").read_bytes()).decode()
    assert text.count("<value>0.05</value>") == 1  # the TransformAxis translation3's Constant
    path = tmp_path / "constant.osim"
    path.write_text(text.replace("<value>0.05</value>", "<value>1e308</value>"))
    return path


def test_gravity_1e308_gives_configuration_errors_not_inf(tmp_path):
    model = load_model(_gravity_1e308(tmp_path))
    q, zero = np.array([0.5, 0.5]), np.zeros(2)
    with pytest.raises(ConfigurationError, match=r"^non-finite accelerations q̈ \(forward dynamics\) at q = \[0\.5, 0\.5\]"):
        model.forward_dynamics(q, zero)
    with pytest.raises(ConfigurationError, match=r"^non-finite joint reactions at q = \[0\.5, 0\.5\]"):
        model.joint_reactions(q, zero, zero)


def test_prismatic_variable_1e300_gives_configuration_errors(tmp_path):
    """M = m (∂f/∂a)² = 1e600 overflows."""
    model = load_model(_prismatic_1e300(tmp_path))
    for call in (lambda: model.mass_matrix([0.5]), lambda: model.forward_dynamics([0.5], [0.0]),
                 lambda: model.inverse_dynamics([0.5], [0.0], [0.0]), lambda: model.equations_of_motion([0.5], [0.0])):
        with pytest.raises(ConfigurationError, match=r"^non-finite mass matrix M at q = \[0\.5\]"):
            call()


def test_osim_transform_axis_constant_1e308_gives_configuration_errors(tmp_path):
    model = load_model(_osim_constant_1e308(tmp_path))
    q, zero = model.default_q, np.zeros(model.nq)
    for call in (lambda: model.mass_matrix(q), lambda: model.forward_dynamics(q, zero),
                 lambda: model.joint_reactions(q, zero, zero)):
        with pytest.raises(ConfigurationError, match=r"^non-finite .* at q = \[0\.1, -0\.2\]"):
            call()


def test_finite_result_names_the_first_bad_state():
    q = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    values = np.ones((3, 2, 2))
    assert finite_result(values, "thing", q) is values
    values[2, 1, 0] = np.nan
    with pytest.raises(ConfigurationError, match=r"^non-finite thing at q = \[4\.0, 5\.0\] \(state \(2,\)\)"):
        finite_result(values, "thing", q)


@pytest.mark.parametrize("size", [1, 7, 31, 32, 45, 2320])
def test_all_finite_is_numpy_s_isfinite_at_every_size(size):
    """Against ``np.isfinite(...).all()``: finite arrays (with huge values, whose squares overflow), and one NaN,
    +inf or -inf anywhere, at sizes on both sides of the switch from ``vdot`` to ``np.isfinite`` — no warning."""
    rng = np.random.default_rng(size)
    values = rng.normal(size=size)
    assert all_finite(values) and all_finite(values.reshape(-1, 1)[::-1])
    values[rng.integers(size)] = 1e300
    assert all_finite(values)
    for bad in (np.nan, np.inf, -np.inf):
        for where in {0, size // 2, size - 1}:
            broken = values.copy()
            broken[where] = bad
            assert all_finite(broken) is False is bool(np.isfinite(broken).all())


def test_simulation_of_a_huge_speed_still_ends_with_a_message(arm):
    """The integrators take the ConfigurationError as a failed step (as the NaN before)."""
    run = mbkron.simulate(arm, (0.0, 1.0), [0.1, 0.2], qd0=[1e200, 0.0], method="RK45")
    assert run.status == -1 and "q = [" in run.message


# ---------------------------------------------------------------------------------------- 27.18
def test_repr_is_a_one_line_summary(tmp_path):
    model = _osim("gait2392_thelen2003muscle", tmp_path)
    text = repr(model)
    assert text == (f"Model('3DGaitModel2392': 23 coordinates, {model.nb} bodies, {model.nj} joint variables, "
                    f"92 muscles, 0 constraint groups, {len(model.loads)} loads; gravity (0, -9.80665, 0) m/s²; "
                    f"backend {model.backend!r})")
    assert len(text) < 300 and "\n" not in text


def test_repr_counts_constraint_groups_and_singular_nouns(four_bar):
    text = repr(four_bar)
    assert text.startswith("Model('four-bar': 1 coordinate, 3 bodies, 3 joint variables, 0 muscles, "
                           f"{len(four_bar.constraint_groups)} constraint group")
    assert text.endswith("backend 'compiled')")


# ---------------------------------------------------------------------------------------- the one-state fast path
def test_one_state_fast_path_equals_the_assembled_equations_and_checks_its_arguments():
    """``forward_dynamics(q, qd)`` of a simple tree with float64 arrays calls the compiled kernel directly: each
    state equals ``M⁻¹(G − N q̇ + Q)`` assembled from the model's terms (a different algorithm: LAPACK on the
    assembled M), and a non-finite argument is still named."""
    from mbkron.jit.common import AVAILABLE
    from tests.test_forward_dynamics import _oracle_forward, _simple_tree  # springs, a joint torque and a generalized force too

    if not AVAILABLE:
        pytest.skip("numba is not installed")
    compiled = model = _simple_tree(1)
    rng = np.random.default_rng(4)
    for _ in range(5):  # the first call sets up the direct route, the next ones take it
        q, qd = rng.uniform(-2, 2, size=(2, model.nq))
        np.testing.assert_allclose(compiled.forward_dynamics(q, qd), _oracle_forward(model, q, qd), rtol=1e-9,
                                   atol=1e-9)
    q[1] = np.nan
    with pytest.raises(ConfigurationError, match=r"`q` must be finite .*got nan at index \(1,\)"):
        compiled.forward_dynamics(q, qd)
    q[1], qd[0] = 0.0, np.inf
    with pytest.raises(ConfigurationError, match=r"`qd` must be finite .*got inf at index \(0,\)"):
        compiled.forward_dynamics(q, qd)
    qd[0] = 1e300
    with pytest.raises(ConfigurationError, match=r"^non-finite .* at q = \[.*qd = \[1e\+300"):
        compiled.forward_dynamics(q, qd)
