"""The hack corpus (tests/scorers/hacks/) through the RL rewards: TRL's reward function,
verl's `compute_score` (batch form) and the reward server score code through the same path
as `env.score_item`, with the same verdicts: every hack 0, the honest program 1.

Two problems: HumanEval/38 (its check draws random strings and encodes them with the
prompt's helper: judged on the trusted side) and the literal a+b problem of test_hacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skyeval import SkyEnvBuilder
from skyeval.reward import trl, verl
from tests.reward.test_server import post, reward_server

HACKS_DIR = Path(__file__).resolve().parents[1] / "scorers" / "hacks"
HACKS = sorted(p.stem for p in HACKS_DIR.glob("*.py") if p.stem != "__init__")
PLUS = {"task_id": "H/0", "prompt": 'def solve(a, b):\n    """Return a + b."""\n', "entry_point": "solve",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    for a, b, c in [(1, 2, 3), (10, 20, 30), (-5, 5, 0)]:\n"
                "        assert candidate(a, b) == c\n"}


@pytest.fixture(scope="module")
def cases(data_dir):
    """(name, completion, tests_json, expected verdict) for every hack on both problems."""
    env = SkyEnvBuilder.build("humaneval", {"timeout_s": 3.0})
    real = next(p for p in env.load_problems() if p["id"] == "HumanEval/38")
    plus = env.to_problem(PLUS, 0)
    found = []
    for problem in (real, plus):
        found.append((f"{problem['id']}:reference", env.reference_generation(problem), problem["tests_json"], 1.0))
        for hack in HACKS:
            code = re.sub(r"\bsolve\b", problem["entry_point"], (HACKS_DIR / f"{hack}.py").read_text())
            found.append((f"{problem['id']}:{hack}", f"```python\n{code}\n```", problem["tests_json"], 0.0))
    return env, found


def test_score_item_verdicts(cases):
    env, found = cases
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(lambda c: env.score_item({"generation": c[1], "tests_json": c[2]})["score"], found))
    assert {c[0]: s for c, s in zip(found, scores)} == {c[0]: c[3] for c in found}


def test_trl_and_verl_rewards_give_the_same_verdicts(cases):
    _, found = cases
    want = {c[0]: c[3] for c in found}
    f = trl("humaneval", item_timeout_s=120, env_knobs={"timeout_s": 3.0})
    try:
        rewards = f(prompts=["Complete the function."] * len(found), completions=[c[1] for c in found],
                    tests_json=[c[2] for c in found])
    finally:
        f.reward.close()
    assert dict(zip(want, rewards)) == want
    scores = verl.compute_score(data_sources=["humaneval"] * len(found), solution_strs=[c[1] for c in found],
                                ground_truths=[c[2] for c in found], extra_infos=[None] * len(found),
                                env_knobs={"timeout_s": 3.0}, item_timeout_s=120)
    assert {c[0]: s["correct"] for c, s in zip(found, scores)} == want
    assert all(s["ungraded"] == 0.0 for s in scores)


@pytest.mark.slow
def test_reward_server_gives_the_same_verdicts(cases):
    _, found = cases
    with reward_server("+env=humaneval", "env.timeout_s=3", "reward.workers=2", "reward.item_timeout_s=120") as (_, port):
        status, body = post(port, {"query": [c[1] for c in found], "labels": [json.loads(c[2]) for c in found]})
    assert status == 200 and body["errors"] == [None] * len(found)
    assert {c[0]: r for c, r in zip(found, body["rewards"])} == {c[0]: c[3] for c in found}
