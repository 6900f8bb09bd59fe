"""A bushing's description: OpenSim's ``BushingForce``, a linear six-axis spring–damper between two body-fixed
frames (the law and its generalized force: :mod:`mbkron.algorithms.dynamics.bushings`).

:class:`BushingForce` has the ``check`` of a load (:func:`mbkron.multibody.loads.check_load`), so a model
carries it in ``model.loads`` like any other load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from mbkron.multibody.records import GROUND

__all__ = ["BushingForce"]


@dataclass(frozen=True, eq=False)
class BushingForce:
    """A linear bushing between frame ``F`` on ``body_1`` and frame ``M`` on ``body_2`` (:mod:`mbkron.algorithms.dynamics.bushings`).

    Attributes
    ----------
    name : str
        Any non-empty printable text (messages name the bushing by it).
    body_1, body_2 : str
        Body names or ``"ground"``.
    rotational_stiffness, translational_stiffness : array_like, shape (3,)
        N·m/rad about, N/m along the deflection's axes; ≥ 0.
    frame_1, frame_2 : array_like, shape (4, 4)
        The rigid transforms of ``F`` in ``body_1`` and of ``M`` in ``body_2`` (default: the bodies' frames).
    rotational_damping, translational_damping : array_like, shape (3,)
        N·m·s/rad, N·s/m; ≥ 0 (default 0).
    """

    name: str
    body_1: str
    body_2: str
    rotational_stiffness: NDArray[np.float64]
    translational_stiffness: NDArray[np.float64]
    frame_1: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))
    frame_2: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))
    rotational_damping: NDArray[np.float64] = field(default_factory=lambda: np.zeros(3))
    translational_damping: NDArray[np.float64] = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        for key in ("frame_1", "frame_2", "rotational_stiffness", "translational_stiffness", "rotational_damping",
                    "translational_damping"):
            try:
                value = np.array(getattr(self, key), dtype=float)
            except (TypeError, ValueError):
                continue  # `check` reports it
            value.setflags(write=False)
            object.__setattr__(self, key, value)

    def check(self, bodies: set[str], joints: set[str], coordinates: set[str], where: str, problems: list[str]) -> None:
        """Append to ``problems`` everything wrong with this load (``where`` names it)."""
        if not isinstance(self.name, str) or not self.name or not self.name.isprintable():
            problems.append(f"{where}: `name` must be a non-empty string of printable characters, got {self.name!r:.80}")
        for key in ("body_1", "body_2"):
            body = getattr(self, key)
            if body != GROUND and body not in bodies:
                problems.append(f"{where}: `{key}` names unknown body {body!r}; expected `ground` or one of: "
                                f"{', '.join(sorted(bodies))}")
        if self.body_1 == self.body_2:
            problems.append(f"{where}: `body_1` and `body_2` are both {self.body_1!r}: a bushing links two bodies")
        for key in ("frame_1", "frame_2"):
            frame = np.asarray(getattr(self, key), dtype=float)
            rotation = frame[:3, :3] if frame.shape == (4, 4) else None
            if rotation is None or not np.isfinite(frame).all() or not np.allclose(rotation.T @ rotation, np.eye(3),
                                                                                    atol=1e-9):
                problems.append(f"{where}: `{key}` must be a finite rigid transform (4 × 4), got {frame.tolist()!r:.200}")
        for key in ("rotational_stiffness", "translational_stiffness", "rotational_damping", "translational_damping"):
            value = np.asarray(getattr(self, key), dtype=float)
            if value.shape != (3,) or not np.isfinite(value).all() or (value < 0).any():
                problems.append(f"{where}: `{key}` must be 3 finite non-negative numbers, got {value.tolist()!r:.200}")
