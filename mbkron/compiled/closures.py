"""Loop-closure residuals and their derivatives as library callbacks: no code generated per model.

A loop closure says that a point (or a direction) of body a and one of body b agree in the ground
frame (Eq. 100; :class:`mbkron.jointvars.loop_closures.LoopClosure`). Its residuals are the tree's own
kinematics (Eq. 40, 44): ``r = A_0 A_1 ⋯ A_{L−1} v`` along the chain of joints from the ground to the
body, each joint's local transform ``A_i = C_0 + sin(f_i) C_1 + (1 − cos f_i) C_2 + f_i C_3`` in the basis
of :func:`mbkron.kinematics.tree.local_transforms`. So one pair of callbacks, compiled once per machine,
evaluates every closure group from a packed description of its chains and equations (:func:`pack`,
built by :meth:`mbkron.jointvars.loop_closures._BoundClosures.kernel_data`), in place of the sympy
expressions and the generated module an expression group needs.

Each joint's transform is ``A_i(f_i) = C_0 exp(f_i Â_i)`` with a constant twist ``Â_i = [ω̂ v; 0 0]``
(a revolute joint: ``ω`` its unit axis, ``v = 0``; a prismatic one: ``ω = 0``, ``v`` its axis), so
``∂A_i/∂f_i = A_i Â_i`` (Eq. 70-71) and, with ``W_j`` the ground transform of joint j's child frame and
``S_j = W_j Â_j W_j⁻¹`` its twist in the ground frame, ``ω_j = R_j ω``, ``v_j = R_j v + p_j × ω_j`` (Eq. 76):

- ``∂r/∂f_j = S_j r = ω_j × r + w v_j`` for every moving joint j between the ground and the body (``w`` the
  homogeneous coordinate of ``r``: 1 for a point, 0 for a direction);
- ``∂²r/∂f_i∂f_j = S_i S_j r = ω_i × (S_j r)`` for joint i at or above joint j (Eq. 99; symmetric), because
  ``∂S_j/∂f_i = [S_i, S_j]`` above j and ``S_j r`` is a direction.

So the cost per call is one transform and one twist per body, and a cross product per derivative: no
dense chain products.

A point equation is one ground component of ``r_a − r_b``; an orientation equation the dot product
``(R_a v_a)·(R_b v_b)`` of two body directions (homogeneous ``w = 0``), differentiated by the Leibniz rule.
The callbacks (:mod:`mbkron.compiled.closure_callbacks`, compiled when a closure group first needs them)
have the signature :data:`mbkron.compiled.callbacks.CONSTRAINT_SIGNATURE` and write the layouts of
:func:`mbkron.jointvars.constraints.expressions_from_derivatives` over ``x = (u, p)``: ``first``
writes ``(g, ∂g/∂u, ∂g/∂p)``, ``second`` ``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p,
∂²g/∂p²)``.

Packed description (one float array, so that the callbacks' signature is the same for every group)
---------------------------------------------------------------------------------------------------
``data[0:6] = (m, n_x, n_bodies, n_vectors, max_depth, bodies_start)``; then one record of
:data:`EQUATION_SIZE` numbers per equation, in the group's order: ``(kind, component, vector_a, vector_b)``
with ``kind`` :data:`POINT` or :data:`DOT`; then one record of :data:`VECTOR_SIZE` numbers per body vector
(a point, homogeneous ``w = 1``, or a direction, ``w = 0``): ``(body, v (4))``, ``body`` −1 for the ground;
at ``bodies_start`` one record of :data:`BODY_SIZE` numbers per body on the closures' chains, parents
first: ``(parent, slot, C (4 × 4 × 4), ω (3), v (3))``, ``parent`` −1 for the ground, ``slot`` the joint
variable's position in ``x`` (−1 for a fixed joint).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from mbkron.compiled.common import jit

__all__ = ["BODY_SIZE", "DOT", "EQUATION_SIZE", "POINT", "VECTOR_SIZE", "evaluate", "local_twist", "pack"]

POINT, DOT = 0, 1
"""Equation kinds: a ground component of ``r_a − r_b``; the product ``(R_a v_a)·(R_b v_b)``."""

EQUATION_SIZE = 4
"""Numbers per equation record: kind, component, the two body vectors."""

VECTOR_SIZE = 5
"""Numbers per body-vector record: its body, the homogeneous vector."""

BODY_SIZE = 2 + 64 + 6
"""Numbers per body record: parent, slot, ``C`` (4 × 4 × 4), the local twist ``(ω, v)``."""

_HEADER = 6


def local_twist(C: NDArray) -> NDArray[np.float64]:
    """``(ω, v)`` of ``Â = C_0⁻¹ (C_1 + C_3)`` for a joint whose transform is ``C_0 exp(f Â)`` (revolute or
    prismatic, :meth:`mbkron.kinematics.tree.KinematicTree.build`).

    Raises
    ------
    ValueError
        If ``C`` is not of that form, which the callbacks' derivatives and their sparse products assume:
        a revolute joint (``ω ≠ 0``, ``v = 0``, ``C_2 = C_0 Â²`` with ``Â³ = −Â``, ``C_1`` and ``C_2`` only in
        the rotation block, ``C_3 = 0``) or a prismatic one (``ω = 0``, ``C_1 = C_2 = 0``, ``C_3`` only in the
        translation column).
    """
    C = np.asarray(C, dtype=float)
    twist = np.linalg.solve(C[0], C[1] + C[3])
    scale = max(1.0, float(np.abs(C).max()))
    omega = twist[:3, :3]
    revolute = (np.any(omega != 0.0) and not np.any(C[3]) and not np.any(C[1:3, :, 3]) and not np.any(C[1:3, 3])
                and np.allclose(C[2], C[0] @ twist @ twist, rtol=0, atol=1e-12 * scale)
                and np.allclose(twist @ twist @ twist, -twist, rtol=0, atol=1e-12)
                and np.allclose(twist[:3, 3], 0.0, rtol=0, atol=1e-12 * scale))
    prismatic = (not np.any(omega) and not np.any(C[1]) and not np.any(C[2]) and not np.any(C[3][:, :3])
                 and not np.any(C[3][3]))
    if not (revolute or prismatic) or np.any(twist[3] != 0.0):
        raise ValueError("a joint of a loop closure is neither a revolute nor a prismatic joint of the form "
                         "C_0 exp(f Â)")
    return np.array([twist[2, 1], twist[0, 2], twist[1, 0], *twist[:3, 3]])


def pack(m: int, n_x: int, equations, vectors, bodies) -> NDArray[np.float64]:
    """The packed description read by :func:`evaluate` (read-only).

    Parameters
    ----------
    m : int
        Number of equations (and unknowns).
    n_x : int
        Length of ``x = (u, p)``.
    equations : sequence of (kind, component, vector_a, vector_b)
        Indices into ``vectors``.
    vectors : sequence of (body, v)
        ``v`` a homogeneous 4-vector in body coordinates, ``body`` an index into ``bodies`` (−1: the ground).
    bodies : sequence of (parent, slot, C)
        Parents first (``parent`` an index into ``bodies`` or −1); ``C`` of shape (4, 4, 4)
        (:attr:`mbkron.kinematics.tree.KinematicTree.local_coefficients`), its twist by :func:`local_twist`.
    """
    depth = []
    for parent, _, _ in bodies:
        depth.append(1 if parent < 0 else depth[parent] + 1)
    start = _HEADER + EQUATION_SIZE * len(equations) + VECTOR_SIZE * len(vectors)
    parts = [np.array([m, n_x, len(bodies), len(vectors), max(depth, default=0), start], dtype=float)]
    parts += [np.array(equation, dtype=float) for equation in equations]
    parts += [np.concatenate(([body], v)).astype(float) for body, v in vectors]
    for parent, slot, C in bodies:
        twist = local_twist(C) if slot >= 0 else np.zeros(6)
        parts.append(np.concatenate(([parent, slot], np.asarray(C, dtype=float).ravel(), twist)))
    packed = np.concatenate(parts)
    packed.setflags(write=False)
    return packed


@jit
def _bodies(data, x, W, S):  # pragma: no cover - compiled
    """Ground transforms ``W[b]`` (the top 3 × 4 rows) and ground twists ``S[b] = (ω_j, v_j)`` (zero for a
    fixed joint) of the packed bodies, parents first."""
    n_bodies, start = int(data[2]), int(data[5])
    A = np.empty((3, 4))
    for b in range(n_bodies):
        base = start + b * BODY_SIZE
        parent, slot = int(data[base]), int(data[base + 1])
        twist = base + 2 + 64
        for r in range(3):
            for c in range(4):
                A[r, c] = data[base + 2 + r * 4 + c]  # C_0
        if slot >= 0 and (data[twist] != 0.0 or data[twist + 1] != 0.0 or data[twist + 2] != 0.0):
            f = x[slot]  # revolute: C_1, C_2 only in the rotation block
            sin, one_minus_cos = math.sin(f), 1.0 - math.cos(f)
            for r in range(3):
                for c in range(3):
                    at = base + 2 + r * 4 + c
                    A[r, c] += sin * data[at + 16] + one_minus_cos * data[at + 32]
        elif slot >= 0:  # prismatic: C_3 only in the translation column
            for r in range(3):
                A[r, 3] += x[slot] * data[base + 2 + r * 4 + 3 + 48]
        if parent < 0:
            for r in range(3):
                for c in range(4):
                    W[b, r, c] = A[r, c]
        else:
            for r in range(3):
                for c in range(4):
                    total = W[parent, r, 3] if c == 3 else 0.0
                    for k in range(3):
                        total += W[parent, r, k] * A[k, c]
                    W[b, r, c] = total
        for r in range(3):
            omega, v = 0.0, 0.0
            for k in range(3):
                omega += W[b, r, k] * data[twist + k]
                v += W[b, r, k] * data[twist + 3 + k]
            S[b, r], S[b, 3 + r] = omega, v
        p0, p1, p2 = W[b, 0, 3], W[b, 1, 3], W[b, 2, 3]
        S[b, 3] += p1 * S[b, 2] - p2 * S[b, 1]  # v_j = R v + p × ω_j
        S[b, 4] += p2 * S[b, 0] - p0 * S[b, 2]
        S[b, 5] += p0 * S[b, 1] - p1 * S[b, 0]


@jit
def _vectors(data, x, order, W, S, R, dR, d2R):  # pragma: no cover - compiled
    """``R[k] = T v_k`` of every body vector and, by ``order``, ``dR[k, s] = ∂(T v_k)/∂x_s`` and
    ``d2R[k, s, t]`` (zero-filled) by the twists of the module docstring."""
    m, n_vectors, max_depth, start = int(data[0]), int(data[3]), int(data[4]), int(data[5])
    chain = np.empty(max_depth, np.int64)  # the moving joints from the body up, as body indices
    u = np.empty((max_depth, 3))  # S_j r for the joints of ``chain``
    for k in range(n_vectors):
        record = _HEADER + m * EQUATION_SIZE + k * VECTOR_SIZE
        body = int(data[record])
        v0, v1, v2, w = data[record + 1], data[record + 2], data[record + 3], data[record + 4]
        if body < 0:
            R[k, 0], R[k, 1], R[k, 2], R[k, 3] = v0, v1, v2, w
            continue
        for r in range(3):
            R[k, r] = W[body, r, 0] * v0 + W[body, r, 1] * v1 + W[body, r, 2] * v2 + W[body, r, 3] * w
        R[k, 3] = w
        if order == 0:
            continue
        length = 0
        b = body
        while b >= 0:
            if int(data[start + b * BODY_SIZE + 1]) >= 0:
                chain[length] = b
                length += 1
            b = int(data[start + b * BODY_SIZE])
        for j in range(length):
            b = chain[j]
            slot = int(data[start + b * BODY_SIZE + 1])
            u[j, 0] = S[b, 1] * R[k, 2] - S[b, 2] * R[k, 1] + w * S[b, 3]
            u[j, 1] = S[b, 2] * R[k, 0] - S[b, 0] * R[k, 2] + w * S[b, 4]
            u[j, 2] = S[b, 0] * R[k, 1] - S[b, 1] * R[k, 0] + w * S[b, 5]
            for r in range(3):
                dR[k, slot, r] += u[j, r]
        if order < 2:
            continue
        for j in range(length):  # joint i at or above joint j: chain positions i >= j
            sj = int(data[start + chain[j] * BODY_SIZE + 1])
            for i in range(j, length):
                b = chain[i]
                si = int(data[start + b * BODY_SIZE + 1])
                d0 = S[b, 1] * u[j, 2] - S[b, 2] * u[j, 1]
                d1 = S[b, 2] * u[j, 0] - S[b, 0] * u[j, 2]
                d2 = S[b, 0] * u[j, 1] - S[b, 1] * u[j, 0]
                d2R[k, si, sj, 0] += d0
                d2R[k, si, sj, 1] += d1
                d2R[k, si, sj, 2] += d2
                if si != sj:
                    d2R[k, sj, si, 0] += d0
                    d2R[k, sj, si, 1] += d1
                    d2R[k, sj, si, 2] += d2


@jit
def evaluate(x, out, data, order):  # pragma: no cover - compiled
    """The callbacks' common body: ``order`` 1 writes ``(g, ∂g/∂u, ∂g/∂p)`` into the zero-filled ``out``,
    2 writes ``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p, ∂²g/∂p²)`` (the layouts of
    :func:`mbkron.jointvars.constraints.expressions_from_derivatives`)."""
    m, n_x, n_bodies, n_vectors = int(data[0]), int(data[1]), int(data[2]), int(data[3])
    n = n_x - m
    n2 = n_x if order >= 2 else 0
    W = np.empty((n_bodies, 3, 4))
    S = np.empty((n_bodies, 6))
    _bodies(data, x, W, S)
    R = np.empty((n_vectors, 4))
    dR = np.zeros((n_vectors, n_x, 3))
    d2R = np.zeros((n_vectors, n2, n2, 3))
    _vectors(data, x, order, W, S, R, dR, d2R)
    # offsets of the blocks in ``out``: first (g, g_u, g_p); second (g_u, g_p, g_uu, g_up, g_pp)
    u_at = m if order == 1 else 0
    p_at = u_at + m * m
    uu_at = p_at + m * n
    up_at = uu_at + m * m * m
    pp_at = up_at + m * m * n
    for e in range(m):
        record = _HEADER + e * EQUATION_SIZE
        kind, component, a, b = int(data[record]), int(data[record + 1]), int(data[record + 2]), int(data[record + 3])
        if order == 1:
            if kind == POINT:
                out[e] = R[a, component] - R[b, component]
            else:
                out[e] = R[a, 0] * R[b, 0] + R[a, 1] * R[b, 1] + R[a, 2] * R[b, 2]
        for k in range(n_x):
            if kind == POINT:
                value = dR[a, k, component] - dR[b, k, component]
            else:
                value = 0.0
                for c in range(3):
                    value += dR[a, k, c] * R[b, c] + R[a, c] * dR[b, k, c]
            if k < m:
                out[u_at + e * m + k] = value
            else:
                out[p_at + e * n + k - m] = value
            if order < 2:
                continue
            for l in range(n_x):
                if kind == POINT:
                    value = d2R[a, k, l, component] - d2R[b, k, l, component]
                else:
                    value = 0.0
                    for c in range(3):
                        value += (d2R[a, k, l, c] * R[b, c] + R[a, c] * d2R[b, k, l, c]
                                  + dR[a, k, c] * dR[b, l, c] + dR[a, l, c] * dR[b, k, c])
                if k < m and l < m:
                    out[uu_at + (e * m + k) * m + l] = value
                elif k < m:
                    out[up_at + (e * m + k) * n + l - m] = value
                elif l >= m:
                    out[pp_at + (e * n + k - m) * n + l - m] = value
