"""Analysis of measured motion: inverse dynamics with external loads, muscle analysis, static
optimisation, joint reactions and computed-torque tracking over whole trials (issue #17).

A trial, as OpenSim's tools run it (``docs/analysis.md``)::

    import mbkron
    from mbkron import analysis

    model = mbkron.load_model("subject01_simbody.osim")
    kinematics = analysis.trial_kinematics(model, "subject01_walk1_ik.mot", lowpass=6.0)
    loads = analysis.external_loads("subject01_walk1_grf.xml")
    result = analysis.inverse_dynamics(model, kinematics, loads)       # result.tau, result.labels
    reactions = analysis.joint_reactions(model, kinematics, loads)

Modules: :mod:`~mbkron.analysis.motion` (trial kinematics: OpenSim's filter and splines),
:mod:`~mbkron.analysis.external_loads` (ExternalLoads at the frames), :mod:`~mbkron.analysis.inverse_dynamics`,
:mod:`~mbkron.analysis.reactions`. The names below are imported on first use.
"""

from __future__ import annotations

import importlib

__all__ = [
    "ExternalLoads",
    "InverseDynamics",
    "JointReactionLoads",
    "TrialKinematics",
    "external_loads",
    "inverse_dynamics",
    "joint_reactions",
    "read_external_loads",
    "trial_kinematics",
]

#: Where each public name lives: (module, attribute).
_LAZY: dict[str, tuple[str, str]] = {
    "ExternalLoads": ("mbkron.analysis.external_loads", "ExternalLoads"),
    "InverseDynamics": ("mbkron.analysis.inverse_dynamics", "InverseDynamics"),
    "JointReactionLoads": ("mbkron.analysis.reactions", "JointReactionLoads"),
    "TrialKinematics": ("mbkron.analysis.motion", "TrialKinematics"),
    "external_loads": ("mbkron.analysis.external_loads", "external_loads"),
    "inverse_dynamics": ("mbkron.analysis.inverse_dynamics", "inverse_dynamics"),
    "joint_reactions": ("mbkron.analysis.reactions", "joint_reactions"),
    "read_external_loads": ("mbkron.io.osim.external_loads", "read_external_loads"),
    "trial_kinematics": ("mbkron.analysis.motion", "trial_kinematics"),
}


def __getattr__(name: str):
    """Import the public attribute ``name`` on first use and keep it (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'mbkron.analysis' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the public ones not imported yet included."""
    return sorted(set(globals()) | set(__all__))
