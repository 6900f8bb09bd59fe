"""A model pickles as its description (issue 26 item 3): unpickled in another process, where the addresses of the
first process's compiled code mean nothing, it finds its constraint callbacks, generated functions and Python
callbacks again and gives the same results, bit for bit, as the model loaded there from its file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = (
    "andrews_squeezer",  # loop closures (the library's callbacks)
    "four_bar",  # expressions (a generated module)
    "leg6dof9musc",  # muscles, coordinate functions
    "shoulder_rhythm",  # formulas (generated callbacks)
    "arm_inputs",  # a group whose inputs are not affine in q (a Python callback from the kernel)
    "arm_loop",
)
"""The models: a shipped model file by its name, or the test arm of ``tests/test_constraints.py``."""

_PRELUDE = """
import pickle, sys, warnings
import numpy as np
warnings.simplefilter("ignore")
import mbkron
from tests.test_constraints import arm
from validation.purity import evaluate
CASES = {cases!r}

def build(name):
    if name == "arm_inputs":
        return arm("lu")
    if name == "arm_loop":
        return arm("lu", "loop")
    return mbkron.load_model(f"models/{{name}}.toml")

def results(model):
    return {{case: value if isinstance(value, str) else [np.asarray(a, dtype=float) for a in value]
             for case, value in evaluate(model, 6).items()}}
"""

_SAVE = _PRELUDE + """
models = {{name: build(name) for name in CASES}}
for model in models.values():
    results(model)  # evaluated first: what an evaluation finds on first use is not pickled
with open(sys.argv[1], "wb") as file:
    pickle.dump({{name: pickle.dumps(model) for name, model in models.items()}}, file)
"""

_LOAD = _PRELUDE + """
with open(sys.argv[1], "rb") as file:
    blobs = pickle.load(file)
for name in CASES:
    unpickled, loaded = pickle.loads(blobs[name]), build(name)
    ours, theirs = results(unpickled), results(loaded)
    same = ours.keys() == theirs.keys() and all(
        ours[k] == theirs[k] if isinstance(ours[k], str)
        else all(np.array_equal(a, b, equal_nan=True) for a, b in zip(ours[k], theirs[k])) for k in ours)
    print(name, "same" if same else "DIFFERENT")
"""


def test_a_model_unpickled_in_another_process_gives_the_same_results(tmp_path):
    blobs = tmp_path / "models.pickle"
    for script in (_SAVE, _LOAD):
        run = subprocess.run([sys.executable, "-c", script.format(cases=CASES), str(blobs)], cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == [word for name in CASES for word in (name, "same")], run.stdout
