"""The record of a sweep (`-m`): which jobs it made and where each one writes.

It lives in the results folder, beside the run folders (`<results_dir>/sweeps/<time>-<pid>.jsonl`),
so it is on the filesystem every node shares. One JSON line per job: `index` (Hydra's job
number), `dir` (its run folder), `overrides`, and for a SLURM job `job` (its id) and `log`
(submitit's stderr file). A SLURM launcher writes its jobs when it submits them; an
in-process sweep, each job as it ends (`SweepRecorder`). `skyeval status sweep=...` and the
lines the CLI prints at the end of a sweep read it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

RECORD_ENV = "SKYEVAL_SWEEP_RECORD"  # the record of the sweep this process runs
SWEEPS_DIR = "sweeps"


def new_record(sweep_dir: str | Path) -> Path:
    """A new record's path under `sweep_dir` (the results folder)."""
    return Path(sweep_dir).expanduser().absolute() / SWEEPS_DIR / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.jsonl"


def append(record: Path, entries: list[dict[str, Any]]) -> None:
    record.parent.mkdir(parents=True, exist_ok=True)
    with record.open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(entry) + "\n" for entry in entries))


def read(record: Path) -> list[dict[str, Any]]:
    """The record's jobs, in job order (a later line about the same job replaces an earlier one)."""
    jobs: dict[Any, dict[str, Any]] = {}
    for line in record.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # torn by a crash: the other lines still count
            continue
        jobs[entry.get("index", len(jobs))] = entry
    return [jobs[key] for key in sorted(jobs, key=lambda k: (not isinstance(k, int), k))]


def records(results_dir: str | Path) -> list[Path]:
    """The sweep records under a results folder, oldest first."""
    return sorted((Path(results_dir).expanduser() / SWEEPS_DIR).glob("*.jsonl"), key=lambda p: p.stat().st_mtime)


def jobs_of(folder: str | Path) -> list[dict[str, Any]]:
    """The jobs of the latest sweep record beside `folder` (in its results folder) that
    write it: a sharded run's shards."""
    folder = Path(folder).expanduser().absolute()
    for record in reversed(records(folder.parent)):
        mine = [job for job in read(record) if Path(job.get("dir", "")) == folder]
        if mine:
            return mine
    return []


class SweepRecorder:
    """Hydra callback: a sweep's record. Starts it (`on_multirun_start`, its path in
    `RECORD_ENV`) and adds each job of an in-process launcher as it ends. A SLURM launcher
    records its jobs itself when it submits them, and its jobs leave the record alone."""

    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        os.environ[RECORD_ENV] = str(new_record(config.hydra.sweep.dir))  # written once there are jobs

    def on_job_end(self, config: Any, job_return: Any, **kwargs: Any) -> None:
        from hydra.core.hydra_config import HydraConfig

        record = os.environ.get(RECORD_ENV)
        if record:
            hydra = HydraConfig.get()
            folder = job_return.return_value if isinstance(getattr(job_return, "_return_value", None), str) else None
            append(Path(record), [{"index": hydra.job.num, "dir": folder or hydra.runtime.output_dir,
                                   "overrides": list(hydra.overrides.task)}])

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):  # the other hooks: nothing to do
            return lambda *args, **kwargs: None
        raise AttributeError(name)
