"""Modules imported on first use: loading a model imports neither numba, nor scipy's heavy submodules, nor
(for a model without formulas) sympy.

Building a model needs numpy only; evaluating it calls the compiled kernels (numba, ~0.25 s of CPU to
import) and, for constraint groups and fitted surfaces, scipy's ``linalg`` and ``interpolate``
(~0.2-0.4 s each); formulas in a model file are parsed into sympy expressions (~0.2 s to import sympy).
A module that reads kernels at evaluation time, or sympy only for formulas, holds them through a
:class:`LazyModule` instead of importing them at its top, so that importing it (and building a model)
does not import them; the first evaluation, or the first formula, does.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

__all__ = ["LazyModule", "is_sympy_expression"]


class LazyModule:
    """Stands for the module ``name``, imported on the first read of one of its attributes.

    Each attribute read is kept on this object, so later reads are ordinary attribute lookups (kernels
    are read this way on every evaluation). Module attributes that are rebound after import are not
    followed: use it for functions and constants.

    Parameters
    ----------
    name : str
        The module's absolute name, e.g. ``"mbkron.compiled.forward"``.

    Examples
    --------
    >>> from mbkron.core.lazy import LazyModule
    >>> cmath = LazyModule("cmath")
    >>> cmath.sqrt(-1.0)
    1j
    """

    def __init__(self, name: str):
        object.__setattr__(self, "_LazyModule__name", name)

    @property
    def module(self) -> ModuleType:
        """The module itself (imported now if it was not yet)."""
        return importlib.import_module(self.__name)

    def __getattr__(self, attribute: str):
        # reached only for attributes not yet kept in the instance's __dict__
        if attribute.startswith("__"):  # copy, pickle and friends probe dunders: do not import for them
            raise AttributeError(attribute)
        value = getattr(self.module, attribute)
        object.__setattr__(self, attribute, value)
        return value

    def __repr__(self) -> str:
        return f"<LazyModule {self.__name!r}>"


def is_sympy_expression(value: object) -> bool:
    """Whether ``value`` is a sympy expression, without importing sympy.

    Until something has imported sympy no value can be a sympy expression, so the check costs no
    import: model descriptions given as coordinate names, numbers, :class:`~mbkron.jointvars.explicit.Linear`
    maps or tabulated functions are told apart from expressions without loading sympy.
    """
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(value, sympy.Expr)
