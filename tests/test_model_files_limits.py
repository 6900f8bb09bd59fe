"""Model files of absurd size or shape: refused with ModelError up front, or loaded in linear work (issue #18).

Nothing here is timed: the sizes are chosen so that quadratic work or recursion would fail
(RecursionError, MemoryError) or be refused, and the benchmark ``benchmarks/bench_loading.py``
measures the times.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbkron
from benchmarks.bench_loading import chain_text, parameter_chain_text
from mbkron.io import parse_model_file
from mbkron.io.schema import MAX_ENTRIES, MAX_FILE_CHARACTERS
from mbkron.model import builder as builder_module
from tests.random_trees import build_model, random_tree

TWO_LINK_ARM = Path(__file__).resolve().parents[1] / "models" / "two_link_arm.toml"


def test_an_integer_literal_beyond_pythons_digit_limit_is_a_model_error_naming_the_file_and_line():
    text = TWO_LINK_ARM.read_text()
    line = text.splitlines().index("[parameters]") + 2  # the new line right after [parameters]
    text = text.replace("[parameters]", "[parameters]\nhuge = " + "1" * 5000, 1)
    with pytest.raises(mbkron.ModelError) as error:
        parse_model_file(text, "two_link_arm.toml")
    message = str(error.value)
    assert message.startswith("invalid model in two_link_arm.toml")
    assert f"(line {line})" in message and "more than 4,300 digits" in message


def test_a_chain_of_thousands_of_parameters_is_evaluated_without_recursion():
    n = 5000  # deeper than Python's recursion limit: a recursive walk would fail
    model_file = parse_model_file(parameter_chain_text(n), "chain.toml")
    assert model_file.parameters["p1"] == 1.0
    assert model_file.parameters[f"p{n}"] == float(n)  # p_k = k, exactly in doubles
    assert model_file.model.body_records[0].mass == 1.0  # mass = p_n / n


def test_a_parameter_cycle_in_a_long_chain_is_reported_once_with_its_members():
    text = parameter_chain_text(3000).replace("p1 = 1", 'p1 = "p3000 - 2999"')
    with pytest.raises(mbkron.ModelError) as error:
        parse_model_file(text, "cycle.toml")
    cycles = [p for p in error.value.problems if "cycle" in p]
    assert len(cycles) == 1 and cycles[0].startswith("parameters.p1: parameters depend on each other in a cycle: p1 → p3000")


def test_an_unknown_name_in_a_formula_still_lists_the_names_of_the_file():
    text = TWO_LINK_ARM.read_text().replace('L1 = "0.188*height"', 'L1 = "0.188*heigth"')
    with pytest.raises(mbkron.ModelError) as error:
        parse_model_file(text, "two_link_arm.toml")
    (problem,) = [p for p in error.value.problems if p.startswith("parameters.L1")]
    assert "unknown name `heigth`" in problem and "body_mass" in problem and "did you mean `height`?" in problem


def test_a_2000_body_chain_loads_and_evaluates():
    n = 2000
    model = parse_model_file(chain_text(n), "chain.toml").model
    assert model.tree.nb == n and len(model.coordinates) == n
    # the tip of a straight chain of 0.1 m links at q = 0 (offset of body k: 0.1 m along x)
    assert np.allclose(model.point_position(f"b{n - 1}", (0.0, 0.0, 0.0), np.zeros(n)), [0.1 * (n - 1), 0.0, 0.0])


@pytest.mark.parametrize("seed", range(5))
def test_the_ancestor_masks_of_random_trees_match_walks_up_the_parent_links(seed):
    rng = np.random.default_rng(seed)
    spec = random_tree(rng, nb=12)
    tree = build_model(spec).tree
    expected = np.zeros((12, 12))
    for i in range(12):
        j = i
        while j >= 0:
            expected[i, j] = 1.0
            j = spec.parents[j]
    assert np.array_equal(tree.ancestor_or_self(), expected)
    bodies = rng.choice(12, size=3, replace=False)
    assert np.array_equal(tree.ancestors_or_self_of(bodies), expected[bodies].any(axis=0))


@pytest.mark.parametrize("seed", range(5))
def test_per_body_values_are_their_joint_variables_rows_and_zero_on_fixed_joints(seed):
    """``KinematicTree.per_body``: body ``i`` gets the row of its joint variable, a body on a fixed joint zeros,
    along the joint-variable axis with ``trailing`` axes after it (a loop over the bodies is the oracle)."""
    rng = np.random.default_rng(seed)
    tree = build_model(random_tree(rng, nb=12, fixed_fraction=0.4)).tree
    nj = int((tree.joint_of_body >= 0).sum())
    for trailing, values in ((0, rng.normal(size=(3, nj))), (2, rng.normal(size=(3, nj, 4, 2)))):
        expected = np.zeros(values.shape[:1] + (12,) + values.shape[2:])
        for i, j in enumerate(tree.joint_of_body):
            if j >= 0:
                expected[:, i] = values[:, j]
        assert np.array_equal(tree.per_body(values, trailing), expected)


def test_a_file_beyond_the_size_limit_is_refused_before_parsing():
    text = "# " + "x" * MAX_FILE_CHARACTERS + "\n"  # a 100,000-body tree is about 8 M characters
    with pytest.raises(mbkron.ModelError) as error:
        parse_model_file(text, "huge.toml")
    assert f"the file has {len(text):,} characters" in str(error.value)


def test_too_many_bodies_are_refused_with_the_count_before_any_work():
    n = MAX_ENTRIES["bodies"] + 1
    text = "[coordinates.q]\n[bodies]\n" + "".join(f"b{k} = {{}}\n" for k in range(n))
    with pytest.raises(mbkron.ModelError) as error:
        parse_model_file(text, "many.toml")
    assert error.value.problems == [f"bodies: at least {n:,} entries; at most {n - 1:,} are read (see Limits in docs/model-format.md)"]


def test_dense_matrices_beyond_the_limit_are_refused_with_their_size(monkeypatch):
    refused = ["joint-variable map"]
    monkeypatch.setattr(builder_module, "MAX_DENSE_ENTRIES", 8)  # 3 x 3 = 9 entries exceed it
    model_builder = mbkron.ModelBuilder()
    for k in range(3):
        model_builder.add_coordinate(f"q{k}").add_body(f"b{k}", axis=(0, 0, 1), variable=f"q{k}")
    with pytest.raises(mbkron.ModelError) as error:
        model_builder.build()
    problems = error.value.problems
    assert len(problems) == len(refused)
    for problem, what in zip(problems, refused):
        assert what in problem and "dense 3 × 3 matrix" in problem and "at most 8 entries" in problem


def test_an_oversized_file_on_disk_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "huge.toml"
    with path.open("wb") as file:
        file.truncate(64 * MAX_FILE_CHARACTERS)  # 256 MiB of zero bytes (sparse): only the first 16 MiB + 1 are read
    with pytest.raises(mbkron.ModelError) as error:
        mbkron.load_model(path)
    assert error.value.problems == [f"the file has more than {4 * MAX_FILE_CHARACTERS:,} bytes; model files of at most "
                                    f"{MAX_FILE_CHARACTERS:,} characters are read (see Limits in docs/model-format.md)"]
