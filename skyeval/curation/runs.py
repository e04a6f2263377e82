"""Reading a run folder as curation input, and writing curated datasets with a summary."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyeval.backends.ray_session import dataset_of as to_dataset  # noqa: F401 (re-exported)
from skyeval.errors import DataNotFoundError
from skyeval.results import RunFolder, Selection, key_of, write_json, write_rows

if TYPE_CHECKING:
    from skyeval.envs.base import Env

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
