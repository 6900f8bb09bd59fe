"""Parameters of the Hill-type musculotendon model: the Thelen (2003) curve constants and the per-muscle parameters
(the curves and forces: :mod:`mbkron.algorithms.muscles.hill`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

__all__ = ["CURVE_FIELDS", "HillParameters", "ThelenCurves"]


@dataclass(frozen=True)
class ThelenCurves:
    """Shape constants of the Thelen (2003) curves.

    The defaults are the constants of OpenSim's example models (``FmaxTendonStrain`` 0.033, ``Flen`` 1.8,
    the others OpenSim 4.x ``Thelen2003Muscle``'s class defaults). OpenSim 4.6's class defaults differ in
    those two (0.04 and 1.4): the ``.osim`` importer applies OpenSim's where a file leaves them out
    (:data:`mbkron.io.osim.muscles.OPENSIM_THELEN_DEFAULTS`).
    """

    tendon_strain_at_fmax: float = 0.033  # FmaxTendonStrain ε₀
    fiber_strain_at_fmax: float = 0.6  # FmaxMuscleStrain ε₀ᴹ
    active_shape: float = 0.45  # KshapeActive γ
    passive_shape: float = 5.0  # KshapePassive k_PE
    af: float = 0.25  # A_f
    flen: float = 1.8  # F_len, eccentric force asymptote
    extrapolation_threshold: float = 0.95  # fv_linear_extrap_threshold
    activation_time: float = 0.015  # s
    deactivation_time: float = 0.050  # s
    minimum_activation: float = 0.01

    @property
    def toe_strain(self) -> float:
        """``ε_toe = 99 ε₀ e³/(166 e³ − 67)`` (exact form of the paper's 0.609 ε₀)."""
        e3 = np.exp(3.0)
        return 99.0 * self.tendon_strain_at_fmax * e3 / (166.0 * e3 - 67.0)

    @property
    def linear_stiffness(self) -> float:
        """``k_lin = 0.67/(ε₀ − ε_toe)`` (the paper's 1.712/ε₀)."""
        return 0.67 / (self.tendon_strain_at_fmax - self.toe_strain)


#: The names of the :class:`ThelenCurves` constants (model files' ``curves`` keys).
CURVE_FIELDS = tuple(f.name for f in fields(ThelenCurves))


@dataclass(frozen=True)
class HillParameters:
    """Per-muscle parameters of the Hill model.

    Attributes
    ----------
    max_isometric_force : float
        ``F_max``, N.
    optimal_fiber_length : float
        ``l_opt``, m.
    tendon_slack_length : float
        ``l_s``, m.
    pennation_angle : float
        ``φ_opt`` at optimal fibre length, rad.
    max_contraction_velocity : float
        ``v_max`` in optimal fibre lengths per second (OpenSim default 10).
    curves : ThelenCurves
    """

    max_isometric_force: float
    optimal_fiber_length: float
    tendon_slack_length: float
    pennation_angle: float = 0.0
    max_contraction_velocity: float = 10.0
    curves: ThelenCurves = field(default_factory=ThelenCurves)

    def problems(self, where: str) -> list[str]:
        """Everything wrong with the parameters, as messages naming ``where``."""
        out = []
        for name in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "max_contraction_velocity"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
                out.append(f"{where}: `{name}` must be a positive number, got {value!r}")
        phi = self.pennation_angle
        if isinstance(phi, bool) or not isinstance(phi, (int, float)) or not 0 <= phi < np.pi / 2:
            out.append(f"{where}: `pennation_angle` must be in [0, π/2) rad, got {phi!r}")
        if not isinstance(self.curves, ThelenCurves):
            out.append(f"{where}: `curves` must be a ThelenCurves, got {type(self.curves).__name__}")
            return out
        for name in CURVE_FIELDS:
            value = getattr(self.curves, name)
            low_ok = value >= 0 if name == "minimum_activation" else value > 0
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or not low_ok:
                bound = "a number ≥ 0" if name == "minimum_activation" else "a positive number"
                out.append(f"{where}: curve constant `{name}` must be {bound}, got {value!r}")
        return out
