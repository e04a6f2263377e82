"""A deterministic readability score (0..1) for model responses, used to filter SFT data.

The score is the product of four factors, each in 0..1:

- ``lines``: 1 - 0.5 x the share of non-empty lines longer than ``max_line_chars``
  (default 1000: a wall of text or a run-on LaTeX line reads badly);
- ``repetition``: with ``r`` the share of word ``ngram``-grams (default 4) already seen
  earlier in the text, 1 - (r - ``free_repeated``) / (``max_repeated`` - ``free_repeated``)
  clipped to 0..1 (defaults 0.2 and 0.8). Worked solutions repeat few 4-grams (MATH-500's
  gold solutions: median 0, max 0.46); degenerate loops repeat most of them and score 0;
- ``clean``: 1 - 10 x the share of garbage characters (U+FFFD, control, format,
  private-use or unassigned code points, combining marks), floored at 0. Ordinary
  non-ASCII text (π, ≤, accented letters, CJK) is not garbage;
- ``answer``: 1 if the response states a final answer (``\\boxed{}``, ``\\fbox{}``,
  ``#### x`` or "answer is / answer:"), else ``missing_answer_factor`` (default 0.5).

Empty or whitespace-only text scores 0. Same text, same score: no model, no randomness.

A sample is judged whole (`sample_readability`): its answer as above, times its reasoning
(the thinking kept apart from the answer) judged on the same factors but the answer's; a
looping reasoning fails the sample, with `reasoning_repetition` among its issues.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_WORD = re.compile(r"\S+")
_FINAL_ANSWER = re.compile(r"\\(?:boxed|fbox)\s*\{|####\s*\S|\banswer\**\s*(?:is\b|:)", re.IGNORECASE)
_ALLOWED_CONTROL = {"\n", "\t", "\r"}


@dataclass
class Readability:
    """The score, its factors and the names of the factors below 1."""

    score: float
    lines: float
    repetition: float
    clean: float
    answer: float
    issues: list[str] = field(default_factory=list)


def readability(
    text: str,
    *,
    max_line_chars: int = 1000,
    ngram: int = 4,
    free_repeated: float = 0.2,
    max_repeated: float = 0.8,
    missing_answer_factor: float = 0.5,
) -> Readability:
    """Score `text`; see the module docstring for the factors."""
    if not text or not text.strip():
        return Readability(0.0, 0.0, 0.0, 0.0, 0.0, ["empty"])
    repeated = repeated_ngram_fraction(text, ngram)
    factors = {
        "lines": 1.0 - 0.5 * long_line_fraction(text, max_line_chars),
        "repetition": _clip(1.0 - (repeated - free_repeated) / (max_repeated - free_repeated)),
        "clean": max(0.0, 1.0 - 10.0 * garbage_fraction(text)),
        "answer": 1.0 if has_final_answer(text) else missing_answer_factor,
    }
    score = 1.0
    for value in factors.values():
        score *= value
    issues = [name for name, value in factors.items() if value < 1.0]
    return Readability(round(score, 6), **{k: round(v, 6) for k, v in factors.items()}, issues=issues)


def sample_readability(generation: str, reasoning: str | None = None, **options: float) -> Readability:
    """The readability of a whole sample: the answer's (`readability`) times its reasoning's
    (no final answer needed there). Issues of the reasoning are named `reasoning_<factor>`;
    the factors are the lower of the two. No reasoning: the answer's readability."""
    answer = readability(generation, **options)
    if not reasoning or not reasoning.strip():
        return answer
    thought = reasoning_readability(reasoning, **options)
    return Readability(round(answer.score * thought.score, 6),
                       **{k: min(getattr(answer, k), getattr(thought, k)) for k in ("lines", "repetition", "clean")},
                       answer=answer.answer, issues=answer.issues + [f"reasoning_{i}" for i in thought.issues])


def reasoning_readability(reasoning: str, **options: float) -> Readability:
    """`readability` of a reasoning, which states no final answer: the answer factor is 1."""
    return readability(reasoning, **{**options, "missing_answer_factor": 1.0})


def long_line_fraction(text: str, max_line_chars: int = 1000) -> float:
    """Share of non-empty lines longer than `max_line_chars`."""
    lines = [line for line in text.splitlines() if line.strip()]
    return sum(len(line) > max_line_chars for line in lines) / len(lines) if lines else 0.0


def repeated_ngram_fraction(text: str, n: int = 4) -> float:
    """Share of the word n-grams that occurred earlier in the text (0 for short texts)."""
    words = _WORD.findall(text.lower())
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return (len(grams) - len(set(grams))) / len(grams) if grams else 0.0


def garbage_fraction(text: str) -> float:
    """Share of characters that are replacement, control, format, private-use,
    unassigned or combining code points."""
    bad = sum(
        1
        for char in text
        if char == "\ufffd"
        or (char not in _ALLOWED_CONTROL and unicodedata.category(char)[0] == "C")
        or unicodedata.category(char) == "Mn"
    )
    return bad / len(text)


def has_final_answer(text: str) -> bool:
    """Whether the text states a final answer (boxed, `####`, or "answer is/answer:")."""
    return _FINAL_ANSWER.search(text) is not None


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


class ReadabilityScorer:
    """A scorer for `Env.scoring_functions`: `{"score": readability, "issues": [...]}` of a
    sample, its reasoning included (see `sample_readability`; the env is not consulted)."""

    def __init__(self, env: object = None) -> None:
        pass

    def __call__(self, item: dict) -> dict:
        report = sample_readability(item.get("generation") or "", item.get("reasoning"))
        return {"score": report.score, "issues": report.issues}
