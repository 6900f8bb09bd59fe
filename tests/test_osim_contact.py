"""Contact: OpenSim's ``SmoothSphereHalfSpaceForce`` as ``smooth_sphere_half_space`` loads — the law's limits
in closed form, the generalized forces by finite differences, forward simulation, the model-file form, the
import from ``.osim`` files and the agreement with OpenSim 4.6 (stored data of
``validation/opensim/compare_contact.py``)."""

from __future__ import annotations

import gzip
import hashlib
import math
import re

import numpy as np
import pytest
from scipy.optimize import brentq

import mbkron
from mbkron import cli
from mbkron.core.errors import ModelError
from mbkron.algorithms.dynamics.contact import contact_state
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.multibody.hunt_crossley import ContactSurface, HuntCrossley
from mbkron.io import dump_model, model_differences, parse_model_file
from validation.opensim import compare_contact

DATA = compare_contact.DATA


def _stored(name: str, tmp_path):
    path = tmp_path / f"{name}.osim"
    path.write_bytes(gzip.decompress((DATA / f"{name}.osim.gz").read_bytes()))
    return path


def _planar_model(contact=None, *, mass=2.0):
    """A body moving in the x-y plane (x, y, then the angle a about z) with its mass centre at the origin."""
    b = mbkron.ModelBuilder("puck", gravity=(0, -9.81, 0))
    b.add_coordinate("x", range=(-1, 1)).add_coordinate("y", range=(-1, 1)).add_coordinate("a", range=(-3, 3))
    b.add_body("slide", parent="ground", joint="prismatic", axis=(1, 0, 0), variable="x")
    b.add_body("lift", parent="slide", joint="prismatic", axis=(0, 1, 0), variable="y")
    b.add_body("puck", parent="lift", joint="revolute", axis=(0, 0, 1), variable="a", mass=mass,
               inertia=(0.01, 0.01, 0.01))
    if contact is not None:
        b.add_load(contact)
    return b.build()


def _contact(**parameters):
    values = dict(name="foot", sphere_body="puck", sphere_center=(0.1, -0.05, 0.02), radius=0.04,
                  half_space_body="ground", half_space_point=(0.0, -0.3, 0.0),
                  half_space_normal=(math.sin(0.2), math.cos(0.2), 0.0))
    return SmoothSphereHalfSpace(**{**values, **parameters})


def _hertz(load, delta):
    """The Hertz force without smoothing: (4/3) k √(r k) δ^{3/2}, k = E^{2/3}/2."""
    k = 0.5 * load.stiffness ** (2 / 3)
    return 4 / 3 * k * math.sqrt(load.radius * k) * delta ** 1.5


# ---------------------------------------------------------------------- the law
def test_elastic_contact_is_the_gradient_of_the_hertz_energy():
    """Without dissipation, friction and smoothing (c_f → 1e-30, b_d large), Q = −∂U/∂q with the Hertz
    energy U = (8/15) k √(r k) δ^{5/2} of the indentation δ = r − (c − o)·n̂ (tilted plane, a sphere off the
    body's origin): the contact point, the normal and the virtual work (Eq. 46) together, checked by central
    differences of the energy; the force is along the plane's normal with the Hertz magnitude."""
    load = _contact(stiffness=2e6, constant_contact_force=1e-30, hertz_smoothing=1e6)
    model = _planar_model(load)
    normal = np.array(load.half_space_normal)

    def indentation(q):
        T = model.kinematics(q, 0).T[model.body_index("puck")]
        center = T[:3, :3] @ load.sphere_center + T[:3, 3]
        return load.radius - (center - load.half_space_point) @ normal

    def energy(q):
        delta = indentation(q)
        return 0.4 * _hertz(load, delta) * delta if delta > 0 else 0.0

    rng = np.random.default_rng(3)
    for _ in range(5):
        q = np.array([rng.uniform(-0.2, 0.2), 0.0, rng.uniform(-1, 1)])
        q[1] += (indentation(q) - rng.uniform(1e-3, 1e-2)) / normal[1]  # dδ/dy = −n̂_y: aim at a drawn δ
        delta = indentation(q)
        assert delta > 0
        h = 1e-7
        expected = [-(energy(q + h * e) - energy(q - h * e)) / (2 * h) for e in np.eye(3)]
        np.testing.assert_allclose(model.applied_forces(q, np.zeros(3), loads=(load,)), expected, rtol=1e-6)
        state = contact_state(model, load, model.kinematics(q, 1), np.zeros(3))
        np.testing.assert_allclose(state.force, -_hertz(load, delta) * normal, rtol=1e-12)
        np.testing.assert_allclose(state.indentation, delta, rtol=1e-12)


def test_friction_and_damping_in_their_limits():
    """A sphere sliding fast along the plane (|v_t| ≫ v_tr): friction μ_d f + μ_v |v_t| f against the slip;
    slowly (|v_t| ≪ v_tr, c_f tiny): f (μ_d + 2(μ_s − μ_d)) |v_t|/v_tr, static-like, growing with the slip;
    and a Hunt–Crossley factor 1 + (3/2) c v_n for a normal speed well above −2/(3c)."""
    base = dict(stiffness=1e6, dissipation=0.5, static_friction=0.9, dynamic_friction=0.6, viscous_friction=0.2,
                transition_velocity=0.1, constant_contact_force=1e-16, hertz_smoothing=1e5,
                hunt_crossley_smoothing=1e3, half_space_normal=(0.0, 1.0, 0.0), sphere_center=(0.0, 0.0, 0.0))
    load = _contact(**base)
    model = _planar_model(load)
    delta = 0.004
    q = np.array([0.0, -0.3 + load.radius - delta, 0.0])
    f_elastic = _hertz(load, delta)
    for qd, slip in (([2.0, 0.0, 0.0], 2.0), ([1e-3, 0.0, 0.0], 1e-3)):
        state = contact_state(model, load, model.kinematics(q, 1), np.array(qd))
        assert state.indentation == pytest.approx(delta, rel=1e-12)
        np.testing.assert_allclose(state.velocity, [slip, 0, 0], atol=1e-15)
        ratio = slip / load.transition_velocity
        mu = min(ratio, 1) * (0.6 + 2 * 0.3 / (1 + ratio ** 2)) + 0.2 * slip
        np.testing.assert_allclose(state.force, [mu * f_elastic, -f_elastic, 0.0], rtol=1e-9)
    # the sphere moving down at 0.2 m/s: v_n = v·n = 0.2 with n = −ŷ (compressing)
    state = contact_state(model, load, model.kinematics(q, 1), np.array([0.0, -0.2, 0.0]))
    np.testing.assert_allclose(state.force, [0.0, -f_elastic * (1 + 1.5 * 0.5 * 0.2), 0.0], rtol=1e-9)
    # the generalized force of a fast slide: the friction drags x back, the normal force lifts y
    Q = model.applied_forces(q, np.array([2.0, 0.0, 0.0]), loads=(load,))
    assert Q[0] < 0 < Q[1]


def test_generalized_forces_by_finite_differences_of_the_contact_points():
    """Q = Σ_b (∂x_b/∂q)ᵀ F_b over the two bodies' material points at the contact point p (the sphere body
    −F, the half-space body F), the Jacobians by central differences of T_b(q) (T_b⁻¹ p), for a half-space on
    a moving body touching a sphere on another, with friction and dissipation at random states."""
    b = mbkron.ModelBuilder("two")
    b.add_coordinate("a", range=(-3, 3)).add_coordinate("s", range=(-1, 1)).add_coordinate("c", range=(-3, 3))
    b.add_body("arm", parent="ground", joint="revolute", axis=(0, 0, 1), variable="a", mass=1.0, inertia=(1, 1, 1))
    b.add_body("rail", parent="arm", joint="prismatic", axis=(0.6, 0.8, 0.0), variable="s", mass=1.0,
               inertia=(1, 1, 1))
    b.add_body("plate", parent="ground", joint="revolute", axis=(1, 0, 0), variable="c", mass=1.0, inertia=(1, 1, 1))
    load = SmoothSphereHalfSpace("touch", "rail", (0.3, 0.1, -0.05), 0.06, "plate", (0.0, 0.02, 0.1),
                                 (0.0, 0.6, 0.8), stiffness=5e5, dissipation=1.0, static_friction=0.8,
                                 dynamic_friction=0.5, viscous_friction=0.1, transition_velocity=0.2)
    b.add_load(load)
    model = b.build()
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-0.5, 0.5, (6, 3)), rng.normal(size=(6, 3))
    kin = model.kinematics(q, 1)
    state = contact_state(model, load, kin, qd)
    Q = model.applied_forces(q, qd)
    for k in range(len(q)):
        expected = np.zeros(3)
        for body, sign in (("rail", -1.0), ("plate", 1.0)):
            i = model.body_index(body)
            local = np.linalg.solve(kin.T[k, i], np.append(state.point[k], 1.0))
            h = 1e-6
            J = np.column_stack([(model.kinematics(q[k] + h * e, 0).T[i] @ local
                                  - model.kinematics(q[k] - h * e, 0).T[i] @ local)[:3] / (2 * h) for e in np.eye(3)])
            expected += J.T @ (sign * state.force[k])
            if body == "rail":
                v_sphere = J @ qd[k]
            else:
                v_plate = J @ qd[k]
        np.testing.assert_allclose(Q[k], expected, rtol=1e-7, atol=1e-7 * np.abs(expected).max())
        np.testing.assert_allclose(state.velocity[k], v_sphere - v_plate, rtol=1e-7, atol=1e-9)


def test_a_dropped_ball_comes_to_rest_where_the_contact_carries_its_weight():
    """Forward simulation: a 2 kg puck dropped onto a level floor (no friction needed) settles, damped by the
    Hunt–Crossley dissipation, at the indentation where the smooth Hertz force equals m g (a scalar root)."""
    load = _contact(stiffness=1e6, dissipation=2.0, half_space_normal=(0.0, 1.0, 0.0), sphere_center=(0, 0, 0))
    model = _planar_model(load)
    result = mbkron.simulate(model, (0.0, 1.5), [0.0, -0.3 + load.radius + 0.02, 0.0], rtol=1e-8, atol=1e-10)
    k = 0.5 * load.stiffness ** (2 / 3)

    def force(delta):
        smooth = (delta ** 2 + load.constant_contact_force) ** 0.75 * (0.5 + 0.5 * math.tanh(load.hertz_smoothing * delta))
        return 4 / 3 * k * math.sqrt(load.radius * k) * smooth - 2.0 * 9.81

    delta = brentq(force, 0.0, 0.05, xtol=1e-15)
    final = contact_state(model, load, model.kinematics(result.q[-1], 1), result.qd[-1])
    assert abs(result.qd[-1]).max() < 1e-6
    assert final.indentation == pytest.approx(delta, rel=1e-6)


def _two_sliders(load):
    """Two bodies sliding along y (coordinates ya, yb) and along x (xa, xb) each."""
    b = mbkron.ModelBuilder("sliders")
    for name in ("a", "b"):
        b.add_coordinate(f"x{name}", range=(-2, 2)).add_coordinate(f"y{name}", range=(-2, 2))
        b.add_body(f"slide_{name}", parent="ground", joint="prismatic", axis=(1, 0, 0), variable=f"x{name}")
        b.add_body(name, parent=f"slide_{name}", joint="prismatic", axis=(0, 1, 0), variable=f"y{name}", mass=1.0,
                   inertia=(0.1, 0.1, 0.1))
    b.add_load(load)
    return b.build()


def test_hunt_crossley_pairs_are_the_gradient_of_the_hertz_energy():
    """Without dissipation and friction, a Hunt–Crossley set's generalized force is −∂U/∂q with
    U = (8/15) k^{3/2} √R δ^{5/2} per touching pair, k = k₁k₂/(k₁ + k₂), kᵢ = Eᵢ^{2/3} (two spheres of
    different stiffness, R = r₁r₂/(r₁ + r₂), δ = r₁ + r₂ − |c₂ − c₁|; and each sphere on a floor, R = r),
    by central differences of the energy; apart, no force."""
    E = (4e6, 9e5, 2e6)
    surfaces = (ContactSurface("sphere", "a", (0.0, 0.0, 0.0), radius=0.05, stiffness=E[0]),
                ContactSurface("sphere", "b", (0.0, 0.0, 0.0), radius=0.08, stiffness=E[1]),
                ContactSurface("half_space", "ground", (0.0, -0.5, 0.0), normal=(0.0, 1.0, 0.0), stiffness=E[2]))
    load = HuntCrossley("hc", surfaces)
    model = _two_sliders(load)

    def energy(q):
        xa, ya, xb, yb = q
        total = 0.0
        for (r1, k1), (r2, k2), delta in (((0.05, E[0]), (0.08, E[1]), 0.13 - math.hypot(xb - xa, yb - ya)),
                                          ((0.05, E[0]), (math.inf, E[2]), 0.05 - (ya + 0.5)),
                                          ((0.08, E[1]), (math.inf, E[2]), 0.08 - (yb + 0.5))):
            if delta > 0:
                k1, k2 = k1 ** (2 / 3), k2 ** (2 / 3)
                k, R = k1 * k2 / (k1 + k2), (r1 if r2 == math.inf else r1 * r2 / (r1 + r2))
                total += 8 / 15 * k ** 1.5 * math.sqrt(R) * delta ** 2.5
        return total

    for q in ([0.0, -0.453, 0.12, -0.43], [0.0, -0.2, 0.1, -0.15], [0.0, 0.3, 0.5, 0.3]):
        q = np.array(q)
        h = 1e-8
        expected = [-(energy(q + h * e) - energy(q - h * e)) / (2 * h) for e in np.eye(4)]
        np.testing.assert_allclose(model.applied_forces(q, np.zeros(4)), expected, rtol=1e-6,
                                   atol=1e-9 * max(1.0, np.abs(expected).max()))
    assert np.abs(model.applied_forces(np.array([0.0, -0.453, 0.12, -0.43]), np.zeros(4))).min() > 0


def test_hunt_crossley_stops_at_a_pair_without_force_as_simbody_does():
    """Two spheres on a floor: sphere a rises fast (v_n = −2 m/s < −2/(3c), so f ≤ 0). Simbody visits the pairs
    in the order of the sweep along the axis of the largest spread (here x): the floor (extent from −∞) with
    the sphere whose extent starts first, then with the other. With sphere a first, its f ≤ 0 ends the loop
    and sphere b's contact applies nothing; with sphere a second, b's force (f_H(1 + 1.5 c v_n), v_n = 0) acts."""
    surfaces = (ContactSurface("half_space", "ground", (0.0, -0.5, 0.0), normal=(0.0, 1.0, 0.0), stiffness=1e6,
                               dissipation=1.0),
                ContactSurface("sphere", "a", (0.0, 0.0, 0.0), radius=0.05, stiffness=1e6, dissipation=1.0),
                ContactSurface("sphere", "b", (0.0, 0.0, 0.0), radius=0.05, stiffness=1e6, dissipation=1.0))
    model = _two_sliders(HuntCrossley("hc", surfaces))
    k = (1e6 ** (2 / 3)) / 2
    f_b = 4 / 3 * k * 0.004 * math.sqrt(0.05 * k * 0.004)
    qd = np.array([0.0, 2.0, 0.0, 0.0])
    first = model.applied_forces(np.array([-1.0, -0.454, 1.0, -0.454]), qd)  # a's extent starts first along x
    second = model.applied_forces(np.array([1.0, -0.454, -1.0, -0.454]), qd)
    np.testing.assert_array_equal(first, 0.0)
    np.testing.assert_allclose(second, [0.0, 0.0, 0.0, f_b], rtol=1e-12)


# ---------------------------------------------------------------------- checks and the model file
@pytest.mark.parametrize("change, fragment", [
    (dict(radius=0.0), "`radius` must be a finite positive number"),
    (dict(stiffness=-1.0), "`stiffness` must be a finite non-negative number"),
    (dict(transition_velocity=0.0), "`transition_velocity` must be a finite positive number"),
    (dict(half_space_normal=(0.0, 2.0, 0.0)), "`half_space_normal` must be a unit vector"),
    (dict(sphere_center=(0.0, 1.0)), "`sphere_center` must be 3 finite numbers"),
    (dict(half_space_body="nowhere"), "`half_space_body` names unknown body 'nowhere'"),
    (dict(half_space_body="puck"), "`sphere_body` and `half_space_body` are both 'puck'"),
])
def test_bad_contacts_are_refused_naming_the_field(change, fragment):
    with pytest.raises(ModelError, match=re.escape(fragment)):
        _planar_model(_contact(**change))


def test_hunt_crossley_model_file_round_trip():
    """dump_model writes a ``hunt_crossley`` table with ``[[loads.surfaces]]`` that reads back equal; a changed
    surface parameter is a difference; a bad surface is a ModelError naming it."""
    surfaces = (ContactSurface("sphere", "a", (0.0, 0.01, 0.0), radius=0.05, stiffness=4e6, dissipation=0.2,
                               static_friction=0.8, dynamic_friction=0.5, viscous_friction=0.1),
                ContactSurface("half_space", "ground", (0.0, -0.5, 0.0), normal=(0.0, 1.0, 0.0), stiffness=1e6))
    model = _two_sliders(HuntCrossley("hc", surfaces, transition_velocity=0.02))
    text = dump_model(model)
    assert 'type = "hunt_crossley"' in text and "[[loads.surfaces]]" in text
    assert model_differences(model, parse_model_file(text).model) == []
    changed = parse_model_file(text.replace("static_friction = 0.8", "static_friction = 0.7")).model
    assert any("surfaces" in m for m in model_differences(model, changed))
    with pytest.raises(ModelError, match=re.escape("loads[0].surfaces[1].normal")):
        parse_model_file(text.replace("normal = [0.0, 1.0, 0.0]", "normal = [0.0, 1.0]"))
    with pytest.raises(ModelError, match=re.escape("`surfaces[0]` `stiffness` must be a finite positive number")):
        _two_sliders(HuntCrossley("hc", (ContactSurface("sphere", "a", (0, 0, 0), radius=0.05), surfaces[1])))


def test_model_file_round_trip():
    """dump_model writes a ``smooth_sphere_half_space`` table (every parameter) that reads back equal;
    a changed parameter is a difference."""
    model = _planar_model(_contact(stiffness=3e6, dissipation=2.0, static_friction=0.8))
    text = dump_model(model)
    assert 'type = "smooth_sphere_half_space"' in text
    again = parse_model_file(text).model
    assert model_differences(model, again) == []
    changed = parse_model_file(text.replace("hertz_smoothing = 300.0", "hertz_smoothing = 200.0")).model
    assert any("hertz_smoothing" in m for m in model_differences(model, changed))


# ---------------------------------------------------------------------- import
def test_moco_2d_walking_model_imports_its_contacts_and_converts(tmp_path):
    """Moco's 2-D walking model: the 4 SmoothSphereHalfSpaceForces of its model components (heel and toe
    spheres of both feet against the floor, whose orientation −90° about z makes its outward normal +y) with
    their parameters; `mbkron convert` writes it, and it reads back equal."""
    path = _stored("moco_2D_gait", tmp_path)
    model = mbkron.load_model(path)
    assert [load.name for load in model.loads] == ["contactHeel_r", "contactHeel_l", "contactFront_r", "contactFront_l"]
    heel = model.loads[0]
    assert (heel.sphere_body, heel.radius, heel.half_space_body) == ("calcn_r", 0.035, "ground")
    np.testing.assert_allclose(heel.sphere_center, [0.031307527581931796, 0.010435842527310599, 0.0], rtol=0)
    np.testing.assert_allclose(heel.half_space_normal, [0.0, 1.0, 0.0], atol=1e-15)
    assert (heel.stiffness, heel.dissipation, heel.static_friction, heel.dynamic_friction, heel.viscous_friction,
            heel.transition_velocity, heel.constant_contact_force, heel.hertz_smoothing, heel.hunt_crossley_smoothing) \
        == (3067776.0, 2.0, 0.8, 0.8, 0.5, 0.2, 1e-5, 300.0, 50.0)
    out = tmp_path / "model.toml"
    assert cli.main(["convert", str(path), "-o", str(out)]) == 0
    assert model_differences(model, mbkron.load_model(out)) == []


_BALL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m">
  <Ground name="ground"/>
  <BodySet><objects>
    <Body name="ball"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet><objects>
    <SliderJoint name="drop"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/ball</socket_child_frame>
      <coordinates><Coordinate name="h"><range>-1 1</range></Coordinate></coordinates>
    </SliderJoint>
  </objects></JointSet>
  <ForceSet><objects>FORCES</objects></ForceSet>
  <ContactGeometrySet><objects>
    <ContactSphere name="s"><socket_frame>/bodyset/ball</socket_frame><radius>0.1</radius><location>0 0.1 0</location></ContactSphere>
    <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 -0.2 0</location>
      <orientation>0 0 -1.5707963267948966</orientation></ContactHalfSpace>
    <ContactSphere name="unused"><socket_frame>/ground</socket_frame><radius>0.1</radius></ContactSphere>
  </objects></ContactGeometrySet>
</Model></OpenSimDocument>
"""
_SMOOTH = "<SmoothSphereHalfSpaceForce name=\"c\"><socket_sphere>/contactgeometryset/s</socket_sphere>" \
          "<socket_half_space>/contactgeometryset/floor</socket_half_space>EXTRA</SmoothSphereHalfSpaceForce>"


_HC = "<HuntCrossleyForce name=\"hc\"><HuntCrossleyForce::ContactParametersSet><objects>" \
      "<HuntCrossleyForce::ContactParameters><geometry>floor s</geometry><stiffness>STIFFNESS</stiffness>" \
      "<dissipation>0.5</dissipation></HuntCrossleyForce::ContactParameters></objects>" \
      "</HuntCrossleyForce::ContactParametersSet></HuntCrossleyForce>"


def _import(forces: str, tmp_path):
    path = tmp_path / "ball.osim"
    path.write_text(_BALL.replace("FORCES", forces))
    return mbkron.load_model(path)


def test_import_reads_opensim_defaults_and_lists_unused_geometry(tmp_path):
    """Missing parameters take OpenSim 4.6's defaults; the half-space's location is a point of its plane and
    its frame's −x axis the outward normal; the converted file's header lists the unused sphere."""
    model = _import(_SMOOTH.replace("EXTRA", ""), tmp_path)
    load = model.loads[0]
    assert load == SmoothSphereHalfSpace("c", "ball", [0.0, 0.1, 0.0], 0.1, "ground", [0.0, -0.2, 0.0],
                                         load.half_space_normal)
    np.testing.assert_allclose(load.half_space_normal, [0.0, 1.0, 0.0], atol=1e-15)
    out = tmp_path / "ball.toml"
    assert cli.main(["convert", str(tmp_path / "ball.osim"), "-o", str(out)]) == 0
    assert "1 element(s) of <ContactGeometrySet> that no contact force uses" in out.read_text()


@pytest.mark.parametrize("forces, fragment", [
    ("<HuntCrossleyForce name=\"hc\"/>", "expected at least 2 contact geometries in its contact parameters, got 0"),
    (_HC.replace("STIFFNESS", "0"), "ContactParameters/stiffness: expected a positive number, got 0.0"),
    (_HC.replace("STIFFNESS", "1e6").replace("floor s", "floor nothing"),
     "expected the name of an element of the ContactGeometrySet, got 'nothing'"),
    ("<ElasticFoundationForce name=\"ef\"/>", "the contact forces SmoothSphereHalfSpaceForce and HuntCrossleyForce; "
                                            "mbkron cannot import ElasticFoundationForce yet"),
    (_SMOOTH.replace("/contactgeometryset/s<", "/contactgeometryset/nothing<").replace("EXTRA", ""),
     "expected the path of an element of the ContactGeometrySet, got '/contactgeometryset/nothing'"),
    (_SMOOTH.replace("/contactgeometryset/s<", "/contactgeometryset/floor<").replace("EXTRA", ""),
     "expected a ContactSphere, got the ContactHalfSpace 'floor'"),
    (_SMOOTH.replace("EXTRA", "<stiffness>-1</stiffness>"), "expected a non-negative number, got -1.0"),
    (_SMOOTH.replace("EXTRA", "<transition_velocity>0</transition_velocity>"), "expected a positive number, got 0.0"),
])
def test_import_errors_name_the_element(forces, fragment, tmp_path):
    with pytest.raises(ModelError) as error:
        _import(forces, tmp_path)
    assert fragment in str(error.value)


def test_hunt_crossley_import_reads_each_geometry_with_its_parameters(tmp_path):
    """A HuntCrossleyForce's geometries become surfaces with their ContactParameters' values (OpenSim's defaults
    0 where missing; transition velocity 0.01); the converted file reads back equal."""
    model = _import(_HC.replace("STIFFNESS", "1e6"), tmp_path)
    (load,) = model.loads
    assert isinstance(load, HuntCrossley) and load.transition_velocity == 0.01
    floor, sphere = load.surfaces
    assert (floor.shape, floor.body, sphere.shape, sphere.body, sphere.radius) == ("half_space", "ground", "sphere", "ball", 0.1)
    np.testing.assert_allclose(floor.normal, [0, 1, 0], atol=1e-15)
    assert (sphere.stiffness, sphere.dissipation, sphere.static_friction) == (1e6, 0.5, 0.0)
    out = tmp_path / "ball.toml"
    assert cli.main(["convert", str(tmp_path / "ball.osim"), "-o", str(out)]) == 0
    assert model_differences(model, mbkron.load_model(out)) == []


# ---------------------------------------------------------------------- agreement with OpenSim 4.6
@pytest.mark.parametrize("name", compare_contact.MODELS)
def test_contact_forces_agree_with_opensim(name, tmp_path):
    """The generalized force of each contact (and, of a smooth contact, the spatial forces on both bodies)
    equals OpenSim 4.6's to 1e-10 relative at every (state, contact) pair with a force whose switch product w
    is at least 1e-5 (at least 200 per model; of a smooth contact at least 60 penetrating, touching and
    separated each), and everywhere within 1e-10·(1e-5/w) relative where OpenSim's own rounding of its tanh
    switches (≈ 1.1e-16/w) allows no better; where OpenSim's force is 0 (a Hunt–Crossley set apart), so is
    mbkron's (to 1e-10 of its own)."""
    data = compare_contact.stored(name)
    path = _stored(name, tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == data["sha256"]
    found = compare_contact.deviations(data, path)
    smooth = all(label.startswith("SmoothSphereHalfSpaceForce") for label in data["elements"])
    assert set(found) == ({"records", "Q"} if smooth else {"Q"})
    for label, values in found.items():
        switched = (values["w"] >= compare_contact.SWITCHED) & (values["scale"] > 0)
        assert switched.sum() >= 200
        for kind in compare_contact.REGIMES:
            assert (values["regime"] == kind).sum() >= 10
            assert not smooth or (switched & (values["regime"] == kind)).sum() >= 60
        assert (values["error"][switched] <= 1e-10 * values["scale"][switched]).all(), label
        assert values["ratio"].max() <= 1.0, label


def test_the_stored_states_exercise_every_branch(tmp_path):
    """At the stored states of each model with smooth contacts, friction is in both regimes (slip below and
    above the transition velocity) and the Hunt–Crossley switch on both sides (v_n above and below −2/(3c)),
    in contact."""
    for name in compare_contact.MODELS[:3]:
        data = compare_contact.stored(name)
        model = mbkron.load_model(_stored(name, tmp_path))
        q = np.reshape(data["q"], (-1, len(model.coordinates)))
        qd = np.reshape(data["qd"], q.shape)
        kin = model.kinematics(q, 1)
        for load in model.loads:
            state = contact_state(model, load, kin, qd)
            touching = state.indentation > -2e-3
            vn = np.einsum("...x,...x->...", state.velocity, state.normal)
            slip = np.linalg.norm(state.velocity - vn[:, None] * state.normal, axis=-1)
            assert (slip[touching] < load.transition_velocity).any() and (slip[touching] > load.transition_velocity).any()
            assert ((vn + 2 / (3 * load.dissipation))[touching] < 0).any()
            assert ((vn + 2 / (3 * load.dissipation))[touching] > 0).any()


def test_live_opensim_reference_equals_the_stored_one(tmp_path):
    pytest.importorskip("opensim")
    name = compare_contact.CONTACT_MODEL
    live = compare_contact.reference(name, _stored(name, tmp_path))
    data = compare_contact.stored(name)
    np.testing.assert_allclose(live["records"], data["records"], rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(live["generalized_forces"], data["generalized_forces"], rtol=1e-11, atol=1e-11)


def test_info_describes_contact_loads(tmp_path, capsys):
    """`mbkron info` prints one readable line per contact load (not its repr)."""
    path = _stored("moco_2D_gait", tmp_path)
    assert cli.main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "smooth contact contactHeel_r: sphere on calcn_r at (0.0313075, 0.0104358, 0) m, radius 0.035 m ↔ " \
           "half-space on ground" in out
    _import(_HC.replace("STIFFNESS", "1e6"), tmp_path)
    assert cli.main(["info", str(tmp_path / "ball.osim")]) == 0
    assert "Hunt–Crossley contact hc among a half-space on ground, a sphere on ball; transition velocity 0.01 m/s" \
        in capsys.readouterr().out
