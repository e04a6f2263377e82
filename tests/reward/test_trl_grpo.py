"""A real GRPO run in TRL (CPU, the tests' tiny model) with skyeval's reward."""

from __future__ import annotations

import pytest

from skyeval.reward.trl import TRLReward, trl

pytestmark = pytest.mark.slow


class RecordingReward(TRLReward):
    """skyeval's TRL reward, recording what the trainer passed it and what it returned."""

    def __init__(self, base: TRLReward) -> None:
        super().__init__(base.reward, base.gold_column, base.__name__)
        self.calls: list[dict] = []
        self.outputs: list[list[float]] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        self.outputs.append(super().__call__(**kwargs))
        return self.outputs[-1]


def test_grpo_trains_two_steps_with_skyevals_reward(tiny_model, data_dir, tmp_path):
    pytest.importorskip("trl", reason="pip install -e '.[trl]'")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from skyeval.envs.registry import SkyEnvBuilder

    problems = SkyEnvBuilder.build("math500", {"limit": 4}).load_problems()
    rows = [{"prompt": p["question"][:200] + "\nPut the answer in \\boxed{}.", "answer": p["expected"],
             "level": str(p.get("id"))} for p in problems]
    # Random text is never right and always runs to max_completion_length: the soft overlong
    # penalty in characters gives each group varied rewards, so GRPO's advantages are not zero.
    reward = RecordingReward(trl("math500", weights={"correct": 1.0, "length": 1.0}, max_length=400,
                                 overlong_buffer=399, length_unit="characters"))
    args = GRPOConfig(output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=16, logging_steps=1, report_to="none", use_cpu=True, bf16=False,
                      learning_rate=1e-4, save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=tiny_model, reward_funcs=[reward], args=args, train_dataset=Dataset.from_list(rows))
    try:
        trainer.train()
    finally:
        reward.reward.close()

    assert trainer.state.global_step == 2 and len(reward.calls) == 2
    for call in reward.calls:  # the trainer's real arguments
        assert len(call["prompts"]) == len(call["completions"]) == len(call["completion_ids"]) == 4
        assert all(p in {r["prompt"] for r in rows} for p in call["prompts"])
        assert all(isinstance(c, str) for c in call["completions"])
        assert [len(ids) for ids in call["completion_ids"]] and all(0 < len(ids) <= 16 for ids in call["completion_ids"])
        gold = {r["prompt"]: r["answer"] for r in rows}
        assert call["answer"] == [gold[p] for p in call["prompts"]]  # the dataset's column, row by row
        assert "level" in call and callable(call["log_metric"]) and call["trainer_state"] is trainer.state
    steps = [entry for entry in trainer.state.log_history if "rewards/skyeval_math500/mean" in entry]
    assert len(steps) == 2
    for entry, values in zip(steps, reward.outputs):  # the reward's values reached the trainer's metrics
        assert any(v != 0.0 for v in values)
        assert entry["rewards/skyeval_math500/mean"] == pytest.approx(sum(values) / len(values), abs=1e-5)
        assert entry["skyeval_math500/length"] == pytest.approx(sum(values) / len(values), abs=1e-5)
        assert entry["skyeval_math500/correct"] == 0.0
        assert entry["rewards/skyeval_math500/std"] > 0 and entry["grad_norm"] > 0  # a learning signal
