"""Fuzzing the OpenSim importer: mutated ``.osim`` files, XML bombs and external entities.

Run from the repository root::

    python -m tests.fuzz_osim --count 2000 --seed 1

Each mutation takes one of the stored OpenSim files of ``tests/data/osim`` (in turn) and changes it
the way a mistaken or hostile file could: a leaf's text replaced by NaN, infinities, 1e999, huge
digit strings, words, empty text or the wrong count of numbers; elements deleted, duplicated, moved
to another parent or renamed to unknown tags; ``name`` attributes removed or duplicated; socket
paths pointing nowhere or at the joint's own child; and text-level damage: "billion laughs" entity
bombs, external entities, a DTD, nesting thousands of levels deep, truncation and bytes that are
not UTF-8; and the families of the adversarial probe of issue 27: NaN, infinities and huge values
in numeric fields, models without bodies, huge names (10³-10⁶ characters), GCV splines of huge half
orders and knot counts. Each file is loaded with :func:`mbkron.load_model` (``wrapping="ignore"``), a model that loads is evaluated at a default, huge or non-finite ``q``
(:func:`tests.fuzz_models.evaluate`), and each is classified as in ``tests/fuzz_models.py``:
``loaded``, ``model_error`` (the only acceptable failure of a load), ``configuration_error`` and
``argument_error`` (acceptable failures of an evaluation), ``other`` (another exception: a bug),
``hang`` (over the budget: a bug), ``nonfinite`` (a result that is not finite without an error: a
bug) or ``warning`` (a warning other than the wrap-object notice: a bug). ``tests/test_osim_fuzz.py`` runs
a bounded number of the same mutations in the test suite.
"""

from __future__ import annotations

import collections
import gzip
import random
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.fuzz_models import (BUDGET_SECONDS, BUGS, HALF_ORDERS, KNOTS, NAME_LENGTHS, NUMBERS, OUTCOMES, Result,
                                classify, evaluate, evaluated, fuzz_command, python_constraint_solver)

DATA = Path(__file__).resolve().parent / "data" / "osim"
FILES = ("arm26", "leg6dof9musc", "leg39", "gait2392_thelen2003muscle", "joints", "functions", "wrist", "gcv",
         "legacy_double_pendulum", "legacy_gait10dof18musc")
#: Elements naming a body, frame or coordinate in the OpenSim 2.x/3.x files (sockets in OpenSim 4).
LEGACY_SOCKETS = ("body", "parent_body", "coordinate", "x_coordinate", "y_coordinate", "z_coordinate", "connectee_name")
SPECIAL_TEXT = ["nan", "inf", "-inf", "1e999", "-1e999", "1e308", "-0", "5e-324", "9" * 5000, "abc", "", "1 2",
                "1 2 3 4 5 6 7", "true", "0x10", "1_000", "  ", "/nowhere", "../..", "ground"]
WRAP_NOTICE = "imported without their wrap objects"
BOMB = ('<!DOCTYPE OpenSimDocument [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>')
EXTERNAL = '<!DOCTYPE OpenSimDocument [<!ENTITY e SYSTEM "file:///etc/passwd">]>'


def _elements(root: ET.Element) -> list[tuple[ET.Element, ET.Element]]:
    """(parent, child) for every element below the root."""
    return [(parent, child) for parent in root.iter() for child in parent]


def _leaf_text(root, rng):
    parent, leaf = rng.choice([(p, c) for p, c in _elements(root) if len(c) == 0])
    leaf.text = rng.choice(SPECIAL_TEXT)
    return f"<{leaf.tag}> text → {leaf.text[:20]!r}"


def _delete(root, rng):
    parent, child = rng.choice(_elements(root))
    parent.remove(child)
    return f"deleted <{child.tag}>"


def _duplicate(root, rng):
    parent, child = rng.choice(_elements(root))
    parent.append(child)  # the same element twice
    return f"duplicated <{child.tag}>"


def _move(root, rng):
    pairs = _elements(root)
    parent, child = rng.choice(pairs)
    target = rng.choice(pairs)[1]
    if target is child or child in target.iter():
        return "no move"
    parent.remove(child)
    target.append(child)
    return f"moved <{child.tag}> into <{target.tag}>"


def _rename(root, rng):
    _, child = rng.choice(_elements(root))
    old, child.tag = child.tag, rng.choice(["Unknown", "BallJoint", "GCVSpline", "FreeJoint", "WeldConstraint", "Body",
                                            "PathWrap", "Coordinate", "x", "PiecewiseConstantFunction"])
    return f"<{old}> renamed <{child.tag}>"


def _names(root, rng):
    named = [e for e in root.iter() if e.get("name") is not None]
    element = rng.choice(named)
    if rng.random() < 0.5:
        del element.attrib["name"]
        return f"removed the name of <{element.tag}>"
    element.set("name", rng.choice(named).get("name") or "")
    return f"<{element.tag}> renamed {element.get('name')!r}"


def _socket(root, rng):
    sockets = [e for e in root.iter() if e.tag.startswith("socket_") or e.tag in LEGACY_SOCKETS]
    if not sockets:
        return "no socket"
    element = rng.choice(sockets)
    element.text = rng.choice(["/nowhere", "", "/bodyset/" + (rng.choice([e.get("name") or "" for e in root.iter("Body")] or [""])),
                               "/ground", "../../..", "/jointset"])
    return f"<{element.tag}> → {element.text!r}"


def _numeric(root, rng):
    """NaN, an infinity or a huge or tiny number in place of one number of a numeric leaf."""
    leaves = []
    for _, leaf in _elements(root):
        words = (leaf.text or "").split()
        if len(leaf) == 0 and words and all(_is_number(w) for w in words):
            leaves.append((leaf, words))
    if not leaves:
        return "no numbers"
    leaf, words = rng.choice(leaves)
    words[rng.randrange(len(words))] = repr(rng.choice(NUMBERS))
    leaf.text = " ".join(words)
    return f"<{leaf.tag}> text → {leaf.text[:40]!r}"


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _no_bodies(root, rng):
    """Every Body (and every joint, constraint and force, which need bodies) removed."""
    for parent, child in _elements(root):
        if child.tag.endswith("Set") and child.tag in ("BodySet", "JointSet", "ConstraintSet", "ForceSet"):
            for objects in child:
                for element in list(objects):
                    objects.remove(element)
    return "no bodies"


def _huge_name(root, rng):
    named = [e for e in root.iter() if e.get("name") is not None]
    element = rng.choice(named)
    element.set("name", rng.choice("abqx_") * rng.choice(NAME_LENGTHS))
    return f"<{element.tag}> named with {len(element.get('name')):,} characters"


def _gcv(root, rng):
    """A function (of a coupler, a transform axis) replaced by a GCV spline of a huge half order or many knots."""
    functions = [(p, c) for p, c in _elements(root)
                 if c.tag in ("SimmSpline", "NaturalCubicSpline", "LinearFunction", "Constant", "PiecewiseLinearFunction",
                              "GCVSpline", "MultiplierFunction", "PolynomialFunction")]
    if not functions:
        return "no function"
    parent, old = rng.choice(functions)
    half_order, knots = rng.choice(HALF_ORDERS), rng.choice(KNOTS)
    spline = ET.Element("GCVSpline", {"name": old.get("name", "")})
    ET.SubElement(spline, "half_order").text = str(half_order)
    ET.SubElement(spline, "x").text = " ".join(repr(k / knots) for k in range(knots))
    ET.SubElement(spline, "y").text = " ".join(repr(0.01 * (k % 7)) for k in range(knots))
    index = list(parent).index(old)
    parent.remove(old)
    parent.insert(index, spline)
    return f"<{old.tag}> → GCVSpline, half order {half_order}, {knots} knots"


MUTATIONS = [_leaf_text, _leaf_text, _leaf_text, _delete, _duplicate, _move, _rename, _names, _socket,
             _numeric, _numeric, _no_bodies, _huge_name, _gcv]


def _text_damage(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    kind = rng.randrange(6)
    header, _, body = data.partition(b"?>")
    if kind == 0:
        return header + b"?>" + BOMB.encode() + body.replace(b'name="', b'name="&d;', 1), "billion laughs"
    if kind == 1:
        return header + b"?>" + EXTERNAL.encode() + body.replace(b'name="', b'name="&e;', 1), "external entity"
    if kind == 2:
        depth = rng.choice([100, 5000, 100000])
        nested = b"<a>" * depth + b"</a>" * depth
        return data.replace(b"</Model>", nested + b"</Model>", 1), f"nesting {depth} deep"
    if kind == 3:
        return data[:rng.randrange(len(data))], "truncated"
    if kind == 4:
        at = rng.randrange(len(data))
        return data[:at] + bytes([rng.randrange(128, 256)]) + data[at:], "a byte that is not UTF-8"
    return data.replace(b"<", b"<<", 1 + rng.randrange(3)), "doubled <"


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A mutated ``.osim`` file and a description of the mutations."""
    if rng.random() < 0.15:
        return _text_damage(data, rng)
    root = ET.fromstring(data)  # the stored files: trusted
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not len(root) or not any(len(e) for e in root.iter()) or not [e for e in root.iter() if e.get("name")]:
            break  # an earlier mutation removed what the mutations work on
        done.append(rng.choice(MUTATIONS)(root, rng))
    return ET.tostring(root, encoding="utf-8"), "; ".join(done)


def load_and_classify(path: Path, budget: float = BUDGET_SECONDS, rng: random.Random | None = None) -> Result:
    """Load ``path`` (wrap objects ignored, with their notice) under a watchdog of ``budget`` seconds
    (:func:`tests.fuzz_models.classify`); with ``rng``, evaluate a model that loads
    (:func:`tests.fuzz_models.evaluate`) under its own watchdog."""
    from mbkron import load_model

    loaded = {}
    tolerated = lambda warning: WRAP_NOTICE in str(warning.message)  # noqa: E731

    def load():
        loaded["model"] = load_model(path, wrapping="ignore")

    result = classify(load, budget, tolerated)
    if result.outcome != "loaded" or rng is None:
        return result
    return evaluated(lambda: evaluate(loaded["model"], rng), budget, tolerated)


def run(count: int, seed: int, budget: float = BUDGET_SECONDS, files=FILES, evaluate: bool = False):
    """Run ``count`` mutations (the files in turn), with ``evaluate`` (the command line's default) evaluating
    the models that load; returns the outcome counts, the bugs as (file, mutation, result) and the
    slowest load as (seconds, mutation)."""
    rng = random.Random(seed)
    originals = [(name, gzip.decompress((DATA / f"{name}.osim.gz").read_bytes())) for name in files]
    counts = collections.Counter({outcome: 0 for outcome in OUTCOMES})
    bugs, slowest = [], (0.0, "")
    with tempfile.TemporaryDirectory() as directory, python_constraint_solver():
        path = Path(directory) / "fuzz.osim"
        for name, data in originals:  # warm up (lazy imports) outside the classification
            path.write_bytes(data)
            load_and_classify(path, budget=600.0)
        for number in range(count):
            name, data = originals[number % len(originals)]
            mutated, description = mutate(data, rng)
            path.write_bytes(mutated)
            began = time.perf_counter()
            result = load_and_classify(path, budget, rng if evaluate else None)
            slowest = max(slowest, (time.perf_counter() - began, f"{name}: {description}"))
            counts[result.outcome] += 1
            if result.outcome in BUGS:
                bugs.append((name, description, result))
    return counts, bugs, slowest


def main(argv=None) -> int:
    return fuzz_command(argv, "Fuzz the OpenSim importer with mutations of tests/data/osim.", 2000, len(FILES),
                        lambda count, seed, budget: run(count, seed, budget, evaluate=True))


if __name__ == "__main__":
    sys.exit(main())
