"""Intervals: hand-computed values, the bars of issue 49, and coverage simulated over a grid
(vectorised with numpy: thousands of runs per cell through the same function the summary uses)."""

import math
from fractions import Fraction

import numpy as np
import pytest

from skyeval.metrics.intervals import (
    Moments,
    decode,
    difference,
    encode,
    exact,
    interval,
    proportion_intervals,
)

GRID_P = (0, 0.01, 0.05, 0.3, 0.5, 0.9, 0.99, 1)
GRID_PROBLEMS = (10, 30, 100, 500)
RUNS = 2000  # simulated runs per cell: a coverage of 0.95 is estimated within ±0.01


def moments(values):
    m = Moments()
    for x in values:
        m.add(exact(x))
    return m


@pytest.mark.parametrize("right,problems,low,high", [
    (10, 10, 0.691503, 1.0),          # 0.025 ** (1/10): never [1, 1] from ten problems
    (0, 10, 0.0, 0.308497),
    (1, 10, 0.002529, 0.445016),      # an observed success: the lower bound is above 0
    (3, 9, 0.074855, 0.700705),
    (30, 30, 0.884297, 1.0),
])
def test_one_sample_per_problem_is_clopper_pearson(right, problems, low, high):
    # scipy.stats.beta.ppf(0.025, x, n - x + 1) and beta.ppf(0.975, x + 1, n - x)
    found = interval(moments([1] * right + [0] * (problems - right)))
    assert (found.low, found.high) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))
    assert found.effective == problems and found.value == right / problems


def test_the_bars_of_issue_49():
    ten_of_ten = interval(moments([1] * 10))
    assert 0.6 < ten_of_ten.low < 0.8 and ten_of_ten.high == 1.0
    assert interval(moments([1] * 3 + [0] * 6)).low > 0.05
    assert interval(moments([1] + [0] * 9)).low > 0


@pytest.mark.parametrize("values,units", [([1] * 10, 4), ([0] * 30, 8), ([Fraction(1, 2)] * 5, 2), ([1], 1),
                                          ([Fraction(3, 4)], 4), ([0, 1], 1)])
def test_never_a_zero_width_interval(values, units):
    found = interval(moments(values), units)
    assert found.high - found.low > 0.05


def test_several_samples_count_between_the_problems_and_the_samples():
    # per-problem accuracies of 4 samples: spread like independent samples, the 40 samples count
    # almost fully; all-or-nothing problems count as 10
    spread = interval(moments([Fraction(k, 4) for k in (1, 2, 3, 2, 1, 2, 3, 2, 2, 2)]), units=4)
    clustered = interval(moments([0, 1, 0, 1, 1, 0, 1, 0, 1, 1]), units=4)
    assert 10 < spread.effective <= 40 and clustered.effective == 10
    assert spread.high - spread.low < clustered.high - clustered.low
    # everything right says nothing about the clustering: as many as the problems
    assert interval(moments([1] * 10), units=4).effective == 10
    one = interval(moments([1]), units=4)
    assert (one.se, one.effective, one.high) == (None, 1.0, 1.0) and one.low == pytest.approx(0.025)


def test_interval_is_the_vectorised_one():
    m = moments([Fraction(1, 4), Fraction(3, 4), 1, 0, Fraction(1, 2)])
    found = interval(m, units=4)
    low, high, effective = proportion_intervals([m.mean()], [m.variance()], 5, 4, min(m.hits, m.misses))
    assert (found.low, found.high, found.effective) == (low[0], high[0], effective[0])
    assert found.se == pytest.approx(math.sqrt(m.variance()))


def test_moments_merge_and_state_are_exact():
    a, b = moments([0.1, 0.7]), moments([Fraction(1, 3), 1])
    a.merge(b)
    assert a == moments([0.1, 0.7, Fraction(1, 3), 1])
    assert (a.hits, a.misses) == (4, 3)
    assert Moments.from_state(a.to_state()) == a
    assert decode(encode(Fraction(1, 3))) == Fraction(1, 3) and encode(Fraction(4, 2)) == 2
    assert Moments.from_state([2, 1, 1]).count == 2  # a state written before hits/misses: still read


def difficulties(rng, p, problems, clustering):
    """(runs, problems) success probabilities with mean p: equal (clustering 0), drawn from a
    Beta of intra-problem correlation `clustering`, or all-or-nothing (1). p = 0 or 1 is
    one run (every run is the same); 500 problems get half the runs (their coverage varies less)."""
    runs = 1 if p in (0, 1) else RUNS // 2 if problems >= 500 else RUNS
    if p in (0, 1) or clustering == 0:
        return np.full((runs, problems), float(p))
    if clustering == 1:
        return (rng.random((runs, problems)) < p).astype(float)
    scale = (1 - clustering) / clustering
    return rng.beta(p * scale, (1 - p) * scale, (runs, problems))


def coverage(values, truth, units):
    """Share of simulated runs (rows of per-problem `values`) whose interval holds `truth`."""
    problems = values.shape[1]
    informative = np.minimum((values > 0).sum(1), (values < 1).sum(1))
    low, high, _ = proportion_intervals(values.mean(1), values.var(1, ddof=1) / problems, problems, units,
                                        informative)
    return float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high)))


def test_coverage_over_the_grid():
    """p x problems x samples per problem (1, and 4 with independent, correlated and
    all-or-nothing samples of a problem): every cell covers at least 93%."""
    rng = np.random.default_rng(49)
    cells = {}
    for p in GRID_P:
        for problems in GRID_PROBLEMS:
            for samples, clustering in ((1, 0), (4, 0), (4, 0.3), (4, 0.7), (4, 1)):
                q = difficulties(rng, p, problems, clustering)
                values = rng.binomial(samples, q) / samples
                cells[(p, problems, samples, clustering)] = coverage(values, p, samples)
    low = {cell: c for cell, c in cells.items() if c < 0.93}
    assert not low, f"cells below 0.93 coverage (p, problems, samples, clustering): {low}"
    assert min(cells.values()) >= 0.93 and np.mean(list(cells.values())) < 0.99  # honest, not absurdly wide


def test_pass_at_k_coverage():
    from skyeval.metrics import exact_pass_at_k

    rng = np.random.default_rng(4)
    n, k = 8, 4
    table = np.array([float(exact_pass_at_k(n, c, k)) for c in range(n + 1)])
    for a, b in ((1.0, 2.0), (0.2, 3.0), (5.0, 0.5)):
        truth = 1 - math.prod((b + j) / (a + b + j) for j in range(k))  # 1 - E[(1-p)^k], p ~ Beta(a, b)
        for problems in (10, 30, 100):
            values = table[rng.binomial(n, rng.beta(a, b, (RUNS, problems)))]
            assert coverage(values, truth, n // k) >= 0.93, (a, b, problems)


def sides(values, samples):
    """(mean, low, high) of each simulated run (row) of per-problem values."""
    problems = values.shape[1]
    informative = np.minimum((values > 0).sum(1), (values < 1).sum(1))
    mean = values.mean(1)
    low, high, _ = proportion_intervals(mean, values.var(1, ddof=1) / problems, problems, samples, informative)
    return mean, low, high


def test_paired_difference_coverage():
    """B − A over the same problems (`compare`): correlated runs, 1 and 4 samples a problem."""
    rng = np.random.default_rng(7)

    def success(p, shared):  # a problem's success probability in a run of mean accuracy p
        return np.clip(p + 0.4 * (shared - 0.5), 0, 1)

    for samples in (1, 4):
        for problems in (10, 30, 100):
            for pa, pb in ((0.3, 0.5), (0.9, 1.0), (0.0, 0.0), (1.0, 1.0), (0.5, 0.5), (0.1, 0.0)):
                population = rng.random(200_000)
                truth = float(success(pb, population).mean() - success(pa, population).mean())
                shared = rng.random((RUNS, problems))  # one difficulty draw drives both runs: correlated
                a = rng.binomial(samples, success(pa, shared)) / samples
                b = rng.binomial(samples, success(pb, shared)) / samples
                da, db = a - a.mean(1, keepdims=True), b - b.mean(1, keepdims=True)
                with np.errstate(invalid="ignore", divide="ignore"):
                    r = np.nan_to_num((da * db).sum(1) / np.sqrt((da ** 2).sum(1) * (db ** 2).sum(1)))
                low, high = difference(sides(a, samples), sides(b, samples), r)
                covered = float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high)))
                assert covered >= 0.93, (samples, problems, pa, pb, covered)
