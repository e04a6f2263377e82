"""The judge behind the tiny local vLLM model (CPU): the same client and cache as with an
HTTP judge. The model writes random text, so its replies are judge parse failures, never
verdicts; greedy and seeded, the same question gets the same reply."""

from __future__ import annotations

import pytest

from skyeval.backends.vllm import VLLMConfig
from skyeval.grading import GradingConfig, Judge, JudgeCache
from skyeval.grading.judge import UNPARSEABLE, JudgeItem
from tests.backends.conftest import CPU_ENGINE_KWARGS


@pytest.mark.slow
def test_tiny_vllm_judge_replies_are_parse_failures_and_deterministic(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    engine = {**CPU_ENGINE_KWARGS, "distributed_executor_backend": "uni", "max_num_seqs": 8}
    config = GradingConfig(mode="fallback", judge=VLLMConfig(tiny_model, engine_kwargs=engine),
                           prompt="Is {answer} the same as {gold}?", max_tokens=12)
    items = [JudgeItem("p", "2", "1+1"), JudgeItem("p", "3", "x"), JudgeItem("p", "2", "1+1")]
    judge = Judge(config, JudgeCache(tmp_path / "a"))
    try:
        first = judge.judge(items)
        assert judge.counts["requests"] == 2 and judge.counts["deduplicated"] == 1
        assert all(j.verdict is None and j.error == UNPARSEABLE and j.reply for j in first)
        judge.cache = JudgeCache(tmp_path / "b")  # ask again, on the same engine
        again = judge.judge(items)
        assert [j.reply for j in again] == [j.reply for j in first]
        assert judge.summary()["tokens"]["completion"] > 0
    finally:
        judge.close()
