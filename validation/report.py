"""The validation report: every regression case of mbkron against its independent reference.

Run from the repository root (the ``validation`` package is not installed with mbkron)::

    python -m validation [--quick] [--out DIR]      # or: mbkron validate [--quick] [--out DIR]

It writes ``DIR/REPORT.md`` (a new directory by default; the committed ``validation/REPORT.md`` only
with ``--update-report``: one table per case with the maximum
and RMS errors, the tolerances and pass/fail, the timings, the date and git commit) and
``DIR/REPORT.json`` (the same numbers, machine-readable), atomically. ``--quick`` runs short
trajectories and few samples (what CI runs, after ``mbkron compile``); the default runs the long
versions. Every model is evaluated by the one engine, the compiled kernels (:mod:`mbkron.jit`).

Cases and references (none of the references calls mbkron's dynamics):

- planar n-link chains (n = 1…8) against seed 000's closed forms (:mod:`validation.closed_form`);
- Duarte's two-link arm (seed 003) and Cesari's three-link arm (seed 001) against their closed
  forms and Newton–Euler solutions;
- the four-bar and five-bar linkages against Shabana-style kinematic analysis
  (:mod:`validation.linkages`, :mod:`validation.dae`);
- mbkron's ODE against the DAE reference for every closed-loop model (:mod:`validation.ode_vs_dae`);
- Andrews' squeezer against the IVP test set (:mod:`validation.andrews_reference`);
- a 3-D tree against ``sympy.physics.mechanics`` (:mod:`validation.sympy_mechanics`);
- the shoulder against OpenSim (:mod:`validation.opensim`, when opensim and the shoulder data are
  installed; skipped with the reason otherwise).

Errors: each row gives ``max |e|`` and ``RMS e`` over all compared samples and components, in the
unit stated — either physical (rad, rad/s) or *relative*: the error divided by the largest
magnitude of the reference quantity at that state (at least 1), so that ``−log10`` of a relative
maximum is the number of significant figures the seed quotes.

The records (:class:`Check`, :class:`CaseResult`, :class:`Report`) and the Markdown and JSON
writing live in :mod:`validation.report_format`; they are imported here.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy
import sympy
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.transform import Rotation

import mbkron
from mbkron import examples as models
from mbkron.multibody.loads import LineForce
from mbkron.examples import linkages as linkage_models
from mbkron.examples.andrews import INITIAL as ANDREWS_INITIAL
from mbkron.integrate.simulate import simulate
from validation import andrews_reference, linkages, ode_vs_dae, sympy_mechanics
from validation.closed_form import cesari_three_link as cesari
from validation.closed_form import duarte_two_link as duarte
from validation.closed_form import planar_chain as seed000
from validation.report_format import DEFAULT_OUT, ROOT, CaseResult, Check, Report, Skipped, markdown, print_case, write

__all__ = ["Check", "CaseResult", "Report", "Skipped", "CASES", "DEFAULT_OUT", "run", "write", "markdown", "print_case"]

OPENSIM_HINT = 'OpenSim is not installed (pip install opensim, or the extra: pip install ".[validation]")'
"""Why the OpenSim cases skip, and how to install it (the same for every case)."""


# ====================================================================== error measures
def _errors(actual: ArrayLike, desired: ArrayLike) -> tuple[float, float]:
    """``(max |a − d|, RMS(a − d))`` over all entries."""
    difference = np.asarray(actual, float) - np.asarray(desired, float)
    return float(np.abs(difference).max()), float(np.sqrt(np.mean(difference**2)))


def _relative_errors(actual: ArrayLike, desired: ArrayLike) -> tuple[float, float]:
    """Errors divided, per state (the leading axis), by ``max(1, max |desired|)`` at that state."""
    actual, desired = np.asarray(actual, float), np.asarray(desired, float)
    scale = np.maximum(1.0, np.abs(desired).reshape(len(desired), -1).max(axis=1))
    scale = scale.reshape(-1, *[1] * (desired.ndim - 1))
    return _errors(actual / scale, desired / scale)


def _signal_errors(actual: NDArray, desired: NDArray) -> tuple[float, float]:
    """Vector-signal errors ``‖a(t) − b(t)‖`` relative to ``max_t ‖b(t)‖`` (the seed's significant figures)."""
    norms = np.linalg.norm(actual - desired, axis=-1) / np.max(np.linalg.norm(desired, axis=-1))
    return float(norms.max()), float(np.sqrt(np.mean(norms**2)))


def _relative_check(quantity: str, actual: ArrayLike, desired: ArrayLike, tolerance: float) -> Check:
    return Check(quantity, *_relative_errors(actual, desired), tolerance, "relative")


# ====================================================================== cases
def _random_chain(rng: np.random.Generator, n: int) -> tuple[seed000.PlanarChain, mbkron.Model,
                                                                           mbkron.Model]:
    """A random n-link chain with contacts and muscles: seed 000's description and mbkron's models
    in absolute and relative coordinates, from the same numbers."""
    params = dict(l=rng.uniform(0.2, 0.6, n), l_C=rng.uniform(0.05, 0.3, n), eps_C=rng.uniform(-0.4, 0.4, n),
                  m=rng.uniform(0.5, 5.0, n), I_C=rng.uniform(0.01, 0.2, n))
    contacts = [dict(link=int(link), magnitude=float(rng.uniform(-20, 20)), l_R=float(rng.uniform(0, 0.5)),
                     eps_R=float(rng.uniform(-1, 1)), gamma_R=float(rng.uniform(-3, 3)))
                for link in rng.choice(np.arange(1, n + 1), size=min(n, 3), replace=False)]
    muscles = []
    for _ in range(n + 1):
        j1 = int(rng.integers(0, n))
        muscles.append(dict(j1=j1, point1=tuple(rng.uniform(-0.1, 0.3, 2)), j2=int(rng.integers(j1 + 1, n + 1)),
                            point2=tuple(rng.uniform(-0.1, 0.3, 2)), tension=float(rng.uniform(10, 200))))
    reference = seed000.PlanarChain(
        **params, contacts=tuple(seed000.ContactForce(**c) for c in contacts),
        muscles=tuple(seed000.Muscle(m["j1"], m["point1"], m["j2"], m["point2"], m["tension"]) for m in muscles))

    def build(coordinates: str) -> mbkron.Model:
        return models.planar_chain(params["l"], params["l_C"], params["eps_C"], params["m"], params["I_C"],
                                   contacts=[models.ChainContact(**c) for c in contacts],
                                   muscles=[models.ChainMuscle(**m) for m in muscles],
                                   coordinates=coordinates)

    return reference, build("absolute"), build("relative")


def _split_loads(model: mbkron.Model) -> tuple[tuple, tuple]:
    """(muscle line forces, the other loads) of a model."""
    muscles = tuple(load for load in model.loads if isinstance(load, LineForce))
    return muscles, tuple(load for load in model.loads if not isinstance(load, LineForce))


def planar_chains(quick: bool) -> tuple[list[Check], list[str]]:
    """Random planar chains, n = 1…8, against seed 000's closed forms (Eq. 9, 20, 22, 23)."""
    rng = np.random.default_rng(1000)
    states = 3 if quick else 20
    collected: dict[str, tuple[list, list]] = {}

    def add(quantity: str, actual: NDArray, desired: NDArray) -> None:
        ours, theirs = collected.setdefault(quantity, ([], []))
        scale = max(1.0, float(np.abs(desired).max()))
        ours.append(np.ravel(actual) / scale)
        theirs.append(np.ravel(desired) / scale)

    for n in range(1, 9):
        reference, absolute, relative = _random_chain(rng, n)
        for theta, theta_dot, theta_ddot in rng.uniform(-2, 2, size=(states, 3, n)):
            tau = seed000.joint_torques(reference, theta, theta_dot, theta_ddot)
            alpha, alpha_dot, alpha_ddot = (seed000.relative_from_absolute(x) for x in (theta, theta_dot, theta_ddot))
            muscles, contacts = _split_loads(relative)
            add("joint torques, relative angles (Eq. 23)",
                relative.inverse_dynamics(alpha, alpha_dot, alpha_ddot, loads=contacts), tau)
            add("muscle joint torques (Eq. 22)", relative.applied_forces(alpha, alpha_dot, muscles),
                seed000.muscle_joint_torques(reference, theta))
            _, contacts = _split_loads(absolute)
            add("generalized forces, absolute angles (Eq. 20)",
                absolute.inverse_dynamics(theta, theta_dot, theta_ddot, loads=contacts),
                seed000.absolute_generalized_forces(tau))
            add("joint reaction forces (Eq. 9)", absolute.joint_reactions(theta, theta_dot, theta_ddot).force[:, :2],
                -seed000.joint_reaction_forces(reference, theta, theta_dot, theta_ddot))
    checks = [Check(quantity, *_errors(np.concatenate(ours), np.concatenate(theirs)), 1e-10, "relative")
              for quantity, (ours, theirs) in collected.items()]
    return checks, [f"8 random chains (n = 1…8, contacts, muscles spanning 1…n joints), {states} random states each."]


def two_link_arm(quick: bool) -> tuple[list[Check], list[str]]:
    """Seed 003's two-link arm (Dempster parameters) against Duarte's closed forms and Newton–Euler."""
    rng = np.random.default_rng(4)
    p = duarte.dempster_parameters()
    model = models.two_link_arm()
    q, qd, qdd = rng.uniform(-2, 2, size=(3, 10 if quick else 200, 2))
    return [
        _relative_check("mass matrix M", model.mass_matrix(q), duarte.inertia_matrix(p, q), 1e-10),
        _relative_check("velocity forces N q̇", model.velocity_forces(q, qd), duarte.coriolis_centripetal(p, q, qd), 1e-10),
        _relative_check("gravity forces G", -model.gravity_forces(q), duarte.gravity_torques(p, q), 1e-10),
        _relative_check("joint torques", model.inverse_dynamics(q, qd, qdd), duarte.joint_torques(p, q, qd, qdd), 1e-10),
        _relative_check("joint reaction forces", model.joint_reactions(q, qd, qdd).force[..., :2],
                        duarte.newton_euler(p, q, qd, qdd).reaction_forces, 1e-10),
    ], [f"{len(q)} random states in [−2, 2]."]


def three_link_arm(quick: bool) -> tuple[list[Check], list[str]]:
    """Seed 001's three-link arm with a spring against Cesari's closed forms and Newton–Euler."""
    rng = np.random.default_rng(3)
    arm, spring = cesari.EXAMPLE_ARM, cesari.EXAMPLE_SPRING
    model = models.three_link_arm(**dataclasses.asdict(arm), spring_force=spring)
    a, ad, add = rng.uniform(-2, 2, size=(3, 10 if quick else 200, 3))
    return [
        _relative_check("mass matrix M", model.mass_matrix(a), cesari.inertia_matrix(arm, a), 1e-10),
        _relative_check("velocity forces N q̇", model.velocity_forces(a, ad), cesari.velocity_torques(arm, a, ad), 1e-10),
        _relative_check("gravity forces G", -model.gravity_forces(a), cesari.gravity_torques(arm, a), 1e-10),
        _relative_check("joint torques (spring 17.5 N)", model.inverse_dynamics(a, ad, add),
                        cesari.joint_moments(arm, a, ad, add, spring_force=spring), 1e-10),
        _relative_check("joint reaction forces", model.joint_reactions(a, ad, add).force[..., :2],
                        cesari.newton_euler(arm, a, ad, add, spring_force=spring).reaction_forces, 1e-10),
    ], [f"{len(a)} random states in [−2, 2]."]


#: Solvers compared per linkage, with the tolerance on point p's velocity and acceleration
#: (relative to the signal's maximum; the seed reports 1e-7 for the four-bar, 1e-6 for the five-bar).
LINKAGE_TOLERANCES = {
    "four-bar": {"lu": 1e-10, "projection": 1e-10, "premodel": 1e-8, "finite_difference": 1e-6},
    "five-bar": {"lu": 1e-10, "projection": 1e-10, "premodel": 1e-4, "finite_difference": 1e-6},
}


def _linkage(label: str, quick: bool) -> tuple[list[Check], list[str]]:
    """Point p of a linkage along its Hermite trajectory, every constraint solver against the DAE."""
    times = np.linspace(0.0, 4.0, 41 if quick else 401)
    if label == "four-bar":
        factory, trajectory, (body, point) = (linkage_models.four_bar, linkage_models.four_bar_trajectory(),
                                              linkage_models.FOUR_BAR_POINT)
        system = linkages.four_bar_dae(trajectory)
    else:
        factory, trajectory, (body, point) = (linkage_models.five_bar, linkage_models.five_bar_trajectory(),
                                              linkage_models.FIVE_BAR_POINT)
        system = linkages.five_bar_dae(trajectory)
    v_ref, a_ref = linkages.dae_point(factory("lu"), system, trajectory, times, body, point)
    seed = "7 significant figures (pre-modelling)" if label == "four-bar" else "6 significant figures (projection)"
    checks, notes = [], [f"{times.size} samples on [0, 4] s; errors relative to max_t ‖v‖, max_t ‖a‖ of the DAE. "
                         f"The seed reports {seed}."]
    for solver, tolerance in LINKAGE_TOLERANCES[label].items():
        if label == "five-bar" and solver == "premodel":
            if quick:
                notes.append("Five-bar pre-modelling (a 7 s bicubic fit) runs only in the full report.")
                continue
            model = factory(solver, range=[(0.4, 3.1), (-0.6, 2.6)], step=0.02)
        else:
            model = factory(solver)
        v, a = linkages.mbkron_point(model, trajectory, times, body, point)
        checks.append(Check(f"{solver}: velocity of p", *_signal_errors(v, v_ref), tolerance, "relative"))
        checks.append(Check(f"{solver}: acceleration of p", *_signal_errors(a, a_ref), tolerance, "relative"))
    return checks, notes


def four_bar(quick: bool) -> tuple[list[Check], list[str]]:
    """The four-bar (Eq. 121) against Shabana-style kinematic analysis."""
    return _linkage("four-bar", quick)


def five_bar(quick: bool) -> tuple[list[Check], list[str]]:
    """The five-bar (Eq. 123) against Shabana-style kinematic analysis."""
    return _linkage("five-bar", quick)


def ode_versus_dae(quick: bool) -> tuple[list[Check], list[str]]:
    """Forward dynamics: mbkron's ODE against the DAE reference for every regression model."""
    checks, notes = [], []
    for case in ode_vs_dae.cases():
        case = dataclasses.replace(case, model=case.model)
        if quick:
            case = dataclasses.replace(case, t_end=0.005 if "Andrews" in case.name else 0.3)
            c = ode_vs_dae.compare(case, t_end=0.3, samples=60, rtol=1e-11, atol=1e-12)
        else:
            c = ode_vs_dae.compare(case, t_end=2.0, samples=1000)
        short = case.name.split(" (")[0]
        rate_tolerance = 1e-6 if "Andrews" in case.name else 1e-8  # Andrews' rates reach 1e3 rad/s
        checks += [Check(f"{short}: joint variables", c.max_angle, c.rms_angle, 1e-8, "rad"),
                   Check(f"{short}: joint rates", c.max_rate, c.rms_rate, rate_tolerance, "rad/s"),
                   Check(f"{short}: DAE constraint drift ‖C‖", c.dae_position_drift, c.dae_position_drift, 1e-10, "m")]
        notes.append(f"{case.name}: {c.samples} samples on [0, {c.t_end:g}] s; ODE {c.ode_seconds:.2f} s, "
                     f"DAE {c.dae_seconds:.2f} s.")
    notes.insert(0, "Both integrated with DOP853 (rtol " + ("1e-11" if quick else "1e-12") + ", atol 1e-12); "
                 "the DAE in absolute coordinates with coordinate projection. mbkron's constraint drift is zero "
                 "by construction. The seed reports RMS 1e-4 rad and 3e-3 rad/s for Andrews' squeezer.")
    return checks, notes


def andrews_squeezer(quick: bool) -> tuple[list[Check], list[str]]:
    """Andrews' squeezer: initial accelerations and the state at t = 0.03 against the IVP test set."""
    ref = andrews_reference
    model = models.andrews_squeezer("lu", "expressions")
    q0 = np.array([ANDREWS_INITIAL["beta"]])
    beta_ddot = model.forward_dynamics(q0, [0.0])[0]
    _, grad, _ = model.joint_variables(q0)
    theta_ddot = grad[model.joints.index("Theta"), 0] * beta_ddot  # at rest: f'' = ∇f q''
    checks = [Check("initial accelerations β'', Θ''",
                    *_errors(np.array([beta_ddot, theta_ddot]) / ref.INITIAL_ACCELERATION[0],
                             np.array(ref.INITIAL_ACCELERATION[:2]) / ref.INITIAL_ACCELERATION[0]),
                    1e-10, "relative")]
    if quick:
        run_model, method, tolerance, q_tolerance = (
            models.andrews_squeezer("premodel", "expressions", step=2 * np.pi / 512), "RKF45",
            1e-7, 1e-4)
        setting = "Fourier pre-modelling (step 2π/512), RKF45 at rtol = atol = 1e-7"
    else:
        run_model, method, tolerance, q_tolerance = model, "DOP853", 1e-10, 1e-7
        setting = "exact LU solver, DOP853 at rtol = atol = 1e-10"
    start = time.perf_counter()
    run = simulate(run_model, (0.0, ref.T_REFERENCE), q0, [0.0], method=method, rtol=tolerance, atol=tolerance)
    seconds = time.perf_counter() - start
    if not run.success:
        raise RuntimeError(f"the run to t = {ref.T_REFERENCE} failed: {run.message}")
    f = dict(zip(run_model.joints, run.joint_variables[-1]))
    angles = [f["crank"]] + [f[name] for name in ref.ORDER[1:]]
    checks.append(Check("q(0.03), seven angles", *_errors(angles, ref.REFERENCE_Q), q_tolerance, "rad"))
    checks.append(Check("β'(0.03)", *_errors(run.qd[-1, 0] / ref.REFERENCE_QD[0], 1.0), q_tolerance, "relative"))
    return checks, [f"Run to t = 0.03: {setting}; {run.n_steps} steps, {seconds:.2f} s.",
                    "Reference: IVP test set, `validation/andrews_reference.py`."]


def _rotation_offset(rotation_vector: ArrayLike, translation: ArrayLike) -> NDArray:
    """A 4×4 rigid transform from a rotation vector (rad) and a translation (m)."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(rotation_vector).as_matrix()
    T[:3, 3] = translation
    return T


def _spatial_tree() -> tuple[mbkron.Model, sympy_mechanics.TreeSpec]:
    """A fixed branching 3-D tree (revolute and prismatic joints, skew axes, rotated offsets, a
    nonlinear rhythm), as an mbkron model and as the same description for sympy.physics.mechanics."""
    q1, q2, q3 = sympy.symbols("q1:4")
    bodies = [  # (name, parent index, joint, axis, variable, offset, mass, com, inertia)
        ("b0", -1, "revolute", (0.0, 0.0, 1.0), q1, _rotation_offset((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
         2.0, (0.2, 0.01, 0.0), np.diag([0.01, 0.03, 0.03])),
        ("b1", 0, "revolute", (0.0, 0.6, 0.8), q2, _rotation_offset((0.3, -0.2, 0.1), (0.4, 0.0, 0.05)),
         1.5, (0.15, -0.02, 0.03), [[0.02, 0.001, 0.0], [0.001, 0.015, 0.002], [0.0, 0.002, 0.01]]),
        ("b2", 1, "prismatic", (1.0, 0.0, 0.0), 0.1 + 0.05 * sympy.sin(q3), _rotation_offset((0.0, 0.5, 0.0), (0.3, 0.0, 0.0)),
         0.8, (0.05, 0.0, 0.02), np.diag([0.004, 0.006, 0.005])),
        ("b3", 0, "revolute", (0.6, 0.0, 0.8), 0.4 * q1 - 0.7 * sympy.cos(q3) + 0.2 * q2**2,
         _rotation_offset((-0.4, 0.0, 0.3), (0.1, 0.2, 0.0)), 1.1, (0.1, 0.05, -0.02), np.diag([0.008, 0.009, 0.004])),
    ]
    gravity = (0.0, -9.81, 0.0)
    builder = mbkron.ModelBuilder(name="spatial_tree", gravity=gravity)
    for s in (q1, q2, q3):
        builder.add_coordinate(s.name)
    specs = []
    for name, parent, joint, axis, variable, offset, mass, com, inertia in bodies:
        builder.add_body(name, parent="ground" if parent < 0 else bodies[parent][0], joint=joint, axis=axis,
                         variable=variable, offset=offset, mass=mass, com=com, inertia=np.asarray(inertia))
        axes = dict(theta_axis=axis) if joint == "revolute" else dict(d_axis=axis)
        specs.append(sympy_mechanics.BodySpec(parent=parent, joint=joint, mass=mass, com=com,
                                              inertia=np.asarray(inertia), offset=offset, variable=variable, **axes))
    return builder.build(), sympy_mechanics.TreeSpec(bodies=specs, coordinates=[q1, q2, q3], gravity=gravity)


def sympy_mechanics_tree(quick: bool) -> tuple[list[Check], list[str]]:
    """M, N q̇ and G of a 3-D tree against Kane's method in sympy.physics.mechanics."""
    model, spec = _spatial_tree()
    start = time.perf_counter()
    reference = sympy_mechanics.equations_of_motion(spec)
    derivation = time.perf_counter() - start
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-1.0, 1.0, size=(2, 5 if quick else 50, 3))
    return [
        _relative_check("mass matrix M", model.mass_matrix(q), [reference.mass_matrix(x) for x in q], 1e-10),
        _relative_check("velocity forces N q̇", model.velocity_forces(q, qd),
                        [reference.velocity_forces(x, v) for x, v in zip(q, qd)], 1e-10),
        _relative_check("gravity forces G", model.gravity_forces(q), [reference.gravity_forces(x) for x in q], 1e-10),
    ], [f"Four bodies (three revolute about skew axes, one prismatic), three coordinates, nonlinear joint "
        f"variables; {len(q)} random states; Kane's derivation took {derivation:.1f} s."]


def _load_noting_warnings(path: Path) -> tuple[mbkron.Model, list[str]]:
    """A shipped model and, as report notes, its :class:`mbkron.ModelWarning` messages (bodies whose
    OpenSim source gives an unphysical inertia: the comparison uses the source's numbers)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", mbkron.ModelWarning)
        model = mbkron.load_model(path)
    return model, [f"Model warning, kept as the OpenSim source has it: {w.message}.".replace(f"{ROOT}{os.sep}", "")
                   for w in caught if issubclass(w.category, mbkron.ModelWarning)]


def opensim_shoulder(quick: bool) -> tuple[list[Check], list[str]]:
    """``models/shoulder_rhythm.toml`` against the same shoulder built in OpenSim 4.x."""
    try:
        import opensim  # noqa: F401  (only checks that OpenSim is installed)
    except ImportError:
        raise Skipped(OPENSIM_HINT) from None
    try:
        from validation.opensim import compare_shoulder
        from validation.opensim.shoulder import OpenSimShoulder
        from validation.shoulder_data import DATA, load_shoulder
    except ImportError as exc:
        raise Skipped(f"the OpenSim comparison code is not available ({exc})") from None
    if not DATA.exists():
        raise Skipped(f"the shoulder reference data {DATA} is not available (set MBKRON_SHOULDER_JSON)")
    model, warned = _load_noting_warnings(compare_shoulder.MODEL)
    reference = compare_shoulder.Reference(OpenSimShoulder(), compare_shoulder.knots_by_coordinate(load_shoulder("A")))
    low, high = np.array([c.range for c in model.coordinate_records]).T
    poses = np.random.default_rng(0).uniform(low, high, (10 if quick else 200, model.nq))
    if not quick:
        poses = np.concatenate([*compare_shoulder.sweeps(model).values(), poses])
    c = compare_shoulder.compare(model, reference, poses, "report")
    moving = np.array([m in compare_shoulder.DERIVATIVE_REFERENCE for m in model.muscles])
    (ours, theirs) = c.arms
    return [
        Check("body poses (4×4 transforms)", *_errors(*c.poses), 1e-13, "m, 1"),
        Check("musculotendon lengths", *_errors(c.lengths[0] / c.lengths[1], 1.0), 1e-13, "relative"),
        Check("moment arms, fixed path points (computeMomentArm)", *_errors(ours[..., ~moving], theirs[..., ~moving]),
              1e-13, "m"),
        Check("moment arms, moving path points (−dL/dq of OpenSim's lengths)",
              *_errors(ours[..., moving], theirs[..., moving]), 1e-9, "m"),
    ], [f"{len(poses)} poses ({'random' if quick else 'the seed sweeps of Figs. 14–15 and random'}); "
        f"{len(model.muscles)} muscles. The seed reports 8 significant figures. Details: "
        "`validation/results/opensim_shoulder.md`.", *warned]


def opensim_leg(quick: bool) -> tuple[list[Check], list[str]]:
    """``models/leg6dof9musc.toml`` (``mbkron convert`` of ``leg6dof9musc.osim``) against OpenSim running
    the original ``leg6dof9musc.osim``: all six coordinates, conditional path points included."""
    try:
        import opensim  # noqa: F401  (only checks that OpenSim is installed)
    except ImportError:
        raise Skipped(OPENSIM_HINT) from None
    from validation.opensim import compare_leg6dof9musc as compare_leg
    if not compare_leg.OSIM.exists():
        raise Skipped(f"the OpenSim model {compare_leg.OSIM} is not available (set MBKRON_LEG6DOF9MUSC_OSIM)")

    model, warned = _load_noting_warnings(compare_leg.MODEL)
    leg = compare_leg.OpenSimLeg(model.coordinates)
    poses = [compare_leg.edge_states(model, compare_leg.OSIM), compare_leg.random_poses(model, 10 if quick else 200)]
    if not quick:
        poses = [*compare_leg.sweeps(model).values(), *poses]
    poses = np.concatenate(poses)
    c = compare_leg.compare(model, leg, poses, "report")
    return [
        Check("body poses (4×4 transforms)", *_errors(*c.poses), 1e-13, "m, 1"),
        Check("reduced mass matrix Cᵀ M C", *_relative_errors(model.mass_matrix(poses),
                                                             np.array([leg.mass_matrix(q) for q in poses])),
              1e-13, "relative"),
        Check("musculotendon lengths", *_errors(c.lengths[0] / c.lengths[1], 1.0), 1e-13, "relative"),
        Check("moment arms (computeMomentArm = −dL/dq here)", *_errors(*c.arms), 1e-13, "m"),
    ], [f"{len(poses)} poses ({'' if quick else '1° / 5 cm sweeps of each of the six coordinates over its range, '}"
        "conditional points' coordinates 0.5e-5 and 1.5e-5 beyond their range ends, and random) over the whole "
        f"ranges, every conditional path point in and out of its path; {len(model.muscles)} muscles; pelvis free "
        "(tilt, tx, ty). Details: `validation/results/opensim_leg6dof9musc.md`.", *warned]


#: The cases in report order: (name, reference, function(quick) -> (checks, notes)).
CASES: list[tuple[str, str, Callable[[bool, str], tuple[list[Check], list[str]]]]] = [
    ("Planar n-link chains vs seed 000", "closed forms of seed 000 (`validation/closed_form/planar_chain.py`)",
     planar_chains),
    ("Two-link arm vs seed 003", "Duarte's closed forms and Newton–Euler (`validation/closed_form/duarte_two_link.py`)",
     two_link_arm),
    ("Three-link arm vs seed 001", "Cesari's closed forms and Newton–Euler "
     "(`validation/closed_form/cesari_three_link.py`)", three_link_arm),
    ("Four-bar linkage vs Shabana kinematics", "`validation/linkages.py` with `validation/dae`", four_bar),
    ("Five-bar linkage vs Shabana kinematics", "`validation/linkages.py` with `validation/dae`", five_bar),
    ("ODE vs DAE", "`validation/ode_vs_dae.py` (absolute coordinates, index-1 DAE)", ode_versus_dae),
    ("Andrews' squeezer vs the IVP test set", "Hairer & Wanner; Mazzia & Magherini", andrews_squeezer),
    ("3-D tree vs sympy.physics.mechanics", "Kane's method (`validation/sympy_mechanics.py`)", sympy_mechanics_tree),
    ("Shoulder vs OpenSim", "OpenSim 4.x (`validation/opensim/`)", opensim_shoulder),
    ("leg6dof9musc vs OpenSim", "OpenSim 4.x", opensim_leg),
]


# ====================================================================== running and writing
def _commit() -> str:
    """The repository's HEAD commit, or ``"unknown"`` (no git, not a checkout)."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else "unknown"


def run(quick: bool = False, progress: Callable[[CaseResult], None] | None = None) -> Report:
    """Run every case.

    Parameters
    ----------
    quick : bool
        Short runs and few samples (what CI runs).
    progress : callable, optional
        Called with each case's result as soon as it is known.

    Returns
    -------
    Report
        A case that raises is recorded as failed with its exception, and the others still run.
    """
    started = time.perf_counter()
    results = []
    for name, reference, function in CASES:
        result = CaseResult(name, reference)
        start = time.perf_counter()
        try:
            result.checks, result.notes = function(quick)
        except Skipped as exc:
            result.skipped = str(exc)
        except Exception as exc:  # a broken case must not hide the others
            result.error = f"{type(exc).__name__}: {exc}"
        result.seconds = time.perf_counter() - start
        results.append(result)
        if progress is not None:
            progress(result)
    environment = {"python": platform.python_version(), "mbkron": mbkron.__version__, "numpy": np.__version__,
                   "scipy": scipy.__version__, "sympy": sympy.__version__, "platform": platform.platform()}
    return Report(quick, datetime.now(timezone.utc).isoformat(timespec="seconds"), _commit(), environment, results,
                  time.perf_counter() - started)
