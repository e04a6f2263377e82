"""Intervals of per-problem means, from running sums: the headline's, by month, and the
differences `compare` and `--cutoff` report.

A headline number is a mean over P problems of a per-problem value x_p in [0, 1] (its mean
score over n samples, its unbiased pass@k, its majority score ...). Its 95% interval is a
Clopper-Pearson interval over an effective number of samples, the method of Korn & Graubard
(1998) for clustered data:

- one value per problem (`units` = 1: n = 1, majority vote, best-of-n, pass@n): the exact
  Clopper-Pearson interval of x̄·P successes in P trials (Clopper & Pearson 1934), valid
  for 0/1 scores and conservative for fractional ones (a [0, 1] value varies at most as a
  0/1 one of the same mean);
- several samples a problem (`units` > 1): samples of one problem are correlated, so the P·n
  samples count as n_eff = x̄(1−x̄) / v independent ones, v the cluster-robust variance of x̄
  (problems as clusters), scaled by (z / t_df)² with df = (the fewer of the problems with a
  success and with a failure) − 1 (few such problems estimate v badly), and kept in [P, P·units];
- x̄ = 0 or 1 says nothing of the clustering: n_eff = P.

So the interval never has zero width from a finite sample (10 of 10 right: [0.69, 1]).
A difference of two such numbers (`compare`'s paired B − A, the before/after-cutoff test)
is the MOVER interval (Newcombe 1998; Zou & Donner 2008) built from the two intervals and,
for paired runs, the correlation of their per-problem values; its p-value is the level at
which that interval reaches 0. docs/metrics.md has the coverage this gives.

Sums are exact rationals so that merged shards give identical numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

Exact = int | Fraction  # a number kept without rounding

INTERVAL_METHOD = "Clopper-Pearson over problems, design-effect sample size (Korn-Graubard)"
DIFFERENCE_METHOD = "MOVER from each side's interval (Newcombe)"
LEVEL = 0.95


def exact(x: float | int | Fraction) -> Exact:
    """`x` as an exact number: an int when it is whole (the fast, common case), else a Fraction."""
    if isinstance(x, Fraction):
        return x.numerator if x.denominator == 1 else x
    if isinstance(x, float) and not x.is_integer():
        return Fraction(x)
    return int(x)


def encode(x: Exact) -> int | str:
    """JSON form of an exact number: an int, or "p/q"."""
    x = exact(x)
    return x if isinstance(x, int) else f"{x.numerator}/{x.denominator}"


def decode(x: int | str) -> Exact:
    return exact(Fraction(x)) if isinstance(x, str) else int(x)


@dataclass
class Moments:
    """Running sums of one per-problem value: P = count, sum of x_p, sum of x_p squared,
    and how many problems have x_p > 0 (`hits`) and x_p < 1 (`misses`)."""

    count: int = 0
    total: Exact = 0
    total_sq: Exact = 0
    hits: int = 0
    misses: int = 0

    def add(self, x: Exact) -> None:
        self.count += 1
        self.hits += x > 0
        self.misses += x < 1
        if x:
            self.total += x
            self.total_sq += x * x

    def merge(self, other: Moments) -> None:
        self.count += other.count
        self.total += other.total
        self.total_sq += other.total_sq
        self.hits += other.hits
        self.misses += other.misses

    def mean(self) -> float | None:
        return float(Fraction(self.total) / self.count) if self.count else None

    def variance(self) -> float | None:
        """The cluster-robust variance of the mean: s² / P, s² the sample variance (P ≥ 2)."""
        if self.count < 2:
            return None
        p = self.count
        mean = Fraction(self.total) / p
        return float((Fraction(self.total_sq) - p * mean * mean) / (p - 1) / p)  # exact, so never negative

    def to_state(self) -> list:
        return [self.count, encode(self.total), encode(self.total_sq), self.hits, self.misses]

    @classmethod
    def from_state(cls, state: list) -> Moments:
        return cls(state[0], decode(state[1]), decode(state[2]), *state[3:5])


@dataclass(frozen=True)
class Interval:
    """A mean over P problems, its standard error (None for one problem), a two-sided
    interval and the effective number of independent samples it is computed from."""

    value: float
    se: float | None
    low: float
    high: float
    problems: int
    effective: float


def proportion_intervals(mean: Any, variance: Any, problems: Any, units: Any, informative: Any,
                         level: float = LEVEL) -> tuple[Any, Any, Any]:
    """(low, high, n_eff) for arrays (or scalars) of means over `problems` problems of
    `units` samples each, with the cluster-robust `variance` of each mean (NaN when not
    known) and `informative` = min(problems with a success, problems with a failure).
    Vectorised: the coverage test runs thousands at once."""
    import numpy as np
    from scipy.special import stdtrit

    mean, variance = np.asarray(mean, dtype=float), np.asarray(variance, dtype=float)
    problems, units = np.asarray(problems, dtype=float), np.asarray(units, dtype=float)
    df = np.maximum(np.asarray(informative, dtype=float) - 1, 1)
    z = -_normal_quantile((1 - level) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        from_variance = np.where(variance > 0, mean * (1 - mean) / variance, problems * units)
        scaled = from_variance * (z / stdtrit(df, 0.5 + level / 2)) ** 2
    edge = (mean <= 0) | (mean >= 1) | (units <= 1) | ~np.isfinite(scaled)
    effective = np.where(edge, problems, np.clip(np.nan_to_num(scaled, nan=0.0), problems, problems * units))
    low, high = clopper_pearson(mean * effective, effective, level)
    return low, high, effective


def clopper_pearson(successes: Any, trials: Any, level: float = LEVEL) -> tuple[Any, Any]:
    """The exact binomial interval (beta quantiles; `successes` may be fractional)."""
    import numpy as np
    from scipy.special import betaincinv

    x, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    tail = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        low = np.where(x <= 0, 0.0, betaincinv(np.maximum(x, 1e-300), np.maximum(n - x + 1, 1e-300), tail))
        high = np.where(x >= n, 1.0, betaincinv(np.maximum(x + 1, 1e-300), np.maximum(n - x, 1e-300), 1 - tail))
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def interval(m: Moments, units: int = 1, level: float = LEVEL) -> Interval | None:
    """The mean of x_p with its interval at `level` (see the module doc); None without problems."""
    value = m.mean()
    if value is None:
        return None
    variance = m.variance()
    low, high, effective = proportion_intervals(value, math.nan if variance is None else variance, m.count, units,
                                                min(m.hits, m.misses), level)
    return Interval(value, None if variance is None else math.sqrt(variance), float(low), float(high), m.count,
                    float(effective))


def difference(a: tuple[Any, Any, Any], b: tuple[Any, Any, Any], r: Any = 0.0) -> tuple[Any, Any]:
    """The MOVER interval of b − a from each side's (value, low, high) and the correlation
    `r` of the two sides (0 for independent samples); numbers or numpy arrays."""
    import numpy as np

    (va, la, ha), (vb, lb, hb) = a, b
    d = vb - va
    down = (vb - lb) ** 2 + (ha - va) ** 2 - 2 * r * (vb - lb) * (ha - va)
    up = (hb - vb) ** 2 + (va - la) ** 2 - 2 * r * (hb - vb) * (va - la)
    return d - np.sqrt(np.maximum(down, 0.0)), d + np.sqrt(np.maximum(up, 0.0))


def difference_test(sides: Any, r: float = 0.0, level: float = LEVEL) -> dict[str, float]:
    """b − a with its MOVER interval at `level` and the p-value that inverts it (the level
    1 − p at which the interval's near end reaches 0). `sides(level)` returns the two
    sides' (value, low, high) at a level."""
    a, b = sides(level)
    low, high = map(float, difference(a, b, r))
    diff = b[0] - a[0]
    out = {"diff": diff, "low": low, "high": high}
    if diff == 0:
        return {**out, "p_value": 1.0}

    def excludes_zero(alpha: float) -> bool:
        lo, hi = difference(*sides(1 - alpha), r)
        return lo > 0 or hi < 0

    if not excludes_zero(1 - 1e-9):  # even a 0% interval holds 0 (no information at all)
        return {**out, "p_value": 1.0}
    small, large = 1e-12, 1 - 1e-9  # excludes_zero(large) holds; find the smallest alpha that excludes
    if excludes_zero(small):
        return {**out, "p_value": small}
    for _ in range(50):
        mid = math.sqrt(small * large) if large / small > 10 else (small + large) / 2
        if excludes_zero(mid):
            large = mid
        else:
            small = mid
    return {**out, "p_value": large}


def _normal_quantile(p: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(p))
