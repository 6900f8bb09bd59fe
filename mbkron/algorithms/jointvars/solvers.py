"""Solving ``g(f, q) = 0``: positions by Newton continuation, exact ``∇f`` and ``H`` (Eq. 100-120).

Position
    :class:`PositionSolver` -- damped Newton with continuation in ``q`` from a given solution,
    tracking one assembly branch (see the class docstring for the step control and the branch
    checks). The iteration, the walk and the derivatives are one compiled continuation
    (:func:`mbkron.algorithms.jointvars.kernels.step_kernel`); the solver validates its settings, drives it (the assembly,
    the walks round the periods, every solve) and words its failures.

Gradients and Hessians (implicit function theorem)
    Differentiating ``g_i(f(q), q) = 0`` once gives Eq. 101,

        Σ_j ∂g_i/∂f_j ∇f_j = −∂g_i/∂q,

    and once more (Eq. 120, derived in ``docs/seed-notes/constraints.md``)

        Σ_j ∂g_i/∂f_j H_j = −Γ_i,
        Γ_i = ∂²g_i/∂q² + Σ_j (∂²g_i/∂q∂f_j ∇f_jᵀ + ∇f_j ∂²g_i/∂f_j∂qᵀ) + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ

    (the seed's ``Γ`` of Eq. 120 is ``−vec`` of ours). Both are linear systems with the same matrix
    ``J = ∂g/∂f`` (columns ``ḡ_j``, Eq. 104), solved in the compiled step either with one LU factorisation of
    ``J`` reused for both (``"lu"``, the default) or with the seed's analytical projection (``"projection"``,
    Eq. 105-119); ``Γ`` is :func:`mbkron.algorithms.jointvars.derivatives.hessian_right_hand_side`.

The ``q``-derivatives above are partial at fixed ``f``; when ``g`` also uses explicit joint
variables ``f_e(q)`` the system's inputs are ``p = (f_e, q)`` and the chain rule through ``p(q)``
gives them: ``∂g/∂q = ∂g/∂p ∂p/∂q``, and ``∂²g/∂q² = Pᵀ ∂²g/∂p² P + Σ_a ∂g/∂p_a ∂²p_a/∂q²`` where ``p`` is not
affine in ``q`` (:class:`ExplicitInputs`, evaluated for the compiled step through a Python callback).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule
from mbkron.algorithms.jointvars.constraints import BoundConstraints
from mbkron.algorithms.jointvars.explicit import JointVariables
from mbkron.algorithms.jointvars.periods import coordinate_periods
from mbkron.algorithms.jointvars.solution import Solution

__all__ = [
    "ExplicitInputs",
    "Solution",
    "PositionSolver",
    "Continuation",
    "format_values",
    "evaluate_states",
    "METHODS",
]

# numba: imported when a solver is made (its compiled continuation), not with this module, which every model build
# imports (mbkron.core.lazy)
_compiled = LazyModule("mbkron.algorithms.jointvars.kernels")

METHODS = ("lu", "projection")


class ExplicitInputs:
    """The inputs ``p(q) = (f_e(q), q)`` of a constraint group, with ``∂p/∂q`` and ``∂²p/∂q²``.

    Parameters
    ----------
    joint_variables : JointVariables
        The model's explicit joint variables (rows solved by constraints are unused).
    rows : ndarray of int
        The explicit joint variables the group uses.

    Attributes
    ----------
    affine : bool
        Whether ``p`` is affine in ``q`` (``matrix q + constant``): none of ``rows`` is given by a provider.
    callback : (ctypes callback, int) or None
        Where ``p`` is not affine: the :data:`~mbkron.jit.calls.PYTHON_CALLBACK` by which the compiled
        continuation evaluates it (:meth:`evaluate` into the step's buffer) and its address; None where affine.
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
        self._errors = threading.local()
        self.callback = None if self.affine else _compiled_callback(self)

    def __getstate__(self) -> dict:
        """Pickled without this process's state: the errors' per-thread store and the ``ctypes`` callback, made
        again when unpickled (:meth:`__setstate__`)."""
        state = dict(self.__dict__)
        del state["_errors"], state["callback"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._errors = threading.local()
        self.callback = None if self.affine else _compiled_callback(self)

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


    def _write(self, t: float, address: int) -> int:
        """The :data:`~mbkron.jit.calls.PYTHON_CALLBACK` of non-affine inputs: reads ``q`` from the buffer at
        ``address`` (:func:`mbkron.algorithms.jointvars.kernels.step_work`'s last array) and writes ``(p, ∂p/∂q, ∂²p/∂q²)``
        after it; 0 where that raised (kept for :meth:`raise_error`, per thread), else 1."""
        try:
            nq, n = self.matrix.shape[1], self.matrix.shape[0]
            size = nq + n + n * nq + n * nq * nq
            buffer = np.ctypeslib.as_array((ctypes.c_double * size).from_address(address))
            p, P, d2p = self.evaluate(buffer[:nq].copy())
            buffer[nq:nq + n] = p
            buffer[nq + n:nq + n + n * nq] = np.ravel(P)
            buffer[nq + n + n * nq:] = np.ravel(d2p)
            return 1
        except BaseException as error:  # noqa: BLE001 - raised again by the driver, after the kernel returns
            self._errors.error = error
            return 0

    def raise_error(self) -> None:
        """Raise what the callback caught last in this thread (the kernel said ``INPUTS_FAILED``)."""
        error, self._errors.error = getattr(self._errors, "error", None), None
        if error is not None:
            raise error
        raise RuntimeError("the explicit joint variables' callback failed")  # pragma: no cover - defensive


def _compiled_callback(inputs: ExplicitInputs):
    """``(ctypes callback, its address)`` of ``inputs._write`` (kept alive with ``inputs``)."""
    from mbkron.jit.calls import PYTHON_CALLBACK

    callback = PYTHON_CALLBACK(inputs._write)
    return callback, ctypes.cast(callback, ctypes.c_void_p).value


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
    coordinate in which the equations are periodic (a revolute angle, :mod:`mbkron.algorithms.jointvars.periods`)
    needs no walk proportional to its value: when the walk would be long (more than
    :data:`mbkron.algorithms.jointvars.kernels.SHORT_WALK` steps), it starts from the start shifted by whole periods
    ``k T_i``, with the solved joint variables shifted by ``k d_i``, their change over one period along the
    assembly branch (a dependent angle that winds by ``2π`` per turn of the coordinate; found when the solver is
    made by walking one period, :attr:`periods`). That is a solution (``g`` is periodic) and the one the
    continuous walk reaches, so the result is the same as without the shift, and the remaining walk is at most
    half a period in each such coordinate.

    **Newton step control.** Steps are limited to ``max_newton_step`` (∞-norm, in the joint
    variables' units) and backtracked (halved) until ``‖g‖₂`` decreases (Armijo condition
    with slope ``1e-4``). Convergence: ``‖Δf‖∞ ≤ tolerance · (1 + ‖f‖∞)``; the last step is
    applied, so by quadratic convergence the returned ``f`` is accurate to ``~tolerance²``.

    **One implementation.** The assembly, the walks round the periods and every solve are the one compiled
    continuation (:func:`mbkron.algorithms.jointvars.kernels.step_kernel`, Eq. 100-120), with the group's constraint
    functions as C callbacks (generated from its expressions, the library's loop closures, or any other system's
    Python functions called back: :func:`mbkron.algorithms.jointvars.constraint_callbacks.constraint_callbacks`) and, where the inputs
    are not affine in ``q``, ``p(q)`` and its derivatives through a Python callback (:class:`ExplicitInputs`);
    this class words the kernel's failures from the numbers it reports.

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
        ``∂g/∂f`` relative to the whole constraint Jacobian, ``κ = ‖[∂g/∂f, ∂g/∂q]‖₁ ‖(∂g/∂f)⁻¹‖₁``: this is
        ``cond₁(∂g/∂f)`` when ``∂g/∂q`` is not larger than ``∂g/∂f``, and it still detects a singular ``∂g/∂f``
        with a single equation (where ``cond`` is always 1), e.g. at a fold ``∂g/∂f → 0``.
    max_steps : int
        Continuation steps per solve (default 2000, at most 10⁶).

    Raises
    ------
    ValueError
        A setting out of its range, naming it.
    ConfigurationError
        The initial assembly failed.
    """

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
        guess = np.array(guess, dtype=float)
        m = system.size
        if q.shape != (inputs.matrix.shape[1],) or not np.all(np.isfinite(q)):
            raise ValueError(f"`reference_q` must be {inputs.matrix.shape[1]} finite numbers, got {format_values(q)}")
        if guess.shape != (m,) or not np.all(np.isfinite(guess)):
            raise ValueError(f"`guess` must be {m} finite numbers, got {format_values(guess)}")
        walk = _compiled.FastStep(self, "lu", periodic=False)  # the periods are not known yet
        nq = q.size
        start = Solution(q, walk.c, walk.A, None, guess, np.zeros((m, nq)), 0, math.nan)  # det_sign 0: no branch yet
        status, reference, _, _, report = walk.step(start, None, q, 0, walk.assembly_settings())
        if status == _compiled.ILL_CONDITIONED:
            raise self._ill_conditioned(q, reference)
        if status != _compiled.OK:
            if status == _compiled.INPUTS_FAILED:
                inputs.raise_error()
            raise ConfigurationError(
                f"initial assembly of ({', '.join(self.names)}) failed at q = {format_values(q)} from the guess "
                f"f = {format_values(guess)}: {self._failure(status, walk.report(report))}; give a better initial guess"
            )
        self.reference = reference
        self._periods = self._walked_periods(walk)
        self.compiled_step = walk.with_periods(self)
        """The group's compiled continuation (a :class:`~mbkron.algorithms.jointvars.kernels.FastStep`, the derivatives by LU)."""

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
        solver is made (a walk of one period from the assembly per periodic coordinate)."""
        return self._periods

    def _walked_periods(self, walk) -> tuple[NDArray, NDArray]:
        """:attr:`periods`: a walk of one period from the assembly per periodic coordinate (the compiled walk
        ``walk``, without period shifts), kept only where ``d_i`` is a whole number of the equations' periods in
        each unknown (so ``f + k d_i`` solves ``g`` at ``q + k T_i``, as the continuous walk would give it); a walk
        that fails makes that period ``nan``."""
        nq, m = self.reference.q.size, self.system.size
        (periods, unknown), windings = self._structural_periods(), np.zeros((nq, m))
        for i in np.flatnonzero(np.isfinite(periods)):
            status, end, _, _, _ = walk.step(self.reference, None, self.reference.q + periods[i] * np.eye(nq)[i], 0)
            if status != _compiled.OK:  # the branch does not go round (a singular configuration within a period)
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

    # ------------------------------------------------------------------ messages
    def _failure(self, status: int, report: dict) -> str:
        """What failed in one continuation step, from the kernel's ``status`` and :meth:`FastStep.report`."""
        failed = format_values(report["failed_f"])
        if status == _compiled.SINGULAR:
            return (f"∂g/∂f is singular (condition number inf) at f = {failed}: the constraints may not determine "
                    f"these joint variables")
        if status == _compiled.DAMPED:
            return f"no descent from f = {failed} (‖g‖ = {report['residual']:.3g})"
        if status == _compiled.NOT_CONVERGED:
            return f"Newton did not converge in {self.max_iterations} iterations (‖g‖ = {report['residual']:.3g})"
        if status == _compiled.SIGN_CHANGED:
            return "the sign of det ∂g/∂f changed"
        if status == _compiled.BRANCH:
            return f"the corrector moved f by {report['correction']:.3g} (more than {report['allowed']:.3g})"
        return f"the constraints or their derivatives are not finite at f = {failed}"

    def _ill_conditioned(self, q: NDArray, solution: Solution) -> ConfigurationError:
        return ConfigurationError(
            f"singular configuration at q = {format_values(q)}: ∂g/∂f of ({', '.join(self.names)}) has "
            f"condition number {solution.condition:.3g} > {self.max_condition:.3g} "
            f"(f = {format_values(solution.f)}); the constraints do not determine these joint variables here"
        )

    def _error(self, status: int, report: dict, start: Solution, target: NDArray, reached) -> ConfigurationError:
        """The ConfigurationError of a failed solve from ``start`` towards ``target``."""
        names = ", ".join(self.names)
        if status == _compiled.ILL_CONDITIONED:
            return self._ill_conditioned(target, reached)
        if status == _compiled.LOST:
            return ConfigurationError(
                f"cannot solve ({names}) at q = {format_values(target)}: `q` is so large that its position within "
                f"the constraints' period ({format_values(self.periods[0])}) is lost to rounding"
            )
        if status == _compiled.NOT_ARRIVED:
            return ConfigurationError(
                f"cannot solve ({names}) at q = {format_values(target)}: the continuation from "
                f"q = {format_values(report['first_q'])} did not arrive in {self.max_steps} steps (reached "
                f"q = {format_values(report['current_q'])}); `q` is too far from the assembly or the previous state "
                f"in a coordinate in which the constraints are not periodic"
            )
        condition = report["condition"] if math.isfinite(report["condition"]) else start.condition
        return ConfigurationError(
            f"cannot continue the solution of ({names}) from q = {format_values(report['current_q'])} "
            f"(f = {format_values(report['current_f'])}, condition number of ∂g/∂f {condition:.3g}) towards "
            f"q = {format_values(target)}: {self._failure(status, report)} at q = {format_values(report['trial_q'])}; "
            f"the path meets a singular configuration, leaves the assembly branch or leaves the region where the "
            f"constraints have a solution"
        )

    # ------------------------------------------------------------------ continuation
    def _target(self, q: NDArray) -> NDArray:
        target = np.array(q, dtype=float)  # a copy: a solution kept by the caller must not alias its buffer
        if not np.all(np.isfinite(target)):
            raise ConfigurationError(
                f"`q` must be finite to solve ({', '.join(self.names)}) from the constraints, got q = {format_values(target)}"
            )
        return target

    def evaluate(self, q: NDArray, start: Solution | None = None, curvature: NDArray | None = None, order: int = 0,
                 step=None) -> tuple[Solution, NDArray | None, NDArray | None]:
        """The solution at ``q`` by continuation from ``start`` (default: the assembly :attr:`reference`) and the
        exact derivatives there (Eq. 101-102, 120) up to ``order``: one call of the compiled continuation.

        Parameters
        ----------
        q : ndarray, shape (nq,)
        start : Solution, optional
        curvature : ndarray, shape (m, nq, nq), optional
            The Hessians ``H`` at ``start``, for a second-order predictor on the first step.
        order : {0, 1, 2}
        step : FastStep, optional
            The compiled step to use (:class:`mbkron.algorithms.jointvars.kernels.FastStep`: its method, ``"lu"`` or
            ``"projection"``); default the solver's own (LU).

        Returns
        -------
        (Solution, grad, hess)
            ``grad`` (m, nq) and ``hess`` (m, nq, nq) are None below ``order``.

        Raises
        ------
        ConfigurationError
            If the path from ``start`` to ``q`` meets a singular configuration or a branch
            jump, or ``∂g/∂f`` is ill-conditioned at ``q``.
        """
        current = self.reference if start is None else start
        target = self._target(q)
        kernel = self.compiled_step if step is None else step
        status, solution, grad, hess, report = kernel.step(current, curvature, target, order)
        if status != _compiled.OK:
            if status == _compiled.INPUTS_FAILED:
                self.inputs.raise_error()
            raise self._error(status, kernel.report(report), current, target, solution)
        return solution, grad, hess

    def solve(self, q: NDArray, start: Solution | None = None, curvature: NDArray | None = None) -> Solution:
        """Solve at ``q`` by continuation from ``start`` (default: the assembly :attr:`reference`); ``start``
        itself where ``q`` is its ``q``. :meth:`evaluate` without derivatives, raising its errors."""
        current = self.reference if start is None else start
        target = self._target(q)
        if np.array_equal(target, current.q):
            return current
        return self.evaluate(target, current, curvature if start is not None else None)[0]


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
