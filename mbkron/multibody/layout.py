"""The arrays the compiled kernels take, packed from a model's description with numpy alone.

Building a model packs its tree, inertias and spring-dampers for the kernels once; these functions do
that without importing numba (which :mod:`mbkron.jit.common` and every kernel module import), so
that loading a model costs no numba import: numba is imported by the first evaluation, which calls a
kernel. How per-state arrays are handed to the kernels is :mod:`mbkron.jit.arrays`; the rows of
empirical functions, :mod:`mbkron.numerics.function_rows`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["GEOMETRY_WIDTH", "SPRING_COLUMNS", "inertia_rows", "line_rows", "spring_rows", "tree_geometry"]

_ROTATION, _TRANSLATION, _REVOLUTE, _PRISMATIC, GEOMETRY_WIDTH = 64, 67, 70, 71, 72  # tree_geometry columns


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
    out = np.zeros((nb, GEOMETRY_WIDTH))
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


def line_rows(body_indices: NDArray, lines) -> NDArray[np.float64]:
    """The geometry of lines between two body points as :func:`spring_rows` rows, their force columns zero
    (``k = c = L₀ = T₀ = 0``): what :func:`mbkron.algorithms.dynamics.kernels.line_geometry` reads of them.

    Parameters
    ----------
    body_indices : sequence of int
        ``(a, b)`` per line; the ground is ``nb``.
    lines : sequence
        Anything with ``point_a`` and ``point_b`` (body coordinates).
    """
    rows = np.zeros((len(lines), SPRING_COLUMNS))
    for row, line, bodies in zip(rows, lines, body_indices):
        row[:2] = bodies
        row[2:5], row[5:8] = line.point_a, line.point_b
    return rows


def spring_rows(body_indices: NDArray, lines) -> NDArray[np.float64]:
    """Spring-dampers and line forces of constant tension as kernel rows
    ``(body a, body b, point a (3), point b (3), k, c, L₀, T₀)``: the tension ``k (L − L₀) + c L̇ + T₀``
    (:func:`mbkron.algorithms.dynamics.kernels.spring_forces`), read-only.

    Parameters
    ----------
    body_indices : sequence of int
        ``(a, b)`` per line; the ground is ``nb``.
    lines : sequence of SpringDamper or LineForce
        A load with ``stiffness`` (a spring-damper: ``T₀ = 0``) or a constant ``tension`` (a line force:
        ``k = c = L₀ = 0``).
    """
    rows = line_rows(body_indices, lines)
    for row, line in zip(rows, lines):
        if hasattr(line, "stiffness"):
            row[8:11] = line.stiffness, line.damping, line.free_length
        else:
            row[11] = float(line.tension)
    rows.setflags(write=False)
    return rows


SPRING_COLUMNS = 12
"""Columns of :func:`spring_rows`."""
