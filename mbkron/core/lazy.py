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
from collections.abc import Callable, Mapping
from types import ModuleType

__all__ = ["LazyModule", "is_sympy_expression", "lazy_exports"]


class LazyModule:
    """Stands for the module ``name``, imported on the first read of one of its attributes.

    Each attribute read is kept on this object, so later reads are ordinary attribute lookups (kernels
    are read this way on every evaluation). Module attributes that are rebound after import are not
    followed: use it for functions and constants.

    Parameters
    ----------
    name : str
        The module's absolute name, e.g. ``"mbkron.algorithms.dynamics.forward_kernels"``.

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
    import: model descriptions given as coordinate names, numbers, :class:`~mbkron.multibody.jointvars.Linear`
    maps or tabulated functions are told apart from expressions without loading sympy.
    """
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(value, sympy.Expr)


def lazy_exports(package: str, modules: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a package's ``__init__`` whose public names are imported on first use
    (PEP 562): reading ``name`` imports ``modules[name]``, takes its attribute ``name`` and keeps it in the
    package; submodules are found by the import system itself.

    Parameters
    ----------
    package : str
        The package's name, e.g. ``"mbkron.io"``.
    modules : mapping of str to str
        Each public name's module.
    """

    def __getattr__(name: str) -> object:
        try:
            module = modules[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(modules))

    return __getattr__, __dir__
