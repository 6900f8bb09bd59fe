"""Joint variables solved from constraints at every state: the provider behind the LU and projection solvers.

Positions by :class:`~mbkron.algorithms.jointvars.solvers.PositionSolver` (Newton continuation on one assembly
branch) and exact ``∇f`` and ``H`` (Eq. 101-102, 105-120) in the same call: the compiled continuation of
:mod:`mbkron.algorithms.jointvars.kernels`, the one implementation, which also raises the solver's errors.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
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
