"""ShareGPT conversion of stored prompts (chat or text) plus a response."""

import pytest

from skyeval.curation.sharegpt import sharegpt_row, to_sharegpt
from skyeval.envs.registry import SkyEnvBuilder
from skyeval.templates import Template


def test_chat_prompt_with_system_prompt_maps_roles(data_dir):
    env = SkyEnvBuilder.build("gsm8k", {"limit": 1, "template": {"system_prompt_name": "qwq"}})
    problem = env.apply_prompt_template_on_item(env.load_problems()[0])
    row = sharegpt_row({**problem, "sample_idx": 0, "generation": "Twelve. \\boxed{12}"})
    assert [t["from"] for t in row["conversations"]] == ["system", "human", "gpt"]
    assert row["conversations"][1]["value"].startswith(problem["question"])
    assert row["conversations"][2]["value"] == "Twelve. \\boxed{12}"
    assert (row["id"], row["sample_idx"]) == (problem["id"], 0)


def test_text_prompt_and_assistant_prefill():
    assert to_sharegpt("Question: 1+1?\nAnswer:", " 2")["conversations"] == [
        {"from": "human", "value": "Question: 1+1?\nAnswer:"}, {"from": "gpt", "value": " 2"}]
    prompt = Template(messages=[{"role": "user", "content": "{question}"},
                                {"role": "assistant", "content": "<think>\n"}]).render({"question": "1+1?"})
    turns = to_sharegpt(prompt, "easy</think> 2")["conversations"]
    assert turns == [{"from": "human", "value": "1+1?"}, {"from": "gpt", "value": "<think>\neasy</think> 2"}]


def test_unknown_role_is_an_error():
    with pytest.raises(ValueError, match="unknown chat role 'tool'"):
        to_sharegpt([{"role": "tool", "content": "x"}], "y")
