"""Unpaired tests: accuracy on two different sets of problems (before and after a model's
training cutoff, on a dated benchmark's `by_month`).

`two_proportions` is the MOVER interval of the difference (Newcombe 1998, method 10, with
each side's exact Clopper-Pearson interval in place of Wilson's), and the p-value that
inverts it, so the interval leaves 0 out exactly when p < 0.05. Problems are the units: with
several samples per problem each contributes its accuracy (a fraction), and each side's
interval then treats the problems as its trials, which is conservative."""

from __future__ import annotations

import re
from typing import Any

from skyeval.errors import ConfigError
from skyeval.metrics.intervals import clopper_pearson, difference_test

TEST = "difference of proportions: MOVER of Clopper-Pearson intervals (Newcombe), unpaired"
_MONTH = re.compile(r"(\d{4})-(\d{2})")


def two_proportions(x1: float, n1: int, x2: float, n2: int) -> dict[str, float]:
    """Group 2 − group 1 for `x` successes of `n` problems each: the difference, its 95%
    interval and two-sided p-value."""
    if n1 < 1 or n2 < 1:
        raise ValueError(f"two_proportions needs problems on both sides, got n1={n1}, n2={n2}")

    def sides(level: float) -> tuple[tuple[float, float, float], ...]:
        return tuple((x / n, *map(float, clopper_pearson(x, n, level))) for x, n in ((x1, n1), (x2, n2)))

    return difference_test(sides)


def check_month(cutoff: Any) -> str:
    """`2024-06` as given; anything else is a one-line ConfigError (accuracy is kept by month)."""
    text = str(cutoff).strip()
    match = _MONTH.fullmatch(text)
    if match is None or not 1 <= int(match[2]) <= 12:
        raise ConfigError(f"--cutoff must be a month, YYYY-MM (accuracy is kept by month), got {cutoff!r}")
    return text


def before_after(by_month: dict[str, dict[str, Any]], cutoff: str) -> dict[str, Any]:
    """Accuracy on the problems of months up to and including `cutoff` (before: what a model
    trained until then may have seen) and after it, from summary.json's `metrics.by_month`,
    with `two_proportions` of after − before."""
    cutoff = check_month(cutoff)
    sides: dict[str, dict[str, Any]] = {}
    for name, months in (("before", [m for m in sorted(by_month) if m <= cutoff]),
                         ("after", [m for m in sorted(by_month) if m > cutoff])):
        n = sum(int(by_month[m]["n"]) for m in months)
        correct = sum(float(by_month[m]["accuracy"]) * int(by_month[m]["n"]) for m in months)
        sides[name] = {"months": f"{months[0]} .. {months[-1]}" if months else None, "n": n,
                       "accuracy": correct / n if n else None, "correct": correct}
    if not sides["before"]["n"] or not sides["after"]["n"]:
        empty = "before" if not sides["before"]["n"] else "after"
        span = f"{min(by_month)} .. {max(by_month)}" if by_month else "none"
        raise ConfigError(f"no problem {empty} the cutoff {cutoff} (the run's months: {span})")
    test = two_proportions(sides["before"]["correct"], sides["before"]["n"], sides["after"]["correct"], sides["after"]["n"])
    return {"cutoff": cutoff, "before": sides["before"], "after": sides["after"], **test, "test": TEST}
