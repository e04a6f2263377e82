"""`merge run_dir=PATH`: summary.json of a sharded run, from its shards' metric states.

A run split with `shard.index=I shard.count=N` (a SLURM job array, docs/scaling.md) has
each shard write `shards/shard-0000I-of-0000N.json` instead of summary.json: its status,
counts, failures by stage and the exact, mergeable state of its metrics accumulator
(counts and per-problem tallies, never samples). The last shard to finish merges them;
`merge` does the same by hand. It reads only these small files, never the generations,
so it costs the same for a thousand samples or a billion; it is idempotent; and it refuses
to write a partial headline: missing or unfinished shards are named in one line (exit 2).

    python -m skyeval.cli merge run_dir=outputs/numina_Qwen_QwQ-32B_t0.7_1a2b3c4d
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from skyeval.errors import ConfigError, RunFolderError
from skyeval.metrics import MetricsAccumulator, turns
from skyeval.metrics.accumulator import MetricsStateError
from skyeval.results import RunFolder, Shard, read_json, slurm_job, write_json
from skyeval.run import trackers
from skyeval.run.cost import run_cost
from skyeval.run.judging import merged_grading
from skyeval.run.logs import announce

SHARDS_DIR = "shards"
FINISHED = ("complete", "complete_with_failures")
USAGE = "usage: skyeval merge run_dir=PATH: write summary.json of a sharded run from its shards' states"
_STATE_FILE = re.compile(r"^shard-(\d+)-of-(\d+)\.json$")
_SHARD_ONLY = ("shard", "metrics_state", "fingerprint", "host", "pid", "slurm_job", "started_at", "finished_at")
_COUNTS = ("problems", "samples", "generated", "scored", "failed", "missing", "resumed")


class ShardsNotFinishedError(RunFolderError):
    """Some shards of a sharded run have not written a finished state yet."""


def main(argv: list[str]) -> int:
    """The `merge` command; returns the exit code (0). Raises SkyevalError for bad input."""
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    run_dirs = [a.split("=", 1)[1] for a in argv if a.startswith("run_dir=")]
    if len(run_dirs) != 1 or len(argv) != 1:
        raise ConfigError(f"merge takes exactly one run_dir=PATH, got {' '.join(argv) or 'nothing'}\n{USAGE}")
    folder = RunFolder(Path(run_dirs[0]).expanduser())
    summary = merge_run(folder)
    announce(summary, folder)
    return 0


def state_path(folder: RunFolder, shard: Shard) -> Path:
    return folder.path / SHARDS_DIR / f"{shard.name}.json"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def mark_running(folder: RunFolder, shard: Shard, fingerprint: dict[str, Any]) -> str:
    """Record that `shard` started (a job killed later leaves this, which merge reports as
    unfinished), drop states of another shard count, and drop summary.json: it stops
    describing the folder while a shard is at work. Returns the start time."""
    started = _now()
    directory = folder.path / SHARDS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.glob("shard-*-of-*.json"):
        match = _STATE_FILE.match(path.name)
        if match and int(match[2]) != shard.count:
            path.unlink(missing_ok=True)
    write_json(state_path(folder, shard), {
        "status": "running", "shard": {"index": shard.index, "count": shard.count},
        "fingerprint": fingerprint, **_where(), "started_at": started})
    folder.summary.unlink(missing_ok=True)
    return started


def mark_failed(folder: RunFolder, shard: Shard, error: BaseException) -> None:
    """Record that `shard` stopped on an error (data missing on the node, a bad config...):
    merge names the error instead of reporting a shard still running."""
    path = state_path(folder, shard)
    write_json(path, {**(read_json(path) or {}), "status": "failed", "error": f"{type(error).__name__}: {error}",
                      "finished_at": _now()})


def write_state(folder: RunFolder, shard: Shard, summary: dict[str, Any], metrics: Any,
                fingerprint: dict[str, Any], started_at: str) -> Path:
    """Write a shard's finished (or interrupted) state: its summary (the same fields as an
    unsharded run's) plus the metrics accumulator's exact state."""
    path = state_path(folder, shard)
    write_json(path, {**summary, "shard": {"index": shard.index, "count": shard.count},
                      "metrics_state": metrics.state(), "fingerprint": fingerprint, **_where(),
                      "started_at": started_at, "finished_at": _now()})
    return path


def _where() -> dict[str, Any]:
    """Host, pid and, under SLURM, the job id (`scancel` it, find its log)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "slurm_job": slurm_job()}


def forget_shards(folder: RunFolder) -> None:
    """A whole-folder (unsharded) run supersedes any shard states left in the folder."""
    directory = folder.path / SHARDS_DIR
    if directory.is_dir():
        for path in directory.glob("shard-*-of-*.json"):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            directory.rmdir()


def merge_if_complete(folder: RunFolder) -> dict[str, Any] | None:
    """For the shard that just finished: merge when every shard has, else return None
    (a later shard will). Concurrent callers merge one after the other."""
    try:
        return merge_run(folder)
    except ShardsNotFinishedError:
        return None


def merge_run(folder: RunFolder) -> dict[str, Any]:
    """Write and return summary.json of a sharded run. Raises ShardsNotFinishedError naming
    the shards that are missing, running (or killed), interrupted or failed (with the error)."""
    directory = folder.path / SHARDS_DIR
    if not directory.is_dir():
        if folder.summary.exists():
            raise ConfigError(f"{folder.path} is not a sharded run: its summary.json was written by the run itself")
        raise ConfigError(f"{folder.path} has no {SHARDS_DIR}/ folder: it is not the run folder of a sharded run "
                          "(shard.count > 1)")
    with folder.waiting_lock("merge"):
        states = shard_states(folder)
        fingerprint = read_json(folder.run_file)
        count = _shard_count(folder, states)
        problems = []
        for index in range(count):
            state = states.get((index, count))
            if state is None:
                problems.append(f"{index} (missing)")
            elif state.get("fingerprint") != fingerprint:
                problems.append(f"{index} (of another config)")
            elif state.get("status") == "running":
                job = f", SLURM job {state['slurm_job']}" if state.get("slurm_job") else ""
                problems.append(f"{index} (running or killed: started {state.get('started_at')} "
                                f"on {state.get('host')}, pid {state.get('pid')}{job})")
            elif state.get("status") not in FINISHED:
                error = f": {state['error'].splitlines()[0]}" if state.get("error") else ""
                problems.append(f"{index} ({state.get('status')}{error})")
        if problems:
            raise ShardsNotFinishedError(
                f"{folder.path}: {len(problems)} of {count} shards not finished: {'; '.join(problems)}. "
                "Resubmit them (the same command resumes only the unfinished shards), then merge again")
        summary = merged_summary([states[(i, count)] for i in range(count)])
        write_json(folder.summary, summary)
    trackers.log_run(summary, folder.path, summary["config"])
    return summary


def _metrics(state: dict[str, Any]) -> MetricsAccumulator:
    """A shard's metrics; a state of another release is refused naming the shard."""
    try:
        return MetricsAccumulator.from_state(state["metrics_state"])
    except MetricsStateError as err:
        shard = state.get("shard") or {}
        raise MetricsStateError(f"shard {shard.get('index')} of {shard.get('count')}: {err}") from None


def merged_summary(states: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary from finished shard states, shaped like an unsharded run's."""
    metrics = _metrics(states[0])
    for state in states[1:]:
        metrics.merge(_metrics(state))
    base = states[0]
    counts = {k: sum(s["counts"].get(k, 0) for s in states) for k in _COUNTS}
    by_stage: Counter = Counter()
    for state in states:
        by_stage.update(state.get("failures_by_stage") or {})
    config = {k: v for k, v in base["config"].items() if k != "shard"}
    summary = {k: v for k, v in base.items() if k not in _SHARD_ONLY}
    summary.update({
        "status": "complete_with_failures" if counts["failed"] else "complete",
        "counts": counts,
        "failures_by_stage": dict(by_stage),
        "records": {k: sum((s.get("records") or {}).get(k, 0) for s in states)
                    for k in ("unreadable_lines", "outside_selection")},
        "metrics": metrics.summary_for(base["stage"]),
        "scoring": {**{k: v for k, v in (base.get("scoring") or {}).items()
                       if k not in ("grading", "passed_by_tolerance")},
                    **metrics.grading_summary()},
        "duration_s": round(_seconds(max(s["finished_at"] for s in states))
                            - _seconds(min(s["started_at"] for s in states)), 2),
        "shards": {"count": len(states), "merged_at": _now(),
                   "jobs": [{"index": s["shard"]["index"], "host": s["host"], "slurm_job": s.get("slurm_job"),
                             "status": s["status"],
                             "started_at": s["started_at"], "duration_s": s.get("duration_s"),
                             "counts": s["counts"]} for s in states]},
        "config": config,
    })
    if "batches" in (base.get("backend") or {}):  # openai_batch: every shard's batches
        from skyeval.backends.openai_batch import merged_describe

        summary["backend"] = merged_describe([s["backend"] for s in states])
    # at the price the shards billed (a batch API's discount applied)
    billed = next((s["cost"]["price"] for s in states if s.get("cost")), config["model_config"].get("price"))
    summary["cost"] = run_cost(summary, billed)
    if any(s.get("grading") for s in states):
        summary["grading"] = merged_grading([s["grading"] for s in states if s.get("grading")], metrics.graded_by)
    if base.get("tools"):  # a turn loop's counts: the merged metrics', or for generate the shards' added
        summary["tools"] = {**base["tools"], **(metrics.tools_summary() if base["stage"] != "generate" else
                                                turns.added([s["tools"] for s in states if s.get("tools")]))}
    return summary


def shard_states(folder: RunFolder) -> dict[tuple[int, int], dict[str, Any]]:
    """The shard states in the folder, by (index, count)."""
    states = {}
    for path in (folder.path / SHARDS_DIR).glob("shard-*-of-*.json"):
        match = _STATE_FILE.match(path.name)
        if match:
            states[(int(match[1]), int(match[2]))] = read_json(path)
    return states


def _shard_count(folder: RunFolder, states: dict[tuple[int, int], dict[str, Any]]) -> int:
    counts = sorted({count for _, count in states})
    if not counts:
        raise ShardsNotFinishedError(f"{folder.path}: no shard has started yet ({SHARDS_DIR}/ is empty)")
    if len(counts) > 1:  # a shard clears other counts when it starts: this is a run being re-split
        raise ShardsNotFinishedError(f"{folder.path}: shard states of different shard counts ({counts}): "
                                     f"finish the run with one shard.count, then merge again")
    return counts[0]


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
