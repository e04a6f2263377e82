"""Issue 24: every class of grading error found on real model outputs, with examples written
for this project (not copies of real rows), in both directions: a false positive must stay
wrong and a false negative must become right, and the near-miss of each stays wrong."""

from __future__ import annotations

import pytest

from skyeval.scorers.math import EMPTY_BOX, REPETITION, TRUNCATED, UNCLOSED_REASONING, score_math

LOOP = "Wait, let me recompute: 6 * 7 = 42, and 42 - 2 = 40. "

# (class, generation, gold, right)
CASES = [
    # --- cut-off reasoning is never credited from an intermediate expression ---
    ("sky_t1_unclosed", "<|begin_of_thought|>\n\nWe need 6*7 = 42, so the total is $42$. Hmm, but", "42", False),
    ("sky_t1_closed", "<|begin_of_thought|>\n\nMaybe 40.\n\n<|end_of_thought|>\n\n<|begin_of_solution|>\n\n"
     "The total is $\\boxed{42}$.\n\n<|end_of_solution|>", "42", True),
    ("sky_t1_closed", "<|begin_of_thought|>\n\nIt is $42$.\n\n<|end_of_thought|>\n\n<|begin_of_solution|>\n\n"
     "The total is $\\boxed{40}$.\n\n<|end_of_solution|>", "42", False),
    ("think_unclosed", "<think>\nSo $x = 7$, then let me double check", "7", False),
    ("repetition_loop", "We compute step by step. " + LOOP * 12, "40", False),
    ("repetition_loop", "The final answer is $\\boxed{40}$.\n\n" + LOOP * 12, "40", True),
    ("boxed_spam", "So the answer is $\\boxed{12}$.\n" + "\\boxed{1}\n" * 30, "12", True),
    ("boxed_spam", "So the answer is $\\boxed{12}$.\n" + "\\boxed{1}\n" * 30, "1", False),
    ("empty_box", "Problem: Find the sum of 3 and 4. Put your final answer within \\boxed{}.", "4", False),
    ("empty_box", "Problem: Find the sum of 3 and 4. Put your final answer within \\boxed{}.\n3 + 4 = 7, "
     "so the sum is $\\boxed{7}$.", "7", True),
    # --- tolerance scaled to the gold's stated precision ---
    ("tolerance", "\\boxed{0.0000315}", "0.0000312", False),
    ("tolerance", "\\boxed{3.15 \\times 10^{-5}}", "0.0000312", False),
    ("tolerance", "\\boxed{3.12 \\times 10^{-5}}", "0.0000312", True),
    ("tolerance", "\\boxed{\\frac{1}{3}}", "0.33", True),  # a gold that is a rounded value
    ("tolerance", "\\boxed{0.34}", "0.33", False),
    ("tolerance", "\\boxed{0.54}", "0.5", False),  # 1 significant digit: judged at 2
    ("tolerance", "\\boxed{\\sqrt{2}}", "1.414", True),
    ("tolerance", "\\boxed{\\sqrt{3}}", "1.414", False),
    ("tolerance", "\\boxed{7.0001}", "7", False),  # an integer gold is exact
    # --- string surgery that merged two answers ---
    ("leading_dot", "\\boxed{35625}", ".35625", False),
    ("leading_dot", "\\boxed{0.35625}", ".35625", True),
    ("decimal_comma", "The two roots are \\boxed{1,5}", "1.5", False),
    ("decimal_comma", "\\boxed{2,75}", "2.75", True),
    ("space_thousands", "\\boxed{100 200}", "100200", False),
    ("space_thousands", "\\boxed{10 000}", "10000", True),
    ("option_labels", "\\boxed{(A) 18}", "\\textbf{(C) } 18", False),
    ("option_labels", "\\boxed{\\textbf{(C) } 18}", "\\textbf{(C) } 18", True),
    # --- the final committed answer wins ---
    ("final_wins", "First guess: the answer is 12. Checking again, 3*5 = 15.\n\n**Final answer:** 15", "15", True),
    ("final_wins", "First guess: the answer is 12. Checking again, 3*5 = 15.\n\n**Final answer:** 15", "12", False),
    ("final_wins", "The answer is \\boxed{12}.\n\nWait, that misses a case. The answer is 13.", "13", True),
    ("heading_not_answer", "#### Step 1: Count the pairs\nThere are 6 pairs.\n#### Step 2: Double\n"
     "So the answer is 12.", "12", True),
    ("heading_not_answer", "#### Step 1: Count the pairs\nThere are 6 pairs.\n#### Step 2: Double\n"
     "So the answer is 12.", "1", False),
    # --- prose answers picked wrongly ---
    ("prose", "So the answer is 9. Checking: 4 + 5 = 9, my answer is consistent with the data.", "9", True),
    ("prose", "So the answer is 9. Checking: 4 + 5 = 9, my answer is consistent with the data.", "4", False),
    ("prose", "Adding them, the answer is indeed 9.", "9", True),
    ("prose", "She keeps the rest, so the answer is five apples.", "5", True),
    ("prose", "She keeps the rest, so the answer is four apples.", "5", False),
    ("prose", "Final Answer: The largest $n$ is 34.", "34", True),
    ("prose", "Final Answer: The largest $n$ is 34.", "35", False),
    ("prose", "So the answer is that the sum of the roots is $-7$.", "-7", True),
    ("prose", "Answer: The number of ways is 120.", "120", True),
    # --- junk after the answer: an invented next problem ---
    ("invented_problem", "Therefore the answer is $\\boxed{6}$.\n\nProblem 2: What is 3 + 5?\nSolution: "
     "$\\boxed{8}$", "6", True),
    ("invented_problem", "Therefore the answer is $\\boxed{6}$.\n\nProblem 2: What is 3 + 5?\nSolution: "
     "$\\boxed{8}$", "8", False),
    # --- units, \text{} and side conditions around a single value ---
    ("units", "The oven must be at \\boxed{350°F}.", "350", True),
    ("units", "The oven must be at \\boxed{350^\\circ \\text{F}}.", "350", True),
    ("units", "The oven must be at \\boxed{360°F}.", "350", False),
    ("units", "\\boxed{\\text{MR} = \\text{MC}}", "MR=MC", True),
    ("units", "\\boxed{\\text{MR} = \\text{AC}}", "MR=MC", False),
    ("side_condition", "\\boxed{x = 4, \\text{ where } x > 0}", "4", True),
    ("side_condition", "\\boxed{x = 3, \\text{ where } x > 0}", "4", False),
    # --- equivalent forms ---
    ("forms", "\\boxed{\\cosh(t)}", "\\frac{e^{t}+e^{-t}}{2}", True),
    ("forms", "\\boxed{\\sinh(t)}", "\\frac{e^{t}+e^{-t}}{2}", False),
    ("forms", "The pair is \\boxed{(2, 7)}", "2,7", True),
    ("forms", "The pair is \\boxed{(7, 3)}", "2,7", False),
    ("forms", "\\boxed{⅓a + ¾b}", "\\frac{a}{3}+\\frac{3b}{4}", True),
    ("forms", "\\boxed{⅓a + ¼b}", "\\frac{a}{3}+\\frac{3b}{4}", False),
    ("e_notation", "\\boxed{0.004}", "4e-3", True),
    ("e_notation", "\\boxed{4e-3}", "0.004", True),
    ("e_notation", "\\boxed{4 \\times 10^{-3}}", "0.004", True),
    ("e_notation", "\\boxed{0.04}", "4e-3", False),
]


@pytest.mark.parametrize(("cls", "generation", "gold", "right"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grader_gives_the_human_verdict(cls, generation, gold, right):
    rule = "approximate" if cls == "tolerance" else "exact"  # tolerance: the approximate rule's (rounded quantities)
    result = score_math(generation, gold, timeout_s=10.0, numeric_rule=rule)
    assert result["score"] == (1.0 if right else 0.0), result


@pytest.mark.parametrize(("generation", "error"), [
    ("<|begin_of_thought|>\nSo it is $42$", UNCLOSED_REASONING),
    ("We compute step by step. " + LOOP * 12, REPETITION),
    ("Find 3 + 4. Put your final answer within \\boxed{}.", EMPTY_BOX),
])
def test_no_answer_says_why(generation, error):
    result = score_math(generation, "42")
    assert (result["parse_failed"], result["parse_error"], result["extracted"]) == (True, error, None)


def test_cut_off_output_without_a_closed_thought_is_a_parse_failure_unless_opted_in():
    cut = "Each box holds 6, and there are 7 boxes, so 6 * 7 = 42 and then we sub"
    assert score_math(cut, "42", finish_reason="length")["parse_error"] == TRUNCATED
    assert score_math(cut, "42", finish_reason="length", grade_truncated=True)["score"] == 1.0
    assert score_math(cut, "42", finish_reason="stop")["score"] == 1.0
    # a closed thought, then an answer cut off after its box: graded
    closed = "<think>6*7</think>The answer is $\\boxed{42}$ because each of the"
    assert score_math(closed, "42", finish_reason="length")["score"] == 1.0
    # the reasoning came in its own field (a server's reasoning_content)
    assert score_math("So $\\boxed{42}$ and", "42", reasoning="6*7", finish_reason="length")["score"] == 1.0
    assert score_math("", "42", reasoning="6*7=42 so", finish_reason="length")["parse_error"] == UNCLOSED_REASONING


def test_hash_marks_are_read_only_when_asked():
    assert score_math("#### 72", "72", hash_answer=True)["score"] == 1.0
    text = "#### 2\nThe two friends share the cost, so each pays $\\frac{12}{2} = 6$ dollars.\n"
    assert score_math(text, "2")["score"] == 0.0
    assert score_math(text, "6")["score"] == 1.0
    assert score_math("#### 72\nThe answer is 72.", "72", hash_answer=True)["score"] == 1.0
