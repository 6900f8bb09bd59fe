"""Numerical differentiation on the computational molecule (Section 3-3, Fig. 2).

"At each instant of time, the algebraic constraint equations are solved numerically within the
grids of a computational molecule ... Utilizing numerical differentiation formulas, the gradient
vector and Hessian matrix corresponding to each joint variable can be calculated."

The molecule around ``q`` has the centre, the ``2 n_q`` axial points ``q ± h_k e_k`` and, for
every pair ``k < l``, the four diagonal points ``q ± h_k e_k ± h_l e_l`` (for ``n_q = 2`` the 3×3
grid of Fig. 2). Second-order central differences:

    ∂f/∂q_k       ≈ (f(q + h_k e_k) − f(q − h_k e_k)) / (2 h_k)
    ∂²f/∂q_k²     ≈ (f(q + h_k e_k) − 2 f(q) + f(q − h_k e_k)) / h_k²
    ∂²f/∂q_k∂q_l  ≈ (f(++) − f(+−) − f(−+) + f(−−)) / (4 h_k h_l)

**Default step.** With ``f`` solved to a relative accuracy ``ε_f`` (a few ulps), the total error
of the second difference is about ``h² |f⁗|/12 + 4 ε_f |f| / h²``, smallest at
``h ≈ (48 ε_f |f| / |f⁗|)^{1/4} ~ ε^{1/4}`` when ``f`` and its derivatives are of order one,
giving errors ``~ √ε ≈ 1.5e-8``. The central first difference is then accurate to
``h² |f‴|/6 ≈ 2.5e-9 |f‴|`` (its own optimum ``ε^{1/3}`` would give ``~ε^{2/3}`` but needs a
second molecule). Hence the default ``h_k = ε^{1/4} · max(1, |q_k|)`` (relative in large
coordinates, absolute near zero), rounded so that ``q ± h`` is exact. The accuracy against the
step is tabulated by ``python -m validation.linkages`` (``validation/results/linkages_accuracy.md``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from mbkron.algorithms.jointvars.solvers import Continuation, PositionSolver, evaluate_states
from mbkron.algorithms.jointvars.explicit import JointVariableProvider

__all__ = ["DEFAULT_STEP", "FiniteDifferenceJointVariables"]

DEFAULT_STEP = float(np.finfo(float).eps ** 0.25)
"""``ε^{1/4} ≈ 1.22e-4``: the relative molecule step (see the module docstring)."""


class FiniteDifferenceJointVariables(JointVariableProvider):
    """Joint variables solved from constraints, derivatives by central differences on the molecule.

    Parameters
    ----------
    solver : PositionSolver
    step : float or sequence of float, optional
        Relative step per coordinate: ``h_k = step_k · max(1, |q_k|)`` (default
        :data:`DEFAULT_STEP`).
    """

    def __init__(self, solver: PositionSolver, step: float | Sequence[float] = DEFAULT_STEP):
        step = np.asarray(step, dtype=float)
        if not np.all(step > 0) or not np.all(np.isfinite(step)):
            raise ValueError(f"`step` must be positive and finite, got {step!r}")
        self.solver = solver
        self.step = step

    @property
    def size(self) -> int:
        return self.solver.system.size

    def new_state(self) -> Continuation:
        """A continuation from the assembly configuration (see :class:`mbkron.algorithms.jointvars.solvers.Continuation`)."""
        return Continuation(self.solver.reference)

    def _molecule(self, q: NDArray, order: int, continuation: Continuation) -> tuple[NDArray, NDArray | None, NDArray | None]:
        solver = self.solver
        centre = solver.solve(q, continuation.start)
        continuation.advance(centre, None)
        if order == 0:
            return centre.f, None, None
        nq = q.size
        h = np.broadcast_to(self.step, (nq,)) * np.maximum(1.0, np.abs(q))
        h = (q + h) - q  # exactly representable steps

        def at(offset: NDArray) -> NDArray:
            return solver.solve(q + offset, start=centre).f

        axes = np.diag(h)
        plus = np.array([at(axes[k]) for k in range(nq)])  # (nq, m)
        minus = np.array([at(-axes[k]) for k in range(nq)])
        grad = ((plus - minus) / (2.0 * h[:, None])).T
        if order < 2:
            return centre.f, grad, None
        hess = np.empty((self.size, nq, nq))
        for k in range(nq):
            hess[:, k, k] = (plus[k] - 2.0 * centre.f + minus[k]) / h[k] ** 2
            for l in range(k + 1, nq):
                mixed = (
                    at(axes[k] + axes[l]) - at(axes[k] - axes[l]) - at(axes[l] - axes[k]) + at(-axes[k] - axes[l])
                ) / (4.0 * h[k] * h[l])
                hess[:, k, l] = hess[:, l, k] = mixed
        return centre.f, grad, hess

    def evaluate(self, q, order, state: Continuation | None = None):
        continuation = self.new_state() if state is None else state
        return evaluate_states(q, order, self.size, lambda qi, o: self._molecule(qi, o, continuation))
