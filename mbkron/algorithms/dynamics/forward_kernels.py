"""Compiled forward dynamics: ``q̈ = M⁻¹ (G + Q − N q̇)`` of Eq. 198 in one kernel call per batch.

The terms come from :func:`mbkron.algorithms.dynamics.kernels.eom_state` (Eq. 145, 126, 187 and the
spring-dampers, Eq. 46); the generalized force of joint torques is ``∇fᵀ τ_joint`` (Eq. 161 with
the joint's own twist); ``M`` is factored once by Cholesky, whose failure *is* the check that ``M``
is positive definite, and the two triangular solves give ``q̈``. A status per batch says why a
state could not be done (:data:`OK`, :data:`SPRING_POINTS_COINCIDE`, :data:`NOT_POSITIVE_DEFINITE`);
the caller then takes the general route, which raises the descriptive error. :func:`explicit_terms` gives the terms
themselves (and the inverse dynamics' ``τ``) of one state of a model with explicit joint variables in one call, and
:func:`forward_explicit` its ``q̈``: the joint variables (affine, empirical functions of a coordinate, expressions;
:func:`mbkron.numerics.tabulated.explicit_state`) evaluated in the same call.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.calls import address_only, borrowed, by_address
from mbkron.jit.common import AVAILABLE, jit, jitable, numba
from mbkron.algorithms.dynamics.kernels import eom_state, eom_workspace
from mbkron.numerics.tabulated import CONVECTIVE, affine_values, explicit_state_at, scratch_size

__all__ = ["OK", "SPRING_POINTS_COINCIDE", "NOT_POSITIVE_DEFINITE", "NOT_FINITE", "cholesky_factor",
           "cholesky_columns", "cholesky_solve", "cholesky_substitute", "solve_columns",
           "solve_positive_definite", "explicit_terms", "forward_explicit", "forward_given", "forward_scratch",
           "forward_solved"]

OK, SPRING_POINTS_COINCIDE, NOT_POSITIVE_DEFINITE, NOT_FINITE = 0, 1, 2, 3


@jit
def cholesky_solve(M, b, L, x):  # pragma: no cover - compiled
    """``x = M⁻¹ b`` by the Cholesky factor ``M = L Lᵀ`` (``L`` is scratch); False if ``M`` is not
    positive definite (a pivot ``≤ 0`` or not finite)."""
    if not cholesky_factor(M, L):
        return False
    cholesky_substitute(L, b, x)
    return True


@jit
def cholesky_factor(M, L):  # pragma: no cover - compiled
    """The Cholesky factor ``M = L Lᵀ`` into the lower triangle of ``L``; False if ``M`` is not positive definite (a
    pivot ``≤ 0`` or not finite)."""
    n = M.shape[0]
    for j in range(n):
        pivot = M[j, j]
        for k in range(j):
            pivot -= L[j, k] * L[j, k]
        if not pivot > 0.0 or not np.isfinite(pivot):
            return False
        diagonal = np.sqrt(pivot)
        L[j, j] = diagonal
        for i in range(j + 1, n):
            value = M[i, j]
            for k in range(j):
                value -= L[i, k] * L[j, k]
            L[i, j] = value / diagonal
    return True


@jit
def cholesky_substitute(L, b, x):  # pragma: no cover - compiled
    """``x = (L Lᵀ)⁻¹ b`` for the factor of :func:`cholesky_factor` (``x`` may be ``b``)."""
    n = L.shape[0]
    for i in range(n):  # L y = b
        value = b[i]
        for k in range(i):
            value -= L[i, k] * x[k]
        x[i] = value / L[i, i]
    for i in range(n - 1, -1, -1):  # Lᵀ x = y
        value = x[i]
        for k in range(i + 1, n):
            value -= L[k, i] * x[k]
        x[i] = value / L[i, i]


@jit
def cholesky_columns(L, B, out, column):  # pragma: no cover - compiled
    """``out = (L Lᵀ)⁻¹ B`` column by column (:func:`cholesky_substitute`), ``B`` and ``out`` (n, p), ``column`` n
    numbers of scratch."""
    n = L.shape[0]
    for m in range(B.shape[1]):
        for k in range(n):
            column[k] = B[k, m]
        cholesky_substitute(L, column, column)
        for k in range(n):
            out[k, m] = column[k]


@jit
def solve_columns(M, B):  # pragma: no cover - compiled
    """``M⁻¹ B`` for stacks ``M`` (states, n, n), ``B`` (states, n, p), each ``M`` factored once by Cholesky
    (:func:`cholesky_factor`, :func:`cholesky_columns`); ``(X, ok)``, ``ok`` False where some ``M`` is not positive
    definite (``X`` is then unfinished)."""
    n = M.shape[1]
    X, L, column = np.empty(B.shape), np.empty((n, n)), np.empty(n)
    for s in range(M.shape[0]):
        if not cholesky_factor(M[s], L):
            return X, False
        cholesky_columns(L, B[s], X[s], column)
    return X, True


@jit
def _solve_batch(M, b):  # pragma: no cover - compiled
    states, n = b.shape
    x, L = np.empty((states, n)), np.empty((n, n))
    for s in range(states):
        if not cholesky_solve(M[s], b[s], L, x[s]):
            return x, False
    return x, True


def solve_positive_definite(M: NDArray, b: NDArray) -> tuple[NDArray[np.float64], bool]:
    """``M⁻¹ b`` for stacks ``M`` (..., n, n) and ``b`` (..., n) by Cholesky; ``ok`` is False if some
    ``M`` is not positive definite (``x`` is then incomplete)."""
    n = b.shape[-1]
    batch = np.broadcast_shapes(M.shape[:-2], b.shape[:-1])
    M = np.ascontiguousarray(np.broadcast_to(M, batch + (n, n)), dtype=float).reshape(-1, n, n)
    b = np.ascontiguousarray(np.broadcast_to(b, batch + (n,)), dtype=float).reshape(-1, n)
    x, ok = _solve_batch(M, b)
    return x.reshape(batch + (n,)), ok


_eom_state_at = by_address(eom_state, returns="boolean")


@address_only
def _forward_state(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd,
                   qdd, terms, workspace):  # pragma: no cover - compiled
    """``q̈`` of one state into ``qdd``; returns the status. ``convective`` (nj,) is ``q̇ᵀ H_j q̇`` per joint
    variable; ``terms`` is (M, L, rhs, N q̇, G, Q) scratch."""
    # held by the caller for the call: borrowed, the arrays cost no atomic reference counting below
    (geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd, qdd, terms,
     workspace) = borrowed((geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective,
                            qd, qdd, terms, workspace))
    M, L, rhs, Nqd, G, Q = terms
    if not _eom_state_at((geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q,
                          workspace)):
        return SPRING_POINTS_COINCIDE
    nq = qd.shape[0]
    for k in range(nq):
        value = G[k] + Q[k] - Nqd[k] + force[k]
        for j in range(joint_torque.shape[0]):
            value += grad[j, k] * joint_torque[j]
        rhs[k] = value
    if not cholesky_solve(M, rhs, L, qdd):
        return NOT_POSITIVE_DEFINITE
    return OK


_forward_state_at = by_address(_forward_state, returns="int64")
""":func:`_forward_state` called through its address by :func:`forward_solved`: compiled apart (a helper process
compiles it while a command compiles the constraint step and :func:`forward_solved` around it,
:mod:`mbkron.cli.prefetch`)."""


@jitable
def _terms_scratch(nq):  # pragma: no cover - compiled
    return np.empty((nq, nq)), np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty(nq), np.empty(nq)


@jitable
def _explicit_joint_variables(A, base, c, rows, floats, calls, entries, q, qd):  # pragma: no cover - compiled
    """``(f, ∇f, q̇ᵀ H q̇)`` of one state of explicit joint variables, in new arrays
    (:func:`mbkron.numerics.tabulated.explicit_state`, called by its address)."""
    nj, nq = A.shape
    f, grad, convective = np.empty(nj), np.empty((nj, nq)), np.empty(nj)
    explicit_state_at((A, base, c, rows, floats, calls, entries, q, qd, CONVECTIVE, f, grad, np.empty((1, 1, 1)),
                       convective, np.empty(scratch_size(rows, calls))))
    return f, grad, convective


@jit
def forward_explicit(geometry, links, body_inertia, gravity, springs, joint_torque, force, A, base, c, rows, floats,
                     calls, entries, q, qd):  # pragma: no cover - compiled
    """``q̈`` of one state whose joint variables are explicit: ``f = A q + c`` except the provider rows (``base``,
    ``rows``, ``floats``, ``calls``, ``entries``: :mod:`mbkron.numerics.tabulated`'s description, Section 3-1), with
    ``∇f`` and ``q̇ᵀ H q̇`` (Eq. 57, 126), all in this call.

    ``force`` (nq,) is the actuation plus the constant generalized forces; ``joint_torque`` (nj,) the
    constant joint torques. Returns ``(q̈, status)``.
    """
    nb, nq = links.shape[0], q.shape[0]
    f, grad, convective = _explicit_joint_variables(A, base, c, rows, floats, calls, entries, q, qd)
    qdd = np.empty(nq)
    status = _forward_state(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective,
                            qd, qdd, _terms_scratch(nq), eom_workspace(nb, nq))
    return qdd, status


@jit
def explicit_terms(geometry, links, body_inertia, gravity, springs, joint_torque, force, A, base, c, rows, floats, calls,
                   entries, q, qd, qdd):  # pragma: no cover - compiled
    """``M``, ``N q̇``, ``G`` and the applied forces ``Q`` (Eq. 145, 126, 187, 46, 161) of one state whose joint
    variables are explicit (as :func:`forward_explicit`), in one call; with accelerations ``qdd`` (nq,) also the
    inverse dynamics ``τ = M q̈ + N q̇ − G − Q`` (Eq. 198; an empty ``qdd`` gives an empty ``τ``).

    ``Q`` is what :func:`_forward_state` adds to ``G − N q̇``: the spring-dampers' forces, the constant joint
    torques' ``∇fᵀ τ_joint`` (``joint_torque``, nj) and the constant generalized forces ``force`` (nq). Returns
    ``(M, N q̇, G, Q, τ, status)``, the status :data:`NOT_FINITE` where a value is not finite (the caller's
    general route then names it).
    """
    nb, nq, nj = links.shape[0], q.shape[0], A.shape[0]
    f, grad, convective = _explicit_joint_variables(A, base, c, rows, floats, calls, entries, q, qd)
    M, Nqd, G, Q, tau = np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty(nq), np.empty(qdd.shape[0])
    if not eom_state(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q,
                     eom_workspace(nb, nq)):
        return M, Nqd, G, Q, tau, SPRING_POINTS_COINCIDE
    finite = True
    for k in range(nq):
        value = Q[k] + force[k]
        for j in range(nj):
            value += grad[j, k] * joint_torque[j]
        Q[k] = value
        finite &= np.isfinite(value) and np.isfinite(Nqd[k]) and np.isfinite(G[k])
        for m in range(nq):
            finite &= np.isfinite(M[k, m])
    for k in range(tau.shape[0]):
        value = Nqd[k] - G[k] - Q[k]
        for m in range(nq):
            value += M[k, m] * qdd[m]
        tau[k] = value
        finite &= np.isfinite(value)
    return M, Nqd, G, Q, tau, (OK if finite else NOT_FINITE)


@jitable
def forward_scratch(nb, nq, nj):  # pragma: no cover - compiled
    """The arrays :func:`forward_solved` works in, for a model of ``nb`` bodies, ``nq`` coordinates and ``nj`` joint
    variables: ``(f, ∇f, q̇ᵀ H q̇, q̈, the terms' scratch, eom_state's)``. Allocated once by the caller (a run's
    state context; one call from Python), not at every state."""
    return np.empty(nj), np.empty((nj, nq)), np.empty(nj), np.empty(nq), _terms_scratch(nq), eom_workspace(nb, nq)


@jit
def forward_solved(geometry, links, body_inertia, gravity, springs, joint_torque, force, matrix, constant, rows, f_rows,
                   grad_rows, convective_rows, q, qd, scratch):  # pragma: no cover - compiled
    """``q̈`` of one state whose joint variables are affine (``matrix``, ``constant``) except the rows
    ``rows``, solved elsewhere with values, gradients and convective terms ``q̇ᵀ H q̇`` ``f_rows``,
    ``grad_rows``, ``convective_rows`` (a constraint group's compiled step: :mod:`mbkron.algorithms.jointvars.kernels`,
    which calls this in the same compiled function), in the arrays of ``scratch`` (:func:`forward_scratch`).
    Returns ``(q̈, status)``: ``q̈`` is the scratch's array (overwritten by the next call with it)."""
    f, grad, convective, qdd, terms, workspace = scratch
    nq = q.shape[0]
    affine_values(matrix, constant, q, f)
    for j in range(matrix.shape[0]):
        convective[j] = 0.0
        for k in range(nq):
            grad[j, k] = matrix[j, k]
    for i in range(rows.shape[0]):
        j = rows[i]
        f[j] = f_rows[i]
        convective[j] = convective_rows[i]
        for k in range(nq):
            grad[j, k] = grad_rows[i, k]
    status = _forward_state_at((geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad,
                                convective, qd, qdd, terms, workspace))
    return qdd, status


@jit
def _forward_rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd, qdd,
                  start, stop):  # pragma: no cover - compiled
    """States ``start:stop`` of :func:`forward_given`; returns the first status other than OK (or OK)."""
    nb, nq = links.shape[0], qd.shape[1]
    terms, workspace = _terms_scratch(nq), eom_workspace(nb, nq)
    # the arguments, held by the caller: their rows cost no atomic reference counting
    geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd, qdd = borrowed((
        geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd, qdd))
    for s in range(start, stop):
        code = _forward_state(geometry, links, body_inertia, gravity, springs, joint_torque,
                              force[s if force.shape[0] > 1 else 0], f[s], grad[s if grad.shape[0] > 1 else 0],
                              convective[s if convective.shape[0] > 1 else 0], qd[s], qdd[s], terms, workspace)
        if code != OK:
            return code
    return OK


@jit
def _forward_serial(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective,
                    qd):  # pragma: no cover - compiled
    qdd = np.empty(qd.shape)
    status = _forward_rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective,
                           qd, qdd, 0, f.shape[0])
    return qdd, status


def _forward_parallel(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd,
                      blocks):  # pragma: no cover - compiled
    """:func:`_forward_serial` in ``blocks`` blocks of states over the threads."""
    states = f.shape[0]
    qdd = np.empty(qd.shape)
    status = np.zeros(blocks, dtype=np.int64)
    for block in numba.prange(blocks):
        status[block] = _forward_rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad,
                                      convective, qd, qdd, block * states // blocks, (block + 1) * states // blocks)
    return qdd, status.max()


if AVAILABLE:
    _forward_parallel = numba.njit(cache=True, nogil=True, parallel=True)(_forward_parallel)

PARALLEL_STATES = 512
"""Batches at least this large are spread over all threads."""


def forward_given(geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd):
    """Batched ``q̈`` with joint variables ``(f, ∇f, q̇ᵀ H q̇)`` given per state (rows of one, or broadcast rows).

    Parameters
    ----------
    force : ndarray, shape (states or 1, nq)
    f : ndarray, shape (states, nj)
    grad : ndarray, shape (states or 1, nj, nq)
    convective : ndarray, shape (states or 1, nj)
        ``q̇ᵀ H_j q̇`` per joint variable (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`).
    qd : ndarray, shape (states, nq)

    Returns
    -------
    (q̈ (states, nq), status)
    """
    arrays = (geometry, links, body_inertia, gravity, springs, joint_torque, force, f, grad, convective, qd)
    if AVAILABLE and f.shape[0] >= PARALLEL_STATES and numba.get_num_threads() > 1:
        return _forward_parallel(*arrays, numba.get_num_threads())
    return _forward_serial(*arrays)  # a thread team costs more than it saves on small batches
