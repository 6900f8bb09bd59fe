"""A constraint group's step with the model's dynamics, in one compiled call, and the runs of integrators around it.

The compiled continuation of :mod:`mbkron.algorithms.jointvars.kernels` solves one state of a constraint group (Eq. 100-120);
this module is what the dynamics makes of it, for a model with one such group whose other joint variables are
affine (:class:`mbkron.algorithms.dynamics.forward.ForwardDynamics`):

- :func:`group_forward_into` (and :func:`group_forward` from Python, :func:`forward` with a
  :class:`~mbkron.algorithms.jointvars.kernels.FastStep`): the step at ``q`` and, in the same call, the model's ``q̈``
  (Eq. 198, :func:`mbkron.algorithms.dynamics.forward_kernels.forward_solved`);
- :func:`state_rhs`: the right-hand side ``y' = (q̇, q̈)`` of the state ``y = (q, q̇)``, continuing from the previous
  state (a :func:`state_context` holds the continuation, the model's arrays and the arrays the step and the
  dynamics work in, allocated once per run; :func:`continuation` reads back where it has arrived);
- :func:`group_trbdf2`, :func:`group_jacobian`, :func:`group_runge_kutta`: TR-BDF2 steps
  (:mod:`mbkron.numerics.trbdf2`), the implicit solvers' Jacobian and the Runge–Kutta steps
  (:mod:`mbkron.numerics.runge_kutta`) with that right-hand side, a run of steps in one call.

They take the group's constraint callbacks by address (:attr:`~mbkron.algorithms.jointvars.kernels.FastStep.functions`), so
that numba compiles each kernel once for every model (see :mod:`mbkron.algorithms.jointvars.kernels`, "Generated code and
library kernels"); each kernel calls the one below it through its address (:mod:`mbkron.jit.calls`). The step
is the joint variables' and this module the dynamics': it sits with the dynamics, above the joint variables.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.numerics import runge_kutta
from mbkron.numerics import trbdf2 as compiled_trbdf2
from mbkron.jit.calls import address_only, borrowed, by_address, refer, referent
from mbkron.jit.common import jit
from mbkron.algorithms.dynamics.kernels import eom_state
from mbkron.algorithms.dynamics.forward_kernels import forward_scratch, forward_solved
from mbkron.numerics.linalg import copy_into, quadratic_forms
from mbkron.numerics.runge_kutta import adaptive_steps, derivatives, extra_stages
from mbkron.numerics.trbdf2 import state_jacobian, trbdf2_steps
from mbkron.algorithms.jointvars.kernels import OK, FastStep, step_kernel_into_at, step_work
from mbkron.algorithms.jointvars.solution import Solution

__all__ = ["AHEAD", "CONTINUATION", "DERIVATIVES", "EVALUATE_ONLY", "EXTRA_STAGES", "FORWARD_RETURNS",
           "RUNGE_KUTTA_STEP", "continuation", "forward", "group_forward", "group_forward_into", "group_jacobian",
           "group_runge_kutta", "group_trbdf2", "state_context", "state_rhs"]

FORWARD_RETURNS = ("Tuple((int64, float64[::1], float64[::1], float64[:, ::1], int64, float64, float64[:, :, ::1], "
                   "float64[::1], int64))")
"""What :func:`group_forward_into` returns, declared likewise (:data:`~mbkron.algorithms.jointvars.kernels.STEP_RETURNS`): compiling TR-BDF2 and the
right-hand side above it needs neither the constraint step nor the dynamics compiled."""


CONTINUATION = slice(-6, None)
"""Where a :func:`state_context` keeps its continuation: ``(q, f, tangent, curvature, p, scalars)``
last, ``scalars`` being ``(use_curvature, det_sign, condition)`` (the order :func:`state_rhs` unpacks)."""


@address_only
def group_forward_into(first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0,
                       settings, projection, geometry, links, inertia_rows, gravity, springs, joint_torque, force,
                       matrix, constant, rows, qd, scratch, work):  # pragma: no cover - compiled
    """:func:`step_kernel_into` at ``q`` (order 2, in ``work``: :func:`step_work`) and, in the same call, the
    model's ``q̈`` (Eq. 198, :func:`mbkron.algorithms.dynamics.forward_kernels.forward_solved`, in the arrays ``scratch`` of
    :func:`~mbkron.algorithms.dynamics.forward_kernels.forward_scratch`): :func:`state_rhs`'s, with a run's arrays; see
    :func:`group_forward`.

    Returns ``(status, p, f, tangent, det_sign, condition, hess, qdd, code)``: ``code`` is
    :func:`~mbkron.algorithms.dynamics.forward_kernels.forward_solved`'s (0 where the step's ``status`` is not ``OK``); ``qdd`` is
    the scratch's array.
    """
    status, p, f, tangent, det_sign, condition, grad, hess = step_kernel_into_at((
        first, second, borrowed(data), m, borrowed(A), borrowed(c), borrowed(q), borrowed(q0), borrowed(f0),
        borrowed(tangent0), borrowed(curvature0), use_curvature, det_sign0, settings, np.int64(2),
        projection, borrowed(work)))  # np.int64, not the literal 2: the same specialisation as step_kernel's
    if status != OK:
        return status, p, f, tangent, det_sign, condition, hess, scratch[3], 0
    qdd, code = forward_solved(borrowed(geometry), borrowed(links), borrowed(inertia_rows), borrowed(gravity),
                               borrowed(springs), borrowed(joint_torque), borrowed(force), borrowed(matrix),
                               borrowed(constant), borrowed(rows), f, grad, quadratic_forms(hess, qd), borrowed(q),
                               borrowed(qd), scratch)  # the dynamics needs q̇ᵀ H q̇ only
    return status, p, f, tangent, det_sign, condition, hess, qdd, code


_group_forward_into_at = by_address(group_forward_into, returns=FORWARD_RETURNS)
""":func:`group_forward_into` called through its address."""


@jit
def group_forward(first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
                  projection, geometry, links, inertia_rows, gravity, springs, joint_torque, force, matrix, constant,
                  rows, qd):  # pragma: no cover - compiled
    """:func:`group_forward_into` in arrays of its own (:func:`forward`, from Python: one call takes no more
    arrays to convert than it needs). Returns what it returns, ``qdd`` a new array."""
    return _group_forward_into_at((
        first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings, projection,
        geometry, links, inertia_rows, gravity, springs, joint_torque, force, matrix, constant, rows, qd,
        forward_scratch(links.shape[0], qd.shape[0], matrix.shape[0]), step_work(m, A.shape[0], A.shape[1])))


@jit
def _rhs(t, y, reference, advance):  # pragma: no cover - compiled
    """:func:`state_rhs` of the context ``reference`` refers to (:func:`~mbkron.jit.calls.refer`): the
    right-hand side the kernels below a run's call pass the context to by one pointer."""
    (first, second, data, m, A, c, settings, projection, geometry, links, inertia_rows, gravity, springs,
     joint_torque, force, matrix, constant, rows, scratch, work, start_q, start_f, start_tangent, curvature, start_p,
     scalars) = referent(reference)  # borrowed: held by the caller of the run's kernel
    nq = start_q.size
    q, qd = y[:nq], y[nq:]  # views: y is held by the caller for the call
    # the arrays go down a chain of kernels: borrowed, they cost no atomic reference counting on the way
    status, p, f, tangent, det_sign, condition, hess, qdd, code = _group_forward_into_at((
        first, second, borrowed(data), m, borrowed(A), borrowed(c), borrowed(q), borrowed(start_q), borrowed(start_f),
        borrowed(start_tangent), borrowed(curvature), scalars[0] != 0.0, np.int64(scalars[1]), settings, projection,
        borrowed(geometry), borrowed(links), borrowed(inertia_rows), borrowed(gravity), borrowed(springs),
        borrowed(joint_torque), borrowed(force), borrowed(matrix), borrowed(constant), borrowed(rows), borrowed(qd),
        borrowed(scratch), borrowed(work)))  # q̈ is the scratch's: read below, not returned
    out = np.empty(2 * nq)
    if status != OK or code != 0:
        return out, False
    for k in range(nq):
        out[k] = qd[k]
        out[nq + k] = qdd[k]
    if advance:
        copy_into(start_q, q)
        copy_into(start_f, f)
        copy_into(start_tangent, tangent)
        copy_into(curvature, hess)
        copy_into(start_p, p)
        scalars[0] = 1.0
        scalars[1] = det_sign
        scalars[2] = condition
    return out, True


@jit
def state_rhs(t, y, context, advance):  # pragma: no cover - compiled
    """``(y', ok)`` of the state ``y = (q, q̇)`` by :func:`group_forward_into` (the group's step from the
    continuation in ``context`` and the accelerations); with ``advance`` the continuation moves to the
    solution, as :meth:`mbkron.algorithms.jointvars.solvers.Continuation.advance`. ``ok`` is False where the kernel
    declines the state (the model's general route then solves it and raises the step's error). ``context`` is :func:`state_context`'s: the
    generated functions' addresses first, so one compilation serves every model. ``t`` is unused (the
    equations of motion are autonomous), the signature that of TR-BDF2's right-hand side."""
    return _rhs(t, y, refer(context), advance)


_rhs_at = by_address(_rhs, returns="Tuple((float64[::1], boolean))")
""":func:`_rhs` called through its address."""


EVALUATE_ONLY = -1
"""The ``max_steps`` of :func:`group_trbdf2` that takes no step but evaluates the right-hand side at ``(t, y)``."""


@jit
def group_trbdf2(t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu, piv, memory, counts,
                 context, times, limits, lower, upper, max_steps):  # pragma: no cover - compiled
    """Up to ``max_steps`` TR-BDF2 steps and their output rows (:func:`mbkron.numerics.trbdf2.trbdf2_steps`, which
    documents the arguments and the six values returned) with the right-hand side :func:`state_rhs` of the
    :func:`state_context` ``context`` (which carries the generated functions' addresses) and its Jacobian
    by :func:`~mbkron.numerics.trbdf2.state_jacobian`'s central differences: compiled once for every model with one
    constraint group.

    With ``max_steps`` :data:`EVALUATE_ONLY` no step: the right-hand side at ``(t, y)``, advancing, as the one row of
    ``derivatives`` (the outcome ``STEP_DECLINED`` where it declines the state) — a TR-BDF2 run's first evaluations
    (its start, its initial slope and step) by this kernel, so that the run compiles no other
    (:meth:`mbkron.algorithms.dynamics.forward.StateKernel.step_accelerations`)."""
    reference = refer(context)  # one pointer down the steps (context: the caller's)
    if max_steps == EVALUATE_ONLY:
        derivative, ok = _rhs_at((t, y, reference, np.bool_(True)))  # (by address: no second copy of it here)
        return ((compiled_trbdf2.STEP_OK if ok else compiled_trbdf2.STEP_DECLINED), 0, np.empty((0, 1 + 4 * y.size)),
                np.zeros(0, dtype=np.int64), np.empty((0, y.size)), derivative.reshape(1, y.size))
    return trbdf2_steps(_rhs, state_jacobian, reference, t, y, yp, t_bound, direction, max_step, rtol, atol,
                        newton_tol, nq, J, lu, piv, memory, counts, times, limits, lower, upper, max_steps)


@jit
def group_jacobian(t, y, nq, J, context):  # pragma: no cover - compiled
    """``J = ∂y'/∂y`` of :func:`state_rhs` at ``(t, y)`` by
    :func:`mbkron.numerics.trbdf2.state_jacobian`'s central differences, from the continuation in ``context``
    (not advanced); False where a perturbed state is declined. The implicit solvers' Jacobian in a kernel of its
    own, so that a run of Radau, BDF or LSODA compiles no TR-BDF2."""
    return state_jacobian(_rhs, refer(context), t, y, nq, J)


RUNGE_KUTTA_STEP, EXTRA_STAGES, DERIVATIVES = 0, 1, 2
"""What :func:`group_runge_kutta` does (its ``mode``)."""


@jit
def group_runge_kutta(mode, t, y, f, h_abs, t_bound, direction, max_step, rtol, atol, A, B, C, E, E3, E5,
                      error_exponent, n_stages, K, counts, limits, lower, upper, max_steps,
                      context):  # pragma: no cover - compiled
    """:mod:`mbkron.numerics.runge_kutta`'s kernels with the right-hand side :func:`state_rhs` of the
    :func:`state_context` ``context``: compiled once for every model with one constraint group.

    ``mode`` :data:`RUNGE_KUTTA_STEP`: up to ``max_steps`` steps (:func:`~mbkron.numerics.runge_kutta.adaptive_steps`
    with ``limits``, ``lower``, ``upper``; ``K`` unused), its four values ``(outcome, accepted, record, stages)``.
    :data:`EXTRA_STAGES`: DOP853's dense-output stages (:func:`~mbkron.numerics.runge_kutta.extra_stages`) from
    ``(t, y)`` over the step ``h_abs`` (signed) with ``A`` and ``C`` their coefficients, into ``K``.
    :data:`DERIVATIVES`: the right-hand side at the times ``y`` and the states ``K`` (rows), into ``A``. The last
    two return the outcome (``STEP_OK`` or ``STEP_DECLINED``), then no steps.
    """
    context = refer(context)  # one pointer down the steps (held by the caller)
    if mode == RUNGE_KUTTA_STEP:
        return adaptive_steps(_rhs, context, t, y, f, h_abs, t_bound, direction, max_step, rtol, atol, A, B, C, E,
                              E3, E5, error_exponent, n_stages, counts, limits, lower, upper, max_steps)
    if mode == EXTRA_STAGES:
        ok = extra_stages(_rhs, context, t, y, h_abs, A, C, n_stages, K, counts)
    else:
        ok = derivatives(_rhs, context, y, K, A)
    return (runge_kutta.STEP_OK if ok else runge_kutta.STEP_DECLINED), 0, np.empty((0, 0)), np.empty((0, 0, 0))


AHEAD = {"dynamics": eom_state, "steps": group_trbdf2, "explicit": group_runge_kutta}
"""The kernels :meth:`mbkron.Model.compile_ahead` compiles, by the names it takes (the terms of the equations of
motion below the dynamics, :func:`mbkron.algorithms.dynamics.forward.compile_dynamics`; the TR-BDF2 steps; the explicit
Runge–Kutta steps), in the order a run needs them: what the command line's helper process compiles (:mod:`mbkron.cli.prefetch`)."""


def forward(fast_step: FastStep, start: Solution, curvature: NDArray | None, q: NDArray, qd: NDArray, force: NDArray,
            model_arrays: tuple, matrix: NDArray, constant: NDArray, rows: NDArray):
    """The step at ``q`` and, in the same compiled call, the model's ``q̈`` (Eq. 198) with this group's
    joint variables in ``rows`` and the others affine (``matrix``, ``constant``); ``model_arrays`` as
    :class:`mbkron.algorithms.dynamics.forward.ForwardDynamics` holds them. None where it declines (the model's general route then
    solves the state and raises the step's error).

    Returns
    -------
    (Solution, hess, qdd) or None
    """
    use_curvature = curvature is not None
    curvature = curvature if use_curvature else fast_step._zero_curvature
    try:
        status, p, f, tangent, det_sign, condition, hess, qdd, code = group_forward(
            *fast_step.functions, fast_step.m, fast_step.A, fast_step.c, q, start.q, start.f, start.tangent, curvature, use_curvature,
            start.det_sign, fast_step.settings, fast_step.projection, *model_arrays, force, matrix, constant, rows, qd)
    except (ArithmeticError, ValueError):
        return None
    if status != OK or code != 0:
        return None
    return fast_step.solution(q, p, f, tangent, det_sign, condition), hess, qdd


def state_context(fast_step: FastStep, start: Solution, curvature: NDArray | None, force: NDArray, model_arrays: tuple,
                  matrix: NDArray, constant: NDArray, rows: NDArray) -> tuple:
    """The arguments of :func:`state_rhs` ``(t, y, context, advance)`` and :func:`group_trbdf2` for the
    state ``y = (q, q̇)`` of a model as in :func:`forward`, with a continuation from ``start``
    (``curvature``: ``H`` there, if known) held in its own arrays (:func:`continuation`) and the arrays the
    dynamics works in (:func:`mbkron.algorithms.dynamics.forward_kernels.forward_scratch`), allocated once per run."""
    scalars = np.array([curvature is not None, start.det_sign, start.condition], dtype=float)
    held = fast_step._zero_curvature if curvature is None else curvature
    scratch = forward_scratch(model_arrays[1].shape[0], fast_step.A.shape[1], matrix.shape[0])
    work = step_work(fast_step.m, fast_step.A.shape[0], fast_step.A.shape[1])
    return (*fast_step.functions, fast_step.m, fast_step.A, fast_step.c, fast_step.settings, fast_step.projection, *model_arrays, force, matrix,
            constant, rows, scratch, work, start.q.copy(), np.array(start.f, dtype=float),
            np.array(start.tangent, dtype=float), np.array(held, dtype=float), np.array(start.p, dtype=float),
            scalars)


def continuation(fast_step: FastStep, context: tuple) -> tuple[Solution, NDArray | None]:
    """``(start, curvature)`` of the continuation a :func:`state_context` has reached."""
    start_q, start_f, start_tangent, curvature, start_p, scalars = (value.copy() for value in context[CONTINUATION])
    solution = Solution(start_q, start_p, fast_step.A, None, start_f, start_tangent, int(scalars[1]), float(scalars[2]))
    return solution, (curvature if scalars[0] else None)
