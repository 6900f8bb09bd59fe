"""Random 3-D trees for the tests, and an independent sympy description of their kinematics.

The sympy side is written from docs/conventions.md alone (Fig. 1 of the dissertation plus a
constant offset), with scipy's rotation as a check of the rotation formula, so that a bug in
mbkron's kinematics cannot hide in its own check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy
from scipy.spatial.transform import Rotation

import mbkron


@dataclass
class TreeSpec:
    parents: list[int]  # -1 for ground
    joints: list[str]
    offsets: list[np.ndarray]  # 4x4
    rotation_axes: list[np.ndarray]
    translation_axes: list[np.ndarray]
    d: list[float]
    theta: list[float]
    variables: list[sympy.Expr | None]
    masses: list[float]
    coms: list[np.ndarray]
    inertias: list[np.ndarray]
    q: list[sympy.Symbol]


def physical_inertia(A: np.ndarray) -> np.ndarray:
    """An inertia tensor about the centre of mass, ``tr(S) I − S`` for the second moments
    ``S = 0.05 A Aᵀ + 0.01 I`` of a mass distribution: symmetric, positive definite and with principal
    moments that satisfy the triangle inequality, as every rigid body's do."""
    S = A @ A.T * 0.05 + 0.01 * np.eye(3)
    return np.trace(S) * np.eye(3) - S


def _unit(rng) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def _random_variable(rng, q, kind: int) -> sympy.Expr:
    """A smooth joint variable: a coordinate, a linear map, or a nonlinear function of q."""
    a = [sympy.Float(round(x, 3)) for x in rng.uniform(-1.0, 1.0, size=4)]
    k, m = rng.choice(len(q), size=2, replace=len(q) < 2)
    if kind == 0:
        return q[k]
    if kind == 1:
        return a[0] * q[k] - a[1] * q[m] + a[2]
    if kind == 2:
        return a[0] * sympy.sin(q[k]) + a[1] * q[m] ** 2 + a[2] * q[k] * q[m]
    return a[0] * sympy.cos(a[1] * q[k] + q[m]) + a[2] * sympy.exp(a[3] * q[m])


def random_tree(rng: np.random.Generator, nb: int = 8, nq: int = 3, joints=("revolute", "prismatic"),
                fixed_fraction: float = 0.1) -> TreeSpec:
    """A random branching tree with mixed joints and nonlinear joint variables."""
    q = list(sympy.symbols(f"q1:{nq + 1}"))
    spec = TreeSpec([], [], [], [], [], [], [], [], [], [], [], q)
    for i in range(nb):
        parent = -1 if i == 0 else int(rng.integers(-1, i)) if rng.random() < 0.15 else int(rng.integers(max(0, i - 3), i))
        joint = "fixed" if (i > 0 and rng.random() < fixed_fraction) else str(rng.choice(joints))
        offset = np.eye(4)
        offset[:3, :3] = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
        offset[:3, 3] = rng.uniform(-0.5, 0.5, size=3)
        A = rng.normal(size=(3, 3))
        spec.parents.append(parent)
        spec.joints.append(joint)
        spec.offsets.append(offset)
        spec.rotation_axes.append(_unit(rng))
        spec.translation_axes.append(_unit(rng))
        spec.d.append(float(rng.uniform(-0.5, 0.5)))
        spec.theta.append(float(rng.uniform(-1, 1)))
        spec.variables.append(None if joint == "fixed" else _random_variable(rng, q, int(rng.integers(0, 4))))
        spec.masses.append(float(rng.uniform(0.5, 3.0)))
        spec.coms.append(rng.uniform(-0.3, 0.3, size=3))
        spec.inertias.append(physical_inertia(A))
    return spec


def chain_spec(joints: list[str], variables: list[sympy.Expr], q: list[sympy.Symbol], rng) -> TreeSpec:
    """A serial chain with the given joint kinds and variables (for corner cases)."""
    nb = len(joints)
    spec = random_tree(rng, nb=nb, nq=len(q), fixed_fraction=0.0)
    spec.parents = [i - 1 for i in range(nb)]
    spec.joints = list(joints)
    spec.variables = list(variables)
    spec.q = list(q)
    return spec


def build_model(spec: TreeSpec, gravity=(0.0, -9.81, 0.0), loads=()) -> mbkron.Model:
    """The mbkron model of ``spec`` (bodies ``b0``, ``b1``, …), with ``loads`` added."""
    b = mbkron.ModelBuilder(gravity=gravity)
    for s in spec.q:
        b.add_coordinate(s.name)
    for i, joint in enumerate(spec.joints):
        kwargs = dict(
            parent="ground" if spec.parents[i] < 0 else f"b{spec.parents[i]}",
            joint=joint,
            offset=spec.offsets[i],
            mass=spec.masses[i],
            com=spec.coms[i],
            inertia=spec.inertias[i],
        )
        if joint == "revolute":
            kwargs.update(axis=spec.rotation_axes[i], d=spec.d[i], translation_axis=spec.translation_axes[i])
        elif joint == "prismatic":
            kwargs.update(axis=spec.translation_axes[i], theta=spec.theta[i], rotation_axis=spec.rotation_axes[i])
        else:
            kwargs.update(d=spec.d[i], translation_axis=spec.translation_axes[i], theta=spec.theta[i],
                          rotation_axis=spec.rotation_axes[i])
        if spec.variables[i] is not None:
            kwargs["variable"] = spec.variables[i]
        b.add_body(f"b{i}", **kwargs)
    for load in loads:
        b.add_load(load)
    return b.build()


def kanes_spec(spec: TreeSpec, gravity):
    """``spec`` as :mod:`validation.sympy_mechanics` describes a tree (for its Kane's-method reference)."""
    from validation.sympy_mechanics import BodySpec
    from validation.sympy_mechanics import TreeSpec as KanesTree

    bodies = [
        BodySpec(parent=spec.parents[i], joint=spec.joints[i], mass=spec.masses[i], com=spec.coms[i],
                 inertia=spec.inertias[i], offset=spec.offsets[i], d_axis=spec.translation_axes[i], d=spec.d[i],
                 theta_axis=spec.rotation_axes[i], theta=spec.theta[i], variable=spec.variables[i])
        for i in range(len(spec.joints))
    ]
    return KanesTree(bodies=bodies, coordinates=spec.q, gravity=gravity)


def _sym_rotation(axis: np.ndarray, angle) -> sympy.Matrix:
    x, y, z = (sympy.Float(float(c)) for c in axis)
    K = sympy.Matrix([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return sympy.eye(3) + K * sympy.sin(angle) + K * K * (1 - sympy.cos(angle))


def sympy_transforms(spec: TreeSpec) -> list[sympy.Matrix]:
    """World transforms T_i(q) as sympy matrices, built from the conventions alone."""
    out: list[sympy.Matrix] = []
    for i, joint in enumerate(spec.joints):
        theta = spec.variables[i] if joint == "revolute" else sympy.Float(spec.theta[i])
        d = spec.variables[i] if joint == "prismatic" else sympy.Float(spec.d[i])
        local = sympy.eye(4)
        local[:3, :3] = _sym_rotation(spec.rotation_axes[i], theta)
        local[:3, 3] = d * sympy.Matrix([sympy.Float(float(c)) for c in spec.translation_axes[i]])
        A = sympy.Matrix(spec.offsets[i].tolist()) * local
        out.append(A if spec.parents[i] < 0 else out[spec.parents[i]] * A)
    return out
