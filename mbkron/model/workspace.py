"""The caller-owned evaluation state of a model (:class:`Workspace`, Pinocchio's ``Data``)."""

from __future__ import annotations

from mbkron.algorithms.jointvars.explicit import JointVariables

__all__ = ["Workspace"]


class Workspace:
    """Caller-owned evaluation state of one model, for a trajectory or a sweep (Pinocchio's ``Data``).

    Holds where each constraint group's solver continues from (a
    :class:`~mbkron.algorithms.jointvars.solvers.Continuation` per stateful joint-variable provider); every
    evaluation given ``workspace=`` advances it. Nearby consecutive states then need only short
    continuation steps. It also keeps the muscle paths' last evaluation (:attr:`paths`), so that
    ``model.muscle_lengths(q, workspace=w)`` and ``model.moment_arms(q, workspace=w)`` at the same ``q``
    evaluate the paths once. Create one with :meth:`Model.workspace`; :func:`mbkron.simulate` creates
    one per run. Not for sharing between threads: give each thread its own.

    Attributes
    ----------
    states : tuple
        The joint-variable providers' continuations.
    paths : tuple or None
        ``(muscle_set, q, lengths, moment_arms)`` of the last evaluation of the paths with this workspace
        (read-only arrays), or None.
    """

    __slots__ = ("states", "paths", "_assemblies", "_joint_variables")

    def __init__(self, joint_variables: JointVariables):
        self._joint_variables = joint_variables
        self._assemblies = _assemblies(joint_variables)
        self.states = joint_variables.new_states()
        self.paths = None

    def states_for(self, joint_variables: JointVariables) -> tuple:
        """The provider states, checked to belong to ``joint_variables`` (the same model)."""
        if joint_variables is self._joint_variables:  # the map it was made for: its very assemblies
            return self.states
        theirs = _assemblies(joint_variables)
        if len(theirs) != len(self._assemblies) or any(a is not b for a, b in zip(theirs, self._assemblies)):
            raise ValueError("`workspace` belongs to another model (create one with model.workspace())")
        return self.states


def _assemblies(joint_variables: JointVariables) -> tuple:
    """The assembly solutions of the providers' position solvers (None for stateless providers): distinct
    between models."""
    return tuple(getattr(getattr(provider, "solver", None), "reference", None) for _, provider in joint_variables.providers)
