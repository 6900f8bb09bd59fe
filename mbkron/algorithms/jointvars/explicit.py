"""Joint variables as explicit functions of the generalized coordinates: f(q), ∇f(q), H(q).

Section 3-1 of the dissertation: every joint variable ``f_i`` is a smooth function of the
generalized coordinates ``q``; the kinematics needs its gradient ``∇f_i`` and Hessian ``H_i``.
This module evaluates the explicit kinds:

- affine maps ``f = c + Σ_k a_k q_k`` (identity maps, relative angles ``θ_i − θ_{i−1}``; described by
  :class:`mbkron.multibody.jointvars.Linear`);
- sympy expressions -- general smooth functions with exact derivatives, printed once
  (:mod:`mbkron.expressions.codegen`) as a C callback (:mod:`mbkron.algorithms.jointvars.generated`);
- empirical functions of one coordinate (:mod:`mbkron.algorithms.jointvars.functions`, described by
  :class:`mbkron.multibody.jointvars.CoordinateFunction`).

All of them are :class:`ExplicitProvider` s: a map of them is described once, in numpy, when the model is built
(:class:`ExplicitMap`), and evaluated with its affine part by one compiled kernel
(:func:`mbkron.numerics.tabulated.explicit_batch`), which the one-call forward dynamics also calls
(:func:`mbkron.algorithms.dynamics.forward_kernels.forward_explicit`). Joint variables solved from constraints (Eq. 100-120) plug in
through the same :class:`JointVariableProvider` interface and are evaluated in Python after the kernel. The dynamics needs of ``H`` only the convective terms
``q̇ᵀ H_i q̇`` (:meth:`JointVariables.evaluate_convective`, O(nj · nq) memory); the dense ``H`` is formed
for :meth:`JointVariables.evaluate` of order 2 only.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.arrays import frozen, writable
from mbkron.numerics.function_rows import FUNCTION_COLUMNS
from mbkron.core.arguments import all_finite, real_values
from mbkron.core.errors import ConfigurationError
from mbkron.core.lazy import LazyModule, is_sympy_expression


__all__ = [
    "check_joint_values",
    "joint_dynamics",
    "joint_values",
    "JointVariableProvider",
    "ExplicitProvider",
    "ExplicitMap",
    "SymbolicJointVariables",
    "JointVariables",
]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
codegen = LazyModule("mbkron.expressions.codegen")
# the kernels and the generated callbacks import numba: imported by the first evaluation, not by building a model
_tabulated = LazyModule("mbkron.numerics.tabulated")
_generated = LazyModule("mbkron.algorithms.jointvars.generated")


class JointVariableProvider(ABC):
    """Evaluates ``k`` joint variables and their first and second derivatives.

    Subclasses implement :meth:`evaluate`; the model places the results in the rows of the
    joint variables it was given (:meth:`fill`, which providers with sparse derivatives override).
    The dynamics asks :meth:`evaluate_convective` instead, for the convective terms ``q̇ᵀ H_i q̇``
    without the Hessians.
    """

    @property
    @abstractmethod
    def size(self) -> int:
        """Number of joint variables provided."""

    @abstractmethod
    def evaluate(
        self, q: NDArray[np.float64], order: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """Values, gradients and Hessians at ``q``.

        Parameters
        ----------
        q : ndarray, shape (..., nq)
        order : {0, 1, 2}
            Highest derivative needed; the others are returned as None.

        Returns
        -------
        f : ndarray, shape (..., k)
        grad : ndarray, shape (..., k, nq) or None
        hess : ndarray, shape (..., k, nq, nq) or None

        Providers that continue from state to state (constraint solvers) also take a third
        argument, ``state``: the object their :meth:`new_state` made, owned by the caller.
        """

    def evaluate_convective(
        self, q: NDArray[np.float64], qd: NDArray[np.float64], state: object | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Values, gradients and the convective terms ``c_i = q̇ᵀ H_i q̇`` at ``(q, q̇)``: all the
        dynamics needs of the second derivatives (Eq. 57, 126 through ``T̈``), without ``H`` itself.

        This default contracts the provider's own Hessian block (k × nq × nq per state: small for a
        constraint group); providers with structure (affine parts, functions of one coordinate,
        expressions of a few coordinates) override it to work in O(k · nq) memory.

        Parameters
        ----------
        q, qd : ndarray, shape (..., nq)
        state : object, optional
            As for :meth:`evaluate`, for providers that continue from state to state.

        Returns
        -------
        f : ndarray, shape (..., k)
        grad : ndarray, shape (..., k, nq)
        convective : ndarray, shape (broadcast of the batches of q and qd) + (k,)
        """
        f, grad, hess = self.evaluate(q, 2) if state is None else self.evaluate(q, 2, state)
        return f, grad, quadratic_forms(hess, qd)

    def new_state(self) -> object | None:
        """Fresh caller-owned evaluation state (None: the provider keeps none)."""
        return None

    def fill(self, q: NDArray[np.float64], order: int, state: object | None, rows: NDArray[np.intp],
             f: NDArray[np.float64], grad: NDArray[np.float64] | None, hess: NDArray[np.float64] | None) -> None:
        """Place the values at ``q`` in the rows ``rows`` of a whole joint-variable map's arrays, as
        :class:`JointVariables` evaluates its providers: ``f``, and up to ``order`` ``grad`` and ``hess``,
        whose rows ``rows`` hold zeros (those of ``f`` are overwritten whatever they hold).

        This default writes :meth:`evaluate`'s results over the rows; providers with sparse derivatives
        override it to write their nonzero entries only
        (:class:`~mbkron.algorithms.jointvars.functions.CoordinateFunctionVariables`).

        Parameters
        ----------
        q : ndarray, shape (..., nq)
        order : {0, 1, 2}
        state : object or None
            The object :meth:`new_state` made, for providers that continue from state to state; None: start
            afresh (:meth:`evaluate` is then called without it).
        rows : ndarray of int, shape (k,)
            The provider's rows among the map's ``nj`` joint variables.
        f : ndarray, shape (..., nj)
        grad : ndarray, shape (..., nj, nq), or None when ``order < 1``
        hess : ndarray, shape (..., nj, nq, nq), or None when ``order < 2``
            Written in place.
        """
        pf, pgrad, phess = self.evaluate(q, order) if state is None else self.evaluate(q, order, state)
        if f.ndim == 1:  # one state: numpy indexes quicker without the ellipsis
            f[rows] = pf
            if order >= 1:
                grad[rows] = pgrad
            if order >= 2:
                hess[rows] = phess
            return
        f[..., rows] = pf
        if order >= 1:
            grad[..., rows, :] = pgrad
        if order >= 2:
            hess[..., rows, :, :] = phess


def quadratic_forms(hess: NDArray[np.float64], qd: NDArray[np.float64]) -> NDArray[np.float64]:
    """``q̇ᵀ H_i q̇`` for every row ``i`` of ``hess`` (..., k, nq, nq), shape (broadcast batch) + (k,)."""
    return np.einsum("...jkl,...k,...l->...j", hess, qd, qd)


class ExplicitProvider(JointVariableProvider):
    """Joint variables that are explicit functions of ``q`` with no state, evaluated by the compiled kernel of
    explicit joint variables (:func:`mbkron.numerics.tabulated.explicit_state`) from a description packed once
    (:meth:`pack`): a model's map of them and its affine part in one kernel call (:class:`ExplicitMap`), each
    provider alone the same way (:meth:`alone`, :meth:`evaluate`).

    Subclasses set ``nq`` and implement :meth:`pack` and ``size``.
    """

    nq: int

    @abstractmethod
    def pack(self, rows: Sequence[int], floats: list) -> tuple[list[list[int]], list[tuple[NDArray, Callable]]]:
        """This provider's part of an :class:`ExplicitMap` whose rows ``rows`` it fills.

        Parameters
        ----------
        rows : sequence of int
            Its joint variables' rows in the map.
        floats : list of float
            The map's numbers so far (appended to).

        Returns
        -------
        function_rows : list of list of int
            Rows of :mod:`mbkron.numerics.tabulated`'s layout (with ``ROW`` and ``COORDINATE``).
        calls : list of (ndarray, callable)
            Per generated callback its entries ``(what, j, k, m)`` (int, shape (E, 4); ``j`` a row of the map) and a
            function returning its address (compiling it on the first call).
        """

    def alone(self) -> JointVariables:
        """A map of this provider alone (rows ``0 … size − 1``, no affine part), packed now: what evaluates it on its
        own (a caller evaluating it often keeps one, as a muscle set's moving points do; a model's map packs all of
        its providers when it is built)."""
        return JointVariables(frozen(np.zeros((self.size, self.nq))), frozen(np.zeros(self.size)),
                              ((np.arange(self.size), self),))

    def evaluate(self, q, order):
        return self.alone().evaluate(q, order)

    def evaluate_convective(self, q, qd, state=None):
        return self.alone().evaluate_convective(q, qd)



_NO_SECOND = np.zeros((1, 1))
"""The ``convective`` argument of :func:`mbkron.numerics.tabulated.explicit_batch` where it is not computed (never
written)."""
_NO_HESSIANS = np.zeros((1, 1, 1, 1))
"""Its ``hess`` argument where the Hessians are not computed (never written)."""


class ExplicitMap:
    """The packed description of a joint-variable map's affine part and explicit providers, for the compiled kernels
    (:mod:`mbkron.numerics.tabulated`, :func:`mbkron.algorithms.dynamics.forward_kernels.forward_explicit`): built with numpy when the
    model is built; the generated callbacks of expression providers are compiled (or loaded) by the first
    evaluation (:meth:`arguments`).

    Parameters
    ----------
    matrix, constant : ndarray
        The map's affine part, ``(nj, nq)`` and ``(nj,)``.
    base : ndarray, shape (nj, nq)
        ``matrix`` with every provider's rows zero: the gradients the kernel starts from.
    providers : sequence of (rows, ExplicitProvider)
    complete : bool
        Whether these are all the map's providers (no constraint group).
    """

    __slots__ = ("matrix", "base", "constant", "rows", "floats", "entries", "complete", "provided", "_sources",
                 "_calls")

    def __init__(self, matrix: NDArray, constant: NDArray, base: NDArray, providers, complete: bool):
        floats: list = []
        function_rows, calls = [], []
        for rows, provider in providers:
            packed, called = provider.pack(np.reshape(rows, -1).tolist(), floats)
            function_rows.extend(packed)
            calls.extend(called)
        self.matrix, self.constant, self.base = (frozen(np.array(a, dtype=float)) for a in (matrix, constant, base))
        self.rows = frozen(np.array(function_rows, dtype=np.int64).reshape(-1, FUNCTION_COLUMNS))
        self.floats = frozen(np.array(floats, dtype=float))
        self.entries = frozen(np.concatenate([np.reshape(e, (-1, 4)) for e, _ in calls] or [np.zeros((0, 4))])
                                  .astype(np.int64))
        self._sources = tuple((len(e), address) for e, address in calls)
        self._calls = None
        self.complete = complete
        self.provided = bool(function_rows or calls)

    def __getstate__(self) -> tuple:
        """Pickled without the callbacks' addresses (``_calls``, this process's), found again by the first call."""
        return None, {**{name: getattr(self, name) for name in self.__slots__}, "_calls": None}

    def arguments(self) -> tuple:
        """``(A, base, c, rows, floats, calls, entries)`` of the kernels: ``calls`` one row ``(address, first entry,
        entries)`` per generated callback, compiled (or loaded from the cache) by the first call."""
        if self._calls is None:
            calls, start = [], 0
            for count, address in self._sources:
                calls.append((address(), start, count))
                start += count
            self._calls = frozen(np.array(calls, dtype=np.int64).reshape(-1, 3))
        return self.matrix, self.base, self.constant, self.rows, self.floats, self._calls, self.entries

    def evaluate(self, q: NDArray, qd: NDArray | None, mode: int) -> tuple[NDArray, NDArray, NDArray | None]:
        """``(f, ∇f, H or q̇ᵀ H q̇ or None)`` at real ``q`` (..., nq) (speeds ``qd``, broadcast against ``q``,
        for the convective terms), by :func:`mbkron.numerics.tabulated.explicit_batch` in ``mode``."""
        nj, nq = self.matrix.shape
        batch = q.shape[:-1]
        states = writable(q).reshape(-1, nq)
        count = states.shape[0]
        f, grad = np.empty((count, nj)), np.empty((count, nj, nq))
        hess = np.empty((count, nj, nq, nq)) if mode == _tabulated.HESSIANS else _NO_HESSIANS
        convective = np.empty((count, nj)) if mode == _tabulated.CONVECTIVE else _NO_SECOND
        speeds = writable(np.broadcast_to(qd, q.shape)).reshape(-1, nq) if mode == _tabulated.CONVECTIVE else states
        _tabulated.explicit_batch(*self.arguments(), states, speeds, mode, f, grad, hess, convective)
        second = (hess.reshape(batch + (nj, nq, nq)) if mode == _tabulated.HESSIANS
                  else convective.reshape(batch + (nj,)) if mode == _tabulated.CONVECTIVE else None)
        return f.reshape(batch + (nj,)), grad.reshape(batch + (nj, nq)), second


def fold_constants(expr: sympy.Expr) -> sympy.Expr:
    """Replace every symbol-free subexpression by its double-precision value.

    sympy evaluates such constants in arbitrary precision when it orders or prints terms, which for
    a constant like ``sin(exp(exp(20)))`` never finishes; the generated code
    (:mod:`mbkron.expressions.codegen`) evaluates them at once (here to ``nan``, which then makes
    the joint variable non-finite and is reported).
    """
    if expr.is_Number or expr.is_Symbol:
        return expr
    if not expr.free_symbols:
        with np.errstate(all="ignore"):
            try:
                (value,) = codegen.numpy_function([], [expr])()
            except ArithmeticError:  # an operation on two float literals, e.g. 1.0/0.0
                value = math.nan
        return sympy.Float(value) if np.isfinite(value) else sympy.nan
    return expr.func(*(fold_constants(argument) for argument in expr.args))


def _as_sympy(expression: object) -> sympy.Expr:
    """A sympy expression or a real number as sympy; strings are refused (never sympified)."""
    if is_sympy_expression(expression):
        return fold_constants(expression)
    if isinstance(expression, (int, float, np.integer, np.floating)) and not isinstance(
        expression, bool
    ):
        return sympy.Float(float(expression))
    raise TypeError(
        f"joint-variable expressions must be sympy expressions or numbers, got "
        f"{type(expression).__name__}; parse strings with mbkron.expressions.parser"
    )


class SymbolicJointVariables(ExplicitProvider):
    """Joint variables given as sympy expressions of the coordinates, with exact derivatives.

    The expressions, their gradients and Hessians are differentiated symbolically and printed once, at
    construction (:func:`mbkron.expressions.codegen.scalar_source`), as one C callback compiled (or loaded from
    ``MBKRON_CACHE_DIR``) by the first evaluation (:func:`mbkron.algorithms.jointvars.generated.callback_module`), which the
    kernel of explicit joint variables calls; evaluation never calls sympy.

    Parameters
    ----------
    expressions : sequence of sympy.Expr
        One expression per joint variable, in the coordinate symbols.
    coordinates : sequence of sympy.Symbol
        The generalized coordinates, in order.
    """

    def __init__(self, expressions: Sequence[sympy.Expr], coordinates: Sequence[sympy.Symbol]):
        exprs = [_as_sympy(e) for e in expressions]
        self.expressions = tuple(exprs)
        self.coordinates = tuple(coordinates)
        self.nq = len(self.coordinates)
        column = {symbol: k for k, symbol in enumerate(self.coordinates)}
        # the values, then the derivatives by the coordinates an expression contains (the others are zero): memory
        # and compile time grow with the expressions, not with nq² (a 2,000-coordinate model)
        entries, printed = [(0, i, 0, 0) for i in range(len(exprs))], list(exprs)
        second = []
        for i, e in enumerate(exprs):
            own = sorted((column[s] for s in e.free_symbols if s in column))
            for k in own:
                derivative = sympy.diff(e, self.coordinates[k])
                entries.append((1, i, k, 0))
                printed.append(derivative)
                second.extend(((2, i, k, m), sympy.diff(derivative, self.coordinates[m])) for m in own)
        entries.extend(entry for entry, _ in second)
        printed.extend(expression for _, expression in second)
        self._entries = np.array(entries, dtype=np.int64).reshape(-1, 4)
        self._source = codegen.scalar_source("values", self.coordinates, printed, unread=("data",))
        self._module = None

    @property
    def size(self) -> int:
        return len(self.expressions)

    def __getstate__(self) -> dict:
        """Pickled without the generated module (this process's code), imported again by the first call."""
        return {**self.__dict__, "_module": None}

    def _address(self) -> int:
        """The address of the generated callback, compiled (or loaded) on the first call and kept."""
        if self._module is None:
            self._module = _generated.callback_module(self._source)
        return _tabulated.callback_address(self._module.values)

    def pack(self, rows, floats):
        """No function rows; one callback whose entries' rows are the map's ``rows``."""
        entries = self._entries.copy()
        entries[:, 1] = np.asarray(rows, dtype=np.int64)[entries[:, 1]]
        return [], [(entries, self._address)]


@dataclass(frozen=True)
class JointVariables:
    """All joint variables of a model: an affine part plus nonlinear providers.

    Parameters
    ----------
    matrix : ndarray, shape (nj, nq)
        Coefficients of the affine joint variables (rows of nonlinear ones are zero).
    constant : ndarray, shape (nj,)
    providers : tuple of (rows, provider)
        Each provider fills the joint-variable rows ``rows`` (an int array).
    """

    matrix: NDArray[np.float64]
    constant: NDArray[np.float64]
    providers: tuple[tuple[NDArray[np.intp], JointVariableProvider], ...] = field(default=())
    _gradient_base: NDArray[np.float64] = field(init=False, repr=False, compare=False)
    """Derived once: ``matrix`` with the providers' rows set to zero (read-only; ``matrix`` itself without
    providers), the gradient they fill (:meth:`JointVariableProvider.fill`)."""
    _zero_hessians: NDArray[np.float64] = field(init=False, repr=False, compare=False)
    """Derived once: the Hessians (nj, nq, nq) of the affine joint variables, zeros: one read-only zero
    broadcast to that shape (no memory of its size)."""
    _explicit: ExplicitMap = field(init=False, repr=False, compare=False)
    """Derived once: the affine part and the explicit providers packed for the compiled kernel (:class:`ExplicitMap`)."""
    _others: tuple = field(init=False, repr=False, compare=False)
    """Derived once: ``(k, rows, provider)`` of the providers that are not explicit (constraint groups), evaluated in
    Python after the kernel."""

    def __post_init__(self):
        base = self.matrix
        if self.providers:
            base = np.array(self.matrix)
            base[np.concatenate([np.reshape(rows, -1) for rows, _ in self.providers])] = 0
            base.setflags(write=False)
        object.__setattr__(self, "_gradient_base", base)
        nj, nq = self.matrix.shape
        object.__setattr__(self, "_zero_hessians", np.broadcast_to(np.zeros(()), (nj, nq, nq)))
        explicit = tuple(p for p in self.providers if isinstance(p[1], ExplicitProvider))
        others = tuple((k, rows, p) for k, (rows, p) in enumerate(self.providers) if not isinstance(p, ExplicitProvider))
        object.__setattr__(self, "_explicit", ExplicitMap(self.matrix, self.constant, base, explicit, not others))
        object.__setattr__(self, "_others", others)

    @property
    def explicit(self) -> ExplicitMap | None:
        """The packed description of this map for the compiled kernels when every joint variable is explicit
        (affine or given by :class:`ExplicitProvider` s), else None (a constraint group's rows)."""
        return self._explicit if self._explicit.complete else None

    @property
    def explicit_part(self) -> ExplicitMap:
        """The packed affine part and explicit providers (:class:`ExplicitMap`), whether or not constraint groups
        solve other rows (:attr:`explicit` is it only where none do)."""
        return self._explicit

    @property
    def solved_providers(self) -> tuple:
        """``(k, rows, provider)`` of the providers that are not explicit (constraint groups), ``k`` their position in
        :attr:`providers` (and in :meth:`new_states`)."""
        return self._others

    @property
    def size(self) -> int:
        return self.matrix.shape[0]

    def new_states(self) -> tuple:
        """Fresh evaluation states of the providers, in their order (see :class:`mbkron.Model.workspace`)."""
        return tuple(provider.new_state() for _, provider in self.providers)

    def evaluate(
        self, q: NDArray[np.float64], order: int = 2, states: tuple | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """``f``, ``∇f`` and ``H`` of every joint variable at ``q``.

        Parameters
        ----------
        q : ndarray, shape (..., nq)
        order : {0, 1, 2}
        states : tuple, optional
            From :meth:`new_states`: where stateful providers continue from (advanced by the call).
            Without it they start afresh, so the result depends on the arguments only.

        Returns
        -------
        f : ndarray, shape (..., nj)
        grad : ndarray, shape (..., nj, nq), or None when ``order < 1``
            (read-only when every joint variable is affine)
        hess : ndarray, shape (..., nj, nq, nq), or None when ``order < 2``
            (read-only zeros when every joint variable is affine)
        """
        if self._explicit.provided:
            return self._by_kernel(q, order, states)
        with np.errstate(invalid="ignore", over="ignore"):  # inf·0 in q @ A: a non-finite f, reported by the model
            values = self._affine_part(q, order)
        return self._provided(q, order, states, *values)

    def evaluate_silenced(
        self, q: NDArray[np.float64], order: int = 2, states: tuple | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.float64] | None]:
        """:meth:`evaluate` for a caller that has silenced numpy's floating-point warnings itself
        (``np.errstate``, as the model's evaluations do): the same values, without an error state of its own
        (whose cost is felt in the evaluations of one state).

        Parameters
        ----------
        q : ndarray, shape (..., nq)
        order : {0, 1, 2}
        states : tuple, optional
            As for :meth:`evaluate`.

        Returns
        -------
        f, grad, hess : ndarray
            As :meth:`evaluate`.
        """
        if self._explicit.provided:
            return self._by_kernel(q, order, states)
        return self._provided(q, order, states, *self._affine_part(q, order))

    def _by_kernel(self, q: NDArray, order: int, states: tuple | None):
        """:meth:`evaluate` by the compiled kernel of explicit joint variables, then the other providers."""
        q = real_values(q, "q")
        f, grad, hess = self._explicit.evaluate(q, None, _tabulated.HESSIANS if order >= 2 else _tabulated.VALUES)
        for k, rows, provider in self._others:
            provider.fill(q, order, None if states is None else states[k], rows, f, grad, hess)
        return f, (grad if order >= 1 else None), hess

    def _provided(self, q: NDArray, order: int, states: tuple | None, f: NDArray, grad: NDArray | None,
                  hess: NDArray | None):
        """``(f, grad, hess)`` of :meth:`_affine_part` with the providers' rows filled in
        (:meth:`JointVariableProvider.fill`)."""
        for k, rows, provider in self._others:
            provider.fill(q, order, None if states is None else states[k], rows, f, grad, hess)
        return f, grad, hess

    def _affine_part(self, q: NDArray, order: int):
        """``(f, ∇f, H)`` of the affine part (writeable copies where providers fill rows, zero there); refuses a
        complex ``q``. The caller silences numpy's warnings (inf·0 in ``q @ A``: a non-finite f, reported by the
        model)."""
        nj, nq = self.matrix.shape
        batch = q.shape[:-1]
        real_values(q, "q")
        f = q @ self.matrix.T + self.constant
        grad = hess = None
        if order >= 1:
            grad = np.broadcast_to(self._gradient_base, batch + (nj, nq)) if batch else self._gradient_base
        if order >= 2:
            if self.providers:
                hess = np.zeros(batch + (nj, nq, nq))
            else:
                hess = np.broadcast_to(self._zero_hessians, batch + (nj, nq, nq)) if batch else self._zero_hessians
        if self.providers and grad is not None:
            grad = grad.copy()
        return f, grad, hess

    def evaluate_convective(
        self, q: NDArray[np.float64], qd: NDArray[np.float64], states: tuple | None = None
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``f``, ``∇f`` and the convective terms ``c_j = q̇ᵀ H_j q̇`` at ``(q, q̇)``: what the dynamics
        needs of the joint variables' second derivatives (the ``S_j q̇ᵀH_j q̇`` of the accelerations,
        Eq. 57, 126), in memory O(nj · nq) -- never the dense ``H`` (nj × nq × nq) of :meth:`evaluate`.

        Affine joint variables have ``c = 0``; each provider computes its own rows
        (:meth:`JointVariableProvider.evaluate_convective`).

        Parameters
        ----------
        q, qd : ndarray, shape (..., nq)
        states : tuple, optional
            As for :meth:`evaluate`.

        Returns
        -------
        f : ndarray, shape (..., nj)
        grad : ndarray, shape (..., nj, nq)
            (read-only when every joint variable is affine)
        convective : ndarray, shape (broadcast of the batches of q and qd) + (nj,)
        """
        batch = np.broadcast_shapes(q.shape[:-1], qd.shape[:-1])
        if self._explicit.provided:
            q = real_values(q, "q")
            f, grad, convective = self._explicit.evaluate(np.broadcast_to(q, batch + q.shape[-1:]), qd,
                                                          _tabulated.CONVECTIVE)
            if batch != q.shape[:-1]:  # speeds of more states than q: f and ∇f of q's states
                f, grad, _ = self._explicit.evaluate(q, None, _tabulated.VALUES)
        else:
            with np.errstate(invalid="ignore", over="ignore"):  # inf·0 in q @ A: a non-finite f, reported by the model
                f, grad, _ = self._affine_part(q, 1)
            convective = np.zeros(batch + (self.size,))
        for k, rows, provider in self._others:
            state = None if states is None else states[k]
            pf, pgrad, pconvective = provider.evaluate_convective(q, qd, state)
            f[..., rows] = pf
            grad[..., rows, :] = pgrad
            convective[..., rows] = pconvective
        return f, grad, convective


def joint_values(model, q: NDArray[np.float64], order: int, states: tuple | None):
    """``(f, ∇f, H)`` of ``model``'s joint variables to ``order`` at a validated ``q`` (Eq. 100–120), from the
    providers' ``states`` (:meth:`JointVariables.evaluate`); a joint variable that is not finite raises
    ConfigurationError naming it (:func:`check_joint_values`). ``model`` is read, never called: its
    ``joint_variable_map`` and ``joints``."""
    return _checked(model, q, lambda jv: jv.evaluate(q, order, states))


def joint_dynamics(model, q: NDArray[np.float64], qd: NDArray[np.float64], states: tuple | None):
    """``(f, ∇f, c)`` with the convective terms ``c_j = q̇ᵀ H_j q̇`` (:meth:`JointVariables.evaluate_convective`:
    all the dynamics needs of the Hessians, Eq. 57 and 126, without them) at validated ``q``, ``qd``, from the
    providers' ``states``; ``f`` checked finite as by :func:`joint_values`."""
    return _checked(model, q, lambda jv: jv.evaluate_convective(q, qd, states))


def _checked(model, q: NDArray[np.float64], evaluate):
    """``evaluate(model.joint_variable_map)``, the providers' floating-point warnings silenced (a value that is not
    finite is reported by name instead), its ``f`` checked."""
    jv = model.joint_variable_map
    if jv.providers:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            values = evaluate(jv)
    else:
        values = evaluate(jv)
    check_joint_values(model, values[0], q)
    return values


def check_joint_values(model, f: NDArray[np.float64], q: NDArray[np.float64]) -> None:
    """Raise ConfigurationError naming the first joint variable of ``f`` (at states ``q``) that is not finite."""
    if not all_finite(f):
        where = np.argwhere(~np.isfinite(f))[0]
        raise ConfigurationError(
            f"joint variable `{model.joints[where[-1]]}` is not finite at q = {q[tuple(where[:-1])].tolist()}"
        )
