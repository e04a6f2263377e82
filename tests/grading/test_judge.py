"""The judge client (`judge_pairs`, `Judge`, `JudgeCache`) against a scripted judge on
127.0.0.1, and the verdict readers."""

from __future__ import annotations

import json

import pytest

from skyeval.backends.openai import HTTPConfig
from skyeval.grading import GradingConfig, JudgeCache, judge_pairs, parse_verdict, rule_verdict
from skyeval.grading.judge import UNPARSEABLE

from .conftest import candidate, judge_prompts


def config(judge, **fields) -> GradingConfig:
    http = HTTPConfig("judge", judge.url, max_retries=0, backoff_base_s=0.01, timeout_s=10.0)
    return GradingConfig(mode="fallback", judge=http, **fields)


def test_identical_triples_are_asked_once_and_answers_come_back_in_order(judge):
    judge.configure(answer_table={"<candidate>\nx\n": "Verdict: different"})
    items = [("P", "2", "1+1"), ("P", "2", "x"), ("P", "2", "1+1")]
    out = judge_pairs(items, config(judge))
    assert [j.verdict for j in out] == ["equivalent", "different", "equivalent"]
    assert sorted(candidate(p) for p in judge_prompts(judge)) == ["1+1", "x"]
    assert judge.log[0]["params"]["temperature"] == 0.0 and judge.log[0]["seed"] == 1234


def test_a_cache_folder_means_never_asking_twice(judge, tmp_path):
    items = [("P", ["2", "two"], "1+1"), ("Q", "3", "3.0")]
    first = judge_pairs(items, config(judge), cache_dir=tmp_path)
    again = judge_pairs(items, config(judge), cache_dir=tmp_path)
    assert len(judge.log) == 2 and not any(j.cached for j in first) and all(j.cached for j in again)
    assert [j.verdict for j in again] == [j.verdict for j in first] == ["equivalent", "equivalent"]
    assert sum("any one of: 2; two" in p for p in judge_prompts(judge)) == 1  # requests arrive in any order
    # another judge model or template is another question
    judge_pairs(items[:1], GradingConfig(mode="always", judge=HTTPConfig("other", judge.url), prompt="{answer}?"),
                cache_dir=tmp_path)
    assert len(judge.log) == 3


def test_a_torn_cache_line_is_asked_again_and_appends_stay_readable(judge, tmp_path):
    judge_pairs([("P", "2", "a")], config(judge), cache_dir=tmp_path)
    path = next(tmp_path.glob("cache*.jsonl"))
    path.write_text(path.read_text() + '{"key": "torn', encoding="utf-8")  # a crash mid-write
    judge_pairs([("P", "2", "b")], config(judge), cache_dir=tmp_path)
    assert len(JudgeCache(tmp_path).entries) == 2 and len(judge.log) == 2
    for line in path.read_text().splitlines()[:1] + path.read_text().splitlines()[2:]:
        json.loads(line)


def test_unparseable_replies_are_parse_failures_and_failed_requests_are_not_cached(judge, tmp_path):
    judge.configure(answer_template="Verdict: maybe")
    [reply] = judge_pairs([("P", "2", "a")], config(judge), cache_dir=tmp_path)
    assert reply.verdict is None and reply.error == UNPARSEABLE and reply.parse_failed and reply.reply == "Verdict: maybe"
    judge.configure(fail_fraction=1.0)
    [failed] = judge_pairs([("P", "2", "b")], config(judge), cache_dir=tmp_path)
    assert failed.verdict is None and not failed.parse_failed and "InternalServerError" in failed.error
    judge.heal()
    judge.configure(answer_template="Verdict: different")
    [healed] = judge_pairs([("P", "2", "b")], config(judge), cache_dir=tmp_path)
    assert healed.verdict == "different" and not healed.cached


@pytest.mark.parametrize("reply, verdict", [
    ("Same value.\nVerdict: equivalent", "equivalent"),
    ("**Verdict: Different**", "different"),
    ("Verdict: equivalent.\n\n", "equivalent"),
    ("Verdict: equivalent\nActually no.", None),           # the verdict must be the last line
    ("The answers are equivalent.", None),
    ("Verdict: equivalent or different", None),
    ("", None),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) == verdict


@pytest.mark.parametrize("result, verdict", [
    ({"score": 1.0, "parse_failed": False, "verdict": "equal"}, "equal"),  # the math grader's own three-way verdict
    ({"score": 0.0, "parse_failed": False, "verdict": "undecided"}, "undecided"),
    ({"score": 0.0, "parse_failed": False, "verdict": "different"}, "different"),
    ({"score": 1.0, "parse_failed": False}, "equal"),                    # derived (graders without one)
    ({"score": 0.0, "parse_failed": False}, "different"),
    ({"score": 0.0, "parse_failed": True, "extracted": None}, "undecided"),
    ({"score": 0.0, "parse_failed": False, "timed_out": True}, "undecided"),
])
def test_rule_verdict(result, verdict):
    assert rule_verdict(result) == verdict
