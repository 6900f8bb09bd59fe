"""Bad input refused early with the right error (issue 27 items 4-6, 9, 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mbkron
from mbkron.core.errors import ModelError
from mbkron.io import parse_model_file
from mbkron.model.builder import ModelBuilder

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "models" / "two_link_arm.toml"


def _cli(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mbkron", *arguments], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


# ---------------------------------------------------------------------- items 4, 5: simulate's options
@pytest.mark.timeout(300)
@pytest.mark.parametrize("option, value, message", [
    ("--samples", "1000000000000", "argument --samples: must be at most 1,000,000 (rows held in memory), got 1000000000000"),
    ("--samples", "1000001", "must be at most 1,000,000"),
    ("--rtol", "1e-300", "argument --rtol: must be at least 2.22e-14 (100·eps"),
    ("--rtol", "2e-14", "must be at least 2.22e-14"),
])
def test_simulate_refuses_unbounded_samples_and_tolerances_below_the_floor_as_usage_errors(tmp_path, option, value,
                                                                                         message):
    run = _cli("simulate", str(ARM), option, value, "--t-end", "0.01", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "o").exists()


def test_the_command_lines_rtol_floor_is_the_apis():
    from mbkron.cli.common import MIN_RTOL
    from mbkron.integrate.arguments import MIN_RTOL as API_MIN_RTOL

    assert MIN_RTOL == API_MIN_RTOL == 100 * 2.0 ** -52


@pytest.mark.timeout(300)
def test_simulate_accepts_the_floor_itself(tmp_path):
    run = _cli("simulate", str(ARM), "--rtol", repr(100 * 2.0 ** -52), "--atol", "1e-12", "--t-end", "1e-4",
               "--samples", "3", "--out", str(tmp_path / "o"), "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr


# ---------------------------------------------------------------------- item 6: no bodies
def test_a_model_file_without_bodies_is_refused_at_load():
    with pytest.raises(ModelError, match=r"in x\.toml: the model has no bodies"):
        parse_model_file("[coordinates.q1]", "x.toml")


def test_a_builder_without_bodies_is_refused():
    with pytest.raises(ModelError, match="the model has no bodies"):
        ModelBuilder("empty").add_coordinate("q").build()


def test_an_osim_model_without_bodies_is_refused(tmp_path):
    path = tmp_path / "empty.osim"
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="empty">'
                    '<Ground name="ground"/><BodySet><objects/></BodySet><JointSet><objects/></JointSet></Model>'
                    '</OpenSimDocument>')
    with pytest.raises(ModelError, match="the model has no bodies"):
        mbkron.load_model(path)


# ---------------------------------------------------------------------- item 9: long names elided
def test_a_huge_unknown_parent_name_is_elided_in_the_message():
    name = "p" * 1_000_000
    text = f'[coordinates.q]\n[bodies.a]\nparent = "{name}"\naxis = [0, 0, 1]\nvariable = "q"\n'
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "x.toml")
    message = str(caught.value)
    assert len(message) < 2_000, len(message)
    assert "unknown `parent` `ppp" in message and "(1,000,000 characters)" in message


def test_a_huge_body_name_is_elided_in_the_path_of_a_message():
    name = "b" * 100_000
    text = f'[coordinates.q]\n[bodies.{name}]\naxis = [0, 0, 1]\nvariable = "q"\nmass = -1\n'
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "x.toml")
    assert len(str(caught.value)) < 2_000 and "(100,000 characters)" in str(caught.value)


def test_elide():
    from mbkron.core.errors import elide, elide_long_names

    assert elide("short") == "short"
    assert elide("x" * 61) == "x" * 59 + "…(61 characters)"
    assert elide_long_names("a `" + "y" * 500 + "` b") == "a `" + "y" * 59 + "…(500 characters)` b"
    assert elide_long_names("z" * 120) == "z" * 120  # up to 2·60 characters shown whole
    assert ModelError(["name " + "w" * 10_000]).problems == ["name " + "w" * 59 + "…(10,000 characters)"]


# ---------------------------------------------------------------------- item 11: entries counted before parsing
def _bodies(count: int) -> str:
    lines = ["[coordinates.q]"]
    for i in range(count):
        parent = f'parent = "b{i - 1}"\n' if i else ""
        lines.append(f'[bodies.b{i}]\n{parent}axis = [0, 0, 1]\nvariable = "q"\nmass = 1.0\ncom = [0.1, 0.2, 0.3]\n'
                     f'inertia = [1, 1, 1]\noffset = {{ translation = [0.1, 0, 0] }}')
    return "\n".join(lines)


@pytest.mark.timeout(60)
def test_too_many_bodies_are_refused_before_the_toml_is_parsed(monkeypatch):
    """The 20,000-body file took 40-50 s of parsing before its refusal; now tomllib never sees it."""
    import tomllib

    def parse(text):  # pragma: no cover - must not be called
        raise AssertionError("the TOML was parsed")

    monkeypatch.setattr(tomllib, "loads", parse)
    with pytest.raises(ModelError, match=r"in big\.toml: bodies: at least 20,000 entries; at most 10,000 are read"):
        parse_model_file(_bodies(20_000), "big.toml")


@pytest.mark.parametrize("text, section, count", [
    ("[parameters]\n" + "\n".join(f"p{i} = {i}" for i in range(50_001)), "parameters", 50_001),
    ("\n".join('[[loads]]\ntype = "gravity"' for _ in range(10_001)), "loads", 10_001),
    ("\n".join('[[constraints]]\njoints = ["a"]' for _ in range(1_001)), "constraints", 1_001),
    ("[muscles]\n" + "\n".join(f"m{i}.model = 'hill'" for i in range(10_001)), "muscles", 10_001),
    ("\n".join(f'[coordinates."c {i}"]' for i in range(10_001)), "coordinates", 10_001),
], ids=["parameters", "loads", "constraints", "muscles", "coordinates"])
def test_every_counted_section_is_refused_before_parsing(text, section, count):
    with pytest.raises(ModelError, match=rf"{section}: at least {count:,} entries"):
        parse_model_file(text, "big.toml")


def test_headers_inside_multi_line_strings_are_not_counted():
    text = '[model]\ndescription = """\n' + "\n".join(f"[bodies.b{i}]" for i in range(10_001)) + '\n"""\n'
    with pytest.raises(ModelError) as caught:
        parse_model_file(text, "x.toml")
    assert "entries" not in str(caught.value)  # refused for what it lacks, not for a count
    assert "the model has no bodies" in str(caught.value)


# ---------------------------------------------------------------------- found by the fuzzers' evaluation stage
@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_an_infinite_coordinate_of_an_explicit_model_is_a_configuration_error_without_warnings(value):
    """``inf · 0`` in ``q @ A`` made numpy warn (``invalid value encountered in matmul``) before the error."""
    import warnings

    from mbkron.core.errors import ConfigurationError

    model = mbkron.load_model(ARM)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigurationError, match=r"`q` must be finite .*got -?inf at index \(0,\) of \[-?inf, 0\.0\]"):
            model.forward_dynamics([value, 0.0], [0.0, 0.0])
        # below the public checks, the joint-variable map itself: a non-finite f, no numpy warning
        f = model.joint_variable_map.evaluate(np.array([value, 0.0]), 0)[0]
        assert not np.isfinite(f).all()
