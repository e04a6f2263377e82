"""`skyeval status run_dir=PATH | sweep=PATH [refresh=true]`: where a run, its shards, its
batches or a sweep's jobs stand.

Read only: it runs nothing and takes no lock. Each shard or job is one line:

- `queued` (with SLURM's reason), `running` with its progress (samples saved so far,
  rate), `done` with its counts, `failed` with the error and its log, `cancelled` or
  `interrupted` with what it saved (the same command resumes it);
- `killed`: its state still says running, but its job has ended or its process is gone
  (killed before it could save; the same command resumes it).

When every shard is done, the merged headline (accuracy, interval) comes first. The jobs
come from the sweep record in the results folder (`skyeval.run.sweeps`), their states
from SLURM (`skyeval.run.slurm`), the rest from the shard states and the part files.
Then one line per batch of `model_config=openai_batch` (as last polled; `refresh=true`
asks the API now).

    python -m skyeval.cli status run_dir=outputs/numina_Qwen_QwQ-32B_t0.7_1a2b3c4d
    python -m skyeval.cli status sweep=outputs          # the latest sweep recorded there
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skyeval.errors import ClusterError, ConfigError
from skyeval.results import RunFolder, read_json
from skyeval.run import slurm, sweeps
from skyeval.run.logs import headline, plural
from skyeval.run.merge import FINISHED, shard_states

USAGE = ("usage: skyeval status run_dir=PATH | sweep=PATH [refresh=true]: each shard, job or batch of a run "
         "folder, or of a sweep (its record, or the results folder of its latest one)")
LIVE = ("queued", "starting", "running")


@dataclass(frozen=True)
class Line:
    """One shard's or run's state: `kind` (queued, starting, running, done, interrupted,
    cancelled, failed, killed, not started) and the line shown."""

    kind: str
    text: str


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    args = dict(a.split("=", 1) for a in argv if "=" in a)
    unknown = sorted(set(args) - {"run_dir", "sweep", "refresh"}) + [a for a in argv if "=" not in a]
    if unknown or len({"run_dir", "sweep"} & set(args)) != 1:
        raise ConfigError(f"status takes run_dir=PATH or sweep=PATH [refresh=true], got {' '.join(argv) or 'nothing'}"
                          f"\n{USAGE}")
    refresh = args.get("refresh", "false").lower() in ("true", "1", "yes")
    if "run_dir" in args:
        folder = RunFolder(Path(args["run_dir"]).expanduser().absolute())
        if not folder.config.exists():
            raise ConfigError(f"{folder.path} is not a run folder (no config.yaml)")
        jobs = sweeps.jobs_of(folder.path)
        lines = [line.text for line in report(folder, jobs, _states(jobs))]
        print("\n".join([f"run folder: {folder.path}", *lines, *(f"batch {b}" for b in batch_lines(folder, refresh))]))
    else:
        print("\n".join(sweep_report(_record(Path(args["sweep"]).expanduser()))[0]))
    return 0


def _record(path: Path) -> Path:
    """A sweep record, or the latest one in a results folder."""
    if path.is_file():
        return path
    found = sweeps.records(path)
    if not found:
        raise ConfigError(f"{path}: no sweep record there (a sweep writes one in the {sweeps.SWEEPS_DIR}/ folder "
                          "of its results folder)")
    return found[-1]


def sweep_report(record: Path, detail: bool = True) -> tuple[list[str], list[str]]:
    """A sweep's runs, one line each (the swept values, the run's state, its folder), and
    under a run a line per shard (with `detail`; else only under a run not done). Returns
    the lines and each run's kind (done, running, failed...)."""
    jobs = sweeps.read(record)
    states = _states(jobs)
    runs: dict[str, list[dict[str, Any]]] = {}
    for job in jobs:
        runs.setdefault(job["dir"], []).append(job)
    swept = [key for key in _swept(jobs) if key != "shard.index"]
    jobs_part = f"{len(jobs)} job{'s' * (len(jobs) != 1)}, " if len(jobs) != len(runs) else ""
    lines = [f"sweep: {jobs_part}{len(runs)} run{'s' * (len(runs) != 1)}"
             f"{' over ' + ', '.join(swept) if swept else ''} | record {record}"]
    kinds = []
    for folder, mine in runs.items():
        point = " ".join(f"{key}={_values(mine[0]).get(key)}" for key in swept)
        run, *parts = report(RunFolder(folder), mine, states)
        kinds.append(run.kind)
        lines.append(f"  {point + ': ' if point else ''}{run.text} | {folder}")
        if detail or run.kind != "done":
            lines.extend(f"    {part.text}" for part in parts)
    return lines, kinds


def report(folder: RunFolder, jobs: list[dict[str, Any]], states: dict[str, slurm.JobState]) -> list[Line]:
    """A run folder's state: the run first (its headline once ended), then one line per
    shard of a sharded run."""
    summary = read_json(folder.summary)
    found = shard_states(folder)
    shards = {shard: job for job in jobs if (shard := _shard(job)) is not None}
    counts = {count for _, count in [*found, *shards]}
    if not counts:
        job = jobs[-1] if jobs else None
        return [run_line(folder, summary, job, states.get(job.get("job")) if job else None)]
    count = max(counts)
    by_index = {index: job for (index, c), job in shards.items() if c == count}
    lines = [shard_line(folder, i, count, found.get((i, count)), by_index.get(i), states) for i in range(count)]
    if summary is not None and all(line.kind == "done" for line in lines):
        return [Line("done", headline(summary)), *lines]
    kinds = [line.kind for line in lines]
    tally = ", ".join(f"{kinds.count(kind)} {kind}" for kind in dict.fromkeys(kinds))
    kind = next((k for k in LIVE if k in kinds), "stopped")
    return [Line(kind, f"{kind}: {count} shards: {tally}"), *lines]


def run_line(folder: RunFolder, summary: dict[str, Any] | None, job: dict[str, Any] | None,
             state: slurm.JobState | None) -> Line:
    """An unsharded run (a sweep's job): its headline once ended, else its job's state."""
    holder = _lock_holder(folder.path / ".lock-run")
    if (state is not None and state.kind == "running") or (state is None and holder and _alive_here(holder)):
        where = f" | pid {holder['pid']} on {holder['host']}" if holder else ""
        return Line("running", f"running: {progress(folder, '')}{where}{_job(job)}")
    if state is not None and state.kind == "queued":
        return Line("queued", f"queued{_why(state)}{_job(job)}")
    if summary is not None:
        return Line("done" if summary.get("status") in FINISHED else summary.get("status", "stopped"),
                    headline(summary))
    if state is not None:
        return Line(state.kind, f"{_ended(state)} without a summary.json{_job(job)}{_log(job)}")
    if not folder.path.exists():
        return Line("not started", "not started: no run folder yet" + _job(job) + _log(job))
    return Line("stopped", f"no summary.json yet: {progress(folder, '')} saved; the run stopped before the end "
                           f"(the same command resumes it) or goes on elsewhere{_job(job)}{_log(job)}")


def shard_line(folder: RunFolder, index: int, count: int, state: dict[str, Any] | None,
               job: dict[str, Any] | None, states: dict[str, slurm.JobState]) -> Line:
    """`shard I of N: <kind>...`, from the shard's state and its SLURM job."""
    name, prefix = f"shard {index} of {count}", f"shard-{index:05d}-"
    state = state or {}
    job_id = (job or {}).get("job") or state.get("slurm_job")
    queue = states.get(job_id) if job_id else None
    status = state.get("status")
    resubmitted = job is not None and state.get("slurm_job") not in (None, job.get("job"))
    if queue is not None and queue.live and (not status or resubmitted):  # its run has not started yet
        kind = "queued" if queue.kind == "queued" else "starting"
        return Line(kind, f"{name}: {kind}{_why(queue)}{_job(job)}")
    if status in FINISHED:
        counts = state["counts"]
        return Line("done", f"{name}: done ({status}): {plural(counts['samples'], 'sample')}, {counts['scored']} scored, "
                            f"{counts['failed']} failed in {state.get('duration_s')} s{_job(job, job_id)}")
    if status == "interrupted":
        kind = "cancelled" if queue is not None and queue.kind == "cancelled" else "interrupted"
        by = f" by {state['stopped_by']}" if state.get("stopped_by") else ""
        return Line(kind, f"{name}: {kind}{by}: {progress(folder, prefix)} saved; the same command resumes it"
                          f"{_job(job, job_id)}")
    if status == "failed":
        error = (state.get("error") or "see its log").splitlines()[0]
        return Line("failed", f"{name}: failed: {error}{_job(job, job_id)}{_log(job)}")
    if status == "running":
        here = queue is None and not job_id and _alive_here(state)
        if (queue is not None and queue.live) or here:
            where = f" | pid {state['pid']} on {state['host']}" if here else ""
            return Line("running", f"{name}: running: {progress(folder, prefix, state.get('started_at'))}"
                                   f"{where}{_job(job, job_id)}")
        how = f"its SLURM job ended {_ended(queue)}" if queue is not None else \
            "SLURM no longer lists its job" if job_id else "its process is gone"
        return Line("killed", f"{name}: killed: {how} while its state says running ({progress(folder, prefix)} "
                              f"saved); the same command resumes it{_job(job, job_id)}{_log(job)}")
    if queue is not None:
        return Line(queue.kind, f"{name}: {_ended(queue)} before its run started{_job(job)}{_log(job)}")
    if job is not None:
        return Line("failed", f"{name}: ended before its run started (SLURM no longer lists its job)"
                              f"{_job(job)}{_log(job)}")
    return Line("not started", f"{name}: not started")


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


def progress(folder: RunFolder, prefix: str, started_at: str | None = None) -> str:
    """Samples finished so far by the writer of `prefix` (a shard's, or '' for the whole
    folder), counted in the part files: scored + failed (generated + failed when nothing
    is scored, as in `generate`), with the rate since `started_at`."""
    done = {kind: _lines(folder, kind, prefix) for kind in ("generations", "scores", "failures")}
    finished = done["failures"] + (done["scores"] or done["generations"])
    text = f"{finished:,} sample{'s' * (finished != 1)} ({done['scores']:,} scored, {done['failures']:,} failed)"
    if started_at:
        seconds = (datetime.now(timezone.utc) - datetime.fromisoformat(started_at)).total_seconds()
        text += f" since {started_at}" + (f", {finished / seconds:.1f}/s" if seconds > 0 else "")
    return text


def _lines(folder: RunFolder, kind: str, prefix: str) -> int:
    """Records in `kind`'s part files of `prefix` (per-problem rows left out)."""
    total = 0
    for path in folder.dir(kind).glob(f"{prefix}*part-*.jsonl"):
        if not path.name.startswith("per_problem-"):
            with path.open("rb") as fh:
                total += sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    return total


def _states(jobs: list[dict[str, Any]]) -> dict[str, slurm.JobState]:
    ids = [job["job"] for job in jobs if job.get("job")]
    try:
        return slurm.job_states(ids)
    except ClusterError:  # no SLURM here (a folder copied off the cluster): the folder alone speaks
        return {}


def _shard(job: dict[str, Any]) -> tuple[int, int] | None:
    values = _values(job)
    if "shard.count" in values and "shard.index" in values and int(values["shard.count"]) > 1:
        return int(values["shard.index"]), int(values["shard.count"])
    return None


def _values(job: dict[str, Any]) -> dict[str, str]:
    return dict(o.lstrip("+~").split("=", 1) for o in job.get("overrides", []) if "=" in o)


def _swept(jobs: list[dict[str, Any]]) -> list[str]:
    values = [_values(job) for job in jobs]
    return [k for k in dict.fromkeys(k for v in values for k in v) if len({v.get(k) for v in values}) > 1]


def _why(state: slurm.JobState) -> str:
    return f" ({state.reason})" if state.reason else ""


def _ended(state: slurm.JobState) -> str:
    return f"{state.kind} (SLURM {state.shown})"


def _job(job: dict[str, Any] | None, job_id: str | None = None) -> str:
    job_id = (job or {}).get("job") or job_id
    return f" | SLURM job {job_id}" if job_id else ""


def _log(job: dict[str, Any] | None) -> str:
    return f" | log {job['log']}" if job and job.get("log") else ""


_HOLDER = re.compile(r"pid (\d+) on (\S+) since")


def _lock_holder(path: Path) -> dict[str, Any] | None:
    """Who last took a lock file (`pid P on HOST since T`), or None."""
    try:
        match = _HOLDER.match(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    return {"pid": int(match[1]), "host": match[2]} if match else None


def _alive_here(holder: dict[str, Any]) -> bool:
    """Whether `holder` (`pid`, `host`) is a live process of this host."""
    if holder.get("host") != socket.gethostname() or not holder.get("pid") or int(holder["pid"]) == os.getpid():
        return False  # another host's (its job's state says more), or this process's own, ended
    try:
        os.kill(int(holder["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
