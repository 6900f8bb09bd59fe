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
from mbkron.algorithms.dynamics.forward_kernels import PARALLEL_STATES, cholesky_columns, cholesky_factor
from mbkron.algorithms.kinematics.kernels import transforms_and_joint_twists, twist_bracket

__all__ = ["articulated_batch", "articulated_derivatives", "articulated_forward", "articulated_forward_derivatives",
           "articulated_inverse"]

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


@jit
def _force_cross(x, h, out):  # pragma: no cover - compiled
    """``out = X ×* h`` (the dual of :func:`~mbkron.algorithms.kinematics.kernels.twist_bracket`) for a twist
    ``X = (ω, v)`` and a wrench ``h = (n, f)``: ``(ω × n + v × f, ω × f)``."""
    out[0] = x[1] * h[2] - x[2] * h[1] + x[4] * h[5] - x[5] * h[4]
    out[1] = x[2] * h[0] - x[0] * h[2] + x[5] * h[3] - x[3] * h[5]
    out[2] = x[0] * h[1] - x[1] * h[0] + x[3] * h[4] - x[4] * h[3]
    out[3] = x[1] * h[5] - x[2] * h[4]
    out[4] = x[2] * h[3] - x[0] * h[5]
    out[5] = x[0] * h[4] - x[1] * h[3]


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
        _force_cross(V[i], momentum, wrench[i])  # the bias wrench p_i = V_i ×* I_i V_i
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
def _dot(x, y):  # pragma: no cover - compiled
    """``x · y`` of two 6-vectors, unrolled (:func:`mbkron.numerics.linalg.dot`'s loop over any length made the
    derivatives 1.1–1.3× slower: 20.0 against 15.6 µs for a 20-body chain's)."""
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@jit
def _product(matrix, y, out):  # pragma: no cover - compiled
    """``out = matrix y`` for a 6×6 ``matrix``."""
    for r in range(6):
        value = 0.0
        for c in range(6):
            value += matrix[r, c] * y[c]
        out[r] = value


@jit
def _derivatives(links, gravity, coordinate, work, dq, dqd, mass, local):  # pragma: no cover - compiled
    """``∂τ/∂q`` into ``dq``, ``∂τ/∂q̇`` into ``dqd`` and ``∂τ/∂q̈ = M`` into ``mass`` ((nq, nq): ``[k, m]`` the
    derivative of ``τ_k`` by the ``m``-th variable) of the recursive Newton–Euler algorithm, from the quantities of
    pass 1 and :func:`_inverse` in ``work`` (``V_i``, ``s_i``, the world inertias, ``a_i`` in ``accel`` and the subtree
    sums ``F̄_i`` in ``wrench``), in the ground frame. ``local`` is the scratch of :func:`_derivative_workspace`.

    A change of ``q_m`` moves the subtree of the body ``b`` it drives (a simple tree: one) rigidly by the twist
    ``Z = s_b``, its scaled joint twist: a twist fixed in it changes by ``[Z, ·]``, a wrench by ``Z ×*``, an inertia
    by ``Z ×* I − I Z ×`` (Featherstone 2008, Eq. 2.57). The body velocities and accelerations of the subtree change
    by that and, since the parent's ``V_p``, ``a_p`` of ``b`` stay, by ``δV_d = −W``, ``δa_d = −[Z, a_p] −
    [W, V_d − V_p]`` with ``W = [Z, V_p]`` (by the Jacobi identity on ``c_i = [V_p(i), s_i] q̇_i``). Summed over a
    subtree, with the composite inertia ``Ī_k = Σ I_d``, momentum ``H̄_k = Σ I_d V_d`` and ``B̄_k = Σ (V_d ×* I_d −
    I_d V_d ×)`` (Pinocchio's ``B``), ``∂F̄_k = Z ×* F̄_k − Ī_k u − W ×* H̄_k − B̄_k W`` with ``u = [Z, a_p] −
    [W, V_p]``; the ``Z ×*`` part cancels against ``∂s_k = [Z, s_k]`` in ``∂τ_k = ∂s_k · F̄_k + s_k · ∂F̄_k``, so
    that for every joint ``k`` in the subtree ``∂τ_k/∂q_m = −(α_k · u + β_k · W)`` with ``α_k = Ī_k s_k`` and
    ``β_k = B̄_kᵀ s_k − s_k ×* H̄_k``, and for each joint ``a`` above ``b`` (whose twist stays) ``s_a · ∂F̄_b``.
    By ``q̇_m``: ``∂V_d = Z``, ``∂a_d = [Z, V_d] − 2W``, so ``∂F̄_k = B̄_k Z + Z ×* H̄_k − 2 Ī_k W`` and
    ``∂τ_k/∂q̇_m = β_k · Z − 2 α_k · W``; by ``q̈_m``: ``∂F̄_k = Ī_k Z``, ``M_km = α_k · Z``. These are the
    composite quantities of Carpentier & Mansard's derivatives of the RNEA (RSS 2018), in absolute coordinates:
    O(n) per coordinate plus six products per joint pair. Gravity enters as the ground's acceleration ``(0, −g)``.
    The loads' generalized forces are taken as constant (the caller covers only models whose loads are)."""
    f, T, S, g, tau, scratch, V, bias_accel, wrench, inertia, U, D, u_, rows, rotated, scaled, momentum, accel = work
    inside, composite, coriolis, held, alpha, beta, vec = local  # coriolis: B (symmetric)
    nb, nq = links.shape[0], dq.shape[0]
    for k in range(nq):
        for m in range(nq):
            dq[k, m] = dqd[k, m] = mass[k, m] = 0.0
    h, x1, x2, W, u, gamma, gamma_d, gamma_a = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], vec[6], vec[7]
    column = vec[8]
    for i in range(nb):  # each body's I_i, h_i = I_i V_i and B_i = V_i ×* I_i − I_i V_i × = P + Pᵀ, P = V_i ×* I_i
        _inertia_matrix(rows[i], composite[i])  # (since V × = −(V ×*)ᵀ and I is symmetric)
        _product(composite[i], V[i], held[i])
        for c in range(6):  # column c of P: V ×* (I e_c)
            for r in range(6):
                column[r] = composite[i, r, c]
            _force_cross(V[i], column, x1)
            for r in range(6):
                coriolis[i, r, c] = x1[r]
        for r in range(6):
            for c in range(r, 6):
                value = coriolis[i, r, c] + coriolis[i, c, r]
                coriolis[i, r, c] = coriolis[i, c, r] = value
    for i in range(nb - 1, -1, -1):  # the subtree sums Ī, H̄, B̄, then α, β of each joint
        parent = links[i, 0]
        k = coordinate[i]
        if k >= 0:
            _product(composite[i], S[i], alpha[i])
            _product(coriolis[i], S[i], beta[i])
            _force_cross(S[i], held[i], h)
            for r in range(6):
                beta[i, r] -= h[r]
        if parent >= 0:
            for r in range(6):
                held[parent, r] += held[i, r]
                for c in range(6):
                    composite[parent, r, c] += composite[i, r, c]
                    coriolis[parent, r, c] += coriolis[i, r, c]
    for b in range(nb):
        m = coordinate[b]
        if m < 0:
            continue
        Z, parent = S[b], links[b, 0]
        for r in range(6):  # V_p and a_p of b's parent (the ground: 0 and (0, −g))
            x1[r] = V[parent, r] if parent >= 0 else 0.0
            x2[r] = accel[parent, r] if parent >= 0 else (0.0 if r < 3 else -gravity[r - 3])
        twist_bracket(Z, x1, W)
        twist_bracket(Z, x2, u)
        twist_bracket(W, x1, h)
        for r in range(6):
            u[r] -= h[r]
        for i in range(b, nb):  # the joints of b's subtree (parents before children)
            parent_i = links[i, 0]
            inside[i] = i == b or (parent_i >= b and inside[parent_i])
            k = coordinate[i]
            if inside[i] and k >= 0:
                a_u, a_w = _dot(alpha[i], u), _dot(alpha[i], W)
                dq[k, m] = -(a_u + _dot(beta[i], W))
                dqd[k, m] = _dot(beta[i], Z) - 2.0 * a_w
                mass[k, m] = _dot(alpha[i], Z)
        # ∂F̄_b by q_m, q̇_m, q̈_m for the joints above b
        _force_cross(Z, wrench[b], gamma)
        _product(composite[b], u, h)
        _force_cross(W, held[b], x1)
        _product(coriolis[b], W, x2)
        for r in range(6):
            gamma[r] -= h[r] + x1[r] + x2[r]
        _product(coriolis[b], Z, gamma_d)
        _force_cross(Z, held[b], x1)
        _product(composite[b], W, x2)
        for r in range(6):
            gamma_d[r] += x1[r] - 2.0 * x2[r]
        _product(composite[b], Z, gamma_a)
        a = links[b, 0]
        while a >= 0:
            k = coordinate[a]
            if k >= 0:
                dq[k, m] = _dot(S[a], gamma)
                dqd[k, m] = _dot(S[a], gamma_d)
                mass[k, m] = _dot(S[a], gamma_a)
            a = links[a, 0]


@jit
def _derivative_workspace(nb):  # pragma: no cover - compiled
    """Scratch of :func:`_derivatives`: the subtree mask; per body ``Ī`` and ``B̄`` (6×6), ``H̄``, ``α``, ``β``; and
    nine 6-vectors."""
    return (np.zeros(nb, dtype=np.bool_), np.zeros((nb, 6, 6)), np.zeros((nb, 6, 6)), np.zeros((nb, 6)),
            np.zeros((nb, 6)), np.zeros((nb, 6)), np.zeros((9, 6)))


@jit
def articulated_derivatives(geometry, links, body_inertia, gravity, springs, joint_torque, force, c, coordinate,
                            weight, q, qd, qdd):  # pragma: no cover - compiled
    """``τ`` (:func:`articulated_inverse`) and its derivatives ``∂τ/∂q``, ``∂τ/∂q̇``, ``∂τ/∂q̈ = M`` at states
    ``q``, ``qd``, ``qdd`` (states, nq) of a simple tree (:func:`_derivatives`; arguments as
    :func:`articulated_forward`, ``force`` (states or 1, nq)), for models whose loads' generalized forces do not
    depend on the state (no spring-dampers: ``springs`` empty). Returns ``(τ, ∂τ/∂q, ∂τ/∂q̇, M, status)``, shapes
    (states, nq) and (states, nq, nq), the first status other than OK ending the batch."""
    states, nq, nb = q.shape[0], q.shape[1], links.shape[0]
    tau = np.empty((states, nq))
    dq, dqd, mass = np.empty((states, nq, nq)), np.empty((states, nq, nq)), np.empty((states, nq, nq))
    work, local = _workspace(nb, nq, c.shape[0]), _derivative_workspace(nb)
    for s in range(states):
        status = _state(geometry, links, body_inertia, gravity, springs, joint_torque,
                        force[s if force.shape[0] > 1 else 0], c, coordinate, weight, q[s], qd[s], qdd[s], tau[s],
                        work, np.bool_(True))
        if status != OK:
            return tau, dq, dqd, mass, status
        _derivatives(links, gravity, coordinate, work, dq[s], dqd[s], mass[s], local)
    return tau, dq, dqd, mass, OK


@jit
def articulated_forward_derivatives(geometry, links, body_inertia, gravity, springs, joint_torque, force, c,
                                    coordinate, weight, q, qd):  # pragma: no cover - compiled
    """``q̈`` (:func:`articulated_forward`) and its derivatives ``∂q̈/∂q = −M⁻¹ ∂τ/∂q``, ``∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇``
    and ``∂q̈/∂τ = M⁻¹`` at states ``q``, ``qd`` (states, nq) with ``force`` (states or 1, nq): the inverse dynamics'
    derivatives (:func:`_derivatives`) at the forward dynamics' ``q̈`` (the implicit function theorem on
    ``τ(q, q̇, q̈(q, q̇)) = force``), ``M`` factored once per state by Cholesky. Covers what
    :func:`articulated_derivatives` covers. Returns ``(q̈, ∂q̈/∂q, ∂q̈/∂q̇, M⁻¹, status)``, the first status other
    than OK ending the batch."""
    states, nq, nb = q.shape[0], q.shape[1], links.shape[0]
    qdd, tau = np.empty((states, nq)), np.empty(nq)
    dq, dqd, inverse = np.empty((states, nq, nq)), np.empty((states, nq, nq)), np.empty((states, nq, nq))
    dtau_dq, dtau_dqd, mass, L, column = (np.empty((nq, nq)), np.empty((nq, nq)), np.empty((nq, nq)),
                                          np.empty((nq, nq)), np.empty(nq))
    identity = np.zeros((nq, nq))
    for k in range(nq):
        identity[k, k] = 1.0
    work, local = _workspace(nb, nq, c.shape[0]), _derivative_workspace(nb)
    wrench, bias = work[8], np.empty((nb, 6))
    for s in range(states):
        status = _outward(geometry, links, body_inertia, gravity, springs, joint_torque,
                          force[s if force.shape[0] > 1 else 0], c, coordinate, weight, q[s], qd[s], work,
                          np.bool_(False))
        if status == OK:  # q̈ by passes 2 and 3 (which sum the bias wrenches into the parents': kept for the RNEA)
            for i in range(nb):
                for x in range(6):
                    bias[i, x] = wrench[i, x]
            status = _articulated(links, gravity, coordinate, qdd[s], work)
        if status == OK:  # the RNEA at that q̈ on pass 1's quantities: a_i and the subtree sums F̄_i
            for i in range(nb):
                for x in range(6):
                    wrench[i, x] = bias[i, x]
            status = _inverse(links, gravity, coordinate, qdd[s], tau, work)
        if status != OK:
            return qdd, dq, dqd, inverse, status
        _derivatives(links, gravity, coordinate, work, dtau_dq, dtau_dqd, mass, local)
        if not cholesky_factor(mass, L):
            return qdd, dq, dqd, inverse, NOT_POSITIVE_DEFINITE
        for k in range(nq):
            for m in range(nq):
                dtau_dq[k, m], dtau_dqd[k, m] = -dtau_dq[k, m], -dtau_dqd[k, m]
        cholesky_columns(L, identity, inverse[s], column)
        cholesky_columns(L, dtau_dq, dq[s], column)
        cholesky_columns(L, dtau_dqd, dqd[s], column)
    return qdd, dq, dqd, inverse, OK


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
