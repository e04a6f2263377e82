"""skyeval.reward: the components, the TRL adapter's contract and verl's, on the real graders."""

from __future__ import annotations

import threading

import pytest

from skyeval.errors import ConfigError
from skyeval.reward import Reward, RewardConfig, trl, verl
from skyeval.reward.components import format_score, length_penalty
from skyeval.reward.sources import DATA_SOURCES, env_for


@pytest.fixture(scope="module")
def reward():
    r = trl("math500", weights={"correct": 1.0, "format": 0.5})
    yield r
    r.reward.close()


# ---- reasoning: a think block's answers are never graded ------------------------------
def test_only_the_answer_after_the_think_block_is_graded(reward):
    completions = ["<think>first I get \\boxed{4}</think> so the answer is \\boxed{5}",  # wrong answer, right in thought
                   "<think>first I get \\boxed{5}</think> so the answer is \\boxed{4}",  # right answer
                   "<think>I am sure it is \\boxed{4}",  # truncated reasoning: no answer at all
                   "the answer is \\boxed{4}"]  # no reasoning: the whole text is the answer
    results = reward.reward.score(completions, ["4"] * 4)
    assert [r["correct"] for r in results] == [0.0, 1.0, 0.0, 1.0]
    assert [r["format"] for r in results] == [1.0, 1.0, 0.0, 0.5]
    assert [r["reward"] for r in results] == [0.5, 1.5, 0.0, 1.25]
    assert all(r["error"] is None for r in results)


def test_a_prompt_that_opens_the_think_block_makes_an_unclosed_output_reasoning(reward):
    opened = "<|user|>What is 2+2?<|assistant|><think>\n"
    results = reward.reward.score(["so it is \\boxed{4}", "\\boxed{4}</think> the answer is \\boxed{4}"], ["4", "4"],
                                  prompts=[opened, opened])
    assert [r["correct"] for r in results] == [0.0, 1.0]
    # the same text after a prompt that closed its block (or never opened one) is an answer
    assert reward.reward.score(["so it is \\boxed{4}"], ["4"], prompts=["<think>x</think> Q:"])[0]["correct"] == 1.0


# ---- components ------------------------------------------------------------------------
def test_length_penalty_is_soft_overlong_punishment():
    assert [length_penalty(n, 100, 20) for n in (0, 80, 90, 100, 101, 10_000)] == [0.0, 0.0, -0.5, -1.0, -1.0, -1.0]
    assert length_penalty(10_000, None, 0) == 0.0
    assert format_score("x \\boxed{1}", True) == 1.0 and format_score("x", False) == 0.0


def test_weights_combine_components_and_lengths_count_tokens_when_given():
    r = Reward("math500", {"weights": {"correct": 2.0, "length": 1.0}, "max_length": 10, "overlong_buffer": 5})
    try:
        results = r.score(["\\boxed{4}", "\\boxed{4}"], ["4", "4"], lengths=[3, 8])
        assert [x["length"] for x in results] == [0.0, -0.6]
        assert [x["reward"] for x in results] == [2.0, pytest.approx(1.4)]
    finally:
        r.close()
    r = Reward("math500", {"weights": {"length": 1.0}, "max_length": 10, "overlong_buffer": 5, "length_unit": "characters"})
    try:  # characters, whatever token counts the trainer passes
        assert [x["length"] for x in r.score(["\\boxed{4}", "x" * 8], ["4", "4"], lengths=[3, 3])] == [-0.8, -0.6]
    finally:
        r.close()


def test_bad_reward_configs_are_refused():
    with pytest.raises(ConfigError, match="unknown reward component"):
        RewardConfig(weights={"corect": 1.0})
    with pytest.raises(ConfigError, match="overlong_buffer"):
        RewardConfig(max_length=10, overlong_buffer=10)
    with pytest.raises(ConfigError, match="length_unit"):
        RewardConfig(length_unit="words")
    with pytest.raises(ConfigError, match="think_tags"):
        RewardConfig(think_tags=["<think>"])


# ---- TRL's contract ----------------------------------------------------------------------
def test_trl_reward_takes_strings_and_conversations_and_reads_the_gold_column(reward):
    logged, extra = {}, {}
    out = reward(prompts=["Q1", [{"role": "user", "content": "Q2"}], "Q3"],
                 completions=["\\boxed{4}", [{"role": "assistant", "content": "<think>\\boxed{1}</think>\\boxed{4}"}],
                              [{"role": "assistant", "content": [{"type": "text", "text": "\\boxed{3}"}]}]],
                 completion_ids=[[1, 2], [3], [4, 5, 6]], answer=["4", "4", "4"], level=[1, 2, 3],
                 trainer_state=object(), log_metric=logged.__setitem__, log_extra=extra.__setitem__)
    assert out == [1.25, 1.5, 0.25]
    assert reward.__name__ == "skyeval_math500"
    assert logged == {"skyeval_math500/correct": pytest.approx(2 / 3), "skyeval_math500/format": pytest.approx(2 / 3),
                      "skyeval_math500/length": 0.0}
    assert extra == {"skyeval_math500/error": ["", "", ""]}


def test_trl_reward_gold_column_and_name_are_configurable():
    f = trl("gsm8k", gold_column="final", name="gsm8k_correct")
    try:
        assert f.__name__ == "gsm8k_correct"
        assert f(prompts=["q"], completions=["#### 1,234"], final=["1234"]) == [1.0]
        with pytest.raises(ValueError, match="column 'final'.*columns: \\['answer'\\]"):
            f(prompts=["q"], completions=["x"], answer=["1"])
    finally:
        f.reward.close()


def test_trl_reward_never_raises_on_model_output_and_is_deterministic(reward):
    hostile = ["", None, "\\boxed{" * 5000, "}" * 10_000 + "\\boxed{4}", "x" * 300_000, "\x00\ud800", 12345,
               "```python\nimport os; os.system('rm -rf /')\n```", "<think></think></think>\\boxed{4}"]
    first = reward(prompts=["q"] * len(hostile), completions=hostile, answer=["4"] * len(hostile))
    assert first == reward(prompts=["q"] * len(hostile), completions=hostile, answer=["4"] * len(hostile))
    assert first[:3] == [0.0, 0.0, 0.0] and first[3] == 1.25 and first[-1] == 1.5
    assert all(isinstance(x, float) for x in first)


def test_trl_reward_is_thread_safe(reward):
    out = {}

    def call(n: int) -> None:
        gold = [str(n)] * 10
        out[n] = reward(prompts=["q"] * 10, completions=[f"\\boxed{{{n}}}", "\\boxed{-1}"] * 5, answer=gold)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert out == {n: [1.25, 0.25] * 5 for n in range(6)}


def test_code_rewards_run_the_sandbox_grader():
    from skyeval.envs.registry import SkyEnvBuilder

    problem = SkyEnvBuilder.build("humaneval", {"limit": 1}).load_problems()[0]
    f = trl("humaneval", item_timeout_s=60)
    try:
        right = SkyEnvBuilder.build("humaneval").reference_generation(problem)
        wrong = right.replace("distance < threshold", "distance > threshold")
        looping = "```python\ndef has_close_elements(numbers, threshold):\n    while True: pass\n```"
        assert right != wrong
        out = f(prompts=[problem["question"]] * 4, completions=[right, wrong, looping, "no code"],
                tests_json=[problem["tests_json"]] * 4)
        assert out == [1.0, 0.0, 0.0, 0.0]
    finally:
        f.reward.close()


# ---- verl's contract ------------------------------------------------------------------------
# verl (0.9) does not install here without replacing this venv's transformers, so these call
# compute_score exactly as its reward managers do (verl/workers/reward_manager/naive.py, batch.py).
def test_verl_naive_manager_call():
    reward_kwargs = {"weights": {"correct": 1.0, "format": 0.1}}  # custom_reward_function.reward_kwargs
    score = verl.compute_score(data_source="lighteval/MATH", solution_str="<think>2?</think> $\\boxed{\\frac{1}{2}}$",
                               ground_truth="\\frac12", extra_info={"index": 0, "split": "train"}, **reward_kwargs)
    assert score == {"score": 1.1, "correct": 1.0, "format": 1.0, "length": 0.0, "ungraded": 0.0}
    wrong = verl.compute_score(data_source="openai/gsm8k", solution_str="#### 71", ground_truth="72",
                               extra_info=None, **reward_kwargs)
    assert wrong["score"] == 0.0 and set(wrong) == set(score)  # the same keys on every item (reward_extra_info)


def test_verl_batch_manager_call():
    scores = verl.compute_score(data_sources=["openai/gsm8k", "math500", "openai/gsm8k", "DigitalLearningGmbH/MATH-lighteval"],
                                solution_strs=["#### 72", "\\boxed{3}", "<think>#### 5</think>#### 6", "\\boxed{x^2}"],
                                ground_truths=["72", "4", "5", "x^2"], extra_infos=[{}, {}, None, {}])
    assert [s["score"] for s in scores] == [1.0, 0.0, 0.0, 1.0]
    assert verl.compute_score_batch(["gsm8k"], ["#### 72"], ["72"], [{}])[0]["score"] == 1.0


def test_data_sources_map_to_envs_and_an_unknown_one_names_the_closest():
    assert env_for("openai/gsm8k") == "gsm8k" and env_for("lighteval/MATH") == "math500"
    assert env_for("AIME25") == "aime25"  # our own names, any case
    from skyeval.envs.registry import SkyEnvBuilder

    assert set(DATA_SOURCES.values()) <= set(SkyEnvBuilder.names())
    with pytest.raises(ConfigError, match="Did you mean 'openai/gsm8k'"):
        env_for("openai/gsm8kk")
