"""The one Hydra entry point: a composed config becomes a `RunConfig` and runs one stage.

`skyeval.cli evaluate|generate|score` come here; the stage writes its run folder."""

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

from skyeval.config.fingerprints import Fingerprint, fingerprint, register_resolvers
from skyeval.config.schema import RunConfig
from skyeval.config.secrets import redact
from skyeval.envs.base import Env
from skyeval.errors import ConfigError, SkyevalError
from skyeval.paths import CONF_DIR
from skyeval.results import KINDS, RunFolder, Shard, content_hash, read_json, write_json
from skyeval.run import merge, pipeline, resume, trackers
from skyeval.run.cost import earlier_length, estimate, run_cost
from skyeval.run.logs import announce, plural, setup_logging, to_files
from skyeval.run.preflight import check_model
from skyeval.run.provenance import describe_run
from skyeval.run.signals import deferred, received

log = logging.getLogger("skyeval")

register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> str | None:
    from hydra.core.hydra_config import HydraConfig

    from hydra.types import RunMode

    hydra = HydraConfig.get()
    run_dir = Path(hydra.runtime.output_dir)
    try:
        with clear_errors():
            summary = execute(RunConfig.of(cfg), run_dir, sweep=hydra.mode == RunMode.MULTIRUN)
    finally:
        _remove_if_unused(run_dir)
    return summary.get("run_dir")  # the job's return value in a sweep (skyeval.run.sweeps)


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
        log.handlers and to_files(log.makeRecord(log.name, logging.ERROR, __file__, 0, "unexpected error",
                                                  (), sys.exc_info()))
        print(f"skyeval: internal error: {type(err).__name__}: {err}\n"
              f"  the traceback is in {files[0]}; finished samples are saved (re-run the same command to resume)",
              file=sys.stderr)
        sys.exit(1)


def _fail(err: Exception) -> None:
    to_files(log.makeRecord(log.name, logging.ERROR, __file__, 0, "%s", (err,), None))
    print(f"skyeval: error: {err}", file=sys.stderr)
    sys.exit(2)


def execute(config: RunConfig, run_dir: str | Path | None = None, sweep: bool = False) -> dict[str, Any]:
    """Run `config.stage` into `run_dir` (default: `logging.results_dir/experiment_name`, its
    `${fingerprint_hash:}` filled in with the run's fingerprint; or the earlier folder of the
    same config an older skyeval named differently) and return the summary written there.
    `sweep`: one point of a sweep, whose folder name must hold the digest."""
    run_dir = Path(run_dir if run_dir is not None else Path(config.logging.results_dir) / config.logging.experiment_name)
    import_modules(config.imports)
    env = build_env(config)  # an unknown env or knob fails here, before anything is written
    env.check_window()  # a date window that holds no problem
    if not config.shard.active:  # a shard's data errors are recorded in its state instead (merge names them)
        check_problems(env)
        env.check_data()
    if config.strict:
        check_golds(env, judged(config))
    identity = fingerprint(config, _data_identity(config, env, run_dir))  # the run's one: passed to all that needs it
    run_dir = identity.folder(run_dir, sweep).expanduser().absolute()
    if config.dry_run and config.stage != "score":
        return dry_run(config, env, resume.run_folder(identity, run_dir), identity)
    if config.grading.active and config.stage != "generate" and not _judgeable(env):
        raise ConfigError(f"grading.mode={config.grading.mode}: a judge grades math answers, and env {env.name} "
                          "is not a math env (grading.mode=off)")
    if config.grading.active and config.stage == "evaluate" and _scores_on_workers(config):
        raise ConfigError("grading.mode with model_config=ray: the Ray workers score where they generate, without "
                          "the judge step; run `generate`, then `score run_dir=PATH grading.mode=...` to judge")
    if config.shard.active and config.stage == "score":
        raise ConfigError("re-scoring is not sharded: run `score run_dir=PATH` without shard.index/shard.count "
                          "once every shard has finished")
    try:  # every setting is checked before the folder is claimed: a bad one leaves nothing on disk
        _prepare(config, env)
        folder = resume.run_folder(identity, run_dir)
        with folder.lock(f"shard-{config.shard.index}" if config.shard.active else "run"):
            return _execute(config, env, folder, identity)
    finally:
        env.close()


def run_folder(config: RunConfig, run_dir: str | Path | None = None, sweep: bool = False) -> RunFolder:
    """The folder `execute` runs `config` in: `run_dir` (default `logging.results_dir/
    experiment_name`, its digest that of the run's fingerprint, so the data is read for its
    identity), or the earlier folder of the same config an older skyeval named differently.
    The SLURM launcher asks it before submitting."""
    run_dir = Path(run_dir if run_dir is not None else Path(config.logging.results_dir) / config.logging.experiment_name)
    import_modules(config.imports)
    env = build_env(config)
    try:
        identity = fingerprint(config, _data_identity(config, env, run_dir))
    finally:
        env.close()
    return resume.run_folder(identity, identity.folder(run_dir, sweep).expanduser().absolute())


def _prepare(config: RunConfig, env: Env) -> None:
    """Attach the backend (its key and endpoint are checked as it is built; a vLLM engine
    starts later, on the first request) and check that a tracker asked for is installed."""
    if config.stage == "score":  # re-scoring needs no model: no backend, key or server
        env.sampling, env.model_source = config.sampling_params, config.model_config.model_source
    else:
        check_model(config.model_config)
        env.setup(config.model_config, scaling_config=config.scaling, template=config.template,
                  sampling_params=config.sampling_params, tools=config.tools)
    trackers.check(config)  # a tracker asked for but not installed fails before any work


def check_problems(env: Env) -> None:
    """An env without a single problem (an empty data file, `env.limit=0`, filters that keep
    nothing) is a ConfigError before any folder exists, never a `complete` run of 0 samples.
    Reads only up to the first problem."""
    if next(env.iter_problems(on_error=lambda index, err: None), None) is None:
        why = "env.limit=0" if env.limit == 0 else "its data holds no problem its knobs keep"
        raise ConfigError(f"env {env.name!r} has no problems ({why}): nothing to run")


def _execute(config: RunConfig, env: Env, folder: RunFolder, identity: Fingerprint) -> dict[str, Any]:
    from skyeval.metrics import MetricsAccumulator

    stage, shard = config.stage, config.shard
    setup_logging(folder.logs, config.logging.level)
    # checked before any work: a sandbox that can't run fails here, not after generating
    scoring = env.describe_scoring() if stage != "generate" else {}
    smaller = resume.smaller_selection(folder, config)  # a selection inside the folder's summary.json's: its own summary
    resumed, started_at = _claim(folder, config, identity, write_config=smaller is None)
    template = env.template.describe(env.model_source)
    log.info("system prompt: %s", template["system_prompt_reason"])
    log.info("%s %s with %s -> %s%s%s", stage, env.name, env.model_source, folder.path,
             f" as shard {shard.index} of {shard.count}" if shard.active else "", " (resuming)" if resumed else "")

    start = time.monotonic()
    metrics = MetricsAccumulator(env.sampling.n, max_tokens=env.sampling.max_tokens,
                                 extra_scores=env.scorer_names(), metrics=config.metrics,
                                 vote=getattr(env, "vote", None), unit_metrics=env.unit_metrics())
    try:
        outcome = pipeline.run(env, folder, stage, retry_failures=config.retry_failures, shard=shard, metrics=metrics,
                               grading=config.grading, summary_dir=smaller)
    except Exception as err:
        if shard.active:
            merge.mark_failed(folder, shard, err)
        raise
    with deferred():  # summary.json or the shard's state is written whatever signal comes meanwhile
        summary = {
            "env": env.name,
            "model": env.model_source,
            "stage": stage,
            **outcome.summary(stage),
            "run_dir": str(folder.path),
            "selection": {"limit": env.limit, "n": env.sampling.n,
                          **({"summary": str((smaller / "summary.json").relative_to(folder.path))} if smaller else {})},
            "backend": redact(env.backend.describe()) if env.backend is not None else {"backend": None},
            "scoring": {**scoring, **metrics.grading_summary()},
            **({"grading": outcome.grading} if outcome.grading is not None else {}),
            "template": template,
            **tools_summary(config, env.backend, metrics),
            **env.describe_window(),
            "duration_s": round(time.monotonic() - start, 2),
            **redact(describe_run()),
            "config": redact(config.to_dict()),
        }
        summary["cost"] = run_cost(summary, config.model_config.billed_price)
        if outcome.interrupted and outcome.lost is None and received() is not None:
            summary["stopped_by"] = f"{received().name} (kill, timeout or SLURM's scancel)"
        if shard.active:
            summary = _finish_shard(folder, shard, summary, outcome, identity, started_at)
        else:
            summary_dir = smaller or folder.path
            summary_dir.mkdir(parents=True, exist_ok=True)
            write_json(summary_dir / "summary.json", summary)
            merge.forget_shards(folder)
            trackers.log_run(summary, summary_dir, config)
            announce(summary, folder)
    if outcome.lost is not None:
        raise outcome.lost
    if outcome.interrupted or received() is not None:
        raise KeyboardInterrupt
    return summary


def _data_identity(config: RunConfig, env: Env, run_dir: Path) -> dict[str, Any]:
    """The env's `data_identity()`. A shard whose node cannot read the data takes the one
    its folder records instead, so that it claims its shard there and records why it
    failed (`merge` names it); the reading error stops the shard right after."""
    try:
        return env.data_identity()
    except SkyevalError:
        if not config.shard.active:
            raise
        recorded = resume.recorded_data(fingerprint(config), run_dir)
        if recorded is None:
            raise
        return recorded


def judged(config: RunConfig) -> bool:
    """Whether a gold only a judge can read grades in this run (a grading mode is on, or the
    stage generates only: no grader yet)."""
    return config.grading.active or config.stage == "generate"


def check_golds(env: Env, judged: bool) -> None:
    """`strict=true`: read every problem and refuse the run (a ConfigError, before any
    folder exists) when any of their golds cannot grade its samples."""
    bad: dict[str, str] = {}
    for _ in env.iter_problems(on_error=lambda index, err: None, judged=judged,
                               on_bad_gold=lambda problem, why: bad.setdefault(str(problem["id"]), why)):
        pass
    if bad:
        shown = "; ".join(f"problem {pid}: {why}" for pid, why in list(bad.items())[:5])
        raise ConfigError(f"strict=true: {len(bad)} problems of {env.name} have a gold that cannot grade their samples "
                          f"({shown}{'; ...' if len(bad) > 5 else ''}); fix the data, or run without strict=true to "
                          "leave them out (summary.json records.bad_golds)")


def tools_summary(config: RunConfig, backend: Any, metrics: Any) -> dict[str, Any]:
    """summary.json `tools` when samples go through a turn loop (a tool, or budget forcing):
    the settings and counts over the selection's scored samples (for `generate`, over the
    samples this run generated)."""
    from skyeval.tools import TurnLoop, needs_loop

    if not needs_loop(config.tools, config.sampling_params):
        return {}
    section = backend.summary() if isinstance(backend, TurnLoop) else config.tools.settings()
    if config.stage != "generate":
        section.update(metrics.tools_summary())
    return {"tools": section}


def _judgeable(env: Env) -> bool:
    """Whether a judge can grade this env's answers (math envs: an answer against a gold)."""
    from skyeval.envs.math import MathEnv

    return isinstance(env, MathEnv)


def _scores_on_workers(config: RunConfig) -> bool:
    """Whether the model config's backend scores on a cluster's workers (ray, unless a turn
    loop reads every reply on the driver)."""
    from skyeval.backends.ray import RayConfig
    from skyeval.tools import needs_loop

    return isinstance(config.model_config, RayConfig) and not needs_loop(config.tools, config.sampling_params)


def _claim(folder: RunFolder, config: RunConfig, identity: Fingerprint,
           write_config: bool = True) -> tuple[bool, str | None]:
    """Bind the folder to this run's fingerprint and write config.yaml, one shard at a time
    (the jobs of an array start together). config.yaml describes the whole folder, without
    the shard section, so that `score run_dir=...` re-scores all of it; a smaller selection
    leaves it to the larger one (`write_config` False). Returns (resuming, shard start)."""
    whole = {k: v for k, v in config.to_dict().items() if k != "shard"}
    text = OmegaConf.to_yaml(OmegaConf.create(redact(whole)))
    previous = read_json(folder.run_file)
    if previous is not None and not config.overwrite and not identity.same_data(previous) \
            and identity.matches(previous):
        before, now = (previous.get("data") or {}).get("content"), (identity.values.get("data") or {}).get("content")
        log.warning("%s was made from other data (content %s, now %s): samples of problems that changed are made "
                    "again, the others reused", folder.path, before, now)
    if not config.shard.active:
        resumed = folder.claim(identity.values, overwrite=config.overwrite, same=identity.matches)
        if write_config or not folder.config.exists():
            folder.config.write_text(text, encoding="utf-8")
        return resumed, None
    with folder.waiting_lock("claim"):
        resumed = folder.claim(identity.values, overwrite=config.overwrite, same=identity.matches)
        folder.config.write_text(text, encoding="utf-8")
        # the folder exists as soon as any shard started: this shard resumes only work of its own
        resumed = resumed and any(next(folder.dir(kind).glob(f"{config.shard.prefix}*part-*.jsonl"), None)
                                  for kind in KINDS)
        return resumed, merge.mark_running(folder, config.shard, identity.values)


def _finish_shard(folder: RunFolder, shard: Shard, summary: dict[str, Any], outcome: pipeline.RunOutcome,
                  identity: Fingerprint, started_at: str) -> dict[str, Any]:
    """A shard writes its state to shards/, not summary.json; the last one to finish merges
    them. Returns the merged summary then, else the shard's own."""
    path = merge.write_state(folder, shard, summary, outcome.metrics, identity.values, started_at)
    counts = summary["counts"]
    line = (f"shard {shard.index} of {shard.count} {summary['status']}: {plural(counts['samples'], 'sample')}, "
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


def dry_run(config: RunConfig, env: Env, folder: RunFolder, identity: Fingerprint) -> dict[str, Any]:
    """Print what the run would send (problems, samples, prompt tokens, max completion
    tokens, worst-case cost: only what `folder`, when it holds this config's earlier work,
    does not have yet) and the first prompt, and return it, without building a backend or
    writing anything."""
    env.template = config.template.merged_over(env.default_template)
    env.model_source = config.model_config.model_source
    sampling, shard = config.sampling_params, config.shard
    previous = read_json(folder.run_file) if not config.overwrite else None
    earlier = resume.EarlierRecords(folder, config.stage) \
        if previous is not None and identity.matches(previous) else None
    graded = config.grading.scores_hash() if config.grading.active and config.stage != "generate" else None

    def wanted(problem: dict[str, Any]) -> int:
        pid = str(problem["id"])
        if not shard.owns(pid):
            return 0
        if earlier is None or earlier.empty:
            return sampling.n
        made = (content_hash(env.apply_prompt_template_on_item(problem)["prompt"]), env.gold_hash(problem), graded)
        return sum(not earlier.done((pid, i), config.stage, config.retry_failures, made)
                   and not earlier.generated_same((pid, i), made[0]) for i in range(sampling.n))  # re-scored, not sent

    problems = env.iter_problems(on_error=lambda index, err: None, on_bad_gold=lambda problem, why: None,
                                 judged=judged(config))  # what the run would send: bad golds are left out
    earlier_run = earlier_length(config.logging.results_dir, config.model_config.model_source, env.name)
    report = estimate(env, problems, sampling, config.model_config, wanted, earlier_run)
    how = report["prompt_tokens_counted_with"] + (", an estimate" if report["prompt_tokens_estimated"] else "")
    done = f"; {folder.path} has the rest" if earlier is not None and not earlier.empty else ""
    lines = [f"dry run: {env.name} with {env.model_source}: nothing is sent",
             f"  to send: problems {report['problems']:,}, samples {report['samples']:,}{done}",
             f"  prompt tokens {report['prompt_tokens']:,} per pass, {report['prompt_tokens_sent']:,} sent at most ({how})",
             f"  completion tokens at most {report['max_completion_tokens']:,} (max_tokens {sampling.max_tokens} x samples)"]
    if report["expected_completion_tokens"] is not None:
        lines.append(f"  completion tokens expected ~{report['expected_completion_tokens']:,}, from "
                     f"{report['expected_from']}")
    if report["worst_case_cost"] is not None:
        basis = " (the Batch API's price)" if report["price"] != config.model_config.price else ""
        expected = f"expected cost ${report['expected_cost']:,.2f}, " if report["expected_cost"] is not None else ""
        lines.append(f"  {expected}worst-case cost ${report['worst_case_cost']:,.2f} at {report['price']} $/M tokens"
                     f"{basis}")
    else:
        lines.append("  cost: set model_config.price={input: $/M, output: $/M} to see it")
    if report["first_prompt"] is not None:
        lines.append("  first prompt:")
        lines.extend(f"    {line}" for line in _shown(report["first_prompt"]).splitlines())
    print("\n".join(lines), flush=True)
    return report


def _shown(prompt: Any, limit: int = 4000) -> str:
    """A rendered prompt as a person reads it: `[role] content` per chat message."""
    text = prompt if isinstance(prompt, str) else "\n".join(f"[{m['role']}] {m['content']}" for m in prompt)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def import_modules(modules: list[str]) -> None:
    """`imports:`: modules to import before the env is built (ones that register envs)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name is None or not module.startswith(err.name):
                raise  # the module is there but imports something missing: a bug in it
            raise ConfigError(f"imports: No module named {err.name!r} (is its folder on PYTHONPATH?)") from None


def build_env(config: RunConfig) -> Env:
    """The env of `config.env`: by `_target_`, else by registered or packaged name."""
    from skyeval.envs.registry import SkyEnvBuilder, build_from_config

    section = dict(config.env)
    if not section.get("data_dir") and config.data_dir:
        section["data_dir"] = config.data_dir
    if "_target_" in section:
        return build_from_config(section)
    if "name" not in section:
        raise ConfigError("the env section needs `name` (a packaged or registered env) or `_target_`")
    return SkyEnvBuilder.build(section.pop("name"), section)


if __name__ == "__main__":
    main()
