"""Unpaired tests: accuracy on two different sets of problems (before and after a model's
training cutoff, on a dated benchmark's `by_month`).

`two_proportions` is the two-proportion z-test in its Wald (unpooled) form: the interval
of the difference and the p-value come from one standard error, so the interval leaves 0
out exactly when p < 0.05. Problems are the units: with several samples per problem each
contributes its accuracy (a fraction), and the binomial variance p(1-p)/P is then an upper
bound of the true one (the test is conservative)."""

from __future__ import annotations

import math
import re
from typing import Any

from skyeval.errors import ConfigError

Z95 = 1.959963984540054  # the 97.5% normal quantile
TEST = "two-proportion z-test (unpaired, unpooled)"
_MONTH = re.compile(r"(\d{4})-(\d{2})")


def two_proportions(x1: float, n1: int, x2: float, n2: int) -> dict[str, float]:
    """Group 2 − group 1 for `x` successes of `n` problems each: the difference, its
    standard error, 95% interval and two-sided p-value."""
    if n1 < 1 or n2 < 1:
        raise ValueError(f"two_proportions needs problems on both sides, got n1={n1}, n2={n2}")
    p1, p2 = x1 / n1, x2 / n2
    diff = p2 - p1
    se = math.sqrt(p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2)
    if se == 0:
        p_value = 1.0 if diff == 0 else 0.0
    else:
        p_value = math.erfc(abs(diff) / se / math.sqrt(2))
    return {"diff": diff, "se": se, "low": diff - Z95 * se, "high": diff + Z95 * se, "p_value": p_value}


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
