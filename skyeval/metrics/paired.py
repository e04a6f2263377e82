"""Paired statistics for two runs on the same problems (`compare`).

- `paired_difference`: B − A of a per-problem value (accuracy, pass@k) with the MOVER
  interval built from each run's own interval (`skyeval.metrics.intervals`: Clopper-Pearson
  with the design-effect sample size) and the correlation of the two runs' per-problem
  values (Newcombe 1998's method for paired proportions, with exact marginal intervals),
  and the p-value that inverts that interval. It never has zero width from a finite
  sample: two runs right on all of 10 problems differ by [−0.31, +0.31].
- `mcnemar_p`: McNemar's exact test (the binomial test on the discordant pairs) for one
  0/1 outcome per problem; `compare` reports it as that case's p-value, beside the interval.
"""

from __future__ import annotations

import numpy as np

from skyeval.metrics.intervals import LEVEL, difference_test, proportion_intervals


def binomial_cdf(k: int, d: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(d, p), summed in log space (exact up to float rounding)."""
    if k < 0:
        return 0.0
    if k >= d:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    log_fact = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, d + 1, dtype=np.float64)))))
    i = np.arange(k + 1)
    log_pmf = log_fact[d] - log_fact[i] - log_fact[d - i] + i * np.log(p) + (d - i) * np.log1p(-p)
    return float(min(1.0, np.exp(log_pmf).sum()))


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (A right and B wrong, A
    wrong and B right): twice the smaller binomial tail of their split."""
    d = a_only + b_only
    return 1.0 if d == 0 else min(1.0, 2 * binomial_cdf(min(a_only, b_only), d, 0.5))


def side(values: np.ndarray, units: int, level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) of per-problem values in [0, 1] of `units` samples each."""
    problems = len(values)
    mean = float(values.mean())
    variance = float(values.var(ddof=1) / problems) if problems > 1 else float("nan")
    informative = min(int(np.sum(values > 0)), int(np.sum(values < 1)))
    low, high, _ = proportion_intervals(mean, variance, problems, units, informative, level)
    return mean, float(low), float(high)


def paired_difference(a: np.ndarray, b: np.ndarray, units: int) -> dict[str, float]:
    """B − A over the problems both runs hold (`a`, `b`: their per-problem values, each of
    `units` samples): the difference, its 95% MOVER interval and the p-value inverting it."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    r = 0.0
    if len(a) > 1 and a.std() > 0 and b.std() > 0:
        r = float(np.corrcoef(a, b)[0, 1])
    return difference_test(lambda level: (side(a, units, level), side(b, units, level)), r)
