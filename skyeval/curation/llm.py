"""One completion per prompt from any model config, cached: the helper behind rewriting and
labelling.

Replies are kept in a `JudgeCache` (grading's cache of model replies: JSON lines appended
as each reply arrives) keyed by model, prompt and sampling, so a re-run sends no request it
already paid for and Ctrl-C loses nothing that was answered. A failed request is not
kept: the next run asks again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    Prompt,
    SamplingParams,
    ScalingConfig,
)

if TYPE_CHECKING:
    from skyeval.grading import JudgeCache

_KEPT = ("generation", "reasoning", "finish_reason", "usage")  # of a result, in the cache


@dataclass
class Completions:
    """`results` by key, how many requests were `sent` and how many answers came from the
    cache (`cached`); `cache` is the cache folder (None: not cached)."""

    results: dict[str, GenerationResult] = field(default_factory=dict)
    sent: int = 0
    cached: int = 0
    cache: str | None = None

    def line(self, what: str) -> str:
        """One console line: `what`, requests sent, answers from the cache."""
        failed = sum(not r.ok for r in self.results.values())
        where = f" ({self.cache})" if self.cache else ""
        return (f"{what}: {self.sent} requests sent, {self.cached} answers from the cache{where}"
                + (f", {failed} failed (asked again on the next run)" if failed else ""))


def request_key(model_config: Any, prompt: Prompt, sampling: SamplingParams) -> str:
    """What makes two requests the same: the model, the prompt and the sampling."""
    fields = [model_config.model_source, prompt, {k: v for k, v in sampling.to_dict().items() if k != "n"}]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:32]


def complete(
    model_config: Any,
    prompts: dict[str, Prompt],
    sampling: SamplingParams | None = None,
    scaling: ScalingConfig | None = None,
    cache: "JudgeCache | str | Path | None" = None,
    progress: str | None = None,
) -> Completions:
    """A result per key of `{key: prompt}`, from `cache` (a `JudgeCache` or its folder) when
    it has the reply, else from the model of `model_config` (its backend is built only when
    something is to be sent, and closed after). Failed requests come back as results with
    `error` set. `progress` names a bar shown on a terminal while requests are answered."""
    from skyeval.envs.local import progress_bar
    from skyeval.grading import JudgeCache

    sampling = sampling or SamplingParams()
    if cache is not None and not isinstance(cache, JudgeCache):
        cache = JudgeCache(cache)
    out = Completions(cache=str(cache.path.parent) if cache is not None and cache.path is not None else None)
    asked: dict[str, list[str]] = {}  # request key -> the keys it answers (identical prompts are asked once)
    for key, prompt in prompts.items():
        asked.setdefault(request_key(model_config, prompt, sampling), []).append(key)
    todo = {}
    for request, owners in asked.items():
        entry = cache.get(request) if cache is not None else None
        if entry is None:
            todo[request] = prompts[owners[0]]
            continue
        for key in owners:
            out.results[key] = GenerationResult(id=key, sample_idx=0, **{k: entry.get(k) for k in _KEPT})
    out.cached = len(out.results)
    if not todo:
        return out
    backend = model_config.build(scaling or ScalingConfig())
    requests = (GenerationRequest(id=request, prompt=prompt, sample_indices=[0]) for request, prompt in todo.items())
    try:
        with progress_bar(progress, len(todo), unit="request") as bar:
            for result in backend.generate(requests, sampling):
                out.sent += 1
                if result.ok and cache is not None:
                    cache.put({"key": result.id, **{k: getattr(result, k) for k in _KEPT}})
                for key in asked[result.id]:
                    out.results[key] = replace(result, id=key)
                bar.update(1)
    finally:
        backend.close()
        if cache is not None:
            cache.close()
    return out


def compose_model_config(name: str, overrides: list[str] | tuple[str, ...] = ()) -> Any:
    """The model config of `conf/model_config/<name>.yaml`, composed through Hydra as the
    CLI composes it (so `${scaling.num_replicas}` and the other root values resolve), with
    `key=value` overrides of its fields (`api_url=...`, `engine_kwargs.max_model_len=64`):
    its dataclass (`HTTPConfig`, `VLLMConfig`, `RayConfig` ...)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    from skyeval.config.fingerprints import register_resolvers
    from skyeval.errors import ConfigError
    from skyeval.paths import CONF_DIR

    register_resolvers()
    groups = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
    if name not in groups:
        raise ConfigError(f"no model config {name!r}: one of {', '.join(groups)}")
    for override in overrides:
        if "=" not in override:
            raise ConfigError(f"model config override {override!r} is not key=value")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        try:
            cfg = compose("config", overrides=[f"model_config={name}", *(f"++model_config.{o}" for o in overrides)])
        except ConfigCompositionException as err:
            raise ConfigError(f"model config {name!r}: {err}") from None
    try:
        return OmegaConf.to_object(cfg.model_config)
    except MissingMandatoryValue as err:
        key = err.full_key.split(".", 1)[-1]
        raise ConfigError(f"model config {name!r} needs {key}: add --set {key}=...") from None
