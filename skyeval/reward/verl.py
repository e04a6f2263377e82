"""verl: `custom_reward_function.path` = this file, `name` = `compute_score`.

verl loads this file by path and calls, per its reward manager:
- naive (one item): `compute_score(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)`;
- batch (`reward_model.reward_manager=batch`): `compute_score(data_sources=, solution_strs=,
  ground_truths=, extra_infos=, **reward_kwargs)`, one list for the whole batch (scored in
  parallel: prefer it).
`reward_kwargs` (`custom_reward_function.reward_kwargs`) are `RewardConfig` fields
(`weights`, `max_length`, ...) plus `env` (grade every item with this env, whatever its
data_source) and `env_knobs`. Each item's result is a dict: `score` (the reward) and the
components `correct`, `format`, `length`, `ungraded` (1.0 when the item timed out or
crashed its worker, scored 0; the reason is logged). verl collects the extra keys into
`reward_extra_info`, so they are all numbers and present on every item.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

from skyeval.reward.scoring import shared_reward
from skyeval.reward.sources import env_for

log = logging.getLogger("skyeval.reward.verl")


def compute_score(data_source: str | None = None, solution_str: str | None = None, ground_truth: Any = None,
                  extra_info: dict[str, Any] | None = None, *, data_sources: Sequence[str] | None = None,
                  solution_strs: Sequence[str] | None = None, ground_truths: Sequence[Any] | None = None,
                  extra_infos: Sequence[dict[str, Any] | None] | None = None, env: str | None = None,
                  env_knobs: dict[str, Any] | None = None, **config: Any) -> dict[str, float] | list[dict[str, float]]:
    """One item's result (the naive manager's call), or a list for the batch form."""
    if solution_strs is None:
        return _score([data_source], [solution_str], [ground_truth], [extra_info], env, env_knobs, config)[0]
    count = len(solution_strs)
    return _score(list(data_sources if data_sources is not None else [None] * count), list(solution_strs),
                  list(ground_truths if ground_truths is not None else [None] * count),
                  list(extra_infos if extra_infos is not None else [None] * count), env, env_knobs, config)


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                        extra_infos: Sequence[dict[str, Any] | None] | None = None, **reward_kwargs: Any) -> list[dict[str, float]]:
    """The batch form under its own name (`custom_reward_function.name=compute_score_batch`)."""
    return compute_score(data_sources=data_sources, solution_strs=solution_strs, ground_truths=ground_truths,
                         extra_infos=extra_infos, **reward_kwargs)


def _score(sources: list[Any], texts: list[Any], golds: list[Any], extras: list[Any], env: str | None,
           env_knobs: dict[str, Any] | None, config: dict[str, Any]) -> list[dict[str, float]]:
    """Group items by env (one scoring call each), then put the results back in order."""
    groups: dict[str, list[int]] = {}
    for index, source in enumerate(sources):
        groups.setdefault(env or env_for(source), []).append(index)
    out: list[dict[str, float]] = [{}] * len(texts)
    for name, indices in groups.items():
        reward = shared_reward(name, config, env_knobs)
        starter = [(extras[i] or {}).get("starter_code") if isinstance(extras[i], dict) else None for i in indices]
        questions = [(extras[i] or {}).get("question") if isinstance(extras[i], dict) else None for i in indices]
        results = reward.score([texts[i] for i in indices], [golds[i] for i in indices],
                               extras=[{"starter_code": s} for s in starter] if any(starter) else None,
                               problems=questions)
        for index, result in zip(indices, results):
            if result["error"]:
                log.warning("item %d of data_source %r scored 0: %s", index, sources[index], result["error"])
            out[index] = {"score": result["reward"], "correct": result["correct"], "format": result["format"],
                          "length": result["length"], "ungraded": float(result["error"] is not None)}
    return out
