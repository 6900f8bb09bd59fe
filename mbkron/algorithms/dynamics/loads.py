"""Generalized forces of applied loads (the descriptions: :mod:`mbkron.multibody.loads`).

Their generalized forces follow from virtual work, Eq. 46: a force ``F`` at a body point ``p`` contributes
``Q = (∂p/∂q)ᵀ F``; a torque ``τ`` on a body contributes ``Q = (∂θ/∂q)ᵀ τ`` with the angular-velocity
Jacobian of Eq. 180.

The Jacobians of point forces and body torques are :func:`mbkron.algorithms.dynamics.points.jacobians` (one compiled
implementation, :mod:`mbkron.algorithms.kinematics.points_kernels`).

The library's other loads are evaluated by type by the free functions of their modules
(:func:`mbkron.algorithms.dynamics.bushings.bushing_forces`, :func:`mbkron.algorithms.dynamics.contact.contact_forces`,
:func:`mbkron.algorithms.dynamics.hunt_crossley.hunt_crossley_forces`, :func:`mbkron.algorithms.paths.forces.path_forces`). Loads defined above the library's layers implement
the load protocol instead: ``check(bodies, joints, coordinates, where, problems)`` and
``generalized_forces(model, kin, t, q, qd)``; :func:`~mbkron.multibody.loads.check_load` and
:func:`generalized_forces` call them.
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.arrays import batch_rows, writable
from mbkron.multibody.layout import line_rows
from mbkron.core.arguments import named_index
from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.multibody.bushings import BushingForce
from mbkron.algorithms.dynamics.bushings import bushing_forces
from mbkron.algorithms.dynamics.contact import contact_forces
from mbkron.multibody.contact import SmoothSphereHalfSpace
from mbkron.algorithms.dynamics.hunt_crossley import hunt_crossley_forces
from mbkron.multibody.hunt_crossley import HuntCrossley
from mbkron.multibody.loads import (BodyTorque, CoordinateLimitForce, GeneralizedForce, JointTorque, LineForce,
                                          PointForce, SpringDamper, Value)
from mbkron.algorithms.dynamics.points import jacobians
from mbkron.algorithms.kinematics.tree import point_positions
from mbkron.algorithms.paths.forces import path_forces
from mbkron.multibody.muscles.springs import PathForce

__all__ = ["DIFFERENTIATED", "coordinate_limit_force", "coordinate_limit_force_derivatives", "direction",
           "evaluate_value", "load_derivatives"]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_compiled_dynamics = LazyModule("mbkron.algorithms.dynamics.kernels")


DIFFERENTIATED = (CoordinateLimitForce,)
"""Loads whose generalized forces depend on the state and which :func:`load_derivatives` differentiates (issue 30);
the derivatives of the dynamics take the rest of a model's loads in the compiled plan
(:meth:`mbkron.algorithms.dynamics.forward.ForwardDynamics.plan` with ``skip``)."""


def _smooth_step(u: np.ndarray) -> np.ndarray:
    """Simbody's ``stepUp(u) = u³(10 + u(6u − 15))`` of ``u`` clamped to [0, 1] (``Function::Step``)."""
    u = np.clip(u, 0.0, 1.0)
    return u * u * u * (10 + u * (6 * u - 15))


def _smooth_step_slope(u: np.ndarray) -> np.ndarray:
    """``d stepUp/du = 30 u² (1 − u)²`` inside (0, 1), zero outside (where the clamp holds it; the step is C²
    there, so the two sides agree at 0 and 1)."""
    u = np.clip(u, 0.0, 1.0)
    return 30.0 * (u * (1.0 - u)) ** 2


def _coordinate_limit(load: CoordinateLimitForce, q: np.ndarray, qd: np.ndarray,
                      derivatives: bool) -> tuple[np.ndarray, ...]:
    """:func:`coordinate_limit_force`, and with ``derivatives`` its partial derivatives by ``q`` and ``q̇``
    (:func:`coordinate_limit_force_derivatives`)."""
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    k_up, k_low, width = load.upper_stiffness, load.lower_stiffness, load.transition
    up_end, low_start = load.upper_limit + width, load.lower_limit - width  # Step(0, k_up, q_up, q_up + w)
    up_scale, low_scale = 1 / (up_end - load.upper_limit), 1 / (load.lower_limit - low_start)
    u_up, u_low = (q - load.upper_limit) * up_scale, (q - low_start) * low_scale
    stiffness_up = 0.0 + _smooth_step(u_up) * k_up
    stiffness_low = k_low + _smooth_step(u_low) * (0.0 - k_low)
    elastic = -stiffness_up * (q - load.upper_limit) + stiffness_low * (load.lower_limit - q)
    damping = -load.damping * (stiffness_up / k_up + stiffness_low / k_low)
    force = elastic + damping * qd
    if not derivatives:
        return (force,)
    slope_up = _smooth_step_slope(u_up) * up_scale * k_up  # ∂K_up/∂q
    slope_low = -_smooth_step_slope(u_low) * low_scale * k_low  # ∂K_low/∂q
    by_q = (-slope_up * (q - load.upper_limit) - stiffness_up + slope_low * (load.lower_limit - q) - stiffness_low
            - load.damping * (slope_up / k_up + slope_low / k_low) * qd)
    return force, by_q, np.broadcast_to(damping, force.shape).copy()


def coordinate_limit_force(load: CoordinateLimitForce, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The generalized force of a :class:`CoordinateLimitForce` at its coordinate's values ``q`` and rates
    ``qd`` (arrays of any shape, SI units), in the order of operations of OpenSim 4.6's ``calcLimitForce``."""
    return _coordinate_limit(load, q, qd, False)[0]


def coordinate_limit_force_derivatives(load: CoordinateLimitForce, q: np.ndarray,
                                       qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`coordinate_limit_force` ``Q`` and its exact derivatives ``∂Q/∂q``, ``∂Q/∂q̇`` by its coordinate's value
    and rate (arrays of the broadcast shape of ``q`` and ``qd``).

    With ``K_up = k_up s(u_up)``, ``K_low = k_low (1 − s(u_low))`` (``u`` the clamped steps' arguments,
    ``s' = 30 u² (1 − u)²``): ``∂Q/∂q = −K_up' (q − q_up) − K_up + K_low' (q_low − q) − K_low − c (K_up'/k_up +
    K_low'/k_low) q̇`` and ``∂Q/∂q̇ = −c (K_up/k_up + K_low/k_low)``, with ``K_up' = k_up s'(u_up)/w``,
    ``K_low' = −k_low s'(u_low)/w``.
    """
    return _coordinate_limit(load, q, qd, True)


def load_derivatives(model, loads, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The generalized force ``Q`` of ``loads`` (each of a :data:`DIFFERENTIATED` kind) at states ``q``, ``qd`` of
    one shape (..., nq) and its exact derivatives ``∂Q/∂q``, ``∂Q/∂q̇`` (..., nq, nq), ``[..., k, m] = ∂Q_k/∂x_m``."""
    Q = np.zeros(q.shape)
    by_q, by_qd = np.zeros(q.shape + q.shape[-1:]), np.zeros(q.shape + q.shape[-1:])
    for load in loads:
        if not isinstance(load, CoordinateLimitForce):
            raise TypeError(f"no derivatives for a load of kind {type(load).__name__}")
        k = named_index(model.coordinate_indices, load.coordinate, "coordinate")
        force, d_q, d_qd = coordinate_limit_force_derivatives(load, q[..., k], qd[..., k])
        Q[..., k] += force
        by_q[..., k, k] += d_q
        by_qd[..., k, k] += d_qd
    return Q, by_q, by_qd


def evaluate_value(value: Value, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """A load's value at ``(t, q, q̇)``: the constant, or the callable evaluated."""
    if callable(value):
        return np.asarray(value(t, q, qd), dtype=float)
    return np.asarray(value, dtype=float)


# ---------------------------------------------------------------------- generalized forces
def direction(value: np.ndarray, kin, body: int, frame: str) -> np.ndarray:
    """A vector given in ``frame`` expressed in the ground frame."""
    if frame == "body":
        return (kin.T[..., body, :3, :3] @ value[..., None])[..., 0]
    return value


def _body_load_jacobians(model, kin, loads) -> np.ndarray | None:
    """:func:`mbkron.algorithms.dynamics.points.jacobians` (..., n, 6, nq) of the point forces (at their points) and body
    torques among ``loads``, in their order; None without such loads."""
    bodies, points = [], []
    for load in loads:
        if isinstance(load, (PointForce, BodyTorque)):
            b = named_index(model.body_indices, load.body, "body")
            bodies.append(b)
            if isinstance(load, PointForce):
                points.append(point_positions(kin, b, load.point))
            else:  # a torque's row 3–5 does not depend on the point
                points.append(np.zeros(3))
    if not bodies:
        return None
    batch = kin.q.shape[:-1]
    return jacobians(model, kin, bodies, np.stack([np.broadcast_to(p, batch + (3,)) for p in points], axis=-2))


def generalized_forces(model, kin, loads, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Generalized forces of applied loads by virtual work (Eq. 46, 161), shape (..., nq).

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        At ``q`` with ``order >= 1``.
    loads : iterable of Load
    t : float
        Time, passed to callable load values.
    q, qd : ndarray, shape (..., nq)
    """
    Q = np.zeros(q.shape)
    loads = tuple(loads)
    J = _body_load_jacobians(model, kin, loads)  # ∂p/∂q and ∂ω/∂q̇ of every point force and body torque, one call
    row = 0
    for load in loads:
        if isinstance(load, PointForce):
            b = named_index(model.body_indices, load.body, "body")
            force = direction(evaluate_value(load.force, t, q, qd), kin, b, load.frame)
            Q += np.einsum("...xk,...x->...k", J[..., row, :3, :], force)
            row += 1
        elif isinstance(load, BodyTorque):
            b = named_index(model.body_indices, load.body, "body")
            torque = direction(evaluate_value(load.torque, t, q, qd), kin, b, load.frame)
            Q += np.einsum("...xk,...x->...k", J[..., row, 3:, :], torque)
            row += 1
        elif isinstance(load, (JointTorque, GeneralizedForce, CoordinateLimitForce)):
            Q += joint_space_force(model, kin.grad, load, t, q, qd)
        elif isinstance(load, (SpringDamper, LineForce)):
            tension, length_gradient = line_tension(model, kin, load, t, q, qd)
            Q -= tension[..., None] * length_gradient
        elif isinstance(load, BushingForce):
            Q += bushing_forces(model, load, kin, qd)
        elif isinstance(load, SmoothSphereHalfSpace):
            Q += contact_forces(model, load, kin, qd)
        elif isinstance(load, HuntCrossley):
            Q += hunt_crossley_forces(model, load, kin, qd)
        elif isinstance(load, PathForce):
            Q += path_forces(model, load, kin, qd)
        elif callable(getattr(load, "generalized_forces", None)):  # the load protocol (module docstring)
            Q += load.generalized_forces(model, kin, t, q, qd)
        else:
            raise TypeError(f"not a load: {load!r}")
    return Q


def joint_space_force(model, grad: np.ndarray, load, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Generalized force of a :class:`JointTorque` (``∇f_jᵀ τ``), :class:`GeneralizedForce` or
    :class:`CoordinateLimitForce`, shape (..., nq).

    Needs only the joint-variable gradients ``grad`` (..., nj, nq), no kinematics.
    """
    if isinstance(load, JointTorque):
        j = named_index(model.joint_indices, load.joint, "joint")
        return grad[..., j, :] * evaluate_value(load.torque, t, q, qd)[..., None]
    Q = np.zeros(q.shape)
    k = named_index(model.coordinate_indices, load.coordinate, "coordinate")
    if isinstance(load, CoordinateLimitForce):
        Q[..., k] = coordinate_limit_force(load, q[..., k], np.broadcast_to(qd, q.shape)[..., k])
    else:
        Q[..., k] = evaluate_value(load.value, t, q, qd)
    return Q


def line_geometry(model, kin, load) -> tuple[np.ndarray, np.ndarray]:
    """Length ``L`` of the line between a load's two points and its gradient ``∂L/∂q`` at the states of ``kin``
    (order ≥ 1), by the kernel that gives the dynamics its spring-dampers
    (:func:`mbkron.algorithms.dynamics.kernels.line_geometry`, :func:`~mbkron.algorithms.dynamics.kernels.line_length`).

    Raises
    ------
    ConfigurationError
        Where the two points coincide (the direction is undefined).
    """
    bodies = [model.nb if body == "ground" else named_index(model.body_indices, body, "body")
              for body in (load.body_a, load.body_b)]
    row = line_rows([bodies], [load])
    row.setflags(write=False)
    batch, nj, nq = kin.f.shape[:-1], kin.f.shape[-1], kin.q.shape[-1]
    length, gradient, regular = _compiled_dynamics.line_geometry(
        *model.tree.kernel_arrays, writable(kin.f).reshape(-1, nj), batch_rows(kin.grad, batch, 2), row)
    if not regular:
        raise ConfigurationError(f"the two points of {type(load).__name__} between `{load.body_a}` and `{load.body_b}` "
                                 f"coincide at q = {kin.q.tolist()}: its direction is undefined")
    return length.reshape(batch), gradient.reshape(batch + (nq,))


def line_tension(model, kin, load, t: float, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tension of a spring-damper or line force and ``∂L/∂q`` (tension > 0 pulls the ends together)."""
    length, gradient = line_geometry(model, kin, load)
    if isinstance(load, SpringDamper):
        rate = np.einsum("...k,...k->...", gradient, qd)
        tension = load.stiffness * (length - load.free_length) + load.damping * rate
    else:
        tension = np.broadcast_to(evaluate_value(load.tension, t, q, qd), length.shape)
    return tension, gradient
