"""Grading keeps expected values out of the sandbox, and compares by one rule.

The bugs of issue 23: a harness that ran the tests next to the program (a solution that
walked the stack reported every test passed: tests/scorers/test_hacks.py), ints compared
with a relative tolerance (`x + 1` passed expected 999999), `5` passing for `[5]`, and the
call and stdin paths disagreeing.
"""

import marshal
import math

import pytest

from skyeval.scorers.asserts import CallTest, convert_assert, convert_check, passes
from skyeval.scorers.code import HarnessPlan, score_code
from skyeval.scorers.compare import Unrepresentable, decode, outputs_match, same

SECRET = "EXPECTED-9f3b"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


def _strings(value) -> list:
    """Every str inside a nested plain value (marshal's spec)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for kv in value.items() for v in kv for s in _strings(v)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("tests", [
    {"type": "call", "fn_name": "f", "inputs": [["a"], ["b"]], "outputs": [SECRET, SECRET + "2"]},
    {"type": "functional", "entry_point": "f", "prelude": "",
     "test": f"def check(candidate):\n    assert candidate('a') == '{SECRET}'\n"
             f"    assert not candidate('{SECRET[:3]}')\n"},
    {"type": "asserts", "asserts": [f"assert f('a') == '{SECRET}'", f"assert set(f('b')) == {{'{SECRET}'}}"]},
])
def test_expected_values_never_reach_the_sandbox(tests):
    plan = HarnessPlan("def f(x):\n    return x", tests)
    spec = marshal.loads(plan.spec())
    assert plan.grading == "isolated" and spec["residual"] == []
    assert not any(SECRET in s for s in _strings(spec)), spec


def test_checks_run_on_the_trusted_side_send_only_arguments():
    """A check the literal reader cannot convert (a loop over tuples, an expected value from a
    helper) runs on the trusted side: the program gets the arguments it computes, never the
    expected values or the check's text."""
    test = (f"def want(x):\n    return '{SECRET}' + str(x)\n\n"
            "def check(candidate):\n    for a, b in [(1, 2), (3, 4)]:\n"
            "        assert candidate(a, b) == want(a + b) + 'RESIDUAL'\n")
    plan = HarnessPlan("def f(x, y):\n    return x", {"type": "functional", "entry_point": "f", "test": test})
    spec = marshal.loads(plan.spec())
    assert plan.grading == "isolated" and spec["residual"] == [] and plan.total == 2
    assert [c.args for c in plan.calls] == [(1, 2), (3, 4)]
    assert [c.expected for c in plan.calls] == [f"{SECRET}3RESIDUAL", f"{SECRET}7RESIDUAL"]
    assert not any(SECRET in s or "RESIDUAL" in s for s in _strings(spec)), spec
    right = fenced(f"def f(x, y):\n    return '{SECRET}' + str(x + y) + 'RESIDUAL'")
    assert score_code(right, {"type": "functional", "entry_point": "f", "test": test})["passed"]


def test_property_checks_are_replayed_with_the_programs_values():
    """`sol = candidate(xs); assert poly(xs, sol) ~ 0` (HumanEval/32): the check runs with the
    reference solution to record the arguments, then again with the values the program
    returned; a replay whose calls differ from the recording fails."""
    test = ("import random\n\ndef check(candidate):\n    rng = random.Random(1)\n    for _ in range(20):\n"
            "        n = rng.randint(1, 50)\n        root = candidate(n)\n        assert abs(root * root - n) < 1e-6\n")
    tests = {"type": "functional", "entry_point": "sqrt", "test": test,
             "reference": "def sqrt(n):\n    return n ** 0.5\n"}
    plan = HarnessPlan("", tests)
    assert plan.grading == "isolated" and plan.total == 1 and len(plan.calls) == 20
    assert {c.comparison for c in plan.calls} == {"replay"}
    assert score_code(fenced("import math\ndef sqrt(n):\n    return math.sqrt(n)"), tests)["passed"]
    wrong = score_code(fenced("def sqrt(n):\n    return n / 2"), tests)
    assert not wrong["passed"] and wrong["failure_kind"] == "wrong_answer"
    crashing = score_code(fenced("def sqrt(n):\n    raise ValueError(n)"), tests)
    assert crashing["failure_kind"] == "runtime_error"
    branching = {**tests, "test": test.replace("        root = candidate(n)\n",
                                               "        root = candidate(n)\n        if root > 3:\n"
                                               "            candidate(n + 1)\n")}
    # the program's values take the check down another path than the reference's: fail
    assert not score_code(fenced("def sqrt(n):\n    return 10.0 if n == 2 else n ** 0.5"), branching)["passed"]


def test_a_check_the_trusted_side_cannot_run_runs_in_process():
    """Arguments that are objects of the prompt's own classes are not plain data: the check
    runs next to the program, as the benchmark's own harness runs it, and says so."""
    test = "def check(candidate):\n    assert candidate(Box(1)) == 1\n"
    tests = {"type": "functional", "entry_point": "f", "test": test, "prelude": "class Box(int):\n    pass\n"}
    plan = HarnessPlan("def f(x):\n    return int(x)", tests)
    assert plan.grading == "in_process" and "Box(1)" in marshal.loads(plan.spec())["residual"][0]
    assert score_code(fenced("def f(x):\n    return int(x)"), tests)["passed"]


def test_ints_compare_exactly_not_within_a_relative_tolerance():
    """`return x + 1` used to pass expected outputs 999999 and 10**9+6 (rel_tol=1e-6)."""
    tests = {"type": "call", "fn_name": "inc", "inputs": [[999999], [10 ** 9 + 6]], "outputs": [999999, 10 ** 9 + 6]}
    result = score_code(fenced("def inc(x):\n    return x + 1"), tests, stop_at_first_failure=False)
    assert (result["tests_passed"], result["failure_kind"]) == (0, "wrong_answer")
    right = {**tests, "outputs": [1000000, 10 ** 9 + 7]}
    assert score_code(fenced("def inc(x):\n    return x + 1"), right)["passed"]


# (value the program produces, expected value, verdict): both paths must give the verdict
AGREEMENT = [
    (1000000, 999999, False),
    (10 ** 9 + 7, 10 ** 9 + 6, False),
    (7, 7, True),
    (2.0, 2, True),
    (2.5, 2, False),
    (0.30000000000000004, 0.3, True),
    (0.3001, 0.3, False),
    (1e-9, 0, False),
    (1e-9, 0.0, True),
    ("abc", "abc", True),
    ("abc", "abd", False),
]


@pytest.mark.parametrize(("got", "want", "verdict"), AGREEMENT)
def test_call_and_stdin_paths_agree(got, want, verdict):
    call = {"type": "call", "fn_name": "f", "inputs": [[]], "outputs": [want]}
    by_call = score_code(fenced(f"def f():\n    return {got!r}"), call)["passed"]
    stdin = {"type": "stdin", "inputs": [""], "outputs": [f"{want}\n"]}
    by_stdin = score_code(fenced(f"print({got!r})"), stdin)["passed"]
    assert (by_call, by_stdin) == (verdict, verdict)
    assert same(got, want) is verdict and outputs_match(str(got), str(want)) is verdict


@pytest.mark.parametrize(("got", "want", "verdict"), [
    (5, [5], False), ([5], 5, False), ((1, 2), [1, 2], False), ([1, 2], (1, 2), False),
    (True, 1, True), (1, True, True), (False, 0, True), (True, 1.0, False), (None, 0, False),
    ({1: 2}, {1: 2}, True), ({1: 2.0000001}, {1: 2.0}, True), ({1: 2}, {1: 3}, False),
    ({1, 2}, frozenset({1, 2}), True), ({1, 2}, [1, 2], False),
    (float("nan"), float("nan"), True), (float("inf"), 1e308, False), (10 ** 400, 1e300, False),
])
def test_comparison_rule_by_type(got, want, verdict):
    assert same(got, want) is verdict


@pytest.mark.parametrize(("line", "comparison", "expected", "values"), [
    ("assert f(1) == 2", "eq", 2, [(2, True), (3, False), (2.0, True), ("2", False)]),
    ("assert 2 == f(1)", "eq", 2, [(2, True), (3, False)]),
    ("assert f(1) is True", "is", True, [(True, True), (1, False), ("x", False)]),
    ("assert f(1)", "truthy", None, [(1, True), (0, False), ("", False), ((0,), True)]),
    ("assert not f(1)", "falsy", None, [(0, True), ([1], False)]),
    ("assert abs(f(1) - 3.14) < 0.01", "abs_lt", 3.14, [(3.141, True), (3.2, False), ("3.14", False)]),
    ("assert abs(3.14 - f(1)) <= 1e-6", "abs_le", 3.14, [(3.14, True), (3.15, False)]),
    ("assert math.isclose(f(1), 78.5, rel_tol=0.001)", "isclose", 78.5, [(78.54, True), (79, False)]),
    ("assert set(f(1)) == set([3, 4])", "set", {3, 4}, [((4, 3), True), ((3, 4, 5), False), (3, False)]),
    ("assert sorted(f(1)) == [1, 2]", "sorted", [1, 2], [((2, 1), True), ((2, 1, 1), False)]),
    ("assert tuple(f(1)) == tuple([1, 2])", "tuple", (1, 2), [((1, 2), True), ((2, 1), False)]),
])
def test_assert_shapes_convert_and_judge(line, comparison, expected, values):
    test = convert_assert(line)
    assert test is not None and test.comparison == comparison and test.args == (1,) and test.function == "f"
    assert test.expected == expected
    for got, verdict in values:
        assert passes(test, got) is verdict, (got, verdict)


@pytest.mark.parametrize("line", [
    "assert f(1) == x",  # an expected value the test does not define literally
    "assert f(1) == g(2)",  # an expected value computed by other code
    "assert len(f(1)) == 3",
    "assert f(1) == 1 and f(2) == 2",
    "assert f(1) < 3",
])
def test_other_asserts_are_not_converted(line):
    assert convert_assert(line) is None


def test_setup_code_builds_arguments_after_the_program():
    """MBPP 367: `test_setup_code` builds trees of the program's own `Node` class; it runs in
    the program's namespace after the program, and only the returned value comes back."""
    test = convert_assert("root = Node(1)\nroot.left = Node(2)\nassert is_balanced(root) == True")
    assert test is not None and test.setup.startswith("root = Node(1)") and test.expected is True
    tests = {"type": "asserts", "asserts": ["root = Node(1)\nroot.left = Node(2)\nassert depth(root) == 2",
                                            "root = Node(1)\nroot.left = Node(2)\nassert depth(root.left) == 1"]}
    program = ("class Node:\n    def __init__(self, v):\n        self.v, self.left, self.right = v, None, None\n"
               "def depth(n):\n    return 0 if n is None else 1 + max(depth(n.left), depth(n.right))\n")
    result = score_code(fenced(program), tests)
    assert result["passed"] and result["grading"] == "isolated" and result["tests_total"] == 2
    assert not score_code(fenced(program + "depth = lambda n: 2\n"), tests)["passed"]


def test_check_bodies_convert_loops_and_literal_names_and_drop_assert_true():
    test = ("METADATA = {}\n\ndef check(candidate):\n    xs = [1, 2]\n    assert candidate(xs, k=2) == [2, 4]\n"
            "    for x in range(3):\n        assert candidate([x], k=1) == [x]\n    assert True, 'always'\n")
    converted = convert_check(test)
    assert converted.residual is None
    assert [(c.args, c.kwargs, c.expected) for c in converted.calls] == [
        (([1, 2],), {"k": 2}, [2, 4]), (([0],), {"k": 1}, [0]), (([1],), {"k": 1}, [1]), (([2],), {"k": 1}, [2])]
    random_check = ("import random\n\ndef check(candidate):\n    x = random.randint(0, 9)\n"
                    "    assert candidate(x) == x\n")
    assert convert_check(random_check).calls == () and "random.randint" in convert_check(random_check).residual


def test_decode_refuses_what_is_not_tagged_plain_data():
    assert decode('[1, {"t": [2, 3]}, {"s": ["a"]}, {"d": [[{"t": [1]}, null]]}, {"x": "-ff"}]') == \
        [1, (2, 3), {"a"}, {(1,): None}, -255]
    assert math.isnan(decode("NaN"))
    for text in ('{"a": 1}', '{"t": [1], "s": [2]}', '{"s": [[1]]}', "[" * 100000, "nonsense", '{"q": 1}'):
        with pytest.raises(Unrepresentable):
            decode(text)
    flood = '{"s": [' + ",".join(str(k * ((1 << 61) - 1)) for k in range(1000)) + "]}"
    with pytest.raises(Unrepresentable):
        decode(flood)  # built to make hashing quadratic: refused in linear time


def test_returned_subclasses_are_read_as_their_base_values():
    code = ("class I(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n"
            "class L(list):\n    pass\n"
            "def f(x):\n    return [I(x), L([x]), {'k': I(x)}]")
    tests = {"type": "call", "fn_name": "f", "inputs": [[4]], "outputs": [[4, [4], {"k": 4}]]}
    assert score_code(fenced(code), tests)["passed"]
    assert not score_code(fenced(code), {**tests, "outputs": [[5, [4], {"k": 4}]]})["passed"]


def test_unrepresentable_values_fail_the_test():
    tests = {"type": "call", "fn_name": "f", "inputs": [[]], "outputs": [1]}
    for body in ("object()", "lambda: 1", "iter([1])", "1j"):
        result = score_code(fenced(f"def f():\n    return {body}"), tests)
        assert result["failure_kind"] == "wrong_answer" and not result["passed"], body


def test_call_test_dataclass_is_plain():
    test = CallTest("f", (1,), {}, 2)
    assert (test.comparison, test.tolerance) == ("eq", ())


def _data():
    import os
    from pathlib import Path

    return Path(os.environ.get("SKYEVAL_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))


def _check_asserts(test: str) -> int:
    import ast

    check = next(n for n in ast.parse(test).body if isinstance(n, ast.FunctionDef) and n.name == "check")
    return sum(isinstance(n, ast.Assert) and not (isinstance(n.test, ast.Constant) and n.test.value)
               for n in ast.walk(check))


@pytest.mark.skipif(not (_data() / "humaneval").exists(), reason="benchmark data missing")
def test_converted_shares_stated_in_docs():
    """docs/sandbox.md: asserts read as literal calls: HumanEval 1125/1133, MBPP test split
    1500/1500 (all 974: 2916/2922), MBPP sanitized 1321/1324, leetcode 492/492 (on main at
    56bee16: MBPP 1497/1500 and 2904/2922); the rest runs on the trusted side,
    so every problem is graded isolated: 164/164, 500/500 (974/974), 427/427, 200/200."""
    import gzip
    import json

    from skyeval.envs.code import split_check_call

    def share(tests):
        converted = [convert_check(t) for t in tests]
        total = sum(_check_asserts(t) for t in tests)
        left = sum(_check_asserts(c.residual) for c in converted if c.residual)
        return total - left, total, sum(c.residual is None for c in converted)

    with gzip.open(_data() / "humaneval" / "HumanEval.jsonl.gz", "rt") as f:
        assert share([json.loads(line)["test"] for line in f]) == (1125, 1133, 158)
    leetcode = json.loads((_data() / "deepcoder_test_code" / "leetcode.json").read_text())
    assert share([split_check_call(r["tests"]["functional"])[0] for r in leetcode]) == (492, 492, 200)
    rows = [json.loads(line) for line in (_data() / "mbpp" / "mbpp.jsonl").open()]
    lines = [f"{r['test_setup_code'].strip()}\n{a}".strip() for r in rows if 11 <= r["task_id"] <= 510
             for a in r["test_list"]]  # as MBPPEnv joins them
    assert (sum(convert_assert(a) is not None for a in lines), len(lines)) == (1500, 1500)
    lines = [f"{r['test_setup_code'].strip()}\n{a}".strip() for r in rows for a in r["test_list"]]
    assert (sum(convert_assert(a) is not None for a in lines), len(lines)) == (2916, 2922)
    sanitized = [a for r in json.loads((_data() / "mbpp" / "sanitized-mbpp.json").read_text()) for a in r["test_list"]]
    assert (sum(convert_assert(a) is not None for a in sanitized), len(sanitized)) == (1321, 1324)


@pytest.mark.skipif(not (_data() / "humaneval").exists(), reason="benchmark data missing")
def test_every_problem_is_graded_isolated():
    """No benchmark problem of ours runs a test next to the program any more; the checks that
    are not literal calls run on the trusted side (HumanEval 32, 33, 38, 50, 53, 151; MBPP 596
    `tuple_size`, also in the sanitized set, and 912, outside the test split). On main at
    56bee16: 158/164, 968/974, 426/427."""
    import json

    from skyeval import SkyEnvBuilder

    def plans(name, knobs=None):
        env = SkyEnvBuilder.build(name, knobs or {})
        return {p["id"]: HarnessPlan("", json.loads(p["tests_json"]))
                for p in (env.to_problem(row, i) for i, row in enumerate(env.load_rows()))}

    for name, knobs, count, trusted in [("humaneval", {}, 164, {"HumanEval/32", "HumanEval/33", "HumanEval/38",
                                                                 "HumanEval/50", "HumanEval/53", "HumanEval/151"}),
                                        ("mbpp", {}, 974, {"596", "912"}), ("mbpp", {"sanitized": True}, 427, {"596"}),
                                        ("leetcode", {}, 200, set())]:
        found = plans(name, knobs)
        assert len(found) == count
        assert {pid for pid, plan in found.items() if plan.grading != "isolated"} == set(), name
        assert {pid for pid, plan in found.items() if plan.trusted} == trusted, name


def test_what_the_assert_does_to_the_value_happens_in_the_sandbox():
    """`assert C` takes C's truth and `set(C) == ...` iterates C where C was produced, so a
    generator or a truthy object passes there as it would in the benchmark's own harness."""
    tests = {"type": "asserts", "asserts": ["assert f(3)", "assert not f(0)", "assert set(f(2)) == {0, 1}",
                                            "assert sorted(f(2)) == [0, 1]"]}
    code = ("class Box:\n    def __init__(self, n):\n        self.n = n\n"
            "    def __bool__(self):\n        return self.n > 0\n"
            "    def __iter__(self):\n        return iter(range(self.n))\n"
            "def f(n):\n    return Box(n)")
    assert score_code(fenced(code), tests)["passed"]
    wrong = code.replace("self.n > 0", "self.n < 0")
    assert not score_code(fenced(wrong), tests, stop_at_first_failure=False)["passed"]
