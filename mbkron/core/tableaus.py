"""Butcher tableaus: Dormand–Prince 5(4) and DOP853 (Hairer's 8(5,3)), for the ensemble integrator and the
wrapping surfaces' geodesics (:func:`equal_steps`).

Coefficients as published with the original codes: J. R. Dormand and P. J. Prince, "A family of
embedded Runge-Kutta formulae", J. Comput. Appl. Math. 6 (1980) (with the continuous extension of
L. F. Shampine, "Some practical Runge-Kutta formulas", Math. Comp. 46 (1986)); E. Hairer, S. P.
Nørsett and G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed., Sec. II.10, and the
Fortran code dop853.f (stages, the 5th- and 3rd-order error estimators, the 7th-order dense output).
The same numbers as scipy's ``RK45`` and ``DOP853``, so that each trajectory of an ensemble takes the
steps its single ``solve_ivp`` run takes. Generated once from those tables; not edited by hand.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Tableau", "DORMAND_PRINCE", "DOP853", "equal_steps"]


def _lower(rows: list[list[float]]) -> np.ndarray:
    """A strictly lower-triangular stage matrix from its rows (trailing zeros omitted)."""
    out = np.zeros((len(rows), len(rows)))
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out

# Dormand–Prince 5(4): 6 stages + the FSAL stage, error estimator of order 4, quartic dense output
_DP_C = np.array([0.0, 0.2, 0.3, 0.8, 0.8888888888888888, 1.0])
_DP_A = _lower([
    [],
    [0.2],
    [0.075, 0.225],
    [0.9777777777777777, -3.7333333333333334, 3.5555555555555554],
    [2.9525986892242035, -11.595793324188385, 9.822892851699436, -0.2908093278463649],
    [2.8462752525252526, -10.757575757575758, 8.906422717743473, 0.2784090909090909, -0.2735313036020583],
])
_DP_B = np.array([0.09114583333333333, 0.0, 0.44923629829290207, 0.6510416666666666, -0.322376179245283, 0.13095238095238096])
_DP_E = np.array([-0.0012326388888888888, 0.0, 0.0042527702905061394, -0.03697916666666667, 0.05086379716981132, -0.0419047619047619, 0.025])
_DP_P = np.array([
    [1.0, -2.8535800653862835, 3.0717434641059005, -1.1270175653862835],
    [0.0, 0.0, 0.0, 0.0],
    [0.0, 4.023133379230305, -6.249321565289, 2.675424484351598],
    [0.0, -3.7324019615885042, 10.068970589843675, -5.685526961588504],
    [0.0, 2.5548038301849423, -6.399112377351017, 3.5219323679207912],
    [0.0, -1.3744241142186024, 3.272657752246729, -1.7672812570757455],
    [0.0, 1.3824689317781436, -3.764937863556287, 2.382468931778144],
])

# DOP853: 12 stages + FSAL, 3 extra stages for the dense output of order 7
_DOP_C = np.array([0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726, 0.3333333333333333, 0.25, 0.3076923076923077, 0.6512820512820513, 0.6, 0.8571428571428571, 1.0, 1.0, 0.1, 0.2, 0.7777777777777778])
_DOP_A = _lower([
    [],
    [0.05260015195876773],
    [0.0197250569845379, 0.0591751709536137],
    [0.02958758547680685, 0.0, 0.08876275643042054],
    [0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792],
    [0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242],
    [0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125],
    [0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328, -0.015319437748624402, 0.008273789163814023],
    [0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726, 27.59209969944671, 20.154067550477894, -43.48988418106996],
    [0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843, 21.230051448181193, 15.279233632882423, -33.28821096898486, -0.020331201708508627],
    [-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295, -8.149787010746927, -18.52006565999696, 22.739487099350505, 2.4936055526796523, -3.0467644718982196],
    [2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625, -17.9589318631188, 27.94888452941996, -2.8589982771350235, -8.87285693353063, 12.360567175794303, 0.6433927460157636],
    [0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259],
    [0.056167502283047954, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25350021021662483, -0.2462390374708025, -0.12419142326381637, 0.15329179827876568, 0.00820105229563469, 0.007567897660545699, -0.008298],
    [0.03183464816350214, 0.0, 0.0, 0.0, 0.0, 0.028300909672366776, 0.053541988307438566, -0.05492374857139099, 0.0, 0.0, -0.00010834732869724932, 0.0003825710908356584, -0.00034046500868740456, 0.1413124436746325],
    [-0.42889630158379194, 0.0, 0.0, 0.0, 0.0, -4.697621415361164, 7.683421196062599, 4.06898981839711, 0.3567271874552811, 0.0, 0.0, 0.0, -0.0013990241651590145, 2.9475147891527724, -9.15095847217987],
])
_DOP_B = np.array([0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034, 0.04471061572777259])
_DOP_E3 = np.array([-0.18980075407240762, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003, -5.801203960010585, -0.4226823213237919, -0.1521609496625161, 0.20136540080403034, 0.02265179219836082, 0.0])
_DOP_E5 = np.array([0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502, 1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571, -0.022355307863886294, 0.0])
_DOP_D = np.array([
    [-8.428938276109013, 0.0, 0.0, 0.0, 0.0, 0.5667149535193777, -3.0689499459498917, 2.38466765651207, 2.117034582445028, -0.871391583777973, 2.2404374302607883, 0.6315787787694688, -0.08899033645133331, 18.148505520854727, -9.194632392478356, -4.436036387594894],
    [10.427508642579134, 0.0, 0.0, 0.0, 0.0, 242.28349177525817, 165.20045171727028, -374.5467547226902, -22.113666853125306, 7.733432668472264, -30.674084731089398, -9.332130526430229, 15.697238121770845, -31.139403219565178, -9.35292435884448, 35.81684148639408],
    [19.985053242002433, 0.0, 0.0, 0.0, 0.0, -387.0373087493518, -189.17813819516758, 527.8081592054236, -11.57390253995963, 6.8812326946963, -1.0006050966910838, 0.7777137798053443, -2.778205752353508, -60.19669523126412, 84.32040550667716, 11.99229113618279],
    [-25.69393346270375, 0.0, 0.0, 0.0, 0.0, -154.18974869023643, -231.5293791760455, 357.6391179106141, 93.40532418362432, -37.45832313645163, 104.0996495089623, 29.8402934266605, -43.53345659001114, 96.32455395918828, -39.17726167561544, -149.72683625798564],
])


class Tableau:
    """An explicit embedded Runge–Kutta pair with its dense output.

    Attributes
    ----------
    stages : int
        Stages of a step (the FSAL stage, ``f(t + h, y_new)``, is one more).
    C, A, B : ndarray
        Nodes, stage matrix (rows for all stages incl. the dense-output ones), weights.
    order, error_order : int
        Order of the method and of its error estimator (step control uses ``error_order``).
    """

    def __init__(self, name, stages, C, A, B, order, error_order, E=None, E3=None, E5=None, P=None, D=None):
        self.name, self.stages, self.C, self.A, self.B = name, stages, C, A, B
        self.order, self.error_order = order, error_order
        self.E, self.E3, self.E5, self.P, self.D = E, E3, E5, P, D


DORMAND_PRINCE = Tableau("RK45", 6, _DP_C, _DP_A, _DP_B, 5, 4, E=_DP_E, P=_DP_P)
DOP853 = Tableau("DOP853", 12, _DOP_C, _DOP_A, _DOP_B, 8, 7, E3=_DOP_E3, E5=_DOP_E5, D=_DOP_D)


def equal_steps(tableau: Tableau, rate, y: np.ndarray, steps: int, samples: bool = False) -> np.ndarray:
    """``steps`` equal steps of ``tableau``'s method for the autonomous ``y' = rate(y)`` over ``τ ∈ [0, 1]``.

    ``y`` has any shape (``rate`` maps it to the same shape) and may be complex (complex-step
    differentiation); the stage sums run on the flattened stages, for complex stages on their real view
    (real and imaginary parts interleaved: the coefficients are real, so each part is summed alone, exactly
    as the complex sum). numpy's ``matmul`` of a real vector with a complex matrix takes a slow mixed-type
    loop: 40× slower here (arm26's wrapped paths at 121 frames: 36 s, 0.9 s on the real view).
    Returns the end, or with ``samples`` the start and every step's end stacked on axis 1."""
    stages, B = tableau.stages, tableau.B
    A = tableau.A[:stages, :stages]
    h = 1.0 / steps
    history = [y]
    k = np.empty((stages,) + y.shape, dtype=y.dtype)
    flat = k.reshape(stages, -1)
    real = flat.view(np.float64) if np.iscomplexobj(flat) else flat  # (stages, 2N) for complex128
    for _ in range(steps):
        for stage in range(stages):
            increment = (A[stage, :stage] @ real[:stage]).view(y.dtype).reshape(y.shape) if stage else 0.0
            k[stage] = rate(y + h * increment)
        y = y + h * (B @ real).view(y.dtype).reshape(y.shape)
        if samples:
            history.append(y)
    return np.stack(history, axis=1) if samples else y
