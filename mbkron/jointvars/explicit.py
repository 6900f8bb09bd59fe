"""Joint variables as explicit functions of the generalized coordinates: f(q), ∇f(q), H(q).

Section 3-1 of the dissertation: every joint variable ``f_i`` is a smooth function of the
generalized coordinates ``q``; the kinematics needs its gradient ``∇f_i`` and Hessian ``H_i``.
This module holds the explicit kinds:

- :class:`Linear` -- ``f = c + Σ_k a_k q_k`` (identity maps, relative angles ``θ_i − θ_{i−1}``);
- sympy expressions -- general smooth functions with exact derivatives, compiled once
  (:mod:`mbkron.expressions.codegen`).

Joint variables solved from constraints (Eq. 100-120) plug in through the same
:class:`JointVariableProvider` interface. The dynamics needs of ``H`` only the convective terms
``q̇ᵀ H_i q̇`` (:meth:`JointVariables.evaluate_convective`, O(nj · nq) memory); the dense ``H`` is formed
for :meth:`JointVariables.evaluate` of order 2 only.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule, is_sympy_expression


__all__ = [
    "Linear",
    "JointVariableProvider",
    "SymbolicJointVariables",
    "JointVariables",
    "real_values",
]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
codegen = LazyModule("mbkron.expressions.codegen")


def real_values(x: object, name: str = "x") -> NDArray:
    """``x`` as an array of floats.

    Raises
    ------
    TypeError
        ``x`` is complex (casting would drop the imaginary parts; no evaluation of mbkron takes complex
        steps: derivatives are exact or checked against central differences).
    """
    if np.iscomplexobj(x):
        raise TypeError(f"`{name}` must be real, got complex values (their imaginary parts would be lost)")
    return np.asarray(x, dtype=float)


@dataclass(frozen=True)
class Linear:
    """A joint variable that is an affine function of the coordinates.

    ``f = constant + Σ coefficients[name] * q[name]``. A coordinate name given as a plain string
    to the model builder means ``Linear({name: 1.0})``.

    Parameters
    ----------
    coefficients : mapping of str to float
        Coordinate name → coefficient.
    constant : float
        The constant term.
    """

    coefficients: Mapping[str, float]
    constant: float = 0.0


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
        (:class:`~mbkron.jointvars.functions.CoordinateFunctionVariables`).

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


def _compile_array(
    expressions: NDArray[np.object_], symbols: Sequence[sympy.Symbol]
) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """Compile an array of sympy expressions once into a batched numpy function.

    The returned function maps ``q`` of shape ``(..., nq)`` to an array of shape
    ``(..., *expressions.shape)``. Constant entries (symbol-free expressions, such as the many zeros
    of a Hessian) are evaluated once, here, and broadcast; the others are computed by one function
    generated by :func:`mbkron.expressions.codegen.numpy_function`.
    """
    shape = expressions.shape
    flat = list(expressions.ravel())
    varying = [i for i, e in enumerate(flat) if e.free_symbols]
    constant = [i for i, e in enumerate(flat) if not e.free_symbols]
    constants = np.zeros(len(flat))
    with np.errstate(all="ignore"):
        constants[constant] = codegen.numpy_function([], [flat[i] for i in constant])()
    compiled = codegen.numpy_function(symbols, [flat[i] for i in varying])

    def evaluate(q: NDArray[np.float64]) -> NDArray[np.float64]:
        q = real_values(q, "q")
        batch = q.shape[:-1]
        if not batch:  # one state
            out = constants.astype(q.dtype)
            if varying:
                out[varying] = compiled(*q)
            return out.reshape(shape)
        out = np.broadcast_to(constants, batch + constants.shape).astype(q.dtype)
        if varying:
            out[..., varying] = np.stack(np.broadcast_arrays(*compiled(*np.moveaxis(q, -1, 0))), axis=-1)
        return out.reshape(batch + shape)

    return evaluate


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


class SymbolicJointVariables(JointVariableProvider):
    """Joint variables given as sympy expressions of the coordinates, with exact derivatives.

    The expressions, their gradients and Hessians are differentiated symbolically and compiled
    once, at construction (:mod:`mbkron.expressions.codegen`); evaluation never calls sympy.

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
        column = {symbol: k for k, symbol in enumerate(self.coordinates)}
        values = np.empty(len(exprs), dtype=object)
        values[:] = exprs
        # the derivatives by the coordinates an expression contains (the others are zero): memory and
        # compile time grow with the expressions, not with nq² (a 2,000-coordinate model)
        first, second = [], []
        for i, e in enumerate(exprs):
            own = sorted((column[s] for s in e.free_symbols if s in column))
            for k in own:
                derivative = sympy.diff(e, self.coordinates[k])
                first.append((i, k, derivative))
                second.extend((i, k, m, sympy.diff(derivative, self.coordinates[m])) for m in own)
        self._value = _compile_array(values, coordinates)
        self._first_index = tuple(np.array([entry[a] for entry in first], dtype=np.intp) for a in range(2))
        self._second_index = tuple(np.array([entry[a] for entry in second], dtype=np.intp) for a in range(3))
        self._first = _compile_array(_object_array([entry[2] for entry in first]), coordinates)
        self._second = _compile_array(_object_array([entry[3] for entry in second]), coordinates)

    @property
    def size(self) -> int:
        return len(self.expressions)

    def _scatter(self, q: NDArray, entries: NDArray, index: tuple, shape: tuple) -> NDArray:
        """The dense array of ``shape`` (after q's batch) whose entries at ``index`` are ``entries``."""
        out = np.zeros(q.shape[:-1] + shape, dtype=entries.dtype)
        out[(Ellipsis, *index)] = entries
        return out

    def evaluate(self, q, order):
        q = real_values(q, "q")
        f = self._value(q)
        k, nq = self.size, len(self.coordinates)
        grad = self._scatter(q, self._first(q), self._first_index, (k, nq)) if order >= 1 else None
        hess = self._scatter(q, self._second(q), self._second_index, (k, nq, nq)) if order >= 2 else None
        return f, grad, hess

    def evaluate_convective(self, q, qd, state=None):
        """Values, gradients and ``c_i = q̇ᵀ H_i q̇`` from the nonzero second derivatives only (in the
        order of the expression's coordinates, ``k`` then ``m``): O(k · nq) memory."""
        q = real_values(q, "q")
        f, grad = self._value(q), self._scatter(q, self._first(q), self._first_index, (self.size, len(self.coordinates)))
        rows, k, m = self._second_index
        terms = self._second(q) * qd[..., k] * qd[..., m]
        convective = np.zeros((self.size,) + terms.shape[:-1], dtype=terms.dtype)
        np.add.at(convective, rows, np.moveaxis(terms, -1, 0))  # entry by entry, in order
        return f, grad, np.moveaxis(convective, 0, -1)


def _object_array(expressions: list) -> NDArray[np.object_]:
    """A one-dimensional object array of sympy expressions (``np.array`` would try to unpack them)."""
    out = np.empty(len(expressions), dtype=object)
    out[:] = expressions
    return out


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

    def __post_init__(self):
        base = self.matrix
        if self.providers:
            base = np.array(self.matrix)
            base[np.concatenate([np.reshape(rows, -1) for rows, _ in self.providers])] = 0
            base.setflags(write=False)
        object.__setattr__(self, "_gradient_base", base)
        nj, nq = self.matrix.shape
        object.__setattr__(self, "_zero_hessians", np.broadcast_to(np.zeros(()), (nj, nq, nq)))

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
        return self._provided(q, order, states, *self._affine_part(q, order))

    def _provided(self, q: NDArray, order: int, states: tuple | None, f: NDArray, grad: NDArray | None,
                  hess: NDArray | None):
        """``(f, grad, hess)`` of :meth:`_affine_part` with the providers' rows filled in
        (:meth:`JointVariableProvider.fill`)."""
        for k, (rows, provider) in enumerate(self.providers):
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
        with np.errstate(invalid="ignore", over="ignore"):  # inf·0 in q @ A: a non-finite f, reported by the model
            f, grad, _ = self._affine_part(q, 1)
        convective = np.zeros(np.broadcast_shapes(q.shape[:-1], qd.shape[:-1]) + (self.size,))
        for k, (rows, provider) in enumerate(self.providers):
            state = None if states is None else states[k]
            pf, pgrad, pconvective = provider.evaluate_convective(q, qd, state)
            f[..., rows] = pf
            grad[..., rows, :] = pgrad
            convective[..., rows] = pconvective
        return f, grad, convective
