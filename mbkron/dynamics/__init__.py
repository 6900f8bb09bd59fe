"""Dynamics by virtual work (Eq. 124-198): M, N q̇, G, applied loads and joint reactions.

- :mod:`mbkron.dynamics.terms` -- the terms of Eq. 198, pseudo-inertias (Eq. 126, 131, 145, 187);
- :mod:`mbkron.dynamics.loads` -- applied loads and their generalized forces (Eq. 46);
- :mod:`mbkron.dynamics.points` -- point and angular-velocity Jacobians (Eq. 44-46, 180), by one kernel;
- :mod:`mbkron.dynamics.reactions` -- joint reaction forces by Newton-Euler, the bodies' velocity and acceleration twists (Eq. 57).
"""
