"""DOP853's stages in equal steps, compiled: the geodesics of the wrapping surfaces' kernels.

For one state: the ellipsoid's and the torus's Newton iterations (:mod:`mbkron.compiled.wrap_ellipsoid`,
:mod:`mbkron.compiled.wrap_torus`) integrate their geodesic and its derivatives with respect to the unknowns over ``τ ∈ [0, 1]`` in a number of equal
steps fixed by the surface's curvature, each with its own right-hand side.
"""

from __future__ import annotations

import numpy as np

from mbkron.compiled.common import inline_jit
from mbkron.core.tableaus import DOP853

__all__ = ["STAGES", "dop853_equal_steps"]

STAGES = 12
"""DOP853's stages (the rows of the scratch ``k`` of :func:`dop853_equal_steps`)."""

_A = np.ascontiguousarray(DOP853.A[:STAGES, :STAGES])
_B = np.ascontiguousarray(DOP853.B)


@inline_jit
def dop853_equal_steps(rate, parameters, y, steps, k, stage_y):  # pragma: no cover - compiled
    """``steps`` equal steps of DOP853 for the autonomous ``y' = rate(y, parameters, out)`` over ``τ ∈ [0, 1]``,
    ``y`` (n,) advanced in place; ``k`` (:data:`STAGES`, n) and ``stage_y`` (n,) are scratch. Compiled into each
    caller (numba's ``inline="always"``): ``rate`` is a compiled function, a different one per caller."""
    n = y.size
    h = 1.0 / steps
    for _ in range(steps):
        for stage in range(STAGES):
            for i in range(n):
                stage_y[i] = 0.0
            for j in range(stage):  # the increment Σ_j A_ij k_j (DOP853's zeros skipped)
                c = _A[stage, j]
                if c != 0.0:
                    for i in range(n):
                        stage_y[i] += c * k[j, i]
            for i in range(n):
                stage_y[i] = y[i] + h * stage_y[i]
            rate(stage_y, parameters, k[stage])
        for i in range(n):
            stage_y[i] = 0.0
        for j in range(STAGES):
            c = _B[j]
            if c != 0.0:
                for i in range(n):
                    stage_y[i] += c * k[j, i]
        for i in range(n):
            y[i] = y[i] + h * stage_y[i]
