"""The seed's closed-form moment-arm matrix, literally (Definitions 2–5, Eq. 149–195).

Reference implementations, one state at a time with loops over bodies and muscles, written to
follow the dissertation symbol by symbol (body frames, seed indices); the fast path is
:meth:`mbkron.algorithms.paths.paths.MuscleSet.moment_arms`, and the tests prove them equal. Ground is
``-1`` here (the seed's body ``0``). Paths must consist of body-fixed points: moving via points
enter, as in the seed, as zero-inertia bodies (:func:`mbkron.multibody.muscles.points.add_moving_point_bodies`);
conditional points and wrapped paths (their tangent points held in the wrap bodies), through the path at one
state (:meth:`mbkron.algorithms.paths.paths.MuscleSet.located_paths`).

Notation (see docs/seed-notes/muscles.md for the typos corrected here):

- ``Γ_k`` — attachment sequence of muscle ``k`` (Definition 2): the bodies its path visits, in order;
  consecutive points on one body form a *run* whose first and last points are the effective points
  ``P^F_ki`` and ``P^L_ki``.
- ``ⁱe_k`` — line of action from ``P^L`` on body ``i`` to ``P^F`` on the next body ``u``, in frame
  ``i`` (Eq. 150–152); ``ᵘē_k = −ᵘ_iA ⁱe_k`` its reciprocal in frame ``u``.
- ``E_ki``, ``Ê_ki`` — GMLAV and its moment about ``O_i``, frame ``i`` (Definitions 3–5, Eq. 153–154).
- ``γ_i`` (n_q × 3) — ``[δ⁰r_O^i]_{(i)}ᵀ = δqᵀ γ_i`` (Eq. 171–176); ``β_i`` (n_b × 3), ``ϑ``, ``J`` —
  ``δΘ_{(i)} = β_iᵀ ϑ J δq`` (Eq. 177–184).
- ``R = γᵀE + Jᵀϑβᵀ Ê`` (Eq. 193) and its columns ``R_{·,k} = Σ_i γ_i E_ki + Jᵀϑ Σ_i β_i Ê_ki``
  (Eq. 195).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbkron.reference import kron
from mbkron.reference.transforms import model_kinematics
from mbkron.multibody.tree import FIXED, PRISMATIC, REVOLUTE, rotation_matrix, skew
from mbkron.multibody.records import GROUND
from mbkron.multibody.muscles.paths import MusclePath
from mbkron.multibody.muscles.points import MovingPoint, point_condition

__all__ = [
    "Run",
    "attachment_sequence",
    "lines_of_action",
    "gmlav",
    "gamma_kronecker",
    "gamma_closed_form",
    "beta",
    "joint_jacobian",
    "moment_arms_eq193",
    "moment_arms_eq195",
]


@dataclass(frozen=True)
class Run:
    """Consecutive path points on one body: the body and its effective first and last points.

    Attributes
    ----------
    body : int
        Body index, ``-1`` for the ground.
    first, last : ndarray, shape (3,)
        ``ⁱr_{P^F}`` and ``ⁱr_{P^L}`` in the body's frame.
    """

    body: int
    first: NDArray[np.float64]
    last: NDArray[np.float64]


def attachment_sequence(model, path: MusclePath) -> list[Run]:
    """``Γ_k`` with the effective points of every member (Definition 2).

    The bodies of ``Γ_k`` are ``[run.body for run in runs]``. Interior points of a run exert
    internal forces on their rigid body that cancel; only ``P^F`` and ``P^L`` matter.
    """
    runs: list[Run] = []
    for point in path.points:
        if isinstance(point, MovingPoint):
            raise TypeError(f"muscle `{path.name}`: the seed's forms need moving points as zero-inertia bodies "
                            "(mbkron.multibody.muscles.points.add_moving_point_bodies)")
        if point_condition(point) is not None:
            raise TypeError(f"muscle `{path.name}`: the seed's forms need the path at one state, its active points "
                            "only (MuscleSet.located_paths)")
        body = -1 if point[0] == GROUND else model.body_index(point[0])
        location = np.asarray(point[1], dtype=float)
        if runs and runs[-1].body == body:
            runs[-1] = Run(body, runs[-1].first, location)
        else:
            runs.append(Run(body, location, location))
    return runs


def _frame(T: NDArray, body: int) -> NDArray:
    """``⁰_iA_4`` (identity for the ground)."""
    return np.eye(4) if body < 0 else T[body]


def lines_of_action(T: NDArray, runs: Sequence[Run]) -> list[NDArray]:
    """``ⁱe_k`` for each consecutive pair of runs, in the frame of the first (Eq. 150–152).

    ``ⁱr_{P^L_i P^F_u} = ⁱr_O^u + ⁱ_uA ᵘr_{P^F_u} − ⁱr_{P^L_i}`` (Eq. 151), normalised (Eq. 152).
    """
    out = []
    for run, following in zip(runs[:-1], runs[1:]):
        Ti, Tu = _frame(T, run.body), _frame(T, following.body)
        R_i_0 = Ti[:3, :3].T  # ⁱ₀A
        r_O_u = R_i_0 @ (Tu[:3, 3] - Ti[:3, 3])  # ⁱr_O^u
        R_i_u = R_i_0 @ Tu[:3, :3]  # ⁱ_uA
        chord = r_O_u + R_i_u @ following.first - run.last
        out.append(chord / np.linalg.norm(chord))
    return out


def gmlav(T: NDArray, runs: Sequence[Run], nb: int) -> tuple[NDArray, NDArray]:
    """GMLAV ``E_ki`` and its moment ``Ê_ki`` for every body (Definitions 3–5, Eq. 153–154).

    For ``j*`` = ``Γ_k(j)`` with predecessor ``j**``:
    ``E = ⁱe`` (first), ``ⁱe + ⁱē`` (interior), ``ⁱē`` (last), with ``ⁱē = −ⁱ_{j**}A ^{j**}e``;
    ``Ê = r̃_{P^L} ⁱe`` (first), ``r̃_{P^L} ⁱe + r̃_{P^F} ⁱē`` (interior), ``r̃_{P^F} ⁱē`` (last).
    A body visited twice (not consecutively) collects both contributions; the ground has none.

    Returns
    -------
    E, E_hat : ndarray, shape (nb, 3)
        Row ``i``: ``E_ki`` and ``Ê_ki`` in frame ``i``; zero for ``k ∉ Λ_i`` (Eq. 153–154).
    """
    E, E_hat = np.zeros((nb, 3)), np.zeros((nb, 3))
    e = lines_of_action(T, runs)
    for j, run in enumerate(runs):
        if run.body < 0:
            continue
        if j < len(runs) - 1:
            E[run.body] += e[j]
            E_hat[run.body] += np.cross(run.last, e[j])
        if j > 0:
            previous = runs[j - 1]
            R_i_prev = _frame(T, run.body)[:3, :3].T @ _frame(T, previous.body)[:3, :3]
            reciprocal = -R_i_prev @ e[j - 1]
            E[run.body] += reciprocal
            E_hat[run.body] += np.cross(run.first, reciprocal)
    return E, E_hat


def _ancestors_or_self(tree, i: int) -> list[int]:
    chain = []
    while i >= 0:
        chain.append(i)
        i = int(tree.parent[i])
    return chain


def gamma_kronecker(kin, i: int) -> NDArray:
    """``γ*_i = (0̄ᵀ ⊗ I_nq) (∂B_i/∂q) ⁰_iĀ_4`` in the Kronecker layout (Eq. 171), shape (nq, 4)."""
    nq = kin.q.shape[-1]
    D_i = kron.to_kron(np.swapaxes(kin.dT[i], -1, -2))  # ∂B_i/∂q, (4 nq, 4)
    origin = np.array([0.0, 0.0, 0.0, 1.0])
    A_bar = np.eye(4)
    A_bar[:3, :3] = kin.T[i, :3, :3]
    return np.kron(origin[None, :], np.eye(nq)) @ D_i @ A_bar


def gamma_closed_form(model, kin, i: int) -> NDArray:
    """``γ_i`` by Eq. 176, shape (nq, 3).

    ``Σ_{j ⪯ i} [(ʲr_O^i)ᵀ Ṽ_θjᵀ ʲ_iA] ⊗ ∇f_j`` (revolute) or ``[(ʲ_{pr(j)}A V_dj)ᵀ ʲ_iA] ⊗ ∇f_j``
    (prismatic), with ``ʲ_{pr(j)}A`` read as the rotation from joint ``j``'s offset frame to frame ``j``.
    """
    tree, T = model.tree, kin.T
    grad = tree.per_body(kin.grad, 1)  # (nb, nq)
    gamma = np.zeros((model.nq, 3))
    for j in _ancestors_or_self(tree, i):
        body = model.body_records[j]
        R_j_i = T[j, :3, :3].T @ T[i, :3, :3]  # ʲ_iA
        if body.joint == REVOLUTE:
            r_j_Oi = T[j, :3, :3].T @ (T[i, :3, 3] - T[j, :3, 3])  # ʲr_O^i
            row = r_j_Oi @ skew(body.rotation_axis).T @ R_j_i
        elif body.joint == PRISMATIC:
            row = (rotation_matrix(body.rotation_axis, body.theta).T @ body.translation_axis) @ R_j_i
        else:
            continue
        gamma += np.kron(row[None, :], grad[j][:, None])
    return gamma


def beta(model, kin, i: int) -> NDArray:
    """``β_i`` (Eq. 179, 182), shape (nb, 3): row ``j`` is ``(ⁱ_jA V_θj)ᵀ`` for ``j ⪯ i``, else zero."""
    out = np.zeros((model.nb, 3))
    for j in _ancestors_or_self(model.tree, i):
        body = model.body_records[j]
        if body.joint != FIXED:
            out[j] = kin.T[i, :3, :3].T @ kin.T[j, :3, :3] @ body.rotation_axis
    return out


def joint_jacobian(model, kin) -> tuple[NDArray, NDArray]:
    """``J`` (nb × nq, rows ``∇f_jᵀ``, zero for fixed joints) and ``ϑ`` (Eq. 178, 181)."""
    return model.tree.per_body(kin.grad, 1), np.diag(model.tree.is_revolute)


def _blocks(model, kin, paths: Sequence[MusclePath]):
    """Per-body ``γ_i``, ``β_i`` and ``E_i``, ``Ê_i`` (n_mt × 3, Eq. 157, 160)."""
    nb = model.nb
    gammas = [gamma_closed_form(model, kin, i) for i in range(nb)]
    betas = [beta(model, kin, i) for i in range(nb)]
    E = np.zeros((nb, len(paths), 3))
    E_hat = np.zeros((nb, len(paths), 3))
    sequences = []
    for k, path in enumerate(paths):
        runs = attachment_sequence(model, path)
        sequences.append(runs)
        E[:, k], E_hat[:, k] = gmlav(kin.T, runs, nb)
    return gammas, betas, E, E_hat, sequences


def moment_arms_eq193(model, paths: Sequence[MusclePath], q) -> NDArray:
    """``R = γᵀE + Jᵀϑβᵀ Ê`` (Eq. 193) with the block matrices of the lost Eq. 194:
    ``γ = [γ_1ᵀ; …; γ_nbᵀ]``, ``E = [E_1ᵀ; …]``, ``β = [β_1ᵀ; …]``, ``Ê = [Ê_1ᵀ; …]`` (3n_b rows).

    Parameters
    ----------
    model : Model
    paths : sequence of MusclePath
        Body-fixed points only.
    q : array_like, shape (nq,)

    Returns
    -------
    ndarray, shape (nq, n_mt)
    """
    kin = model_kinematics(model, q, 1)
    gammas, betas, E, E_hat, _ = _blocks(model, kin, paths)
    J, theta = joint_jacobian(model, kin)
    gamma_stack = np.vstack([g.T for g in gammas])  # (3 nb, nq)
    beta_stack = np.vstack([b.T for b in betas])  # (3 nb, nb)
    E_stack = np.vstack([E[i].T for i in range(model.nb)])  # (3 nb, n_mt)
    E_hat_stack = np.vstack([E_hat[i].T for i in range(model.nb)])
    return gamma_stack.T @ E_stack + J.T @ theta @ beta_stack.T @ E_hat_stack


def moment_arms_eq195(model, paths: Sequence[MusclePath], q, kin=None) -> NDArray:
    """Column ``k`` of ``R`` by the sparse form Eq. 195: a sum over ``Γ_k − {0}`` only.

    ``kin``: the kinematics at ``q`` (one state, order ≥ 1) when the caller has it; else computed.
    """
    kin = model_kinematics(model, q, 1) if kin is None else kin
    gammas, betas, E, E_hat, sequences = _blocks(model, kin, paths)
    J, theta = joint_jacobian(model, kin)
    R = np.zeros((model.nq, len(paths)))
    for k, runs in enumerate(sequences):
        members = sorted({run.body for run in runs if run.body >= 0})
        R[:, k] = sum((gammas[i] @ E[i, k] for i in members), np.zeros(model.nq)) + J.T @ theta @ sum(
            (betas[i] @ E_hat[i, k] for i in members), np.zeros(model.nb))
    return R
