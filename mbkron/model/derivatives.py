"""Exact first derivatives of the equations of motion (Eq. 198): free functions of ``(model, workspace, …)``
(issue 30; the shape and conventions of :mod:`mbkron.model.kinematics`).

- :func:`inverse_dynamics_derivatives`: ``τ(q, q̇, q̈) = M q̈ + N q̇ − G − Q`` with ``∂τ/∂q``, ``∂τ/∂q̇`` and
  ``∂τ/∂q̈ = M``, by the recursive Newton–Euler algorithm in the ground frame differentiated in closed form
  (:func:`mbkron.algorithms.dynamics.articulated.articulated_derivatives`; in the joint variables and then by the
  chain rule where they are not one coordinate per joint): exact (round-off only), as Pinocchio's
  ``computeRNEADerivatives`` (Carpentier & Mansard 2018), whose values it equals to round-off
  (``validation/pinocchio_derivatives.py``).
- :func:`forward_dynamics_derivatives`: ``q̈(q, q̇, τ)`` with ``∂q̈/∂q = −M⁻¹ ∂τ/∂q``, ``∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇`` and
  ``∂q̈/∂τ = M⁻¹``, the derivatives of the inverse dynamics taken at the ``q̈`` of the forward dynamics (the
  implicit function theorem on ``τ(q, q̇, q̈(q, q̇, τ)) = τ``).

Conventions: ``[..., k, m]`` is the derivative of the ``k``-th output by the ``m``-th variable (a Jacobian's rows are
the outputs), SI units of the coordinates (N·m or N per rad or m, per rad/s or m/s, per rad/s² or m/s²). Covered
today: explicit joint variables (affine in q, ``f = A q + c``: trees, couplers, affine rhythms; and empirical
functions of one coordinate: splines, GCV splines, Fourier series, in affine maps), with loads that do not depend on
the state (constant joint torques and generalized forces). Other models (formulas, constraint groups;
spring-dampers, line forces, point loads) raise NotImplementedError naming what is not covered yet; the plan for
them is docs/derivatives.md.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.algorithms.dynamics.forward import solve_positive_definite_columns
from mbkron.algorithms.dynamics.loads import DIFFERENTIATED, load_derivatives
from mbkron.core.arguments import state_array
from mbkron.core.errors import ConfigurationError
from mbkron.model.dynamics import forward_dynamics, inverse_dynamics
from mbkron.model.kinematics import as_state, provider_states
from mbkron.multibody import loads as load_records

__all__ = ["ForwardDynamicsDerivatives", "InverseDynamicsDerivatives", "forward_dynamics_derivatives",
           "inverse_dynamics_derivatives"]

_CONSTANT = (load_records.JointTorque, load_records.GeneralizedForce)
"""Loads the derivatives take when their values are constants (their generalized forces do not depend on the
state)."""


class InverseDynamicsDerivatives(NamedTuple):
    """``τ`` and its first derivatives at one state or a batch (shapes (..., nq) and (..., nq, nq))."""

    tau: NDArray[np.float64]
    """``τ = M q̈ + N q̇ − G − Q`` (Eq. 198), N·m or N."""
    dtau_dq: NDArray[np.float64]
    """``∂τ/∂q``: ``[..., k, m] = ∂τ_k/∂q_m``."""
    dtau_dqd: NDArray[np.float64]
    """``∂τ/∂q̇``."""
    mass_matrix: NDArray[np.float64]
    """``∂τ/∂q̈ = M`` (Eq. 145)."""


class ForwardDynamicsDerivatives(NamedTuple):
    """``q̈`` and its first derivatives at one state or a batch (shapes (..., nq) and (..., nq, nq))."""

    qdd: NDArray[np.float64]
    """``q̈ = M⁻¹ (G + Q + τ − N q̇)`` (Eq. 198)."""
    dqdd_dq: NDArray[np.float64]
    """``∂q̈/∂q``: ``[..., k, m] = ∂q̈_k/∂q_m``."""
    dqdd_dqd: NDArray[np.float64]
    """``∂q̈/∂q̇``."""
    dqdd_dtau: NDArray[np.float64]
    """``∂q̈/∂τ = M⁻¹``."""


def inverse_dynamics_derivatives(model, workspace, q: ArrayLike, qd: ArrayLike,
                                 qdd: ArrayLike) -> InverseDynamicsDerivatives:
    """``τ(q, q̇, q̈)`` of the model's own loads and its derivatives ``∂τ/∂q``, ``∂τ/∂q̇``, ``∂τ/∂q̈ = M``
    (:meth:`mbkron.Model.inverse_dynamics_derivatives`); ``q``, ``qd``, ``qdd`` of shape (..., nq), broadcast
    together. Constraint groups continue from ``workspace``'s solutions (advancing them), or without one from their
    assembly (:meth:`mbkron.Model.joint_variables`).

    Raises
    ------
    NotImplementedError
        For a model the derivatives do not cover yet (see the module docstring), naming why.
    ConfigurationError
        Where ``τ`` is not finite at a state.
    """
    fast = None if model.forward_plan is None else model.forward_plan.one_state_derivatives(q, qd, qdd)
    if fast is not None:  # one state given as float arrays: checked by the finiteness of τ
        return InverseDynamicsDerivatives(*fast)
    _check_covered(model)
    q, qd, qdd = as_state(model, q), as_state(model, qd, "qd"), as_state(model, qdd, "qdd")
    if not q.shape == qd.shape == qdd.shape:
        q, qd, qdd = np.broadcast_arrays(q, qd, qdd)
    result = model.derivatives_plan.inverse_derivatives(q, qd, qdd, provider_states(model, workspace))
    if result is not None and model.derivative_loads:  # τ = (the plan's τ) − Q of the state-dependent loads
        tau, dtau_dq, dtau_dqd, mass = result
        load, load_dq, load_dqd = load_derivatives(model, model.derivative_loads, q, qd)
        result = tau - load, dtau_dq - load_dq, dtau_dqd - load_dqd, mass
        result = result if all(np.isfinite(x).all() for x in result[:3]) else None
    if result is None:  # a state where τ is not finite: the inverse dynamics names it
        inverse_dynamics(model, workspace, q, qd, qdd)
        raise ConfigurationError(f"the derivatives of the inverse dynamics of model `{model.name}` are not finite at "
                                 f"one of the {q.size // model.nq} states given, though τ is")
    return InverseDynamicsDerivatives(*result)


def forward_dynamics_derivatives(model, workspace, q: ArrayLike, qd: ArrayLike,
                                 tau: ArrayLike | None = None) -> ForwardDynamicsDerivatives:
    """``q̈(q, q̇, τ)`` with the model's own loads and actuation ``tau``, and its derivatives ``∂q̈/∂q``, ``∂q̈/∂q̇``,
    ``∂q̈/∂τ = M⁻¹`` (:meth:`mbkron.Model.forward_dynamics_derivatives`): the inverse dynamics' derivatives at the
    forward dynamics' ``q̈``, ``∂q̈/∂x = −M⁻¹ ∂τ/∂x``: for a tree with a coordinate per joint in one kernel call
    (:func:`mbkron.algorithms.dynamics.articulated.articulated_forward_derivatives`), else with ``M`` factored once per
    state by Cholesky (:func:`mbkron.algorithms.dynamics.forward.solve_positive_definite_columns`).

    Raises
    ------
    NotImplementedError
        For a model the derivatives do not cover yet (see the module docstring), naming why.
    ConfigurationError
        Where ``M`` is not positive definite or ``q̈`` is not finite at a state.
    """
    fast = None if model.forward_plan is None else model.forward_plan.one_state_forward_derivatives(q, qd, tau)
    if fast is not None:  # one state given as float arrays: checked by the finiteness of the results
        return ForwardDynamicsDerivatives(*fast)
    _check_covered(model)
    q, qd = as_state(model, q), as_state(model, qd, "qd")
    if tau is not None:
        tau = state_array(tau, "tau", model.nq, "one generalized force per coordinate")
    shape = np.broadcast_shapes(q.shape, qd.shape, q.shape if tau is None else tau.shape)
    if q.shape != shape or qd.shape != shape:
        q, qd = np.broadcast_to(q, shape), np.broadcast_to(qd, shape)
    plan = model.derivatives_plan
    # simple trees: one kernel call; with state-dependent loads, which the plan leaves out, as for other models
    result = None if model.derivative_loads else plan.forward_derivatives(q, qd, tau)
    if result is None and (plan.simple is None or model.derivative_loads):  # the inverse derivatives at the q̈
        qdd = forward_dynamics(model, workspace, q, qd, tau)
        _, dtau_dq, dtau_dqd, mass = inverse_dynamics_derivatives(model, workspace, q, qd, qdd)
        identity = np.broadcast_to(np.eye(model.nq), mass.shape)
        solved = solve_positive_definite_columns(mass, np.concatenate([identity, -dtau_dq, -dtau_dqd], axis=-1))
        if solved is not None:
            nq = model.nq
            result = qdd, solved[..., nq:2 * nq], solved[..., 2 * nq:], solved[..., :nq]
    if result is None:  # M not positive definite or q̈ not finite at a state: the forward dynamics names it
        forward_dynamics(model, workspace, q, qd, tau)
        raise ConfigurationError(f"the derivatives of the forward dynamics of model `{model.name}` are not finite, or "
                                 f"their mass matrix not positive definite, at one of the {q.size // model.nq} states "
                                 "given, though q̈ is finite there")
    return ForwardDynamicsDerivatives(*result)


def _check_covered(model) -> None:
    """NotImplementedError naming why ``model``'s derivatives are not covered yet (the module docstring)."""
    plan = model.derivatives_plan
    if plan is None:
        kinds = sorted({type(load).__name__ for load in model.loads if not isinstance(load, _CONSTANT + DIFFERENTIATED)
                        or callable(getattr(load, "torque", getattr(load, "value", None)))})
        why = f"loads whose generalized forces depend on the state or time ({', '.join(kinds)})"
    else:
        why = plan.derivatives_gap()
    if why is None:
        return
    raise NotImplementedError(
        f"derivatives of the dynamics of model `{model.name}`: not implemented yet for {why}; they cover explicit "
        "joint variables (affine, or functions of one coordinate) with loads that do not depend on the state "
        "and coordinate limit forces (docs/derivatives.md)")
