"""Exact derivatives of the rigid-tendon Hill model (issue 30: "the Hill models over their whole domains"):
:func:`mbkron.algorithms.muscles.hill.rigid_tendon_force_derivatives` against sympy's derivatives of the Thelen
(2003) curves written here from the paper and OpenSim's constants (piecewise, every branch), and against
eighth-order central differences of :func:`~mbkron.algorithms.muscles.hill.rigid_tendon_force`."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from mbkron.algorithms.muscles import hill
from mbkron.multibody.muscles.hill import HillParameters, ThelenCurves

# a pennate muscle with OpenSim's 4.6 curve defaults (F_len 1.4) and one without pennation (the example models')
MUSCLES = [HillParameters(1142.6, 0.0976, 0.093, np.radians(22.0), 10.0, ThelenCurves(flen=1.4)),
           HillParameters(800.0, 0.12, 0.25, 0.0, 8.0)]


def _sympy_force(muscle: HillParameters):
    """``F(a, l_MT, v_MT)`` and its three partial derivatives, as numpy functions printed from sympy: the module's
    relations written again from Thelen (2003) Eq. 3–7 and OpenSim's extrapolation, each curve a Piecewise."""
    a, L, V = sp.symbols("a L V", real=True)
    c = muscle.curves
    af, flen, thr = sp.Float(c.af), sp.Float(c.flen), sp.Float(c.extrapolation_threshold)
    l_opt, l_s = sp.Float(muscle.optimal_fiber_length), sp.Float(muscle.tendon_slack_length)
    h = l_opt * sp.sin(sp.Float(muscle.pennation_angle))
    along = L - l_s
    fiber = sp.sqrt(along**2 + h**2)
    cos_phi = along / fiber
    x = fiber / l_opt
    v = V * cos_phi / (l_opt * sp.Float(muscle.max_contraction_velocity))
    k = sp.Rational(1, 4) + sp.Rational(3, 4) * a
    cc = (2 + 2 / af) / (flen - 1)
    f_top = thr * flen
    # the eccentric branch solved for the velocity at f_V = f_top, and its slope dṽ/df_V there (Thelen Eq. 7)
    fv_sym, w = sp.symbols("fv w")
    v_of_f = sp.solve(sp.Eq(fv_sym, (k + w * cc * flen) / (k + w * cc)), w)[0]
    v_top = v_of_f.subs(fv_sym, f_top)
    slope_top = sp.diff(v_of_f, fv_sym).subs(fv_sym, f_top)
    f_v = sp.Piecewise(((v + k) / (k * (1 + 1 / af)), v < -k), ((k + v) / (k - v / af), v <= 0),
                       ((k + v * cc * flen) / (k + v * cc), v < v_top), (f_top + (v - v_top) / slope_top, True))
    f_l = sp.exp(-(x - 1) ** 2 / sp.Float(c.active_shape))
    kpe, e0 = sp.Float(c.passive_shape), sp.Float(c.fiber_strain_at_fmax)
    f_pe = sp.Piecewise(((sp.exp(kpe * (x - 1) / e0) - 1) / (sp.exp(kpe) - 1), x > 1), (0, True))
    force = sp.Piecewise((sp.Float(muscle.max_isometric_force) * (a * f_l * f_v + f_pe) * cos_phi, along > 0),
                         (0, True))
    return [sp.lambdify((a, L, V), e, "numpy") for e in (force, sp.diff(force, a), sp.diff(force, L),
                                                           sp.diff(force, V))]


def _grid(muscle: HillParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Activations, lengths and velocities over the whole domain: a slack tendon, fibres shorter and longer than
    optimal (the passive curve's two sides), and normalised fibre velocities below −k, concentric, eccentric and
    beyond the extrapolation threshold."""
    l_opt, l_s = muscle.optimal_fiber_length, muscle.tendon_slack_length
    a = np.array([0.01, 0.3, 1.0])
    lengths = l_s + l_opt * np.array([-0.2, 0.35, 0.8, 0.97, 1.2, 1.55])
    v_scale = l_opt * muscle.max_contraction_velocity
    velocities = v_scale * np.array([-1.3, -0.9, -0.4, -0.05, 0.02, 0.1, 0.3, 0.9, 2.5])
    return tuple(np.meshgrid(a, lengths, velocities, indexing="ij"))


@pytest.mark.parametrize("muscle", MUSCLES, ids=["pennate", "parallel"])
def test_rigid_tendon_derivatives_equal_sympys_on_every_branch(muscle):
    a, L, V = _grid(muscle)
    d = hill.rigid_tendon_force_derivatives(a, L, V, [muscle])
    np.testing.assert_array_equal(d.force, hill.rigid_tendon_force(a, L, V, [muscle]))  # the same force
    for got, reference in zip(d, _sympy_force(muscle)):
        expected = np.broadcast_to(reference(a, L, V), a.shape).astype(float)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    # every branch met: slack, both sides of the passive curve, the four of f_V (at full and low activation)
    assert (d.force == 0).any() and (d.force > 0).any()


@pytest.mark.parametrize("muscle", MUSCLES, ids=["pennate", "parallel"])
def test_rigid_tendon_derivatives_equal_central_differences(muscle):
    a, L, V = (x.ravel() for x in _grid(muscle))
    d = hill.rigid_tendon_force_derivatives(a, L, V, [muscle])
    weights = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
    offsets = np.arange(-4, 5)

    def difference(which: int, step: float) -> np.ndarray:
        args = [a, L, V]
        total = 0.0
        for w, o in zip(weights, offsets):
            moved = list(args)
            moved[which] = args[which] + o * step
            total = total + w * hill.rigid_tendon_force(*moved, [muscle])
        return total / step

    # the points whose stencils stay on one branch of every curve: l̃ and ṽ (module relations) away from the
    # joints l_MT = l_s, l̃ = 1, ṽ = −k, 0 and the extrapolation threshold ṽ_top = k A
    l_opt, v_max, c = muscle.optimal_fiber_length, muscle.max_contraction_velocity, muscle.curves
    along = L - muscle.tendon_slack_length
    fiber = np.hypot(along, l_opt * np.sin(muscle.pennation_angle))
    x, v, k = fiber / l_opt, V * along / fiber / (l_opt * v_max), 0.25 + 0.75 * a
    cc, f_top = (2 + 2 / c.af) / (c.flen - 1), c.extrapolation_threshold * c.flen
    v_top = k * (f_top - 1) / (cc * (c.flen - f_top))
    away = ((np.abs(along) > 0.05 * l_opt) & (np.abs(x - 1) > 0.01)
            & (np.min(np.abs(v[:, None] - np.stack([-k, 0 * k, v_top], axis=1)), axis=1) > 0.02))
    assert away.sum() > 0.6 * away.size
    for which, got, step in ((0, d.dforce_dactivation, 1e-3), (1, d.dforce_dlength, 1e-4 * l_opt),
                             (2, d.dforce_dvelocity, 1e-4 * l_opt * v_max)):
        expected = difference(which, step)
        np.testing.assert_allclose(got[away], expected[away], rtol=1e-9, atol=1e-9 * np.abs(expected).max())
