"""Elementary functions for complex-step differentiation in the vectorised muscle-path code.

For an analytic ``f`` and a tiny ``h`` (≈ 1e-30), ``f(x + i h e_k) = f(x) + i h ∂f/∂x_k + O(h²)``: the
imaginary part divided by ``h`` is the derivative, exact to round-off (no cancellation, unlike
differences). The wrap solvers of the vectorised path evaluation (:meth:`mbkron.muscles.paths.MuscleSet.geometry`)
take their Newton Jacobians by complex steps through the path code. numpy's ``arctan2`` and ``hypot`` do not take complex arguments and
``np.linalg.norm`` and ``np.abs`` conjugate (``|z|``, not analytic), so the path code uses these
functions instead. Each returns the numpy result unchanged (bit for bit) for real arguments; for
complex ones it returns ``f(Re x) + i f'(Re x) Im x``, the first-order expansion, which is the complex
step's result to round-off as long as the imaginary parts are infinitesimal (``|Im x| ≲ 1e-20 |x|``;
the neglected terms are of order ``(Im x)²``). Every decision of the path code (whether a wrap
engages, its side, which segment it wraps, the sweeps' convergence, …) compares real parts.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["angle_mod", "arccos", "arctan2", "hypot", "norm"]


def _complex(*values) -> bool:
    return any(np.iscomplexobj(v) for v in values)


def arccos(x: NDArray) -> NDArray:
    """``arccos x`` (``arccos(Re x) − i Im x / √(1 − (Re x)²)`` for complex ``x``)."""
    if not _complex(x):
        return np.arccos(x)
    return np.arccos(x.real) - 1j * x.imag / np.sqrt(1.0 - x.real**2)


def arctan2(y: NDArray, x: NDArray) -> NDArray:
    """The angle of ``(x, y)`` (``atan2``; for complex arguments plus
    ``i (Re x Im y − Re y Im x) / (Re x² + Re y²)``)."""
    if not _complex(y, x):
        return np.arctan2(y, x)
    y, x = np.asarray(y, dtype=complex), np.asarray(x, dtype=complex)
    return np.arctan2(y.real, x.real) + 1j * (x.real * y.imag - y.real * x.imag) / (x.real**2 + y.real**2)


def hypot(x: NDArray, y: NDArray) -> NDArray:
    """``√(x² + y²)`` (``np.hypot`` for real arguments)."""
    return np.sqrt(x * x + y * y) if _complex(x, y) else np.hypot(x, y)


def norm(v: NDArray) -> NDArray:
    """The Euclidean length of the rows ``v`` (..., 3): ``√(v·v)`` without conjugation (``np.linalg.norm``
    for real ``v``)."""
    return np.sqrt(np.sum(v * v, axis=-1)) if _complex(v) else np.linalg.norm(v, axis=-1)


def angle_mod(x: NDArray) -> NDArray:
    """``x mod 2π`` (the real part reduced, the imaginary part kept)."""
    if not _complex(x):
        return np.mod(x, 2 * np.pi)
    return np.mod(x.real, 2 * np.pi) + 1j * x.imag
