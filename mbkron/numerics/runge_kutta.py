"""Explicit Runge–Kutta steps, compiled: equal steps for the wrapping surfaces, scipy's adaptive steps for runs.

:func:`dop853_equal_steps`: for one state, the ellipsoid's and the torus's Newton iterations
(:mod:`mbkron.numerics.geodesics.ellipsoid`, :mod:`mbkron.numerics.geodesics.torus`) integrate their geodesic and its
derivatives with respect to the unknowns over ``τ ∈ [0, 1]`` in a number of equal steps fixed by the
surface's curvature, each with its own right-hand side.

:func:`adaptive_step`: one accepted step of scipy's explicit Runge–Kutta solvers (``RK23``, ``RK45``,
``DOP853``: ``scipy.integrate._ivp.rk.RungeKutta._step_impl`` with ``rk_step`` and the methods'
``_estimate_error_norm``, decision for decision and with their constants), with a compiled right-hand side
``rhs(t, y, context, advance) -> (y', ok)`` (:func:`mbkron.algorithms.dynamics.group.state_rhs`), so that a run of
a model whose right-hand side is one compiled call (a model with one constraint group) spends no Python
per stage; :func:`adaptive_steps` takes several of them in one call, up to where a run's checks or output rows
need Python; :func:`extra_stages` are DOP853's three more stages for its dense output and :func:`derivatives`
the right-hand side at given states (the output rows). The solvers that drive them
(:mod:`mbkron.integrate.runge_kutta`) keep scipy's state; scipy's solvers are the oracle
(``tests/test_compiled_runge_kutta.py``). Like :func:`mbkron.numerics.trbdf2.trbdf2_steps`, these take the
right-hand side as an argument and are inlined into the one kernel that names it
(:func:`mbkron.algorithms.dynamics.group.group_runge_kutta`).
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.common import inline_jit, jit
from mbkron.numerics.runs import may_stop
from mbkron.numerics.tableaus import DOP853

__all__ = ["STAGES", "STEP_DECLINED", "STEP_OK", "STEP_TOO_SMALL", "adaptive_step", "derivatives",
           "dop853_equal_steps", "extra_stages"]

STAGES = 12
"""DOP853's stages (the rows of the scratch ``k`` of :func:`dop853_equal_steps`)."""

_A = np.ascontiguousarray(DOP853.A[:STAGES, :STAGES])
_B = np.ascontiguousarray(DOP853.B)


@inline_jit
def dop853_equal_steps(rate, parameters, y, steps, k, stage_y):  # pragma: no cover - compiled
    """``steps`` equal steps of DOP853 for the autonomous ``y' = rate(y, parameters, out)`` over ``τ ∈ [0, 1]``,
    ``y`` (n,) advanced in place; ``k`` (:data:`STAGES`, n) and ``stage_y`` (n,) are scratch. Compiled into each
    caller (numba's ``inline="always"``): ``rate`` is a compiled function, a different one per caller."""
    n = y.size
    h = 1.0 / steps
    for _ in range(steps):
        for stage in range(STAGES):
            for i in range(n):
                stage_y[i] = 0.0
            for j in range(stage):  # the increment Σ_j A_ij k_j (DOP853's zeros skipped)
                c = _A[stage, j]
                if c != 0.0:
                    for i in range(n):
                        stage_y[i] += c * k[j, i]
            for i in range(n):
                stage_y[i] = y[i] + h * stage_y[i]
            rate(stage_y, parameters, k[stage])
        for i in range(n):
            stage_y[i] = 0.0
        for j in range(STAGES):
            c = _B[j]
            if c != 0.0:
                for i in range(n):
                    stage_y[i] += c * k[j, i]
        for i in range(n):
            y[i] = y[i] + h * stage_y[i]


STEP_OK, STEP_TOO_SMALL, STEP_DECLINED = 0, 1, 2
"""Outcomes of :func:`adaptive_step` (those of :mod:`mbkron.numerics.trbdf2`): accepted; the step size fell below
the spacing of floating-point numbers at ``t`` (scipy's ``TOO_SMALL_STEP``); the right-hand side declined a
state (the Python solver redoes the step)."""

SAFETY, MIN_FACTOR, MAX_FACTOR = 0.9, 0.2, 10.0
"""scipy's step-size factors of its explicit Runge–Kutta solvers (``scipy.integrate._ivp.rk``)."""

UNTIL = 3
"""The slot of :func:`adaptive_steps`' ``limits`` array (:mod:`mbkron.numerics.runs`'s others): it returns after
the step that reaches ``limits[UNTIL]`` (the run's next output time; ``direction · inf``: none)."""


@inline_jit
def _stage(rhs, context, t_stage, y, h, a, stage, K, state, counts):  # pragma: no cover - compiled
    """``K[stage] = rhs(t_stage, y + (Σ_{j<stage} a_j K_j) h)`` as scipy's ``rk_step`` (``state`` is scratch;
    ``counts[0]`` counts the evaluation); False where the right-hand side declines the state."""
    for i in range(y.size):
        total = 0.0
        for j in range(stage):
            total += K[j, i] * a[j]
        state[i] = y[i] + total * h
    derivative, ok = rhs(t_stage, state, context, np.bool_(True))
    counts[0] += 1
    if not ok:
        return False
    for i in range(y.size):
        K[stage, i] = derivative[i]
    return True


@inline_jit
def adaptive_step(rhs, context, t, y, f, h_abs, t_bound, direction, max_step, rtol, atol, A, B, C, E, E3, E5,
                  error_exponent, n_stages, K, counts):  # pragma: no cover - compiled
    """One accepted step of scipy's ``RungeKutta._step_impl`` from ``(t, y)`` with slope ``f``.

    ``A`` (n_stages, n_stages), ``B``, ``C`` (n_stages,) are the method's tableau; the error estimate is
    ``(Σ_j E_j K_j) h / scale`` in the RMS norm where ``E3`` is empty (RK23, RK45), else DOP853's
    ``|h| ‖e5‖² / sqrt((‖e5‖² + 0.01 ‖e3‖²) n)`` with ``e5 = Σ_j E5_j K_j / scale`` and ``e3`` alike; ``K``
    (at least n_stages + 1 rows) receives the accepted step's stages, the last row ``f(t_new, y_new)``, as
    scipy's ``K``; ``counts[0]`` counts the evaluations. Every stage evaluation advances the right-hand
    side's continuation (as the Python route's evaluations do).

    Returns
    -------
    outcome : int
        :data:`STEP_OK`, :data:`STEP_TOO_SMALL` or :data:`STEP_DECLINED`.
    t_new, y_new, f_new, h_abs, h : the accepted step (scipy's ``t``, ``y``, ``f``, ``h_abs`` and
        ``h_previous`` after it); the inputs where the outcome is not :data:`STEP_OK`.
    """
    n = y.size
    min_step = 10.0 * abs(np.nextafter(t, direction * np.inf) - t)
    if h_abs > max_step:
        h_abs = max_step
    elif h_abs < min_step:
        h_abs = min_step
    rejected = False
    state, y_new, scale = np.empty(n), np.empty(n), np.empty(n)
    while True:
        if h_abs < min_step:
            return STEP_TOO_SMALL, t, y, f, h_abs, 0.0
        h = h_abs * direction
        t_new = t + h
        if direction * (t_new - t_bound) > 0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        for i in range(n):  # rk_step: K[0] = f, K[s] = f(t + c_s h, y + (Σ_j a_sj K_j) h)
            K[0, i] = f[i]
        for stage in range(1, n_stages):
            if not _stage(rhs, context, t + C[stage] * h, y, h, A[stage], stage, K, state, counts):
                return STEP_DECLINED, t, y, f, h_abs, 0.0
        for i in range(n):  # y_new = y + h Σ_j b_j K_j
            total = 0.0
            for j in range(n_stages):
                total += K[j, i] * B[j]
            y_new[i] = y[i] + h * total
        f_new, ok = rhs(t + h, y_new, context, np.bool_(True))
        counts[0] += 1
        if not ok:
            return STEP_DECLINED, t, y, f, h_abs, 0.0
        for i in range(n):
            K[n_stages, i] = f_new[i]
            scale[i] = atol[i] + max(abs(y[i]), abs(y_new[i])) * rtol[i]
        error_norm = _error_norm(K, h, scale, E, E3, E5, n_stages)
        if not np.isfinite(error_norm):  # scipy's step decides (and this loop stays bounded: no NaN step size)
            return STEP_DECLINED, t, y, f, h_abs, 0.0
        if error_norm < 1:
            factor = MAX_FACTOR if error_norm == 0 else min(MAX_FACTOR, SAFETY * error_norm ** error_exponent)
            if rejected:
                factor = min(1.0, factor)
            return STEP_OK, t_new, y_new, f_new, h_abs * factor, h
        h_abs *= max(MIN_FACTOR, SAFETY * error_norm ** error_exponent)
        rejected = True


@inline_jit
def adaptive_steps(rhs, context, t, y, f, h_abs, t_bound, direction, max_step, rtol, atol, A, B, C, E, E3, E5,
                   error_exponent, n_stages, counts, limits, lower, upper, max_steps):  # pragma: no cover - compiled
    """Up to ``max_steps`` accepted steps of :func:`adaptive_step` from ``(t, y)`` with slope ``f``, in one call: what a
    run does step by step between its checks, without a return to Python.

    It returns after the step that ends the interval, that reaches the output time ``limits[UNTIL]`` (the run then
    evaluates its output rows), that the caller's checks might stop at — a coordinate ``y[:nq]`` inside ``[lower,
    upper]`` (nq = ``lower.size``) before it and outside after it (where a range ends), a step shorter than
    ``limits[SCREEN]`` times the longest so far or than ``limits[STALL]`` times the interval still to go
    (:func:`mbkron.simulate`'s singularity screen and stall test) — or the step it cannot take (its outcome), so
    that the caller, looking at the steps one by one, finds every state it would have met stepping alone: the
    right-hand side has been evaluated at the same states in the same order. The other arguments are
    :func:`adaptive_step`'s.

    Returns
    -------
    outcome : int
        Of the last step tried: :data:`STEP_OK`, else the step that could not be taken (:data:`STEP_TOO_SMALL`,
        :data:`STEP_DECLINED`).
    accepted : int
        The steps taken.
    record : ndarray, shape (max_steps, 3 + 2 n)
        Row ``k`` for the ``k``-th step: ``t_new``, ``h_abs`` (the next step's), ``h`` (this one's, signed),
        ``y_new``, ``f_new``.
    stages : ndarray, shape (max_steps, n_stages + 1, n)
        The steps' stages (scipy's ``K`` after each).
    """
    n, nq = y.size, lower.size
    record = np.empty((max_steps, 3 + 2 * n))
    stages = np.empty((max_steps, n_stages + 1, n))
    accepted, outcome = 0, STEP_OK
    while accepted < max_steps:
        outcome, t_new, y_new, f_new, h_abs, h = adaptive_step(
            rhs, context, t, y, f, h_abs, t_bound, direction, max_step, rtol, atol, A, B, C, E, E3, E5, error_exponent,
            n_stages, stages[accepted], counts)
        if outcome != STEP_OK:
            break
        entry = record[accepted]
        entry[0], entry[1], entry[2] = t_new, h_abs, h
        for i in range(n):
            entry[3 + i] = y_new[i]
            entry[3 + n + i] = f_new[i]
        accepted += 1
        if (may_stop(limits, lower, upper, nq, t, y, t_new, y_new, t_bound) or direction * (t_new - t_bound) >= 0
                or direction * (t_new - limits[UNTIL]) >= 0):
            break
        t, y, f = t_new, y_new, f_new
    return outcome, accepted, record, stages


@jit
def _error_norm(K, h, scale, E, E3, E5, n_stages):  # pragma: no cover - compiled
    """scipy's ``_estimate_error_norm`` of RK23/RK45 (``E3`` empty) or DOP853 over the rows ``0 … n_stages``
    of ``K``."""
    n = scale.size
    if E3.size == 0:
        total = 0.0
        for i in range(n):
            error = 0.0
            for j in range(n_stages + 1):
                error += K[j, i] * E[j]
            error = error * h / scale[i]
            total += error * error
        return np.sqrt(total) / n ** 0.5
    norm5, norm3 = 0.0, 0.0
    for i in range(n):
        e5, e3 = 0.0, 0.0
        for j in range(n_stages + 1):
            e5 += K[j, i] * E5[j]
            e3 += K[j, i] * E3[j]
        e5, e3 = e5 / scale[i], e3 / scale[i]
        norm5 += e5 * e5
        norm3 += e3 * e3
    if norm5 == 0 and norm3 == 0:
        return 0.0
    return abs(h) * norm5 / np.sqrt((norm5 + 0.01 * norm3) * n)


@inline_jit
def extra_stages(rhs, context, t_old, y_old, h, A_extra, C_extra, n_stages, K, counts):  # pragma: no cover - compiled
    """DOP853's dense-output stages (scipy's ``_dense_output_impl``): ``K[s] = f(t_old + c h, y_old + (Σ_j a_j
    K_j) h)`` for the rows ``n_stages + 1 …`` of ``K`` (its ``K_extended``); False where the right-hand side
    declines a state."""
    state = np.empty(y_old.size)
    for row in range(A_extra.shape[0]):
        if not _stage(rhs, context, t_old + C_extra[row] * h, y_old, h, A_extra[row], n_stages + 1 + row, K, state,
                      counts):
            return False
    return True


@inline_jit
def derivatives(rhs, context, t, states, out):  # pragma: no cover - compiled
    """``out[i] = rhs(t[i], states[i])`` for the rows of ``states`` (k, n) (the continuation advancing from
    row to row); False where the right-hand side declines one."""
    for row in range(states.shape[0]):
        derivative, ok = rhs(t[row], states[row].copy(), context, np.bool_(True))
        if not ok:
            return False
        for i in range(states.shape[1]):
            out[row, i] = derivative[i]
    return True
