"""The compiled routes of :meth:`mbkron.Model.forward_dynamics` (and of :meth:`~mbkron.Model.inverse_dynamics`
for simple trees): one kernel call per evaluation.

For a model whose own loads are spring-dampers, joint torques and
generalized forces with constant values, ``q̈`` of Eq. 198 is computed by
:mod:`mbkron.algorithms.dynamics.articulated` (every joint driven by its own coordinate: the articulated-body
algorithm, O(n), one call for a state or a batch), :func:`mbkron.algorithms.dynamics.forward_kernels.forward_explicit`
(other explicit joint variables — affine in q, empirical functions of a coordinate, expressions: the joint
variables, kinematics, M, N q̇, G, the loads and the Cholesky solve in one call),
:meth:`mbkron.algorithms.dynamics.group.forward` (one constraint group with a compiled step: its Newton step, ∇f,
H and the dynamics in one call) or :func:`mbkron.algorithms.dynamics.forward_kernels.forward_given` (a batch of states, or a model with
constraint groups: the joint variables from the model's map — one kernel call for explicit ones,
:func:`mbkron.numerics.tabulated.explicit_batch` — then one call for the rest). The Python side only checks and shapes the arguments. A state the kernel
declines (coinciding spring points, a mass matrix that is not positive definite, non-finite
values) returns None, and the model takes its general route, which raises the descriptive error.
"""

from __future__ import annotations


import numpy as np
from numpy.typing import NDArray

from mbkron.jit.arrays import batch_rows, frozen, writable
from mbkron.core.lazy import LazyModule
from mbkron.multibody import loads as load_records
from mbkron.algorithms.jointvars.explicit import joint_dynamics

__all__ = ["ForwardDynamics", "StateKernel", "compile_dynamics", "compile_forward", "solve_positive_definite",
           "solve_positive_definite_columns"]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
compiled_trbdf2 = LazyModule("mbkron.numerics.trbdf2")
_runs = LazyModule("mbkron.numerics.runs")
_runge_kutta = LazyModule("mbkron.numerics.runge_kutta")
_articulated = LazyModule("mbkron.algorithms.dynamics.articulated")
_forward = LazyModule("mbkron.algorithms.dynamics.forward_kernels")
_step = LazyModule("mbkron.algorithms.jointvars.kernels")
_group = LazyModule("mbkron.algorithms.dynamics.group")
_tabulated = LazyModule("mbkron.numerics.tabulated")
_CHUNK_ELEMENTS = 2_000_000
"""Largest number of doubles of the joint variables' Hessians (states, nj, nq, nq) in one chunk of the derivatives'
chain rule (:meth:`ForwardDynamics.inverse_derivatives`): 16 MB."""


class ForwardDynamics:
    """Constant arrays of one model for the compiled forward-dynamics kernels.

    Build it with :meth:`plan`, which returns None for models it does not cover.
    """

    __slots__ = ("arrays", "generalized", "explicit", "matrix", "constant", "nq", "simple", "_simple_arrays", "group",
                 "_one_arguments", "_generalized_row", "_joint_space", "_joint_variables")

    def __init__(self, model, spring_rows: NDArray, joint_torque: NDArray, generalized: NDArray):
        self.arrays = (*model.tree.kernel_arrays, model.kernel_inertia, model.gravity, spring_rows, joint_torque)
        self.generalized = generalized
        self._generalized_row = batch_rows(generalized, (), 1)  # writeable, as every state's force (never written)
        jv = model.joint_variable_map
        # every joint variable explicit (affine, empirical functions of a coordinate, expressions): the one-call
        # route of one state, the joint variables evaluated in the same kernel (ExplicitMap.arguments)
        self.explicit = jv.explicit
        self.matrix = frozen(np.array(jv.matrix, dtype=float))
        self.constant = frozen(np.array(jv.constant, dtype=float))
        self.nq = model.nq
        self.simple = _simple_tree(model.tree.joint_of_body, jv.matrix) if not jv.providers else None
        self._simple_arrays = None if self.simple is None else (self.constant, *self.simple)
        self._one_arguments = None if self.simple is None else (*self.arrays, self.generalized, *self._simple_arrays)
        # joint variables other than one coordinate per joint (couplers, rhythms, empirical functions, constraint
        # groups): the derivatives of the dynamics in the joint variables (each its own coordinate, weight 1), then
        # the chain rule
        joints = model.tree.joint_of_body
        self._joint_variables = jv
        self._joint_space = None if self.simple is not None else (
            frozen(np.zeros(jv.size)), frozen(np.where(joints >= 0, joints, -1).astype(np.int64)),
            frozen((joints >= 0).astype(float)), batch_rows(np.zeros(jv.size), (), 1))
        # one constraint group with a compiled step and affine joint variables otherwise: step and dynamics
        # in one compiled call (mbkron.algorithms.dynamics.group.forward)
        fast = [getattr(provider, "fast_step", None) for _, provider in jv.providers]
        self.group = (jv.providers[0][0].astype(np.int64), fast[0]) if len(fast) == 1 and fast[0] is not None else None

    @classmethod
    def plan(cls, model, spring_rows: NDArray, skip: tuple[type, ...] = ()) -> ForwardDynamics | None:
        """The compiled route of ``model`` whose spring-dampers and constant line forces are ``spring_rows``
        (:func:`mbkron.multibody.layout.spring_rows`), or None (loads it does not cover: point loads, body torques,
        load values given as functions). Loads of the kinds ``skip`` are left out: a plan of the rest of the
        dynamics, for the derivatives (:data:`mbkron.algorithms.dynamics.loads.DIFFERENTIATED`)."""
        joint_torque, generalized = np.zeros(model.nj), np.zeros(model.nq)
        for load in model.loads:
            if load_records.in_kernel(load) or isinstance(load, skip):  # spring_rows, or the caller's
                continue
            if isinstance(load, load_records.JointTorque) and not callable(load.torque):
                joint_torque[model.joint_indices[load.joint]] += float(load.torque)
            elif isinstance(load, load_records.GeneralizedForce) and not callable(load.value):
                generalized[model.coordinate_indices[load.coordinate]] += float(load.value)
            else:
                return None
        return cls(model, spring_rows, frozen(joint_torque), frozen(generalized))

    def __call__(self, model, q: NDArray, qd: NDArray, tau, states) -> NDArray[np.float64] | None:
        """``q̈`` at validated ``q``, ``qd`` of shape (..., nq), from the joint-variable providers' ``states`` (a
        workspace's, or None: from the assembly), or None when the general route must do it."""
        force = self.generalized if tau is None else self.generalized + np.asarray(tau, dtype=float)
        one = q.ndim == 1 and qd.ndim == 1 and force.ndim == 1
        if self.simple is not None and q.shape == qd.shape and force.shape[-1:] == (self.nq,):
            batch = () if one else np.broadcast_shapes(q.shape[:-1], force.shape[:-1])
            if batch == q.shape[:-1]:
                return self._articulated(q, qd, force, batch)
        if self.explicit is not None and one:
            qdd, status = _direct(_forward, "forward_explicit", (*self.arrays, writable(force),
                                                                 *self.explicit.arguments(), writable(q), writable(qd)))
            return qdd if status == _forward.OK else None
        if self.group is not None and one:
            qdd = self._with_group(model, q, qd, force, states)
            if qdd is not None:
                return qdd
        return self._given(model, q, qd, force, states)

    def terms(self, q: NDArray, qd: NDArray, qdd: NDArray | None = None) -> tuple | None:
        """``(M, N q̇, G, Q, τ)`` of one state of a model with explicit joint variables in one call of
        :func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms` (``Q`` the model's own loads; ``τ`` the inverse dynamics at
        accelerations ``qdd``, empty without them), for validated ``q``, ``qd`` (``qdd``) of shape (nq,); None for
        other models or shapes, or where the kernel declines the state (coinciding spring points, a value that is
        not finite): the caller's general route then evaluates it or names what is wrong. After the first call in a
        process the kernel's entry point is called directly (:func:`_entry_point`)."""
        one = (self.nq,)
        if self.explicit is None or q.shape != one or qd.shape != one or (qdd is not None and qdd.shape != one):
            return None
        result = _direct(_forward, "explicit_terms", (*self.arrays, self.generalized, *self.explicit.arguments(),
                                                      writable(q), writable(qd),
                                                      _NO_ACCELERATIONS if qdd is None else writable(qdd)))
        return result[:5] if result[5] == _forward.OK else None

    def one_state(self, q, qd) -> NDArray[np.float64] | None:
        """``q̈`` of one state without actuation, the common case, in one call of the articulated-body kernel's
        entry point (no argument conversion, no dispatch): only when ``q`` and ``qd`` are C-contiguous float64
        arrays of shape (nq,), the model is a simple tree, the kernel has run once in this process (:meth:`_articulated`,
        :data:`_ENTRY`) and its status is OK (which
        includes a finite ``q̈``: :func:`mbkron.algorithms.dynamics.articulated.articulated_forward`), else None; the
        caller then checks the arguments (a non-finite one makes ``q̈`` non-finite) and takes the full route."""
        entry, arguments = _ENTRY.get("articulated_forward"), self._one_arguments
        if entry is None or arguments is None or not _one_plain_state(self.nq, q, qd):
            return None
        values, status = entry(*arguments, q, qd)
        return values if status == _forward.OK else None

    def _articulated(self, q, qd, force, batch, qdd=None) -> NDArray[np.float64] | None:
        """The articulated-body algorithm (every joint with its own coordinate), one state or a batch; with
        accelerations ``qdd`` (shaped like ``q``) the recursive Newton–Euler algorithm's ``τ`` instead."""
        head, tail = self.arrays, self._simple_arrays
        if not batch:
            if qdd is None:  # the common case: one state, through the entry point after the first call
                values, status = _direct(_articulated, "articulated_forward",
                                         (*head, writable(force), *tail, writable(q), writable(qd)))
            else:
                values, status = _articulated.articulated_inverse(*head, writable(force), *tail, writable(q),
                                                                  writable(qd), writable(qdd))
            return values if status == _forward.OK else None
        rows = batch_rows(np.broadcast_to(force, batch + (self.nq,)), batch, 1)
        values, status = _articulated.articulated_batch(*head, rows, *tail, writable(q).reshape(-1, self.nq),
                                                        writable(qd).reshape(-1, self.nq),
                                                        None if qdd is None else writable(qdd).reshape(-1, self.nq))
        return values.reshape(batch + (self.nq,)) if status == _forward.OK else None

    def inverse(self, q: NDArray, qd: NDArray, qdd: NDArray) -> NDArray[np.float64] | None:
        """``τ = M q̈ + N q̇ − G − Q`` (Eq. 198, ``Q`` the model's own loads) at validated ``q``, ``qd``, ``qdd``
        of shape (..., nq) by the recursive Newton–Euler algorithm (simple trees,
        :mod:`mbkron.algorithms.dynamics.articulated`), or None when the general route must do it."""
        if self.simple is None or not q.shape == qd.shape == qdd.shape:
            return None
        return self._articulated(q, qd, self.generalized, q.shape[:-1], qdd)

    def derivatives_gap(self) -> str | None:
        """What keeps :meth:`inverse_derivatives` from this model, in words, or None where it covers it."""
        jv = self._joint_variables
        if jv.explicit_part.entries.shape[0]:
            return "joint variables given as formulas (expressions)"
        for _, _, provider in jv.solved_providers:
            gap = getattr(provider, "third_derivatives_gap", lambda: f"joint variables given by "
                          f"{type(provider).__name__} providers")()
            if gap is not None:
                return gap
        if self.arrays[-2].shape[0]:
            return "spring-dampers or line forces, whose generalized forces depend on the state"
        return None

    def inverse_derivatives(self, q: NDArray, qd: NDArray, qdd: NDArray, states: tuple | None = None) -> tuple | None:
        """``(τ, ∂τ/∂q, ∂τ/∂q̇, M)`` of ``τ = M q̈ + N q̇ − G − Q`` (Eq. 198) at validated ``q``, ``qd``, ``qdd`` of one
        shape (..., nq), ``[..., k, m]`` the derivative of ``τ_k`` by the ``m``-th variable, by the derivatives of the
        recursive Newton–Euler algorithm (:func:`mbkron.algorithms.dynamics.articulated.articulated_derivatives`): in
        the coordinates for a simple tree; for other explicit joint variables (couplers, rhythms, functions of one
        coordinate, constraint groups) in the joint variables, each its own coordinate, and then by the chain rule
        (:meth:`_joint_space_derivatives`, the batch in chunks that bound the Hessians' memory; constraint groups
        continue from the providers' ``states``, a workspace's, or from their assembly). For a model
        :meth:`derivatives_gap` passes; None where the recursive Newton–Euler algorithm declines a state (a ``τ``
        that is not finite)."""
        batch, nq = q.shape[:-1], self.nq
        rows = (writable(q).reshape(-1, nq), writable(qd).reshape(-1, nq), writable(qdd).reshape(-1, nq))
        if self.simple is not None:
            tau, dq, dqd, mass, status = _direct(_articulated, "articulated_derivatives", (
                *self.arrays, self._generalized_row, *self._simple_arrays, *rows))
            if status != _forward.OK:
                return None
        else:  # in the joint variables, each its own coordinate, then the chain rule, in chunks of states
            nj = self.matrix.shape[0]
            chunk = max(1, _CHUNK_ELEMENTS // (nj * nq * nq))
            if self.explicit is None and states is None:  # one walk of the constraint groups for all chunks
                states = self._joint_variables.new_states()
            parts = [self._joint_space_derivatives(*(x[s:s + chunk] for x in rows), states)
                     for s in range(0, rows[0].shape[0], chunk)]
            if any(part is None for part in parts):
                return None
            tau, dq, dqd, mass = (np.concatenate(values) for values in zip(*parts))
        square = batch + (self.nq, self.nq)
        return tau.reshape(batch + (self.nq,)), dq.reshape(square), dqd.reshape(square), mass.reshape(square)

    def _joint_space_derivatives(self, q: NDArray, qd: NDArray, qdd: NDArray, states: tuple | None) -> tuple | None:
        """:meth:`inverse_derivatives` of states (states, nq) of joint variables ``f(q)`` (affine, empirical functions of
        one coordinate, constraint groups from the providers' ``states``) by the chain rule on
        ``τ = ∇fᵀ τ_f(x, ẋ, ẍ) − Q_q`` with ``x = f``,
        ``ẋ = ∇f q̇``, ``ẍ = ∇f q̈ + c``, ``c_j = q̇ᵀ H_j q̇`` (Eq. 57, 126), ``τ_f`` the recursive Newton–Euler
        algorithm in the joint variables and its derivatives ``D_x``, ``D_ẋ``, ``M_x``
        (:func:`~mbkron.algorithms.dynamics.articulated.articulated_derivatives`):
        ``M = ∇fᵀ M_x ∇f``, ``∂τ/∂q̇ = ∇fᵀ (D_ẋ ∇f + 2 M_x (H q̇))``, ``∂τ/∂q = Σ_j τ_f,j H_j + ∇fᵀ (D_x ∇f + D_ẋ (H q̇)
        + M_x (H q̈ + ∂c/∂q))`` with ``(H q̇)_jm = Σ_k H_jkm q̇_k`` and ``∂c/∂q`` from the functions' third derivatives
        (:func:`mbkron.numerics.tabulated.convective_gradients`) and the constraint groups' (one more implicit
        differentiation, :meth:`mbkron.algorithms.jointvars.constrained.ConstrainedJointVariables.convective_gradients`).
        None where the joint variables' recursive Newton–Euler algorithm declines a state (its ``τ_f`` not finite)."""
        zero, coordinate, weight, no_force = self._joint_space
        if self.explicit is not None:  # every joint variable explicit: the compiled map alone
            f, F, H = self.explicit.evaluate(q, None, _tabulated.HESSIANS)
            explicit, solved = self.explicit, ()
        else:
            jv = self._joint_variables
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # not finite: τ_f's status says so
                f, F, H = jv.evaluate(q, 2, states)
            explicit, solved = jv.explicit_part, jv.solved_providers
        # c_einsum and stacked matmuls: each state's sums in the same order whatever the batch
        hqd, hqdd = np.einsum("sjkm,sk->sjm", H, qd), np.einsum("sjkm,sk->sjm", H, qdd)
        rates = np.einsum("sjk,sk->sj", F, qd)
        accelerations = np.einsum("sjk,sk->sj", F, qdd) + np.einsum("sjm,sm->sj", hqd, qd)
        convective = np.zeros(F.shape)
        _tabulated.convective_gradients(explicit.rows, explicit.floats, q, qd, convective)
        for _, rows, provider in solved:
            convective[:, rows] = provider.convective_gradients(q, qd, f[:, rows], F[:, rows], H[:, rows])
        tau_x, dx, dxd, mass_x, status = _direct(_articulated, "articulated_derivatives", (
            *self.arrays, no_force, zero, coordinate, weight, writable(f), rates, accelerations))
        if status != _forward.OK:
            return None
        Ft = np.swapaxes(F, -1, -2)
        tau = np.einsum("sjk,sj->sk", F, tau_x) - self.generalized
        mass = Ft @ mass_x @ F
        dqd = Ft @ (dxd @ F + 2.0 * (mass_x @ hqd))
        dq = np.einsum("sj,sjkm->skm", tau_x, H) + Ft @ (dx @ F + dxd @ hqd + mass_x @ (hqdd + convective))
        return tau, dq, dqd, mass

    def one_state_derivatives(self, q, qd, qdd) -> tuple | None:
        """:meth:`inverse_derivatives` of one state without checking the arguments, the common case: only when
        ``q``, ``qd``, ``qdd`` are C-contiguous float64 arrays of shape (nq,), the model is covered and the kernel has
        run once in this process (its entry point, :data:`_ENTRY`) and its status is OK (which includes a finite
        ``τ``); else None, and the caller checks the arguments and takes the full route (as :meth:`one_state`)."""
        entry = _ENTRY.get("articulated_derivatives")
        if entry is None or self.simple is None or self.derivatives_gap() is not None or not _one_plain_state(
                self.nq, q, qd, qdd):
            return None
        tau, dq, dqd, mass, status = entry(*self.arrays, self._generalized_row, *self._simple_arrays, q[None],
                                           qd[None], qdd[None])
        return (tau[0], dq[0], dqd[0], mass[0]) if status == _forward.OK else None

    def one_state_forward_derivatives(self, q, qd, tau) -> tuple | None:
        """:meth:`forward_derivatives` of one state without checking the arguments, as :meth:`one_state_derivatives`
        (``tau`` None or a C-contiguous float64 array of shape (nq,)); the status OK includes finite results."""
        entry = _ENTRY.get("articulated_forward_derivatives")
        if (entry is None or self.simple is None or self.derivatives_gap() is not None
                or not _one_plain_state(self.nq, q, qd, *(() if tau is None else (tau,)))):
            return None
        force = self._generalized_row if tau is None else (self.generalized + tau)[None]
        qdd, dq, dqd, inverse, status = entry(*self.arrays, force, *self._simple_arrays, q[None], qd[None])
        return (qdd[0], dq[0], dqd[0], inverse[0]) if status == _forward.OK else None

    def forward_derivatives(self, q: NDArray, qd: NDArray, tau: NDArray | None) -> tuple | None:
        """``(q̈, ∂q̈/∂q, ∂q̈/∂q̇, ∂q̈/∂τ = M⁻¹)`` at validated ``q``, ``qd`` of one shape (..., nq) with actuation
        ``tau`` (broadcast to them, or None), by
        :func:`mbkron.algorithms.dynamics.articulated.articulated_forward_derivatives`, for simple trees that
        :meth:`derivatives_gap` passes; None for other models (the caller takes :meth:`inverse_derivatives` at the
        forward dynamics' ``q̈``), or where ``M`` is not positive definite or ``q̈`` not finite (the caller's forward
        dynamics then says which)."""
        if self.simple is None:
            return None
        batch, nq = q.shape[:-1], self.nq
        force = (self._generalized_row if tau is None
                 else batch_rows(np.broadcast_to(self.generalized + tau, batch + (nq,)), batch, 1))
        qdd, dq, dqd, inverse, status = _direct(_articulated, "articulated_forward_derivatives", (
            *self.arrays, force, *self._simple_arrays, writable(q).reshape(-1, nq), writable(qd).reshape(-1, nq)))
        if status != _forward.OK:
            return None
        square = batch + (nq, nq)
        return qdd.reshape(batch + (nq,)), dq.reshape(square), dqd.reshape(square), inverse.reshape(square)

    def _with_group(self, model, q, qd, force, states) -> NDArray[np.float64] | None:
        """One state of a model with one compiled constraint group: its step, continued from the
        provider's state in ``states`` (None: from the assembly), and the dynamics in one call; None when the
        general route must."""
        continuation = model.joint_variable_map.providers[0][1].new_state() if states is None else states[0]
        rows, fast_step = self.group
        result = _group.forward(fast_step, continuation.start, continuation.curvature, writable(q), writable(qd),
                                   writable(force), self.arrays, self.matrix, self.constant, rows)
        if result is None:
            return None
        solution, hess, qdd = result
        continuation.advance(solution, hess)
        return qdd

    def state_kernel(self, model, workspace, tau: NDArray | None) -> StateKernel | None:
        """The compiled right-hand side ``y' = (q̇, q̈)`` of a run with constant actuation ``tau`` (or None),
        continuing from ``workspace``'s state, with TR-BDF2 steps around it; None where this model has no
        one-call route for a constraint group (:meth:`_with_group`)."""
        if self.group is None:
            return None
        rows, fast_step = self.group
        force = writable(self.generalized if tau is None else self.generalized + np.asarray(tau, dtype=float))
        continuation = workspace.states_for(model.joint_variable_map)[0]
        context = _group.state_context(fast_step, continuation.start, continuation.curvature, force, self.arrays, self.matrix,
                                          self.constant, rows)
        return StateKernel(fast_step, continuation, context)

    def compile_ahead(self, kernels: tuple[str, ...] = ("dynamics", "steps")) -> None:
        """Compile (or load from numba's disk cache) kernels of the runs of models with one compiled constraint
        group (TR-BDF2's and the explicit Runge–Kutta solvers'), without evaluating anything: ``"dynamics"`` the terms of the equations of motion below
        the group's dynamics (:func:`compile_dynamics`), ``"steps"`` the TR-BDF2 steps
        (:meth:`StateKernel.compile_steps`), ``"explicit"`` the explicit Runge–Kutta steps
        (:meth:`StateKernel.compile_runge_kutta`: DOP853's, the command line's default for such models), in the
        order given. They are compiled once for every such model (their
        argument types are the same for all), so a model without a group compiles them for a placeholder group
        (:meth:`~mbkron.algorithms.jointvars.kernels.FastStep.placeholder`): what :mod:`mbkron.cli.prefetch`'s helper
        process does for a command on the machine's second core, with a tree model that loads without compiling
        anything."""
        unknown = [kernel for kernel in kernels if kernel not in ("dynamics", "steps", "explicit")]
        if unknown:  # before compiling anything
            raise ValueError(f"`kernels` holds {unknown[0]!r}; expected 'dynamics', 'steps' or 'explicit'")
        if self.group is None:
            rows, fast_step = np.zeros(1, dtype=np.int64), _step.FastStep.placeholder(self.nq)
        else:
            rows, fast_step = self.group
        context = _group.state_context(fast_step, fast_step.placeholder_start(), None, writable(self.generalized), self.arrays,
                                          self.matrix, self.constant, rows)
        for kernel in kernels:
            if kernel == "dynamics":
                compile_dynamics(context)
            elif kernel == "explicit":
                StateKernel(fast_step, None, context).compile_runge_kutta()
            else:
                StateKernel(fast_step, None, context).compile_steps()

    def _given(self, model, q, qd, force, states) -> NDArray[np.float64] | None:
        """Joint variables from the model's providers, then one call for the rest."""
        f, grad, convective = joint_dynamics(model, q, qd, states)
        if q.ndim == 1 and qd.ndim == 1 and force.ndim == 1:  # one state: no broadcasting work
            qdd, status = _forward.forward_given(*self.arrays, writable(force)[None], writable(f)[None],
                                                 writable(grad)[None], writable(convective)[None], writable(qd)[None])
            return qdd[0] if status == _forward.OK else None
        batch = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1], force.shape[:-1])
        nq, nj = self.nq, f.shape[-1]
        qdd, status = _forward.forward_given(
            *self.arrays, batch_rows(np.broadcast_to(force, batch + (nq,)), batch, 1),
            writable(np.broadcast_to(f, batch + (nj,))).reshape(-1, nj), batch_rows(grad, batch, 2),
            batch_rows(np.broadcast_to(convective, batch + (nj,)), batch, 1),
            writable(np.broadcast_to(qd, batch + (nq,))).reshape(-1, nq))
        return qdd.reshape(batch + (nq,)) if status == _forward.OK else None


class StateKernel:
    """One run's compiled right-hand side ``y' = (q̇, q̈)`` and TR-BDF2 steps
    (:func:`mbkron.algorithms.dynamics.group.group_trbdf2`: library kernels compiled once per machine, which call
    the group's generated constraint functions by the addresses in ``context``), with the constraint
    group's continuation in its own arrays; :meth:`store` and :meth:`load` exchange it with the run's
    workspace, for the Python route."""

    __slots__ = ("fast_step", "continuation", "context", "nq")

    def __init__(self, fast_step, continuation, context: tuple):
        self.fast_step, self.continuation, self.context = fast_step, continuation, context
        self.nq = context[_group.CONTINUATION][0].size

    def steps(self, *arguments, times: NDArray, limits: NDArray, lower: NDArray, upper: NDArray, max_steps: int):
        """:func:`mbkron.numerics.trbdf2.trbdf2_steps` with this right-hand side (through
        :func:`mbkron.algorithms.dynamics.group.group_trbdf2`): up to ``max_steps`` steps from ``arguments`` (``t`` …
        ``counts``) and their output rows, with the run's output times still to come ``times`` (float64, in
        order), ``limits`` (its slots) and the coordinates' ``lower``, ``upper`` ends; its six values."""
        return _group.group_trbdf2(*arguments, self.context, times, limits, lower, upper, max_steps)

    def compile_steps(self) -> None:
        """Compile (or load from the cache) the kernel of :meth:`steps` for the argument types of every call, taking
        no step."""
        self._no_steps(np.zeros(2 * self.nq), 0)

    def step_accelerations(self, y: NDArray) -> NDArray[np.float64] | None:
        """``q̈`` at the state ``y`` by the kernel of :meth:`steps` (:data:`mbkron.algorithms.dynamics.group.EVALUATE_ONLY`:
        no step; the continuation advances to ``y``), or None where the kernel declines it: a TR-BDF2 run's first
        evaluations, so that the run compiles no kernel but its steps' (and theirs)."""
        outcome, *_, derivatives = self._no_steps(np.array(y, dtype=float), _group.EVALUATE_ONLY)
        return derivatives[0, self.nq:] if outcome == compiled_trbdf2.STEP_OK else None

    def _no_steps(self, y: NDArray, max_steps: int):
        """:meth:`steps` from ``y`` (writable, C-contiguous floats) with ``max_steps`` 0 or
        :data:`~mbkron.algorithms.dynamics.group.EVALUATE_ONLY` and placeholders of every other argument's type."""
        n, nq = 2 * self.nq, self.nq
        vector, matrix = np.zeros(n), np.zeros((n, n))
        return self.steps(0.0, y, vector, 1.0, 1.0, 1.0, vector, vector, 1.0, nq, matrix, matrix.copy(),
                          np.zeros(n, dtype=np.int64), np.zeros(compiled_trbdf2.MEMORY_SIZE),
                          np.zeros(3, dtype=np.int64), times=np.zeros(0), limits=np.zeros(_runs.LIMITS_SIZE),
                          lower=np.zeros(nq), upper=np.zeros(nq), max_steps=max_steps)

    def derivative_rows(self, tableau: tuple, times: NDArray, states: NDArray) -> NDArray[np.float64] | None:
        """``y'`` at the rows of ``states`` (k, 2 nq) at ``times`` (k,) in one call of :meth:`runge_kutta`'s
        :data:`~mbkron.algorithms.dynamics.group.DERIVATIVES` mode, with the argument types of the steps' calls
        (``tableau`` ``(B, C, E, E3, E5, error_exponent, n_stages)`` of the solver: one compilation for both); None
        where the kernel declines a row."""
        n = states.shape[1]
        derivatives = np.empty_like(states)
        outcome = self.runge_kutta(_group.DERIVATIVES, 0.0, times, np.zeros(n), 1.0, 1.0, 1.0, np.inf, np.ones(n),
                                   np.ones(n), derivatives, *tableau, states, np.zeros(1, dtype=np.int64),
                                   np.zeros(_runs.LIMITS_SIZE), np.zeros(n // 2), np.zeros(n // 2), 0)[0]
        return derivatives if outcome == _runge_kutta.STEP_OK else None

    def compile_runge_kutta(self) -> None:
        """Compile (or load from the cache) the kernel of :meth:`runge_kutta` (the compiled explicit steps of RK23,
        RK45 and DOP853: one kernel, the tableau an argument) for the argument types of every call, evaluating nothing:
        :meth:`derivative_rows` of no rows with a placeholder tableau (as
        :func:`mbkron.integrate.runge_kutta.compile_steps` does with the solver's)."""
        placeholder = (np.zeros(1), np.zeros(1), np.zeros(0), np.zeros(1), np.zeros(1), -0.125, 12)
        self.derivative_rows(placeholder, np.zeros(0), np.zeros((0, 2 * self.nq)))

    def compile_forward(self) -> None:
        """Compile (or load from the cache) the kernels below this right-hand side's own
        (:func:`compile_forward`), evaluating nothing."""
        compile_forward(self.context)

    def compile_rows(self) -> None:
        """Compile (or load from the cache) the kernel of the joint variables at a run's output rows
        (:meth:`mbkron.algorithms.jointvars.kernels.FastStep.compile_rows`), evaluating nothing."""
        self.fast_step.compile_rows(self.continuation.start)

    def runge_kutta(self, mode: int, *arguments):
        """:func:`mbkron.algorithms.dynamics.group.group_runge_kutta` in ``mode`` with ``arguments`` (``t`` … ``counts``)
        and this right-hand side."""
        return _group.group_runge_kutta(mode, *arguments, self.context)

    def accelerations(self, y: NDArray) -> NDArray[np.float64] | None:
        """``q̈`` at the state ``y`` (the continuation advances to it), or None where the kernel declines it."""
        derivative, ok = _group.state_rhs(0.0, writable(y), self.context, True)  # not a TR-BDF2 mode: a run of
        return derivative[self.nq:] if ok else None  # another solver does not compile TR-BDF2

    def jacobian(self, t: float, y: NDArray) -> NDArray[np.float64] | None:
        """``∂y'/∂y`` at ``(t, y)`` from the workspace's continuation, by the kernel's central differences
        (:func:`mbkron.numerics.trbdf2.state_jacobian`); None where the kernel declines a perturbed state."""
        self.load()
        J = np.empty((2 * self.nq, 2 * self.nq))
        return J if _group.group_jacobian(float(t), writable(y), self.nq, J, self.context) else None

    def store(self) -> None:
        """Write the continuation reached into the workspace."""
        self.continuation.advance(*_group.continuation(self.fast_step, self.context))

    def load(self) -> None:
        """Continue from the workspace's continuation (after evaluations by the Python route)."""
        start, curvature = self.continuation.start, self.continuation.curvature
        start_q, start_f, start_tangent, held, start_p, scalars = self.context[_group.CONTINUATION]
        start_q[:], start_f[:], start_tangent[:], start_p[:] = start.q, start.f, start.tangent, start.p
        held[:] = 0.0 if curvature is None else curvature
        scalars[:] = (curvature is not None, start.det_sign, start.condition)


def compile_dynamics(context: tuple) -> None:
    """Compile (or load from the disk cache) the terms of the equations of motion
    (:func:`mbkron.algorithms.dynamics.kernels.eom_state`) for the argument types a run of the state context ``context``
    (:meth:`mbkron.algorithms.dynamics.group.state_context`) calls them with (by address, from the dynamics'
    ``_forward_state``), without evaluating anything: what a helper process compiles for a command
    (:mod:`mbkron.cli.prefetch`). Nothing without numba."""
    eom_state = _group.AHEAD["dynamics"]
    if not hasattr(eom_state, "compile"):  # not a numba dispatcher (NUMBA_DISABLE_JIT)
        return
    from numba import typeof

    (_, _, _, _, _, _, _, _, geometry, links, inertia_rows, gravity, springs, _, _, _, _, _, scratch, _, start_q,
     *_) = context
    f, grad, convective, _, (M, _, _, Nqd, G, Q), workspace = scratch
    eom_state.compile(tuple(typeof(value) for value in (
        geometry, links, inertia_rows, gravity, springs, f, grad, convective, start_q, M, Nqd, G, Q,
        workspace)))  # (q̇: the state's, as start_q)


def compile_forward(context: tuple) -> None:
    """Compile (or load from the disk cache) :func:`mbkron.algorithms.dynamics.group.group_forward_into` and the dynamics'
    ``_forward_state`` (:mod:`mbkron.algorithms.dynamics.forward_kernels`, which :func:`~mbkron.algorithms.dynamics.forward_kernels.forward_solved` calls
    by address) for the argument types the right-hand side calls them with in a run of the state context
    ``context``, without evaluating anything: a TR-BDF2 run compiles its right-hand side's kernels before it waits
    for its steps, which a helper process may still be compiling (:mod:`mbkron.cli.prefetch`). Nothing without
    numba."""
    if not hasattr(_group.group_forward_into, "compile"):  # not a numba dispatcher (NUMBA_DISABLE_JIT)
        return
    from numba import boolean, int64, typeof

    (first, second, data, m, A, c, settings, projection, geometry, links, inertia_rows, gravity, springs,
     joint_torque, force, matrix, constant, rows, scratch, work, start_q, start_f, start_tangent, curvature, _,
     _) = context
    arguments = [typeof(value) for value in (first, second, data, m, A, c, start_q, start_q, start_f, start_tangent,
                                             curvature)]  # (q: the state's, as start_q)
    arguments += [boolean, int64]  # use_curvature, det_sign0
    arguments += [typeof(value) for value in (settings, projection, geometry, links, inertia_rows, gravity, springs,
                                              joint_torque, force, matrix, constant, rows, start_q, scratch, work)]
    _group.group_forward_into.compile(tuple(arguments))
    f, grad, convective, qdd, terms, workspace = scratch
    _forward._forward_state.compile(tuple(typeof(value) for value in (
        geometry, links, inertia_rows, gravity, springs, joint_torque, force, f, grad, convective, start_q, qdd,
        terms, workspace)))  # (q̇: the state's, as start_q)


_FLOAT = np.dtype(np.float64)


def _simple_tree(joint_of_body: NDArray, matrix: NDArray) -> tuple[NDArray, NDArray] | None:
    """``(coordinate, weight)`` per body when each joint variable is ``w q_k + c`` with its own coordinate
    and every coordinate drives one joint (:mod:`mbkron.algorithms.dynamics.articulated`), else None."""
    nonzero = matrix != 0
    if matrix.shape[0] != matrix.shape[1] or np.any(nonzero.sum(axis=0) != 1) or np.any(nonzero.sum(axis=1) != 1):
        return None
    columns = nonzero.argmax(axis=1)
    coordinate = np.where(joint_of_body >= 0, columns[np.maximum(joint_of_body, 0)], -1).astype(np.int64)
    weight = np.where(joint_of_body >= 0, matrix[np.maximum(joint_of_body, 0), columns[np.maximum(joint_of_body, 0)]], 0.0)
    coordinate.setflags(write=False)
    return coordinate, frozen(weight)


_ENTRY: dict = {}
"""The compiled entry points of :func:`mbkron.algorithms.dynamics.articulated.articulated_forward`,
:func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms` and :func:`~mbkron.algorithms.dynamics.forward_kernels.forward_explicit` once each has run in
this process (:func:`_entry_point`, :func:`_direct`): their argument
types are the same for every model (one specialisation each), so an entry is the process's, like numba's own table
of compiled functions, not a model's (which stays a fixed description)."""


def _direct(module, name: str, arguments: tuple):
    """``module.name(*arguments)`` for a kernel whose arguments have the same types at every call (one state:
    the model's read-only arrays, the state's writeable C-contiguous float64 ones): after its first call in this
    process through its compiled entry point (:func:`_entry_point`, kept in :data:`_ENTRY`), skipping the
    dispatcher's typing of each argument."""
    entry = _ENTRY.get(name)
    if entry is not None:
        return entry(*arguments)
    kernel = getattr(module, name)
    result = kernel(*arguments)
    _ENTRY[name] = _entry_point(kernel, arguments)
    return result


_NO_ACCELERATIONS = np.zeros(0)
"""The empty ``qdd`` of :func:`mbkron.algorithms.dynamics.forward_kernels.explicit_terms` without the inverse dynamics (never written)."""


def _entry_point(kernel, arguments: tuple):
    """The compiled entry point of the numba ``kernel`` for the types of ``arguments`` (it has been called with
    them), or None without numba or such a compilation.

    Calling it skips the dispatcher's typing of each argument (about a microsecond for the 13 arrays
    of :func:`~mbkron.algorithms.dynamics.articulated.articulated_forward`, a third of a 7-body state); the
    caller must then pass arrays of the same dtypes, dimensions and C order, which only the layout
    checked here allows: float64 (int64 for the model's index arrays), C-contiguous, one state.
    Whether an array is writeable does not change how it is passed (the kernel writes none of them)."""
    try:
        import numba

        return kernel.overloads[tuple(numba.typeof(argument) for argument in arguments)].entry_point
    except (ImportError, AttributeError, KeyError):
        return None


def _one_plain_state(nq: int, *arrays) -> bool:
    """Whether ``arrays`` are all C-contiguous float64 numpy arrays of shape (nq,): what a kernel's entry point
    may take for one state without the dispatcher's checks (:func:`_entry_point`)."""
    for values in arrays:
        if (type(values) is not np.ndarray or values.dtype is not _FLOAT or values.shape != (nq,)
                or not values.flags.c_contiguous):
            return False
    return True


def solve_positive_definite_columns(M: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """``M⁻¹ B`` for stacks ``M`` (..., n, n), ``B`` (..., n, p), each ``M`` factored once by Cholesky
    (:func:`mbkron.algorithms.dynamics.forward_kernels.solve_columns`); None if some ``M`` is not positive definite."""
    n = M.shape[-1]
    X, ok = _forward.solve_columns(writable(M).reshape(-1, n, n), writable(B).reshape((-1,) + B.shape[-2:]))
    return X.reshape(B.shape) if ok else None


def solve_positive_definite(M: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """``M⁻¹ b`` for stacks ``M`` (..., n, n), ``b`` (..., n) by one Cholesky factorisation ``M = L Lᵀ``
    (:func:`mbkron.algorithms.dynamics.forward_kernels.solve_positive_definite`); None if some ``M`` is not positive definite
    (the factorisation fails): the forward dynamics' general route (Eq. 198)."""
    x, ok = _forward.solve_positive_definite(M, b)
    return x if ok else None
