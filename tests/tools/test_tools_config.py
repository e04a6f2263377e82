"""The `tools` config group and the TIR templates, composed as the CLI composes them;
`tools=none` leaves a run as it was (no loop, the same records, fingerprint and folder)."""

from __future__ import annotations

import pytest

from skyeval.backends.base import SamplingParams
from skyeval.backends.reference import ReferenceBackend, ReferenceConfig
from skyeval.config.compose import compose
from skyeval.config.fingerprints import digest, fingerprint
from skyeval.config.schema import RunConfig
from skyeval.errors import ConfigError
from skyeval.run.app import execute
from skyeval.templates import SYSTEM_PROMPTS
from skyeval.tools import ToolsConfig, TurnLoop
from tests.conftest import read_jsonl

PROBLEM = {"id": "1", "question": "What is 6 x 7?", "expected": "42"}


def test_tools_python_and_its_knobs_compose(data_dir):
    config = compose("+env=gsm8k", "tools=python", "tools.max_calls=2", "tools.timeout_s=10")
    assert (config.tools.name, config.tools.max_calls, config.tools.timeout_s) == ("python", 2, 10)
    assert config.tools.output_chars == 400 and config.tools.continuation == "same_message"
    assert compose("+env=gsm8k").tools == ToolsConfig()
    with pytest.raises(ConfigError, match="unknown key 'tools.max_call'. Did you mean 'max_calls'"):
        compose("+env=gsm8k", "tools=python", "+tools.max_call=2")
    with pytest.raises(ConfigError, match="tools.max_calls must be an integer >= 1"):
        compose("+env=gsm8k", "tools=python", "tools.max_calls=0")


def test_tools_none_keeps_the_fingerprint_and_folder_of_a_run_without_the_section(data_dir):
    plain = compose("+env=gsm8k")
    assert fingerprint(compose("+env=gsm8k", "tools=none")) == fingerprint(plain)
    before = plain.to_dict()
    before.pop("tools")  # a config.yaml written before tools existed
    assert fingerprint(RunConfig.of(before)) == fingerprint(plain)
    assert compose("+env=gsm8k", "tools=none").logging.experiment_name == plain.logging.experiment_name
    python = compose("+env=gsm8k", "tools=python")
    assert fingerprint(python)["tools"]["name"] == "python" and "workers" not in fingerprint(python)["tools"]
    assert digest(fingerprint(python)) != digest(fingerprint(plain))
    assert python.logging.experiment_name != plain.logging.experiment_name  # its own folder
    assert digest(fingerprint(compose("+env=gsm8k", "tools=python", "tools.workers=3"))) == digest(fingerprint(python))
    forcing = compose("+env=gsm8k", "sampling_params.min_thinking_tokens=500")
    assert fingerprint(forcing)["sampling"]["min_thinking_tokens"] == 500 and "max_waits" not in fingerprint(plain)["sampling"]


def test_a_run_with_tools_none_writes_what_it_wrote_before(tmp_path, data_dir):
    summary = execute(compose("+env=gsm8k", "env.limit=3", "tools=none"), tmp_path / "run")
    assert "tools" not in summary and summary["metrics"]["accuracy"] == 1.0
    for record in read_jsonl(tmp_path / "run" / "generations"):
        assert set(record) == {"id", "sample_idx", "generation", "finish_reason", "usage", "reasoning", "seed",
                               "prompt", "prompt_hash"}


def test_env_setup_wraps_the_backend_only_for_a_tool_or_budget_forcing(data_dir):
    from skyeval import SkyEnvBuilder

    env = SkyEnvBuilder.build("gsm8k", {"limit": 1})
    assert isinstance(env.setup(ReferenceConfig()).backend, ReferenceBackend)
    assert isinstance(env.setup(ReferenceConfig(), tools={"name": "python"}).backend, TurnLoop)
    assert isinstance(env.setup(ReferenceConfig(), tools=ToolsConfig()).backend, ReferenceBackend)
    env.setup(ReferenceConfig(), sampling_params=SamplingParams(min_thinking_tokens=100))
    assert isinstance(env.backend, TurnLoop)
    env.close()


def test_a_reference_run_with_the_tool_scores_the_golds(tmp_path, data_dir):
    """The golds hold no program: each sample is one turn, with the loop's fields."""
    summary = execute(compose("+env=gsm8k", "env.limit=3", "tools=python"), tmp_path / "run")
    assert summary["metrics"]["accuracy"] == 1.0
    assert summary["tools"]["samples"] == 3 and summary["tools"]["tool_calls"] == 0
    assert summary["tools"]["stopped_by"] == {"reply": 3}
    record = read_jsonl(tmp_path / "run" / "generations")[0]
    assert record["transcript"] == [{"role": "assistant", "content": record["generation"]}]


def test_tir_templates():
    tir = compose("+env=gsm8k", "template=qwen25-math-tir", "tools=python").template
    assert tir.render(PROBLEM) == [{"role": "system", "content": SYSTEM_PROMPTS["qwen_math_tir"]},
                                   {"role": "user", "content": "What is 6 x 7?"}]
    assert SYSTEM_PROMPTS["qwen_math_tir"] == ("Please integrate natural language reasoning with programs to solve "
                                               "the problem above, and put your final answer within \\boxed{}.")
    tora = compose("+env=math500", "template=tora").template.render(PROBLEM)
    assert tora.startswith("Integrate step-by-step reasoning and Python code")
    assert tora.endswith("---\n\nQuestion: What is 6 x 7?\n\nSolution:")
    assert "```python\nfrom sympy import sqrt" in tora and "```output\n13\n```\nThe diagonal is $\\boxed{13}$" in tora


def test_the_shards_of_a_run_add_up_their_tool_counts(tmp_path, data_dir):
    for stage in ("evaluate", "generate"):
        summaries = [execute(compose("+env=gsm8k", "env.limit=5", "tools=python", "shard.count=2", f"shard.index={i}",
                                     stage=stage), tmp_path / stage) for i in range(2)]
        merged = summaries[-1]  # the last shard to finish merges
        assert merged["shards"]["count"] == 2, stage
        assert (merged["tools"]["samples"], merged["tools"]["stopped_by"]) == (5, {"reply": 5}), stage


def test_the_batch_api_cannot_run_a_turn_loop(tmp_path, data_dir):
    from tests.backends.fault_server import FaultServer

    with FaultServer() as server:
        config = compose("+env=gsm8k", "env.limit=2", "tools=python", "model_config=openai_batch",
                         "model_config.model_source=m", f"model_config.api_url={server.url}",
                         "model_config.api_key_env=null")
        with pytest.raises(ConfigError, match="OpenAIBatchBackend cannot send a sample back to the model"):
            execute(config, tmp_path / "run")
        assert not server.log and not (tmp_path / "run").exists()  # refused before anything is sent or claimed
