"""The caller-owned evaluation state of a model (:class:`Workspace`, Pinocchio's ``Data``)."""

from __future__ import annotations

from mbkron.jointvars.explicit import JointVariables

__all__ = ["Workspace"]


class Workspace:
    """Caller-owned evaluation state of one model, for a trajectory or a sweep (Pinocchio's ``Data``).

    Holds where each constraint group's solver continues from (a
    :class:`~mbkron.jointvars.solvers.Continuation` per stateful joint-variable provider); every
    evaluation given ``workspace=`` advances it. Nearby consecutive states then need only short
    continuation steps. Create one with :meth:`Model.workspace`; :func:`mbkron.simulate` creates
    one per run. Not for sharing between threads: give each thread its own.
    """

    __slots__ = ("states", "_assemblies")

    def __init__(self, joint_variables: JointVariables):
        self._assemblies = _assemblies(joint_variables)
        self.states = joint_variables.new_states()

    def states_for(self, joint_variables: JointVariables) -> tuple:
        """The provider states, checked to belong to ``joint_variables`` (the same model)."""
        theirs = _assemblies(joint_variables)
        if len(theirs) != len(self._assemblies) or any(a is not b for a, b in zip(theirs, self._assemblies)):
            raise ValueError("`workspace` belongs to another model (create one with model.workspace())")
        return self.states


def _assemblies(joint_variables: JointVariables) -> tuple:
    """The assembly solutions of the providers' position solvers (None for stateless providers): distinct
    between models."""
    return tuple(getattr(getattr(provider, "solver", None), "reference", None) for _, provider in joint_variables.providers)
