"""The unpaired two-proportion test behind `report/compare --cutoff`, against values
computed by hand."""

import math

import pytest

from skyeval.errors import ConfigError
from skyeval.metrics.unpaired import before_after, check_month, two_proportions


def test_two_proportions_matches_the_hand_computed_wald_test():
    # 30/100 before, 20/100 after: diff -0.1, se sqrt(.3*.7/100 + .2*.8/100) = sqrt(.0037) = 0.060828,
    # z = 1.6440, two-sided p = 2 * (1 - Phi(1.6440)) = 0.1002; interval -0.1 -+ 1.95996 * 0.060828
    r = two_proportions(30, 100, 20, 100)
    assert r["diff"] == pytest.approx(-0.1)
    assert r["se"] == pytest.approx(math.sqrt(0.0037)) and r["se"] == pytest.approx(0.060828, abs=1e-6)
    assert r["p_value"] == pytest.approx(0.1002, abs=1e-4)
    assert (r["low"], r["high"]) == (pytest.approx(-0.219220, abs=1e-6), pytest.approx(0.019220, abs=1e-6))
    # the interval leaves 0 out exactly when p < 0.05: 60/100 vs 45/100, z = 2.1483, p = 0.0317
    strong = two_proportions(60, 100, 45, 100)
    assert strong["p_value"] == pytest.approx(0.0317, abs=1e-4) and strong["high"] < 0


def test_two_proportions_edges():
    assert two_proportions(5, 5, 5, 5) == {"diff": 0.0, "se": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0}
    assert two_proportions(5, 5, 0, 5)["p_value"] == 0.0
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
    assert r["p_value"] == pytest.approx(math.erfc(0.15 / math.sqrt(0.35 * 0.65 / 100 + 0.2 * 0.8 / 100) / math.sqrt(2)))
    with pytest.raises(ConfigError, match=r"no problem after the cutoff 2024-08 \(the run's months: 2024-05 .. 2024-08\)"):
        before_after(by_month, "2024-08")
    with pytest.raises(ConfigError, match="no problem before the cutoff 2024-04"):
        before_after(by_month, "2024-04")


@pytest.mark.parametrize("bad", ["2024-13", "2024-06-30", "June", "2024"])
def test_the_cutoff_is_a_month(bad):
    with pytest.raises(ConfigError, match=r"--cutoff must be a month, YYYY-MM"):
        check_month(bad)
    assert check_month("2024-06") == "2024-06"
