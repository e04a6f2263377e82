"""Verdicts of the code scorer on toy programs and real benchmark items."""

import gzip
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skyeval.scorers.code import LEETCODE_PRELUDE, extract_code, outputs_match, score_code
from skyeval.scorers.sandbox import SandboxLimits

DATA = Path(os.environ.get("SKYEVAL_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
FAST = SandboxLimits(timeout_s=2.0, cpu_s=2.0)
KEYS = {"score", "passed", "tests_passed", "tests_total", "failure_kind", "parse_failed", "extracted", "timed_out",
        "timeout", "grading", "passed_by_tolerance"}


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my solution.\n```{tag}\n{code}\n```\nIt reads the input."


def stdin_tests(*pairs: tuple[str, str]) -> dict:
    return {"type": "stdin", "inputs": [i for i, _ in pairs], "outputs": [o for _, o in pairs]}


def _needs(path: Path):
    return pytest.mark.skipif(not path.exists(), reason=f"benchmark data missing: {path}")


SUM = fenced("a, b = map(int, input().split())\nprint(a + b)")
SUM_TESTS = stdin_tests(("1 2\n", "3\n"), ("5 5\n", "10\n"), ("0 0\n", "0\n"))


# --- extract_code -----------------------------------------------------------------

@pytest.mark.parametrize("tag", ["python", "py", "Python3", "PYTHON"])
def test_extract_code_language_tags(tag):
    assert extract_code(fenced("print(1)", tag)) == "print(1)"


def test_extract_code_takes_last_python_block():
    text = "```python\nprint(1)\n```\nbetter:\n```python\nprint(2)\n```\nSample:\n```\n3\n```"
    assert extract_code(text) == "print(2)"


def test_extract_code_untagged_and_unclosed_blocks():
    assert extract_code("text\n```\nprint(3)\n```\nmore text") == "print(3)"
    assert extract_code("```python\nprint(4)\n") == "print(4)"


def test_extract_code_ignores_other_languages_and_prose():
    assert extract_code("```bash\nls\n```") is None
    assert extract_code("The answer is 42.") is None
    assert extract_code("```python\n\n```") is None


def test_no_code_is_a_parse_failure():
    result = score_code("I cannot solve this.", SUM_TESTS)
    assert set(result) == KEYS
    assert result["failure_kind"] == "no_code" and result["parse_failed"] and result["extracted"] is None
    assert result["score"] == 0.0 and result["tests_total"] == 3


# --- stdin/stdout -------------------------------------------------------------------

def test_stdin_pass():
    result = score_code(SUM, SUM_TESTS)
    assert result["passed"] and result["score"] == 1.0 and result["tests_passed"] == 3
    assert result["failure_kind"] is None and not result["parse_failed"] and not result["timed_out"]


def test_stdin_wrong_answer():
    result = score_code(fenced("a, b = map(int, input().split())\nprint(a * b)"), SUM_TESTS)
    assert not result["passed"] and result["failure_kind"] == "wrong_answer"


def test_stdin_runtime_error():
    result = score_code(fenced("raise ValueError('boom')"), SUM_TESTS)
    assert result["failure_kind"] == "runtime_error" and result["score"] == 0.0


def test_syntax_error_never_passes():
    result = score_code(fenced("def f(:\n    pass"), SUM_TESTS, stop_at_first_failure=False)
    assert result["failure_kind"] == "compile_error" and result["tests_passed"] == 0


def test_exit_code_counts_even_with_right_output():
    result = score_code(fenced("print(3)\nimport sys\nsys.exit(3)"), stdin_tests(("", "3")))
    assert result["failure_kind"] == "runtime_error"


def test_timeout_never_passes():
    result = score_code(fenced("print(3)\nwhile True:\n    pass"), stdin_tests(("", "3")), limits=FAST)
    assert result["failure_kind"] == "timeout" and result["timed_out"] and not result["passed"]


def test_float_tolerance_and_trailing_whitespace():
    tests = stdin_tests(("", "0.3333333333 2\nok\n"))
    assert score_code(fenced("print(1/3, 2, '  ')\nprint('ok')\n\n\n"), tests)["passed"]
    assert not score_code(fenced("print(0.334, 2)\nprint('ok')"), tests)["passed"]


@pytest.mark.parametrize(("got", "want", "same"), [
    ("1.0000001\n", "1.0", True),
    ("1e-9", "0", False),  # an expected int is exact
    ("1e-9", "0.0", True),
    ("3.0", "3", True),  # the same value, as in call tests (2.0 == 2)
    ("07", "7", False),
    ("3 \n\n\n", "3", True),
    ("1 2", "1  2", True),
    ("1\n2", "1 2", False),
    ("1" * 400, "1" * 399 + "2", False),
    ("nan", "nan", True),
    ("inf", "1e400", False),
    ("", "\n", True),
])
def test_outputs_match(got, want, same):
    assert outputs_match(got, want) is same


def test_stop_at_first_failure_counts():
    tests = stdin_tests(("1 1\n", "3\n"), ("1 2\n", "3\n"), ("2 2\n", "4\n"))
    stopped = score_code(SUM, tests)
    assert (stopped["tests_passed"], stopped["tests_total"]) == (0, 3)
    full = score_code(SUM, tests, stop_at_first_failure=False)
    assert (full["tests_passed"], full["tests_total"], full["failure_kind"]) == (2, 3, "wrong_answer")


# --- call-based (APPS fn_name) ------------------------------------------------------

CALL = {"type": "call", "fn_name": "add", "inputs": [[1, 2], [2, 3], [0.1, 0.2]], "outputs": [3, 5, 0.3]}


def test_call_based_solution_class():
    code = fenced("class Solution:\n    def add(self, a: int, b: int) -> int:\n        return a + b")
    result = score_code(code, CALL)
    assert result["passed"] and result["tests_passed"] == 3 and result["grading"] == "isolated"


def test_wrapped_outputs_only_where_the_benchmark_accepts_them():
    """`5` is not `[5]`; APPS's checker accepts `x` for an expected `[x]`, and so does its env."""
    wrapped = {**CALL, "outputs": [3, [5], 0.3]}
    code = fenced("def add(a, b):\n    return a + b")
    assert score_code(code, wrapped, stop_at_first_failure=False)["tests_passed"] == 2
    assert score_code(code, {**wrapped, "accept_unwrapped": True})["passed"]
    listed = fenced("def add(a, b):\n    return [a + b]")
    assert score_code(listed, CALL, stop_at_first_failure=False)["tests_passed"] == 0


def test_call_based_plain_function_wrong_answer_counts():
    result = score_code(fenced("def add(a, b):\n    return a - b"), CALL, stop_at_first_failure=False)
    assert (result["tests_passed"], result["failure_kind"]) == (0, "wrong_answer")


def test_call_based_runtime_error_and_timeout():
    crash = score_code(fenced("def add(a, b):\n    return a / 0"), CALL)
    assert crash["failure_kind"] == "runtime_error"
    hang = score_code(fenced("def add(a, b):\n    while True:\n        pass"), CALL, limits=FAST)
    assert hang["failure_kind"] == "timeout" and hang["timed_out"] and hang["tests_passed"] == 0


def test_call_based_compile_error():
    assert score_code(fenced("def add(a, b) return a"), CALL)["failure_kind"] == "compile_error"


def test_printed_marker_lookalikes_cannot_forge_passes():
    code = fenced('def add(a, b):\n    print(\'@@skyeval-0@@{"i": 0, "ok": true, "kind": null}\')\n    return 0')
    assert score_code(code, CALL)["tests_passed"] == 0


def test_starter_code_is_prepended_to_completions():
    starter = "class Solution:\n    def add(self, a, b):\n"
    assert score_code(fenced("        return a + b"), CALL, starter_code=starter)["passed"]
    full = "class Solution:\n    def add(self, a, b):\n        return b + a"
    assert score_code(fenced(full), CALL, starter_code=starter)["passed"]


@_needs(DATA / "apps")
@pytest.mark.parametrize("problem", ["0001", "0111", "2287", "2404", "4184"])
def test_apps_reference_solutions_pass(problem):
    folder = DATA / "apps" / "coderl_sample" / "train" / problem
    io = json.loads((folder / "input_output.json").read_text())
    solution = json.loads((folder / "solutions.json").read_text())[0]
    if "fn_name" in io:
        tests = {"type": "call", "fn_name": io["fn_name"], "inputs": io["inputs"], "outputs": io["outputs"],
                 "accept_unwrapped": True}  # as APPSEnv: APPS wraps some outputs in a list
    else:
        tests = stdin_tests(*zip(io["inputs"], io["outputs"]))
    assert score_code(fenced(solution), tests)["passed"]


# --- functional (HumanEval, leetcode) and asserts (MBPP) ----------------------------

def _humaneval() -> list[dict]:
    with gzip.open(DATA / "humaneval" / "HumanEval.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def _humaneval_tests(solution: dict, test: dict) -> dict:
    """Tests of item `test` run against the entry point of item `solution`."""
    return {"type": "functional", "test": test["test"], "entry_point": solution["entry_point"],
            "prelude": solution["prompt"]}


def _humaneval_score(solution: dict, test: dict) -> dict:
    return score_code(fenced(solution["prompt"] + solution["canonical_solution"]), _humaneval_tests(solution, test))


@_needs(DATA / "humaneval")
def test_humaneval_canonical_solutions_all_pass_and_cross_wired_fail():
    rows = _humaneval()
    pairs = [(row, row) for row in rows] + [(row, rows[(i + 1) % len(rows)]) for i, row in enumerate(rows)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda pair: _humaneval_score(*pair), pairs))
    canonical, crossed = results[:len(rows)], results[len(rows):]
    assert [r["task_id"] for r, v in zip(rows, canonical) if not v["passed"]] == []
    assert sum(v["passed"] for v in crossed) <= 3


@_needs(DATA / "humaneval")
def test_humaneval_wrong_completion_fails():
    row = _humaneval()[0]
    wrong = score_code(fenced(row["prompt"] + "    return False\n"), _humaneval_tests(row, row))
    assert wrong["failure_kind"] == "wrong_answer" and wrong["tests_total"] == 7  # its 7 asserts, isolated
    assert wrong["grading"] == "isolated"


@_needs(DATA / "deepcoder_test_code")
def test_leetcode_functional_with_method_entry_point():
    item = json.loads((DATA / "deepcoder_test_code" / "leetcode.json").read_text())[0]
    test = item["tests"]["functional"]
    entry = re.findall(r"check\((Solution\(\)\.\w+)\)", test)[-1]
    tests = {"type": "functional", "test": test, "entry_point": entry, "prelude": LEETCODE_PRELUDE}
    assert score_code(fenced(item["solutions"]), tests)["passed"]
    broken = item["solutions"].replace("return", "return -1 +", 1)
    assert score_code(fenced(broken), tests)["failure_kind"] == "wrong_answer"


ASSERTS = {"type": "asserts", "setup": "import math",
           "asserts": ["assert hyp(3, 4) == 5", "assert hyp(5, 12) == 13", "assert hyp(1, 1) == 1"]}


def test_asserts_with_setup_and_counts():
    code = fenced("def hyp(a, b):\n    return math.hypot(a, b)")
    failing = score_code(code, ASSERTS)
    assert (failing["tests_passed"], failing["tests_total"], failing["failure_kind"]) == (2, 3, "wrong_answer")
    passing = score_code(code, {**ASSERTS, "asserts": ASSERTS["asserts"][:2]})
    assert passing["passed"] and passing["tests_passed"] == 2


def test_malformed_tests_do_not_raise():
    result = score_code(SUM, {"type": "mystery"})
    assert not result["passed"] and result["failure_kind"] == "runtime_error"
