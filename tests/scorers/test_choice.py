"""The multiple-choice grader: which letter a generation chose."""

from __future__ import annotations

import time

import pytest

from skyeval.scorers.choice import LETTERS, extract_choice, score_choice


@pytest.mark.parametrize(
    ("generation", "letter"),
    [
        (r"Hence \boxed{C}", "C"),
        (r"Hence $\boxed{\text{C}}$.", "C"),
        (r"So the answer is: $\boxed{\textbf{(B)}}$", "B"),
        ("Therefore, the answer is (C).", "C"),
        ("The answer is C because the others fail.", "C"),
        ("Answer: C", "C"),
        ("ANSWER: D", "D"),
        ("**Answer:** C", "C"),
        ("**Final Answer**: (B)", "B"),
        ("Answer: **D**", "D"),
        ("The correct option is D.", "D"),
        ("The answer is option B.", "B"),
        ("After checking each one, (C) is correct.", "C"),
        ("Option B is the best.", "B"),
        ("Let me reason about it.\n\nC", "C"),
        ("Let me reason about it.\n**(B).**\n", "B"),
        ("The answer is A because it is the only even one.", "A"),
    ],
)
def test_reads_the_chosen_letter(generation: str, letter: str):
    assert extract_choice(generation) == letter


def test_prefers_the_last_explicit_answer():
    text = "At first the answer is (B). Wait, I made an error. The answer is (D)."
    assert extract_choice(text) == "D"
    assert extract_choice(r"Option (A) looks tempting, but \boxed{C}.") == "C"


def test_article_a_after_the_answer_is_not_option_a():
    assert extract_choice(r"... \boxed{C}. This is a nice question. A good check is symmetry.") == "C"
    assert extract_choice("A good approach is to eliminate the wrong options first.") is None
    assert extract_choice("The answer is a matter of taste.") is None
    assert extract_choice("the answer is A good one to remember") is None


def test_pronoun_i_is_not_option_i():
    assert extract_choice("Answer: I think it is tricky.", num_options=10) is None
    assert extract_choice("Answer: I think it is tricky. The answer is (H).", num_options=10) == "H"
    assert extract_choice("The answer is (I).", num_options=10) == "I"


def test_letters_beyond_num_options_are_rejected():
    assert extract_choice("The answer is (E).", num_options=4) is None
    assert extract_choice("The answer is (E).", num_options=5) == "E"
    assert extract_choice("The answer is (B). Hmm, or maybe (F)? The answer is (F).", num_options=4) == "B"


def test_ten_options():
    assert LETTERS == "ABCDEFGHIJ"
    assert extract_choice(r"\boxed{J}", num_options=10) == "J"
    assert extract_choice(r"\boxed{J}", num_options=9) is None
    with pytest.raises(ValueError):
        extract_choice("The answer is (A).", num_options=11)


def test_no_answer_statement_in_prose_is_none():
    text = "We compare options B and C. Option A fails for n = 2, and D is too large, so we continue"
    assert extract_choice(text) is None


def test_score_choice():
    assert score_choice(r"\boxed{B}", "B") == {"score": 1.0, "extracted": "B", "parse_failed": False, "timed_out": False,
                                                "reasoning_state": "none"}
    assert score_choice(r"\boxed{B}", "C")["score"] == 0.0
    assert score_choice("no idea", "C")["parse_failed"] is True
    assert score_choice("The answer is (G).", "G", num_options=10)["score"] == 1.0


@pytest.mark.parametrize(
    "generation",
    ["answer: (" * 6_000, "\\boxed{" * 7_000, "A " * 25_000, "(A) is " * 7_000 + "x", "**" * 25_000],
    ids=["answer-parens", "open-boxed", "letters", "statements", "stars"],
)
def test_degenerate_50k_generation_returns_quickly(generation: str):
    start = time.monotonic()
    extract_choice(generation, num_options=10)
    assert time.monotonic() - start < 10.0  # catastrophic backtracking takes minutes; a loaded box, not 10 s


@pytest.mark.parametrize(("generation", "reasoning", "letter", "state"), [
    ("<think>Maybe \\boxed{A}? No.</think>The answer is \\boxed{C}.", None, "C", "closed"),
    ("<|begin_of_thought|>The answer is (A)... or is it", None, None, "unclosed"),  # cut off: no letter
    ("<|begin_of_thought|>(A) is tempting<|end_of_thought|><|begin_of_solution|>Answer: D<|end_of_solution|>", None, "D", "closed"),
    ("The answer is B.", "I think the answer is (A), checking...", "B", "closed"),  # server reasoning field
])
def test_choice_reads_only_the_answer_part(generation, reasoning, letter, state):
    result = score_choice(generation, "C", reasoning=reasoning)
    assert (result["extracted"], result["reasoning_state"]) == (letter, state)
