"""Joint variables solved from constraints at every state: the provider behind the LU and projection solvers.

Positions by :class:`~mbkron.algorithms.jointvars.solvers.PositionSolver` (Newton continuation on one assembly
branch) and exact ``∇f`` and ``H`` (Eq. 101-102, 105-120) in the same call: the compiled continuation of
:mod:`mbkron.algorithms.jointvars.kernels`, the one implementation, which also raises the solver's errors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.algorithms.jointvars.constraints import BoundConstraints
from mbkron.algorithms.jointvars.explicit import JointVariableProvider
from mbkron.algorithms.jointvars.solvers import METHODS, Continuation, PositionSolver, evaluate_states

__all__ = ["ConstrainedJointVariables"]

# numba: imported when a model with constraint groups is built (its compiled step) or evaluated, not with this
# module (mbkron.core.lazy)
_compiled = LazyModule("mbkron.algorithms.jointvars.kernels")


class ConstrainedJointVariables(JointVariableProvider):
    """Joint variables solved from constraints, with exact gradients and Hessians.

    Batches are evaluated state by state in C order, each state continuing from the previous one (the compiled
    step walks the rows in one call, :meth:`mbkron.algorithms.jointvars.kernels.FastStep.rows`; the same values as one
    call per state).
    Where the first state continues from is the ``state`` argument of :meth:`evaluate` (a
    :class:`~mbkron.algorithms.jointvars.solvers.Continuation` from a model's workspace, which the call
    advances); without one, from the assembly configuration. The provider itself is immutable
    and may be shared between threads.

    Parameters
    ----------
    solver : PositionSolver
    method : {"lu", "projection"}

    Attributes
    ----------
    fast_step : FastStep or None
        The compiled step of this group (:class:`mbkron.algorithms.jointvars.kernels.FastStep`) where its inputs are affine
        in ``q``: what the model's one-call forward dynamics takes (:mod:`mbkron.algorithms.dynamics.forward`); None where they
        are given by providers (the step then calls them back through Python at every state).
    """

    def __init__(self, solver: PositionSolver, method: str = "lu"):
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {', '.join(METHODS)}, got {method!r}")
        self.solver = solver
        self.method = method
        self.step = solver.compiled_step.with_method(method)  # the solver's callbacks and periods, not built again
        self.fast_step = self.step if solver.inputs.affine else None

    @property
    def size(self) -> int:
        return self.solver.system.size

    def new_state(self) -> Continuation:
        """A continuation from the assembly configuration."""
        return Continuation(self.solver.reference)

    def _state(self, q: NDArray, order: int, continuation: Continuation):
        solution, grad, hess = self.solver.evaluate(q, continuation.start, continuation.curvature, order, self.step)
        continuation.advance(solution, hess)
        return solution.f, grad, hess

    def evaluate(self, q, order, state: Continuation | None = None):
        continuation = self.new_state() if state is None else state
        q = np.asarray(q)
        if q.ndim < 2 or not q.size or not np.isfinite(q).all():
            return evaluate_states(q, order, self.size, lambda qi, o: self._state(qi, o, continuation))
        # a batch: the compiled step walks its rows in one call; at a row it fails on, that row alone raises the
        # solver's error
        batch, nq = q.shape[:-1], q.shape[-1]
        rows = np.ascontiguousarray(q.reshape(-1, nq), dtype=float)
        parts: list[tuple] = []
        start = 0
        while start < len(rows):
            done, f, grad, hess, reached = self.step.rows(continuation.start, continuation.curvature, rows[start:],
                                                          order)
            if done:
                continuation.advance(*reached)
                parts.append((f, grad, hess))
            start += done
            if start < len(rows):
                parts.append(tuple(None if value is None else value[None]
                                   for value in self._state(rows[start], order, continuation)))
                start += 1
        f, grad, hess = (None if part[0] is None else np.concatenate(part) for part in zip(*parts))
        return (f.reshape(batch + f.shape[1:]), None if grad is None else grad.reshape(batch + grad.shape[1:]),
                None if hess is None else hess.reshape(batch + hess.shape[1:]))

    def third_derivatives_gap(self) -> str | None:
        """Why :meth:`convective_gradients` cannot serve this group, in words, or None where it can."""
        if not self.solver.inputs.affine:
            return "constraint groups whose inputs are not affine in the coordinates (splines of a coordinate)"
        if type(self.solver.system).third is BoundConstraints.third:
            return f"constraint groups given as Python functions ({type(self.solver.system).__name__})"
        return None

    def convective_gradients(self, q: NDArray, qd: NDArray, f: NDArray, grad: NDArray, hess: NDArray) -> NDArray:
        """``∂c/∂q`` of the group's convective terms ``c_i = q̇ᵀ H_i q̇`` at fixed ``q̇`` (the third derivatives of its
        joint variables contracted twice with ``q̇``, ``T_i[q̇, q̇, ·]``), shape (states, m, nq), at states ``q``,
        ``qd`` (states, nq) where the group's rows of ``f``, ``∇f``, ``H`` (states, m[, nq[, nq]]) are evaluated.

        One more implicit differentiation of ``g(u(q), p(q)) = 0`` (Eq. 100–101, 120 differentiated again), with
        ``x = (u, p)``, ``X = ∂x/∂q = (∇u, P)``, ``X₂ = (H, 0)`` (the inputs ``p = P q + p₀`` are affine), ``ẋ = X q̇``:

            g_u T[q̇, q̇, ·] = −( g_xx[X₂[q̇, q̇], X] + 2 g_xx[X₂[q̇, ·], ẋ] + g_xxx[ẋ, ẋ, X] ),

        with ``g_x``, ``g_xx``, ``g_xxx`` of :meth:`~mbkron.algorithms.jointvars.constraints.BoundConstraints.third`
        at the solution. For a group :meth:`third_derivatives_gap` passes."""
        inputs = self.solver.inputs
        system = self.solver.system
        m = self.size
        out = np.empty(grad.shape)
        for s in range(q.shape[0]):
            p, P, _ = inputs.evaluate(q[s])
            g_x, g_xx, g_xxx = system.third(f[s], p)
            X = np.vstack([grad[s], P])
            X2 = np.concatenate([hess[s], np.zeros((P.shape[0],) + hess.shape[-2:])])
            xd = X @ qd[s]
            X2qd = np.einsum("xac,a->xc", X2, qd[s])
            right = (np.einsum("ixy,x,yc->ic", g_xx, X2qd @ qd[s], X) + 2.0 * np.einsum("ixy,xc,y->ic", g_xx, X2qd, xd)
                     + np.einsum("ixyz,x,y,zc->ic", g_xxx, xd, xd, X))
            out[s] = -np.linalg.solve(g_x[:, :m], right)
        return out
