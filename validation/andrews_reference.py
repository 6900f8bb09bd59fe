"""Andrews' squeezer in the IVP test set ("andrews"; Hairer & Wanner; Mazzia & Magherini).

The published numbers that mbkron's model is checked against: the coordinate order, the test set's
consistent initial accelerations, its reference solution at t = 0.03 and its 7×7 mass matrix
written out from its definition. Nothing here is computed by mbkron.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.examples.andrews import PARAMETERS

__all__ = ["INITIAL_ACCELERATION", "ORDER", "REFERENCE_Q", "REFERENCE_QD", "T_REFERENCE", "reference_mass_matrix"]

#: The test set's seven angles, in its order (mbkron names the first joint variable ``crank``).
ORDER = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
#: Consistent initial accelerations q''(0) of the seven angles, rad/s².
INITIAL_ACCELERATION = (14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0)
#: Time of the reference solution, s.
T_REFERENCE = 0.03
#: Reference solution q(0.03), rad.
REFERENCE_Q = (0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
               0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1)
#: Reference solution q'(0.03), rad/s.
REFERENCE_QD = (0.1139920302151208e4, -0.1424379294994111e4, 0.1103291221937134e2, 0.1929337464421385e2,
                0.5735699284790808, -0.1929337464421385e2, 0.3231791658026955)


def reference_mass_matrix(beta: float, Theta: float, gamma: float, Phi: float, delta: float, Omega: float,
                          epsilon: float) -> NDArray[np.float64]:
    """The test set's 7×7 mass matrix of the open tree at the given angles (rad)."""
    p = PARAMETERS
    m1, m2, m3, m4, m5, m6, m7 = (p[f"m{k}"] for k in range(1, 8))
    i1, i2, i3, i4, i5, i6, i7 = (p[f"i{k}"] for k in range(1, 8))
    rr, da, e, ea, zt, zf, fa, u = p["rr"], p["da"], p["e"], p["ea"], p["zt"], p["zf"], p["fa"], p["u"]
    M = np.zeros((7, 7))
    M[0, 0] = m1 * p["ra"] ** 2 + m2 * (rr**2 - 2 * da * rr * np.cos(Theta) + da**2) + i1 + i2
    M[1, 0] = M[0, 1] = m2 * (da**2 - da * rr * np.cos(Theta)) + i2
    M[1, 1] = m2 * da**2 + i2
    M[2, 2] = m3 * (p["sa"] ** 2 + p["sb"] ** 2) + i3
    M[3, 3] = m4 * (e - ea) ** 2 + i4
    M[4, 3] = M[3, 4] = m4 * ((e - ea) ** 2 + zt * (e - ea) * np.sin(Phi)) + i4
    M[4, 4] = m4 * (zt**2 + 2 * zt * (e - ea) * np.sin(Phi) + (e - ea) ** 2) + m5 * (p["ta"] ** 2 + p["tb"] ** 2) + i4 + i5
    M[5, 5] = m6 * (zf - fa) ** 2 + i6
    M[6, 5] = M[5, 6] = m6 * ((zf - fa) ** 2 - u * (zf - fa) * np.sin(Omega)) + i6
    M[6, 6] = m6 * ((zf - fa) ** 2 - 2 * u * (zf - fa) * np.sin(Omega) + u**2) + m7 * (p["ua"] ** 2 + p["ub"] ** 2) + i6 + i7
    return M
