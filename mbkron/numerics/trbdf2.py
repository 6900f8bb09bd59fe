"""TR-BDF2: its coefficients and control parameters, and whole steps as compiled kernels — the one implementation.

:class:`mbkron.integrate.trbdf2.TRBDF2` is the solver (a :class:`scipy.integrate.OdeSolver`, with the
derivations in its docstring and docs/integrators.md); every step it takes is :func:`trbdf2_kernel`: two stages
of simplified Newton sharing one LU factorisation of ``I - D h J``, the filtered error estimate and the step-size
control, with the solver's state (the Jacobian, the LU factors, the step size, the Newton rate) in arrays the
kernel updates in place. :func:`trbdf2_steps` takes several such steps in one call, each followed by the output
rows a run records there, so that a run returns to Python only where its checks may stop it.

Both take the right-hand side ``rhs(t, y, context, advance) -> (y', ok)`` and the Jacobian
``jacobian(rhs, context, t, y, nq, J) -> ok`` as arguments and are inlined
(:func:`mbkron.jit.common.inline_jit`) into the library kernels that name them, each compiled once per
machine and cached on disk:

- :func:`callback_trbdf2` for a right-hand side that is any Python callable: :func:`callback_rhs` and
  :func:`callback_jacobian` copy the state into a buffer of the context and call the Python driver back through
  its C callback (:func:`mbkron.jit.calls.call_python`), which writes ``y'`` or the Jacobian into the
  context's other buffers;
- :func:`mbkron.algorithms.dynamics.group.group_trbdf2` (this layer cannot import it) for a model with one compiled
  constraint group: its right-hand side :func:`~mbkron.algorithms.dynamics.group.state_rhs` calls the constraint step and
  the dynamics through their address (:mod:`mbkron.jit.calls`), its Jacobian is :func:`state_jacobian`'s
  central differences, and what is specific to a model reaches it as arguments (the constraint functions'
  addresses in ``context``), never as code.

The LU factors are :mod:`mbkron.numerics.linalg`'s, in LAPACK's layout.
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.jit.calls import call_python
from mbkron.jit.common import inline_jit, jit, jit_holding_gil
from mbkron.numerics.linalg import lu_factor, lu_solve
from mbkron.numerics.runs import may_stop

__all__ = [
    "GAMMA", "D", "W", "ERROR_WEIGHTS", "STAGE3_PREDICTOR", "NEWTON_MAXITER", "SAFETY", "MIN_REJECT_FACTOR",
    "NEWTON_FAIL_FACTOR", "MIN_FACTOR", "MAX_FACTOR", "HOLD_BAND", "STRETCH", "UNFILTERED_WEIGHT",
    "MAX_JAC_AGE", "JAC_STEP_RATIO", "MEMORY_SIZE", "STEP_OK", "STEP_TOO_SMALL", "STEP_DECLINED",
    "EVERY_STEP", "EVALUATE", "ADVANCE", "JACOBIAN", "callback_jacobian", "callback_rhs", "callback_trbdf2",
    "hermite", "state_jacobian", "trbdf2_kernel", "trbdf2_steps",
]

# --- TR-BDF2 coefficients (Hosea & Shampine 1996) ---------------------------
GAMMA = 2.0 - math.sqrt(2.0)
"""Fraction of the step covered by the trapezoidal stage; makes TR-BDF2 L-stable."""
D = GAMMA / 2.0
"""Diagonal coefficient of both implicit stages: the matrix is ``I - D*h*J``."""
W = math.sqrt(2.0) / 4.0
"""Weight of the first two stage derivatives in the BDF2 stage, ``(1 - D)/2``."""
ERROR_WEIGHTS = ((GAMMA - 1.0) / 3.0, 1.0 / 3.0, -GAMMA / 3.0)
"""Third-order embedded minus second-order weights, applied to ``h*f`` of the stages."""
STAGE3_PREDICTOR = (1.0 - 1.0 / GAMMA, 1.0 / GAMMA)
"""Linear extrapolation of the slope through ``t`` and ``t + GAMMA*h`` to ``t + h``."""

# --- TR-BDF2 control parameters (after ode23tb and scipy's Radau/BDF) -------
NEWTON_MAXITER = 5
"""Simplified Newton iterations allowed per stage (ode23tb)."""
SAFETY = 0.7
"""Safety factor of the step-size prediction (ode23tb's 1/1.43)."""
MIN_REJECT_FACTOR = 0.1
"""Largest reduction of ``h`` after an error-test failure (ode23tb)."""
NEWTON_FAIL_FACTOR = 0.3
"""Reduction of ``h`` after a Newton failure with a current Jacobian (ode23tb)."""
MIN_FACTOR = 0.2
"""Smallest change factor of ``h`` after an accepted step (ode23tb)."""
MAX_FACTOR = 5.0
"""Largest change factor of ``h`` after an accepted step (ode23tb)."""
HOLD_BAND = 0.2
"""``h`` is kept when the predicted factor is within ``1 +- HOLD_BAND`` (saves an LU)."""
STRETCH = 1.1
"""The step is stretched to ``t_bound`` when ``STRETCH*|h|`` reaches it (ode23tb)."""
UNFILTERED_WEIGHT = 1.0 / 16.0
"""Weight of the unfiltered estimate in ``max(|filtered|, |unfiltered|/16)`` (ode23tb)."""
MAX_JAC_AGE = 50
"""Accepted steps after which an out-of-date Jacobian is re-evaluated (CVODE's MSBJ)."""
JAC_STEP_RATIO = 10.0
"""An out-of-date Jacobian is re-evaluated when ``|h|`` differs from the step size it
was evaluated for by more than this factor."""

# --- the solver state shared with the kernel --------------------------------
H_ABS, LU_H, NEWTON_RATE, CURRENT_JAC, JAC_AGE, JAC_STEP, LU_VALID, CONSTANT_JAC = range(8)
"""Slots of the ``memory`` array: the step size to try next, the signed step of the LU factors,
the last Newton contraction rate (NaN: none with these factors), whether the Jacobian was evaluated
at the current state, the accepted steps since, the step size it was evaluated for, whether the LU
factors are valid, whether the Jacobian is constant (given as a matrix: never re-evaluated)."""
MEMORY_SIZE = 8
EVERY_STEP = 3
"""The slot of :func:`trbdf2_steps`' ``limits`` array (:mod:`mbkron.numerics.runs`'s others) that is 1 for a row
at each step's end instead of rows at output times."""
STEP_OK, STEP_TOO_SMALL, STEP_DECLINED = 0, 1, 2
"""Outcomes of :func:`trbdf2_kernel`: accepted; the step size fell below the spacing of floating-point
numbers at ``t``; the right-hand side or the Jacobian declined a state (the caller redoes the step with another
right-hand side, or raises what the callback raised). A singular ``I - D h J`` is a Newton failure."""
EVALUATE, ADVANCE, JACOBIAN = 0, 1, 2
"""The modes of :func:`callback_trbdf2`'s Python callback ``callback(t, mode)``: the right-hand side at the state
in the context's buffer, not advancing or advancing (``rhs``'s ``advance``), or its Jacobian there."""


@jit
def _rms(x):  # pragma: no cover - compiled
    """:func:`mbkron.integrate.common.rms_norm` with numpy's arithmetic (``sqrt(x·x)/sqrt(n)``)."""
    return math.sqrt(np.dot(x, x)) / math.sqrt(x.size)


# Vector arithmetic as loops in small kernels compiled once (not numba array expressions, each of which
# compiles a broadcasting loop of its own into the kernel that uses it: the step compiled 40 % slower), with
# the arithmetic of the numpy expressions they replace, operation for operation (those of the Python solver that
# this kernel replaced: the step's results did not change).
@jit
def _tolerance_scale(atol, rtol, a, b, c, count):  # pragma: no cover - compiled
    """``atol + rtol * max(|a|, |b|, |c|)`` over the first ``count`` of ``a, b, c`` (numpy's maximum order;
    ``count`` an ``np.int64``, not a literal: one specialisation)."""
    out = np.empty(a.size)
    for i in range(a.size):
        largest = abs(a[i])
        if count > 1:
            largest = max(largest, abs(b[i]))
        if count > 2:
            largest = max(largest, abs(c[i]))
        out[i] = atol[i] + rtol[i] * largest
    return out


@jit
def _scaled(a, x):  # pragma: no cover - compiled
    """``a * x``."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = a * x[i]
    return out


@jit
def _divided(x, a):  # pragma: no cover - compiled
    """``x / a``."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = x[i] / a
    return out


@jit
def _sum2(a, x, b, y):  # pragma: no cover - compiled
    """``a * x + b * y``."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = a * x[i] + b * y[i]
    return out


@jit
def _stage_start(y, a, u, v, b, w):  # pragma: no cover - compiled
    """``y + a * (u + v) + b * w`` (``v``, ``w`` unused when ``a`` is 0: the first stage's ``y + a * u``)."""
    out = np.empty(y.size)
    for i in range(y.size):
        out[i] = y[i] + a * (u[i] + v[i]) + b * w[i]
    return out


@jit
def _estimate(z1, z2, z3):  # pragma: no cover - compiled
    """``ERROR_WEIGHTS[0] * z1 + ERROR_WEIGHTS[1] * z2 + ERROR_WEIGHTS[2] * z3``."""
    out = np.empty(z1.size)
    for i in range(z1.size):
        out[i] = ERROR_WEIGHTS[0] * z1[i] + ERROR_WEIGHTS[1] * z2[i] + ERROR_WEIGHTS[2] * z3[i]
    return out


@jit
def _scaled_rms(a, x, scale):  # pragma: no cover - compiled
    """``_rms(a * x / scale)``."""
    out = np.empty(x.size)
    for i in range(x.size):
        out[i] = a * x[i] / scale[i]
    return _rms(out)


@inline_jit
def state_jacobian(rhs, context, t, y, nq, J):  # pragma: no cover - compiled
    """``J = ∂y'/∂y`` of ``y' = (q̇, q̈(q, q̇))`` in place: ``[[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]``, the lower block by
    central differences with steps ``eps**(1/3) max(1, |y_j|)`` (as
    :func:`mbkron.integrate.simulate` does in Python); False if a perturbed state is declined or the
    differences are not finite. ``rhs(t, y, context, advance)`` is evaluated without advancing."""
    n = y.size
    step = np.cbrt(np.finfo(np.float64).eps)
    up = np.empty(nq)
    for k in range(2 * n):  # y + h_j e_j, then y - h_j e_j: one call of ``rhs`` in the code
        j = k // 2
        h = step * max(1.0, abs(y[j]))
        perturbed = y.copy()
        perturbed[j] += h if k % 2 == 0 else -h
        derivative, ok = rhs(t, perturbed, context, np.bool_(False))  # not a literal: one specialisation of rhs
        if not ok:
            return False
        if k % 2 == 0:
            for i in range(nq):
                up[i] = derivative[nq + i]
            continue
        for i in range(nq):
            value = (up[i] - derivative[nq + i]) / (2.0 * h)
            if not np.isfinite(value):
                return False
            J[nq + i, j] = value
    for i in range(nq):
        for j in range(n):
            J[i, j] = 1.0 if j == nq + i else 0.0
    return True


@jit
def hermite(nodes, t_old, t_new, time):  # pragma: no cover - compiled
    """The step's C1 piecewise cubic Hermite interpolant at ``time``, as
    :class:`mbkron.integrate.common.HermiteDenseOutput` evaluates it (the same arithmetic): ``nodes`` are
    ``y_old, y_mid, y_new, yp_old, yp_mid, yp_new`` (rows) at ``t_old``, ``t_old + GAMMA (t_new - t_old)``,
    ``t_new``."""
    t_mid = t_old + GAMMA * (t_new - t_old)
    piece = 1 if (time - t_mid) * (t_new - t_old) >= 0 else 0
    start = t_old if piece == 0 else t_mid
    length = (t_mid - t_old) if piece == 0 else (t_new - t_mid)
    s = (time - start) / length
    out = np.empty(nodes.shape[1])
    for i in range(out.size):  # by elements (the arithmetic of the array expression, no compiled loop for it)
        fa = length * nodes[3 + piece, i]
        fb = length * nodes[4 + piece, i]
        delta = nodes[piece + 1, i] - nodes[piece, i]
        out[i] = (((fa + fb - 2 * delta) * s + (3 * delta - 2 * fa - fb)) * s + fa) * s + nodes[piece, i]
    return out


@jit
def _factorize(h, J, lu, piv, memory, counts):  # pragma: no cover - compiled
    """Factorise ``I - D*h*J`` into ``lu``, ``piv``; False if it is singular."""
    counts[2] += 1
    n = J.shape[0]
    matrix = np.empty((n, n))
    for i in range(n):  # I - D h J by elements (as the array expression)
        for j in range(n):
            matrix[i, j] = (1.0 if i == j else 0.0) - (D * h) * J[i, j]
    if lu_factor(matrix, lu, piv) == 0:
        memory[LU_VALID] = 0.0
        return False
    memory[LU_H] = h
    memory[LU_VALID] = 1.0
    memory[NEWTON_RATE] = np.nan
    return True


@jit
def _solve(lu, piv, b):  # pragma: no cover - compiled
    """``(I - D*h*J)⁻¹ b`` from the factors (a new array)."""
    x = b.copy().reshape(b.size, 1)
    lu_solve(lu, piv, x)
    return x.reshape(b.size)  # C-contiguous (``x[:, 0]`` is not): one specialisation of the callers


@inline_jit
def _solve_stage(rhs, context, t_stage, y_pred, z_pred, h, scale, lu, piv, newton_tol, memory,
                 counts):  # pragma: no cover - compiled
    """Solve the stage equation ``z = h*f(t_stage, v + D*z)`` by simplified Newton iterations from the predicted
    ``y_pred = v + D*z_pred`` (``v`` stays implicit: ``y`` is corrected by ``D`` times the correction of ``z``), with
    the contraction-rate test of scipy's BDF/Radau on the scaled correction of ``y``; the rate carries over while
    the factors are unchanged (as in ode23tb), so a stage can converge after one iteration. Returns
    ``(outcome, y, z, iterations)``: outcome 1 converged, 0 not (or a non-finite ``f``), -1 declined."""
    y = y_pred.copy()
    z = z_pred.copy()
    rate = memory[NEWTON_RATE]
    norm_old = np.nan
    for k in range(NEWTON_MAXITER):
        f, ok = rhs(t_stage, y, context, np.bool_(True))
        counts[0] += 1
        if not ok:
            return -1, y, z, k + 1
        finite = True
        for i in range(f.size):
            finite = finite and np.isfinite(f[i])
        if not finite:
            return 0, y, z, k + 1
        dz = _solve(lu, piv, _sum2(h, f, -1.0, z))
        dy_norm = _scaled_rms(D, dz, scale)
        if not np.isnan(norm_old):
            rate = dy_norm / norm_old
        if not np.isnan(rate) and (
                rate >= 1 or rate ** (NEWTON_MAXITER - k) / (1 - rate) * dy_norm > newton_tol):
            return 0, y, z, k + 1
        for i in range(z.size):
            z[i] += dz[i]
            y[i] += D * dz[i]
        if dy_norm == 0 or (not np.isnan(rate) and rate / (1 - rate) * dy_norm < newton_tol):
            if not np.isnan(norm_old):
                memory[NEWTON_RATE] = rate
            return 1, y, z, k + 1
        norm_old = dy_norm
    return 0, y, z, NEWTON_MAXITER


NO_REFRESH, BEFORE_ATTEMPT, RETRY, AFTER_STEP = range(4)
"""Requests to the one place :func:`trbdf2_kernel` re-evaluates the Jacobian: none; before the attempt
(the Jacobian is out of date), then go on with it; after a Newton failure with an out-of-date Jacobian,
then a new attempt; at the end of an accepted step that converged slowly, then return."""


@inline_jit
def trbdf2_kernel(rhs, jacobian, context, t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu,
                  piv, memory, counts):  # pragma: no cover - compiled
    """One step of :class:`mbkron.integrate.trbdf2.TRBDF2` from ``(t, y)`` with slope ``yp``, with the right-hand
    side ``rhs(t, y, context, advance) -> (y', ok)`` and its Jacobian ``jacobian(rhs, context, t, y, nq, J) -> ok``
    (into ``J``, in place) compiled: the algorithm the solver's docstring and docs/integrators.md describe.

    ``J``, ``lu``, ``piv``, ``memory`` (slots :data:`H_ABS` …) and ``counts`` (nfev, njev, nlu) are the
    solver's state, updated in place; ``rtol``, ``atol`` have shape (n,). The code calls ``rhs`` in one place
    (the Newton iteration: the two stages share one Newton loop) and ``jacobian`` in one (every Jacobian
    evaluation goes through one request, :data:`BEFORE_ATTEMPT` …), which keeps the compilation short. A constant
    Jacobian (``memory[CONSTANT_JAC]``) is never re-evaluated; ``counts`` count the Newton iterations' right-hand
    sides and the Jacobians (not the evaluations inside ``jacobian``: scipy's convention).

    Returns
    -------
    outcome : int
        :data:`STEP_OK`, :data:`STEP_TOO_SMALL` or :data:`STEP_DECLINED`.
    t_new : float
    y_new, yp_new, y_mid, yp_mid : ndarray
        The accepted step's end and middle, with their slopes (for the dense output).
    """
    empty = np.empty(0)
    request = NO_REFRESH
    t_at, y_at, h_at = t, y, 0.0  # where (and for which step size) the requested Jacobian is evaluated
    smallest = 10.0 * abs(np.nextafter(t, direction * np.inf) - t)
    h_abs = max(min(memory[H_ABS], max_step), smallest)
    no_failures, new_attempt = True, True
    t_new, h, error_norm, n_iter_1, n_iter_2 = t, 0.0, 0.0, 0, 0
    y_new, y_mid, z1, z2, z3 = y, y, yp, yp, yp
    while True:
        if request != NO_REFRESH:
            counts[1] += 1
            ok = jacobian(rhs, context, t_at, y_at, nq, J)
            if ok:
                memory[CURRENT_JAC], memory[JAC_AGE], memory[JAC_STEP], memory[LU_VALID] = 1.0, 0.0, h_at, 0.0
            if request == AFTER_STEP:
                if not ok:  # declined there: the next step re-evaluates it (by the caller's redo if need be)
                    memory[CURRENT_JAC], memory[JAC_AGE] = 0.0, MAX_JAC_AGE
                return STEP_OK, t_new, y_new, _divided(z3, h), y_mid, _divided(z2, h)
            if not ok:
                return STEP_DECLINED, t, empty, empty, empty, empty
            new_attempt = request == RETRY
            request = NO_REFRESH
        if new_attempt:
            if h_abs < smallest:
                return STEP_TOO_SMALL, t, empty, empty, empty, empty
            remaining = abs(t_bound - t)
            if STRETCH * h_abs >= remaining and remaining <= max_step:
                t_new = t_bound
            else:
                t_new = t + direction * h_abs
            h = t_new - t
            h_abs = abs(h)
            if memory[CURRENT_JAC] == 0.0 and memory[CONSTANT_JAC] == 0.0:
                ratio = max(h_abs / memory[JAC_STEP], memory[JAC_STEP] / h_abs)
                if memory[JAC_AGE] >= MAX_JAC_AGE or ratio > JAC_STEP_RATIO:
                    request, t_at, y_at, h_at = BEFORE_ATTEMPT, t, y, h_abs
                    continue
        new_attempt = True
        outcome = 1
        if memory[LU_VALID] == 0.0 or abs(h - memory[LU_H]) > 1e-12 * h_abs:
            if not _factorize(h, J, lu, piv, memory, counts):
                outcome = 0  # I - D h J is singular: a Newton failure before the first iteration

        # the trapezoidal stage to t + GAMMA*h (predicted with a constant slope), then the BDF2 stage to
        # t + h (the slope extrapolated linearly)
        z1 = _scaled(h, yp)
        for stage in range(2):
            if outcome != 1:
                break
            if stage == 0:
                t_stage, z_pred, scale = t + GAMMA * h, z1, _tolerance_scale(atol, rtol, y, y, y, np.int64(1))
                y_pred = _sum2(1.0, y, GAMMA, z1)
            else:
                t_stage, z_pred = t_new, _sum2(STAGE3_PREDICTOR[0], z1, STAGE3_PREDICTOR[1], z2)
                scale = _tolerance_scale(atol, rtol, y, y_mid, y_mid, np.int64(2))
                y_pred = _stage_start(y, W, z1, z2, D, z_pred)
            outcome, y_stage, z_stage, n_iter = _solve_stage(rhs, context, t_stage, y_pred, z_pred, h, scale, lu, piv,
                                                             newton_tol, memory, counts)
            if stage == 0:
                y_mid, z2, n_iter_1 = y_stage, z_stage, n_iter
            else:
                y_new, z3, n_iter_2 = y_stage, z_stage, n_iter
            if outcome != 1:
                break
        if outcome == -1:
            return STEP_DECLINED, t, empty, empty, empty, empty
        if outcome == 0:
            if memory[CURRENT_JAC] == 0.0 and memory[CONSTANT_JAC] == 0.0:
                request, t_at, y_at, h_at = RETRY, t, y, h_abs
                continue
            no_failures = False
            h_abs *= NEWTON_FAIL_FACTOR
            continue

        scale = _tolerance_scale(atol, rtol, y, y_mid, y_new, np.int64(3))
        estimate = _estimate(z1, z2, z3)
        error_norm = max(_scaled_rms(1.0, _solve(lu, piv, estimate), scale), UNFILTERED_WEIGHT * _scaled_rms(1.0, estimate, scale))
        if error_norm > 1:
            no_failures = False
            h_abs *= max(MIN_REJECT_FACTOR, SAFETY * error_norm ** (-1 / 3))
            continue

        if no_failures:
            predicted = SAFETY * error_norm ** (-1 / 3) if error_norm > 0 else np.inf
            factor = min(MAX_FACTOR, max(MIN_FACTOR, min(max_step / h_abs, predicted)))
            if abs(factor - 1) > HOLD_BAND:
                h_abs *= factor
        memory[H_ABS] = h_abs
        if memory[CONSTANT_JAC] != 0.0:
            return STEP_OK, t_new, y_new, _divided(z3, h), y_mid, _divided(z2, h)
        memory[JAC_AGE] += 1.0
        rate = memory[NEWTON_RATE]
        if max(n_iter_1, n_iter_2) > 2 and (0.0 if np.isnan(rate) else rate) > 1e-3:  # slow convergence
            request, t_at, y_at, h_at = AFTER_STEP, t_new, y_new, h_abs
            continue
        memory[CURRENT_JAC] = 0.0
        return STEP_OK, t_new, y_new, _divided(z3, h), y_mid, _divided(z2, h)


@inline_jit
def trbdf2_steps(rhs, jacobian, context, t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu, piv,
                 memory, counts, times, limits, lower, upper, max_steps):  # pragma: no cover - compiled
    """Up to ``max_steps`` steps of :func:`trbdf2_kernel` from ``(t, y)`` with slope ``yp``, each followed by its
    output rows, in one call: what a run does step by step between its checks, without a return to Python.

    After each accepted step come the rows a run records (:class:`mbkron.integrate.trajectory.Trajectory`), by
    ``rhs`` advancing, as a caller would ask for them after the step: with ``limits[EVERY_STEP]`` the right-hand
    side at the step's end, else those of ``times`` (the output times still to come, in order) that the step
    reaches, their states by :func:`hermite`. It returns after the step that ends the interval, that the caller's
    checks might stop at — a coordinate ``y[:nq]`` inside ``[lower, upper]`` before it and outside after it (where a
    range ends), a step shorter than ``limits[SCREEN]`` times the longest so far or than ``limits[STALL]`` times
    the interval still to go (:func:`mbkron.simulate`'s singularity screen and stall test), rows the right-hand
    side declines — or the step it cannot take (its outcome), so that the caller, looking at the steps one by
    one, finds every state it would have met stepping alone: the right-hand side has been evaluated at the same
    states in the same order.

    Returns
    -------
    outcome : int
        Of the last step tried: :data:`STEP_OK`, else the step that could not be taken (:data:`STEP_TOO_SMALL`,
        :data:`STEP_DECLINED`: ``memory``, ``J``, ``lu``, ``piv`` as that step left them).
    accepted : int
        The steps taken.
    record : ndarray, shape (max_steps, 1 + 4 n)
        Row ``k`` for the ``k``-th step: ``t_new``, ``y_mid``, ``y_new``, ``yp_mid``, ``yp_new`` (as
        :func:`trbdf2_kernel` returns them).
    row_end : ndarray of int64, shape (max_steps,)
        The rows recorded up to the end of each step (cumulative); a step's rows are missing where the
        right-hand side declined one (the last step then).
    states, derivatives : ndarray, shape (rows, n)
        The rows: states and their right-hand sides; with output times, row ``r`` is at ``times[r]``.
    """
    n = y.size
    every_step = limits[EVERY_STEP] != 0.0
    bound = max_steps if every_step else times.size
    record = np.empty((max_steps, 1 + 4 * n))
    row_end = np.zeros(max_steps, dtype=np.int64)
    states, derivatives = np.empty((bound, n)), np.empty((bound, n))
    nodes = np.empty((6, n))  # y_old, y_mid, y_new and their slopes (hermite's)
    accepted, rows, outcome = 0, 0, STEP_OK
    while accepted < max_steps:
        outcome, t_new, y_new, yp_new, y_mid, yp_mid = trbdf2_kernel(
            rhs, jacobian, context, t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu, piv, memory,
            counts)
        if outcome != STEP_OK:
            break
        entry = record[accepted]
        entry[0] = t_new
        for k in range(n):
            entry[1 + k], entry[1 + n + k], entry[1 + 2 * n + k], entry[1 + 3 * n + k] = (
                y_mid[k], y_new[k], yp_mid[k], yp_new[k])
            nodes[0, k], nodes[1, k], nodes[2, k] = y[k], y_mid[k], y_new[k]
            nodes[3, k], nodes[4, k], nodes[5, k] = yp[k], yp_mid[k], yp_new[k]
        count = 1 if every_step else 0  # the step's rows
        while not every_step and rows + count < times.size and direction * (t_new - times[rows + count]) >= 0:
            count += 1
        complete = True
        for i in range(count):  # each state, then the right-hand side there (advancing)
            time = t_new if every_step else times[rows + i]
            state = y_new if every_step else hermite(nodes, t, t_new, time)
            for k in range(n):
                states[rows + i, k] = state[k]
            derivative, complete = rhs(time, state, context, np.bool_(True))
            if not complete:
                break
            for k in range(n):
                derivatives[rows + i, k] = derivative[k]
        if complete:
            rows += count
        row_end[accepted] = rows
        accepted += 1
        if may_stop(limits, lower, upper, nq, t, y, t_new, y_new, t_bound) or not complete or t_new == t_bound:
            break
        t, y, yp = t_new, y_new, yp_new
    return outcome, accepted, record, row_end, states, derivatives


@inline_jit
def callback_rhs(t, y, context, advance):  # pragma: no cover - compiled
    """``(y', ok)`` at ``(t, y)`` from the Python driver: ``y`` copied into the ``context``'s state buffer, its
    callback (``context[0]``, an address) called in mode :data:`ADVANCE` or :data:`EVALUATE`, ``y'`` read from the
    derivative buffer; ``ok`` False where the callback returns 0 (it raised: the driver raises it again)."""
    address, state, derivative, _ = context
    for i in range(y.size):
        state[i] = y[i]
    ok = call_python(address, t, ADVANCE if advance else EVALUATE) != 0
    return derivative.copy(), ok


@inline_jit
def callback_jacobian(rhs, context, t, y, nq, J):  # pragma: no cover - compiled
    """``J = ∂y'/∂y`` at ``(t, y)`` from the Python driver (its callback in mode :data:`JACOBIAN` writes it into
    the ``context``'s Jacobian buffer; ``J`` is left as it was where it returns 0); ``rhs`` and ``nq`` unused (the
    signature of :func:`state_jacobian`)."""
    address, state, _, buffer = context
    for i in range(y.size):
        state[i] = y[i]
    if call_python(address, t, np.int64(JACOBIAN)) == 0:
        return False
    n = y.size
    for i in range(n):
        for j in range(n):
            J[i, j] = buffer[i, j]
    return True


@jit_holding_gil
def callback_trbdf2(t, y, yp, t_bound, direction, max_step, rtol, atol, newton_tol, nq, J, lu, piv, memory, counts,
                    context, times, limits, lower, upper, max_steps):  # pragma: no cover - compiled
    """Up to ``max_steps`` TR-BDF2 steps and their output rows (:func:`trbdf2_steps`, which documents the arguments
    and the six values returned) of a right-hand side that is any Python callable: :func:`callback_rhs` and
    :func:`callback_jacobian` with ``context = (address, state, derivative, jacobian)`` — the address of the
    driver's :data:`mbkron.jit.calls.PYTHON_CALLBACK` ``callback(t, mode)`` and the three buffers it reads
    ``y`` from and writes ``y'`` (shape (n,)) or ``J`` (shape (n, n)) into. Compiled once per machine; it keeps the
    GIL (the callback runs Python)."""
    return trbdf2_steps(callback_rhs, callback_jacobian, context, t, y, yp, t_bound, direction, max_step, rtol, atol,
                        newton_tol, nq, J, lu, piv, memory, counts, times, limits, lower, upper, max_steps)
