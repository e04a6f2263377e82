"""Reasoning text apart from the answer, the same way for every backend.

A reasoning model writes `<think>…</think>` then its answer (DeepSeek-R1 and its
distills, QwQ, Sky-T1), or an OpenAI-compatible server returns the reasoning in its own
field (`reasoning_content`: vLLM's reasoning parsers, DeepSeek's API). Either way a
result keeps the reasoning in `reasoning` and the answer, which graders see, in
`generation`. The tags are set per model (`model_config.think_tags`; null turns the
split off).

Rules (`split`):
- a server-provided reasoning field wins: it is the reasoning, the content the answer;
- a closing tag splits the text there: before it (minus an opening tag) is the
  reasoning, after it the answer. Many chat templates put the opening tag in the prompt,
  so the output starts inside the block and shows only the closing tag;
- an opening tag without a closing one, or output that began inside a block the prompt
  opened (`opened=True`) and never closed it, is a truncated reasoning: all of the text
  is `reasoning` and the answer is "" (the finish reason stays what the engine said,
  usually "length");
- otherwise there is no reasoning (`None`) and the whole text is the answer.
"""

from __future__ import annotations

from typing import Sequence

DEFAULT_THINK_TAGS: tuple[str, str] = ("<think>", "</think>")

ThinkTags = Sequence[str] | None


def check_tags(tags: ThinkTags) -> tuple[str, str] | None:
    """`tags` as an (open, close) pair, or None when splitting is off."""
    from skyeval.errors import ConfigError

    if tags is None or tags is False:
        return None
    if isinstance(tags, str) or len(tags) != 2 or not all(isinstance(t, str) and t for t in tags):
        raise ConfigError(f"model_config.think_tags must be two non-empty strings [open, close] or null, got {tags!r}")
    return tags[0], tags[1]


def split(
    text: str | None, tags: ThinkTags = DEFAULT_THINK_TAGS, *, reasoning: str | None = None, opened: bool = False
) -> tuple[str | None, str]:
    """(reasoning or None, answer) of one completion; see the module docstring."""
    text = text or ""
    if reasoning:
        return reasoning, text.strip()
    pair = check_tags(tags)
    if pair is None:
        return None, text
    start, end = pair
    head, closed, tail = text.partition(end)
    if closed:
        return _strip_open(head, start), tail.strip()
    if opened or start in text:
        return _strip_open(text, start), ""
    return None, text


def _strip_open(text: str, start: str) -> str:
    before, found, after = text.partition(start)
    return (before + after if found else text).strip()


def prompt_opens_block(prompt_text: str, tags: ThinkTags = DEFAULT_THINK_TAGS) -> bool:
    """Whether a rendered prompt ends inside an open think block (the chat template or a
    prefill wrote the opening tag), so the output starts in the reasoning."""
    pair = check_tags(tags)
    if pair is None:
        return False
    start, end = pair
    return prompt_text.rfind(start) > prompt_text.rfind(end)
