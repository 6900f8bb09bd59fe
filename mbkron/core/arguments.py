"""Checks of the public API's array arguments and results, shared by every method that takes states.

:func:`state_array` turns an argument such as ``q`` into a float array of shape ``(..., n)`` or
raises an error that names the argument in backticks, says what was expected and shows what came
(scipy's ``solve_ivp`` style); :func:`finite_result` refuses a result that is not finite with a
:class:`~mbkron.core.errors.ConfigurationError` naming the quantity and the state. Both are cheap on
the common case (one state, a float64 array of the right shape): a type test and one ``vdot`` or
``np.isfinite`` (:func:`all_finite`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.core.errors import ConfigurationError

__all__ = [
    "all_finite", "finite_evaluation", "finite_result", "named_index", "order_argument", "real_values", "state_array",
]

_FLOAT = np.dtype(np.float64)
_SHOWN = 6
"""Values shown of a long argument in a message."""


def _shown(values: NDArray) -> str:
    """At most :data:`_SHOWN` values of ``values`` for a message, with its shape when some are left out."""
    flat = np.ravel(values)
    text = ", ".join(_number(v) for v in flat[:_SHOWN].tolist())
    return f"[{text}]" if flat.size <= _SHOWN else f"[{text}, …] (shape {np.shape(values)})"


def _number(value) -> str:
    """A value for a message: ``nan``, ``inf``, ``1e+300``, ``(1+2j)`` (no ``np.float64(…)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


_BLAS_CHECK = 31
"""Largest array whose finiteness :func:`all_finite` tests by one ``vdot`` (OpenBLAS's scalar loop)."""


def all_finite(values: NDArray) -> bool:
    """Whether every element is finite (no warning on overflow).

    Up to :data:`_BLAS_CHECK` elements (one state's arguments of a small model) one ``vdot``, the quickest
    test, exact only when the sum of squares is not finite (huge but finite values); larger arrays by
    ``np.isfinite``, which never calls BLAS: OpenBLAS's vector kernels for 32 elements and more (AVX-512
    where the processor has it) pay a warm-up of about 3 µs when they run right after other work, as a
    result's check does after its kernel.
    """
    if getattr(values, "size", 0) > _BLAS_CHECK:
        return bool(np.logical_and.reduce(np.isfinite(values), axis=None))  # (the ufunc's reduce: no method wrapper)
    return math.isfinite(np.vdot(values, values).real) or bool(np.isfinite(values).all())


def state_array(value: ArrayLike, name: str, size: int, meaning: str = "one value per coordinate") -> NDArray:
    """``value`` as an array of finite numbers of shape ``(..., size)`` with at least one row.

    Parameters
    ----------
    value : array_like
        The argument as given.
    name : str
        Its name, shown in backticks in messages (``"q"``, ``"qd"``, ``"tau"``).
    size : int
        The length of its last axis (``nq`` for coordinates).
    meaning : str
        What the last axis holds, for messages.

    Returns
    -------
    ndarray
        ``value`` itself when it is already a float64 array of that shape; else a converted copy.

    Raises
    ------
    TypeError
        Complex values (they would lose their imaginary part), or values that are not numbers.
    ValueError
        A wrong shape or an empty batch.
    ConfigurationError
        Values that are not finite (a ValueError too: a state at which nothing can be evaluated, as the
        integrators treat the failures of a step).
    """
    if type(value) is np.ndarray and value.dtype is _FLOAT and value.ndim and value.shape[-1] == size and value.size:
        if all_finite(value):  # the common case: no conversion
            return value
        array = value
    else:
        array = _converted(value, name, size, meaning)
    if not all_finite(array):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ConfigurationError(f"`{name}` must be finite ({meaning}), got {_number(array[tuple(bad)])} at index "
                                 f"{tuple(bad.tolist())} of {_shown(array)}")
    return array


def _converted(value, name: str, size: int, meaning: str) -> NDArray:
    """``value`` as a float array of shape (..., size) with at least one row, or the error."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged nesting
        raise ValueError(f"`{name}` must be numbers of shape (..., {size}) ({meaning}), got {_brief(value)} ({exc})") \
            from None
    if np.iscomplexobj(array):
        raise TypeError(f"`{name}` must be real ({meaning}); got complex values {_shown(array)}, whose imaginary "
                        "parts would be lost")
    if array.dtype.kind not in "biufc":
        raise TypeError(f"`{name}` must be numbers of shape (..., {size}) ({meaning}), got {_brief(value)} "
                        f"(dtype {array.dtype})")
    if array.ndim == 0 or array.shape[-1] != size:
        raise ValueError(f"`{name}` must have shape (..., {size}) ({meaning}), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"`{name}` must hold at least one state of {size} values, got an empty batch of shape "
                         f"{array.shape}")
    return array.astype(float, copy=False)


def _brief(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def order_argument(order, highest: int = 2) -> int:
    """``order`` as an int in ``0..highest`` (the highest derivative computed)."""
    try:
        value = operator.index(order)
    except TypeError:
        value = None
    if value is None or isinstance(order, bool) or not 0 <= value <= highest:
        raise ValueError(f"`order` must be an integer in 0..{highest} (the highest derivative computed), got {order!r}")
    return value


def finite_result(values, quantity: str, q: NDArray, **others: NDArray):
    """``values``, checked finite; else a ConfigurationError naming ``quantity`` and the state.

    Parameters
    ----------
    values : ndarray
        A result of shape ``batch + rest`` for states ``q`` of shape ``batch + (nq,)``.
    quantity : str
        What ``values`` is (``"mass matrix M"``), for the message.
    q : ndarray
        The coordinates evaluated.
    **others
        Further per-state arguments (``qd=…``) shown in the message.

    Raises
    ------
    ConfigurationError
        ``non-finite {quantity} at q = […]`` where an element is NaN or infinite: the first such
        state's ``q`` (and ``others``).
    """
    if all_finite(values):
        return values
    values = np.asarray(values)
    batch = np.shape(q)[:-1]
    bad = np.argwhere(~np.isfinite(values))[0]
    state = tuple(bad[:len(batch)].tolist()) if values.shape[:len(batch)] == batch else ()
    shown = ", ".join(f"{name} = {_shown(np.asarray(value)[state] if np.ndim(value) > 1 else value)}"
                      for name, value in {"q": q, **others}.items())
    where = f" (state {state})" if state else ""
    raise ConfigurationError(f"non-finite {quantity} at {shown}{where}: the model's values overflow there "
                             "(huge parameters, coordinates or speeds)")


def finite_evaluation(compute, quantity: str, q: NDArray, **others: NDArray):
    """``compute()`` with numpy's floating-point warnings silenced (none may reach the caller), its result
    checked by :func:`finite_result` (``quantity``, ``q``, ``others`` as there)."""
    with np.errstate(all="ignore"):
        values = compute()
    return finite_result(values, quantity, q, **others)


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


def named_index(indices: Mapping[str, int], name: object, kind: str) -> int:
    """``indices[name]``: the row of a named body, joint or coordinate (``kind``) of a model, or a KeyError naming
    it and listing the names there are.

    The algorithms read a model's ``body_indices``, ``joint_indices`` and ``coordinate_indices`` with it (a load
    given by the caller may name a part the model does not have).
    """
    try:
        return indices[name]
    except (KeyError, TypeError):
        raise KeyError(f"unknown {kind} `{name}`; the model has: {', '.join(indices)}") from None
