"""Path forces (:class:`~mbkron.multibody.muscles.springs.PathForce`: OpenSim's ``PathSpring``, ``Ligament``) at states: their
paths' lengths ``L(q)`` and moment arms ``R = −∂L/∂q`` (Eq. 192–195) by a one-path
:class:`~mbkron.algorithms.paths.paths.MuscleSet` of the model's bodies and coordinates, their tensions, and their
generalized forces ``R T`` (Eq. 192: a positive tension pulls the ends together), which
:func:`mbkron.algorithms.dynamics.loads.generalized_forces` sums with the model's other loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.algorithms.paths.paths import MuscleSet
from mbkron.multibody.muscles.springs import PathForce

__all__ = ["path_set", "one_path_set", "path_length_and_moment_arms", "path_tension_and_moment_arms", "path_forces"]


def path_set(model, load: PathForce) -> MuscleSet:
    """The path of ``load`` as a one-path :class:`~mbkron.algorithms.paths.paths.MuscleSet` of ``model``'s bodies and
    coordinates: for one of ``model.loads`` the one built with the model (``model.path_sets``), for any other a new
    one (:func:`one_path_set`)."""
    for own, muscle_set in model.path_sets:
        if own is load:
            return muscle_set
    return one_path_set(load, model.body_indices, model.coordinates)


def one_path_set(load: PathForce, body_indices: Mapping[str, int], coordinates: Sequence[str]) -> MuscleSet:
    """A new one-path muscle set of ``load``'s path on the bodies ``body_indices`` (name → index) and the
    coordinates named ``coordinates``."""
    return MuscleSet([load.muscle_path()], body_indices, coordinates)


def path_length_and_moment_arms(model, load: PathForce, kin) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``L`` (...) and ``R = −∂L/∂q`` (..., nq) of ``load``'s path at the states of ``kin`` (order ≥ 1), by the
    compiled kernels."""
    length, R = path_set(model, load).compiled_lengths_and_moment_arms(kin, 1)
    return length[..., 0], R[..., 0]


def path_tension_and_moment_arms(model, load: PathForce, kin,
                                 qd: NDArray) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The tension ``T`` (...) of ``load`` at the states of ``kin`` with rates ``qd``, and ``R`` (..., nq): the
    lengthening speed is ``L̇ = −Rᵀ q̇``."""
    length, R = path_length_and_moment_arms(model, load, kin)
    speed = -np.einsum("...k,...k->...", R, np.broadcast_to(qd, R.shape))
    return load.tension(length, speed), R


def path_forces(model, load: PathForce, kin, qd: NDArray) -> NDArray[np.float64]:
    """``R T`` (Eq. 192) of ``load`` at the states of ``kin`` (order ≥ 1) with rates ``qd``, shape (..., nq)."""
    tension, R = path_tension_and_moment_arms(model, load, kin, qd)
    return R * tension[..., None]
