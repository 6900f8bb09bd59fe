"""Timing helpers shared by the benchmark scripts (best of several repeats, per call)."""

from __future__ import annotations

import os
import platform
import timeit
from collections.abc import Callable


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
