"""`python -m skyeval.cli COMMAND [args]` (also the `skyeval` command).

  evaluate  +env=NAME [key=value ...]      generate, score, write a run folder
  generate  +env=NAME [key=value ...]      generate only (score later with `score`)
  score     run_dir=PATH [key=value ...]   re-score a saved run folder, generating nothing
  audit | merge | compare | report         see `skyeval COMMAND --help`

Options of evaluate/generate: `--config FILE.yaml` runs your own config file (sections
env, model_config, template, sampling_params, metrics, logging) over the defaults; `-m`
sweeps (Hydra multirun), e.g. `-m +env=aime24,math500`; every Hydra flag (`--cfg job`,
`hydra/launcher=slurm`) works as usual. SkyThought's flags (`--task --model --backend
--backend-args --sampling-params --n --result-dir --system-prompt-name`) are translated
into these overrides, and the translation is printed.
"""

from __future__ import annotations

import difflib
import importlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from skyeval.errors import ConfigError, SkyevalError

# Command name -> "module:function"; the function takes argv (list[str]) and returns an
# exit code. Modules are imported only when their command runs.
COMMANDS: dict[str, str] = {
    "evaluate": "skyeval.cli:evaluate",
    "generate": "skyeval.cli:generate",
    "score": "skyeval.cli:score",
    "audit": "skyeval.audit:main",
    "merge": "skyeval.merge:main",
    "compare": "skyeval.report.compare:main",
    "report": "skyeval.report.build:main",
}
USAGE = __doc__.split("\n\n")[0] + "\n" + __doc__.split("\n\n")[1]
EVALUATE_HELP = """usage: skyeval evaluate|generate +env=NAME [key=value ...] [--config FILE.yaml] [-m]

  +env=NAME                          benchmark (several with -m: +env=aime24,math500)
  model_config=reference|openai|vllm|ray
  model_config.model_source=ID       model id or path
  sampling_params.n=N  sampling_params.temperature=T  sampling_params.max_tokens=M
  template=default|chat_boxed|plain  template.system_prompt_name=NAME  template.system_prompt="text"
  env.limit=K                        first K problems
  logging.results_dir=DIR            run folders go to DIR/<experiment name>
  --config FILE.yaml                 your config file (see docs/quickstart.md)
  -m                                 sweep every comma-separated value (one run folder each)
  --cfg job                          print the composed config and exit

SkyThought flags: --task --model --backend --backend-args k=v,.. --sampling-params k=v,..
  --n --result-dir --system-prompt-name (translated into the overrides above).

benchmarks: {envs}
model configs: {models}
named system prompts: {prompts}
"""
MODEL_CONFIG_ALIASES = {"http": "openai"}  # `model_config.type: http` in user files


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return
    command, args = argv[0], argv[1:]
    if command not in COMMANDS:
        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        _fail(f"unknown command {command!r}.{hint} One of: {', '.join(COMMANDS)}\n\n{USAGE}")
    function = _command(command)
    try:
        code = function(args)
    except KeyboardInterrupt:
        print("interrupted: finished samples are saved; re-run the same command to resume.", file=sys.stderr)
        sys.exit(130)
    except SkyevalError as err:
        _fail(str(err))
    if code:
        sys.exit(code)


def _command(name: str) -> Callable[[list[str]], int | None]:
    """The function behind a command, imported now; a module that isn't there is one line."""
    module_name, _, function = COMMANDS[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            _fail(f"command {name!r} is not available in this install: its module {module_name} is missing")
        raise
    return getattr(module, function)


def evaluate(args: list[str]) -> int:
    return _hydra("evaluate", args)


def generate(args: list[str]) -> int:
    return _hydra("generate", args)


def _hydra(stage: str, args: list[str]) -> int:
    """Hand over to the Hydra app in skyeval.run with `stage=` and an optional user config."""
    if any(a in ("-h", "--help") for a in args):
        print(_evaluate_help())
        return 0
    args = _from_skythought_flags(stage, args)
    temp_dirs: list[Path] = []
    try:
        flags, overrides = _split_flags(_with_user_config(args, temp_dirs))
        if not any(o.lstrip("+~").split("=")[0].split("@")[0] in ("env", "experiment", "user_config") for o in overrides):
            _fail(f"no benchmark selected: add +env=NAME, one of: {', '.join(_env_names())}")
        overrides = [_checked_env(o) for o in overrides]
        overrides = _check_env_knobs(overrides)
        sweep = "-m" in flags or "--multirun" in flags
        if sweep:
            record = Path(tempfile.mkdtemp(prefix="skyeval_sweep_"))
            temp_dirs.append(record)
            os.environ[SweepRecorder.ENV] = str(record / "folders.txt")
            overrides.append(f"+hydra.callbacks.skyeval_sweep._target_={SweepRecorder.__module__}.SweepRecorder")
        from skyeval import run

        sys.argv = [sys.argv[0], *flags, f"stage={stage}", *overrides]
        run.main()
        if sweep:
            _print_sweep(Path(os.environ.pop(SweepRecorder.ENV)))
    finally:
        for path in temp_dirs:
            shutil.rmtree(path, ignore_errors=True)
    return 0


def _evaluate_help() -> str:
    from skyeval.config import CONF_DIR
    from skyeval.templates import SYSTEM_PROMPTS

    models = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
    return EVALUATE_HELP.format(envs=", ".join(_env_names()), models=", ".join(models),
                                prompts=", ".join(sorted(SYSTEM_PROMPTS)))


# ---- SkyThought-style flags ------------------------------------------------------------
SKYTHOUGHT_FLAGS = ("--task", "--model", "--backend", "--backend-args", "--sampling-params", "--n",
                    "--result-dir", "--system-prompt-name")


def _from_skythought_flags(stage: str, args: list[str]) -> list[str]:
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
    print(f"skyeval: running as: skyeval {stage} {' '.join(_quoted(o) for o in overrides + rest)}", file=sys.stderr)
    return overrides + rest


def skythought_overrides(values: dict[str, str]) -> list[str]:
    """Hydra overrides for SkyThought's flags (keys like "--task"); see `_from_skythought_flags`."""
    out: list[str] = []
    if "--task" in values:
        out.append(f"+env={values['--task']}")
    backend = values.get("--backend")
    if backend:
        backend = MODEL_CONFIG_ALIASES.get(backend.lower(), backend.lower())
        out.append(f"model_config={_model_group(backend, '--backend')}")
    if "--model" in values:
        out.append(f"model_config.model_source={values['--model']}")
    if "--backend-args" in values:
        fields = _model_fields(backend or "reference")
        for key, value in _pairs(values["--backend-args"], "--backend-args"):
            if key in fields:
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


def _quoted(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _model_group(name: str, where: str) -> str:
    from skyeval.config import CONF_DIR

    groups = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
    if name not in groups:
        close = difflib.get_close_matches(name, groups, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{where}: unknown backend {name!r}.{hint} One of: {', '.join(groups)} (http = openai)")
    return name


def _model_fields(group: str) -> set[str]:
    import yaml

    from skyeval.config import CONF_DIR

    data = yaml.safe_load((CONF_DIR / "model_config" / f"{group}.yaml").read_text(encoding="utf-8")) or {}
    return {k for k in data if k != "_target_"}


# ---- overrides ---------------------------------------------------------------------------
# Hydra flags that take a value as the next argument.
_VALUE_FLAGS = {"--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
                "--config-dir", "-cd", "--experimental-rerun", "--info", "-i"}


def _split_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """Hydra flags first, then overrides: `a=1 -m b=1,2` is read as `-m a=1 b=1,2`."""
    flags, overrides, i = [], [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-") and "=" not in arg.split(" ")[0]:
            flags.append(arg)
            if arg in _VALUE_FLAGS and i + 1 < len(args) and "=" not in args[i + 1]:
                flags.append(args[i + 1])
                i += 1
        else:
            overrides.append(arg)
        i += 1
    return flags, overrides


def _env_names() -> list[str]:
    from skyeval.envs.registry import SkyEnvBuilder

    return SkyEnvBuilder.names()


def _checked_env(arg: str) -> str:
    """`+env=AIME24` -> `+env=aime24` (also each of `+env=aime24,math500`); an unknown name
    fails here with the closest match."""
    key, sep, value = arg.partition("=")
    if not sep or key.lstrip("+~") != "env" or not value:
        return arg
    from skyeval.envs.registry import SkyEnvBuilder

    names = [name.strip() for name in value.split(",")]
    for name in names:
        SkyEnvBuilder.config(name)  # UnknownEnvError names the closest match
    return f"{key}={','.join(name.lower() for name in names)}"


def _check_env_knobs(overrides: list[str]) -> list[str]:
    """`env.limt=3` fails here naming the closest knob, instead of Hydra's advice to write
    `+env.limt=3` (which the env would then refuse); a real knob missing from the env's
    config file (`env.timeout_s=10`) is added (`++env.timeout_s=10`)."""
    from skyeval.envs.registry import SkyEnvBuilder

    envs = [o.partition("=")[2].split(",") for o in overrides if o.partition("=")[0].lstrip("+") == "env"]
    if not envs:
        return overrides
    out = []
    for override in overrides:
        key = override.partition("=")[0]
        if key.startswith("env.") and key.count(".") == 1 and not key.startswith("env._"):  # `_target_` is Hydra's
            for name in envs[0]:
                SkyEnvBuilder.check_knob(name, key.split(".", 1)[1])
            override = "++" + override
        out.append(override)
    return out


# ---- the user's config file -------------------------------------------------------------
def _with_user_config(args: list[str], temp_dirs: list[Path]) -> list[str]:
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

    Accepted beyond the root config's own keys: `env.env_kwargs` (knobs, merged into
    `env`), `model_config.type` (reference|openai|http|vllm|ray: the backend group),
    `model_config.concurrency` (-> `scaling.concurrency`), a template given as a string
    or a message list, and `metrics` (at the top or in `env.env_kwargs`: a list of
    `{"type": pass|maj|avg, "k": K, "n_samples": N}`, which sets `sampling_params.n`)."""
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
        name = env.get("name")
        if name and "_target_" not in env and _is_packaged(str(name)):
            selections.append(f"+env={str(name).lower()}")
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
            selections.append(f"model_config={_model_group(group, f'{path}: model_config.type')}")
        if "concurrency" in model:
            data["scaling"] = {**(data.get("scaling") or {}), "concurrency": model.pop("concurrency")}
        data["model_config"] = model
    template = data.get("template")
    if isinstance(template, str):
        data["template"] = {"text": template, "messages": None}
    elif isinstance(template, list):
        data["template"] = {"messages": template, "text": None}
    if data.get("metrics") is not None:
        data["metrics"] = check_metrics(data["metrics"], str(path))
        needed = max(m["n_samples"] for m in data["metrics"])
        sampling = dict(data.get("sampling_params") or {})
        if sampling.get("n") is not None and int(sampling["n"]) < needed:
            raise ConfigError(f"{path}: metrics need {needed} samples per problem but sampling_params.n is {sampling['n']}")
        sampling.setdefault("n", needed)
        data["sampling_params"] = sampling
    return data, selections


METRIC_TYPES = ("pass", "maj", "avg")


def check_metrics(metrics: Any, where: str) -> list[dict[str, Any]]:
    """`[{"type": "pass", "k": 1, "n_samples": 64}, ...]`, checked: type pass (pass@k),
    maj (maj@k) or avg (avg@n, the mean score over n samples); 1 <= k <= n_samples."""
    if not isinstance(metrics, list) or not metrics:
        raise ConfigError(f"{where}: metrics is a list like [{{type: pass, k: 1, n_samples: 64}}]")
    out = []
    for metric in metrics:
        if not isinstance(metric, dict) or metric.get("type") not in METRIC_TYPES:
            raise ConfigError(f"{where}: each metric needs type: {' | '.join(METRIC_TYPES)}, got {metric!r}")
        unknown = set(metric) - {"type", "k", "n_samples"}
        if unknown:
            raise ConfigError(f"{where}: metric {metric!r} has unknown field(s) {sorted(unknown)} (type, k, n_samples)")
        k, n = metric.get("k", 1), metric.get("n_samples", metric.get("k", 1))
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (k, n)) or k > n:
            raise ConfigError(f"{where}: metric {metric!r}: k and n_samples are whole numbers with 1 <= k <= n_samples")
        out.append({"type": metric["type"], "k": k, "n_samples": n})
    return out


def _is_packaged(name: str) -> bool:
    from skyeval.config import CONF_DIR

    return (CONF_DIR / "env" / f"{name.lower()}.yaml").exists()


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


# ---- sweeps --------------------------------------------------------------------------------
class SweepRecorder:
    """Hydra callback: appends each finished job's run folder to the file named by
    SKYEVAL_SWEEP_RECORD, so the CLI prints one line per job when the sweep ends."""

    ENV = "SKYEVAL_SWEEP_RECORD"

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        from hydra.core.hydra_config import HydraConfig

        record = os.environ.get(self.ENV)
        if record:
            with open(record, "a", encoding="utf-8") as f:
                f.write(HydraConfig.get().runtime.output_dir + "\n")

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):  # the other hooks: nothing to do
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def _print_sweep(record: Path) -> None:
    import json

    folders = list(dict.fromkeys(record.read_text(encoding="utf-8").splitlines())) if record.exists() else []  # shards share one
    if len(folders) < 2:
        return
    print(f"sweep: {len(folders)} runs")
    for folder in folders:
        summary_path = Path(folder) / "summary.json"
        if not summary_path.exists():
            print(f"  {folder}: no summary.json (the job failed; see its logs.txt)")
            continue
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        counts, accuracy = summary.get("counts", {}), summary.get("metrics", {}).get("accuracy")
        score = f"accuracy {accuracy:.4f}" if isinstance(accuracy, (int, float)) else summary.get("stage", "")
        print(f"  {summary.get('env')}: {score} | {counts.get('samples')} samples, {counts.get('failed')} failed"
              f" | {folder}")


# ---- score -----------------------------------------------------------------------------------
def score(args: list[str]) -> int:
    """Re-score a saved run folder with the current scorer."""
    from omegaconf import OmegaConf

    from skyeval import run
    from skyeval.results import RunFolder

    if any(a in ("-h", "--help") for a in args):
        print("usage: skyeval score run_dir=PATH [key=value ...]: re-score a run folder, generating nothing")
        return 0
    run_dirs = [a.split("=", 1)[1] for a in args if a.startswith("run_dir=")]
    if not run_dirs:
        raise ConfigError("score needs run_dir=PATH (a run folder written by evaluate or generate)")
    folder = RunFolder(run_dirs[0])
    if not folder.config.exists():
        raise ConfigError(f"{folder.path} is not a run folder (no config.yaml)")
    overrides = [a for a in args if not a.startswith("run_dir=")]
    cfg = OmegaConf.merge(OmegaConf.load(folder.config), OmegaConf.from_dotlist(overrides), {"stage": "score"})
    with run.clear_errors():
        run.execute(cfg, folder.path)
    return 0


def _fail(message: str) -> None:
    print(f"skyeval: error: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
