"""The dissertation as written: the oracle the engine is tested against, not a backend.

Ehsani's formulas, literally, one state at a time, in the layouts the seed uses
(``shared/seeds/002_…``; docs/theory.md maps each equation here and to the engine):

- :mod:`mbkron.reference.kron` -- the Kronecker product calculus of matrix-valued functions:
  Definition 1, Theorems 1-4 (Eq. 1-37);
- :mod:`mbkron.reference.transforms` -- transforms (Eq. 38-41), the recursions Eq. 74/77 and 89 and the
  closed forms Eq. 75-76, 90, 93-99 for D_i and D'_i in both layouts, points (Eq. 44, 57), and
  :func:`~mbkron.reference.transforms.model_kinematics` for a whole model;
- :mod:`mbkron.reference.virtual_work` -- M (Eq. 145), N q̇ (Eq. 126) and G (Eq. 187) body by body;
- :mod:`mbkron.reference.muscle_paths` -- Definitions 2-5 and the moment-arm matrix by Eq. 171-195 (Eq. 193
  and its sparse column form 195);
- :mod:`mbkron.reference.evaluate` -- a whole model through them: :func:`kinematics`, :func:`mass_matrix`,
  :func:`velocity_forces`, :func:`gravity_forces`, :func:`moment_arms`.

The joint variables and their derivatives (Eq. 100-120) come from the model itself. Nothing in
``mbkron`` imports this package (the import-linter contract in pyproject.toml): it is read, and it is
what tests/test_reference.py holds the engine to.
"""

from mbkron.reference.evaluate import gravity_forces, kinematics, mass_matrix, moment_arms, velocity_forces

__all__ = ["gravity_forces", "kinematics", "mass_matrix", "moment_arms", "velocity_forces"]
