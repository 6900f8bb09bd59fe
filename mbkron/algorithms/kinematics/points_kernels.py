"""Compiled point Jacobians: ``∂p/∂q`` of body-fixed points and ``∂ω/∂q̇`` of bodies (Eq. 44–46, 75–76, 180).

One implementation, by the joints' ground twists ``S_j = (ω_j, v_j)`` (Eq. 75–76, as
:func:`mbkron.algorithms.kinematics.kernels.transforms_and_joint_twists` has them) and the joint variables' gradients
``g`` per body: a body ``i`` moves with ``∂T_i/∂q_k T_i⁻¹ = Ω_ik = Σ_{j⪯i} g_jk S_j`` (Eq. 75), so a point ``p``
of it (ground frame) with ``∂p/∂q_k = Ω_ik {p; 1} = Σ_{j⪯i} g_jk (ω_j × p + v_j)`` (Eq. 44–46) and the body's
angular velocity with ``∂ω/∂q̇_k = Σ_{j⪯i} g_jk ω_j`` (Eq. 180). A wrench ``(n, F)`` (a moment about the ground
origin and a force) acting on body ``i`` does the virtual work ``Q_k = Σ_{j⪯i} g_jk (ω_j · n + v_j · F)``
(Eq. 46): a force ``F`` at ``p`` is the wrench ``(p × F, F)``, a torque ``τ`` the wrench ``(τ, 0)``.
:func:`add_joint_power` is one joint's term, :func:`add_wrench_power` the sum up a body's chain of joints (a row
of the Jacobian is its value for a unit wrench, :func:`point_jacobian`) and :func:`add_subtree_power` the sum for
wrenches on many bodies at once, each joint taken once with its subtree's wrenches summed. Their callers: the
straight lines of the dynamics kernels (:func:`mbkron.algorithms.dynamics.kernels.line_length`: spring-dampers, line
forces), the moment arms of the path kernels (:mod:`mbkron.algorithms.paths.kernels`, :mod:`mbkron.algorithms.paths.wrapping_kernels`: a
muscle's points by :func:`add_subtree_power`) and, batched
(:func:`point_jacobians`), the loads evaluated in Python — point forces and body torques
(:mod:`mbkron.algorithms.dynamics.loads`), contact (:mod:`mbkron.algorithms.dynamics.contact`, :mod:`mbkron.algorithms.dynamics.hunt_crossley`),
bushings (:mod:`mbkron.algorithms.dynamics.bushings`) and measured external loads (:mod:`mbkron.analysis.external_loads`),
through :func:`mbkron.algorithms.dynamics.points.jacobians`.

Why the joints' ground twists rather than the world twists ``Ω_ik`` (both Eq. 75): the world twists are
``nb × nq`` per state whether a caller uses them or not, while a walk up the joints costs nothing up front and, with
a muscle's wrenches summed per joint and only a gradient's nonzero columns weighted (:func:`gradient_columns`), less
per point (docs/architecture.md, "One engine", has the measurements).
"""

from __future__ import annotations

import numpy as np

from mbkron.jit.common import jit, jitable
from mbkron.algorithms.kinematics.kernels import transforms_and_joint_twists

__all__ = ["add_body_wrench", "add_joint_power", "add_subtree_power", "add_wrench_power", "body_gradients",
           "gradient_columns", "point_jacobian", "point_jacobians"]


@jitable
def add_joint_power(S, g, j, first, stop, n0, n1, n2, F0, F1, F2, scale, out):  # pragma: no cover - compiled
    """``out[k] += scale · g_jk (ω_j · n + v_j · F)`` for ``first ≤ k < stop``: joint ``j``'s term of the virtual work
    of the wrench ``(n, F)`` (moment about the ground origin, force; ground frame) carried through it (Eq. 46, 75).
    ``S`` (nb, 6) are the joints' ground twists, ``g`` (nb, nq) the joint variables' gradients per body (zero rows
    for fixed joints), zero outside ``[first, stop)`` (all of ``out``, or :func:`gradient_columns`)."""
    along = S[j, 0] * n0 + S[j, 1] * n1 + S[j, 2] * n2 + S[j, 3] * F0 + S[j, 4] * F1 + S[j, 5] * F2
    for k in range(first, stop):
        out[k] += scale * g[j, k] * along


@jitable
def add_wrench_power(links, S, g, body, n0, n1, n2, F0, F1, F2, scale, out):  # pragma: no cover - compiled
    """``out[k] += scale · Σ_{j⪯body} g_jk (ω_j · n + v_j · F)``: the generalized force of the wrench ``(n, F)`` on
    body ``body`` (Eq. 46, 75), ``Jᵀ (n, F)``, by :func:`add_joint_power` up the body's chain of joints (``links``
    the tree's ``(parent, joint row)`` per body); ``body`` < 0 (the ground) adds nothing."""
    j = body
    while j >= 0:
        if links[j, 1] >= 0:  # (a fixed joint adds nothing)
            add_joint_power(S, g, j, 0, out.shape[0], n0, n1, n2, F0, F1, F2, scale, out)
        j = links[j, 0]


@jitable
def add_body_wrench(W, touched, body, x0, x1, x2, f0, f1, f2):  # pragma: no cover - compiled
    """``W[body] += (x × f, f)``: the force ``f`` at the ground position ``x`` as a wrench about the ground origin on
    body ``body``, marked in ``touched``, for :func:`add_subtree_power`."""
    W[body, 0] += x1 * f2 - x2 * f1
    W[body, 1] += x2 * f0 - x0 * f2
    W[body, 2] += x0 * f1 - x1 * f0
    W[body, 3] += f0
    W[body, 4] += f1
    W[body, 5] += f2
    touched[body] = True


@jitable
def add_subtree_power(links, S, g, columns, W, touched, last, scale, out):  # pragma: no cover - compiled
    """``out[k] += scale · Σ_j g_jk S_j · Σ_{i⪰j} W_i``: :func:`add_wrench_power` of every body's wrench ``W_i`` (nb, 6)
    at once, each joint's term (:func:`add_joint_power`) taken once with the wrenches of its subtree summed (Eq. 46,
    75; the bodies are numbered parents first, and none after ``last`` has a wrench; ``columns``: the range of each
    body's nonzero gradients, :func:`gradient_columns`). Clears ``W`` and ``touched``.
    For many points on a few bodies (a muscle path): one walk instead of one per point, and the wrenches of a path,
    which sum to zero, cancel above its bodies' common ancestor before they are weighted."""
    for i in range(last, -1, -1):
        if not touched[i]:
            continue
        if links[i, 1] >= 0:  # (a fixed joint adds nothing)
            add_joint_power(S, g, i, columns[i, 0], columns[i, 1], W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5],
                            scale, out)
        parent = links[i, 0]
        if parent >= 0:
            for x in range(6):
                W[parent, x] += W[i, x]
            touched[parent] = True
        for x in range(6):
            W[i, x] = 0.0
        touched[i] = False


@jitable
def point_jacobian(links, S, g, body, p0, p1, p2, out):  # pragma: no cover - compiled
    """``out`` (6, nq) = ``∂p/∂q`` (rows 0–2) of the point of body ``body`` at the ground position ``p`` and the
    body's ``∂ω/∂q̇`` (rows 3–5) (Eq. 44–46, 75, 180): row ``x`` is :func:`add_wrench_power` of the unit force
    ``e_x`` at ``p`` (the wrench ``(p × e_x, e_x)``), row ``3 + x`` of the unit torque ``e_x``. Zero for
    ``body`` < 0 (the ground)."""
    nq = out.shape[1]
    for x in range(6):
        for k in range(nq):
            out[x, k] = 0.0
    add_wrench_power(links, S, g, body, 0.0, p2, -p1, 1.0, 0.0, 0.0, 1.0, out[0])
    add_wrench_power(links, S, g, body, -p2, 0.0, p0, 0.0, 1.0, 0.0, 1.0, out[1])
    add_wrench_power(links, S, g, body, p1, -p0, 0.0, 0.0, 0.0, 1.0, 1.0, out[2])
    add_wrench_power(links, S, g, body, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, out[3])
    add_wrench_power(links, S, g, body, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, out[4])
    add_wrench_power(links, S, g, body, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, out[5])


@jitable
def body_gradients(links, grad, g):  # pragma: no cover - compiled
    """``g`` (nb, nq) = the gradient ``∇f_j`` of each body's joint variable from ``grad`` (nj, nq); zero rows for
    fixed joints."""
    nb, nq = links.shape[0], g.shape[1]
    for i in range(nb):
        joint = links[i, 1]
        for k in range(nq):
            g[i, k] = grad[joint, k] if joint >= 0 else 0.0


@jitable
def gradient_columns(g, columns):  # pragma: no cover - compiled
    """``columns[i] = (first, stop)``: the range of the nonzero entries of each body's gradient ``g[i]`` ((0, 0) for
    none). A joint variable depends on one or a few coordinates: :func:`add_subtree_power` weights only those."""
    nb, nq = g.shape[0], g.shape[1]
    for i in range(nb):
        first, stop = nq, 0
        for k in range(nq):
            if g[i, k] != 0.0:
                first = min(first, k)
                stop = k + 1
        columns[i, 0], columns[i, 1] = (first, stop) if stop > 0 else (0, 0)


@jit
def point_jacobians(geometry, links, f, grad, bodies, points):  # pragma: no cover - compiled
    """``∂p/∂q`` and ``∂ω/∂q̇`` (states, n, 6, nq) of the points of ``bodies`` (n,; −1: the ground, zeros) at the
    ground positions ``points`` (states or 1, n, 3), at states of joint variables ``f`` (states, nj) with gradients
    ``grad`` (states or 1, nj, nq), by :func:`point_jacobian` (rows as there)."""
    states, nb, nq, n = f.shape[0], links.shape[0], grad.shape[2], bodies.shape[0]
    J = np.empty((states, n, 6, nq))
    T, S, g = np.empty((nb, 4, 4)), np.empty((nb, 6)), np.empty((nb, nq))
    for s in range(states):
        transforms_and_joint_twists(geometry, links, f[s], T, S)
        body_gradients(links, grad[s if grad.shape[0] > 1 else 0], g)
        state_points = points[s if points.shape[0] > 1 else 0]
        for e in range(n):
            point_jacobian(links, S, g, bodies[e], state_points[e, 0], state_points[e, 1], state_points[e, 2], J[s, e])
    return J
