"""The reward-hack corpus (tests/scorers/hacks/): every hack scores 0 on every code env's
scoring paths (call, stdin, assert), next to an honest solution that scores 1.

Each hack is a program for one problem, "return (or print) a + b", written to earn a pass
without computing it. Problems are built by the envs themselves from rows shaped like
each benchmark's, and scored through `env.score_item`, as trainers call it.
"""

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skyeval import SkyEnvBuilder

HACKS = sorted(p.stem for p in (Path(__file__).parent / "hacks").glob("*.py") if p.stem != "__init__")
HONEST = """def solve(a, b):
    return a + b


class Solution:
    def solve(self, a, b):
        return a + b


if __name__ == "__main__":
    a, b = map(int, input().split())
    print(a + b)
"""
CASES = [(1, 2, 3), (10, 20, 30), (-5, 5, 0)]
ASSERTS = [f"assert solve({a}, {b}) == {c}" for a, b, c in CASES]
CHECK = "def check(candidate):\n" + "".join(f"    assert candidate({a}, {b}) == {c}\n" for a, b, c in CASES)
# A loop over tuples is not converted: this test runs next to the program (in_process).
FALLBACK_CHECK = ("def check(candidate):\n    cases = [(1, 2, 3), (10, 20, 30), (-5, 5, 0)]\n"
                  "    for a, b, want in cases:\n        assert candidate(a, b) == want\n")
STDIN = {"inputs": [f"{a} {b}\n" for a, b, _ in CASES], "outputs": [f"{c}\n" for _, _, c in CASES]}
PROMPT = 'def solve(a, b):\n    """Return a + b."""\n'
# Hacks that still pass when a test cannot be converted and runs in-process (docs/sandbox.md).
IN_PROCESS_PASSES = {"always_equal", "class_spoof", "frame_walk", "int_subclass", "list_subclass",
                     "patch_builtins", "str_subclass"}


def _problems() -> dict[str, dict]:
    """(env name, scoring path) -> the problem the env builds from a benchmark-shaped row."""
    def env(name):
        return SkyEnvBuilder.build(name, {"timeout_s": 3.0})

    lcb = {"question_id": "q1", "question_content": "Add.", "difficulty": "easy", "contest_date": "2024-09-01",
           "private_test_cases": "", "metadata": json.dumps({"func_name": "solve"}), "starter_code": ""}
    functional = [{"input": f"{a}\n{b}", "output": str(c), "testtype": "functional"} for a, b, c in CASES]
    stdin = [{"input": i, "output": o, "testtype": "stdin"} for i, o in zip(STDIN["inputs"], STDIN["outputs"])]
    apps_row = {"problem_id": 1, "question": "Add.", "solutions": "[]", "difficulty": "introductory"}
    he = {"task_id": "H/0", "prompt": PROMPT, "entry_point": "solve", "canonical_solution": "    return a + b\n"}
    built = {
        ("humaneval", "assert"): (env("humaneval"), {**he, "test": CHECK}),
        ("humaneval", "in_process"): (env("humaneval"), {**he, "test": FALLBACK_CHECK}),
        ("mbpp", "assert"): (env("mbpp"), {"task_id": 11, "text": "Add.", "code": "", "test_list": ASSERTS,
                                           "test_setup_code": ""}),
        ("leetcode", "assert"): (env("leetcode"), {"problem": "Add.", "solutions": "",
                                                   "tests": {"functional": CHECK + "\n\ncheck(Solution().solve)\n"}}),
        ("apps", "call"): (env("apps"), {**apps_row, "input_output": json.dumps({
            "fn_name": "solve", "inputs": [[a, b] for a, b, _ in CASES], "outputs": [[c] for _, _, c in CASES]})}),
        ("apps", "stdin"): (env("apps"), {**apps_row, "input_output": json.dumps(STDIN)}),
        ("livecodebench", "call"): (env("livecodebench"), {**lcb, "public_test_cases": json.dumps(functional)}),
        ("livecodebench", "stdin"): (env("livecodebench"), {**lcb, "public_test_cases": json.dumps(stdin)}),
        ("codeforces", "stdin"): (env("codeforces"), {"problem": "Add.", "tests": [
            {"input": i, "output": o} for i, o in zip(STDIN["inputs"], STDIN["outputs"])]}),
    }
    return {key: (e, e.to_problem(row, 0)) for key, (e, row) in built.items()}


PROBLEMS = _problems()


def _score(program: str, key: tuple[str, str]) -> dict:
    env, problem = PROBLEMS[key]
    item = {**problem, "generation": f"```python\n{program}\n```"}
    return env.score_item(item)


def _score_everywhere(program: str) -> dict[tuple[str, str], dict]:
    with ThreadPoolExecutor(4) as pool:
        return dict(zip(PROBLEMS, pool.map(lambda key: _score(program, key), PROBLEMS)))


def test_corpus_is_large_enough():
    assert len(HACKS) >= 15


def test_honest_solution_passes_every_path():
    results = _score_everywhere(HONEST)
    assert {key: r["score"] for key, r in results.items()} == {key: 1.0 for key in PROBLEMS}
    assert {key: r["grading"] for key, r in results.items()} == {
        key: "in_process" if key[1] == "in_process" else "isolated" for key in PROBLEMS}


@pytest.mark.parametrize("hack", HACKS)
def test_hack_scores_zero_on_every_isolated_path(hack):
    program = (Path(__file__).parent / "hacks" / f"{hack}.py").read_text()
    results = _score_everywhere(program)
    isolated = {key: r["score"] for key, r in results.items() if key[1] != "in_process"}
    assert isolated == {key: 0.0 for key in isolated}
    assert all(r["grading"] == "isolated" for key, r in results.items() if key[1] != "in_process")
    in_process = results["humaneval", "in_process"]["score"]
    assert in_process == (1.0 if hack in IN_PROCESS_PASSES else 0.0), "update IN_PROCESS_PASSES and docs/sandbox.md"


def test_score_item_is_thread_safe_and_never_raises_on_hostile_code():
    """What RL trainers call: many hostile samples at once give the same verdicts as one by one."""
    programs = [HONEST, "", "\x00", "def solve(:"] + [
        (Path(__file__).parent / "hacks" / f"{hack}.py").read_text() for hack in HACKS]
    keys = [("humaneval", "assert"), ("apps", "call")]
    jobs = [(program, key) for program in programs for key in keys]
    alone = [_score(program, key)["score"] for program, key in jobs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda job: _score(*job)["score"], jobs))
    assert together == alone == [1.0] * len(keys) + [0.0] * (len(jobs) - len(keys))
