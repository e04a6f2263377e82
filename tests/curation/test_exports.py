"""SFT rows from stored prompts (chat or text) plus a response: both formats, the
reasoning kept, and the metadata every row carries."""

import pytest

from skyeval.curation.exports import ReasoningFormat, conversation, sft_row, to_sharegpt
from skyeval.envs.registry import SkyEnvBuilder
from skyeval.errors import ConfigError
from skyeval.templates import Template

RUN = {"env": "gsm8k", "model": "Qwen/QwQ-32B", "sampling": {"n": 4, "temperature": 0.7, "top_p": 0.95,
                                                             "max_tokens": 2048}}


def test_chat_prompt_with_system_prompt_in_both_formats(data_dir):
    env = SkyEnvBuilder.build("gsm8k", {"limit": 1, "template": {"system_prompt_name": "qwq"}})
    problem = env.apply_prompt_template_on_item(env.load_problems()[0])
    sample = {**problem, "sample_idx": 0, "generation": "Twelve. \\boxed{12}", "score": 1.0, "verdict": "equal",
              "seed": 3, "usage": {"prompt_tokens": 50, "completion_tokens": 9, "reasoning_tokens": None}}
    row = sft_row(sample, run=RUN)
    assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    assert row["messages"][1]["content"].startswith(problem["question"])
    assert row["messages"][2] == {"role": "assistant", "content": "Twelve. \\boxed{12}"}
    assert (row["id"], row["sample_idx"]) == (problem["id"], 0)
    assert row["metadata"] == {
        "env": "gsm8k", "id": str(problem["id"]), "sample_idx": 0, "source": None, "gold": str(problem["expected"]),
        "score": 1.0, "verdict": "equal", "model": "Qwen/QwQ-32B",
        "sampling": {**RUN["sampling"], "seed": 3}, "difficulty": None, "completion_tokens": 9,
        "reasoning_tokens": None}
    shared = sft_row(sample, format="sharegpt", run=RUN)
    assert [t["from"] for t in shared["conversations"]] == ["system", "human", "gpt"]
    assert [t["value"] for t in shared["conversations"]] == [m["content"] for m in row["messages"]]
    assert shared["metadata"] == row["metadata"] and "messages" not in shared


def test_text_prompt_and_assistant_prefill():
    sample = {"id": "q", "sample_idx": 0, "prompt": "Question: 1+1?\nAnswer:", "generation": " 2"}
    assert conversation(sample) == [{"role": "user", "content": "Question: 1+1?\nAnswer:"},
                                    {"role": "assistant", "content": " 2"}]
    prompt = Template(messages=[{"role": "user", "content": "{question}"},
                                {"role": "assistant", "content": "Sure. <think>\n"}]).render({"question": "1+1?"})
    turns = conversation({"prompt": prompt, "generation": "easy</think> 2"})
    assert turns == [{"role": "user", "content": "1+1?"},
                     {"role": "assistant", "content": "Sure. <think>\neasy\n</think>\n\n2"}]


def test_tool_turns_become_observations_and_unknown_roles_are_errors():
    assert to_sharegpt([{"role": "tool", "content": "x"}]) == [{"from": "observation", "value": "x"}]
    with pytest.raises(ValueError, match="unknown chat role 'critic'"):
        to_sharegpt([{"role": "critic", "content": "x"}])


CHAT = [{"role": "user", "content": "1+1?"}]
PREFILLED = CHAT + [{"role": "assistant", "content": "<think>\n"}]


def gpt(row: dict, fmt: ReasoningFormat = ReasoningFormat()) -> str:
    return sft_row({"id": "q", "sample_idx": 0, **row}, fmt, "sharegpt")["conversations"][-1]["value"]


def test_reasoning_is_kept_before_the_answer_from_every_source():
    expected = "<think>\nOne and one.\n</think>\n\nThe answer is 2."
    assert gpt({"prompt": CHAT, "generation": "The answer is 2.", "reasoning": "One and one."}) == expected
    assert gpt({"prompt": CHAT, "generation": "The answer is 2.", "reasoning_content": "One and one."}) == expected
    assert gpt({"prompt": CHAT, "generation": "<think>One and one.</think>The answer is 2."}) == expected
    # an assistant prefill opened the block: the generation starts inside it
    assert gpt({"prompt": PREFILLED, "generation": "One and one.</think>The answer is 2."}) == expected
    assert gpt({"prompt": PREFILLED, "generation": "The answer is 2.", "reasoning": "One and one."}) == expected
    # no reasoning anywhere: the answer alone (a text prompt's leading space kept)
    assert gpt({"prompt": "Q: 1+1?\nA:", "generation": " 2"}) == " 2"


def test_reasoning_formats_and_tags():
    row = {"prompt": CHAT, "generation": "The answer is 2.", "reasoning": "One and one."}
    assert gpt(row, ReasoningFormat("drop")) == "The answer is 2."
    assert gpt(row, ReasoningFormat("sky_t1")) == (
        "<|begin_of_thought|>\n\nOne and one.\n\n<|end_of_thought|>\n\n"
        "<|begin_of_solution|>\n\nThe answer is 2.\n\n<|end_of_solution|>")
    tags = ReasoningFormat("think", ("<reasoning>", "</reasoning>"))
    assert gpt({"prompt": CHAT, "generation": "<reasoning>r</reasoning>a"}, tags) == "<reasoning>\nr\n</reasoning>\n\na"
    assert gpt({"prompt": CHAT, "generation": "<think>r</think>a"}, tags) == "<think>r</think>a"  # other tags: text
    with pytest.raises(ValueError, match="unknown reasoning mode 'cot'"):
        ReasoningFormat("cot")


def test_reasoning_in_its_own_field_for_messages_only():
    row = {"id": "q", "sample_idx": 0, "prompt": PREFILLED, "generation": "One and one.</think>The answer is 2."}
    last = sft_row(row, ReasoningFormat("reasoning_content"))["messages"][-1]
    assert last == {"role": "assistant", "content": "The answer is 2.", "reasoning_content": "One and one."}
    with pytest.raises(ConfigError, match="ShareGPT turns have no reasoning_content"):
        sft_row(row, ReasoningFormat("reasoning_content"), "sharegpt")
