"""Compiled fast path for constraint groups given as expressions (the ``fast`` extra).

A constraint group solved at every state spends its time in Python: the Newton update from the
previous state, the LU of ``∂g/∂f``, the branch checks and the derivatives (Eq. 101-102, 105-120)
are a few dozen small numpy and LAPACK calls. Here the common case runs as one compiled function:
one continuation step from the previous solution whose Newton iterations converge with full steps,
no branch check firing, inputs affine in ``q``. The constraint functions ``g``, ``∂g``, ``∂²g`` are
generated from their sympy expressions as straight-line code (printed by
:mod:`mbkron.expressions.codegen`; no user text is evaluated). Whenever the state leaves that case
— a damped or rejected Newton step, a step that must be subdivided, a sign change of ``det ∂g/∂f``,
an ill-conditioned configuration, a floating-point error — the kernel returns a status and the state
is redone by :class:`mbkron.jointvars.solvers.PositionSolver`, so branch checks and error messages
are the Python solver's. The two routes are tested equal.

The path is chosen when a model is built with the ``compiled`` backend
(:class:`mbkron.jointvars.constrained.ConstrainedJointVariables`), never after a number of
evaluations; numba compiles it on its first use (a few seconds per distinct set of equations and
process), and the results do not depend on when that happens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sympy
from numpy.typing import NDArray

from mbkron.compiled.common import AVAILABLE, jit, numba
from mbkron.expressions import codegen
from mbkron.jointvars.derivatives import projection_rows, projection_solve
from mbkron.jointvars.solvers import Solution

__all__ = ["generate_function", "FastStep", "supports_fast_step"]

OK, SINGULAR, DAMPED, NOT_CONVERGED, SUBDIVIDE, BRANCH, ILL_CONDITIONED, NOT_FINITE = range(8)
"""Kernel status codes: only ``OK`` is a result; every other code sends the state to the Python solver."""


def generate_function(name: str, symbols: Sequence[sympy.Symbol], expressions: Sequence[sympy.Expr]):
    """Compile ``expressions`` of ``symbols`` into ``name(x, out)``: ``out[k] = expressions[k](x)``.

    The source is printed by :func:`mbkron.expressions.codegen.scalar_source` (zero expressions are
    skipped, so ``out`` must be zero-filled; common subexpressions are computed once). Returns the
    numba-compiled function (compiled on its first call).
    """
    return _compiled_source(codegen.scalar_source(name, symbols, expressions), name)


_GENERATED: dict[str, object] = {}
"""Compiled generated functions by source text: every model instance with the same constraint
expressions shares them, and with them the specialisation of the step kernel (compiled per function)."""


def _compiled_source(source: str, name: str):
    if source not in _GENERATED:
        _GENERATED[source] = numba.njit(nogil=True)(codegen.compile_source(source, name))
    return _GENERATED[source]


@jit
def _lu(A, LU, piv):  # pragma: no cover - compiled
    """Partial-pivoting LU of the square ``A`` into ``LU``/``piv``; returns the determinant's sign (0: singular)."""
    n = A.shape[0]
    LU[:, :] = A
    sign = 1
    for k in range(n):
        pivot = k
        for r in range(k + 1, n):
            if abs(LU[r, k]) > abs(LU[pivot, k]):
                pivot = r
        piv[k] = pivot
        if LU[pivot, k] == 0.0:
            return 0
        if pivot != k:
            sign = -sign
            for c in range(n):
                LU[k, c], LU[pivot, c] = LU[pivot, c], LU[k, c]
        if LU[k, k] < 0.0:
            sign = -sign
        for r in range(k + 1, n):
            LU[r, k] /= LU[k, k]
            for c in range(k + 1, n):
                LU[r, c] -= LU[r, k] * LU[k, c]
    return sign


@jit
def _lu_solve(LU, piv, b):  # pragma: no cover - compiled
    """``A⁻¹ b`` in place for ``b`` of shape (n, k), from :func:`_lu`."""
    n = LU.shape[0]
    for k in range(n):
        if piv[k] != k:
            for c in range(b.shape[1]):
                b[k, c], b[piv[k], c] = b[piv[k], c], b[k, c]
    for c in range(b.shape[1]):
        for r in range(n):
            for j in range(r):
                b[r, c] -= LU[r, j] * b[j, c]
        for r in range(n - 1, -1, -1):
            for j in range(r + 1, n):
                b[r, c] -= LU[r, j] * b[j, c]
            b[r, c] /= LU[r, r]


@jit
def _one_norm(A):  # pragma: no cover - compiled
    best = 0.0
    for c in range(A.shape[1]):
        total = 0.0
        for r in range(A.shape[0]):
            total += abs(A[r, c])
        best = max(best, total)
    return best


def _step_kernel(first, second, m, A, c, q, q0, f0, tangent0, curvature0, use_curvature, det_sign0, settings,
                 order, projection):  # pragma: no cover - compiled
    """One continuation step and the derivatives; see :meth:`FastStep.step`.

    Returns ``(status, p, f, tangent, det_sign, condition, grad, hess)``.
    """
    tolerance, max_iterations, max_condition, jump_ratio, jump_tolerance, max_newton_step, max_step = settings
    n, nq = A.shape
    f = np.empty(m)
    grad = np.zeros((m, nq))
    hess = np.zeros((m, nq, nq))
    tangent = np.zeros((m, nq))
    x = np.empty(m + n)  # (f, p)
    x[m:] = A @ q + c
    dq = q - q0
    predicted_step = tangent0 @ dq
    if np.abs(predicted_step).max() > max_step:
        return SUBDIVIDE, x[m:], f, tangent, 0, 0.0, grad, hess
    if use_curvature:
        for i in range(m):
            predicted_step[i] += 0.5 * (dq @ (curvature0[i] @ dq))
    prediction = f0 + predicted_step
    x[:m] = prediction
    values = np.zeros(m + m * m + m * n)
    first(x, values)
    g, J, g_p = values[:m].copy(), values[m:m + m * m].copy().reshape(m, m), values[m + m * m:].copy().reshape(m, n)
    residual = math.sqrt(g @ g)
    if not math.isfinite(residual):
        return NOT_FINITE, x[m:], f, tangent, 0, 0.0, grad, hess
    LU, piv = np.empty((m, m)), np.empty(m, np.int64)
    current = prediction.copy()
    det_sign = 0
    condition = 0.0
    converged = False
    for _ in range(max_iterations):
        det_sign = _lu(J, LU, piv)
        if det_sign == 0:
            return SINGULAR, x[m:], f, tangent, 0, 0.0, grad, hess
        step = g.copy().reshape(m, 1)
        _lu_solve(LU, piv, step)
        step = step[:, 0]
        size = np.abs(step).max()
        if size <= tolerance * (1.0 + np.abs(current).max()):
            g_q = g_p @ A
            tangent[:, :] = -g_q
            _lu_solve(LU, piv, tangent)
            inverse = np.eye(m)
            _lu_solve(LU, piv, inverse)
            norm = max(_one_norm(J), _one_norm(g_q))
            condition = norm * _one_norm(inverse)
            f[:] = current - step
            converged = True
            break
        if min(1.0, max_newton_step / size) < 1.0:
            return DAMPED, x[m:], f, tangent, 0, 0.0, grad, hess
        trial = current - step
        x[:m] = trial
        values[:] = 0.0
        first(x, values)
        g, J, g_p = values[:m].copy(), values[m:m + m * m].copy().reshape(m, m), values[m + m * m:].copy().reshape(m, n)
        new_residual = math.sqrt(g @ g)
        if not (new_residual <= (1.0 - 1e-4) * residual):
            return DAMPED, x[m:], f, tangent, 0, 0.0, grad, hess
        current, residual = trial, new_residual
    if not converged:
        return NOT_CONVERGED, x[m:], f, tangent, 0, 0.0, grad, hess
    if det_sign != det_sign0:
        return BRANCH, x[m:], f, tangent, 0, 0.0, grad, hess
    if np.abs(f - prediction).max() > jump_ratio * np.abs(predicted_step).max() + jump_tolerance:
        return BRANCH, x[m:], f, tangent, 0, 0.0, grad, hess
    if not condition <= max_condition:
        return ILL_CONDITIONED, x[m:], f, tangent, 0, 0.0, grad, hess
    if order == 0:
        return OK, x[m:], f, tangent, det_sign, condition, grad, hess
    # derivatives at the solution (Eq. 101-102, 120), as implicit_derivatives
    x[:m] = f
    blocks = np.zeros(m * m + m * n + m * m * m + m * m * n + m * n * n)
    second(x, blocks)
    start = 0
    g_u = blocks[start:start + m * m].copy().reshape(m, m)
    start += m * m
    g_p = blocks[start:start + m * n].copy().reshape(m, n)
    start += m * n
    g_uu = blocks[start:start + m * m * m].copy().reshape(m, m, m)
    start += m * m * m
    g_up = blocks[start:start + m * m * n].copy().reshape(m, m, n)
    start += m * m * n
    g_pp = blocks[start:start + m * n * n].copy().reshape(m, n, n)
    g_q = g_p @ A
    if projection:
        rows = projection_rows(g_u)
        grad[:, :] = projection_solve(rows, g_u, g_q)
    else:
        if _lu(g_u, LU, piv) == 0:
            return SINGULAR, x[m:], f, tangent, 0, 0.0, grad, hess
        grad[:, :] = -g_q
        _lu_solve(LU, piv, grad)
    if order >= 2:
        gamma = np.empty((m, nq, nq))  # Γ as hessian_right_hand_side (whose 3-D products numba lacks)
        for i in range(m):
            mixed = (g_up[i] @ A).T @ grad  # [k, l] = Σ_j ∂²g_i/∂q_k∂f_j ∂f_j/∂q_l
            gamma[i] = A.T @ g_pp[i] @ A + mixed + mixed.T + grad.T @ g_uu[i] @ grad
        flat = gamma.reshape(m, nq * nq)
        if projection:
            hess[:, :, :] = projection_solve(rows, g_u, flat).reshape(m, nq, nq)
        else:
            solved = -flat
            _lu_solve(LU, piv, solved)
            hess[:, :, :] = solved.reshape(m, nq, nq)
    return OK, x[m:], f, tangent, det_sign, condition, grad, hess


if AVAILABLE:
    _step_kernel = numba.njit(nogil=True)(_step_kernel)


def supports_fast_step(solver) -> bool:
    """Whether a constraint group can take the compiled step: numba is installed, the group is
    given as expressions (:class:`mbkron.jointvars.constraints.SymbolicConstraints`) and its inputs are
    affine in q."""
    return AVAILABLE and solver.inputs.affine and hasattr(solver.system, "first_expressions")


class FastStep:
    """The compiled path of one constraint group, built from its expressions.

    Parameters
    ----------
    solver : PositionSolver
        With a system from :class:`mbkron.jointvars.constraints.SymbolicConstraints` and affine inputs.
    method : {"lu", "projection"}
    """

    def __init__(self, solver, method: str):
        system = solver.system
        self.m = system.size
        self.first = generate_function("first", system.symbols, system.first_expressions)
        self.second = generate_function("second", system.symbols, system.second_expressions)
        self.A = np.ascontiguousarray(solver.inputs.matrix)
        self.c = np.ascontiguousarray(solver.inputs.constant)
        self.settings = (solver.tolerance, solver.max_iterations, solver.max_condition, solver.jump_ratio,
                         solver.jump_tolerance, solver.max_newton_step, solver.max_step)
        self.projection = method == "projection"
        nq = self.A.shape[1]
        self._zero_curvature = np.zeros((self.m, nq, nq))

    def step(self, start: Solution, curvature: NDArray | None, q: NDArray, order: int):
        """Solve at ``q`` from ``start`` (with ``H`` at ``start``, ``curvature``, if known) and
        differentiate; None when the Python solver must.

        Returns
        -------
        (Solution, grad, hess) or None
            ``grad``/``hess`` are None below ``order``.
        """
        use_curvature = curvature is not None
        curvature = curvature if use_curvature else self._zero_curvature
        try:
            status, p, f, tangent, det_sign, condition, grad, hess = _step_kernel(
                self.first, self.second, self.m, self.A, self.c, q, start.q, start.f, start.tangent, curvature,
                use_curvature, start.det_sign, self.settings, order, self.projection)
        except (ArithmeticError, ValueError):
            return None
        if status != OK:
            return None
        solution = Solution(q.copy(), p.copy(), self.A, None, f, tangent, int(det_sign), float(condition))
        return solution, (grad if order >= 1 else None), (hess if order >= 2 else None)
