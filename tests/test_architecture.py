"""The package's shape: layers whose imports point down only, no import cycles, small modules.

The import contracts live in pyproject.toml (``[tool.importlinter]``) and are checked by
import-linter (in the ``test`` extra), counting imports inside functions too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def test_import_contracts_are_kept():
    """``lint-imports``: the layers, acyclic-siblings and reference-is-an-oracle contracts of pyproject.toml."""
    pytest.importorskip("importlinter")
    done = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_no_module_is_a_god_module():
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in (ROOT / "mbkron").rglob("*.py")}
    assert sizes, "no modules found"
    too_long = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_no_private_scipy_imports():
    offenders = [str(path.relative_to(ROOT)) for path in (ROOT / "mbkron").rglob("*.py")
                 if any(part.startswith("_") and part != "__future__"
                        for line in path.read_text().splitlines() if line.lstrip().startswith(("from scipy", "import scipy"))
                        for part in line.split()[1].split("."))]
    assert not offenders, f"private scipy modules imported in {offenders}"
