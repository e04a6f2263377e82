"""The unpaired difference of two proportions behind `report/compare --cutoff`, against
values computed by hand (scipy's beta quantiles)."""

import math

import pytest

from skyeval.errors import ConfigError
from skyeval.metrics.unpaired import before_after, check_month, two_proportions


def cp(x, n, level=0.95):
    from scipy.stats import beta

    tail = (1 - level) / 2
    return (x / n, beta.ppf(tail, x, n - x + 1) if x else 0.0, beta.ppf(1 - tail, x + 1, n - x) if x < n else 1.0)


def mover(a, b):
    (va, la, ha), (vb, lb, hb) = a, b
    return vb - va - math.hypot(vb - lb, ha - va), vb - va + math.hypot(hb - vb, va - la)


def test_two_proportions_is_mover_of_clopper_pearson():
    # 30/100 before, 20/100 after: each side's exact interval, joined (Newcombe's method 10, exact limits)
    r = two_proportions(30, 100, 20, 100)
    assert r["diff"] == pytest.approx(-0.1)
    assert (r["low"], r["high"]) == pytest.approx(mover(cp(30, 100), cp(20, 100)), abs=1e-9)
    assert r["low"] < 0 < r["high"] and r["p_value"] > 0.05
    # p is the level at which the interval reaches 0: the interval at 1 - p ends at 0
    level = 1 - r["p_value"]
    assert mover(cp(30, 100, level), cp(20, 100, level))[1] == pytest.approx(0, abs=1e-6)
    strong = two_proportions(60, 100, 45, 100)
    assert strong["p_value"] < 0.05 and strong["high"] < 0


def test_two_proportions_edges_are_never_a_point():
    same = two_proportions(5, 5, 5, 5)  # before: [0, 0] with p 1
    assert same["diff"] == 0 and same["p_value"] == 1.0 and same["low"] < -0.4 and same["high"] > 0.4
    gone = two_proportions(5, 5, 0, 5)  # before: p 0 (a Wald se of 0)
    assert gone["diff"] == -1 and 0 < gone["p_value"] < 0.05 and gone["low"] == -1.0 and gone["high"] < 0
    with pytest.raises(ValueError):
        two_proportions(0, 0, 1, 2)


def test_before_after_splits_by_month_at_the_cutoff_inclusive():
    by_month = {"2024-05": {"accuracy": 0.5, "n": 40}, "2024-06": {"accuracy": 0.25, "n": 60},
                "2024-07": {"accuracy": 0.2, "n": 50}, "2024-08": {"accuracy": 0.2, "n": 50}}
    r = before_after(by_month, "2024-06")
    # before: 20 + 15 = 35 of 100; after: 10 + 10 = 20 of 100
    assert r["before"] == {"months": "2024-05 .. 2024-06", "n": 100, "accuracy": pytest.approx(0.35), "correct": 35.0}
    assert r["after"]["months"] == "2024-07 .. 2024-08" and r["after"]["accuracy"] == pytest.approx(0.2)
    expected = two_proportions(35, 100, 20, 100)
    assert r["diff"] == pytest.approx(-0.15) and r["p_value"] == pytest.approx(expected["p_value"])
    assert (r["low"], r["high"]) == pytest.approx(mover(cp(35, 100), cp(20, 100)), abs=1e-9)
    with pytest.raises(ConfigError, match=r"no problem after the cutoff 2024-08 \(the run's months: 2024-05 .. 2024-08\)"):
        before_after(by_month, "2024-08")
    with pytest.raises(ConfigError, match="no problem before the cutoff 2024-04"):
        before_after(by_month, "2024-04")


@pytest.mark.parametrize("bad", ["2024-13", "2024-06-30", "June", "2024"])
def test_the_cutoff_is_a_month(bad):
    with pytest.raises(ConfigError, match=r"--cutoff must be a month, YYYY-MM"):
        check_month(bad)
    assert check_month("2024-06") == "2024-06"
