"""Forward-dynamics simulation: the ODE ``M(q) q̈ + N(q, q̇) q̇ = G(q) + Q + τ`` integrated in time.

Joint constraints and rhythms live in the joint-variable map, so the state is just ``(q, q̇)``:
no multipliers, no constraint drift, no stabilisation parameters. The solver is driven step by step
(as :func:`scipy.integrate.solve_ivp` does internally) so that a failure — a singular configuration,
a branch jump, a non-finite right-hand side, an arithmetic error, a step-size underflow or a stall —
stops the run with a clear message while everything computed up to then is kept in the result; an
interruption (Ctrl-C) raises :class:`~mbkron.integrate.result.SimulationInterrupted` carrying it.
Arguments are checked before any integration (:mod:`mbkron.integrate.arguments`).
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, OdeSolver, Radau

from mbkron.core.errors import ConfigurationError
from mbkron.integrate.arguments import (
    check_initial_state,
    check_muscle_forces,
    check_solver,
    check_span,
    check_steps,
    check_t_eval,
    check_tolerances,
    generalized_force,
)
from mbkron.integrate.result import SimulationInterrupted, SimulationResult
from mbkron.integrate.ranges import Ranges
from mbkron.integrate.rkf45 import RKF45
from mbkron.integrate.trajectory import LastEvaluation, Trajectory
from mbkron.integrate.runge_kutta import COMPILED as COMPILED_RUNGE_KUTTA
from mbkron.integrate.runge_kutta import compile_steps as compile_runge_kutta_steps
from mbkron.integrate.trbdf2 import TRBDF2, CompiledTRBDF2
from mbkron.model.model import Model

__all__ = ["AUTO", "CALM_STEPS", "METHODS", "STIFF_STEP", "STIFF_STEPS", "SimulationInterrupted", "SimulationResult",
           "choose_method", "simulate", "stiffness_estimate"]

METHODS: dict[str, type[OdeSolver]] = {
    "TRBDF2": TRBDF2, "RKF45": RKF45,
    "RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF, "LSODA": LSODA,
}
"""Solver names accepted by :func:`simulate`: mbkron's and every ``solve_ivp`` method."""

_IMPLICIT = {"TRBDF2", "Radau", "BDF", "LSODA"}

AUTO = "auto"
"""The ``method`` of :func:`simulate` that chooses the solver by :func:`choose_method` (the command line's default)."""

STIFF_STEP = 6.1
"""``|h| ρ`` above which an accepted DOP853 step looks stiff (:func:`stiffness_estimate`): its stability region
reaches about ``|h λ| = 6``, so a step at that bound is set by stability rather than accuracy (Hairer's DOP853)."""
STIFF_STEPS = 15
"""Steps that look stiff after which an ``"auto"`` run goes on with TR-BDF2 (:class:`_StiffnessWatch`; Hairer's
DOP853 reports stiffness after 15, the count starting again after :data:`CALM_STEPS` steps in a row that do not)."""
CALM_STEPS = 6
"""Steps in a row that do not look stiff after which :class:`_StiffnessWatch` forgets those that did."""


def stiffness_estimate(solver: DOP853) -> float:
    """``|h| ρ`` of the step a DOP853 ``solver`` has just taken, from its last two stages, both at ``t + h`` (Hairer's
    DOP853 stiffness detection): ``|h| ‖f(y_new) − f(y₁₂)‖ / ‖y_new − y₁₂‖``, ``y₁₂`` the argument of the twelfth
    stage. For ``y' = A y`` this is a Rayleigh-like quotient of ``A`` at most its largest singular value, and exactly
    ``|h λ|`` for ``y' = λ y``; 0 where the two arguments coincide."""
    K, stages = solver.K, solver.n_stages
    h = solver.t - solver.t_old
    last_argument = solver.y_old + (K[:stages - 1].T @ solver.A[stages - 1, :stages - 1]) * h  # (scipy's rk_step)
    difference = np.linalg.norm(solver.y - last_argument)
    return abs(h) * float(np.linalg.norm(K[stages] - K[stages - 1])) / difference if difference > 0 else 0.0


class _StiffnessWatch:
    """Counts the accepted DOP853 steps of an ``"auto"`` run that look stiff (:func:`stiffness_estimate` above
    :data:`STIFF_STEP`) as Hairer's DOP853 does: stiff after :data:`STIFF_STEPS` of them, the count reset by
    :data:`CALM_STEPS` in a row that are not."""

    def __init__(self) -> None:
        self.stiff, self.calm = 0, 0

    def stiff_after(self, solver: DOP853) -> bool:
        """Whether the run is stiff after the step ``solver`` has just taken."""
        if stiffness_estimate(solver) > STIFF_STEP:
            self.stiff, self.calm = self.stiff + 1, 0
            return self.stiff >= STIFF_STEPS
        self.calm += 1
        if self.calm >= CALM_STEPS:
            self.stiff = 0
        return False


STALL_RATIO = 1e-12
"""A step shorter than this fraction of the remaining interval counts towards a stall."""
STALL_STEPS = 100
"""Consecutive accepted steps shorter than ``STALL_RATIO`` times the remaining interval, over which the
step size grew less than :data:`STALL_GROWTH`-fold, that stop a run: it would need more than 1e12
further steps (an adaptive solver grows its step by up to 5-10 times a step whenever the solution
allows it, so a step that stays this short is forced by the solution, not by its history)."""
STALL_GROWTH = 10.0
"""Growth of the step size over :data:`STALL_STEPS` short steps below which the run counts as stalled."""

RUN_FAILURES = (ConfigurationError, np.linalg.LinAlgError, ArithmeticError, ValueError)
"""Exceptions from the numerical work of a run that end it with ``status = -1`` (arguments are checked
before, so a ValueError here comes from the run: a non-finite matrix, a callable's bad value)."""


def choose_method(compiled: bool) -> str:
    """The solver an ``method="auto"`` run (the command line's default) starts with: ``"DOP853"`` where its steps
    are compiled (``compiled``: the model has one compiled constraint group and the run no ``tau``,
    ``muscle_forces`` or ``loads``; :meth:`mbkron.Model.state_kernel`), going on with TR-BDF2 from where its steps
    look stiff (:class:`_StiffnessWatch`); ``"TRBDF2"`` otherwise.

    Why: TR-BDF2 is of order 2 and its error estimate is faithful, so a run's global error is the sum of local errors
    of about the tolerance over many steps; on a problem that is not stiff the eighth-order DOP853 takes 20 times
    fewer steps and is 160 times more accurate at the same tolerances (Andrews' squeezer at rtol 1e-6, atol 1e-8:
    4.2e-6 against 6.9e-4 in half the time; docs/integrators.md). Its steps are compiled only for a compiled
    right-hand side; elsewhere every evaluation returns to Python, and the TR-BDF2 kernel that calls it back stays
    the choice.
    """
    return "DOP853" if compiled else "TRBDF2"


def _state_jacobian(rhs_batched: Callable, t: float, y: NDArray, nq: int) -> NDArray:
    """Jacobian of ``y' = (q̇, q̈(q, q̇))``: ``[[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]``.

    The lower block by central differences with all ``4 nq`` perturbed states in one batched
    dynamics call; the upper block is exact.
    """
    n = y.size
    h = np.cbrt(np.finfo(float).eps) * np.maximum(1.0, np.abs(y))
    perturbed = np.concatenate([y + np.diag(h), y - np.diag(h)])  # (2n, n)
    accelerations = rhs_batched(t, perturbed)  # (2n, nq)
    lower = ((accelerations[:n] - accelerations[n:]) / (2.0 * h[:, None])).T  # (nq, n)
    if not np.all(np.isfinite(lower)):
        raise ConfigurationError(f"non-finite state Jacobian (central differences of the accelerations) at "
                                 f"t = {t:.9g}, q = {y[:nq].tolist()}")
    J = np.zeros((n, n))
    J[:nq, nq:] = np.eye(nq)
    J[nq:] = lower
    return J


def _exact_jacobian(model: Model, y: NDArray, nq: int, workspace) -> NDArray:
    """Jacobian of ``y' = (q̇, q̈(q, q̇))``, ``[[0, I], [∂q̈/∂q, ∂q̈/∂q̇]]``, with the exact derivatives of the forward
    dynamics (:meth:`mbkron.Model.forward_dynamics_derivatives`: the model's own loads, no actuation; constraint
    groups continuing from the run's ``workspace``)."""
    derivatives = model.forward_dynamics_derivatives(np.ascontiguousarray(y[:nq]), np.ascontiguousarray(y[nq:]),
                                                     workspace=workspace)
    J = np.zeros((2 * nq, 2 * nq))
    J[:nq, nq:] = np.eye(nq)
    J[nq:, :nq], J[nq:, nq:] = derivatives.dqdd_dq, derivatives.dqdd_dqd
    return J


def _describe(failure: Exception) -> str:
    """A failure's message; numerical exceptions other than ConfigurationError also named by type."""
    return str(failure) if isinstance(failure, ConfigurationError) else f"{type(failure).__name__}: {failure}"


def simulate(
    model: Model,
    t_span: tuple[float, float],
    q0: ArrayLike,
    qd0: ArrayLike | None = None,
    method: str | type[OdeSolver] = "TRBDF2",
    rtol: float = 1e-6,
    atol: float | ArrayLike = 1e-8,
    t_eval: ArrayLike | None = None,
    tau: ArrayLike | Callable | None = None,
    loads: Sequence | None = None,
    max_step: float = np.inf,
    first_step: float | None = None,
    progress: Callable[[float], None] | None = None,
    muscle_forces: ArrayLike | Callable | None = None,
    ranges: str = "stop",
) -> SimulationResult:
    """Integrate the equations of motion (Eq. 198) from ``(q0, q̇0)`` over ``t_span``.

    Parameters
    ----------
    model : Model
    t_span : (float, float)
        Start and end time, s: finite and different (``t_end < t0`` integrates backwards).
    q0 : array_like, shape (nq,)
    qd0 : array_like, shape (nq,), optional
        Zero by default.
    method : str or OdeSolver subclass
        ``"TRBDF2"`` (default), ``"RKF45"``, any :func:`scipy.integrate.solve_ivp` method name, or ``"auto"``
        (any case): DOP853 for a run with compiled steps, going on with TR-BDF2 where its steps look stiff, else
        TRBDF2 (:func:`choose_method`; ``settings["method"]`` of the result names the solvers that ran, e.g.
        ``"DOP853"`` or ``"DOP853, TRBDF2"``, and the message where the second took over).
        Implicit solvers get the state Jacobian from the exact derivatives of the forward dynamics where they
        cover the model and the run has no ``tau``, ``muscle_forces`` or ``loads``
        (:meth:`mbkron.Model.forward_dynamics_derivatives`, issue 30), else from batched central differences of the
        dynamics (one vectorised call per Jacobian, not ``2n`` separate ones). A model with a compiled
        right-hand side (:meth:`mbkron.Model.state_kernel`: one compiled constraint group, run without
        ``tau``, ``muscle_forces`` or ``loads``) is evaluated by it, one compiled call per evaluation for
        every solver (the Python route where it declines a state), and implicit solvers get the same
        central differences in one compiled call; TRBDF2, RK23, RK45 and DOP853 then also take each step as
        one compiled call (:class:`~mbkron.integrate.trbdf2.CompiledTRBDF2`,
        :mod:`mbkron.integrate.runge_kutta`: the same decisions as the Python solvers).
    rtol : float
        Relative tolerance on the state ``(q, q̇)``, at least ``100·eps`` ≈ 2.2e-14 (smaller values
        are refused rather than raised silently to that floor, as scipy does).
    atol : float or array_like, shape (2 nq,)
        Absolute tolerance on ``(q, q̇)``, positive (zero would divide by zero on a state at rest).
    t_eval : array_like, optional
        Output times within ``t_span``, strictly monotonic in its direction (interpolated with the
        solver's dense output); default: every accepted step.
    tau : array_like or callable (t, q, qd) -> (nq,), optional
        Generalized actuation forces. A callable is called once at the initial state to check the
        shape of what it returns.
    loads : sequence of Load, optional
        ``model.loads`` by default.
    max_step : float
        Largest step, positive (``inf``: no limit).
    first_step : float, optional
        First step, in ``(0, |t_end - t0|]``; chosen by the solver by default.
    progress : callable (t) -> None, optional
        Called after every accepted step (for progress bars).
    muscle_forces : array_like (n_mt,) or callable (t, q, qd) -> (n_mt,), optional
        Musculotendon tensions, N; they act through the moment arms, ``R(q) F_mt`` (Eq. 198). Only for
        a model with muscles; a callable is checked once at the initial state like ``tau``.
    ranges : {"stop", "ignore"}
        The coordinates' ranges are the domain of the model's data (:mod:`mbkron.integrate.ranges`).
        ``"stop"`` (default): ``q0`` must lie inside them, and the run ends where a coordinate reaches
        the end of its range (``status = 1``, the message naming the coordinate, t and q; without
        ``t_eval`` the last row is at the crossing). ``"ignore"``: integrate regardless.

    Returns
    -------
    SimulationResult
        Never raises for failures during the run: ``status = -1`` and ``message`` say when, where
        and why, and the trajectory up to the last accepted step is kept. Failures include
        arithmetic errors, a stall (:data:`STALL_STEPS` consecutive steps shorter than
        :data:`STALL_RATIO` times the remaining interval that do not grow: a run that would never
        finish) and a singular configuration of a constraint group (``σ_min(∂g/∂f)`` below
        :data:`NEAR_SINGULAR` times ``σ_max`` after a step that :data:`SINGULARITY_SCREEN` selects:
        a fold or dead point; the message names the coordinates driving the group, t, q and
        ``σ_min``; a run that fails otherwise near one says so too). Every row is recorded with its
        accelerations when its step is accepted; without
        ``t_eval``, accelerations the solver evaluated at exactly a step's end (the FSAL slope of
        RKF45, RK23, RK45, DOP853; TR-BDF2's last stage evaluation is at the iterate before the last
        Newton correction, not at the step's end) are reused, not recomputed.

    Raises
    ------
    ValueError
        For an invalid argument (named in backticks), before any integration.
    SimulationInterrupted
        On a ``KeyboardInterrupt`` during the run (a subclass of it): its ``result`` is the
        trajectory up to the last accepted step, with ``status = -2`` and a message saying at which
        t and q the run stopped.
    """
    nq = model.nq
    q0, qd0 = check_initial_state(q0, qd0, nq)
    auto = isinstance(method, str) and method.lower() == AUTO
    name, solver_class = check_solver("TRBDF2" if auto else method, METHODS)
    t0, t_end = check_span(t_span)
    rtol, atol = check_tolerances(rtol, atol, 2 * nq)
    check_steps(max_step, first_step, t0, t_end)
    t_eval = check_t_eval(t_eval, t0, t_end)
    actuation = generalized_force(tau, nq, t0, q0, qd0)
    muscle_forces = check_muscle_forces(muscle_forces, model.muscles, t0, q0, qd0)
    domain = Ranges(model, ranges)
    domain.check_initial(q0)
    workspace = model.workspace()  # constraint solvers continue along the run
    singularity = _Singularity(model, workspace)
    last = LastEvaluation()

    def accelerations(t: float, y: NDArray) -> NDArray:
        q, qd = y[:nq], y[nq:]
        force = None if actuation is None else actuation(t, q, qd)
        qdd = model.forward_dynamics(q, qd, force, loads=loads, t=t, muscle_forces=muscle_forces,
                                     workspace=workspace)
        if not np.all(np.isfinite(qdd)):
            raise ConfigurationError(f"non-finite accelerations at t = {t:.9g}, q = {q.tolist()}")
        return qdd

    def rhs(t: float, y: NDArray) -> NDArray:
        if first_evaluations:
            qdd = step_accelerations(t, y)
        else:
            qdd = kernel_accelerations(t, y) if kernel is not None and not compiled_steps else accelerations(t, y)
        last.record(t, y, qdd)
        return np.concatenate([y[nq:], qdd])

    def rhs_batched(t: float, ys: NDArray) -> NDArray:
        if actuation is not None or callable(muscle_forces):
            return np.stack([accelerations(t, y) for y in ys])
        return model.forward_dynamics(ys[:, :nq], ys[:, nq:], loads=loads, t=t, muscle_forces=muscle_forces,
                                      workspace=workspace)

    options: dict = dict(rtol=rtol, atol=atol, max_step=max_step)
    if first_step is not None:
        options["first_step"] = first_step
    # a compiled right-hand side (a model with one compiled constraint group) gives every solver its
    # evaluations, implicit solvers their Jacobian, and TR-BDF2 its steps (the same decisions)
    kernel = model.state_kernel(workspace) if (
        actuation is None and muscle_forces is None and loads is None) else None
    if auto:
        name = choose_method(kernel is not None)
        solver_class = METHODS[name]
    compiled_steps = kernel is not None and (solver_class is TRBDF2 or solver_class in COMPILED_RUNGE_KUTTA)
    # a compiled TR-BDF2 run evaluates its start, its initial slope and its first step's trial state by the kernel of
    # its steps (step_accelerations), so that it compiles no kernel of the Python route for them
    stepping = compiled_steps and solver_class is TRBDF2
    first_evaluations = False
    if kernel is not None:
        singularity.synchronise = kernel.store  # the kernel holds the constraint groups' continuation

    def step_accelerations(t: float, y: NDArray) -> NDArray:
        """``q̈`` by the compiled TR-BDF2 steps' kernel from its continuation, which advances as the Python route's
        does (the workspace following it); where it declines, the Python route from the continuation reached (which
        raises the errors)."""
        qdd = kernel.step_accelerations(y)
        kernel.store()
        if qdd is not None and np.all(np.isfinite(qdd)):
            return qdd
        try:
            return accelerations(t, y)
        finally:
            kernel.load()

    def kernel_accelerations(t: float, y: NDArray) -> NDArray:
        """``q̈`` by the compiled right-hand side from the kernel's continuation; where it declines, the
        Python route from the continuation reached (which raises the errors)."""
        qdd = kernel.accelerations(y)
        if qdd is not None and np.all(np.isfinite(qdd)):
            return qdd
        kernel.store()
        try:
            return accelerations(t, y)
        finally:
            kernel.load()

    # the model's own dynamics of a model the derivatives cover (explicit joint variables, constraint groups with
    # affine inputs, loads independent of the state): the exact Jacobian (issue 30) instead of central differences
    exact = (actuation is None and muscle_forces is None and loads is None and model.forward_plan is not None
             and model.forward_plan.derivatives_gap() is None)

    def jacobian(t: float, y: NDArray) -> NDArray:
        if kernel is not None and not compiled_steps:
            kernel.store()  # (the Jacobian starts from the workspace's continuation)
        if exact:
            return _exact_jacobian(model, y, nq, workspace)
        J = None if kernel is None else kernel.jacobian(t, y)
        return _state_jacobian(rhs_batched, t, y, nq) if J is None else J

    implicit = name in _IMPLICIT or issubclass(solver_class, (TRBDF2, Radau, BDF, LSODA))  # (a class given, too)
    if implicit:
        options["jac"] = jacobian
    settings = dict(method=name, rtol=rtol, atol=atol, max_step=max_step if np.isfinite(max_step) else None,
                    t_span=(t0, t_end))

    y0 = np.concatenate([q0, qd0])
    spent: list[OdeSolver] = []  # an "auto" run's DOP853 solver once TR-BDF2 has taken over
    switch_note = ""  # and where it did, for the run's message
    trajectory = Trajectory(t_eval, t0, y0, accelerations if kernel is None else kernel_accelerations)
    solver = None
    start = clock.perf_counter()
    try:
        # fail early and clearly on an invalid initial state; this first evaluation (and the kernel the run
        # steps with: the compiled TR-BDF2 or Runge-Kutta step, else for implicit methods the Jacobian's route,
        # the compiled kernel or batched evaluations where there is none) also compiles the kernels on a first
        # run, outside the timed integration. Nothing that will not run is compiled (the batched route only where
        # it gives the Jacobian, the Jacobian kernel only for the implicit solvers that step in Python)
        if stepping:  # its kernel (with its own Jacobian), after the kernels below its right-hand side and its
            kernel.compile_forward()  # table's joint variables: a helper process may still be compiling the steps
            kernel.compile_rows()
            trajectory.start(step_accelerations(t0, y0))  # (which compiles or loads the steps)
        else:
            trajectory.start(accelerations(t0, y0))
        if implicit and kernel is None:  # the exact Jacobian's kernels, or the batched route of the differences'
            jacobian(t0, y0) if exact else rhs_batched(t0, y0[None])
        if kernel is not None and not stepping:
            kernel.load()  # from the initial state's solution
            if compiled_steps:
                compile_runge_kutta_steps(solver_class, kernel, 2 * nq)
            elif implicit:
                kernel.jacobian(t0, y0)
            else:
                kernel.accelerations(y0)
        start = clock.perf_counter()
        # compiled steps: several per call, each call returning where a check below might stop the run
        bounds = (domain.lower, domain.upper) if domain.active else None
        stops = (SINGULARITY_SCREEN if singularity.groups else 0.0, STALL_RATIO)
        if stepping:
            first_evaluations = True  # its initial slope and step (TRBDF2.__init__)
            try:
                solver = CompiledTRBDF2(rhs, t0, y0, t_end, kernel, t_eval, last=last, bounds=bounds, stops=stops,
                                        **options)
            finally:
                first_evaluations = False
        elif compiled_steps:  # (and where the run evaluates its output rows)
            solver = COMPILED_RUNGE_KUTTA[solver_class](rhs, t0, y0, t_end, kernel, last, output_times=t_eval,
                                                        bounds=bounds, stops=stops, **options)
        else:
            solver = solver_class(rhs, t0, y0, t_end, **options)
        watch = _StiffnessWatch() if auto and compiled_steps else None
        status, message = _run(solver, trajectory, last, progress, nq, domain, singularity, watch)
        if status == _STIFF:  # an "auto" run whose DOP853 steps look stiff: compiled TR-BDF2 from there
            spent.append(solver)
            switched, y_switch, solver = solver.t, solver.y.copy(), None  # (its work counted once, whatever follows)
            switch_note = (f" (DOP853 up to t = {switched:.9g}, where {STIFF_STEPS} of its steps were limited by "
                           "stability: the problem is stiff; TRBDF2 from there)")
            options = dict(options, jac=jacobian)
            options.pop("first_step", None)
            settings["method"] = "DOP853, TRBDF2"
            paused = clock.perf_counter()  # TR-BDF2's steps' kernel, compiled (or loaded) outside the timed run
            kernel.store()
            kernel.compile_steps()
            kernel.load()
            start += clock.perf_counter() - paused
            first_evaluations = True
            try:
                solver = CompiledTRBDF2(rhs, switched, y_switch, t_end, kernel, t_eval, last=last,
                                        bounds=bounds, stops=stops, **options)
            finally:
                first_evaluations = False
            status, message = _run(solver, trajectory, last, progress, nq, domain, singularity, None)
            message += switch_note
    except KeyboardInterrupt:
        status, message = -2, f"interrupted after t = {_where(trajectory, nq)}{switch_note}"
    except RUN_FAILURES as failure:
        status, message = -1, f"stopped after t = {_where(trajectory, nq)}: {_describe(failure)}{switch_note}"
    finally:
        if kernel is not None:
            kernel.store()  # the workspace continues from where the run's kernel got to
    if status == -1 and not singularity.stopped:  # another failure (an underflow, a stall) near a fold
        near = singularity.check()
        if near:
            message += f"; {near}"
    wall = clock.perf_counter() - start

    t_out, y_out, qdd = trajectory.arrays(2 * nq, nq)
    q, qd = y_out[:, :nq], y_out[:, nq:]
    f = model.joint_variables(q, 0)[0] if len(t_out) else np.zeros((0, model.nj))
    result = SimulationResult(
        t=t_out, q=q, qd=qd, qdd=qdd, joint_variables=f, success=status >= 0, status=status,
        message=message, nfev=sum(getattr(s, "nfev", 0) for s in spent + [solver] if s is not None),
        njev=sum(getattr(s, "njev", 0) for s in spent + [solver] if s is not None),
        nlu=sum(getattr(s, "nlu", 0) for s in spent + [solver] if s is not None), n_steps=trajectory.n_steps,
        wall_time=wall,
        settings=settings,
    )
    if status == -2:
        raise SimulationInterrupted(result)
    return result


NEAR_SINGULAR = 1e-2
"""Smallest over largest singular value of a constraint group's ``∂g/∂f`` below which a run ends (status
-1) as having run into a singular configuration of the constraints: a dead point or fold of a linkage,
where ``∇f`` grows without bound, the coordinates cannot move on along the assembly branch and an
adaptive solver's steps would shrink to nothing (thousands of steps of 1e-8 s before a step-size
underflow). Checked after accepted steps that :data:`SINGULARITY_SCREEN` selects, and after a failure."""
SINGULARITY_SCREEN = 1e-2
"""A constraint group's singular values are checked (an SVD of ``∂g/∂f``, tens of µs) after an accepted
step shorter than this fraction of the longest accepted step so far: approaching a singular
configuration shrinks the steps (``∇f`` grows as ``1/σ_min``, ``H`` as ``1/σ_min³``), while a regular
run, whose steps stay within a factor 100 of its longest, pays nothing for the check."""


class _Singularity:
    """The constraint groups of a model solved along one run (in ``workspace``), checked for a
    singular ``∂g/∂f`` (Eq. 101: ``∇f = −(∂g/∂f)⁻¹ ∂g/∂q`` exists only where it is regular)."""

    def __init__(self, model: Model, workspace):
        self.coordinates = model.coordinates
        self.groups = [(provider.solver, state) for (_, provider), state in
                       zip(model.joint_variable_map.providers, workspace.states_for(model.joint_variable_map))
                       if hasattr(state, "start")]
        self.longest = 0.0
        self.stopped = False  # whether after_step found a singular configuration (and the run ends there)
        self.synchronise: Callable[[], None] | None = None  # brings the workspace up to date before a check

    def check(self) -> str:
        """A description of the first group whose ``∂g/∂f``, at the configuration it was last solved
        at, has ``σ_min < NEAR_SINGULAR · σ_max``: the coordinates that drive it, ``q``, ``σ_min``,
        ``σ_max`` and ``max |∇f|``; "" when every group is regular."""
        if self.synchronise is not None:
            self.synchronise()
        for solver, state in self.groups:
            solution = state.start
            if solution is None:
                continue
            _, g_u, g_p = solver.system.first(solution.f, solution.p)
            singular_values = np.linalg.svd(g_u, compute_uv=False)
            if not singular_values.min() < NEAR_SINGULAR * singular_values.max():
                continue
            driving = np.flatnonzero(np.any(g_p @ solution.P != 0.0, axis=0))
            names = ", ".join(f"`{self.coordinates[k]}`" for k in driving)
            return (f"it ran into a singular configuration of the constraints, driven by coordinate"
                    f"{'s' if len(driving) > 1 else ''} {names}, near q = {solution.q.tolist()}: ∂g/∂f of "
                    f"({', '.join(solver.names)}) has smallest singular value σ_min = {singular_values.min():.3g} "
                    f"(largest {singular_values.max():.3g}; the run stops below {NEAR_SINGULAR:g} of it) and |∇f| "
                    f"reaches {np.abs(solution.tangent).max():.3g} (a dead point or fold: the coordinates cannot move "
                    "beyond it on this assembly branch)")
        return ""

    def after_step(self, h: float) -> str:
        """:meth:`check` after an accepted step of size ``h`` when it is shorter than
        :data:`SINGULARITY_SCREEN` times the longest accepted step so far; "" otherwise."""
        self.longest = max(self.longest, abs(h))
        found = self.check() if self.groups and abs(h) < SINGULARITY_SCREEN * self.longest else ""
        self.stopped = bool(found)
        return found


def _where(trajectory: Trajectory, nq: int) -> str:
    """``t (q = [...])`` of the last accepted step (the initial state before the first)."""
    return f"{trajectory.reached_t:.9g} (q = {trajectory.reached_y[:nq].tolist()})"


_STIFF = 2
"""The status of :func:`_run` where ``watch`` found the run stiff (never a result's: the run goes on)."""


def _run(solver: OdeSolver, trajectory: Trajectory, last: LastEvaluation, progress: Callable | None,
         nq: int, domain: Ranges, singularity: _Singularity, watch: _StiffnessWatch | None = None) -> tuple[int, str]:
    """Step ``solver`` to its bound, recording every accepted step; ``(status, message)`` at the end.

    Ends with status 1 where a coordinate leaves its range (``domain``), -1 when the solver fails (a
    step-size underflow), stalls (see :data:`STALL_STEPS`) or an accepted step ends near a singular
    configuration of a constraint group (:data:`NEAR_SINGULAR`), :data:`_STIFF` after the step where ``watch`` (a
    DOP853 ``solver``'s) finds the run stiff; exceptions are left to the caller.
    """
    short_steps, first_short = 0, 0.0  # the current run of short steps, and the size of its first
    while solver.status == "running":
        t_old, y_old = solver.t, solver.y.copy()
        error = solver.step()
        if solver.status == "failed":
            return -1, f"the solver stopped at t = {solver.t:.9g}, q = {solver.y[:nq].tolist()}: {error}"
        event = domain.crossing(t_old, y_old, solver.t, solver.y, lambda s: solver.dense_output()(s))
        if event is not None:
            y = trajectory.stop(solver, event[0])
            return 1, f"{event[1]} (q = {y[:nq].tolist()})"
        trajectory.accept(solver, last)
        if progress is not None:
            progress(solver.t)
        singular = singularity.after_step(solver.step_size)
        if singular:
            return -1, f"stopped after t = {_where(trajectory, nq)}: {singular}"
        if watch is not None and solver.status == "running" and watch.stiff_after(solver):
            return _STIFF, ""
        h = solver.step_size
        if h >= STALL_RATIO * abs(solver.t_bound - solver.t):
            short_steps = 0
            continue
        short_steps, first_short = (short_steps + 1, first_short) if short_steps else (1, h)
        if short_steps < STALL_STEPS:
            continue
        if h < STALL_GROWTH * first_short:
            return -1, (f"stalled at t = {_where(trajectory, nq)}: the last {STALL_STEPS} steps were shorter "
                        f"than {STALL_RATIO:g} of the remaining interval (the last {h:.3g} s) and did not grow; "
                        "the solution changes too fast for the tolerances to reach the end")
        short_steps = 0  # still growing (say from a tiny first step): watch the next STALL_STEPS
    return 0, "reached the end of the interval"
