"""validation/ and benchmarks/ use only mbkron's public API, and mbkron never imports validation/.

Public: a name without a leading underscore that its module lists in ``__all__`` (or a public
submodule of a package). The files are parsed with :mod:`ast`, so imports inside functions count.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = sorted(p for folder in ("validation", "benchmarks") for p in (ROOT / folder).rglob("*.py"))
LIBRARY = sorted((ROOT / "mbkron").rglob("*.py"))


def _is_mbkron(module: str | None) -> bool:
    return module is not None and (module == "mbkron" or module.startswith("mbkron."))


def _is_public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _public(module: str, name: str) -> bool:
    """Whether ``from module import name`` imports a public name."""
    if name.startswith("_"):
        return False
    imported = importlib.import_module(module)
    if name in getattr(imported, "__all__", ()):
        return True
    if hasattr(imported, "__path__"):  # a package: a public submodule
        try:
            importlib.import_module(f"{module}.{name}")
        except ModuleNotFoundError:
            return False
        return True
    return False


def _private_uses(tree: ast.AST) -> list[str]:
    """Imports of non-public mbkron names, and private attributes of names bound to mbkron modules or objects."""
    found, bound = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_mbkron(node.module):
            for alias in node.names:
                if not _is_public_module(node.module) or not _public(node.module, alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_mbkron(alias.name):
                    if not _is_public_module(alias.name):
                        found.append(f"line {node.lineno}: import {alias.name}")
                    bound.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", CLIENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_validation_and_benchmarks_use_only_public_names(path):
    assert _private_uses(ast.parse(path.read_text(encoding="utf-8"))) == []


def _imports_validation(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        else:
            continue
        if any(m == "validation" or m.startswith("validation.") for m in modules):
            lines.append(node.lineno)
    return lines


def test_mbkron_never_imports_validation():
    offenders = {str(p.relative_to(ROOT)): lines for p in LIBRARY
                 if (lines := _imports_validation(ast.parse(p.read_text(encoding="utf-8"))))}
    assert offenders == {}


def test_the_checks_catch_what_they_should():
    """The checks themselves, on small sources (a private import, a private attribute, an import of validation)."""
    assert _private_uses(ast.parse("from mbkron.io import format_toml\nfrom mbkron import examples")) == []
    assert _private_uses(ast.parse("from mbkron.io.formulas import _grammar_function")) != []
    assert _private_uses(ast.parse("from mbkron.io.reader import show")) != []  # public spelling, not in __all__
    assert _private_uses(ast.parse("import mbkron\nmbkron.io._private")) != []
    assert _imports_validation(ast.parse("def f():\n    from validation import report\n")) == [2]
