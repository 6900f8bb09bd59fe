"""Dynamics by virtual work (Eq. 124-198): M, N q̇, G, applied loads and joint reactions.

- :mod:`mbkron.dynamics.terms` -- M, N q̇, G, batched (Eq. 126, 145, 187);
- :mod:`mbkron.dynamics.loads` -- applied loads and their generalized forces (Eq. 46);
- :mod:`mbkron.dynamics.reactions` -- joint reaction forces by Newton-Euler.
"""
