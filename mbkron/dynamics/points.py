"""Point Jacobians for the loads evaluated in Python: ``∂p/∂q`` and ``∂ω/∂q̇`` (Eq. 44–46, 75, 180).

One compiled implementation, :mod:`mbkron.compiled.points` (by the joints' ground twists), batched over states
and points: the point forces and body torques of :mod:`mbkron.dynamics.loads`, the contact forces
(:mod:`mbkron.dynamics.contact`, :mod:`mbkron.dynamics.hunt_crossley`), the bushings
(:mod:`mbkron.dynamics.bushings`) and the measured external loads (:mod:`mbkron.analysis.external_loads`) call
:func:`jacobians`; their force values (callables of ``(t, q, q̇)``, contact laws) stay in Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mbkron.compiled.layout import batch_rows, writable
from mbkron.core.lazy import LazyModule

__all__ = ["jacobians"]

# the kernels import numba: imported by the first evaluation, not by building a model (mbkron.core.lazy)
_compiled_points = LazyModule("mbkron.compiled.points")


def jacobians(model, kin, bodies: Sequence[int], points: ArrayLike) -> NDArray[np.float64]:
    """``∂p/∂q`` of material points and ``∂ω/∂q̇`` of their bodies at the states of ``kin``, shape
    (..., n, 6, nq): rows 0–2 the point's (Eq. 44–46, 75), rows 3–5 the body's angular velocity per ``q̇``
    (Eq. 180), by :func:`mbkron.compiled.points.point_jacobians`.

    Parameters
    ----------
    model : Model
    kin : KinematicsData
        Of ``model``, order ≥ 1.
    bodies : sequence of int
        The points' bodies (``model.body_index``), n of them; −1: the ground (zero rows).
    points : array_like, shape (..., n, 3)
        The points' positions in the ground frame (broadcast over the states of ``kin``), m.
    """
    batch, nj, nq = kin.q.shape[:-1], kin.f.shape[-1], kin.q.shape[-1]
    bodies = np.array(bodies, dtype=np.int64).reshape(-1)
    n = bodies.shape[0]
    points = np.asarray(points, dtype=float)
    if points.shape[-2:] != (n, 3):
        raise ValueError(f"`points` must have shape (..., {n}, 3) for {n} bodies, got {points.shape}")
    J = _compiled_points.point_jacobians(*model.tree.kernel_arrays, writable(kin.f).reshape(-1, nj),
                                         batch_rows(kin.grad, batch, 2),
                                         bodies, batch_rows(np.broadcast_to(points, batch + (n, 3)), batch, 2))
    return J.reshape(batch + (n, 6, nq))
