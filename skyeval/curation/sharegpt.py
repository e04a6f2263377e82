"""ShareGPT conversations for SFT: ``{"conversations": [{"from", "value"}, ...]}``.

Roles map system -> "system", user -> "human", assistant -> "gpt". A plain-text prompt
becomes one "human" turn. The response is the final "gpt" turn; an assistant prefill at
the end of the prompt is joined with the generation that continued it. A sample that
called tools keeps its turns, tool outputs as "observation" turns (`sharegpt_row`).

The response keeps the model's reasoning (`ReasoningFormat`, docs/curation.md):

- ``think`` (default): ``<think>\\nREASONING\\n</think>\\n\\nANSWER`` (the tags of `think_tags`);
- ``sky_t1``: Sky-T1's own markers, ``<|begin_of_thought|>…<|end_of_thought|>`` then the
  answer in ``<|begin_of_solution|>…<|end_of_solution|>``;
- ``drop``: the answer alone.

The reasoning of a sample is its `reasoning` field (split off by the backend), else a
server's `reasoning_content`, else found inside the text with `think_tags`; when an
assistant prefill opened the block, the generation starts inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skyeval.reasoning import DEFAULT_THINK_TAGS, check_tags, prompt_opens_block, split

ROLES = {"system": "system", "user": "human", "assistant": "gpt"}
TOOL_ROLE = "observation"  # a tool's output (a `tool` message), as LLaMA-Factory's ShareGPT names it
REASONING_MODES = ("think", "sky_t1", "drop")
SKY_T1_THOUGHT = ("<|begin_of_thought|>", "<|end_of_thought|>")
SKY_T1_SOLUTION = ("<|begin_of_solution|>", "<|end_of_solution|>")


@dataclass(frozen=True)
class ReasoningFormat:
    """How a response keeps its reasoning: `mode` (think | sky_t1 | drop) and the tags that
    mark a think block, both in the text read and in a `think` response written."""

    mode: str = "think"
    think_tags: tuple[str, str] = DEFAULT_THINK_TAGS

    def __post_init__(self) -> None:
        if self.mode not in REASONING_MODES:
            raise ValueError(f"unknown reasoning mode {self.mode!r}: one of {', '.join(REASONING_MODES)}")
        object.__setattr__(self, "think_tags", check_tags(self.think_tags))

    def response(self, reasoning: str | None, answer: str) -> str:
        """The response text of a (reasoning, answer) pair."""
        if self.mode == "drop" or not reasoning:
            return answer
        if self.mode == "think":
            start, end = self.think_tags
            return f"{start}\n{reasoning}\n{end}\n\n{answer}"
        for marker in SKY_T1_SOLUTION:  # an answer already in Sky-T1's solution markers
            answer = answer.replace(marker, "")
        return (f"{SKY_T1_THOUGHT[0]}\n\n{reasoning}\n\n{SKY_T1_THOUGHT[1]}\n\n"
                f"{SKY_T1_SOLUTION[0]}\n\n{answer.strip()}\n\n{SKY_T1_SOLUTION[1]}")


def prompt_and_response(prompt: str | list[dict[str, str]], row: dict[str, Any],
                        fmt: ReasoningFormat = ReasoningFormat()) -> tuple[Any, str]:
    """(the prompt without an assistant prefill, the full response) of a sample: the
    prefill, then the reasoning as `fmt` says, then the answer."""
    text = row.get("generation") or ""
    prefill = ""
    if isinstance(prompt, list) and prompt and prompt[-1]["role"] == "assistant":
        prompt, prefill = prompt[:-1], prompt[-1]["content"]
    opened = bool(prefill) and prompt_opens_block(prefill, fmt.think_tags)
    tail = ""
    if opened:  # the prefill opened the block: what follows its tag is reasoning
        cut = prefill.rfind(fmt.think_tags[0])
        prefill, tail = prefill[:cut], prefill[cut + len(fmt.think_tags[0]):]
    given = row.get("reasoning") or row.get("reasoning_content")
    if given:
        reasoning, answer = split(text, fmt.think_tags, reasoning=tail + given)
    else:
        reasoning, answer = split(tail + text, fmt.think_tags, opened=opened)
    return prompt, prefill + fmt.response(reasoning and reasoning.strip(), answer)


def to_sharegpt(prompt: str | list[dict[str, str]], response: str) -> dict[str, list[dict[str, str]]]:
    """One SFT example from a stored prompt (text or chat messages) and the response."""
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
    if messages and messages[-1]["role"] == "assistant":
        response = messages.pop()["content"] + response
    turns = []
    for message in messages:
        if message["role"] not in ROLES:
            raise ValueError(f"unknown chat role {message['role']!r}: one of {sorted(ROLES)}")
        turns.append({"from": ROLES[message["role"]], "value": message["content"]})
    turns.append({"from": "gpt", "value": response})
    return {"conversations": turns}


def sharegpt_row(row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat()) -> dict[str, Any]:
    """A scored sample as a ShareGPT row (reasoning kept as `fmt` says), keeping `id` and
    `sample_idx` for traceability.

    A sample that called tools (its `transcript` holds tool turns: `tools=python`,
    docs/tools.md) keeps its turns: each reply a "gpt" turn, each tool output (as the model
    was shown it) an "observation" turn (a `tool` message), the prompt's assistant prefill
    joined to the first reply. Its replies are kept as the model wrote them, think tags
    included, whatever `fmt` says."""
    turns = row.get("transcript") or []
    if not any(turn.get("role") == "tool" for turn in turns):
        prompt, response = prompt_and_response(row["prompt"], row, fmt)
        return {"id": row["id"], "sample_idx": row["sample_idx"], **to_sharegpt(prompt, response)}
    conversation = to_sharegpt(row["prompt"], turns[0]["content"])["conversations"]
    conversation += [{"from": TOOL_ROLE if turn["role"] == "tool" else ROLES["assistant"], "value": turn["content"]}
                     for turn in turns[1:]]
    return {"id": row["id"], "sample_idx": row["sample_idx"], "conversations": conversation}
