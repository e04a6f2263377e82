"""One completion per prompt from any model config: the helper behind rewriting and labelling."""

from __future__ import annotations

from typing import Any

from skyeval.backends.base import (
    GenerationRequest,
    GenerationResult,
    Prompt,
    SamplingParams,
    ScalingConfig,
)


def complete(
    model_config: Any,
    prompts: dict[str, Prompt],
    sampling: SamplingParams | None = None,
    scaling: ScalingConfig | None = None,
) -> dict[str, GenerationResult]:
    """`{key: result}` for `{key: prompt}`: builds the backend, generates, closes it.
    Failed requests come back as results with `error` set."""
    backend = model_config.build(scaling or ScalingConfig())
    requests = [GenerationRequest(id=key, prompt=prompt, sample_indices=[0]) for key, prompt in prompts.items()]
    try:
        return {r.id: r for r in backend.generate(requests, sampling or SamplingParams())}
    finally:
        backend.close()


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
