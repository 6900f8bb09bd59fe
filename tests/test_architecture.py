"""The package's shape: layers whose imports point down only, no import cycles, modules and functions of
readable size.

The import contracts live in pyproject.toml (``[tool.importlinter]``) and are checked by
import-linter (in the ``test`` extra), counting imports inside functions too. The size budgets count code
only — docstrings, comments and blank lines are free — so documentation is never what has to give.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_CODE_LINES = 600
"""Budget of a module's code lines (docstrings, comments and blank lines not counted)."""
MAX_FUNCTION_LINES = 200
"""Budget of a function's code lines (its docstring, comments and blank lines not counted)."""


def _code_lines(source: str, first: int, last: int, docstrings: set[int]) -> int:
    """Lines ``first..last`` (1-based) of ``source`` that hold code: not blank, not a comment, not a docstring."""
    lines = source.splitlines()
    return sum(1 for number in range(first, last + 1)
               if number not in docstrings and lines[number - 1].strip() and not lines[number - 1].lstrip().startswith("#"))


def _docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers of every module, class and function docstring (and of attribute docstrings: bare strings)."""
    numbers = set()
    for node in ast.walk(tree):
        for statement in getattr(node, "body", []) if isinstance(getattr(node, "body", None), list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
                    isinstance(statement.value.value, str):
                numbers.update(range(statement.lineno, statement.end_lineno + 1))
    return numbers


def _sizes():
    """``(module sizes, function sizes)`` in code lines, by ``path`` and ``path:function``."""
    modules, functions = {}, {}
    for path in (ROOT / "mbkron").rglob("*.py"):
        source = path.read_text()
        tree = ast.parse(source)
        docstrings = _docstring_lines(tree)
        name = str(path.relative_to(ROOT))
        modules[name] = _code_lines(source, 1, len(source.splitlines()), docstrings)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[f"{name}:{node.name}"] = _code_lines(source, node.lineno, node.end_lineno, docstrings)
    return modules, functions


def test_import_contracts_are_kept():
    """``lint-imports``: the layers, acyclic-siblings and reference-is-an-oracle contracts of pyproject.toml."""
    pytest.importorskip("importlinter")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_no_module_or_function_is_too_long():
    modules, functions = _sizes()
    assert len(modules) > 100 and len(functions) > 1000, "the package was not found"
    too_long = {name: lines for name, lines in modules.items() if lines > MAX_CODE_LINES}
    assert not too_long, f"modules over {MAX_CODE_LINES} code lines: {too_long}"
    too_long = {name: lines for name, lines in functions.items() if lines > MAX_FUNCTION_LINES}
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} code lines: {too_long}"


def test_the_size_budget_counts_code_not_documentation():
    """A docstring, comments and blank lines do not count; code lines do."""
    source = 'def f():\n    """A long\n\n    docstring."""\n    # a comment\n\n    x = 1\n    return x\n'
    tree = ast.parse(source)
    assert _docstring_lines(tree) == {2, 3, 4}
    assert _code_lines(source, 1, 8, _docstring_lines(tree)) == 3  # def, x = 1, return


def test_no_private_scipy_imports():
    offenders = [str(path.relative_to(ROOT)) for path in (ROOT / "mbkron").rglob("*.py")
                 if any(part.startswith("_") and part != "__future__"
                        for line in path.read_text().splitlines() if line.lstrip().startswith(("from scipy", "import scipy"))
                        for part in line.split()[1].split("."))]
    assert not offenders, f"private scipy modules imported in {offenders}"
