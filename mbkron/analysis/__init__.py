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

or all at once, as ``mbkron analyze`` does (:func:`~mbkron.analysis.trial.analyze_trial`)::

    result = analysis.analyze_trial(model, "subject01_walk1_ik.mot", external_loads="subject01_walk1_grf.xml",
                                    lowpass=6.0, analyses=("id", "muscles", "so", "reactions"))
    result.write("results", "subject01_walk1_ik")                      # the files mbkron analyze writes

Modules: :mod:`~mbkron.analysis.motion` (trial kinematics: OpenSim's filter and splines),
:mod:`~mbkron.analysis.external_loads` (ExternalLoads at the frames), :mod:`~mbkron.analysis.inverse_dynamics`,
:mod:`~mbkron.analysis.reactions`, :mod:`~mbkron.analysis.muscle_analysis`,
:mod:`~mbkron.analysis.static_optimization`, :mod:`~mbkron.analysis.tracking` (import those three by
their module paths), :mod:`~mbkron.analysis.trial` (:func:`analyze_trial`: all of them on one trial).
"""

from __future__ import annotations

# imported at once, not lazily: the functions share their modules' names, and importing a submodule
# would otherwise bind the package attribute to the module
from mbkron.analysis.external_loads import ExternalLoads, external_loads
from mbkron.analysis.inverse_dynamics import InverseDynamics, inverse_dynamics
from mbkron.analysis.motion import TrialKinematics, trial_kinematics
from mbkron.analysis.reactions import JointReactionLoads, joint_reactions
from mbkron.analysis.trial import TrialAnalysis, analyze_trial
from mbkron.io.osim.external_loads import read_external_loads

__all__ = [
    "ExternalLoads",
    "InverseDynamics",
    "JointReactionLoads",
    "TrialAnalysis",
    "TrialKinematics",
    "analyze_trial",
    "external_loads",
    "inverse_dynamics",
    "joint_reactions",
    "read_external_loads",
    "trial_kinematics",
]
