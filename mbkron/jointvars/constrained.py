"""Joint variables solved from constraints at every state: the provider behind the LU and projection solvers.

Positions by :class:`~mbkron.jointvars.solvers.PositionSolver` (Newton continuation on one assembly
branch), exact ``∇f`` and ``H`` by :func:`~mbkron.jointvars.solvers.implicit_derivatives`
(Eq. 101-102, 105-120). With the ``compiled`` backend a group with an expression form (equations
given as expressions, or loop closures) takes the compiled step of :mod:`mbkron.jointvars.compiled`
for every state it can handle (chosen when the model is built, never after a number of
evaluations), and the Python solver for the others.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.jointvars.explicit import JointVariableProvider
from mbkron.jointvars.solvers import METHODS, Continuation, PositionSolver, evaluate_states

__all__ = ["ConstrainedJointVariables"]

# numba: imported when a model with constraint groups is built (its compiled step) or evaluated, not with this
# module (mbkron.core.lazy)
_compiled = LazyModule("mbkron.jointvars.compiled")
_derivatives = LazyModule("mbkron.jointvars.derivatives")


class ConstrainedJointVariables(JointVariableProvider):
    """Joint variables solved from constraints, with exact gradients and Hessians.

    Batches are evaluated state by state in C order, each state continuing from the previous one (the compiled
    step walks the rows in one call, :meth:`mbkron.jointvars.compiled.FastStep.rows`; the same values as one
    call per state).
    Where the first state continues from is the ``state`` argument of :meth:`evaluate` (a
    :class:`~mbkron.jointvars.solvers.Continuation` from a model's workspace, which the call
    advances); without one, from the assembly configuration. The provider itself is immutable
    and may be shared between threads.

    Parameters
    ----------
    solver : PositionSolver
    method : {"lu", "projection"}

    Groups with an expression form (expressions or loop closures;
    :meth:`~mbkron.jointvars.constraints.BoundConstraints.expressions`) with inputs affine in q take the
    compiled Newton step; the others, and the states it declines, the Python solver.
    """

    def __init__(self, solver: PositionSolver, method: str = "lu"):
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {', '.join(METHODS)}, got {method!r}")
        self.solver = solver
        self.method = method
        self.fast_step = _compiled.FastStep(solver, method) if _compiled.supports_fast_step(solver) else None

    @property
    def size(self) -> int:
        return self.solver.system.size

    def new_state(self) -> Continuation:
        """A continuation from the assembly configuration."""
        return Continuation(self.solver.reference)

    def _state(self, q: NDArray, order: int, continuation: Continuation):
        if not np.isfinite(q).all():  # refused before any step (the solver's own check, for both routes)
            return self.solver.solve(q, continuation.start)
        if self.fast_step is not None:
            fast = self.fast_step.step(continuation.start, continuation.curvature,
                                       np.ascontiguousarray(q, dtype=float), order)
            if fast is not None:
                solution, grad, hess = fast
                continuation.advance(solution, hess)
                return solution.f, grad, hess
        solution = self.solver.solve(q, continuation.start, continuation.curvature)
        if order == 0:
            continuation.advance(solution, None)
            return solution.f, None, None
        # The position solver has checked the condition number at this configuration.
        grad, hess = _derivatives.implicit_derivatives(self.solver.system, solution, order, self.method, None)
        continuation.advance(solution, hess)
        return solution.f, grad, hess

    def evaluate(self, q, order, state: Continuation | None = None):
        continuation = self.new_state() if state is None else state
        q = np.asarray(q)
        if q.ndim < 2 or self.fast_step is None or not q.size or not np.isfinite(q).all():
            return evaluate_states(q, order, self.size, lambda qi, o: self._state(qi, o, continuation))
        # a batch: the compiled step walks its rows in one call; a row it declines is solved alone (the Python
        # solver where the compiled step declines it again), and the walk goes on from there
        batch, nq = q.shape[:-1], q.shape[-1]
        rows = np.ascontiguousarray(q.reshape(-1, nq), dtype=float)
        parts: list[tuple] = []
        start = 0
        while start < len(rows):
            done, f, grad, hess, reached = self.fast_step.rows(continuation.start, continuation.curvature,
                                                               rows[start:], order)
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
