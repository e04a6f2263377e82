"""Code verdicts as the benchmark's own harness gives them (issue 39): arguments built from
the test's own source, the float rule, and verdicts that do not change from run to run."""

import marshal

from skyeval import SkyEnvBuilder
from skyeval.scorers.code import HarnessPlan, score_code

SECRET = "EXPECTED-41d7"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def item(env, problem_id: str, code: str) -> dict:
    problem = next(p for p in env.load_problems() if p["id"] == problem_id)
    return {**problem, "generation": fenced(code)}


# --- 1. arguments built as the test builds them -------------------------------------------

def test_mbpp_341_set_arguments_iterate_as_the_tests_literal(data_dir):
    """`{12, 13, 14, 15, 16}` iterates as 16, 12, 13, 14, 15 in CPython; a set rebuilt from
    its values (marshal) iterated sorted, so `return tuple(s)` passed."""
    env = SkyEnvBuilder.build("mbpp")
    unsorted = env.score_item(item(env, "341", "def set_to_tuple(s):\n    return tuple(s)"))
    assert not unsorted["passed"] and unsorted["failure_kind"] == "wrong_answer"
    assert (unsorted["tests_passed"], unsorted["tests_total"]) == (2, 3)  # the first two literals iterate sorted
    assert env.score_item(item(env, "341", "def set_to_tuple(s):\n    return tuple(sorted(s))"))["passed"]


def test_arguments_keep_the_tests_construction_and_sharing():
    """Named literals, loops over literals and keyword arguments are rebuilt from their
    source: a set iterates as the test's, and one named object is one object in every call
    (a program that mutates its argument sees its own mutation again, as in the test)."""
    test = ("S = {12, 13, 14, 15, 16}\nL = [3, 1, 2]\n"
            "def check(candidate):\n"
            "    assert candidate(S) == [16, 12, 13, 14, 15]\n"
            "    for s in [{12, 13, 14, 15, 16}, frozenset({32, 1})]:\n"
            "        assert candidate(s) == [16, 12, 13, 14, 15]\n"
            "    assert candidate(x=S) == [16, 12, 13, 14, 15]\n"
            "    assert candidate(L) == [3, 1, 2, 99]\n"
            "    assert candidate(L) == [3, 1, 2, 99, 99]\n")
    tests = {"type": "functional", "test": test, "entry_point": "f"}
    program = ("def f(s=None, x=None):\n    s = s if s is not None else x\n"
               "    if type(s) is list:\n        s.append(99)\n    return list(s)")
    result = score_code(fenced(program), tests, stop_at_first_failure=False)
    assert result["grading"] == "isolated" and result["tests_total"] == 6
    assert result["tests_passed"] == 5  # all but frozenset({32, 1}), which iterates [32, 1]


def test_argument_sources_carry_no_expected_value():
    """Only the bindings a call's arguments read enter the sandbox: a name the test uses
    for an expected value stays here."""
    test = (f"WANT = ['{SECRET}']\nARG = {{'a', 'b'}}\n"
            "def check(candidate):\n"
            "    assert candidate(ARG) == WANT\n"
            f"    for w in ['{SECRET}2']:\n"
            "        assert candidate(1) == w\n")
    plan = HarnessPlan("def f(x):\n    return x", {"type": "functional", "test": test, "entry_point": "f"})
    spec = marshal.loads(plan.spec())
    assert plan.grading == "isolated" and len(plan.calls) == 2
    assert SECRET not in repr(spec) and "{'a', 'b'}" in spec["bindings"]
