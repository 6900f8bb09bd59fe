"""Time integration: TR-BDF2 and RKF45 (scipy ``OdeSolver``s) and :func:`simulate`.
"""

from mbkron.integrate.rkf45 import RKF45
from mbkron.integrate.simulate import SimulationInterrupted, SimulationResult, simulate
from mbkron.integrate.trbdf2 import TRBDF2

__all__ = ["RKF45", "TRBDF2", "SimulationInterrupted", "SimulationResult", "simulate"]
