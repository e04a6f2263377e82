"""The math grader: extraction, known failures of other graders, hard time limits, gold self-check."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skyeval.scorers.math import extract_math_answer, score_math
from skyeval.scorers.time_limit import TimeLimitExceeded, call_with_time_limit

# Unbounded, math-verify's comparison of this with 5 runs for minutes (checked: > 60 s).
PATHOLOGICAL = r"The answer is \boxed{9^{9^{9^{9}}}}."
# Time limits here are 0.5-2 s; a call still running after 10x that (and a worker respawn)
# is hung. Load can make a cut-off call slow (8 s was seen), never correct or not: the
# timed_out flags are the checks, and scripts/bench_scoring.py measures speed.
HANG_S = 60.0


def _scored(generation: str, expected, **kwargs) -> float:
    return score_math(generation, expected, **kwargs)["score"]


# --- known failures of other graders -------------------------------------------------------


def test_500_is_not_5():
    """SkyThought's percentage heuristic accepts 500 for 5 (and 5 for 500)."""
    assert _scored(r"\boxed{500}", "5") == 0.0
    assert _scored(r"\boxed{5}", "500") == 0.0
    assert _scored(r"\boxed{5}", "5") == 1.0


def test_empty_prediction_does_not_match_empty_reference():
    assert score_math("", "") == {
        "score": 0.0, "extracted": None, "parse_failed": True, "parse_error": "no answer found", "timed_out": False,
        "reasoning_state": "none", "verdict": "undecided", "answer_source": None, "passed_by_tolerance": False,
    }
    assert _scored(r"\boxed{}", "") == 0.0
    assert _scored(r"\boxed{3}", "") == 0.0


def test_display_math_boxed_is_extracted():
    generation = "So the total is\n\\[\\boxed{42}\\]\nas required."
    assert extract_math_answer(generation) == "42"
    assert _scored(generation, "42") == 1.0


def test_latex_thousands_separator():
    assert _scored(r"\boxed{10{,}000}", "10000") == 1.0
    assert _scored(r"\boxed{10000}", "10{,}000") == 1.0


def test_gsm8k_thousands_commas():
    assert _scored("#### 1,234", "1234") == 1.0
    assert _scored(r"\boxed{1234}", "1,234") == 1.0


@pytest.mark.parametrize(
    "generation",
    [
        "1 " * 25_000,
        "{" * 50_000,
        "\\boxed{" * 7_000,
        "$" * 50_000,
        "The answer is " * 3_600,
        "(" * 25_000 + ")" * 25_000,
        "\\frac{1}{" * 5_600 + "2" + "}" * 5_600,
    ],
    ids=["digits", "braces", "open-boxed", "dollars", "answer-phrases", "parens", "nested-frac"],
)
def test_degenerate_50k_generation_returns_quickly(generation: str):
    start = time.monotonic()
    result = score_math(generation, "7", timeout_s=2.0)
    assert time.monotonic() - start < HANG_S  # a hang bound, not a speed check (scripts/bench_* judge speed)
    assert result["score"] == 0.0


def test_pathological_input_times_out_in_main_thread():
    assert threading.current_thread() is threading.main_thread()
    assert _scored(r"\boxed{5}", "5") == 1.0  # math-verify imported: that is outside the limit
    start = time.monotonic()
    result = score_math(PATHOLOGICAL, "5", timeout_s=1.0)
    assert time.monotonic() - start < HANG_S  # cut off, not hung: result["timed_out"] below is the check
    assert result == {
        "score": 0.0, "extracted": "9^{9^{9^{9}}}", "parse_failed": False, "parse_error": None, "timed_out": True,
        "reasoning_state": "none", "verdict": "undecided", "answer_source": "box", "passed_by_tolerance": False,
    }
    assert _scored(r"\boxed{6}", "6") == 1.0  # the grader still works afterwards


def test_pathological_input_from_eight_threads_stays_within_limit():
    """RL trainers score from worker threads, where SIGALRM is unavailable: each call must
    still be cut off at its limit (in a worker process), concurrently, without raising."""
    timeout_s = 2.0
    with ThreadPoolExecutor(max_workers=8) as pool:
        # Warm-up round: each thread's first call starts a worker and imports math-verify
        # there (outside the limit, ~1 s); eight simultaneous first calls start eight workers.
        warm = pool.map(lambda _: score_math(r"\boxed{5}", "5", timeout_s=60), range(8))
        assert [result["score"] for result in warm] == [1.0] * 8

        def timed_call(_: int) -> tuple[dict, float]:
            start = time.monotonic()
            result = score_math(PATHOLOGICAL, "5", timeout_s=timeout_s)
            return result, time.monotonic() - start

        outcomes = list(pool.map(timed_call, range(8)))
    for result, elapsed in outcomes:
        assert result["timed_out"] and result["score"] == 0.0
        assert elapsed < HANG_S, elapsed  # cut off, not hung (a loaded box once took 8 s: no tighter bound)
    # Overrunning workers were replaced: the grader still works from a thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(score_math, r"\boxed{\frac{1}{2}}", "0.5").result()["score"] == 1.0


def test_time_limit_helper_off_main_thread():
    def run(fn, *args, timeout_s):
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(call_with_time_limit, fn, *args, timeout_s=timeout_s).result()

    assert run(sum, [1, 2, 3], timeout_s=30) == 6
    with pytest.raises(ZeroDivisionError):
        run(divmod, 1, 0, timeout_s=30)
    start = time.monotonic()
    with pytest.raises(TimeLimitExceeded):
        run(time.sleep, 300, timeout_s=1.0)
    assert time.monotonic() - start < HANG_S  # long before the 300 s sleep would end on its own


def test_time_limit_helper_in_main_thread():
    assert call_with_time_limit(sum, [1, 2], timeout_s=1.0) == 3
    start = time.monotonic()
    with pytest.raises(TimeLimitExceeded):
        call_with_time_limit(time.sleep, 300, timeout_s=0.5)
    assert time.monotonic() - start < HANG_S


# --- extraction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        (r"First \boxed{1}, finally \boxed{\frac{3}{4}}.", r"\frac{3}{4}"),
        (r"So $\fbox{7}$ it is.", "7"),
        (r"\boxed{\left( 3, \frac{\pi}{2} \right)}", r"\left( 3, \frac{\pi}{2} \right)"),
        ("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.", r"\frac{1}{2}"),
        ("We add them. The answer is 17.", "17"),
        ("**Answer:** 12", "12"),
        ("So the answer is: 18 dollars per day.", "18"),
        ("The answer is 3 and 5.", "3 and 5"),
        ("She pays 5 + 3 = 8 dollars.\n#### 8", "8"),
        ("There are 3 red and 12 blue marbles, 15 in all", "15"),
        ("No numbers here at all.", None),
    ],
)
def test_extract_math_answer(generation: str, expected: str | None):
    assert extract_math_answer(generation) == expected


def test_explicit_answer_beats_a_later_number():
    assert extract_math_answer(r"The answer is \boxed{4}. Checked with 2 methods.") == "4"
    assert extract_math_answer("The answer is 4. Checked with 2 methods.") == "4"


def test_parse_failure_is_distinct_from_a_wrong_answer():
    assert score_math("I cannot solve this.", "4") == {
        "score": 0.0, "extracted": None, "parse_failed": True, "parse_error": "no answer found", "timed_out": False,
        "reasoning_state": "none", "verdict": "undecided", "answer_source": None, "passed_by_tolerance": False,
    }
    assert score_math(r"\boxed{5}", "4") == {
        "score": 0.0, "extracted": "5", "parse_failed": False, "parse_error": None, "timed_out": False,
        "reasoning_state": "none", "verdict": "different", "answer_source": "box", "passed_by_tolerance": False,
    }


# --- equivalence -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        (r"\frac{1}{2}", "0.5"),
        ("0.5", r"\frac{1}{2}"),
        (r"\dfrac{3}{4}", r"\frac34"),
        ("x=3", "3"),
        ("3", "x = 3"),
        ("(1, 2]", r"(1,2]"),
        (r"[-2, \infty)", r"[-2,\infty)"),
        ("(3, -1)", r"\left( 3, -1 \right)"),
        (r"3\sqrt{13}", r"\sqrt{117}"),
        (r"\text{Evelyn}", r"\text{Evelyn}"),
        (r"90^\circ", "90"),
        ("27", 27.0),
        ("2.5", 2.5),
        ("$84$", ["$69$", "$84$"]),
        ("50\\%", "50"),
    ],
)
def test_equivalent_answers(answer: str, gold):
    assert _scored(f"The final result is \\boxed{{{answer}}}.", gold) == 1.0


@pytest.mark.parametrize(
    ("answer", "gold"),
    [("(3, 1)", "(1, 3)"), ("(1, 2)", "[1, 2]"), ("x=4", "3"), ("27.5", 27.0), ("70", ["$69$", "$84$"])],
)
def test_different_answers(answer: str, gold):
    assert _scored(f"\\boxed{{{answer}}}", gold) == 0.0


def test_importing_the_scorer_does_not_import_math_verify():
    code = "import sys, skyeval.scorers.math; assert 'math_verify' not in sys.modules and 'sympy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- gold self-check on real data ------------------------------------------------------------


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        pytest.skip(f"{path} not found (set SKYEVAL_DATA_DIR)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _gsm8k_gold(answer: str) -> str:
    return answer.split("#### ")[-1].strip()


def test_math500_solutions_match_their_answers(data_dir: Path):
    rows = _rows(data_dir / "math500" / "test.jsonl")
    misses = []
    for row in rows:
        result = score_math(row["solution"], row["answer"])
        if result["score"] != 1.0:
            misses.append((row["unique_id"], row["answer"], result))
    for miss in misses:
        print("MISS", *miss)
    hit_rate = 1 - len(misses) / len(rows)
    print(f"math500 gold self-check: {hit_rate:.2%} of {len(rows)}")
    assert hit_rate >= 0.99


def test_math500_cross_wired_solutions_do_not_match(data_dir: Path):
    rows = _rows(data_dir / "math500" / "test.jsonl")
    hits = [
        (row["answer"], other["answer"])
        for row, other in zip(rows, rows[1:] + rows[:1])
        if _scored(row["solution"], other["answer"]) == 1.0
    ]
    print(f"math500 cross-wired: {len(hits) / len(rows):.2%}", hits)  # e.g. "5" vs "x=5": same value
    assert len(hits) / len(rows) <= 0.01


def test_gsm8k_rationales_match_their_answers(data_dir: Path):
    rows = _rows(data_dir / "gsm8k" / "test.jsonl")
    misses = [row["idx"] for row in rows if _scored(row["answer"], _gsm8k_gold(row["answer"])) != 1.0]
    print(f"gsm8k gold self-check: {1 - len(misses) / len(rows):.2%} of {len(rows)}; misses: {misses}")
    assert len(misses) / len(rows) <= 0.01


def test_gsm8k_cross_wired_only_matches_equal_numbers(data_dir: Path):
    rows = _rows(data_dir / "gsm8k" / "test.jsonl")
    pairs = [(row["answer"], _gsm8k_gold(other["answer"])) for row, other in zip(rows, rows[1:] + rows[:1])]
    hits = [(_gsm8k_gold(solution), gold) for solution, gold in pairs if _scored(solution, gold) == 1.0]
    print(f"gsm8k cross-wired: {len(hits) / len(rows):.2%} of {len(rows)}, all on equal golds: {hits}")
    assert all(float(own.replace(",", "")) == float(gold.replace(",", "")) for own, gold in hits)


@pytest.mark.parametrize(
    "generation,expected",
    [
        (r"so $d = \boxed{\textbf{(073)}}.$", "073"),  # AIME 2024 #75's gold solution
        (r"\boxed{\textbf{(C) }18}", "18"),  # AMC answer with its option label
        (r"\boxed{\text{(B) }\frac{1}{2}}", "1/2"),
    ],
)
def test_aops_option_labels_and_bold_answers(generation, expected):
    assert score_math(generation, expected)["score"] == 1.0
    assert score_math(generation, "17")["score"] == 0.0
