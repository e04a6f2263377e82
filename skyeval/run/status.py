"""`skyeval status run_dir=PATH [refresh=true]`: where a run folder stands, without running it.

Its summary (status and counts) when the run has ended, else that it has not; then one line
per batch of `model_config=openai_batch` (as last polled; `refresh=true` asks the API now).
"""

from __future__ import annotations

from pathlib import Path

from skyeval.errors import ConfigError
from skyeval.results import RunFolder, read_json

USAGE = "usage: skyeval status run_dir=PATH [refresh=true]: a run folder's state and its batches"


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    unknown = sorted(set(args) - {"run_dir", "refresh"}) + [a for a in argv if "=" not in a]
    if unknown or "run_dir" not in args:
        raise ConfigError(f"status takes run_dir=PATH [refresh=true]{f', not {unknown}' if unknown else ''}")
    folder = RunFolder(Path(args["run_dir"]).expanduser())
    if not folder.config.exists():
        raise ConfigError(f"{folder.path} is not a run folder (no config.yaml)")
    print("\n".join(report(folder, refresh=args.get("refresh", "false").lower() in ("true", "1", "yes"))))
    return 0


def report(folder: RunFolder, refresh: bool = False) -> list[str]:
    """The lines `skyeval status` prints."""
    lines = [f"run folder: {folder.path}"]
    summary = read_json(folder.summary)
    if summary is None:
        lines.append("no summary.json yet: the run is going on, or stopped before the end (the same command resumes it)")
    else:
        counts = summary.get("counts", {})
        lines.append(f"{summary.get('status')}: {summary.get('env')} with {summary.get('model')} | "
                     f"{counts.get('samples')} samples, {counts.get('scored')} scored, {counts.get('failed')} failed")
    lines.extend(f"batch {line}" for line in batch_lines(folder, refresh))
    return lines


def batch_lines(folder: RunFolder, refresh: bool) -> list[str]:
    """The run's batches (model_config=openai_batch); `refresh` asks the API with the run's settings."""
    if not (folder.path / "batches").is_dir():
        return []
    from omegaconf import OmegaConf

    from skyeval.backends.openai_batch import OpenAIBatchConfig, status_lines
    from skyeval.config.schema import RunConfig

    model_config = None
    if refresh:
        model_config = RunConfig.of(OmegaConf.to_container(OmegaConf.load(folder.config))).model_config
        if not isinstance(model_config, OpenAIBatchConfig):
            model_config = None
    return status_lines(folder.path, model_config)
