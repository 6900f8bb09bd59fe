"""The Hill-type musculotendon model (Thelen 2003 as OpenSim's Thelen2003Muscle) against published
values and properties derived by hand from the paper's equations."""

from __future__ import annotations

import numpy as np
import pytest

from mbkron.algorithms.muscles import hill
from mbkron.multibody.muscles.hill import HillParameters, ThelenCurves

CURVES = ThelenCurves()
DELT1 = HillParameters(1142.6, 0.0976, 0.093, np.radians(22.0))


def test_active_force_length_gaussian():
    # Thelen 2003 Eq. 3: peak 1 at l̃ = 1, e⁻¹ at l̃ = 1 ± √γ
    np.testing.assert_allclose(hill.active_force_length([1.0, 1 - np.sqrt(0.45), 1 + np.sqrt(0.45)]),
                               [1.0, np.exp(-1), np.exp(-1)], rtol=1e-15)


def test_passive_force_length_normalisation():
    # Eq. 4 is normalised so that f_PE = 1 at the strain ε₀ᴹ = 0.6; zero at and below optimal length
    np.testing.assert_allclose(hill.passive_force_length([0.5, 1.0, 1.6]), [0.0, 0.0, 1.0], atol=1e-15)
    x = 1.3
    assert hill.passive_force_length(x) == pytest.approx((np.exp(5 * 0.3 / 0.6) - 1) / (np.exp(5) - 1), rel=1e-15)


def test_tendon_curve_published_constants_and_continuity():
    e0 = CURVES.tendon_strain_at_fmax
    # the paper's rounded constants: ε_toe = 0.609 ε₀, k_lin = 1.712/ε₀
    assert CURVES.toe_strain == pytest.approx(0.609 * e0, rel=1e-3)
    assert CURVES.linear_stiffness == pytest.approx(1.712 / e0, rel=1e-3)
    toe = CURVES.toe_strain
    below, above = hill.tendon_force_strain([toe * (1 - 1e-9), toe * (1 + 1e-9)])
    assert below == pytest.approx(0.33, rel=1e-8) and above == pytest.approx(0.33, rel=1e-8)
    # slope continuity at the toe (the condition that fixes ε_toe): F_toe k_toe e³/((e³ − 1) ε_toe) = k_lin
    assert 0.33 * 3 * np.exp(3) / ((np.exp(3) - 1) * toe) == pytest.approx(CURVES.linear_stiffness, rel=1e-13)
    # f_T(ε₀) = 1 and no force in compression
    np.testing.assert_allclose(hill.tendon_force_strain([e0, 0.0, -0.1]), [1.0, 0.0, 0.0], atol=1e-14)


def test_force_velocity_thelen_eq6_values():
    # a = 1, F̄ = 0.5 (concentric): b = 1 + 0.5/0.25 = 3, ṽ = (0.5 − 1)/3 = −1/6
    assert hill.force_velocity(-1 / 6, 1.0) == pytest.approx(0.5, rel=1e-14)
    # a = 1, F̄ = 1.4 (eccentric): b = (2 + 8)(1.8 − 1.4)/0.8 = 5, ṽ = 0.4/5 = 0.08
    assert hill.force_velocity(0.08, 1.0) == pytest.approx(1.4, rel=1e-14)
    # isometric, and zero force at ṽ = −(0.25 + 0.75 a)
    np.testing.assert_allclose(hill.force_velocity([0.0, 0.0, -1.0, -0.625], [1.0, 0.3, 1.0, 0.5]), [1, 1, 0, 0],
                               atol=1e-15)


@pytest.mark.parametrize("activation", [0.05, 0.4, 1.0])
def test_force_velocity_inverts_thelen_relation_in_every_region(activation):
    velocities = np.linspace(-1.5, 2.0, 301)  # concentric, eccentric and both extrapolations
    force = hill.force_velocity(velocities, activation)
    assert np.all(np.diff(force) > 0), "monotone"
    back = hill.fiber_velocity_from_force(force * activation * 0.8, activation, 0.8)
    np.testing.assert_allclose(back, velocities, rtol=0, atol=1e-12)


def test_pennation_keeps_fibre_height():
    fibre = np.array([0.06, 0.0976, 0.15])
    phi = hill.pennation(fibre, DELT1)
    np.testing.assert_allclose(fibre * np.sin(phi), 0.0976 * np.sin(np.radians(22.0)), rtol=1e-14)


def test_rigid_tendon_isometric_force_at_optimal_length():
    length = DELT1.tendon_slack_length + DELT1.optimal_fiber_length * np.cos(DELT1.pennation_angle)
    force = hill.rigid_tendon_force(1.0, length, 0.0, [DELT1])
    assert force[0] == pytest.approx(1142.6 * np.cos(np.radians(22.0)), rel=1e-13)
    assert hill.rigid_tendon_force(1.0, 0.05, 0.0, [DELT1])[0] == 0.0  # slack tendon


def test_compliant_tendon_equilibrium():
    params = [DELT1, HillParameters(500.0, 0.1, 0.2, 0.0)]
    lengths = np.array([0.19, 0.31])
    activation = np.array([0.6, 0.9])
    fibre = hill.equilibrium_fiber_length(activation, lengths, params)
    np.testing.assert_allclose(hill.fiber_velocity(activation, fibre, lengths, params), 0.0, atol=1e-9)
    cos_phi = np.cos(hill.pennation(fibre, params))
    l_norm = fibre / np.array([0.0976, 0.1])
    muscle = (activation * hill.active_force_length(l_norm) + hill.passive_force_length(l_norm)) * cos_phi
    np.testing.assert_allclose(hill.compliant_tendon_force(fibre, lengths, params) / [1142.6, 500.0], muscle,
                               rtol=1e-10)


def test_activation_dynamics_time_constants():
    # Thelen 2003 Eq. 1-2: τ = τ_act (0.5 + 1.5 a) when u > a, τ_deact/(0.5 + 1.5 a) otherwise
    assert hill.activation_rate(1.0, 0.2) == pytest.approx(0.8 / (0.015 * 0.8), rel=1e-14)
    assert hill.activation_rate(0.0, 0.2) == pytest.approx(-0.2 * 0.8 / 0.05, rel=1e-14)
