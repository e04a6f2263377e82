"""Math envs hand the grader each sample's reasoning and finish reason, and their own
answer conventions (#### for GSM8K only, OlympiadBench's box, NuminaMath's option letters)."""

from __future__ import annotations

from pathlib import Path

from skyeval import SkyEnvBuilder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_hash_marks_are_gsm8k_only(data_dir):
    steps = "#### Step 1: boxes\nThere are 3 boxes of 4.\n#### Step 2: total\nSo the answer is 12."
    math500 = SkyEnvBuilder.build("math500", {"limit": 1})
    assert math500.score_item({"generation": steps, "expected": "12"})["score"] == 1.0
    assert math500.score_item({"generation": steps, "expected": "1"})["score"] == 0.0
    gsm8k = SkyEnvBuilder.build("gsm8k", {"limit": 1})
    assert gsm8k.score_item({"generation": "3 boxes of 4 is 12.\n#### 12", "expected": "12"})["score"] == 1.0
    assert gsm8k.score_item({"generation": "3 boxes of 4 is 12.\n#### 12", "expected": "4"})["score"] == 0.0


def test_truncated_samples_need_the_env_to_opt_in(data_dir):
    cut = {"generation": "Three boxes of four make 12 and then the", "expected": "12", "finish_reason": "length"}
    strict = SkyEnvBuilder.build("math500", {"limit": 1}).score_item(cut)
    assert strict["parse_failed"] and strict["score"] == 0.0 and "finish_reason length" in strict["parse_error"]
    lenient = SkyEnvBuilder.build("math500", {"limit": 1, "grade_truncated": True}).score_item(cut)
    assert lenient["score"] == 1.0


def test_sky_t1_thoughts_are_not_answers(data_dir):
    env = SkyEnvBuilder.build("aime24", {"limit": 1})
    unclosed = env.score_item({"generation": "<|begin_of_thought|>\n\nSo $n = 33$. But wait", "expected": "33"})
    assert unclosed["score"] == 0.0 and unclosed["reasoning_state"] == "unclosed"
    closed = env.score_item({"generation": "<|begin_of_thought|>n = 30?<|end_of_thought|>"
                             "<|begin_of_solution|>Thus $n = \\boxed{33}$.<|end_of_solution|>", "expected": "33"})
    assert closed["score"] == 1.0 and closed["reasoning_state"] == "closed"
    # the backend already split it: the reasoning arrives in its own field
    split = env.score_item({"generation": "", "reasoning": "So $n = 33$. But", "expected": "33", "finish_reason": "length"})
    assert split["score"] == 0.0 and split["reasoning_state"] == "unclosed"


def test_olympiadbench_format_needs_a_box_in_the_answer_not_the_thoughts(data_dir):
    env = SkyEnvBuilder.build("olympiadbench_math_en", {"limit": 1})
    boxed_thought = env.score_item({"generation": "<think>Try \\boxed{5}.</think>The answer is 5.", "expected": ["5"]})
    assert boxed_thought["format_ok"] is False and boxed_thought["score"] == 0.0
    boxed_answer = env.score_item({"generation": "<think>Try 4.</think>The answer is $\\boxed{5}$.", "expected": ["5"]})
    assert boxed_answer["format_ok"] is True and boxed_answer["score"] == 1.0


def test_numina_option_letter_is_case_sensitive():
    env = SkyEnvBuilder.build("numina", {"data_dir": str(FIXTURES), "local_files": "numina.jsonl"})
    expected = ["\\textbf{(B)}\\ 100", "100", "B"]
    assert env.score_item({"generation": "\\boxed{B}", "expected": expected})["score"] == 1.0
    assert env.score_item({"generation": "\\boxed{100}", "expected": expected})["score"] == 1.0
    assert env.score_item({"generation": "so the variable is $\\boxed{b}$", "expected": expected})["score"] == 0.0
    assert env.score_item({"generation": "\\boxed{\\textbf{(C)}\\ 100}", "expected": expected})["score"] == 0.0
