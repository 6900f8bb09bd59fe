"""Dynamics by virtual work (Eq. 124-198): M, N q̇, G, applied loads and joint reactions.

- :mod:`mbkron.algorithms.dynamics.terms` -- the terms of Eq. 198, pseudo-inertias (Eq. 126, 131, 145, 187);
- :mod:`mbkron.algorithms.dynamics.loads` -- applied loads and their generalized forces (Eq. 46);
- :mod:`mbkron.algorithms.dynamics.points` -- point and angular-velocity Jacobians (Eq. 44-46, 180), by one kernel;
- :mod:`mbkron.algorithms.dynamics.reactions` -- joint reaction forces by Newton-Euler, the bodies' velocity and acceleration twists (Eq. 57);
- :mod:`mbkron.algorithms.dynamics.bushings`, :mod:`~mbkron.algorithms.dynamics.contact`,
  :mod:`~mbkron.algorithms.dynamics.hunt_crossley` -- the forces of bushings and contacts;
- :mod:`mbkron.algorithms.dynamics.forward` -- the forward and inverse dynamics in one kernel call (Eq. 198:
  articulated-body algorithm, Cholesky, RNEA; kernels in ``forward_kernels``, ``articulated``, ``kernels``);
- :mod:`mbkron.algorithms.dynamics.group` -- a constraint group's step with the dynamics in one compiled call, the
  state's right-hand side and the TR-BDF2 and Runge-Kutta runs around it.
"""
