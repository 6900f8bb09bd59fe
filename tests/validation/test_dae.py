"""Tests of the independent planar DAE reference ``validation.dae`` against closed forms.

Reference values come from formulas written here: analytic pendulum kinematics and periods,
sympy Lagrange equations of a two-link chain, circle-intersection four-bar positions, the
slider-crank closed form, finite differences and energy/power balances.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.special import ellipk

from validation.dae import (
    GROUND,
    Baumgarte,
    Body,
    BodyTorque,
    ConvergenceError,
    DrivenAngle,
    DrivenCoordinate,
    FixedAngle,
    JointTorque,
    Motion,
    PlanarSystem,
    PointForce,
    Prismatic,
    Revolute,
    SingularJacobianError,
    SpringDamper,
    accelerations,
    kinematic_analysis,
    simulate,
    solve_position,
    solve_velocity,
)

G = 9.81


def e(theta):
    """Unit vector at angle theta (batched): (cos, sin)."""
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def e_perp(theta):
    return np.stack([-np.sin(theta), np.cos(theta)], axis=-1)


def cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


# 8th-order central differences on a uniform grid.
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])


def stencil(x, weights, h, power):
    """Apply a centred stencil along axis 0; returns values at the interior points."""
    k = len(weights) // 2
    n = x.shape[0]
    return sum(w * x[k + j : n - k + j] for j, w in zip(range(-k, k + 1), weights)) / h**power


# ---------------------------------------------------------------------------------------------
# Pendulum: uniform rod, body origin at the free tip, pivot at body point (−L, 0).
L, M_ROD = 0.8, 2.0
J_C = M_ROD * L**2 / 12
D_COM = L / 2
J_PIVOT = J_C + M_ROD * D_COM**2
PIVOT = np.array([0.3, 1.1])


def pendulum(drive: Motion | None = None):
    system = PlanarSystem(gravity=(0.0, -G))
    rod = system.add_body(Body("rod", M_ROD, J_C, com=(-L / 2, 0.0)))
    pin = system.add_constraint(Revolute(GROUND, PIVOT, "rod", (-L, 0.0), name="pin"))
    motor = system.add_constraint(DrivenAngle(GROUND, rod, drive)) if drive else None
    return system, pin, motor


def pendulum_state(phi, w):
    """Absolute coordinates of the rod with the rod pointing from the pivot at angle phi."""
    q = np.concatenate([PIVOT + L * e(phi), [phi]])
    qd = np.concatenate([L * w * e_perp(phi), [w]])
    return q, qd


def test_pendulum_kinematics_match_analytic_formulas():
    f = Motion(
        lambda t: -np.pi / 2 + 0.8 * np.sin(2 * t),
        lambda t: 1.6 * np.cos(2 * t),
        lambda t: -3.2 * np.sin(2 * t),
    )
    system, _, motor = pendulum(f)
    t = np.linspace(0.0, 3.0, 61)
    run = kinematic_analysis(system, [PIVOT[0], PIVOT[1] - L, -1.5], t)
    phi, w, a = f.position(t), f.velocity(t), f.acceleration(t)
    tip = PIVOT + L * e(phi)
    np.testing.assert_allclose(run.point_position("rod", (0, 0)), tip, atol=1e-12)
    np.testing.assert_allclose(run.point_velocity("rod", (0, 0)), L * w[:, None] * e_perp(phi), atol=1e-12)
    np.testing.assert_allclose(
        run.point_acceleration("rod", (0, 0)),
        L * a[:, None] * e_perp(phi) - L * (w**2)[:, None] * e(phi),
        atol=1e-11,
    )
    # Inverse dynamics: the motor torque is J_O φ̈ + m g d cos φ.
    np.testing.assert_allclose(
        run.driving_effort(motor), J_PIVOT * a + M_ROD * G * D_COM * np.cos(phi), rtol=1e-11, atol=1e-11
    )


def crossing_times(t, x):
    """Upward zero crossings of x(t) by linear interpolation."""
    k = np.nonzero((x[:-1] < 0) & (x[1:] >= 0))[0]
    return t[k] - x[k] * (t[k + 1] - t[k]) / (x[k + 1] - x[k])


@pytest.mark.parametrize("amplitude", [1e-3, 2.0])
def test_pendulum_period(amplitude):
    system, _, _ = pendulum()
    omega0 = np.sqrt(M_ROD * G * D_COM / J_PIVOT)
    exact = 4.0 / omega0 * ellipk(np.sin(amplitude / 2) ** 2)  # scipy's ellipk takes m = k²
    if amplitude < 0.01:
        assert exact == pytest.approx(2 * np.pi / omega0, rel=1e-7)
    q0, qd0 = pendulum_state(-np.pi / 2 + amplitude, 0.0)
    t = np.linspace(0.0, 3.2 * exact, 6001)
    run = simulate(system, q0, qd0, t, rtol=1e-11, atol=1e-13)
    ups = crossing_times(t, run.q[:, 2] + np.pi / 2)
    assert len(ups) == 3
    np.testing.assert_allclose(np.diff(ups), exact, rtol=1e-7)


@pytest.mark.parametrize("stabilisation", ["none", "projection"])
def test_pendulum_energy_is_conserved(stabilisation):
    system, _, _ = pendulum()
    q0, qd0 = pendulum_state(-0.3, 1.0)
    t = np.linspace(0.0, 5.0, 201)
    run = simulate(system, q0, qd0, t, rtol=1e-11, atol=1e-13, projection=stabilisation == "projection")
    kinetic, potential = run.energy()
    # Independent energy of a rod rotating about a fixed pivot.
    phi, w = run.q[:, 2], run.qd[:, 2]
    np.testing.assert_allclose(kinetic, 0.5 * J_PIVOT * w**2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(potential, M_ROD * G * (PIVOT[1] + D_COM * np.sin(phi)), rtol=0, atol=1e-9)
    energy = kinetic + potential
    assert np.ptp(energy) / abs(energy[0]) < 1e-9


def test_pendulum_reaction_force_matches_newton():
    system, pin, _ = pendulum()
    rng = np.random.default_rng(1)
    for phi, w in zip(rng.uniform(-np.pi, np.pi, 5), rng.uniform(-4, 4, 5)):
        q, qd = pendulum_state(phi, w)
        qdd, lam = accelerations(system, q, qd)
        alpha = -M_ROD * G * D_COM * np.cos(phi) / J_PIVOT
        a_com = D_COM * alpha * e_perp(phi) - D_COM * w**2 * e(phi)
        force = M_ROD * a_com - M_ROD * np.array([0.0, -G])  # pin force on the rod
        np.testing.assert_allclose(qdd[2], alpha, rtol=1e-12)
        np.testing.assert_allclose(lam[system.rows(pin)], force, rtol=1e-11, atol=1e-11)
    # Hanging straight down and swinging at ω: F = (0, m (g + d ω²)).
    w = 2.5
    run = simulate(system, *pendulum_state(-np.pi / 2, w), [0.0, 0.01])
    np.testing.assert_allclose(run.reaction_force(pin)[0], [0.0, M_ROD * (G + D_COM * w**2)], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Double pendulum: reference equations by sympy Lagrange in the absolute link angles.
BASE = np.array([0.1, 0.2])
M1, I1, L1, LC1 = 1.3, 0.11, 0.9, 0.35
M2, I2, L2, LC2, H2 = 0.7, 0.05, 0.6, 0.25, 0.04
K_T, C_T, TH_REF = 3.0, 0.4, 0.2  # torsional spring-damper between the links
K_S, C_S, L0_S, ANCHOR = 25.0, 1.5, 0.5, np.array([0.8, -0.4])  # spring-damper ground–tip
F_TIP = np.array([1.0, -0.5])


def body_torque(t):
    return 0.3 * np.sin(t)


def double_pendulum(loads: bool):
    system = PlanarSystem(gravity=(0.0, -G))
    # Body 1 has its origin at its centre of mass; body 2 at its proximal joint.
    b1 = system.add_body(Body("link1", M1, I1))
    b2 = system.add_body(Body("link2", M2, I2, com=(LC2, H2)))
    joints = (
        system.add_constraint(Revolute(GROUND, BASE, b1, (-LC1, 0.0))),
        system.add_constraint(Revolute(b1, (L1 - LC1, 0.0), b2, (0.0, 0.0))),
    )
    if loads:
        system.add_load(JointTorque(b1, b2, lambda t, angle, rate: -K_T * (angle - TH_REF) - C_T * rate))
        system.add_load(BodyTorque("link1", lambda t, q, qd: body_torque(t)))
        system.add_load(PointForce("link2", (L2, 0.0), F_TIP))
        system.add_load(SpringDamper(GROUND, ANCHOR, b2, (L2, 0.0), K_S, C_S, L0_S))
    return system, joints


def double_pendulum_state(th, w):
    q = np.concatenate([BASE + LC1 * e(th[0]), [th[0]], BASE + L1 * e(th[0]), [th[1]]])
    qd = np.concatenate([LC1 * w[0] * e_perp(th[0]), [w[0]], L1 * w[0] * e_perp(th[0]), [w[1]]])
    return q, qd


def lagrange_double_pendulum(loads: bool):
    """θ̈(t, θ, θ̇) of the chain from Lagrange's equations derived with sympy."""
    t = sp.Symbol("t")
    th = sp.symbols("th1 th2")
    w = sp.symbols("w1 w2")
    a = sp.symbols("a1 a2")
    ev = lambda x: sp.Matrix([sp.cos(x), sp.sin(x)])  # noqa: E731
    rot = lambda x: sp.Matrix([[sp.cos(x), -sp.sin(x)], [sp.sin(x), sp.cos(x)]])  # noqa: E731

    def ddt(expr):
        return sum(sp.diff(expr, th[k]) * w[k] + sp.diff(expr, w[k]) * a[k] for k in range(2))

    def vel(r):
        return r.jacobian(th) * sp.Matrix(w)

    o = sp.Matrix(BASE)
    c1 = o + LC1 * ev(th[0])
    joint = o + L1 * ev(th[0])
    c2 = joint + rot(th[1]) * sp.Matrix([LC2, H2])
    tip = joint + L2 * ev(th[1])
    T = (M1 * vel(c1).dot(vel(c1)) + I1 * w[0] ** 2 + M2 * vel(c2).dot(vel(c2)) + I2 * w[1] ** 2) / 2
    V = G * (M1 * c1[1] + M2 * c2[1])
    Lag = T - V
    Q = [sp.Integer(0), sp.Integer(0)]
    if loads:
        tau = -K_T * (th[1] - th[0] - TH_REF) - C_T * (w[1] - w[0])
        d = tip - sp.Matrix(ANCHOR)
        length = sp.sqrt(d.dot(d))
        tension = K_S * (length - L0_S) + C_S * d.dot(vel(tip)) / length
        f_tip = sp.Matrix(F_TIP) - tension * d / length
        Q = [
            f_tip.dot(tip.diff(th[0])) - tau + 0.3 * sp.sin(t),
            f_tip.dot(tip.diff(th[1])) + tau,
        ]
    eom = sp.Matrix([ddt(sp.diff(Lag, w[k])) - sp.diff(Lag, th[k]) - Q[k] for k in range(2)])
    mass = eom.jacobian(a)
    rest = eom.subs({a[0]: 0, a[1]: 0})
    mass_f = sp.lambdify([th, w], mass, "numpy")
    rest_f = sp.lambdify([t, th, w], rest, "numpy")
    return lambda tt, thv, wv: np.linalg.solve(mass_f(thv, wv), -np.ravel(rest_f(tt, thv, wv)))


@pytest.mark.parametrize("loads", [False, True])
def test_double_pendulum_accelerations_match_lagrange(loads):
    system, _ = double_pendulum(loads)
    reference = lagrange_double_pendulum(loads)
    rng = np.random.default_rng(7)
    for _ in range(10):
        th, w, t = rng.uniform(-np.pi, np.pi, 2), rng.uniform(-3, 3, 2), rng.uniform(0, 5)
        q, qd = double_pendulum_state(th, w)
        assert np.abs(system.residual(q)).max() < 1e-15
        qdd, _ = accelerations(system, q, qd, t)
        np.testing.assert_allclose(qdd[[2, 5]], reference(t, th, w), rtol=1e-10, atol=1e-10)


def test_double_pendulum_reactions_satisfy_newton_euler():
    system, (base, elbow) = double_pendulum(loads=False)
    q0, qd0 = double_pendulum_state(np.array([0.3, -1.2]), np.array([1.0, -2.0]))
    run = simulate(system, q0, qd0, np.linspace(0.0, 1.0, 11), projection=True)
    g = np.array([0.0, -G])
    f_base, f_elbow = run.reaction_force(base), run.reaction_force(elbow)  # on link1, on link2
    assert set(run.reaction_forces()) == {base.name, elbow.name}
    np.testing.assert_array_equal(run.reaction_forces()[elbow.name], f_elbow)
    c1, c2 = run.point_position("link1"), run.point_position("link2")
    r_base = run.point_position("link1", (-LC1, 0.0))
    r_elbow = run.point_position("link2", (0.0, 0.0))
    np.testing.assert_allclose(M1 * run.point_acceleration("link1"), f_base - f_elbow + M1 * g, atol=1e-10)
    np.testing.assert_allclose(M2 * run.point_acceleration("link2"), f_elbow + M2 * g, atol=1e-10)
    np.testing.assert_allclose(
        I1 * run.qdd[:, 2], cross(r_base - c1, f_base) - cross(r_elbow - c1, f_elbow), atol=1e-10
    )
    np.testing.assert_allclose(I2 * run.qdd[:, 5], cross(r_elbow - c2, f_elbow), atol=1e-10)
    # Joint coordinates for comparison with minimal coordinates.
    coords = run.joint_coordinates()
    np.testing.assert_allclose(coords[elbow.name][0], run.q[:, 5] - run.q[:, 2])
    np.testing.assert_allclose(coords[elbow.name][1], run.qd[:, 5] - run.qd[:, 2])
    np.testing.assert_allclose(run.relative_angle("ground", "link1")[0], run.q[:, 2])


# ---------------------------------------------------------------------------------------------
# Four-bar linkage: crank a, coupler b, rocker c, ground d (Grashof crank-rocker).
A4, B4, C4, D4 = 0.3, 1.0, 0.8, 0.9
BETA = 0.4  # the coupler's body x axis is BETA off the line A→B
COUPLER_POINT = np.array([0.5, 0.3])


def crank_motion():
    return Motion(
        lambda t: 0.5 + 2 * t + 0.3 * np.sin(3 * t),
        lambda t: 2 + 0.9 * np.cos(3 * t),
        lambda t: -2.7 * np.sin(3 * t),
    )


def four_bar(drive: bool):
    system = PlanarSystem(gravity=(0.0, -G))
    crank = system.add_body(Body("crank", 1.0, 0.01, com=(A4 / 2, 0.0)))
    coupler = system.add_body(Body("coupler", 2.0, 0.2, com=(0.4, 0.1)))
    rocker = system.add_body(Body("rocker", 1.5, 0.08))  # origin at its middle
    system.add_constraint(Revolute(GROUND, (0.0, 0.0), crank, (0.0, 0.0)))
    system.add_constraint(Revolute(crank, (A4, 0.0), coupler, (0.0, 0.0)))
    system.add_constraint(Revolute(coupler, B4 * e(BETA), rocker, (C4 / 2, 0.0)))
    closure = system.add_constraint(Revolute(GROUND, (D4, 0.0), rocker, (-C4 / 2, 0.0), name="closure"))
    if drive:
        system.add_constraint(DrivenAngle(GROUND, crank, crank_motion()))
    else:
        system.add_load(SpringDamper(GROUND, (0.2, 1.0), coupler, COUPLER_POINT, 40.0, 0.0, 0.3))
    return system, closure


FOUR_BAR_GUESS = np.array([0.0, 0.0, 0.5, 0.26, 0.14, 0.3, 0.95, 0.4, 1.4])  # upper branch


def circle_intersections(p, r, s, rho):
    """Both intersections of circles (p, r) and (s, rho)."""
    d = np.linalg.norm(s - p, axis=-1)
    a = (r**2 - rho**2 + d**2) / (2 * d)
    h = np.sqrt(r**2 - a**2)
    u = (s - p) / d[:, None]
    mid = p + a[:, None] * u
    n = np.stack([-u[:, 1], u[:, 0]], axis=-1)
    return mid + h[:, None] * n, mid - h[:, None] * n


def test_four_bar_kinematics_closed_form_and_finite_differences():
    system, closure = four_bar(drive=True)
    h = 2e-3
    t = np.arange(0.0, 3.0 + h / 2, h)
    run = kinematic_analysis(system, FOUR_BAR_GUESS, t, tol=1e-14)
    pos, vel = run.drift()
    assert pos.max() < 1e-12 and vel.max() < 1e-12
    assert np.abs(run.multipliers(closure)).max() > 0  # loop closure carries load
    closure_gap = run.point_position(GROUND, (D4, 0.0)) - run.point_position("rocker", (-C4 / 2, 0.0))
    assert np.abs(closure_gap).max() < 1e-12
    # Positions against the circle-intersection construction.
    a_pt = A4 * e(crank_motion().position(t))
    b_dae = run.point_position("rocker", (C4 / 2, 0.0))
    b1, b2 = circle_intersections(a_pt, B4, np.array([D4, 0.0]), C4)
    b_ref = np.where(
        (np.linalg.norm(b1 - b_dae, axis=1) < np.linalg.norm(b2 - b_dae, axis=1))[:, None], b1, b2
    )
    np.testing.assert_allclose(b_dae, b_ref, atol=1e-12)
    ab = b_ref - a_pt
    angle_error = np.angle(np.exp(1j * (run.q[:, 5] + BETA - np.arctan2(ab[:, 1], ab[:, 0]))))
    assert np.abs(angle_error).max() < 1e-11
    # Coupler point velocity/acceleration against 8th-order finite differences of positions.
    p = run.point_position("coupler", COUPLER_POINT)
    np.testing.assert_allclose(
        run.point_velocity("coupler", COUPLER_POINT)[4:-4], stencil(p, D1, h, 1), atol=1e-10
    )
    np.testing.assert_allclose(
        run.point_acceleration("coupler", COUPLER_POINT)[4:-4], stencil(p, D2, h, 2), atol=2e-7
    )
    # Driving the coupler's centre-of-mass height instead reproduces the crank motion.
    y = run.point_position("coupler")[:, 1]
    yd = run.point_velocity("coupler")[:, 1]
    ydd = run.point_acceleration("coupler")[:, 1]
    k = slice(0, 40)  # a stretch without turning points of the height
    assert np.all(np.abs(yd[k]) > 0.1)
    height = Motion(*(lambda s, v=v: np.interp(s, t, v) for v in (y, yd, ydd)))
    alt = PlanarSystem(gravity=(0.0, -G))
    for body in system.bodies:
        alt.add_body(body)
    for c in system.constraints[:-1]:
        alt.add_constraint(c)
    alt.add_constraint(DrivenCoordinate("coupler", system.bodies[1].com, (0.0, 1.0), height))
    rerun = kinematic_analysis(alt, run.q[0], t[k], tol=1e-14)
    np.testing.assert_allclose(rerun.q, run.q[k], atol=1e-11)
    np.testing.assert_allclose(rerun.qd, run.qd[k], atol=1e-9)


def free_four_bar_start():
    driven, _ = four_bar(drive=True)
    start = kinematic_analysis(driven, FOUR_BAR_GUESS, [0.0], tol=1e-14)
    return start.q[0], start.qd[0]


def test_four_bar_drift_with_baumgarte_and_projection():
    system, _ = four_bar(drive=False)
    assert system.degrees_of_freedom == 1
    q0, qd0 = free_four_bar_start()
    t = np.linspace(0.0, 4.0, 401)
    loose = dict(method="RK45", rtol=1e-6, atol=1e-8)
    plain = simulate(system, q0, qd0, t, **loose)
    baumgarte = simulate(system, q0, qd0, t, baumgarte=Baumgarte(20.0, 20.0), **loose)
    projected = simulate(system, q0, qd0, t, projection=True, **loose)
    drift = {
        name: [d.max() for d in run.drift()]
        for name, run in [("plain", plain), ("baumgarte", baumgarte), ("projection", projected)]
    }
    # Measured max ‖C‖, ‖Ċ‖: plain ≈ 2e-5, 2e-5; Baumgarte ≈ 1e-7, 2.5e-6; projection ≈ 2e-12, 3e-15.
    assert drift["plain"][0] > 1e-5, drift  # uncorrected position drift grows
    assert drift["baumgarte"][0] < 1e-6 and drift["baumgarte"][1] < 1e-5, drift
    assert drift["baumgarte"][0] < 0.01 * drift["plain"][0], drift
    assert drift["projection"][0] < 1e-11 and drift["projection"][1] < 1e-12, drift
    corrections = projected.info["projection_corrections"]
    assert 0 < corrections[1:, 0].max() < 1e-5, corrections.max(axis=0)
    # The spring–gravity system is conservative: energy is kept by the projected run.
    energy = sum(projected.energy())
    assert np.ptp(energy) < 1e-4 * np.abs(energy).max()


# ---------------------------------------------------------------------------------------------
# Offset slider-crank: crank r, rod l, slider guide y = E_OFF along the ground x axis.
R_SC, L_SC, E_OFF = 0.2, 0.7, 0.05
MASSES = {"crank": (0.8, 0.004), "rod": (1.2, 0.05), "slider": (0.9, 0.002)}
F_GAS = -150.0


def slider_crank(drive: Motion):
    system = PlanarSystem(gravity=(0.0, -G))
    crank = system.add_body(Body("crank", *MASSES["crank"], com=(R_SC / 2, 0.0)))
    rod = system.add_body(Body("rod", *MASSES["rod"]))  # origin at its middle
    slider = system.add_body(Body("slider", *MASSES["slider"]))
    system.add_constraint(Revolute(GROUND, (0.0, 0.0), crank, (0.0, 0.0)))
    system.add_constraint(Revolute(crank, (R_SC, 0.0), rod, (-L_SC / 2, 0.0)))
    system.add_constraint(Revolute(rod, (L_SC / 2, 0.0), slider, (0.0, 0.0)))
    guide = system.add_constraint(Prismatic(GROUND, (0.0, E_OFF), slider, (0.0, 0.0), axis=(1.0, 0.0)))
    motor = system.add_constraint(DrivenAngle(GROUND, crank, drive))
    system.add_load(PointForce(slider, (0.0, 0.0), (F_GAS, 0.0)))
    return system, guide, motor


def slider_closed_form():
    th, w, a = sp.symbols("theta omega alpha")
    x = R_SC * sp.cos(th) + sp.sqrt(L_SC**2 - (R_SC * sp.sin(th) - E_OFF) ** 2)
    xd = sp.diff(x, th) * w
    xdd = sp.diff(xd, th) * w + sp.diff(xd, w) * a
    return [sp.lambdify((th, w, a), f, "numpy") for f in (x, xd, xdd)]


def test_slider_crank_matches_closed_form():
    drive = Motion(lambda t: 0.2 + 5 * t + 0.5 * t**2, lambda t: 5 + t, lambda t: 1.0 + 0 * t)
    system, guide, motor = slider_crank(drive)
    t = np.linspace(0.0, 2.0, 401)
    guess = np.array([0.0, 0.0, 0.2, 0.55, 0.05, 0.0, 0.9, E_OFF, 0.0])
    run = kinematic_analysis(system, guess, t, tol=1e-14)
    x, xd, xdd = slider_closed_form()
    th, w, a = drive.position(t), drive.velocity(t), drive.acceleration(t)
    np.testing.assert_allclose(run.q[:, 6], x(th, w, a), atol=1e-12)
    np.testing.assert_allclose(run.qd[:, 6], xd(th, w, a), atol=1e-11)
    np.testing.assert_allclose(run.qdd[:, 6], xdd(th, w, a), atol=1e-9)
    np.testing.assert_allclose(run.q[:, 7], E_OFF, atol=1e-13)
    np.testing.assert_allclose(run.q[:, 8], 0.0, atol=1e-13)
    s, sd = run.joint_coordinates()[guide.name]
    np.testing.assert_allclose(s, x(th, w, a), atol=1e-12)
    np.testing.assert_allclose(sd, xd(th, w, a), atol=1e-11)
    # Power balance: motor power + gas-force power = d/dt (kinetic + potential energy).
    g = np.array([0.0, -G])
    dE = 0.0
    for k, (name, (m, inertia)) in enumerate(MASSES.items()):
        v, acc = run.point_velocity(name), run.point_acceleration(name)
        dE = dE + m * np.sum(v * acc, axis=1) + inertia * run.qd[:, 3 * k + 2] * run.qdd[:, 3 * k + 2]
        dE = dE - m * v @ g
    power = run.driving_effort(motor) * w + F_GAS * run.qd[:, 6]
    np.testing.assert_allclose(power, dE, atol=1e-9 * np.abs(dE).max())


# ---------------------------------------------------------------------------------------------
# Consistency of the analytical constraint and force terms.
def chain_with_all_constraints():
    """Three bodies with every constraint type (not a consistent mechanism; terms only)."""
    system = PlanarSystem(gravity=(0.3, -G))
    system.add_body(Body("a", 1.0, 0.1, com=(0.2, -0.1)))
    system.add_body(Body("b", 2.0, 0.3, com=(-0.3, 0.05)))
    system.add_body(Body("c", 0.5, 0.02, com=(0.1, 0.1)))
    wave = Motion(
        lambda t: 0.3 * np.sin(2 * t), lambda t: 0.6 * np.cos(2 * t), lambda t: -1.2 * np.sin(2 * t)
    )
    for c in [
        Revolute(GROUND, (0.1, 0.2), "a", (0.3, -0.2)),
        Revolute("a", (0.5, 0.1), "b", (-0.2, 0.4)),
        Prismatic("b", (0.1, -0.3), "c", (0.2, 0.1), axis=(0.6, 0.8), angle=0.4),
        Prismatic(GROUND, (0.5, 0.5), "c", (-0.1, 0.0), axis=(1.0, -1.0)),
        DrivenAngle("a", "c", wave),
        DrivenAngle(GROUND, "b", wave),
        FixedAngle("b", "a", 0.7),
        DrivenCoordinate("c", (0.3, -0.4), (1.0, 2.0), wave),
    ]:
        system.add_constraint(c)
    system.add_load(SpringDamper("a", (0.1, 0.0), "c", (0.0, 0.3), 30.0, 0.0, 0.2))
    return system


def test_constraint_terms_match_finite_differences():
    system = chain_with_all_constraints()
    rng = np.random.default_rng(3)
    q, qd, qdd, t = rng.normal(size=9), rng.normal(size=9), rng.normal(size=9), 0.7
    h = 1e-5
    eye = np.eye(9)
    fd_jac = np.stack(
        [
            (system.residual(q + h * eye[k], t) - system.residual(q - h * eye[k], t)) / (2 * h)
            for k in range(9)
        ],
        axis=1,
    )
    np.testing.assert_allclose(system.jacobian(q, t), fd_jac, atol=1e-8)
    fd_t = (system.residual(q, t + h) - system.residual(q, t - h)) / (2 * h)
    np.testing.assert_allclose(system.partial_t(t), fd_t, atol=1e-8)
    # Along q(τ) = q + qd τ + qdd τ²/2: C̈ = C_q q̈ − Q_d at τ = 0.
    h = 1e-3
    path = np.array([system.residual(q + qd * s + qdd * s**2 / 2, t + s) for s in h * np.arange(-4, 5)])
    c_ddot = stencil(path, D2, h, 2)[0]
    np.testing.assert_allclose(system.gamma(q, qd, t), system.jacobian(q, t) @ qdd - c_ddot, atol=1e-7)


def test_mass_matrix_forces_and_energy_are_consistent():
    system = chain_with_all_constraints()
    rng = np.random.default_rng(4)
    q, qd = rng.normal(size=9), rng.normal(size=9)
    M = system.mass_matrix(q)
    np.testing.assert_allclose(M, M.T)
    assert system.kinetic_energy(q, qd) == pytest.approx(0.5 * qd @ M @ qd, rel=1e-13)
    # Lagrange: Q_v = ∂T/∂q − Ṁ q̇.
    h = 1e-6
    eye = np.eye(9)
    dT = np.array(
        [
            (system.kinetic_energy(q + h * eye[k], qd) - system.kinetic_energy(q - h * eye[k], qd)) / (2 * h)
            for k in range(9)
        ]
    )
    Mdot = (system.mass_matrix(q + h * qd) - system.mass_matrix(q - h * qd)) / (2 * h)
    np.testing.assert_allclose(system.quadratic_velocity_forces(q, qd), dT - Mdot @ qd, atol=1e-7)
    # Conservative forces (gravity + undamped spring) are −∂V/∂q.
    dV = np.array(
        [
            (system.potential_energy(q + h * eye[k]) - system.potential_energy(q - h * eye[k])) / (2 * h)
            for k in range(9)
        ]
    )
    np.testing.assert_allclose(system.applied_forces(q, qd), -dV, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# Errors.
def dead_centre_slider_crank(slider_x: float):
    """Slider-crank without offset driven by the slider position (singular at the dead centre)."""
    system = PlanarSystem()
    crank = system.add_body(Body("crank", 1.0, 0.01))
    rod = system.add_body(Body("rod", 1.0, 0.05))
    slider = system.add_body(Body("slider", 1.0, 0.01))
    system.add_constraint(Revolute(GROUND, (0.0, 0.0), crank, (0.0, 0.0)))
    system.add_constraint(Revolute(crank, (R_SC, 0.0), rod, (0.0, 0.0)))
    system.add_constraint(Revolute(rod, (L_SC, 0.0), slider, (0.0, 0.0)))
    system.add_constraint(Prismatic(GROUND, (0.0, 0.0), slider, (0.0, 0.0)))
    system.add_constraint(DrivenCoordinate(slider, (0.0, 0.0), (1.0, 0.0), Motion.constant(slider_x)))
    return system


DEAD_CENTRE = np.array([0.0, 0.0, 0.0, R_SC, 0.0, 0.0, R_SC + L_SC, 0.0, 0.0])


def test_singular_configuration_is_reported():
    system = dead_centre_slider_crank(R_SC + L_SC)
    assert np.abs(system.residual(DEAD_CENTRE)).max() == 0.0
    with pytest.raises(SingularJacobianError, match="condition number") as info:
        solve_velocity(system, DEAD_CENTRE)
    assert "q = [" in str(info.value) and "t = 0" in str(info.value)
    assert info.value.condition > 1e10
    np.testing.assert_array_equal(info.value.q, DEAD_CENTRE)
    # Too few Newton iterations from a poor guess.
    driven, _, _ = pendulum(Motion.constant(0.5))
    with pytest.raises(ConvergenceError, match=r"after 1 step\(s\): ‖C‖∞ = .* last q = \[") as info:
        solve_position(driven, [0.0, 0.0, 2.5], max_iter=1)
    assert info.value.residual > 1e-12


def test_invalid_use_is_rejected():
    system, _, _ = pendulum()
    with pytest.raises(ValueError, match="1 undriven degrees of freedom"):
        kinematic_analysis(system, [0.0, 0.0, 0.0], [0.0])
    with pytest.raises(ValueError, match="inconsistent initial state"):
        simulate(system, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="unknown body 'arm'"):
        system.add_constraint(FixedAngle(GROUND, "arm", 0.0))
    with pytest.raises(ValueError, match="inertia"):
        Body("bad", 1.0, -1.0)
