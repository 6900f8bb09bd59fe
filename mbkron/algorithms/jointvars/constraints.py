"""Constraint systems ``g(f, q) = 0`` that tie joint variables to the coordinates (Eq. 100).

Section 3-3 of the dissertation: when joint variables ``f`` cannot be written explicitly in the
generalized coordinates ``q`` they are the solution of algebraic constraints ``g(f, q) = 0``
(Eq. 100; the seed writes ``g_i(q)`` with the dependence on ``f`` implied). A constraint group
solves ``m`` joint variables ``u`` (the *unknowns*) from ``m`` equations that may also use the
other, explicit joint variables ``f_e(q)`` and the coordinates themselves. Its *inputs* are

    p = (f_e, q),

so that ``g = g(u, p)``. This module describes such systems and evaluates ``g`` with exact first
and second partial derivatives with respect to ``u`` and ``p``; :mod:`mbkron.algorithms.jointvars.solvers`
solves them and applies the chain rule through ``p(q)``.

Two kinds of system:

- :class:`SymbolicConstraints` (here) -- equations written as sympy expressions or as strings
  (parsed by the whitelist parser :func:`mbkron.expressions.parser.parse_expression`, never
  ``eval``), in joint names, coordinate names and numeric parameters, the way the seed writes
  Eq. 121, 123 and 199. Derivatives are symbolic, compiled once by
  :mod:`mbkron.expressions.codegen`.
- :class:`mbkron.algorithms.jointvars.loop_closures.LoopClosures` -- equations generated from
  :class:`~mbkron.algorithms.jointvars.loop_closures.LoopClosure` declarations ("point P on body a coincides
  with point Q on body b", plus orientation equations in space), evaluated with the tree
  kinematics (in the compiled step by the library's closure callbacks, :mod:`mbkron.algorithms.jointvars.closure_kernels`).

A :class:`ConstraintSystem` is a declaration; :meth:`ConstraintSystem.bind` resolves its names
against a model (a :class:`ConstraintContext`) and returns the evaluable
:class:`BoundConstraints`. The model builder does this
(:meth:`mbkron.ModelBuilder.add_constraints`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from mbkron.core.lazy import LazyModule
from mbkron.core.errors import ModelError
from mbkron.expressions import ExpressionError
from mbkron.algorithms.jointvars.periods import input_period
from mbkron.multibody import tree as tree_description

__all__ = [
    "ConstraintContext",
    "ConstraintExpressions",
    "BoundConstraints",
    "ConstraintSystem",
    "SymbolicConstraints",
]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")
codegen = LazyModule("mbkron.expressions.codegen")
_parser = LazyModule("mbkron.expressions.parser")


@dataclass(frozen=True, eq=False)
class ConstraintContext:
    """What a constraint system needs to know about the model it is bound to.

    Attributes
    ----------
    coordinates : tuple of str
        Generalized-coordinate names, in the order of ``q``.
    joints : tuple of str
        Joint-variable names (the moving bodies' names), in the order of ``f``.
    unknowns : tuple of str
        The joint variables this group solves, in the group's order.
    tree : KinematicTree
        The model's tree with the joint variables as its coordinates (``nq = nj``).
    body_index : mapping of str to int
        Body name → body index.
    """

    coordinates: tuple[str, ...]
    joints: tuple[str, ...]
    unknowns: tuple[str, ...]
    tree: tree_description.KinematicTree
    body_index: Mapping[str, int]


class ConstraintExpressions(NamedTuple):
    """A constraint group's ``g`` and exact derivatives as sympy expressions of ``(u, p)``.

    Attributes
    ----------
    symbols : tuple of sympy.Symbol
        The unknowns ``u`` followed by the inputs ``p``: the arguments of every expression.
    first : tuple of sympy.Expr
        ``g``, ``∂g/∂u``, ``∂g/∂p`` flattened in C order (what :meth:`BoundConstraints.first`
        returns).
    second : tuple of sympy.Expr
        ``∂g/∂u``, ``∂g/∂p``, ``∂²g/∂u²``, ``∂²g/∂u∂p``, ``∂²g/∂p²`` flattened in C order (what
        :meth:`BoundConstraints.second` returns).
    """

    symbols: tuple[sympy.Symbol, ...]
    first: tuple[sympy.Expr, ...]
    second: tuple[sympy.Expr, ...]


def expressions_from_derivatives(
    symbols: Sequence[sympy.Symbol], g: NDArray[np.object_], g_x: NDArray[np.object_], g_xx: NDArray[np.object_]
) -> ConstraintExpressions:
    """Lay out ``g`` and its derivatives with respect to ``x = (u, p)`` as :class:`ConstraintExpressions`.

    The one place that knows the layout of :meth:`BoundConstraints.first` and
    :meth:`BoundConstraints.second` as expressions (:func:`derive_expressions` differentiates with sympy);
    :mod:`mbkron.algorithms.jointvars.closure_kernels` writes the same layout for loop closures.

    Parameters
    ----------
    symbols : sequence of sympy.Symbol
        ``m`` unknowns then the inputs: ``x``.
    g : ndarray of sympy.Expr, shape (m,)
    g_x : ndarray of sympy.Expr, shape (m, len(x))
        ``∂g_i/∂x_k``.
    g_xx : ndarray of sympy.Expr, shape (m, len(x), len(x))
        ``∂²g_i/∂x_k∂x_l``.

    Returns
    -------
    ConstraintExpressions
    """
    m = len(g)
    g_u, g_p = g_x[:, :m], g_x[:, m:]
    blocks = (g_u, g_p, g_xx[:, :m, :m], g_xx[:, :m, m:], g_xx[:, m:, m:])
    return ConstraintExpressions(
        tuple(symbols),
        tuple(np.concatenate([g, g_u.ravel(), g_p.ravel()])),
        tuple(np.concatenate([a.ravel() for a in blocks])),
    )


def derive_expressions(
    g: Sequence[sympy.Expr], unknowns: Sequence[sympy.Symbol], inputs: Sequence[sympy.Symbol]
) -> ConstraintExpressions:
    """Differentiate the residuals ``g(u, p)`` symbolically into :class:`ConstraintExpressions`.

    Parameters
    ----------
    g : sequence of sympy.Expr
        The residuals, one per equation.
    unknowns, inputs : sequence of sympy.Symbol
        ``u`` and ``p``; ``g`` may use no other symbol.

    Returns
    -------
    ConstraintExpressions
    """
    residuals = np.empty(len(g), dtype=object)
    residuals[:] = list(g)
    symbols = list(unknowns) + list(inputs)
    g_x = _jacobian(residuals, symbols)
    g_xx = np.empty(g_x.shape + (len(symbols),), dtype=object)
    for (i, k), first in np.ndenumerate(g_x):
        for l in range(k, len(symbols)):
            g_xx[i, k, l] = g_xx[i, l, k] = sympy.diff(first, symbols[l])
    return expressions_from_derivatives(symbols, residuals, g_x, g_xx)


class BoundConstraints(ABC):
    """A constraint system resolved against a model: ``g(u, p)`` with exact partial derivatives.

    ``u`` holds the ``m`` unknowns (rows :attr:`unknown_rows` of ``f``), ``p = (f_e, q)`` the
    explicit joint variables (rows :attr:`explicit_rows` of ``f``) followed by all coordinates.
    The evaluation methods take one state: ``u`` of shape ``(m,)`` and ``p`` of shape ``(np,)``.

    Attributes
    ----------
    unknown_rows, explicit_rows : ndarray of int
    nq : int
        Number of coordinates (the last ``nq`` entries of ``p``).
    """

    def __init__(self, unknown_rows: Sequence[int], explicit_rows: Sequence[int], nq: int):
        self.unknown_rows = np.asarray(unknown_rows, dtype=np.intp)
        self.explicit_rows = np.asarray(explicit_rows, dtype=np.intp)
        self.nq = nq

    @property
    def size(self) -> int:
        """Number of equations (and of unknowns)."""
        return self.unknown_rows.size

    @property
    def n_inputs(self) -> int:
        """Length of ``p``."""
        return self.explicit_rows.size + self.nq

    def expressions(self) -> ConstraintExpressions | None:
        """``g`` and its derivatives as expressions, for the compiled step
        (:mod:`mbkron.algorithms.jointvars.kernels`); None when the system has no expression form.

        Systems that must derive the expressions first do so on the first call (when the compiled
        step is built), not when they are bound.
        """
        return None

    def variable_periods(self) -> list[float | None] | None:
        """The period of ``g`` in each variable of ``x = (u, p)`` at fixed others: ``inf`` where ``g`` does not
        depend on it, None where it is not proved periodic; None when nothing is known. By default from
        :meth:`expressions` (:func:`mbkron.algorithms.jointvars.periods.input_period`)."""
        expressions = self.expressions()
        if expressions is None:
            return None
        residuals = expressions.first[: self.size]
        return [input_period(residuals, symbol) for symbol in expressions.symbols]

    def kernel_data(self) -> NDArray[np.float64] | None:
        """The system described for library callbacks of :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE`
        (loop closures: :func:`mbkron.algorithms.jointvars.closure_kernels.pack`), which the compiled step then calls instead of
        generating code from :meth:`expressions`; None for systems that have none."""
        return None

    def third(self, u: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """First, second and third partial derivatives over all of ``x = (u, p)``, for the derivatives of the
        dynamics (issue 30: the third derivatives of the joint variables, by one more implicit differentiation).

        Returns
        -------
        g_x : ndarray, shape (m, n_x)
        g_xx : ndarray, shape (m, n_x, n_x)
        g_xxx : ndarray, shape (m, n_x, n_x, n_x)

        Raises
        ------
        NotImplementedError
            For systems without third derivatives (constraints given as Python functions).
        """
        raise NotImplementedError(f"third derivatives of constraints given as {type(self).__name__}")

    @abstractmethod
    def first(self, u: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray]:
        """Residual and first partial derivatives, for Newton's method.

        Returns
        -------
        g : ndarray, shape (m,)
        g_u : ndarray, shape (m, m)
            ``∂g_i/∂u_j``: column ``j`` is the seed's ``ḡ_j`` (Eq. 104).
        g_p : ndarray, shape (m, np)
        """

    @abstractmethod
    def second(self, u: NDArray, p: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray]:
        """First and second partial derivatives.

        Returns
        -------
        g_u : ndarray, shape (m, m)
        g_p : ndarray, shape (m, np)
        g_uu : ndarray, shape (m, m, m)
            ``∂²g_i/∂u_j∂u_k``.
        g_up : ndarray, shape (m, m, np)
            ``∂²g_i/∂u_j∂p_a``.
        g_pp : ndarray, shape (m, np, np)
        """


class ConstraintSystem(ABC):
    """A declared system of constraint equations; bind it to a model to evaluate it."""

    @property
    @abstractmethod
    def size(self) -> int:
        """Number of equations."""

    @abstractmethod
    def bind(self, context: ConstraintContext) -> BoundConstraints:
        """Resolve names against a model.

        Raises
        ------
        ModelError
            Listing every problem (unknown names, joints that do not enter the equations, ...).
        """


# ---------------------------------------------------------------------- symbolic systems
def _compile(expressions: NDArray[np.object_], symbols: Sequence[sympy.Symbol]) -> Callable[[list], NDArray]:
    """Compile an array of sympy expressions once into a fast one-state function.

    The function is :func:`mbkron.expressions.codegen.scalar_function`'s ``f(x, out)``, run by
    Python: it uses the ``math`` module (one state is a list of floats, for which ``math`` is an
    order of magnitude faster than numpy, and an undefined value raises ``ValueError``,
    ``OverflowError`` or ``ZeroDivisionError``, which the solver reports) and writes only the
    non-zero entries into a zero array of the expressions' shape.
    """
    shape = expressions.shape
    compiled = codegen.scalar_function(symbols, list(expressions.ravel()), name="constraints")

    def evaluate(values: list) -> NDArray:
        out = np.zeros(expressions.size)
        compiled(values, out)
        return out.reshape(shape)

    return evaluate


def _jacobian(expressions: NDArray[np.object_], symbols: Sequence[sympy.Symbol]) -> NDArray[np.object_]:
    """``∂e/∂s`` appended as a last axis."""
    out = np.empty(expressions.shape + (len(symbols),), dtype=object)
    for index, e in np.ndenumerate(expressions):
        for k, s in enumerate(symbols):
            out[index + (k,)] = sympy.diff(e, s)
    return out


class _BoundSymbolic(BoundConstraints):
    def __init__(self, g: NDArray[np.object_], unknowns, inputs, unknown_rows, explicit_rows, nq):
        super().__init__(unknown_rows, explicit_rows, nq)
        self._expressions = derive_expressions(g, unknowns, inputs)
        self._compile()
        m, n = len(unknowns), len(inputs)
        shapes = ((m, m), (m, n), (m, m, m), (m, m, n), (m, n, n))
        ends = np.cumsum([int(np.prod(s)) for s in shapes])
        self._blocks = tuple((slice(end - int(np.prod(s)), end), s) for end, s in zip(ends, shapes))

    def _compile(self) -> None:
        """The residuals and their derivatives as Python functions of ``[*u, *p]`` (made again where unpickled)."""
        symbols = self._expressions.symbols
        self._first = _compile(np.array(self._expressions.first, dtype=object), symbols)
        self._second = _compile(np.array(self._expressions.second, dtype=object), symbols)
        self._third = None  # derived by the first call of third(): the dynamics' derivatives alone need it

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_first"], state["_second"], state["_third"]
        return state

    def third(self, u, p):
        """:meth:`BoundConstraints.third`: the residuals differentiated three times by sympy and compiled, on the
        first call (a model's evaluations never need them; deriving them costs ~10 ms per entry of ``g_xxx``)."""
        if self._third is None:
            symbols = self._expressions.symbols
            m, n_x = self.size, len(symbols)
            g = np.array(self._expressions.first[:m], dtype=object)
            g_x = _jacobian(g, symbols)
            g_xx, g_xxx = _jacobian(g_x, symbols), np.empty((m, n_x, n_x, n_x), dtype=object)
            for i, k, l, t in np.ndindex(g_xxx.shape):  # symmetric: each distinct entry derived once
                key = tuple(sorted((k, l, t)))
                g_xxx[i, k, l, t] = (sympy.diff(g_xx[i, key[0], key[1]], symbols[key[2]]) if key == (k, l, t)
                                     else g_xxx[(i, *key)])
            self._third = _compile(np.concatenate([g_x.ravel(), g_xx.ravel(), g_xxx.ravel()]), symbols)
        values, m, n_x = self._third([*u, *p]), self.size, self.size + self.n_inputs
        return (values[:m * n_x].reshape(m, n_x), values[m * n_x:m * n_x * (1 + n_x)].reshape(m, n_x, n_x),
                values[m * n_x * (1 + n_x):].reshape(m, n_x, n_x, n_x))

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._compile()

    def expressions(self) -> ConstraintExpressions:
        return self._expressions

    def first(self, u, p):
        values = self._first([*u, *p])
        m = self.size
        return values[:m], values[m : m + m * m].reshape(m, m), values[m + m * m :].reshape(m, -1)

    def second(self, u, p):
        values = self._second([*u, *p])
        return tuple(values[block].reshape(shape) for block, shape in self._blocks)


class SymbolicConstraints(ConstraintSystem):
    """Constraint equations ``g_i = 0`` written as expressions (Eq. 100, 121, 123, 199).

    Each equation is a sympy expression or a string in the names of joint variables (the moving
    bodies' names), coordinates and the given numeric parameters. Strings are parsed by the
    whitelist parser :func:`mbkron.expressions.parser.parse_expression`; nothing is evaluated. ``∂g``
    and ``∂²g`` with respect to the unknowns and the inputs are derived symbolically and compiled
    once, when the system is bound to a model.

    Parameters
    ----------
    equations : sequence of str or sympy.Expr
        The left-hand sides ``g_i`` (the equations are ``g_i = 0``).
    parameters : mapping of str to float, optional
        Named constants used in the equations.

    Examples
    --------
    The four-bar loop of Eq. 121:

    >>> four_bar = SymbolicConstraints(
    ...     ["l1*sin(crank) + lcm2*sin(crank + coupler) - q",
    ...      "(l2 - lcm2)*sin(crank + coupler) + l3*sin(crank + coupler + rocker) + q",
    ...      "l1*cos(crank) + l2*cos(crank + coupler) + l3*cos(crank + coupler + rocker) - l0"],
    ...     parameters=dict(l0=4.0, l1=1.0, l2=4.0, l3=3.0, lcm2=2.0))
    >>> four_bar.size
    3
    """

    def __init__(self, equations: Sequence[str | sympy.Expr], parameters: Mapping[str, float] | None = None):
        if isinstance(equations, (str, sympy.Basic)):
            equations = [equations]
        self.equations = tuple(equations)
        self.parameters = dict(parameters or {})

    @property
    def size(self) -> int:
        return len(self.equations)

    def bind(self, context: ConstraintContext) -> BoundConstraints:
        problems: list[str] = []
        names = list(context.joints) + list(context.coordinates)
        parameters: dict[str, float] = {}
        for name, value in self.parameters.items():
            if name in names:
                problems.append(f"parameter `{name}` has the name of a joint variable or coordinate")
            elif isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value):
                problems.append(f"parameter `{name}` must be a finite number, got {value!r}")
            else:
                parameters[name] = float(value)
        allowed = names + list(parameters)
        expressions = []
        for k, equation in enumerate(self.equations, start=1):
            where = f"equation {k}"
            if isinstance(equation, str):
                try:
                    equation = _parser.parse_expression(equation, [n for n in allowed if n.isidentifier()])
                except (ExpressionError, TypeError, ValueError) as error:
                    problems.append(f"{where}: {error}")
                    continue
            elif not isinstance(equation, sympy.Expr):
                problems.append(f"{where} must be a string or a sympy expression, got {type(equation).__name__}")
                continue
            unknown = sorted(s.name for s in equation.free_symbols if s.name not in allowed)
            if unknown:
                problems.append(
                    f"{where} uses unknown names {', '.join(unknown)}; expected joint variables, "
                    f"coordinates or parameters: {', '.join(allowed)}"
                )
                continue
            plain = {s: sympy.Symbol(s.name) for s in equation.free_symbols}
            equation = equation.xreplace(plain).xreplace(
                {sympy.Symbol(n): sympy.Float(v) for n, v in parameters.items()}
            )
            if equation.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
                problems.append(f"{where} is not finite: {equation}")
                continue
            expressions.append(equation)
        if problems:
            raise ModelError(problems)
        used = set().union(*(e.free_symbols for e in expressions))
        used_names = {s.name for s in used}
        unknowns = [sympy.Symbol(n) for n in context.unknowns]
        for k, e in enumerate(expressions, start=1):
            if not e.free_symbols & set(unknowns):
                problems.append(f"equation {k} does not involve any solved joint variable ({', '.join(context.unknowns)})")
        for s in unknowns:
            if s not in used:
                problems.append(f"solved joint variable `{s.name}` does not appear in any equation")
        solved = set(context.unknowns)
        explicit = [n for n in context.joints if n in used_names and n not in solved]
        if problems:
            raise ModelError(problems)
        inputs = [sympy.Symbol(n) for n in explicit] + [sympy.Symbol(n) for n in context.coordinates]
        g = np.empty(len(expressions), dtype=object)
        g[:] = expressions
        joint_rows = {n: i for i, n in enumerate(context.joints)}
        return _BoundSymbolic(
            g,
            unknowns,
            inputs,
            [joint_rows[n] for n in context.unknowns],
            [joint_rows[n] for n in explicit],
            len(context.coordinates),
        )
