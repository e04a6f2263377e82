"""Rejection sampling: keep the samples that are both correct and readable.

`RejectionSampling` is a mixin over any env: its `score_item` runs the env's own scorer
(correctness) and `readability`, and returns
``{"score": correctness, "correctness", "readability", "readability_issues", "keep", ...}``
plus the env scorer's other fields (``extracted``, ``parse_failed``). ``score`` stays the
correctness, so accuracy and pass@k in summary.json keep their meaning.
`conf/experiment/numina_rejection_sampling.yaml` selects it; `keep_passing` keeps the rows
that pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skyeval.curation.readability import reasoning_readability, sample_readability
from skyeval.envs.math import GSM8KEnv, MathEnv, NuminaEnv
from skyeval.metrics import CORRECT

if TYPE_CHECKING:
    import ray.data

DEFAULT_MIN_READABILITY = 0.5


def judge(correctness: float, generation: str, *, reasoning: str | None = None,
          min_readability: float = DEFAULT_MIN_READABILITY, min_correctness: float = CORRECT) -> dict[str, Any]:
    """`correctness`, `readability` (of the whole sample: the answer and its reasoning),
    `readability_issues` (`reasoning_repetition` for a looping reasoning),
    `reasoning_readability` (None without reasoning) and `keep` of one sample."""
    report = sample_readability(generation, reasoning)
    return {
        "correctness": correctness,
        "readability": report.score,
        "readability_issues": report.issues,
        "reasoning_readability": reasoning_readability(reasoning).score if reasoning and reasoning.strip() else None,
        "keep": correctness >= min_correctness and report.score >= min_readability,
    }


class RejectionSampling:
    """Mixin: `class MyRejectionEnv(RejectionSampling, MyEnv)`.

    `min_readability` (0..1) is the readability a sample needs to be kept;
    `min_correctness` the env score it needs (default: fully correct)."""

    def __init__(self, *, min_readability: float = DEFAULT_MIN_READABILITY, min_correctness: float = CORRECT,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.min_readability = min_readability
        self.min_correctness = min_correctness

    def scorer_names(self) -> list[str]:
        """`correctness` (= `score`) and `readability`, each reported in summary.json."""
        return ["correctness", "readability"]

    def score_item(self, item: dict[str, Any]) -> dict[str, Any]:
        result = dict(super().score_item(item))  # type: ignore[misc]
        correctness = float(result["score"])
        return {**result, "score": correctness, **judge(correctness, item.get("generation") or "",
                                                        reasoning=item.get("reasoning"),
                                                        min_readability=self.min_readability,
                                                        min_correctness=self.min_correctness)}


class MathRejectionEnv(RejectionSampling, MathEnv):
    """`MathEnv` (MATH-500, AIME ...) scored for rejection sampling."""


class GSM8KRejectionEnv(RejectionSampling, GSM8KEnv):
    """`GSM8KEnv` scored for rejection sampling."""


class NuminaRejectionEnv(RejectionSampling, NuminaEnv):
    """`NuminaEnv` scored for rejection sampling (`+experiment=numina_rejection_sampling`)."""


def passes(row: dict[str, Any]) -> bool:
    """Whether a scored sample was marked `keep`."""
    return bool(row["keep"])


def keep_passing(ds: "ray.data.Dataset") -> "ray.data.Dataset":
    """The rows marked `keep` (a lazy `ds.filter`)."""
    return ds.filter(passes)
