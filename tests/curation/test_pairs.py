"""Pairing rules on hand-made groups (lengths from usage, ties, text prompts, no pair), and
the rows in TRL's preference format with both prompt styles."""

import pytest

from skyeval.curation.exports import ReasoningFormat
from skyeval.curation.pairs import SHORTEST_LONGEST, SILC, question_pairs
from skyeval.errors import ConfigError


def sample(idx: int, score: float, text: str, tokens: int | None = None, prompt="Q?") -> dict:
    usage = {"prompt_tokens": 3, "completion_tokens": tokens} if tokens is not None else None
    return {"id": "q", "sample_idx": idx, "prompt": prompt, "generation": text, "score": score, "usage": usage}


def sides(pair: dict) -> tuple[int, int]:
    return pair["metadata"]["chosen"]["sample_idx"], pair["metadata"]["rejected"]["sample_idx"]


def test_lengths_come_from_completion_tokens_when_reported():
    group = [sample(0, 1.0, "short text", tokens=900), sample(1, 1.0, "a much longer text here", tokens=100)]
    (pair,) = question_pairs(group)
    assert pair["kind"] == SHORTEST_LONGEST and sides(pair) == (1, 0)
    assert pair["chosen"] == "a much longer text here"  # text prompt: plain-text completions
    assert pair["metadata"]["chosen"]["length"] == 100 and pair["metadata"]["rejected"]["length"] == 900
    assert pair["metadata"]["chosen"]["completion_tokens"] == 100


def test_silc_pairs_the_shortest_wrong_with_the_next_longer_correct():
    group = [sample(0, 0.0, "x" * 5), sample(1, 1.0, "y" * 3), sample(2, 1.0, "z" * 8),
             sample(3, 1.0, "w" * 20), sample(4, 0.0, "v" * 30)]
    pairs = {p["kind"]: p for p in question_pairs(group, silc=True)}
    assert sides(pairs[SHORTEST_LONGEST]) == (1, 3)
    assert sides(pairs[SILC]) == (2, 0)
    assert pairs[SILC]["metadata"]["chosen"]["score"] == 1.0 and pairs[SILC]["metadata"]["rejected"]["score"] == 0.0
    assert question_pairs(group) == [pairs[SHORTEST_LONGEST]]


def test_no_pair_without_two_lengths_of_correct_or_a_longer_correct():
    assert question_pairs([sample(0, 1.0, "same"), sample(1, 1.0, "four")], silc=True) == []
    assert question_pairs([sample(0, 0.0, "wrong and long"), sample(1, 1.0, "ok")], silc=True) == []
    assert question_pairs([sample(0, 0.0, "a"), sample(1, 0.0, "bb")], silc=True) == []


CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}]


def test_both_prompt_styles_of_trl():
    group = [sample(0, 1.0, "It is 2.", prompt=CHAT), sample(1, 1.0, "One and one make \\boxed{2}.", prompt=CHAT)]
    run = {"env": "gsm8k", "model": "m", "sampling": {"temperature": 0.7}}
    (explicit,) = question_pairs(group, run=run)
    assert explicit["prompt"] == CHAT
    assert explicit["chosen"] == [{"role": "assistant", "content": "It is 2."}]
    assert explicit["rejected"] == [{"role": "assistant", "content": "One and one make \\boxed{2}."}]
    assert explicit["metadata"]["env"] == "gsm8k" and explicit["metadata"]["kind"] == SHORTEST_LONGEST
    (implicit,) = question_pairs(group, prompt="implicit", run=run)
    assert "prompt" not in implicit
    assert implicit["chosen"] == CHAT + explicit["chosen"] and implicit["rejected"] == CHAT + explicit["rejected"]
    (text,) = question_pairs([sample(0, 1.0, " 2"), sample(1, 1.0, " two, 2")], prompt="implicit")
    assert (text["chosen"], text["rejected"]) == ("Q? 2", "Q? two, 2")
    with pytest.raises(ConfigError, match="unknown prompt style"):
        question_pairs(group, prompt="inline")


def test_reasoning_content_needs_a_chat_prompt():
    group = [dict(sample(0, 1.0, "2", prompt=CHAT), reasoning="add"), dict(sample(1, 1.0, "it is 2", prompt=CHAT))]
    (pair,) = question_pairs(group, fmt=ReasoningFormat("reasoning_content"))
    assert pair["chosen"] == [{"role": "assistant", "content": "2", "reasoning_content": "add"}]
    with pytest.raises(ConfigError, match="no reasoning_content field"):
        question_pairs([dict(s, prompt="Q?") for s in group], fmt=ReasoningFormat("reasoning_content"))
