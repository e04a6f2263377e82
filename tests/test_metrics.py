from itertools import combinations
from math import isclose

import pytest

from skyeval.metrics import ks_for, pass_at_k, per_problem, summarize


def brute_force_pass_at_k(results: list[bool], k: int) -> float:
    subsets = list(combinations(results, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n,c", [(5, 0), (5, 1), (5, 3), (8, 8), (10, 2)])
def test_pass_at_k_matches_brute_force(n, c):
    results = [True] * c + [False] * (n - c)
    for k in range(1, n + 1):
        assert isclose(pass_at_k(n, c, k), brute_force_pass_at_k(results, k))


def test_pass_at_k_rejects_k_above_n():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_ks_for():
    assert ks_for(1) == [1]
    assert ks_for(6) == [1, 2, 4, 6]
    assert ks_for(8) == [1, 2, 4, 8]


def records(pid, scores, answers=None):
    answers = answers or [None] * len(scores)
    return [{"id": pid, "sample_idx": i, "score": s, "extracted": a} for i, (s, a) in enumerate(zip(scores, answers))]


def test_summarize_accuracy_pass_at_k_and_majority():
    rows = records("a", [1, 0, 0, 0], ["4", "5", "5", "6"]) + records("b", [1, 1, 1, 0], ["2", "2", "2", "3"])
    metrics = summarize(rows, n=4)
    assert metrics["accuracy"] == 0.5
    assert metrics["pass@k"]["1"] == pytest.approx((0.25 + 0.75) / 2)
    assert metrics["pass@k"]["4"] == 1.0
    assert metrics["majority_vote_accuracy"] == 0.5  # a: majority "5" is wrong, b: "2" right
    assert metrics["best_of_n_accuracy"] == 1.0
    assert metrics["mean_score_per_problem"] == 0.5


def test_summarize_parse_failure_rate_and_empty():
    rows = [{"id": "a", "sample_idx": 0, "score": 0.0, "parse_failed": True},
            {"id": "b", "sample_idx": 0, "score": 1.0, "parse_failed": False}]
    assert summarize(rows, n=1)["parse_failure_rate"] == 0.5
    assert summarize([], n=1)["accuracy"] is None


def test_per_problem_rows():
    [row] = per_problem(records("a", [1, 0, 1], ["1", "2", "1"]))
    assert row == {"id": "a", "samples": 3, "correct": 2, "mean_score": 2 / 3, "max_score": 1,
                   "majority_answer": "1", "majority_score": 1.0}
