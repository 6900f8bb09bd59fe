"""Field checks of the model builder: each validates one value, appends a message naming the field
to ``problems`` when it is wrong, and returns a usable stand-in so that checking can go on and
report every problem at once."""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Iterable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from mbkron.core.lazy import LazyModule, is_sympy_expression
from mbkron.core.errors import ModelWarning
from mbkron.multibody.jointvars import CoordinateFunction, Linear

__all__ = ["ORTHONORMAL_TOLERANCE", "INERTIA_TOLERANCE", "rigid_transform", "check_number", "check_array",
           "check_vector", "check_unit", "check_offset", "check_inertia", "check_variable", "as_linear",
           "TRIANGLE_TOLERANCE", "triangle_violation", "warn_unphysical_inertias"]

# sympy (~0.2 s of CPU to import): imported by the first formula, not by reading numbers and coordinate names
# (mbkron.core.lazy)
sympy = LazyModule("sympy")

ORTHONORMAL_TOLERANCE = 1e-9
"""Largest ``|RᵀR − I|`` accepted for the rotation of an offset."""
INERTIA_TOLERANCE = 1e-12
"""Largest relative asymmetry accepted for an inertia tensor."""
TRIANGLE_TOLERANCE = 1e-9
"""Largest ``I₃ − (I₁ + I₂)``, relative to ``I₃``, taken as round-off rather than a violation of the
triangle inequality (a thin rod or a flat plate lies on the boundary, ``I₁ + I₂ = I₃``)."""


def rigid_transform(rotation: ArrayLike | None = None, translation: ArrayLike | None = None) -> np.ndarray:
    """A 4×4 homogeneous transform ``[[R, p], [0, 1]]``.

    Parameters
    ----------
    rotation : array_like, shape (3, 3), optional
        Rotation matrix (identity by default).
    translation : array_like, shape (3,), optional
        Translation (zero by default).
    """
    out = np.eye(4)
    if rotation is not None:
        out[:3, :3] = rotation
    if translation is not None:
        out[:3, 3] = translation
    return out


def check_number(value, label: str, problems: list[str]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        problems.append(f"{label} must be a number, got {value!r}")
        return None
    if not math.isfinite(value):
        problems.append(f"{label} must be finite, got {value}")
        return None
    return float(value)


def check_array(value, shape: tuple[int, ...], label: str, problems: list[str]) -> np.ndarray | None:
    try:
        array = np.array(value, dtype=float)
    except (TypeError, ValueError):
        problems.append(f"{label} must be numbers of shape {shape}, got {value!r}")
        return None
    if array.shape != shape:
        problems.append(f"{label} must have shape {shape}, got shape {array.shape}")
        return None
    if not np.all(np.isfinite(array)):
        problems.append(f"{label} must be finite, got {array.tolist()}")
        return None
    return array


def check_vector(value, label: str, problems: list[str]) -> np.ndarray:
    array = check_array(value, (3,), label, problems)
    return array if array is not None else np.zeros(3)


def check_unit(value, label: str, problems: list[str]) -> np.ndarray:
    array = check_array(value, (3,), label, problems)
    if array is None:
        return np.array([0.0, 0.0, 1.0])
    largest = np.abs(array).max()
    if largest < 1e-12:
        problems.append(f"{label} must be a non-zero vector (it is normalised), got {array.tolist()}")
        return np.array([0.0, 0.0, 1.0])
    scaled = array / largest  # no overflow in the norm for huge components
    return scaled / np.linalg.norm(scaled)


def check_offset(value, where: str, problems: list[str]) -> np.ndarray:
    if value is None:
        return np.eye(4)
    array = np.asarray(value, dtype=object)
    if array.shape == (3,):
        translation = check_array(value, (3,), f"{where}: `offset`", problems)
        return rigid_transform(translation=translation) if translation is not None else np.eye(4)
    matrix = check_array(value, (4, 4), f"{where}: `offset` (a 4×4 transform or a translation of shape (3,))", problems)
    if matrix is None:
        return np.eye(4)
    R = matrix[:3, :3]
    error = np.abs(R.T @ R - np.eye(3)).max()
    if error > ORTHONORMAL_TOLERANCE or np.linalg.det(R) <= 0:
        problems.append(
            f"{where}: the rotation block of `offset` must be orthonormal with determinant +1; "
            f"max |RᵀR − I| = {error:.3g}, det = {np.linalg.det(R):.6g}"
        )
    if np.abs(matrix[3] - [0, 0, 0, 1]).max() > 0:
        problems.append(f"{where}: the last row of `offset` must be (0, 0, 0, 1), got {matrix[3].tolist()}")
    return matrix


def check_inertia(value, where: str, problems: list[str]) -> np.ndarray:
    if value is None:
        return np.zeros((3, 3))
    label = f"{where}: `inertia`"
    if np.shape(value) == (3,):
        principal = check_array(value, (3,), label, problems)
        value = np.diag(principal) if principal is not None else np.zeros((3, 3))
    matrix = check_array(value, (3, 3), f"{label} (kg·m², about the centre of mass)", problems)
    if matrix is None:
        return np.zeros((3, 3))
    scale = max(np.abs(matrix).max(), 1e-300)
    if np.abs(matrix - matrix.T).max() > INERTIA_TOLERANCE * scale:
        problems.append(f"{label} must be symmetric, got {matrix.tolist()}")
        return np.zeros((3, 3))
    eigenvalues = np.linalg.eigvalsh(matrix)
    if eigenvalues.min() < -INERTIA_TOLERANCE * scale:
        problems.append(
            f"{label} must be symmetric positive semi-definite; eigenvalues are "
            f"({', '.join(f'{e:.6g}' for e in eigenvalues)})"
        )
    return matrix


def triangle_violation(inertia: np.ndarray) -> tuple[np.ndarray, float]:
    """The principal moments ``I₁ ≤ I₂ ≤ I₃`` of a symmetric inertia tensor and by how much they violate
    the triangle inequality: ``I₃ − (I₁ + I₂)`` when that exceeds :data:`TRIANGLE_TOLERANCE` ``· I₃``,
    else 0.

    The principal moments of a rigid body satisfy ``I₁ + I₂ ≥ I₃`` (``I₁ + I₂ − I₃ = 2 ∫ z² dm``
    along the third principal axis), so a violation means that no mass distribution has this tensor.
    """
    moments = np.linalg.eigvalsh(inertia)
    excess = float(moments[2] - moments[0] - moments[1])
    return moments, (excess if excess > TRIANGLE_TOLERANCE * abs(moments[2]) else 0.0)


def warn_unphysical_inertias(bodies: Iterable, where: str) -> None:
    """A :class:`~mbkron.core.errors.ModelWarning` for each body (``name``, ``inertia``) whose principal
    moments violate the triangle inequality (:func:`triangle_violation`); ``where`` names the file or
    the model. The model stays usable: ``M(q)`` is still symmetric positive semi-definite (each body's
    term is ``Jᵀ diag(I, m) J`` with ``I`` positive semi-definite), only the body is not physical."""
    for body in bodies:
        moments, excess = triangle_violation(body.inertia)
        if excess:
            warnings.warn(ModelWarning(
                f"{where}: body `{body.name}`: the principal moments of `inertia` "
                f"({', '.join(f'{m:.6g}' for m in moments)}) kg·m² violate the triangle inequality "
                f"I₁ + I₂ ≥ I₃ by {excess:.3g} kg·m² (I₃ − I₁ − I₂): no rigid body has them; the dynamics "
                f"stays well defined (M positive semi-definite), but the body is not physical"), stacklevel=3)


def check_variable(variable, coordinate_names: set[str], where: str, problems: list[str]) -> None:
    allowed = _ExpectedNames(coordinate_names)
    if variable is None:
        problems.append(f"{where}: `variable` is required (a coordinate name, Linear or sympy expression)")
    elif isinstance(variable, str):
        if variable not in coordinate_names:
            problems.append(f"{where}: `variable` names unknown coordinate `{variable}`; expected one of: {allowed}")
    elif isinstance(variable, Linear):
        if not isinstance(variable.coefficients, Mapping):
            problems.append(f"{where}: `variable` Linear coefficients must map coordinate names to numbers")
            return
        for name, coefficient in variable.coefficients.items():
            if name not in coordinate_names:
                problems.append(f"{where}: `variable` names unknown coordinate `{name}`; expected one of: {allowed}")
            check_number(coefficient, f"{where}: `variable` coefficient of `{name}`", problems)
        check_number(variable.constant, f"{where}: `variable` constant", problems)
    elif is_sympy_expression(variable):
        unknown = sorted(s.name for s in variable.free_symbols if s.name not in coordinate_names)
        if unknown:
            problems.append(
                f"{where}: `variable` uses unknown symbols {', '.join(unknown)}; expected coordinates: {allowed}"
            )
        if variable.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            problems.append(f"{where}: `variable` is not finite: {variable}")
    elif isinstance(variable, CoordinateFunction):
        if variable.coordinate not in coordinate_names:
            problems.append(
                f"{where}: `variable` is a function of unknown coordinate `{variable.coordinate}`; expected one of: {allowed}"
            )
    elif isinstance(variable, bool) or not isinstance(variable, (int, float)):
        problems.append(
            f"{where}: `variable` must be a coordinate name, Linear, a sympy expression or a number, got {variable!r}"
        )
    elif not math.isfinite(variable):
        problems.append(f"{where}: `variable` must be finite, got {variable}")


class _ExpectedNames:
    """The coordinate names a message lists, sorted only when a message is written (not per checked body)."""

    def __init__(self, names: set[str]):
        self.names = names

    def __str__(self) -> str:
        return ", ".join(sorted(self.names)) or "(none)"


def as_linear(expr: sympy.Expr, symbols: Collection[sympy.Symbol]) -> Linear | None:
    """``expr`` as a :class:`Linear` map when it is affine in ``symbols`` with number coefficients.

    Only explicit numbers are converted: a constant sympy expression such as ``sin(exp(exp(20)))``
    is left to numeric evaluation (where it is simply non-finite) instead of being evaluated by
    sympy, which could take forever. The work is that of the expression's own symbols (give
    ``symbols`` as a set when there are many).
    """
    used = sorted((s for s in expr.free_symbols if s in symbols), key=lambda s: s.name)
    coefficients = {}
    for s in used:
        derivative = sympy.diff(expr, s)
        if not derivative.is_Number:
            return None
        if derivative != 0:
            coefficients[s.name] = float(derivative)
    constant = expr.subs({s: 0 for s in used})
    if not constant.is_Number:
        return None
    return Linear(coefficients, float(constant))
