"""Argument checks of :func:`mbkron.simulate`, all made before any integration.

Every function raises ``ValueError`` naming the argument in backticks and saying what was
expected; nothing here is caught by the run loop, whose failure handling covers only the
numerical work of the run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import OdeSolver

from mbkron.core.arguments import state_array
from mbkron.integrate.common import EPS

__all__ = [
    "MIN_RTOL",
    "check_initial_state",
    "check_muscle_forces",
    "check_solver",
    "check_span",
    "check_steps",
    "check_t_eval",
    "check_tolerances",
    "generalized_force",
]

MIN_RTOL = 100 * EPS
"""Smallest ``rtol`` accepted (scipy's floor: no solver controls a smaller relative error)."""


def check_initial_state(q0: ArrayLike, qd0: ArrayLike | None, nq: int) -> tuple[NDArray, NDArray]:
    """``q0`` and ``qd0`` (zero when None) as finite arrays of shape ``(nq,)``."""
    if np.iscomplexobj(q0) or np.iscomplexobj(qd0):  # the shared check's message (casting would drop them)
        state_array(q0, "q0", nq)
        state_array(qd0, "qd0", nq)
    q0 = np.asarray(q0, dtype=float)
    qd0 = np.zeros(nq) if qd0 is None else np.asarray(qd0, dtype=float)
    for label, value in (("q0", q0), ("qd0", qd0)):
        if value.shape != (nq,) or not np.all(np.isfinite(value)):
            raise ValueError(f"`{label}` must be {nq} finite numbers (one per coordinate), got {value.tolist()}")
    return q0, qd0


def check_solver(method: str | type[OdeSolver], methods: dict[str, type[OdeSolver]]) -> tuple[str, type[OdeSolver]]:
    """The solver's name and class for ``method``, a key of ``methods`` or an ``OdeSolver`` subclass."""
    solver_class = methods.get(method) if isinstance(method, str) else method
    if solver_class is None or not (isinstance(solver_class, type) and issubclass(solver_class, OdeSolver)):
        raise ValueError(f"unknown `method` {method!r}; expected one of {', '.join(methods)} or an OdeSolver subclass")
    return (method if isinstance(method, str) else solver_class.__name__), solver_class


def check_span(t_span: ArrayLike) -> tuple[float, float]:
    """``(t0, t_end)``: two finite, different times (``t_end < t0`` integrates backwards)."""
    try:
        span = np.asarray(t_span, dtype=float)
    except (TypeError, ValueError):
        span = None
    if span is None or span.shape != (2,) or not np.all(np.isfinite(span)) or span[0] == span[1]:
        raise ValueError(f"`t_span` must be two finite, different times (t0, t_end), got {t_span!r}")
    return float(span[0]), float(span[1])


def check_tolerances(rtol: float, atol: float | ArrayLike, n: int) -> tuple[float, float | NDArray]:
    """``rtol``: a finite number of at least :data:`MIN_RTOL`; ``atol``: positive, finite, scalar or ``(n,)``.

    Stricter than scipy on purpose: ``atol = 0`` would divide by zero wherever a state component
    is zero (every velocity of a run starting at rest), and an ``rtol`` below the floor would be
    raised silently by scipy (with a warning) to a value the caller did not ask for.
    """
    rtol_value = np.asarray(rtol, dtype=float)
    if rtol_value.ndim != 0 or not np.isfinite(rtol_value) or not rtol_value >= MIN_RTOL:
        raise ValueError(f"`rtol` must be a finite number of at least 100·eps = {MIN_RTOL:.3g}, got {rtol!r}")
    atol_value = np.asarray(atol, dtype=float)
    if atol_value.shape not in ((), (n,)) or not np.all(np.isfinite(atol_value)) or not np.all(atol_value > 0):
        raise ValueError(f"`atol` must be a positive finite number or {n} of them (one per state component "
                         f"q, q̇), got {np.asarray(atol).tolist()!r}")
    return float(rtol_value), (float(atol_value) if atol_value.ndim == 0 else atol_value)


def check_steps(max_step: float, first_step: float | None, t0: float, t_end: float) -> None:
    """``max_step > 0`` (``inf`` allowed) and ``first_step`` in ``(0, |t_end - t0|]`` or None."""
    if not (np.ndim(max_step) == 0 and max_step > 0):
        raise ValueError(f"`max_step` must be a positive number (inf for no limit), got {max_step!r}")
    span = abs(t_end - t0)
    if first_step is not None and not (np.ndim(first_step) == 0 and 0 < first_step <= span):
        raise ValueError(f"`first_step` must be in (0, |t_end - t0|] = (0, {span:.9g}], got {first_step!r}")


def check_t_eval(t_eval: ArrayLike | None, t0: float, t_end: float) -> NDArray | None:
    """Output times: finite, within ``t_span``, strictly monotonic in the direction of integration."""
    if t_eval is None:
        return None
    times = np.asarray(t_eval, dtype=float)
    direction = np.sign(t_end - t0)
    low, high = min(t0, t_end), max(t0, t_end)
    problem = None
    if times.ndim != 1 or times.size == 0:
        problem = f"a non-empty one-dimensional array, got shape {times.shape}"
    elif not np.all(np.isfinite(times)):
        problem = f"finite, got {times[~np.isfinite(times)].tolist()}"
    elif times.min() < low or times.max() > high:
        problem = f"within `t_span` [{low:.9g}, {high:.9g}], got values from {times.min():.9g} to {times.max():.9g}"
    elif np.any(direction * np.diff(times) <= 0):
        problem = f"strictly {'increasing' if direction > 0 else 'decreasing'} (the direction of `t_span`)"
    if problem is not None:
        raise ValueError(f"`t_eval` must be {problem}")
    return times


def generalized_force(value: ArrayLike | Callable | None, nq: int, t0: float, q0: NDArray,
                      qd0: NDArray) -> Callable[[float, NDArray, NDArray], NDArray] | None:
    """``tau`` as a callable ``(t, q, qd) -> (nq,)``; a callable is called once at the initial state to check its shape."""
    if value is None:
        return None
    if callable(value):
        shape = np.shape(value(t0, q0, qd0))
        if shape not in ((), (nq,)):
            raise ValueError(f"`tau` must return a number or an array of shape ({nq},), got shape {shape} "
                             f"at t = {t0:.9g}")
        return value
    constant = np.asarray(value, dtype=float)
    if constant.shape not in ((), (nq,)) or not np.all(np.isfinite(constant)):
        raise ValueError(f"`tau` must be a finite number, an array of shape ({nq},) or a callable (t, q, qd)")
    return lambda t, q, qd: np.broadcast_to(constant, q.shape)


def check_muscle_forces(value: ArrayLike | Callable | None, muscles: tuple[str, ...], t0: float, q0: NDArray,
                        qd0: NDArray) -> ArrayLike | Callable | None:
    """``muscle_forces`` for a model with ``muscles``: None, ``(n_mt,)`` finite, or a callable returning that shape.

    A callable is called once at the initial state to check its shape.
    """
    if value is None:
        return None
    if not muscles:
        raise ValueError("`muscle_forces` was given but the model has no muscles; leave it None")
    n_mt = len(muscles)
    expected = f"{n_mt} tensions (one per muscle: {', '.join(muscles)})"
    if callable(value):
        shape = np.shape(value(t0, q0, qd0))
        if shape != (n_mt,):
            raise ValueError(f"`muscle_forces` must return {expected}, got shape {shape} at t = {t0:.9g}")
        return value
    forces = np.asarray(value, dtype=float)
    if forces.shape != (n_mt,) or not np.all(np.isfinite(forces)):
        raise ValueError(f"`muscle_forces` must be {expected}, finite, or a callable (t, q, qd); got {forces.tolist()}")
    return forces
