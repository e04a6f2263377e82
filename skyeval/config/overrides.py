"""A user's `--config FILE.yaml` and SkyThought's flags, as Hydra overrides.

Both are merged before the run config is built (`--task --model --backend ...`)."""

from __future__ import annotations

import dataclasses
import difflib
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from skyeval.config.schema import (
    MODEL_CONFIGS,
    metrics_sampling,
    model_config_class,
    unknown_key_error,
)
from skyeval.errors import ConfigError
from skyeval.metrics.specs import as_specs
from skyeval.paths import CONF_DIR

MODEL_CONFIG_ALIASES = {"http": "openai"}  # `model_config.type: http` in user files, `--backend http`
SKYTHOUGHT_FLAGS = ("--task", "--model", "--backend", "--backend-args", "--sampling-params", "--n",
                    "--result-dir", "--system-prompt-name")


# ---- SkyThought-style flags ------------------------------------------------------------
def from_skythought_flags(stage: str, args: list[str]) -> list[str]:
    """`--task aime24 --model M --backend vllm --backend-args tensor_parallel_size=8 ...`
    -> `+env=aime24 model_config=vllm model_config.model_source=M ...`; prints the form used."""
    if not any(a.split("=", 1)[0] in SKYTHOUGHT_FLAGS for a in args):
        return args
    values, rest, i = {}, [], 0
    while i < len(args):
        flag, eq, inline = args[i].partition("=")
        if flag in SKYTHOUGHT_FLAGS:
            if eq:
                values[flag] = inline
            elif i + 1 < len(args):
                values[flag] = args[i + 1]
                i += 1
            else:
                raise ConfigError(f"{flag} needs a value")
        else:
            rest.append(args[i])
        i += 1
    overrides = skythought_overrides(values)
    print(f"skyeval: running as: skyeval {stage} {' '.join(shlex.quote(o) for o in overrides + rest)}", file=sys.stderr)
    return overrides + rest


def skythought_overrides(values: dict[str, str]) -> list[str]:
    """Hydra overrides for SkyThought's flags (keys like "--task"); see `from_skythought_flags`.
    `--backend-args` are vLLM engine arguments: those with a field of their own (`dtype`)
    set it, the others go to `engine_kwargs`; backends without engine arguments take fields."""
    out: list[str] = []
    if "--task" in values:
        out.append(f"+env={values['--task']}")
    backend = values.get("--backend")
    if backend:
        backend = model_group(MODEL_CONFIG_ALIASES.get(backend.lower(), backend.lower()), "--backend")
        out.append(f"model_config={backend}")
    if "--model" in values:
        out.append(f"model_config.model_source={values['--model']}")
    if "--backend-args" in values:
        cls = model_config_class(MODEL_CONFIGS[backend or "reference"])
        fields = {f.name for f in dataclasses.fields(cls)} - {"_target_"}
        own = getattr(cls, "own_fields", fields) & fields  # engine arguments that only their field may set
        for key, value in _pairs(values["--backend-args"], "--backend-args"):
            if key in own or (key in fields and "engine_kwargs" not in fields):
                out.append(f"model_config.{key}={value}")
            elif "engine_kwargs" in fields:
                out.append(f"+model_config.engine_kwargs.{key}={value}")
            else:
                raise ConfigError(f"--backend-args {key}: the {backend or 'reference'} backend has no such field; "
                                  f"its fields: {', '.join(sorted(fields))}")
    for key, value in _pairs(values.get("--sampling-params", ""), "--sampling-params"):
        out.append(f"sampling_params.{key}={value}")
    if "--n" in values:
        out.append(f"sampling_params.n={values['--n']}")
    if "--result-dir" in values:
        out.append(f"logging.results_dir={values['--result-dir']}")
    if "--system-prompt-name" in values:
        out.append(f"template.system_prompt_name={values['--system-prompt-name']}")
    return out


def _pairs(text: str, flag: str) -> list[tuple[str, str]]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"{flag} takes key=value pairs separated by commas, got {item!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def model_group(name: str, where: str) -> str:
    """`name` if conf/model_config has it, else a ConfigError naming the closest one."""
    groups = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
    if name not in groups:
        close = difflib.get_close_matches(name, groups, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{where}: unknown backend {name!r}.{hint} One of: {', '.join(groups)} (http = openai)")
    return name


# ---- errors ---------------------------------------------------------------------------------
def composition_error(err: BaseException) -> ConfigError:
    """A Hydra composition error (an unknown key or group option, a wrong type) as one line:
    the key, what is wrong, and the closest valid key or option."""
    cause = err.__cause__ or err
    message = str(cause)
    missing = re.search(r"Could not find '([\w/]+)/([^']+)'", message)
    if missing:
        return unknown_option(missing[1], missing[2])
    appended = re.search(r"Could not override '([\w/]+)'.*?use (\+\S+)", message, re.DOTALL)
    if appended:
        return ConfigError(f"{appended[2][1:]}: no {appended[1]} is selected yet, so there is none to override; "
                           f"write {appended[2]}")
    key = getattr(cause, "full_key", None) or ""
    schema = getattr(cause, "object_type", None)
    if not key and "full_key: " in message:  # a key of a `--config` file: Hydra keeps only the text
        key = re.search(r"full_key: (\S+)", message)[1]
        named = re.search(r"object_type=(\w+)", message)
        schema = _schemas().get(named[1]) if named else None
    found = unknown_key_error(cause, key, schema)
    if found is not None:
        return found
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    text = next((line for line in lines if not line.endswith("raised while composing config:")),
                lines[0] if lines else type(cause).__name__)
    return ConfigError(f"{key + ': ' if key else ''}{text}")


def unknown_option(group: str, option: str) -> ConfigError:
    """`model_config=opnai`: the group's options, with the closest one."""
    options = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
    close = difflib.get_close_matches(option, options, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"{group}={option}: no such option.{hint} Options: {', '.join(options) or 'none'}")


def full_key(name: str) -> str | None:
    """The full key of a setting given by its bare name (`limit` -> `env.limit`,
    `temperature` -> `sampling_params.temperature`), or None."""
    from skyeval.backends.base import SamplingParams, ScalingConfig
    from skyeval.config.schema import LoggingConfig
    from skyeval.envs.registry import FAMILIES, constructor_knobs
    from skyeval.templates import Template

    def fields(*classes: type) -> set[str]:
        return {f.name for cls in classes for f in dataclasses.fields(cls) if not f.name.startswith("_")}

    env_classes, todo = set(), list(FAMILIES)
    while todo:
        env_cls = todo.pop()
        env_classes.add(env_cls)
        todo.extend(env_cls.__subclasses__())
    sections = [("sampling_params", fields(SamplingParams)),
                ("env", {k for cls in env_classes for k in constructor_knobs(cls)}),
                ("model_config", fields(*(model_config_class(t) for t in MODEL_CONFIGS.values()))),
                ("logging", fields(LoggingConfig)), ("scaling", fields(ScalingConfig)), ("template", fields(Template))]
    return next((f"{section}.{name}" for section, names in sections if name in names), None)


def bare_key_error(override: str) -> ConfigError | None:
    """`limit=5` (a section's key given bare, not a root setting) -> its full form, else None."""
    key, sep, value = override.partition("=")
    if not sep or key.startswith(("+", "~")) or "." in key or "/" in key:
        return None
    from skyeval.config.schema import RunConfig

    if key in {f.name for f in dataclasses.fields(RunConfig)} or (CONF_DIR / key).is_dir() or key in ("hydra", "run_dir"):
        return None
    found = full_key(key)
    if found is None:
        return None
    return ConfigError(f"{override}: {key!r} is not a top-level setting; did you mean {found}={value}?")


def experiment_env_error(overrides: list[str]) -> ConfigError | None:
    """An experiment that selects its own env (`/env: numina` in its defaults) with a
    benchmark given as `+env=Y` (Hydra: "Multiple values for env"), or as `env=Y` while the
    experiment's env class (`env._target_`) is made for another env: one line saying what to
    write. None when neither."""
    from omegaconf import OmegaConf

    values = {o.partition("=")[0]: o.partition("=")[2] for o in overrides if "=" in o}
    experiments = [v for k, v in values.items() if k.lstrip("+") == "experiment"]
    if not experiments or not (CONF_DIR / "experiment" / f"{experiments[0]}.yaml").is_file():
        return None
    name = experiments[0]
    spec = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "experiment" / f"{name}.yaml"))
    own = next((d["/env"] for d in spec.get("defaults") or [] if isinstance(d, dict) and "/env" in d), None)
    target = (spec.get("env") or {}).get("_target_")
    added = values.get("+env") or values.get("++env")
    chosen = added or values.get("env")
    if own is None or not chosen or "," in chosen or "env._target_" in values:
        return None
    hint = _experiment_target(target, chosen)
    if added:
        return ConfigError(f"+env={added}: +experiment={name} already selects an env ({own}); to use {added} write "
                           f"env={added}{hint} (no +)")
    return ConfigError(f"env={chosen}: +experiment={name} scores with {target}, made for {own}; "
                       f"write env={chosen}{hint}") if hint else None


def _experiment_target(target: str | None, env: str) -> str:
    """` env._target_=CLASS`: the class of `env` made like the experiment's `target` (the
    same mixins over env's own class: MathRejectionEnv for math500); "" when the experiment
    sets no class or its class already fits the env."""
    from hydra.utils import get_class

    from skyeval.envs.base import Env
    from skyeval.envs.registry import SkyEnvBuilder

    if target is None:
        return ""
    try:
        made, base = get_class(target), get_class(SkyEnvBuilder.config(env)["_target_"])
    except Exception:  # noqa: BLE001 - an unknown env or class: Hydra and the registry say so
        return ""
    mixins = [b for b in made.__bases__ if not issubclass(b, Env)]
    if base in made.__bases__ or made is base:
        return ""
    module = sys.modules[made.__module__]
    for candidate in vars(module).values():
        if isinstance(candidate, type) and base in candidate.__bases__ and all(issubclass(candidate, m) for m in mixins):
            return f" env._target_={candidate.__module__}.{candidate.__qualname__}"
    mixin = ", ".join(m.__name__ for m in mixins) or made.__name__
    return (f" env._target_=your.module.YourEnv (no class of {made.__module__} fits {env}: define "
            f"class YourEnv({mixin}, {base.__name__}))")


def _schemas() -> dict[str, type]:
    """The config dataclasses by class name (the only name Hydra's message keeps)."""
    from skyeval.backends.base import SamplingParams, ScalingConfig
    from skyeval.config.schema import LoggingConfig, RunConfig
    from skyeval.results import Shard
    from skyeval.templates import Template

    classes = [RunConfig, SamplingParams, ScalingConfig, LoggingConfig, Shard, Template,
               *(model_config_class(target) for target in MODEL_CONFIGS.values())]
    return {cls.__name__: cls for cls in classes}


# ---- the user's config file -------------------------------------------------------------
def with_user_config(args: list[str], temp_dirs: list[Path]) -> list[str]:
    """`--config FILE` -> the file, normalised, as a `_global_` config in a temporary
    searchpath entry (listed in `temp_dirs` for the caller to remove)."""
    if "--config" not in args:
        return args
    i = args.index("--config")
    if i + 1 >= len(args):
        raise ConfigError("--config needs a path to a YAML file")
    path = Path(args[i + 1]).expanduser().resolve()
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    rest = args[:i] + args[i + 2 :]
    cfg, selections = user_config(path)
    given = {o.partition("=")[0].lstrip("+") for o in rest if "=" in o}
    selections = [s for s in selections if s.partition("=")[0].lstrip("+") not in given]

    import yaml

    search_dir = Path(tempfile.mkdtemp(prefix="skyeval_config_"))
    temp_dirs.append(search_dir)
    (search_dir / "user_config").mkdir()
    (search_dir / "user_config" / "file.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return [*selections, f"hydra.searchpath=[file://{search_dir}]", "+user_config@_global_=file", *rest]


def user_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """A user's YAML file as a config Hydra can merge over the defaults, and the group
    selections it implies (`+env=aime24`, `model_config=vllm`).

    Accepted beyond RunConfig's own keys: `env.env_kwargs` (knobs, merged into `env`),
    `model_config.type` (reference|openai|http|vllm|ray: the backend group),
    `model_config.concurrency` (-> `scaling.concurrency`), a template given as a string
    or a message list, and `metrics` in `env.env_kwargs` (which, unless the file sets
    `sampling_params.n`, sets it to what the metrics need)."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected sections (env:, model_config:, ...), got a {type(data).__name__}")
    data, selections = dict(data), []
    env = data.get("env")
    if isinstance(env, dict):
        env = dict(env)
        knobs = dict(env.pop("env_kwargs", None) or {})
        if "metrics" in knobs:
            if "metrics" in data:
                raise ConfigError(f"{path}: metrics is set both at the top and in env.env_kwargs; keep one")
            data["metrics"] = knobs.pop("metrics")
        env.update(knobs)
        from skyeval.envs.registry import packaged_name

        name = env.get("name")
        if name and "_target_" not in env and (CONF_DIR / "env" / f"{packaged_name(str(name))}.yaml").exists():
            selections.append(f"+env={packaged_name(str(name))}")
            env.pop("name")
        else:
            env.setdefault("limit", None)  # so `env.limit=3` works on the command line
        data["env"] = env
    model = data.get("model_config")
    if isinstance(model, dict):
        model = dict(model)
        kind = model.pop("type", None)
        if kind is not None:
            group = MODEL_CONFIG_ALIASES.get(str(kind).lower(), str(kind).lower())
            selections.append(f"model_config={model_group(group, f'{path}: model_config.type')}")
        if "concurrency" in model:
            data["scaling"] = {**(data.get("scaling") or {}), "concurrency": model.pop("concurrency")}
        data["model_config"] = model
    template = data.get("template")
    if isinstance(template, str):
        data["template"] = {"text": template, "messages": None}
    elif isinstance(template, list):
        data["template"] = {"messages": template, "text": None}
    if data.get("metrics") is not None:
        try:
            specs = as_specs(data["metrics"])
            data["sampling_params"] = metrics_sampling(specs, data.get("sampling_params"), str(path))
            for spec in specs:
                spec.resolved(data["sampling_params"]["n"])
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None
        data["metrics"] = [spec.asdict() for spec in specs]
    return data, selections


def _read_yaml(path: Path) -> Any:
    """The file's data; malformed YAML or interpolations fail in one line naming the
    file, the line and the fix."""
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark else None
        source = text.splitlines()[line - 1] if line and line <= len(text.splitlines()) else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError(f"{path}:{line}: not valid YAML ({problem}). {_yaml_fix(source)}") from None
    _check_interpolations(root, path)
    return yaml.safe_load(text)


def _yaml_fix(line: str) -> str:
    if "{$" in line:
        return "An interpolation is written ${env.name}, not {$env.name}."
    return "Check the indentation, and quote values that start with { [ * & ! | > % @ or contain ': '."


def _check_interpolations(node: Any, path: Path) -> None:
    """Every `${...}` in the file parses (OmegaConf's grammar), and no `{$...}` typo."""
    import yaml
    from omegaconf.errors import GrammarParseError
    from omegaconf.grammar_parser import parse

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _check_interpolations(value, path)
    elif isinstance(node, yaml.SequenceNode):
        for value in node.value:
            _check_interpolations(value, path)
    elif isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
        line = node.start_mark.line + 1
        if "{$" in node.value:
            raise ConfigError(f"{path}:{line}: {node.value!r}: an interpolation is written ${{env.name}}, not {{$env.name}}")
        if "${" in node.value:
            try:
                parse(node.value)
            except GrammarParseError:
                raise ConfigError(f"{path}:{line}: malformed interpolation {node.value!r}: write ${{section.key}} "
                                  "(e.g. ${env.name}) or ${oc.env:VAR,default}") from None
