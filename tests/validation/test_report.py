"""`mbkron validate --quick`: every regression case passes and the report is well-formed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mbkron import cli
from mbkron.cli.validate import find_checkout, is_checkout
from validation import report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    """The quick report written by the command line into a temporary directory."""
    out = tmp_path_factory.mktemp("report")
    status = cli.main(["validate", "--quick", "--quiet", "--out", str(out)])
    return status, (out / "REPORT.md").read_text(), json.loads((out / "REPORT.json").read_text())


def test_every_case_passes(quick_report):
    status, _, data = quick_report
    failed = {c["name"]: c["error"] or [k for k in c["checks"] if not k["passed"]]
              for c in data["cases"] if c["status"] == "failed"}
    assert not failed and status == 0 and data["passed"] and data["quick"]
    names = [c["name"] for c in data["cases"]]
    assert names == [name for name, _, _ in report.CASES]
    for case in data["cases"]:
        if case["status"] == "skipped":
            assert case["skipped"] and not case["checks"]
            continue
        assert case["status"] == "passed" and case["checks"]
        for check in case["checks"]:
            assert 0 <= check["rms_error"] <= check["max_error"] <= check["tolerance"]


def test_the_markdown_has_a_table_per_case_and_the_provenance(quick_report):
    _, text, data = quick_report
    assert "**Result: PASSED**" in text
    assert re.search(r"Produced \d{4}-\d\d-\d\dT\S+ at commit `([0-9a-f]{40}|unknown)`", text)
    for case in data["cases"]:
        section = text.split(f"## {case['name']}\n", 1)[1].split("\n## ", 1)[0]
        if case["status"] == "skipped":
            assert "Skipped: " in section
            continue
        rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| quantity")]
        assert len(rows) == len(case["checks"])
        for row, check in zip(rows, case["checks"]):
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            assert cells[0] == check["quantity"] and cells[-1] == "pass"
            assert float(cells[1]) == pytest.approx(check["max_error"], rel=0.01, abs=1e-300)
    assert "## Figures" in text


def test_a_failing_check_fails_its_case_and_the_report():
    result = report.CaseResult("broken", "none", [report.Check("x", 2e-3, 1e-3, 1e-3, "rad")])
    assert result.status == "failed"
    assert report.CaseResult("nan", "none", [report.Check("x", np.nan, np.nan, 1.0, "rad")]).status == "failed"
    assert report.CaseResult("empty", "none").status == "failed"
    assert report.CaseResult("skipped", "none", skipped="no data").status == "skipped"


def test_an_exception_in_one_case_is_reported_and_the_others_still_run(monkeypatch, tmp_path):
    def broken(quick):
        raise RuntimeError("the reference exploded")

    monkeypatch.setattr(report, "CASES", [("broken", "none", broken), report.CASES[1]])
    result = report.run(quick=True)
    assert [c.status for c in result.cases] == ["failed", "passed"] and not result.passed
    assert result.cases[0].error == "RuntimeError: the reference exploded"
    text_path, _ = report.write(result, tmp_path)
    assert "Could not run: `RuntimeError: the reference exploded`" in text_path.read_text()


def test_outside_a_checkout_the_command_says_where_to_run_it(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", "--quick"]) == 1
    err = capsys.readouterr().err
    assert "run from the repository root (the validation/ references are not installed" in err
    assert "Traceback" not in err


def test_source_must_be_a_checkout_of_mbkron(tmp_path, capsys):
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "__main__.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "another-project"\n')
    assert not is_checkout(tmp_path)
    assert cli.main(["validate", "--quick", "--source", str(tmp_path)]) == 1
    assert f"--source: {tmp_path} is not a source checkout of mbkron" in capsys.readouterr().err


def test_the_checkout_is_found_from_a_subdirectory():
    assert is_checkout(ROOT)
    assert find_checkout(ROOT / "docs") == ROOT
    assert find_checkout(ROOT / "validation" / "closed_form") == ROOT


def test_the_validation_runs_as_a_separate_process_with_the_options(monkeypatch, tmp_path):
    """`mbkron validate` passes its options to `python -m validation` in the checkout, --out made absolute,
    and returns that process's exit status (a stand-in checkout whose validation records its arguments)."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mbkron"\n')
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "__init__.py").write_text("")
    (tmp_path / "validation" / "__main__.py").write_text(
        "import json, os, sys\n"
        "open('arguments.json', 'w').write(json.dumps([os.getcwd(), sys.argv[1:]]))\n"
        "raise SystemExit(3)\n")
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    status = cli.main(["validate", "--quick", "--figures", "--out", "report", "--source", str(tmp_path)])
    cwd, arguments = json.loads((tmp_path / "arguments.json").read_text())
    assert status == 3 and Path(cwd) == tmp_path.resolve()
    assert arguments == ["--quick", "--figures", "--out", str(here.resolve() / "report")]


def test_one_command_regenerates_report_and_figures(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert cli.main(["validate", "--quick", "--quiet", "--figures", "--out", str(tmp_path)]) == 0
    figures = sorted((tmp_path / "figures").glob("*.png"))
    assert len(figures) >= 14 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in figures)
    text = (tmp_path / "REPORT.md").read_text()
    assert "**Result: PASSED**" in text and "| failed |" not in text  # OpenSim cases skip without opensim


def _stand_in_checkout(tmp_path):
    """A checkout whose `python -m validation` records its working directory and arguments."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mbkron"\n')
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "__init__.py").write_text("")
    (tmp_path / "validation" / "__main__.py").write_text(
        "import json, os, sys\n"
        "open('arguments.json', 'w').write(json.dumps([os.getcwd(), sys.argv[1:]]))\n")


def test_the_default_output_is_a_new_directory_never_the_committed_report(monkeypatch, tmp_path):
    _stand_in_checkout(tmp_path)
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    assert cli.main(["validate", "--quick", "--source", str(tmp_path)]) == 0
    _, arguments = json.loads((tmp_path / "arguments.json").read_text())
    assert arguments[:2] == ["--quick", "--out"]
    out = Path(arguments[2])
    assert out.parent == here.resolve() and re.fullmatch(r"validation-report-\d{8}-\d{6}", out.name)
    assert cli.main(["validate", "--update-report", "--source", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "arguments.json").read_text())[1] == ["--update-report"]


@pytest.mark.parametrize("argv, message", [
    (["--quick", "--update-report"], "without --quick"),
    (["--update-report", "--out", "x"], "not allowed with argument"),
])
def test_update_report_is_a_full_run_without_out(argv, message, capsys, tmp_path, monkeypatch):
    from validation.__main__ import main as validation_main

    _stand_in_checkout(tmp_path)
    try:
        status = cli.main(["validate", *argv, "--source", str(tmp_path)])
    except SystemExit as exit_:  # argparse's own usage error
        status = exit_.code
    assert status == 2
    assert message in capsys.readouterr().err and not (tmp_path / "arguments.json").exists()
    with pytest.raises(SystemExit) as exit_:
        validation_main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
