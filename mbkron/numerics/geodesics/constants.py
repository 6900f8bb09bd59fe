"""Constants of the wrap kernels that the surfaces' descriptions read too, without numba.

The kernels' kinds of surface (:data:`COMPILED_KINDS`, read when a model's wraps are laid out,
:class:`mbkron.algorithms.paths.wrap_paths.PathWrapping`) and the torus solver's constants (read by its kernel,
:mod:`mbkron.numerics.geodesics.torus`, and documented with the surface, :mod:`mbkron.multibody.muscles.wrap_torus`). They
live apart from the kernel modules, which import numba, so that building a model with wraps does not
import numba.
"""

from __future__ import annotations

__all__ = ["COMPILED_KINDS", "TOLERANCE", "MAX_ITERATIONS", "MAX_ANGLE_STEP", "MAX_TURNS", "STEP_CURVATURE",
           "OPENSIM_CYLINDER_LENGTH", "DEEPEST_GUESS_ARC"]

#: Surface class name → kernel kind (the wrapped-path kernel's ``wrap_kind``, :mod:`mbkron.algorithms.paths.wrapping_kernels`).
COMPILED_KINDS = {"WrapSphere": 0, "WrapCylinder": 1, "WrapEllipsoid": 2, "WrapTorus": 3}

TOLERANCE = 1e-13
"""Newton stops when the three residuals (m) are at most this."""
MAX_ITERATIONS = 40
"""Newton iterations before the solver gives up."""
MAX_ANGLE_STEP = 0.5
"""Largest Newton step of either torus angle of ``t₁`` (rad)."""
MAX_TURNS = 2.0
"""Longest arc Newton's method tries, in turns round the tube (``2π r`` each): longer paths fail."""
STEP_CURVATURE = 0.2
"""Integration step times the torus's largest normal curvature ``max(1/r, 1/(R − r))`` (at most)."""
OPENSIM_CYLINDER_LENGTH = 10000.0
"""The length of OpenSim's cylinder at the ring point (``CYL_LENGTH`` in WrapTorus.cpp)."""
DEEPEST_GUESS_ARC = 0.1
"""The last initial guess's arc (from the straight segment's deepest point in the solid), in units of ``r``."""
