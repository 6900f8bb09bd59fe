"""Joint variables f(q), ∇f, H (Eq. 100-120): explicit maps (the empirical functions they evaluate are
:mod:`mbkron.numerics.functions`'), constraint groups, their compiled continuation and solvers, loop closures.
"""

from mbkron.algorithms.jointvars.explicit import JointVariableProvider, JointVariables, SymbolicJointVariables
from mbkron.multibody.jointvars import Linear

__all__ = ["JointVariableProvider", "JointVariables", "Linear", "SymbolicJointVariables"]
