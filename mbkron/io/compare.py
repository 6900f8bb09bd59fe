"""Comparing models: :func:`model_differences` and :func:`models_equal`.

Two models are compared by structure and parameters, and by their joint variables, loads and
muscles evaluated numerically at random states, so that the same model given in different forms
(e.g. built in Python and read from a model file) compares equal.
"""

from __future__ import annotations

import math

import numpy as np

from mbkron.core.errors import ConfigurationError
from mbkron.algorithms.dynamics.loads import evaluate_value
from mbkron.io.schema import CURVE, FRAME, HILL_FIELDS, LOAD_FIELDS, LOAD_TYPES, NAME, PATH, SCALAR, SURFACES, VECTOR, WRAPS
from mbkron.io.writer import surface_table
from mbkron.multibody import tree as tree_description
from mbkron.model.model import Model
from mbkron.algorithms.paths.forces import path_length_and_moment_arms
from mbkron.multibody.muscles.paths import MusclePath
from mbkron.multibody.muscles.points import point_condition
from mbkron.multibody.muscles.wrapping import shape_fields

__all__ = ["model_differences", "models_equal"]


def _sample_coordinates(model: Model, rng: np.random.Generator, samples: int) -> np.ndarray:
    q = np.empty((samples, model.nq))
    for k, c in enumerate(model.coordinate_records):
        low, high = c.range
        if math.isfinite(low) and math.isfinite(high):
            q[:, k] = rng.uniform(low, high, samples)
        elif math.isfinite(low):
            q[:, k] = low + rng.exponential(1.0, samples)
        elif math.isfinite(high):
            q[:, k] = high - rng.exponential(1.0, samples)
        else:
            q[:, k] = c.default + rng.normal(0.0, 1.0, samples)
    return q


def _close(a: object, b: object, rtol: float, atol: float) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def model_differences(a: Model, b: Model, *, rtol: float = 1e-12, atol: float = 1e-12, samples: int = 8,
                      seed: int = 0) -> list[str]:
    """Everything that differs between two models, as messages (empty if they are equal).

    Compares names, gravity, coordinates (name, unit, range, default, periodic, original name), bodies (parent,
    joint type and axis, the constant parts of the joint transform, inertial parameters), the joint
    variables ``f``, ``∇f`` and ``H`` at random coordinates (within the ranges), the loads
    (types, bodies, points, and values at random ``t, q, q̇``) and the muscles (names, Hill
    parameters, conditional points, path lengths and moment arms at the random coordinates). Joint
    variables given in different forms (a coordinate name, a ``Linear`` map, a sympy expression) are
    equal if their values are.

    Parameters
    ----------
    a, b : Model
    rtol, atol : float
        Tolerances of the numerical comparisons (``numpy.allclose``).
    samples : int
        Number of random states.
    seed : int
        Seed of the random states.

    Returns
    -------
    list of str
    """
    out: list[str] = []
    if a.name != b.name:
        out.append(f"name: {a.name!r} vs {b.name!r}")
    if not _close(a.gravity, b.gravity, rtol, atol):
        out.append(f"gravity: {a.gravity.tolist()} vs {b.gravity.tolist()}")
    if a.coordinates != b.coordinates:
        out.append(f"coordinates: {a.coordinates} vs {b.coordinates}")
    else:
        for ca, cb in zip(a.coordinate_records, b.coordinate_records):
            for key in ("unit", "periodic", "original_name"):
                if getattr(ca, key) != getattr(cb, key):
                    out.append(f"coordinate `{ca.name}`: `{key}` {getattr(ca, key)!r} vs {getattr(cb, key)!r}")
            for key in ("range", "default"):
                if not _close(getattr(ca, key), getattr(cb, key), rtol, atol):
                    out.append(f"coordinate `{ca.name}`: `{key}` {getattr(ca, key)} vs {getattr(cb, key)}")
    if a.bodies != b.bodies:
        out.append(f"bodies: {a.bodies} vs {b.bodies}")
    else:
        for ba, bb in zip(a.body_records, b.body_records):
            out.extend(_body_differences(ba, bb, rtol, atol))
    if out:
        return out
    rng = np.random.default_rng(seed)
    q = _sample_coordinates(a, rng, samples)
    for label, va, vb in zip(("f", "∇f", "H"), a.joint_variables(q), b.joint_variables(q)):
        if not _close(va, vb, rtol, atol):
            worst = int(np.argmax(np.abs(np.asarray(va) - np.asarray(vb)).reshape(samples, -1).max(axis=1)))
            out.append(f"joint variables: `{label}` differs, e.g. at q = {q[worst].tolist()}")
    out.extend(_load_differences(a, b, q, rng, rtol, atol))
    out.extend(_muscle_differences(a, b, q, rtol, atol))
    return out


def _constant_transform(body) -> np.ndarray:
    """The joint transform's constant factor(s): Trans(d V_d) for revolute, Rot(V_θ, θ) for prismatic."""
    if body.joint == tree_description.REVOLUTE:
        return tree_description.joint_transform(np.eye(4), body.translation_axis, body.d, body.rotation_axis, 0.0)
    if body.joint == tree_description.PRISMATIC:
        return tree_description.joint_transform(np.eye(4), body.translation_axis, 0.0, body.rotation_axis, body.theta)
    return tree_description.joint_transform(np.eye(4), body.translation_axis, body.d, body.rotation_axis, body.theta)


def _body_differences(ba, bb, rtol: float, atol: float) -> list[str]:
    where = f"body `{ba.name}`"
    out = []
    for key in ("parent", "joint", "joint_name"):
        if getattr(ba, key) != getattr(bb, key):
            return [f"{where}: `{key}` {getattr(ba, key)!r} vs {getattr(bb, key)!r}"]
    axis = {tree_description.REVOLUTE: "rotation_axis", tree_description.PRISMATIC: "translation_axis"}.get(ba.joint)
    if axis and not _close(getattr(ba, axis), getattr(bb, axis), rtol, atol):
        out.append(f"{where}: joint axis {getattr(ba, axis).tolist()} vs {getattr(bb, axis).tolist()}")
    if not _close(ba.offset @ _constant_transform(ba), bb.offset @ _constant_transform(bb), rtol, atol):
        out.append(f"{where}: the constant part of the joint transform (offset, d, theta) differs")
    for key in ("mass", "com", "inertia"):
        if not _close(getattr(ba, key), getattr(bb, key), rtol, atol):
            out.append(f"{where}: `{key}` {np.asarray(getattr(ba, key)).tolist()} vs {np.asarray(getattr(bb, key)).tolist()}")
    return out


def _load_differences(a: Model, b: Model, q: np.ndarray, rng: np.random.Generator, rtol: float, atol: float) -> list[str]:
    if len(a.loads) != len(b.loads):
        return [f"loads: {len(a.loads)} vs {len(b.loads)}"]
    out = []
    t = rng.uniform(0.0, 10.0)
    qd = rng.normal(0.0, 1.0, q.shape)
    for index, (la, lb) in enumerate(zip(a.loads, b.loads)):
        where = f"load {index}"
        if type(la) is not type(lb):
            out.append(f"{where}: {type(la).__name__} vs {type(lb).__name__}")
            continue
        _, required, optional = LOAD_FIELDS[LOAD_TYPES[type(la)]]
        for key, field_kind in {**required, **optional}.items():
            va, vb = getattr(la, key), getattr(lb, key)
            if field_kind in (NAME, FRAME):
                same = va == vb
            elif field_kind in (SCALAR, VECTOR):
                shape = (q.shape[0],) + ((3,) if field_kind == VECTOR else ())
                same = _close(np.broadcast_to(evaluate_value(va, t, q, qd), shape),
                              np.broadcast_to(evaluate_value(vb, t, q, qd), shape), rtol, atol)
            elif field_kind == SURFACES:  # as written: shape and body equal, the numbers close
                tables = [[surface_table(s) for s in surfaces] for surfaces in (va, vb)]
                same = len(va) == len(vb) and all(ta.keys() == tb.keys() and all(
                    ta[k] == tb[k] if isinstance(ta[k], str) else _close(ta[k], tb[k], rtol, atol) for k in ta)
                    for ta, tb in zip(*tables))
            elif field_kind == WRAPS:
                same = [(w.surface.name, tuple(w.range), w.method) for w in va] == \
                    [(w.surface.name, tuple(w.range), w.method) for w in vb]
            elif field_kind == CURVE:
                same = va.kind == vb.kind and va.x.shape == vb.x.shape and _close(va.x, vb.x, rtol, atol) and \
                    _close(va.y, vb.y, rtol, atol)
            elif field_kind == PATH:
                paths = [MusclePath(load.name, tuple(load.path)) for load in (la, lb)]
                out.extend(f"{where} ({type(la).__name__}): {message}" for message in _condition_differences(*paths, rtol, atol))
                same = _paths_close(a, b, la, lb, q, rtol, atol)
            else:
                same = _close(va, vb, rtol, atol)
            if not same:
                out.append(f"{where} ({type(la).__name__}): `{key}` differs")
    return out


def _paths_close(a: Model, b: Model, la, lb, q: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether two path loads have the same lengths and moment arms at ``q`` (or fail alike)."""
    evaluated = []
    for model, load in ((a, la), (b, lb)):
        try:
            evaluated.append(path_length_and_moment_arms(model, load, model.kinematics(q, 1)))
        except ConfigurationError as exc:
            evaluated.append(str(exc))
    if isinstance(evaluated[0], str) or isinstance(evaluated[1], str):
        return evaluated[0] == evaluated[1]
    return all(_close(va, vb, rtol, atol) for va, vb in zip(*evaluated))


def _lengths_and_moment_arms(model: Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Path lengths and moment arms at ``q``."""
    return model.muscle_lengths(q), model.moment_arms(q)


def _muscle_differences(a: Model, b: Model, q: np.ndarray, rtol: float, atol: float) -> list[str]:
    """Muscle names, Hill parameters, and path lengths and moment arms at ``q``."""
    if a.muscles != b.muscles:
        return [f"muscles: {a.muscles} vs {b.muscles}"]
    if not a.muscles:
        return []
    out = []
    for pa, pb in zip(a.muscle_set.paths, b.muscle_set.paths):
        if (pa.hill is None) != (pb.hill is None) or (pa.hill is not None and (
                pa.hill.curves != pb.hill.curves
                or not _close([getattr(pa.hill, k) for k, _ in HILL_FIELDS], [getattr(pb.hill, k) for k, _ in HILL_FIELDS],
                              rtol, atol))):
            out.append(f"muscle `{pa.name}`: Hill parameters {pa.hill} vs {pb.hill}")
        out.extend(_condition_differences(pa, pb, rtol, atol))
        out.extend(_wrap_differences(pa, pb, rtol, atol))
    evaluated = []
    for model in (a, b):
        try:
            evaluated.append(_lengths_and_moment_arms(model, q))
        except ConfigurationError as exc:
            evaluated.append(str(exc))
    if isinstance(evaluated[0], str) or isinstance(evaluated[1], str):
        if evaluated[0] != evaluated[1]:
            out.append(f"muscle paths: evaluation differs at random q: {evaluated[0]} vs {evaluated[1]}"[:500])
        return out
    for label, va, vb in zip(("lengths", "moment arms"), *evaluated):
        if not _close(va, vb, rtol, atol):
            out.append(f"muscle paths: {label} differ at random q")
    return out


def _wrap_differences(pa, pb, rtol: float, atol: float) -> list[str]:
    """The wraps of two paths: surfaces (kind, body, quadrant, numbers), ranges and methods."""
    def shown(path) -> list:
        return [(type(w.surface).__name__, w.surface.name, w.surface.body, w.surface.quadrant, w.surface.active,
                 w.range, w.method) for w in path.wraps]

    def numbers(path) -> list[float]:
        return [float(x) for w in path.wraps for key in ("translation", "xyz_body_rotation", *shape_fields(type(w.surface)))
                for x in np.ravel(getattr(w.surface, key))]
    if shown(pa) != shown(pb) or not _close(numbers(pa), numbers(pb), rtol, atol):
        return [f"muscle `{pa.name}`: wraps {shown(pa)} vs {shown(pb)}"[:500]]
    return []


def _condition_differences(pa, pb, rtol: float, atol: float) -> list[str]:
    """The conditional points of two paths (their positions in the path, coordinates and ranges):
    compared directly, since random states may miss a difference in a range."""
    conditions = [[(n, c) for n, c in enumerate(map(point_condition, p.points)) if c is not None] for p in (pa, pb)]
    if [(n, c.coordinate) for n, c in conditions[0]] != [(n, c.coordinate) for n, c in conditions[1]] or not _close(
            [(c.lo, c.hi) for _, c in conditions[0]], [(c.lo, c.hi) for _, c in conditions[1]], rtol, atol):
        shown = ["; ".join(f"point {n}: {c}" for n, c in listed) or "none" for listed in conditions]
        return [f"muscle `{pa.name}`: conditional points {shown[0]} vs {shown[1]}"[:500]]
    return []


def models_equal(a: Model, b: Model, *, rtol: float = 1e-12, atol: float = 1e-12) -> bool:
    """Whether :func:`model_differences` finds nothing."""
    return not model_differences(a, b, rtol=rtol, atol=atol)
