"""The three-way verdict of `score_math` (the contract a model judge relies on) and the
source of the extracted answer (what `audit` counts)."""

from __future__ import annotations

import pytest

from skyeval.scorers.math import DIFFERENT, EQUAL, UNDECIDED, score_math

PATHOLOGICAL = r"The answer is \boxed{9^{9^{9^{9}}}}."


@pytest.mark.parametrize(
    ("generation", "gold", "verdict"),
    [
        (r"So \boxed{\frac{1}{2}}.", "0.5", EQUAL),  # by value
        (r"\boxed{3\sqrt{13}}", r"\sqrt{117}", EQUAL),  # symbolic
        (r"\boxed{7}", "8", DIFFERENT),  # two numbers
        (r"\boxed{y}", "x+1", DIFFERENT),  # both parsed, not equal
        (r"\boxed{odd}", "even", DIFFERENT),  # two words
        ("", "3", UNDECIDED),  # no answer
        ("I am not sure.", "3", UNDECIDED),
        (r"\boxed{}", "3", UNDECIDED),  # an empty box is no answer
        (r"\boxed{@@@}", "x^2+1", UNDECIDED),  # math-verify cannot parse the answer
        (r"\boxed{3}", "np.arcsin(10/13)", UNDECIDED),  # ... nor a malformed gold
    ],
)
def test_verdict(generation, gold, verdict):
    result = score_math(generation, gold)
    assert result["verdict"] == verdict
    assert result["score"] == (1.0 if verdict == EQUAL else 0.0)


def test_a_time_out_is_undecided():
    result = score_math(PATHOLOGICAL, "5", timeout_s=0.5)
    assert result["timed_out"] and result["verdict"] == UNDECIDED and result["score"] == 0.0


def test_unclosed_reasoning_is_undecided():
    result = score_math("<think>so the answer is \\boxed{3}", "3")
    assert result["parse_failed"] and result["verdict"] == UNDECIDED and result["answer_source"] is None


@pytest.mark.parametrize(
    ("generation", "source"),
    [
        (r"Hence \boxed{12}.", "box"),
        ("The answer is 12.", "statement"),
        ("The answer is 12. Check: \\boxed{12}", "box"),  # the last one by position
        (r"\boxed{11} wait, the final answer is 12.", "statement"),
        ("#### 12", "statement"),
        ("Adding them up we get $12$", "fallback"),
    ],
)
def test_source(generation, source):
    result = score_math(generation, "12", hash_answer=generation.startswith("####"))
    assert result["answer_source"] == source and result["verdict"] == EQUAL
