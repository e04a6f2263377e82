"""Paired statistics for two runs on the same problems (`compare`).

Each test gives its interval and its p-value from one statistic, so the two agree (the
interval leaves 0 out when p < 0.05, up to a bootstrap's resolution):
- `mcnemar`: one 0/1 outcome per problem. The exact binomial test on the discordant pairs
  (at any count), and the interval of the difference from the Clopper-Pearson interval of
  their split, conditional on their number.
- `paired_bootstrap` + `bootstrap_summary`: anything else (several samples, fractional
  scores). Problems are resampled (samples of one problem are correlated); the percentile
  interval, and the p-value that inverts it."""

from __future__ import annotations

from typing import Callable

import numpy as np

CONFIDENCE = 0.95


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


def mcnemar(a_only: int, b_only: int, pairs: int) -> dict[str, float]:
    """B − A over `pairs` paired 0/1 outcomes from the discordant counts (A right and B
    wrong, A wrong and B right): the difference, its 95% interval and the two-sided exact
    binomial p-value (twice the smaller tail: the test the equal-tailed interval inverts)."""
    d = a_only + b_only
    diff = (b_only - a_only) / pairs
    if d == 0:
        return {"diff": 0.0, "se": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0}
    p_value = min(1.0, 2 * binomial_cdf(min(a_only, b_only), d, 0.5))
    tail = (1 - CONFIDENCE) / 2
    low = 0.0 if b_only == 0 else _solve(lambda q: 1 - binomial_cdf(b_only - 1, d, q) - tail, rising=True)
    high = 1.0 if b_only == d else _solve(lambda q: binomial_cdf(b_only, d, q) - tail, rising=False)
    scale = d / pairs
    se = float(np.sqrt(max(d - (b_only - a_only) ** 2 / pairs, 0.0)) / pairs)  # of the difference, unconditional
    return {"diff": diff, "se": se, "low": scale * (2 * low - 1), "high": scale * (2 * high - 1), "p_value": p_value}


def _solve(f: Callable[[float], float], rising: bool) -> float:
    """The root of a monotone f on (0, 1), by bisection."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if (f(mid) < 0) == rising:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def paired_bootstrap(
    statistics: dict[str, Callable[[np.ndarray], np.ndarray]], n_problems: int, rounds: int = 2000, seed: int = 0
) -> dict[str, np.ndarray]:
    """Each `statistic(weights)` for the same `rounds` resamples of the problems with
    replacement (one set of resamples for every metric, so they stay paired).

    `weights` is a (batch, n_problems) array of how often each problem was drawn; a
    statistic returns one value per row. Batches keep memory bounded for large runs."""
    if not statistics:
        return {}
    rng = np.random.default_rng(seed)
    batch = max(1, min(rounds, 500_000 // max(n_problems, 1)))  # resamples at a time: a few MiB
    out: dict[str, list[np.ndarray]] = {name: [] for name in statistics}
    done = 0
    while done < rounds:
        size = min(batch, rounds - done)
        drawn = rng.integers(0, n_problems, size=(size, n_problems)) + n_problems * np.arange(size)[:, None]
        weights = np.bincount(drawn.ravel(), minlength=size * n_problems).reshape(size, n_problems).astype(np.float64)
        for name, statistic in statistics.items():
            out[name].append(statistic(weights))
        done += size
    return {name: np.concatenate(parts) for name, parts in out.items()}


def bootstrap_summary(observed: float, draws: np.ndarray) -> dict[str, float]:
    """95% percentile interval of the difference, its standard error, and the two-sided
    p-value that inverts that interval: 2 · (1 + #{d* on the far side of 0}) / (1 + rounds),
    so p < 0.05 when the interval leaves 0 out (up to one resample)."""
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    eps = 1e-12
    below, above = int(np.sum(draws <= eps)), int(np.sum(draws >= -eps))
    p = 2 * (1 + min(below, above)) / (1 + len(draws))
    return {"diff": observed, "se": float(np.std(draws, ddof=1)) if len(draws) > 1 else 0.0,
            "low": float(low), "high": float(high), "p_value": min(1.0, p)}
