"""The typed `RunConfig` and every section's schema, registered with Hydra's ConfigStore.

Every YAML file under conf/ extends its dataclass and holds only the values that differ
from its defaults:

    conf/config.yaml                  defaults: [RunConfig, ...]        (this module)
    conf/model_config/openai.yaml     defaults: [HTTPConfig, _self_]    (skyeval.backends.*)
    conf/sampling_params/*.yaml       defaults: [SamplingParams, ...]   (skyeval.backends.base)
    conf/template/*.yaml              defaults: [Template, _self_]      (skyeval.templates)
    conf/logging/default.yaml         defaults: [LoggingConfig, _self_] (this module)
    conf/grading/default.yaml         defaults: [GradingConfig, judge: openai, _self_] (skyeval.grading;
                                      conf/grading/judge/*.yaml extend the model configs)
    conf/tools/*.yaml                 defaults: [ToolsConfig, _self_]   (skyeval.tools)
    conf/env/<name>.yaml              defaults: [MathEnv, _self_]       (an env class: its knobs,
                                                                         skyeval.envs.registry)

`scaling`, `shard` and `metrics` are sections of `RunConfig` itself. A misspelt key or a
wrong type is refused by the schema; the CLI turns that into one line with the closest key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from skyeval.backends.base import ModelConfig, SamplingParams, ScalingConfig, class_path, model_config_class
from skyeval.errors import ConfigError
from skyeval.grading.config import GradingConfig
from skyeval.metrics.specs import MetricSpec, as_specs, samples_needed
from skyeval.results import Shard
from skyeval.templates import Template
from skyeval.tools.config import ToolsConfig

STAGES = ("evaluate", "generate", "score")
# Model configs by the group option that selects them (conf/model_config/<option>.yaml).
MODEL_CONFIGS = {"reference": "skyeval.backends.reference.ReferenceConfig",
                 "openai": "skyeval.backends.openai.HTTPConfig",
                 "openai_batch": "skyeval.backends.openai_batch.OpenAIBatchConfig",
                 "vllm": "skyeval.backends.vllm.VLLMConfig",
                 "ray": "skyeval.backends.ray.RayConfig"}
GRADING_JUDGE = MODEL_CONFIGS["openai"]  # the judge's default backend (conf/grading/judge/openai.yaml)


@dataclass
class LoggingConfig:
    """Where run folders go (`results_dir/experiment_name/`) and what else reports a run:
    `wandb`/`mlflow` log its summary and samples (docs/report.md)."""

    experiment_name: str = MISSING
    results_dir: str = "outputs"
    level: str = "INFO"
    wandb: bool = False
    wandb_project: str = "skyeval"
    mlflow: bool = False
    mlflow_experiment: str = "skyeval"
    mlflow_tracking_uri: str | None = None


@dataclass
class RunConfig:
    """Everything one run reads, typed: built once from the composed Hydra config (the CLI,
    with a user's `--config` file and SkyThought flags merged in) or in Python, and passed
    whole to what runs it.

    `env` is the env's section: the `name` of a packaged or registered env, or a
    `_target_` class, plus knobs; they are checked against that class's constructor when
    the env is built. `data_dir` (default `$SKYEVAL_DATA_DIR`) is the local benchmark
    mirror; `imports` are modules imported first (ones calling `SkyEnvBuilder.register`);
    `metrics` null means accuracy and pass@k at 1, 2, 4 .. n."""

    env: Any = MISSING
    model_config: ModelConfig = MISSING
    template: Template = field(default_factory=Template)
    sampling_params: SamplingParams = field(default_factory=SamplingParams)
    scaling: ScalingConfig = field(default_factory=ScalingConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    shard: Shard = field(default_factory=Shard)
    grading: GradingConfig = field(default_factory=GradingConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    metrics: list[MetricSpec] | None = None
    stage: str = "evaluate"
    data_dir: str | None = None
    dry_run: bool = False
    retry_failures: bool = False
    overwrite: bool = False
    imports: list[str] = field(default_factory=list)
    # keys a user added at the top with `+key=value` (their own, e.g. for interpolations):
    # written with the config (redacted like the rest), read by nothing
    user_keys: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if dataclasses.is_dataclass(self.env):  # a packaged env's knobs schema (conf/env/*.yaml)
            self.env = dataclasses.asdict(self.env)
        if not isinstance(self.env, dict):
            raise ConfigError("no benchmark selected: add +env=NAME (see conf/env/) or an `env:` section")
        if self.stage not in STAGES:
            raise ConfigError(f"stage must be one of {', '.join(STAGES)}, got {self.stage!r}")
        self.metrics = as_specs(self.metrics)
        if self.metrics is not None:
            [spec.resolved(self.sampling_params.n) for spec in self.metrics]  # refused here, before any work

    @classmethod
    def of(cls, cfg: Any) -> RunConfig:
        """A RunConfig from a composed config (a DictConfig) or plain data (a run folder's
        config.yaml: its `model_config._target_` names the class). Interpolations are
        resolved; a missing required value is a ConfigError naming the key."""
        from omegaconf import OmegaConf
        from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

        try:
            node = cfg if OmegaConf.is_config(cfg) else _typed(cfg)
            user_keys = refuse_unknown_keys(node)
            env = OmegaConf.to_container(node.env, resolve=True, throw_on_missing=True) if "env" in node else None
            node = node.copy()
            node.env = env  # the env's knobs as plain data: its class checks them when it is built
            if "grading" in node and node.grading.judge is not None:  # built by GradingConfig when needed
                node.grading.judge = OmegaConf.to_container(node.grading.judge, resolve=True)
            config = OmegaConf.to_object(node)
            if user_keys:
                plain = OmegaConf.to_container(node, resolve=True)
                config.user_keys.update({key: plain[key] for key in user_keys})
            return config
        except MissingMandatoryValue as err:
            key = err.full_key or "env"
            raise ConfigError(f"missing required value {key}: set it on the command line, e.g. {key}=...") from None
        except OmegaConfBaseException as err:
            raise unknown_key_error(err) or ConfigError(f"config error: {str(err).splitlines()[0]}") from None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as written to config.yaml and summary.json (secrets still in: redact it)."""
        out = dataclasses.asdict(self)
        out["metrics"] = None if self.metrics is None else [m.asdict() for m in self.metrics]
        out.update(out.pop("user_keys"))
        return out

    def with_changes(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)


def refuse_unknown_keys(node: Any, path: str = "") -> list[str]:
    """Raise a ConfigError for a key that a typed section's dataclass does not declare (one
    added with `+key=`, which Hydra lets through), naming the closest declared key. At the
    top, a key close to none is the user's own (returned): `+hf_token=...`."""
    import difflib

    from omegaconf import DictConfig, OmegaConf

    schema, user_keys = OmegaConf.get_type(node), []
    for key in node.keys() if isinstance(node, DictConfig) else ():
        if dataclasses.is_dataclass(schema) and key not in {f.name for f in dataclasses.fields(schema)}:
            if path or difflib.get_close_matches(str(key), [f.name for f in dataclasses.fields(schema)], n=1):
                raise unknown_key(path, str(key), schema)
            user_keys.append(str(key))
        elif key != "env" and isinstance(node._get_node(key), DictConfig):  # env: checked by its class
            refuse_unknown_keys(node._get_node(key), f"{path}.{key}" if path else str(key))
    return user_keys


def unknown_key(section: str, key: str, schema: type) -> ConfigError:
    """`unknown key 'sampling_params.temprature'. Did you mean 'temperature'? Keys of ...`"""
    import difflib

    known = sorted(f.name for f in dataclasses.fields(schema) if not f.name.startswith("_"))
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    backend = f" ({schema.__name__}; another backend: model_config=openai|vllm|ray)" \
        if section == "model_config" else ""
    where = f"{section}.{key}" if section else key
    return ConfigError(f"unknown key {where!r}.{hint} Keys of {section or 'the root config'}{backend}: "
                       f"{', '.join(known)}")


def unknown_key_error(err: BaseException, key: str | None = None, schema: Any = None) -> ConfigError | None:
    """OmegaConf's "Key 'x' not in 'Schema'" as `unknown_key`'s one line (None for other
    errors). `key` (the full key) and `schema` (the dataclass) default to the error's own."""
    import re

    unknown = re.search(r"Key '([^']+)' (?:is )?not in", str(err))
    key = key if key is not None else getattr(err, "full_key", None) or ""
    schema = schema if schema is not None else getattr(err, "object_type", None)
    if not unknown or not dataclasses.is_dataclass(schema):
        return None
    return unknown_key(key.rpartition(".")[0] if key.endswith(unknown[1]) else key, unknown[1], schema)


def metrics_sampling(metrics: Any, sampling: dict[str, Any], where: str) -> dict[str, Any]:
    """A user file's `sampling_params` with `n` set to what its `metrics` need (when it
    does not set n); a smaller n is refused."""
    needed = samples_needed(metrics)
    sampling = dict(sampling or {})
    if sampling.get("n") is not None and int(sampling["n"]) < needed:
        raise ConfigError(f"{where}: metrics need {needed} samples per problem but sampling_params.n is {sampling['n']}")
    sampling.setdefault("n", needed)
    return sampling




def register() -> None:
    """Store every schema with Hydra's ConfigStore, each named after its class (done on
    import: conf/ composes once this module is imported)."""
    from hydra.core.config_store import ConfigStore

    from skyeval.envs.registry import register_schemas

    register_schemas()
    store = ConfigStore.instance()
    store.store(name="RunConfig", node=RunConfig)
    store.store(group="sampling_params", name="SamplingParams", node=SamplingParams)
    store.store(group="template", name="Template", node=Template)
    store.store(group="logging", name="LoggingConfig", node=LoggingConfig)
    store.store(group="grading", name="GradingConfig", node=GradingConfig)
    store.store(group="tools", name="ToolsConfig", node=ToolsConfig)
    for target in MODEL_CONFIGS.values():
        cls = model_config_class(target)
        store.store(group="model_config", name=cls.__name__, node=schema_node(cls))
        store.store(group="grading/judge", name=cls.__name__, node=schema_node(cls))


def schema_node(cls: type) -> Any:
    """`cls` as a structured config node whose `_target_` names it."""
    from omegaconf import OmegaConf

    node = OmegaConf.structured(cls)
    node._target_ = class_path(cls)
    return node


def _typed(data: dict[str, Any]) -> Any:
    """Plain data (a config.yaml) merged into the RunConfig schema, its model config typed
    by its `_target_`."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    fields = {f.name for f in dataclasses.fields(RunConfig)}
    data = {k: v for k, v in data.items() if k in fields} | {
        "user_keys": {**(data.get("user_keys") or {}), **{k: v for k, v in data.items() if k not in fields}}}
    model = dict(data.get("model_config") or {})
    cls = model_config_class(model.get("_target_") or MODEL_CONFIGS["reference"])
    data["model_config"] = OmegaConf.merge(schema_node(cls), model)
    judge = (data.get("grading") or {}).get("judge")
    if isinstance(judge, dict):  # typed by its `_target_` too: a misspelt key is refused
        judge_cls = model_config_class(judge.get("_target_") or GRADING_JUDGE, "grading.judge")
        try:
            judge = OmegaConf.merge(schema_node(judge_cls), judge)
        except OmegaConfBaseException as err:
            raise unknown_key_error(err, "grading.judge", judge_cls) or ConfigError(f"grading.judge: {err}") from None
        data["grading"] = {**data["grading"], "judge": judge}
    return OmegaConf.merge(OmegaConf.structured(RunConfig), data)


register()
