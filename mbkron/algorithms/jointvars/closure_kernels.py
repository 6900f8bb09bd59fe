"""Loop-closure residuals and their derivatives as library callbacks: no code generated per model.

A loop closure says that a point (or a direction) of body a and one of body b agree in the ground
frame (Eq. 100; :class:`mbkron.algorithms.jointvars.loop_closures.LoopClosure`). Its residuals are the tree's own
kinematics (Eq. 40, 44): ``r = A_0 A_1 ⋯ A_{L−1} v`` along the chain of joints from the ground to the
body, each joint's local transform ``A_i = C_0 + sin(f_i) C_1 + (1 − cos f_i) C_2 + f_i C_3`` in the basis
of :func:`mbkron.algorithms.kinematics.tree.local_transforms`. So one pair of callbacks, compiled once per machine,
evaluates every closure group from a packed description of its bodies and equations (:func:`pack`,
built by :meth:`mbkron.algorithms.jointvars.loop_closures._BoundClosures.kernel_data`), in place of the sympy
expressions and the generated module an expression group needs.

The transforms and the joints' ground twists are the kinematics kernel's
(:func:`mbkron.algorithms.kinematics.kernels.transforms_and_joint_twists`, run on the closure bodies and their ancestors,
each joint reading its variable from ``x``): with ``S_j`` the ground twist of joint j (``∂T/∂f_j = S_j T``,
Eq. 75-76), ``ω_j`` its rotational and ``v_j`` its translational part,

- ``∂r/∂f_j = S_j r = ω_j × r + w v_j`` for every moving joint j between the ground and the body (``w`` the
  homogeneous coordinate of ``r``: 1 for a point, 0 for a direction);
- ``∂²r/∂f_i∂f_j = S_i S_j r = ω_i × (S_j r)`` for joint i at or above joint j (Eq. 99; symmetric), because
  ``∂S_j/∂f_i = [S_i, S_j]`` above j and ``S_j r`` is a direction.

So the cost per call is the kinematics of the closure bodies and a cross product per derivative.

A point equation is one ground component of ``r_a − r_b``; an orientation equation the dot product
``(R_a v_a)·(R_b v_b)`` of two body directions (homogeneous ``w = 0``), differentiated by the Leibniz rule.
The callbacks (:mod:`mbkron.algorithms.jointvars.closure_callbacks`, compiled when a closure group first needs them)
have the signature :data:`mbkron.jit.callbacks.CONSTRAINT_SIGNATURE` and write the layouts of
:func:`mbkron.algorithms.jointvars.constraints.expressions_from_derivatives` over ``x = (u, p)``: ``first``
writes ``(g, ∂g/∂u, ∂g/∂p)``, ``second`` ``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p,
∂²g/∂p²)``.

Packed description (one float array, so that the callbacks' signature is the same for every group)
---------------------------------------------------------------------------------------------------
``data[0:6] = (m, n_x, n_bodies, n_vectors, max_depth, bodies_start)``; then one record of
:data:`EQUATION_SIZE` numbers per equation, in the group's order: ``(kind, component, vector_a, vector_b)``
with ``kind`` :data:`POINT` or :data:`DOT`; then one record of :data:`VECTOR_SIZE` numbers per body vector
(a point, homogeneous ``w = 1``, or a direction, ``w = 0``): ``(body, v (4))``, ``body`` −1 for the ground;
at ``bodies_start`` the bodies on the closures' chains, parents first: their links ``(parent, slot)`` (2
numbers each; ``parent`` −1 for the ground, ``slot`` the joint variable's position in ``x``, −1 for a fixed
joint), then their rows of :func:`mbkron.multibody.layout.tree_geometry`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mbkron.jit.calls import borrowed, read_only
from mbkron.jit.common import jit
from mbkron.algorithms.kinematics.kernels import transforms_and_joint_twists
from mbkron.multibody.layout import GEOMETRY_WIDTH

__all__ = ["DOT", "EQUATION_SIZE", "POINT", "VECTOR_SIZE", "evaluate", "pack", "third"]

POINT, DOT = 0, 1
"""Equation kinds: a ground component of ``r_a − r_b``; the product ``(R_a v_a)·(R_b v_b)``."""

EQUATION_SIZE = 4
"""Numbers per equation record: kind, component, the two body vectors."""

VECTOR_SIZE = 5
"""Numbers per body-vector record: its body, the homogeneous vector."""

_HEADER = 6


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
    bodies : sequence of (parent, slot, geometry)
        Parents first (``parent`` an index into ``bodies`` or −1); ``geometry`` the body's row of
        :func:`mbkron.multibody.layout.tree_geometry`.
    """
    depth = []
    for parent, _, _ in bodies:
        depth.append(1 if parent < 0 else depth[parent] + 1)
    start = _HEADER + EQUATION_SIZE * len(equations) + VECTOR_SIZE * len(vectors)
    parts = [np.array([m, n_x, len(bodies), len(vectors), max(depth, default=0), start], dtype=float)]
    parts += [np.array(equation, dtype=float) for equation in equations]
    parts += [np.concatenate(([body], v)).astype(float) for body, v in vectors]
    parts += [np.array([parent, slot], dtype=float) for parent, slot, _ in bodies]
    parts += [np.asarray(geometry, dtype=float) for _, _, geometry in bodies]
    packed = np.concatenate(parts)
    packed.setflags(write=False)
    return packed


@jit
def _vectors(data, links, order, W, S, R, dR, d2R, d3R):  # pragma: no cover - compiled
    """``R[k] = T v_k`` of every body vector and, by ``order``, ``dR[k, s] = ∂(T v_k)/∂x_s``, ``d2R[k, s, t]`` and
    ``d3R[k, s, t, w]`` (zero-filled) by the twists of the module docstring (``W``, ``S``, ``links`` as
    :func:`mbkron.algorithms.kinematics.kernels.transforms_and_joint_twists` has them): for joints i at or above j at
    or above l, ``∂³r/∂f_i∂f_j∂f_l = S_i S_j S_l r = ω_i × (ω_j × (S_l r))`` (a change of ``f_i`` moves the subtree
    below joint i rigidly, and ``ω_j × (S_l r)`` is a direction of it)."""
    m, n_vectors, max_depth = int(data[0]), int(data[3]), int(data[4])
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
            if links[b, 1] >= 0:
                chain[length] = b
                length += 1
            b = links[b, 0]
        for j in range(length):
            b = chain[j]
            slot = links[b, 1]
            u[j, 0] = S[b, 1] * R[k, 2] - S[b, 2] * R[k, 1] + w * S[b, 3]
            u[j, 1] = S[b, 2] * R[k, 0] - S[b, 0] * R[k, 2] + w * S[b, 4]
            u[j, 2] = S[b, 0] * R[k, 1] - S[b, 1] * R[k, 0] + w * S[b, 5]
            for r in range(3):
                dR[k, slot, r] += u[j, r]
        if order < 2:
            continue
        for j in range(length):  # joint i at or above joint j: chain positions i >= j
            sj = links[chain[j], 1]
            for i in range(j, length):
                b = chain[i]
                si = links[b, 1]
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
        if order < 3:
            continue
        for a in range(length):  # every ordered triple of chain positions, sorted: l <= j <= i
            for b in range(length):
                for c in range(length):
                    l, j, i = min(a, b, c), a + b + c - min(a, b, c) - max(a, b, c), max(a, b, c)
                    bj, bi = chain[j], chain[i]
                    d0 = S[bj, 1] * u[l, 2] - S[bj, 2] * u[l, 1]
                    d1 = S[bj, 2] * u[l, 0] - S[bj, 0] * u[l, 2]
                    d2 = S[bj, 0] * u[l, 1] - S[bj, 1] * u[l, 0]
                    sa, sb, sc = links[chain[a], 1], links[chain[b], 1], links[chain[c], 1]
                    d3R[k, sa, sb, sc, 0] += S[bi, 1] * d2 - S[bi, 2] * d1
                    d3R[k, sa, sb, sc, 1] += S[bi, 2] * d0 - S[bi, 0] * d2
                    d3R[k, sa, sb, sc, 2] += S[bi, 0] * d1 - S[bi, 1] * d0


@jit
def _closure_kinematics(x, data):  # pragma: no cover - compiled
    """``(links, W, S)`` of the closure bodies at ``x``: their (parent, slot) links, transforms and joints' ground
    twists by :func:`mbkron.algorithms.kinematics.kernels.transforms_and_joint_twists`."""
    n_bodies, start = int(data[2]), int(data[5])
    links = np.empty((n_bodies, 2), np.int64)  # (parent, joint row): the joint rows are the slots in x
    for b in range(n_bodies):
        links[b, 0], links[b, 1] = int(data[start + 2 * b]), int(data[start + 2 * b + 1])
    first_row = start + 2 * n_bodies
    geometry = data[first_row:first_row + GEOMETRY_WIDTH * n_bodies].reshape((n_bodies, GEOMETRY_WIDTH))
    W = np.empty((n_bodies, 4, 4))
    S = np.empty((n_bodies, 6))
    # links, W, S are read after the call that takes them borrowed (no atomic reference counting)
    transforms_and_joint_twists(geometry, read_only(borrowed(links)), x, borrowed(W), borrowed(S))  # the model's type
    return links, W, S


@jit
def evaluate(x, out, data, order):  # pragma: no cover - compiled
    """The callbacks' common body: ``order`` 1 writes ``(g, ∂g/∂u, ∂g/∂p)`` into the zero-filled ``out``,
    2 writes ``(∂g/∂u, ∂g/∂p, ∂²g/∂u², ∂²g/∂u∂p, ∂²g/∂p²)`` (the layouts of
    :func:`mbkron.algorithms.jointvars.constraints.expressions_from_derivatives`)."""
    m, n_x, n_vectors = int(data[0]), int(data[1]), int(data[3])
    n = n_x - m
    n2 = n_x if order >= 2 else 0
    links, W, S = _closure_kinematics(x, data)
    R = np.empty((n_vectors, 4))
    dR = np.zeros((n_vectors, n_x, 3))
    d2R = np.zeros((n_vectors, n2, n2, 3))
    # R, dR, d2R are read after the call that takes them borrowed (no atomic reference counting)
    _vectors(data, links, order, W, S, borrowed(R), borrowed(dR), borrowed(d2R), np.zeros((n_vectors, 0, 0, 0, 3)))
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


@jit
def third(x, out, data):  # pragma: no cover - compiled
    """``(∂g/∂x, ∂²g/∂x², ∂³g/∂x³)`` over all of ``x = (u, p)`` into the zero-filled ``out`` of size
    ``m (n_x + n_x² + n_x³)``, each block in C order (for the derivatives of the dynamics, issue 30; not a callback):
    a point equation's the differences of the vectors' derivatives (:func:`_vectors`), an orientation equation's
    by the Leibniz rule, ``∂³(a·b) = a‴·b + Σ₃ a″·b′ + Σ₃ a′·b″ + a·b‴`` (the sums over the three ways to split the
    variables)."""
    m, n_x, n_vectors = int(data[0]), int(data[1]), int(data[3])
    links, W, S = _closure_kinematics(x, data)
    R = np.empty((n_vectors, 4))
    dR = np.zeros((n_vectors, n_x, 3))
    d2R = np.zeros((n_vectors, n_x, n_x, 3))
    d3R = np.zeros((n_vectors, n_x, n_x, n_x, 3))
    _vectors(data, links, 3, W, S, borrowed(R), borrowed(dR), borrowed(d2R), borrowed(d3R))
    xx_at = m * n_x
    xxx_at = xx_at + m * n_x * n_x
    for e in range(m):
        record = _HEADER + e * EQUATION_SIZE
        kind, component, a, b = int(data[record]), int(data[record + 1]), int(data[record + 2]), int(data[record + 3])
        for k in range(n_x):
            if kind == POINT:
                out[e * n_x + k] = dR[a, k, component] - dR[b, k, component]
            else:
                for c in range(3):
                    out[e * n_x + k] += dR[a, k, c] * R[b, c] + R[a, c] * dR[b, k, c]
            for l in range(n_x):
                at = xx_at + (e * n_x + k) * n_x + l
                if kind == POINT:
                    out[at] = d2R[a, k, l, component] - d2R[b, k, l, component]
                else:
                    for c in range(3):
                        out[at] += (d2R[a, k, l, c] * R[b, c] + R[a, c] * d2R[b, k, l, c]
                                    + dR[a, k, c] * dR[b, l, c] + dR[a, l, c] * dR[b, k, c])
                for t in range(n_x):
                    at = xxx_at + ((e * n_x + k) * n_x + l) * n_x + t
                    if kind == POINT:
                        out[at] = d3R[a, k, l, t, component] - d3R[b, k, l, t, component]
                    else:
                        for c in range(3):
                            out[at] += (d3R[a, k, l, t, c] * R[b, c] + R[a, c] * d3R[b, k, l, t, c]
                                        + d2R[a, k, l, c] * dR[b, t, c] + d2R[a, k, t, c] * dR[b, l, c]
                                        + d2R[a, l, t, c] * dR[b, k, c] + dR[a, k, c] * d2R[b, l, t, c]
                                        + dR[a, l, c] * d2R[b, k, t, c] + dR[a, t, c] * d2R[b, k, l, c])
