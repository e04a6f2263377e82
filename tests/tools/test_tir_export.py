"""TIR traces become training data: a run with `tools=python`, then `curate.py sft`, keeps
each kept sample's turns, tool outputs as their own turns (ShareGPT's `observation`, the
messages format's `tool`), and so do the preference pairs."""

from __future__ import annotations

import json

from skyeval import SkyEnvBuilder
from skyeval.config.compose import compose
from skyeval.curation.exports import sft_row
from skyeval.curation.pairs import question_pairs
from skyeval.run.app import execute
from tests.backends.fault_server import FaultServer
from tests.curation.conftest import curate_main
from tests.tools.code_model import CodeModel


def test_sft_rows_keep_the_tool_turns(tmp_path, data_dir, ray_session):
    problems = list(SkyEnvBuilder.build("gsm8k", {"limit": 3}).iter_problems())
    answers = {p["question"]: p["expected"] for p in problems}
    with FaultServer(responder=CodeModel(answers, failing={problems[1]["question"]})) as server:
        config = compose("+env=gsm8k", "env.limit=3", "tools=python", "model_config=openai",
                         "model_config.model_source=coder", f"model_config.api_url={server.url}",
                         "model_config.api_key_env=null")
        assert execute(config, tmp_path / "run")["metrics"]["accuracy"] == 1.0
    curate_main()(["sft", str(tmp_path / "run"), "--format", "sharegpt"])
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "curated" / "sft.jsonl").open())}
    assert sorted(rows) == sorted(p["id"] for p in problems)
    plain, fixed = rows[problems[0]["id"]]["conversations"], rows[problems[1]["id"]]["conversations"]
    assert [t["from"] for t in plain] == ["human", "gpt", "observation", "gpt"]
    assert [t["from"] for t in fixed] == ["human", "gpt", "observation", "gpt", "observation", "gpt"]
    assert plain[0]["value"].startswith(problems[0]["question"])
    assert plain[1]["value"].endswith(f"```python\nanswer = {problems[0]['expected']}\nprint(answer)\n```")
    assert plain[2]["value"] == problems[0]["expected"]  # the output as the model was shown it
    assert plain[3]["value"].endswith(f"\\boxed{{{problems[0]['expected']}}}.")
    assert "NameError" in fixed[2]["value"]


def test_a_prefill_joins_the_first_reply_and_plain_samples_are_unchanged():
    transcript = [{"role": "assistant", "content": "```python\nprint(2)\n```"},
                  {"role": "tool", "content": "2", "status": "ok"}, {"role": "assistant", "content": "\\boxed{2}"}]
    prompt = [{"role": "user", "content": "1+1?"}, {"role": "assistant", "content": "Let me run it.\n"}]
    sample = {"id": "q", "sample_idx": 0, "prompt": prompt, "generation": "ignored", "transcript": transcript}
    row = sft_row(sample, format="sharegpt")
    assert row["conversations"] == [{"from": "human", "value": "1+1?"},
                                    {"from": "gpt", "value": "Let me run it.\n```python\nprint(2)\n```"},
                                    {"from": "observation", "value": "2"}, {"from": "gpt", "value": "\\boxed{2}"}]
    assert [m["role"] for m in sft_row(sample)["messages"]] == ["user", "assistant", "tool", "assistant"]
    one_turn = [{"role": "assistant", "content": "\\boxed{2}"}]  # a loop sample that called no tool
    assert sft_row({"id": "q", "sample_idx": 0, "prompt": prompt[:1], "generation": "\\boxed{2}",
                    "transcript": one_turn}, format="sharegpt")["conversations"][-1] == {"from": "gpt",
                                                                                        "value": "\\boxed{2}"}
    short = {"id": "q", "sample_idx": 1, "prompt": prompt[:1], "generation": "\\boxed{2}", "score": 1.0,
             "usage": {"completion_tokens": 5}}
    (pair,) = question_pairs([dict(sample, prompt=prompt[:1], score=1.0, usage={"completion_tokens": 30}), short])
    assert pair["chosen"] == [{"role": "assistant", "content": "\\boxed{2}"}]
    assert [m["role"] for m in pair["rejected"]] == ["assistant", "tool", "assistant"]  # the tool turns kept
