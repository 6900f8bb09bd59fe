"""Loading a model imports neither numba nor sympy nor scipy's heavy submodules; the first evaluation does.

Issue #26: ``import mbkron; mbkron.load_model(path)`` parses the file and builds the model description,
which needs numpy only; the kernels (numba) are imported by the first evaluation, sympy by the first
formula (a model file of numbers and coordinate names, such as an OpenSim model, has none). Each case
runs a fresh Python in a subprocess (the modules a process has imported cannot be un-imported) and
evaluates the model there after loading, to show that what was deferred still works and gives the
same numbers, bit for bit, as this process. No timings are asserted here: ``benchmarks/bench_startup.py``
and ``benchmarks/bench_api.py`` measure them.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mbkron

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "osim"
KERNELS = ("numba", "llvmlite")
HEAVY_SCIPY = ("scipy.linalg", "scipy.interpolate", "scipy.optimize", "scipy.integrate")

#: Loads the model argv[1], lists the heavy modules imported by then, evaluates it and lists them again;
#: prints the two lists and the evaluation's float64 bytes (hex) as JSON.
LOAD_THEN_EVALUATE = """
import json, sys
import numpy as np
import mbkron
heavy = ("numba", "llvmlite", "sympy", "scipy.linalg", "scipy.interpolate", "scipy.optimize", "scipy.integrate")
model = mbkron.load_model(sys.argv[1])
loaded = [name for name in heavy if name in sys.modules]
q = np.linspace(-0.3, 0.4, model.nq)
if model.muscle_set is not None:
    values = model.moment_arms(q)
else:
    values = model.forward_dynamics(q, np.linspace(0.2, -0.1, model.nq))
evaluated = [name for name in heavy if name in sys.modules]
print(json.dumps([loaded, evaluated, np.ascontiguousarray(values, dtype=float).tobytes().hex()]))
"""

#: The models loaded, by label (a shipped model file, or an OpenSim test model decompressed into a temporary
#: directory); those with formulas: two_link_arm's parameters are formulas (``L1 = "0.188*height"``), which
#: sympy parses.
MODELS = {
    "two_link_arm.toml": ROOT / "models" / "two_link_arm.toml",
    "leg6dof9musc.toml": ROOT / "models" / "leg6dof9musc.toml",
    "gait2392.osim": DATA / "gait2392_thelen2003muscle.osim.gz",
}
WITH_FORMULAS = {"two_link_arm.toml"}


def _model_path(label: str, directory: Path) -> Path:
    stored = MODELS[label]
    if stored.suffix != ".gz":
        return stored
    path = directory / label
    path.write_bytes(gzip.decompress(stored.read_bytes()))
    return path


@pytest.fixture(scope="module", params=sorted(MODELS))
def fresh_process(request, tmp_path_factory) -> tuple[str, Path, list[str], list[str], str]:
    """(label, model path, heavy modules after loading, after evaluating, the evaluation's bytes) of one
    fresh process per model."""
    path = _model_path(request.param, tmp_path_factory.mktemp("lazy-imports"))
    done = subprocess.run([sys.executable, "-c", LOAD_THEN_EVALUATE, str(path)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded, evaluated, values = json.loads(done.stdout.splitlines()[-1])
    return request.param, path, loaded, evaluated, values


def test_loading_imports_no_heavy_scipy_submodule(fresh_process):
    label, _, loaded, _, _ = fresh_process
    assert [name for name in HEAVY_SCIPY if name in loaded] == [], label


def test_loading_a_model_without_formulas_imports_no_sympy(fresh_process):
    label, _, loaded, _, _ = fresh_process
    assert ("sympy" in loaded) == (label in WITH_FORMULAS)


def test_loading_imports_no_kernels(fresh_process):
    label, _, loaded, _, _ = fresh_process
    assert [name for name in KERNELS if name in loaded] == [], label


def test_the_first_evaluation_imports_the_kernels_and_gives_the_same_numbers(fresh_process):
    label, path, _, evaluated, values = fresh_process
    assert "numba" in evaluated
    model = mbkron.load_model(path)  # in this process, where everything is imported already
    q = np.linspace(-0.3, 0.4, model.nq)
    if model.muscle_set is not None:
        expected = model.moment_arms(q)
    else:
        expected = model.forward_dynamics(q, np.linspace(0.2, -0.1, model.nq))
    assert np.ascontiguousarray(expected, dtype=float).tobytes().hex() == values, label


def test_every_lazy_module_exists_and_points_down_the_layers():
    """``LazyModule("mbkron.…")`` names its module by a string, which ``lint-imports`` does not see: each must
    name a module that exists, in the same subpackage or in a layer below (pyproject.toml's layers contract)."""
    import ast
    import importlib.util
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    ranks = {tuple(contract["containers"]): {name.strip(): depth for depth, row in enumerate(contract["layers"])
                                            for name in row.split("|")}
             for contract in config["contracts"] if contract["type"] == "layers"}
    rank, algorithms = ranks[("mbkron",)], ranks[("mbkron.algorithms",)]
    found = []
    for path in sorted((ROOT / "mbkron").rglob("*.py")):
        source = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "LazyModule" and node.args:
                target = node.args[0].value
                found.append(target)
                assert importlib.util.find_spec(target) is not None, (source, target)
                if target.startswith("mbkron."):
                    here, there = source.split(".")[1], target.split(".")[1]
                    if here != there and here in rank and there in rank:  # as the contract: listed layers only
                        assert rank[there] > rank[here], f"{source} reads {target} lazily: not below it"
                    elif here == there == "algorithms":  # and inside the algorithms, by their own contract
                        area, other = source.split(".")[2], target.split(".")[2]
                        if area != other and area in algorithms and other in algorithms:
                            assert algorithms[other] > algorithms[area], f"{source} reads {target} lazily: not below it"
    assert "mbkron.algorithms.kinematics.kernels" in found and "sympy" in found  # the walk finds them
