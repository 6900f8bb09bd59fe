"""The equations of motion of a model at states (Eq. 124–198): free functions of ``(model, workspace, …)``
(issue 26 item 3; the shape and conventions of :mod:`mbkron.model.kinematics`).

``M``, ``N q̇``, ``G`` by virtual work and the loads' generalized forces (:mod:`mbkron.algorithms.dynamics.terms`,
:mod:`mbkron.algorithms.dynamics.loads`), forward and inverse dynamics (one kernel call where the model's forward
plan has a route: :class:`mbkron.algorithms.dynamics.forward.ForwardDynamics`, the articulated-body algorithm for
simple trees; else ``M`` factored by Cholesky), and the joint reactions (:mod:`mbkron.algorithms.dynamics.reactions`).
The ``Model`` methods of the same names call these; their docstrings give the arguments' shapes and units.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.algorithms.dynamics import loads as loads_module, reactions, terms
from mbkron.algorithms.dynamics.forward import solve_positive_definite
from mbkron.algorithms.kinematics import tree
from mbkron.core.arguments import finite_evaluation, finite_result, state_array
from mbkron.core.errors import ConfigurationError
from mbkron.model.kinematics import as_state, checked_kinematics, joint_dynamics_at, provider_states
from mbkron.model.paths import muscle_generalized_forces
from mbkron.multibody import loads as load_records

__all__ = ["applied_forces", "equations_of_motion", "forward_dynamics", "gravity_forces", "inverse_dynamics",
           "joint_reactions", "mass_matrix", "velocity_forces"]

TERMS = dict(mass_matrix="mass matrix M", velocity_forces="velocity forces N q̇", gravity_forces="gravity forces G",
             applied_forces="applied forces Q")
"""What each term of :class:`~mbkron.algorithms.dynamics.terms.EquationsOfMotion` is called in errors."""
_ACCELERATIONS, _FORCES = "accelerations q̈ (forward dynamics)", "generalized forces τ (inverse dynamics)"
_CHUNK_ELEMENTS = 2_000_000
"""Largest number of doubles in one batched dynamics intermediate; bigger batches are chunked."""


def mass_matrix(model, workspace, q: ArrayLike) -> NDArray[np.float64]:
    """``M(q)`` (Eq. 145, 189), shape (..., nq, nq) (:meth:`mbkron.Model.mass_matrix`)."""
    q = as_state(model, q)
    return _term(model, workspace, q, np.zeros_like(q), "mass_matrix")


def velocity_forces(model, workspace, q: ArrayLike, qd: ArrayLike) -> NDArray[np.float64]:
    """``N(q, q̇) q̇`` (Eq. 126, 146, 190), shape (..., nq) (:meth:`mbkron.Model.velocity_forces`)."""
    q, qd = np.broadcast_arrays(as_state(model, q), as_state(model, qd, "qd"))
    return _term(model, workspace, q, qd, "velocity_forces")


def gravity_forces(model, workspace, q: ArrayLike) -> NDArray[np.float64]:
    """``G(q)`` (Eq. 187, 197), shape (..., nq) (:meth:`mbkron.Model.gravity_forces`)."""
    q = as_state(model, q)
    return _term(model, workspace, q, np.zeros_like(q), "gravity_forces")


def _term(model, workspace, q, qd, name: str):
    """One of the inertial terms (``name``) at validated ``q``, ``qd``, checked finite (one state of an affine
    model in one kernel call: :meth:`ForwardDynamics.terms <mbkron.algorithms.dynamics.forward.ForwardDynamics.terms>`)."""
    fast = None if model.forward_plan is None else model.forward_plan.terms(q, qd)
    if fast is not None:
        return fast[("mass_matrix", "velocity_forces", "gravity_forces").index(name)]
    return finite_evaluation(lambda: getattr(terms.inertial_terms(
        model, qd, joint_dynamics_at(model, workspace, q, qd), model.spring_rows(())), name), TERMS[name], q, qd=qd)


def applied_forces(model, workspace, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0,
                   muscle_forces=None) -> NDArray[np.float64]:
    """Generalized forces of applied loads (``model.loads`` unless ``loads`` is given), Eq. 46, plus ``R F_mt`` of
    ``muscle_forces`` (:meth:`mbkron.Model.applied_forces`)."""
    kin, qd = checked_kinematics(model, workspace, as_state(model, q), 1), as_state(model, qd, "qd")
    return finite_evaluation(lambda: _applied(model, kin, qd, loads, t, muscle_forces), TERMS["applied_forces"],
                             kin.q, qd=qd)


def _applied(model, kin, qd, loads, t, muscle_forces=None) -> NDArray[np.float64]:
    loads = model.loads if loads is None else tuple(loads)
    Q = loads_module.generalized_forces(model, kin, loads, t, kin.q, qd)
    if muscle_forces is not None:
        Q = Q + muscle_generalized_forces(model, kin, muscle_forces, t, qd)
    return Q


def equations_of_motion(model, workspace, q: ArrayLike, qd: ArrayLike, loads: tuple | None = None, t: float = 0.0,
                        muscle_forces=None) -> terms.EquationsOfMotion:
    """All terms of ``M q̈ + N q̇ = G + Q`` (Eq. 198) from one kinematics evaluation
    (:meth:`mbkron.Model.equations_of_motion`)."""
    q, qd = as_state(model, q), as_state(model, qd, "qd")
    own = model.forward_plan is not None and loads is None and muscle_forces is None
    fast = model.forward_plan.terms(q, qd) if own else None
    if fast is not None:  # one state of an affine model: one kernel call, its values checked finite there
        return terms.EquationsOfMotion(*fast[:4])
    with np.errstate(all="ignore"):
        result = _all_terms(model, workspace, q, qd, loads, t, muscle_forces)
    for name, quantity in TERMS.items():
        finite_result(getattr(result, name), quantity, q, qd=qd)
    return result


def _all_terms(model, workspace, q, qd, loads, t, muscle_forces) -> terms.EquationsOfMotion:
    """:func:`equations_of_motion` at validated ``q``, ``qd``: chunked where a batch is large."""
    # bounds what a load may form from the kinematics: `kin.twists`, (states, nb, nq, 4, 4), on first use
    chunk = max(1, _CHUNK_ELEMENTS // (16 * model.nb * model.nq))
    kinematics_free = not (model.loads if loads is None else loads) and muscle_forces is None
    if q.ndim == 2 and qd.shape == q.shape and q.shape[0] > chunk and not kinematics_free:
        states = q.shape[0]
        parts = [_equations_of_motion(model, workspace, q[s:s + chunk], qd[s:s + chunk], loads, t,
                                      _rows(muscle_forces, s, s + chunk, states))
                 for s in range(0, states, chunk)]
        return terms.EquationsOfMotion(*(np.concatenate([getattr(p, name) for p in parts]) for name in (
            "mass_matrix", "velocity_forces", "gravity_forces", "applied_forces")))
    return _equations_of_motion(model, workspace, q, qd, loads, t, muscle_forces)


def _rows(values, start: int, stop: int, states: int):
    """Rows ``start:stop`` of per-state values given as an array of leading size ``states``."""
    if values is None or callable(values) or np.ndim(values) < 2 or np.shape(values)[0] != states:
        return values
    return np.asarray(values)[start:stop]


def _equations_of_motion(model, workspace, q, qd, loads, t, muscle_forces) -> terms.EquationsOfMotion:
    if q.shape != qd.shape:
        q, qd = np.broadcast_arrays(q, qd)
    values = joint_dynamics_at(model, workspace, q, qd)
    loads = model.loads if loads is None else tuple(loads)
    springs = (model.kernel_springs if loads is model.loads
               else tuple(load for load in loads if load_records.in_kernel(load)))
    M, velocity, gravity, applied = terms.inertial_terms(model, qd, values, model.spring_rows(springs))
    if applied is None:
        applied = np.zeros(q.shape)
    elif loads:  # the kernel did the spring-dampers and constant line forces; joint-space loads need no kinematics
        joint_space = (load_records.JointTorque, load_records.GeneralizedForce)
        for load in loads:
            if isinstance(load, joint_space):
                applied = applied + loads_module.joint_space_force(model, values[1], load, t, q, qd)
        loads = tuple(load for load in loads if not (isinstance(load, joint_space) or load_records.in_kernel(load)))
    if loads or muscle_forces is not None:
        kin = tree.compute_kinematics(model.tree, (*values[:2], None), q, 1)
        applied = applied + _applied(model, kin, qd, loads, t, muscle_forces)
    return terms.EquationsOfMotion(mass_matrix=M, velocity_forces=velocity, gravity_forces=gravity,
                                   applied_forces=applied)


def _equation_terms(model, workspace, q, qd, loads, t, muscle_forces):
    """``M`` and the right-hand side ``G + Q + R F_mt − N q̇`` of Eq. 198 without actuation."""
    result = equations_of_motion(model, workspace, q, qd, loads, t, muscle_forces)
    return result.mass_matrix, result.gravity_forces + result.applied_forces - result.velocity_forces


def inverse_dynamics(model, workspace, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None,
                     t: float = 0.0, muscle_forces=None) -> NDArray[np.float64]:
    """``τ = M q̈ + N q̇ − G − Q_loads − R F_mt`` (Eq. 198) (:meth:`mbkron.Model.inverse_dynamics`): by the
    recursive Newton–Euler algorithm for a simple tree, one kernel call for one state of an affine model, else from
    the terms."""
    q, qd, qdd = as_state(model, q), as_state(model, qd, "qd"), as_state(model, qdd, "qdd")
    compiled = model.forward_plan is not None and loads is None and muscle_forces is None
    tau = model.forward_plan.inverse(q, qd, qdd) if compiled else None  # simple trees: RNEA
    if tau is None and compiled:  # one state of an affine model: τ from its terms in one kernel call
        fast = model.forward_plan.terms(q, qd, qdd)
        tau = None if fast is None else fast[4]
    if tau is None:
        M, rhs = _equation_terms(model, workspace, q, qd, loads, t, muscle_forces)
        tau = finite_evaluation(lambda: (M @ qdd[..., None])[..., 0] - rhs, _FORCES, q, qd=qd, qdd=qdd)
    return finite_result(tau, _FORCES, q, qd=qd, qdd=qdd)


def forward_dynamics(model, workspace, q: ArrayLike, qd: ArrayLike, tau: ArrayLike | None = None,
                     loads: tuple | None = None, t: float = 0.0, muscle_forces=None) -> NDArray[np.float64]:
    """``q̈ = M⁻¹(G + Q_loads + R F_mt + τ − N q̇)`` (Eq. 198) (:meth:`mbkron.Model.forward_dynamics`): one kernel
    call where the model's forward plan has a route, else ``M`` factored by Cholesky, whose failure is the
    ConfigurationError that ``M`` is not positive definite there."""
    common = (model.forward_plan is not None and tau is None and loads is None and muscle_forces is None
              and workspace is None)
    qdd = model.forward_plan.one_state(q, qd) if common else None  # the common case: checked by the finiteness of q̈
    if qdd is not None:
        return qdd
    q, qd = as_state(model, q), as_state(model, qd, "qd")
    if tau is not None:
        tau = state_array(tau, "tau", model.nq, "one generalized force per coordinate")
    if model.forward_plan is not None and loads is None and muscle_forces is None:
        qdd = model.forward_plan(model, q, qd, tau, provider_states(model, workspace))
        if qdd is not None:
            return finite_result(qdd, _ACCELERATIONS, q, qd=qd)
    M, rhs = _equation_terms(model, workspace, q, qd, loads, t, muscle_forces)
    with np.errstate(all="ignore"):
        qdd = solve_positive_definite(M, rhs if tau is None else rhs + tau)
    if qdd is None:
        raise ConfigurationError(_not_positive_definite(model, M, q))
    return finite_result(qdd, _ACCELERATIONS, q, qd=qd)


def _not_positive_definite(model, M: NDArray, q: NDArray) -> str:
    """The error where ``M(q)`` (one or a batch) is not positive definite: its smallest eigenvalue and the
    coordinates along its eigenvector (those of at least 30 % of its largest component), whose motion moves no
    mass or inertia there."""
    nq = M.shape[-1]
    with np.errstate(all="ignore"):
        values, vectors = np.linalg.eigh(np.nan_to_num(M.reshape(-1, nq, nq)))
    state = int(np.argmin(values[:, 0]))
    direction = np.abs(vectors[state, :, 0])
    names = ", ".join(f"`{model.coordinates[k]}`" for k in np.flatnonzero(direction >= 0.3 * direction.max()))
    return (f"the mass matrix is not positive definite at q = {np.asarray(q).tolist()}: smallest eigenvalue "
            f"{values[state, 0]:.3g}, along {names} (a motion of these coordinates that moves no mass or inertia "
            "there: bodies without mass or inertia, or a joint-variable map that is singular there, as a plane "
            "of elevation at zero elevation); start from another state")


def joint_reactions(model, workspace, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, loads: tuple | None = None,
                    t: float = 0.0) -> reactions.JointReactions:
    """Net joint force and moment that each body's parent exerts on it, Newton–Euler
    (:meth:`mbkron.Model.joint_reactions`, :mod:`mbkron.algorithms.dynamics.reactions`)."""
    q, qd, qdd = as_state(model, q), as_state(model, qd, "qd"), as_state(model, qdd, "qdd")
    f, grad, convective = joint_dynamics_at(model, workspace, q, qd)
    kin = checked_kinematics(model, workspace, q, 1, (f, grad, None))
    with np.errstate(all="ignore"):
        wrenches = reactions.joint_reactions(model, kin, qd, qdd, loads, t, convective)
    finite_result(np.concatenate([wrenches.force, wrenches.moment], -1), "joint reactions", kin.q, qd=qd, qdd=qdd)
    return wrenches
