"""Every hack of tests/scorers/hacks/ on every problem of the code benchmarks.

Each hack is written for `solve(a, b)`; here its `solve` is renamed to the problem's
function (HumanEval's entry point, the function MBPP's asserts call, LeetCode's method) and
the program is scored with `env.score_item`, as a trainer's reward would. Prints, per env,
the problems, the samples scored, and every (problem, hack) that scored above 0, then the
reference solution's score as a control. Stdin problems (apps, taco, codeforces ...) read
the hacks as they are (a hack prints what it prints).

Run: SKYEVAL_DATA_DIR=../shared/data python scripts/hack_sweep.py [--envs humaneval mbpp]
     [--hacks always_equal int_subclass] [--limit N] [--threads 4]
"""

from __future__ import annotations

import argparse
import builtins
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HACKS = Path(__file__).resolve().parents[1] / "tests" / "scorers" / "hacks"
ENVS = {"humaneval": {}, "mbpp": {}, "mbpp_sanitized": {"sanitized": True}, "leetcode": {}, "apps": {},
        "codeforces": {}, "code_contests": {}}


def function_of(problem: dict) -> str | None:
    """The name a program must define for this problem (None: a stdin problem)."""
    if problem.get("entry_point"):
        return re.findall(r"\w+", problem["entry_point"])[-1]  # "Solution().twoSum" -> twoSum
    tests = json.loads(problem["tests_json"])
    if tests["type"] == "asserts":
        called = re.findall(r"(\w+)\(", tests["asserts"][0].splitlines()[-1])
        return next((name for name in called if not hasattr(builtins, name)), None)
    return tests.get("fn_name")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="*", default=list(ENVS))
    parser.add_argument("--hacks", nargs="*", default=None, help="hack file stems (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="problems per env")
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    from skyeval import SkyEnvBuilder

    hacks = {p.stem: p.read_text() for p in sorted(HACKS.glob("*.py")) if p.stem != "__init__"
             and (args.hacks is None or p.stem in args.hacks)}
    for name in args.envs:
        env_name = "mbpp" if name == "mbpp_sanitized" else name
        env = SkyEnvBuilder.build(env_name, {**ENVS[name], "timeout_s": 3.0})
        try:
            rows = env.load_rows()
        except Exception as err:  # noqa: BLE001 - a benchmark without local data is reported, not fatal
            print(f"{name}: skipped ({err})")
            continue
        problems = [p for p in (env.to_problem(row, i) for i, row in enumerate(rows)) if p["tests_json"]]
        problems = problems[: args.limit] if args.limit else problems
        jobs = []
        for problem in problems:
            function = function_of(problem)
            for hack, code in hacks.items():
                program = re.sub(r"\bsolve\b", function, code) if function else code
                jobs.append((problem, hack, f"```python\n{program}\n```"))
        start = time.monotonic()
        with ThreadPoolExecutor(args.threads) as pool:
            scores = list(pool.map(lambda job: env.score_item({**job[0], "generation": job[2]})["score"], jobs))
        credited = [(job[0]["id"], job[1]) for job, score in zip(jobs, scores) if score > 0]
        reference = [env.score_item({**p, "generation": env.reference_generation(p)})["score"]
                     for p in problems if env.reference_generation(p)]
        print(f"{name}: {len(problems)} problems x {len(hacks)} hacks = {len(jobs)} samples in "
              f"{time.monotonic() - start:.0f} s; credited: {len(credited)} {credited[:20]}; "
              f"reference solutions passing: {sum(s == 1.0 for s in reference)}/{len(reference)}")


if __name__ == "__main__":
    main()
