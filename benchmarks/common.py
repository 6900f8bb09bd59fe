"""Timing helpers shared by the benchmark scripts (best of several repeats, per call)."""

from __future__ import annotations

import os
import platform
import statistics
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field


def best_time(function: Callable[[], object], min_total: float = 0.2, repeat: int = 5) -> float:
    """Seconds per call: the best of ``repeat`` runs, each long enough to be timed reliably."""
    timer = timeit.Timer(function)
    number, _ = timer.autorange()
    number = max(1, int(number * min_total / 0.2))
    return min(timer.repeat(repeat=repeat, number=number)) / number


def machine() -> str:
    """One line describing the machine the numbers were measured on."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {load:.2f}")


@dataclass
class LadderRun:
    """One integration of a work–precision ladder (``bench_andrews``, ``bench_shoulder``): its side, solver and
    tolerances, and what its repeats measured (each script adds its errors)."""

    side: str  # "ODE" or "DAE"
    method: str
    rtol: float
    atol: float
    seconds: list[float] = field(default_factory=list)  # CPU time of each repeat
    steps: int = 0
    nfev: int = 0
    njev: int = 0
    nlu: int = 0

    @property
    def cpu(self) -> float:
        """Median CPU seconds of the repeats."""
        return statistics.median(self.seconds)

    def tolerances(self, digits: int = 1) -> str:
        """``rtol`` (``rtol/atol`` where they differ) with ``digits`` decimals."""
        if self.rtol == self.atol:
            return f"{self.rtol:.{digits}e}"
        return f"{self.rtol:.{digits}e}/{self.atol:.{digits}e}"
