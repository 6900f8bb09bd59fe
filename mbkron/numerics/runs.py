"""What a run of compiled steps checks after each step, shared by the stepping kernels.

:func:`mbkron.numerics.trbdf2.trbdf2_steps` and :func:`mbkron.numerics.runge_kutta.adaptive_steps` take several
steps in one call and return to Python after any step where :func:`mbkron.simulate`'s own checks may stop the run,
so that the right-hand side is evaluated at the same states as when stepping one by one. Those checks are here,
once: a coordinate leaving its range (inside before the step, outside after it), a step shorter than a fraction of
the longest so far (the singularity screen) or of the interval still to go (the stall test).
"""

from __future__ import annotations

from mbkron.jit.common import jitable

__all__ = ["LIMITS_SIZE", "LONGEST", "SCREEN", "STALL", "may_stop"]

SCREEN, STALL, LONGEST = range(3)
"""Slots of a stepping kernel's ``limits`` array: the run returns after a step shorter than ``limits[SCREEN]`` times
the longest step so far (``limits[LONGEST]``, updated in place by :func:`may_stop`) or than ``limits[STALL]`` times
the interval still to go. Slot 3 is the kernel's own (:data:`mbkron.numerics.trbdf2.EVERY_STEP`,
:data:`mbkron.numerics.runge_kutta.UNTIL`)."""
LIMITS_SIZE = 4


@jitable
def may_stop(limits, lower, upper, nq, t, y, t_new, y_new, t_bound):  # pragma: no cover - compiled
    """Whether a check of the run may stop it after the step from ``(t, y)`` to ``(t_new, y_new)``: a coordinate
    ``y[:nq]`` inside ``[lower, upper]`` before it and outside after it, or a step shorter than ``limits[SCREEN]``
    times the longest so far (this one included: ``limits[LONGEST]`` is updated) or than ``limits[STALL]`` times
    the interval still to go to ``t_bound``."""
    size = abs(t_new - t)
    limits[LONGEST] = max(limits[LONGEST], size)
    for k in range(nq):
        if lower[k] <= y[k] <= upper[k] and not lower[k] <= y_new[k] <= upper[k]:
            return True
    return size < limits[SCREEN] * limits[LONGEST] or size < limits[STALL] * abs(t_bound - t_new)
