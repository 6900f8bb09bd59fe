"""Tree kinematics: transforms ``⁰_iA_4`` and their derivatives D_i, D'_i (Eq. 38-99).

- :mod:`mbkron.multibody.tree` -- the tree as arrays: joint kinds, joint transforms and joint matrices;
- :mod:`mbkron.algorithms.kinematics.tree` -- the kinematics by the compiled twist form (the seed's recursions and closed forms,
  literally, are in :mod:`mbkron.reference.transforms`).
"""
