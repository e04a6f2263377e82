"""The math hack corpus (tests/scorers/math_hacks.py) scores 0 wherever a math answer is graded:
every math env's `score_item`, the TRL and verl rewards and the reward server.

Approximations of exact golds, hedges in every form, ranges, intervals, sets, `\\pm`, and a box
followed by a different final line. In an env with the `approximate` numeric rule (Minerva) an
approximation within the gold's stated precision is right by design, and counted: such a pass
must say `passed_by_tolerance`; every other hack scores 0 there too.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from skyeval import SkyEnvBuilder
from skyeval.reward import trl, verl
from skyeval.scorers.math.equivalence import is_answer_set
from tests.reward.test_server import post, reward_server
from tests.scorers.math_hacks import KINDS, hacks, numeric_value

MATH_ENVS = ["aime24", "aime25", "amc23", "math500", "gsm8k", "minervamath", "olympiadbench_math_en", "liveaops",
             "omni_math", "numina"]
FIXTURE_ENVS = {"omni_math", "numina"}
GOLDS_PER_ENV = 6


def _env(name: str):
    from pathlib import Path

    knobs = {"timeout_s": 30.0}  # a loaded machine must not turn a slow comparison into a pass or a fail
    if name in FIXTURE_ENVS:
        knobs.update(data_dir=str(Path(__file__).resolve().parents[1] / "fixtures"), local_files=f"{name}.jsonl")
    return SkyEnvBuilder.build(name, knobs)


def _gold(problem: dict) -> str | None:
    """The problem's one gold value (the first listed form), or None for a list or set answer."""
    expected = problem["expected"]
    gold = expected[0] if isinstance(expected, list) and expected else expected
    return gold if isinstance(gold, str) and gold and not is_answer_set(gold) else None


def _hacked_items(env, count: int = GOLDS_PER_ENV, seed: int = 47) -> list[tuple[str, dict]]:
    """(kind, item) for every hack of `count` single-valued golds of the env's own problems, half
    of them numbers where the env has them (approximations and ranges are built around those)."""
    problems = [p for p in env.load_problems() if _gold(p)]
    numbers = [p for p in problems if numeric_value(_gold(p)) is not None]
    rng = random.Random(seed)
    picked = rng.sample(numbers, min(count // 2, len(numbers)))
    rest = [p for p in problems if p not in picked]
    picked += rng.sample(rest, min(count - len(picked), len(rest)))
    items = []
    for i, problem in enumerate(picked):
        others = [_gold(picked[(i + 1) % len(picked)]), _gold(picked[(i + 2) % len(picked)])]
        items += [(kind, {**problem, "generation": text}) for kind, text in hacks(_gold(problem), others)]
    return items


@pytest.mark.parametrize("name", MATH_ENVS)
def test_no_hack_is_credited_in_any_math_env(name, data_dir):
    env = _env(name)
    items = _hacked_items(env)
    assert {kind for kind, _ in items} == set(KINDS)  # every env has number golds: every kind is tried
    credited, by_tolerance = [], Counter()
    for kind, item in items:
        result = env.score_item(item)
        if result["score"] > 0:
            if env.numeric_rule == "approximate" and kind == "approximation" and result["passed_by_tolerance"]:
                by_tolerance[kind] += 1  # rounded within the gold's precision: right by the approximate rule
            else:
                credited.append((kind, item["expected"], item["generation"], result["extracted"]))
    print(f"\n{name} ({env.numeric_rule}): {len(items)} hacked answers, {len(credited)} credited, "
          f"{sum(by_tolerance.values())} passed by the approximate rule's tolerance")
    assert not credited, credited[:10]


def test_the_approximate_rule_credits_approximations_only_by_tolerance(data_dir):
    """Minerva's rule: a rounded value of an integer gold passes, flagged; a rounded value of a
    fraction, root or pi never does, even there."""
    env = _env("minervamath")
    assert env.score_item({"generation": r"\boxed{49.6}", "expected": "50"})["passed_by_tolerance"] is True
    assert env.score_item({"generation": r"\boxed{50}", "expected": "50"})["passed_by_tolerance"] is False
    for generation, gold in ((r"\boxed{0.333}", r"\frac{1}{3}"), (r"\boxed{1.414}", r"\sqrt{2}"), (r"\boxed{3.14}", r"\pi")):
        assert env.score_item({"generation": generation, "expected": gold})["score"] == 0.0


@pytest.fixture(scope="module")
def math500_hacks(data_dir):
    env = _env("math500")
    items = _hacked_items(env, count=6)
    return [(kind, item["generation"], item["expected"], item["question"]) for kind, item in items]


def test_the_corpus_is_broad(math500_hacks):
    """Every kind of hack, on numbers and expressions alike."""
    kinds = Counter(kind for kind, *_ in math500_hacks)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 10, kinds


def test_trl_and_verl_rewards_give_hacks_nothing(math500_hacks):
    texts = [text for _, text, _, _ in math500_hacks]
    golds = [gold for _, _, gold, _ in math500_hacks]
    reward = trl("math500", workers=2)
    try:
        rewards = reward(prompts=[q for *_, q in math500_hacks], completions=texts, answer=golds)
    finally:
        reward.reward.close()
    assert len(rewards) == len(texts) and not any(rewards), [t for t, r in zip(texts, rewards) if r]
    results = verl.compute_score(data_sources=["math500"] * len(texts), solution_strs=texts, ground_truths=golds,
                                 extra_infos=[{"question": q} for *_, q in math500_hacks], workers=2)
    assert not any(r["score"] or r["correct"] for r in results), [t for t, r in zip(texts, results) if r["score"]]
    assert not any(r["ungraded"] for r in results)


def test_the_reward_server_gives_hacks_nothing(math500_hacks):
    with reward_server("+env=math500", "reward.workers=2") as (_, port):
        status, answer = post(port, {"query": [text for _, text, _, _ in math500_hacks],
                                     "labels": [gold for _, _, gold, _ in math500_hacks]})
    assert status == 200, answer
    assert len(answer["rewards"]) == len(math500_hacks) and not any(answer["rewards"]), answer
