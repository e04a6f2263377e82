"""Preference pairs (DPO/SimPO) from the scored samples of each question.

Length of a response: its ``usage.completion_tokens`` when the backend reported it,
else its length in characters. Correct: score >= 1. Ties in length go to the lower
sample index. Per question:

- ``shortest_longest`` (always): chosen = the shortest correct response, rejected = the
  longest correct one, when the chosen is strictly shorter. Teaches brevity without
  giving up correctness.
- ``short_incorrect_long_correct`` (only with ``silc=True``): rejected = the shortest
  *incorrect* response; chosen = the shortest correct response strictly *longer* than it
  (SkyThought's "SILC" pairs). Teaches that being short is no excuse for being wrong.

A chosen response must also be readable, its reasoning included: its ``keep`` when the
rows carry one (a RejectionSampling run, or `curate.py pairs`), else
``sample_readability`` >= 0.5. A looping reasoning is never chosen.

A pair row: ``id``, ``kind``, ``prompt`` (the stored prompt; an assistant prefill moves
into the responses), ``chosen`` and ``rejected`` (the reasoning kept as ``fmt`` says, see
``skyeval.curation.sharegpt``; as ``[{"role": "assistant", "content": ...}]`` when the
prompt is a message list, else plain text: TRL's conversational/standard formats), their ``*_length``, ``*_sample_idx``
and ``*_score``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from skyeval.curation.readability import sample_readability
from skyeval.curation.sharegpt import ReasoningFormat, prompt_and_response
from skyeval.metrics import CORRECT

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

SHORTEST_LONGEST = "shortest_longest"
SILC = "short_incorrect_long_correct"
_COLUMNS = ("id", "sample_idx", "prompt", "generation", "reasoning", "reasoning_content", "score", "usage", "keep")
MIN_READABILITY = 0.5


def response_length(row: dict[str, Any]) -> int:
    """Completion tokens when known, else characters of the generation."""
    usage = row.get("usage") or {}
    tokens = usage.get("completion_tokens")
    return int(tokens) if tokens is not None else len(row.get("generation") or "")


def question_pairs(samples: list[dict[str, Any]], *, silc: bool = False,
                   fmt: ReasoningFormat = ReasoningFormat()) -> list[dict[str, Any]]:
    """The preference pairs of one question's samples (see the module docstring)."""
    ranked = sorted(samples, key=lambda s: (response_length(s), s["sample_idx"]))
    correct = [s for s in ranked if float(s["score"]) >= CORRECT]
    incorrect = [s for s in ranked if float(s["score"]) < CORRECT]
    choosable = [s for s in correct if readable(s)]
    pairs = []
    if choosable:
        shortest = choosable[0]
        longest = max(correct, key=lambda s: (response_length(s), -s["sample_idx"]))
        if response_length(shortest) < response_length(longest):
            pairs.append(_pair(SHORTEST_LONGEST, shortest, longest, fmt))
    if silc and incorrect:
        short_wrong = incorrect[0]
        longer = [s for s in choosable if response_length(s) > response_length(short_wrong)]
        if longer:
            pairs.append(_pair(SILC, longer[0], short_wrong, fmt))
    return pairs


def readable(sample: dict[str, Any]) -> bool:
    """Whether a correct sample may be chosen: its `keep`, else its whole readability."""
    if sample.get("keep") is not None:
        return bool(sample["keep"])
    reasoning = sample.get("reasoning") or sample.get("reasoning_content")
    return sample_readability(sample.get("generation") or "", reasoning).score >= MIN_READABILITY


def preference_pairs(ds: "ray.data.Dataset", *, silc: bool = False,
                     fmt: ReasoningFormat = ReasoningFormat()) -> "ray.data.Dataset":
    """Pairs of every question of a scored Dataset (`groupby("id").map_groups`)."""
    pairs = partial(_pairs_table, silc=silc, fmt=fmt)
    columns = [c for c in _COLUMNS if c in ds.columns()]
    return ds.select_columns(columns).groupby("id").map_groups(pairs, batch_format="pyarrow")


def _pair(kind: str, chosen: dict[str, Any], rejected: dict[str, Any], fmt: ReasoningFormat) -> dict[str, Any]:
    prompt, chosen_text = prompt_and_response(chosen["prompt"], chosen, fmt)
    _, rejected_text = prompt_and_response(rejected["prompt"], rejected, fmt)
    return {
        "id": chosen["id"],
        "kind": kind,
        "prompt": prompt,
        "chosen": _completion(prompt, chosen_text),
        "rejected": _completion(prompt, rejected_text),
        "chosen_length": response_length(chosen),
        "rejected_length": response_length(rejected),
        "chosen_sample_idx": chosen["sample_idx"],
        "rejected_sample_idx": rejected["sample_idx"],
        "chosen_score": float(chosen["score"]),
        "rejected_score": float(rejected["score"]),
    }


def _completion(prompt: Any, text: str) -> Any:
    return [{"role": "assistant", "content": text}] if isinstance(prompt, list) else text


def _pairs_table(table: "pa.Table", *, silc: bool, fmt: ReasoningFormat) -> "pa.Table":
    import pyarrow as pa

    return pa.Table.from_pylist(question_pairs(table.to_pylist(), silc=silc, fmt=fmt))
