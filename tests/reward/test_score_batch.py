"""Env.score_batch / Env.scorer_pool: score_item in parallel on a pool reused across calls."""

from __future__ import annotations

import pickle
import time

import pytest

from skyeval.envs.base import Env
from skyeval.envs.registry import SkyEnvBuilder


class SlowEnv(Env):
    """An env whose grader hangs on "hang" (a grader stuck on hostile input)."""

    name = "slow"

    def scoring_functions(self):
        return {"slow": self.grade}

    @staticmethod
    def grade(item):
        if item["generation"] == "hang":
            time.sleep(600)
        return float(item["generation"] == item["expected"])


@pytest.fixture(scope="module")
def math500():
    env = SkyEnvBuilder.build("math500")
    yield env
    env.close()


def test_score_batch_grades_each_item_as_score_item_does(math500):
    items = [{"generation": "so \\boxed{\\frac{1}{2}}", "expected": "0.5"},
             {"generation": "so \\boxed{3}", "expected": "0.5"},
             {"generation": "", "expected": "2"}] * 5
    results = math500.score_batch(items)
    assert [r["score"] for r in results] == [1.0, 0.0, 0.0] * 5
    assert all(r["score_error"] is None for r in results)
    assert results[0]["extracted"] == math500.score_item(items[0])["extracted"]


def test_the_pool_is_made_once_and_reused(math500):
    pool = math500.scorer_pool()
    math500.score_batch([{"generation": "\\boxed{1}", "expected": "1"}])
    assert math500.scorer_pool() is pool and not pool.closed
    assert pickle.loads(pickle.dumps(math500)).__dict__["_scorer_pool"] is None  # never shipped along


def test_a_hanging_item_scores_zero_with_the_reason_and_the_rest_are_graded():
    env = SlowEnv()
    try:
        results = env.score_batch([{"generation": "a", "expected": "a"}, {"generation": "hang", "expected": "a"},
                                   {"generation": "b", "expected": "a"}], item_timeout_s=5)
        assert [r["score"] for r in results] == [1.0, 0.0, 0.0]
        assert results[1]["score_error"].startswith("timeout")
        assert results[0]["score_error"] is None and results[2]["score_error"] is None
    finally:
        env.close()
    assert env.__dict__["_scorer_pool"] is None


def test_items_the_caller_got_wrong_are_refused_before_any_work(math500):
    with pytest.raises(ValueError, match="item 1 lacks \\['expected'\\]"):
        math500.score_batch([{"generation": "x", "expected": "1"}, {"generation": "x"}])
    with pytest.raises(ValueError, match="NoneType generation"):
        math500.score_batch([{"generation": None, "expected": "1"}])
