"""What a reward is made of: correctness (the env's own grader), format and a soft
overlong penalty, each computed apart and weighted into one number (docs/rl.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from skyeval.errors import ConfigError
from skyeval.grading import GradingConfig
from skyeval.reasoning import DEFAULT_THINK_TAGS, check_tags
from skyeval.scorers.math import last_boxed

COMPONENTS = ("correct", "format", "length")


@dataclass
class RewardConfig:
    """How completions become rewards.

    - `weights`: reward = sum of weight x component over `correct` (the env's score,
      0..1), `format` (0..1: half for a closed think block, half for a boxed answer) and
      `length` (0 down to -1: the soft overlong penalty). Defaults: correctness only.
    - `max_length`, `overlong_buffer`: no penalty up to `max_length - overlong_buffer`,
      then linearly down to -1 at `max_length` and beyond (DAPO's soft overlong
      punishment). `length_unit` "tokens" counts tokens when the trainer passes token ids
      (TRL) and characters otherwise; "characters" always counts characters. `max_length`
      None turns the component off (0).
    - `think_tags`: the reasoning markers, as `model_config.think_tags`; null: no split.
    - `workers`, `item_timeout_s`: the scoring pool (default: one worker per core) and the
      bound on one item (past it, the item scores 0 with reason "timeout").
    - `grading`: a model as judge for what the rules cannot decide (`skyeval.grading.GradingConfig`
      or its fields: `mode` fallback or always, `judge`, ...; docs/grading.md); `judge_cache`:
      a folder keeping the judge's replies across batches and processes (default: in memory).
    """

    weights: dict[str, float] = field(default_factory=lambda: {"correct": 1.0, "format": 0.0, "length": 0.0})
    max_length: int | None = None
    overlong_buffer: int = 0
    length_unit: str = "tokens"
    think_tags: list[str] | None = field(default_factory=lambda: list(DEFAULT_THINK_TAGS))
    workers: int | None = None
    item_timeout_s: float = 30.0
    grading: Any = None
    judge_cache: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(COMPONENTS))
        if unknown:
            raise ConfigError(f"unknown reward component(s) {unknown}: one of {list(COMPONENTS)}")
        self.weights = {name: float(self.weights.get(name, 0.0)) for name in COMPONENTS}
        if self.max_length is not None and not 0 <= self.overlong_buffer < self.max_length:
            raise ConfigError(f"overlong_buffer must be in [0, max_length), got {self.overlong_buffer} "
                              f"with max_length {self.max_length}")
        if self.length_unit not in ("tokens", "characters"):
            raise ConfigError(f"length_unit must be 'tokens' or 'characters', got {self.length_unit!r}")
        if not self.item_timeout_s > 0:
            raise ConfigError(f"item_timeout_s must be > 0, got {self.item_timeout_s!r}")
        check_tags(self.think_tags)
        if self.grading is not None:
            self.grading = GradingConfig.of(self.grading)
            if self.grading.mode == "audit":
                raise ConfigError("grading.mode audit is for runs (an agreement table in the run folder): "
                                  "a reward grades with mode fallback or always")

    @classmethod
    def of(cls, config: "RewardConfig | dict[str, Any] | None") -> "RewardConfig":
        if isinstance(config, cls):
            return config
        return cls(**dict(config or {}))

    def combine(self, components: dict[str, float]) -> float:
        return sum(self.weights[name] * components[name] for name in COMPONENTS)


def format_score(answer: str, closed_think: bool) -> float:
    """Half for a closed think block, half for a balanced, non-empty `\\boxed{}` in the
    answer (after the block)."""
    return 0.5 * closed_think + 0.5 * (last_boxed(answer) is not None)


def length_penalty(length: int, max_length: int | None, overlong_buffer: int) -> float:
    """0 up to `max_length - overlong_buffer`, then linearly to -1 at `max_length`, -1 past it."""
    if max_length is None:
        return 0.0
    if length > max_length:
        return -1.0
    free = max_length - overlong_buffer
    return 0.0 if length <= free else (free - length) / overlong_buffer
