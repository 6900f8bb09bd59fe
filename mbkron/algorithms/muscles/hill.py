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

from typing import NamedTuple

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
    "RigidTendonDerivatives",
    "rigid_tendon_force",
    "rigid_tendon_force_derivatives",
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


def _active_force_length(x: NDArray, curves: ThelenCurves) -> tuple[NDArray, NDArray]:
    """``f_L(l̃)`` (Eq. 3) and its slope ``f_L' = −2 (l̃ − 1)/γ · f_L``."""
    value = np.exp(-((x - 1.0) ** 2) / curves.active_shape)
    return value, -2.0 * (x - 1.0) / curves.active_shape * value


def active_force_length(normalized_length: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_L(l̃) = exp(−(l̃ − 1)²/γ)`` (Thelen 2003 Eq. 3)."""
    return _active_force_length(np.asarray(normalized_length, dtype=float), curves)[0]


def _passive_force_length(x: NDArray, curves: ThelenCurves) -> tuple[NDArray, NDArray]:
    """``f_PE(l̃)`` (Eq. 4, zero for ``l̃ ≤ 1``) and its slope ``k_PE/ε₀ᴹ · exp(k_PE (l̃ − 1)/ε₀ᴹ)/(exp(k_PE) − 1)``
    for ``l̃ > 1`` (zero below; at ``l̃ = 1`` the left one, 0, where the curve has a kink of slope ``k_PE/(ε₀ᴹ
    (exp(k_PE) − 1))``)."""
    k, strain = curves.passive_shape, curves.fiber_strain_at_fmax
    grown = np.exp(k * (np.maximum(x, 1.0) - 1.0) / strain)
    stretched = x > 1.0
    return (np.where(stretched, (grown - 1.0) / (np.exp(k) - 1.0), 0.0),
            np.where(stretched, k / strain * grown / (np.exp(k) - 1.0), 0.0))


def passive_force_length(normalized_length: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_PE(l̃)`` (Thelen 2003 Eq. 4), zero for ``l̃ ≤ 1`` as in OpenSim."""
    return _passive_force_length(np.asarray(normalized_length, dtype=float), curves)[0]


def _tendon_force_strain(x: NDArray, curves: ThelenCurves) -> tuple[NDArray, NDArray]:
    """``f_T(ε)`` (Eq. 5) and its slope: ``F_toe k_toe/ε_toe · exp(k_toe ε/ε_toe)/(exp(k_toe) − 1)`` in the toe,
    ``k_lin`` above it (continuous there: that fixes ``ε_toe``), zero for ``ε ≤ 0`` (at ``ε = 0`` the left one)."""
    toe, f_toe, k_toe = curves.toe_strain, 0.33, 3.0
    grown = np.exp(k_toe * np.clip(x, 0.0, toe) / toe)
    toe_part = f_toe / (np.exp(k_toe) - 1.0) * (grown - 1.0)
    toe_slope = f_toe / (np.exp(k_toe) - 1.0) * k_toe / toe * grown
    linear = x > toe
    return (np.where(linear, curves.linear_stiffness * (x - toe) + f_toe, np.where(x > 0.0, toe_part, 0.0)),
            np.where(linear, curves.linear_stiffness, np.where(x > 0.0, toe_slope, 0.0)))


def tendon_force_strain(strain: ArrayLike, curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_T(ε)`` (Thelen 2003 Eq. 5, exponential toe then linear), zero for ``ε ≤ 0``."""
    return _tendon_force_strain(np.asarray(strain, dtype=float), curves)[0]


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


def _force_velocity(v: NDArray, a: NDArray, curves: ThelenCurves) -> tuple[NDArray, NDArray, NDArray]:
    """``f_V(ṽ, a)`` (:func:`force_velocity`) and its partial derivatives ``∂f_V/∂ṽ``, ``∂f_V/∂a``.

    With ``k = 0.25 + 0.75 a`` (``∂k/∂a = 0.75``), ``α = 1 + 1/A_f``, ``c = (2 + 2/A_f)/(F_len − 1)`` and on each
    branch (``ṽ_top = k A``, the slope there ``k B``, ``A``, ``B`` constants of the curve):

    - ``ṽ < −k``: ``(ṽ + k)/(k α)``; ``∂ṽ = 1/(k α)``, ``∂k = −ṽ/(k² α)``;
    - ``−k ≤ ṽ ≤ 0``: ``(k + ṽ)/(k − ṽ/A_f)``; ``∂ṽ = k α/(k − ṽ/A_f)²``, ``∂k = −ṽ α/(k − ṽ/A_f)²``;
    - ``0 < ṽ < ṽ_top``: ``(k + ṽ c F_len)/(k + ṽ c)``; ``∂ṽ = c k (F_len − 1)/(k + ṽ c)²``,
      ``∂k = −ṽ c (F_len − 1)/(k + ṽ c)²``;
    - beyond: ``f_top + (ṽ − k A)/(k B)``; ``∂ṽ = 1/(k B)``, ``∂k = −ṽ/(k² B)``.

    The curve is continuous; its slope is continuous at ``ṽ = −k`` and ``ṽ_top`` and jumps at ``ṽ = 0`` (from
    ``α/k`` on the concentric side to twice that, Thelen's Eq. 6–7), where the concentric side's is given.
    """
    k = 0.25 + 0.75 * a
    af, flen, threshold = curves.af, curves.flen, curves.extrapolation_threshold
    alpha = 1.0 + 1.0 / af
    c = (2.0 + 2.0 / af) / (flen - 1.0)
    f_top = threshold * flen
    v_top = k * (f_top - 1.0) / (c * (flen - f_top))  # velocity at the eccentric threshold, k A
    slope_top = k / (c * (flen - f_top)) + k * (f_top - 1.0) / (c * (flen - f_top) ** 2)  # dṽ/df_V there, k B
    with np.errstate(divide="ignore", invalid="ignore"):  # each branch is only used where it is finite
        below = k - v / af
        above = k + v * c
        branches = (
            ((v + k) / (k * alpha), 1.0 / (k * alpha), -v / (k * k * alpha)),
            ((k + v) / below, k * alpha / below**2, -v * alpha / below**2),
            ((k + v * c * flen) / above, c * k * (flen - 1.0) / above**2, -v * c * (flen - 1.0) / above**2),
            (f_top + (v - v_top) / slope_top, 1.0 / slope_top, -v / (k * slope_top)),
        )
    conditions = (v < -k, v <= 0.0, v < v_top)
    value, d_v, d_k = (np.select(conditions, [branch[i] for branch in branches[:3]], branches[3][i]) for i in range(3))
    return value, d_v, 0.75 * d_k


def force_velocity(normalized_velocity: ArrayLike, activation: ArrayLike,
                   curves: ThelenCurves = ThelenCurves()) -> NDArray:
    """``f_V(ṽ, a)``: the exact inverse of :func:`fiber_velocity_from_force` (Eq. 6–7), ``f_V(0) = 1``.

    With ``k = 0.25 + 0.75 a`` and ``c = (2 + 2/A_f)/(F_len − 1)``: ``(k + ṽ)/(k − ṽ/A_f)`` for
    ``−k ≤ ṽ ≤ 0``, ``(k + ṽ c F_len)/(k + ṽ c)`` for eccentric ``ṽ`` up to the extrapolation
    threshold, and the matching straight lines beyond.
    """
    return _force_velocity(np.asarray(normalized_velocity, dtype=float), np.asarray(activation, dtype=float),
                           curves)[0]


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


class RigidTendonDerivatives(NamedTuple):
    """The rigid-tendon musculotendon force and its partial derivatives (:func:`rigid_tendon_force_derivatives`),
    each of the inputs' broadcast shape (..., n_mt)."""

    force: NDArray[np.float64]
    """``F``, N (:func:`rigid_tendon_force`)."""
    dforce_dactivation: NDArray[np.float64]
    """``∂F/∂a``, N."""
    dforce_dlength: NDArray[np.float64]
    """``∂F/∂l_MT``, N/m."""
    dforce_dvelocity: NDArray[np.float64]
    """``∂F/∂v_MT``, N·s/m."""


def _rigid_tendon(activation: ArrayLike, length: ArrayLike, velocity: ArrayLike, params,
                  derivatives: bool) -> tuple[NDArray, ...]:
    """:func:`rigid_tendon_force`, and with ``derivatives`` its partial derivatives
    (:func:`rigid_tendon_force_derivatives`)."""
    p = _arrays(params)
    curves = (params if isinstance(params, HillParameters) else params[0]).curves
    height = p["optimal_fiber_length"] * np.sin(p["pennation_angle"])
    along = np.asarray(length, dtype=float) - p["tendon_slack_length"]
    fiber = np.hypot(along, height)
    cos_phi = along / fiber
    l_norm = fiber / p["optimal_fiber_length"]
    speed = np.asarray(velocity, dtype=float)
    velocity_scale = p["optimal_fiber_length"] * p["max_contraction_velocity"]
    v_norm = speed * cos_phi / velocity_scale
    a = np.asarray(activation, dtype=float)
    f_l, f_l_slope = _active_force_length(l_norm, curves)
    f_v, f_v_velocity, f_v_activation = _force_velocity(v_norm, a, curves)
    f_pe, f_pe_slope = _passive_force_length(l_norm, curves)
    active = a * f_l * f_v
    force = p["max_isometric_force"] * (active + f_pe) * cos_phi
    taut = along > 0.0  # l_MT ≤ l_s: a slack tendon transmits nothing
    if not derivatives:
        return (np.where(taut, force, 0.0),)
    # l_M = hypot(l_MT − l_s, h): ∂l_M/∂l_MT = cos φ, ∂cos φ/∂l_MT = sin²φ/l_M = h²/l_M³
    d_cos = height**2 / fiber**3
    d_v_norm_length = speed * d_cos / velocity_scale
    scale = p["max_isometric_force"] * cos_phi
    d_activation = scale * f_l * (f_v + a * f_v_activation)
    d_length = (scale * ((a * f_l_slope * f_v + f_pe_slope) * cos_phi / p["optimal_fiber_length"]
                         + a * f_l * f_v_velocity * d_v_norm_length)
                + p["max_isometric_force"] * (active + f_pe) * d_cos)
    d_velocity = scale * a * f_l * f_v_velocity * cos_phi / velocity_scale
    return tuple(np.where(taut, x, 0.0) for x in (force, d_activation, d_length, d_velocity))


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
    return _rigid_tendon(activation, length, velocity, params, False)[0]


def rigid_tendon_force_derivatives(activation: ArrayLike, length: ArrayLike, velocity: ArrayLike,
                                   params) -> RigidTendonDerivatives:
    """:func:`rigid_tendon_force` and its exact partial derivatives by activation, musculotendon length and
    lengthening velocity (issue 30), shapes the inputs' broadcast (..., n_mt).

    With ``l̃ = l_M/l_opt``, ``ṽ = v_MT cos φ/(l_opt v_max)``, ``∂l_M/∂l_MT = cos φ`` and
    ``∂cos φ/∂l_MT = h²/l_M³`` (``h = l_opt sin φ_opt``; the chain rule on the module docstring's relations):

    - ``∂F/∂a = F_max cos φ f_L (f_V + a ∂f_V/∂a)`` (``f_V`` depends on ``a`` through ``k = 0.25 + 0.75 a``);
    - ``∂F/∂l_MT = F_max cos φ [(a f_L' f_V + f_PE') cos φ/l_opt + a f_L ∂f_V/∂ṽ · v_MT h²/(l_M³ l_opt v_max)]
      + F_max (a f_L f_V + f_PE) h²/l_M³``;
    - ``∂F/∂v_MT = F_max cos² φ a f_L ∂f_V/∂ṽ/(l_opt v_max)``;

    all zero where the tendon is slack (``l_MT ≤ l_s``). Where a curve has a kink (``f_PE`` at ``l̃ = 1``, ``f_V`` at
    ``ṽ = 0``: :func:`_force_velocity`) the slope of the side the value is taken from is given.
    """
    return RigidTendonDerivatives(*_rigid_tendon(activation, length, velocity, params, True))


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
