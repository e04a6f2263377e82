"""Reasoning text apart from the answer, the same way for every backend and scorer.

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

Built-in formats, detected per sample whatever tags are configured (`parse`, and `split`
with the default tags): `<think>…</think>` and Sky-T1's
`<|begin_of_thought|>…<|end_of_thought|>` followed by
`<|begin_of_solution|>…<|end_of_solution|>` (the solution markers are dropped from the
answer). `parse` is what graders use: it returns the state (`CLOSED`, `UNCLOSED`, `NONE`)
and an unclosed thought never yields an answer.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

DEFAULT_THINK_TAGS: tuple[str, str] = ("<think>", "</think>")
SKY_T1_TAGS: tuple[str, str] = ("<|begin_of_thought|>", "<|end_of_thought|>")
SKY_T1_SOLUTION: tuple[str, str] = ("<|begin_of_solution|>", "<|end_of_solution|>")
BUILT_IN_TAGS: tuple[tuple[str, str], ...] = (DEFAULT_THINK_TAGS, SKY_T1_TAGS)

CLOSED, UNCLOSED, NONE = "closed", "unclosed", "none"  # a sample's reasoning state
_SOLUTION_MARKERS = re.compile("|".join(re.escape(m) for m in SKY_T1_SOLUTION))


class Parsed(NamedTuple):
    """One completion: its reasoning (None without one), the answer graders see, the state."""

    reasoning: str | None
    answer: str
    state: str


def parse(text: str | None, tags: ThinkTags | None = None, reasoning_content: str | None = None) -> Parsed:
    """Split a completion into (reasoning, answer, state), trying `tags` (a configured
    pair) and every built-in format; the pair whose closing marker comes last wins.

    - `reasoning_content` (a server's reasoning field) non-empty: the reasoning; the text is
      the answer, `CLOSED`, or `UNCLOSED` when the text is empty (cut off while thinking);
    - a closing marker: what follows the last one is the answer, `CLOSED`;
    - an opening marker never closed: `UNCLOSED`, all of it reasoning, answer "";
    - otherwise `NONE` and the whole text is the answer.
    Sky-T1's solution markers are removed from the answer (an unclosed solution is kept)."""
    text = text or ""
    if reasoning_content:
        answer = _solution(text)
        return Parsed(reasoning_content, answer, CLOSED if answer else UNCLOSED)
    pairs = list(BUILT_IN_TAGS)
    if tags is not None and (pair := check_tags(tags)) and pair not in pairs:
        pairs.insert(0, pair)
    best = max(((text.rfind(end), start, end) for start, end in pairs), key=lambda found: found[0])
    if best[0] >= 0:
        at, start, end = best
        return Parsed(_strip_open(text[:at], start), _solution(text[at + len(end):]), CLOSED)
    for start, _ in pairs:
        if start in text:
            return Parsed(_strip_open(text, start), "", UNCLOSED)
    if SKY_T1_SOLUTION[0] in text:  # a solution without a thought block
        before, _, after = text.partition(SKY_T1_SOLUTION[0])
        return Parsed(None, _solution(after), NONE)
    return Parsed(None, text, NONE)


def _solution(text: str) -> str:
    """Sky-T1's answer part without its solution markers (what follows an end marker goes)."""
    body, ended, _ = text.partition(SKY_T1_SOLUTION[1])
    return _SOLUTION_MARKERS.sub("", body if ended else text).strip()

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
    if pair == DEFAULT_THINK_TAGS and (SKY_T1_TAGS[0] in text or SKY_T1_TAGS[1] in text):
        pair = SKY_T1_TAGS
    start, end = pair
    head, closed, tail = text.partition(end)
    if closed:
        return _strip_open(head, start), _solution(tail) if pair == SKY_T1_TAGS else tail.strip()
    if opened or start in text:
        return _strip_open(text, start), ""
    return None, text


def joined(reasoning: str | None, text: str, tags: ThinkTags = DEFAULT_THINK_TAGS) -> str:
    """The completion as one text when a server returned its reasoning apart (`text` as
    it is otherwise): the reasoning in a think block of `tags` (the default pair when
    splitting is off), then the text."""
    if not reasoning:
        return text
    start, end = check_tags(tags) or DEFAULT_THINK_TAGS
    return f"{start}\n{reasoning}\n{end}\n\n{text}"


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
