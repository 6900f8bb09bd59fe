"""Solving ``g(f, q) = 0``: positions by Newton continuation, exact ``∇f`` and ``H`` (Eq. 100-120).

Position
    :class:`PositionSolver` -- damped Newton with continuation in ``q`` from a given solution,
    tracking one assembly branch (see the class docstring for the step control and the branch
    checks).

Gradients and Hessians (implicit function theorem)
    Differentiating ``g_i(f(q), q) = 0`` once gives Eq. 101,

        Σ_j ∂g_i/∂f_j ∇f_j = −∂g_i/∂q,

    and once more (Eq. 120, derived in ``docs/seed-notes/constraints.md``)

        Σ_j ∂g_i/∂f_j H_j = −Γ_i,
        Γ_i = ∂²g_i/∂q² + Σ_j (∂²g_i/∂q∂f_j ∇f_jᵀ + ∇f_j ∂²g_i/∂f_j∂qᵀ) + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ

    (the seed's ``Γ`` of Eq. 120 is ``−vec`` of ours). Both are linear systems with the same matrix
    ``J = ∂g/∂f`` (columns ``ḡ_j``, Eq. 104); :func:`mbkron.jointvars.derivatives.implicit_derivatives` solves them either
    with one LU factorisation of ``J`` reused for both (``"lu"``, the default) or with the
    seed's analytical projection (``"projection"``, Eq. 105-119), both in :mod:`mbkron.jointvars.derivatives`.

The ``q``-derivatives above are partial at fixed ``f``; when ``g`` also uses explicit joint
variables ``f_e(q)`` the system's inputs are ``p = (f_e, q)`` and the chain rule through ``p(q)``
gives them (:func:`mbkron.jointvars.derivatives.chain_rule`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.jointvars.constraints import BoundConstraints
from mbkron.jointvars.explicit import JointVariables
from mbkron.jointvars.periods import coordinate_periods

__all__ = [
    "ExplicitInputs",
    "Solution",
    "PositionSolver",
    "LUFactors",
    "Continuation",
    "format_values",
    "evaluate_states",
    "METHODS",
]

# scipy.linalg (~0.2 s of CPU): imported by the first solve, not with this module, which every model build imports
# (mbkron.core.lazy)
lapack = LazyModule("scipy.linalg.lapack")

METHODS = ("lu", "projection")


class ExplicitInputs:
    """The inputs ``p(q) = (f_e(q), q)`` of a constraint group, with ``∂p/∂q`` and ``∂²p/∂q²``.

    Parameters
    ----------
    joint_variables : JointVariables
        The model's explicit joint variables (rows solved by constraints are unused).
    rows : ndarray of int
        The explicit joint variables the group uses.
    """

    def __init__(self, joint_variables: JointVariables, rows: NDArray[np.intp]):
        self.joint_variables = joint_variables
        self.rows = np.asarray(rows, dtype=np.intp)
        nq = joint_variables.matrix.shape[1]
        provided = set()
        for provider_rows, _ in joint_variables.providers:
            provided.update(int(r) for r in provider_rows)
        self.affine = not provided.intersection(int(r) for r in self.rows)
        matrix = np.vstack([joint_variables.matrix[self.rows], np.eye(nq)])
        self.matrix = matrix
        self.constant = np.concatenate([joint_variables.constant[self.rows], np.zeros(nq)])
        self._zero_hessians = np.zeros((matrix.shape[0], nq, nq))

    def evaluate(self, q: NDArray) -> tuple[NDArray, NDArray, NDArray | None]:
        """``p``, ``∂p/∂q`` (np, nq) and ``∂²p/∂q²`` (np, nq, nq; None when ``p`` is affine in q).

        Parameters
        ----------
        q : ndarray, shape (nq,)
        """
        if self.affine:
            return self.matrix @ q + self.constant, self.matrix, None
        f, grad, hess = self.joint_variables.evaluate(q, 2)
        rows = self.rows
        p = np.concatenate([f[rows], q])
        P = np.vstack([grad[rows], self.matrix[rows.size :]])
        d2p = self._zero_hessians.copy()
        d2p[: rows.size] = hess[rows]
        return p, P, d2p


class LUFactors:
    """LU factorisation ``J = P L U`` of a square matrix with its condition number and determinant sign.

    Uses LAPACK ``getrf``/``getrs``/``gecon`` directly: one state is a handful of small
    matrices, and the wrappers' checks would cost more than the arithmetic.

    Parameters
    ----------
    J : ndarray, shape (m, m)
        ``∂g/∂f``.
    coupling : ndarray, shape (m, nq), optional
        ``∂g/∂q``. When given, the condition number is taken relative to the whole constraint
        Jacobian, ``κ = ‖[∂g/∂f, ∂g/∂q]‖₁ ‖(∂g/∂f)⁻¹‖₁``: this is ``cond₁(∂g/∂f)`` when
        ``∂g/∂q`` is not larger than ``∂g/∂f``, and it still detects a singular ``∂g/∂f`` with a
        single equation (where ``cond`` is always 1), e.g. at a fold ``∂g/∂f → 0``.

    Attributes
    ----------
    singular : bool
        Exactly singular (a zero pivot).
    coupling : ndarray or None
        As the parameter; may be set before :attr:`condition` is first read.
    condition : float
        Condition number estimate (``inf`` if singular).
    det_sign : int
        Sign of ``det J`` (0 if singular).
    """

    def __init__(self, J: NDArray, coupling: NDArray | None = None):
        self.lu, self.piv, info = lapack.dgetrf(J)
        self._J, self.coupling, self.singular = J, coupling, info > 0
        self._condition: float | None = None

    @property
    def condition(self) -> float:
        """1-norm condition number estimate (LAPACK ``gecon``), computed on first use."""
        if self._condition is None:
            with np.errstate(over="ignore"):  # a norm that overflows is inf: condition inf
                norm = abs(self._J).sum(axis=0).max()
                if self.coupling is not None and self.coupling.size:
                    norm = max(norm, abs(self.coupling).sum(axis=0).max())
            rcond = 0.0 if self.singular or not np.isfinite(norm) else lapack.dgecon(self.lu, norm, norm="1")[0]
            self._condition = 1.0 / rcond if rcond > 0 and np.isfinite(rcond) else np.inf
        return self._condition

    @property
    def det_sign(self) -> int:
        """Sign of ``det J`` from the LU factors (0 if singular)."""
        if self.singular:
            return 0
        swaps = np.count_nonzero(self.piv != np.arange(self.piv.size))
        negative = np.count_nonzero(np.diagonal(self.lu) < 0)
        return -1 if (swaps + negative) % 2 else 1

    def solve(self, b: NDArray) -> NDArray:
        """``J⁻¹ b`` for ``b`` of shape (m,) or (m, k).

        Column by column: a multi-column ``getrs`` goes through level-3 BLAS, whose threads
        cost milliseconds on a busy machine for these tiny matrices.
        """
        if b.ndim == 1:
            return lapack.dgetrs(self.lu, self.piv, b)[0]
        return np.stack([lapack.dgetrs(self.lu, self.piv, column)[0] for column in b.T], axis=-1)


@dataclass(frozen=True, eq=False)
class Solution:
    """A solved configuration of one constraint group.

    Attributes
    ----------
    q : ndarray, shape (nq,)
    p, P, d2p : ndarray
        Inputs, ``∂p/∂q`` and ``∂²p/∂q²`` (None when affine) at ``q``.
    f : ndarray, shape (m,)
        The solved joint variables.
    tangent : ndarray, shape (m, nq)
        ``∇f`` from the last Newton Jacobian (a predictor for continuation, accurate to the
        Newton tolerance; the exact gradient comes from :func:`mbkron.jointvars.derivatives.implicit_derivatives`).
    det_sign : int
        Sign of ``det ∂g/∂f``: constant along a regular branch.
    condition : float
        Condition number of ``∂g/∂f``.
    """

    q: NDArray
    p: NDArray
    P: NDArray
    d2p: NDArray | None
    f: NDArray
    tangent: NDArray
    det_sign: int
    condition: float


class Continuation:
    """Where the next solve of one constraint group continues from: caller-owned, mutable state.

    An entry of a model's workspace (:meth:`mbkron.Model.workspace`). A trajectory evaluated
    state after state with one continuation takes short continuation steps; a call without one
    starts from the assembly configuration, so its result never depends on earlier calls.
    Not to be shared between threads.

    Attributes
    ----------
    start : Solution
        The last solution.
    curvature : ndarray, shape (m, nq, nq), or None
        The Hessians ``H`` at ``start`` when they were computed (a second-order predictor).
    """

    __slots__ = ("start", "curvature")

    def __init__(self, start: Solution):
        self.start = start
        self.curvature: NDArray | None = None

    def advance(self, solution: Solution, curvature: NDArray | None) -> None:
        """Continue the next solve from ``solution`` (with its Hessians ``curvature``, if known)."""
        self.start, self.curvature = solution, curvature


class _NewtonFailure(Exception):
    """Internal: Newton did not converge, or a branch check failed, on one continuation step."""


def _positive(name: str, value) -> float:
    """``value`` as a float after checking that it is a finite positive number."""
    number = float(value) if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) else math.nan
    if not (math.isfinite(number) and number > 0.0):
        raise ValueError(f"`{name}` must be a finite positive number, got {value!r}")
    return number


def _count(name: str, value, largest: int) -> int:
    """``value`` as an int after checking that it is an integer in ``[1, largest]``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= largest:
        raise ValueError(f"`{name}` must be an integer from 1 to {largest}, got {value!r}")
    return int(value)


def format_values(values: NDArray) -> str:
    """``values`` for a message: ten significant figures, in brackets."""
    return "[" + ", ".join(f"{v:.10g}" for v in np.ravel(values)) + "]"


class PositionSolver:
    """Newton's method with continuation for ``g(f, q) = 0`` on one assembly branch.

    **Assembly.** At construction the system is solved at ``reference_q`` from ``guess`` by
    damped Newton; this fixes the branch (and the sign of ``det ∂g/∂f`` on it).

    **Continuation.** :meth:`solve` starts from a given solution (default: the assembly
    :attr:`reference`) and walks the straight segment to the requested ``q``, predicting
    ``f ≈ f₀ + ∇f₀ Δq`` and correcting by Newton (with ``+ ½ Δqᵀ H₀ Δq`` when the Hessian ``H₀``
    at the start is given). The solver itself is immutable: where a trajectory continues from is
    kept by the caller (a :class:`Continuation`, an entry of a model's workspace), so the result
    of a call depends on its arguments only. Steps are limited so that the predicted change
    ``‖∇f₀ Δq‖∞`` is at most ``max_step``. A step is accepted when Newton converges and the
    branch checks pass:

    - ``det ∂g/∂f`` keeps its sign (a change means the path crossed a singular configuration);
    - the corrector moved ``f`` by at most ``jump_ratio · ‖∇f₀ Δq‖∞ + jump_tolerance`` from the
      prediction (otherwise Newton may have jumped to another assembly branch).

    A rejected step is halved; when the step falls below ``1e-9 · (1 + ‖q‖∞)`` the path is
    declared to pass through a singular configuration or a branch jump, and a
    :class:`~mbkron.core.errors.ConfigurationError` names ``q``, ``f`` and the condition number. A
    converged configuration whose ``∂g/∂f`` has a condition number above ``max_condition`` is
    rejected the same way.

    **Bounded work.** A ``q`` that is not finite is refused before any step. One solve takes at
    most ``max_steps`` continuation steps (accepted or rejected), each at most ``max_iterations``
    Newton iterations; a walk that needs more ends with a ConfigurationError naming ``q``. A
    coordinate in which the equations are periodic (a revolute angle, :mod:`mbkron.jointvars.periods`)
    needs no walk proportional to its value: when the walk would be long, it starts from the start
    shifted by whole periods ``k T_i``, with the solved joint variables shifted by ``k d_i``, their
    change over one period along the assembly branch (a dependent angle that winds by ``2π`` per
    turn of the coordinate; found when the solver is made by walking one period, :attr:`periods`). That is a solution
    (``g`` is periodic) and the one the continuous walk reaches, so the result is the same as
    without the shift, and the remaining walk is at most half a period in each such coordinate.

    **Newton step control.** Steps are limited to ``max_newton_step`` (∞-norm, in the joint
    variables' units) and backtracked (halved) until ``‖g‖₂`` decreases (Armijo condition
    with slope ``1e-4``). Convergence: ``‖Δf‖∞ ≤ tolerance · (1 + ‖f‖∞)``; the last step is
    applied, so by quadratic convergence the returned ``f`` is accurate to ``~tolerance²``.

    Parameters
    ----------
    system : BoundConstraints
    inputs : ExplicitInputs
    reference_q : ndarray, shape (nq,)
    guess : ndarray, shape (m,)
    names : sequence of str
        The solved joint variables' names (for messages).
    tolerance, max_iterations, max_condition, jump_ratio, jump_tolerance, max_newton_step, max_step
        See above. Defaults: 1e-9, 30, 1e10, 0.5, 1e-6, 0.5, 0.2; each a finite positive number
        (``max_iterations`` an integer ≤ 1000). ``max_condition`` bounds the condition number of
        ``∂g/∂f`` relative to the whole constraint Jacobian (see :class:`LUFactors`).
    max_steps : int
        Continuation steps per solve (default 2000, at most 10⁶).

    Raises
    ------
    ValueError
        A setting out of its range, naming it.
    ConfigurationError
        The initial assembly failed.
    """

    _SHORT_WALK = 8  # predicted steps below which no period shift is looked for

    def __init__(
        self,
        system: BoundConstraints,
        inputs: ExplicitInputs,
        reference_q: NDArray,
        guess: NDArray,
        names: tuple[str, ...],
        *,
        tolerance: float = 1e-9,
        max_iterations: int = 30,
        max_condition: float = 1e10,
        jump_ratio: float = 0.5,
        jump_tolerance: float = 1e-6,
        max_newton_step: float = 0.5,
        max_step: float = 0.2,
        max_steps: int = 2000,
    ):
        self.system = system
        self.inputs = inputs
        self.names = tuple(names)
        self.tolerance = _positive("tolerance", tolerance)
        self.max_iterations = _count("max_iterations", max_iterations, 1000)
        self.max_condition = _positive("max_condition", max_condition)
        self.jump_ratio = _positive("jump_ratio", jump_ratio)
        self.jump_tolerance = _positive("jump_tolerance", jump_tolerance)
        self.max_newton_step = _positive("max_newton_step", max_newton_step)
        self.max_step = _positive("max_step", max_step)
        self.max_steps = _count("max_steps", max_steps, 1_000_000)
        q = np.array(reference_q, dtype=float)
        p, P, d2p = inputs.evaluate(q)
        try:
            self.reference = self._correct(q, p, P, d2p, np.array(guess, dtype=float))
        except _NewtonFailure as failure:
            raise ConfigurationError(
                f"initial assembly of ({', '.join(self.names)}) failed at q = {format_values(q)} from the guess "
                f"f = {format_values(guess)}: {failure}; give a better initial guess"
            ) from None
        self._check_condition(self.reference)
        self._periods = self._walked_periods()

    def _structural_periods(self) -> tuple[NDArray, NDArray]:
        """The equations' periods by their structure, before any walk: in each coordinate (nq,) and in each
        unknown (m,), ``nan`` where not periodic."""
        nq, m = self.reference.q.size, self.system.size
        variable = self.system.variable_periods() if self.inputs.affine else None
        if variable is None:
            return np.full(nq, np.nan), np.full(m, np.nan)
        unknown = np.array([np.nan if period is None else period for period in variable[:m]], dtype=float)
        return coordinate_periods(variable[m:], self.inputs.matrix), unknown

    def periodic_coordinates(self) -> NDArray[np.bool_]:
        """Which coordinates the equations may be periodic in (shape (nq,)): those :attr:`periods` tries to
        walk round (by the equations' structure, before any walk). The walk of :meth:`solve` is only
        ever shifted by whole periods in these."""
        return np.isfinite(self.candidate_periods())

    def candidate_periods(self) -> NDArray[np.float64]:
        """The equations' periods in each coordinate by their structure, before any walk (shape (nq,), ``nan``
        where not periodic): :attr:`periods` keeps those its walks confirm. :meth:`solve` shifts its start by
        ``round(Δq_i / T_i)`` whole periods, so never where every ``|Δq_i|`` is below half of these."""
        return self._structural_periods()[0]

    @property
    def periods(self) -> tuple[NDArray, NDArray]:
        """Periods ``T_i`` of the equations in each coordinate (``nan``: not periodic, or unusable) and
        the windings ``d_i = f(q + T_i e_i) − f(q)`` of the assembly branch (shape (nq, m)), found when the
        solver is made (:meth:`_walked_periods`)."""
        return self._periods

    def _walked_periods(self) -> tuple[NDArray, NDArray]:
        """:attr:`periods`: a walk of one period from the assembly per periodic coordinate, kept only where
        ``d_i`` is a whole number of the equations' periods in each unknown (so ``f + k d_i`` solves
        ``g`` at ``q + k T_i``, as the continuous walk would give it); a walk that fails makes that period
        ``nan``."""
        nq, m = self.reference.q.size, self.system.size
        (periods, unknown), windings = self._structural_periods(), np.zeros((nq, m))
        for i in np.flatnonzero(np.isfinite(periods)):
            try:
                end = self._walk(self.reference, self.reference.q + periods[i] * np.eye(nq)[i], None)
            except ConfigurationError:  # the branch does not go round (a singular configuration within a period)
                periods[i] = np.nan
                continue
            turns = (end.f - self.reference.f) / np.where(np.isfinite(unknown), unknown, np.inf)
            whole = abs(turns - np.round(turns)) < 1e-6
            still = abs(end.f - self.reference.f) < 1e-6 * (1.0 + abs(self.reference.f))
            if np.all(whole | still):
                windings[i] = np.where(still, 0.0, np.round(turns) * np.where(np.isfinite(unknown), unknown, 0.0))
            else:
                periods[i] = np.nan
        periods.setflags(write=False)
        windings.setflags(write=False)
        return periods, windings

    # ------------------------------------------------------------------ Newton
    def _correct(self, q, p, P, d2p, f) -> Solution:
        """Damped Newton from ``f`` at fixed inputs; the result carries the last LU's data.

        Absurd constraint data (lengths of 1e308, a guess of 1e300) make the residual non-finite,
        which ends Newton with a failure (a ConfigurationError for the caller); numpy's
        floating-point warnings on the way there are silenced, so none leaks to the user.
        """
        with np.errstate(all="ignore"):
            return self._newton(q, p, P, d2p, f)

    def _newton(self, q, p, P, d2p, f) -> Solution:
        system = self.system
        try:
            g, J, g_p = system.first(f, p)
        except (ValueError, OverflowError, ZeroDivisionError) as error:
            raise _NewtonFailure(f"the constraints cannot be evaluated at f = {format_values(f)} ({error})") from None
        residual = math.hypot(*g)  # no overflow of the squares for huge residuals
        if not math.isfinite(residual) or not np.all(np.isfinite(J)):
            raise _NewtonFailure(f"the constraints or their derivatives are not finite at f = {format_values(f)}")
        for _ in range(self.max_iterations):
            lu = LUFactors(J)
            if lu.singular:
                raise _NewtonFailure(
                    f"∂g/∂f is singular (condition number inf) at f = {format_values(f)}: the constraints may not "
                    f"determine these joint variables"
                )
            step = lu.solve(g)
            size = abs(step).max()
            if size <= self.tolerance * (1.0 + abs(f).max()):
                g_q = g_p @ P
                lu.coupling = g_q
                return Solution(q, p, P, d2p, f - step, -lu.solve(g_q), lu.det_sign, lu.condition)
            scale = min(1.0, self.max_newton_step / size)
            while True:
                trial = f - scale * step
                try:
                    g_new, J_new, g_p_new = system.first(trial, p)
                    new_residual = math.hypot(*g_new) if np.all(np.isfinite(J_new)) else np.inf
                except (ValueError, OverflowError, ZeroDivisionError):
                    new_residual = np.inf
                if new_residual <= (1.0 - 1e-4 * scale) * residual:
                    break
                scale *= 0.5
                if scale < 1e-6:
                    raise _NewtonFailure(f"no descent from f = {format_values(f)} (‖g‖ = {residual:.3g})")
            f, g, J, g_p, residual = trial, g_new, J_new, g_p_new, new_residual
        raise _NewtonFailure(f"Newton did not converge in {self.max_iterations} iterations (‖g‖ = {residual:.3g})")

    def _check_condition(self, solution: Solution) -> None:
        if solution.condition > self.max_condition:
            raise ConfigurationError(
                f"singular configuration at q = {format_values(solution.q)}: ∂g/∂f of ({', '.join(self.names)}) has "
                f"condition number {solution.condition:.3g} > {self.max_condition:.3g} "
                f"(f = {format_values(solution.f)}); the constraints do not determine these joint variables here"
            )

    # ------------------------------------------------------------------ continuation
    def _step(self, start: Solution, q: NDArray, curvature: NDArray | None) -> Solution:
        """One predictor-corrector step from ``start`` to ``q`` with the branch checks; ``curvature``
        is ``H`` at ``start`` (or None)."""
        p, P, d2p = self.inputs.evaluate(q)
        dq = q - start.q
        predicted_step = start.tangent @ dq
        if curvature is not None:
            predicted_step = predicted_step + 0.5 * (curvature @ dq) @ dq
        prediction = start.f + predicted_step
        solution = self._correct(q, p, P, d2p, prediction)
        if solution.det_sign != start.det_sign:
            raise _NewtonFailure("the sign of det ∂g/∂f changed")
        correction = abs(solution.f - prediction).max()
        allowed = self.jump_ratio * abs(predicted_step).max() + self.jump_tolerance
        if correction > allowed:
            raise _NewtonFailure(f"the corrector moved f by {correction:.3g} (more than {allowed:.3g})")
        return solution

    def solve(self, q: NDArray, start: Solution | None = None, curvature: NDArray | None = None) -> Solution:
        """Solve at ``q`` by continuation from ``start`` (default: the assembly :attr:`reference`).

        Parameters
        ----------
        q : ndarray, shape (nq,)
        start : Solution, optional
        curvature : ndarray, shape (m, nq, nq), optional
            The Hessians ``H`` at ``start``, for a second-order predictor on the first step.

        Raises
        ------
        ConfigurationError
            If the path from ``start`` to ``q`` meets a singular configuration or a branch
            jump, or ``∂g/∂f`` is ill-conditioned at ``q``.
        """
        current = self.reference if start is None else start
        target = np.array(q, dtype=float)  # a copy: a solution kept by the caller must not alias its buffer
        if not np.all(np.isfinite(target)):
            raise ConfigurationError(
                f"`q` must be finite to solve ({', '.join(self.names)}) from the constraints, got q = {format_values(target)}"
            )
        if np.array_equal(target, current.q):
            return current
        first = self._shifted(current, target)
        return self._walk(first, target, curvature if first is start else None)

    def _walk(self, first: Solution, target: NDArray, curvature: NDArray | None) -> Solution:
        """The continuation from ``first`` to ``target`` (``curvature``: H at ``first``), bounded by
        ``max_steps``; see :meth:`solve`."""
        current = first
        fraction, minimum = 1.0, 1e-9 * (1.0 + np.max(np.abs(target)))
        for _ in range(self.max_steps):
            remaining = target - current.q
            distance = abs(remaining).max()
            predicted = abs(current.tangent @ remaining).max()
            if predicted * fraction > self.max_step:
                fraction = self.max_step / predicted
            trial_q = target if fraction >= 1.0 else current.q + fraction * remaining
            try:
                current = self._step(current, trial_q, curvature if current is first else None)
            except _NewtonFailure as failure:
                if fraction * distance < minimum:
                    raise ConfigurationError(
                        f"cannot continue the solution of ({', '.join(self.names)}) from q = {format_values(current.q)} "
                        f"(f = {format_values(current.f)}, condition number of ∂g/∂f {current.condition:.3g}) towards "
                        f"q = {format_values(target)}: {failure} at q = {format_values(trial_q)}; the path meets a singular "
                        f"configuration, leaves the assembly branch or leaves the region where the "
                        f"constraints have a solution"
                    ) from None
                fraction *= 0.5
                continue
            if fraction >= 1.0:
                break
            fraction = min(1.0, 2.0 * fraction / (1.0 - fraction))  # double the step length
        else:
            raise ConfigurationError(
                f"cannot solve ({', '.join(self.names)}) at q = {format_values(target)}: the continuation from "
                f"q = {format_values(first.q)} did not arrive in {self.max_steps} steps (reached "
                f"q = {format_values(current.q)}); `q` is too far from the assembly or the previous state in a "
                f"coordinate in which the constraints are not periodic"
            )
        self._check_condition(current)
        return current

    def _shifted(self, start: Solution, target: NDArray) -> Solution:
        """``start`` shifted by whole periods towards ``target`` when the walk from it would be long.

        The shifted point is a solution because ``g`` is periodic there; Newton polishes it (the
        period is a float). Any failure keeps ``start`` (the walk is bounded anyway).
        """
        remaining = target - start.q
        with np.errstate(all="ignore"):
            predicted = abs(start.tangent @ remaining).max(initial=0.0)
        if not predicted > self._SHORT_WALK * self.max_step:
            return start
        periods, windings = self.periods
        turns = np.zeros_like(remaining)
        periodic = np.isfinite(periods)
        turns[periodic] = np.round(remaining[periodic] / periods[periodic])
        if not turns.any():
            return start
        shift = turns * np.where(periodic, periods, 0.0)
        # The float period and the shifted q are exact to a few ulps of |shift|: f moves by about
        # ‖∇f‖ times that. Beyond a continuation step, q's magnitude hides where in its period it is.
        error = 4.0 * np.finfo(float).eps * (abs(shift).max() + abs(start.q).max())
        allowed = self.jump_tolerance + abs(start.tangent).max() * error
        if allowed > self.max_step:
            raise ConfigurationError(
                f"cannot solve ({', '.join(self.names)}) at q = {format_values(target)}: `q` is so large that its "
                f"position within the constraints' period ({format_values(periods)}) is lost to rounding"
            )
        q, f = start.q + shift, start.f + turns @ windings
        p, P, d2p = self.inputs.evaluate(q)
        try:
            shifted = self._correct(q, p, P, d2p, f)
        except _NewtonFailure:
            return start
        if shifted.det_sign != start.det_sign or abs(shifted.f - f).max() > allowed:
            return start
        return shifted


def evaluate_states(
    q: NDArray, order: int, size: int, state: Callable[[NDArray, int], tuple[NDArray, NDArray | None, NDArray | None]]
) -> tuple[NDArray, NDArray | None, NDArray | None]:
    """Evaluate a one-state function over the leading axes of ``q``, in C order.

    Consecutive states continue from each other (a trajectory evaluated as a batch needs only
    short continuation steps).

    Parameters
    ----------
    q : ndarray, shape (..., nq)
    order : {0, 1, 2}
    size : int
        Number of joint variables ``m``.
    state : callable
        ``state(q_i, order) -> (f (m,), grad (m, nq) or None, hess (m, nq, nq) or None)``.
    """
    batch, nq = q.shape[:-1], q.shape[-1]
    if not batch:
        return state(q, order)
    f = np.empty(batch + (size,))
    grad = np.empty(batch + (size, nq)) if order >= 1 else None
    hess = np.empty(batch + (size, nq, nq)) if order >= 2 else None
    for index in np.ndindex(batch):
        fi, gi, hi = state(q[index], order)
        f[index] = fi
        if order >= 1:
            grad[index] = gi
        if order >= 2:
            hess[index] = hi
    return f, grad, hess
