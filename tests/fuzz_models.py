"""Structure-aware fuzzing of the model-file loader: mutated shipped models, each outcome classified.

Run from the repository root::

    python -m tests.fuzz_models --count 5000 --seed 1

Each mutation takes one shipped file of ``models/`` (in turn) and changes its structure the way a
mistaken or hostile author could: parents swapped, missing, pointing at the body itself or closing
a cycle; muscles, loads and constraints on bodies, joints or coordinates that do not exist; NaN,
infinities, 1e308, -0.0, huge integers, strings, booleans, empty tables and huge arrays in any
field; required fields deleted; keys and sections duplicated in the text; and the families of the
adversarial probe of issue 27: NaN, infinities and huge values in numeric fields, models without
bodies, huge names (10³-10⁶ characters), GCV splines of huge half orders and knot counts. Each
mutated file is loaded with :func:`mbkron.io.parse_model_file` (as in
``tests/test_model_files_fuzz.py``); a model that loads is then evaluated (``mass_matrix`` and
``forward_dynamics`` at rest) at its default ``q`` or, mostly, with one coordinate replaced by a huge
or non-finite value (1e6 … 1e300, NaN, ±inf: the probe's huge coordinates on constrained models).
Outcomes:

- ``loaded``: a model came back and evaluated to finite numbers;
- ``model_error``: :class:`mbkron.ModelError` was raised by the load;
- ``configuration_error``: :class:`mbkron.ConfigurationError` from the evaluation (a configuration at
  which the model cannot be evaluated, named in the message);
- ``argument_error``: a ValueError naming `` `q` `` from the evaluation (a refused argument);
- ``other``: any other exception escaped (a bug);
- ``hang``: the load or the evaluation ran longer than ``--budget`` seconds (a watchdog alarm; a bug:
  work per file and per call must be bounded);
- ``nonfinite``: the evaluation returned a value that is not finite without an error (a bug);
- ``warning``: a warning was emitted (a bug: nothing may leak) other than a :class:`mbkron.ModelWarning`
  (a documented outcome of a valid file: an unphysical inertia).

The script prints the counts (and the first few bugs with their mutations) and exits with status 1
if any bug was found. ``tests/test_model_files_fuzz.py`` runs a bounded number of mutations of
the same generator in the test suite.
"""

from __future__ import annotations

import argparse
import collections
import copy
import math
import random
import signal
import sys
import time
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbkron.core.errors import ConfigurationError, ModelError, ModelWarning
from mbkron.io import format_toml, parse_model_file
from tests.test_compiled_constraints import python_constraint_solver

MODELS = Path(__file__).resolve().parents[1] / "models"
SHIPPED = sorted(MODELS.glob("*.toml"))
BUDGET_SECONDS = 20.0
OUTCOMES = ("loaded", "model_error", "configuration_error", "argument_error", "other", "hang", "nonfinite", "warning")
BUGS = ("other", "hang", "nonfinite", "warning")
NUMBERS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 1e300, -1e300, 1e-320, 1e15]
COORDINATES = [1e3, -1e6, 1e6, 1e9, 1e12, 1e15, 1e300, -1e300, math.nan, math.inf, -math.inf]
HALF_ORDERS = [1, 3, 8, 9, 32, 1000, 10**6, 2**63, 0, -1]
KNOTS = [2, 16, 800, 5000]
NAME_LENGTHS = [1000, 100_000, 1_000_000]

SPECIAL = [math.nan, math.inf, -math.inf, 1e308, -1e308, -0.0, 5e-324, 10**25, -(2**63), 10**400, 0, -1, "x", "",
           "nowhere", "1/0", "q + ", True, False, {}, [], [[]], [math.nan] * 3, [1e308] * 3]
MISSING = "nowhere"


class _Hang(BaseException):
    """Raised by the watchdog (a BaseException, so that no ``except Exception`` in the loader swallows it)."""


@dataclass
class Result:
    outcome: str
    detail: str = ""


def classify(load, budget: float = BUDGET_SECONDS, tolerated=lambda warning: False) -> Result:
    """Call ``load()`` under a watchdog of ``budget`` seconds, recording warnings, and classify the outcome:
    loaded, a ModelError, another exception, a hang, or a warning that ``tolerated`` does not accept (a
    ModelWarning, documented, always is)."""
    def expired(signum, frame):
        raise _Hang

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = load()
                outcome = value if isinstance(value, Result) else Result("loaded")
            except ModelError:
                outcome = Result("model_error")
            except ConfigurationError:
                outcome = Result("configuration_error")
            except _Hang:
                return Result("hang", f"over {budget} s")
            except Exception as exc:  # noqa: BLE001 - classifying is the point
                return Result("other", f"{type(exc).__name__}: {exc}"[:500])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    caught = [w for w in caught if not (issubclass(w.category, ModelWarning) or tolerated(w))]
    if caught:
        return Result("warning", "; ".join(f"{w.category.__name__}: {w.message}" for w in caught)[:500])
    return outcome


def load_and_classify(text: str, budget: float = BUDGET_SECONDS, rng: random.Random | None = None) -> Result:
    """Load model text under a watchdog of ``budget`` seconds (:func:`classify`); with ``rng``, evaluate a
    model that loads (:func:`evaluate`) under its own watchdog."""
    loaded = {}

    def load():
        loaded["model"] = parse_model_file(text, "fuzz.toml").model

    result = classify(load, budget)
    if result.outcome != "loaded" or rng is None:
        return result
    return evaluated(lambda: evaluate(loaded["model"], rng), budget)


def evaluated(call, budget: float, tolerated=lambda warning: False) -> Result:
    """:func:`classify` of an evaluation, the ``q`` it used appended to the detail of a bug."""
    result = classify(call, budget, tolerated)
    if result.outcome in BUGS:
        result.detail = f"{result.detail} [evaluated at q = {EVALUATED_AT[0]}]"
    return result


EVALUATED_AT = [None]  # the q of the last evaluation, for the report of a bug


def evaluate(model, rng: random.Random) -> Result | None:
    """``mass_matrix`` and ``forward_dynamics`` at rest, at the default ``q`` or with one coordinate huge or
    not finite; a result that is not finite is ``nonfinite``, a ValueError naming `` `q` `` an
    ``argument_error`` (anything else propagates to :func:`classify`)."""
    q = np.array(model.default_q, dtype=float)
    if q.size and rng.random() < 0.8:
        q[rng.randrange(q.size)] = rng.choice(COORDINATES)
    EVALUATED_AT[0] = q.tolist()[:8]
    try:
        values = [model.mass_matrix(q), model.forward_dynamics(q, np.zeros(q.size))]
    except ConfigurationError:
        raise
    except ValueError as exc:
        if "q" in str(exc) and not isinstance(exc, ModelError):
            return Result("argument_error", str(exc)[:200])
        raise
    if not all(np.all(np.isfinite(v)) for v in values):
        return Result("nonfinite", f"q = {q.tolist()[:6]}: mass matrix finite {bool(np.isfinite(values[0]).all())}, "
                                   f"accelerations {values[1].tolist()[:6]}")
    return None


# ---------------------------------------------------------------------- the mutations
def _tables(document: dict, section: str) -> dict:
    value = document.get(section)
    return value if isinstance(value, dict) else {}


def _leaves(node, path=()):
    """Every (container, key, path) of a value that is not a table, in a parsed document."""
    found = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)) and value:
            found.extend(_leaves(value, path + (key,)))
        found.append((node, key, path + (key,)))
    return found


def _special(rng: random.Random):
    if rng.random() < 0.05:
        return [rng.random() for _ in range(rng.choice([1000, 100_000]))]  # a huge array
    return copy.deepcopy(rng.choice(SPECIAL))


def _parent(document: dict, rng: random.Random) -> str:
    bodies = _tables(document, "bodies")
    if not bodies:
        return "no bodies"
    names = list(bodies)
    body = rng.choice(names)
    table = bodies[body]
    if not isinstance(table, dict):
        return "no body table"
    kind = rng.randrange(5)
    if kind == 0:
        table["parent"] = body
        return f"bodies.{body}.parent = itself"
    if kind == 1:
        table["parent"] = MISSING
        return f"bodies.{body}.parent = missing body"
    if kind == 2:
        table.pop("parent", None)
        return f"bodies.{body}.parent deleted"
    other = rng.choice(names)
    if kind == 3 and isinstance(bodies[other], dict):  # swap the parents of two bodies
        table["parent"], bodies[other]["parent"] = bodies[other].get("parent", "ground"), table.get("parent", "ground")
        return f"parents of bodies.{body} and bodies.{other} swapped"
    if isinstance(bodies[other], dict):  # a cycle through two bodies
        table["parent"], bodies[other]["parent"] = other, body
    return f"cycle bodies.{body} <-> bodies.{other}"


def _references(document: dict, rng: random.Random) -> str:
    """Muscles, loads and constraints pointing at bodies, joints or coordinates that do not exist."""
    places = []
    for name, muscle in _tables(document, "muscles").items():
        if isinstance(muscle, dict) and isinstance(muscle.get("path"), list):
            places += [(point, "body", f"muscles.{name}.path") for point in muscle["path"] if isinstance(point, dict)]
    for index, load in enumerate(document.get("loads", []) if isinstance(document.get("loads"), list) else []):
        if isinstance(load, dict):
            places += [(load, key, f"loads[{index}]") for key in ("body", "body_a", "body_b", "joint", "coordinate") if key in load]
    groups = document.get("constraints", [])
    for index, group in enumerate(groups if isinstance(groups, list) else []):
        if isinstance(group, dict):
            if isinstance(group.get("joints"), list) and group["joints"]:
                places.append((group["joints"], rng.randrange(len(group["joints"])), f"constraints[{index}].joints"))
            if isinstance(group.get("equations"), list) and group["equations"]:
                places.append((group["equations"], rng.randrange(len(group["equations"])), f"constraints[{index}].equations"))
    if not places:
        if not isinstance(document.get("loads"), list):
            document["loads"] = []
        document["loads"].append({"type": "point_force", "body": MISSING, "point": [0, 0, 0], "force": [1, 0, 0]})
        return "load on a missing body added"
    container, key, where = rng.choice(places)
    container[key] = rng.choice([MISSING, "ground", "t", ""]) if where.startswith(("muscles", "loads")) or \
        where.endswith("joints") else f"{MISSING}*{container[key]}"
    return f"{where}: reference to {container[key]!r}"


def _value(document: dict, rng: random.Random) -> str:
    leaves = _leaves(document)
    if not leaves:
        return "no values"
    container, key, path = rng.choice(leaves)
    container[key] = _special(rng)
    return f"{'.'.join(map(str, path))} = {str(container[key])[:40]}"


def _delete(document: dict, rng: random.Random) -> str:
    tables = [(t, k, f"{section}.{name}.{k}") for section in ("bodies", "coordinates", "muscles")
              for name, t in _tables(document, section).items() if isinstance(t, dict) for k in t]
    tables += [(document, k, k) for k in document]
    if not tables:
        return "nothing to delete"
    container, key, where = rng.choice(tables)
    del container[key]
    return f"{where} deleted"


def _duplicate(document: dict, rng: random.Random) -> str:
    """A body, coordinate or parameter copied under an existing (other) name or a new one."""
    section = rng.choice(["bodies", "coordinates", "parameters", "muscles"])
    tables = _tables(document, section)
    if not tables:
        return f"no {section}"
    names = list(tables)
    source = rng.choice(names)
    target = rng.choice(names + [source + "_copy"])
    tables[target] = copy.deepcopy(tables[source])
    return f"{section}.{source} copied to {section}.{target}"


def _numeric(document: dict, rng: random.Random) -> str:
    """NaN, an infinity or a huge or tiny number in a numeric field (or an item of a numeric array)."""
    leaves = [(c, k, p) for c, k, p in _leaves(document) if isinstance(c[k], (int, float)) and not isinstance(c[k], bool)]
    if not leaves:
        return "no numbers"
    container, key, path = rng.choice(leaves)
    container[key] = rng.choice(NUMBERS)
    return f"{'.'.join(map(str, path))} = {container[key]!r}"


def _no_bodies(document: dict, rng: random.Random) -> str:
    """Coordinates (and parameters) only: every section that needs bodies removed."""
    for key in [k for k in document if k not in ("model", "units", "parameters", "coordinates")]:
        del document[key]
    return "no bodies (coordinates only)"


def _huge_name(document: dict, rng: random.Random) -> str:
    """A body, coordinate or parameter renamed, or a parent set, to a name of 10³-10⁶ characters."""
    name = rng.choice("abqx_") * rng.choice(NAME_LENGTHS)
    section = rng.choice(["bodies", "coordinates", "parameters", "parent"])
    tables = _tables(document, "bodies" if section == "parent" else section)
    if not tables:
        return f"no {section}"
    old = rng.choice(list(tables))
    if section == "parent":
        if isinstance(tables[old], dict):
            tables[old]["parent"] = name
        return f"bodies.{old}.parent = a name of {len(name):,} characters"
    tables[name] = tables.pop(old)
    return f"{section}.{old} renamed to a name of {len(name):,} characters"


def _spline(document: dict, rng: random.Random) -> str:
    """A body's variable replaced by a GCV spline of a huge half order or many knots."""
    bodies = [(n, t) for n, t in _tables(document, "bodies").items() if isinstance(t, dict) and "variable" in t]
    coordinates = list(_tables(document, "coordinates"))
    if not bodies or not coordinates:
        return "no body variable"
    name, table = rng.choice(bodies)
    half_order, knots = rng.choice(HALF_ORDERS), rng.choice(KNOTS)
    x = [k / knots for k in range(knots)]
    table["variable"] = {"type": "tabulated", "coordinate": rng.choice(coordinates), "kind": "gcv",
                         "half_order": half_order, "x": x, "y": [math.sin(3.0 * v) for v in x]}
    return f"bodies.{name}.variable = gcv spline, half order {half_order}, {knots} knots"


MUTATIONS = (_parent, _references, _value, _delete, _duplicate, _numeric, _no_bodies, _huge_name, _spline)


def _text_damage(text: str, rng: random.Random) -> tuple[str, str]:
    """Duplicated keys or sections (TOML rejects them), or a huge integer literal."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(3)
    if kind == 0 and lines:
        index = rng.randrange(len(lines))
        return "".join(lines[: index + 1] + [lines[index]] + lines[index + 1:]), f"line {index + 1} duplicated"
    if kind == 1:
        return text.replace("[parameters]", "[parameters]\nhuge = " + "1" * 5000, 1), "a 5000-digit integer"
    return text + "\n[bodies]\n", "[bodies] declared again"


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """A mutated model file and a description of the mutations."""
    document = tomllib.loads(text)
    done = [rng.choice(MUTATIONS)(document, rng) for _ in range(rng.choice([1, 1, 2, 3]))]
    try:
        mutated = format_toml(document)
    except (ValueError, TypeError, RecursionError) as exc:  # the writer cannot write this document
        return text, f"unwritable mutation ({type(exc).__name__}); {'; '.join(done)}"
    if rng.random() < 0.1:
        mutated, damage = _text_damage(mutated, rng)
        done.append(damage)
    return mutated, "; ".join(done)


def run(count: int, seed: int, budget: float = BUDGET_SECONDS, files=SHIPPED, evaluate: bool = False):
    """Run ``count`` mutations (the files in turn); with ``evaluate`` (the command line's default), a model
    that loads is evaluated too (:func:`evaluate`).

    Returns the counts of the outcomes, the bugs as (file, mutation, result, text) and the slowest
    load as (seconds, mutation).
    """
    rng = random.Random(seed)
    texts = [(path.name, path.read_text()) for path in files]
    for name, text in texts:  # warm up (lazy imports) outside the classification
        parse_model_file(text, name)
    counts = collections.Counter({outcome: 0 for outcome in OUTCOMES})
    bugs, slowest = [], (0.0, "")
    with python_constraint_solver():
        for number in range(count):
            name, text = texts[number % len(texts)]
            mutated, description = mutate(text, rng)
            began = time.perf_counter()
            result = load_and_classify(mutated, budget, rng if evaluate else None)
            slowest = max(slowest, (time.perf_counter() - began, f"{name}: {description}"))
            counts[result.outcome] += 1
            if result.outcome in BUGS:
                bugs.append((name, description, result, mutated))
    return counts, bugs, slowest


def fuzz_command(argv, description: str, default_count: int, files: int, run) -> int:
    """The command line of a fuzzer: ``--count``, ``--seed``, ``--budget``; ``run(count, seed, budget)`` returns
    the outcome counts, the bugs (``(file, mutation, result, …)``) and the slowest load; prints a summary
    and the first 20 bugs; exit status 1 if there were any."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--count", type=int, default=default_count, help="number of mutations (the files in turn)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS, help="seconds per file before it counts as a hang")
    arguments = parser.parse_args(argv)
    began = time.perf_counter()
    counts, bugs, (seconds, mutation) = run(arguments.count, arguments.seed, arguments.budget)
    print(f"{arguments.count} mutations of {files} files, seed {arguments.seed}, "
          f"{time.perf_counter() - began:.0f} s: " + ", ".join(f"{k} {counts[k]}" for k in OUTCOMES))
    print(f"slowest load: {seconds:.2f} s ({mutation})")
    for name, description, result, *_ in bugs[:20]:
        print(f"  {result.outcome}: {name}: {description[:300]}: {result.detail[:500]}")
    return 1 if bugs else 0


def main(argv=None) -> int:
    return fuzz_command(argv, "Fuzz the model-file loader with structure-aware mutations of models/.", 5000,
                        len(SHIPPED), lambda count, seed, budget: run(count, seed, budget, evaluate=True))


if __name__ == "__main__":
    sys.exit(main())
