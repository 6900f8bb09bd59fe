"""Tree kinematics: transforms ``⁰_iA_4`` and their derivatives D_i, D'_i (Eq. 38-99).

- :mod:`mbkron.kinematics.tree` -- the tree as arrays, the kinematics by the compiled twist form (the seed's
  recursions and closed forms, literally, are in :mod:`mbkron.reference.transforms`).
"""
