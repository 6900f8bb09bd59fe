"""Joint variables that are empirical functions of one coordinate, ``f_i(q) = F_i(q_k)`` (Section 3-1 of the
dissertation).

:class:`CoordinateFunctionVariables` evaluates the joint variables a model describes by
:class:`~mbkron.multibody.jointvars.CoordinateFunction` (an empirical function of :mod:`mbkron.numerics.functions`
applied to one generalized coordinate): a :class:`~mbkron.algorithms.jointvars.explicit.JointVariableProvider` with gradient
``F'(q_k) e_k`` and Hessian ``F''(q_k) e_k e_kᵀ``, evaluated by the compiled kernel of explicit joint variables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mbkron.numerics import function_rows
from mbkron.numerics.functions import EmpiricalFunction
from mbkron.algorithms.jointvars.explicit import ExplicitProvider
from mbkron.multibody.jointvars import CoordinateFunction

__all__ = ["CoordinateFunctionVariables"]


class CoordinateFunctionVariables(ExplicitProvider):
    """Joint variables ``f_i(q) = F_i(q_{k_i})``: value ``F_i``, gradient ``F_i' e_{k_i}``, Hessian
    ``F_i'' e_{k_i} e_{k_i}ᵀ``, batched over the leading axes of ``q``; evaluated by the compiled kernel of explicit
    joint variables (:func:`mbkron.numerics.tabulated.explicit_state`).

    Parameters
    ----------
    functions : sequence of EmpiricalFunction
        ``F_i``.
    coordinates : sequence of int
        ``k_i``: the index in ``q`` of each function's argument.
    nq : int
        Number of generalized coordinates.
    """

    def __init__(self, functions: Sequence[EmpiricalFunction], coordinates: Sequence[int], nq: int):
        if len(functions) != len(coordinates):
            raise ValueError(f"got {len(functions)} functions but {len(coordinates)} coordinate indices")
        self.functions = tuple(functions)
        self.coordinates = np.array(coordinates, dtype=np.intp).reshape(-1)
        if np.any((self.coordinates < 0) | (self.coordinates >= nq)):
            raise ValueError(f"coordinate indices must lie in 0..{nq - 1}, got {self.coordinates.tolist()}")
        self.coordinates.setflags(write=False)
        self.nq = nq

    @classmethod
    def from_descriptions(
        cls, descriptions: Sequence[CoordinateFunction], coordinate_names: Sequence[str]
    ) -> CoordinateFunctionVariables:
        """Provider for :class:`CoordinateFunction` descriptions, given the model's coordinate names."""
        names = list(coordinate_names)
        return cls([d.function for d in descriptions], [names.index(d.coordinate) for d in descriptions], len(names))

    @property
    def size(self) -> int:
        return len(self.functions)

    def pack(self, rows, floats):
        """A function row per joint variable, its ``ROW`` its row in the map, its ``COORDINATE`` ``k_i``."""
        packed = []
        for row, function, coordinate in zip(rows, self.functions, self.coordinates):
            entry = function.pack(floats)
            entry[function_rows.ROW], entry[function_rows.COORDINATE] = int(row), int(coordinate)
            packed.append(entry)
        return packed, []
