"""Muscle-path lengths, moment arms and lengthening velocities of a model at states: free functions of
``(model, workspace, …)`` (issue 26 item 3; the shape and conventions of :mod:`mbkron.model.kinematics`).

The ``Model`` methods of the same names call these; the work is the path kernels'
(:meth:`mbkron.algorithms.paths.paths.MuscleSet.compiled_lengths_and_moment_arms`, Eq. 149–195). With a
``workspace`` the lengths and the moment arms are evaluated together and kept in it (:attr:`Workspace.paths
<mbkron.model.workspace.Workspace.paths>`), so that both at one ``q`` evaluate the paths once; the values are the
same, bit for bit, with or without one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.arguments import finite_evaluation, finite_result, state_array
from mbkron.core.errors import ConfigurationError
from mbkron.model.kinematics import as_state, kinematics, silenced_kinematics

__all__ = ["moment_arms", "muscle_lengths", "muscle_velocities"]


def muscle_set(model):
    """``model.muscle_set``; a ConfigurationError where the model has no muscles."""
    if model.muscle_set is None:
        raise ConfigurationError(f"model `{model.name}` has no muscles (add them with ModelBuilder.add_muscle)")
    return model.muscle_set


def muscle_lengths(model, workspace, q: ArrayLike) -> NDArray[np.float64]:
    """Musculotendon path lengths ``L(q)``, m, shape (..., n_mt) (:meth:`mbkron.Model.muscle_lengths`)."""
    return _evaluated(model, workspace, q, 0, "muscle lengths")


def moment_arms(model, workspace, q: ArrayLike) -> NDArray[np.float64]:
    """Moment arms ``R(q) = −∂L/∂q`` (Eq. 192–195), shape (..., nq, n_mt) (:meth:`mbkron.Model.moment_arms`)."""
    return _evaluated(model, workspace, q, 1, "moment arms R")


def _evaluated(model, workspace, q: ArrayLike, which: int, quantity: str) -> NDArray[np.float64]:
    """``L`` (``which`` 0) or ``R`` (1) at ``q``: kept in ``workspace`` with the other (:func:`_kept`), or without
    one from kinematics of order ``which`` alone."""
    if workspace is not None:
        return _kept(model, workspace, q)[which].copy()
    muscle_set(model)
    kin = kinematics(model, None, q, which)
    return finite_evaluation(lambda: model.muscle_set.compiled_lengths_and_moment_arms(kin, which)[which], quantity,
                             kin.q)


def muscle_velocities(model, workspace, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
    """Musculotendon lengthening velocities ``L̇ = −Rᵀ q̇``, m/s, shape (..., n_mt)."""
    arms, qd = moment_arms(model, workspace, q), as_state(model, qd, "qd")
    return finite_evaluation(lambda: -np.einsum("...km,...k->...m", arms, qd), "muscle velocities", np.asarray(q),
                             qd=qd)


def muscle_generalized_forces(model, kin, muscle_forces, t: float, qd) -> NDArray[np.float64]:
    """``R F_mt`` (Eq. 192) at the kinematics ``kin`` for tensions given as an array (..., n_mt) or a callable
    ``(t, q, qd)``, N."""
    forces = muscle_forces(t, kin.q, qd) if callable(muscle_forces) else muscle_forces
    muscles = muscle_set(model)
    forces = state_array(forces, "muscle_forces", muscles.size, f"one tension per muscle: {', '.join(muscles.names)}")
    return np.einsum("...km,...m->...k", model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)[1], forces)


def _kept(model, workspace, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(L, R)`` at ``q`` from ``workspace.paths`` where its last evaluation of this model's paths was at
    this very ``q`` (bit for bit: a ``-0.0`` is evaluated afresh after a ``0.0``), else evaluated (one
    kinematics, one call of the path kernels) and kept there."""
    muscles = muscle_set(model)
    q = as_state(model, q)
    kept = workspace.paths
    if kept is not None and kept[0] is muscles and kept[1].shape == q.shape and kept[1].tobytes() == q.tobytes():
        return kept[2], kept[3]
    with np.errstate(all="ignore"):
        kin = silenced_kinematics(model, workspace, q, 1)
        lengths, arms = model.muscle_set.compiled_lengths_and_moment_arms(kin, 1)
    finite_result(lengths, "muscle lengths", kin.q)
    finite_result(arms, "moment arms R", kin.q)
    kept = (muscles, q.copy(), lengths, arms)
    for array in kept[1:]:
        array.setflags(write=False)
    workspace.paths = kept
    return lengths, arms
