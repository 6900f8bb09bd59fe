"""Model building, validation and the joint variables."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

import mbkron
from mbkron import ModelError


def two_link() -> mbkron.ModelBuilder:
    b = mbkron.ModelBuilder(name="arm")
    b.add_coordinate("a1", range=(-3, 3)).add_coordinate("a2")
    b.add_body("upper", axis=(0, 0, 1), variable="a1", mass=2.0, com=(0.15, 0, 0), inertia=np.diag([0, 0.01, 0.01]))
    b.add_body("fore", parent="upper", axis=(0, 0, 1), variable="a2", offset=(0.3, 0, 0), mass=1.0)
    return b


def problems_of(builder) -> list[str]:
    with pytest.raises(ModelError) as info:
        builder.build()
    return info.value.problems


def test_names_and_order():
    model = two_link().build()
    assert model.bodies == ("upper", "fore")
    assert model.coordinates == ("a1", "a2")
    assert model.joints == ("upper", "fore")
    assert (model.nq, model.nb, model.nj) == (2, 2, 2)
    assert model.coordinate("a1").range == (-3.0, 3.0)
    assert model.body("fore").parent == "upper"


def test_bodies_are_sorted_parent_first():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("c", parent="b", axis=(0, 0, 1), variable="x")
    b.add_body("a", axis=(0, 0, 1), variable="x")
    b.add_body("b", parent="a", axis=(0, 0, 1), variable="x")
    assert b.build().bodies == ("a", "b", "c")


def test_model_is_immutable():
    model = two_link().build()
    with pytest.raises(ValueError):
        model.body("upper").com[0] = 1.0
    with pytest.raises(ValueError):
        model.tree.local_coefficients[0, 0, 0, 0] = 2.0
    with pytest.raises(AttributeError):
        model.gravity = np.zeros(3)


def test_every_problem_is_reported_at_once():
    b = mbkron.ModelBuilder(gravity=(0, np.nan, 0))
    b.add_coordinate("x")
    b.add_body("a", parent="nowhere", axis=(0, 0, 0), variable="x", mass=-1.0)
    b.add_body("b", axis=(0, np.inf, 1), variable="y", inertia=[[1, 2, 0], [0, 1, 0], [0, 0, 1]])
    b.add_body("c", axis=(1, 0, 0), variable="x", inertia=np.diag([1.0, -2.0, 1.0]), com=(1, 2))
    b.add_body("d", joint="hinge", variable="x")
    text = "\n".join(problems_of(b))
    for expected in [
        "`gravity` must be finite",
        "body `a`: unknown `parent` `nowhere`",
        "body `a`: `rotation_axis` must be a non-zero vector",
        "body `a`: `mass` must be non-negative (kg), got -1.0",
        "body `b`: `rotation_axis` must be finite",
        "body `b`: `variable` names unknown coordinate `y`; expected one of: x",
        "body `b`: `inertia` must be symmetric",
        "body `c`: `inertia` must be symmetric positive semi-definite; eigenvalues are (-2, 1, 1)",
        "body `c`: `com` must have shape (3,), got shape (2,)",
        "body `d`: `joint` must be one of revolute, prismatic, fixed, got 'hinge'",
    ]:
        assert expected in text, f"missing: {expected}\n{text}"


def test_cycle_and_duplicates():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", parent="b", axis=(0, 0, 1), variable="x")
    b.add_body("b", parent="a", axis=(0, 0, 1), variable="x")
    b.add_body("c", axis=(0, 0, 1), variable="x")
    assert any("`a`, `b` form a cycle" in p for p in problems_of(b))
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable="x")
    b.add_body("a", axis=(0, 0, 1), variable="x")
    text = "\n".join(problems_of(b))
    assert "coordinate `x` is defined twice" in text and "body `a` is defined twice" in text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(axis=(0, 0, 1)), "`variable` is required"),
        (dict(joint="fixed", axis=(0, 0, 1)), "a fixed joint has no `axis`"),
        (dict(joint="fixed", variable="x"), "a fixed joint has no joint variable"),
        (dict(axis=(0, 0, 1), rotation_axis=(1, 0, 0), variable="x"), "give the joint axis once"),
        (dict(variable="x"), "a revolute joint needs `axis`"),
        (dict(axis=(0, 0, 1), variable="x", offset=np.diag([1, 1, -1, 1])), "orthonormal with determinant +1"),
        (dict(axis=(0, 0, 1), variable="x", offset=np.ones((3, 3))), "`offset` (a 4×4 transform"),
        (dict(axis=(0, 0, 1), variable="x", mass="heavy"), "`mass` must be a number, got 'heavy'"),
        (dict(axis=(0, 0, 1), variable=sympy.Symbol("z") ** 2), "unknown symbols z"),
        (dict(axis=(0, 0, 1), variable=[1, 2]), "`variable` must be a coordinate name"),
        (dict(axis=(0, 0, 1), variable=mbkron.Linear({"w": 1.0})), "unknown coordinate `w`"),
        (dict(axis=(0, 0, 1), variable="x", inertia=np.ones((2, 2))), "`inertia` (kg·m², about the centre of mass)"),
        (dict(axis="z", variable="x"), "`rotation_axis` must"),
    ],
)
def test_single_body_errors(kwargs, message):
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("arm", **kwargs)
    text = "\n".join(problems_of(b))
    assert message in text, text
    assert "arm" in text or "`x`" in text


def test_coordinate_errors():
    b = mbkron.ModelBuilder()
    b.add_coordinate("1x")
    b.add_coordinate("y", range=(1, 0))
    b.add_coordinate("z", range=(0, 1), default=2.0, unit="deg")
    text = "\n".join(problems_of(b))
    assert "coordinate name '1x' must be an identifier" in text
    assert "coordinate `y`: `range` must satisfy low < high" in text
    assert "coordinate `z`: `default` 2.0 lies outside `range` [0.0, 1.0]" in text
    assert "coordinate `z`: `unit` must be one of rad, m, 1, got 'deg'" in text
    assert problems_of(mbkron.ModelBuilder()) == [
        "the model has no generalized coordinates; add at least one with `add_coordinate`",
        "the model has no bodies (nothing moves); add at least one body",
    ]


def test_wrong_shapes_of_arguments():
    model = two_link().build()
    with pytest.raises(ValueError, match=r"`q` must have shape \(\.\.\., 2\)"):
        model.kinematics([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"`qd` must have shape"):
        model.point_velocity("fore", (0, 0, 0), [0, 0], [1])
    with pytest.raises(ValueError, match=r"`point` must have shape"):
        model.point_position("fore", (0, 0), [0, 0])
    with pytest.raises(KeyError, match="unknown body `hand`; the model has: upper, fore"):
        model.point_position("hand", (0, 0, 0), [0, 0])
    with pytest.raises(ValueError, match="`frame` must be"):
        model.angular_velocity("fore", [0, 0], [0, 0], frame="parent")


def test_joint_variables_linear_and_symbolic():
    x, y = sympy.symbols("x y")
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("y")
    b.add_body("a", axis=(0, 0, 1), variable=mbkron.Linear({"x": 2.0, "y": -1.0}, 0.5))
    b.add_body("b", parent="a", axis=(0, 0, 1), variable=sympy.sin(x) * y**2)
    b.add_body("c", parent="b", joint="prismatic", axis=(1, 0, 0), variable=3 * y - x)  # affine sympy
    model = b.build()
    assert len(model.joint_variable_map.providers) == 1  # only the nonlinear one is symbolic
    q = np.array([0.3, -1.2])
    f, grad, hess = model.joint_variables(q)
    np.testing.assert_allclose(f, [2 * 0.3 + 1.2 + 0.5, np.sin(0.3) * 1.44, -3.6 - 0.3], rtol=1e-15)
    np.testing.assert_allclose(grad, [[2, -1], [np.cos(0.3) * 1.44, 2 * np.sin(0.3) * -1.2], [-1, 3]], rtol=1e-15)
    np.testing.assert_allclose(hess[1], [[-np.sin(0.3) * 1.44, 2 * np.cos(0.3) * -1.2],
                                         [2 * np.cos(0.3) * -1.2, 2 * np.sin(0.3)]], rtol=1e-15)
    assert not hess[0].any() and not hess[2].any()
    batch = model.joint_variables(np.stack([q, q + 1]))
    np.testing.assert_allclose(batch[1][0], grad)


def test_affine_joint_variables_have_read_only_zero_hessians():
    """Without providers the Hessians are zeros of the full shape, for one state and a batch, and read-only
    (``JointVariables.evaluate``): a caller cannot write into what the next evaluation returns."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("x").add_coordinate("y")
    b.add_body("a", axis=(0, 0, 1), variable=mbkron.Linear({"x": 2.0, "y": -1.0}, 0.5))
    b.add_body("b", parent="a", joint="prismatic", axis=(1, 0, 0), variable="y")
    model = b.build()
    for q, shape in (([0.3, -1.2], (2, 2, 2)), (np.zeros((4, 3, 2)), (4, 3, 2, 2, 2))):
        hess = model.joint_variables(q)[2]
        assert hess.shape == shape and not hess.any() and not hess.flags.writeable
        with pytest.raises(ValueError):
            hess[..., 0, 0, 0] = 1.0


def test_symbols_with_assumptions_are_matched_by_name():
    x = sympy.Symbol("x", real=True)
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable=sympy.exp(x))
    f, grad, _ = b.build().joint_variables([0.5])
    np.testing.assert_allclose([f[0], grad[0, 0]], [np.exp(0.5)] * 2)


def test_non_finite_joint_variable_names_q():
    x = sympy.Symbol("x")
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable=sympy.log(x))
    with pytest.raises(mbkron.ConfigurationError, match=r"joint variable `a` is not finite at q = \[-1.0\]"):
        b.build().kinematics([-1.0])


def test_strings_are_never_sympified():
    from mbkron.algorithms.jointvars.explicit import SymbolicJointVariables

    with pytest.raises(TypeError, match="never|parse strings"):
        SymbolicJointVariables(["__import__('os').getcwd()"], [sympy.Symbol("x")])


def test_huge_values_do_not_overflow_silently():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(1e300, 1e300, 0), variable="x", mass=1e300, com=(1e200, 0, 0))
    with pytest.raises(ModelError, match="body `a`: `mass`, `com` and `inertia` overflow its pseudo-inertia"):
        b.build()
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(1e300, 1e300, 0), variable="x", mass=1.0)
    np.testing.assert_allclose(b.build().body("a").rotation_axis, [2**-0.5, 2**-0.5, 0], rtol=1e-15)


def test_constant_sympy_subexpressions_are_not_evaluated_by_sympy():
    """sin(exp(exp(20))) would make sympy compute forever; it is left to numeric evaluation."""
    x = sympy.Symbol("x")
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable=sympy.sin(sympy.exp(sympy.exp(20))) + x)
    with pytest.raises(mbkron.ConfigurationError, match="not finite"):
        b.build().joint_variables([0.1])


def test_a_cycle_is_reported_beside_other_problems():
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", parent="b", axis=(0, 0, 1), variable="x", mass=-1.0)
    b.add_body("b", parent="a", axis=(0, 0, 1), variable="x")
    text = "\n".join(problems_of(b))
    assert "form a cycle" in text and "`mass` must be non-negative" in text


def test_a_spring_on_one_body_is_refused():
    """#14.1: a spring-damper whose two ends are fixed in one frame is a ModelError naming the load and fields."""
    b = mbkron.ModelBuilder()
    b.add_coordinate("x")
    b.add_body("a", axis=(0, 0, 1), variable="x", mass=1.0, inertia=[0.1, 0.1, 0.1])
    b.add_load(mbkron.loads.SpringDamper("a", (1, 0, 0), "a", (1, 0, 0), stiffness=10.0))
    with pytest.raises(mbkron.ModelError, match=r"load 0 \(SpringDamper\): `body_a` and `body_b` are both 'a'"):
        b.build()
