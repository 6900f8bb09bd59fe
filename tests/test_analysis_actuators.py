"""Reserve and residual actuators (``mbkron.analysis.actuators``): OpenSim's ``CoordinateActuator``,
``PointActuator``, ``TorqueActuator`` read from force-set files and their generalized forces, checked
against finite differences of the bodies' positions and rotations (independent of the twists the
module uses), and static optimisation of opensim-models' Gait10dof18musc trial with its own reserve file
against OpenSim 4.6 (``validation/opensim/compare_so_gait10dof.py``)."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.analysis.actuators import PointActuator, Reserve, TorqueActuator, read_reserves, unit_generalized_forces
from mbkron.analysis.static_optimization import static_optimization

DATA = Path(__file__).parent / "data" / "analysis_gait10dof"


def chain():
    """A 3-D chain: a slider along x, a hinge about z, a hinge about an oblique axis, with offsets."""
    builder = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    for name in ("s", "a", "b"):
        builder.add_coordinate(name, unit="m" if name == "s" else "rad")
    builder.add_body("cart", joint="prismatic", axis=(1, 0, 0), variable="s", mass=1.0, inertia=np.ones(3))
    builder.add_body("arm", parent="cart", axis=(0, 0, 1), variable="a", offset=(0.1, 0.2, 0.0), mass=1.0,
                     inertia=np.ones(3))
    builder.add_body("hand", parent="arm", axis=(0.3, 0.5, 0.8), variable="b", offset=(0.4, 0.0, 0.1), mass=1.0,
                     inertia=np.ones(3))
    return builder.build()


Q = np.array([[0.3, 0.7, -0.4], [-0.2, 2.1, 1.3]])


def numeric(model, q, function, h=1e-6):
    """Central differences of ``function(T)`` (T: the bodies' transforms at q), one column per coordinate."""
    columns = []
    for k in range(q.shape[-1]):
        step = np.zeros_like(q)
        step[..., k] = h
        plus, minus = model.kinematics(q + step, 0).T, model.kinematics(q - step, 0).T
        columns.append((function(plus, q + step) - function(minus, q - step)) / (2 * h))
    return np.stack(columns, axis=-1)


@pytest.mark.parametrize("point_is_global", [False, True])
@pytest.mark.parametrize("force_is_global", [False, True])
def test_point_actuator_does_the_virtual_work_of_its_force(point_is_global, force_is_global):
    model = chain()
    hand = model.body_index("hand")
    actuator = PointActuator("F", "hand", (0.05, -0.1, 0.2), (1.0, 2.0, -2.0), point_is_global, force_is_global, 7.0)
    T0 = model.kinematics(Q, 0).T[:, hand]
    local = np.einsum("nji,nj->ni", T0[:, :3, :3], np.array(actuator.point) - T0[:, :3, 3]) if point_is_global \
        else np.broadcast_to(actuator.point, (2, 3))
    direction = np.array([1.0, 2.0, -2.0]) / 3.0
    force = 7.0 * (direction if force_is_global else np.einsum("nij,j->ni", T0[:, :3, :3], direction))
    # δW = F·δp with the material point fixed in the hand: p(q) = T(q) local
    dp = numeric(model, Q, lambda T, q: np.einsum("nij,nj->ni", T[:, hand, :3, :3], local) + T[:, hand, :3, 3])
    expected = np.einsum("nxk,nx->nk", dp, np.broadcast_to(force, (2, 3)))
    np.testing.assert_allclose(unit_generalized_forces(model, [actuator], Q)[..., 0], expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("torque_is_global", [False, True])
@pytest.mark.parametrize("body_b", ["", "arm"])
def test_torque_actuator_does_the_virtual_work_of_its_torques(torque_is_global, body_b):
    model = chain()
    hand, arm = model.body_index("hand"), model.body_index("arm")
    actuator = TorqueActuator("M", "hand", body_b, (0.0, 3.0, 4.0), torque_is_global, 2.0)
    R0 = model.kinematics(Q, 0).T[:, hand, :3, :3]
    axis = np.array([0.0, 0.6, 0.8])
    torque = 2.0 * (axis if torque_is_global else np.einsum("nij,j->ni", R0, axis))

    def rotation_vector(body):  # δθ of the body in ground: the axial vector of δR Rᵀ
        def f(T, q):
            R = T[:, body, :3, :3] @ np.swapaxes(model.kinematics(Q, 0).T[:, body, :3, :3], -1, -2)
            return np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=-1) / 2
        return numeric(model, Q, f)

    jacobian = rotation_vector(hand) - (rotation_vector(arm) if body_b else 0.0)
    expected = np.einsum("nxk,nx->nk", jacobian, np.broadcast_to(torque, (2, 3)))
    np.testing.assert_allclose(unit_generalized_forces(model, [actuator], Q)[..., 0], expected, rtol=0, atol=1e-8)


def test_a_coordinate_actuator_is_its_optimal_force_on_its_coordinate():
    model = chain()
    columns = unit_generalized_forces(model, [Reserve("a", 3.0), Reserve("s", 0.5)], Q)
    np.testing.assert_array_equal(columns, np.broadcast_to([[0.0, 0.5], [3.0, 0.0], [0.0, 0.0]], (2, 3, 2)))


def test_residuals_balance_a_pelvis_alone():
    """With no muscles, FX, FY, MZ on a planar free body balance any τ exactly: x solves the 3×3 system,
    the minimum of Σx² subject to it (a square, invertible system has one solution)."""
    builder = mbkron.ModelBuilder(gravity=(0, -9.81, 0))
    for name, unit in (("tilt", "rad"), ("tx", "m"), ("ty", "m")):
        builder.add_coordinate(name, unit=unit)
    builder.add_body("tx_frame", joint="prismatic", axis=(1, 0, 0), variable="tx")
    builder.add_body("ty_frame", parent="tx_frame", joint="prismatic", axis=(0, 1, 0), variable="ty")
    builder.add_body("pelvis", parent="ty_frame", axis=(0, 0, 1), variable="tilt", mass=10.0, inertia=np.ones(3))
    model = builder.build()
    actuators = [PointActuator("FX", "pelvis", (-0.034, 0, 0), (1, 0, 0), False, True, 1.0),
                 PointActuator("FY", "pelvis", (-0.034, 0, 0), (0, 1, 0), False, True, 2.0),
                 TorqueActuator("MZ", "pelvis", "ground", (0, 0, 1), True, 1.0)]
    q = np.array([[0.4, 1.0, 0.9]])
    tau = np.array([[5.0, -20.0, 100.0]])  # (tilt, tx, ty) moments and forces
    result = static_optimization(model, [0.0], q, np.zeros_like(q), tau, reserves=actuators)
    assert result.converged.all()
    # closed form: FX, FY act at p = (−0.034 cos θ, −0.034 sin θ) from the origin: moment about z p × F
    p = -0.034 * np.array([math.cos(0.4), math.sin(0.4)])
    fx, fy = -20.0, 100.0
    mz = 5.0 - (p[0] * fy - p[1] * fx)
    np.testing.assert_allclose(result.reserve_forces[0], [fx, fy, mz], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(result.reserve_controls[0], [fx, fy / 2.0, mz], rtol=1e-12, atol=1e-9)


def test_the_pipelines_reserve_file_is_read_whole(tmp_path):
    path = tmp_path / "reserves.xml"
    path.write_bytes(gzip.decompress((DATA / "gait10dof_Reserve_Actuators.xml.gz").read_bytes()))
    actuators, skipped = read_reserves(path)
    assert skipped == ()
    assert [a.name for a in actuators] == ["FX", "FY", "MZ", "hip_flexion_r_reserve", "knee_angle_r_reserve",
                                           "ankle_angle_r_reserve", "hip_flexion_l_reserve", "knee_angle_l_reserve",
                                           "ankle_angle_l_reserve", "lumbar_extension_reserve"]
    assert actuators[1] == PointActuator("FY", "pelvis", (-0.034, 0.0, 0.0), (0.0, 1.0, 0.0), False, True, 2.0)
    assert actuators[2] == TorqueActuator("MZ", "pelvis", "ground", (0.0, 0.0, 1.0), True, 1.0)


@pytest.mark.parametrize("text, message", [
    ("<PointActuator name='FX'><point>1 2</point><body>pelvis</body></PointActuator>", "`point` of PointActuator `FX`"),
    ("<PointActuator name='FX'><body>pelvis</body><direction>0 0 0</direction></PointActuator>", "`direction`"),
    ("<PointActuator name='FX'/>", "PointActuator `FX`: no `body`"),
    ("<TorqueActuator name='MZ'><bodyA>p</bodyA><axis>a b c</axis></TorqueActuator>", "`axis` must be three numbers"),
    ("<TorqueActuator name='MZ'><bodyA>p</bodyA><torque_is_global>yes</torque_is_global></TorqueActuator>",
     "`torque_is_global` must be true or false, got 'yes'"),
    ("<CoordinateActuator name='r'><coordinate>a</coordinate><optimal_force>x</optimal_force></CoordinateActuator>",
     "`optimal_force` must be a number, got 'x'"),
])
def test_bad_actuators_are_named(tmp_path, text, message):
    path = tmp_path / "bad.xml"
    path.write_text(f"<OpenSimDocument><ForceSet><objects>{text}</objects></ForceSet></OpenSimDocument>")
    with pytest.raises(ValueError, match=message) as error:
        read_reserves(path)
    assert str(path) in str(error.value)


def test_unknown_bodies_are_named():
    model = chain()
    with pytest.raises(ValueError, match="actuator `FX`: `body` names `pelvis`, which is not a body"):
        unit_generalized_forces(model, [PointActuator("FX", "pelvis")], Q)
    with pytest.raises(ValueError, match="actuator `MZ`: `bodyB` names `torso`"):
        unit_generalized_forces(model, [TorqueActuator("MZ", "hand", "torso")], Q)


def test_forces_of_a_reserve_file_that_are_not_used_are_named(tmp_path):
    """``analyze_trial`` warns about the forces of a reserve file static optimisation does not use."""
    from mbkron.analysis import analyze_trial
    from mbkron.io.storage import write_storage

    model = chain()
    path = tmp_path / "reserves.xml"
    path.write_text("<OpenSimDocument><ForceSet><objects><CoordinateActuator name='r'><coordinate>a</coordinate>"
                    "</CoordinateActuator><PrescribedForce name='push'/></objects></ForceSet></OpenSimDocument>")
    time = np.linspace(0.0, 0.1, 8)
    write_storage(tmp_path / "m.sto", "m", model.coordinates, time, np.zeros((8, 3)))
    with pytest.warns(UserWarning, match=f"`reserves` {path}: .* ignored: push"):
        analyze_trial(model, tmp_path / "m.sto", analyses=("so",), reserves=path)
