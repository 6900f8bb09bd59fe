"""mbkron against an OpenSim reference at a set of poses: body poses, muscle lengths, moment arms.

Shared by the shoulder and leg6dof9musc comparisons; the reference is any object whose
``evaluate(q)`` returns ``(poses (bodies, 4, 4), lengths (n_mt,), moment arms (nq, n_mt))`` at one pose.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Comparison:
    """mbkron's values (first) and the reference's (second) at the poses ``q``."""

    label: str
    q: np.ndarray
    poses: tuple[np.ndarray, np.ndarray]
    lengths: tuple[np.ndarray, np.ndarray]
    arms: tuple[np.ndarray, np.ndarray]
    seconds: float

    @staticmethod
    def figures(ours: np.ndarray, reference: np.ndarray, axis: tuple) -> np.ndarray:
        """Significant figures: −log10(max error / max |reference|); inf: identical, nan: both zero."""
        error = np.abs(ours - reference).max(axis=axis)
        scale = np.abs(reference).max(axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return -np.log10(error / scale)


def compare(model, reference, bodies: Sequence[str], q: np.ndarray, label: str) -> Comparison:
    """Evaluate mbkron (batched) and the reference (pose by pose) at every row of ``q``."""
    start = time.perf_counter()
    ours_poses = model.kinematics(q, 0).T[:, [model.body_index(b) for b in bodies]]
    evaluated = [reference.evaluate(row) for row in q]
    return Comparison(label, q, (ours_poses, np.array([e[0] for e in evaluated])),
                      (model.muscle_lengths(q), np.array([e[1] for e in evaluated])),
                      (model.moment_arms(q), np.array([e[2] for e in evaluated])), time.perf_counter() - start)
