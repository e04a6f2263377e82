"""Training rows as trainers read them: SFT conversations and the metadata every row carries.

`turns(row, fmt)` builds a sample's turns as role/content messages: the stored prompt's
turns (a plain-text prompt is one user turn; an assistant prefill at the end moves into the
response), then the response: the assistant's answer with its reasoning as `fmt` says, or,
for a sample that called tools (`tools=python`, docs/tools.md: its `transcript` holds `tool`
turns), each reply as an assistant turn (kept as the model wrote it, think tags included)
and each tool output, as the model was shown it, as a `tool` turn. It is the one place
turns are built: both SFT formats (`sft_row`) and the preference pairs are written from it:

- `messages` (default): `{"messages": [{"role", "content"}, ...]}`, TRL's conversational
  format (SFTTrainer applies the tokenizer's chat template; assistant-only loss works);
- `sharegpt`: `{"conversations": [{"from", "value"}, ...]}` with roles system -> "system",
  user -> "human", assistant -> "gpt", tool -> "observation" (LLaMA-Factory).

The response keeps the model's reasoning (`ReasoningFormat`, docs/curation.md):

- ``think`` (default): ``<think>\\nREASONING\\n</think>\\n\\nANSWER`` (the tags of `think_tags`);
- ``sky_t1``: Sky-T1's own markers, ``<|begin_of_thought|>…<|end_of_thought|>`` then the
  answer in ``<|begin_of_solution|>…<|end_of_solution|>``;
- ``reasoning_content``: the answer as the content and the reasoning in the assistant
  message's `reasoning_content` (chat templates such as Qwen3's render it; `messages` only);
- ``drop``: the answer alone.

The reasoning of a sample is its `reasoning` field (split off by the backend), else a
server's `reasoning_content`, else found inside the text with `think_tags`; when an
assistant prefill opened the block, the generation starts inside it.

Every row carries `metadata` (`metadata(row, run)`): the source env and problem id, the
sample index, the gold, score and verdict, the model and its sampling, the difficulty when
labelled, and the sample's token counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from skyeval.curation.conversations import messages, reasoning_of
from skyeval.errors import ConfigError
from skyeval.reasoning import DEFAULT_THINK_TAGS, check_tags, prompt_opens_block, split

FORMATS = ("messages", "sharegpt")
SHAREGPT_FROM = {"system": "system", "user": "human", "assistant": "gpt", "tool": "observation"}
REASONING_MODES = ("think", "sky_t1", "reasoning_content", "drop")
SKY_T1_THOUGHT = ("<|begin_of_thought|>", "<|end_of_thought|>")
SKY_T1_SOLUTION = ("<|begin_of_solution|>", "<|end_of_solution|>")


@dataclass(frozen=True)
class ReasoningFormat:
    """How a response keeps its reasoning: `mode` (think | sky_t1 | reasoning_content |
    drop) and the tags that mark a think block, both in the text read and in a `think`
    response written."""

    mode: str = "think"
    think_tags: tuple[str, str] = DEFAULT_THINK_TAGS

    def __post_init__(self) -> None:
        if self.mode not in REASONING_MODES:
            raise ValueError(f"unknown reasoning mode {self.mode!r}: one of {', '.join(REASONING_MODES)}")
        object.__setattr__(self, "think_tags", check_tags(self.think_tags))

    def response(self, reasoning: str | None, answer: str) -> str:
        """The response text of a (reasoning, answer) pair (`reasoning_content` keeps the
        answer alone: the reasoning goes beside it, see `assistant`)."""
        if self.mode in ("drop", "reasoning_content") or not reasoning:
            return answer
        if self.mode == "think":
            start, end = self.think_tags
            return f"{start}\n{reasoning}\n{end}\n\n{answer}"
        for marker in SKY_T1_SOLUTION:  # an answer already in Sky-T1's solution markers
            answer = answer.replace(marker, "")
        return (f"{SKY_T1_THOUGHT[0]}\n\n{reasoning}\n\n{SKY_T1_THOUGHT[1]}\n\n"
                f"{SKY_T1_SOLUTION[0]}\n\n{answer.strip()}\n\n{SKY_T1_SOLUTION[1]}")

    def assistant(self, prefill: str, reasoning: str | None, answer: str) -> dict[str, Any]:
        """The assistant message of a response (after an assistant prefill, if any)."""
        message = {"role": "assistant", "content": prefill + self.response(reasoning, answer)}
        if self.mode == "reasoning_content" and reasoning:
            message["reasoning_content"] = reasoning
        return message


def response_parts(prompt: Any, row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat()
                   ) -> tuple[Any, str, str | None, str]:
    """(the prompt without an assistant prefill, the prefill's text before any think tag it
    opened, the reasoning, the answer) of a sample."""
    text = row.get("generation") or ""
    prefill = ""
    if isinstance(prompt, list) and prompt and prompt[-1]["role"] == "assistant":
        prompt, prefill = prompt[:-1], prompt[-1]["content"]
    opened = bool(prefill) and prompt_opens_block(prefill, fmt.think_tags)
    tail = ""
    if opened:  # the prefill opened the block: what follows its tag is reasoning
        cut = prefill.rfind(fmt.think_tags[0])
        prefill, tail = prefill[:cut], prefill[cut + len(fmt.think_tags[0]):]
    given = reasoning_of(row)
    if given:
        reasoning, answer = split(text, fmt.think_tags, reasoning=tail + given)
    else:
        reasoning, answer = split(tail + text, fmt.think_tags, opened=opened)
    return prompt, prefill, reasoning and reasoning.strip(), answer


def prompt_and_response(prompt: Any, row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat()) -> tuple[Any, str]:
    """(the prompt without an assistant prefill, the full response text) of a sample: the
    prefill, then the reasoning as `fmt` says, then the answer."""
    prompt, prefill, reasoning, answer = response_parts(prompt, row, fmt)
    return prompt, prefill + fmt.response(reasoning, answer)


def turns(row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat()) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the prompt's turns, the response's turns) of a sample as role/content messages (see
    the module docstring). The one place an export's turns are built."""
    prompt, prefill, reasoning, answer = response_parts(row["prompt"], row, fmt)
    transcript = row.get("transcript") or []
    if not any(turn.get("role") == "tool" for turn in transcript):
        return messages(prompt, "prompt"), [fmt.assistant(prefill, reasoning, answer)]
    prompt, prefill = (row["prompt"][:-1], row["prompt"][-1]["content"]) \
        if isinstance(row["prompt"], list) and row["prompt"] and row["prompt"][-1]["role"] == "assistant" \
        else (row["prompt"], "")
    replies = [{"role": "tool" if turn["role"] == "tool" else "assistant", "content": turn["content"]}
               for turn in transcript]
    replies[0]["content"] = prefill + replies[0]["content"]
    return messages(prompt, "prompt"), replies


def conversation(row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat()) -> list[dict[str, Any]]:
    """A sample's turns as role/content messages: its prompt's, then the response's (`turns`)."""
    prompt, response = turns(row, fmt)
    return prompt + response


def to_sharegpt(turns: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Role/content messages as ShareGPT turns (`from`/`value`)."""
    out = []
    for message in turns:
        if message["role"] not in SHAREGPT_FROM:
            raise ValueError(f"unknown chat role {message['role']!r}: one of {', '.join(SHAREGPT_FROM)}")
        out.append({"from": SHAREGPT_FROM[message["role"]], "value": message["content"]})
    return out


def sft_row(row: dict[str, Any], fmt: ReasoningFormat = ReasoningFormat(), format: str = "messages",
            run: dict[str, Any] | None = None) -> dict[str, Any]:
    """A scored sample as an SFT row of `format` (messages | sharegpt), reasoning kept as
    `fmt` says, with `id`, `sample_idx` and `metadata` (`run`: the run's env, model and
    sampling, see `skyeval.curation.runs.run_info`)."""
    check_format(format, fmt)
    turns = conversation(row, fmt)
    body = {"messages": turns} if format == "messages" else {"conversations": to_sharegpt(turns)}
    return {"id": row["id"], "sample_idx": row["sample_idx"], **body, "metadata": metadata(row, run)}


def check_format(format: str, fmt: ReasoningFormat) -> None:
    """Refuse an unknown SFT format, and reasoning in a field ShareGPT does not have."""
    if format not in FORMATS:
        raise ConfigError(f"unknown SFT format {format!r}: one of {', '.join(FORMATS)}")
    if format == "sharegpt" and fmt.mode == "reasoning_content":
        raise ConfigError("ShareGPT turns have no reasoning_content field: use --reasoning think (or sky_t1) "
                          "with --format sharegpt, or --format messages")


def metadata(row: dict[str, Any], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where a training row came from: `env`, `id`, `sample_idx`, `source` (the dataset's
    own source field, e.g. NuminaMath's), `gold` (as text), `score`, `verdict`, `model`,
    `sampling` (temperature, top_p, max_tokens, seed), `difficulty` (when labelled) and
    `completion_tokens`/`reasoning_tokens` (when the backend reported them)."""
    from skyeval.grading.prompts import gold_text

    run = run or {}
    usage = row.get("usage") or {}
    sampling = dict(run.get("sampling") or {})
    if row.get("seed") is not None:
        sampling["seed"] = row["seed"]
    score = row.get("score")
    return {
        "env": run.get("env"),
        "id": str(row["id"]),
        "sample_idx": row.get("sample_idx"),
        "source": None if row.get("source") is None else str(row["source"]),
        "gold": gold_text(row["expected"]) if row.get("expected") is not None else None,
        "score": None if score is None else float(score),
        "verdict": row.get("verdict"),
        "model": run.get("model"),
        "sampling": sampling or None,
        "difficulty": row.get("difficulty"),
        "completion_tokens": usage.get("completion_tokens"),
        "reasoning_tokens": usage.get("reasoning_tokens"),
    }
