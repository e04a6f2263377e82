"""TRL: `GRPOTrainer(reward_funcs=[skyeval.reward.trl("math500")])`.

TRL calls a reward function as `f(prompts=..., completions=..., completion_ids=...,
**columns)`, where `columns` are the dataset's other columns (one value per completion)
plus `trainer_state`, `log_extra` and `log_metric`; it logs the returned floats as
`rewards/<f.__name__>/mean`."""

from __future__ import annotations

from typing import Any, Callable

from skyeval.reward.components import RewardConfig
from skyeval.reward.scoring import Reward, means


class TRLReward:
    """The callable TRL gets. Completions are strings or conversations (the assistant
    messages' text is graded); the gold is read from the `gold_column` keyword. Each
    component's batch mean goes to TRL's `log_metric` as `<__name__>/<component>`, and
    an item that could not be graded (timeout) names its reason in `log_extra`'s
    `<__name__>/error` column."""

    def __init__(self, reward: Reward, gold_column: str, name: str) -> None:
        self.reward, self.gold_column, self.__name__ = reward, gold_column, name

    def __call__(self, prompts: list[Any] | None = None, completions: list[Any] | None = None,
                 completion_ids: list[list[int]] | None = None, **kwargs: Any) -> list[float]:
        completions = list(completions or [])
        if self.gold_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in ("trainer_state", "log_extra", "log_metric", "environments"))
            raise ValueError(f"reward {self.__name__!r} reads the gold from dataset column {self.gold_column!r}, "
                             f"which the trainer did not pass (columns: {columns}); set gold_column=")
        extras = [{"starter_code": s} for s in kwargs["starter_code"]] if "starter_code" in kwargs else None
        results = self.reward.score(
            [text_of(c) for c in completions], kwargs[self.gold_column],
            prompts=[p if isinstance(p, str) else None for p in prompts] if prompts is not None else None,
            lengths=[len(ids) for ids in completion_ids] if completion_ids is not None else None,
            extras=extras,
            problems=[text_of(p, role="user") for p in prompts] if prompts is not None else None,
        )
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        if log_metric is not None:
            for component, mean in means(results).items():
                log_metric(f"{self.__name__}/{component}", mean)
        log_extra: Callable[[str, list], None] | None = kwargs.get("log_extra")
        if log_extra is not None:
            log_extra(f"{self.__name__}/error", [r["error"] or "" for r in results])
        return [r["reward"] for r in results]


def trl(env: str, *, gold_column: str | None = None, name: str | None = None,
        config: RewardConfig | dict[str, Any] | None = None, env_knobs: dict[str, Any] | None = None,
        **config_fields: Any) -> TRLReward:
    """A reward function for TRL grading with env `env` (a name, as `+env=`).

    `gold_column`: the dataset column holding the gold (default: the env's answer field,
    e.g. `answer` for math500, else its gold key, `expected` or `tests_json`). `name`:
    the function's `__name__`, what TRL logs it as (default `skyeval_<env>`). The rest
    are `RewardConfig` fields (`weights`, `max_length`, `workers`, ...)."""
    reward = Reward(env, RewardConfig.of({**(_fields(config)), **config_fields}), env_knobs)
    column = gold_column or getattr(reward.env, "answer_field", None) or reward.gold_key
    return TRLReward(reward, column, name or f"skyeval_{reward.env.name}")


def text_of(completion: Any, role: str = "assistant") -> str:
    """A completion's text: a string as is; a conversation's messages of `role` joined
    (a prompt's: role "user")."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list):
        return "".join(_content(m) for m in completion if isinstance(m, dict) and m.get("role", "assistant") == role)
    return ""


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # parts: [{"type": "text", "text": ...}]
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _fields(config: RewardConfig | dict[str, Any] | None) -> dict[str, Any]:
    return dict(config.__dict__) if isinstance(config, RewardConfig) else dict(config or {})
