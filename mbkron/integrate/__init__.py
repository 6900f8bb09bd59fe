"""Time integration: TR-BDF2 and RKF45 (scipy ``OdeSolver``s) and :func:`simulate`.
"""

from mbkron.integrate.simulate import SimulationResult, simulate
from mbkron.integrate.solvers import RKF45, TRBDF2

__all__ = ["RKF45", "SimulationResult", "TRBDF2", "simulate"]
