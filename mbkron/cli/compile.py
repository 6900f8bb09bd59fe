"""``mbkron compile``: compile mbkron's numerical kernels ahead of time into numba's kernel cache.

numba compiles a kernel on its first call and caches the machine code on disk (in ``NUMBA_CACHE_DIR``
when set, else next to mbkron's modules); a later process loads it in milliseconds. Without this
command the first run of each kind of work pays the compilation (announced by a
:class:`mbkron.CompileNotice`); with it, once after installing (or in CI before the tests), no later
run compiles a library kernel.

A kernel is cached per argument types, so the kernels are compiled the way the library calls them:
by evaluating small built-in models through the public API (:data:`WORKLOADS`) — a tree
(forward and inverse dynamics, kinematics, a TR-BDF2 run: the compiled step that calls a Python right-hand side
back, :func:`mbkron.numerics.trbdf2.callback_trbdf2`, as every TR-BDF2 run without a compiled one does), closed
loops whose constraint equations are solved by generated code and by the closure callbacks (a TR-BDF2 run each, a DOP853 and a Radau run),
and muscle paths, straight and wrapped round a cylinder, a sphere, an ellipsoid and a torus (lengths and moment arms) — one
state and a small batch each.
Model files named on the command line are evaluated the same way, so that their generated
constraint functions (cached in ``MBKRON_CACHE_DIR``) are compiled too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable

from mbkron.cli.common import EXIT_INTERRUPTED, CommandError, add_command

__all__ = ["WORKLOADS", "register", "run"]


def register(commands) -> None:
    """Add the ``compile`` command to the sub-command parsers ``commands``."""
    command = add_command(
        commands, "compile", "compile mbkron's numerical kernels ahead of time into the kernel cache",
        "Compile mbkron's numba kernels into numba's on-disk cache (NUMBA_CACHE_DIR when set, else next to\n"
        "mbkron's modules) by evaluating small built-in models: a tree, a closed loop, muscle paths with\n"
        "wrapping surfaces. Later runs load the kernels instead of compiling them (the first run of each kind\n"
        "of work otherwise compiles for a minute or more). Run it once after installing or upgrading mbkron,\n"
        "or in CI before the tests. Model files given as arguments are evaluated too (forward dynamics, a\n"
        "short simulation, moment arms), which also compiles their generated constraint functions (cached in\n"
        "MBKRON_CACHE_DIR). The steps run in parallel processes, one per core (--jobs), each compiling into the\n"
        "one cache. Prints one line per step as it finishes (kernels compiled, seconds); exit status 0.",
        "mbkron compile\nmbkron compile models/andrews_squeezer.toml\nmbkron compile --jobs 1")
    command.add_argument("models", nargs="*", metavar="MODEL",
                         help="model files (TOML or .osim) to evaluate as well (default: none)")
    command.add_argument("--jobs", type=int, default=None, metavar="N",
                         help="processes compiling at once (default: one per core, at most one per step; 1: all "
                              "in this process)")
    command.set_defaults(run=run)


def _evaluate(model, q, simulate_for: float | None) -> None:
    """Evaluate ``model`` as the commands do: one state and a batch of three (joint variables and
    kinematics of orders 0 to 2, ``M``, forward and inverse dynamics, joint reactions, the derivatives of the
    dynamics where they cover the model; muscle lengths and moment arms; the point Jacobians of a model's point
    loads), and a TR-BDF2
    run of ``simulate_for`` seconds with 5 output samples."""
    import numpy as np

    from mbkron.integrate.simulate import simulate

    q = np.asarray(q, dtype=float)
    batch = np.stack([q, q, q])
    qd = np.zeros_like(q)
    for state, rate in ((q, qd), (batch, np.zeros_like(batch))):
        for order in (0, 1, 2):  # values only (the commands' tables), with ∇f (moment arms), with H (dynamics)
            model.joint_variables(state, order)
            kin = model.kinematics(state, order)
        kin.twists  # formed on first use (compiled.kinematics.world_twists: point velocities, accelerations)
        model.mass_matrix(state)
        accelerations = model.forward_dynamics(state, rate)
        model.inverse_dynamics(state, rate, accelerations)
        model.joint_reactions(state, rate, accelerations)  # the bodies' motions (compiled.dynamics.body_motions)
        if model.forward_plan is not None and model.forward_plan.derivatives_gap() is None:
            model.inverse_dynamics_derivatives(state, rate, accelerations)  # articulated_derivatives
            model.forward_dynamics_derivatives(state, rate)  # articulated_forward_derivatives or solve_columns
        if model.muscles:
            model.muscle_lengths(state)
            model.moment_arms(state)
    if simulate_for is not None:
        simulate(model, (0.0, simulate_for), q, t_eval=np.linspace(0.0, simulate_for, 5))


def _tree() -> None:
    """The two-link arm (the compiled forward route of trees); the same arm with the forearm following the shoulder
    by an affine rhythm (as the shipped shoulder models: the affine route), and with a point force and two line forces
    on it, one of constant tension, one given as a function (loads the compiled plan does not cover: the mass matrix
    and the right-hand side solved apart, as the shipped planar chain); a TR-BDF2 run of each (its compiled step
    calling the Python right-hand side back: :func:`mbkron.numerics.trbdf2.callback_trbdf2`)."""
    import numpy as np

    from mbkron.multibody.loads import LineForce, PointForce
    from mbkron.examples import two_link_arm
    from mbkron.multibody.jointvars import Linear
    from mbkron.model.builder import ModelBuilder

    model = two_link_arm()
    _evaluate(model, model.default_q + 0.3, 0.01)
    for loaded in (False, True):
        b = ModelBuilder(name="compile-tree")
        b.add_coordinate("shoulder", range=(-1.0, 2.0))
        b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder", mass=2.0, com=(0.15, 0, 0),
                   inertia=np.diag([0.001, 0.015, 0.015]))
        b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable=Linear({"shoulder": 0.5}),
                   offset=(0.3, 0, 0), mass=1.2, com=(0.13, 0, 0), inertia=np.diag([0.001, 0.007, 0.007]))
        if loaded:
            b.add_load(PointForce("forearm", (0.2, 0.0, 0.0), (0.0, -5.0, 0.0)))
            b.add_load(LineForce("upper_arm", (0.05, 0.02, 0.0), "forearm", (0.05, 0.01, 0.0), 10.0))
            # a tension given as a function: the lines' geometry kernel of the loads' Python route
            b.add_load(LineForce("ground", (0.0, 0.1, 0.0), "forearm", (0.1, 0.0, 0.0), lambda t, q, qd: 2.0))
        _evaluate(b.build(), [0.3], 0.01)


def _closed_loop() -> None:
    """The four-bar of Eq. 121, its angles solved from the loop equations by the generated code (the
    ``lu`` solver), and Andrews' squeezer, solved from loop closures by the library's closure callbacks
    (:mod:`mbkron.algorithms.jointvars.closure_callbacks`), as the shipped closed-loop model files are; a TR-BDF2 run of
    each, and a DOP853 and a Radau run of the squeezer (the explicit solvers' compiled steps, the implicit
    solvers' compiled Jacobian)."""
    import numpy as np

    from mbkron.examples import four_bar
    from mbkron.examples.andrews import andrews_squeezer
    from mbkron.integrate.simulate import simulate

    for model in (four_bar(solver="lu"), andrews_squeezer("lu", "loop_closures")):
        _evaluate(model, model.default_q, 1e-3)
    # the explicit solvers' compiled steps (mbkron.integrate.runge_kutta) and the implicit solvers' Jacobian
    # (group_jacobian): one kernel each for every closed-loop model
    for method in ("DOP853", "Radau"):
        simulate(model, (0.0, 1e-3), model.default_q, method=method, t_eval=np.linspace(0.0, 1e-3, 5))
    _step_branches(model)


def _step_branches(squeezer) -> None:
    """The constraint step's branches that are kernels of their own, compiled only where a model takes them
    (:mod:`mbkron.algorithms.jointvars.kernels`, called by address): a long walk's shift by whole periods (Andrews' squeezer,
    ``squeezer``, three turns of its crank away), ``∇f`` and ``H`` by the projection method (the four-bar), and
    inputs not affine in ``q`` (a two-link arm whose tip follows ``(x + 0.3 y², y)`` by a loop closure)."""
    import numpy as np
    import sympy as sp

    from mbkron.examples import four_bar
    from mbkron.algorithms.jointvars.loop_closures import LoopClosure
    from mbkron.model.builder import ModelBuilder

    squeezer.joint_variables(squeezer.default_q + 6.0 * np.pi)
    projected = four_bar(solver="projection")
    projected.joint_variables(projected.default_q)
    b = ModelBuilder(name="compile-inputs")
    b.add_coordinate("x", default=0.6).add_coordinate("y", default=0.4)
    b.add_body("tx", joint="prismatic", axis=(1, 0, 0), variable=sp.Symbol("x") + 0.3 * sp.Symbol("y") ** 2)
    b.add_body("ty", parent="tx", joint="prismatic", axis=(0, 1, 0), variable="y")
    b.add_body("upper", axis=(0, 0, 1))
    b.add_body("fore", parent="upper", axis=(0, 0, 1), offset=(0.7, 0, 0))
    b.add_constraints(["upper", "fore"], [LoopClosure("fore", (0.5, 0, 0), "ty", (0, 0, 0))], "lu",
                      guess={"upper": 0.0, "fore": 1.5})
    arm = b.build()
    arm.joint_variables(arm.default_q)


def _muscles() -> None:
    """A three-body arm, its hand coupled to the elbow by a cubic spline (as OpenSim's coupled joints),
    with a straight muscle, one through a moving and a conditional point (as OpenSim's knee and
    shoulder muscles), and muscles wrapped round a cylinder, a sphere, an ellipsoid and a torus (the
    wrapped-path kernel); lengths and moment arms only; and the surfaces' ``solve`` and the torus's OpenSim
    decisions over a batch of segments."""
    import numpy as np

    from mbkron.numerics.functions import CubicSpline
    from mbkron.multibody.jointvars import CoordinateFunction
    from mbkron.model.builder import ModelBuilder
    from mbkron.multibody.muscles.conditions import PathPointCondition
    from mbkron.multibody.muscles.points import MovingPoint
    from mbkron.multibody.muscles.wrap_ellipsoid import WrapEllipsoid
    from mbkron.multibody.muscles.wrap_torus import WrapTorus, enters_solid, opensim_ring_point
    from mbkron.multibody.muscles.wrapping import PathWrap, WrapCylinder, WrapSphere

    b = ModelBuilder(name="compile-muscles")
    b.add_coordinate("shoulder", range=(-1.0, 2.0)).add_coordinate("elbow", range=(0.0, 2.5))
    b.add_body("upper_arm", axis=(0, 0, 1), variable="shoulder", mass=2.0, com=(0.15, 0, 0),
               inertia=np.diag([0.001, 0.015, 0.015]))
    b.add_body("forearm", parent="upper_arm", axis=(0, 0, 1), variable="elbow", offset=(0.3, 0, 0), mass=1.2,
               com=(0.13, 0, 0), inertia=np.diag([0.001, 0.007, 0.007]))
    spline = CubicSpline([0.0, 1.0, 2.0, 2.5], [0.0, 0.1, 0.15, 0.2], kind="fmm")
    b.add_body("hand", parent="forearm", axis=(0, 0, 1), variable=CoordinateFunction(spline, "elbow"),
               offset=(0.26, 0, 0), mass=0.4, com=(0.06, 0, 0), inertia=np.diag([0.0005, 0.001, 0.001]))
    b.add_muscle("straight", [("ground", (0.0, 0.05, 0.0)), ("forearm", (0.05, 0.01, 0.0))])
    lift = CoordinateFunction(CubicSpline([0.0, 1.0, 2.5], [0.0, 0.005, 0.01], kind="fmm"), "elbow")
    b.add_muscle("moving", [("upper_arm", (0.05, 0.02, 0.0)),
                            ("upper_arm", (0.2, 0.025, 0.0), PathPointCondition("elbow", 0.5, 2.5)),
                            MovingPoint("forearm", (0.03, (0.02, lift), 0.0)), ("hand", (0.05, 0.0, 0.0))])
    surfaces = (WrapCylinder(name="cylinder", body="upper_arm", translation=(0.3, 0.0, 0.0), radius=0.02, length=0.1),
                WrapSphere(name="sphere", body="upper_arm", translation=(0.3, 0.0, 0.0), radius=0.02),
                WrapEllipsoid(name="ellipsoid", body="upper_arm", translation=(0.3, 0.0, 0.0),
                              dimensions=(0.03, 0.02, 0.04)),
                WrapTorus(name="torus", body="upper_arm", translation=(0.3, 0.0, 0.0), xyz_body_rotation=(0.0, 1.5, 0.0),
                          inner_radius=0.01, outer_radius=0.03))
    for surface in surfaces:
        b.add_muscle(f"over_{surface.name}", [("upper_arm", (0.1, 0.02, 0.0)), ("forearm", (0.08, 0.015, 0.0))],
                     wraps=[PathWrap(surface)])
    model = b.build()
    _evaluate(model, [0.2, 1.2], None)
    p, q = np.array([[0.0, 0.0, 0.05]]), np.array([[0.001, 0.0, -0.05]])
    for surface in surfaces:  # their own solve, over a batch (mbkron.numerics.geodesics.segments)
        surface.solve(p, q)
    opensim_ring_point(p, q, 0.03)
    enters_solid(p, q, 0.03, 0.01)


WORKLOADS: tuple[tuple[str, Callable[[], None]], ...] = (
    ("closed loops: generated constraint functions, loop closures, TR-BDF2, DOP853, Radau", _closed_loop),
    ("muscle paths: straight and wrapped", _muscles),
    ("tree: kinematics, dynamics, TR-BDF2", _tree),
)
"""What ``mbkron compile`` evaluates, in order: (label, function) — the costliest first (CPU to compile from empty
caches), the order in which the parallel workers take them."""


def _model_file(path: str) -> Callable[[], None]:
    def evaluate() -> None:
        from mbkron.io import read_model_file

        model = read_model_file(path).model
        _evaluate(model, model.default_q, None if model.muscles else 1e-4)
    return evaluate


def run(args: argparse.Namespace) -> int:
    """Run ``mbkron compile``; returns the exit status."""
    from pathlib import Path

    from mbkron.jit.common import AVAILABLE, kernel_cache_directory

    if not AVAILABLE:
        raise CommandError("`mbkron compile` needs numba (a core dependency of mbkron), which cannot be imported: "
                           "pip install numba")
    if args.jobs is not None and args.jobs < 1:
        raise CommandError(f"`--jobs` must be a positive number of processes, not {args.jobs}")
    for path in args.models:  # before any compilation: a missing file is a one-line error
        if not Path(path).is_file():
            raise CommandError(f"cannot read the model file `{path}`: no such file")
    steps = [*((label, ("workload", index)) for index, (label, _) in enumerate(WORKLOADS)),
             *((f"model file {path}", ("model", path)) for path in args.models)]
    jobs = min(len(steps), args.jobs or os.cpu_count() or 1)
    print(f"mbkron compile: {len(steps)} steps; kernel cache {kernel_cache_directory()}", flush=True)
    started, total, done = time.perf_counter(), 0, 0

    def report(label: str, compiled: int, seconds: float) -> None:
        nonlocal total, done
        total, done = total + compiled, done + 1
        print(f"[{done}/{len(steps)}] {label}: {compiled} kernels compiled, {seconds:.1f} s", flush=True)

    if jobs == 1:
        for label, step in steps:
            report(label, *_compile_step(step))
    else:
        import multiprocessing

        # in WORKLOADS' order (the costliest first), the processes compiling into the one cache at once (numba's
        # saves are locked: mbkron.jit.common)
        pool = multiprocessing.get_context("spawn").Pool(jobs)
        try:
            for label, compiled, seconds in pool.imap_unordered(_compile_labelled, steps):
                report(label, compiled, seconds)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: stop the workers now (what they saved stays cached)
            pool.terminate()
            pool.join()
            print(f"mbkron: interrupted after {done} of {len(steps)} steps; the kernels compiled so far stay in "
                  "the cache", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BaseException:  # a step failed: its error, without the workers' noise at exit
            pool.terminate()
            pool.join()
            raise
        pool.close()
        pool.join()
    print(f"mbkron compile: {total} kernels compiled in {time.perf_counter() - started:.1f} s "
          f"({'all were in the cache already' if total == 0 else 'cached for later runs'})")
    sys.stdout.flush()
    return 0


def _compile_labelled(labelled: tuple[str, tuple[str, object]]) -> tuple[str, int, float]:
    """:func:`_compile_step` of ``(label, step)`` in a worker, returning the label with its result."""
    label, step = labelled
    return (label, *_compile_step(step))


def _compile_step(step: tuple[str, object]) -> tuple[int, float]:
    """Run one step (``("workload", index)`` of :data:`WORKLOADS` or ``("model", path)``), in this process or a
    worker's; returns the number of mbkron kernels it compiled and its seconds."""
    from numba.core import event

    from mbkron.jit.common import CompileNotice

    kind, value = step
    function = WORKLOADS[value][1] if kind == "workload" else _model_file(value)
    started = time.perf_counter()
    with warnings.catch_warnings(), event.install_recorder("numba:compile") as recorder:
        warnings.simplefilter("ignore", CompileNotice)  # this command is the notice's advice
        function()
    return sum(1 for _, e in recorder.buffer if e.is_start and _ours(e)), time.perf_counter() - started


def _ours(compile_event) -> bool:
    """Whether a ``numba:compile`` event is the compilation of one of mbkron's kernels or of a model's
    generated kernel module."""
    module = getattr(getattr(compile_event.data["dispatcher"], "py_func", None), "__module__", "") or ""
    return module.startswith(("mbkron.", "mbkron_kernels"))
