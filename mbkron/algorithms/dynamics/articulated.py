"""Forward and inverse dynamics in O(n) for simple trees: the articulated-body and recursive
Newton–Euler algorithms in ground coordinates.

:func:`mbkron.algorithms.dynamics.forward_kernels.forward_explicit` forms ``M`` (O(n²), Eq. 145) and factors it (O(n³)).
When every moving joint is driven by its own coordinate, ``f_i = w_i q_k(i) + c_i`` (one coordinate per
joint and one joint per coordinate, the common case of a chain or tree without rhythms), the same
``q̈ = M⁻¹ (G + Q − N q̇)`` follows in O(n) from Featherstone's articulated-body algorithm (R.
Featherstone, *Rigid Body Dynamics Algorithms*, 2008, Sec. 7.3, in absolute coordinates, Sec. 7.1):
everything is in the ground frame, where the joint twist of body i is the seed's
``S_i = T_i Â_i T_i⁻¹`` (the factor of Eq. 75-76) times ``w_i``, and no transforms between body
frames are needed:

1. outward: ``V_i = V_p + S_i q̇_k``, the velocity-product acceleration ``c_i = [V_p, S_i] q̇_k`` (the
   derivative of ``S_i``, as in Eq. 99), the body's inertia ``I_i = T_i J_i T_iᵀ`` (Eq. 131) as a 6×6
   map of twists to wrenches and its bias wrench ``p_i = V_i ×* I_i V_i``;
2. inward: ``U = I^A_i S_i``, ``D = S_iᵀ U``, ``u = τ_k − S_iᵀ p^A_i``; the parent receives
   ``I^A_i − U Uᵀ / D`` and ``p^A_i + (I^A_i − U Uᵀ / D) c_i + U u / D``;
3. outward: ``a_i = a_p + c_i``, ``q̈_k = (u − Uᵀ a_i) / D``, ``a_i += S_i q̈_k``, from the ground's
   acceleration ``a_0 = (0, −g)`` (gravity as an accelerated base).

``τ`` holds the actuation and the loads' generalized forces (spring-dampers, Eq. 46; joint torques
``∇fᵀ τ_joint``). ``D ≤ 0`` means ``M`` is not positive definite there (e.g. a massless tip): the
state is declined, as by the Cholesky route. Results equal the ``M⁻¹`` route to round-off (tested).

Inverse dynamics (:func:`articulated_inverse`) shares pass 1 and then runs the recursive Newton–Euler
algorithm (Featherstone 2008, Sec. 5.3) on the same quantities; it equals ``M q̈ + N q̇ − G − Q`` of
Eq. 198 to round-off (tested).
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.calls import borrowed
from mbkron.jit.common import AVAILABLE, inline_jit, jit, numba
from mbkron.algorithms.dynamics.kernels import apply_inertia, spring_forces, world_inertia
from mbkron.algorithms.dynamics.forward_kernels import PARALLEL_STATES
from mbkron.algorithms.kinematics.kernels import transforms_and_joint_twists, twist_bracket

__all__ = ["articulated_batch", "articulated_forward", "articulated_inverse"]

OK, SPRING_POINTS_COINCIDE, NOT_POSITIVE_DEFINITE = 0, 1, 2  # as mbkron.algorithms.dynamics.forward_kernels


@jit
def _inertia_matrix(row, out):  # pragma: no cover - compiled
    """The 6×6 map ``y ↦ 𝕀 y`` of a pseudo-inertia row ``(E, h, m)`` (as
    :func:`mbkron.algorithms.dynamics.kernels.apply_inertia`): ``[[tr(E) I − E, h̃], [h̃ᵀ, m I]]``."""
    trace = row[0] + row[4] + row[8]
    h0, h1, h2, mass = row[9], row[10], row[11], row[12]
    for r in range(3):
        for c in range(3):
            out[r, c] = -row[3 * r + c]
            out[3 + r, 3 + c] = 0.0
        out[r, r] += trace
        out[3 + r, 3 + r] = mass
    out[0, 3], out[0, 4], out[0, 5] = 0.0, -h2, h1
    out[1, 3], out[1, 4], out[1, 5] = h2, 0.0, -h0
    out[2, 3], out[2, 4], out[2, 5] = -h1, h0, 0.0
    for r in range(3):
        for c in range(3):
            out[3 + c, r] = out[r, 3 + c]


@jit
def _workspace(nb, nq, nj):  # pragma: no cover - compiled
    """Scratch of :func:`_state`, allocated once per call (or batch)."""
    g = np.zeros((nb, nq))
    return (np.empty(nj), np.empty((nb, 4, 4)), np.empty((nb, 6)), g, np.empty(nq), np.empty(nq), np.empty((nb, 6)),
            np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6, 6)), np.empty((nb, 6)), np.empty(nb), np.empty(nb),
            np.empty((nb, 13)), np.empty((4, 3)), np.empty(6), np.empty(6), np.empty((nb, 6)))


@inline_jit
def _outward(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd,
             work, inverse):  # pragma: no cover - compiled
    """The generalized forces of the loads plus ``force`` (into ``tau``) and pass 1 (into ``work``); the status."""
    f, T, S, g, tau, scratch, V, bias_accel, wrench, inertia, U, D, u, rows, rotated, scaled, momentum, accel = work
    nb, nq = links.shape[0], q.shape[0]
    for i in range(nb):  # f = A q + c, A's one entry per joint row w_i at (row, k(i)): O(n), not O(n²)
        j = links[i, 1]
        if j >= 0:
            f[j] = c[j] + weight[i] * q[coordinate[i]]
    transforms_and_joint_twists(geometry, links, f, T, S)
    # generalized forces: actuation, spring-dampers (Eq. 46), joint torques ∇fᵀ τ_joint
    for i in range(nb):
        if coordinate[i] >= 0:
            g[i, coordinate[i]] = weight[i]
    if not spring_forces(links, springs, T, S, g, qd, tau, scratch):
        return SPRING_POINTS_COINCIDE
    for k in range(nq):
        tau[k] += force[k]
    for i in range(nb):  # ∇fᵀ τ_joint: the one entry of A per joint row
        j = links[i, 1]
        if j >= 0:
            tau[coordinate[i]] += weight[i] * joint_torque[j]
    for i in range(nb):  # pass 1: velocities, velocity-product accelerations, bias wrenches
        parent, k = links[i, 0], coordinate[i]
        for x in range(6):
            S[i, x] *= weight[i] if k >= 0 else 0.0
        rate = qd[k] if k >= 0 else 0.0
        if parent >= 0:
            twist_bracket(V[parent], S[i], bias_accel[i])
            for x in range(6):
                bias_accel[i, x] *= rate
                V[i, x] = V[parent, x] + S[i, x] * rate
        else:
            for x in range(6):
                V[i, x] = S[i, x] * rate
                bias_accel[i, x] = 0.0
        world_inertia(T[i], body_inertia[i], rows[i], rotated)
        if not inverse:  # the articulated inertias start from the 6×6 maps; the inverse applies the rows
            _inertia_matrix(rows[i], inertia[i])
        apply_inertia(rows[i], V[i], momentum)
        w, v, n, F = V[i, :3], V[i, 3:], momentum[:3], momentum[3:]
        wrench[i, 0] = w[1] * n[2] - w[2] * n[1] + v[1] * F[2] - v[2] * F[1]
        wrench[i, 1] = w[2] * n[0] - w[0] * n[2] + v[2] * F[0] - v[0] * F[2]
        wrench[i, 2] = w[0] * n[1] - w[1] * n[0] + v[0] * F[1] - v[1] * F[0]
        wrench[i, 3] = w[1] * F[2] - w[2] * F[1]
        wrench[i, 4] = w[2] * F[0] - w[0] * F[2]
        wrench[i, 5] = w[0] * F[1] - w[1] * F[0]
    return OK


@jit
def _state(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd, given,
           out, work, inverse):  # pragma: no cover - compiled
    """One state: ``q̈`` into ``out`` (forward), or with ``inverse`` the ``τ`` that gives the accelerations
    ``given`` into ``out`` (:func:`_inverse`); returns the status (see :func:`articulated_forward`)."""
    # held by the caller for the call: borrowed, the arrays cost no atomic reference counting below
    (geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd, given, out,
     work) = borrowed((geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                       qd, given, out, work))
    status = _outward(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                      qd, work, inverse)
    if status != OK:
        return status
    if inverse:
        return _inverse(links, gravity, coordinate, given, out, work)
    return _articulated(links, gravity, coordinate, out, work)


@inline_jit
def _inverse(links, gravity, coordinate, qdd, tau_out, work):  # pragma: no cover - compiled
    """The recursive Newton–Euler algorithm on pass 1's quantities (Featherstone 2008, Sec. 5.3, in
    absolute coordinates): outward ``a_i = a_p + c_i + S_i q̈_k`` from ``a_0 = (0, −g)``, the body wrench
    ``F_i = I_i a_i + p_i``; inward, each joint's ``S_iᵀ F_i`` with its descendants' wrenches added. Minus the
    loads' generalized forces, that is ``τ = M q̈ + N q̇ − G − Q`` (Eq. 198)."""
    f, T, S, g, tau, scratch, V, bias_accel, wrench, inertia, U, D, u, rows, rotated, scaled, momentum, accel = work
    nb, nq = links.shape[0], qdd.shape[0]
    for i in range(nb):
        parent, k = links[i, 0], coordinate[i]
        rate = qdd[k] if k >= 0 else 0.0
        for x in range(6):
            base = accel[parent, x] if parent >= 0 else (0.0 if x < 3 else -gravity[x - 3])
            accel[i, x] = base + bias_accel[i, x] + S[i, x] * rate
        apply_inertia(rows[i], accel[i], momentum)  # I_i a_i from the pseudo-inertia row: no 6×6 product
        for r in range(6):
            wrench[i, r] += momentum[r]
    for k in range(nq):
        tau_out[k] = -tau[k]
    for i in range(nb - 1, -1, -1):
        parent, k = links[i, 0], coordinate[i]
        if k >= 0:
            for x in range(6):
                tau_out[k] += S[i, x] * wrench[i, x]
        if parent >= 0:
            for x in range(6):
                wrench[parent, x] += wrench[i, x]
    for k in range(nq):
        if not np.isfinite(tau_out[k]):
            return NOT_POSITIVE_DEFINITE
    return OK


@inline_jit
def _articulated(links, gravity, coordinate, qdd, work):  # pragma: no cover - compiled
    """Passes 2 and 3 of the articulated-body algorithm on pass 1's quantities: ``q̈`` into ``qdd``."""
    f, T, S, g, tau, scratch, V, bias_accel, wrench, inertia, U, D, u, rows, rotated, scaled, momentum, accel = work
    nb, nq = links.shape[0], qdd.shape[0]
    for i in range(nb - 1, -1, -1):  # pass 2: articulated inertias and bias wrenches, to the parents
        parent, k = links[i, 0], coordinate[i]
        Ia, pa = inertia[i], wrench[i]
        if k >= 0:
            for r in range(6):
                value = 0.0
                for x in range(6):
                    value += Ia[r, x] * S[i, x]
                U[i, r] = value
            D[i] = S[i, 0] * U[i, 0] + S[i, 1] * U[i, 1] + S[i, 2] * U[i, 2] + S[i, 3] * U[i, 3] + S[i, 4] * U[i, 4] \
                + S[i, 5] * U[i, 5]
            if not D[i] > 0.0 or not np.isfinite(D[i]):
                return NOT_POSITIVE_DEFINITE
            u[i] = tau[k] - (S[i, 0] * pa[0] + S[i, 1] * pa[1] + S[i, 2] * pa[2] + S[i, 3] * pa[3] + S[i, 4] * pa[4]
                             + S[i, 5] * pa[5])
        else:  # a fixed joint: U = 0, u = 0 (the body moves with its parent), written rather than left as whatever
            for r in range(6):  # the scratch held: 0 times a NaN there would be NaN
                U[i, r] = 0.0
            D[i] = 1.0
            u[i] = 0.0
        if parent < 0:
            continue
        for x in range(6):  # U / D
            scaled[x] = U[i, x] / D[i]
        for r in range(6):
            momentum[r] = pa[r] + u[i] * scaled[r]
        for r in range(6):  # I^a = I^A − U Uᵀ / D is symmetric: one triangle, mirrored
            for x in range(r, 6):
                articulated = Ia[r, x] - U[i, r] * scaled[x]
                inertia[parent, r, x] += articulated
                momentum[r] += articulated * bias_accel[i, x]
                if x != r:
                    inertia[parent, x, r] += articulated
                    momentum[x] += articulated * bias_accel[i, r]
        for r in range(6):
            wrench[parent, r] += momentum[r]
    for i in range(nb):  # pass 3: accelerations from the ground's a_0 = (0, −g)
        parent, k = links[i, 0], coordinate[i]
        for x in range(6):
            base = accel[parent, x] if parent >= 0 else (0.0 if x < 3 else -gravity[x - 3])
            accel[i, x] = base + bias_accel[i, x]
        if k >= 0:
            value = u[i]
            for x in range(6):
                value -= U[i, x] * accel[i, x]
            qdd[k] = value / D[i]
            for x in range(6):
                accel[i, x] += S[i, x] * qdd[k]
    for k in range(nq):
        if not np.isfinite(qdd[k]):
            return NOT_POSITIVE_DEFINITE
    return OK


@jit
def _one(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd, given,
         inverse):  # pragma: no cover - compiled
    nb, nq = links.shape[0], q.shape[0]
    out = np.empty(nq)
    status = _state(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                    qd, given, out, _workspace(nb, nq, c.shape[0]), inverse)
    return out, status


@jit
def articulated_forward(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate,
                        weight, q, qd):  # pragma: no cover - compiled
    """``q̈`` of one state of a simple tree (see the module docstring); returns ``(q̈, status)``, the status OK only
    where every entry of ``q̈`` is finite (:data:`NOT_POSITIVE_DEFINITE` otherwise).

    ``coordinate[i]`` is the coordinate driving body i's joint (−1 for a fixed joint), ``weight[i]`` its
    coefficient ``w_i`` (the one entry of the affine joint-variable map's matrix in body i's joint row), ``c``
    that map's constant; ``force`` (nq,) the actuation plus constant generalized forces; ``joint_torque`` (nj,)
    the constant joint torques.
    """
    return _one(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd,
                q, np.bool_(False))  # np.bool_: one specialisation of _one (a literal False/True is a type each)


@jit
def articulated_inverse(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate,
                        weight, q, qd, qdd):  # pragma: no cover - compiled
    """``τ = M q̈ + N q̇ − G − Q`` of one state of a simple tree by the recursive Newton–Euler algorithm, ``Q``
    the generalized forces of the loads and ``force``; returns ``(τ, status)`` (arguments as
    :func:`articulated_forward`)."""
    return _one(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd,
                qdd, np.bool_(True))


@jit
def _rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd, given,
          out, start, stop, inverse, work):  # pragma: no cover - compiled
    """States ``start:stop`` of a batch in the scratch ``work`` (:func:`_workspace`); the first status other than
    OK ends them."""
    # held by the caller for the call: borrowed, the rows taken from them cost no atomic reference counting
    (geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd, given, out,
     work) = borrowed((geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                       qd, given, out, work))
    for s in range(start, stop):
        status = _state(geometry, links, body_inertia, gravity, springs, joint_torque,
                        force[s if force.shape[0] > 1 else 0], c, coordinate, weight, q[s], qd[s], given[s], out[s],
                        work, inverse)
        if status != OK:
            return status
    return OK


@jit
def _batch_serial(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                  qd, given, inverse):  # pragma: no cover - compiled
    out = np.empty(q.shape)
    status = _rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                   qd, given, out, 0, q.shape[0], inverse, _workspace(links.shape[0], q.shape[1], c.shape[0]))
    return out, status


def _batch_parallel(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q,
                    qd, given, inverse, blocks):  # pragma: no cover - compiled
    states = q.shape[0]
    out = np.empty(q.shape)
    status = np.zeros(blocks, dtype=np.int64)
    for block in numba.prange(blocks):
        status[block] = _rows(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate,
                              weight, q, qd, given, out, block * states // blocks, (block + 1) * states // blocks,
                              inverse, _workspace(links.shape[0], q.shape[1], c.shape[0]))
    return out, status.max()


if AVAILABLE:
    _batch_parallel = numba.njit(cache=True, nogil=True, parallel=True)(_batch_parallel)


def articulated_batch(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight,
                      q, qd, qdd=None):
    """:func:`articulated_forward` of states ``q``, ``qd`` (states, nq), ``force`` (states or 1, nq) or, given
    accelerations ``qdd`` (states, nq), :func:`articulated_inverse`; over the threads for batches of at least
    :data:`mbkron.algorithms.dynamics.forward_kernels.PARALLEL_STATES`. Returns ``(q̈ or τ, status)`` with the first status
    other than OK of a block."""
    inverse = qdd is not None
    arrays = (geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate, weight, q, qd,
              qdd if inverse else q, inverse)
    if AVAILABLE and q.shape[0] >= PARALLEL_STATES and numba.get_num_threads() > 1:
        return _batch_parallel(*arrays, numba.get_num_threads())
    return _batch_serial(*arrays)
