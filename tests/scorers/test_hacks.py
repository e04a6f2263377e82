"""The reward-hack corpus (tests/scorers/hacks/): every hack scores 0 on every code env's
scoring paths (call, stdin, assert, a check run on the trusted side, its replay), next to an
honest solution that scores 1.

Each hack is a program for one problem, "return (or print) a + b", written to earn a pass
without computing it. Problems are built by the envs themselves from rows shaped like
each benchmark's, and scored through `env.score_item`, as trainers call it. The same hacks,
renamed to each benchmark's function, score 0 on the real problems whose checks run on the
trusted side (HumanEval 32, 33, 38, 50, 53, 151; MBPP 367; MBPP sanitized `tuple_size`).
"""

import json
import re
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
# Checks whose code runs on the trusted side (skyeval.scorers.trusted_check): random inputs
# and a computed expected value (pairs), and a property of the returned value (replayed).
RANDOM_CHECK = ("def check(candidate):\n    import random\n    for _ in range(5):\n"
                "        a, b = random.randint(-9, 9), random.randint(-9, 9)\n"
                "        assert candidate(a, b) == sum([a, b])\n")
PROPERTY_CHECK = ("def check(candidate):\n    import random\n    for _ in range(5):\n"
                  "        a, b = random.randint(-9, 9), random.randint(-9, 9)\n"
                  "        got = candidate(a, b)\n        assert got - b == a\n")
# The trusted side cannot run a check whose arguments are objects of the prompt's own class
# (not plain data): its asserts run next to the program (in_process), as the benchmark's own
# harness runs them. No benchmark of ours has such a check.
PROMPT = 'class Box(int):\n    pass\n\n\ndef solve(a, b):\n    """Return a + b."""\n'
FALLBACK_CHECK = "def check(candidate):\n    assert candidate(Box(1), Box(2)) == 3\n"
# MBPP's test_setup_code: runs after the program, in its namespace, and builds the arguments
SETUP = "".join(f"x{i}, y{i} = {a}, {b}\n" for i, (a, b, _) in enumerate(CASES))
STDIN = {"inputs": [f"{a} {b}\n" for a, b, _ in CASES], "outputs": [f"{c}\n" for _, _, c in CASES]}
# Hacks that still pass when a check runs in-process (docs/sandbox.md).
IN_PROCESS_PASSES = {"always_equal", "changes_after_compare", "class_spoof", "frame_walk", "gc_harness",
                     "instancecheck_abc", "int_subclass", "list_subclass", "metaclass_spoof", "module_getattr",
                     "patch_builtins", "setprofile_harness", "str_subclass"}


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
        ("humaneval", "trusted"): (env("humaneval"), {**he, "test": RANDOM_CHECK}),
        ("humaneval", "replay"): (env("humaneval"), {**he, "test": PROPERTY_CHECK}),
        ("humaneval", "in_process"): (env("humaneval"), {**he, "test": FALLBACK_CHECK}),
        ("mbpp", "assert"): (env("mbpp"), {"task_id": 11, "text": "Add.", "code": "", "test_list": ASSERTS,
                                           "test_setup_code": ""}),
        ("mbpp", "setup"): (env("mbpp"), {"task_id": 11, "text": "Add.", "code": "", "test_setup_code": SETUP,
                                          "test_list": [f"assert solve(x{i}, y{i}) == {c}"
                                                        for i, (_, _, c) in enumerate(CASES)]}),
        ("mbpp", "trusted"): (env("mbpp"), {"task_id": 11, "text": "Add.", "code": "def solve(a, b):\n    return a + b",
                                            "test_setup_code": "", "test_list": [
                                                "assert solve(1, 2) == sum([1, 2])", "assert solve(4, 5) == 4 + 5"]}),
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
    assert len(HACKS) >= 40


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


# The problems whose checks could not be read as literal calls (docs/sandbox.md): their
# check code runs on the trusted side now. (env, knobs, problem id)
TRUSTED_PROBLEMS = [("humaneval", {}, f"HumanEval/{n}") for n in (32, 33, 38, 50, 53, 151)] + [
    ("mbpp", {}, "367"), ("mbpp", {"sanitized": True, "split": "validation"}, "596")]


@pytest.fixture(scope="module")
def trusted_problems(data_dir):
    found = []
    for name, knobs, problem_id in TRUSTED_PROBLEMS:
        env = SkyEnvBuilder.build(name, {**knobs, "timeout_s": 3.0})
        found.append((env, next(p for p in env.load_problems() if p["id"] == problem_id)))
    return found


def test_hacks_score_zero_on_the_problems_checked_on_the_trusted_side(trusted_problems):
    """Every hack, renamed to the benchmark's function, scores 0 on each problem whose check
    runs on the trusted side; the reference solution scores 1, graded isolated. On main at
    56bee16 an always-equal value scored 1.0 on HumanEval 32, 38 and 50 (checks in-process)."""
    programs = {hack: (Path(__file__).parent / "hacks" / f"{hack}.py").read_text() for hack in HACKS}
    jobs = []
    for env, problem in trusted_problems:
        entry = problem.get("entry_point") or re.search(r"assert (\w+)\(", json.loads(problem["tests_json"])["asserts"][0])[1]
        jobs.append((env, problem, "reference", env.reference_generation(problem)))
        jobs += [(env, problem, hack, "```python\n" + re.sub(r"\bsolve\b", entry, code) + "\n```")
                 for hack, code in programs.items()]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda job: job[0].score_item({**job[1], "generation": job[3]}), jobs))
    scores = {(job[1]["id"], job[2]): r["score"] for job, r in zip(jobs, results)}
    assert {key: s for key, s in scores.items() if key[1] == "reference"} == {
        (p["id"], "reference"): 1.0 for _, p in trusted_problems}
    assert {key: s for key, s in scores.items() if key[1] != "reference" and s} == {}
    assert {r["grading"] for r in results} == {"isolated"}


def test_score_item_is_thread_safe_and_never_raises_on_hostile_code():
    """What RL trainers call: many hostile samples at once give the same verdicts as one by one."""
    programs = [HONEST, "", "\x00", "def solve(:"] + [
        (Path(__file__).parent / "hacks" / f"{hack}.py").read_text() for hack in HACKS[::3]]
    keys = [("humaneval", "assert"), ("apps", "call")]
    jobs = [(program, key) for program in programs for key in keys]
    alone = [_score(program, key)["score"] for program, key in jobs]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda job: _score(*job)["score"], jobs))
    assert together == alone == [1.0] * len(keys) + [0.0] * (len(jobs) - len(keys))
