"""Gold self-check of the code envs: every reference solution passes its own tests in the
sandbox (known misses listed with their reason), and cross-wired ones (problem i's code
against problem j's tests, j half the set away) fail.

`score_item` runs from a pool of 4 threads (no Ray); each call is one or more sandboxed
processes. Adjacent leetcode rows are often the two versions of one LeetCode problem
(same method, one solution solves both), hence the half-set offset for cross-wiring.
"""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from skyeval import SkyEnvBuilder
from tests.conftest import load_summary, run_cli, run_folder

KNOWN_MISSES = {
    "mbpp": {"123": ("reference amicable_numbers_sum(9999) is quadratic: 5.2 s of CPU alone, at the edge of the 6 s "
                     "CPU limit (19 s of wall time at load 15): passes or times out with the CPU's speed under load")},
    "leetcode": {"126": "reference imports sortedcontainers, which the sandbox's /usr/bin/python3 lacks"},
}
slow = pytest.mark.slow


def score_all(env, items):
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(env.score_item, items))


@pytest.mark.parametrize("name", ["humaneval", "apps", pytest.param("mbpp", marks=slow), pytest.param("leetcode", marks=slow)])
def test_references_pass_and_cross_wired_fail(name, data_dir):
    env = SkyEnvBuilder.build(name)
    problems = env.load_problems()
    items = [{**p, "generation": env.reference_generation(p)} for p in problems]
    shift = len(problems) // 2 or 1
    wired = [{**item, "tests_json": other["tests_json"], "starter_code": other["starter_code"]}
             for item, other in zip(items, problems[shift:] + problems[:shift])]
    start = time.monotonic()
    gold = score_all(env, items)
    gold_s = time.monotonic() - start
    crossed = score_all(env, wired)
    misses = {p["id"]: r["failure_kind"] for p, r in zip(problems, gold) if not r["passed"]}
    known = KNOWN_MISSES.get(name, {})
    print(f"\n{name}: {len(problems) - len(misses)}/{len(problems)} references pass in {gold_s:.1f}s; "
          f"cross-wired pass {sum(r['passed'] for r in crossed)}/{len(problems)} "
          f"in {time.monotonic() - start - gold_s:.1f}s")
    for problem_id, kind in misses.items():
        print(f"  miss {problem_id}: {kind}; {known.get(problem_id, 'UNEXPECTED')}")
    assert set(misses) <= set(known), misses
    assert not any(r["passed"] for r in crossed)


@slow
def test_cli_humaneval_reference_scores_full_marks(tmp_path, data_dir):
    run_cli("evaluate", "+env=humaneval", "model_config=reference", cwd=tmp_path)
    summary = load_summary(run_folder(tmp_path / "outputs", "humaneval_reference_t0.0"))
    assert summary["counts"]["scored"] == 164 and summary["counts"]["failed"] == 0
    assert summary["metrics"]["accuracy"] == 1.0
    sandbox = summary["scoring"]["sandbox"]
    assert sandbox["python"] and sandbox["python_version"].startswith("3.") and sandbox["protections"]["rlimits"]
    # 158 problems' asserts all convert; the 6 with a random or computed check are judged on
    # the trusted side (on main at 56bee16 they ran in-process: 158/164 isolated)
    assert summary["scoring"]["grading"] == {"isolated": 1.0, "samples": 164}
    assert summary["scoring"]["float_rule"] == "exact" and summary["scoring"]["passed_by_tolerance"] == 0
