"""ShareGPT conversion of stored prompts (chat or text) plus a response."""

import pytest

from skyeval.curation.sharegpt import ReasoningFormat, sharegpt_row, to_sharegpt
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


CHAT = [{"role": "user", "content": "1+1?"}]
PREFILLED = CHAT + [{"role": "assistant", "content": "<think>\n"}]


def gpt(row: dict, fmt: ReasoningFormat = ReasoningFormat()) -> str:
    return sharegpt_row({"id": "q", "sample_idx": 0, **row}, fmt)["conversations"][-1]["value"]


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
