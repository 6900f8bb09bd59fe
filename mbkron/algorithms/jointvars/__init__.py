"""Joint variables f(q), ∇f, H: explicit maps, tabulated functions, constraints and their solvers (Eq. 100-120).
"""

from mbkron.algorithms.jointvars.explicit import JointVariableProvider, JointVariables, SymbolicJointVariables
from mbkron.multibody.jointvars import Linear

__all__ = ["JointVariableProvider", "JointVariables", "Linear", "SymbolicJointVariables"]
