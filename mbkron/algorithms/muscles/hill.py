"""Hill-type musculotendon model with Thelen (2003) curves, as OpenSim's ``Thelen2003Muscle``.

Source: D. G. Thelen, "Adjustment of muscle mechanics model parameters to simulate dynamic
contractions in older adults", J Biomech Eng 125 (2003) 70-77, Eq. 1-7, with the constants and
extensions of OpenSim 4.x ``Thelen2003Muscle`` (opensim-core ``OpenSim/Actuators/Thelen2003Muscle.cpp``;
``leg6dof9musc.osim`` uses this muscle):

- active force–length (Eq. 3): ``f_L(l̃) = exp(−(l̃ − 1)²/γ)``, ``γ = KshapeActive = 0.45``;
- passive force–length (Eq. 4, zero below ``l̃ = 1`` as in OpenSim):
  ``f_PE(l̃) = (exp(k_PE (l̃ − 1)/ε₀ᴹ) − 1)/(exp(k_PE) − 1)``, ``k_PE = 5``, ``ε₀ᴹ = 0.6``
  (OpenSim's defaults; the paper's k_PE is 4 for young adults);
- tendon force–strain (Eq. 5) with OpenSim's exact toe constants
  ``ε_toe = 99 ε₀ e³/(166 e³ − 67)``, ``k_lin = 0.67/(ε₀ − ε_toe)``, ``F_toe = 0.33``, ``k_toe = 3``:
  ``f_T = F_toe (exp(k_toe ε/ε_toe) − 1)/(exp(k_toe) − 1)`` for ``0 < ε ≤ ε_toe``,
  ``k_lin (ε − ε_toe) + F_toe`` above, ``ε₀ = FmaxTendonStrain = 0.033``;
- force–velocity (Eq. 6–7): Thelen gives the fibre velocity as a function of force,
  ``ṽ = (0.25 + 0.75 a)(F̄ − a f_L)/b`` (``ṽ = v_ce/(v_max l_opt)``, shortening negative) with
  ``b = a f_L + F̄/A_f`` (concentric) or ``(2 + 2/A_f)(a f_L F_len − F̄)/(F_len − 1)`` (eccentric),
  ``A_f = 0.25``, ``F_len = 1.8``, extrapolated linearly below ``F̄ = 0`` and above
  ``0.95 F_len a f_L`` (OpenSim's ``calcdlceN``). :func:`force_velocity` is its exact inverse
  ``f_V(ṽ, a) = F̄/(a f_L)`` (it depends on ``a`` through ``k = 0.25 + 0.75 a``);
- pennation with constant fibre height ``l_M sin φ = l_opt sin φ_opt``
  (OpenSim's ``MuscleFixedWidthPennationModel``);
- activation (Eq. 1–2): ``ȧ = (u − a)/τ``, ``τ = τ_act (0.5 + 1.5 a)`` if ``u > a`` else
  ``τ_deact/(0.5 + 1.5 a)``, ``τ_act = 0.015 s``, ``τ_deact = 0.050 s``.

Musculotendon force: rigid tendon ``F = F_max (a f_L f_V + f_PE) cos φ`` with
``l_M cos φ = l_MT − l_s``; compliant tendon: the fibre length is a state and ``l_T = l_MT − l_M cos φ``,
``F = F_max f_T(l_T/l_s − 1)``, the fibre velocity following from the force balance
``f_T = (a f_L f_V + f_PE) cos φ`` (:func:`fiber_velocity`). Everything is vectorised over muscles
and states (arrays broadcast against the per-muscle parameters).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.multibody.muscles.hill import HillParameters, ThelenCurves

# HillParameters and ThelenCurves are re-exported: users import them with the curves (docs/muscles.md)
__all__ = [
    "HillParameters",
    "ThelenCurves",
    "active_force_length",
    "passive_force_length",
    "tendon_force_strain",
    "fiber_velocity_from_force",
    "force_velocity",
    "pennation",
    "activation_rate",
    "rigid_tendon_force",
    "compliant_tendon_force",
    "fiber_velocity",
    "equilibrium_fiber_length",
]


def _arrays(params) -> dict[str, NDArray]:
    """Per-muscle parameters as arrays (one entry per muscle)."""
    params = [params] if isinstance(params, HillParameters) else list(params)
    return {name: np.array([getattr(p, name) for p in params], dtype=float)
            for name in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle",
                         "max_contraction_velocity")}


def active_force_length(normalized_length: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_L(l̃) = exp(−(l̃ − 1)²/γ)`` (Thelen 2003 Eq. 3)."""
    x = np.asarray(normalized_length, dtype=float)
    return np.exp(-((x - 1.0) ** 2) / curves.active_shape)


def passive_force_length(normalized_length: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_PE(l̃)`` (Thelen 2003 Eq. 4), zero for ``l̃ ≤ 1`` as in OpenSim."""
    x = np.asarray(normalized_length, dtype=float)
    k = curves.passive_shape
    stretched = (np.exp(k * (np.maximum(x, 1.0) - 1.0) / curves.fiber_strain_at_fmax) - 1.0) / (np.exp(k) - 1.0)
    return np.where(x > 1.0, stretched, 0.0)


def tendon_force_strain(strain: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_T(ε)`` (Thelen 2003 Eq. 5, exponential toe then linear), zero for ``ε ≤ 0``."""
    x = np.asarray(strain, dtype=float)
    toe, f_toe, k_toe = curves.toe_strain, 0.33, 3.0
    toe_part = f_toe / (np.exp(k_toe) - 1.0) * (np.exp(k_toe * np.clip(x, 0.0, toe) / toe) - 1.0)
    return np.where(x > toe, curves.linear_stiffness * (x - toe) + f_toe, np.where(x > 0.0, toe_part, 0.0))


def fiber_velocity_from_force(force: ArrayLike, activation: ArrayLike, active_fl: ArrayLike,
                              curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """Normalised fibre velocity ``ṽ`` from the normalised active force ``F̄ = a f_L f_V`` (Eq. 6–7).

    Thelen's direction of the relation, with OpenSim's linear extrapolation below ``F̄ = 0`` and
    above ``0.95 F_len a f_L`` (``Thelen2003Muscle::calcdlceN``).
    """
    F = np.asarray(force, dtype=float)
    a = np.asarray(activation, dtype=float)
    afl = a * np.asarray(active_fl, dtype=float)
    k = 0.25 + 0.75 * a
    c = (2.0 + 2.0 / curves.af) / (curves.flen - 1.0)
    top = curves.extrapolation_threshold * curves.flen * afl

    def velocity(Fm):
        b = np.where(Fm <= afl, afl + Fm / curves.af, c * (afl * curves.flen - Fm))
        return k * (Fm - afl) / b

    def slope(Fm):
        concentric = Fm <= afl
        b = np.where(concentric, afl + Fm / curves.af, c * (afl * curves.flen - Fm))
        db = np.where(concentric, 1.0 / curves.af, -c)
        return k / b - k * (Fm - afl) / b**2 * db

    inside = (F > 0.0) & (F < top)
    anchor = np.where(F <= 0.0, 0.0, top)
    return np.where(inside, velocity(np.clip(F, 1e-300, top)), velocity(anchor) + slope(anchor) * (F - anchor))


def force_velocity(normalized_velocity: ArrayLike, activation: ArrayLike,
                   curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_V(ṽ, a)``: the exact inverse of :func:`fiber_velocity_from_force` (Eq. 6–7), ``f_V(0) = 1``.

    With ``k = 0.25 + 0.75 a`` and ``c = (2 + 2/A_f)/(F_len − 1)``: ``(k + ṽ)/(k − ṽ/A_f)`` for
    ``−k ≤ ṽ ≤ 0``, ``(k + ṽ c F_len)/(k + ṽ c)`` for eccentric ``ṽ`` up to the extrapolation
    threshold, and the matching straight lines beyond.
    """
    v = np.asarray(normalized_velocity, dtype=float)
    k = 0.25 + 0.75 * np.asarray(activation, dtype=float)
    af, flen, threshold = curves.af, curves.flen, curves.extrapolation_threshold
    c = (2.0 + 2.0 / af) / (flen - 1.0)
    f_top = threshold * flen
    v_top = k * (f_top - 1.0) / (c * (flen - f_top))  # velocity at the eccentric threshold
    slope_top = k / (c * (flen - f_top)) + k * (f_top - 1.0) / (c * (flen - f_top) ** 2)  # dṽ/df_V there
    with np.errstate(divide="ignore", invalid="ignore"):  # each branch is only used where it is finite
        concentric = (k + v) / (k - v / af)
        eccentric = (k + v * c * flen) / (k + v * c)
    return np.where(v < -k, (v + k) / (k * (1.0 + 1.0 / af)),
                    np.where(v <= 0.0, concentric,
                             np.where(v < v_top, eccentric, f_top + (v - v_top) / slope_top)))


def pennation(fiber_length: ArrayLike, params) -> NDArray:
    """Pennation angle with constant fibre height ``h = l_opt sin φ_opt``: ``φ = asin(h/l_M)``."""
    p = _arrays(params)
    height = p["optimal_fiber_length"] * np.sin(p["pennation_angle"])
    return np.arcsin(np.clip(height / np.asarray(fiber_length, dtype=float), -1.0, 1.0))


def activation_rate(excitation: ArrayLike, activation: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``ȧ = (u − a)/τ(a, u)`` (Thelen 2003 Eq. 1–2)."""
    u = np.asarray(excitation, dtype=float)
    a = np.asarray(activation, dtype=float)
    tau = np.where(u > a, curves.activation_time * (0.5 + 1.5 * a), curves.deactivation_time / (0.5 + 1.5 * a))
    return (u - a) / tau


def rigid_tendon_force(activation: ArrayLike, length: ArrayLike, velocity: ArrayLike, params) -> NDArray:
    """Musculotendon force with a rigid tendon, N, shape broadcast of the inputs (..., n_mt).

    ``l_M cos φ = l_MT − l_s``, ``l_M = sqrt((l_MT − l_s)² + h²)``,
    ``v_M = v_MT cos φ`` (fibre velocity along the fibre), ``F = F_max (a f_L f_V + f_PE) cos φ``;
    zero when ``l_MT ≤ l_s``.

    Parameters
    ----------
    activation : array_like, (..., n_mt)
    length, velocity : array_like, (..., n_mt)
        Musculotendon length (m) and lengthening velocity (m/s).
    params : sequence of HillParameters
    """
    p = _arrays(params)
    curves = (params if isinstance(params, HillParameters) else params[0]).curves
    height = p["optimal_fiber_length"] * np.sin(p["pennation_angle"])
    along = np.asarray(length, dtype=float) - p["tendon_slack_length"]
    fiber = np.hypot(along, height)
    cos_phi = along / fiber
    l_norm = fiber / p["optimal_fiber_length"]
    v_norm = np.asarray(velocity, dtype=float) * cos_phi / (p["optimal_fiber_length"] * p["max_contraction_velocity"])
    a = np.asarray(activation, dtype=float)
    active = a * active_force_length(l_norm, curves) * force_velocity(v_norm, a, curves)
    force = p["max_isometric_force"] * (active + passive_force_length(l_norm, curves)) * cos_phi
    return np.where(along > 0.0, force, 0.0)  # l_MT ≤ l_s: a slack tendon transmits nothing


def compliant_tendon_force(fiber_length: ArrayLike, length: ArrayLike, params) -> NDArray:
    """Tendon force ``F_max f_T(l_T/l_s − 1)`` with ``l_T = l_MT − l_M cos φ``, N."""
    p = _arrays(params)
    curves = (params if isinstance(params, HillParameters) else params[0]).curves
    fiber = np.asarray(fiber_length, dtype=float)
    cos_phi = np.cos(pennation(fiber, params))
    tendon = np.asarray(length, dtype=float) - fiber * cos_phi
    return p["max_isometric_force"] * tendon_force_strain(tendon / p["tendon_slack_length"] - 1.0, curves)


def fiber_velocity(activation: ArrayLike, fiber_length: ArrayLike, length: ArrayLike, params) -> NDArray:
    """Fibre lengthening velocity ``l̇_M`` (m/s) of the compliant-tendon model (the state equation).

    From the force balance ``f_T = (a f_L f_V + f_PE) cos φ``: ``F̄ = f_T/cos φ − f_PE`` and
    ``ṽ = fiber_velocity_from_force(F̄, a, f_L)`` (``Thelen2003Muscle::calcFiberVelocityInfo``).
    """
    p = _arrays(params)
    curves = (params if isinstance(params, HillParameters) else params[0]).curves
    fiber = np.asarray(fiber_length, dtype=float)
    a = np.maximum(np.asarray(activation, dtype=float), curves.minimum_activation)
    cos_phi = np.cos(pennation(fiber, params))
    l_norm = fiber / p["optimal_fiber_length"]
    f_t = compliant_tendon_force(fiber, length, params) / p["max_isometric_force"]
    active = f_t / cos_phi - passive_force_length(l_norm, curves)
    v_norm = fiber_velocity_from_force(active, a, active_force_length(l_norm, curves), curves)
    return v_norm * p["optimal_fiber_length"] * p["max_contraction_velocity"]


def equilibrium_fiber_length(activation: ArrayLike, length: ArrayLike, params, iterations: int = 200) -> NDArray:
    """Static (``l̇_M = 0``) fibre length of the compliant-tendon model, by vectorised bisection.

    Solves ``f_T(l_T/l_s − 1) = (a f_L + f_PE) cos φ`` for ``l_M`` between the pennation limit and
    the rigid-tendon length (the residual changes sign there when the tendon is taut).
    """
    p = _arrays(params)
    curves = (params if isinstance(params, HillParameters) else params[0]).curves
    a = np.asarray(activation, dtype=float)
    total = np.asarray(length, dtype=float)
    height = p["optimal_fiber_length"] * np.sin(p["pennation_angle"])

    def residual(fiber):
        cos_phi = np.sqrt(1.0 - (height / fiber) ** 2)
        l_norm = fiber / p["optimal_fiber_length"]
        muscle = (a * active_force_length(l_norm, curves) + passive_force_length(l_norm, curves)) * cos_phi
        return compliant_tendon_force(fiber, total, params) / p["max_isometric_force"] - muscle

    low = np.broadcast_to(np.maximum(height * (1 + 1e-9), 1e-6 * p["optimal_fiber_length"]),
                          np.broadcast(a, total).shape).copy()
    high = np.broadcast_to(np.hypot(total - p["tendon_slack_length"], height), low.shape).copy()
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        positive = residual(middle) > 0.0  # tendon pulls harder than the fibre: the fibre is longer
        low = np.where(positive, middle, low)
        high = np.where(positive, high, middle)
    return 0.5 * (low + high)
