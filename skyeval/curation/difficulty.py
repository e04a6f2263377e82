"""LLM difficulty labels (1-10) for math problems, with parse failures kept apart."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from skyeval.backends.base import SamplingParams, ScalingConfig
from skyeval.curation.llm import Completions, complete

DIFFICULTY_RUBRIC = """Rate the difficulty of the math problem on a scale from 1 to 10:
1-2: one or two arithmetic steps (grade-school word problems, GSM8K).
3-4: standard high-school exercises (MATH levels 1-3, early AMC 10).
5-6: harder competition problems (MATH level 5, late AMC 12, easy AIME).
7-8: hard AIME problems and entry-level olympiad problems.
9-10: the hardest olympiad problems (USAMO, IMO).
Rate how hard it is to solve, not to state. Give one sentence of justification, then
end with a last line of the form "Difficulty: N" where N is an integer from 1 to 10."""
DIFFICULTY_USER_PROMPT = "Problem:\n{question}"

_PATTERNS = (  # tried in order; the last match of the first pattern that matches wins
    re.compile(r"difficulty(?:\s+(?:level|rating|score))?\W{0,6}(?:is|of|=|:)?\W{0,6}?(\d+(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"\\boxed\{\s*(\d+(?:\.\d+)?)\s*\}"),
    re.compile(r"(\d+(?:\.\d+)?)\s*(?:/|out of)\s*10\b", re.IGNORECASE),
    re.compile(r"^\W*(\d+(?:\.\d+)?)\W*$"),
)


class DifficultyParseError(ValueError):
    """A reply without a usable 1-10 rating."""


@dataclass
class DifficultyResult:
    """`labeled`: problems with `difficulty` (int 1-10) and `difficulty_reply`;
    `failures`: problems whose reply had no rating, or whose request failed; `completions`:
    what was sent and what came from the cache."""

    labeled: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    completions: Completions = field(default_factory=Completions)


def parse_difficulty(reply: str) -> int:
    """The 1-10 rating in a reply: "Difficulty: 7", "**Difficulty:** 7/10", "\\boxed{7}",
    "7 out of 10" or a bare "7"; decimals round half up. Raises DifficultyParseError."""
    for pattern in _PATTERNS:
        matches = pattern.findall(reply.strip())
        if matches:
            value = float(matches[-1])
            if not 1 <= value <= 10:
                raise DifficultyParseError(f"rating {matches[-1]} is outside 1-10")
            return int(value + 0.5)
    raise DifficultyParseError("no rating found")


def difficulty_prompt(problem: dict[str, Any], rubric: str = DIFFICULTY_RUBRIC) -> list[dict[str, str]]:
    return [{"role": "system", "content": rubric},
            {"role": "user", "content": DIFFICULTY_USER_PROMPT.format(question=problem["question"])}]


def label_difficulty(
    problems: list[dict[str, Any]],
    model_config: Any,
    *,
    sampling: SamplingParams | None = None,
    scaling: ScalingConfig | None = None,
    rubric: str = DIFFICULTY_RUBRIC,
    cache: Any = None,
    progress: str | None = None,
) -> DifficultyResult:
    """Ask the model of `model_config` to rate each problem (`id`, `question`); `cache` is
    a `JudgeCache` or its folder (None: no cache, see `skyeval.curation.llm.complete`)."""
    by_id = {str(p["id"]): p for p in problems}
    out = DifficultyResult()
    out.completions = complete(model_config, {k: difficulty_prompt(p, rubric) for k, p in by_id.items()},
                               sampling or SamplingParams(max_tokens=256), scaling, cache=cache, progress=progress)
    for key, problem in by_id.items():
        result = out.completions.results[key]
        base = {"id": problem["id"], "question": problem["question"]}
        if not result.ok:
            out.failures.append({**base, "error_type": result.error_type, "message": result.error, "reply": None})
            continue
        try:
            out.labeled.append({**problem, "difficulty": parse_difficulty(result.generation or ""),
                                "difficulty_reply": result.generation})
        except DifficultyParseError as err:
            out.failures.append({**base, "error_type": "DifficultyParseError", "message": str(err),
                                 "reply": result.generation})
    return out
