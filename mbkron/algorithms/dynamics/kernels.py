"""Compiled dynamics: M, N q̇, G and spring-damper forces (Eq. 145, 126, 187, 46), state by state.

The identities behind the twist and pseudo-inertia arithmetic are in :mod:`mbkron.algorithms.kinematics.kernels`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.calls import borrowed
from mbkron.jit.common import AVAILABLE, jit, jitable, numba
from mbkron.jit.arrays import batch_rows, writable
from mbkron.algorithms.kinematics.kernels import transforms_and_joint_twists, twist_bracket
from mbkron.algorithms.kinematics.points_kernels import add_wrench_power, body_gradients

__all__ = ["equations_of_motion", "eom_state", "body_motion", "body_motions", "eom_workspace", "apply_inertia",
           "world_inertia", "line_geometry", "line_length", "spring_forces"]

# ----------------------------------------------------------------------------- per-state pieces
@jit
def apply_inertia(inertia, y, out):  # pragma: no cover - compiled
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


@jit
def world_inertia(T, body_inertia, out, rotated):  # pragma: no cover - compiled
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


@jitable
def body_motion(S, V, alpha, i, parent, rate, curvature, work):  # pragma: no cover - compiled
    """Body ``i``'s velocity twist ``V_i = Ṫ_i T_i⁻¹ = V_{pr(i)} + S_i ḟ_i`` and ``α_i = α_{pr(i)} + [V_i, S_i] ḟ_i
    + S_i c_i``, the twist with ``T̈_i T_i⁻¹ = α_i + V_i²`` (Eq. 57, 75), from its parent's (``parent`` < 0: the
    ground's, zero), its joint's ground twist ``S_i``, rate ``ḟ_i`` (``rate``) and ``c_i`` (``curvature``):
    ``f̈_i = ∇f_i · q̈ + q̇ᵀH_i q̇``, or its part ``q̇ᵀH_i q̇`` alone (the q̇-quadratic ``α``, Eq. 126). ``[V_i, S_i] =
    [V_{pr(i)}, S_i]`` since ``[S_i, S_i] = 0``; ``work`` is 6 numbers of scratch."""
    if parent >= 0:
        twist_bracket(V[parent], S[i], work)
        for x in range(6):
            V[i, x] = V[parent, x] + S[i, x] * rate
            alpha[i, x] = alpha[parent, x] + work[x] * rate + S[i, x] * curvature
    else:
        for x in range(6):
            V[i, x] = S[i, x] * rate
            alpha[i, x] = S[i, x] * curvature


@jit
def body_motions(geometry, links, f, grad, convective, qd, qdd):  # pragma: no cover - compiled
    """Velocity twists ``V`` and acceleration twists ``α`` (states, nb, 6) of every body, ``T̈_i T_i⁻¹ = α_i +
    V_i²`` (Eq. 57, 75; :func:`body_motion` with ``f̈_i = ∇f_i · q̈ + q̇ᵀH_i q̇``), at states of joint variables
    ``f`` (states, nj), gradients ``grad`` and convective terms ``convective`` (``q̇ᵀH_j q̇``) (states or 1, nj, nq;
    states or 1, nj), rates ``qd`` and accelerations ``qdd`` (states or 1, nq)."""
    states, nb, nq = f.shape[0], links.shape[0], grad.shape[2]
    V, alpha = np.empty((states, nb, 6)), np.empty((states, nb, 6))
    T, S, work = np.empty((nb, 4, 4)), np.empty((nb, 6)), np.empty(6)
    for s in range(states):
        transforms_and_joint_twists(geometry, links, f[s], T, S)
        state_grad, state_convective = grad[s if grad.shape[0] > 1 else 0], convective[s if convective.shape[0] > 1 else 0]
        state_qd, state_qdd = qd[s if qd.shape[0] > 1 else 0], qdd[s if qdd.shape[0] > 1 else 0]
        for i in range(nb):
            joint = links[i, 1]
            rate = curvature = 0.0
            if joint >= 0:
                curvature = state_convective[joint]
                for k in range(nq):
                    rate += state_grad[joint, k] * state_qd[k]
                    curvature += state_grad[joint, k] * state_qdd[k]
            body_motion(S, V[s], alpha[s], i, links[i, 0], rate, curvature, work)
    return V, alpha


@jitable
def eom_workspace(nb, nq):  # pragma: no cover - compiled
    """Scratch arrays for :func:`eom_state`, allocated once per batch (or per thread)."""
    return (np.empty((nb, 4, 4)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 13)),
            np.empty((nb, 6)), np.empty((nb, nb)), np.empty((nb, nq)), np.empty((nb, nq)), np.empty((2, 6)),
            np.empty((4, 3)), np.empty((2, nb)))


@jit
def eom_state(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q,
              workspace):  # pragma: no cover - compiled
    """``M``, ``N q̇``, ``G`` (Eq. 145, 126, 187) and the spring-damper forces ``Q`` of one state.

    ``grad`` (nj, nq) and the convective terms ``convective`` (nj,), ``q̇ᵀ H_j q̇`` per joint variable
    (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`), belong to the state; ``springs``
    are :func:`~mbkron.multibody.layout.spring_rows`; ``workspace`` is :func:`eom_workspace`. Returns False when a spring-damper's
    points coincide (its direction is undefined), else True.
    """
    # held by the caller for the call: borrowed, the arrays cost no atomic reference counting below
    geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q, workspace = borrowed((
        geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q, workspace))
    T, S, V, alpha, composite, force, K, g, Kg, vectors, rotated, torques = workspace
    momentum, work = vectors[0], vectors[1]
    nb, nq = links.shape[0], qd.shape[0]
    transforms_and_joint_twists(geometry, links, f, T, S)
    for i in range(nb):
        parent, joint = links[i, 0], links[i, 1]
        rate = 0.0
        for k in range(nq):
            g[i, k] = grad[joint, k] if joint >= 0 else 0.0
            rate += g[i, k] * qd[k]
        curvature = convective[joint] if joint >= 0 else 0.0
        body_motion(S, V, alpha, i, parent, rate, curvature, work)
        world_inertia(T[i], body_inertia[i], composite[i], rotated)
        # the body's inertial force 𝕀 α + V ×* 𝕀 V
        apply_inertia(composite[i], V[i], momentum)
        apply_inertia(composite[i], alpha[i], force[i])
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
        apply_inertia(composite[j], S[j], momentum)
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
    return spring_forces(links, springs, T, S, g, qd, Q, Kg[0])  # (Kg's first row: free scratch now)


@jit
def line_length(links, row, T, S, g, length_gradient):  # pragma: no cover - compiled
    """Length ``L`` of the straight line between the two body points of a :func:`~mbkron.multibody.layout.spring_rows`
    row, and ``∂L/∂q`` into ``length_gradient`` (nq,); ``-1.0`` when the points coincide (no direction).

    ``∂L/∂q_k = u · (∂p_b/∂q_k − ∂p_a/∂q_k)`` with the unit vector ``u`` from ``p_a`` to ``p_b`` and, for a
    point ``p`` of body ``i``, ``∂p/∂q_k = Σ_{j⪯i} g_jk (ω_j × p + v_j)`` (Eq. 46, 75): the ground twists
    ``S_j = (ω_j, v_j)`` of the joints and the joint variables' gradients ``g`` (per body) of the state, as
    :func:`mbkron.algorithms.kinematics.kernels.transforms_and_joint_twists` and :func:`eom_state` have them; the sum is
    the point Jacobians' :func:`mbkron.algorithms.kinematics.points_kernels.add_wrench_power` (the force ``±u`` at each end).
    """
    nb, nq = links.shape[0], length_gradient.shape[0]
    a0 = a1 = a2 = b0 = b1 = b2 = 0.0
    for end in range(2):
        body = int(row[end])
        x, y, z = row[2 + 3 * end], row[3 + 3 * end], row[4 + 3 * end]
        if body != nb:
            x, y, z = (T[body, 0, 0] * x + T[body, 0, 1] * y + T[body, 0, 2] * z + T[body, 0, 3],
                       T[body, 1, 0] * x + T[body, 1, 1] * y + T[body, 1, 2] * z + T[body, 1, 3],
                       T[body, 2, 0] * x + T[body, 2, 1] * y + T[body, 2, 2] * z + T[body, 2, 3])
        if end == 0:
            a0, a1, a2 = x, y, z
        else:
            b0, b1, b2 = x, y, z
    d0, d1, d2 = b0 - a0, b1 - a1, b2 - a2
    length = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if length < 1e-12:
        return -1.0
    u0, u1, u2 = d0 / length, d1 / length, d2 / length
    for k in range(nq):
        length_gradient[k] = 0.0
    for end in range(2):  # u · ∂p/∂q_k: the power of the force u at p, the wrench (p × u, u)
        sign = 1.0 if end == 1 else -1.0
        p0, p1, p2 = (b0, b1, b2) if end == 1 else (a0, a1, a2)
        body = int(row[end])
        add_wrench_power(links, S, g, -1 if body == nb else body, p1 * u2 - p2 * u1, p2 * u0 - p0 * u2,
                         p0 * u1 - p1 * u0, u0, u1, u2, sign, length_gradient)
    return length


@jit
def spring_forces(links, springs, T, S, g, qd, Q, length_gradient):  # pragma: no cover - compiled
    """Generalized forces ``Q = −Σ T ∂L/∂q`` of spring-dampers and line forces of constant tension, the tension
    ``T = k (L − L₀) + c L̇ + T₀`` (Eq. 46, 161; the rows of :func:`~mbkron.multibody.layout.spring_rows`, the
    geometry by :func:`line_length`). Returns False when two points coincide.
    """
    nq = Q.shape[0]
    for k in range(nq):
        Q[k] = 0.0
    for e in range(springs.shape[0]):
        length = line_length(links, springs[e], T, S, g, length_gradient)
        if length < 0.0:
            return False
        rate = 0.0
        for k in range(nq):
            rate += length_gradient[k] * qd[k]
        tension = springs[e, 8] * (length - springs[e, 10]) + springs[e, 9] * rate + springs[e, 11]
        for k in range(nq):
            Q[k] -= tension * length_gradient[k]
    return True


@jit
def line_geometry(geometry, links, f, grad, rows):  # pragma: no cover - compiled
    """Lengths ``L`` (states, n) and ``∂L/∂q`` (states, n, nq) of the lines of ``rows``
    (:func:`~mbkron.multibody.layout.spring_rows`) at states of joint variables ``f`` (states, nj) with gradients
    ``grad`` (states or 1, nj, nq), by :func:`line_length`; and whether no line's points coincide (the first state
    where some do ends the batch there)."""
    states, nb, nq, n = f.shape[0], links.shape[0], grad.shape[2], rows.shape[0]
    lengths, gradients = np.zeros((states, n)), np.zeros((states, n, nq))
    T, S, g = np.empty((nb, 4, 4)), np.empty((nb, 6)), np.empty((nb, nq))
    for s in range(states):
        transforms_and_joint_twists(geometry, links, f[s], T, S)
        body_gradients(links, grad[s if grad.shape[0] > 1 else 0], g)
        for e in range(n):
            lengths[s, e] = line_length(links, rows[e], T, S, g, gradients[s, e])
            if lengths[s, e] < 0.0:
                return lengths, gradients, False
    return lengths, gradients, True


@jit
def _eom_kernel(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd):  # pragma: no cover
    """Batched ``M``, ``N q̇``, ``G`` and spring-damper forces, one thread; see :func:`equations_of_motion`."""
    states, nb, nq = f.shape[0], links.shape[0], qd.shape[1]
    M, Nqd, G, Q = np.empty((states, nq, nq)), np.empty((states, nq)), np.empty((states, nq)), np.empty((states, nq))
    workspace = eom_workspace(nb, nq)
    # the arguments, held by the caller: their rows cost no atomic reference counting
    geometry, links, body_inertia, gravity, springs, f, grad, convective, qd = borrowed((
        geometry, links, body_inertia, gravity, springs, f, grad, convective, qd))
    regular = True
    for s in range(states):
        regular &= eom_state(geometry, links, body_inertia, gravity, springs, f[s],
                             grad[s if grad.shape[0] > 1 else 0], convective[s if convective.shape[0] > 1 else 0],
                             qd[s], M[s], Nqd[s], G[s], Q[s], workspace)
    return M, Nqd, G, Q, regular


@jit
def _eom_one(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd):  # pragma: no cover
    """``M``, ``N q̇``, ``G`` and spring-damper forces of a single state (no batch axis)."""
    nb, nq = links.shape[0], qd.shape[0]
    M, Nqd, G, Q = np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty(nq)
    regular = eom_state(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd, M, Nqd, G, Q,
                        eom_workspace(nb, nq))
    return M, Nqd, G, Q, regular


def _parallel_eom(geometry, links, body_inertia, gravity, springs, f, grad, convective, qd,
                  blocks):  # pragma: no cover
    """Batched ``M``, ``N q̇``, ``G`` and spring forces in ``blocks`` blocks of states, over the threads."""
    states, nb, nq = f.shape[0], links.shape[0], qd.shape[1]
    M, Nqd, G, Q = np.empty((states, nq, nq)), np.empty((states, nq)), np.empty((states, nq)), np.empty((states, nq))
    irregular = np.zeros(blocks, dtype=np.bool_)
    for block in numba.prange(blocks):
        workspace = eom_workspace(nb, nq)
        for s in range(block * states // blocks, (block + 1) * states // blocks):
            if not eom_state(geometry, links, body_inertia, gravity, springs, f[s],
                             grad[s if grad.shape[0] > 1 else 0], convective[s if convective.shape[0] > 1 else 0],
                             qd[s], M[s], Nqd[s], G[s], Q[s], workspace):
                irregular[block] = True
    return M, Nqd, G, Q, not irregular.any()


if AVAILABLE:
    _parallel_eom = numba.njit(cache=True, nogil=True, parallel=True)(_parallel_eom)

_PARALLEL_STATES = 512
"""Batches at least this large are spread over all cores (below, threading costs more than it saves)."""


def equations_of_motion(geometry: NDArray, links: NDArray, body_inertia: NDArray, gravity: NDArray, springs: NDArray,
                        f: NDArray, grad: NDArray, convective: NDArray, qd: NDArray):
    """``M(q)``, ``N(q, q̇) q̇``, ``G(q)`` and spring-damper forces at every state (Eq. 145, 126, 187, 46).

    Parameters
    ----------
    geometry, links : ndarray
        As for :func:`kinematics`.
    body_inertia : ndarray, shape (nb, 13)
        :func:`~mbkron.multibody.layout.inertia_rows` of the body-frame pseudo-inertias.
    gravity : ndarray, shape (3,)
    springs : ndarray, shape (n_springs, 12)
        :func:`~mbkron.multibody.layout.spring_rows` (read-only), possibly empty.
    f, grad, convective : ndarray
        Joint variables, their gradients and convective terms ``q̇ᵀ H_j q̇``
        (:meth:`mbkron.algorithms.jointvars.explicit.JointVariables.evaluate_convective`), shapes (..., nj), (..., nj, nq),
        (..., nj).
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
        return _eom_one(geometry, links, body_inertia, gravity, springs, writable(f), writable(grad),
                        writable(convective), writable(qd))
    batch = f.shape[:-1]
    if qd.shape[:-1] != batch:
        qd = np.broadcast_to(qd, batch + qd.shape[-1:])
    arrays = (geometry, links, body_inertia, gravity, springs, batch_rows(f, batch, 1), batch_rows(grad, batch, 2),
              batch_rows(np.broadcast_to(convective, batch + f.shape[-1:]), batch, 1), writable(qd).reshape(-1, qd.shape[-1]))
    if arrays[5].shape[0] >= _PARALLEL_STATES and AVAILABLE:
        M, Nqd, G, Q, regular = _parallel_eom(*arrays, numba.get_num_threads())
    else:
        M, Nqd, G, Q, regular = _eom_kernel(*arrays)
    nq = qd.shape[-1]
    return (M.reshape(batch + (nq, nq)), Nqd.reshape(batch + (nq,)), G.reshape(batch + (nq,)),
            Q.reshape(batch + (nq,)), regular)
