"""Metrics that use the grader's view of a sample (issue 24): the majority vote over equivalence
classes, not raw strings, and truncation accounting by reasoning state."""

from __future__ import annotations

from skyeval import SkyEnvBuilder
from skyeval.metrics import AnswerVote, MetricsAccumulator, majority_answer, summarize
from skyeval.scorers.math import answer_key, equivalent

MATH_VOTE = AnswerVote(key=answer_key, equivalent=equivalent)


def _records(answers: list[str | None], gold: str) -> list[dict]:
    from skyeval.scorers.math import score_math

    records = []
    for i, answer in enumerate(answers):
        generation = f"\\boxed{{{answer}}}" if answer is not None else "I give up."
        result = score_math(generation, gold)
        records.append({"id": "p", "sample_idx": i, **result})
    return records


def test_equivalent_forms_vote_together():
    records = _records(["0.5", r"\frac{1}{2}", "1/2", "3", "3"], r"\frac{1}{2}")
    assert [r["score"] for r in records] == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert summarize(records, 5, vote=MATH_VOTE)["majority_vote_accuracy"] == 1.0
    assert summarize(records, 5, metrics=[{"type": "maj", "k": 5}], vote=MATH_VOTE)["maj@k"]["5"] == 1.0
    assert summarize(records, 5)["majority_vote_accuracy"] == 0.0  # raw strings: "3" wins 2 to 1
    assert majority_answer(records, MATH_VOTE)["extracted"] == "0.5"  # the winning class's first answer


def test_different_values_never_merge():
    """The false-positive direction: close strings of different values stay apart."""
    records = _records([".35625", "35625", "35625", r"(A) 18", "(C) 18"], "35625")
    vote = majority_answer(records, MATH_VOTE)
    assert vote["extracted"] == "35625" and vote["score"] == 1.0
    records = _records(["1,5", "1.5", "15", "15"], "15")
    assert majority_answer(records, MATH_VOTE)["extracted"] == "15"  # the list 1,5 is not 1.5 nor 15


def test_ties_go_to_the_class_seen_first():
    records = _records(["7", r"\frac{14}{2}", "9", "9.0", None], "9")
    winner = majority_answer(records, MATH_VOTE)
    assert winner["extracted"] == "7" and winner["score"] == 0.0
    assert majority_answer(_records(["9", "7", "7.0", r"\frac{18}{2}"], "9"), MATH_VOTE)["extracted"] == "9"


def test_the_number_of_equivalence_checks_is_bounded():
    calls = []

    def counting(a: str, b: str) -> bool:
        calls.append((a, b))
        return equivalent(a, b)

    vote = AnswerVote(key=answer_key, equivalent=counting, max_classes=4)
    records = _records([str(i) for i in range(30)], "3")
    majority_answer(records, vote)
    assert 0 < len(calls) <= 4 * 3 // 2


def test_a_math_env_votes_by_equivalence_in_its_run_metrics():
    env = SkyEnvBuilder.build("math500", {"limit": 1})
    acc = MetricsAccumulator(5, vote=env.vote)
    for record in _records(["0.5", r"\frac{1}{2}", "1/2", "3", "3"], "0.5"):
        acc.add_score(record)
    row = next(acc.drain_problems(final=True))
    assert (row["majority_answer"], row["majority_score"]) == ("0.5", 1.0)
    assert acc.summary()["majority_vote_accuracy"] == 1.0


def test_an_unclosed_thought_counts_as_truncated():
    """Truncation accounting uses the reasoning state too: a Sky-T1 thought that never
    closed is truncated even when the server said "stop"."""
    from skyeval.scorers.math import score_math

    records = [
        {"id": "p", "sample_idx": 0, "finish_reason": "stop",
         **score_math("<|begin_of_thought|>so 5 and", "5", finish_reason="stop")},
        {"id": "q", "sample_idx": 0, "finish_reason": "stop", **score_math("\\boxed{5}", "5", finish_reason="stop")},
    ]
    assert summarize(records, 1)["truncated_rate"] == 0.5
