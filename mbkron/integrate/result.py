"""What :func:`mbkron.simulate` returns, and the exception that carries it out of an interrupted run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = ["SimulationInterrupted", "SimulationResult"]


@dataclass
class SimulationResult:
    """A trajectory and how it was computed.

    Attributes
    ----------
    t : ndarray, shape (n,)
    q, qd, qdd : ndarray, shape (n, nq)
    joint_variables : ndarray, shape (n, nj)
        ``f(q)`` along the run.
    success : bool
        ``status >= 0`` (as scipy's ``solve_ivp``: the end, or a terminal event, was reached).
    status : int
        0: reached the end; 1: a coordinate reached the end of its range (a terminal event, see
        ``ranges`` of :func:`mbkron.simulate`); -1: stopped by a failure (see ``message``); -2:
        interrupted (``KeyboardInterrupt``; the result is carried by :class:`SimulationInterrupted`).
    message : str
    nfev, njev, nlu, n_steps : int
        Right-hand-side evaluations, Jacobian evaluations, LU factorisations, accepted steps.
    wall_time : float
        Seconds of integration, including the accelerations at the output times (the initial
        checks and a first run's kernel compilation excluded).
    settings : dict
        Method, tolerances and options, for the record.
    """

    t: NDArray[np.float64]
    q: NDArray[np.float64]
    qd: NDArray[np.float64]
    qdd: NDArray[np.float64]
    joint_variables: NDArray[np.float64]
    success: bool
    status: int
    message: str
    nfev: int
    njev: int
    nlu: int
    n_steps: int
    wall_time: float
    settings: dict = field(default_factory=dict)


class SimulationInterrupted(KeyboardInterrupt):
    """A :func:`mbkron.simulate` run stopped by a ``KeyboardInterrupt`` (Ctrl-C, SIGINT).

    A subclass of ``KeyboardInterrupt``, so loops, scripts and notebooks still stop, but what was
    computed is not lost: ``result`` holds the trajectory up to the last accepted step (every
    output row with its accelerations), with ``status = -2`` and a ``message`` saying where the
    run stopped (t and q).

    Parameters
    ----------
    result : SimulationResult
        The partial result.

    Examples
    --------
    >>> try:                                                    # doctest: +SKIP
    ...     run = mbkron.simulate(model, (0, 10), q0)
    ... except mbkron.SimulationInterrupted as interrupted:
    ...     run = interrupted.result
    """

    def __init__(self, result: SimulationResult) -> None:
        super().__init__(result.message)
        self.result = result
