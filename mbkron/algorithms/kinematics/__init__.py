"""Tree kinematics: transforms ``⁰_iA_4``, joint twists and the derivatives D_i, D'_i (Eq. 38-99), point Jacobians.

- :mod:`mbkron.algorithms.kinematics.tree` -- the kinematics at states (``compute_kinematics``, ``KinematicsData``,
  point positions), driving the kernels;
- :mod:`mbkron.algorithms.kinematics.kernels` -- the compiled twist form: transforms, joint twists, D'_i;
- :mod:`mbkron.algorithms.kinematics.points_kernels` -- point Jacobians ``∂p/∂q`` and ``∂ω/∂q̇`` by the joints'
  ground twists (Eq. 44-46, 75-76, 180).

The tree itself (joint kinds, joint transforms and matrices) is described in :mod:`mbkron.multibody.tree`; the
seed's recursions and closed forms, literally, are in :mod:`mbkron.reference.transforms`.
"""
