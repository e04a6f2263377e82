"""The numeric rule of a math env (docs/grading.md, "Exact or approximate"): `exact` for
competition maths and word problems, `approximate` for rounded physical quantities; recorded in
summary.json (`scoring.numeric_rule`) with the samples right only by a tolerance
(`scoring.passed_by_tolerance`)."""

from __future__ import annotations

import pytest

from skyeval import SkyEnvBuilder
from skyeval.errors import ConfigError
from skyeval.scorers.math import equivalent, score_math
from tests.conftest import load_summary, run_cli, run_folder


def graded(generation: str, gold, **kwargs) -> dict:
    return score_math(generation, gold, timeout_s=60, **kwargs)


@pytest.mark.parametrize(
    ("answer", "gold"),
    [  # approximations of exact golds: never right under the exact rule
        ("2219.6", "2220"), ("49.6", "50"), ("9999.857142857143", "10000"), ("2220.0001", "2220"),
        ("0.333", r"\frac13"), ("0.3333333333", r"\frac13"), ("1.41421356", r"\sqrt2"), ("3.1416", r"\pi"),
        ("85.71", "600/7"), ("2.54", "2.5"), (r"1.4142 \pi", r"\sqrt2 \pi"), ("0.7071067811865476", r"\frac{\sqrt2}{2}"),
        ("6626.1", "6630"), ("2.78e-6", "2.7778e-6"),
    ],
)
def test_exact_rule_never_credits_an_approximation(answer, gold):
    result = graded(rf"\boxed{{{answer}}}", gold)
    assert result["score"] == 0.0 and result["verdict"] == "different", result


@pytest.mark.parametrize(
    ("answer", "gold"),
    [  # ... and takes every exact form of the value
        ("2220", "2220"), ("2220.00", "2220"), ("0.5", r"\frac12"), (r"\frac{2}{4}", "0.5"), ("2.50", "2.5"),
        ("2e-3", "0.002"), (r"2 \times 10^{-3}", "0.002"), (r"\sqrt{8}", r"2\sqrt2"), ("1,234", "1234"),
        (r"\frac{3}{2}x", "1.5x"),
    ],
)
def test_exact_rule_takes_exact_forms(answer, gold):
    result = graded(rf"\boxed{{{answer}}}", gold)
    assert result["score"] == 1.0 and not result["passed_by_tolerance"], result


@pytest.mark.parametrize(
    ("answer", "gold", "right"),
    [
        ("49.6", "50", True), ("6626.1", "6630", True), ("20.385", "20.39", True), ("2.78e-6", "2.7778e-6", True),
        ("2219.6", "2220", True), ("52", "50", False), ("0.333", r"\frac13", False), ("1.414", r"\sqrt2", False),
        ("85.71", "600/7", False),
    ],
)
def test_approximate_rule_takes_rounded_quantities_and_says_so(answer, gold, right):
    result = graded(rf"\boxed{{{answer}}}", gold, numeric_rule="approximate")
    assert result["score"] == float(right), result
    assert result["passed_by_tolerance"] == right  # every pass here needed the tolerance


def test_a_question_stating_a_precision_is_graded_at_it_under_either_rule():
    question = "How long is it, in meters? Give your answer to the nearest tenth."
    for rule in ("exact", "approximate"):
        result = graded(r"\boxed{2.46}", "2.5", question=question, numeric_rule=rule)
        assert result["score"] == 1.0 and result["passed_by_tolerance"], (rule, result)
        assert graded(r"\boxed{2.3}", "2.5", question=question, numeric_rule=rule)["score"] == 0.0
    assert graded(r"\boxed{2.46}", "2.5")["score"] == 0.0  # no precision stated: exact
    # "nearest integer" in the problem's own text is no instruction
    assert graded(r"\boxed{1.6}", r"\frac32", question="Let <n> be the nearest integer to n.")["score"] == 0.0


def test_equivalent_follows_the_rule():
    assert not equivalent("49.6", "50", timeout_s=60)
    assert equivalent("49.6", "50", timeout_s=60, numeric_rule="approximate")


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="numeric rule"):
        score_math(r"\boxed{1}", "1", numeric_rule="close")
    with pytest.raises(ConfigError, match="env.numeric_rule.*Did you mean 'approximate'"):
        SkyEnvBuilder.build("math500", {"numeric_rule": "aproximate"})


@pytest.mark.parametrize(
    ("name", "knobs", "rule"),
    [
        ("math500", {}, "exact"), ("aime24", {}, "exact"), ("amc23", {}, "exact"), ("gsm8k", {}, "exact"),
        ("liveaops", {}, "exact"), ("omni_math", {}, "exact"), ("numina", {}, "exact"),
        ("olympiadbench_math_en", {}, "exact"), ("olympiadbench", {"subset": "physics_en"}, "approximate"),
        ("minervamath", {}, "approximate"), ("math500", {"numeric_rule": "approximate"}, "approximate"),
        ("minervamath", {"numeric_rule": "exact"}, "exact"),
    ],
)
def test_each_env_has_its_rule(name, knobs, rule):
    env = SkyEnvBuilder.build(name, knobs)
    assert env.numeric_rule == rule and env.describe_scoring() == {"numeric_rule": rule}
    item = {"generation": r"\boxed{49.6}", "expected": "50", "question": "How many?"}
    assert env.score_item(item)["score"] == (1.0 if rule == "approximate" else 0.0)


def test_majority_vote_uses_the_env_rule():
    exact, approximate = SkyEnvBuilder.build("math500").vote, SkyEnvBuilder.build("minervamath").vote
    assert not exact.equivalent("49.6", "50") and approximate.equivalent("49.6", "50")


def test_summary_records_the_rule_and_counts_tolerance_passes(tmp_path, data_dir):
    """A run of Minerva (approximate) with the reference backend: golds are right exactly, so
    nothing passes by tolerance; a math500 run says `exact`."""
    run_cli("evaluate", "+env=minervamath", "model_config=reference", "env.limit=12", cwd=tmp_path)
    summary = load_summary(run_folder(tmp_path / "outputs", "minervamath_reference_t0.0"))
    scoring = summary["scoring"]
    assert (scoring["numeric_rule"], scoring["passed_by_tolerance"]) == ("approximate", 0)
    assert scoring["verdicts"]["different"] == scoring["verdicts"]["undecided"] == 0
    assert summary["metrics"]["accuracy"] == 1.0
    run_cli("evaluate", "+env=math500", "model_config=reference", "env.limit=4", "env.numeric_rule=exact", cwd=tmp_path)
    scoring = load_summary(run_folder(tmp_path / "outputs", "math500_reference_t0.0"))["scoring"]
    assert (scoring["numeric_rule"], scoring["passed_by_tolerance"]) == ("exact", 0)


def test_passed_by_tolerance_is_counted_in_the_summary():
    from skyeval.metrics import MetricsAccumulator

    acc = MetricsAccumulator(n=1)
    acc.add_score({"id": "a", "sample_idx": 0, "score": 1.0, "extracted": "49.6", "passed_by_tolerance": True})
    acc.add_score({"id": "b", "sample_idx": 0, "score": 1.0, "extracted": "50", "passed_by_tolerance": False})
    assert acc.grading_summary() == {"passed_by_tolerance": 1}
    assert MetricsAccumulator(n=1).grading_summary() == {}  # a scorer that says nothing: nothing recorded
