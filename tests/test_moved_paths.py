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

OLD_MODULES = (
    "compiled",
    "compiled.articulated",
    "compiled.callbacks",
    "compiled.calls",
    "compiled.closure_callbacks",
    "compiled.closures",
    "compiled.common",
    "compiled.dynamics",
    "compiled.forward",
    "compiled.handoff",
    "compiled.kinematics",
    "compiled.layout",
    "compiled.linalg",
    "compiled.paths",
    "compiled.points",
    "compiled.python_callbacks",
    "compiled.runge_kutta",
    "compiled.runs",
    "compiled.tabulated",
    "compiled.trbdf2",
    "compiled.wrap_circular",
    "compiled.wrap_constants",
    "compiled.wrap_ellipsoid",
    "compiled.wrap_segments",
    "compiled.wrap_torus",
    "compiled.wrapping",
    "core.description",
    "core.tableaus",
    "dynamics",
    "dynamics.bushings",
    "dynamics.contact",
    "dynamics.hunt_crossley",
    "dynamics.loads",
    "dynamics.points",
    "dynamics.reactions",
    "dynamics.terms",
    "jointvars",
    "jointvars.compiled",
    "jointvars.constrained",
    "jointvars.constraint_callbacks",
    "jointvars.constraints",
    "jointvars.derivatives",
    "jointvars.explicit",
    "jointvars.finite_difference",
    "jointvars.functions",
    "jointvars.gcvspl",
    "jointvars.generated",
    "jointvars.loop_closures",
    "jointvars.periods",
    "jointvars.premodel",
    "jointvars.solution",
    "jointvars.solvers",
    "kinematics",
    "kinematics.tree",
    "model.forward",
    "muscles",
    "muscles.conditions",
    "muscles.hill",
    "muscles.ligaments",
    "muscles.paths",
    "muscles.points",
    "muscles.springs",
    "muscles.surfaces",
    "muscles.wrap_ellipsoid",
    "muscles.wrap_paths",
    "muscles.wrap_torus",
    "muscles.wrapping",
)
"""The module paths of mbkron 0.1.0 (``git ls-tree 88fdac8``) that the reordering by roles removed."""


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


def test_every_removed_module_of_0_1_0_has_new_homes():
    assert set(OLD_MODULES) <= set(MOVED)


def test_an_old_submodule_is_its_shim_whatever_was_imported_before():
    """``from mbkron.jointvars import functions`` gives the old module's names (CubicSpline, CoordinateFunction), not
    the new ``algorithms.jointvars.functions`` that the old package's first home also has, after that was imported."""
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "import mbkron.algorithms.jointvars.functions, mbkron.algorithms.dynamics.loads\n"
            "from mbkron.jointvars import functions\n"
            "from mbkron.dynamics import loads\n"
            "assert functions.__name__ == 'mbkron.jointvars.functions', functions\n"
            "assert functions.CubicSpline and functions.CoordinateFunction and loads.PointForce\n"
            "assert loads.generalized_forces is mbkron.algorithms.dynamics.loads.generalized_forces\n")
    result = _run(code)
    assert result.returncode == 0, result.stderr
