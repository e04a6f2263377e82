"""`Reward`: an env's graders as a reward. Completions and their golds in; per item the
reward, each component and the reason an item could not be graded out. The adapters
(`trl`, `verl`, the server) only translate their trainer's contract into this call."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Sequence

from skyeval.reasoning import check_tags, prompt_opens_block, split
from skyeval.reward.components import COMPONENTS, RewardConfig, format_score, length_penalty

if TYPE_CHECKING:
    from skyeval.envs.base import Env


class Reward:
    """`score(completions, golds)` with an env's own grader (`env.score_batch`: parallel on
    the env's persistent scoring pool, each item time-bounded), as in evaluation: the
    reasoning is split off first (`skyeval.reasoning.split`), so a think block's
    intermediate answers are never graded, and a truncated one has no answer."""

    def __init__(self, env: "Env | str", config: RewardConfig | dict[str, Any] | None = None,
                 env_knobs: dict[str, Any] | None = None) -> None:
        if isinstance(env, str):
            from skyeval.envs.registry import SkyEnvBuilder

            env = SkyEnvBuilder.build(env, env_knobs)
        self.env = env
        self.config = RewardConfig.of(config)
        self.tags = check_tags(self.config.think_tags)
        self.gold_key = env.required_keys[0]  # where the env's scorer reads the gold ("expected", "tests_json")
        self.judging = None  # the judge step (`config.grading`), batched like the rules
        if self.config.grading is not None and self.config.grading.active:
            from skyeval.envs.math import MathEnv
            from skyeval.errors import ConfigError
            from skyeval.grading import Judge, JudgeCache

            if not isinstance(env, MathEnv):
                raise ConfigError(f"grading: a judge grades math answers, and env {env.name} is not a math env")
            from skyeval.grading.apply import GradingStep

            judge = Judge(self.config.grading, JudgeCache(self.config.judge_cache))
            self.judging = GradingStep(self.config.grading, judge, grade_truncated=getattr(env, "grade_truncated", False),
                                       gold_key=self.gold_key)

    def score(self, completions: Sequence[str | None], golds: Sequence[Any], *,
              prompts: Sequence[str | None] | None = None, lengths: Sequence[int] | None = None,
              extras: Sequence[dict[str, Any]] | None = None,
              problems: Sequence[str | None] | None = None) -> list[dict[str, Any]]:
        """One dict per completion: `reward` (the weighted sum), `correct`, `format`,
        `length` and `error` (why the item scored 0 without being graded: a timeout, a
        crashed worker; None otherwise). `prompts` (text) tell whether the output starts
        inside a think block the prompt opened; `lengths` (token counts) measure the
        overlong penalty instead of characters (unless `length_unit` is "characters"); `extras` add fields a scorer reads
        (`starter_code`). With a judge (`RewardConfig.grading`), `problems` (default: the
        prompts) give it the problem for context, and `graded_by` says who decided each
        item (`rules` or `judge`)."""
        count = len(completions)
        for name, values in (("golds", golds), ("prompts", prompts), ("lengths", lengths), ("extras", extras),
                             ("problems", problems)):
            if values is not None and len(values) != count:
                raise ValueError(f"{len(values)} {name} for {count} completions")
        if self.config.length_unit == "characters":
            lengths = None
        items, shapes = [], []
        for index, completion in enumerate(completions):
            text = completion or ""
            prompt = prompts[index] if prompts is not None else None
            opened = isinstance(prompt, str) and prompt_opens_block(prompt, self.tags)
            _, answer = split(text, self.tags, opened=opened)
            closed = self.tags is not None and self.tags[1] in text
            length = lengths[index] if lengths is not None else len(text)
            shapes.append({"format": format_score(answer, closed),
                           "length": length_penalty(length, self.config.max_length, self.config.overlong_buffer)})
            extra = extras[index] if extras is not None else {}
            items.append({**extra, "generation": answer, self.gold_key: self._gold(golds[index])})
        graded = self.env.score_batch(items, self.config.workers, self.config.item_timeout_s)
        if self.judging is not None:
            graded = self._judged(items, graded, problems if problems is not None else prompts)
        out = []
        for result, shape in zip(graded, shapes):
            components = {"correct": float(result["score"]), **shape}
            out.append({"reward": self.config.combine(components), **components, "error": result["score_error"],
                        **({"graded_by": result["graded_by"]} if "graded_by" in result else {})})
        return out

    def _judged(self, items: list[dict[str, Any]], graded: list[dict[str, Any]],
                problems: Sequence[Any] | None) -> list[dict[str, Any]]:
        """The batch's results through the judge step (one batch of judge requests)."""
        scored = [i for i, result in enumerate(graded) if not result["score_error"]]
        rows = [{"question": problems[i] if problems is not None and isinstance(problems[i], str) else "",
                 **items[i]} for i in scored]
        out = list(graded)
        for i, result in zip(scored, self.judging.decide([(row, graded[i]) for row, i in zip(rows, scored)])):
            out[i] = result
        return out

    def _gold(self, gold: Any) -> Any:
        """Code envs read their tests as JSON text; trainers may hand them over parsed."""
        if self.gold_key == "tests_json" and not isinstance(gold, str):
            return json.dumps(gold)
        return gold

    def close(self) -> None:
        """Stop the env's scoring pool (and the judge's backend)."""
        self.env.close()
        if self.judging is not None:
            self.judging.judge.close()


_SHARED: dict[str, Reward] = {}
_SHARED_LOCK = threading.Lock()


def shared_reward(env: str, config: RewardConfig | dict[str, Any] | None = None,
                  env_knobs: dict[str, Any] | None = None) -> Reward:
    """One `Reward` per (env, config, knobs) in this process, built at the first call:
    functions a trainer calls per item (verl's `compute_score`) reuse its pool."""
    config = RewardConfig.of(config)
    key = json.dumps([env, config.__dict__, env_knobs or {}], sort_keys=True, default=str)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Reward(env, config, env_knobs)
        return _SHARED[key]


def means(results: list[dict[str, Any]]) -> dict[str, float]:
    """The batch mean of each component (what trainers log)."""
    return {name: sum(r[name] for r in results) / len(results) for name in COMPONENTS} if results else {}
