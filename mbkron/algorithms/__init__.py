"""Evaluation of a model at states, each compiled kernel beside its algorithm.

- :mod:`mbkron.algorithms.kinematics` -- transforms, joint twists, D_i, D'_i (Eq. 38-99), point Jacobians;
- :mod:`mbkron.algorithms.jointvars` -- f(q), ∇f, H (Eq. 100-120): explicit maps, constraint groups and their
  compiled continuation, loop closures;
- :mod:`mbkron.algorithms.paths` -- musculotendon paths: lengths, R = -∂L/∂q (Eq. 149-195), moving and conditional
  points, wrapping, the path forces;
- :mod:`mbkron.algorithms.dynamics` -- M, N q̇, G (Eq. 124-198), loads by virtual work, the one-call forward and
  inverse dynamics, a constraint group's step with the dynamics and the integrators' runs around it, joint
  reactions;
- :mod:`mbkron.algorithms.muscles` -- the Hill model's curves (Thelen 2003).

The algorithms take a model and read its fields; they never import :mod:`mbkron.model` nor call the model back
(pyproject.toml's contracts, ``tests/test_architecture.py``).
"""
