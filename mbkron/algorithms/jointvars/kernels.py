"""The compiled continuation of constraint groups (Eq. 100-120): the one implementation of their position solve.

Damped Newton with continuation along one assembly branch and ``∇f``, ``H`` by the implicit-function theorem
(Eq. 101-102, 105-120) are one compiled function: from a given solution, one predictor-corrector step
(:func:`_single_step`) or, where the state is further away or the step fails, the walk of steps of at most
``max_step``, halved after a failure and doubled after a success, bounded by ``max_steps``
(:func:`step_kernel_into`); a long walk first shifts its start by whole periods where the equations are periodic
(:func:`_period_shift`). :class:`mbkron.algorithms.jointvars.solvers.PositionSolver` drives it for the assembly (from the
guess, on no branch yet), the walks that confirm the periods and every solve, and words a failure from the
status and the report the kernel returns (:data:`REPORT`): nothing is redone elsewhere. The constraint functions
``g``, ``∂g``, ``∂²g`` of a group given as expressions are generated as straight-line code from its sympy
expressions (:meth:`mbkron.algorithms.jointvars.constraints.BoundConstraints.expressions`), printed by
:mod:`mbkron.expressions.codegen`; those of loop closures are the library's own callbacks
(:mod:`mbkron.algorithms.jointvars.closure_kernels`: the tree's kinematics along the chains that
:meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.kernel_data` packs), so a closed-loop model generates
no code; any other system's Python functions are called back (:mod:`mbkron.algorithms.jointvars.constraint_callbacks`).
Inputs that are not affine in ``q`` are evaluated through a Python callback (``settings[10]``, :func:`_single_step`).

The path is chosen when a model is built
(:class:`mbkron.algorithms.jointvars.constrained.ConstrainedJointVariables`), never after a number of
evaluations; the results do not depend on when anything is compiled. Above the step (:func:`step_kernel`),
:mod:`mbkron.algorithms.dynamics.group` is the step with the model's accelerations in one compiled call, the state's
right-hand side ``y' = (q̇, q̈)`` continuing from the previous state and the TR-BDF2 and Runge–Kutta runs around
it: the dynamics' use of the step, kept apart from the step itself.

Generated code and library kernels
----------------------------------
Only the constraint functions of an expression group are specific to a model; everything else is
library code, compiled once per machine. :func:`mbkron.algorithms.jointvars.generated.module_source` prints ``first`` (``g``, ``∂g/∂f``,
``∂g/∂p``) and ``second`` (the first and second derivatives at the solution) as C callbacks
(``numba.cfunc``) of the one signature :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`
``(x, out, data)``; the closure callbacks (:mod:`mbkron.algorithms.jointvars.closure_callbacks`) have the same
signature and read the group from ``data``. The kernels of this module and of :mod:`mbkron.algorithms.dynamics.group`
(:func:`step_kernel`, :func:`~mbkron.algorithms.dynamics.group.group_forward`, :func:`~mbkron.algorithms.dynamics.group.state_rhs`,
:func:`~mbkron.algorithms.dynamics.group.group_trbdf2`) take the two addresses as integer arguments and ``data`` as a
read-only array (:attr:`FastStep.functions`, the first three entries of a
:func:`~mbkron.algorithms.dynamics.group.state_context`) and call them through
:func:`mbkron.jit.callbacks.constraint_function`, so their argument types are the same for every
model: numba compiles each once, caches it on disk (``cache=True``) and loads it for every later
model. A model never seen before compiles only its expression group's two callbacks (a fraction of a
second), a closed-loop model nothing. Below the small right-hand side
:func:`~mbkron.algorithms.dynamics.group.state_rhs` (compiled into the TR-BDF2, Jacobian and Runge–Kutta kernels that take
it), each kernel calls the one below it through its address (:mod:`mbkron.jit.calls`:
:func:`~mbkron.algorithms.dynamics.group.state_rhs` → :func:`~mbkron.algorithms.dynamics.group.group_forward_into` →
:func:`step_kernel_into` → :func:`_single_step`), so each is compiled once, not again inside every kernel above it (the README's main
job compiled in 38 s of CPU before, 24 s after; issue 26), and passes its arrays down borrowed
(:func:`mbkron.jit.calls.borrowed`), with the arrays the step and the dynamics work in allocated once per
run in the state context (:func:`step_work`, :func:`mbkron.algorithms.dynamics.forward_kernels.forward_scratch`): numba's atomic
reference counting and allocations were half of a state's time.

On-disk cache of the generated functions
----------------------------------------
:mod:`mbkron.algorithms.jointvars.generated`: the module is written under ``MBKRON_CACHE_DIR`` by the hash of its text and
imported from there, so numba caches its compiled code beside it; the text is a fixed template filled with source
printed from sympy expression trees, never user text.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.callbacks import callback_address, constraint_function
from mbkron.jit.calls import address_only, borrowed, by_address
from mbkron.jit.common import jit, jitable
from mbkron.numerics.linalg import copy_into, dot, lu_factor, lu_solve, matmul_into, matvec, max_abs, sum_scaled
from mbkron.algorithms.jointvars.constraint_callbacks import NO_DATA, constraint_callbacks
from mbkron.algorithms.jointvars.derivatives import callback_inputs, hessian_right_hand_side, input_curvature, projected
from mbkron.algorithms.jointvars.solution import Solution

__all__ = ["REPORT", "STEP_RETURNS", "FastStep", "step_kernel", "step_kernel_into", "step_kernel_into_at", "step_rows",
           "step_work"]

(OK, SINGULAR, DAMPED, NOT_CONVERGED, SUBDIVIDE, BRANCH, ILL_CONDITIONED, NOT_FINITE, SIGN_CHANGED, LOST, NOT_ARRIVED,
 INPUTS_FAILED) = range(12)
"""Kernel status codes. ``OK`` is a result; every other code is a failure, which
:class:`mbkron.algorithms.jointvars.solvers.PositionSolver` reports from the numbers the kernel leaves in the report array
(:data:`REPORT`): a Newton failure (``SINGULAR``: a zero pivot of ``∂g/∂f``; ``DAMPED``: no descent; ``NOT_CONVERGED``:
``max_iterations`` used up; ``NOT_FINITE``: the constraint functions are not finite), a branch check
(``SIGN_CHANGED``: the sign of ``det ∂g/∂f``; ``BRANCH``: the corrector's jump), ``ILL_CONDITIONED`` (the condition
number at the solution above ``max_condition``), ``LOST`` (``q`` so large that its place within a period is lost to
rounding), ``NOT_ARRIVED`` (``max_steps`` used up), ``INPUTS_FAILED`` (the Python callback of non-affine inputs
raised); ``SUBDIVIDE`` is internal (a step longer than ``max_step``)."""

REPORT = ("residual", "correction", "allowed", "condition")
"""The scalars first in a step's report array (:func:`step_work`'s last but one), what a failure message prints: the
last ``‖g‖₂``, the corrector's move and what was allowed, the condition number of ``∂g/∂f`` at the last accepted
point of the walk (NaN: the start); then ``q`` at the start of the walk (after any shift by whole periods), at the
last accepted point and at the failed trial, ``f`` at the last accepted point and where Newton failed
(:meth:`FastStep.report`)."""

SCALARS = 4
"""The number of :data:`REPORT`'s scalars."""

SHORT_WALK = 8.0
"""Continuation steps (of ``max_step`` each) beyond which the walk looks for a shift of the start by whole periods:
a longer walk that changes a coordinate by half the shortest of the equations' periods or more
(:meth:`~mbkron.algorithms.jointvars.solvers.PositionSolver.candidate_periods`) first shifts its start (:func:`_period_shift`),
then walks."""


STEP_RETURNS = ("Tuple((int64, float64[::1], float64[::1], float64[:, ::1], int64, float64, float64[:, ::1], "
                "float64[:, :, ::1]))")
"""What :func:`step_kernel_into` (and its :func:`_single_step`) returns, declared to their callers by address
(:func:`~mbkron.jit.calls.by_address`), so that compiling a caller does not compile them."""


@jit
def _one_norm(A):  # pragma: no cover - compiled
    best = 0.0
    for c in range(A.shape[1]):
        total = 0.0
        for r in range(A.shape[0]):
            total += abs(A[r, c])
        best = max(best, total)
    return best


@jit
def _finite(values):  # pragma: no cover - compiled
    """Whether every entry of the 1-D ``values`` is finite (the generated functions return ``inf`` or
    ``nan`` where evaluating them in Python would raise: numpy's error model)."""
    for k in range(values.size):
        if not math.isfinite(values[k]):
            return False
    return True


@jit
def _zero(values):  # pragma: no cover - compiled
    for k in range(values.size):
        values[k] = 0.0


@jit
def _take_residuals(values, m, n, g, J, g_p):  # pragma: no cover - compiled
    """``g``, ``J = ∂g/∂u`` and ``g_p = ∂g/∂p`` from a first callback's ``values`` ``(g, ∂g/∂u, ∂g/∂p)``, into the
    caller's arrays (no new ones per Newton iteration)."""
    for i in range(m):
        g[i] = values[i]
        for k in range(m):
            J[i, k] = values[m + i * m + k]
        for k in range(n):
            g_p[i, k] = values[m + m * m + i * n + k]


@jitable
def step_work(m, n, nq):  # pragma: no cover - compiled
    """The arrays :func:`_single_step` works in for ``m`` unknowns, ``n`` inputs and ``nq`` coordinates: ``(Δq,
    predicted step, prediction, current, trial, the first callback's values, g, ∂g/∂u, ∂g/∂p, LU, pivots, Newton
    step, the second callback's blocks, ∂g/∂q, (∂g/∂u)⁻¹, difference, report, inputs)``: the report of a failure
    (:data:`REPORT`) and the buffer ``(q, p, ∂p/∂q, ∂²p/∂q²)`` where the Python callback of inputs that are not
    affine in ``q`` reads ``q`` and writes the rest. Allocated once by the caller (a run's state context, a batch
    of rows, one call from Python), not at every step."""
    return (np.empty(nq), np.empty(m), np.empty(m), np.empty(m), np.empty(m), np.empty(m + m * m + m * n),
            np.empty(m), np.empty((m, m)), np.empty((m, n)), np.empty((m, m)), np.empty(m, np.int64), np.empty((m, 1)),
            np.empty(m * m + m * n + m * m * m + m * m * n + m * n * n), np.empty((m, nq)), np.empty((m, m)),
            np.empty(m), np.empty(SCALARS + 3 * nq + 2 * m), np.empty(nq + n + n * nq + n * nq * nq))


_projected_at = by_address(projected, returns="none")
_callback_inputs_at = by_address(callback_inputs, returns="boolean")
_input_curvature_at = by_address(input_curvature, returns="none")
"""The constraint step's branches that most runs never take, each a kernel of its own called by address
(:mod:`mbkron.algorithms.jointvars.derivatives`): compiled only where a model takes them."""


@address_only
def _single_step(first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
                 max_step, max_condition, order, projection, work):  # pragma: no cover - compiled
    """One predictor-corrector step from ``(q0, f0)`` to ``q`` and, with ``order``, the derivatives there: the
    damped Newton iteration from the predicted ``f`` (Eq. 100-101) with the branch checks of
    :class:`mbkron.algorithms.jointvars.solvers.PositionSolver` (``det_sign0`` 0: no branch yet, the assembly), and the
    implicit derivatives ∇f, H at the solution (Eq. 101-102, 120). ``max_step`` and ``max_condition`` stand for
    the settings' (``inf``: unchecked).

    The inputs are ``p = A q + c`` (Eq. 100's ``q`` with the explicit joint variables of an affine map), or, where
    ``settings[10]`` is the address of a :data:`~mbkron.jit.calls.PYTHON_CALLBACK`, ``p(q)``, ``∂p/∂q`` and
    ``∂²p/∂q²`` written by it into ``work``'s input buffer (:func:`step_work`; explicit joint variables given by
    providers such as splines), with the chain rule's term ``Σ_a ∂g/∂p_a ∂²p_a/∂q²`` in ``Γ`` (Eq. 120).

    The arithmetic is written as loops into the arrays of ``work``: each allocation, and each array passed on,
    costs the runtime's reference counting (about half of a state's time before). A failure leaves the numbers its
    message needs in ``work``'s report (:data:`REPORT`: ``‖g‖``, the corrector's move and its bound, and ``f``
    where Newton stopped).

    Returns ``(status, p, f, tangent, det_sign, condition, grad, hess)``: new arrays (``f`` and ``condition`` also
    where the status is ``ILL_CONDITIONED``).
    """
    residuals, derivatives_at = constraint_function(first), constraint_function(second)
    tolerance, max_iterations, _, jump_ratio, jump_tolerance, max_newton_step, _, _, _, _, inputs = settings
    n, nq = A.shape
    f = np.empty(m)
    grad = np.zeros((m, nq))
    hess = np.zeros((m, nq, nq))
    tangent = np.zeros((m, nq))
    x = np.empty(m + n)  # (f, p)
    # the results outlive every call below and work is held by the caller: borrowed, passing them costs no atomic
    # reference counting
    (dq, predicted_step, prediction, current, trial, values, g, J, g_p, LU, piv, column, blocks, g_q, inverse,
     difference, report, buffer) = borrowed(work)
    f_, grad_, hess_, tangent_, x_ = borrowed((f, grad, hess, tangent, x))
    failed_f = report[SCALARS + 3 * nq + m:]  # where Newton stops
    report[0] = report[1] = report[2] = np.nan
    P = A
    if inputs != 0:  # p(q), ∂p/∂q, ∂²p/∂q² from the Python callback, into the buffer
        if not _callback_inputs_at((inputs, m, borrowed(q), buffer, x_)):
            return INPUTS_FAILED, x[m:], f, tangent, 0, 0.0, grad, hess
        P = buffer[nq + n:nq + n + n * nq].reshape(n, nq)
    else:
        for k in range(n):  # p = A q + c
            value = 0.0
            for j in range(nq):
                value += A[k, j] * q[j]
            x_[m + k] = value + c[k]
    for k in range(nq):  # Δq = q − q0
        dq[k] = q[k] + (-1.0) * q0[k]
    for i in range(m):  # ∇f₀ Δq
        value = 0.0
        for k in range(nq):
            value += tangent0[i, k] * dq[k]
        predicted_step[i] = value
    if max_abs(predicted_step) > max_step:
        return SUBDIVIDE, x[m:], f, tangent, 0, 0.0, grad, hess
    if use_curvature:
        for i in range(m):  # + ½ dqᵀ H_i dq
            total = 0.0
            for r in range(nq):
                row = 0.0
                for k in range(nq):
                    row += curvature0[i, r, k] * dq[k]
                total += dq[r] * row
            predicted_step[i] += 0.5 * total
    for k in range(m):
        prediction[k] = f0[k] + 1.0 * predicted_step[k]
        x_[k] = current[k] = failed_f[k] = prediction[k]
    _zero(values)
    residuals(x_, values, data)
    if not _finite(values):
        return NOT_FINITE, x[m:], f, tangent, 0, 0.0, grad, hess
    _take_residuals(values, m, n, g, J, g_p)
    residual = math.sqrt(dot(g, g))
    if not math.isfinite(residual):
        return NOT_FINITE, x[m:], f, tangent, 0, 0.0, grad, hess
    step = column.reshape(m)  # the Newton step, solved in place in column: the same numbers as a vector
    det_sign = 0
    condition = 0.0
    converged = False
    for _ in range(max_iterations):
        for k in range(m):
            failed_f[k] = current[k]
        report[0] = residual
        det_sign = lu_factor(J, LU, piv)
        if det_sign == 0:
            return SINGULAR, x[m:], f, tangent, 0, 0.0, grad, hess
        for k in range(m):
            column[k, 0] = g[k]
        lu_solve(LU, piv, column)
        size = max_abs(step)
        if size <= tolerance * (1.0 + max_abs(current)):
            matmul_into(g_p, P, g_q)
            for i in range(m):
                for k in range(nq):
                    tangent_[i, k] = -g_q[i, k]
            lu_solve(LU, piv, tangent_)
            for i in range(m):
                for k in range(m):
                    inverse[i, k] = 1.0 if i == k else 0.0
            lu_solve(LU, piv, inverse)
            norm = max(_one_norm(J), _one_norm(g_q))
            condition = norm * _one_norm(inverse)
            for k in range(m):
                f_[k] = current[k] + (-1.0) * step[k]
            converged = True
            break
        # the damped Newton step (PositionSolver's docstring): at most max_newton_step, halved until ‖g‖ decreases
        # (Armijo, slope 1e-4); a full step where it decreases (the common case)
        scale = min(1.0, max_newton_step / size)
        while True:
            for k in range(m):
                trial[k] = current[k] + (-scale) * step[k]
                x_[k] = trial[k]
            _zero(values)
            residuals(x_, values, data)
            new_residual = np.inf
            if _finite(values):
                squares = 0.0
                for k in range(m):
                    squares += values[k] * values[k]
                new_residual = math.sqrt(squares)
            if new_residual <= (1.0 - 1e-4 * scale) * residual:
                break
            scale *= 0.5
            if scale < 1e-6:  # no descent
                return DAMPED, x[m:], f, tangent, 0, 0.0, grad, hess
        _take_residuals(values, m, n, g, J, g_p)
        for k in range(m):
            current[k] = trial[k]
        residual = new_residual
    if not converged:
        report[0] = residual
        return NOT_CONVERGED, x[m:], f, tangent, 0, 0.0, grad, hess
    if det_sign0 != 0 and det_sign != det_sign0:
        return SIGN_CHANGED, x[m:], f, tangent, 0, 0.0, grad, hess
    for k in range(m):
        difference[k] = f_[k] + (-1.0) * prediction[k]
    report[1] = max_abs(difference)
    report[2] = jump_ratio * max_abs(predicted_step) + jump_tolerance
    if report[1] > report[2]:
        return BRANCH, x[m:], f, tangent, 0, 0.0, grad, hess
    if not condition <= max_condition:
        return ILL_CONDITIONED, x[m:], f, tangent, det_sign, condition, grad, hess
    if order == 0:
        return OK, x[m:], f, tangent, det_sign, condition, grad, hess
    # derivatives at the solution (Eq. 101-102, 120)
    for k in range(m):
        x_[k] = f_[k]
    _zero(blocks)
    derivatives_at(x_, blocks, data)
    if not _finite(blocks):
        return NOT_FINITE, x[m:], f, tangent, 0, 0.0, grad, hess
    start = 0  # views of the blocks, read only
    g_u = blocks[start:start + m * m].reshape(m, m)
    start += m * m
    g_p = blocks[start:start + m * n].reshape(m, n)
    start += m * n
    g_uu = blocks[start:start + m * m * m].reshape(m, m, m)
    start += m * m * m
    g_up = blocks[start:start + m * m * n].reshape(m, m, n)
    start += m * m * n
    g_pp = blocks[start:start + m * n * n].reshape(m, n, n)
    matmul_into(g_p, P, g_q)
    if projection:
        _projected_at((borrowed(g_u), borrowed(g_q), grad_))
    else:
        if lu_factor(g_u, LU, piv) == 0:
            return SINGULAR, x[m:], f, tangent, 0, 0.0, grad, hess
        for i in range(m):
            for k in range(nq):
                grad_[i, k] = -g_q[i, k]
        lu_solve(LU, piv, grad_)
    if order >= 2:
        hessian_right_hand_side(P, grad_, g_uu, g_up, g_pp, hess_)  # Γ, in H's array
        if inputs != 0:  # + Σ_a ∂g_i/∂p_a ∂²p_a/∂q² (the chain rule through p(q))
            _input_curvature_at((borrowed(g_p), buffer, hess_))
        flat = hess_.reshape(m, nq * nq)
        if projection:
            _projected_at((borrowed(g_u), flat, flat))  # (it copies Γ first)
        else:
            for i in range(m):  # H = −(∂g/∂u)⁻¹ Γ, solved in place
                for k in range(nq * nq):
                    flat[i, k] = -flat[i, k]
            lu_solve(LU, piv, flat)
    return OK, x[m:], f, tangent, det_sign, condition, grad, hess


_single_step_at = by_address(_single_step, returns=STEP_RETURNS)
""":func:`_single_step` called through its address: compiled once for the one step and the walk's steps."""


@address_only
def _period_shift(first, second, data, m, A, c, q0, f0, tangent0, curvature0, det_sign0, settings, projection, work,
                  change):  # pragma: no cover - compiled
    """The start ``(q0, f0)`` of a long walk shifted by whole periods towards ``q0 + change``, as
    :class:`mbkron.algorithms.jointvars.solvers.PositionSolver` documents it: ``round(Δq_i / T_i)`` turns of each periodic
    coordinate (``settings[9][:, 0]``: the periods ``T_i``, NaN where none; ``settings[9][:, 1:]``: the windings
    ``f(q + T_i e_i) − f(q)`` of the joint variables), the joint variables moved by the turns' windings and
    corrected by Newton at the shifted inputs; kept where that converges on the start's branch (the sign of
    ``det ∂g/∂f``) within the rounding of the shift.

    Returns ``(status, q, f, tangent, det_sign, condition)``: ``OK`` with the shifted start, ``LOST`` where ``q``
    is so large that its place within the period is lost to rounding, else another status and the start is kept
    (no turn, or the correction failed; ``condition`` NaN: the start's).
    """
    jump_tolerance, max_step, periodic = settings[4], settings[6], settings[9]
    nq = q0.size
    turns = np.zeros(nq)
    largest = 0.0
    shifted_q = q0.copy()
    for k in range(nq):
        if np.isfinite(periodic[k, 0]):
            turns[k] = np.rint(change[k] / periodic[k, 0])  # numpy's round: half to even
            shift = turns[k] * periodic[k, 0]
            shifted_q[k] = q0[k] + shift
            largest = max(largest, abs(shift))
    if largest == 0.0:
        return NOT_CONVERGED, q0, f0, tangent0, det_sign0, np.nan
    shifted_f = np.empty(m)
    for i in range(m):
        value = 0.0
        for k in range(nq):
            value += turns[k] * periodic[k, 1 + i]
        shifted_f[i] = f0[i] + value
    # the float period and the shifted q are exact to a few ulps of |shift|: f moves by about ‖∇f‖ times that
    error = 4.0 * np.finfo(np.float64).eps * (largest + max_abs(q0))
    allowed = jump_tolerance + max_abs(tangent0.ravel()) * error
    if allowed > max_step:
        return LOST, q0, f0, tangent0, det_sign0, np.nan
    status, _, f, tangent, det_sign, condition, _, _ = _single_step_at((
        first, second, borrowed(data), m, borrowed(A), borrowed(c), shifted_q, shifted_q, shifted_f,
        borrowed(tangent0), borrowed(curvature0), False, det_sign0, settings, np.inf, np.inf, np.int64(0),
        projection, borrowed(work)))  # Newton at the shifted inputs, from the shifted f (no predicted step)
    if status != OK or det_sign != det_sign0:
        return BRANCH, q0, f0, tangent0, det_sign0, np.nan
    for i in range(m):
        if not abs(f[i] - shifted_f[i]) <= allowed:
            return BRANCH, q0, f0, tangent0, det_sign0, np.nan
    return OK, shifted_q, f, tangent, det_sign, condition


_period_shift_at = by_address(
    _period_shift, returns="Tuple((int64, float64[::1], float64[::1], float64[:, ::1], int64, float64))")
""":func:`_period_shift` called through its address: compiled where a walk is long enough to shift its start (not
for a run that never walks that far)."""


@address_only
def step_kernel_into(first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
                     order, projection, work):  # pragma: no cover - compiled
    """The solution at ``q`` by continuation from ``(q0, f0)`` and the derivatives there, the steps working in
    ``work`` (:func:`step_work`): :func:`step_kernel`'s body, called by address from it, from :func:`step_rows`
    (one ``work`` for every row) and from :func:`group_forward_into` (a run's ``work``). A failure leaves what its
    message needs in ``work``'s report (:data:`REPORT`).

    Returns ``(status, p, f, tangent, det_sign, condition, grad, hess)``.
    """
    max_condition, max_step, max_steps, half_period = settings[2], settings[6], settings[7], settings[8]
    nq = q.size
    held = borrowed(work)  # Δq and the predicted step in the step's own arrays (it fills them again)
    change, predicted_step, report = held[0], held[1], held[16]
    for k in range(nq):
        change[k] = q[k] + (-1.0) * q0[k]
    for i in range(m):
        value = 0.0
        for k in range(nq):
            value += tangent0[i, k] * change[k]
        predicted_step[i] = value
    predicted = max_abs(predicted_step)
    # a long walk first shifts the start by whole periods where that is a solution (the equations periodic in a
    # coordinate that changes by half a period or more; half_period: half the shortest, conservatively)
    shifted = predicted > SHORT_WALK * max_step and max_abs(change) >= half_period
    shift = NOT_CONVERGED  # no shift tried
    current_condition = np.nan  # the start's (the caller knows it)
    if shifted:  # the start moved by whole periods, where that is a solution: the walk goes on from there
        shift, current_q, current_f, current_tangent, current_sign, current_condition = _period_shift_at((
            first, second, borrowed(data), m, borrowed(A), borrowed(c), q0, f0, tangent0, borrowed(curvature0),
            det_sign0, settings, projection, borrowed(work), borrowed(change)))  # (q0, f0, tangent0 may be returned)
    if shift != OK:  # the walk from the start itself (copies: the walk replaces them)
        current_q, current_f, current_tangent, current_sign = q0.copy(), f0.copy(), tangent0.copy(), det_sign0
    copy_into(report[SCALARS:SCALARS + current_q.size], current_q)  # where the walk starts
    copy_into(report[SCALARS + nq:SCALARS + nq + current_q.size], current_q)
    copy_into(report[SCALARS + 2 * nq:SCALARS + 2 * nq + q.size], q)
    copy_into(report[SCALARS + 3 * nq:SCALARS + 3 * nq + current_f.size], current_f)
    report[3] = current_condition
    fraction, minimum, started = 1.0, 1e-9 * (1.0 + max_abs(q)), False
    # one step: the common case (also a change that is not finite: the step says what fails; and a shift lost to
    # rounding, where the step is too long: SUBDIVIDE, reported as LOST)
    if shift != OK and (predicted <= max_step or not predicted < np.inf or shift == LOST):
        status, p, f, tangent, det_sign, condition, grad, hess = _single_step_at((
            first, second, borrowed(data), m, borrowed(A), borrowed(c), borrowed(q), borrowed(q0), borrowed(f0),
            borrowed(tangent0), borrowed(curvature0), use_curvature, det_sign0, settings, max_step, max_condition,
            order, projection, borrowed(work)))
        if shift == LOST:
            status = LOST
        final = status == OK or status == ILL_CONDITIONED or status == LOST or status == INPUTS_FAILED
        if final or max_abs(change) < minimum:
            return status, p, f, tangent, det_sign, condition, grad, hess
        fraction = 0.5  # walk: the step halved, as after any failed step
    curved = use_curvature and shift != OK  # H at the start, for the first step's predictor: not after a shift
    for _ in range(int(max_steps)):
        remaining = sum_scaled(q, -1.0, current_q)
        distance = max_abs(remaining)
        change_f = max_abs(matvec(current_tangent, remaining))
        if change_f * fraction > max_step:
            fraction = max_step / change_f
        final = fraction >= 1.0
        trial = q.copy() if final else sum_scaled(current_q, fraction, remaining)
        copy_into(report[SCALARS + 2 * nq:SCALARS + 2 * nq + trial.size], trial)
        status, p, f, tangent, det_sign, condition, grad, hess = _single_step_at((
            first, second, borrowed(data), m, borrowed(A), borrowed(c), trial, current_q, current_f, current_tangent,
            borrowed(curvature0),
            curved and not started, current_sign, settings, np.inf, max_condition if final else np.inf,
            order if final else np.int64(0), projection, borrowed(work)))
        if status == ILL_CONDITIONED or status == INPUTS_FAILED or (status != OK and fraction * distance < minimum):
            return status, p, f, tangent, det_sign, condition, grad, hess
        if status != OK:
            fraction *= 0.5
            continue
        if final:
            return status, p, f, tangent, det_sign, condition, grad, hess
        started = True
        current_q, current_f, current_tangent, current_sign = trial, f, tangent, det_sign
        copy_into(report[SCALARS + nq:SCALARS + nq + current_q.size], current_q)
        copy_into(report[SCALARS + 3 * nq:SCALARS + 3 * nq + current_f.size], current_f)
        report[3] = condition
        fraction = min(1.0, 2.0 * fraction / (1.0 - fraction))
    return NOT_ARRIVED, p, f, tangent, det_sign, condition, grad, hess


step_kernel_into_at = by_address(step_kernel_into, returns=STEP_RETURNS)
""":func:`step_kernel_into` called through its address (:mod:`mbkron.jit.calls`): compiled once, not again
inside each caller."""


@jit
def step_kernel(first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
                order, projection):  # pragma: no cover - compiled
    """The solution at ``q`` by continuation from ``(q0, f0)`` and the derivatives there; see :meth:`FastStep.step`.

    ``first`` and ``second`` are the addresses of the group's generated constraint functions
    (:func:`mbkron.algorithms.jointvars.generated.module_source`; called through
    :func:`mbkron.jit.callbacks.constraint_function`), so this
    kernel is compiled once for every model. One step (:func:`_single_step`) where the predicted change
    ``‖∇f₀ Δq‖∞`` is at most the solver's ``max_step`` and it succeeds; otherwise the walk of
    :class:`mbkron.algorithms.jointvars.solvers.PositionSolver` (the step shortened to ``max_step``, halved where a
    step fails, doubled after one succeeds, at most ``max_steps`` steps, the condition number checked at the
    end only; a failure once the step is below ``1e-9 (1 + ‖q‖∞)``). A walk longer than :data:`SHORT_WALK` steps
    that changes a coordinate by ``settings[8]`` or more (half the shortest of the equations' periods, infinite
    where they are not periodic) first shifts its start by whole periods where that is a solution
    (:func:`_period_shift`); every failure, and a shift lost to rounding, returns a status other than ``OK``, and
    the numbers of its message in ``report``. :func:`step_kernel_into` in arrays of its own (one call from
    Python)

    Returns ``(status, p, f, tangent, det_sign, condition, grad, hess, report)``: ``report`` the numbers a failure's
    message needs (:data:`REPORT`, :meth:`FastStep.report`).
    """
    work = step_work(m, A.shape[0], A.shape[1])
    status, p, f, tangent, det_sign, condition, grad, hess = step_kernel_into_at((
        first, second, data, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings, order,
        projection, work))
    return status, p, f, tangent, det_sign, condition, grad, hess, work[16]


@jit
def step_rows(first, second, data, m, A, c, Q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
              order, projection):  # pragma: no cover - compiled
    """:func:`step_kernel` at the rows of ``Q`` (k, nq) in order, each continuing from the previous one (as
    :func:`mbkron.algorithms.jointvars.solvers.evaluate_states` with :meth:`FastStep.step`); see :meth:`FastStep.rows`.

    Returns ``(done, F, G, H, p, tangent, det_sign, condition, hess)``: the rows solved before the first the
    step declines (``done``), their ``f`` (done, m), ``∇f`` and ``H`` (order ≥ 1, ≥ 2; else empty), and the
    last solved row's ``p``, ``tangent``, ``det_sign``, ``condition`` and ``H`` (the continuation there).
    """
    rows, nq = Q.shape
    F = np.empty((rows, m))
    G = np.empty((rows if order >= 1 else 0, m, nq))
    H = np.empty((rows if order >= 2 else 0, m, nq, nq))
    start_q, start_f, start_tangent, curvature, use, sign = q0, f0, tangent0, curvature0, use_curvature, det_sign0
    last_p, last_condition = np.empty(A.shape[0]), 0.0
    work = step_work(m, A.shape[0], nq)  # one for every row
    for r in range(rows):
        q = Q[r].copy()
        status, p, f, tangent, det_sign, condition, grad, hess = step_kernel_into_at((
            first, second, data, m, A, c, q, start_q, start_f, start_tangent, curvature, use, sign, settings, order,
            projection, work))
        if status != OK:
            return r, F, G, H, last_p, start_tangent, sign, last_condition, curvature
        copy_into(F[r], f)
        if order >= 1:
            copy_into(G[r], grad)
        if order >= 2:
            copy_into(H[r], hess)
        # the continuation advances as Continuation.advance: with H only where it was computed (order 2)
        start_q, start_f, start_tangent, sign, last_p, last_condition = q, f, tangent, det_sign, p, condition
        use = order >= 2
        if use:
            curvature = hess
    return rows, F, G, H, last_p, start_tangent, sign, last_condition, curvature


def _no_periods(nq: int, m: int) -> NDArray:
    """The periodic table of a step that shifts no walk: NaN periods (read-only)."""
    table = np.full((nq, 1 + m), np.nan)
    table.setflags(write=False)
    return table


def _periodic_settings(solver) -> tuple[float, NDArray]:
    """``settings[8:10]`` of a step with ``solver``'s periods: half the shortest of the equations' periods by their
    structure (:meth:`~mbkron.algorithms.jointvars.solvers.PositionSolver.candidate_periods`; a walk longer than
    :data:`SHORT_WALK` steps that changes a coordinate by this or more shifts its start by whole periods) and the
    table ``(T_i, d_i)`` (nq, 1 + m) of the periods its walks confirmed and the joint variables' windings, NaN
    periods where none (:attr:`~mbkron.algorithms.jointvars.solvers.PositionSolver.periods`)."""
    candidates = solver.candidate_periods()
    half_period = 0.5 * float(candidates[np.isfinite(candidates)].min()) if np.isfinite(candidates).any() else np.inf
    periods, windings = solver.periods
    table = np.ascontiguousarray(np.column_stack([periods, windings]), dtype=float)
    table.setflags(write=False)
    return half_period, table


class FastStep:
    """The compiled continuation of one constraint group (:func:`step_kernel` and the kernels above it).

    Parameters
    ----------
    solver : PositionSolver
        Its system's callbacks are :func:`constraint_callbacks`'.
    method : {"lu", "projection"}
    periodic : bool
        Whether a long walk shifts its start by whole periods (:attr:`PositionSolver.periods`); False for the walks
        that find them.

    """

    def __init__(self, solver, method: str = "lu", periodic: bool = True):
        system = solver.system
        self.m = system.size
        self.system = system
        self._bind_callbacks(solver.inputs.matrix.shape[0])
        self.A = np.ascontiguousarray(solver.inputs.matrix, dtype=float)
        self.c = np.ascontiguousarray(solver.inputs.constant, dtype=float)
        # p(q), ∂p/∂q, ∂²p/∂q² through a Python callback where the inputs are not affine (kept alive by the inputs)
        self.inputs = solver.inputs
        address = 0 if solver.inputs.callback is None else solver.inputs.callback[1]
        nq = self.A.shape[1]
        half_period, periodic_table = _periodic_settings(solver) if periodic else (np.inf, _no_periods(nq, self.m))
        self.settings = (solver.tolerance, solver.max_iterations, solver.max_condition, solver.jump_ratio,
                         solver.jump_tolerance, solver.max_newton_step, solver.max_step, float(solver.max_steps),
                         half_period, periodic_table, address)
        self.projection = method == "projection"
        self._zero_curvature = np.zeros((self.m, nq, nq))

    def _bind_callbacks(self, inputs: int) -> None:
        """The group's constraint callbacks (:func:`constraint_callbacks`) as the kernels call them: by their addresses,
        valid in this process while ``kernels`` is referenced."""
        self.kernels, data = constraint_callbacks(self.system, inputs)
        self.functions = (callback_address(self.kernels.first), callback_address(self.kernels.second), data)

    def __getstate__(self) -> dict:
        """Pickled without the addresses of this process's code (the callbacks' and the non-affine inputs'), which
        :meth:`__setstate__` looks up again where the step is unpickled: a model pickles as its description."""
        state = dict(self.__dict__)
        del state["kernels"], state["functions"]
        state["settings"] = (*self.settings[:10], 0)
        return state

    def __copy__(self) -> FastStep:
        """A shallow copy in this process, its callbacks' addresses shared (not looked up again as by pickling)."""
        step = FastStep.__new__(FastStep)
        step.__dict__.update(self.__dict__)
        return step

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind_callbacks(self.A.shape[0])
        callback = self.inputs.callback
        self.settings = (*self.settings[:10], 0 if callback is None else callback[1])

    def with_periods(self, solver) -> FastStep:
        """This step with the solver's :attr:`~PositionSolver.periods` (a long walk shifts its start by them)."""
        step = copy.copy(self)
        step.settings = (*self.settings[:8], *_periodic_settings(solver), self.settings[10])
        return step

    def with_method(self, method: str) -> FastStep:
        """This step with the derivatives by ``method`` (``"lu"`` or ``"projection"``)."""
        step = copy.copy(self)
        step.projection = method == "projection"
        return step

    def assembly_settings(self) -> tuple:
        """The settings of the assembly's Newton solve: no bound on the corrector's move (no prediction yet)."""
        settings = list(self.settings)
        settings[4] = np.inf
        return tuple(settings)

    def report(self, report: NDArray) -> dict:
        """A failure's numbers from the report array of :func:`step_kernel` (:data:`REPORT`): the scalars by name,
        ``first_q``, ``current_q``, ``trial_q`` (nq,) and ``current_f``, ``failed_f`` (m,)."""
        nq, m = self.A.shape[1], self.m
        values = {name: float(report[k]) for k, name in enumerate(REPORT)}
        start = SCALARS
        for name, size in (("first_q", nq), ("current_q", nq), ("trial_q", nq), ("current_f", m), ("failed_f", m)):
            values[name] = report[start:start + size].copy()
            start += size
        return values

    def solution(self, q: NDArray, p: NDArray, f: NDArray, tangent: NDArray, det_sign, condition) -> Solution:
        """The :class:`Solution` of a kernel's values at ``q`` (``∂p/∂q`` and ``∂²p/∂q²`` evaluated again where the
        inputs are not affine: only the singularity check of :mod:`mbkron.integrate.simulate` reads them)."""
        if self.inputs.affine:
            return Solution(q.copy(), p.copy(), self.A, None, f, tangent, int(det_sign), float(condition))
        _, P, d2p = self.inputs.evaluate(q)
        return Solution(q.copy(), p.copy(), P, d2p, f, tangent, int(det_sign), float(condition))

    def step(self, start: Solution, curvature: NDArray | None, q: NDArray, order: int, settings: tuple | None = None):
        """Solve at ``q`` from ``start`` (with ``H`` at ``start``, ``curvature``, if known) and differentiate.

        Returns
        -------
        (status, Solution, grad, hess, report)
            ``status`` :data:`OK` (``grad``/``hess`` None below ``order``) or a failure, with the report array
            (:meth:`report`); the solution where the status is ``OK`` or ``ILL_CONDITIONED`` (else None).
        """
        use_curvature = curvature is not None
        curvature = curvature if use_curvature else self._zero_curvature
        q = np.ascontiguousarray(q, dtype=float)
        status, p, f, tangent, det_sign, condition, grad, hess, report = step_kernel(
            *self.functions, self.m, self.A, self.c, q, np.ascontiguousarray(start.q, dtype=float),
            np.ascontiguousarray(start.f, dtype=float), np.ascontiguousarray(start.tangent, dtype=float), curvature,
            use_curvature, int(start.det_sign), self.settings if settings is None else settings, order,
            self.projection)
        if status != OK and status != ILL_CONDITIONED:
            return status, None, None, None, report
        solution = self.solution(q, p, f, tangent, det_sign, condition)
        return status, solution, (grad if order >= 1 else None), (hess if order >= 2 else None), report

    def rows(self, start: Solution, curvature: NDArray | None, Q: NDArray, order: int):
        """:meth:`step` at the rows of ``Q`` (k, nq, C-contiguous floats) in order, each from the previous one, in
        one compiled call (:func:`step_rows`): the rows before the first the compiled step declines.

        Returns
        -------
        (done, f, grad, hess, continuation)
            ``f`` (done, m), ``grad`` (done, m, nq) and ``hess`` (done, m, nq, nq) up to ``order`` (else None);
            ``continuation`` the ``(Solution, hess)`` at the last row solved (None where ``done`` is 0), what
            :meth:`mbkron.algorithms.jointvars.solvers.Continuation.advance` takes.
        """
        try:
            done, F, G, H, p, tangent, det_sign, condition, last_hess = step_rows(
                *self._rows_arguments(start, curvature, Q, order))
        except (ArithmeticError, ValueError):
            return 0, None, None, None, None
        if done == 0:
            return 0, None, None, None, None
        solution = self.solution(Q[done - 1], p, F[done - 1].copy(), tangent, det_sign, condition)
        return (done, F[:done], G[:done] if order >= 1 else None, H[:done] if order >= 2 else None,
                (solution, last_hess if order >= 2 else None))

    def _rows_arguments(self, start: Solution, curvature: NDArray | None, Q: NDArray, order: int) -> tuple:
        """The arguments of :func:`step_rows` for :meth:`rows`."""
        use_curvature = curvature is not None
        held = curvature if use_curvature else self._zero_curvature
        return (*self.functions, self.m, self.A, self.c, Q, np.array(start.q, dtype=float),  # writable copies: one
                np.array(start.f, dtype=float), np.array(start.tangent, dtype=float),  # type for the loop's start
                np.array(held, dtype=float), use_curvature, start.det_sign, self.settings, order, self.projection)

    def compile_rows(self, start: Solution) -> None:
        """Compile (or load from numba's disk cache) :func:`step_rows` for the argument types of every :meth:`rows`
        call (rows of writable C-contiguous floats, as the model's batched evaluations pass them) from ``start``,
        evaluating nothing: a run compiles the kernel of its table of joint variables before its steps, which a
        helper process may still be compiling (:mod:`mbkron.cli.prefetch`). Nothing without numba."""
        if hasattr(step_rows, "compile"):  # a numba dispatcher (not under NUMBA_DISABLE_JIT)
            from numba import typeof

            arguments = self._rows_arguments(start, None, np.zeros((1, self.A.shape[1])), 0)
            step_rows.compile(tuple(typeof(value) for value in arguments))


    @classmethod
    def placeholder(cls, nq: int) -> FastStep:
        """A step of one joint variable over ``nq`` coordinates that calls no constraint functions, of the types every
        group's step has (the kernels are compiled once for every model): for compiling
        the kernels of any group's runs ahead, with no group at hand (:func:`mbkron.algorithms.dynamics.forward.compile_dynamics`,
        :meth:`mbkron.Model.compile_ahead`). Never evaluated."""
        step = cls.__new__(cls)
        step.m, step.kernels, step.inputs, step.system = 1, None, None, None
        step.functions = (0, 0, NO_DATA)
        step.A, step.c = np.zeros((1, nq)), np.zeros(1)
        step.settings = (1e-12, 1, np.inf, 1.0, 1.0, np.inf, np.inf, 1.0, np.inf, _no_periods(nq, 1), 0)  # the types of __init__'s
        step.projection = False
        step._zero_curvature = np.zeros((1, nq, nq))
        return step

    def placeholder_start(self) -> Solution:
        """A start of zeros, of the types a run's continuation has: for :func:`mbkron.algorithms.dynamics.group.state_context` where only the types
        of its arrays matter (compiling ahead, :func:`mbkron.algorithms.dynamics.forward.compile_dynamics`)."""
        nq = self.A.shape[1]
        return Solution(np.zeros(nq), np.zeros(self.A.shape[0]), self.A, None, np.zeros(self.m),
                        np.zeros((self.m, nq)), 1, 1.0)

