"""`python -m skyeval.cli COMMAND [args]` (also the `skyeval` command).

  evaluate  +env=NAME [key=value ...]      generate, score, write a run folder
  generate  +env=NAME [key=value ...]      generate only (score later with `score`)
  score     run_dir=PATH [key=value ...]   re-score a saved run folder, generating nothing
  serve-reward +env=NAME [port=P ...]      serve the env's grader as an RL reward (docs/rl.md)
  status    run_dir=PATH | sweep=PATH     each shard, job or batch of a run or sweep: queued, running, done...
  audit | merge | compare | report         see `skyeval COMMAND --help`
  list                                     the benchmarks, their problem counts, whether their data is local

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
import signal
import sys
from pathlib import Path
from typing import Callable

from skyeval.errors import ConfigError, SkyevalError

# Command name -> "module:function"; the function takes argv (list[str]) and returns an
# exit code. Modules are imported only when their command runs.
COMMANDS: dict[str, str] = {
    "evaluate": "skyeval.cli:evaluate",
    "generate": "skyeval.cli:generate",
    "score": "skyeval.cli:score",
    "audit": "skyeval.report.audit:main",
    "merge": "skyeval.run.merge:main",
    "status": "skyeval.run.status:main",
    "compare": "skyeval.report.compare:main",
    "report": "skyeval.report.build:main",
    "serve-reward": "skyeval.reward.server:main",
    "list": "skyeval.cli:list_benchmarks",
    "status": "skyeval.run.status:main",
}
RUN_COMMANDS = {"evaluate", "generate", "score"}  # they write a run folder, which a re-run resumes
USAGE = __doc__.split("\n\n")[0] + "\n" + __doc__.split("\n\n")[1]
EVALUATE_HELP = """usage: skyeval evaluate|generate +env=NAME [key=value ...] [--config FILE.yaml] [-m]

  +env=NAME                          benchmark (several with -m: +env=aime24,math500)
  model_config=reference|openai|openai_batch|vllm|ray
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


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return
    command, args = argv[0], argv[1:]
    from skyeval.run.provenance import set_command

    set_command(argv)
    if command not in COMMANDS:
        close = difflib.get_close_matches(command, list(COMMANDS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        _fail(f"unknown command {command!r}.{hint} One of: {', '.join(COMMANDS)}\n\n{USAGE}")
    function = _command(command)
    from skyeval.run.signals import SigtermAsCtrlC

    stop = SigtermAsCtrlC()
    try:
        with stop.installed():
            code = function(args)
    except KeyboardInterrupt:
        by = stop.signal or signal.SIGINT
        how = "interrupted" if by == signal.SIGINT else f"stopped ({by.name})"
        hint = ": finished samples are saved; re-run the same command to resume" if command in RUN_COMMANDS else ""
        print(f"{how}{hint}.", file=sys.stderr)
        if __name__ == "__main__" or sys.argv[0].endswith("skyeval"):
            _exit_now(128 + by)
        sys.exit(128 + by)
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
    if "--tasks=list" in args or any(a == "--tasks" and b == "list" for a, b in zip(args, args[1:])):
        return list_benchmarks([])  # lm-eval's way to list its tasks
    from skyeval.config.overrides import bare_key_error, experiment_env_error, from_skythought_flags, with_user_config

    args = from_skythought_flags(stage, [part for a in args
                                         for part in (a.split("=", 1) if a.startswith("--config=") else [a])])
    _refuse_unknown_flags(args)
    temp_dirs: list[Path] = []
    try:
        flags, overrides = _split_flags(with_user_config(args, temp_dirs))
        if not any(o.lstrip("+~").split("=")[0].split("@")[0] in ("env", "experiment", "user_config") for o in overrides):
            _fail(f"no benchmark selected: add +env=NAME, one of: {', '.join(_env_names())}")
        for error in [bare_key_error(o) for o in overrides] + [experiment_env_error(overrides)]:
            if error is not None:
                raise error
        overrides = [_forced_env_knob(_checked_env(o)) for o in overrides]
        sweep = "-m" in flags or "--multirun" in flags
        if sweep:
            from skyeval.run.sweeps import RECORD_ENV, SweepRecorder

            os.environ.pop(RECORD_ENV, None)
            overrides.append(f"+hydra.callbacks.skyeval_sweep._target_={SweepRecorder.__module__}.SweepRecorder")
        from hydra.errors import ConfigCompositionException
        from omegaconf.errors import OmegaConfBaseException

        from skyeval.config.overrides import composition_error
        from skyeval.run import app

        sys.argv = [sys.argv[0], *flags, f"stage={stage}", *overrides]
        os.environ.setdefault("HYDRA_FULL_ERROR", "1")  # composition errors reach us, to become one line
        try:
            app.main()
        except (ConfigCompositionException, OmegaConfBaseException) as err:
            raise composition_error(err) from None
        if sweep and os.environ.get(RECORD_ENV):
            return _print_sweep(Path(os.environ.pop(RECORD_ENV)))
    finally:
        for path in temp_dirs:
            shutil.rmtree(path, ignore_errors=True)
    return 0


def _forced_env_knob(arg: str) -> str:
    """`env.limit=3` -> `++env.limit=3`: set or add, so that it applies in a sweep over envs
    too (the sweep composes before any env is chosen). Knobs are checked when the env is built."""
    key = arg.partition("=")[0]
    if key.startswith("env.") and key.count(".") == 1 and not key.startswith("env._"):
        return "++" + arg
    return arg


def _evaluate_help() -> str:
    from skyeval.paths import CONF_DIR
    from skyeval.templates import SYSTEM_PROMPTS

    models = sorted(p.stem for p in (CONF_DIR / "model_config").glob("*.yaml"))
    return EVALUATE_HELP.format(envs=", ".join(_env_names()), models=", ".join(models),
                                prompts=", ".join(sorted(SYSTEM_PROMPTS)))


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


# Hydra's own flags (the others are refused before Hydra prints its usage).
_HYDRA_FLAGS = _VALUE_FLAGS | {"--help", "-h", "--hydra-help", "--version", "--resolve", "--run", "-r",
                               "--multirun", "-m", "--shell-completion", "-sc"}
# lm-evaluation-harness habits -> the override that does it here ({} is the flag's value).
LM_EVAL_FLAGS = {"--limit": "env.limit={}", "--tasks": "+env={}", "--output_path": "logging.results_dir={}",
                 "--model_args": "model_config.model_source=ID (and model_config.KEY=VALUE)",
                 "--gen_kwargs": "sampling_params.KEY=VALUE", "--batch_size": "scaling.concurrency={}",
                 "--seed": "sampling_params.seed={}", "--num_fewshot": "a template with the examples in it "
                 "(template.messages=...; prompts are zero-shot)", "--device": "model_config=vllm|openai|ray",
                 "--log_samples": "nothing (every sample is saved in the run folder)",
                 "--apply_chat_template": "nothing (chat envs send messages)"}


def _refuse_unknown_flags(args: list[str]) -> None:
    """Flags that are neither Hydra's nor SkyThought's are one line naming every one of
    them: lm-eval's point to the override that does the same, the others to `key=value`."""
    from skyeval.config.overrides import full_key

    found = []
    for i, arg in enumerate(args):
        flag, eq, inline = arg.partition("=")
        if not flag.startswith("-") or flag in _HYDRA_FLAGS or flag == "--config" or flag.lstrip("-").isdigit():
            continue
        following = args[i + 1] if i + 1 < len(args) else ""
        value = inline or ("" if following.startswith("-") or "=" in following else following) or "VALUE"
        form = LM_EVAL_FLAGS.get(flag.replace("-", "_").replace("__", "--", 1))
        key = None if form is not None else full_key(flag.lstrip("-").replace("-", "_"))
        if form is not None:
            found.append(f"{flag} is lm-eval's flag; here write {form.format(value)}")
        elif key is not None:
            found.append(f"{flag} is not a flag here; write {key}={value}")
        else:
            found.append(f"unknown flag {flag}: settings are key=value overrides, e.g. env.limit=5")
    if found:
        many = f"{len(found)} flags are not skyeval's: " if len(found) > 1 else ""
        raise ConfigError(f"{many}{'; '.join(found)} (skyeval evaluate --help)")


def _env_names() -> list[str]:
    from skyeval.envs.registry import SkyEnvBuilder

    return SkyEnvBuilder.names()


def _checked_env(arg: str) -> str:
    """`+env=AIME24` -> `+env=aime24` (also each of `+env=aime24,math500`); an unknown name
    fails here with the closest match."""
    key, sep, value = arg.partition("=")
    if not sep or key.lstrip("+~") != "env" or not value:
        return arg
    from skyeval.envs.registry import SkyEnvBuilder, packaged_name

    names = [name.strip() for name in value.split(",")]
    for name in names:
        SkyEnvBuilder.config(name)  # UnknownEnvError names the closest match
    return f"{key}={','.join(packaged_name(name) for name in names)}"


def list_benchmarks(args: list[str]) -> int:
    """`skyeval list`: every benchmark, its problem count and where its data is (counted
    from local files; a benchmark read from the hub is not downloaded to count it)."""
    if any(a in ("-h", "--help") for a in args):
        print("usage: skyeval list: the benchmarks (+env=NAME), their problem counts and whether their data is local")
        return 0
    from skyeval.envs.data import DATA_DIR_ENV, resolve_data_dir
    from skyeval.envs.registry import SkyEnvBuilder

    rows = []
    for name in SkyEnvBuilder.names():
        env, count = None, None
        try:
            env = SkyEnvBuilder.build(name, {})
            if resolve_data_dir(env.data_dir) is not None:
                count = sum(1 for _ in env.iter_problems(on_error=lambda index, err: None))
        except SkyevalError:  # no local copy of this one (or it cannot be read here)
            count = None
        hub = getattr(env, "hf_id", None)
        where = "local" if count is not None else f"not local (hub: {hub})" if hub else "not local"
        rows.append((name, "-" if count is None else f"{count:,}", where))
    width = max(len(row[0]) for row in rows)
    print(f"{'benchmark':<{width}}  {'problems':>8}  data ({DATA_DIR_ENV}={os.environ.get(DATA_DIR_ENV) or 'unset'})")
    for name, count, where in rows:
        print(f"{name:<{width}}  {count:>8}  {where}")
    return 0


# ---- sweeps --------------------------------------------------------------------------------
def _print_sweep(record: Path) -> int:
    """One line per run of the sweep (its swept values, headline and folder), and under a
    run not done its shards. Returns the exit code: 2 when a run ended unfinished (a SLURM
    job failed, was cancelled or killed), else 0 (done, or still queued or running)."""
    from skyeval.run.status import LIVE, sweep_report
    from skyeval.run.sweeps import read

    if not record.exists() or len(read(record)) < 2:
        return 0
    lines, kinds = sweep_report(record, detail=False)
    print("\n".join(lines), flush=True)
    ended = [kind for kind in kinds if kind != "done" and kind not in LIVE]
    if ended:
        print(f"skyeval: error: {len(ended)} of {len(kinds)} runs did not finish (see above); the same command "
              "resumes them", file=sys.stderr, flush=True)
        return 2
    return 0


# ---- score -----------------------------------------------------------------------------------
def score(args: list[str]) -> int:
    """Re-score a saved run folder with the current scorer."""
    from omegaconf import OmegaConf

    from skyeval.config.schema import RunConfig
    from skyeval.results import RunFolder
    from skyeval.run import app

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
    saved = OmegaConf.merge(OmegaConf.load(folder.config), OmegaConf.from_dotlist(overrides), {"stage": "score"})
    with app.clear_errors():
        app.execute(RunConfig.of(OmegaConf.to_container(saved)), folder.path)
    return 0


def _fail(message: str) -> None:
    print(f"skyeval: error: {message}", file=sys.stderr)
    sys.exit(2)


def _exit_now(code: int) -> None:
    """Exit a stopped command promptly: everything is saved and closed by now, and atexit
    handlers (logging, worker pools) run; the interpreter's teardown of its modules (seconds
    on a loaded machine) and threads still waiting on input are skipped."""
    import atexit

    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    main()
