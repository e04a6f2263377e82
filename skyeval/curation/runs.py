"""Reading a run folder as curation input, and writing curated datasets with a summary."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyeval.errors import DataNotFoundError
from skyeval.results import RunFolder, Selection, key_of, write_json, write_rows

if TYPE_CHECKING:
    import ray.data

    from skyeval.envs.base import Env
    from skyeval.envs.local import LocalDataset

log = logging.getLogger("skyeval")


def load_scored(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The scored samples of a run's summary (`Selection`: scores/), each with its texts
    (prompt, generation, reasoning; a tool loop's transcript) from generations/. Raises if
    the run was never scored."""
    folder = RunFolder(run_dir)
    if next(folder.records("scores"), None) is None:
        raise DataNotFoundError(f"{folder.path} has no scores: score the run first "
                                f"(python -m skyeval.cli score run_dir={folder.path})")
    selection = Selection.of(folder.path)
    texts = {key_of(g): {k: g.get(k) for k in _TEXTS if k in g} for g in selection.records(folder.path, "generations")}
    return [{**r, **texts.get(key_of(r), {})} for r in selection.records(folder.path, "scores")]


_TEXTS = ("prompt", "generation", "reasoning", "reasoning_content", "transcript")
SAMPLING_KEYS = ("n", "temperature", "top_p", "max_tokens")


def run_info(run_dir: str | os.PathLike) -> dict[str, Any]:
    """What every training row made from a run says about it: `env` (its name), `model`
    (the model source) and `sampling` (n, temperature, top_p, max_tokens), from config.yaml."""
    from omegaconf import OmegaConf

    folder = RunFolder(run_dir)
    config = OmegaConf.to_container(OmegaConf.load(folder.config)) if folder.config.exists() else {}
    sampling = config.get("sampling_params") or {}
    return {"env": (config.get("env") or {}).get("name"),
            "model": (config.get("model_config") or {}).get("model_source"),
            "sampling": {k: sampling.get(k) for k in SAMPLING_KEYS}}


def to_dataset(rows: list[dict[str, Any]], engine: str | None = None,
               ray_log: str | os.PathLike | None = None) -> "ray.data.Dataset | LocalDataset":
    """Rows as a Dataset for the Ray Data steps of curation (`filter`, `groupby`, ...): in
    this process (`LocalDataset`) up to `LOCAL_MAX_ROWS` rows, where starting Ray costs
    more than the work; a Ray Dataset beyond, or when `engine` (or $SKYEVAL_DATASET_ENGINE)
    says `ray`, or a cluster is named or running (`skyeval.envs.local.choose_engine`). With
    `ray_log`, Ray's console lines go to that file instead (`ray_lines_to`)."""
    from skyeval.envs.local import LocalDataset, choose_engine

    chosen = choose_engine(engine)
    if chosen == "local" or (chosen == "auto" and len(rows) <= LOCAL_MAX_ROWS):
        return LocalDataset.from_rows(rows)
    if ray_log is not None:
        ray_lines_to(Path(ray_log))
        log.info("%d rows: this step runs on Ray (its messages go to %s)", len(rows), ray_log)
    from skyeval.backends.ray_session import dataset_of

    return dataset_of(rows)


LOCAL_MAX_ROWS = 100_000  # curation steps run in this process up to this many rows (docs/curation.md)
_RAY_LOG: list[Path] = []  # where Ray's lines go, once set in this process


def ray_lines_to(path: Path) -> None:
    """Send Ray's console lines to `path` (appended) for the rest of this process: its
    loggers' and Ray Data's (a token-auth notice, "Progress bars disabled"...), and the
    Python warnings raised in Ray's code ("Use 'expr' instead of 'fn'"). Ray's own log
    files are kept. Once per process (later calls keep the first file)."""
    import warnings

    import ray  # noqa: F401 - importing Ray and Ray Data installs their console handlers, replaced here
    import ray.data  # noqa: F401

    if _RAY_LOG:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("ray", "ray.data"):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
                logger.removeHandler(old)
        logger.addHandler(handler)
        logger.propagate = False
    shown = warnings.showwarning
    ray_dir = str(Path(ray.__file__).parent)

    def show(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if str(filename).startswith(ray_dir):
            logging.getLogger("ray").warning("%s:%s: %s: %s", filename, lineno, category.__name__, message)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    _RAY_LOG.append(path)


def ray_log_path() -> Path | None:
    """The file Ray's lines go to in this process (`ray_lines_to`), None when not routed."""
    return _RAY_LOG[0] if _RAY_LOG else None


def load_env(run_dir: str | os.PathLike) -> "Env":
    """The env a run folder was made with (its config.yaml, `imports` honoured)."""
    from omegaconf import OmegaConf

    from skyeval.config.schema import RunConfig
    from skyeval.run.app import build_env, import_modules

    folder = RunFolder(run_dir)
    if not folder.config.exists():
        raise DataNotFoundError(f"{folder.path} is not a run folder (no config.yaml)")
    config = RunConfig.of(OmegaConf.to_container(OmegaConf.load(folder.config)))
    import_modules(config.imports)
    return build_env(config)


@dataclass
class StepLog:
    """Rows in and kept per curation step; printed and saved next to the dataset."""

    command: str
    source: str
    steps: list[dict[str, Any]] = field(default_factory=list)

    def record(self, step: str, rows_in: int, rows_kept: int, **extra: Any) -> None:
        self.steps.append({"step": step, "rows_in": rows_in, "rows_kept": rows_kept, **extra})
        log.info("%s: kept %d of %d rows", step, rows_kept, rows_in)

    def save(self, rows: list[dict[str, Any]], out: Path, format: str = "jsonl") -> dict[str, Any]:
        """Write the dataset and `<out stem>.summary.json`; print one line per step."""
        write_rows(rows, out, format)
        summary = {"command": self.command, "source": self.source, "output": str(out),
                   "format": format, "rows": len(rows), "steps": self.steps}
        write_json(out.with_name(out.stem + ".summary.json"), summary)
        for step in self.steps:
            extra = {k: v for k, v in step.items() if k not in ("step", "rows_in", "rows_kept")}
            print(f"{step['step']:>18}: kept {step['rows_kept']} of {step['rows_in']}"
                  + (f"  {json.dumps(extra)}" if extra else ""))
        print(f"wrote {len(rows)} rows to {out}")
        return summary
