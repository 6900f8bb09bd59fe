"""The validation report's records and their Markdown and JSON form (:mod:`validation.report` runs the cases).

A :class:`Report` holds one :class:`CaseResult` per case: its :class:`Check` rows (maximum and RMS
errors against a tolerance), notes, timing, or why it was
skipped (:class:`Skipped`) or could not run. :func:`write` writes ``REPORT.md`` (:func:`markdown`) and
``REPORT.json`` atomically, as a set.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mbkron.cli.common import result_set_lock
from mbkron.io import write_atomically

__all__ = ["ROOT", "DEFAULT_OUT", "FIGURE_DIR", "Check", "CaseResult", "Report", "Skipped", "markdown", "write",
           "print_case"]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "validation"
FIGURE_DIR = ROOT / "docs" / "figures"


class Skipped(Exception):
    """Raised by a case whose reference is not available here; the message says why."""


@dataclass(frozen=True)
class Check:
    """One compared quantity of a case.

    Parameters
    ----------
    quantity : str
        What is compared, e.g. ``"joint torques"``.
    max_error, rms_error : float
        Largest absolute and root-mean-square error over all samples and components.
    tolerance : float
        The case passes only if ``max_error <= tolerance``.
    unit : str
        Unit of the errors: a physical unit or ``"relative"`` (see :mod:`validation.report`).
    """

    quantity: str
    max_error: float
    rms_error: float
    tolerance: float
    unit: str

    @property
    def passed(self) -> bool:
        """Whether the maximum error is finite and within the tolerance."""
        return bool(np.isfinite(self.max_error) and self.max_error <= self.tolerance)


@dataclass
class CaseResult:
    """The outcome of one case: its checks, or why it was skipped or could not run."""

    name: str
    reference: str
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        """``"passed"``, ``"failed"`` (a check out of tolerance, or an exception) or ``"skipped"``."""
        if self.skipped is not None:
            return "skipped"
        if self.error is not None or not self.checks or not all(c.passed for c in self.checks):
            return "failed"
        return "passed"


@dataclass
class Report:
    """All case results with the run's provenance."""

    quick: bool
    created_utc: str
    commit: str
    environment: dict[str, str]
    cases: list[CaseResult]
    seconds: float

    @property
    def passed(self) -> bool:
        """True when no case failed (skipped cases do not fail the report)."""
        return all(case.status != "failed" for case in self.cases)


def _number(value: float) -> str:
    return f"{value:.2e}" if value else "0"


def _figure_links(out: Path) -> list[str]:
    """Markdown links, relative to ``out``, to the PNG figures in docs/figures/ that exist."""
    from validation.figures import CAPTIONS

    lines = [f"- [{caption}]({_link(FIGURE_DIR / f'{name}.png', out)})" for name, caption in CAPTIONS.items()
             if (FIGURE_DIR / f"{name}.png").exists()]
    if not lines:
        return ["No figures yet: run `python -m validation.figures` (needs matplotlib) to write them to docs/figures/."]
    return ["Regenerate with `python -m validation.figures`; shown beside the seed's numbers in "
            f"[docs/validation.md]({_link(ROOT / 'docs' / 'validation.md', out)}).", "", *lines]


def _link(path: Path, start: Path) -> str:
    """``path`` relative to the directory ``start``, with forward slashes (a Markdown link)."""
    return Path(os.path.relpath(path.resolve(), start.resolve())).as_posix()


def markdown(report: Report, out: Path) -> str:
    """The report as Markdown; figure links are relative to the directory ``out``."""
    mode = "quick (`--quick`: short runs, few samples)" if report.quick else "full"
    counts = {status: sum(c.status == status for c in report.cases) for status in ("passed", "failed", "skipped")}
    lines = [
        "# mbkron validation report", "",
        f"- **Result: {'PASSED' if report.passed else 'FAILED'}** — {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['skipped']} skipped; {report.seconds:.1f} s in all.",
        f"- Produced {report.created_utc} at commit `{report.commit}`, mode {mode}.",
        "- Environment: " + ", ".join(f"{k} {v}" for k, v in report.environment.items()) + ".",
        "- Regenerate from the repository root: `mbkron validate" + (" --quick" if report.quick else " --update-report")
        + "` (or `python -m validation" + (" --quick" if report.quick else " --update-report") + "`).", "",
        "Errors are over all samples and components. *relative*: divided by the largest magnitude of the "
        "reference at that state (at least 1), or for point kinematics by the signal's maximum over time, so "
        "that −log10 of the maximum is the number of significant figures. A case passes when every maximum "
        "error is within its tolerance.", "",
        "| case | result | time s |", "|---|---|---|",
    ]
    lines += [f"| [{c.name}](#{_anchor(c.name)}) | {c.status} | {c.seconds:.2f} |" for c in report.cases]
    for c in report.cases:
        lines += ["", f"## {c.name}", "", f"Reference: {c.reference}. Result: **{c.status}** ({c.seconds:.2f} s).", ""]
        if c.skipped is not None:
            lines.append(f"Skipped: {c.skipped}.")
            continue
        if c.error is not None:
            lines += [f"Could not run: `{c.error}`", ""]
        if c.checks:
            lines += ["| quantity | max error | RMS error | tolerance | unit | result |", "|---|---|---|---|---|---|"]
            lines += [f"| {k.quantity} | {_number(k.max_error)} | {_number(k.rms_error)} | {k.tolerance:.0e} | {k.unit} "
                      f"| {'pass' if k.passed else '**FAIL**'} |" for k in c.checks]
        if c.notes:
            lines += ["", *(f"- {note}" for note in c.notes)]
    lines += ["", "## Figures", "", *_figure_links(out), ""]
    return "\n".join(lines)


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def _json_number(value: float) -> float | str:
    """Finite floats as numbers, others as text (JSON has no NaN or infinity)."""
    return value if np.isfinite(value) else str(value)


def _as_json(report: Report) -> dict:
    cases = []
    for c in report.cases:
        cases.append({"name": c.name, "reference": c.reference, "status": c.status,
                      "seconds": round(c.seconds, 3),
                      "skipped": c.skipped, "error": c.error, "notes": c.notes,
                      "checks": [{**dataclasses.asdict(k), "max_error": _json_number(k.max_error),
                                 "rms_error": _json_number(k.rms_error), "passed": k.passed} for k in c.checks]})
    return {"passed": report.passed, "quick": report.quick, "created_utc": report.created_utc, "commit": report.commit,
            "environment": report.environment, "seconds": round(report.seconds, 3), "cases": cases}


def write(report: Report, out: Path = DEFAULT_OUT) -> tuple[Path, Path]:
    """Write ``out/REPORT.md`` and ``out/REPORT.json`` atomically, as a set (the lock of
    :func:`mbkron.cli.common.result_set_lock`); returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    text_path, json_path = out / "REPORT.md", out / "REPORT.json"
    with result_set_lock(text_path):  # two runs into one directory: each writes both files in turn
        write_atomically(text_path, markdown(report, out).encode())
        write_atomically(json_path, (json.dumps(_as_json(report), indent=2, allow_nan=False) + "\n").encode())
    return text_path, json_path


def print_case(result: CaseResult) -> None:
    """Print one line for a finished case: status, name, time and why it was skipped or failed."""
    detail = result.skipped or result.error or ""
    print(f"{result.status:>7}  {result.name} ({result.seconds:.1f} s){': ' + detail if detail else ''}",
          flush=True)
