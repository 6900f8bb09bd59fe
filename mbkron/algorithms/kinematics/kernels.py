"""Compiled kinematics: transforms, joint twists and their derivatives (Eq. 40, 75, 99), state by state.

The kinematics kernels of the one engine, called by :func:`mbkron.algorithms.kinematics.tree.compute_kinematics`.

Vectorised numpy evaluations (the former ``numpy`` route) are bound by
numpy's per-call overhead for one state (a 4×4 product costs ~1.5 µs on a small machine and a state
needs ~45 numpy calls) and by memory traffic for large batches. When numba is installed, the same
equations are evaluated here by loops compiled once (and cached on disk), state by state, with every
intermediate in a few small scratch arrays: ``T_i`` (Eq. 40), ``S_j``, ``Ω_ik`` and ``∂T_i/∂q_k``
(Eq. 75), ``∂²T_i/∂q_k∂q_l`` (Eq. 99), ``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) by the
composite-body regrouping of :mod:`mbkron.algorithms.dynamics.terms` together with the generalized forces of
spring-dampers (Eq. 46, 161), and muscle path lengths and moment arms (Eq. 195). The results equal
the dissertation as written, :mod:`mbkron.reference`, to rounding (``tests/test_reference.py``); every
model uses these kernels. A first use
compiles each kernel once per argument type (~10 s for a model's kernels) and caches the machine code
next to this file (numba's ``cache=True``).

Inside the kernels a twist ``X = [[ω̃, v], [0, 0]]`` (``X {r; 1} = ω × r + v``: a world-frame
velocity-like 4×4 matrix such as ``S_j`` or ``Ω_ik``) is held as the 6-vector ``(ω, v)``, and a
world pseudo-inertia ``J̄ = [[E, h], [hᵀ, m]]`` (second moment, first moment and mass about the
ground origin, Eq. 131) as those 13 numbers. The identities used:

- ``⟨X, Y J̄⟩ = tr(X J̄ Yᵀ) = ∫ (X r̄)·(Y r̄) dm = x · 𝕀 y`` with the spatial inertia
  ``𝕀 y = (I_O ω_y + h × v_y, m v_y − h × ω_y)``, ``I_O = tr(E) I₃ − E``;
- the commutator ``[X, Y] = XY − YX`` is the twist ``(ω_x × ω_y, ω_x × v_y − ω_y × v_x)``;
- ``⟨S, V² J̄⟩ = s · (V ×* 𝕀 V)`` with ``(ω, v) ×* (n, F) = (ω × n + v × F, ω × F)``
  (from ``r × (ω × u) = ω × (r × u) + v × u`` for the point velocity ``u = ω × r + v``);
- ``X X' = [[ω̃ ω̃', ω̃ v'], [0, 0]]`` with ``ω̃ ω̃' = ω' ωᵀ − (ω · ω') I₃``;
- ``ḡᵀ S {h; m} = ḡ · (ω_s × h + m v_s)`` (the gravity term of Eq. 187).
"""


from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.common import jit
from mbkron.jit.arrays import batch_rows, writable
from mbkron.multibody.layout import _PRISMATIC, _REVOLUTE, _ROTATION, _TRANSLATION

__all__ = ["kinematics", "transforms_and_joint_twists", "twists_of"]

@jit
def transforms_and_joint_twists(geometry, links, f, T, S):  # pragma: no cover - compiled
    """World transforms ``T_i`` (Eq. 38-40) and joint twists ``S_i = T_i Â_i T_i⁻¹`` as 6-vectors."""
    nb = links.shape[0]
    for i in range(nb):
        joint = links[i, 1]
        value = f[joint] if joint >= 0 else 0.0
        parent = links[i, 0]
        # the local transform C_0 + sin C_1 + (1 − cos) C_2 + d C_3 (premultiplied below), by the sparsity of
        # KinematicTree.build: C_1, C_2 only in a revolute joint's rotation block, C_3 only in a prismatic
        # joint's translation column (and a fixed joint C_0 alone)
        for r in range(3):
            for c in range(4):
                T[i, r, c] = geometry[i, 4 * r + c]
        if joint >= 0 and geometry[i, _REVOLUTE] != 0.0:
            angle = value * geometry[i, _REVOLUTE]
            sine, versine = np.sin(angle), 1.0 - np.cos(angle)
            for r in range(3):
                for c in range(3):
                    base = 4 * r + c
                    T[i, r, c] = geometry[i, base] + sine * geometry[i, 16 + base] + versine * geometry[i, 32 + base]
        elif joint >= 0 and geometry[i, _PRISMATIC] != 0.0:
            shift = value * geometry[i, _PRISMATIC]
            for r in range(3):
                T[i, r, 3] = geometry[i, 4 * r + 3] + shift * geometry[i, 48 + 4 * r + 3]
        if parent >= 0:
            for c in range(4):
                x0, x1, x2 = T[i, 0, c], T[i, 1, c], T[i, 2, c]
                for r in range(3):
                    value_rc = T[parent, r, 0] * x0 + T[parent, r, 1] * x1 + T[parent, r, 2] * x2
                    T[i, r, c] = value_rc + (T[parent, r, 3] if c == 3 else 0.0)
        T[i, 3, 0] = T[i, 3, 1] = T[i, 3, 2] = 0.0
        T[i, 3, 3] = 1.0
        # ω = R a, v = R b − ω × p
        for r in range(3):
            S[i, r] = (T[i, r, 0] * geometry[i, _ROTATION] + T[i, r, 1] * geometry[i, _ROTATION + 1]
                       + T[i, r, 2] * geometry[i, _ROTATION + 2])
            S[i, 3 + r] = (T[i, r, 0] * geometry[i, _TRANSLATION] + T[i, r, 1] * geometry[i, _TRANSLATION + 1]
                           + T[i, r, 2] * geometry[i, _TRANSLATION + 2])
        px, py, pz = T[i, 0, 3], T[i, 1, 3], T[i, 2, 3]
        S[i, 3] -= S[i, 1] * pz - S[i, 2] * py
        S[i, 4] -= S[i, 2] * px - S[i, 0] * pz
        S[i, 5] -= S[i, 0] * py - S[i, 1] * px


@jit
def twist_bracket(x, y, out):  # pragma: no cover - compiled
    """``out = [X, Y]`` for twists held as 6-vectors."""
    out[0] = x[1] * y[2] - x[2] * y[1]
    out[1] = x[2] * y[0] - x[0] * y[2]
    out[2] = x[0] * y[1] - x[1] * y[0]
    out[3] = x[1] * y[5] - x[2] * y[4] - (y[1] * x[5] - y[2] * x[4])
    out[4] = x[2] * y[3] - x[0] * y[5] - (y[2] * x[3] - y[0] * x[5])
    out[5] = x[0] * y[4] - x[1] * y[3] - (y[0] * x[4] - y[1] * x[3])


@jit
def twist_matrix(x, out):  # pragma: no cover - compiled
    """The 4×4 matrix ``[[ω̃, v], [0, 0]]`` of a 6-vector twist."""
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2], out[1, 2] = -x[2], x[1], -x[0]
    out[1, 0], out[2, 0], out[2, 1] = x[2], -x[1], x[0]
    out[0, 3], out[1, 3], out[2, 3] = x[3], x[4], x[5]
    out[3, 0] = out[3, 1] = out[3, 2] = out[3, 3] = 0.0


@jit
def times_transform(X, T, out):  # pragma: no cover - compiled
    """``out = X T`` for ``X`` with a zero last row and a rigid transform ``T``."""
    for r in range(3):
        for c in range(4):
            out[r, c] = X[r, 0] * T[0, c] + X[r, 1] * T[1, c] + X[r, 2] * T[2, c]
        out[r, 3] += X[r, 3]
    out[3, 0] = out[3, 1] = out[3, 2] = out[3, 3] = 0.0


@jit
def twist_vector(X, out):  # pragma: no cover - compiled
    """``out`` = the 6-vector ``(ω, v)`` of the 4×4 twist ``X = [[ω̃, v], [0, 0]]`` (:func:`twist_matrix`'s inverse)."""
    out[0], out[1], out[2] = X[2, 1], X[0, 2], X[1, 0]
    out[3], out[4], out[5] = X[0, 3], X[1, 3], X[2, 3]


@jit
def _kinematics_kernel(geometry, links, f, grad, hess, order):  # pragma: no cover - compiled
    """Batched T, S and ∂²T/∂q² (Eq. 40, 75, 99); see :func:`kinematics`."""
    states, nb = f.shape[0], links.shape[0]
    nq = grad.shape[2]
    first, second = order >= 1, order >= 2
    T = np.empty((states, nb, 4, 4))
    S4 = np.empty((states, nb, 4, 4) if first else (0, nb, 4, 4))
    d2T = np.empty((states, nb, nq, nq, 4, 4) if second else (0, nb, nq, nq, 4, 4))
    S = np.empty((nb, 6))
    omega = np.zeros((nb, nq, 6) if second else (0, nq, 6))  # only second derivatives need Ω
    domega = np.zeros((nb, nq, nq, 6) if second else (0, 0, 0, 6))
    bracket = np.empty(6)
    X = np.empty((4, 4))
    for s in range(states):
        transforms_and_joint_twists(geometry, links, f[s], T[s], S)
        if not first:
            continue
        gs = s if grad.shape[0] > 1 else 0
        hs = s if hess.shape[0] > 1 else 0
        for i in range(nb):
            twist_matrix(S[i], S4[s, i])
            if not second:
                continue
            parent, joint = links[i, 0], links[i, 1]
            for k in range(nq):  # Ω_ik = Ω_{pr(i)k} + S_i ∇f_ik (Eq. 75)
                weight = grad[gs, joint, k] if joint >= 0 else 0.0
                for x in range(6):
                    omega[i, k, x] = (omega[parent, k, x] if parent >= 0 else 0.0) + S[i, x] * weight
            for k in range(nq):  # ∂Ω_ik/∂q_l = ∂Ω_{pr(i)k}/∂q_l + [Ω_il, S_i] ∇f_ik + S_i H_ikl (Eq. 99)
                weight = grad[gs, joint, k] if joint >= 0 else 0.0
                for l in range(nq):
                    curvature = hess[hs, joint, k, l] if joint >= 0 else 0.0
                    twist_bracket(omega[i, l], S[i], bracket)
                    for x in range(6):
                        inherited = domega[parent, k, l, x] if parent >= 0 else 0.0
                        domega[i, k, l, x] = inherited + bracket[x] * weight + S[i, x] * curvature
                    # (∂Ω_ik/∂q_l + Ω_ik Ω_il) T_i, with ω̃ ω̃' = ω' ωᵀ − (ω·ω') I₃
                    twist_matrix(domega[i, k, l], X)
                    wk, wl = omega[i, k], omega[i, l]
                    dot = wk[0] * wl[0] + wk[1] * wl[1] + wk[2] * wl[2]
                    for r in range(3):
                        for c in range(3):
                            X[r, c] += wl[r] * wk[c]
                        X[r, r] -= dot
                    X[0, 3] += wk[1] * wl[5] - wk[2] * wl[4]
                    X[1, 3] += wk[2] * wl[3] - wk[0] * wl[5]
                    X[2, 3] += wk[0] * wl[4] - wk[1] * wl[3]
                    times_transform(X, T[s, i], d2T[s, i, k, l])
    return T, S4, d2T


@jit
def world_twists(links, S, grad):  # pragma: no cover - compiled
    """The world twists ``Ω_ik = Ω_{pr(i)k} + S_i ∇f_ik`` (Eq. 75) as 4×4 matrices (states, nb, nq, 4, 4), from
    the joints' ground twists ``S`` (states, nb, 4, 4) and the gradients ``grad`` (states or 1, nj, nq)."""
    states, nb, nq = S.shape[0], links.shape[0], grad.shape[2]
    twists = np.empty((states, nb, nq, 4, 4))
    joint_twist, omega = np.empty(6), np.zeros((nb, nq, 6))
    for s in range(states):
        gs = s if grad.shape[0] > 1 else 0
        for i in range(nb):
            twist_vector(S[s, i], joint_twist)
            parent, joint = links[i, 0], links[i, 1]
            for k in range(nq):
                weight = grad[gs, joint, k] if joint >= 0 else 0.0
                for x in range(6):
                    omega[i, k, x] = (omega[parent, k, x] if parent >= 0 else 0.0) + joint_twist[x] * weight
                twist_matrix(omega[i, k], twists[s, i, k])
    return twists


_NO_HESSIAN = np.zeros((1, 0, 0, 0))
"""The Hessian argument of :func:`_kinematics_kernel` below order 2 (unread there): nothing nj × nq × nq."""


def kinematics(geometry: NDArray, links: NDArray, f: NDArray, grad: NDArray | None, hess: NDArray | None,
               nq: int, order: int) -> tuple[NDArray, ...]:
    """``T``, ``S`` and ``∂²T/∂q²`` of every body at every state (Eq. 40, 75, 99); the world twists ``Ω`` and
    ``∂T/∂q = Ω T`` (Eq. 45, 75) are left to :class:`mbkron.algorithms.kinematics.tree.KinematicsData`, which forms them on
    first use (:func:`world_twists`): the point Jacobians, moment arms and dynamics need only ``S``.

    Parameters
    ----------
    geometry, links : ndarray
        :func:`~mbkron.multibody.layout.tree_geometry` rows and ``(parent, joint row)`` per body.
    f : ndarray, shape (..., nj)
    grad, hess : ndarray, shapes (..., nj, nq), (..., nj, nq, nq), or None below ``order``
    order : {0, 1, 2}

    Returns
    -------
    T, S, d2T : ndarray
        Shapes (..., nb, 4, 4), (..., nb, 4, 4), (..., nb, nq, nq, 4, 4); None above ``order``.
    """
    batch = f.shape[:-1]
    nj = f.shape[-1]
    if not batch:  # one state: no reshaping
        T, S, d2T = _kinematics_kernel(geometry, links, writable(f)[None],
                                       writable(grad)[None] if order >= 1 else np.zeros((1, nj, nq)),
                                       writable(hess)[None] if order >= 2 else _NO_HESSIAN, order)
        return T[0], S[0] if order >= 1 else None, d2T[0] if order >= 2 else None
    grad_rows = batch_rows(grad, batch, 2) if order >= 1 else np.zeros((1, nj, nq))
    hess_rows = batch_rows(hess, batch, 3) if order >= 2 else _NO_HESSIAN
    T, S, d2T = _kinematics_kernel(geometry, links, batch_rows(f, batch, 1), grad_rows, hess_rows, order)
    nb = links.shape[0]
    T = T.reshape(batch + (nb, 4, 4))
    if order < 1:
        return T, None, None
    S = S.reshape(batch + (nb, 4, 4))
    return T, S, d2T.reshape(batch + (nb, nq, nq, 4, 4)) if order >= 2 else None


def twists_of(links: NDArray, S: NDArray, grad: NDArray) -> NDArray[np.float64]:
    """The world twists ``Ω_ik`` (..., nb, nq, 4, 4) of joint twists ``S`` (..., nb, 4, 4) and gradients ``grad``
    (..., nj, nq) (Eq. 75), by :func:`world_twists`."""
    batch, nb, nq = S.shape[:-3], S.shape[-3], grad.shape[-1]
    twists = world_twists(links, writable(S).reshape((-1, nb, 4, 4)), batch_rows(grad, batch, 2))
    return twists.reshape(batch + (nb, nq, 4, 4))
