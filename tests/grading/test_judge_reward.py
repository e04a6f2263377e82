"""The judge in the reward adapters (TRL, verl): batched, with the same cache, against a
scripted judge on 127.0.0.1."""

from __future__ import annotations

import pytest

from skyeval.errors import ConfigError
from skyeval.reward import trl, verl
from skyeval.reward.components import RewardConfig

from .conftest import candidate, judge_prompts

COMPLETIONS = ["<think>it is 1/6</think>It is one chance in six.", "So \\boxed{\\frac{1}{5}}.", "So \\boxed{\\frac{1}{6}}."]
PROMPT = "Two fair dice are rolled. What is the probability that the sum is 7?"


def grading(judge) -> dict:
    return {"mode": "fallback", "judge": {"model_source": "judge", "api_url": judge.url}}


def test_trl_reward_asks_the_judge_only_about_the_undecided_and_caches(judge, tmp_path):
    reward = trl("math500", grading=grading(judge), judge_cache=str(tmp_path / "judge"))
    try:
        args = {"prompts": [[{"role": "user", "content": PROMPT}]] * 3, "completions": COMPLETIONS,
                "answer": ["\\frac{1}{6}"] * 3}
        assert reward(**args) == [1.0, 0.0, 1.0]  # judged right; rules: wrong; rules: right
        [prompt] = judge_prompts(judge)
        assert candidate(prompt) == "It is one chance in six." and PROMPT in prompt  # no reasoning shown
        assert reward(**args) == [1.0, 0.0, 1.0] and len(judge.log) == 1  # the next batch: cached
    finally:
        reward.reward.close()
    again = trl("math500", grading=grading(judge), judge_cache=str(tmp_path / "judge"))  # another process, same folder
    try:
        assert again(prompts=[PROMPT], completions=COMPLETIONS[:1], answer=["\\frac{1}{6}"]) == [1.0]
        assert len(judge.log) == 1
    finally:
        again.reward.close()


def test_verl_batch_call_gives_the_judge_the_question(judge):
    scores = verl.compute_score(data_sources=["math500"] * 3, solution_strs=COMPLETIONS, ground_truths=["\\frac{1}{6}"] * 3,
                                extra_infos=[{"question": PROMPT}] * 3, grading=grading(judge))
    assert [s["score"] for s in scores] == [1.0, 0.0, 1.0]
    assert PROMPT in judge_prompts(judge)[0] and len(judge.log) == 1


def test_audit_is_refused_for_rewards(judge):
    with pytest.raises(ConfigError, match="audit is for runs"):
        RewardConfig(grading={"mode": "audit", "judge": {"model_source": "j", "api_url": judge.url}})
