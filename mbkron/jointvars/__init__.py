"""Joint variables f(q), ∇f, H: explicit maps, tabulated functions, constraints and their solvers (Eq. 100-120).
"""

from mbkron.jointvars.explicit import JointVariableProvider, JointVariables, Linear, SymbolicJointVariables

__all__ = ["JointVariableProvider", "JointVariables", "Linear", "SymbolicJointVariables"]
