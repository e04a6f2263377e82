"""The one Hydra entrypoint: instantiate the configured objects and run a stage."""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import hydra
from omegaconf import DictConfig, OmegaConf

from skyeval.config import CONF_DIR, redact, register_resolvers
from skyeval.errors import SkyevalError

log = logging.getLogger("skyeval")

# Model-config keys that change how requests are sent, not what is generated.
OPERATIONAL_KEYS = {"api_url", "api_key_env", "timeout_s", "max_retries", "requests_per_minute",
                    "tokens_per_minute", "ray_address", "num_replicas", "batch_size", "use_cpu"}

register_resolvers()


class UsageError(SkyevalError):
    """Bad input from the user: reported in one clear line, nothing written or lost."""


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        with clear_errors():
            execute(cfg, run_dir)
    finally:
        if run_dir.is_dir() and not any(run_dir.iterdir()):  # Hydra made it; bad input left it empty
            run_dir.rmdir()


@contextlib.contextmanager
def clear_errors() -> Iterator[None]:
    """Bad input (unknown env or knob, missing value, other config's folder, unreadable
    data, an unusable sandbox) is reported in one line with exit code 2, not a traceback."""
    from skyeval.envs.registry import UnknownEnvError
    from skyeval.results import ConfigMismatchError
    from skyeval.scorers.sandbox import SandboxSetupError

    bad_input = (UsageError, UnknownEnvError, ConfigMismatchError, SandboxSetupError, FileNotFoundError,
                 ConnectionError, ImportError, ValueError)
    try:
        yield
    except bad_input as err:
        _fail(err)
    except TypeError as err:
        if "knob" not in str(err):
            raise
        _fail(err)


def _fail(err: Exception) -> None:
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "%s", (err,), None)
    for handler in log.handlers:  # into logs.txt when the run folder has one; the console gets one line
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    print(f"skyeval: error: {err}", file=sys.stderr)
    sys.exit(2)


def execute(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Run `cfg.stage` into `run_dir` and return the summary written there."""
    from skyeval import pipeline
    from skyeval.logs import setup_logging
    from skyeval.provenance import describe_run
    from skyeval.results import RunFolder, write_json

    resolved = resolve(cfg)
    folder = RunFolder(run_dir)
    setup_logging(folder.logs, resolved["logging"].get("level", "INFO"))
    env = build_env(resolved)
    env.setup(
        instantiate_model_config(resolved["model_config"]),
        scaling_config=_scaling(resolved.get("scaling") or {}),
        template=resolved.get("template"),
        sampling_params=resolved.get("sampling_params"),
    )
    # checked before any work: a sandbox that can't run fails here, not after generating
    scoring = env.describe_scoring() if resolved["stage"] != "generate" else {}
    resumed = folder.claim(fingerprint(resolved), overwrite=bool(resolved.get("overwrite")))
    folder.config.write_text(OmegaConf.to_yaml(OmegaConf.create(redact(resolved))), encoding="utf-8")
    log.info("%s %s with %s -> %s%s", resolved["stage"], env.name, env.model_source, run_dir, " (resuming)" if resumed else "")

    start = time.monotonic()
    outcome = pipeline.run(env, folder, resolved["stage"], retry_failures=bool(resolved.get("retry_failures")))
    summary = {
        "env": env.name,
        "model": env.model_source,
        "stage": resolved["stage"],
        **pipeline.build_summary(outcome, resolved["stage"], env.sampling.n),
        "run_dir": str(run_dir),
        "backend": redact(env.backend.describe()),
        "scoring": scoring,
        "duration_s": round(time.monotonic() - start, 2),
        **redact(describe_run()),
        "config": redact(resolved),
    }
    write_json(folder.summary, summary)
    _report(summary, folder)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return summary


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data (interpolations resolved), with clear errors for gaps."""
    from omegaconf.errors import MissingMandatoryValue

    if "env" not in cfg:
        raise UsageError("no benchmark selected: add +env=NAME (see conf/env/) or an `env:` section")
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as err:
        raise UsageError(f"missing required value {err.full_key}: set it on the command line, e.g. {err.full_key}=...") from None
    for module in resolved.get("imports") or []:
        importlib.import_module(module)
    return resolved


def build_env(resolved: dict[str, Any]):
    """The env from its config section: by `_target_`, else by registered/packaged name."""
    from skyeval.envs.registry import SkyEnvBuilder, build_from_config

    section = dict(resolved["env"])
    if not section.get("data_dir") and resolved.get("data_dir"):
        section["data_dir"] = resolved["data_dir"]
    if "_target_" in section:
        return build_from_config(section)
    if "name" not in section:
        raise UsageError("the env section needs `name` (a packaged or registered env) or `_target_`")
    return SkyEnvBuilder.build(section.pop("name"), section)


def instantiate_model_config(section: dict[str, Any]) -> Any:
    from hydra.utils import instantiate

    if "_target_" not in section:
        raise UsageError("model_config needs `_target_`: pick one with model_config=reference|openai|vllm|ray")
    return instantiate(section, _convert_="all")


def fingerprint(resolved: dict[str, Any]) -> dict[str, Any]:
    """What decides whether saved generations may be reused. `limit` and `n` are left out:
    growing a run reuses its samples, since each sample has its own index and seed."""
    env = {k: v for k, v in resolved["env"].items() if k not in ("limit", "data_dir")}
    model = {k: v for k, v in resolved["model_config"].items() if k not in OPERATIONAL_KEYS}
    sampling = {k: v for k, v in resolved["sampling_params"].items() if k != "n"}
    return redact({"env": env, "template": resolved.get("template"), "model": model, "sampling": sampling})


def _scaling(section: dict[str, Any]):
    from skyeval.backends.base import ScalingConfig

    return ScalingConfig(**section)


def _report(summary: dict[str, Any], folder) -> None:
    counts = summary["counts"]
    accuracy = summary["metrics"].get("accuracy")
    line = f"{summary['status']}: {summary['env']} | {counts['samples']} samples, {counts['scored']} scored, {counts['failed']} failed"
    if accuracy is not None:
        line += f" | accuracy {accuracy:.4f}"
    log.info("%s | run folder %s", line, folder.path)
    if counts["failed"]:
        log.warning("%d samples failed: see %s (retry them with retry_failures=true)", counts["failed"], folder.failures)
    print(line + f"\nrun folder: {folder.path}", file=sys.stdout, flush=True)


if __name__ == "__main__":
    main()
