"""The module paths of mbkron 0.1.0 that moved when the tree was ordered by roles (issue 26) keep working, with a
DeprecationWarning naming where their names live now (:mod:`mbkron.core.moved`)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from mbkron.core.moved import MOVED

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_new_home_exists_and_no_old_path_is_a_module_any_more(old):
    for target in MOVED[old]:
        importlib.import_module(f"mbkron.{target}")
    path = ROOT / "mbkron" / Path(*old.split("."))
    assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists()


def test_an_old_path_gives_the_names_of_its_new_homes_with_a_deprecation_warning():
    code = ("import warnings\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    from mbkron.jointvars.functions import CubicSpline, CoordinateFunction\n"
            "    from mbkron.dynamics.contact import SmoothSphereHalfSpace, contact_state\n"
            "import mbkron.numerics.functions as f, mbkron.multibody.jointvars as j\n"
            "import mbkron.multibody.contact as c, mbkron.algorithms.dynamics.contact as a\n"
            "assert CubicSpline is f.CubicSpline and CoordinateFunction is j.CoordinateFunction\n"
            "assert SmoothSphereHalfSpace is c.SmoothSphereHalfSpace and contact_state is a.contact_state\n"
            "messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]\n"
            "print(messages)\n"
            "assert any('`mbkron.jointvars.functions` moved to `mbkron.numerics.functions`' in m for m in messages)\n"
            "assert any('`mbkron.dynamics.contact` moved to `mbkron.multibody.contact`' in m for m in messages)\n"
            "assert all(w.filename == '<string>' for w in caught), [w.filename for w in caught]\n")
    result = _run(code)
    assert result.returncode == 0, result.stderr


def test_a_name_that_is_nowhere_is_an_import_error():
    result = _run("from mbkron.dynamics.contact import no_such_name", "-W", "ignore")
    assert result.returncode != 0 and "ImportError" in result.stderr and "no_such_name" in result.stderr


def test_as_errors_the_old_paths_fail_and_the_new_ones_do_not():
    """Under ``-W error::DeprecationWarning`` (a project that wants no deprecated use) an old path raises, while
    importing the package and its new paths does not warn."""
    assert _run("import mbkron.dynamics.loads", "-W", "error::DeprecationWarning").returncode != 0
    ok = _run("import mbkron, mbkron.multibody.loads, mbkron.algorithms.dynamics.loads; mbkron.Model",
              "-W", "error::DeprecationWarning")
    assert ok.returncode == 0, ok.stderr
