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

A pair row is TRL's preference format: ``chosen`` and ``rejected`` (the reasoning kept as
``fmt`` says, see ``skyeval.curation.exports``) as ``[{"role": "assistant", "content": ...}]``
when the stored prompt is a message list (conversational), else plain text (standard). With
an explicit prompt (``prompt="explicit"``, the default) the row has ``prompt`` (the stored
prompt; an assistant prefill moves into the responses); with an implicit one each response
holds the whole conversation, prompt included (TRL extracts the shared prefix). Every row
has ``id``, ``kind`` and ``metadata``: the run's (``exports.metadata``, less the sample's
own fields) with ``kind`` and, under ``chosen``/``rejected``, each side's ``sample_idx``,
``score``, ``verdict``, ``length`` and token counts.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from skyeval.curation.conversations import reasoning_of
from skyeval.curation.exports import ReasoningFormat, metadata, turns
from skyeval.curation.readability import sample_readability
from skyeval.errors import ConfigError
from skyeval.metrics import CORRECT

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

SHORTEST_LONGEST = "shortest_longest"
SILC = "short_incorrect_long_correct"
PROMPT_STYLES = ("explicit", "implicit")
MIN_READABILITY = 0.5
_SIDE = ("sample_idx", "score", "verdict", "completion_tokens", "reasoning_tokens")


def response_length(row: dict[str, Any]) -> int:
    """Completion tokens when known, else characters of the generation."""
    usage = row.get("usage") or {}
    tokens = usage.get("completion_tokens")
    return int(tokens) if tokens is not None else len(row.get("generation") or "")


def question_pairs(samples: list[dict[str, Any]], *, silc: bool = False, fmt: ReasoningFormat = ReasoningFormat(),
                   prompt: str = "explicit", run: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The preference pairs of one question's samples (see the module docstring); `run` is
    the run's env, model and sampling for the metadata (`runs.run_info`)."""
    if prompt not in PROMPT_STYLES:
        raise ConfigError(f"unknown prompt style {prompt!r}: one of {', '.join(PROMPT_STYLES)}")
    ranked = sorted(samples, key=lambda s: (response_length(s), s["sample_idx"]))
    correct = [s for s in ranked if float(s["score"]) >= CORRECT]
    incorrect = [s for s in ranked if float(s["score"]) < CORRECT]
    choosable = [s for s in correct if readable(s)]
    pairs = []
    if choosable:
        shortest = choosable[0]
        longest = max(correct, key=lambda s: (response_length(s), -s["sample_idx"]))
        if response_length(shortest) < response_length(longest):
            pairs.append(_pair(SHORTEST_LONGEST, shortest, longest, fmt, prompt, run))
    if silc and incorrect:
        short_wrong = incorrect[0]
        longer = [s for s in choosable if response_length(s) > response_length(short_wrong)]
        if longer:
            pairs.append(_pair(SILC, longer[0], short_wrong, fmt, prompt, run))
    return pairs


def readable(sample: dict[str, Any]) -> bool:
    """Whether a correct sample may be chosen: its `keep`, else its whole readability."""
    if sample.get("keep") is not None:
        return bool(sample["keep"])
    return sample_readability(sample.get("generation") or "", reasoning_of(sample)).score >= MIN_READABILITY


def preference_pairs(ds: "ray.data.Dataset", *, silc: bool = False, fmt: ReasoningFormat = ReasoningFormat(),
                     prompt: str = "explicit", run: dict[str, Any] | None = None) -> "ray.data.Dataset":
    """Pairs of every question of a scored Dataset (`groupby("id").map_groups`)."""
    pairs = partial(_pairs_table, silc=silc, fmt=fmt, prompt=prompt, run=run)
    return ds.groupby("id").map_groups(pairs, batch_format="pyarrow")


def _pair(kind: str, chosen: dict[str, Any], rejected: dict[str, Any], fmt: ReasoningFormat, style: str,
          run: dict[str, Any] | None) -> dict[str, Any]:
    """One pair row in TRL's preference format (see the module docstring)."""
    prompt, chosen_turns = turns(chosen, fmt)
    _, rejected_turns = turns(rejected, fmt)
    about = {k: v for k, v in metadata(chosen, run).items() if k not in _SIDE}
    about["kind"] = kind
    for side, sample in (("chosen", chosen), ("rejected", rejected)):
        about[side] = {**{k: v for k, v in metadata(sample, run).items() if k in _SIDE},
                       "length": response_length(sample)}
    if isinstance(chosen["prompt"], str):  # TRL's standard format: text
        if fmt.mode == "reasoning_content" or len(chosen_turns) + len(rejected_turns) > 2:
            raise ConfigError("a text prompt's pairs are plain text: no reasoning_content field (use --reasoning "
                              "think or sky_t1) and no tool turns (use a chat template)")
        text = chosen["prompt"]
        chosen_side, rejected_side = chosen_turns[0]["content"], rejected_turns[0]["content"]
        body = {"prompt": text, "chosen": chosen_side, "rejected": rejected_side} if style == "explicit" \
            else {"chosen": text + chosen_side, "rejected": text + rejected_side}
    else:
        body = {"prompt": prompt, "chosen": chosen_turns, "rejected": rejected_turns} if style == "explicit" \
            else {"chosen": prompt + chosen_turns, "rejected": prompt + rejected_turns}
    return {"id": chosen["id"], "kind": kind, **body, "metadata": about}


def _pairs_table(table: "pa.Table", *, silc: bool, fmt: ReasoningFormat, prompt: str,
                 run: dict[str, Any] | None) -> "pa.Table":
    import pyarrow as pa

    return pa.Table.from_pylist(question_pairs(table.to_pylist(), silc=silc, fmt=fmt, prompt=prompt, run=run))
