"""Optional experiment trackers (W&B, MLflow): a finished run's metrics and per-sample table.

`logging.wandb=true` and/or `logging.mlflow=true` turn them on.

W&B: project `logging.wandb_project` (default "skyeval"), run name `logging.experiment_name`,
files under the run folder; `WANDB_MODE=offline` works without network (sync later with
`wandb sync`). MLflow: tracking URI `logging.mlflow_tracking_uri`, else MLflow's own default
(`MLFLOW_TRACKING_URI`, or ./mlruns); experiment `logging.mlflow_experiment` (default "skyeval").
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterator

from skyeval.config.schema import RunConfig
from skyeval.config.secrets import redact
from skyeval.errors import MissingDependencyError
from skyeval.results import Selection

log = logging.getLogger("skyeval")

TRACKERS = {"wandb": "wandb", "mlflow": "mlflow"}  # config key -> package to import
MAX_TABLE_ROWS = 200_000  # W&B's own limit for one table; larger runs log the first rows and say so
COLUMNS = ["id", "sample_idx", "outcome", "score", "extracted", "expected", "parse_failed", "finish_reason",
           "completion_tokens", "reasoning_tokens", "generation", "error"]


def requested(cfg: RunConfig | dict[str, Any]) -> list[str]:
    """The trackers a config (a RunConfig, or a summary's `config`) turns on, in a fixed order."""
    options = _plain(cfg).get("logging") or {}
    return [name for name in TRACKERS if options.get(name)]


def check(cfg: RunConfig | dict[str, Any]) -> None:
    """Raise MissingDependencyError for a requested tracker whose package is missing (call it
    before the run starts, so a long run does not end in this error)."""
    for name in requested(cfg):
        _import(name)


def log_run(summary: dict[str, Any], run_dir: Path, cfg: RunConfig | dict[str, Any]) -> None:
    """Log the summary metrics and the per-sample table to every requested tracker."""
    cfg = _plain(cfg)
    for name in requested(cfg):
        module = _import(name)
        (_wandb if name == "wandb" else _mlflow)(module, summary, Path(run_dir), cfg.get("logging") or {}, cfg)
        log.info("logged the run to %s", name)


def _plain(cfg: RunConfig | dict[str, Any]) -> dict[str, Any]:
    return redact(cfg.to_dict()) if isinstance(cfg, RunConfig) else cfg


def metric_values(summary: dict[str, Any]) -> dict[str, float]:
    """Numeric leaves of summary.metrics and summary.counts, as "pass@k/1", "counts/samples", ..."""
    flat: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}/{key}" if prefix else str(key), inner)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[prefix] = float(value)

    walk("", summary.get("metrics") or {})
    walk("counts", summary.get("counts") or {})
    return flat


def sample_rows(run_dir: Path, limit: int = MAX_TABLE_ROWS, summary: dict[str, Any] | None = None) -> Iterator[list[Any]]:
    """One row per scored or failed sample (COLUMNS) of the samples the summary counts
    (`Selection`: `summary`, else the folder's summary.json), streamed from the run folder."""
    selection = Selection.of(run_dir, summary)
    produced = 0
    for kind in ("scores", "failures"):
        for r in selection.records(run_dir, kind):
            if produced == limit:
                log.warning("tracker table holds the first %d samples only; the run folder has them all", limit)
                return
            usage = r.get("usage") or {}
            score = r.get("score")
            outcome = "failed" if kind == "failures" else ("correct" if (score or 0) >= 1 - 1e-9 else "wrong")
            yield [str(r.get("id")), r.get("sample_idx"), outcome, score, _text(r.get("extracted")),
                   _text(r.get("expected")), r.get("parse_failed"), r.get("finish_reason"),
                   usage.get("completion_tokens"), usage.get("reasoning_tokens"), r.get("generation"),
                   None if kind == "scores" else f"{r.get('stage')}: {r.get('error_type')}: {r.get('message')}"]
            produced += 1


def _wandb(wandb, summary, run_dir: Path, options: dict, cfg: dict) -> None:
    run = wandb.init(project=options.get("wandb_project") or "skyeval", name=options.get("experiment_name"),
                     config=cfg, dir=str(run_dir), job_type=summary.get("stage") or "evaluate",
                     tags=[str(summary.get("env")), str(summary.get("model"))], reinit="finish_previous")
    try:
        run.summary.update({**metric_values(summary), "env": summary.get("env"), "model": summary.get("model"),
                            "status": summary.get("status")})
        table = wandb.Table(columns=COLUMNS)
        for row in sample_rows(run_dir, summary=summary):
            table.add_data(*row)
        run.log({"samples": table})
    finally:
        run.finish()


def _mlflow(mlflow, summary, run_dir: Path, options: dict, cfg: dict) -> None:
    if options.get("mlflow_tracking_uri"):
        mlflow.set_tracking_uri(str(options["mlflow_tracking_uri"]))
    mlflow.set_experiment(options.get("mlflow_experiment") or "skyeval")
    with mlflow.start_run(run_name=options.get("experiment_name")):
        sampling = cfg.get("sampling_params") or {}
        mlflow.log_params({"env": summary.get("env"), "model": summary.get("model"), "stage": summary.get("stage"),
                           "run_dir": str(run_dir), **{f"sampling_params.{k}": v for k, v in sampling.items()
                                                       if not isinstance(v, (dict, list))}})
        mlflow.log_metrics({_mlflow_name(k): v for k, v in metric_values(summary).items()})
        columns: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        for row in sample_rows(run_dir, summary=summary):
            for c, v in zip(COLUMNS, row):
                columns[c].append(v)
        mlflow.log_dict(columns, "samples.json")
        mlflow.log_dict(summary, "summary.json")


def _mlflow_name(name: str) -> str:
    """MLflow metric names allow letters, digits, _ - . / space and colon: pass@k/1 -> pass_at_k/1."""
    return re.sub(r"[^\w\-./ :]", "_", name.replace("@", "_at_"))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _import(name: str):
    import importlib

    try:
        return importlib.import_module(TRACKERS[name])
    except ImportError as err:
        raise MissingDependencyError(
            f"logging.{name}=true needs the {name} package: pip install {name} (or set logging.{name}=false)"
        ) from err
