"""Compiled kernels for the per-state hot paths (optional: ``pip install "mbkron[fast]"``).

The vectorised numpy routes of :mod:`mbkron.kinematics.tree` and :mod:`mbkron.dynamics.terms` are bound by
numpy's per-call overhead for one state (a 4×4 product costs ~1.5 µs on a small machine and a state
needs ~45 numpy calls) and by memory traffic for large batches. When numba is installed, the same
equations are evaluated here by loops compiled once (and cached on disk), state by state, with every
intermediate in a few small scratch arrays: ``T_i`` (Eq. 40), ``S_j``, ``Ω_ik`` and ``∂T_i/∂q_k``
(Eq. 75), ``∂²T_i/∂q_k∂q_l`` (Eq. 99), ``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) by the
composite-body regrouping of :mod:`mbkron.dynamics.terms` together with the generalized forces of
spring-dampers (Eq. 46, 161), and muscle path lengths and moment arms (Eq. 195). The results equal
the numpy routes to rounding (``tests/test_kernels.py``); set the environment variable
``MBKRON_KERNELS=numpy`` before importing mbkron to use the numpy routes anyway. A first use
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

import os

import numpy as np
from numpy.typing import NDArray

try:  # numba is optional: the ``fast`` extra
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

__all__ = ["ENABLED", "compiled", "tree_geometry", "inertia_rows", "spring_rows", "kinematics", "equations_of_motion",
           "path_lengths_and_moment_arms", "stacked_cubics"]

ENABLED: bool = numba is not None and os.environ.get("MBKRON_KERNELS", "").strip().lower() != "numpy"
"""Whether kinematics, dynamics, path lengths and moment arms, line loads and the projection
recursions run compiled (read once, at import)."""

_ROTATION, _TRANSLATION, _REVOLUTE, _PRISMATIC, _GEOMETRY_WIDTH = 64, 67, 70, 71, 72  # tree_geometry columns


def compiled(function):
    """Compile ``function`` with numba (cached on disk) when the kernels are enabled; otherwise
    return it unchanged. For loops over small arrays that numpy cannot vectorise (elsewhere in
    mbkron: the projection recursions of Eq. 110-119)."""
    if not ENABLED:  # pragma: no cover - exercised where numba is absent
        return function
    return numba.njit(cache=True, nogil=True)(function)


def tree_geometry(local_coefficients: NDArray, joint_matrices: NDArray, is_revolute: NDArray,
                  is_prismatic: NDArray) -> NDArray[np.float64]:
    """Pack a tree's constant joint data into one array, a row per body.

    Columns: the 4 local-transform coefficient matrices (64), the joint matrix's rotation axis
    ``a`` and translation part ``b`` (``Â = [[ã, b], [0, 0]]``, Eq. 70-71), ``ϑ`` (revolute) and
    prismatic flags.

    Returns
    -------
    ndarray, shape (nb, 72)
    """
    nb = local_coefficients.shape[0]
    out = np.zeros((nb, _GEOMETRY_WIDTH))
    out[:, :_ROTATION] = local_coefficients.reshape(nb, 64)
    out[:, _ROTATION:_TRANSLATION] = np.stack(
        [joint_matrices[:, 2, 1], joint_matrices[:, 0, 2], joint_matrices[:, 1, 0]], axis=-1)
    out[:, _TRANSLATION:_REVOLUTE] = joint_matrices[:, :3, 3]
    out[:, _REVOLUTE] = is_revolute
    out[:, _PRISMATIC] = is_prismatic
    out.setflags(write=False)
    return out


def inertia_rows(pseudo_inertias: NDArray) -> NDArray[np.float64]:
    """Body-frame pseudo-inertias (Eq. 131) as rows ``(E (9), h (3), m)``, shape (nb, 13)."""
    nb = pseudo_inertias.shape[0]
    out = np.concatenate([pseudo_inertias[:, :3, :3].reshape(nb, 9), pseudo_inertias[:, :3, 3],
                          pseudo_inertias[:, 3, 3:4]], axis=1)
    out.setflags(write=False)
    return out


# ----------------------------------------------------------------------------- per-state pieces
@compiled
def _transforms_and_joint_twists(geometry, links, f, T, S):  # pragma: no cover - compiled
    """World transforms ``T_i`` (Eq. 38-40) and joint twists ``S_i = T_i Â_i T_i⁻¹`` as 6-vectors."""
    nb = links.shape[0]
    for i in range(nb):
        joint = links[i, 1]
        value = f[joint] if joint >= 0 else 0.0
        angle = value * geometry[i, _REVOLUTE]
        sine, versine = np.sin(angle), 1.0 - np.cos(angle)
        shift = value * geometry[i, _PRISMATIC]
        parent = links[i, 0]
        for r in range(3):
            for c in range(4):
                base = 4 * r + c
                local_rc = (geometry[i, base] + sine * geometry[i, 16 + base]
                            + versine * geometry[i, 32 + base] + shift * geometry[i, 48 + base])
                T[i, r, c] = local_rc  # the local transform, premultiplied below
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


@compiled
def _bracket(x, y, out):  # pragma: no cover - compiled
    """``out = [X, Y]`` for twists held as 6-vectors."""
    out[0] = x[1] * y[2] - x[2] * y[1]
    out[1] = x[2] * y[0] - x[0] * y[2]
    out[2] = x[0] * y[1] - x[1] * y[0]
    out[3] = x[1] * y[5] - x[2] * y[4] - (y[1] * x[5] - y[2] * x[4])
    out[4] = x[2] * y[3] - x[0] * y[5] - (y[2] * x[3] - y[0] * x[5])
    out[5] = x[0] * y[4] - x[1] * y[3] - (y[0] * x[4] - y[1] * x[3])


@compiled
def _twist_matrix(x, out):  # pragma: no cover - compiled
    """The 4×4 matrix ``[[ω̃, v], [0, 0]]`` of a 6-vector twist."""
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2], out[1, 2] = -x[2], x[1], -x[0]
    out[1, 0], out[2, 0], out[2, 1] = x[2], -x[1], x[0]
    out[0, 3], out[1, 3], out[2, 3] = x[3], x[4], x[5]
    out[3, 0] = out[3, 1] = out[3, 2] = out[3, 3] = 0.0


@compiled
def _times_transform(X, T, out):  # pragma: no cover - compiled
    """``out = X T`` for ``X`` with a zero last row and a rigid transform ``T``."""
    for r in range(3):
        for c in range(4):
            out[r, c] = X[r, 0] * T[0, c] + X[r, 1] * T[1, c] + X[r, 2] * T[2, c]
        out[r, 3] += X[r, 3]
    out[3, 0] = out[3, 1] = out[3, 2] = out[3, 3] = 0.0


@compiled
def _kinematics_kernel(geometry, links, f, grad, hess, order):  # pragma: no cover - compiled
    """Batched T, S, Ω, ∂T/∂q and ∂²T/∂q² (Eq. 40, 75, 99); see :func:`kinematics`."""
    states, nb = f.shape[0], links.shape[0]
    nq = grad.shape[2]
    first, second = order >= 1, order >= 2
    T = np.empty((states, nb, 4, 4))
    S4 = np.empty((states, nb, 4, 4) if first else (0, nb, 4, 4))
    twists = np.empty((states, nb, nq, 4, 4) if first else (0, nb, nq, 4, 4))
    dT = np.empty((states, nb, nq, 4, 4) if first else (0, nb, nq, 4, 4))
    d2T = np.empty((states, nb, nq, nq, 4, 4) if second else (0, nb, nq, nq, 4, 4))
    S = np.empty((nb, 6))
    omega = np.zeros((nb, nq, 6))
    domega = np.zeros((nb, nq, nq, 6))
    bracket = np.empty(6)
    X = np.empty((4, 4))
    for s in range(states):
        _transforms_and_joint_twists(geometry, links, f[s], T[s], S)
        if not first:
            continue
        gs = s if grad.shape[0] > 1 else 0
        hs = s if hess.shape[0] > 1 else 0
        for i in range(nb):
            _twist_matrix(S[i], S4[s, i])
            parent, joint = links[i, 0], links[i, 1]
            for k in range(nq):  # Ω_ik = Ω_{pr(i)k} + S_i ∇f_ik (Eq. 75)
                weight = grad[gs, joint, k] if joint >= 0 else 0.0
                for x in range(6):
                    omega[i, k, x] = (omega[parent, k, x] if parent >= 0 else 0.0) + S[i, x] * weight
                _twist_matrix(omega[i, k], twists[s, i, k])
                _times_transform(twists[s, i, k], T[s, i], dT[s, i, k])
            if not second:
                continue
            for k in range(nq):  # ∂Ω_ik/∂q_l = ∂Ω_{pr(i)k}/∂q_l + [Ω_il, S_i] ∇f_ik + S_i H_ikl (Eq. 99)
                weight = grad[gs, joint, k] if joint >= 0 else 0.0
                for l in range(nq):
                    curvature = hess[hs, joint, k, l] if joint >= 0 else 0.0
                    _bracket(omega[i, l], S[i], bracket)
                    for x in range(6):
                        inherited = domega[parent, k, l, x] if parent >= 0 else 0.0
                        domega[i, k, l, x] = inherited + bracket[x] * weight + S[i, x] * curvature
                    # (∂Ω_ik/∂q_l + Ω_ik Ω_il) T_i, with ω̃ ω̃' = ω' ωᵀ − (ω·ω') I₃
                    _twist_matrix(domega[i, k, l], X)
                    wk, wl = omega[i, k], omega[i, l]
                    dot = wk[0] * wl[0] + wk[1] * wl[1] + wk[2] * wl[2]
                    for r in range(3):
                        for c in range(3):
                            X[r, c] += wl[r] * wk[c]
                        X[r, r] -= dot
                    X[0, 3] += wk[1] * wl[5] - wk[2] * wl[4]
                    X[1, 3] += wk[2] * wl[3] - wk[0] * wl[5]
                    X[2, 3] += wk[0] * wl[4] - wk[1] * wl[3]
                    _times_transform(X, T[s, i], d2T[s, i, k, l])
    return T, S4, twists, dT, d2T


@compiled
def _apply_inertia(inertia, y, out):  # pragma: no cover - compiled
    """``out = 𝕀 y`` for a pseudo-inertia row ``(E, h, m)`` and a twist ``y``."""
    trace = inertia[0] + inertia[4] + inertia[8]
    h0, h1, h2, mass = inertia[9], inertia[10], inertia[11], inertia[12]
    for r in range(3):
        out[r] = trace * y[r] - (inertia[3 * r] * y[0] + inertia[3 * r + 1] * y[1] + inertia[3 * r + 2] * y[2])
    out[0] += h1 * y[5] - h2 * y[4]
    out[1] += h2 * y[3] - h0 * y[5]
    out[2] += h0 * y[4] - h1 * y[3]
    out[3] = mass * y[3] - (h1 * y[2] - h2 * y[1])
    out[4] = mass * y[4] - (h2 * y[0] - h0 * y[2])
    out[5] = mass * y[5] - (h0 * y[1] - h1 * y[0])


@compiled
def _world_inertia(T, body_inertia, out, rotated):  # pragma: no cover - compiled
    """``J̄ = T J Tᵀ`` as a row ``(E, h, m)``: ``E = R E Rᵀ + R h pᵀ + p (R h)ᵀ + m p pᵀ``, ``h = R h + m p``.

    ``rotated`` is (4, 3) scratch: ``R E`` in rows 0-2, ``R h`` in row 3.
    """
    mass = body_inertia[12]
    RE, rotated_h = rotated[:3], rotated[3]
    for r in range(3):
        rotated_h[r] = T[r, 0] * body_inertia[9] + T[r, 1] * body_inertia[10] + T[r, 2] * body_inertia[11]
        for c in range(3):
            RE[r, c] = T[r, 0] * body_inertia[c] + T[r, 1] * body_inertia[3 + c] + T[r, 2] * body_inertia[6 + c]
    for r in range(3):
        for c in range(3):
            out[3 * r + c] = (RE[r, 0] * T[c, 0] + RE[r, 1] * T[c, 1] + RE[r, 2] * T[c, 2]
                              + rotated_h[r] * T[c, 3] + T[r, 3] * rotated_h[c] + mass * T[r, 3] * T[c, 3])
        out[9 + r] = rotated_h[r] + mass * T[r, 3]
    out[12] = mass


@compiled
def _eom_workspace(nb, nq):  # pragma: no cover - compiled
    """Scratch arrays for :func:`_eom_state`, allocated once per batch (or per thread)."""
    return (np.empty((nb, 4, 4)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 13)),
            np.empty((nb, 6)), np.empty((nb, nb)), np.empty((nb, nq)), np.empty((nb, nq)), np.empty((2, 6)),
            np.empty((4, 3)), np.empty((2, nb)))


@compiled
def _eom_state(geometry, links, body_inertia, gravity, springs, f, grad, hess, curved, qd, M, Nqd, G, Q,
               workspace):  # pragma: no cover - compiled
    """``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) and the spring-damper forces ``Q`` of one state.

    ``grad`` (nj, nq) and ``hess`` (nj, nq, nq) belong to the state (``curved`` False: ``hess`` is
    zero); ``springs`` are :func:`spring_rows`; ``workspace`` is :func:`_eom_workspace`. Returns
    False when a spring-damper's points coincide (its direction is undefined), else True.
    """
    T, S, V, alpha, composite, force, K, g, Kg, vectors, rotated, torques = workspace
    momentum, work = vectors[0], vectors[1]
    nb, nq = links.shape[0], qd.shape[0]
    _transforms_and_joint_twists(geometry, links, f, T, S)
    for i in range(nb):
        parent, joint = links[i, 0], links[i, 1]
        rate = curvature = 0.0
        for k in range(nq):
            g[i, k] = grad[joint, k] if joint >= 0 else 0.0
            rate += g[i, k] * qd[k]
        if joint >= 0 and curved:
            for k in range(nq):
                for m in range(nq):
                    curvature += hess[joint, k, m] * qd[k] * qd[m]
        # V_i = V_{pr(i)} + S_i ḟ_i; α_i = α_{pr(i)} + [V_i, S_i] ḟ_i + S_i q̇ᵀH_i q̇,
        # with [V_i, S_i] = [V_{pr(i)}, S_i] since [S_i, S_i] = 0
        if parent >= 0:
            _bracket(V[parent], S[i], work)
            for x in range(6):
                V[i, x] = V[parent, x] + S[i, x] * rate
                alpha[i, x] = alpha[parent, x] + work[x] * rate + S[i, x] * curvature
        else:
            for x in range(6):
                V[i, x] = S[i, x] * rate
                alpha[i, x] = S[i, x] * curvature
        _world_inertia(T[i], body_inertia[i], composite[i], rotated)
        # the body's inertial force 𝕀 α + V ×* 𝕀 V
        _apply_inertia(composite[i], V[i], momentum)
        _apply_inertia(composite[i], alpha[i], force[i])
        w, v, n, F = V[i, :3], V[i, 3:], momentum[:3], momentum[3:]
        force[i, 0] += w[1] * n[2] - w[2] * n[1] + v[1] * F[2] - v[2] * F[1]
        force[i, 1] += w[2] * n[0] - w[0] * n[2] + v[2] * F[0] - v[0] * F[2]
        force[i, 2] += w[0] * n[1] - w[1] * n[0] + v[0] * F[1] - v[1] * F[0]
        force[i, 3] += w[1] * F[2] - w[2] * F[1]
        force[i, 4] += w[2] * F[0] - w[0] * F[2]
        force[i, 5] += w[0] * F[1] - w[1] * F[0]
    for i in range(nb - 1, -1, -1):  # composite inertias and forces: sums over subtrees
        parent = links[i, 0]
        if parent >= 0:
            for x in range(13):
                composite[parent, x] += composite[i, x]
            for x in range(6):
                force[parent, x] += force[i, x]
    for j in range(nb):
        # K_aj = K_ja = ⟨S_a, S_j C_j⟩ for every a ⪯ j; zero for unrelated bodies
        for a in range(nb):
            K[a, j] = 0.0
        _apply_inertia(composite[j], S[j], momentum)
        a = j
        while a >= 0:
            K[a, j] = K[j, a] = (S[a, 0] * momentum[0] + S[a, 1] * momentum[1] + S[a, 2] * momentum[2]
                                 + S[a, 3] * momentum[3] + S[a, 4] * momentum[4] + S[a, 5] * momentum[5])
            a = links[a, 0]
        # τ_j = ⟨S_j, Σ_{i⪰j} A_i J̄_i⟩ and γ_j = ḡᵀ S_j Σ_{i⪰j} m_i p̄_i
        torques[0, j] = (S[j, 0] * force[j, 0] + S[j, 1] * force[j, 1] + S[j, 2] * force[j, 2]
                         + S[j, 3] * force[j, 3] + S[j, 4] * force[j, 4] + S[j, 5] * force[j, 5])
        h, mass = composite[j, 9:12], composite[j, 12]
        torques[1, j] = (gravity[0] * (S[j, 1] * h[2] - S[j, 2] * h[1] + mass * S[j, 3])
                         + gravity[1] * (S[j, 2] * h[0] - S[j, 0] * h[2] + mass * S[j, 4])
                         + gravity[2] * (S[j, 0] * h[1] - S[j, 1] * h[0] + mass * S[j, 5]))
    # M = gᵀ K g, N q̇ = gᵀ τ, G = gᵀ γ over the nonzero gradient entries (g is sparse: a joint
    # variable usually depends on one or two coordinates)
    for k in range(nq):
        Nqd[k] = G[k] = 0.0
        for m in range(nq):
            M[k, m] = 0.0
    for j in range(nb):
        for m in range(nq):
            Kg[j, m] = 0.0
    for a in range(nb):
        for m in range(nq):
            weight = g[a, m]
            if weight != 0.0:
                Nqd[m] += weight * torques[0, a]
                G[m] += weight * torques[1, a]
                for j in range(nb):
                    Kg[j, m] += K[j, a] * weight
    for j in range(nb):
        for k in range(nq):
            weight = g[j, k]
            if weight != 0.0:
                for m in range(nq):
                    M[k, m] += weight * Kg[j, m]
    for k in range(nq):  # exactly symmetric (the two triangles differ by rounding)
        for m in range(k + 1, nq):
            M[k, m] = M[m, k] = 0.5 * (M[k, m] + M[m, k])
    return _spring_forces(links, springs, T, S, g, qd, Q, Kg[0])  # (Kg's first row: free scratch now)


@compiled
def _spring_forces(links, springs, T, S, g, qd, Q, length_gradient):  # pragma: no cover - compiled
    """Generalized forces ``Q = −Σ (k (L − L₀) + c L̇) ∂L/∂q`` of spring-dampers (Eq. 46, 161).

    ``∂L/∂q_k = u · (∂p_b/∂q_k − ∂p_a/∂q_k)`` with the unit vector ``u`` from ``p_a`` to ``p_b``
    and, for a point ``p`` of body ``i``, ``∂p/∂q_k = Σ_{j⪯i} g_jk (ω_j × p + v_j)`` (Eq. 75). Returns
    False when two points coincide.
    """
    nb, nq = links.shape[0], Q.shape[0]
    points = np.empty((2, 3))
    for k in range(nq):
        Q[k] = 0.0
    for e in range(springs.shape[0]):
        for end in range(2):
            body = int(springs[e, end])
            local = springs[e, 2 + 3 * end:5 + 3 * end]
            for r in range(3):
                points[end, r] = (local[r] if body == nb else
                                  T[body, r, 0] * local[0] + T[body, r, 1] * local[1] + T[body, r, 2] * local[2]
                                  + T[body, r, 3])
        d0, d1, d2 = points[1, 0] - points[0, 0], points[1, 1] - points[0, 1], points[1, 2] - points[0, 2]
        length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if length < 1e-12:
            return False
        u0, u1, u2 = d0 / length, d1 / length, d2 / length
        for k in range(nq):
            length_gradient[k] = 0.0
        for end in range(2):
            sign = 1.0 if end == 1 else -1.0
            p0, p1, p2 = points[end, 0], points[end, 1], points[end, 2]
            j = int(springs[e, end])
            j = -1 if j == nb else j
            while j >= 0:  # u · (ω_j × p + v_j) = ω_j · (p × u) + v_j · u
                along = (S[j, 0] * (p1 * u2 - p2 * u1) + S[j, 1] * (p2 * u0 - p0 * u2) + S[j, 2] * (p0 * u1 - p1 * u0)
                         + S[j, 3] * u0 + S[j, 4] * u1 + S[j, 5] * u2)
                for k in range(nq):
                    length_gradient[k] += sign * g[j, k] * along
                j = links[j, 0]
        rate = 0.0
        for k in range(nq):
            rate += length_gradient[k] * qd[k]
        tension = springs[e, 8] * (length - springs[e, 10]) + springs[e, 9] * rate
        for k in range(nq):
            Q[k] -= tension * length_gradient[k]
    return True


@compiled
def _nonzero(values):  # pragma: no cover - compiled
    """Whether any element is nonzero (batched Hessians are taken as nonzero)."""
    if values.shape[0] > 1:
        return True
    for x in values.ravel():
        if x != 0.0:
            return True
    return False


@compiled
def _eom_kernel(geometry, links, body_inertia, gravity, springs, f, grad, hess, qd):  # pragma: no cover - compiled
    """Batched ``M``, ``N q̇``, ``G`` and spring-damper forces, one thread; see :func:`equations_of_motion`."""
    states, nb, nq = f.shape[0], links.shape[0], qd.shape[1]
    M, Nqd, G, Q = np.empty((states, nq, nq)), np.empty((states, nq)), np.empty((states, nq)), np.empty((states, nq))
    workspace = _eom_workspace(nb, nq)
    curved = _nonzero(hess)
    regular = True
    for s in range(states):
        regular &= _eom_state(geometry, links, body_inertia, gravity, springs, f[s],
                              grad[s if grad.shape[0] > 1 else 0], hess[s if hess.shape[0] > 1 else 0], curved,
                              qd[s], M[s], Nqd[s], G[s], Q[s], workspace)
    return M, Nqd, G, Q, regular


@compiled
def _eom_one(geometry, links, body_inertia, gravity, springs, f, grad, hess, qd):  # pragma: no cover - compiled
    """``M``, ``N q̇``, ``G`` and spring-damper forces of a single state (no batch axis)."""
    nb, nq = links.shape[0], qd.shape[0]
    M, Nqd, G, Q = np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty(nq)
    regular = _eom_state(geometry, links, body_inertia, gravity, springs, f, grad, hess, True, qd, M, Nqd, G, Q,
                         _eom_workspace(nb, nq))
    return M, Nqd, G, Q, regular


def _parallel_eom(geometry, links, body_inertia, gravity, springs, f, grad, hess, qd, blocks):  # pragma: no cover
    """Batched ``M``, ``N q̇``, ``G`` and spring forces in ``blocks`` blocks of states, over the threads."""
    states, nb, nq = f.shape[0], links.shape[0], qd.shape[1]
    M, Nqd, G, Q = np.empty((states, nq, nq)), np.empty((states, nq)), np.empty((states, nq)), np.empty((states, nq))
    curved = _nonzero(hess)
    irregular = np.zeros(blocks, dtype=np.bool_)
    for block in numba.prange(blocks):
        workspace = _eom_workspace(nb, nq)
        for s in range(block * states // blocks, (block + 1) * states // blocks):
            if not _eom_state(geometry, links, body_inertia, gravity, springs, f[s],
                              grad[s if grad.shape[0] > 1 else 0], hess[s if hess.shape[0] > 1 else 0], curved,
                              qd[s], M[s], Nqd[s], G[s], Q[s], workspace):
                irregular[block] = True
    return M, Nqd, G, Q, not irregular.any()


if ENABLED:
    _parallel_eom = numba.njit(cache=True, nogil=True, parallel=True)(_parallel_eom)

_PARALLEL_STATES = 512
"""Batches at least this large are spread over all cores (below, threading costs more than it saves)."""


@compiled
def _path_kernel(T, twists, point_body, point_muscle, moving_of_point, local_points, offsets,
                 offset_gradients, segment_start, n_muscles, zero_length, order):  # pragma: no cover - compiled
    """Batched path lengths and moment arms; see :func:`path_lengths_and_moment_arms`."""
    states, nb = T.shape[0], T.shape[1]
    nq = twists.shape[2]
    P, n_segments = point_body.shape[0], segment_start.shape[0]
    lengths = np.zeros((states, n_muscles))
    R = np.zeros((states if order >= 1 else 0, nq, n_muscles))
    points, forces, rotation = np.empty((P, 3)), np.empty((P, 3)), np.empty((3, 3))
    for s in range(states):
        moving_state = s if offsets.shape[0] > 1 else 0
        for j in range(P):  # ground positions (Eq. 41) of body-fixed and moving points
            x0, x1, x2 = local_points[j, 0], local_points[j, 1], local_points[j, 2]
            row = moving_of_point[j]
            if row >= 0:
                x0 += offsets[moving_state, row, 0]
                x1 += offsets[moving_state, row, 1]
                x2 += offsets[moving_state, row, 2]
            b = point_body[j]
            if b == nb:
                points[j, 0], points[j, 1], points[j, 2] = x0, x1, x2
            else:
                for r in range(3):
                    points[j, r] = T[s, b, r, 0] * x0 + T[s, b, r, 1] * x1 + T[s, b, r, 2] * x2 + T[s, b, r, 3]
            forces[j, 0] = forces[j, 1] = forces[j, 2] = 0.0
        for g in range(n_segments):  # L_m = Σ |p_{j+1} − p_j|; f_j = u_j − u_{j−1}
            j = segment_start[g]
            d0 = points[j + 1, 0] - points[j, 0]
            d1 = points[j + 1, 1] - points[j, 1]
            d2 = points[j + 1, 2] - points[j, 2]
            length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if length < zero_length:
                return lengths, R, s * n_segments + g
            lengths[s, point_muscle[j]] += length
            forces[j, 0] += d0 / length
            forces[j, 1] += d1 / length
            forces[j, 2] += d2 / length
            forces[j + 1, 0] -= d0 / length
            forces[j + 1, 1] -= d1 / length
            forces[j + 1, 2] -= d2 / length
        if order < 1:
            continue
        for j in range(P):  # R_km = Σ_j ω_bk · (p_j × f_j) + v_bk · f_j + (R_bᵀ f_j) · ∂δ_j/∂q_k (Eq. 195)
            b, m = point_body[j], point_muscle[j]
            f0, f1, f2 = forces[j, 0], forces[j, 1], forces[j, 2]
            if b < nb:
                p0, p1, p2 = points[j, 0], points[j, 1], points[j, 2]
                n0, n1, n2 = p1 * f2 - p2 * f1, p2 * f0 - p0 * f2, p0 * f1 - p1 * f0
                for k in range(nq):
                    X = twists[s, b, k]
                    R[s, k, m] += (X[2, 1] * n0 + X[0, 2] * n1 + X[1, 0] * n2
                                   + X[0, 3] * f0 + X[1, 3] * f1 + X[2, 3] * f2)
            row = moving_of_point[j]
            if row >= 0:
                for r in range(3):
                    for c in range(3):
                        rotation[r, c] = T[s, b, r, c] if b < nb else (1.0 if r == c else 0.0)
                for c in range(3):
                    body_force = rotation[0, c] * f0 + rotation[1, c] * f1 + rotation[2, c] * f2
                    for k in range(nq):
                        R[s, k, m] += body_force * offset_gradients[moving_state, row, c, k]
    return lengths, R, -1


@compiled
def _stacked_cubics(knots, table, first_piece, x):  # pragma: no cover - compiled
    """Values and slopes of the stacked piecewise cubics at ``x`` (states, m); see StackedPiecewiseCubic."""
    states, m = x.shape
    values, slopes = np.empty((states, m)), np.empty((states, m))
    n = knots.shape[1]
    for s in range(states):
        for t in range(m):
            xt = x[s, t]
            piece = 0
            while piece < n and xt >= knots[t, piece]:
                piece += 1
            row = first_piece[t] + piece
            dx = xt - table[row, 0]
            b, c, d = table[row, 2], table[row, 3], table[row, 4]
            values[s, t] = table[row, 1] + dx * (b + dx * (c + dx * d))
            slopes[s, t] = b + dx * (2.0 * c + 3.0 * dx * d)
    return values, slopes


# ----------------------------------------------------------------------------- wrappers
def _writable(values: NDArray) -> NDArray[np.float64]:
    """``values`` as a C-contiguous, writeable float array. numba compiles a kernel separately for
    read-only arrays; passing per-state arrays always writeable (and the model's constant arrays
    always read-only) keeps each kernel to one compilation."""
    values = np.ascontiguousarray(values, dtype=float)
    return values if values.flags.writeable else values.copy()


def _batch_rows(values: NDArray, batch: tuple[int, ...], trailing: int) -> NDArray[np.float64]:
    """``values`` of shape ``batch + rest`` as a C-contiguous (states or 1, *rest) float array; a
    batch-broadcast array (all batch strides 0, e.g. constant gradients) becomes one row."""
    nbatch = values.ndim - trailing
    if nbatch == 0:
        return _writable(values)[None]
    if all(stride == 0 for stride in values.strides[:nbatch]):
        return _writable(values[(0,) * nbatch])[None]
    return _writable(values).reshape((-1,) + values.shape[nbatch:])


def kinematics(geometry: NDArray, links: NDArray, f: NDArray, grad: NDArray | None, hess: NDArray | None,
               nq: int, order: int) -> tuple[NDArray, ...]:
    """``T``, ``S``, ``Ω``, ``∂T/∂q`` and ``∂²T/∂q²`` of every body at every state (Eq. 40, 75, 99).

    Parameters
    ----------
    geometry, links : ndarray
        :func:`tree_geometry` rows and ``(parent, joint row)`` per body.
    f : ndarray, shape (..., nj)
    grad, hess : ndarray, shapes (..., nj, nq), (..., nj, nq, nq), or None below ``order``
    order : {0, 1, 2}

    Returns
    -------
    T, S, twists, dT, d2T : ndarray
        Shapes (..., nb, 4, 4), (..., nb, 4, 4), (..., nb, nq, 4, 4), (..., nb, nq, 4, 4),
        (..., nb, nq, nq, 4, 4); None above ``order``.
    """
    batch = f.shape[:-1]
    nj = f.shape[-1]
    if not batch:  # one state: no reshaping
        results = _kinematics_kernel(geometry, links, _writable(f)[None],
                                     _writable(grad)[None] if order >= 1 else np.zeros((1, nj, nq)),
                                     _writable(hess)[None] if order >= 2 else np.zeros((1, nj, nq, nq)), order)
        computed = (True, order >= 1, order >= 1, order >= 1, order >= 2)
        return tuple(value[0] if kept else None for value, kept in zip(results, computed))
    grad_rows = _batch_rows(grad, batch, 2) if order >= 1 else np.zeros((1, nj, nq))
    hess_rows = _batch_rows(hess, batch, 3) if order >= 2 else np.zeros((1, nj, nq, nq))
    T, S, twists, dT, d2T = _kinematics_kernel(geometry, links, _batch_rows(f, batch, 1), grad_rows,
                                               hess_rows, order)
    nb = links.shape[0]
    T = T.reshape(batch + (nb, 4, 4))
    if order < 1:
        return T, None, None, None, None
    S = S.reshape(batch + (nb, 4, 4))
    twists, dT = twists.reshape(batch + (nb, nq, 4, 4)), dT.reshape(batch + (nb, nq, 4, 4))
    return T, S, twists, dT, d2T.reshape(batch + (nb, nq, nq, 4, 4)) if order >= 2 else None


def spring_rows(body_indices: NDArray, springs) -> NDArray[np.float64]:
    """Spring-dampers as kernel rows ``(body a, body b, point a (3), point b (3), k, c, L₀)``.

    Parameters
    ----------
    body_indices : sequence of int
        ``(a, b)`` per spring; the ground is ``nb``.
    springs : sequence of SpringDamper
    """
    rows = np.empty((len(springs), 11))
    for row, spring, bodies in zip(rows, springs, body_indices):
        row[:2] = bodies
        row[2:5], row[5:8] = spring.point_a, spring.point_b
        row[8:] = spring.stiffness, spring.damping, spring.free_length
    rows.setflags(write=False)
    return rows


def equations_of_motion(geometry: NDArray, links: NDArray, body_inertia: NDArray, gravity: NDArray, springs: NDArray,
                        f: NDArray, grad: NDArray, hess: NDArray, qd: NDArray):
    """``M(q)``, ``N(q, q̇) q̇``, ``G(q)`` and spring-damper forces at every state (Eq. 145, 126, 187, 46).

    Parameters
    ----------
    geometry, links : ndarray
        As for :func:`kinematics`.
    body_inertia : ndarray, shape (nb, 13)
        :func:`inertia_rows` of the body-frame pseudo-inertias.
    gravity : ndarray, shape (3,)
    springs : ndarray, shape (n_springs, 11)
        :func:`spring_rows` (read-only), possibly empty.
    f, grad, hess : ndarray
        Joint variables with gradients and Hessians, shapes (..., nj), (..., nj, nq), (..., nj, nq, nq).
    qd : ndarray, shape (..., nq)

    Returns
    -------
    M : ndarray, shape (..., nq, nq)
    velocity_forces, gravity_forces, spring_forces : ndarray, shape (..., nq)
    regular : bool
        False when the two points of a spring-damper coincide at some state (``spring_forces`` is
        then incomplete).
    """
    if f.ndim == 1 and qd.ndim == 1:
        return _eom_one(geometry, links, body_inertia, gravity, springs, _writable(f), _writable(grad),
                        _writable(hess), _writable(qd))
    batch = f.shape[:-1]
    if qd.shape[:-1] != batch:
        qd = np.broadcast_to(qd, batch + qd.shape[-1:])
    arrays = (geometry, links, body_inertia, gravity, springs, _batch_rows(f, batch, 1), _batch_rows(grad, batch, 2),
              _batch_rows(hess, batch, 3), _writable(qd).reshape(-1, qd.shape[-1]))
    if arrays[5].shape[0] >= _PARALLEL_STATES and ENABLED:
        M, Nqd, G, Q, regular = _parallel_eom(*arrays, numba.get_num_threads())
    else:
        M, Nqd, G, Q, regular = _eom_kernel(*arrays)
    nq = qd.shape[-1]
    return (M.reshape(batch + (nq, nq)), Nqd.reshape(batch + (nq,)), G.reshape(batch + (nq,)),
            Q.reshape(batch + (nq,)), regular)


def path_lengths_and_moment_arms(T: NDArray, twists: NDArray | None, point_body: NDArray, point_muscle: NDArray,
                                 moving_of_point: NDArray, local_points: NDArray, offsets: NDArray | None,
                                 offset_gradients: NDArray | None, segment_start: NDArray, n_muscles: int,
                                 zero_length: float) -> tuple[NDArray, NDArray | None, int]:
    """Lengths ``L`` and moment arms ``R = −∂L/∂q`` of straight-line paths (Eq. 195, ground frame).

    The same sums as :meth:`mbkron.muscles.paths.MuscleSet.moment_arms`, point by point:
    ``R_km = Σ_j ω_bk · (p_j × f_j) + v_bk · f_j + (ᵇR_jᵀ f_j) · ∂δ_j/∂q_k``.

    Parameters
    ----------
    T : ndarray, shape (..., nb, 4, 4)
    twists : ndarray, shape (..., nb, nq, 4, 4), or None for lengths only
    point_body, point_muscle, moving_of_point : ndarray of int64, shape (P,)
        Body of each point (``nb`` for the ground), its muscle, its row among the moving points (−1).
    local_points : ndarray, shape (P, 3)
        (These and ``segment_start`` are constant arrays: pass them read-only, see :func:`_writable`.)
    offsets, offset_gradients : ndarray, shapes (..., n_moving, 3), (..., n_moving, 3, nq), or None
    segment_start : ndarray of int64, shape (n_segments,)
        First point of each segment (the second is the next point).
    n_muscles : int
    zero_length : float
        Shorter segments stop the evaluation.

    Returns
    -------
    lengths : ndarray, shape (..., n_muscles)
    R : ndarray, shape (..., nq, n_muscles), or None
    short : int
        ``state * n_segments + segment`` of the first segment shorter than ``zero_length`` (then the
        other results are incomplete), −1 if none.
    """
    batch = T.shape[:-3]
    nb = T.shape[-3]
    order = 0 if twists is None else 1
    nq = 0 if twists is None else twists.shape[-3]
    T_rows = _writable(T).reshape((-1, nb, 4, 4))
    twist_rows = np.zeros((1, nb, 0, 4, 4)) if twists is None else _writable(twists).reshape((-1, nb, nq, 4, 4))
    if offsets is None:
        offsets, offset_gradients = np.zeros((1, 0, 3)), np.zeros((1, 0, 3, max(nq, 1)))
    else:
        offsets, offset_gradients = _batch_rows(offsets, batch, 2), _batch_rows(offset_gradients, batch, 3)
    lengths, R, short = _path_kernel(T_rows, twist_rows, point_body, point_muscle, moving_of_point, local_points,
                                     offsets, offset_gradients, segment_start, n_muscles, zero_length, order)
    if short >= 0:
        return lengths, None, short
    return (lengths.reshape(batch + (n_muscles,)), R.reshape(batch + (nq, n_muscles)) if order else None, -1)


def stacked_cubics(knots: NDArray, table: NDArray, first_piece: NDArray, x: NDArray) -> tuple[NDArray, NDArray]:
    """Values and slopes of many piecewise cubics at once (see
    :class:`mbkron.muscles.points.StackedPiecewiseCubic`), shapes of ``x`` (..., m)."""
    rows = np.ascontiguousarray(x, dtype=float).reshape(-1, x.shape[-1])
    values, slopes = _stacked_cubics(knots, table, first_piece, rows)
    return values.reshape(x.shape), slopes.reshape(x.shape)
