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
    """``lint-imports``: the two layers contracts (the package, the algorithms), acyclic siblings, algorithms as
    evaluation only, and the reference as an oracle (pyproject.toml)."""
    pytest.importorskip("importlinter")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout


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


def _layers_below_model() -> list[str]:
    """The subpackages below ``model`` in pyproject.toml's layers contract of ``mbkron``."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [layers] = [c["layers"] for c in config["contracts"] if c["type"] == "layers" and c.get("containers") == ["mbkron"]]
    rows = [[name.strip() for name in row.split("|")] for row in layers]
    below = [row for depth, row in enumerate(rows) if depth > next(d for d, r in enumerate(rows) if "model" in r)]
    return [name for row in below for name in row]


def _model_uses(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, attribute, called)`` of every ``model.<attribute>`` in the module at ``path``."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "model":
            uses.append((node.lineno, node.func.attr, True))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "model":
            uses.append((node.lineno, node.attr, False))
    return uses


def _lower_modules() -> list[Path]:
    """Every module below the model layer (the algorithms and the descriptions)."""
    return [path for name in _layers_below_model() for path in sorted((ROOT / "mbkron" / name).rglob("*.py"))]


def test_no_lower_layer_calls_back_into_the_model():
    """Issue 26 item 3: the algorithms below the model read its description (dataclass fields, and the
    properties ``nq``, ``nb``, ``nj``, ``coordinates``, ``bodies``, ``joints`` made of them) and call none of its
    methods; a ``Model`` is passed down, never called back. (The check reads the name ``model``, which is what every
    algorithm calls its argument; a model under another name would pass unseen.)"""
    import dataclasses

    from mbkron.model.model import Model

    allowed = {f.name for f in dataclasses.fields(Model) if not f.name.startswith("_")}
    allowed |= {"nq", "nb", "nj", "coordinates", "bodies", "joints"}
    offenders = [f"{path.relative_to(ROOT)}:{line}: model.{attribute}{'(…)' if called else ''}"
                 for path in _lower_modules() for line, attribute, called in _model_uses(path)
                 if called or attribute not in allowed]
    assert not offenders, "lower layers call back into the model:\n" + "\n".join(offenders)


def test_the_model_use_check_finds_calls_and_private_reads(tmp_path):
    """The check above can fail: a method call and a private read are found, a field read is not flagged."""
    source = tmp_path / "module.py"
    source.write_text("def f(model, kin):\n    a = model.tree\n    b = model.body_index('x')\n    return model._forward\n")
    assert sorted(_model_uses(source)) == [(2, "tree", False), (3, "body_index", False), (3, "body_index", True),
                                           (4, "_forward", False)]
