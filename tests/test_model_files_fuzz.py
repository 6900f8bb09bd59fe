"""Robustness of the model-file loader: thousands of corrupted variants of the shipped files.

Every variant must either load or raise ModelError with at least one message; nothing else may be
raised, nothing may hang, and no code from a file may run: while the variants load, ``eval``,
``exec`` and ``compile`` raise unless sympy's ``lambdify`` calls them (it compiles code it prints
itself from an expression tree that the whitelist parser built) or the import system does (sympy
imports some modules lazily), and ``sympy.sympify`` of a string and
``sympy.parsing.sympy_parser.parse_expr`` raise always. The intact file is loaded and round-tripped
once before the guards go up, so that installed libraries warm up outside them (numba's first kernel
load imports modules that build namedtuples with ``eval``) whatever ran before in the same process;
what runs under the guards is the loading of model text.

Hangs: nothing but the clock can tell a hang from slow work while arbitrary text loads, so each
variant runs under an alarm of ``HANG_SECONDS``, which turns a hang (e.g. an exponent tower the
parser failed to reject) into a failure instead of a stuck test run. After the warm-up, variants load
in a fraction of a second; the alarm is a hang detector, not a speed check.

The corruptions (seeded, reproducible): deleted keys and array items, values replaced by values of
other types, NaN and infinities, huge numbers, unknown names and keys, existing names in the wrong
places (cycles of parents and parameters, duplicates), malicious expression strings, deeply nested
arrays and tables, and text-level damage (deleted, duplicated or inserted characters and lines).

Run more variants than the test does with ``python tests/test_model_files_fuzz.py --variants 20000``.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import copy
import math
import random
import signal
import sys
import time
import tomllib
from pathlib import Path

import pytest
import sympy
import sympy.parsing.sympy_parser

from mbkron.core.errors import ConfigurationError, ModelError
from mbkron.io import dump_model, format_toml, model_differences, parse_model_file
from tests import fuzz_models

MODELS = Path(__file__).resolve().parents[1] / "models"
SHIPPED = sorted(MODELS.glob("*.toml"))
# Variants per shipped file in the test suite (about 3,000 in all, a minute of CPU time on 2 cores); campaigns of
# tens of thousands run outside it (``python tests/test_model_files_fuzz.py --variants 20000``, see above)
VARIANTS_PER_FILE = 600
VARIANTS = {"four_bar.toml": 240, "five_bar.toml": 160, "andrews_squeezer.toml": 160,  # constraint assembly: ~10x slower
            "shoulder_rhythm.toml": 200, "shoulder_rhythm_b.toml": 200, "leg6dof9musc.toml": 200}  # muscles, splines
HANG_SECONDS = 300  # a hang detector only (see the module docstring)
ROUND_TRIP_EVERY = 7  # dump and reload every 7th variant that loads


#: Modules whose own use of exec/compile is allowed: mbkron's code generator and sympy's lambdify
#: (they compile code they printed from a parsed expression tree) and the import system (lazy
#: imports run installed modules).
ALLOWED_CALLERS = ("mbkron.expressions.codegen", "sympy.utilities.lambdify", "importlib._bootstrap",
                   "importlib._bootstrap_external")


class CodeExecuted(AssertionError):
    """Raised by the guards when something tries to run code."""


@contextlib.contextmanager
def no_code_execution():
    """Make eval/exec/compile (except from ALLOWED_CALLERS) and string sympification raise."""
    originals = {name: getattr(builtins, name) for name in ("eval", "exec", "compile")}
    sympify, parse_expr = sympy.sympify, sympy.parsing.sympy_parser.parse_expr

    def guard(name):
        def guarded(*args, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller in ALLOWED_CALLERS:
                return originals[name](*args, **kwargs)
            raise CodeExecuted(f"{name} called from {caller} with {str(args[:1])[:200]}")
        return guarded

    def guarded_sympify(value, *args, **kwargs):
        if isinstance(value, str):
            raise CodeExecuted(f"sympy.sympify called on the string {value[:200]!r}")
        return sympify(value, *args, **kwargs)

    def guarded_parse_expr(*args, **kwargs):
        raise CodeExecuted(f"sympy parse_expr called with {str(args[:1])[:200]}")

    for name in originals:
        setattr(builtins, name, guard(name))
    sympy.sympify = guarded_sympify
    sympy.parsing.sympy_parser.parse_expr = guarded_parse_expr
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(builtins, name, original)
        sympy.sympify = sympify
        sympy.parsing.sympy_parser.parse_expr = parse_expr


@contextlib.contextmanager
def hang_detector(seconds: float, label: str):
    """Fail instead of hanging forever: not a speed check (see the module docstring)."""
    def expired(signum, frame):
        raise TimeoutError(f"{label} still running after {seconds} s: a hang (this alarm is a hang detector, "
                           "not a speed check)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------- corruption
MALICIOUS = [
    "__import__('os').system('touch {sentinel}')",
    "eval('1+1')", "exec('x = 1')", "compile('1', 'f', 'eval')", "().__class__.__bases__[0].__subclasses__()",
    "lambda: 0", "q; import os", "open('/etc/passwd').read()", "sympify('x')", "x.__class__", "[1, 2][0]",
    "9**9**9**9", "10**10**10", "2**1025", "exp(exp(exp(exp(100))))", "sin(exp(exp(20)))", "1e999", "1e-400",
    "5e-324", "0x10", "1_000", "007", "1 if 1 else 0", "a and b", "\x00", "\u202e1+1", "ｅｖａｌ(1)", "sqrt(-1)",
    "1/0", "log(0)", "atan2(0, 0)", "tan(pi/2)", "(-8)**(1/3)", "pi(1)", "sin", "sin(1, 2)", "2x", "x^2", "",
    " ", "sin(" * 300 + "1" + ")" * 300, "(" * 3000 + "1" + ")" * 3000, "q" * 20000, "+".join(["1"] * 5000),
    "*".join(["sqrt(2)"] * 300), "1" * 400, "1." + "0" * 400 + "1", "abs(-3)**0.5", "exp(710)", "-exp(709)*exp(709)",
]


def random_junk(rng: random.Random, names: list[str], sentinel: str):
    choice = rng.randrange(16)
    if choice == 0:
        return rng.choice([0, -1, 1, 2, 3, 10**400, -(10**25), 2**63])
    if choice == 1:
        return rng.choice([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 1e-300, 1.7976931348623157e308])
    if choice == 2:
        return rng.choice([True, False])
    if choice in (3, 4, 5):
        return rng.choice(MALICIOUS).replace("{sentinel}", sentinel)
    if choice == 6:
        return rng.choice(names) if names else "x"
    if choice == 7:
        return " + ".join(rng.sample(names, min(len(names), rng.randint(1, 3)))) if names else "x + 1"
    if choice == 8:
        return []
    if choice == 9:
        return {}
    if choice == 10:
        value = rng.choice([1, "x", 0.5])
        for _ in range(rng.choice([2, 5, 50, 200])):
            value = [value]
        return value
    if choice == 11:
        value = {"x": 1}
        for _ in range(rng.choice([2, 5, 30])):
            value = {"deep": value}
        return value
    if choice == 12:
        return [rng.choice([0.0, 1.0, -1.0, math.nan, "p", True]) for _ in range(rng.choice([0, 1, 2, 3, 4, 9, 1000]))]
    if choice == 13:
        return [[rng.random() for _ in range(3)] for _ in range(rng.choice([2, 3, 4]))]
    if choice == 14:
        return rng.choice(["revolute", "prismatic", "fixed", "ground", "deg", "rad", "natural", "fmm", "linear",
                           "tabulated", "fourier", "constraints", "point_force", "line_force", "body", "angle", "m"])
    return {"type": rng.choice(["tabulated", "fourier", "constraints", "x"]), "coordinate": rng.choice(names or ["q"]),
            "x": [0, 1, 2, 3], "y": [0, 1, 0, 1], "kind": rng.choice(["fmm", "natural", "linear", "cubic"]),
            "period": rng.choice([1, 0, -1, 360])}


def locations(node, path=()):
    """Every (container, key) pair in a parsed document."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            found.extend(locations(value, path + (key,)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((node, index))
            found.extend(locations(value, path + (index,)))
    return found


def names_in(document) -> list[str]:
    names = []
    for section in ("parameters", "coordinates", "bodies"):
        if isinstance(document.get(section), dict):
            names.extend(document[section])
    return names + ["ground", "t"]


def corrupt_document(document: dict, rng: random.Random, sentinel: str) -> dict:
    document = copy.deepcopy(document)
    names = names_in(document)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 5])):
        places = locations(document)
        if not places:
            document["model"] = random_junk(rng, names, sentinel)
            continue
        container, key = rng.choice(places)
        operation = rng.randrange(7)
        if operation == 0:  # delete
            del container[key]
        elif operation in (1, 2, 3):  # replace by junk
            container[key] = random_junk(rng, names, sentinel)
        elif operation == 4 and isinstance(container, dict):  # rename a key (unknown or existing name)
            new = rng.choice([*names, "unknown_key", "x y", "", "ｑ", key.upper(), key + "_dot", "__class__"])
            if new not in container:
                container[new] = container.pop(key)
        elif operation == 5:  # swap with another value
            other_container, other_key = rng.choice(places)
            with contextlib.suppress(KeyError, IndexError):
                container[key], other_container[other_key] = other_container[other_key], container[key]
        elif operation == 6:  # point a body's parent somewhere else (cycles, itself, unknown)
            bodies = document.get("bodies")
            if isinstance(bodies, dict) and bodies:
                body = rng.choice(list(bodies))
                if isinstance(bodies[body], dict):
                    bodies[body]["parent"] = rng.choice([*bodies, "nowhere", "ground"])
    return document


def corrupt_text(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    operation = rng.randrange(6)
    if operation == 0 and text:  # delete characters
        start = rng.randrange(len(text))
        return text[:start] + text[start + rng.randint(1, 20):]
    if operation == 1 and text:  # insert characters
        start = rng.randrange(len(text))
        return text[:start] + rng.choice(['"', "[", "]", "=", "\n", "\\", "{", "'''", "\x00", "é", "#", ","]) + text[start:]
    if operation == 2 and lines:  # duplicate a line (duplicate keys and sections)
        index = rng.randrange(len(lines))
        return "".join(lines[: index + 1] + [lines[index]] + lines[index + 1:])
    if operation == 3 and lines:  # delete a line
        index = rng.randrange(len(lines))
        return "".join(lines[:index] + lines[index + 1:])
    if operation == 4:  # truncate
        return text[: rng.randrange(len(text) + 1)]
    return text + rng.choice(["\nx = " + "[" * 5000 + "]" * 5000 + "\n", "\n[bodies.extra]\nparent = 'extra'\njoint = 'fixed'\n",
                              "\n[[loads]]\ntype = 'line_force'\n", "\n[muscles.m]\npath = []\n", "\n[constraints]\n"])


def variant(original_text: str, document: dict, rng: random.Random, sentinel: str) -> str:
    if rng.random() < 0.15:
        return corrupt_text(original_text, rng)
    corrupted = corrupt_document(document, rng, sentinel)
    try:
        text = format_toml(corrupted)
    except RecursionError:  # repeated nesting mutations went deeper than the writer's recursion allows
        return original_text
    return corrupt_text(text, rng) if rng.random() < 0.1 else text


# ---------------------------------------------------------------------- the check
def check_round_trip(model, label: str) -> None:
    """The dumped model loads again as an equal model.

    A corrupted file can load as a mechanism that cannot be assembled at some of the coordinates
    that :func:`model_differences` samples; the reloaded model must then fail with the same error.
    """
    again = parse_model_file(dump_model(model), "dumped.toml").model
    try:
        differences = model_differences(model, again)
    except ConfigurationError as error:
        with pytest.raises(ConfigurationError) as reloaded:
            model_differences(again, model)
        assert str(reloaded.value) == str(error), label
    else:
        assert differences == [], label


def check_variants(path: Path, count: int, seed: int, sentinel: Path) -> dict[str, int]:
    original = path.read_text()
    document = tomllib.loads(original)
    rng = random.Random(f"{path.name}-{seed}")
    outcome = {"loaded": 0, "rejected": 0, "round_trips": 0}
    # The intact file, outside the guards: installed libraries warm up (lazy imports, numba's first kernel loads).
    check_round_trip(parse_model_file(original, path.name).model, f"{path.name} as shipped")
    with no_code_execution(), fuzz_models.python_constraint_solver():
        for number in range(count):
            text = variant(original, document, rng, str(sentinel))
            label = f"{path.name} variant {number} (seed {seed})"
            try:
                with hang_detector(HANG_SECONDS, label):
                    model_file = parse_model_file(text, "fuzz.toml")
                    outcome["loaded"] += 1
                    if outcome["loaded"] % ROUND_TRIP_EVERY == 0:
                        check_round_trip(model_file.model, label)
                        outcome["round_trips"] += 1
            except ModelError as exc:
                assert exc.problems and all(isinstance(p, str) and p.strip() for p in exc.problems), label
                assert str(exc).startswith("invalid model in ")
                outcome["rejected"] += 1
            except BaseException as exc:
                raise AssertionError(f"{label} raised {type(exc).__name__}: {exc}\n--- file ---\n{text[:3000]}") from exc
    assert not sentinel.exists(), "code from a model file ran"
    return outcome


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy overflow warnings for absurd values are expected
@pytest.mark.filterwarnings("ignore::mbkron.ModelWarning")  # variants with unphysical inertias, as documented
@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_corrupted_model_files_load_or_raise_model_error(path, tmp_path):
    count = VARIANTS.get(path.name, VARIANTS_PER_FILE)
    outcome = check_variants(path, count, seed=0, sentinel=tmp_path / "pwned")
    assert outcome["rejected"] > count // 2 and outcome["loaded"] > 0, outcome
    assert outcome["round_trips"] > 0


# ---------------------------------------------------------------------- structure-aware mutations (tests/fuzz_models.py)
FUZZ_MUTATIONS = 270  # 30 per shipped file; `python -m tests.fuzz_models --count 5000` runs more


@pytest.mark.parametrize("seed", [0, 1])
def test_structure_aware_mutations_load_or_raise_model_error_without_warnings_or_hangs(seed):
    counts, bugs, _ = fuzz_models.run(FUZZ_MUTATIONS // 2, seed)
    assert [(name, description, result.outcome, result.detail) for name, description, result, _ in bugs] == []
    assert counts["loaded"] > 0 and counts["model_error"] > 0, counts


@pytest.mark.parametrize("change", [
    lambda d: d["constraints"][0]["loops"][1]["point_b"].__setitem__(0, 1e308),  # overflow in the Newton residual
    lambda d: (d["bodies"]["Theta"]["com"].__setitem__(2, math.inf),
               d["bodies"]["Theta"]["offset"]["translation"].__setitem__(0, 1e308)),
], ids=["loop-point-1e308", "offset-1e308"])
def test_absurd_constraint_data_is_a_model_error_without_warnings(change):
    document = tomllib.loads((MODELS / "andrews_squeezer.toml").read_text())
    change(document)
    assert fuzz_models.load_and_classify(format_toml(document)).outcome == "model_error"


def test_the_guards_catch_code_execution():
    with no_code_execution():
        with pytest.raises(CodeExecuted):
            eval("1")  # noqa: S307 - the point of the test
        with pytest.raises(CodeExecuted):
            sympy.sympify("x + 1")
        with pytest.raises(CodeExecuted):
            sympy.parsing.sympy_parser.parse_expr("x")
        assert sympy.lambdify([sympy.Symbol("x")], sympy.Symbol("x") ** 2)(3) == 9  # lambdify itself is allowed
    assert eval("1 + 1") == 2  # noqa: S307 - restored


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Fuzz the model-file loader with corrupted shipped files.")
    parser.add_argument("--variants", type=int, default=20_000, help="variants per shipped file")
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        for model_path in SHIPPED:
            began = time.perf_counter()
            result = check_variants(model_path, arguments.variants, arguments.seed, Path(directory) / "pwned")
            print(f"{model_path.name}: {result} in {time.perf_counter() - began:.1f} s")
