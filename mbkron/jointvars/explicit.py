"""Joint variables as explicit functions of the generalized coordinates: f(q), ∇f(q), H(q).

Section 3-1 of the dissertation: every joint variable ``f_i`` is a smooth function of the
generalized coordinates ``q``; the kinematics needs its gradient ``∇f_i`` and Hessian ``H_i``.
This module holds the explicit kinds:

- :class:`Linear` -- ``f = c + Σ_k a_k q_k`` (identity maps, relative angles ``θ_i − θ_{i−1}``);
- sympy expressions -- general smooth functions with exact derivatives, lambdified once.

Joint variables solved from constraints (Eq. 100-120) plug in through the same
:class:`JointVariableProvider` interface.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import sympy
from numpy.typing import NDArray

__all__ = [
    "Linear",
    "JointVariableProvider",
    "SymbolicJointVariables",
    "JointVariables",
]


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
    joint variables it was given.
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

    def new_state(self) -> object | None:
        """Fresh caller-owned evaluation state (None: the provider keeps none)."""
        return None

    def with_backend(self, backend: str) -> JointVariableProvider:
        """The provider evaluated by ``backend`` (``"kronecker"``, ``"numpy"`` or ``"compiled"``);
        the same object when the backend makes no difference to it."""
        return self


def _lambdify_array(
    expressions: NDArray[np.object_], symbols: Sequence[sympy.Symbol]
) -> callable:
    """Compile an array of sympy expressions once into a batched numpy function.

    The returned function maps ``q`` of shape ``(..., nq)`` to an array of shape
    ``(..., *expressions.shape)``; constant entries are broadcast.
    """
    shape = expressions.shape
    flat = list(expressions.ravel())
    varying = [i for i, e in enumerate(flat) if e.free_symbols]
    constants = np.array([0.0 if e.free_symbols else float(e) for e in flat])
    compiled = sympy.lambdify([list(symbols)], [flat[i] for i in varying], modules="numpy", cse=True)

    def evaluate(q: NDArray[np.float64]) -> NDArray[np.float64]:
        batch = q.shape[:-1]
        if not batch:  # one state: a list of floats
            out = constants.copy()
            if varying:
                out[varying] = compiled(q)
            return out.reshape(shape)
        out = np.broadcast_to(constants, batch + constants.shape).copy()
        if varying:
            out[..., varying] = np.stack(np.broadcast_arrays(*compiled(np.moveaxis(q, -1, 0))), axis=-1)
        return out.reshape(batch + shape)

    return evaluate


def fold_constants(expr: sympy.Expr) -> sympy.Expr:
    """Replace every symbol-free subexpression by its double-precision value.

    sympy evaluates such constants in arbitrary precision when it orders or prints terms, which for
    a constant like ``sin(exp(exp(20)))`` never finishes; numpy evaluates them at once (here to
    ``nan``, which then makes the joint variable non-finite and is reported).
    """
    if expr.is_Number or expr.is_Symbol:
        return expr
    if not expr.free_symbols:
        with np.errstate(all="ignore"):
            value = complex(sympy.lambdify([], expr, modules="numpy")())
        return sympy.Float(value.real) if value.imag == 0 and np.isfinite(value.real) else sympy.nan
    return expr.func(*(fold_constants(argument) for argument in expr.args))


def _as_sympy(expression: object) -> sympy.Expr:
    """A sympy expression or a real number as sympy; strings are refused (never sympified)."""
    if isinstance(expression, sympy.Expr):
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

    The expressions, their gradients and Hessians are differentiated symbolically and
    lambdified once, at construction; evaluation never calls sympy.

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
        values = np.empty(len(exprs), dtype=object)
        values[:] = exprs
        grads = np.empty((len(exprs), len(coordinates)), dtype=object)
        hessians = np.empty((len(exprs), len(coordinates), len(coordinates)), dtype=object)
        for i, e in enumerate(exprs):
            for k, qk in enumerate(coordinates):
                grads[i, k] = sympy.diff(e, qk)
                for m, qm in enumerate(coordinates):
                    hessians[i, k, m] = sympy.diff(grads[i, k], qm)
        self._value = _lambdify_array(values, coordinates)
        self._gradient = _lambdify_array(grads, coordinates)
        self._hessian = _lambdify_array(hessians, coordinates)

    @property
    def size(self) -> int:
        return len(self.expressions)

    def evaluate(self, q, order):
        f = self._value(q)
        grad = self._gradient(q) if order >= 1 else None
        hess = self._hessian(q) if order >= 2 else None
        return f, grad, hess


@lru_cache(maxsize=64)
def _zeros(nj: int, nq: int) -> NDArray[np.float64]:
    """A read-only zero Hessian block, shared by the affine maps of that size."""
    out = np.zeros((nj, nq, nq))
    out.setflags(write=False)
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

    @property
    def size(self) -> int:
        return self.matrix.shape[0]

    def new_states(self) -> tuple:
        """Fresh evaluation states of the providers, in their order (see :class:`mbkron.Model.workspace`)."""
        return tuple(provider.new_state() for _, provider in self.providers)

    def with_backend(self, backend: str) -> JointVariables:
        """The same joint variables with every provider evaluated by ``backend``."""
        providers = tuple((rows, provider.with_backend(backend)) for rows, provider in self.providers)
        return JointVariables(self.matrix, self.constant, providers)

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
        nj, nq = self.matrix.shape
        batch = q.shape[:-1]
        f = q @ self.matrix.T + self.constant
        grad = hess = None
        if order >= 1:
            grad = np.broadcast_to(self.matrix, batch + (nj, nq)) if batch else self.matrix
        if order >= 2:
            if self.providers:
                hess = np.zeros(batch + (nj, nq, nq))
            else:
                hess = np.broadcast_to(_zeros(nj, nq), batch + (nj, nq, nq)) if batch else _zeros(nj, nq)
        if self.providers and grad is not None:
            grad = grad.copy()
        for k, (rows, provider) in enumerate(self.providers):
            state = None if states is None else states[k]
            pf, pgrad, phess = provider.evaluate(q, order) if state is None else provider.evaluate(q, order, state)
            f[..., rows] = pf
            if order >= 1:
                grad[..., rows, :] = pgrad
            if order >= 2:
                hess[..., rows, :, :] = phess
        return f, grad, hess
