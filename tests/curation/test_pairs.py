"""Pairing rules on hand-made groups (lengths from usage, ties, text prompts, no pair)."""

from skyeval.curation.pairs import SHORTEST_LONGEST, SILC, question_pairs


def sample(idx: int, score: float, text: str, tokens: int | None = None, prompt="Q?") -> dict:
    usage = {"prompt_tokens": 3, "completion_tokens": tokens} if tokens is not None else None
    return {"id": "q", "sample_idx": idx, "prompt": prompt, "generation": text, "score": score, "usage": usage}


def test_lengths_come_from_completion_tokens_when_reported():
    group = [sample(0, 1.0, "short text", tokens=900), sample(1, 1.0, "a much longer text here", tokens=100)]
    (pair,) = question_pairs(group)
    assert pair["kind"] == SHORTEST_LONGEST and (pair["chosen_sample_idx"], pair["rejected_sample_idx"]) == (1, 0)
    assert pair["chosen"] == "a much longer text here"  # text prompt: plain-text completions


def test_silc_pairs_the_shortest_wrong_with_the_next_longer_correct():
    group = [sample(0, 0.0, "x" * 5), sample(1, 1.0, "y" * 3), sample(2, 1.0, "z" * 8),
             sample(3, 1.0, "w" * 20), sample(4, 0.0, "v" * 30)]
    pairs = {p["kind"]: p for p in question_pairs(group, silc=True)}
    assert (pairs[SHORTEST_LONGEST]["chosen_sample_idx"], pairs[SHORTEST_LONGEST]["rejected_sample_idx"]) == (1, 3)
    assert (pairs[SILC]["chosen_sample_idx"], pairs[SILC]["rejected_sample_idx"]) == (2, 0)
    assert question_pairs(group) == [pairs[SHORTEST_LONGEST]]


def test_no_pair_without_two_lengths_of_correct_or_a_longer_correct():
    assert question_pairs([sample(0, 1.0, "same"), sample(1, 1.0, "four")], silc=True) == []
    assert question_pairs([sample(0, 0.0, "wrong and long"), sample(1, 1.0, "ok")], silc=True) == []
    assert question_pairs([sample(0, 0.0, "a"), sample(1, 0.0, "bb")], silc=True) == []
