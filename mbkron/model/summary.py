"""A model's one-paragraph summary: what ``repr(model)`` shows (as ``mbkron info``'s heading, without
the arrays)."""

from __future__ import annotations

__all__ = ["summary"]


def _count(number: int, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def summary(model) -> str:
    """``Model('name': n coordinates, n bodies, n joint variables, n muscles, n constraint groups, n loads;
    gravity (…) m/s²; backend '…')``: counts instead of arrays (a 92-muscle model's dataclass repr ran
    to 53 kB)."""
    gravity = ", ".join(f"{g:.6g}" for g in model.gravity)
    counts = ", ".join([
        _count(model.nq, "coordinate"), _count(model.nb, "body", "bodies"), _count(model.nj, "joint variable"),
        _count(len(model.muscles), "muscle"), _count(len(model.constraint_groups), "constraint group"),
        _count(len(model.loads), "load"),
    ])
    return f"Model({model.name!r}: {counts}; gravity ({gravity}) m/s²; backend {model.backend!r})"
