"""Joint variables and kinematics of a model at states: the algorithms as free functions of ``(model, workspace, …)``.

Pinocchio's shape (issue 26 item 3): a fixed :class:`~mbkron.model.model.Model`, a caller-owned
:class:`~mbkron.model.workspace.Workspace` (Pinocchio's ``Data``; None evaluates without one: constraint groups then
start from their assembly), and each algorithm a function of the two. The ``Model`` methods of the same names are
thin conveniences calling these (``model.kinematics(q, workspace=w)`` is ``kinematics(model, w, q)``); their
docstrings give the arguments' shapes and units. Each function checks its arguments (shape ``(..., nq)``, finite)
before evaluating, and its result (finite, else a ConfigurationError naming the quantity and the state). The work
itself is the algorithms' (:func:`mbkron.algorithms.jointvars.explicit.joint_values`,
:func:`mbkron.algorithms.kinematics.tree.compute_kinematics`, :mod:`mbkron.algorithms.dynamics.points`).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.algorithms.dynamics import points as motions
from mbkron.algorithms.jointvars.explicit import check_joint_values, joint_dynamics, joint_values
from mbkron.algorithms.kinematics import tree
from mbkron.core.arguments import finite_evaluation, finite_result, order_argument, state_array

__all__ = ["angular_velocity", "joint_variables", "kinematics", "point_acceleration", "point_position",
           "point_velocity"]

_as_point = functools.partial(state_array, name="point", size=3, meaning="body coordinates")


def as_state(model, values: ArrayLike, name: str = "q") -> NDArray[np.float64]:
    """A state argument (``q``, ``qd``, ``qdd``) checked by :func:`mbkron.core.arguments.state_array`: shape
    (..., nq), finite."""
    return state_array(values, name, model.nq, "one value per coordinate")


def with_rates(model, q: ArrayLike, *rates: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    """``q`` and its rates (``qd``, then ``qdd``) checked (:func:`as_state`), ``q`` broadcast to the rates' batch
    where theirs is larger (the kinematics are evaluated at every state)."""
    q = as_state(model, q)
    rates = tuple(as_state(model, rate, name) for rate, name in zip(rates, ("qd", "qdd")))
    shape = np.broadcast_shapes(q.shape, *(rate.shape for rate in rates))
    return (q if q.shape == shape else np.broadcast_to(q, shape).copy(), *rates)


def provider_states(model, workspace) -> tuple | None:
    """The joint-variable providers' states in ``workspace`` (checked to be ``model``'s), or None: without a
    workspace or without providers."""
    jv = model.joint_variable_map
    return None if workspace is None or not jv.providers else workspace.states_for(jv)


def joint_variables(model, workspace, q: ArrayLike, order: int = 2):
    """``(f, ∇f, H)`` at ``q`` to ``order`` (:meth:`mbkron.Model.joint_variables`), continuing the constraint
    groups from ``workspace`` (advanced) or, with None, from their assembly."""
    return joint_values(model, as_state(model, q), order_argument(order), provider_states(model, workspace))


def joint_dynamics_at(model, workspace, q: NDArray, qd: NDArray):
    """``(f, ∇f, q̇ᵀHq̇)`` at validated ``q``, ``qd`` (:func:`mbkron.algorithms.jointvars.explicit.joint_dynamics`)."""
    return joint_dynamics(model, q, qd, provider_states(model, workspace))


def kinematics(model, workspace, q: ArrayLike, order: int = 2) -> tree.KinematicsData:
    """Transforms ``⁰_iA_4`` (Eq. 38–40) and their first and second derivatives (Eq. 74–99) at ``q``
    (:meth:`mbkron.Model.kinematics`)."""
    order = order_argument(order)
    return checked_kinematics(model, workspace, as_state(model, q), order)


def checked_kinematics(model, workspace, q: NDArray, order: int, values: tuple | None = None) -> tree.KinematicsData:
    """Kinematics of ``order`` at a validated ``q`` (from joint ``values`` ``(f, ∇f, H or None)`` when given,
    else evaluated to ``order``); finite."""
    with np.errstate(all="ignore"):
        return silenced_kinematics(model, workspace, q, order, values)


def silenced_kinematics(model, workspace, q: NDArray, order: int, values: tuple | None = None) -> tree.KinematicsData:
    """:func:`checked_kinematics` for a caller that has silenced numpy's floating-point warnings
    (``np.errstate(all="ignore")``); the joint variables checked as by
    :func:`~mbkron.algorithms.jointvars.explicit.joint_values`."""
    if values is None:
        values = model.joint_variable_map.evaluate_silenced(q, order, provider_states(model, workspace))
        check_joint_values(model, values[0], q)
    kin = tree.compute_kinematics(model.tree, values, q, order)
    finite_result(kin.T, "body transforms", q)
    return kin


def point_position(model, workspace, body: str | int, point: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Ground-frame position of a body-fixed point (Eq. 41; :meth:`mbkron.Model.point_position`), m."""
    kin, index, point = kinematics(model, workspace, q, 0), model.body_index(body), _as_point(point)
    return finite_evaluation(lambda: tree.point_positions(kin, index, point), "point position", kin.q)


def point_velocity(model, workspace, body: str | int, point: ArrayLike, q: ArrayLike,
                   qd: ArrayLike) -> NDArray[np.float64]:
    """Ground-frame velocity of a body-fixed point (Eq. 44), m/s: ``ω × r + v`` with the body's velocity twist
    (:func:`mbkron.algorithms.dynamics.points.point_velocities`)."""
    index, point = model.body_index(body), _as_point(point)
    q, qd = with_rates(model, q, qd)
    kin = kinematics(model, workspace, q, 1)
    return finite_evaluation(lambda: motions.point_velocities(model, kin, index, point, qd), "point velocity",
                             kin.q, qd=qd)


def point_acceleration(model, workspace, body: str | int, point: ArrayLike, q: ArrayLike, qd: ArrayLike,
                       qdd: ArrayLike) -> NDArray[np.float64]:
    """Ground-frame acceleration of a body-fixed point (Eq. 57), m/s²: ``(α_i + V_i²) {r; 1}`` with the body's
    twists (:func:`mbkron.algorithms.dynamics.points.point_accelerations`)."""
    index, point = model.body_index(body), _as_point(point)
    q, qd, qdd = with_rates(model, q, qd, qdd)
    f, grad, convective = joint_dynamics_at(model, workspace, q, qd)  # q̇ᵀH q̇ without the Hessians or D'_i
    kin = checked_kinematics(model, workspace, q, 1, (f, grad, None))
    return finite_evaluation(lambda: motions.point_accelerations(model, kin, index, point, qd, qdd, convective),
                             "point acceleration", kin.q, qd=qd, qdd=qdd)


def angular_velocity(model, workspace, body: str | int, q: ArrayLike, qd: ArrayLike,
                     frame: str = "world") -> NDArray[np.float64]:
    """Angular velocity of a body (Eq. 177–182), rad/s, in the ground frame or the body's own frame
    (:func:`mbkron.algorithms.dynamics.points.angular_velocities`)."""
    if frame not in ("world", "body"):  # before any evaluation
        raise ValueError(f"`frame` must be 'world' or 'body', got {frame!r}")
    index = model.body_index(body)
    q, qd = with_rates(model, q, qd)
    kin = kinematics(model, workspace, q, 1)
    return finite_evaluation(lambda: motions.angular_velocities(model, kin, qd, frame)[..., index, :],
                             "angular velocity", kin.q, qd=qd)
