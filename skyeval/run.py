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

from skyeval.config import CONF_DIR, fingerprint, redact, register_resolvers
from skyeval.cost import run_cost
from skyeval.errors import ConfigError, SkyevalError
from skyeval.logs import announce, setup_logging
from skyeval.results import RunFolder, write_json

log = logging.getLogger("skyeval")

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        with clear_errors():
            execute(cfg, run_dir)
    finally:
        _remove_if_unused(run_dir)


def _remove_if_unused(run_dir: Path) -> None:
    """Hydra makes the folder before we run: bad input leaves it empty (but for lock files)."""
    import shutil

    if run_dir.is_dir() and all(p.name.startswith(".lock-") for p in run_dir.iterdir()):
        try:
            with RunFolder(run_dir).lock():
                shutil.rmtree(run_dir)
        except SkyevalError:  # another process is starting in it
            pass


@contextlib.contextmanager
def clear_errors() -> Iterator[None]:
    """The project's own errors (bad config, unknown env or knob, a folder of another config
    or in use, missing data, an unusable sandbox, a missing optional package) are one line
    and exit code 2. Anything else is a bug: exit code 1, its traceback in logs.txt."""
    try:
        yield
    except SkyevalError as err:
        _fail(err)
    except Exception as err:  # noqa: BLE001 - a bug: keep the traceback, point to it
        files = [h.baseFilename for h in log.handlers if isinstance(h, logging.FileHandler)]
        if not files:
            raise
        log.handlers and _to_files(log.makeRecord(log.name, logging.ERROR, __file__, 0, "unexpected error",
                                                  (), sys.exc_info()))
        print(f"skyeval: internal error: {type(err).__name__}: {err}\n"
              f"  the traceback is in {files[0]}; finished samples are saved (re-run the same command to resume)",
              file=sys.stderr)
        sys.exit(1)


def _to_files(record: logging.LogRecord) -> None:
    for handler in log.handlers:  # logs.txt when the run folder has one; the console gets one line
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def _fail(err: Exception) -> None:
    _to_files(log.makeRecord(log.name, logging.ERROR, __file__, 0, "%s", (err,), None))
    print(f"skyeval: error: {err}", file=sys.stderr)
    sys.exit(2)


def execute(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Run `cfg.stage` into `run_dir` and return the summary written there."""
    resolved = resolve(cfg)
    if resolved.get("dry_run") and resolved["stage"] != "score":
        return dry_run(resolved)
    shard = pipeline_shard(resolved)
    if shard.active and resolved["stage"] == "score":
        raise ConfigError("re-scoring is not sharded: run `score run_dir=PATH` without shard.index/shard.count "
                          "once every shard has finished")
    folder = RunFolder(run_dir)
    with folder.lock(f"shard-{shard.index}" if shard.active else "run"):
        return _execute(resolved, folder, shard)


def _execute(resolved: dict[str, Any], folder, shard) -> dict[str, Any]:
    from skyeval import merge, pipeline, trackers
    from skyeval.metrics import MetricsAccumulator
    from skyeval.provenance import describe_run

    stage = resolved["stage"]
    setup_logging(folder.logs, resolved["logging"].get("level", "INFO"))
    env = build_env(resolved)
    sampling = resolved.get("sampling_params") or {}
    if stage == "score":  # re-scoring needs no model: no backend, key or server
        from skyeval.backends.base import SamplingParams

        env.sampling = SamplingParams(**sampling)
        env.model_source = resolved["model_config"].get("model_source")
    else:
        env.setup(
            instantiate_model_config(resolved["model_config"]),
            scaling_config=_scaling(resolved.get("scaling") or {}),
            template=resolved.get("template"),
            sampling_params=sampling,
        )
    # checked before any work: a sandbox that can't run fails here, not after generating
    scoring = env.describe_scoring() if stage != "generate" else {}
    trackers.check(resolved)  # a tracker asked for but not installed fails before any work
    resumed, started_at = _claim(folder, resolved, shard)
    log.info("%s %s with %s -> %s%s%s", stage, env.name, env.model_source, folder.path,
             f" as shard {shard.index} of {shard.count}" if shard.active else "", " (resuming)" if resumed else "")

    start = time.monotonic()
    metrics = MetricsAccumulator(env.sampling.n, max_tokens=env.sampling.max_tokens,
                                 extra_scores=_scorer_names(env), metrics=resolved.get("metrics"))
    try:
        outcome = pipeline.run(env, folder, stage, retry_failures=bool(resolved.get("retry_failures")),
                               shard=shard, metrics=metrics)
    except Exception as err:
        if shard.active:
            merge.mark_failed(folder, shard, err)
        raise
    summary = {
        "env": env.name,
        "model": env.model_source,
        "stage": stage,
        **outcome.summary(stage),
        "run_dir": str(folder.path),
        "backend": redact(env.backend.describe()) if env.backend is not None else {"backend": None},
        "scoring": scoring,
        "duration_s": round(time.monotonic() - start, 2),
        **redact(describe_run()),
        "config": redact(resolved),
    }
    if stage != "generate":
        summary["cost"] = run_cost(summary, resolved["model_config"])
    if shard.active:
        summary = _finish_shard(folder, shard, summary, outcome, resolved, started_at)
    else:
        write_json(folder.summary, summary)
        merge.forget_shards(folder)
        trackers.log_run(summary, folder.path, resolved)
        announce(summary, folder)
    if outcome.lost is not None:
        raise outcome.lost
    if outcome.interrupted:
        raise KeyboardInterrupt
    return summary


def _claim(folder: RunFolder, resolved: dict[str, Any], shard) -> tuple[bool, str | None]:
    """Bind the folder to this config and write config.yaml, one shard at a time (the jobs of
    an array start together). config.yaml describes the whole folder, without the shard
    section, so that `score run_dir=...` re-scores all of it. Returns (resuming, shard start)."""
    from skyeval import merge

    whole = {k: v for k, v in resolved.items() if k != "shard"}
    text = OmegaConf.to_yaml(OmegaConf.create(redact(whole)))
    if not shard.active:
        resumed = folder.claim(fingerprint(resolved), overwrite=bool(resolved.get("overwrite")))
        folder.config.write_text(text, encoding="utf-8")
        return resumed, None
    with folder.waiting_lock("claim"):
        resumed = folder.claim(fingerprint(resolved), overwrite=bool(resolved.get("overwrite")))
        folder.config.write_text(text, encoding="utf-8")
        return resumed, merge.mark_running(folder, shard, fingerprint(resolved))


def _finish_shard(folder: RunFolder, shard, summary: dict[str, Any], outcome, resolved: dict[str, Any],
                  started_at: str) -> dict[str, Any]:
    """A shard writes its state to shards/, not summary.json; the last one to finish merges
    them. Returns the merged summary then, else the shard's own."""
    from skyeval import merge

    path = merge.write_state(folder, shard, summary, outcome.metrics, fingerprint(resolved), started_at)
    counts = summary["counts"]
    line = (f"shard {shard.index} of {shard.count} {summary['status']}: {counts['samples']} samples, "
            f"{counts['scored']} scored, {counts['failed']} failed | state {path}")
    log.info("%s", line)
    print(line, file=sys.stdout, flush=True)
    if outcome.interrupted:
        return summary
    merged = merge.merge_if_complete(folder)
    if merged is None:
        log.info("other shards are not finished: the last one to finish writes summary.json "
                 "(or run `skyeval merge run_dir=%s`)", folder.path)
        return summary
    announce(merged, folder)
    return merged


def dry_run(resolved: dict[str, Any]) -> dict[str, Any]:
    """Print what the run would send (problems, samples, prompt tokens, max completion
    tokens, worst-case cost) and return it, without building a backend or writing anything."""
    from skyeval.backends.base import SamplingParams
    from skyeval.cost import estimate
    from skyeval.templates import Template

    env = build_env(resolved)
    model_config = instantiate_model_config(resolved["model_config"])
    if resolved.get("template") is not None:
        env.template = Template.of(resolved["template"]).merged_over(env.default_template)
    env.model_source = getattr(model_config, "model_source", None)
    sampling = SamplingParams(**(resolved.get("sampling_params") or {}))
    report = estimate(env, env.iter_problems(), sampling, model_config)
    how = report["prompt_tokens_counted_with"] + (" (an estimate)" if report["prompt_tokens_estimated"] else "")
    lines = [f"dry run: {env.name} with {env.model_source}: nothing is sent",
             f"  problems {report['problems']:,}, samples {report['samples']:,}",
             f"  prompt tokens {report['prompt_tokens']:,} per pass, {report['prompt_tokens_sent']:,} sent at most ({how})",
             f"  completion tokens at most {report['max_completion_tokens']:,} (max_tokens {sampling.max_tokens} x samples)"]
    if report["worst_case_cost"] is not None:
        lines.append(f"  worst-case cost ${report['worst_case_cost']:,.2f} at {report['price']} $/M tokens")
    else:
        lines.append("  cost: set model_config.price={input: $/M, output: $/M} to see it")
    print("\n".join(lines), flush=True)
    return report


def _scorer_names(env) -> list[str]:
    names = getattr(env, "scorer_names", None)
    return list(names()) if callable(names) else []


def pipeline_shard(resolved: dict[str, Any]):
    from skyeval.pipeline import Shard

    section = resolved.get("shard") or {}
    return Shard(index=int(section.get("index", 0)), count=int(section.get("count", 1)))


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The config as plain data (interpolations resolved), with clear errors for gaps."""
    from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

    if "env" not in cfg:
        raise ConfigError("no benchmark selected: add +env=NAME (see conf/env/) or an `env:` section")
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as err:
        raise ConfigError(f"missing required value {err.full_key}: set it on the command line, e.g. {err.full_key}=...") from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"config error: {str(err).splitlines()[0]}") from None
    for module in resolved.get("imports") or []:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name is None or not module.startswith(err.name):
                raise  # the module is there but imports something missing: a bug in it
            raise ConfigError(f"imports: No module named {err.name!r} (is its folder on PYTHONPATH?)") from None
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
        raise ConfigError("the env section needs `name` (a packaged or registered env) or `_target_`")
    return SkyEnvBuilder.build(section.pop("name"), section)


def instantiate_model_config(section: dict[str, Any]) -> Any:
    from hydra.utils import instantiate

    if "_target_" not in section:
        raise ConfigError("model_config needs `_target_`: pick one with model_config=reference|openai|vllm|ray")
    if section["_target_"].endswith("ReferenceConfig") and section.get("model_source") not in (None, "reference"):
        raise ConfigError(
            f"model_config.model_source={section['model_source']} but no backend is chosen, so the reference "
            "backend (which replays gold answers) would run: pick one with model_config=openai|vllm|ray "
            "(or `type:` in a config file)")
    return instantiate(section, _convert_="all")


def _scaling(section: dict[str, Any]):
    from skyeval.backends.base import ScalingConfig

    return ScalingConfig(**section)


if __name__ == "__main__":
    main()
