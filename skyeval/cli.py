"""`python -m skyeval.cli {evaluate,generate,score} [overrides]` (also the `skyeval` command).

  evaluate  +env=NAME [key=value ...]      generate, score, write a run folder
  generate  +env=NAME [key=value ...]      generate only (score later with `score`)
  score     run_dir=PATH [key=value ...]   re-score a saved run folder, generating nothing

Options: `--config FILE.yaml` runs your own config file (sections env, model_config,
template, sampling_params, logging) over the defaults; `-m` sweeps (Hydra multirun);
every Hydra flag (`--cfg job`, `--help`, `hydra/launcher=slurm`) works as usual.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

COMMANDS = ("evaluate", "generate", "score")
USAGE = __doc__.split("\n\n")[0] + "\n" + __doc__.split("\n\n")[1]


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return
    command, args = argv[0], argv[1:]
    if command not in COMMANDS:
        _fail(f"unknown command {command!r}: one of {', '.join(COMMANDS)}\n\n{USAGE}")
    try:
        if command == "score":
            _score(args)
        else:
            _hydra(command, args)
    except KeyboardInterrupt:
        print("interrupted: finished samples are saved; re-run the same command to resume.", file=sys.stderr)
        sys.exit(130)


def _hydra(stage: str, args: list[str]) -> None:
    """Hand over to the Hydra app in skyeval.run with `stage=` and an optional user config."""
    from skyeval import run

    flags, overrides = _split_flags(_with_user_config(args))
    if not any(o.lstrip("+~").split("=")[0].split("@")[0] in ("env", "experiment", "user_config") for o in overrides):
        _fail(f"no benchmark selected: add +env=NAME, one of: {', '.join(_env_names())}")
    sys.argv = [sys.argv[0], *flags, f"stage={stage}", *map(_checked_env, overrides)]
    run.main()


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
    """`+env=AIME24` -> `+env=aime24`; an unknown name fails here with the closest match."""
    key, sep, name = arg.partition("=")
    if not sep or key.lstrip("+~") != "env" or not name:
        return arg
    from skyeval.envs.registry import SkyEnvBuilder

    try:
        SkyEnvBuilder.config(name)
    except KeyError as err:
        _fail(str(err))
    return f"{key}={name.lower()}"


def _with_user_config(args: list[str]) -> list[str]:
    """`--config FILE` -> the file as a `_global_` config in a searchpath entry."""
    if "--config" not in args:
        return args
    i = args.index("--config")
    if i + 1 >= len(args):
        _fail("--config needs a path to a YAML file")
    path = Path(args[i + 1]).expanduser().resolve()
    if not path.is_file():
        _fail(f"config file not found: {path}")
    search_dir = Path(tempfile.mkdtemp(prefix="skyeval_config_"))
    (search_dir / "user_config").mkdir()
    shutil.copy(path, search_dir / "user_config" / path.name)
    rest = args[:i] + args[i + 2 :]
    return [f"hydra.searchpath=[file://{search_dir}]", f"+user_config@_global_={path.stem}", *rest]


def _score(args: list[str]) -> None:
    """Re-score a saved run folder with the current scorer."""
    from omegaconf import OmegaConf

    from skyeval import run
    from skyeval.results import RunFolder

    run_dirs = [a.split("=", 1)[1] for a in args if a.startswith("run_dir=")]
    if not run_dirs:
        _fail("score needs run_dir=PATH (a run folder written by evaluate or generate)")
    folder = RunFolder(run_dirs[0])
    if not folder.config.exists():
        _fail(f"{folder.path} is not a run folder (no config.yaml)")
    overrides = [a for a in args if not a.startswith("run_dir=")]
    cfg = OmegaConf.merge(OmegaConf.load(folder.config), OmegaConf.from_dotlist(overrides), {"stage": "score"})
    with run.clear_errors():
        run.execute(cfg, folder.path)


def _fail(message: str) -> None:
    print(f"skyeval: error: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
